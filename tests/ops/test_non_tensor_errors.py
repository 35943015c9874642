"""A number, string or list where an op takes a Tensor: torch's TypeError, word for word.

ember's generated op paths read tensor attributes without testing types first (the usual
call pays for no test); such a read failing on a non-tensor must still give the error of
torch's argument parser, never an AttributeError out of ember's internals.
"""
from __future__ import annotations

import pytest

import ember
from .error_cases import E, error_tests
from tests.oracle import torch_or_skip


def _m(m):
    return m.ones(2, 2)


def _must(name, param, position, typename):
    return f"{name}(): argument '{param}' (position {position}) must be Tensor, not {typename}"


def _element(index, typename):
    return f"expected Tensor as element {index} in argument 0, but got {typename}"


CASES = [
    E("mm-int", lambda m: m.mm(_m(m), 3), TypeError, _must("mm", "mat2", 2, "int")),
    E("mm-int-first", lambda m: m.mm(3, _m(m)), TypeError, _must("mm", "input", 1, "int")),
    E("mm-method", lambda m: _m(m).mm(3), TypeError, _must("mm", "mat2", 1, "int")),
    E("mm-float", lambda m: m.mm(_m(m), 2.5), TypeError, _must("mm", "mat2", 2, "float")),
    E("matmul-int", lambda m: m.matmul(_m(m), 3), TypeError,
      _must("matmul", "other", 2, "int")),
    E("bmm-int", lambda m: m.bmm(m.ones(2, 2, 2), 3), TypeError, _must("bmm", "mat2", 2, "int")),
    E("add-str", lambda m: m.add(_m(m), "x"), TypeError, _must("add", "other", 2, "str")),
    E("add-method-str", lambda m: _m(m).add("x"), TypeError, _must("add", "other", 1, "str")),
    E("mul-str", lambda m: m.mul(_m(m), "x"), TypeError, _must("mul", "other", 2, "str")),
    E("sub-list", lambda m: m.sub(_m(m), [1]), TypeError, _must("sub", "other", 2, "list")),
    E("cat-ints", lambda m: m.cat([1, 2]), TypeError, _element(0, "int")),
    E("cat-second", lambda m: m.cat([_m(m), 1]), TypeError, _element(1, "int")),
    E("cat-fifth", lambda m: m.cat([_m(m)] * 4 + [1]), TypeError, _element(4, "int")),
    E("stack-second", lambda m: m.stack([_m(m), 1]), TypeError, _element(1, "int")),
    E("stack-fifth-str", lambda m: m.stack([_m(m)] * 4 + ["a"]), TypeError, _element(4, "str")),
]

test_case_ids_are_unique, test_ember_error, test_torch_error = error_tests(CASES)


@pytest.mark.parametrize("lib", ["torch", "ember"])
def test_aten_operator_refuses_a_number_with_a_runtime_error(lib):
    # torch's operators match arguments against their schemas: a RuntimeError naming mat2
    m = torch_or_skip() if lib == "torch" else ember
    with pytest.raises(RuntimeError, match="'mat2'"):
        m.ops.aten.mm(_m(m), 3)


def test_numbers_still_go_where_torch_takes_them():
    assert ember.add(_m(ember), 3).tolist() == [[4.0, 4.0], [4.0, 4.0]]
    assert ember.mm(_m(ember), _m(ember)).tolist() == [[2.0, 2.0], [2.0, 2.0]]
