"""The module torch's core classes print as their own (``<class 'torch._C.Generator'>``):
ember's are defined elsewhere and named here, so that they print as torch's and pickle finds
them again under that name."""
from __future__ import annotations

from ._random.generator import Generator

Generator.__module__ = __name__

__all__ = ["Generator"]
