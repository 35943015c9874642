"""Grid sampling (``grid_sample``: torch's grid_sampler_2d / grid_sampler_3d) and affine grids.

A sample is a weighted sum of input values at integer corners: one (nearest), two per spatial
dim (bilinear) or four per dim (bicubic, 2-D only). The corners' positions depend on the grid
only through floor and rounding, constant almost everywhere; the weights are polynomials of the
fractional coordinates ``t``, and ``t`` is affine in the grid with slope ``s'`` (the
unnormalising scale times the clip / reflection slope of the padding mode). So the derivative
formula is written with ember ops on ``t = s' * grid + constant``: first-order backward runs it
on arrays, and under ``create_graph`` the same formula records the graph of the second
derivative (in the input, the grid and the incoming gradient).
"""
from __future__ import annotations

import itertools
import math

import numpy as np

from .. import _dtype as D
from .._backend import get_xp
from .._tensor import Tensor, _wrap
from .indexing import _gather, _scatter_add
from .linalg import bmm
from .pointwise import no_forward_ad, not_implemented
from .reduction import sum_dim
from .registry import NONE, op
from .shape import reshape, stack, transpose

__all__ = ["affine_grid_generator", "grid_sampler", "grid_sampler_2d", "grid_sampler_3d"]
FUNCTIONAL = ["GRID_SAMPLE_INTERPOLATION_MODES", "GRID_SAMPLE_PADDING_MODES", "affine_grid",
              "grid_sample"]

GRID_SAMPLE_INTERPOLATION_MODES = {"bilinear": 0, "nearest": 1, "bicubic": 2}
GRID_SAMPLE_PADDING_MODES = {"zeros": 0, "border": 1, "reflection": 2}
BILINEAR, NEAREST, BICUBIC = 0, 1, 2
ZEROS, BORDER, REFLECTION = 0, 1, 2
_CUBIC_A = -0.75  # the cubic convolution's parameter, as torch's (and OpenCV's)
_INT_MAX = 2 ** 31 - 1


# -- source coordinates ------------------------------------------------------------------------
def _unnormalize(coord, size, align_corners):
    """Grid coordinates in [-1, 1] to pixel coordinates, and the slope of that map."""
    if align_corners:
        return (coord + 1) / 2 * (size - 1), (size - 1) / 2
    return ((coord + 1) * size - 1) / 2, size / 2


def _clip(xp, coord, size, nan_to_zero):
    """``coord`` clipped into [0, size - 1]; its slope is 0 where clipped (and at 0 itself).
    NOTE: a NaN comes out as torch's kernels give it: 0 from the 2-D one (a vector max), and
    size - 1 from the 3-D one (std::min(size - 1, std::max(coord, 0)))."""
    low = xp.where(coord > 0, coord, 0) if nan_to_zero else xp.where(coord < 0, 0, coord)
    return xp.where(low < size - 1, low, size - 1).astype(coord.dtype), \
        (coord > 0) & (coord < size - 1)


def _reflect(xp, coord, twice_low, twice_high):
    """``coord`` reflected off [low, high] until inside, and the sign of its slope."""
    if twice_low == twice_high:
        return xp.zeros_like(coord), xp.zeros_like(coord)
    low, span = twice_low / 2, (twice_high - twice_low) / 2
    shifted = coord - low
    sign = xp.where(shifted < 0, -1.0, 1.0).astype(coord.dtype)
    shifted = xp.abs(shifted)
    extra = xp.fmod(shifted, span)
    even = xp.floor(shifted / span) % 2 == 0
    return xp.where(even, extra + low, span - extra + low), xp.where(even, sign, -sign)


def _pad_coordinates(xp, coord, size, padding_mode, align_corners, nd):
    """torch's compute_coordinates: the padding mode's clip or reflection, with its slope."""
    slope = 1
    if padding_mode == BORDER:
        coord, inside = _clip(xp, coord, size, nd == 2)
        slope = inside
    elif padding_mode == REFLECTION:
        twice = (0, 2 * (size - 1)) if align_corners else (-1, 2 * size - 1)
        coord, sign = _reflect(xp, coord, *twice)
        coord, inside = _clip(xp, coord, size, nd == 2)
        slope = sign * inside
    return coord, slope


def _safe_index_range(xp, coord):
    """Coordinates that are not finite or overflow an int become -100 (outside), as torch's."""
    top = min(float(_INT_MAX - 1), float(np.finfo(coord.dtype).max))  # (no overflow in half)
    ok = xp.isfinite(coord) & (coord <= top) & (coord >= -top - 1)
    return xp.where(ok, coord, -100.0).astype(coord.dtype)


# -- per-dimension corners and weights ---------------------------------------------------------
def _cubic_near(x):
    return ((_CUBIC_A + 2) * x - (_CUBIC_A + 3)) * x * x + 1


def _cubic_far(x):
    return ((_CUBIC_A * x - 5 * _CUBIC_A) * x + 8 * _CUBIC_A) * x - 4 * _CUBIC_A


def _cubic_near_slope(x):
    return (3 * (_CUBIC_A + 2) * x - 2 * (_CUBIC_A + 3)) * x


def _cubic_far_slope(x):
    return (3 * _CUBIC_A * x - 10 * _CUBIC_A) * x + 8 * _CUBIC_A


def _weights(mode, t):
    """The corners' 1-D weights at fractional coordinate ``t`` and their derivatives in t."""
    if mode == BILINEAR:
        return [1 - t, t], [-1, 1]
    u, v = t + 1, 2 - t
    return ([_cubic_far(u), _cubic_near(t), _cubic_near(1 - t), _cubic_far(v)],
            [_cubic_far_slope(u), _cubic_near_slope(t), -_cubic_near_slope(1 - t),
             -_cubic_far_slope(v)])


class _Axis:
    """One spatial dim of a sampling: its corners' integer positions and validity, the
    fractional coordinate ``t`` and the slope of t in the grid coordinate."""

    def __init__(self, xp, coord, size, mode, padding_mode, align_corners, nd):
        self.size = size
        if mode == BICUBIC:  # the padding applies to each integer corner, not to t
            src, slope = _unnormalize(coord, size, align_corners)
            base = xp.floor(src)
            corners = [_pad_coordinates(xp, base - 1 + j, size, padding_mode,
                                        align_corners, nd)[0] for j in range(4)]
            corners = [_safe_index_range(xp, c) for c in corners]
        else:
            src, unnorm = _unnormalize(coord, size, align_corners)
            src, pad_slope = _pad_coordinates(xp, src, size, padding_mode, align_corners, nd)
            src = _safe_index_range(xp, src)
            slope = unnorm * pad_slope
            if mode == NEAREST:
                base = xp.rint(src)  # nearbyint: halves to even
                corners = [base]
            else:
                base = xp.floor(src)
                corners = [base, base + 1]
        self.t = src - base
        self.slope = (xp.zeros_like(coord) + slope).astype(coord.dtype)
        corners = [c.astype(np.int64) for c in corners]  # truncation, as torch's casts
        self.valid = [(c >= 0) & (c < size) for c in corners]
        self.index = [xp.where(v, c, 0) for c, v in zip(corners, self.valid)]


def _axes(xp, grid, spatial, mode, padding_mode, align_corners):
    """The _Axis of each spatial dim (D, H, W order); grid's last entry is x (the width)."""
    nd = len(spatial)
    return [_Axis(xp, grid[..., nd - 1 - d], spatial[d], mode, padding_mode, align_corners,
                  nd) for d in range(nd)]


def _corner_table(xp, axes):
    """Every corner combination: flat plane indices (N, K*P) and validity masks (N, K, P)."""
    flat, valid = [], []
    strides = [math.prod(a.size for a in axes[d + 1:]) for d in range(len(axes))]
    for combo in itertools.product(*(range(len(a.index)) for a in axes)):
        flat.append(sum(a.index[j] * s for a, j, s in zip(axes, combo, strides)))
        ok = axes[0].valid[combo[0]]
        for a, j in zip(axes[1:], combo[1:]):
            ok = ok & a.valid[j]
        valid.append(ok)
    n, p = flat[0].shape
    return xp.stack(flat, 1).reshape(n, len(flat) * p), xp.stack(valid, 1)


def _corner_weights(mode, ts, masks):
    """(N, K, P) weights of the corner combinations, and per dim their derivatives in t."""
    if mode == NEAREST:  # (the weights depend on the grid, with derivative zero)
        if not isinstance(ts[0], Tensor):
            return masks, None
        zero = 0 * sum(ts[1:], ts[0])
        return masks + reshape(zero, (zero.shape[0], 1, zero.shape[1])), None
    per_dim = [_weights(mode, t) for t in ts]
    weights, slopes = [], [[] for _ in ts]
    for combo in itertools.product(*(range(len(w)) for w, _ in per_dim)):
        factors = [per_dim[d][0][j] for d, j in enumerate(combo)]
        weights.append(math.prod(factors[1:], start=factors[0]))
        for d, j in enumerate(combo):
            slopes[d].append(math.prod(factors[:d] + factors[d + 1:], start=per_dim[d][1][j]))
    return stack(weights, 1) * masks, [stack(s, 1) * masks for s in slopes]


# -- the ops -----------------------------------------------------------------------------------
def _plan(input, grid, mode, padding_mode, align_corners):  # noqa: A002
    """The raw sampling plan: corner indices, validity and the per-dim _Axis objects."""
    raw = grid._data if isinstance(grid, Tensor) else grid
    n, p = raw.shape[0], math.prod(raw.shape[1:-1])
    xp = get_xp(raw)
    axes = _axes(xp, raw.reshape(n, p, raw.shape[-1]), input.shape[2:], mode, padding_mode,
                 align_corners)
    flat, valid = _corner_table(xp, axes)
    return axes, flat, valid.astype(raw.dtype)


def _gathered(input, flat):  # noqa: A002
    """Input values at the flat corner indices, (N, C, K*P)."""
    n, c = input.shape[:2]
    planes = reshape(input, (n, c, math.prod(input.shape[2:])))
    index = get_xp(flat).broadcast_to(flat.reshape(n, 1, flat.shape[1]), (n, c, flat.shape[1]))
    return _gather(planes, _constant(index, input), 2)


def _constant(array, like):
    """A constant array in the formula's mode: a Tensor beside Tensors, else the array."""
    return _wrap(array) if isinstance(like, Tensor) else array


def _sample(input, grid, mode, padding_mode, align_corners):  # noqa: A002
    axes, flat, valid = _plan(input, grid, mode, padding_mode, align_corners)
    weights, _ = _corner_weights(mode, [a.t for a in axes], valid)
    n, c = input.shape[:2]
    k, p = valid.shape[1], valid.shape[2]
    values = reshape(_gathered(input, flat), (n, c, k, p))
    out = sum_dim(values * reshape(weights, (n, 1, k, p)), (2,))
    return reshape(out, (n, c, *grid.shape[1:-1]))


def _sampling_grads(grad, input, grid, mode, padding_mode, align_corners):  # noqa: A002
    """(d input, d grid) of a sampling, in ember ops (differentiable again)."""
    axes, flat, valid = _plan(input, grid, mode, padding_mode, align_corners)
    xp = get_xp(flat)
    nd, (n, c), (k, p) = len(axes), input.shape[:2], valid.shape[1:]
    graph = next((v for v in (grad, input, grid) if isinstance(v, Tensor)), None)
    if isinstance(grid, Tensor):  # t as an ember expression of the grid: t = s' * grid + b
        cols = reshape(grid, (n, p, nd))
        ts = [_wrap(a.slope) * cols[..., nd - 1 - d]
              + _wrap(a.t - a.slope * cols._data[..., nd - 1 - d]) for d, a in enumerate(axes)]
    else:
        ts = [_constant(a.t, graph) for a in axes]
    weights, slopes = _corner_weights(mode, ts, _constant(valid, graph))
    g = reshape(grad, (n, c, 1, p))
    spread = reshape(g * reshape(weights, (n, 1, k, p)), (n, c, k * p))
    planes = _constant(xp.zeros((n, c, math.prod(input.shape[2:])), valid.dtype), graph)
    index = xp.broadcast_to(flat.reshape(n, 1, flat.shape[1]), (n, c, flat.shape[1]))
    grad_input = reshape(_scatter_add(planes, _constant(index, graph), spread, 2), input.shape)
    if slopes is None:  # nearest: the grid's gradient is zero
        return grad_input, _constant(xp.zeros(tuple(grid.shape), valid.dtype), graph)
    values = reshape(_gathered(input, flat), (n, c, k, p))
    along = sum_dim(g * values, (1,))  # (N, K, P): the gradient's product with each corner
    cols = [_constant(axes[nd - 1 - i].slope, graph) * sum_dim(slopes[nd - 1 - i] * along, (1,))
            for i in range(nd)]  # x (width) first, as the grid's last dim
    return grad_input, reshape(stack(cols, -1), tuple(grid.shape))


def _check_sampler(nd):
    def check(input, grid, interpolation_mode, padding_mode, align_corners):  # noqa: A002
        _check_common(input, grid)
        if input.ndim != nd + 2 or grid.ndim != input.ndim:
            raise RuntimeError(
                f"grid_sampler(): expected {nd + 2}D input and grid with same number of "
                f"dimensions, but got input with sizes {list(input.shape)} and grid with sizes "
                f"{list(grid.shape)}")
        if interpolation_mode not in (BILINEAR, NEAREST, BICUBIC):
            raise RuntimeError("grid_sampler(): expected interpolation_mode 0 (bilinear), 1 "
                               f"(nearest) or 2 (bicubic), but got {interpolation_mode}")
        if padding_mode not in (ZEROS, BORDER, REFLECTION):
            raise RuntimeError("grid_sampler(): expected padding_mode 0 (zeros), 1 (border) or "
                               f"2 (reflection), but got {padding_mode}")
        if interpolation_mode == BICUBIC and nd == 3:
            raise RuntimeError("grid_sampler(): bicubic interpolation only supports 4D input")
        data = input._data
        if data.dtype.kind != "f":
            raise not_implemented("grid_sampler_2d_cpu_kernel_impl" if nd == 2
                                  else "grid_sampler3d_cpu", data)
        if grid._data.dtype != data.dtype:
            raise RuntimeError(f"expected scalar type {D._BY_NP[data.dtype].scalar_name} but "
                               f"found {D._BY_NP[grid._data.dtype].scalar_name}")
    return check


def _check_common(input, grid):  # noqa: A002
    if input.shape[0] != grid.shape[0]:
        raise RuntimeError(
            "grid_sampler(): expected grid and input to have same batch size, but got input "
            f"with sizes {list(input.shape)} and grid with sizes {list(grid.shape)}")
    if grid.shape[-1] != input.ndim - 2:
        raise RuntimeError(
            f"grid_sampler(): expected grid to have size {input.ndim - 2} in last dimension, "
            f"but got grid with sizes {list(grid.shape)}")
    for d in range(2, input.ndim):
        if input.shape[d] == 0:
            raise RuntimeError(
                "grid_sampler(): expected input to have non-empty spatial dimensions, but "
                f"input has sizes {list(input.shape)} with dimension {d} being empty")


@op("grid_sampler_2d", tensors=2, promote=NONE, node="GridSampler2DBackward0",
    check=_check_sampler(2))
def grid_sampler_2d(input, grid, interpolation_mode, padding_mode, align_corners):  # noqa: A002
    return _sample(input, grid, interpolation_mode, padding_mode, align_corners)


grid_sampler_2d.jvp("input", "grid")(no_forward_ad("grid_sampler_2d"))


@grid_sampler_2d.grad("input", "grid")
def _(grad, input, grid, interpolation_mode, padding_mode, align_corners):  # noqa: A002
    return _sampling_grads(grad, input, grid, interpolation_mode, padding_mode, align_corners)


@op("grid_sampler_3d", tensors=2, promote=NONE, node="GridSampler3DBackward0",
    check=_check_sampler(3))
def grid_sampler_3d(input, grid, interpolation_mode, padding_mode, align_corners):  # noqa: A002
    return _sample(input, grid, interpolation_mode, padding_mode, align_corners)


grid_sampler_3d.jvp("input", "grid")(no_forward_ad("grid_sampler_3d"))


@grid_sampler_3d.grad("input", "grid")
def _(grad, input, grid, interpolation_mode, padding_mode, align_corners):  # noqa: A002
    return _sampling_grads(grad, input, grid, interpolation_mode, padding_mode, align_corners)


def grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners):  # noqa: A002
    """torch.grid_sampler: the 2-D sampler for 4-D input, the 3-D one otherwise."""
    _check_common(input, grid)
    sampler = grid_sampler_2d if input.ndim == 4 else grid_sampler_3d
    return sampler(input, grid, interpolation_mode, padding_mode, align_corners)


def grid_sample(input, grid, mode="bilinear", padding_mode="zeros",  # noqa: A002
                align_corners=None):
    """Samples ``input`` at the normalised locations ``grid`` (in [-1, 1]) by interpolation."""
    import warnings
    if mode not in GRID_SAMPLE_INTERPOLATION_MODES:
        raise ValueError("nn.functional.grid_sample(): expected mode to be 'bilinear', "
                         f"'nearest' or 'bicubic', but got: '{mode}'")
    if padding_mode not in GRID_SAMPLE_PADDING_MODES:
        raise ValueError("nn.functional.grid_sample(): expected padding_mode to be 'zeros', "
                         f"'border', or 'reflection', but got: '{padding_mode}'")
    if align_corners is None:
        warnings.warn(_ALIGN_WARNING, stacklevel=2)
        align_corners = False
    return grid_sampler(input, grid, GRID_SAMPLE_INTERPOLATION_MODES[mode],
                        GRID_SAMPLE_PADDING_MODES[padding_mode], align_corners)


_ALIGN_WARNING = ("Default grid_sample and affine_grid behavior has changed to "
                  "align_corners=False since 1.3.0. Please specify align_corners=True if the "
                  "old behavior is desired. See the documentation of grid_sample for details.")


# -- affine grids ------------------------------------------------------------------------------
def _steps(xp, n, align_corners, dtype):
    """n points spanning [-1, 1] (pixel centres unless align_corners); 0 for one point."""
    if n <= 1:
        return xp.zeros(1, dtype)
    line = xp.linspace(-1, 1, n).astype(dtype)
    return line if align_corners else line * (n - 1) / n


def _base_grid(xp, size, align_corners, dtype):
    """(P, k + 1) homogeneous pixel coordinates (x first) of the spatial ``size``."""
    spatial = size[2:]
    lines = [_steps(xp, n, align_corners, dtype) for n in spatial]
    mesh = xp.meshgrid(*lines, indexing="ij")
    cols = [xp.broadcast_to(m, spatial).reshape(-1) for m in mesh[::-1]]
    cols.append(xp.ones(math.prod(spatial), dtype))
    return xp.stack(cols, 1)


def _check_affine(theta, size, align_corners):
    if len(size) not in (4, 5):
        raise RuntimeError("AffineGridGenerator needs 4d (spatial) or 5d (volumetric) inputs.")
    k = len(size) - 2
    if theta.ndim != 3 or theta.shape[0] != size[0] or theta.shape[2] != k + 1:
        got = list(theta.shape[:1]) + list(theta.shape[2:3])
        raise RuntimeError("Expected size for first two dimensions of batch2 tensor to be: "
                           f"[{size[0]}, {k + 1}] but got: {got}.".replace("'", ""))
    if theta.shape[1] != k:
        total = math.prod(size[:1] + size[2:]) * theta.shape[1]
        raise RuntimeError(f"shape '{[size[0], *size[2:], k]}' is invalid for input of size "
                           f"{total}")


@op("affine_grid_generator", promote=NONE, node="AffineGridGeneratorBackward0",
    check=_check_affine)
def affine_grid_generator(theta, size, align_corners):
    xp = get_xp(theta)
    base = _base_grid(xp, size, align_corners, theta.dtype)
    grid = xp.matmul(base, theta.transpose(0, 2, 1))  # (N, P, k)
    return grid.reshape(size[0], *size[2:], len(size) - 2)


@affine_grid_generator.grad("theta")
def _(grad, theta, size, align_corners):
    n, k = size[0], len(size) - 2
    raw = theta._data if isinstance(theta, Tensor) else theta
    base = _base_grid(get_xp(raw), size, align_corners, raw.dtype)
    base_t = get_xp(base).broadcast_to(base.T.reshape(1, k + 1, -1), (n, k + 1, base.shape[0]))
    return transpose(bmm(_constant(base_t, grad), reshape(grad, (n, -1, k))), 1, 2)


def affine_grid(theta, size, align_corners=None):
    """The sampling grid (for ``grid_sample``) of the affine maps ``theta`` (N x 2 x 3 or
    N x 3 x 4) over an output of ``size``."""
    import warnings
    if align_corners is None:
        warnings.warn(_ALIGN_WARNING, stacklevel=2)
        align_corners = False
    if not theta.is_floating_point():
        raise ValueError(f"Expected theta to have floating point type, but got {theta.dtype}")
    size = list(size) if not isinstance(size, tuple) else size
    if len(size) in (4, 5):
        k = len(size) - 2
        if theta.dim() != 3 or theta.shape[-2] != k or theta.shape[-1] != k + 1:
            raise ValueError(f"Expected a batch of {k}D affine matrices of shape Nx{k}x{k + 1} "
                             f"for size {size}. Got {theta.shape}.")
        spatial = size[-k:]
    else:
        raise NotImplementedError("affine_grid only supports 4D and 5D sizes, for 2D and 3D "
                                  f"affine transforms, respectively. Got size {size}.")
    if align_corners and min(spatial) == 1:
        warnings.warn("Since version 1.3.0, affine_grid behavior has changed for unit-size "
                      "grids when align_corners=True. This is not an intended use case of "
                      "affine_grid. See the documentation of affine_grid for details.",
                      stacklevel=2)
    elif min(size) <= 0:
        raise ValueError(f"Expected non-zero, positive output size. Got {size}")
    return affine_grid_generator(theta, tuple(size), align_corners)
