"""Op table rows for sparse COO tensors (ember._ops.sparse). The table compares dense
tensors, so each row builds its sparse tensor inside: values (and a dense operand) in, a dense
result out, through the sparse ops whose nodes and formulas the row checks. The entry
positions repeat one position and are out of order, so coalescing is exercised."""
from __future__ import annotations

import warnings

import numpy as np

import ember
from ember._ops import reduction as RD
from ember._ops import sparse as SP

from .op_db import C, S, row

_IDX = [[1, 0, 1, 2, 1], [2, 2, 0, 1, 2]]  # (1, 2) twice, not sorted
_IDX2 = [[0, 1, 2], [0, 0, 1]]
_DTYPES = ("float32", "float64")
_NO_FORWARD_AD = "sparse ops have no forward derivatives in ember"
_SKIPS = {"test_forward_ad": _NO_FORWARD_AD, "test_batched_grad": "no batching rules for "
          "sparse ops in ember", "test_forward_numpy": "no NumPy reference",
          "test_device": "ember's sparse tensors are on the CPU only"}


def _sparse(lib, values, idx=_IDX, size=(3, 4)):
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Sparse invariant checks")
        return lib.sparse_coo_tensor(lib.tensor(idx), values, size)


def _lib(x):
    return ember if isinstance(x, ember.Tensor) else __import__("torch")


def _sparse_mm(v, d):
    lib = _lib(v)
    return lib.sparse.mm(_sparse(lib, v), d)


def _mm(v, d):
    return _lib(v).mm(_sparse(_lib(v), v), d)


def _dense_mm(d, v):
    return d @ _sparse(_lib(v), v)


def _to_dense(v):
    return _sparse(_lib(v), v).to_dense()


def _coalesced_values(v):
    return _sparse(_lib(v), v).coalesce().values()


def _round_trip(x):
    return x.to_sparse().to_dense()


def _round_trip_dim(x):
    return x.to_sparse(1).to_dense()


def _add(v, w):
    lib = _lib(v)
    return lib.add(_sparse(lib, v), _sparse(lib, w, _IDX2), alpha=2).to_dense()


def _dense_add(d, v):
    return d + _sparse(_lib(v), v)


def _scale(v):
    return (_sparse(_lib(v), v) * 2.5).to_dense()


def _sum_all(v):
    lib = _lib(v)
    return lib.sparse.sum(_sparse(lib, v))


def _sum_method(v):
    return _sparse(_lib(v), v).sum()


def _sum_dim(v):
    lib = _lib(v)
    return lib.sparse.sum(_sparse(lib, v), 1).to_dense()


def _sub(v, w):
    lib = _lib(v)
    return lib.sub(_sparse(lib, v), _sparse(lib, w, _IDX2), alpha=1.5).to_dense()


def _neg(v):
    return (-_sparse(_lib(v), v)).to_dense()


def _zero(v):
    # (in place on a non-leaf, recorded; not on the constructor's result, whose node saves it)
    return (_sparse(_lib(v), v) * 1.0).zero_().to_dense()


def _transpose(v):
    return _sparse(_lib(v), v).transpose(1, 0).to_dense()


def _divide(v):
    return (_sparse(_lib(v), v) / 4.0).to_dense()


def _sum_every_dim(v):
    return _sparse(_lib(v), v).sum((0, 1))


def _times_dense(v, d):
    return (_sparse(_lib(v), v) * d).to_dense()


def _mv(v, x):
    return _lib(v).mv(_sparse(_lib(v), v), x)


def _abs(v):
    return _sparse(_lib(v), v).abs().to_dense()


def _relu(v):
    return _lib(v).relu(_sparse(_lib(v), v)).to_dense()


def _t(v):
    return _sparse(_lib(v), v).t().to_dense()


def _clone(v):
    return _sparse(_lib(v), v).clone().to_dense()


def _dense_sub(d, v):
    return d - _sparse(_lib(v), v)


def _sqrt(v):
    return _sparse(_lib(v), v).sqrt().to_dense()


def _rows(name, fn, opdefs, samples, **kw):
    row(name, fn, None, opdefs, samples, dtypes=_DTYPES, public=False,
        skips={**_SKIPS, **kw.pop("skips", {})}, **kw)


_rows("sparse.mm", _sparse_mm, [SP._make, SP._sparse_addmm, SP._entries, SP._mask],
      lambda m: [S("x", m(5), m(4, 2))])
_rows("sparse_dense_mm", _mm, [SP._make, SP._sparse_dense_mm, SP._t],
      lambda m: [S("x", m(5), m(4, 2))])
_rows("dense_sparse_mm", _dense_mm, [SP._make, SP._dense_sparse_mm],
      lambda m: [S("x", m(2, 3), m(5))])
_rows("sparse_to_dense", _to_dense, [SP._make, SP._to_dense, SP._mask, SP._entries],
      lambda m: [S("x", m(5))])
_rows("sparse_coalesce_values", _coalesced_values, [SP._make, SP._coalesce, SP._values],
      lambda m: [S("x", m(5))])
# (no zeros in x: a finite difference there makes an entry the gradient, by torch's
# masked to_dense, does not see)
_rows("to_sparse", _round_trip, [SP._to_sparse, SP._to_dense], lambda m: [S("x", m(2, 3))])
_rows("to_sparse_dim", _round_trip_dim, [SP._to_sparse_dim, SP._to_dense],
      lambda m: [S("x", m(3, 2))])
_rows("sparse_add", _add, [SP._make, SP._sparse_add], lambda m: [S("x", m(5), m(3))])
_rows("dense_sparse_add", _dense_add, [SP._make, SP._dense_sparse_add],
      lambda m: [S("x", m(3, 4), m(5))])
_rows("sparse_mul", _scale, [SP._make, SP._scale], lambda m: [S("x", m(5))])
# (torch.sparse.sum sums the coalesced values, through their nodes; s.sum() the values as
# stored, in one node)
_rows("sparse.sum", _sum_all, [SP._make, SP._coalesce, SP._values, RD.sum_all],
      lambda m: [S("x", m(5))])
_rows("sparse_sum_method", _sum_method, [SP._make, SP._sparse_sum_all], lambda m: [S("x", m(5))])
_rows("sparse.sum_dim", _sum_dim, [SP._make, SP._sparse_sum_dims, SP._sparse_sum_backward],
      lambda m: [S("x", m(5))], gradgrad=False)
_rows("sparse_t", _t, [SP._make, SP._t], lambda m: [S("x", m(5))])
_rows("sparse_sub", _sub, [SP._make, SP._sparse_sub], lambda m: [S("x", m(5), m(3))])
_rows("sparse_neg", _neg, [SP._make, SP._neg], lambda m: [S("x", m(5))])
_rows("sparse_zero_", _zero, [SP._make, SP._scale, SP._zero], lambda m: [S("x", m(5))])
_rows("sparse_transpose", _transpose, [SP._make, SP._transpose], lambda m: [S("x", m(5))])
_rows("sparse_div", _divide, [SP._make, SP._divide], lambda m: [S("x", m(5))])
_rows("sparse_sum_every_dim", _sum_every_dim, [SP._make, SP._sum_dim], lambda m: [S("x", m(5))])
# (the dense operand a constant: its gradient is sparse, which the table does not compare;
# tests/test_sparse.py compares it with torch's)
_rows("sparse_mul_dense", _times_dense, [SP._make, SP._times],
      lambda m: [S("x", m(5), C(np.arange(12.0).reshape(3, 4) - 5.5))])
_rows("sparse_mv", _mv, [SP._make, SP._sparse_mv], lambda m: [S("x", m(5), m(4))])
_rows("sparse_abs", _abs, [SP._make, SP._abs, SP._slope_times], lambda m: [S("x", m(5))])
_rows("sparse_relu", _relu, [SP._make, SP._relu, SP._slope_times], lambda m: [S("x", m(5))])
_rows("sparse_clone", _clone, [SP._make, SP._clone], lambda m: [S("x", m(5))])
_rows("dense_sparse_sub", _dense_sub, [SP._make, SP._dense_sparse_sub],
      lambda m: [S("x", m(3, 4), m(5))])
# (torch's sqrt of a sparse tensor has no backward: its formula divides by a sparse tensor)
_rows("sparse_sqrt", _sqrt, [SP._make, SP._sqrt], lambda m: [S("x", np.abs(m(5)) + 0.5)],
      differentiable=False)


def _sparse_mask(x, v):
    return x.sparse_mask(_sparse(_lib(x), v)).to_dense()


def _sparse_mask_of_sparse(x, v):
    return x.to_sparse().sparse_mask(_sparse(_lib(x), v)).to_dense()


def _dense_mul_(d, v):
    return (d * 1.0).mul_(_sparse(_lib(v), v))


def _softmax(v):
    return _lib(v).sparse.softmax(_sparse(_lib(v), v), 1).to_dense()


def _log_softmax(v):
    return _lib(v).sparse.log_softmax(_sparse(_lib(v), v), 0).to_dense()


def _sparse_addmm(m, v, d):
    return _lib(v).sparse.addmm(m, _sparse(_lib(v), v), d, beta=0.5, alpha=2.0)


# (the mask's values are never read: a constant)
# (torch has no second derivative here: its backward's _sparse_mask_projection has none;
# tests/test_sparse.py checks that both refuse it)
_rows("sparse_mask", _sparse_mask, [SP._make, SP._mask, SP._mask_projection, SP._to_dense],
      lambda m: [S("x", m(3, 4), C(np.arange(5.0) + 1))], gradgrad=False)
_rows("sparse_mask_of_sparse", _sparse_mask_of_sparse,
      [SP._make, SP._to_sparse, SP._mask_of_sparse, SP._mask_projection, SP._coalesce,
       SP._to_dense],
      lambda m: [S("x", m(3, 4), C(np.arange(5.0) + 1))], gradgrad=False)
# (the dense operand a constant: torch gives it a sparse gradient, see sparse_mul_dense)
_rows("dense_mul_sparse_", _dense_mul_, [SP._make, SP._dense_times_sparse],
      lambda m: [S("x", C(np.arange(12.0).reshape(3, 4) - 5.5), m(5))])
# (the gradient of a sparse tensor's values is a constant under create_graph, in torch too)
_rows("sparse.softmax", _softmax, [SP._make, SP._softmax, SP._softmax_backward],
      lambda m: [S("x", m(5))], gradgrad=False)
_rows("sparse.log_softmax", _log_softmax, [SP._make, SP._log_softmax, SP._softmax_backward],
      lambda m: [S("x", m(5))], gradgrad=False)
_rows("sparse.addmm", _sparse_addmm, [SP._make, SP._sparse_addmm_scaled, SP._entries, SP._mask],
      lambda m: [S("x", m(3, 2), m(5), m(4, 2))])
