"""``ember.cpu.amp``: torch's older spelling of CPU autocast and gradient scaling (deprecated
in torch for ``ember.amp.autocast('cpu')`` and ``ember.amp.GradScaler('cpu')``)."""
from .. import _dtype as D
from ..amp._legacy import legacy_autocast, legacy_grad_scaler

__all__ = ["autocast", "GradScaler"]

autocast = legacy_autocast("cpu", D.bfloat16)
GradScaler = legacy_grad_scaler("cpu")
