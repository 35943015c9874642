"""``ember.cuda.amp``: torch's older spelling of CUDA autocast and gradient scaling (deprecated
in torch for ``ember.amp.autocast('cuda')``, ``ember.amp.GradScaler('cuda')`` and
``ember.amp.custom_fwd/custom_bwd(device_type='cuda')``)."""
from __future__ import annotations

import warnings

from .. import _dtype as D
from ..amp import autocast_mode as _autocast_mode
from ..amp import grad_scaler as _grad_scaler

__all__ = ["autocast", "GradScaler", "custom_fwd", "custom_bwd"]


class autocast(_autocast_mode.autocast):  # noqa: N801 - torch's name
    """``ember.amp.autocast('cuda', ...)`` under its older name."""

    def __init__(self, enabled: bool = True, dtype=D.float16, cache_enabled: bool = True):
        warnings.warn("`ember.cuda.amp.autocast(args...)` is deprecated. Please use "
                      "`ember.amp.autocast('cuda', args...)` instead.", FutureWarning,
                      stacklevel=2)
        super().__init__("cuda", enabled=enabled, dtype=dtype, cache_enabled=cache_enabled)


class GradScaler(_grad_scaler.GradScaler):
    """``ember.amp.GradScaler('cuda', ...)`` under its older name."""

    def __init__(self, init_scale: float = 2.0 ** 16, growth_factor: float = 2.0,
                 backoff_factor: float = 0.5, growth_interval: int = 2000,
                 enabled: bool = True) -> None:
        warnings.warn("`ember.cuda.amp.GradScaler(args...)` is deprecated. Please use "
                      "`ember.amp.GradScaler('cuda', args...)` instead.", FutureWarning,
                      stacklevel=2)
        super().__init__("cuda", init_scale=init_scale, growth_factor=growth_factor,
                         backoff_factor=backoff_factor, growth_interval=growth_interval,
                         enabled=enabled)


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
