"""``ember.cpu.amp``: torch's older spelling of CPU autocast and gradient scaling (deprecated
in torch for ``ember.amp.autocast('cpu')`` and ``ember.amp.GradScaler('cpu')``)."""
from __future__ import annotations

import warnings

from .. import _dtype as D
from ..amp import autocast_mode as _autocast_mode
from ..amp import grad_scaler as _grad_scaler

__all__ = ["autocast", "GradScaler"]


class autocast(_autocast_mode.autocast):  # noqa: N801 - torch's name
    """``ember.amp.autocast('cpu', ...)`` under its older name."""

    def __init__(self, enabled: bool = True, dtype=D.bfloat16, cache_enabled: bool = True):
        warnings.warn("`ember.cpu.amp.autocast(args...)` is deprecated. Please use "
                      "`ember.amp.autocast('cpu', args...)` instead.", FutureWarning,
                      stacklevel=2)
        super().__init__("cpu", enabled=enabled, dtype=dtype, cache_enabled=cache_enabled)


class GradScaler(_grad_scaler.GradScaler):
    """``ember.amp.GradScaler('cpu', ...)`` under its older name."""

    def __init__(self, init_scale: float = 2.0 ** 16, growth_factor: float = 2.0,
                 backoff_factor: float = 0.5, growth_interval: int = 2000,
                 enabled: bool = True) -> None:
        warnings.warn("`ember.cpu.amp.GradScaler(args...)` is deprecated. Please use "
                      "`ember.amp.GradScaler('cpu', args...)` instead.", FutureWarning,
                      stacklevel=2)
        super().__init__("cpu", init_scale=init_scale, growth_factor=growth_factor,
                         backoff_factor=backoff_factor, growth_interval=growth_interval,
                         enabled=enabled)
