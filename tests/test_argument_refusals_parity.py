"""What torch raises for arguments it refuses, type and message, against ember's: forward-mode
AD through ops whose derivative torch leaves out (floor_divide, heaviside, remainder of a
number, the histograms, bincount's weights), isin's refused dtypes (bool and complex, of a
tensor or a number, elements checked first) and lerp's argument forms (its parser's listing
for a weight or end of another type, the dtypes of end and weight, shapes that do not
broadcast into self, a complex weight of a real tensor). Each body runs on PyTorch and on
ember (``oracle.same``); the tests skip without torch.
"""
from __future__ import annotations

import pytest
from oracle import same

_FORWARD_AD = {
    "floor_divide": lambda t, d, x: t.floor_divide(d, 2),
    "floor_divide_other": lambda t, d, x: t.floor_divide(x, d),
    "floordiv_operator": lambda t, d, x: 3 // d,
    "floor_divide_": lambda t, d, x: d.clone().floor_divide_(x),
    "ifloordiv": lambda t, d, x: d.clone().__ifloordiv__(2),
    "remainder_of_number": lambda t, d, x: t.remainder(3.0, d),
    "heaviside": lambda t, d, x: t.heaviside(d, x),
    "heaviside_values": lambda t, d, x: t.heaviside(x, d),
    "heaviside_": lambda t, d, x: d.clone().heaviside_(x),
    "histogram": lambda t, d, x: t.histogram(d, 3)[0],
    "bincount_weights": lambda t, d, x: t.bincount(t.tensor([0, 1]), weights=d),
    "detach_copy": lambda t, d, x: t.detach_copy(d),
    # (what torch differentiates: the floor and trunc divisions' zero tangents)
    "div_floor": lambda t, d, x: t.div(d, x, rounding_mode="floor"),
    "remainder": lambda t, d, x: t.remainder(d, x),
}


@pytest.mark.parametrize("name", sorted(_FORWARD_AD))
def test_forward_ad_without_a_derivative(name):
    def body(t):
        fwAD = t.autograd.forward_ad
        x = t.tensor([1.5, -2.0])
        with fwAD.dual_level():
            d = fwAD.make_dual(t.tensor([2.5, 3.0]), t.ones(2))
            return fwAD.unpack_dual(_FORWARD_AD[name](t, d, x))
    same(body)


_ISIN = {
    "bool_elements": lambda t: t.isin(t.tensor([True]), t.tensor([1])),
    "bool_test_elements": lambda t: t.isin(t.tensor([1]), t.tensor([True])),
    "both_bool": lambda t: t.isin(t.tensor([True]), t.tensor([True])),
    "complex_test_elements": lambda t: t.isin(t.tensor([1.0]), t.tensor([1j])),
    "complex_elements_first": lambda t: t.isin(t.tensor([1j]), t.tensor([True])),
    "bool_first": lambda t: t.isin(t.tensor([True]), t.tensor([1j])),
    "complex128": lambda t: t.isin(t.tensor([1j], dtype=t.complex128), t.tensor([1.0])),
    "bool_number": lambda t: t.isin(True, t.tensor([1])),
    "complex_number": lambda t: t.isin(t.tensor([1]), 1j),
    "number_of_bool_tensor": lambda t: t.isin(1, t.tensor([True])),
    "mixed_dtypes": lambda t: t.isin(t.tensor([1, 2, 3]), t.tensor([1.0, 2.0])),
    "half_and_float": lambda t: t.isin(t.tensor([1.0], dtype=t.float16), t.tensor([1.0])),
}


@pytest.mark.parametrize("name", sorted(_ISIN))
def test_isin_dtypes(name):
    same(lambda t: _ISIN[name](t))


_LERP = {
    "str_weight": lambda t, a, b: a.clone().lerp_(b, "x"),
    "none_weight": lambda t, a, b: a.clone().lerp_(b, None),
    "none_weight_method": lambda t, a, b: a.lerp(b, None),
    "none_weight_function": lambda t, a, b: t.lerp(a, b, None),
    "str_weight_function": lambda t, a, b: t.lerp(a, b, "x"),
    "keyword_weight": lambda t, a, b: a.clone().lerp_(b, weight="x"),
    "number_end": lambda t, a, b: a.clone().lerp_(2.0, 0.5),
    "number_end_method": lambda t, a, b: a.lerp(2.0, 0.5),
    "number_end_function": lambda t, a, b: t.lerp(a, 2.0, 0.5),
    "number_input_function": lambda t, a, b: t.lerp(2.0, a, 0.5),
    "numpy_weight": lambda t, a, b: a.clone().lerp_(b, __import__("numpy").float32(0.25)),
    "weight_shape": lambda t, a, b: a.clone().lerp_(b, t.tensor([[0.5, 0.5, 0.5]])),
    "weight_broadcast": lambda t, a, b: a.clone().lerp_(b, t.tensor([0.5])),
    "end_shape": lambda t, a, b: a.clone().lerp_(b[None], 0.5),
    "end_dtype": lambda t, a, b: a.clone().lerp_(b.double(), 0.5),
    "weight_dtype": lambda t, a, b: a.clone().lerp_(b, t.full((3,), 0.5, dtype=t.float64)),
    "weight_dtype_function": lambda t, a, b: t.lerp(a, b, t.full((3,), 0.5, dtype=t.float64)),
    "weight_0d_dtype": lambda t, a, b: a.clone().lerp_(b, t.tensor(0.5, dtype=t.float64)),
    "integer_weight_tensor": lambda t, a, b: a.clone().lerp_(b, t.tensor([1, 1, 1])),
    "integer_tensors": lambda t, a, b: t.tensor([1, 2]).lerp_(t.tensor([3, 4]), 0.5),
    "complex_weight": lambda t, a, b: a.clone().lerp_(b, 0.5j),
    "complex_weight_double": lambda t, a, b: a.double().lerp_(b.double(), 2j),
    "complex_weight_real_valued": lambda t, a, b: t.lerp(a, b, 1 + 0j),
    "complex_tensors": lambda t, a, b: (a * 1j).lerp_(b * 1j, 0.5),
    "complex_tensors_real_weight": lambda t, a, b: (a * 1j).lerp_(b * 1j, t.full((3,), 0.5)),
    "complex_end_dtype": lambda t, a, b: (a.double() * 1j).lerp(b * 1j, 0.5),
    "bool_weight": lambda t, a, b: a.clone().lerp_(b, True),
    "half_end_dtype": lambda t, a, b: a.half().lerp_(b, 0.5),
    "half_weight_dtype": lambda t, a, b: a.half().lerp(b.half(), t.full((3,), 0.5)),
}


@pytest.mark.parametrize("name", sorted(_LERP))
def test_lerp_arguments(name):
    same(lambda t: _LERP[name](t, t.tensor([1.0, 2.0, 3.0]), t.tensor([4.0, 5.0, 6.0])))


# the scatter family given a number, list or string where its parser wants a tensor (or the
# reverse), and failing calls with the keywords each takes (those must keep their own error)
_SCATTER_FAMILY = {
    "scatter_add_number": lambda t, x, i: x.scatter_add_(0, i, 1.0),
    "scatter_add_out_of_place": lambda t, x, i: x.scatter_add(0, i, 1.0),
    "scatter_add_function": lambda t, x, i: t.scatter_add(x, 0, i, 1.0),
    "scatter_list_index": lambda t, x, i: x.scatter_(0, [0], 1.0),
    "scatter_reduce_string": lambda t, x, i: x.scatter_(0, i, 1.0, reduce=3),
    "scatter_reduce_number_src": lambda t, x, i: x.scatter_reduce_(0, i, 2.0, "sum"),
    "scatter_reduce_bad_include_self": lambda t, x, i: x.scatter_reduce(
        0, i, t.ones(1), "sum", include_self=t.ones(2)),
    "index_copy_list_index": lambda t, x, i: x.index_copy_(0, [0], t.ones(1)),
    "index_copy_number": lambda t, x, i: t.index_copy(x, 0, i, 2.0),
    "index_fill_string": lambda t, x, i: x.index_fill(0, i, "a"),
    "index_fill_list": lambda t, x, i: x.index_fill_(0, [0], 1.0),
    "masked_scatter_number": lambda t, x, i: x.masked_scatter_(x > 0, 1.0),
    "masked_scatter_function": lambda t, x, i: t.masked_scatter(x, x > 0, [1.0]),
    "take_along_dim_list": lambda t, x, i: x.take_along_dim([0], 0),
    # (valid keywords on calls that fail for another reason: ember's check stands)
    "scatter_reduce_shape": lambda t, x, i: x.scatter_reduce_(0, i, t.ones(2, 2), "sum",
                                                             include_self=False),
    "scatter_reduce_keyword_shape": lambda t, x, i: x.scatter_(0, t.tensor([[0]]), 2.0,
                                                              reduce="add"),
    "take_along_dim_keyword": lambda t, x, i: t.take_along_dim(x, t.ones(1), dim=0),
}


@pytest.mark.parametrize("name", sorted(_SCATTER_FAMILY))
def test_scatter_family_argument_errors(name):
    def body(t):
        return _SCATTER_FAMILY[name](t, t.ones(3), t.tensor([0]))
    assert same(body).error is not None
