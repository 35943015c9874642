"""Reductions, scans and sorting refuse bad input with torch's exception type and message.

Each case runs on ember and (in the oracle test) on torch 2.13; the expected messages are
torch's ("torch." becomes "ember." for ember). ``prefix=True`` compares only the message's
start (torch's argument-parser errors go on to list every overload).
"""
from __future__ import annotations

import math

import pytest

import ember
from ember._ops import statistics as ST

from .error_cases import E, error_tests


def _vector_norm(m):
    return ST.vector_norm if m is ember else m.linalg.vector_norm


def _matrix_norm(m):
    return ST.matrix_norm if m is ember else m.linalg.matrix_norm


_EMPTY_ALL = ("{}(): Expected reduction dim to be specified for input.numel() == 0. Specify "
              "the reduction dim with the 'dim' argument.")
_RANGE = "Dimension out of range (expected to be in range of [{}, {}], but got {})"

CASES = [
    # -- dims out of range, repeated dims -----------------------------------------------------
    E("dim_prod", lambda m: m.ones(2, 3).prod(5), IndexError, _RANGE.format(-2, 1, 5)),
    E("dim_nansum", lambda m: m.nansum(m.ones(2, 3), (0, 2)), IndexError,
      _RANGE.format(-2, 1, 2)),
    E("dim_amax", lambda m: m.amax(m.ones(2, 3), -3), IndexError, _RANGE.format(-2, 1, -3)),
    E("dim_argmax", lambda m: m.ones(2, 3).argmax(2), IndexError, _RANGE.format(-2, 1, 2)),
    E("dim_var", lambda m: m.var(m.ones(2, 3), 5), IndexError, _RANGE.format(-2, 1, 5)),
    E("dim_std_mean", lambda m: m.std_mean(m.ones(2, 3), (0, 4)), IndexError,
      _RANGE.format(-2, 1, 4)),
    E("dim_logsumexp", lambda m: m.logsumexp(m.ones(2, 3), 5), IndexError,
      _RANGE.format(-2, 1, 5)),
    E("dim_all", lambda m: m.ones(2, 3).all(2), IndexError, _RANGE.format(-2, 1, 2)),
    E("dim_count_nonzero", lambda m: m.count_nonzero(m.ones(2, 3), 3), IndexError,
      _RANGE.format(-2, 1, 3)),
    E("dim_cumsum", lambda m: m.cumsum(m.ones(2, 3), 5), IndexError, _RANGE.format(-2, 1, 5)),
    E("dim_cummax", lambda m: m.cummax(m.ones(2, 3), 2), IndexError, _RANGE.format(-2, 1, 2)),
    E("dim_sort", lambda m: m.sort(m.ones(2, 3), 5), IndexError, _RANGE.format(-2, 1, 5)),
    E("dim_topk", lambda m: m.ones(2, 3).topk(1, 2), IndexError, _RANGE.format(-2, 1, 2)),
    E("dim_median", lambda m: m.median(m.ones(2, 3), 2), IndexError, _RANGE.format(-2, 1, 2)),
    E("dim_0d_sort", lambda m: m.sort(m.tensor(2.0), 1), IndexError, _RANGE.format(-1, 0, 1)),
    E("dim_0d_prod", lambda m: m.prod(m.tensor(2.0), 1), IndexError, _RANGE.format(-1, 0, 1)),
    E("dim_norm_tuple", lambda m: m.norm(m.ones(2, 3), "fro", 5), IndexError,
      _RANGE.format(-2, 1, 5)),
    E("dims_repeated_amax", lambda m: m.amax(m.ones(2, 3), (0, 0)), RuntimeError,
      "dim 0 appears multiple times in the list of dims"),
    E("dims_repeated_var", lambda m: m.var(m.ones(2, 3), (1, -1)), RuntimeError,
      "dim 1 appears multiple times in the list of dims"),
    E("dims_repeated_count_nonzero", lambda m: m.count_nonzero(m.ones(2, 3), (0, 0)),
      RuntimeError, "dim 0 appears multiple times in the list of dims"),
    # -- reductions over nothing ----------------------------------------------------------------
    E("amax_empty", lambda m: m.amax(m.ones(0, 3)), RuntimeError, _EMPTY_ALL.format("amax")),
    E("amin_empty", lambda m: m.ones(0).amin(), RuntimeError, _EMPTY_ALL.format("amin")),
    E("amax_empty_dim", lambda m: m.amax(m.ones(0, 3), 0), IndexError,
      "amax(): Expected reduction dim 0 to have non-zero size."),
    E("amin_empty_dims", lambda m: m.amin(m.ones(2, 0, 3), (0, 1)), IndexError,
      "amin(): Expected reduction dim 1 to have non-zero size."),
    E("max_empty_dim", lambda m: m.ones(0, 3).max(0), IndexError,
      "max(): Expected reduction dim 0 to have non-zero size."),
    E("min_empty_dim", lambda m: m.min(m.ones(2, 0), -1), IndexError,
      "min(): Expected reduction dim 1 to have non-zero size."),
    E("argmax_empty", lambda m: m.argmax(m.ones(0, 3)), IndexError,
      "argmax(): Expected reduction dim to be specified for input.numel() == 0."),
    E("argmin_empty_dim", lambda m: m.ones(0, 3).argmin(0), IndexError,
      "argmin(): Expected reduction dim 0 to have non-zero size."),
    E("median_empty_dim", lambda m: m.median(m.ones(0, 3), 0), IndexError,
      "median(): Expected reduction dim 0 to have non-zero size."),
    E("mode_empty_dim", lambda m: m.mode(m.ones(0, 3), 0), IndexError,
      "mode(): Expected reduction dim 0 to have non-zero size."),
    E("vector_norm_inf_empty", lambda m: _vector_norm(m)(m.ones(0, 3), math.inf), RuntimeError,
      "linalg.vector_norm cannot compute the inf norm on an empty tensor because the "
      "operation does not have an identity"),
    E("vector_norm_neg_empty_dim", lambda m: _vector_norm(m)(m.ones(0, 3), -1, 0), RuntimeError,
      "linalg.vector_norm cannot compute the -1 norm on the dimension 0because this dimension "
      "is empty and the operation does not have an identity"),
    # -- dtypes ---------------------------------------------------------------------------------
    E("nanmean_int", lambda m: m.nanmean(m.tensor([1, 2])), RuntimeError,
      "nanmean(): expected input to have floating point or complex dtype but got Long"),
    E("var_int", lambda m: m.var(m.tensor([1, 2])), RuntimeError,
      "std and var only support floating point and complex dtypes"),
    E("std_bool", lambda m: m.tensor([True, False]).std(), RuntimeError,
      "std and var only support floating point and complex dtypes"),
    E("var_mean_int", lambda m: m.var_mean(m.tensor([1, 2])), RuntimeError,
      "var_mean only support floating point and complex dtypes"),
    E("std_mean_int", lambda m: m.std_mean(m.tensor([1, 2])), RuntimeError,
      "std_mean only support floating point and complex dtypes"),
    E("argmax_bool", lambda m: m.argmax(m.tensor([True, False])), RuntimeError,
      "argmax(): does not support bool input"),
    E("logcumsumexp_int", lambda m: m.logcumsumexp(m.tensor([1, 2]), 0), NotImplementedError,
      "\"logcumsumexp_out_cpu\" not implemented for 'Long'"),
    E("median_bool", lambda m: m.median(m.tensor([True, False])), NotImplementedError,
      "\"median_cpu\" not implemented for 'Bool'"),
    E("norm_int", lambda m: m.norm(m.tensor([1, 2])), RuntimeError,
      "linalg.vector_norm: Expected a floating point or complex tensor as input. Got Long"),
    E("vector_norm_int_dtype", lambda m: _vector_norm(m)(m.ones(2), dtype=m.int64),
      RuntimeError, "linalg.vector_norm: dtype should be floating point or complex, but got "
      "Long"),
    E("vector_norm_narrowing", lambda m: _vector_norm(m)(m.ones(2, dtype=m.float64),
                                                         dtype=m.float32),
      RuntimeError, "linalg.vector_norm: the dtype of the input (Double) should be convertible "
      "without narrowing to the specified dtype (Float)"),
    E("matrix_norm_int", lambda m: _matrix_norm(m)(m.ones(2, 2, dtype=m.int64)), RuntimeError,
      "linalg.matrix_norm: Expected a floating point or complex tensor as input. Got Long"),
    # -- arguments ------------------------------------------------------------------------------
    E("topk_k_too_big", lambda m: m.topk(m.ones(2, 3), 4), RuntimeError,
      "selected index k out of range"),
    E("topk_0dim_k2", lambda m: m.topk(m.tensor(1.0), 2), RuntimeError,
      "selected index k out of range"),
    E("kthvalue_k0", lambda m: m.kthvalue(m.ones(2, 3), 0), RuntimeError,
      "kthvalue(): selected number k out of range for dimension 1"),
    E("kthvalue_k_too_big", lambda m: m.ones(2, 3).kthvalue(3, 0), RuntimeError,
      "kthvalue(): selected number k out of range for dimension 0"),
    E("matrix_norm_1d", lambda m: _matrix_norm(m)(m.ones(3)), RuntimeError,
      "linalg.matrix_norm: The input tensor A must have at least 2 dimensions."),
    E("matrix_norm_ord", lambda m: _matrix_norm(m)(m.ones(3, 3), 3), RuntimeError,
      "linalg.matrix_norm: Order 3 not supported."),
    E("matrix_norm_ord_str", lambda m: _matrix_norm(m)(m.ones(3, 3), "abc"), RuntimeError,
      "linalg.matrix_norm: Order abc not supported."),
    E("matrix_norm_dims_same", lambda m: _matrix_norm(m)(m.ones(2, 3), 1, (0, 0)), RuntimeError,
      "linalg.matrix_norm: dims must be different. Got (0, 0)"),
    E("matrix_norm_dim_one", lambda m: _matrix_norm(m)(m.ones(2, 3), 1, (0,)), RuntimeError,
      "linalg.matrix_norm: dim must be a 2-tuple. Got 0"),
    E("norm_fro_3_dims", lambda m: m.norm(m.ones(2, 3, 4), "fro", (0, 1, 2)), RuntimeError,
      "linalg.matrix_norm: dim must be a 2-tuple. Got 0 1 2"),
    E("vector_norm_str_ord", lambda m: _vector_norm(m)(m.ones(3), "fro"), TypeError,
      "linalg_vector_norm(): argument 'ord' (position 2) must be Number, not str"),
    E("max_dim_tuple", lambda m: m.max(m.ones(2, 3), (0, 1)), TypeError,
      "max() received an invalid combination of arguments - got (Tensor, tuple), but expected "
      "one of:", prefix=True),
    E("prod_dim_tuple", lambda m: m.prod(m.ones(2, 3), (0, 1)), TypeError,
      "prod() received an invalid combination of arguments - got (Tensor, tuple), but expected "
      "one of:", prefix=True),
]


test_case_ids_are_unique, test_ember_error, test_torch_error = error_tests(CASES)


def test_var_degrees_of_freedom_warning():
    """var() with correction >= the reduced size warns as torch does (and returns NaN)."""
    with pytest.warns(UserWarning, match=r"var\(\): degrees of freedom is <= 0"):
        out = ember.var(ember.ones(1))
    assert math.isnan(out.item())


def test_return_type_repr():
    """Named-tuple results print as torch.return_types do, with ember's name."""
    x = ember.tensor([[1.0, 3.0], [2.0, 0.0]])
    text = repr(ember.sort(x, 1))
    assert text == ("ember.return_types.sort(\nvalues=tensor([[1., 3.],\n        [0., 2.]]),\n"
                    "indices=tensor([[0, 1],\n        [1, 0]]))")
    assert str(ember.max(x, 0)) == ("ember.return_types.max(\nvalues=tensor([2., 3.]),\n"
                                    "indices=tensor([1, 0]))")
    values, indices = ember.cummax(x, 1)
    assert ember.cummax(x, 1)._fields == ("values", "indices")
    assert indices.tolist() == [[0, 1], [0, 0]] and values.tolist() == [[1.0, 3.0], [2.0, 2.0]]
    assert type(ember.topk(x, 1)).__name__ == "topk"
