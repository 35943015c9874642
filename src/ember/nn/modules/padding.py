"""Padding layers: constant, zero, reflection, replication and circular, in 1, 2 and 3 dims."""
from __future__ import annotations

__all__ = ["CircularPad1d", "CircularPad2d", "CircularPad3d", "ConstantPad1d", "ConstantPad2d",
           "ConstantPad3d", "ReflectionPad1d", "ReflectionPad2d", "ReflectionPad3d",
           "ReplicationPad1d", "ReplicationPad2d", "ReplicationPad3d", "ZeroPad1d", "ZeroPad2d",
           "ZeroPad3d"]

from collections.abc import Iterable

from .. import functional as F
from .module import Module


def _ntuple(padding, n):
    """``padding`` as a 2n-tuple: an int repeats, a sequence is taken as it is."""
    if isinstance(padding, Iterable):
        return tuple(padding)
    return (padding,) * (2 * n)


class _CircularPadNd(Module):
    _dims = 1

    def __init__(self, padding):
        super().__init__()
        self.padding = _ntuple(padding, self._dims)

    def forward(self, input):  # noqa: A002
        d = self._dims
        if input.ndim not in (d + 1, d + 2):
            raise ValueError(f"expected {d + 1}D or {d + 2}D input (got {input.ndim}D input)")
        return F.pad(input, self.padding, "circular")

    def extra_repr(self):
        return f"{self.padding}"


class CircularPad1d(_CircularPadNd):
    """Pads the input by wrapping it around (the last dimension)."""

    _dims = 1


class CircularPad2d(_CircularPadNd):
    """Pads the input by wrapping it around (the last two dimensions)."""

    _dims = 2


class CircularPad3d(_CircularPadNd):
    """Pads the input by wrapping it around (the last three dimensions)."""

    _dims = 3


class _ConstantPadNd(Module):
    _dims = 1

    def __init__(self, padding, value):
        super().__init__()
        self.value = value
        self.padding = _ntuple(padding, self._dims)

    def forward(self, input):  # noqa: A002
        return F.pad(input, self.padding, "constant", self.value)

    def extra_repr(self):
        return f"padding={self.padding}, value={self.value}"


class ConstantPad1d(_ConstantPadNd):
    """Pads the last dimension with a constant value."""

    _dims = 1


class ConstantPad2d(_ConstantPadNd):
    """Pads the last two dimensions with a constant value."""

    _dims = 2


class ConstantPad3d(_ConstantPadNd):
    """Pads the last three dimensions with a constant value."""

    _dims = 3


class ZeroPad1d(ConstantPad1d):
    """Pads the last dimension with zeros."""

    def __init__(self, padding):
        super().__init__(padding, 0.0)

    def extra_repr(self):
        return f"{self.padding}"


class ZeroPad2d(ConstantPad2d):
    """Pads the last two dimensions with zeros."""

    def __init__(self, padding):
        super().__init__(padding, 0.0)

    def extra_repr(self):
        return f"{self.padding}"


class ZeroPad3d(ConstantPad3d):
    """Pads the last three dimensions with zeros."""

    def __init__(self, padding):
        super().__init__(padding, 0.0)

    def extra_repr(self):
        return f"{self.padding}"


class _ModePadNd(Module):
    _dims = 1
    _mode = "reflect"

    def __init__(self, padding):
        super().__init__()
        self.padding = _ntuple(padding, self._dims)

    def forward(self, input):  # noqa: A002
        return F.pad(input, self.padding, self._mode)

    def extra_repr(self):
        return f"{self.padding}"


class ReflectionPad1d(_ModePadNd):
    """Pads the last dimension with the reflection of the input."""

    _dims, _mode = 1, "reflect"


class ReflectionPad2d(_ModePadNd):
    """Pads the last two dimensions with the reflection of the input."""

    _dims, _mode = 2, "reflect"


class ReflectionPad3d(_ModePadNd):
    """Pads the last three dimensions with the reflection of the input."""

    _dims, _mode = 3, "reflect"


class ReplicationPad1d(_ModePadNd):
    """Pads the last dimension by repeating the edge values."""

    _dims, _mode = 1, "replicate"


class ReplicationPad2d(_ModePadNd):
    """Pads the last two dimensions by repeating the edge values."""

    _dims, _mode = 2, "replicate"


class ReplicationPad3d(_ModePadNd):
    """Pads the last three dimensions by repeating the edge values."""

    _dims, _mode = 3, "replicate"
