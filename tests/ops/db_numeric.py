"""Op table rows for functions of a number's representation (ember._ops.numeric) and for the
counting ops torch records a node for (ember._ops.counting): unique's values, histograms,
weighted bincount. Rows marked ``differentiable=False`` record torch's node whose backward
raises; tests/test_no_derivative.py checks that error against torch's."""
from __future__ import annotations

import numpy as np

import ember
from ember._ops import counting as CN
from ember._ops import numeric as NU

from .op_db import C, S, row

# Away from powers of two, where the mantissa jumps.
_NOT_POWERS = [0.3, 0.7, 1.3, -2.6, 5.0, -0.1]

row("frexp", ember.frexp, "frexp", [NU._frexp_op],
    lambda m: [S("vector", m.arr(_NOT_POWERS)), S("0dim", m.arr(-3.0)),
               S("matrix", m.arr([_NOT_POWERS[:3], _NOT_POWERS[3:]])),
               S("zeros_inf", m.arr([0.0, -0.0, np.inf, 1.5]), no_gradcheck="0 and inf")],
    dtypes=("float32", "float64", "float16"))
row("nextafter", ember.nextafter, "nextafter", [NU.nextafter],
    lambda m: [S("same", m(2, 3), m(2, 3)), S("bcast", m(2, 3), m(3)),
               S("0dim_rhs", m(3), m.arr(5.0)), S("equal", m.arr([1.0, 2.0]), m.arr([1.0, 3.0]),
                                                 no_gradcheck="equal operands")],
    promotion=False)
row("nextafter_", lambda a, b: a.clone().nextafter_(b), None, [NU.nextafter],
    lambda m: [S("same", m(2, 3), m(2, 3))])
row("signbit", ember.signbit, "signbit", [NU.signbit],
    lambda m: [S("vector", m.arr([-1.5, 0.0, 2.0, -0.0])), S("matrix", m(2, 3)),
               S("0dim", m.arr(-3.0))],
    dtypes=("float32", "float64", "float16", "int64"), differentiable=False)
row("heaviside", ember.heaviside, "heaviside", [NU.heaviside],
    lambda m: [S("same", m.arr([-1, 0, 2, 0]), m.arr([5, 6, 7, 8])),
               S("bcast", m.arr([[-1, 0], [0, 3]]), m.arr([4, 5])),
               S("0dim_values", m.arr([0, -2, 0]), m.arr(3))],
    dtypes=("float32", "float64", "int64", "uint8"), differentiable=False)
row("heaviside_", lambda a, b: a.clone().heaviside_(b), None, [NU.heaviside_],
    lambda m: [S("same", m.arr([-1, 0, 2]), m.arr([4, 5, 6]))], differentiable=False)
row("detach_copy", ember.detach_copy, "detach_copy", [NU.detach_copy],
    lambda m: [S("matrix", m(2, 3)), S("0dim", m())], dtypes=("float32", "float64", "int64"),
    differentiable=False)


def _unique_samples(m):
    x = m.arr([2, 1, 2, 3, 1, 1])
    rows = m.arr([[1, 2], [0, 1], [1, 2]])
    return [S("flat", x), S("inverse_counts", x, return_inverse=True, return_counts=True),
            S("unsorted", x, sorted=False), S("dim", rows, dim=0, return_inverse=True),
            S("dim_counts", rows.T.copy(), dim=1, return_counts=True)]


row("unique", ember.unique, "unique", [CN._unique2, CN._unique_dim], _unique_samples,
    dtypes=("float32", "float64", "int64"), differentiable=False)
row("unique_consecutive", ember.unique_consecutive, "unique_consecutive",
    [CN._unique_consecutive],
    lambda m: [S("flat", m.arr([1, 1, 2, 2, 3, 1])),
               S("all", m.arr([1, 1, 2, 1]), return_inverse=True, return_counts=True),
               S("dim", m.arr([[1, 2], [1, 2], [0, 1]]), dim=0, return_counts=True)],
    dtypes=("float32", "float64", "int64"), differentiable=False)
row("bincount_weights", ember.bincount, "bincount", [CN._weighted_bincount],
    lambda m: [S("weights", C(m.arr([0, 1, 1, 3], "int64")), m(4)),
               S("minlength", C(m.arr([2, 0], "int64")), m(2), minlength=5)],
    differentiable=False)
row("histc", ember.histc, "histc", [CN._histc_op],
    lambda m: [S("bins", m(7), 3), S("range", m(6), 4, -1.0, 1.0), S("default", m(5))],
    dtypes=("float32", "float64"), differentiable=False)
row("histogram", ember.histogram, "histogram", [CN._histogram_op],
    lambda m: [S("bins", m(7), 3), S("range", m(6), 4, range=(-1.0, 1.0)),
               S("weight_density", m(5), 3, weight=m(5, low=0.5), density=True)],
    differentiable=False)
def _histogramdd(mod):
    """histogramdd's (hist, (edges, ...)) as one flat tuple."""
    def run(*args, **kwargs):
        hist, edges = mod.histogramdd(*args, **kwargs)
        return (hist, *edges)
    return run


row("histogramdd", _histogramdd(ember), _histogramdd,
    [CN._histogramdd_bin_edges, CN._histogramdd_op],
    lambda m: [S("bins", m(6, 2), [2, 3]),
               S("range_weight", m(5, 2), 2, range=[-1.0, 1.0, -2.0, 2.0], weight=m(5))],
    differentiable=False)
