"""torch.backends.cudnn: ember uses no cuDNN, so it is not available; its switches are kept."""
from __future__ import annotations

from contextlib import contextmanager

enabled = True
benchmark = False
benchmark_limit = None  # (torch reads None where cuDNN is absent)
deterministic = False
allow_tf32 = True


def is_available() -> bool:
    """Whether cuDNN can be used (never: ember's GPU kernels are CuPy's)."""
    return False


def version():
    """cuDNN's version (None: there is none)."""
    return None


def is_acceptable(tensor) -> bool:
    """Whether cuDNN would take ``tensor`` (never)."""
    return False


_FLAGS = ("enabled", "benchmark", "benchmark_limit", "deterministic", "allow_tf32")


@contextmanager
def flags(enabled=False, benchmark=False, benchmark_limit=10, deterministic=False,
          allow_tf32=True):
    """Set the switches inside the block and put the old ones back after it."""
    module = globals()
    old = {name: module[name] for name in _FLAGS}
    module.update(enabled=enabled, benchmark=benchmark, benchmark_limit=benchmark_limit,
                  deterministic=deterministic, allow_tf32=allow_tf32)
    try:
        yield
    finally:
        module.update(old)
