"""Op table rows for fractional max pooling (ember._ops.fractional_pool): given samples (so
ember and torch pool the same windows), 2-D and 3-D, batched and not, square and uneven
kernels, output_size and output_ratio, one-window outputs and NaN inputs."""
from __future__ import annotations

import numpy as np

import ember.nn.functional as F
from ember._ops import fractional_pool as FP

from .op_db import C, S, row

_RNG = np.random.default_rng(5)


def _u(m, *shape):
    """Uniform samples in the dtype under test (never requiring grad)."""
    return C(_RNG.uniform(0, 1, shape).astype(m.dtype))


def _samples2d(m):
    return [S("basic", m(2, 3, 7, 9), 2, output_size=(3, 4), _random_samples=_u(m, 2, 3, 2)),
            S("uneven", m(1, 2, 6, 5), (3, 2), output_size=(4, 3),
              _random_samples=_u(m, 1, 2, 2)),
            S("ratio", m(1, 2, 8, 6), 2, output_ratio=(0.5, 0.5), _random_samples=_u(m, 1, 2, 2)),
            S("indices", m(2, 2, 5, 5), 2, output_size=2, return_indices=True,
              _random_samples=_u(m, 3, 2, 2)),
            S("one_window", m(3, 4, 4), 3, output_size=1, _random_samples=_u(m, 1, 3, 2)),
            S("nan", m.arr(np.where(np.arange(36) % 7 == 3, np.nan, np.arange(36.0))
                           .reshape(1, 1, 6, 6)), 2, output_size=3,
              _random_samples=_u(m, 1, 1, 2), no_gradcheck="NaN input")]


def _samples3d(m):
    return [S("basic", m(1, 2, 5, 6, 7), 2, output_size=(2, 3, 4),
              _random_samples=_u(m, 1, 2, 3)),
            S("unbatched", m(2, 4, 5, 6), (1, 2, 3), output_size=(3, 2, 2), return_indices=True,
              _random_samples=_u(m, 1, 2, 3)),
            S("ratio", m(2, 1, 6, 6, 6), 2, output_ratio=0.5, _random_samples=_u(m, 2, 1, 3))]


row("nn.functional.fractional_max_pool2d", F.fractional_max_pool2d,
    "nn.functional.fractional_max_pool2d",
    [FP.fractional_max_pool2d_op, FP.fractional_max_pool2d_backward, FP._gather_planes],
    _samples2d)
row("nn.functional.fractional_max_pool3d", F.fractional_max_pool3d,
    "nn.functional.fractional_max_pool3d",
    [FP.fractional_max_pool3d_op, FP.fractional_max_pool3d_backward, FP._gather_volumes],
    _samples3d)
