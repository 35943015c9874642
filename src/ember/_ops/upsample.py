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

import numpy as np

from .._backend import get_xp
from .fused import fused_multiply_add
from .registry import NONE, op

_F32, _F64 = np.dtype(np.float32), np.dtype(np.float64)
_CUBIC_A = -0.75  # torch's (and OpenCV's) bicubic convolution parameter


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


def _source_positions(n_in, n_out, align_corners, scale, dtype, cubic):
    """Each output element's real source position; a linear one is clamped at 0 (cubic ones
    may start left of the input: their four taps are clamped instead). The half-pixel shift
    ``ratio * (o + 0.5) - 0.5`` is rounded once, as the fused multiply-add torch's compiler
    makes of it."""
    f = dtype.type
    ratio = _area_scale(n_in, n_out, align_corners, scale, f)
    out = np.arange(n_out).astype(dtype)
    if align_corners:
        return ratio * out
    src = fused_multiply_add(ratio, out + f(0.5), f(-0.5), dtype)
    return src if cubic else np.where(src < 0, f(0), src)


# -- taps of one dimension: (index (n_out, K), weight (n_out, K)) --------------------------------
@functools.lru_cache(maxsize=256)
def nearest_index(n_in, n_out, scale, exact, backward=False):
    """torch's source element of each output: floor(o * scale) (``exact``: floor((o + 0.5) *
    scale), a double product rounded to float32). Its nearest backward (nearest_idx) takes
    an unchanged or doubled size as it is, o or o // 2, which its forward does not."""
    if backward and not exact and n_out == n_in:
        return np.arange(n_out)
    if backward and not exact and n_out == 2 * n_in:
        return np.arange(n_out) >> 1
    s = _scale_value(n_in, n_out, scale, np.float32)
    if exact:
        pos = ((np.arange(n_out) + 0.5) * np.float64(s)).astype(np.float32)
    else:
        pos = np.arange(n_out, dtype=np.float32) * s
    return np.minimum(np.floor(pos).astype(np.int64), n_in - 1)


@functools.lru_cache(maxsize=256)
def _nearest_taps(n_in, n_out, scale, exact, dtype, backward):
    return (nearest_index(n_in, n_out, scale, exact, backward)[:, None],
            np.ones((n_out, 1), dtype))


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
    i0 = np.minimum(np.floor(src).astype(np.int64), n_in - 1)
    lam = np.clip(src - i0.astype(dtype), f(0), f(1))
    i1 = i0 + (i0 < n_in - 1)
    return np.stack([i0, i1], 1), np.stack([f(1) - lam, lam], 1).astype(dtype)


def _cubic_coefficients(t, f, fused):
    """get_cubic_upsample_coefficients: the weights of the taps at -1, 0, 1, 2 from the
    fraction t. ``fused``: as torch's vectorised kernel file is compiled (multiply-adds
    contracted); its backward's file computes them with separate roundings."""
    a = f(_CUBIC_A)

    def near(x):  # cubic_convolution1: ((A + 2) x - (A + 3)) x x + 1
        if fused:
            return fused_multiply_add(fused_multiply_add(a + f(2), x, -(a + f(3))) * x, x, f(1))
        return ((a + f(2)) * x - (a + f(3))) * x * x + f(1)

    def far(x):  # cubic_convolution2: ((A x - 5 A) x + 8 A) x - 4 A
        if fused:
            inner = fused_multiply_add(fused_multiply_add(a, x, -(f(5) * a)), x, f(8) * a)
            return fused_multiply_add(inner, x, -(f(4) * a))
        return ((a * x - f(5) * a) * x + f(8) * a) * x - f(4) * a

    rest = (f(1) - t).astype(t.dtype)
    return np.stack([far(t + f(1)), near(t), near(rest), far(rest + f(1))], 1).astype(t.dtype)


@functools.lru_cache(maxsize=256)
def _cubic_taps(n_in, n_out, align_corners, scale, dtype, fused):
    """torch's four taps around floor(position), clamped into the input, with the cubic
    convolution weights of the fraction (clamped to [0, 1]; the floor taken in float32, as
    torch's floorf)."""
    f = dtype.type
    src = _source_positions(n_in, n_out, align_corners, scale, dtype, cubic=True)
    i0 = np.minimum(np.floor(src.astype(np.float32)).astype(np.int64), n_in - 1)
    t = np.clip(src - i0.astype(dtype), f(0), f(1)).astype(dtype)
    index = np.clip(i0[:, None] - 1 + np.arange(4), 0, n_in - 1)
    return index, _cubic_coefficients(t, f, fused)


def _taps(kind, n_in, n_out, params, scale, dtype, backward=False):
    if kind in ("nearest", "nearest_exact"):
        return _nearest_taps(n_in, n_out, scale, kind == "nearest_exact", dtype, backward)
    if kind == "linear":
        return _linear_taps(n_in, n_out, params, scale, dtype)
    return _cubic_taps(n_in, n_out, params, scale, dtype, not backward)


# -- forward: one dimension after the other, the last first ---------------------------------------
def _resample(x, kind, out_sizes, params, scales):
    xp = get_xp(x)
    nd = len(out_sizes)
    in_sizes = x.shape[-nd:]
    if kind in ("nearest", "nearest_exact"):  # a gather: copies, exact in any dtype
        for i in range(nd):
            index = nearest_index(in_sizes[i], out_sizes[i], scales[i], kind == "nearest_exact")
            x = xp.take(x, xp.asarray(index), axis=x.ndim - nd + i)
        return x
    dtype = x.dtype
    compute = opmath(dtype)  # (float16: computed in float32, rounded once at the end)
    x = x.astype(compute, copy=False)
    with np.errstate(invalid="ignore", over="ignore"):  # (inf * 0 is NaN, silently, as torch)
        for i in reversed(range(nd)):
            index, weight = _taps(kind, in_sizes[i], out_sizes[i], params, scales[i], compute)
            x = _sum_taps(xp, x, x.ndim - nd + i, index, xp.asarray(weight), kind,
                          innermost=i == nd - 1)
    return xp.ascontiguousarray(x).astype(dtype, copy=False)


def _sum_taps(xp, x, axis, index, weight, kind, innermost):
    """One dimension: sum over k of x[index[:, k]] * weight[:, k], in torch's order and
    rounding. Linear: the last dimension's pair as one fused x0 * w0 + (x1 * w1), an outer
    one's as (t0 * w0) + t1 * w1 fused; cubic: t0 * w0, then each further tap fused in."""
    x = xp.moveaxis(x, axis, -1)
    if x.shape[-1] == 0:  # (nothing to read)
        return xp.moveaxis(xp.zeros(x.shape[:-1] + (index.shape[0],), x.dtype), -1, axis)
    taps = [xp.take(x, xp.asarray(index[:, k]), axis=-1) for k in range(index.shape[1])]
    if kind == "linear":
        out = (fused_multiply_add(taps[0], weight[:, 0], taps[1] * weight[:, 1]) if innermost
               else fused_multiply_add(taps[1], weight[:, 1], taps[0] * weight[:, 0]))
    else:
        out = taps[0] * weight[:, 0]
        for k in range(1, len(taps)):
            out = fused_multiply_add(taps[k], weight[:, k], out)
    return xp.moveaxis(out, -1, axis)


# -- adjoint: each output's gradient into its taps, in torch's order ------------------------------
@functools.lru_cache(maxsize=128)
def _contributions(kind, in_sizes, out_sizes, params, scales, dtype):
    """torch's backward adds, for each output element in row-major order, its gradient times
    its taps' weights into the taps' input elements. Returned grouped into rounds: in round r
    each input element receives its r-th addition (so one vectorised step per round keeps
    torch's order of additions for every element): [(input element, output element,
    weights per dim)] per round. Linear and nearest order the taps with the first dim's
    slowest; cubic's loop takes the last dim's (x) taps outermost."""
    nd = len(out_sizes)
    taps = [_taps(kind, i, o, params, s, dtype, backward=True)
            for i, o, s in zip(in_sizes, out_sizes, scales)]
    widths = [t[0].shape[1] for t in taps]
    outs = np.indices(out_sizes).reshape(nd, -1)
    order = list(reversed(range(nd))) if kind == "cubic" else list(range(nd))
    ks = np.empty((nd, int(np.prod(widths))), np.int64)
    ks[order] = np.indices([widths[d] for d in order]).reshape(nd, -1)
    targets = [taps[d][0][outs[d][:, None], ks[d][None, :]].ravel() for d in range(nd)]
    weights = [taps[d][1][outs[d][:, None], ks[d][None, :]].ravel() for d in range(nd)]
    flat = np.ravel_multi_index(targets, in_sizes) if nd else np.zeros(0, np.int64)
    source = np.repeat(np.arange(outs.shape[1]), ks.shape[1])
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
    g = grad.astype(compute, copy=False).reshape(lead + (int(np.prod(out_sizes)),))
    acc = xp.zeros(lead + (int(np.prod(in_sizes)),), compute)
    with np.errstate(invalid="ignore", over="ignore"):
        for target, source, weights in rounds:
            target = xp.asarray(target)
            values = xp.take(g, xp.asarray(source), axis=-1)
            acc[..., target] = _accumulate(xp, kind, acc[..., target], values, weights, compute)
    return acc.reshape(lead + tuple(in_sizes)).astype(dtype, copy=False)


def _accumulate(xp, kind, acc, values, weights, dtype):
    """acc + an output's gradient times its weights, as torch's backward rounds it: nearest
    adds; linear's product of the weights is fused into the addition (d * h * w * g + acc);
    cubic's (g * wy) * wx is rounded before the addition (its file is compiled without
    fused multiply-adds)."""
    if kind in ("nearest", "nearest_exact"):
        return acc + values
    if kind == "linear":
        product = weights[0]
        for w in weights[1:]:
            product = product * w
        return fused_multiply_add(xp.asarray(product.astype(dtype)), values, acc, dtype)
    for w in reversed(weights):  # (the y weight, then the x weight)
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
    if antialias:
        raise NotImplementedError(f"interpolate(mode={mode!r}, antialias=True) is not "
                                  "supported by ember")
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
    return interpolate(input, size, scale_factor, mode, align_corners)


FUNCTIONAL = ["interpolate", "upsample"]
