"""Pooling and pixel shuffles (resampling, F.interpolate: upsample.py).

Max pooling compares the kernel offsets of a strided window view one offset at a time (a few
vectorised passes, no per-pixel loop) and records flat input indices; its gradient scatters
into those indices and the gradient of that scatter gathers from them, so the pair is closed
under differentiation. Average pooling and its adjoint are a window sum and a col2im. Adaptive
average pooling sums each window in torch's order; its adjoint adds each gradient back into
the window in torch's order.
"""
from __future__ import annotations

import functools
import math

import numpy as np

from .. import _dtype as D
from .._backend import constant_like, get_xp, launch_bound, scatter_add
from .._state import state
from .._tensor import Tensor
from .conv import col2im_view, expand_param, lifted, pad_array, shaped_like, windows
from .indexing import gather
from .pointwise import zero_gradient
from .registry import NONE, op
from .shape import squeeze, unsqueeze, view
from .upsample import add_in_order, opmath, ordered_rounds

__all__ = ["adaptive_avg_pool1d", "pixel_shuffle", "pixel_unshuffle"]
# nn.functional names (ember.nn.functional collects FUNCTIONAL of every nn family).
FUNCTIONAL = ["max_pool1d", "max_pool2d", "max_pool3d", "avg_pool1d", "avg_pool2d",
              "avg_pool3d", "adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_avg_pool3d",
              "adaptive_max_pool1d", "adaptive_max_pool2d", "adaptive_max_pool3d",
              "pixel_shuffle", "pixel_unshuffle", "max_unpool1d", "max_unpool2d",
              "max_unpool3d"]


# -- shapes and checks -----------------------------------------------------------------------------
def pool_out(size, k, s, p, d, ceil_mode):
    """torch's pooling_output_shape for one dim."""
    num = size + 2 * p - d * (k - 1) - 1 + (s - 1 if ceil_mode else 0)
    out = num // s + 1
    if ceil_mode and (out - 1) * s >= size + p:
        out -= 1
    return out


def _right_pad(size, k, s, p, d, out):
    """Padding on the high side so that every window (ceil_mode included) lies inside."""
    return max(p, (out - 1) * s + d * (k - 1) + 1 - size - p)


def _check_pool(x, ks, st, pads, dil, ceil_mode, name):
    if any(s == 0 for s in st) or any(k == 0 for k in ks):
        raise RuntimeError("stride should not be zero")
    if any(d <= 0 for d in dil):
        raise RuntimeError(f"dilation should be greater than zero, but got dilationH: {dil[0]} "
                           f"dilationW: {dil[1]}")
    for k, p, d in zip(ks, pads, dil):
        if p > ((k - 1) * d + 1) // 2:
            raise RuntimeError(f"pad should be at most half of effective kernel size, but got "
                               f"pad={p}, kernel_size={k} and dilation={d}")
    out = [pool_out(x.shape[2 + i], ks[i], st[i], pads[i], dil[i], ceil_mode) for i in range(2)]
    if any(o <= 0 for o in out):
        if name == "max_pool1d":
            raise RuntimeError(f"max_pool1d() Invalid computed output size: {out[1]}")
        c, h, w = x.shape[1:]
        raise RuntimeError(f"Given input size: ({c}x{h}x{w}). Calculated output size: "
                           f"({c}x{out[0]}x{out[1]}). Output size is too small")
    return tuple(out)


def _batchify(input, name, message=None):  # noqa: A002
    if input.ndim == 4:
        return input, False
    if input.ndim == 3:
        return unsqueeze(input, 0), True
    raise RuntimeError(message or "non-empty 3D or 4D (batch mode) tensor expected for input")


def _unbatch(out, unbatched):
    return squeeze(out, 0) if unbatched else out


# -- max pooling ----------------------------------------------------------------------------------
def _max_windows(x, ks, st, pads, dil, out):
    lo = list(pads)
    hi = [_right_pad(x.shape[2 + i], ks[i], st[i], pads[i], dil[i], out[i])
          for i in range(len(ks))]
    fill = -np.inf if x.dtype.kind == "f" else np.iinfo(x.dtype).min
    xp_ = pad_array(x, tuple(zip(lo, hi)), fill)
    return windows(xp_, ks, st, dil, out)


def _first_max(xp, offsets):
    """Max over window offsets and the first offset holding it (torch's strict ``>``).

    NOTE: maximum() and boolean masks are several times faster than where() or copyto(...,
    where=) on these strided views, and a uint8 offset index halves the memory traffic again.
    """
    best = offsets[0]
    for v in offsets[1:]:
        best = xp.maximum(best, v)
    found = offsets[0] == best
    small = np.uint8 if len(offsets) <= 256 else np.int64
    arg = xp.zeros(best.shape, small)
    for k, v in enumerate(offsets[1:], 1):
        hit = (v == best) & ~found
        arg += hit * small(k)
        found |= hit
    return best, arg.astype(np.int64)


def _nan_max(xp, offsets):
    """torch's rule when NaNs are present, val > max or isnan(val): the last NaN wins."""
    best = offsets[0].copy()
    arg = xp.zeros(best.shape, np.int64)
    for k, v in enumerate(offsets[1:], 1):
        take = (v > best) | xp.isnan(v)
        best = xp.where(take, v, best)
        arg = xp.where(take, k, arg)
    return best, arg


def _tiles(shape, ks, st, pads, dil, out):
    """The windows tile the input without overlap or padding (the usual ``max_pool2d(x, k)``)."""
    return (st == ks and not any(pads) and dil == (1, 1) and ks[0] * ks[1] <= 256
            and all(out[i] * ks[i] <= shape[2 + i] for i in range(2)))


def _tiled_max(xp, x, ks, out):
    """Max pooling of non-overlapping windows: a knockout tournament between kernel offsets.

    Each round keeps the larger of two neighbours and its offset; the later one wins only if
    strictly larger, so the first maximum wins as in torch. Every pass is over output-sized
    arrays, and the offsets stay uint8 until they become flat indices at the end.
    """
    n, c, w = x.shape[0], x.shape[1], x.shape[3]
    tiles = x[:, :, :out[0] * ks[0], :out[1] * ks[1]].reshape(n, c, out[0], ks[0], out[1], ks[1])
    entrants = [(tiles[:, :, :, a, :, b], np.uint8(a * ks[1] + b))
                for a, b in np.ndindex(*ks)]
    while len(entrants) > 1:
        nxt = [_knockout(xp, *entrants[i], *entrants[i + 1])
               for i in range(0, len(entrants) - 1, 2)]
        entrants = nxt + entrants[len(entrants) - len(entrants) % 2:]
    best, arg = entrants[0]
    offsets = np.array([a * w + b for a, b in np.ndindex(*ks)], np.int64)
    corners = (np.arange(out[0]) * (ks[0] * w)).reshape(-1, 1) + np.arange(out[1]) * ks[1]
    if isinstance(arg, np.uint8):  # a 1x1 kernel: no rounds were played
        best = best.copy()
        arg = xp.full(best.shape, arg)
    return best, xp.asarray(offsets)[arg] + xp.asarray(corners)


def _knockout(xp, first, first_at, second, second_at):
    # NOTE: arithmetic on the 0/1 outcome, not where(): where() branches per element and
    # mispredicts on data like this, 20x slower. uint8 wrap-around keeps j - i exact mod 256.
    won = (second > first).view(np.uint8)
    if isinstance(first_at, np.uint8) and first_at == 0 and second_at == 1:
        at = won  # the first round's first pair: the outcome is the offset
    else:
        at = first_at + won * (second_at - first_at)
    return xp.maximum(first, second), at


def _stacked_max(x, ks, st, pads, dil, out):
    """Max pooling in a few kernel launches and no host read, for a GPU: the windows copied
    into one trailing axis of kernel offsets and reduced there, torch's NaN rule applied with a
    mask (not a host-side test for NaNs), the index tables kept on the device."""
    xp = get_xp(x)
    k, size = math.prod(ks), x.shape[2:]
    stacked = _max_windows(x, ks, st, pads, dil, out).reshape(x.shape[:2] + tuple(out) + (k,))
    arg = _window_argmax(xp, stacked)
    rows = arg.size
    small = np.int32 if rows * k < 2**31 else np.int64  # (half the device memory kept)
    starts = constant_like(x, ("window starts", rows, k),
                           lambda: np.arange(0, rows * k, k, dtype=small))
    best = stacked.reshape(-1)[arg.reshape(-1) + starts].reshape(arg.shape)
    offsets = constant_like(x, ("pool offsets", ks, dil, size),
                            lambda: _plane_index([np.arange(ks[i]) * dil[i]
                                                  for i in range(len(ks))], size).reshape(-1))
    corners = constant_like(x, ("pool corners", out, st, pads, size),
                            lambda: _plane_index([np.arange(out[i]) * st[i] - pads[i]
                                                  for i in range(len(out))], size))
    return best, offsets[arg] + corners


def _plane_index(coords, size):
    """Flat positions in planes of ``size`` of the grid of per-dim ``coords`` (an outer sum)."""
    flat = np.zeros((), np.int64)
    for c, n in zip(coords, size):
        flat = flat[..., None] * n + c.astype(np.int64)
    return flat


def _window_argmax(xp, stacked):
    """The offset torch's max pooling picks along the last axis: the first maximum (strict
    ``>``), or the last NaN where there is one (``val > max or isnan(val)``)."""
    arg = xp.argmax(stacked, axis=-1)
    if stacked.dtype.kind != "f":
        return arg
    nan = xp.isnan(stacked)
    last_nan = (stacked.shape[-1] - 1) - xp.argmax(nan[..., ::-1], axis=-1)
    return xp.where(nan.any(axis=-1), last_nan, arg)


# (undefined_grads: the indices never get a gradient, and zeros made for them would be a
# wasted kernel launch on a GPU)
@op("max_pool2d_with_indices", promote=NONE, outputs=2, diff_outputs=(True, False),
    node="MaxPool2DWithIndicesBackward0", undefined_grads=True)
@lifted(4)
def max_pool2d_with_indices(self, kernel_size, stride, padding, dilation, ceil_mode):
    xp = get_xp(self)
    ks, st, pads, dil = kernel_size, stride, padding, dilation
    out = tuple(pool_out(self.shape[2 + i], ks[i], st[i], pads[i], dil[i], ceil_mode)
                for i in range(2))
    if launch_bound(self):
        return _stacked_max(self, ks, st, pads, dil, out)
    nan = self.dtype.kind == "f" and bool(xp.isnan(self).any())
    if not nan and _tiles(self.shape, ks, st, pads, dil, out):
        return _tiled_max(xp, self, ks, out)
    win = _max_windows(self, ks, st, pads, dil, out)
    offsets = [win[..., a, b] for a, b in np.ndindex(*ks)]
    best, arg = (_nan_max if nan else _first_max)(xp, offsets)
    kh, kw = xp.divmod(arg, ks[1])
    rows = (xp.arange(out[0]) * st[0] - pads[0]).reshape(-1, 1) + kh * dil[0]
    cols = xp.arange(out[1]) * st[1] - pads[1] + kw * dil[1]
    return best, rows * self.shape[3] + cols


@max_pool2d_with_indices.grad("self")
def _(grads, self, result1):
    return max_pool2d_with_indices_backward(grads[0], self, result1)


# NOTE: as torch's, the pooling backward ops take the pooled input (for its shape): of zero
# derivative in it, they make a create_graph pass record a graph reaching it, so second
# derivatives are zeros rather than constants that do not require grad.
@op("max_pool2d_with_indices_backward", tensors=3, promote=NONE,
    node="MaxPool2DWithIndicesBackwardBackward0")
def max_pool2d_with_indices_backward(grad_output, self, indices):
    """Scatter-add of ``grad_output`` into the flat positions ``indices`` of ``self``'s planes."""
    return _scatter_into_planes(grad_output, self.shape, indices, 2)


def _scatter_into_planes(grad_output, shape, indices, nd):
    """``grad_output`` added into zeros of ``shape`` at the flat positions ``indices`` of its
    trailing ``nd``-dimensional planes."""
    xp = get_xp(grad_output)
    rows = math.prod(grad_output.shape[:-nd])
    plane = math.prod(shape[-nd:])
    out = xp.zeros((rows, plane), grad_output.dtype)
    base = constant_like(grad_output, ("plane starts", rows, plane),
                         lambda: (np.arange(rows, dtype=np.int64) * plane).reshape(rows, 1))
    flat = (indices.reshape(rows, indices.size // max(rows, 1)) + base).ravel()
    scatter_add(out.reshape(-1), flat, grad_output.reshape(-1))
    return out.reshape(shape)


@max_pool2d_with_indices_backward.grad("grad_output")
def _(grad, indices):
    return pool_gather(grad, indices)


@max_pool2d_with_indices_backward.grad("self")
def _(grad):
    return zero_gradient(grad)


@op("max_pool2d_gather", tensors=2, promote=NONE)
def pool_gather(self, indices):
    """``self`` (N, C, H, W) read at the flat plane positions ``indices`` (N, C, ...)."""
    return _gather_from_planes(self, indices, 2)


def _gather_from_planes(self, indices, nd):
    """``self`` read at the flat positions ``indices`` of its trailing ``nd``-dim planes."""
    xp = get_xp(self)
    rows = math.prod(self.shape[:-nd])
    cols = indices.size // max(rows, 1)
    flat = xp.take_along_axis(self.reshape(rows, math.prod(self.shape[-nd:])),
                              indices.reshape(rows, cols), axis=1)
    return flat.reshape(indices.shape)


@pool_gather.grad("self")
def _(grad, indices, self_shape):
    return max_pool2d_with_indices_backward(grad, shaped_like(self_shape, grad), indices)


def _pool_params(kernel_size, stride, padding, dilation, nd=2):
    ks = expand_param(kernel_size, nd, "kernel_size")
    st = ks if stride is None or (not isinstance(stride, int) and len(stride) == 0) else \
        expand_param(stride, nd, "stride")
    return ks, st, expand_param(padding, nd, "padding"), expand_param(dilation, nd, "dilation")


def _stride_as_given(stride, st):
    """The stride an avg_pool op takes: ``()`` where none was given (the kernel size)."""
    return () if stride is None or (not isinstance(stride, int) and len(stride) == 0) else st


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1,  # noqa: A002
               ceil_mode=False, return_indices=False):
    """Applies a 2D max pooling over an input signal composed of several input planes."""
    ks, st, pads, dil = _pool_params(kernel_size, stride, padding, dilation)
    x, _ = _batchify(input, "max_pool2d")
    _check_pool(x, ks, st, pads, dil, ceil_mode, "max_pool2d")
    out, idx = max_pool2d_with_indices(input, ks, st, pads, dil, ceil_mode)
    return (out, idx) if return_indices else out


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1,  # noqa: A002
               ceil_mode=False, return_indices=False):
    """Applies a 1D max pooling over an input signal composed of several input planes."""
    if input.ndim not in (2, 3) and return_indices:  # (torch's with-indices form's check)
        raise RuntimeError(f"Expected 2 to 3 dimensions, but got {input.ndim}-dimensional "
                           "tensor for argument #1 'self' (while checking arguments for "
                           "max_pool1d)")
    empty = input.ndim in (2, 3) and 0 in input.shape[input.ndim - 2:]  # (a batch may be)
    if input.ndim not in (2, 3) or empty and not return_indices:
        raise RuntimeError("max_pool1d: Expected 2D or 3D (batch mode) tensor with optional 0 "
                           f"dim batch size for input, but got:{list(input.shape)}")
    ks, st, pads, dil = _pool_params(kernel_size, stride, padding, dilation, 1)
    x = unsqueeze(input, -2)
    if empty:  # (torch's with-indices form checks as max_pool2d's)
        raise RuntimeError("Expected 3D or 4D (batch mode) tensor with optional 0 dim batch "
                           f"size for input, but got:{list(x.shape)}")
    xb = x if x.ndim == 4 else unsqueeze(x, 0)
    _check_pool(xb, (1,) + ks, (1,) + st, (0,) + pads, (1,) + dil, ceil_mode, "max_pool1d")
    out, idx = max_pool2d_with_indices(x, (1,) + ks, (1,) + st, (0,) + pads, (1,) + dil,
                                       ceil_mode)
    out, idx = squeeze(out, -2), squeeze(idx, -2)
    if return_indices:
        return out, idx
    if _needs_indices(input):
        return out
    out = out.clone()  # torch's kernel without indices: a tensor of its own, not a view
    if input.ndim == 2:
        out._bump_version()  # (which squeezes its unbatched result in place)
    return out


def _needs_indices(input):  # noqa: A002
    """torch's max_pool1d runs its with-indices form (whose result is a squeezed view) only
    where a gradient may be needed, or off the CPU."""
    return ((input.requires_grad and state.grad_enabled) or input._fw_grad is not None
            or input.device.type != "cpu")


# -- 3-D max pooling ----------------------------------------------------------------------------
@op("max_pool3d_with_indices", promote=NONE, outputs=2, diff_outputs=(True, False),
    node="MaxPool3DWithIndicesBackward0", undefined_grads=True)
@lifted(5)
def max_pool3d_with_indices(self, kernel_size, stride, padding, dilation, ceil_mode):
    xp = get_xp(self)
    ks, st, pads, dil = kernel_size, stride, padding, dilation
    size = self.shape[2:]
    out = tuple(pool_out(size[i], ks[i], st[i], pads[i], dil[i], ceil_mode) for i in range(3))
    if launch_bound(self):
        return _stacked_max(self, ks, st, pads, dil, out)
    win = _max_windows(self, ks, st, pads, dil, out)
    offsets = [win[(Ellipsis, *o)] for o in np.ndindex(*ks)]
    nan = self.dtype.kind == "f" and bool(xp.isnan(self).any())
    best, arg = (_nan_max if nan else _first_max)(xp, offsets)
    at = xp.unravel_index(arg, ks)
    flat = 0
    for i in range(3):  # the window's corner plus the offset, per dim, into a flat index
        start = (xp.arange(out[i]) * st[i] - pads[i]).reshape((-1,) + (1,) * (2 - i))
        flat = flat * size[i] + start + at[i] * dil[i]
    return best, flat.astype(np.int64)


@max_pool3d_with_indices.grad("self")
def _(grads, self, result1):
    return max_pool3d_with_indices_backward(grads[0], self, result1)


@op("max_pool3d_with_indices_backward", tensors=3, promote=NONE,
    node="MaxPool3DWithIndicesBackwardBackward0")
def max_pool3d_with_indices_backward(grad_output, self, indices):
    """Scatter-add of ``grad_output`` into the flat positions ``indices`` of ``self``'s
    volumes."""
    return _scatter_into_planes(grad_output, self.shape, indices, 3)


@max_pool3d_with_indices_backward.grad("grad_output")
def _(grad, indices):
    return pool_gather3d(grad, indices)


@max_pool3d_with_indices_backward.grad("self")
def _(grad):
    return zero_gradient(grad)


@op("max_pool3d_gather", tensors=2, promote=NONE)
def pool_gather3d(self, indices):
    """``self`` (N, C, D, H, W) read at the flat volume positions ``indices``."""
    return _gather_from_planes(self, indices, 3)


@pool_gather3d.grad("self")
def _(grad, indices, self_shape):
    return max_pool3d_with_indices_backward(grad, shaped_like(self_shape, grad), indices)


def max_pool3d(input, kernel_size, stride=None, padding=0, dilation=1,  # noqa: A002
               ceil_mode=False, return_indices=False):
    """Applies a 3D max pooling over an input signal composed of several input planes."""
    ks, st, pads, dil = _pool_params(kernel_size, stride, padding, dilation, 3)
    if input.ndim not in (4, 5):
        raise RuntimeError("non-empty 4D or 5D (batch mode) tensor expected for input")
    if any(s == 0 for s in st):
        raise RuntimeError("stride should not be zero")
    if any(d <= 0 for d in dil):
        raise RuntimeError("dilation should be greater than zero, but got dilationT: "
                           f"{dil[0]} dilationH: {dil[1]} dilationW: {dil[2]}")
    for k, p, d in zip(ks, pads, dil):
        if p > ((k - 1) * d + 1) // 2:
            raise RuntimeError(f"pad should be at most half of effective kernel size, but got "
                               f"pad={p}, kernel_size={k} and dilation={d}")
    size = input.shape[-3:]
    out = [pool_out(size[i], ks[i], st[i], pads[i], dil[i], ceil_mode) for i in range(3)]
    if any(o <= 0 for o in out):
        c = input.shape[-4]
        raise RuntimeError("Given input size: (" + "x".join(map(str, (c, *size))) + "). "
                           "Calculated output size: (" + "x".join(map(str, (c, *out)))
                           + "). Output size is too small")
    result, idx = max_pool3d_with_indices(input, ks, st, pads, dil, ceil_mode)
    return (result, idx) if return_indices else result


# -- average pooling ------------------------------------------------------------------------------
@functools.lru_cache(maxsize=256)
def _divisors(size, ks, st, pads, ceil_mode, count_include_pad, divisor_override):
    """The divisor of every window (an array of the output's spatial shape), as torch's
    avg_pool2d/3d compute them."""
    per_dim = []
    for i in range(len(size)):
        o = pool_out(size[i], ks[i], st[i], pads[i], 1, ceil_mode)
        start = np.arange(o) * st[i] - pads[i]
        end = np.minimum(start + ks[i], size[i] + pads[i])
        pool = end - start
        inside = np.minimum(end, size[i]) - np.maximum(start, 0)
        per_dim.append(pool if count_include_pad else inside)
    if divisor_override:
        return np.full(tuple(len(p) for p in per_dim), float(divisor_override))
    out = per_dim[0].astype(np.float64)
    for p in per_dim[1:]:
        out = np.multiply.outer(out, p)
    return out.astype(np.float64)


def _avg_pool_kernel(self, ks, st, pads, ceil_mode, count_include_pad, divisor_override):
    nd = len(ks)
    size = self.shape[2:]
    out = tuple(pool_out(size[i], ks[i], st[i], pads[i], 1, ceil_mode) for i in range(nd))
    hi = [_right_pad(size[i], ks[i], st[i], pads[i], 1, out[i]) for i in range(nd)]
    win = windows(pad_array(self, tuple(zip(pads, hi))), ks, st, (1,) * nd, out)
    offsets = list(np.ndindex(*ks))
    acc = win[(Ellipsis, *offsets[0])].copy()
    for off in offsets[1:]:
        acc += win[(Ellipsis, *off)]
    div = _divisors(tuple(size), ks, st, pads, ceil_mode, count_include_pad, divisor_override)
    return acc / get_xp(acc).asarray(div.astype(self.dtype))


def _avg_pool_adjoint(grad_output, self, ks, st, pads, ceil_mode, count_include_pad,
                      divisor_override):
    nd = len(ks)
    if grad_output.ndim == nd + 1:  # unbatched
        return _avg_pool_adjoint(grad_output[None], self[None], ks, st, pads, ceil_mode,
                                 count_include_pad, divisor_override)[0]
    xp = get_xp(grad_output)
    size = tuple(self.shape[2:])
    out = grad_output.shape[2:]
    div = _divisors(size, ks, st, pads, ceil_mode, count_include_pad, divisor_override)
    g = grad_output / xp.asarray(div.astype(grad_output.dtype))
    hi = [_right_pad(size[i], ks[i], st[i], pads[i], 1, out[i]) for i in range(nd)]
    n, c = g.shape[:2]
    cv = xp.broadcast_to(g.reshape((n, c) + (1,) * nd + tuple(out)),
                         (n, c) + tuple(ks) + tuple(out))
    return col2im_view(cv, size, ks, st, (1,) * nd, tuple(zip(pads, hi)), out)


def _avg_pool_ops(nd):
    """avg_pool{nd}d and its adjoint, each the other's derivative (the adjoint takes the
    pooled input for its shape, of zero derivative in it). A ``stride`` of ``()`` is the
    kernel size, as in torch's schema (whose node shows the stride as given)."""
    name = f"avg_pool{nd}d"
    node = f"AvgPool{nd}DBackward0"

    @op(name, promote=NONE, node=node)
    @lifted(nd + 2)
    def forward(self, kernel_size, stride, padding, ceil_mode, count_include_pad,
                divisor_override):
        return _avg_pool_kernel(self, kernel_size, stride or kernel_size, padding, ceil_mode,
                                count_include_pad, divisor_override)

    @op(name + "_backward", tensors=2, promote=NONE, node=f"AvgPool{nd}DBackwardBackward0")
    def adjoint(grad_output, self, kernel_size, stride, padding, ceil_mode, count_include_pad,
                divisor_override):
        return _avg_pool_adjoint(grad_output, self, kernel_size, stride or kernel_size,
                                 padding, ceil_mode, count_include_pad, divisor_override)

    @forward.grad("self")
    def _(grad, self, kernel_size, stride, padding, ceil_mode, count_include_pad,
          divisor_override):
        return adjoint(grad, self, kernel_size, stride, padding, ceil_mode, count_include_pad,
                       divisor_override)

    @adjoint.grad("grad_output")
    def _(grad, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override):
        return forward(grad, kernel_size, stride, padding, ceil_mode, count_include_pad,
                       divisor_override)

    @adjoint.grad("self")
    def _(grad):
        return zero_gradient(grad)
    return forward, adjoint


avg_pool2d_op, avg_pool2d_backward = _avg_pool_ops(2)
avg_pool3d_op, avg_pool3d_backward = _avg_pool_ops(3)


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False,  # noqa: A002
               count_include_pad=True, divisor_override=None):
    """Applies 2D average-pooling operation in kH x kW regions by step size sH x sW steps."""
    ks, st, pads, _ = _pool_params(kernel_size, stride, padding, 1)
    if input.ndim not in (3, 4):
        from .._tensor import _wrap_dim
        _wrap_dim(-3, input.ndim)
        raise RuntimeError("non-empty 3D or 4D (batch mode) tensor expected for input")
    x, _ = _batchify(input, "avg_pool2d")
    if divisor_override is not None and divisor_override == 0:
        raise RuntimeError("divisor must be not zero")
    _check_pool(x, ks, st, pads, (1, 1), ceil_mode, "avg_pool2d")
    return avg_pool2d_op(input, ks, _stride_as_given(stride, st), pads, ceil_mode,
                          count_include_pad, divisor_override)


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False,  # noqa: A002
               count_include_pad=True):
    """Applies a 1D average pooling over an input signal composed of several input planes."""
    if input.ndim not in (2, 3):
        raise RuntimeError(f"Expected 2 to 3 dimensions, but got {input.ndim}-dimensional tensor "
                           "for argument #1 'self' (while checking arguments for avg_pool1d)")
    ks, st, pads, _ = _pool_params(kernel_size, stride, padding, 1, 1)
    out = avg_pool2d(unsqueeze(input, -2), (1,) + ks, (1,) + st, (0,) + pads, ceil_mode,
                     count_include_pad)
    return squeeze(out, -2)


def avg_pool3d(input, kernel_size, stride=None, padding=0, ceil_mode=False,  # noqa: A002
               count_include_pad=True, divisor_override=None):
    """Applies 3D average-pooling operation in kT x kH x kW regions by step size sT x sH x sW
    steps."""
    ks, st, pads, _ = _pool_params(kernel_size, stride, padding, 1, 3)
    if input.ndim not in (4, 5):
        raise RuntimeError("non-empty 4D or 5D (batch mode) tensor expected for input")
    if divisor_override is not None and divisor_override == 0:
        raise RuntimeError("divisor must be not zero")
    _check_pool3d(input, ks, st, pads)
    return avg_pool3d_op(input, ks, _stride_as_given(stride, st), pads, ceil_mode,
                          count_include_pad, divisor_override)


def _check_pool3d(input, ks, st, pads):  # noqa: A002
    if any(s == 0 for s in st):
        raise RuntimeError("stride should not be zero")
    for k, p in zip(ks, pads):
        if p > k // 2:
            raise RuntimeError(f"pad should be at most half of effective kernel size, but got "
                               f"pad={p}, kernel_size={k} and dilation=1")
    t, h, w = input.shape[-3:]
    if any(input.shape[-3 + i] + 2 * pads[i] < ks[i] for i in range(3)):
        raise RuntimeError(f"input image (T: {t} H: {h} W: {w}) smaller than kernel size (kT: "
                           f"{ks[0]} kH: {ks[1]} kW: {ks[2]})")


# -- adaptive average pooling -------------------------------------------------------------------
# Each output element is the mean of its window (rows [o * n_in // n_out, ceil((o + 1) * n_in /
# n_out)) per dim), computed as torch's CPU kernel computes it: the window's elements summed one
# after the other in row-major order (in the opmath type), then divided by each dim's width in
# turn; its backward adds g / kh / kw into the window, outputs in row-major order.
def _adaptive_mean(x, out_sizes):
    xp = get_xp(x)
    nd = len(out_sizes)
    taps = [_adaptive_taps(i, o) for i, o in zip(x.shape[-nd:], out_sizes)]
    dtype = x.dtype
    x = x.astype(opmath(dtype), copy=False)
    total = xp.zeros(x.shape[:-nd] + tuple(out_sizes), x.dtype)
    if any(s == 0 for s in x.shape[-nd:]) or total.size == 0:
        return total.astype(dtype, copy=False)
    with np.errstate(invalid="ignore", over="ignore"):
        for k in np.ndindex(*(t[0].shape[1] for t in taps)):
            grid = _outer([t[0][:, k[d]] for d, t in enumerate(taps)])
            inside = functools.reduce(np.logical_and,
                                      _outer([t[2][:, k[d]] for d, t in enumerate(taps)]))
            value = x[(Ellipsis,) + tuple(xp.asarray(g) for g in grid)]
            total = total + (value if inside.all() else xp.where(xp.asarray(inside), value, 0))
            if nd == 3 and dtype != total.dtype:  # (torch's 3-d kernel sums in float16 itself)
                total = total.astype(dtype).astype(total.dtype)
        for d, t in enumerate(taps):
            total = total / _widths(xp, t, total.dtype, nd - 1 - d)
    return total.astype(dtype, copy=False)


def _adaptive_mean_adjoint(grad, in_sizes):
    xp = get_xp(grad)
    nd = len(in_sizes)
    taps = tuple(_adaptive_taps(i, o) for i, o in zip(in_sizes, grad.shape[-nd:]))
    dtype = grad.dtype
    delta = grad.astype(opmath(dtype), copy=False)
    with np.errstate(invalid="ignore", over="ignore"):
        for d, t in enumerate(taps):
            delta = delta / _widths(xp, t, delta.dtype, nd - 1 - d)
    rounds = _adaptive_rounds(tuple(in_sizes), tuple(grad.shape[-nd:]))
    if dtype == delta.dtype:
        return add_in_order(delta, rounds, in_sizes, _add, dtype)
    # (float16, bfloat16: torch's backward rounds g / kh / kw and each addition to the dtype)
    delta = delta.astype(dtype).astype(delta.dtype)
    return add_in_order(delta, rounds, in_sizes, functools.partial(_add_rounded, dtype),
                        delta.dtype).astype(dtype, copy=False)


def _add(acc, values, weights, dtype):
    return acc + values


def _add_rounded(rounded, acc, values, weights, dtype):
    return (acc + values).astype(rounded).astype(dtype)


def _outer(vectors):
    """Per-dim vectors shaped to broadcast against each other (np.ix_ without its reading
    of boolean vectors as positions)."""
    nd = len(vectors)
    return [v.reshape((-1,) + (1,) * (nd - 1 - d)) for d, v in enumerate(vectors)]


def _widths(xp, taps, dtype, trailing):
    """Each window's width along one dim, in the dtype it divides (shaped for its dim)."""
    return xp.asarray(taps[2].sum(1).astype(dtype).reshape((-1,) + (1,) * trailing))


@functools.lru_cache(maxsize=128)
def _adaptive_rounds(in_sizes, out_sizes):
    taps = [_adaptive_taps(i, o) for i, o in zip(in_sizes, out_sizes)]
    return ordered_rounds(taps, in_sizes, out_sizes)


@functools.lru_cache(maxsize=256)
def _adaptive_taps(n_in, n_out):
    o = np.arange(n_out)
    starts, ends = (o * n_in) // n_out, -((-(o + 1) * n_in) // n_out)
    width = int((ends - starts).max()) if n_out else 0
    index = starts[:, None] + np.arange(width)
    valid = index < ends[:, None]
    weight = np.where(valid, 1.0 / np.maximum(ends - starts, 1)[:, None], 0.0)
    return np.minimum(index, max(n_in - 1, 0)), weight, valid


def _adaptive_avg_pool(name, node, nd):
    """The op and its adjoint, each the other's derivative. The adjoint takes the pooled input
    (torch's does: of zero derivative in it, see max_pool2d_with_indices_backward)."""
    @op(name, promote=NONE, node=node)
    def forward(self, output_size, params):
        return _adaptive_mean(self, output_size)

    @op(name + "_backward", tensors=2, promote=NONE,
        node=node.replace("Backward0", "BackwardBackward0"))
    def adjoint(grad_output, self, params):
        return _adaptive_mean_adjoint(grad_output, self.shape[-nd:])

    @forward.grad("self")
    def _(grad, self, params):
        return adjoint(grad, self, params)

    @adjoint.grad("grad_output")
    def _(grad, grad_output_shape, params):
        return forward(grad, tuple(grad_output_shape[-nd:]), params)

    @adjoint.grad("self")
    def _(grad):
        return zero_gradient(grad)
    return forward, adjoint


adaptive_avg_pool2d_op, adaptive_avg_pool2d_backward = _adaptive_avg_pool(
    "adaptive_avg_pool2d", "AdaptiveAvgPool2DBackward0", 2)
adaptive_avg_pool3d_op, adaptive_avg_pool3d_backward = _adaptive_avg_pool(
    "adaptive_avg_pool3d", "AdaptiveAvgPool3DBackward0", 3)


def _adaptive_size(output_size, x, nd):
    size = (output_size,) * nd if isinstance(output_size, int) else tuple(output_size)
    if len(size) == 1 and nd == 2:
        size = size * 2
    return tuple(x.shape[-nd + i] if s is None else int(s) for i, s in enumerate(size))


def _pooled_size(output_size, input, nd):  # noqa: A002
    """An adaptive pooling's output size as torch's functional takes it: a tuple of sizes
    needs more input dims than it has (``_list_with_default``'s ValueError), None keeps the
    input's size."""
    from ..nn.modules.utils import _list_with_default
    _list_with_default(output_size, tuple(input.shape))
    if not isinstance(output_size, int) and len(output_size) != nd:
        raise RuntimeError(f"adaptive_avg_pool{nd}d: output_size must be {nd}")
    return _adaptive_size(output_size, input, nd)


def _mean_shortcut(input, nd):  # noqa: A002
    """torch's adaptive average pooling to one value per plane, before any check of the
    input's dims: the mean over the last ``nd`` dims (MeanBackward1), so any input with that
    many dims pools (a 2-D one in adaptive_avg_pool2d, an empty one: NaN), and fewer raise
    mean's IndexError."""
    from .reduction import mean
    return mean(input, tuple(range(-1, -nd - 1, -1)), keepdim=True)


def adaptive_avg_pool2d(input, output_size):  # noqa: A002
    """Applies a 2D adaptive average pooling over an input signal."""
    size = _pooled_size(output_size, input, 2)
    if size == (1, 1):
        return _mean_shortcut(input, 2)
    if input.ndim not in (3, 4):
        raise RuntimeError(f"adaptive_avg_pool2d(): Expected 3D or 4D tensor, but got "
                           f"{list(input.shape)}")
    return adaptive_avg_pool2d_op(input, size, None)


def adaptive_avg_pool3d(input, output_size):  # noqa: A002
    """Applies a 3D adaptive average pooling over an input signal."""
    size = _pooled_size(output_size, input, 3)
    if size == (1, 1, 1):
        return _mean_shortcut(input, 3)
    if input.ndim not in (4, 5):
        raise RuntimeError(f"adaptive_avg_pool3d(): Expected 4D or 5D tensor, but got "
                           f"{list(input.shape)}")
    for d in range(input.ndim - 4, input.ndim):
        if input.shape[d] == 0:
            raise RuntimeError("adaptive_avg_pool3d(): Expected input to have non-zero size for "
                               f"non-batch dimensions, but input has sizes {list(input.shape)} "
                               f"with dimension {d} being empty")
    return adaptive_avg_pool3d_op(input, size, None)


def adaptive_avg_pool1d(input, output_size):  # noqa: A002
    """Applies a 1D adaptive average pooling over an input signal."""
    if input.ndim not in (2, 3):  # (torch's checkDimRange)
        raise RuntimeError(f"Expected 2 to 3 dimensions, but got {input.ndim}-dimensional "
                           "tensor for argument #1 'self' (while checking arguments for "
                           "adaptive_avg_pool1d)")
    size = _adaptive_size(output_size, input, 1)
    return squeeze(adaptive_avg_pool2d(unsqueeze(input, -2), (1,) + size), -2)


# -- adaptive max pooling ------------------------------------------------------------------------
@functools.lru_cache(maxsize=256)
def _adaptive_windows(n_in, n_out):
    """(n_out, K) input indices of each window, short windows padded with their last index."""
    starts = [(o * n_in) // n_out for o in range(n_out)]
    ends = [-((-(o + 1) * n_in) // n_out) for o in range(n_out)]
    k = max(e - s for s, e in zip(starts, ends))
    idx = np.array([[min(s + j, e - 1) for j in range(k)] for s, e in zip(starts, ends)])
    return idx


@op("adaptive_max_pool2d", promote=NONE, outputs=2, diff_outputs=(True, False),
    node="AdaptiveMaxPool2DBackward0")
@lifted(4)
def adaptive_max_pool2d_op(self, output_size):
    xp = get_xp(self)
    h, w = self.shape[2:]
    ih, iw = _adaptive_windows(h, output_size[0]), _adaptive_windows(w, output_size[1])
    kh, kw = ih.shape[1], iw.shape[1]
    g = self[:, :, xp.asarray(ih)[:, :, None, None], xp.asarray(iw)[None, None]]
    g = g.transpose(0, 1, 2, 4, 3, 5)  # (N, C, Ho, Wo, kh, kw)
    best = g[..., 0, 0].copy()
    arg = xp.zeros(best.shape, np.int64)
    for k, (a, b) in enumerate(np.ndindex(kh, kw)):
        if k == 0:
            continue
        v = g[..., a, b]
        take = v > best
        if self.dtype.kind == "f":
            take |= xp.isnan(v)
        xp.copyto(best, v, where=take)
        xp.copyto(arg, k, where=take)
    a, b = xp.divmod(arg, kw)
    rows = xp.asarray(ih)[xp.arange(output_size[0])[:, None], a]
    cols = xp.asarray(iw)[xp.arange(output_size[1]), b]
    return best, rows * w + cols


@adaptive_max_pool2d_op.grad("self")
def _(grads, self, result1):
    return max_pool2d_with_indices_backward(grads[0], self, result1)


def adaptive_max_pool2d(input, output_size, return_indices=False):  # noqa: A002
    """Applies a 2D adaptive max pooling over an input signal."""
    if input.ndim not in (3, 4):
        raise RuntimeError(f"adaptive_max_pool2d(): Expected 3D or 4D tensor, but got: "
                           f"{list(input.shape)}")
    size = _adaptive_size(output_size, input, 2)
    out, idx = adaptive_max_pool2d_op(input, size)
    return (out, idx) if return_indices else out


def adaptive_max_pool1d(input, output_size, return_indices=False):  # noqa: A002
    """Applies a 1D adaptive max pooling over an input signal."""
    if input.ndim not in (2, 3):
        raise RuntimeError(f"adaptive_max_pool1d(): Expected 2D or 3D tensor, but got: "
                           f"{list(input.shape)}")
    size = _adaptive_size(output_size, input, 1)
    out, idx = adaptive_max_pool2d(unsqueeze(input, -2), (1,) + size, True)
    out, idx = squeeze(out, -2), squeeze(idx, -2)
    return (out, idx) if return_indices else out


@op("adaptive_max_pool3d", promote=NONE, outputs=2, diff_outputs=(True, False),
    node="AdaptiveMaxPool3DBackward0")
@lifted(5)
def adaptive_max_pool3d_op(self, output_size):
    xp = get_xp(self)
    sizes = self.shape[2:]
    wins = [xp.asarray(_adaptive_windows(sizes[i], output_size[i])) for i in range(3)]
    ks = tuple(int(w.shape[1]) for w in wins)
    g = self[:, :, wins[0][:, :, None, None, None, None], wins[1][:, :, None, None],
             wins[2]]  # (N, C, o0, k0, o1, k1, o2, k2)
    g = g.transpose(0, 1, 2, 4, 6, 3, 5, 7)
    offsets = [g[(Ellipsis, *o)] for o in np.ndindex(*ks)]
    nan = self.dtype.kind == "f" and bool(xp.isnan(self).any())
    best, arg = (_nan_max if nan else _first_max)(xp, offsets)
    at = xp.unravel_index(arg, ks)
    flat = 0
    for i in range(3):  # the row of each window's winner, per dim, into a flat index
        window = xp.arange(output_size[i]).reshape((-1,) + (1,) * (2 - i))
        flat = flat * sizes[i] + wins[i][window, at[i]]
    return best, flat.astype(np.int64)


@adaptive_max_pool3d_op.grad("self")
def _(grads, self, result1):
    return max_pool3d_with_indices_backward(grads[0], self, result1)


def adaptive_max_pool3d(input, output_size, return_indices=False):  # noqa: A002
    """Applies a 3D adaptive max pooling over an input signal."""
    if input.ndim not in (4, 5):
        raise RuntimeError(f"adaptive_max_pool3d(): Expected 4D or 5D tensor, but got: "
                           f"{list(input.shape)}")
    if not isinstance(output_size, int) and len(output_size) != 3:
        raise RuntimeError("adaptive_max_pool3d(): internal error: output_size.size() must be 3")
    for d in range(input.ndim - 4, input.ndim):
        if input.shape[d] == 0:
            raise RuntimeError("adaptive_max_pool3d(): Expected input to have non-zero size for "
                               f"non-batch dimensions, but input has sizes {list(input.shape)} "
                               f"with dimension {d} being empty")
    out, idx = adaptive_max_pool3d_op(input, _adaptive_size(output_size, input, 3))
    return (out, idx) if return_indices else out


# -- pixel shuffle -------------------------------------------------------------------------------
def _shuffle(x, r):
    *lead, c, h, w = x.shape
    oc = c // (r * r)
    y = x.reshape(*lead, oc, r, r, h, w)
    n = len(lead)
    perm = tuple(range(n)) + (n, n + 3, n + 1, n + 4, n + 2)
    return get_xp(x).ascontiguousarray(y.transpose(perm)).reshape(*lead, oc, h * r, w * r)


def _unshuffle(x, r):
    *lead, c, h, w = x.shape
    y = x.reshape(*lead, c, h // r, r, w // r, r)
    n = len(lead)
    perm = tuple(range(n)) + (n, n + 2, n + 4, n + 1, n + 3)
    return get_xp(x).ascontiguousarray(y.transpose(perm)).reshape(*lead, c * r * r, h // r,
                                                                  w // r)


@op("pixel_shuffle", promote=NONE, node="PixelShuffleBackward0")
def _pixel_shuffle(self, upscale_factor):
    return _shuffle(self, upscale_factor)


@_pixel_shuffle.grad("self")
def _(grad, upscale_factor):
    return _pixel_unshuffle(grad, upscale_factor)


@op("pixel_unshuffle", promote=NONE, node="PixelUnshuffleBackward0")
def _pixel_unshuffle(self, downscale_factor):
    return _unshuffle(self, downscale_factor)


@_pixel_unshuffle.grad("self")
def _(grad, downscale_factor):
    return _pixel_shuffle(grad, downscale_factor)


def pixel_shuffle(input, upscale_factor):  # noqa: A002
    """Rearranges (*, C*r^2, H, W) into (*, C, H*r, W*r)."""
    if input.ndim < 3:
        raise RuntimeError(f"pixel_shuffle expects input to have at least 3 dimensions, but got "
                           f"input with {input.ndim} dimension(s)")
    r = int(upscale_factor)
    if input.shape[-3] % (r * r):
        raise RuntimeError(f"pixel_shuffle expects its input's 'channel' dimension to be "
                           f"divisible by the square of upscale_factor, but input.size(-3)="
                           f"{input.shape[-3]} is not divisible by {r * r}")
    return _pixel_shuffle(input, r)


def pixel_unshuffle(input, downscale_factor):  # noqa: A002
    """Rearranges (*, C, H*r, W*r) into (*, C*r^2, H, W)."""
    if input.ndim < 3:
        raise RuntimeError(f"pixel_unshuffle expects input to have at least 3 dimensions, but "
                           f"got input with {input.ndim} dimension(s)")
    r = int(downscale_factor)
    for dim, name in ((-2, "height"), (-1, "width")):
        if input.shape[dim] % r:
            raise RuntimeError(f"pixel_unshuffle expects {name} to be divisible by "
                               f"downscale_factor, but input.size({dim})={input.shape[dim]} is "
                               f"not divisible by {r}")
    return _pixel_unshuffle(input, r)


Tensor.pixel_shuffle = pixel_shuffle


# -- max unpooling ---------------------------------------------------------------------------------
# The inverse of max pooling: each value goes to the flat position of its plane that the pooling's
# indices name, the rest are zeros. The derivative gathers from those positions (torch's
# max_pool_double_backward: a view of a gather, whose own derivative scatters back).
def _unpool_kernel(self, indices, output_size, nd):
    xp = get_xp(self)
    lead = self.shape[:-nd]
    rows = math.prod(lead)
    plane = math.prod(output_size)
    flat = indices.reshape(rows, -1)
    if flat.size and (flat.min() < 0 or flat.max() >= plane):
        bad = flat[(flat < 0) | (flat >= plane)][0]
        raise RuntimeError(f"Found an invalid max index: {int(bad)} (output volumes are of size "
                           + "x".join(str(s) for s in output_size) + ")")
    out = xp.zeros((rows, plane), self.dtype)
    out[xp.arange(rows)[:, None], flat] = self.reshape(rows, -1)
    return out.reshape(tuple(lead) + tuple(output_size))


def _unpool_grad(grad, indices, self_shape, nd):
    rows = math.prod(self_shape[:-nd])
    planes = view(grad, (rows, -1))
    return view(gather(planes, 1, view(indices, (rows, -1))), tuple(self_shape))


@op("max_unpool2d", tensors=2, promote=NONE, node="MaxUnpool2DBackward0")
def max_unpool2d_op(self, indices, output_size):
    return _unpool_kernel(self, indices, output_size, 2)


@max_unpool2d_op.grad("self")
def _(grad, indices, self_shape):
    return _unpool_grad(grad, indices, self_shape, 2)


@op("max_unpool3d", tensors=2, promote=NONE, node="MaxUnpool3DBackward0")
def max_unpool3d_op(self, indices, output_size):
    return _unpool_kernel(self, indices, output_size, 3)


@max_unpool3d_op.grad("self")
def _(grad, indices, self_shape):
    return _unpool_grad(grad, indices, self_shape, 3)


def _unpool_output_size(input, kernel_size, stride, padding, output_size):  # noqa: A002
    """torch's output size: the pooling's input size by default, else ``output_size`` (its
    spatial dims, each within a stride of the default)."""
    nd = len(kernel_size)
    default = [(input.shape[-nd + d] - 1) * stride[d] + kernel_size[d] - 2 * padding[d]
               for d in range(nd)]
    if output_size is None:
        return default
    if len(output_size) == nd + 2:
        output_size = output_size[2:]
    if len(output_size) != nd:
        raise ValueError(f"output_size should be a sequence containing {nd} or {nd + 2} "
                         f"elements, but it has a length of '{len(output_size)}'")
    for d in range(nd):
        low, high = default[d] - stride[d], default[d] + stride[d]
        if not low < output_size[d] < high:
            raise ValueError(f'invalid output_size "{output_size}" (dim {d} must be between '
                             f"{low} and {high})")
    return output_size


def _check_unpool(input, indices, output_size, nd):  # noqa: A002
    name = f"max_unpooling{nd}d"
    if indices.dtype != D.int64:
        raise RuntimeError(f"elements in indices should be type int64 but got: "
                           f"{indices.dtype.scalar_name}")
    if input.ndim not in (nd + 1, nd + 2):
        raise RuntimeError(f"Input to {name} should be a {nd + 1}d or {nd + 2}d Tensor, but got "
                           f"a tensor with {input.ndim} dimensions.")
    if tuple(indices.shape) != tuple(input.shape):
        raise RuntimeError("Expected shape of indices to be same as that of the input tensor "
                           f"({list(input.shape)}) but got indices tensor with shape: "
                           f"{list(indices.shape)}")
    for d in range(1, input.ndim):
        if input.shape[d] <= 0:
            raise RuntimeError(f"{name}_forward_out_cpu(): Expected input to have non-zero size "
                               f"for non-batch dimensions, but got {list(input.shape)} with "
                               f"dimension {d} being empty.")
    return tuple(int(s) for s in output_size)


def _unpool(input, indices, kernel_size, stride, padding, output_size, nd):  # noqa: A002
    ks = expand_param(kernel_size, nd, "kernel_size")
    st = ks if stride is None else expand_param(stride, nd, "stride")
    pads = expand_param(padding, nd, "padding")
    return _unpool_output_size(input, ks, st, pads, output_size)


def max_unpool1d(input, indices, kernel_size, stride=None, padding=0,  # noqa: A002
                 output_size=None):
    """The inverse of max_pool1d: each value at its index, zeros elsewhere."""
    size = _unpool(input, indices, kernel_size, stride, padding, output_size, 1)
    size = _check_unpool(unsqueeze(input, -1), unsqueeze(indices, -1), list(size) + [1], 2)
    return squeeze(max_unpool2d_op(unsqueeze(input, -1), unsqueeze(indices, -1), size), -1)


def max_unpool2d(input, indices, kernel_size, stride=None, padding=0,  # noqa: A002
                 output_size=None):
    """The inverse of max_pool2d: each value at its index in its plane, zeros elsewhere."""
    size = _unpool(input, indices, kernel_size, stride, padding, output_size, 2)
    return max_unpool2d_op(input, indices, _check_unpool(input, indices, size, 2))


def max_unpool3d(input, indices, kernel_size, stride=None, padding=0,  # noqa: A002
                 output_size=None):
    """The inverse of max_pool3d: each value at its index in its volume, zeros elsewhere."""
    size = _unpool(input, indices, kernel_size, stride, padding, output_size, 3)
    return max_unpool3d_op(input, indices, _check_unpool(input, indices, size, 3))
