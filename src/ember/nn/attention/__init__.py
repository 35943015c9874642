"""``ember.nn.attention``: choosing the kernels of ``scaled_dot_product_attention``.

The switches are the ones ``ember.backends.cuda.enable_*_sdp`` set; on the CPU, the flash and
math kernels are the ones that run (see ``ember/_ops/attention.py``), so a context that allows
neither makes ``scaled_dot_product_attention`` raise torch's error.
"""
from __future__ import annotations

import contextlib
import enum

__all__ = ["SDPBackend", "sdpa_kernel", "WARN_FOR_UNFUSED_KERNELS"]

WARN_FOR_UNFUSED_KERNELS = False


class SDPBackend(enum.IntEnum):
    """The kernels of scaled dot product attention, numbered as torch's."""

    ERROR = -1
    MATH = 0
    FLASH_ATTENTION = 1
    EFFICIENT_ATTENTION = 2
    CUDNN_ATTENTION = 3
    OVERRIDEABLE = 4

    __str__ = enum.Enum.__str__  # SDPBackend.MATH, as torch prints it


# the switch of each backend, in torch's order
_SWITCHES = {"cudnn": SDPBackend.CUDNN_ATTENTION, "flash": SDPBackend.FLASH_ATTENTION,
             "mem_efficient": SDPBackend.EFFICIENT_ATTENTION, "math": SDPBackend.MATH,
             "overrideable": SDPBackend.OVERRIDEABLE}
# the order backends are tried in (sdpa_kernel's set_priority reorders it)
_priority = [SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION, SDPBackend.MATH,
             SDPBackend.CUDNN_ATTENTION, SDPBackend.OVERRIDEABLE]


def _enabled_backends(with_priority=False):
    from ...backends.cuda import _SDP
    on = [backend for name, backend in _SWITCHES.items() if _SDP[name]]
    return sorted(on, key=_priority.index) if with_priority else on


def _set_backends(backends, set_priority=False):
    from ...backends.cuda import _SDP
    for name, backend in _SWITCHES.items():
        _SDP[name] = backend in backends
    if set_priority:
        _priority[:] = list(backends) + [b for b in _priority if b not in backends]


@contextlib.contextmanager
def sdpa_kernel(backends, set_priority: bool = False):
    """Allow only ``backends`` (one or a list) inside the context; the switches come back after."""
    if not isinstance(backends, (list, SDPBackend)):
        raise AssertionError("Backend must be an instance of SDPBackend or a list of SDPBackend "
                             f"instances, got {type(backends).__name__}")
    if isinstance(backends, SDPBackend):
        backends = [backends]
    backends = list(dict.fromkeys(backends))
    previous = _enabled_backends(with_priority=set_priority)
    try:
        _set_backends(backends, set_priority)
        yield {}
    finally:
        _set_backends(previous, set_priority)
