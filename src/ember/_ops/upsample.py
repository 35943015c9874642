"""Resampling: F.interpolate's modes as torch's upsample_* ops, each with its adjoint.

Every mode is separable: output element o of a spatial dim reads the taps ``index[o, k]`` with
weights ``weight[o, k]`` (nearest: one tap of weight 1; linear: two; cubic: four), computed as
torch's kernels compute them (UpSample.h: positions and weights in the input's opmath type,
float32 for float16/bfloat16 and float32, float64 for float64). The forward applies the last
dim's taps first, as torch's kernel nests them, each output summed in torch's order; the
adjoint adds each output's gradient into its taps in torch's order (outputs in row-major order,
one tap after the other), so that float32 results are torch's to the last bit.
"""
from __future__ import annotations

import functools
import warnings

import numpy as np

from .._backend import get_xp
from .fused import fused_multiply_add
from .registry import NONE, op

_F32, _F64 = np.dtype(np.float32), np.dtype(np.float64)
_CUBIC_A = -0.75  # torch's (and OpenCV's) bicubic convolution parameter
# The width of the vectors torch's channels-last kernel splits channels into: 8 float32 or 4
# float64 lanes, on AVX2 and on AVX-512 machines alike (channel 8 of 12 is rounded as a
# vector's, channel 8 of 40 as the scalar tail's, whatever the CPU reports)
_VECTOR_BYTES = 32


def opmath(dtype):
    """The dtype torch's CPU kernels compute in: float64 for float64, else float32."""
    return _F64 if dtype == _F64 else _F32


# -- source positions (UpSample.h's compute_scales_value, area_pixel_compute_*) -------------------
def _scale_value(n_in, n_out, scale, f):
    """Input elements per output element: 1 / the user's scale when given, else n_in / n_out."""
    if scale is not None and scale > 0:
        return f(1.0 / scale)
    return f(n_in) / f(n_out)


def _area_scale(n_in, n_out, align_corners, scale, f):
    if align_corners:
        return f(n_in - 1) / f(n_out - 1) if n_out > 1 else f(0)
    return _scale_value(n_in, n_out, scale, f)


def _source_positions(n_in, n_out, align_corners, scale, dtype, cubic, fused=True):
    """Each output element's real source position; a linear one is clamped at 0 (cubic ones
    may start left of the input: their four taps are clamped instead). The half-pixel shift
    ``ratio * (o + 0.5) - 0.5`` is rounded once, as the fused multiply-add torch's compiler
    makes of it."""
    f = dtype.type
    ratio = _area_scale(n_in, n_out, align_corners, scale, f)
    out = np.arange(n_out).astype(dtype)
    if align_corners:
        return ratio * out
    if fused:
        src = fused_multiply_add(ratio, out + f(0.5), f(-0.5), dtype)
    else:
        src = (ratio * (out + f(0.5))).astype(dtype) - f(0.5)
    return src if cubic else np.where(src < 0, f(0), src)


# -- taps of one dimension: (index (n_out, K), weight (n_out, K)) --------------------------------
@functools.lru_cache(maxsize=256)
def nearest_index(n_in, n_out, scale, exact, dtype=None):
    """The source element of each output, as torch computes it in one of two ways.

    ``dtype`` None: UpSample.h's nearest_idx, floor(o * scale) with a float32 scale, an
    unchanged or doubled size taken as o or o // 2 (its backward and its channels-last
    forward), or nearest_exact_idx, floor((o + 0.5) * scale) (a double product rounded to
    float32). Else its generic forward's helpers, in that opmath dtype: floorf(scale * o),
    or floorf(position + 0.5) of the linear modes' half-pixel position."""
    o = np.arange(n_out)
    if dtype is None:
        if not exact and n_out == n_in:
            return o
        if not exact and n_out == 2 * n_in:
            return o >> 1
        s = _scale_value(n_in, n_out, scale, np.float32)
        pos = ((o + 0.5) * np.float64(s)).astype(np.float32) if exact else o.astype(np.float32) * s
    elif exact:
        src = _source_positions(n_in, n_out, False, scale, dtype, cubic=False)
        pos = (src.astype(np.float64) + 0.5).astype(np.float32)
    else:
        pos = (_scale_value(n_in, n_out, scale, dtype.type) * o.astype(dtype)).astype(np.float32)
    return np.minimum(np.floor(pos).astype(np.int64), n_in - 1)


@functools.lru_cache(maxsize=256)
def _nearest_taps(n_in, n_out, scale, exact, dtype):
    """The adjoint's taps (nearest_idx's indices), each of weight 1."""
    return nearest_index(n_in, n_out, scale, exact)[:, None], np.ones((n_out, 1), dtype)


def _floorf(src, n_in):
    """guard_index_and_lambda's index: floorf of the position, which rounds a float64
    position to float32 first (1 - 2**-53 floors to 1, its fraction then clamped to 0)."""
    return np.minimum(np.floor(src.astype(np.float32)).astype(np.int64), n_in - 1)


@functools.lru_cache(maxsize=256)
def _linear_taps(n_in, n_out, align_corners, scale, dtype):
    """torch's two taps: the source elements either side, weighted 1 - lambda and lambda (a
    zero weight included: inf * 0 is NaN there too). A dimension that keeps its size takes
    each element with weights 1 and 0 (torch's kernel multiplies it by both)."""
    f = dtype.type
    if n_in == n_out:
        same = np.arange(n_out)
        return (np.stack([same, same], 1),
                np.stack([np.ones(n_out, dtype), np.zeros(n_out, dtype)], 1))
    src = _source_positions(n_in, n_out, align_corners, scale, dtype, cubic=False)
    i0 = _floorf(src, n_in)
    lam = np.clip(src - i0.astype(dtype), f(0), f(1))
    i1 = i0 + (i0 < n_in - 1)
    return np.stack([i0, i1], 1), np.stack([f(1) - lam, lam], 1).astype(dtype)


def _cubic_coefficients(t, f, fused):
    """get_cubic_upsample_coefficients: the weights of the taps at -1, 0, 1, 2 from the
    fraction t. ``fused``: as torch's forward kernel rounds them (its compiler fuses the
    first multiply-adds of each polynomial, not the last; found by comparing weights bit for
    bit), else each operation rounded (its backward's file)."""
    a = f(_CUBIC_A)

    def near(x):  # cubic_convolution1: ((A + 2) x - (A + 3)) x x + 1
        inner = (fused_multiply_add(a + f(2), x, -(a + f(3))) if fused
                 else (a + f(2)) * x - (a + f(3)))
        return inner * x * x + f(1)

    def far(x):  # cubic_convolution2: ((A x - 5 A) x + 8 A) x - 4 A
        if fused:
            inner = fused_multiply_add(fused_multiply_add(a, x, -(f(5) * a)), x, f(8) * a)
        else:
            inner = (a * x - f(5) * a) * x + f(8) * a
        return inner * x - f(4) * a

    rest = (f(1) - t).astype(t.dtype)
    return np.stack([far(t + f(1)), near(t), near(rest), far(rest + f(1))], 1).astype(t.dtype)


@functools.lru_cache(maxsize=256)
def _cubic_taps(n_in, n_out, align_corners, scale, dtype, fused):
    """torch's four taps around floor(position), clamped into the input, with the cubic
    convolution weights of the fraction (clamped to [0, 1])."""
    f = dtype.type
    src = _source_positions(n_in, n_out, align_corners, scale, dtype, cubic=True, fused=fused)
    i0 = _floorf(src, n_in)
    t = np.clip(src - i0.astype(dtype), f(0), f(1)).astype(dtype)
    index = np.clip(i0[:, None] - 1 + np.arange(4), 0, n_in - 1)
    return index, _cubic_coefficients(t, f, fused)


def _aa_filter(x, cubic, f):
    """torch's antialiasing filters (Pillow's): the triangle, or Keys' cubic with a = -0.5,
    in the weights' dtype with every multiply-add fused (found comparing weights bit for
    bit; get_cubic_upsample_coefficients' last steps are not)."""
    x = abs(f(x))
    if not cubic:
        return f(1) - x if x < 1 else f(0)
    a = f(-0.5)
    if x < 1:
        inner = fused_multiply_add(a + f(2), x, -(a + f(3))) * x
        return f(fused_multiply_add(inner, x, f(1)))
    if x < 2:
        inner = fused_multiply_add(fused_multiply_add(a, x, -(f(5) * a)), x, f(8) * a)
        return f(fused_multiply_add(inner, x, -(f(4) * a)))
    return f(0)


@functools.lru_cache(maxsize=256)
def _aa_taps(n_in, n_out, align_corners, scale, dtype, cubic):
    """_compute_indices_min_size_weights_aa: each output reads the input elements within
    its filter's support (widened by the scale when downsampling), weights normalised to
    sum to 1; the arithmetic in the dtype (float32 or float64) and in double where torch's
    C++ mixes in double constants. Returns (index, weight, valid) padded to the widest."""
    f = dtype.type
    ratio = _area_scale(n_in, n_out, align_corners, scale, f)
    size = 4 if cubic else 2
    support = f(size * 0.5 * float(ratio)) if ratio >= 1 else f(size * 0.5)
    width = int(np.ceil(support)) * 2 + 1
    invscale = f(1.0 / float(ratio)) if ratio >= 1 else f(1)
    index = np.zeros((n_out, width), np.int64)
    weight = np.zeros((n_out, width), dtype)
    valid = np.zeros((n_out, width), bool)
    for i in range(n_out):
        center = f(float(ratio) * (i + 0.5))
        low = max(int(float(center - support) + 0.5), 0)
        count = min(max(min(int(float(center + support) + 0.5), n_in) - low, 0), width)
        ws = [_aa_filter((float(f(j + low) - center) + 0.5) * float(invscale), cubic, f)
              for j in range(count)]
        total = f(0)
        for w in ws:
            total = f(total + w)
        if total != 0:
            ws = [f(w / total) for w in ws]
        index[i, :count] = low + np.arange(count)
        weight[i, :count] = ws
        valid[i, :count] = True
    return np.minimum(index, n_in - 1), weight, valid


def _taps(kind, n_in, n_out, params, scale, dtype, backward=False):
    if kind in ("bilinear_aa", "bicubic_aa"):
        return _aa_taps(n_in, n_out, params, scale, dtype, kind == "bicubic_aa")
    if kind in ("nearest", "nearest_exact"):
        return _nearest_taps(n_in, n_out, scale, kind == "nearest_exact", dtype)
    if kind == "linear":
        return _linear_taps(n_in, n_out, params, scale, dtype)
    return _cubic_taps(n_in, n_out, params, scale, dtype, not backward)


# -- forward -------------------------------------------------------------------------------------
def _resample(x, kind, out_sizes, params, scales):
    xp = get_xp(x)
    nd = len(out_sizes)
    in_sizes = x.shape[-nd:]
    channels_last = _channels_last_kernel(x, out_sizes)
    layout = _is_channels_last(x)
    if kind in ("nearest", "nearest_exact"):  # a gather: copies, exact in any dtype
        rule = None if channels_last else opmath(x.dtype)
        for i in range(nd):
            index = nearest_index(in_sizes[i], out_sizes[i], scales[i], kind == "nearest_exact",
                                  rule)
            x = xp.take(x, xp.asarray(index), axis=x.ndim - nd + i)
        return _laid_out_as(x, layout)
    dtype = x.dtype
    compute = opmath(dtype)  # (float16: computed in float32, rounded once at the end)
    x = x.astype(compute, copy=False)
    taps = [_taps(kind, in_sizes[i], out_sizes[i], params, scales[i], compute)
            for i in range(nd)]
    if dtype != compute and not (kind == "linear" and channels_last):
        # (torch's generic kernel stores the weights in the input's dtype: float16 and
        # bfloat16 weights are rounded, the sums still run in float32)
        taps = [(t[0], t[1].astype(dtype).astype(compute)) + tuple(t[2:]) for t in taps]
    with np.errstate(invalid="ignore", over="ignore"):  # (inf * 0 is NaN, silently, as torch)
        if kind.endswith("_aa"):
            # (torch resamples the last dim, then the others, skipping any that keeps its size)
            for i in reversed(range(nd)):
                if in_sizes[i] != out_sizes[i]:
                    index, weight, valid = taps[i]
                    if i < nd - 1 and out_sizes[-1] == 1:
                        # torch's vertical pass reads its first row's taps for every row
                        # when the rows are one element wide (its zero-stride loop then runs
                        # along the column), a result of torch's we keep
                        index, weight, valid = (np.repeat(t[:1], len(t), 0)
                                                for t in (index, weight, valid))
                    x = _sum_window(xp, x, x.ndim - nd + i, index, weight, valid)
        elif kind == "linear" and channels_last:
            x = _linear_channels_last(xp, x, taps, dtype)
        else:
            for i in reversed(range(nd)):  # (the last dimension first, as torch nests them)
                x = _sum_taps(xp, x, x.ndim - nd + i, *taps[i])
    return _laid_out_as(x.astype(dtype, copy=False), layout)


def _channels_last_kernel(x, out_sizes):
    """Whether torch's CPU forward takes its channels-last kernel (which rounds linear
    interpolation its own way, and takes nearest_idx's indices): for a channels-last input of
    more than 3 channels, and for any 2-d output of height + width <= 128."""
    nd = len(out_sizes)
    if nd == 1:
        return False
    return (x.shape[1] > 3 and _is_channels_last(x)) or (nd == 2 and sum(out_sizes) <= 128)


def _is_channels_last(x):
    """torch's suggest_memory_format: a 4-d or 5-d input laid out channels-last."""
    return (x.ndim in (4, 5) and not x.flags.c_contiguous
            and np.moveaxis(x, 1, -1).flags.c_contiguous)


def _laid_out_as(out, channels_last):
    """The result laid out as torch's: as its input (channels-last or contiguous)."""
    if channels_last and out.shape[1] > 1:
        xp = get_xp(out)
        return xp.moveaxis(xp.ascontiguousarray(xp.moveaxis(out, 1, -1)), -1, 1)
    return get_xp(out).ascontiguousarray(out)


def _sum_taps(xp, x, axis, index, weight):
    """One dimension of torch's generic kernel: sum over k of x[index[:, k]] * weight[:, k],
    rounded as its compiler fuses t0 * w0 + t1 * w1 + ...: the first product into the
    addition of the second (rounded), each further product into the running sum."""
    x = xp.moveaxis(x, axis, -1)
    if x.shape[-1] == 0:  # (nothing to read)
        return xp.moveaxis(xp.zeros(x.shape[:-1] + (index.shape[0],), x.dtype), -1, axis)
    weight = xp.asarray(weight)
    taps = [xp.take(x, xp.asarray(index[:, k]), axis=-1) for k in range(index.shape[1])]
    return xp.moveaxis(_fused_chain(taps, [weight[:, k] for k in range(len(taps))]), -1, axis)


def _sum_window(xp, x, axis, index, weight, valid):
    """One dimension of torch's antialiasing kernel: each output's taps (as many as its
    window holds) summed one after the other, t0 * w0 rounded, each further product fused
    into the running sum."""
    x = xp.moveaxis(x, axis, -1)
    count = valid.sum(1)
    out = None
    for k in range(index.shape[1]):
        term = xp.take(x, xp.asarray(index[:, k]), axis=-1)
        w = xp.asarray(weight[:, k])
        out = (term * w if k == 0
               else xp.where(xp.asarray(count > k), fused_multiply_add(term, w, out), out))
    return xp.moveaxis(out, -1, axis)


def _fused_chain(values, weights):
    """v0 * w0 + v1 * w1 + ... as torch's scalar loops round it (see _sum_taps)."""
    out = fused_multiply_add(values[0], weights[0], values[1] * weights[1])
    for v, w in zip(values[2:], weights[2:]):
        out = fused_multiply_add(v, w, out)
    return out


def _fused_chain_reversed(values, weights):
    """The same sum as torch's Vectorized interpolate() nests it: v0 * w0 + (v1 * w1 + ...),
    the innermost pair's last product fused into the addition of the one before."""
    out = fused_multiply_add(values[-1], weights[-1], values[-2] * weights[-2])
    for v, w in zip(values[-3::-1], weights[-3::-1]):
        out = fused_multiply_add(v, w, out)
    return out


def _linear_channels_last(xp, x, taps, dtype):
    """torch's channels-last (bi/tri)linear kernel: each output the sum over the 2 ** nd
    corners (the first dim's taps slowest) of corner * (d * h * w weight product, rounded),
    its channels in vectors of torch's width (one nesting) and a scalar tail (another)."""
    nd = len(taps)
    values, weights = [], []
    for corner in np.ndindex(*(2,) * nd):
        grid = np.ix_(*(taps[d][0][:, corner[d]] for d in range(nd)))
        values.append(x[(Ellipsis,) + tuple(xp.asarray(g) for g in grid)])
        product = None
        for d in range(nd):
            w = taps[d][1][:, corner[d]].reshape((-1,) + (1,) * (nd - 1 - d))
            product = w if product is None else product * w
        weights.append(xp.asarray(product))
    out = _fused_chain(values, weights)
    width = _VECTOR_BYTES // np.dtype(dtype if dtype in (_F32, _F64) else _F32).itemsize
    vectors = x.shape[1] - x.shape[1] % width if dtype in (_F32, _F64) else 0
    if vectors:
        head = (slice(None), slice(0, vectors))
        out[head] = _fused_chain_reversed([v[head] for v in values], weights)
    return out


# -- adjoint: each output's gradient into its taps, in torch's order ------------------------------
@functools.lru_cache(maxsize=128)
def _contributions(kind, in_sizes, out_sizes, params, scales, dtype):
    """The rounds of torch's backward additions (see ordered_rounds): linear and nearest
    take the taps with the first dim's slowest; cubic's loop takes the last dim's (x) taps
    outermost."""
    taps = [_taps(kind, i, o, params, s, dtype, backward=True)
            for i, o, s in zip(in_sizes, out_sizes, scales)]
    return ordered_rounds(taps, in_sizes, out_sizes, x_outermost=kind == "cubic")


def ordered_rounds(taps, in_sizes, out_sizes, x_outermost=False):
    """torch's backward kernels add, for each output element in row-major order, its
    gradient (times its taps' weights) into its taps' input elements, one tap after the
    other. ``taps``: per dim (index (n_out, K), weight (n_out, K)[, valid (n_out, K)]).
    Returned grouped into rounds: in round r each input element receives its r-th
    addition, so one vectorised step per round keeps torch's order of additions for every
    element: [(input element, output element, weights per dim)] per round."""
    nd = len(out_sizes)
    widths = [t[0].shape[1] for t in taps]
    outs = np.indices(out_sizes).reshape(nd, -1)
    order = list(reversed(range(nd))) if x_outermost else list(range(nd))
    ks = np.empty((nd, int(np.prod(widths))), np.int64)
    ks[order] = np.indices([widths[d] for d in order]).reshape(nd, -1)
    pick = [(outs[d][:, None], ks[d][None, :]) for d in range(nd)]
    targets = [taps[d][0][pick[d]].ravel() for d in range(nd)]
    weights = [taps[d][1][pick[d]].ravel() for d in range(nd)]
    flat = np.ravel_multi_index(targets, in_sizes) if nd else np.zeros(0, np.int64)
    source = np.repeat(np.arange(outs.shape[1]), ks.shape[1])
    valid = [t[2][pick[d]].ravel() for d, t in enumerate(taps) if len(t) > 2]
    if valid:  # (an adaptive window shorter than the widest: its padding taps dropped)
        keep = np.logical_and.reduce(valid)
        flat, source, weights = flat[keep], source[keep], [w[keep] for w in weights]
    return _rounds(flat, source, weights)


def _rounds(flat, source, weights):
    """Split additions (in order) into rounds in which each target appears once."""
    if not len(flat):
        return []
    by_target = np.argsort(flat, kind="stable")
    sorted_flat = flat[by_target]
    starts = np.r_[0, np.flatnonzero(np.diff(sorted_flat)) + 1]
    group_start = np.repeat(starts, np.diff(np.r_[starts, len(flat)]))
    rank = np.empty(len(flat), np.int64)
    rank[by_target] = np.arange(len(flat)) - group_start
    rounds = []
    for r in range(int(rank.max()) + 1):
        pick = np.flatnonzero(rank == r)
        rounds.append((flat[pick], source[pick], [w[pick] for w in weights]))
    return rounds


def _resample_adjoint(grad, kind, in_sizes, params, scales):
    xp = get_xp(grad)
    nd = len(in_sizes)
    out_sizes = grad.shape[-nd:]
    lead = grad.shape[:-nd]
    dtype = grad.dtype
    compute = opmath(dtype) if dtype.kind == "f" else dtype
    if kind == "cubic" and tuple(in_sizes) == tuple(out_sizes):  # (torch's kernel copies)
        return xp.array(grad, copy=True)
    rounds = _contributions(kind, tuple(in_sizes), tuple(out_sizes), params, scales,
                            opmath(dtype))
    g = grad.astype(compute, copy=False)
    return add_in_order(g, rounds, in_sizes, functools.partial(_accumulate, xp, kind),
                        compute).astype(dtype, copy=False)


def add_in_order(grad, rounds, in_sizes, accumulate, dtype):
    """The adjoint's result: zeros of the input's spatial sizes, each output's gradient
    added into its taps in torch's order (``rounds``: see ordered_rounds), by
    ``accumulate(acc, values, weights, dtype)``."""
    xp = get_xp(grad)
    nd = len(in_sizes)
    lead = grad.shape[:-nd]
    g = grad.reshape(lead + (int(np.prod(grad.shape[-nd:])),))
    acc = xp.zeros(lead + (int(np.prod(in_sizes)),), dtype)
    with np.errstate(invalid="ignore", over="ignore"):
        for target, source, weights in rounds:
            target = xp.asarray(target)
            values = xp.take(g, xp.asarray(source), axis=-1)
            acc[..., target] = accumulate(acc[..., target], values, weights, dtype)
    return acc.reshape(lead + tuple(in_sizes))


def _accumulate(xp, kind, acc, values, weights, dtype):
    """acc + an output's gradient times its weights, as torch's backward rounds it: nearest
    adds; linear's product of the weights is fused into the addition (d * h * w * g + acc);
    cubic's (g * wy) * wx is rounded before the addition (its file is compiled without
    fused multiply-adds)."""
    if kind in ("nearest", "nearest_exact"):
        return acc + values
    if kind in ("linear", "bilinear_aa", "bicubic_aa"):
        product = weights[0]
        for w in weights[1:]:
            product = product * w
        return fused_multiply_add(xp.asarray(product.astype(dtype)), values, acc, dtype)
    for w in weights:  # (the y weight, then the x weight)
        values = values * xp.asarray(w.astype(dtype))
    return acc + values


# -- the ops ---------------------------------------------------------------------------------------
def _upsample_op(name, node, kind, nd):
    """A forward op and its adjoint, each the other's derivative. ``params``: align_corners
    (linear and cubic; None for nearest); ``scales``: the user's scale per dim or None."""
    @op(name, promote=NONE, node=node)
    def forward(self, output_size, params, scales):
        return _resample(self, kind, tuple(output_size), params, tuple(scales))

    @op(name + "_backward", promote=NONE, node=node.replace("Backward0", "BackwardBackward0"))
    def adjoint(grad_output, input_size, params, scales):
        return _resample_adjoint(grad_output, kind, tuple(input_size[-nd:]), params,
                                 tuple(scales))

    @forward.grad("self")
    def _(grad, self_shape, params, scales):
        return adjoint(grad, tuple(self_shape), params, scales)

    @adjoint.grad("grad_output")
    def _(grad, grad_output_shape, params, scales):
        return forward(grad, tuple(grad_output_shape[-nd:]), params, scales)
    return forward, adjoint


upsample_nearest1d, upsample_nearest1d_backward = _upsample_op(
    "upsample_nearest1d", "UpsampleNearest1DBackward0", "nearest", 1)
upsample_nearest2d, upsample_nearest2d_backward = _upsample_op(
    "upsample_nearest2d", "UpsampleNearest2DBackward0", "nearest", 2)
upsample_nearest3d, upsample_nearest3d_backward = _upsample_op(
    "upsample_nearest3d", "UpsampleNearest3DBackward0", "nearest", 3)
upsample_nearest_exact1d, upsample_nearest_exact1d_backward = _upsample_op(
    "_upsample_nearest_exact1d", "UpsampleNearestExact1DBackward0", "nearest_exact", 1)
upsample_nearest_exact2d, upsample_nearest_exact2d_backward = _upsample_op(
    "_upsample_nearest_exact2d", "UpsampleNearestExact2DBackward0", "nearest_exact", 2)
upsample_nearest_exact3d, upsample_nearest_exact3d_backward = _upsample_op(
    "_upsample_nearest_exact3d", "UpsampleNearestExact3DBackward0", "nearest_exact", 3)
upsample_linear1d, upsample_linear1d_backward = _upsample_op(
    "upsample_linear1d", "UpsampleLinear1DBackward0", "linear", 1)
upsample_bilinear2d, upsample_bilinear2d_backward = _upsample_op(
    "upsample_bilinear2d", "UpsampleBilinear2DBackward0", "linear", 2)
upsample_trilinear3d, upsample_trilinear3d_backward = _upsample_op(
    "upsample_trilinear3d", "UpsampleTrilinear3DBackward0", "linear", 3)
upsample_bicubic2d, upsample_bicubic2d_backward = _upsample_op(
    "upsample_bicubic2d", "UpsampleBicubic2DBackward0", "cubic", 2)
upsample_bilinear2d_aa, upsample_bilinear2d_aa_backward = _upsample_op(
    "_upsample_bilinear2d_aa", "UpsampleBilinear2DAaBackward0", "bilinear_aa", 2)
upsample_bicubic2d_aa, upsample_bicubic2d_aa_backward = _upsample_op(
    "_upsample_bicubic2d_aa", "UpsampleBicubic2DAaBackward0", "bicubic_aa", 2)


_OPS = {("nearest", 1): upsample_nearest1d, ("nearest", 2): upsample_nearest2d,
        ("nearest", 3): upsample_nearest3d, ("nearest-exact", 1): upsample_nearest_exact1d,
        ("nearest-exact", 2): upsample_nearest_exact2d,
        ("nearest-exact", 3): upsample_nearest_exact3d, ("linear", 1): upsample_linear1d,
        ("bilinear", 2): upsample_bilinear2d, ("trilinear", 3): upsample_trilinear3d,
        ("bicubic", 2): upsample_bicubic2d}
_NEEDS = {"linear": 3, "bilinear": 4, "trilinear": 5}
_MODES = "nearest | linear | bilinear | bicubic | trilinear | lanczos | area | nearest-exact"


# -- F.interpolate --------------------------------------------------------------------------------
def interpolate(input, size=None, scale_factor=None, mode="nearest",  # noqa: A002
                align_corners=None, recompute_scale_factor=None, antialias=False):
    """Down/up samples the input to the given size or by the given scale_factor."""
    if mode in ("nearest", "area", "nearest-exact"):
        if align_corners is not None:
            raise ValueError("align_corners option can only be set with the interpolating "
                             "modes: linear | bilinear | bicubic | trilinear")
    elif align_corners is None:
        align_corners = False
    nd = input.ndim - 2
    out, scales = _output_size(input, nd, size, scale_factor, recompute_scale_factor,
                               mode == "area")
    if antialias and not (mode in ("bilinear", "bicubic", "lanczos") and input.ndim == 4):
        raise ValueError("Anti-alias option is restricted to bilinear, bicubic, and lanczos "
                         "modes and requires a 4-D tensor as input")
    if mode == "lanczos" and input.ndim == 4:
        if align_corners:
            raise ValueError("Lanczos mode does not support align_corners=True")
        if not antialias:
            raise ValueError("Lanczos mode requires antialias=True")
        raise NotImplementedError("interpolate(mode='lanczos') is not supported by ember")
    if antialias:
        _check_sizes(input, out)
        aa_op = upsample_bilinear2d_aa if mode == "bilinear" else upsample_bicubic2d_aa
        return aa_op(input, out, align_corners, scales)
    if mode == "area" and input.ndim in (3, 4, 5):
        from . import pooling
        area = {1: pooling.adaptive_avg_pool1d, 2: pooling.adaptive_avg_pool2d,
                3: pooling.adaptive_avg_pool3d}[nd]
        return area(input, out)
    upsample_op = _OPS.get((mode, nd))
    if upsample_op is not None:
        _check_sizes(input, out)
        return upsample_op(input, out, None if mode.startswith("nearest") else align_corners,
                           scales)
    if mode in _NEEDS and input.ndim in (3, 4, 5):
        raise NotImplementedError(f"Got {input.ndim}D input, but {mode} mode needs "
                                  f"{_NEEDS[mode]}D input")
    raise NotImplementedError(f"Input Error: Only 3D, 4D and 5D input Tensors supported (got "
                              f"{input.ndim}D) for the modes: {_MODES} (got {mode})")


def _output_size(input, nd, size, scale_factor, recompute_scale_factor, area):  # noqa: A002
    """torch's output size and the scales its kernel is given (None: from the sizes)."""
    spatial = list(input.shape[2:])
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    if size is not None:
        if isinstance(size, (list, tuple)):
            if len(size) != nd:
                raise ValueError(
                    "Input and output must have the same number of spatial dimensions, but got "
                    f"input with spatial dimensions of {spatial} and output size of {size}. "
                    "Please provide input tensor in (N, C, d1, d2, ...,dK) format and output "
                    "size in (o1, o2, ...,oK) format.")
            if not all(_is_integer(s) for s in size):
                raise TypeError("expected size to be one of int or Tuple[int] or Tuple[int, "
                                "int] or Tuple[int, int, int], but got size with types "
                                f"{[type(s) for s in size]}")
            out = tuple(int(s) for s in size)
        else:
            out = (int(size),) * nd
        if recompute_scale_factor:
            raise ValueError("recompute_scale_factor is not meaningful with an explicit size.")
        return out, (None,) * nd
    if scale_factor is None:
        raise ValueError("either size or scale_factor should be defined")
    if isinstance(scale_factor, (list, tuple)):
        if len(scale_factor) != nd:
            raise ValueError(
                "Input and scale_factor must have the same number of spatial dimensions, but "
                f"got input with spatial dimensions of {spatial} and scale_factor of shape "
                f"{scale_factor}. Please provide input tensor in (N, C, d1, d2, ...,dK) format "
                "and scale_factor in (s1, s2, ...,sK) format.")
        factors = tuple(float(s) for s in scale_factor)
    else:
        factors = (float(scale_factor),) * nd
    # (C++'s static_cast<int64_t> and Python's int() both truncate toward zero)
    out = tuple(int(n * f) for n, f in zip(spatial, factors))
    recompute = recompute_scale_factor or area  # (area always takes its size)
    return out, (None,) * nd if recompute else factors


def _is_integer(value):
    if isinstance(value, (bool, int, np.integer)):
        return True
    return hasattr(value, "ndim") and value.ndim == 0 and np.dtype(value.dtype).kind in "iu"


def _check_sizes(input, out):  # noqa: A002
    """upsample_*d_common_check: every input and output size positive (the batch may be
    empty, nothing else)."""
    nd = len(out)
    names = "DHW"[3 - nd:]
    spatial = input.shape[2:]
    if any(s <= 0 for s in out) or any(s <= 0 for s in spatial):
        given = ", ".join(f"{n}: {s}" for n, s in zip(names, spatial))
        wanted = ", ".join(f"{n}: {s}" for n, s in zip(names, out))
        joint = " and output" if nd == 1 else " output"
        raise RuntimeError("Input and output sizes should be greater than 0, but got input "
                           f"({given}){joint} ({wanted})")
    if input.numel() == 0 and any(s == 0 for s in input.shape[1:]):
        raise RuntimeError(f"Non-empty {input.ndim}D data tensor expected but got a tensor "
                           f"with sizes {list(input.shape)}")


def upsample(input, size=None, scale_factor=None, mode="nearest", align_corners=None):  # noqa: A002
    """Upsamples the input (deprecated alias of interpolate)."""
    warnings.warn("`nn.functional.upsample` is deprecated. Use `nn.functional.interpolate` "
                  "instead.", stacklevel=2)
    return interpolate(input, size, scale_factor, mode, align_corners)


FUNCTIONAL = ["interpolate", "upsample"]
