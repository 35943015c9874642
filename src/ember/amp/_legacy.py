"""The deprecated per-device spellings (``ember.cpu.amp.autocast``,
``ember.cuda.amp.GradScaler``, ...): the same classes, warning as torch's do."""
from __future__ import annotations

import warnings

from .autocast_mode import autocast as _autocast
from .grad_scaler import GradScaler as _GradScaler


def _warn(device_type, name):
    warnings.warn(f"`ember.{device_type}.amp.{name}(args...)` is deprecated. Please use "
                  f"`ember.amp.{name}('{device_type}', args...)` instead.", FutureWarning,
                  stacklevel=3)


def legacy_autocast(device_type, default_dtype):
    class autocast(_autocast):  # noqa: N801 - torch's name
        __doc__ = f"``ember.amp.autocast('{device_type}', ...)`` under its older name."

        def __init__(self, enabled: bool = True, dtype=default_dtype,
                     cache_enabled: bool = True):
            _warn(device_type, "autocast")
            super().__init__(device_type, enabled=enabled, dtype=dtype,
                             cache_enabled=cache_enabled)
    autocast.__module__ = f"ember.{device_type}.amp"
    return autocast


def legacy_grad_scaler(device_type):
    class GradScaler(_GradScaler):
        __doc__ = f"``ember.amp.GradScaler('{device_type}', ...)`` under its older name."

        def __init__(self, init_scale: float = 2.0 ** 16, growth_factor: float = 2.0,
                     backoff_factor: float = 0.5, growth_interval: int = 2000,
                     enabled: bool = True) -> None:
            _warn(device_type, "GradScaler")
            super().__init__(device_type, init_scale=init_scale, growth_factor=growth_factor,
                             backoff_factor=backoff_factor, growth_interval=growth_interval,
                             enabled=enabled)
    GradScaler.__module__ = f"ember.{device_type}.amp"
    return GradScaler
