"""Op table rows for the storage views of strided.py: as_strided, view_as_real,
view_as_complex, and the real / imag views.

The complex views are exercised through real inputs and outputs (``view_as_complex`` then back,
or then ``.real`` / ``.imag``), so that gradcheck and the torch comparisons stay real.
"""
from __future__ import annotations

import numpy as np

import ember
from ember._ops import shape as SH
from ember._ops import strided as ST

from .op_db import S, row

_AS_STRIDED = [ST._as_strided, ST.as_strided_backward]


def _np_as_strided(x, size, stride, storage_offset=0):
    flat = np.ascontiguousarray(x).ravel()[storage_offset:]
    return np.lib.stride_tricks.as_strided(flat, size, [s * flat.itemsize for s in stride])


def _strided_samples(m):
    return [S("window", m(12), (3, 3), (2, 1), 1), S("matrix", m(3, 4), (2, 2), (4, 1)),
            S("transposed", m(3, 4), (4, 3), (1, 4)), S("broadcast", m(6), (2, 3), (0, 1)),
            S("overlap", m(6), (3, 3), (1, 1)), S("skip", m(2, 5), (3,), (3,), 1),
            S("0dim", m(6), (), (), 3), S("empty", m(6), (0, 3), (1, 1))]


row("as_strided", ember.as_strided, "as_strided", _AS_STRIDED, _strided_samples,
    np_ref=_np_as_strided, dtypes=("float32", "float64", "int64", "bool"))
row("as_strided_method", lambda x, *a: x.as_strided(*a), None, _AS_STRIDED,
    lambda m: [S("window", m(3, 4), (2, 3), (3, 1), 2)], np_ref=_np_as_strided)


def _np_complex(x):
    return x[..., 0] + 1j * x[..., 1]


def _pairs(m):
    # NOTE: no empty sample: torch.from_numpy keeps NumPy's zero strides of an empty array,
    # which view_as_complex refuses (tests/test_saved_hooks.py covers empty tensors).
    return [S("vector", m(2)), S("matrix", m(3, 2)), S("3d", m(2, 3, 2)), S("single", m(1, 2))]


row("view_as_complex_real", lambda x: ember.view_as_real(ember.view_as_complex(x)),
    lambda torch: lambda x: torch.view_as_real(torch.view_as_complex(x)),
    [ST.view_as_complex, ST._view_as_real], _pairs, np_ref=lambda x: x)
row("complex_real_part", lambda x: ember.view_as_complex(x).real,
    lambda torch: lambda x: torch.view_as_complex(x).real,
    [ST.view_as_complex, ST._view_as_real, SH.select], _pairs,
    np_ref=lambda x: _np_complex(x).real)
row("complex_imag_part", lambda x: ember.imag(ember.view_as_complex(x)),
    lambda torch: lambda x: torch.imag(torch.view_as_complex(x)),
    [ST.view_as_complex, ST._view_as_real, SH.select], _pairs,
    np_ref=lambda x: _np_complex(x).imag)


def _np_as_strided_scatter(x, src, size, stride, storage_offset=0):
    out = np.array(x, order="C")
    flat = out.reshape(-1)[storage_offset:]
    region = np.lib.stride_tricks.as_strided(flat, size, [s * flat.itemsize for s in stride])
    region[...] = src
    return out


# NOTE: torch's formula gives self the gradient inside the region, zero outside it (its own
# gradcheck fails): ember's is the derivative, so the gradients are compared with numbers only
_TORCH_GRAD_WRONG = "torch's gradient of self is wrong (the region's, not the rest's)"
row("as_strided_scatter", ember.as_strided_scatter, "as_strided_scatter",
    [ST._as_strided_scatter, ST.as_strided_backward, SH.clone],
    lambda m: [S("window", m(3, 4), m(2, 2), (2, 2), (4, 1), 1),
               S("vector", m(6), m(3), (3,), (2,)), S("offset_none", m(2, 3), m(2), (2,), (1,)),
               S("0dim", m(4), m(), (), (), 2)],
    np_ref=_np_as_strided_scatter, dtypes=("float32", "float64", "int64"),
    skips={"test_grad_vs_torch": _TORCH_GRAD_WRONG, "test_gradgrad_vs_torch": _TORCH_GRAD_WRONG})
