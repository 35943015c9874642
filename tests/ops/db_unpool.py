"""Op table rows for max unpooling and 3-D pooling (ember._ops.pooling):
unpooling's indices are positions a max pooling could give (distinct within each plane); a
sample with output_size checks the explicit size."""
from __future__ import annotations

import numpy as np

import ember.nn.functional as F
from ember._ops import pooling as P

from .op_db import C, S, row

# (N, C, 2, 2) indices into 4x4 planes, one per 2x2 window
_IDX2 = C(np.array([[[[0, 3], [9, 14]], [[5, 2], [13, 15]]]]))
# (N, C, 2, 2, 2) indices into a 4x4x4 volume
_IDX3 = C(np.array([[[[[0, 3], [9, 14]], [[21, 39], [57, 63]]]]]))


row("max_unpool1d", F.max_unpool1d, "nn.functional.max_unpool1d", [P.max_unpool2d_op],
    lambda m: [S("batch", m(1, 2, 3), C(np.array([[[1, 2, 5], [0, 3, 4]]])), 2),
               S("unbatched", m(2, 3), C(np.array([[1, 2, 5], [0, 3, 4]])), 2),
               S("stride_pad", m(1, 1, 3), C(np.array([[[0, 2, 4]]])), 3, 2, 1),
               S("output_size", m(1, 2, 3), C(np.array([[[1, 2, 6], [0, 3, 4]]])), 2,
                 output_size=[7])])
row("max_unpool2d", F.max_unpool2d, "nn.functional.max_unpool2d", [P.max_unpool2d_op],
    lambda m: [S("batch", m(1, 2, 2, 2), _IDX2, 2),
               S("unbatched", m(2, 2, 2), C(_IDX2.value[0]), (2, 2)),
               S("output_size", m(1, 2, 2, 2), _IDX2, 2, output_size=(1, 2, 5, 4)),
               S("stride", m(1, 2, 2, 2), C(np.array([[[[0, 2], [6, 8]], [[1, 5], [3, 7]]]])), 3,
                 stride=2, padding=1)])
row("max_unpool3d", F.max_unpool3d, "nn.functional.max_unpool3d", [P.max_unpool3d_op],
    lambda m: [S("batch", m(1, 1, 2, 2, 2), _IDX3, 2),
               S("unbatched", m(1, 2, 2, 2), C(_IDX3.value[0]), 2),
               S("output_size", m(1, 1, 2, 2, 2), _IDX3, 2, output_size=(5, 4, 4))])
row("adaptive_avg_pool3d", F.adaptive_avg_pool3d, "nn.functional.adaptive_avg_pool3d",
    [P.adaptive_avg_pool3d_op, P.adaptive_avg_pool3d_backward],
    lambda m: [S("basic", m(1, 2, 3, 5, 4), (2, 3, 2)), S("grow", m(1, 1, 2, 2, 3), 3),
               S("one", m(2, 1, 3, 2, 2), 1), S("none", m(1, 1, 4, 3, 2), (None, 2, 1)),
               S("unbatched", m(2, 3, 3, 4), 2)])
row("avg_pool3d", F.avg_pool3d, "nn.functional.avg_pool3d",
    [P.avg_pool3d_op, P.avg_pool3d_backward],
    lambda m: [S("basic", m(1, 2, 3, 4, 5), 2),
               S("stride_pad", m(1, 1, 4, 3, 5), (3, 2, 2), stride=(1, 2, 2), padding=1),
               S("ceil_exclude", m(1, 2, 3, 5, 4), 2, ceil_mode=True, count_include_pad=False,
                 padding=(0, 1, 1)),
               S("divisor", m(1, 1, 2, 4, 4), 2, divisor_override=3),
               S("unbatched", m(2, 3, 4, 4), (1, 2, 2))])
row("max_pool3d", F.max_pool3d, "nn.functional.max_pool3d",
    [P.max_pool3d_with_indices, P.max_pool3d_with_indices_backward, P.pool_gather3d],
    lambda m: [S("basic", m(1, 2, 3, 4, 5), 2),
               S("indices", m(1, 1, 4, 3, 5), (3, 2, 2), stride=(1, 2, 2), padding=1,
                 return_indices=True),
               S("dilation_ceil", m(1, 2, 5, 5, 4), 2, dilation=(2, 1, 1), ceil_mode=True),
               S("ties", m.arr(np.ones((1, 1, 2, 2, 4))), 2, return_indices=True,
                 no_gradcheck="ties"),
               S("unbatched", m(2, 3, 4, 4), (1, 2, 2))])
row("adaptive_max_pool3d", F.adaptive_max_pool3d, "nn.functional.adaptive_max_pool3d",
    [P.adaptive_max_pool3d_op],
    lambda m: [S("basic", m(1, 2, 3, 5, 4), (2, 3, 2)),
               S("indices", m(1, 1, 4, 3, 5), (3, 2, 2), return_indices=True),
               S("grow", m(1, 1, 2, 2, 3), 3), S("none", m(1, 1, 4, 3, 2), (None, 2, 1)),
               S("ties", m.arr(np.ones((1, 1, 2, 3, 2))), 2, return_indices=True,
                 no_gradcheck="ties"),
               S("unbatched", m(2, 3, 3, 4), 2)])
