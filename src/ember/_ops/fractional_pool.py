"""Fractional max pooling (Graham, 2015): max pooling over windows whose starts follow a
pseudo-random sequence drawn from one uniform sample per plane and dim.

The windows are torch's: for a sample u, pool size k and sizes n_in -> n_out, window i starts at
``int((i + u) * alpha) - int(u * alpha)`` with ``alpha = (n_in - k) / (n_out - 1)`` computed
in the input's dtype, and the last window ends at the input's edge. ``nn.functional`` draws the
samples with ``rand`` from ember's generator as torch draws them, so seeded results are torch's.
Gradients scatter into the winners' flat indices and gather back, as max pooling's do.
"""
from __future__ import annotations

import math

import numpy as np

from .._backend import get_xp
from .pointwise import not_implemented, zero_gradient
from .pooling import _gather_from_planes, _scatter_into_planes
from .registry import NONE, op

__all__ = []
FUNCTIONAL = ["fractional_max_pool2d", "fractional_max_pool2d_with_indices",
              "fractional_max_pool3d", "fractional_max_pool3d_with_indices"]


def _starts(xp, samples, n_in, n_out, pool):
    """(..., n_out) window starts for the uniform ``samples`` (...,), torch's sequence."""
    dtype = samples.dtype.type
    starts = xp.empty(samples.shape + (n_out,), np.int64)
    if n_out > 1:
        alpha = dtype(n_in - pool) / dtype(n_out - 1)
        steps = xp.arange(n_out - 1).astype(samples.dtype)
        scaled = ((steps + samples[..., None]) * alpha).astype(np.int64)
        starts[..., :-1] = scaled - (samples * alpha).astype(np.int64)[..., None]
    if n_out > 0:
        starts[..., -1] = n_in - pool
    return starts


def _winners(xp, windows):
    """Position of each window's max along the last axis: the first maximum, or the last NaN
    (torch's ``val > max || isnan(val)`` scan from -inf)."""
    arg = xp.argmax(windows, axis=-1)
    if windows.dtype.kind == "f":
        nan = xp.isnan(windows)
        last_nan = windows.shape[-1] - 1 - xp.argmax(nan[..., ::-1], axis=-1)
        arg = xp.where(nan.any(axis=-1), last_nan, arg)
    return arg


def _pool(self, random_samples, kernel_size, output_size):
    """(values, flat indices) of fractional max pooling over the trailing len(kernel) dims."""
    xp = get_xp(self)
    nd = len(kernel_size)
    unbatched = self.ndim == nd + 1
    x = self[None] if unbatched else self
    n, c, sizes = x.shape[0], x.shape[1], x.shape[2:]
    samples = random_samples[:n]
    # the sample of dim d: 2-D takes (W, H) = (0, 1); 3-D takes (T, H, W) = (0, 1, 2)
    which = (1, 0) if nd == 2 else (0, 1, 2)
    flat = np.int64(0)
    for d in range(nd):
        starts = _starts(xp, samples[..., which[d]], sizes[d], output_size[d], kernel_size[d])
        pos = starts[..., :, None] + xp.arange(kernel_size[d])  # (N, C, out_d, k_d)
        shape = [n, c] + [1] * (2 * nd)
        shape[2 + d], shape[2 + nd + d] = output_size[d], kernel_size[d]
        flat = flat * sizes[d] + pos.reshape(shape)
    windows_shape = (n, c, math.prod(output_size), math.prod(kernel_size))
    flat = xp.broadcast_to(flat, (n, c, *output_size, *kernel_size)).reshape(windows_shape)
    planes = x.reshape(n, c, math.prod(sizes))
    windows = xp.take_along_axis(planes, flat.reshape(n, c, windows_shape[2] * windows_shape[3]),
                                 axis=2).reshape(windows_shape)
    arg = _winners(xp, windows)[..., None]
    values = xp.take_along_axis(windows, arg, axis=-1)[..., 0].reshape(n, c, *output_size)
    index = xp.take_along_axis(flat, arg, axis=-1)[..., 0].reshape(n, c, *output_size)
    return (values[0], index[0]) if unbatched else (values, index)


def _check(nd):
    name = "fractional_max_pool2d" if nd == 2 else "fractional_max_pool3d_out"
    dims = ("height", "width") if nd == 2 else ("time", "height", "width")
    # NOTE: torch's 3-D check is strict (output + pool - 1 < input), its 2-D one is not.
    strict = nd == 3

    def check(self, random_samples, kernel_size, output_size):
        words = "tuple of Ints" if nd == 2 else "tuple of three Ints"
        short = f"fractional_max_pool{nd}d"
        if len(kernel_size) != nd:
            raise RuntimeError(f"{short}: kernel_size must either be a single Int or {words}")
        if len(output_size) != nd:
            raise RuntimeError(f"{short}: output_size must either be a single Int or {words}")
        _check_samples(self, random_samples, nd)
        if self.ndim not in (nd + 1, nd + 2):
            raise RuntimeError(f"{name}(): Expected {nd + 1}D or {nd + 2}D tensor, but got: "
                               f"{list(self.shape)}")
        for d in range(self.ndim - nd - 1, self.ndim):
            if self.shape[d] == 0:
                raise RuntimeError(
                    f"{name}(): Expected input to have non-zero size for non-batch dimensions, "
                    f"but got{list(self.shape)} with dimension {d} being empty.")
        sizes = self.shape[-nd:]
        for d in range(nd):
            reach = output_size[d] + kernel_size[d] - 1
            if reach > sizes[d] or (strict and reach == sizes[d]):
                raise RuntimeError(f"{name}(): pool {dims[d]} {kernel_size[d]} too large "
                                   f"relative to input {dims[d]} {sizes[d]}")
        if self._data.dtype.kind != "f":
            raise not_implemented(f"fractional_max_pool{nd}d_out_frame", self._data)
    return check


def _check_samples(self, samples, nd):
    if samples._data.dtype != self._data.dtype:
        raise RuntimeError("Expect _random_samples to have the same dtype as input")
    if samples.ndim != 3:
        raise RuntimeError(f"Expect _random_samples to have 3 dimensions, got {samples.ndim}")
    batched = self.ndim == nd + 2
    if samples.shape[0] < (self.shape[0] if batched else 1):
        raise RuntimeError("Expect _random_samples.size(0) no less then input batch size.")
    if self.ndim >= nd + 1 and samples.shape[1] != self.shape[-nd - 1]:
        raise RuntimeError("Expect _random_samples.size(1) equals to input channel size.")
    if samples.shape[2] != nd:
        raise RuntimeError(f"Expect _random_samples.size(2) equals to {nd}; got "
                           f"{samples.shape[2]}.")


@op("fractional_max_pool2d", tensors=2, promote=NONE, outputs=2, diff_outputs=(True, False),
    node="FractionalMaxPool2DBackward0", check=_check(2))
def fractional_max_pool2d_op(self, random_samples, kernel_size, output_size):
    return _pool(self, random_samples, kernel_size, output_size)


@fractional_max_pool2d_op.grad("self")
def _(grads, self, result1):
    return fractional_max_pool2d_backward(grads[0], self, result1)


@op("fractional_max_pool2d_backward", tensors=3, promote=NONE,
    node="FractionalMaxPool2DBackwardBackward0")
def fractional_max_pool2d_backward(grad_output, self, indices):
    """Scatter-add of ``grad_output`` into the flat plane positions ``indices`` of ``self``."""
    return _scatter_into_planes(grad_output, self.shape, indices, 2)


@fractional_max_pool2d_backward.grad("grad_output")
def _(grad, indices):
    return _gather_planes(grad, indices)


@fractional_max_pool2d_backward.grad("self")
def _(grad):
    return zero_gradient(grad)


@op("fractional_max_pool3d", tensors=2, promote=NONE, outputs=2, diff_outputs=(True, False),
    node="FractionalMaxPool3DBackward0", check=_check(3))
def fractional_max_pool3d_op(self, random_samples, kernel_size, output_size):
    return _pool(self, random_samples, kernel_size, output_size)


@fractional_max_pool3d_op.grad("self")
def _(grads, self, result1):
    return fractional_max_pool3d_backward(grads[0], self, result1)


@op("fractional_max_pool3d_backward", tensors=3, promote=NONE,
    node="FractionalMaxPool3DBackwardBackward0")
def fractional_max_pool3d_backward(grad_output, self, indices):
    """Scatter-add of ``grad_output`` into the flat volume positions ``indices`` of ``self``."""
    return _scatter_into_planes(grad_output, self.shape, indices, 3)


@fractional_max_pool3d_backward.grad("grad_output")
def _(grad, indices):
    return _gather_volumes(grad, indices)


@fractional_max_pool3d_backward.grad("self")
def _(grad):
    return zero_gradient(grad)


@op("fractional_max_pool_gather2d", tensors=2, promote=NONE)
def _gather_planes(self, indices):
    """``self`` read at the flat plane positions ``indices`` (the backward's derivative)."""
    return _gather_from_planes(self, indices, 2)


@_gather_planes.grad("self")
def _(grad, indices, self_shape):
    from .conv import shaped_like
    return fractional_max_pool2d_backward(grad, shaped_like(self_shape, grad), indices)


@op("fractional_max_pool_gather3d", tensors=2, promote=NONE)
def _gather_volumes(self, indices):
    """``self`` read at the flat volume positions ``indices`` (the backward's derivative)."""
    return _gather_from_planes(self, indices, 3)


@_gather_volumes.grad("self")
def _(grad, indices, self_shape):
    from .conv import shaped_like
    return fractional_max_pool3d_backward(grad, shaped_like(self_shape, grad), indices)


# -- nn.functional -------------------------------------------------------------------------------
def _tuple(value, nd):
    return tuple(value) if isinstance(value, (tuple, list)) else (value,) * nd


def _fractional(nd, input, kernel_size, output_size, output_ratio, _random_samples):  # noqa: A002
    from .._creation import rand
    name = f"fractional_max_pool{nd}d"
    if output_size is None and output_ratio is None:
        raise ValueError(f"{name} requires specifying either an output_size or an output_ratio")
    if output_size is None:
        if nd == 2 and len(output_ratio) > 2:
            raise ValueError(f"{name} requires output_ratio to either be a single Int or tuple "
                             "of Ints.")
        ratio = _tuple(output_ratio, nd)
        output_size = [int(input.size(d - nd) * ratio[d]) for d in range(nd)]
    if _random_samples is None:
        batch = 1 if input.dim() == nd + 1 else input.size(0)
        # NOTE: drawn exactly as torch draws them, so a seeded generator gives torch's windows
        _random_samples = rand(batch, input.size(-nd - 1), nd, dtype=input.dtype,
                               device=input.device)
    pool = fractional_max_pool2d_op if nd == 2 else fractional_max_pool3d_op
    return pool(input, _random_samples, _tuple(kernel_size, nd), _tuple(output_size, nd))


def fractional_max_pool2d_with_indices(input, kernel_size, output_size=None,  # noqa: A002
                                       output_ratio=None, return_indices=False,
                                       _random_samples=None):
    """2-D fractional max pooling; returns (output, indices)."""
    return _fractional(2, input, kernel_size, output_size, output_ratio, _random_samples)


def fractional_max_pool2d(input, kernel_size, output_size=None, output_ratio=None,  # noqa: A002
                          return_indices=False, _random_samples=None):
    """Applies 2D fractional max pooling over an input signal of several input planes."""
    out, idx = _fractional(2, input, kernel_size, output_size, output_ratio, _random_samples)
    return (out, idx) if return_indices else out


def fractional_max_pool3d_with_indices(input, kernel_size, output_size=None,  # noqa: A002
                                       output_ratio=None, return_indices=False,
                                       _random_samples=None):
    """3-D fractional max pooling; returns (output, indices)."""
    return _fractional(3, input, kernel_size, output_size, output_ratio, _random_samples)


def fractional_max_pool3d(input, kernel_size, output_size=None, output_ratio=None,  # noqa: A002
                          return_indices=False, _random_samples=None):
    """Applies 3D fractional max pooling over an input signal of several input planes."""
    out, idx = _fractional(3, input, kernel_size, output_size, output_ratio, _random_samples)
    return (out, idx) if return_indices else out

