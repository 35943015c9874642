"""``ember.cuda.amp``: torch's older spelling of CUDA autocast, gradient scaling and the
custom Function decorators (deprecated in torch for ``ember.amp.autocast('cuda')``,
``ember.amp.GradScaler('cuda')`` and ``ember.amp.custom_fwd/custom_bwd(device_type='cuda')``)."""
from __future__ import annotations

import warnings

from .. import _dtype as D
from ..amp import autocast_mode as _autocast_mode
from ..amp._legacy import legacy_autocast, legacy_grad_scaler

__all__ = ["autocast", "GradScaler", "custom_fwd", "custom_bwd"]

autocast = legacy_autocast("cuda", D.float16)
GradScaler = legacy_grad_scaler("cuda")


def custom_fwd(fwd=None, *, cast_inputs=None):
    """``ember.amp.custom_fwd(device_type='cuda')`` under its older name."""
    warnings.warn("`ember.cuda.amp.custom_fwd(args...)` is deprecated. Please use "
                  "`ember.amp.custom_fwd(args..., device_type='cuda')` instead.", FutureWarning,
                  stacklevel=2)
    return _autocast_mode.custom_fwd(fwd=fwd, device_type="cuda", cast_inputs=cast_inputs)


def custom_bwd(bwd=None):
    """``ember.amp.custom_bwd(device_type='cuda')`` under its older name."""
    warnings.warn("`ember.cuda.amp.custom_bwd(args...)` is deprecated. Please use "
                  "`ember.amp.custom_bwd(args..., device_type='cuda')` instead.", FutureWarning,
                  stacklevel=2)
    return _autocast_mode.custom_bwd(bwd=bwd, device_type="cuda")
