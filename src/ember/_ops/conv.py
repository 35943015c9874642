"""Convolutions, their transposes, unfold (im2col) and fold (col2im).

A convolution is im2col (a strided window view copied once) followed by one batched GEMM per
group. Its adjoint, the transposed convolution, is one GEMM followed by col2im (a scatter-add
with a loop over the kernel offsets, or over the window positions when those are fewer).
The derivative formulas reuse the two: the gradient of a convolution w.r.t. its input is a
transposed convolution and vice versa, and the weight gradient is its own bilinear op whose
derivatives are again convolutions, so every order of derivative stays on BLAS.

Padding is carried internally as ``((lo, hi), ...)`` per spatial dim; ``padding="same"``
with an even kernel pads the input's far side first (then symmetrically), as torch does.
"""
from __future__ import annotations

import functools
import math

import numpy as np

from .._backend import get_xp, has_data
from .._backend.layout import empty_in_order, format_order
from .._numpy_in import warn_once
from .._tensor import Tensor, _wrap
from .registry import NONE, op
from .shape import _suggested_format, expand, reshape

__all__ = ["conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
           "conv_transpose3d", "convolution"]
# nn.functional names (ember.nn.functional collects FUNCTIONAL of every nn family).
FUNCTIONAL = ["conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
              "conv_transpose3d", "unfold", "fold"]


# -- kernels on raw arrays ----------------------------------------------------------------------
def lifted(batched_ndim):
    """Kernel decorator: an unbatched first argument runs as a batch of one (torch accepts both).

    Further array arguments with the same unbatched rank, and ``input_size`` tuples one short,
    are lifted too; every output loses its batch dim again.
    """
    def wrap(fn):
        @functools.wraps(fn)
        def run(x, *args):
            if x.ndim != batched_ndim - 1:
                return fn(x, *args)
            args = [a[None] if getattr(a, "ndim", None) == x.ndim else a for a in args]
            out = fn(x[None], *args)
            return tuple(o[0] for o in out) if isinstance(out, tuple) else out[0]
        return run
    return wrap


def out_size(size, k, s, d, lo, hi):
    """Number of window positions along one dim."""
    return (size + lo + hi - d * (k - 1) - 1) // s + 1


def pad_array(x, pads, value=0.0):
    """Pad the spatial dims (all dims after the first two) by ``((lo, hi), ...)``."""
    if not any(lo or hi for lo, hi in pads):
        return x
    xp = get_xp(x)
    return xp.pad(x, ((0, 0), (0, 0)) + tuple(tuple(p) for p in pads), constant_values=value)


def windows(x, ksize, stride, dilation, out):
    """A read-only (N, C, *out, *ksize) view of ``x``: window positions, then kernel offsets."""
    xp = get_xp(x)
    nd = len(ksize)
    st = x.strides
    shape = x.shape[:2] + tuple(out) + tuple(ksize)
    strides = (st[:2] + tuple(st[2 + i] * stride[i] for i in range(nd))
               + tuple(st[2 + i] * dilation[i] for i in range(nd)))
    return xp.lib.stride_tricks.as_strided(x, shape, strides)


def im2col(x, ksize, stride, dilation, pads, out=None):
    """(N, C * prod(ksize), prod(out)) columns, channel-major then kernel offset (unfold)."""
    nd = len(ksize)
    x = pad_array(x, pads)
    if out is None:
        out = tuple(out_size(x.shape[2 + i], ksize[i], stride[i], dilation[i], 0, 0)
                    for i in range(nd))
    n, c = x.shape[:2]
    if all(k == 1 for k in ksize) and all(s == 1 for s in stride) and tuple(out) == x.shape[2:]:
        return x.reshape(n, c, math.prod(out))  # 1x1 kernels: the input already is its columns
    w = windows(x, ksize, stride, dilation, out)
    perm = (0, 1) + tuple(range(2 + nd, 2 + 2 * nd)) + tuple(range(2, 2 + nd))
    return w.transpose(perm).reshape(n, c * math.prod(ksize), math.prod(out))


def col2im(cols, size, ksize, stride, dilation, pads, blocks):
    """Sum columns back into an (N, C, *size) image: the adjoint of ``im2col`` (fold)."""
    n, k = cols.shape[0], math.prod(ksize)
    cv = cols.reshape((n, cols.shape[1] // k) + tuple(ksize) + tuple(blocks))
    return col2im_view(cv, size, ksize, stride, dilation, pads, blocks)


def col2im_view(cv, size, ksize, stride, dilation, pads, blocks):
    """``col2im`` of columns given as an (N, C, *ksize, *blocks) array (or broadcast view)."""
    xp = get_xp(cv)
    nd = len(ksize)
    k = math.prod(ksize)
    padded = tuple(size[i] + pads[i][0] + pads[i][1] for i in range(nd))
    y = xp.zeros(cv.shape[:2] + padded, cv.dtype)
    lead = (slice(None), slice(None))
    # NOTE: loop over whichever is fewer, kernel offsets or window positions; each step is
    # one strided add over the whole batch.
    if k <= math.prod(blocks):
        for off in np.ndindex(*ksize):
            sl = tuple(slice(off[i] * dilation[i],
                             off[i] * dilation[i] + stride[i] * (blocks[i] - 1) + 1, stride[i])
                       for i in range(nd))
            y[lead + sl] += cv[lead + off]
    else:
        full = (slice(None),) * nd
        for pos in np.ndindex(*blocks):
            sl = tuple(slice(pos[i] * stride[i],
                             pos[i] * stride[i] + dilation[i] * (ksize[i] - 1) + 1, dilation[i])
                       for i in range(nd))
            y[lead + sl] += cv[lead + full + pos]
    if padded != tuple(size):
        crop = tuple(slice(pads[i][0], pads[i][0] + size[i]) for i in range(nd))
        y = xp.ascontiguousarray(y[lead + crop])
    return y


def _bias_shape(nd):
    return (-1,) + (1,) * nd


# NOTE: the convolution kernels work in a channels-first layout, (C, N * positions): the whole
# batch is then one GEMM per group (a batch of per-sample GEMMs re-reads the weight N times
# and is slow where the positions are few, as in a network's last stages), the weight
# gradient is one GEMM that sums over the batch inside BLAS (no (N, O, C*k) temporary).
def channels_first(a):
    """(C, N * prod(spatial)) copy of an (N, C, *spatial) array."""
    xp = get_xp(a)
    n, c = a.shape[:2]
    m = math.prod(a.shape[2:])
    if n == 1:
        return a.reshape(c, m)
    return xp.ascontiguousarray(a.reshape(n, c, m).transpose(1, 0, 2)).reshape(c, n * m)


def batch_first(y, n, spatial, bias=None):
    """(N, C, *spatial) of a (C, N * prod(spatial)) array (plus ``bias`` per channel),
    written in one pass."""
    xp = get_xp(y)
    c = y.shape[0]
    src = y.reshape(c, n, math.prod(spatial)).transpose(1, 0, 2)
    out = xp.empty((n, c, math.prod(spatial)), y.dtype)
    if bias is None:
        out[...] = src
    else:
        xp.add(src, bias.reshape(1, c, 1), out=out)
    return out.reshape((n, c) + tuple(spatial))


def im2col_channels_first(x, ksize, stride, dilation, pads, out):
    """(C * prod(ksize), N * prod(out)) columns: channel, kernel offset; sample, position."""
    nd = len(ksize)
    x = pad_array(x, pads)
    n, c = x.shape[:2]
    if all(k == 1 for k in ksize) and all(s == 1 for s in stride) and tuple(out) == x.shape[2:]:
        return channels_first(x)  # 1x1 kernels: the input already is its columns
    w = windows(x, ksize, stride, dilation, out)
    perm = (1,) + tuple(range(2 + nd, 2 + 2 * nd)) + (0,) + tuple(range(2, 2 + nd))
    return w.transpose(perm).reshape(c * math.prod(ksize), n * math.prod(out))


def col2im_channels_first(cols, c, n, size, ksize, stride, dilation, pads, blocks):
    """Sum (C * prod(ksize), N * prod(blocks)) columns back into an (N, C, *size) image: the
    adjoint of ``im2col_channels_first``."""
    nd = len(ksize)
    cv = cols.reshape((c,) + tuple(ksize) + (n,) + tuple(blocks))
    cv = cv.transpose((0, nd + 1) + tuple(range(1, nd + 1)) + tuple(range(nd + 2, 2 * nd + 2)))
    y = col2im_view(cv, size, ksize, stride, dilation, pads, blocks)  # (C, N, *size)
    out = get_xp(cols).empty((n, c) + tuple(size), cols.dtype)
    out[...] = y.swapaxes(0, 1)
    return out


def _conv(x, w, b, stride, pads, dilation, groups):
    xp = get_xp(x, w)
    nd = w.ndim - 2
    n, c = x.shape[:2]
    o, ks = w.shape[0], w.shape[2:]
    out = tuple(out_size(x.shape[2 + i], ks[i], stride[i], dilation[i], *pads[i])
                for i in range(nd))
    if c == 0:  # torch's empty convolution: no channels out either, and no bias
        return xp.zeros((n, 0) + out, x.dtype)
    k, p = c // groups * math.prod(ks), math.prod(out)
    w = w.reshape(groups, o // groups, k)
    if p < _PER_SAMPLE_POSITIONS:
        cols = im2col_channels_first(x, ks, stride, dilation, pads, out)
        y = xp.matmul(w, cols.reshape(groups, k, n * p))
        return batch_first(y.reshape(o, n * p), n, out, b)
    # (many positions: a GEMM per sample is as fast, and writes (N, C_out, ...) directly)
    cols = im2col(x, ks, stride, dilation, pads, out)
    y = xp.matmul(w, cols.reshape(n, groups, k, p)).reshape((n, o) + out)
    if b is not None:
        y += b.reshape(_bias_shape(nd))
    return y


# NOTE: thresholds measured with single-threaded OpenBLAS on an AMD EPYC. From this many
# positions per sample on, per-sample GEMMs run as fast as one over the batch (and need no
# transpose of the result); a weight gradient of at most this many multiply-adds is faster as
# per-sample GEMMs summed afterwards (W6's (16, 21632) @ (21632, 9): 0.25 ms as one GEMM,
# 0.08 ms per sample), larger ones as one GEMM (the sum's temporary grows with the batch).
# Per-sample GEMMs read batch-first columns (N, C * kernel, positions): the channels-first
# ones, as per-sample views, are a row stride of N * positions, slower to read (a 16x64x32x32
# forward: 26 ms, against 22 ms).
_PER_SAMPLE_POSITIONS = 256
_SMALL_WEIGHT_GRAD = 1 << 22


def transposed_size(size, ksize, stride, pads, dilation, output_padding):
    return tuple((size[i] - 1) * stride[i] - pads[i][0] - pads[i][1]
                 + dilation[i] * (ksize[i] - 1) + 1 + output_padding[i]
                 for i in range(len(ksize)))


def _full_pads(ksize, pads, dilation, output_padding):
    """The pads that make a stride-1 transposed convolution a plain one (None where one would
    be negative: the transposed convolution crops more than its kernel spans)."""
    full = tuple((dilation[i] * (k - 1) - pads[i][0],
                  dilation[i] * (k - 1) - pads[i][1] + output_padding[i])
                 for i, k in enumerate(ksize))
    return full if all(lo >= 0 and hi >= 0 for lo, hi in full) else None


def _transposed_weight(w, groups):
    """The (C_out, C_in / groups, *ksize) weight of the plain convolution equal to a stride-1
    transposed convolution with ``w``: in and out channels swapped per group, kernel flipped."""
    cin, og, ks = w.shape[0], w.shape[1], w.shape[2:]
    nd = len(ks)
    swapped = w.reshape((groups, cin // groups, og) + tuple(ks)).swapaxes(1, 2)
    flipped = swapped[(Ellipsis,) + (slice(None, None, -1),) * nd]
    return get_xp(w).ascontiguousarray(flipped).reshape((groups * og, cin // groups) + tuple(ks))


def _conv_t(x, w, b, stride, pads, dilation, output_padding, groups):
    """A transposed convolution on raw arrays."""
    nd = w.ndim - 2
    n, cin = x.shape[:2]
    og, ks = w.shape[1], w.shape[2:]
    sp = x.shape[2:]
    full = _full_pads(ks, pads, dilation, output_padding) if all(
        s == 1 for s in stride) else None
    if full is not None and cin:
        # NOTE: at stride 1 it is the plain convolution with the flipped, transposed kernel:
        # im2col and one GEMM with K = C_in x kernel, instead of a GEMM with K = C_in whose
        # result is kernel-times larger and then summed back by col2im (faster throughout
        # a ResNet's backward pass)
        return _conv(x, _transposed_weight(w, groups), b, stride, full, dilation, groups)
    size = transposed_size(sp, ks, stride, pads, dilation, output_padding)
    x_cf = channels_first(x)
    wm = w.reshape(groups, cin // groups, og * math.prod(ks)).transpose(0, 2, 1)
    cols = get_xp(x, w).matmul(wm, x_cf.reshape(groups, cin // groups, x_cf.shape[1]))
    y = col2im_channels_first(cols.reshape(groups * og * math.prod(ks), x_cf.shape[1]),
                              groups * og, n, size, ks, stride, dilation, pads, sp)
    if b is not None:
        y += b.reshape(_bias_shape(nd))
    return y


def _conv_weight(x, g, weight_size, stride, pads, dilation, groups):
    """The weight gradient of a convolution of ``x`` with upstream gradient ``g``."""
    xp = get_xp(x, g)
    o, ks = weight_size[0], tuple(weight_size[2:])
    n, k, p = g.shape[0], weight_size[1] * math.prod(ks), math.prod(g.shape[2:])
    if (o // groups) * k * n * p <= _SMALL_WEIGHT_GRAD:
        cols = im2col(x, ks, stride, dilation, pads, g.shape[2:])
        gw = xp.matmul(g.reshape(n, groups, o // groups, p),
                       cols.reshape(n, groups, k, p).transpose(0, 1, 3, 2)).sum(0)
        return gw.reshape(tuple(weight_size))
    cols = im2col_channels_first(x, ks, stride, dilation, pads, g.shape[2:])
    g_cf = channels_first(g)
    gw = xp.matmul(g_cf.reshape(groups, o // groups, n * p),
                   cols.reshape(groups, k, n * p).transpose(0, 2, 1))
    return gw.reshape(tuple(weight_size))


# -- ops --------------------------------------------------------------------------------------
@op("convolution", tensors=3, quiet=True, promote=NONE, node="ConvolutionBackward0")
def convolution(input, weight, bias, stride, padding, dilation, transposed,  # noqa: A002
                output_padding, groups):
    if transposed:
        out = _conv_t(input, weight, bias, stride, padding, dilation, output_padding, groups)
    else:
        out = _conv(input, weight, bias, stride, padding, dilation, groups)
    return _in_channels_last_if_given(out, input, weight)


def _in_channels_last_if_given(out, input, weight):  # noqa: A002
    """``out`` laid out channels-last when the input or the weight is, as torch's CPU
    convolutions write it (oneDNN's and the slow kernels' rule: either operand's suggested
    memory format; 3-d convolutions only in float32, which oneDNN runs). torch's meta kernels
    leave the result contiguous."""
    if not has_data(out):
        return out
    if out.ndim == 4:
        name = "channels_last"
    elif out.ndim == 5 and out.dtype == np.float32:
        name = "channels_last_3d"
    else:
        return out
    if not any(_suggested_format(a.shape, a.strides) == name for a in (input, weight)
               if not (a.flags.c_contiguous and 1 not in a.shape)):  # (the usual operands)
        return out
    laid = empty_in_order(out, format_order(out, name))
    laid[...] = out
    return laid


def _crop(x, size):
    """``x`` cut down to spatial ``size`` (only ever needed for odd output paddings)."""
    if tuple(x.shape[2:]) == tuple(size):
        return x
    return x[(slice(None), slice(None)) + tuple(slice(0, s) for s in size)]


def _adjoint_padding(size, out, ksize, stride, pads, dilation):
    """The output padding that makes a transposed convolution of ``out`` have ``size``."""
    full = transposed_size(out, ksize, stride, pads, dilation, (0,) * len(ksize))
    return tuple(size[i] - full[i] for i in range(len(ksize)))


# One call of torch's fused convolution_backward for the three gradients, asking only for
# those this pass wants (torch's output_mask: a first-order pass of a first layer computes no
# input gradient). Under create_graph they share its ConvolutionBackwardBackward0 node, with
# torch's edges (upstream gradient, input, weight), output_nr 0, 1 and 2.
@convolution.grad("input", "weight", "bias")
def _(grad, grad_input_mask, input, weight, stride, padding, dilation,  # noqa: A002
      transposed, output_padding, groups):
    grads = convolution_backward(grad, input, weight, stride, padding, dilation, transposed,
                                 output_padding, groups, grad_input_mask)
    return tuple(g if m else None for g, m in zip(grads, grad_input_mask))


def _input_grad(grad, weight, input_shape, stride, padding, dilation, transposed, groups):
    """A convolution's input gradient: the adjoint convolution of ``grad``."""
    sp = tuple(input_shape[2:])
    ks = tuple(weight.shape[2:])
    if transposed:
        g = convolution(grad, weight, None, stride, padding, dilation, False, None, groups)
        return _crop(g, sp)
    opad = _adjoint_padding(sp, tuple(grad.shape[2:]), ks, stride, padding, dilation)
    return convolution(grad, weight, None, stride, padding, dilation, True, opad, groups)


def _spatial_axes(x):
    return (0,) + tuple(range(2, x.ndim))


# NOTE: as torch's convolution_backward, the op takes the convolution's input and weight even
# for a gradient that only reads their shapes: a create_graph pass then records a graph
# reaching them (whose derivative in them is None, as torch's), so a second derivative is a
# graph, not a constant that does not require grad. An output the mask leaves out is empty.
@op("convolution_backward", tensors=3, promote=NONE, outputs=3, undefined_grads=True,
    node="ConvolutionBackwardBackward0")
def convolution_backward(grad_output, input, weight, stride, padding, dilation,  # noqa: A002
                         transposed, output_padding, groups, output_mask):
    xp = get_xp(grad_output)
    none = xp.empty((0,), grad_output.dtype)
    gi = gw = gb = none
    if not transposed and input.shape[1] == 0:  # the empty convolution: nothing flows back
        return tuple(xp.zeros(shape, grad_output.dtype) if m else none for m, shape in zip(
            output_mask, (input.shape, weight.shape, weight.shape[:1])))
    if output_mask[0]:
        gi = _input_grad(grad_output, weight, input.shape, stride, padding, dilation,
                         transposed, groups)
    if output_mask[1] and transposed:
        gw = _conv_weight(grad_output, input, weight.shape, stride, padding, dilation, groups)
    elif output_mask[1]:
        gw = _conv_weight(input, grad_output, weight.shape, stride, padding, dilation, groups)
    if output_mask[2]:
        gb = grad_output.sum(axis=_spatial_axes(grad_output))
    return gi, gw, gb


@convolution_backward.grad("grad_output", "input", "weight")
def _(grads, grad_output, input, weight, stride, padding, dilation,  # noqa: A002
      transposed, output_padding, groups, output_mask):
    # every gradient is linear in grad_output; <g, conv(x, w)> = <input grad(g, w), x> =
    # <weight grad(g, x), w> gives the rest
    gg_in, gg_w, gg_b = (g if g is not None and m else None
                         for g, m in zip(grads, output_mask))
    d_out = d_in = d_weight = None
    if gg_in is not None:
        d_out = convolution(gg_in, weight, None, stride, padding, dilation, transposed,
                            output_padding, groups)
        d_weight = convolution_backward(grad_output, gg_in, weight, stride, padding, dilation,
                                        transposed, output_padding, groups,
                                        (False, True, False))[1]
    if gg_w is not None:
        term = convolution(input, gg_w, None, stride, padding, dilation, transposed,
                           output_padding, groups)
        d_out = term if d_out is None else d_out + term
        d_in = _input_grad(grad_output, gg_w, input.shape, stride, padding, dilation,
                           transposed, groups)
    if gg_b is not None:
        term = expand(reshape(gg_b, _bias_shape(grad_output.ndim - 2)),
                      tuple(grad_output.shape))
        d_out = term if d_out is None else d_out + term
    return d_out, d_in, d_weight


def shaped_like(shape, like):
    """A stand-in of ``shape`` for a backward op's input that is read only for its shape (no
    memory, no graph)."""
    data = like._data if isinstance(like, Tensor) else like
    xp = get_xp(data)
    stand_in = xp.broadcast_to(xp.zeros((), data.dtype), tuple(shape))
    return _wrap(stand_in) if isinstance(like, Tensor) else stand_in


def expand_param(value, nd, name):
    """An int or a sequence of ``nd`` ints as a tuple, with torch's error otherwise."""
    if isinstance(value, (int, np.integer)):
        return (int(value),) * nd
    value = tuple(int(v) for v in value)
    if len(value) == 1:
        return value * nd
    if len(value) != nd:
        raise RuntimeError(f"expected {name} to be a single integer value or a list of {nd} "
                           f"values to match the convolution dimensions, but got "
                           f"{name}={list(value)}")
    return value


def _size_list(shape):
    return "[" + ", ".join(str(s) for s in shape) + "]"


def _check_conv(input, weight, bias, stride, pads, dilation, groups, transposed, opad):
    nd = weight.ndim - 2
    if any(s <= 0 for s in stride):
        raise RuntimeError("non-positive stride is not supported")
    if any(lo < 0 or hi < 0 for lo, hi in pads):
        raise RuntimeError("negative padding is not supported")
    if any(d <= 0 for d in dilation):
        raise RuntimeError("non-positive dilation is not supported")
    if input.ndim != weight.ndim:
        raise RuntimeError(f"Expected {weight.ndim}-dimensional input for "
                           f"{weight.ndim}-dimensional weight {_size_list(weight.shape)}, but "
                           f"got {input.ndim}-dimensional input of size "
                           f"{_size_list(input.shape)} instead")
    if weight.shape[0] % groups:
        raise RuntimeError(f"Given groups={groups}, expected weight to be divisible by "
                           f"{groups} at dimension 0, but got weight of size "
                           f"[{_size_list(weight.shape)}] instead")
    c = input.shape[1]
    if transposed:
        if c != weight.shape[0]:
            raise RuntimeError(f"Given transposed=1, weight of size {_size_list(weight.shape)}, "
                               f"expected input{_size_list(input.shape)} to have "
                               f"{weight.shape[0]} channels, but got {c} channels instead")
        out_c = weight.shape[1] * groups
    else:
        if c != weight.shape[1] * groups:
            raise RuntimeError(f"Given groups={groups}, weight of size "
                               f"{_size_list(weight.shape)}, expected input"
                               f"{_size_list(input.shape)} to have {weight.shape[1] * groups} "
                               f"channels, but got {c} channels instead")
        out_c = weight.shape[0]
    if bias is not None and (bias.ndim != 1 or bias.shape[0] != out_c):
        raise RuntimeError(f"Given weight of size {_size_list(weight.shape)}, expected bias to "
                           f"be 1-dimensional with {out_c} elements, but got bias of size "
                           f"{_size_list(bias.shape)} instead")
    if transposed:
        if any(opad[i] >= stride[i] and opad[i] >= dilation[i] for i in range(nd)):
            names = ["depth", "height", "width"][-nd:] if nd > 1 else ["width"]
            op_s = " ".join(f"output_padding_{n}: {opad[i]}" for i, n in enumerate(names))
            st_s = " ".join(f"stride_{n}: {stride[i]}" for i, n in enumerate(names))
            di_s = " ".join(f"dilation_{n}: {dilation[i]}" for i, n in enumerate(names))
            raise RuntimeError("output padding must be smaller than either stride or dilation, "
                               f"but got {op_s} {st_s} {di_s}")
        _check_empty_spatial(input.shape, nd)
        _check_transposed_output(input, weight, stride, pads, dilation, groups, opad)
        return
    padded = [input.shape[2 + i] + pads[i][0] + pads[i][1] for i in range(nd)]
    eff = [dilation[i] * (weight.shape[2 + i] - 1) + 1 for i in range(nd)]
    if any(p < k for p, k in zip(padded, eff)):
        raise RuntimeError(f"Calculated padded input size per channel: "
                           f"({' x '.join(map(str, padded))}). Kernel size: "
                           f"({' x '.join(map(str, eff))}). Kernel size can't be greater than "
                           f"actual input size")
    _check_empty_spatial(input.shape, nd)


def _check_transposed_output(input, weight, stride, pads, dilation, groups, opad):  # noqa: A002
    """A transposed convolution whose output is empty or negative along a spatial dim, as
    torch's CPU kernels take it: its slow ones (float64, float16, float32 where it does not
    take oneDNN) refuse it, with the sizes of the 2-d or 3-d problem a 1-d one is made into;
    oneDNN's (bfloat16, float32 for most shapes) give an empty result, and refuse a negative
    size; an empty batch is refused a negative size by the result's allocation."""
    nd = weight.ndim - 2
    shape = input.shape
    out = [(shape[2 + i] - 1) * stride[i] - 2 * pads[i][0]
           + dilation[i] * (weight.shape[2 + i] - 1) + opad[i] + 1 for i in range(nd)]
    if min(out) >= 1:
        return
    lifted = [1] if nd == 1 else []  # (a 1-d problem is a 2-d one of height 1)
    if not shape[0] or not shape[1]:
        if min(out) < 0:
            full = [shape[0], weight.shape[1] * groups] + lifted + out
            at = next(i for i, v in enumerate(full) if v < 0)
            raise RuntimeError(f"invalid shape dimension {full[at]} at index {at} of shape "
                               f"{_size_list(full)}")
        return
    if _takes_onednn(input, weight, stride, groups, opad):
        if min(out) < 0:
            raise RuntimeError("could not construct a memory descriptor using a format tag")
        return
    sizes, out = lifted + list(shape[2:]), lifted + out
    raise RuntimeError(f"Given input size per channel: ({' x '.join(map(str, sizes))}). "
                       f"Calculated output size per channel: ({' x '.join(map(str, out))}). "
                       "Output size is too small")


def _takes_onednn(input, weight, stride, groups, opad):  # noqa: A002
    """Whether torch's CPU convolution runs a transposed convolution with oneDNN (its
    ``use_mkldnn``, for a build with more than one thread): bfloat16 always, float32 for a
    batch, groups, large kernels or a large input; never with an output padding as large as
    the stride."""
    if any(p >= s for p, s in zip(opad, stride)):
        return False
    if input.dtype.scalar_name == "BFloat16":
        return True
    if input.dtype.scalar_name != "Float":
        return False
    spatial = list(input.shape[2:]) if input.ndim > 3 else [1] + list(input.shape[2:])
    kernel = list(weight.shape[2:]) if weight.ndim > 3 else [1] + list(weight.shape[2:])
    planes = input.shape[0] * input.shape[1] * spatial[0] * spatial[1]
    return (groups > 1 or (kernel[-1] > 3 and kernel[-2] > 3) or input.shape[0] > 1
            or planes > 20480)


def _check_empty_spatial(shape, nd):
    """torch computes an empty input only when its batch or channels are empty: one with an
    empty spatial dimension is refused (a 1-d one shown as the 2-d input torch makes of it)."""
    if 0 in shape[2:] and shape[0] and shape[1]:
        shown = (*shape[:2], 1, *shape[2:]) if nd == 1 else tuple(shape)
        raise RuntimeError("Only zero batch or zero channel inputs are supported, but got input "
                           f"shape: [{', '.join(map(str, shown))}]")


def _check_dtypes(input, weight, bias):  # noqa: A002
    # (torch checks the bias first)
    if bias is not None and bias.dtype != input.dtype:
        raise RuntimeError(f"Input type ({_c_type(input)}) and bias type ({_c_type(bias)}) "
                           "should be the same")
    if weight.dtype != input.dtype:
        raise RuntimeError(f"expected scalar type {input.dtype.scalar_name} but found "
                           f"{weight.dtype.scalar_name}")


def _c_type(t):
    return {"Float": "float", "Double": "double", "Half": "c10::Half"}.get(
        t.dtype.scalar_name, t.dtype.scalar_name)


def _same_padding(input, weight, stride, dilation, nd):
    if any(s != 1 for s in stride):
        raise RuntimeError("padding='same' is not supported for strided convolutions")
    pads = []
    for i in range(nd):
        total = dilation[i] * (weight.shape[2 + i] - 1)
        pads.append((total // 2, total - total // 2))
    if any(lo != hi for lo, hi in pads):
        warn_once("Using padding='same' with even kernel lengths and odd dilation may "
                  "require a zero-padded copy of the input be created (Triggered internally "
                  "at /__w/pytorch/pytorch/aten/src/ATen/native/Convolution.cpp:1101.)",
                  4)  # torch's TORCH_WARN_ONCE
    return tuple(pads)


def _padded_for_same(x, pads):
    """(input, symmetric pads) for ``padding='same'``: where a kernel is even, torch pads the
    input's far side by the difference first (a ConstantPadNdBackward0 node, as ember)."""
    if all(lo == hi for lo, hi in pads):
        return x, pads
    from .pad import pad
    extra = []
    for lo, hi in reversed(pads):  # (F.pad's order: the last dim first)
        extra += [0, hi - lo]
    return pad(x, extra), tuple((lo, lo) for lo, _ in pads)


def _batchify(input, nd, name):
    """(batched input, was it unbatched) with torch's dimension error."""
    if input.ndim == nd + 2:
        return input, False
    if input.ndim == nd + 1:
        from .shape import unsqueeze
        return unsqueeze(input, 0), True
    raise RuntimeError(f"Expected {nd + 1}D (unbatched) or {nd + 2}D (batched) input to {name}, "
                       f"but got input of size: {_size_list(input.shape)}")


def _unbatch(out, unbatched):
    if not unbatched:
        return out
    from .shape import squeeze
    return squeeze(out, 0)


def _convnd(nd, name):
    def conv(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):  # noqa: A002
        stride = expand_param(stride, nd, "stride")
        dilation = expand_param(dilation, nd, "dilation")
        x, unbatched = _batchify(input, nd, name)
        if weight.ndim != nd + 2:
            raise RuntimeError(f"Expected {nd + 2}-dimensional input for {weight.ndim}"
                               f"-dimensional weight {_size_list(weight.shape)}, but got "
                               f"{x.ndim}-dimensional input of size {_size_list(x.shape)} "
                               "instead")
        if isinstance(padding, str):
            if padding == "valid":
                pads = ((0, 0),) * nd
            elif padding == "same":
                x, pads = _padded_for_same(x, _same_padding(x, weight, stride, dilation, nd))
            else:
                raise RuntimeError(f"Invalid padding string: '{padding}'")
        else:
            pads = tuple((p, p) for p in expand_param(padding, nd, "padding"))
        _check_dtypes(x, weight, bias)
        _check_conv(x, weight, bias, stride, pads, dilation, groups, False, None)
        out = convolution(x, weight, bias, stride, pads, dilation, False, None, groups)
        return _unbatch(out, unbatched)
    conv.__name__ = conv.__qualname__ = name
    conv.__doc__ = f"Applies a {nd}D convolution over an input signal of several input planes."
    return conv


def _conv_transposend(nd, name):
    def conv_transpose(input, weight, bias=None, stride=1, padding=0,  # noqa: A002
                       output_padding=0, groups=1, dilation=1):
        stride = expand_param(stride, nd, "stride")
        dilation = expand_param(dilation, nd, "dilation")
        opad = expand_param(output_padding, nd, "output_padding")
        pads = tuple((p, p) for p in expand_param(padding, nd, "padding"))
        x, unbatched = _batchify(input, nd, name)
        _check_dtypes(x, weight, bias)
        _check_conv(x, weight, bias, stride, pads, dilation, groups, True, opad)
        out = convolution(x, weight, bias, stride, pads, dilation, True, opad, groups)
        return _unbatch(out, unbatched)
    conv_transpose.__name__ = conv_transpose.__qualname__ = name
    conv_transpose.__doc__ = (f"Applies a {nd}D transposed convolution operator over an input "
                              "image composed of several input planes.")
    return conv_transpose


conv1d = _convnd(1, "conv1d")
conv2d = _convnd(2, "conv2d")
conv3d = _convnd(3, "conv3d")
conv_transpose1d = _conv_transposend(1, "conv_transpose1d")
conv_transpose2d = _conv_transposend(2, "conv_transpose2d")
conv_transpose3d = _conv_transposend(3, "conv_transpose3d")


# -- unfold / fold --------------------------------------------------------------------------------
@op("im2col", promote=NONE, node="Im2ColBackward0")
@lifted(4)
def _im2col(self, kernel_size, dilation, padding, stride):
    return im2col(self, kernel_size, stride, dilation, tuple((p, p) for p in padding))


@_im2col.grad("self")
def _(grad, self_shape, kernel_size, dilation, padding, stride):
    return _col2im(grad, tuple(self_shape[-2:]), kernel_size, dilation, padding, stride)


@op("col2im", promote=NONE, node="Col2ImBackward0")
@lifted(3)
def _col2im(self, output_size, kernel_size, dilation, padding, stride):
    pads = tuple((p, p) for p in padding)
    blocks = tuple(out_size(output_size[i], kernel_size[i], stride[i], dilation[i], *pads[i])
                   for i in range(2))
    return col2im(self, output_size, kernel_size, stride, dilation, pads, blocks)


@_col2im.grad("self")
def _(grad, kernel_size, dilation, padding, stride):
    return _im2col(grad, kernel_size, dilation, padding, stride)


def _pair(v, name):
    return expand_param(v, 2, name)


def unfold(input, kernel_size, dilation=1, padding=0, stride=1):  # noqa: A002
    """Extracts sliding local blocks from a batched input tensor."""
    if input.ndim not in (3, 4):
        raise NotImplementedError(f"Input Error: Only 3D or 4D input Tensors are supported "
                                  f"(got {input.ndim}D)")
    ks, dil = _pair(kernel_size, "kernel_size"), _pair(dilation, "dilation")
    pad, st = _pair(padding, "padding"), _pair(stride, "stride")
    x = input
    blocks = [out_size(x.shape[-2 + i], ks[i], st[i], dil[i], pad[i], pad[i]) for i in range(2)]
    if any(b <= 0 for b in blocks):
        raise RuntimeError(f"Given input with spatial size ({x.shape[-2]}, {x.shape[-1]}), "
                           f"kernel_size=({ks[0]}, {ks[1]}), dilation=({dil[0]}, {dil[1]}), "
                           f"padding=({pad[0]}, {pad[1]}), calculated shape of the array of "
                           f"sliding blocks as ({blocks[0]}, {blocks[1]}), but its components "
                           "must be at least one.")
    return _im2col(x, ks, dil, pad, st)


def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):  # noqa: A002
    """Combines an array of sliding local blocks into a large containing tensor."""
    if input.ndim not in (2, 3):
        raise NotImplementedError(f"Input Error: Only unbatched (2D) or batched (3D) input "
                                  f"Tensors are supported (got {input.ndim}D)")
    osz, ks = _pair(output_size, "output_size"), _pair(kernel_size, "kernel_size")
    dil, pad, st = _pair(dilation, "dilation"), _pair(padding, "padding"), _pair(stride, "stride")
    x = input
    k = ks[0] * ks[1]
    if x.shape[-2] % k:
        raise RuntimeError(f"Expected size of input's dimension 1 to be divisible by the product "
                           f"of kernel_size, but got input.size({x.ndim - 2})={x.shape[-2]} and "
                           f"kernel_size=({ks[0]}, {ks[1]}).")
    blocks = [out_size(osz[i], ks[i], st[i], dil[i], pad[i], pad[i]) for i in range(2)]
    if blocks[0] * blocks[1] != x.shape[-1]:
        raise RuntimeError(f"Given output_size=({osz[0]}, {osz[1]}), kernel_size=({ks[0]}, "
                           f"{ks[1]}), dilation=({dil[0]}, {dil[1]}), padding=({pad[0]}, "
                           f"{pad[1]}), stride=({st[0]}, {st[1]}), expected size of input's "
                           f"dimension 2 to match the calculated number of sliding blocks "
                           f"{blocks[0]} * {blocks[1]} = {blocks[0] * blocks[1]}, but got "
                           f"input.size({x.ndim - 1})={x.shape[-1]}.")
    return _col2im(x, osz, ks, dil, pad, st)


