"""Op table rows for conv_tbc (ember._ops.conv_tbc): padding wider than, equal to and (negative)
cropping the time axis, one-tap and full-length kernels; torch.conv_tbc and F.conv_tbc are the
same function."""
from __future__ import annotations

import ember
import ember.nn.functional as F
from ember._ops import conv_tbc as CT

from .op_db import INTS, S, row


def _samples(m):
    return [S("pad1", m(5, 2, 3), m(2, 3, 4), m(4), 1),
            S("no_pad", m(5, 2, 3), m(3, 3, 4), m(4)),
            S("crop", m(6, 2, 3), m(2, 3, 2), m(2), -1),
            S("one_tap_wide_pad", m(4, 1, 2), m(1, 2, 3), m(3), 2),
            S("full_length", m(3, 2, 2), m(3, 2, 2), m(2), pad=0)]


row("conv_tbc", ember.conv_tbc, "conv_tbc", [CT.conv_tbc], _samples)
row("nn.functional.conv_tbc", F.conv_tbc, "nn.functional.conv_tbc", [CT.conv_tbc],
    lambda m: _samples(m)[:2], dtypes=("float32", "float64", *INTS))
