"""Op table rows for grid sampling and affine grids (ember._ops.grid_sample): every
interpolation and padding mode with and without align_corners, 4-D and 5-D, grids reaching
outside [-1, 1] (so padding matters), and torch's functional entry points."""
from __future__ import annotations

import ember
import ember.nn.functional as F
from ember._ops import grid_sample as GS

from .op_db import S, row

_MODES = {2: ("bilinear", "nearest", "bicubic"), 3: ("bilinear", "nearest")}
_PADS = ("zeros", "border", "reflection")


def _grid(m, *shape):
    return m(*shape, low=-1.25, high=1.25)


def _sample_set(nd):
    """Every mode with every padding; align_corners alternates (the grid_sampler rows and
    tests/test_grid_sample.py cover the other combinations)."""
    def samples(m):
        out = []
        for k, (mode, pad) in enumerate((mode, pad) for mode in _MODES[nd] for pad in _PADS):
            ac = bool((k + nd) % 2)
            x = m(2, 2, 3, 4) if nd == 2 else m(1, 2, 2, 3, 4)
            g = _grid(m, 2, 3, 2, 2) if nd == 2 else _grid(m, 1, 2, 2, 3, 3)
            out.append(S(f"{nd}d_{mode}_{pad}_{int(ac)}", x, g, mode=mode, padding_mode=pad,
                         align_corners=ac))
        return out
    return samples


row("nn.functional.grid_sample", F.grid_sample, "nn.functional.grid_sample",
    [GS.grid_sampler_2d, GS.grid_sampler_3d],
    lambda m: _sample_set(2)(m) + _sample_set(3)(m))
row("grid_sampler", ember.grid_sampler, "grid_sampler", [GS.grid_sampler_2d],
    lambda m: [S("bicubic_border", m(1, 2, 4, 3), _grid(m, 1, 2, 3, 2), 2, 1, False),
               S("3d_nearest", m(1, 1, 2, 2, 3), _grid(m, 1, 1, 2, 2, 3), 1, 2, True),
               S("empty_grid", m(1, 2, 3, 3), _grid(m, 1, 0, 2, 2), 0, 0, False)])
row("grid_sampler_2d", ember.grid_sampler_2d, "grid_sampler_2d", [GS.grid_sampler_2d],
    lambda m: [S("bilinear_reflection", m(2, 1, 3, 3), _grid(m, 2, 2, 2, 2), 0, 2, False),
               S("one_pixel", m(1, 2, 1, 1), _grid(m, 1, 2, 2, 2), 0, 2, True)])
row("grid_sampler_3d", ember.grid_sampler_3d, "grid_sampler_3d", [GS.grid_sampler_3d],
    lambda m: [S("bilinear_border", m(1, 2, 2, 3, 2), _grid(m, 1, 2, 1, 2, 3), 0, 1, False)])


def _theta(m, k):
    return m(2, k, k + 1)


row("nn.functional.affine_grid", F.affine_grid, "nn.functional.affine_grid",
    [GS.affine_grid_generator],
    lambda m: [S("2d", _theta(m, 2), (2, 3, 4, 5), align_corners=False),
               S("2d_align", _theta(m, 2), (2, 1, 3, 2), align_corners=True),
               S("3d", _theta(m, 3), (2, 1, 2, 3, 4), align_corners=False),
               S("3d_align", _theta(m, 3), (2, 2, 3, 1, 2), align_corners=True),
               S("one_wide", _theta(m, 2), (2, 1, 1, 3), align_corners=False)])
row("affine_grid_generator", ember.affine_grid_generator, "affine_grid_generator",
    [GS.affine_grid_generator],
    lambda m: [S("2d", _theta(m, 2), (2, 1, 2, 3), False),
               S("3d_align", _theta(m, 3), [2, 1, 3, 2, 2], True)])
