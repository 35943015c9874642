"""NumPy arrays as operands of tensor operators and functions, against torch.

torch's operators return NotImplemented for an ndarray (``==`` excepted), so NumPy's reflected
operator computes the result from the tensor's ``__array__`` and wraps it back with
``__array_wrap__``: NumPy's dtype promotion, no graph, and a tensor requiring grad refuses.
(torch's ``__array_wrap__`` takes the array alone, so NumPy 2 warns about it; ember's takes
NumPy's arguments: warnings are not compared.)
"""
from __future__ import annotations

import operator

import numpy as np
import pytest

from oracle import same

OPERATORS = {name: getattr(operator, name) for name in (
    "add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "and_", "or_", "xor",
    "lshift", "rshift", "lt", "le", "gt", "ge", "eq", "ne")}
INTEGRAL = {"and_", "or_", "xor", "lshift", "rshift"}


def _operands(torch, name, requires_grad):
    if name in INTEGRAL:
        return torch.full((2, 2), 3), np.full((2, 2), 2, np.int64)
    x = torch.full((2, 2), 3.0, requires_grad=requires_grad)
    return x, np.full((2, 2), 2.0)


@pytest.mark.parametrize("requires_grad", [False, True])
@pytest.mark.parametrize("name", OPERATORS)
def test_operator_both_sides(name, requires_grad):
    fn = OPERATORS[name]

    def array_right(torch):
        x, a = _operands(torch, name, requires_grad)
        return fn(x, a)

    def array_left(torch):
        x, a = _operands(torch, name, requires_grad)
        return fn(a, x)
    same(array_right, check_warnings=False)
    same(array_left, check_warnings=False)


ARRAYS = {
    "float64": lambda: np.array([[0.1, 2.0], [3.0, -4.0]]),
    "int64": lambda: np.array([[1, 2], [3, 4]]),
    "int32": lambda: np.array([[1, 2], [3, 4]], np.int32),
    "bool": lambda: np.array([[True, False], [True, True]]),
    "float16": lambda: np.array([[0.5, 2.0], [3.0, 4.0]], np.float16),
    "complex64": lambda: np.array([[1 + 1j, 2], [3, 4j]], np.complex64),
    "0-d": lambda: np.array(0.1),
    "strided": lambda: np.arange(16.0).reshape(4, 4)[::2, ::-2],
    "np.float64": lambda: np.float64(0.1),
    "np.float32": lambda: np.float32(0.1),
    "np.int64": lambda: np.int64(3),
}


@pytest.mark.parametrize("kind", ARRAYS)
def test_dtypes_and_layouts(kind):
    def body(torch):
        x = torch.tensor([[0.1, 1.0], [2.0, 3.0]])
        a = ARRAYS[kind]()
        return x + a, x * a, x == a, x.bool() & np.asarray(a != 0), a / x
    same(body, check_warnings=False)


FUNCTIONS = {
    "torch.add": lambda torch, x, a: torch.add(x, a),
    "torch.add(a, x)": lambda torch, x, a: torch.add(a, x),
    "x.add": lambda torch, x, a: x.add(a),
    "x.mul": lambda torch, x, a: x.mul(a),
    "x.sub": lambda torch, x, a: x.sub(a),
    "torch.mul": lambda torch, x, a: torch.mul(x, a),
    "torch.maximum": lambda torch, x, a: torch.maximum(x, a),
    "torch.maximum(a, x)": lambda torch, x, a: torch.maximum(a, x),
    "x.maximum": lambda torch, x, a: x.maximum(a),
    "torch.matmul": lambda torch, x, a: torch.matmul(x, a),
    "torch.matmul(a, x)": lambda torch, x, a: torch.matmul(a, x),
    "x.matmul": lambda torch, x, a: x.matmul(a),
}


@pytest.mark.parametrize("call", FUNCTIONS)
def test_function_forms_refuse(call):
    def body(torch):
        return FUNCTIONS[call](torch, torch.ones(2, 2), np.ones((2, 2)))
    same(body)


def test_augmented_assignment_rebinds():
    def body(torch):
        x = torch.ones(2, 2)
        y = x
        y += np.full((2, 2), 2.0)
        z = torch.ones(2, 2)
        return y, x, y is x, z.__iadd__(np.ones(2)) is NotImplemented, z.__eq__(np.array(1.0))
    same(body, check_warnings=False)


def test_grad_tensor_refuses_and_number_records():
    def body(torch):
        x = torch.ones(2, requires_grad=True)
        y = x * np.float64(3.0)  # a NumPy scalar is a number: recorded
        y.sum().backward()
        out = [y, x.grad]
        try:
            x += np.ones(2)
        except RuntimeError as e:
            out.append(str(e))
        return out
    same(body, check_warnings=False)


def test_meta_tensor_refuses():
    def body(torch):
        return torch.ones(2, device="meta") + np.ones(2)
    same(body, check_warnings=False)


def test_ufunc_on_tensor_wraps():
    def body(torch):
        x = torch.tensor([0.5, 2.0])
        return np.sin(x), np.greater(x, 1.0), np.add(x, np.ones(2, np.float32))
    same(body, check_warnings=False)


IN_PLACE_AND_METHODS = {
    "x.div": lambda x, a: x.div(a),
    "x.add_": lambda x, a: x.add_(a),
    "x.mul_": lambda x, a: x.mul_(a),
    "x.sub_": lambda x, a: x.sub_(a),
    "x.div_": lambda x, a: x.div_(a),
}


@pytest.mark.parametrize("call", IN_PLACE_AND_METHODS)
def test_methods_count_positions_after_self(call):
    def body(torch):
        return IN_PLACE_AND_METHODS[call](torch.ones(2), np.ones(2))
    same(body)


WHERE = {
    "array other": lambda torch, c, x, a: torch.where(c, x, a),
    "array input": lambda torch, c, x, a: torch.where(c, a, x),
    "array and number": lambda torch, c, x, a: torch.where(c, a, 1.0),
    "number and array": lambda torch, c, x, a: torch.where(c, 1, a),
    "method": lambda torch, c, x, a: x.where(c, a),
    "numbers still work": lambda torch, c, x, a: (torch.where(c, x, 2.0), x.where(c, 2)),
}


@pytest.mark.parametrize("call", WHERE)
def test_where_refuses_arrays(call):
    def body(torch):
        x = torch.tensor([1.0, -1.0])
        return WHERE[call](torch, x > 0, x, np.ones(2))
    same(body)


NUMPY_BOOL = {
    "bool + np.True_": lambda torch: torch.ones(2).bool() + np.True_,
    "int32 + np.True_": lambda torch: torch.ones(2, dtype=torch.int32) + np.True_,
    "int64 * np.False_": lambda torch: torch.ones(2).long() * np.False_,
    "bool & np.True_": lambda torch: torch.ones(2).bool() & np.True_,
    "torch.add(bool, np.True_)": lambda torch: torch.add(torch.ones(2).bool(), np.True_),
    "bool.add_(np.True_)": lambda torch: torch.ones(2).bool().add_(np.True_),
    "bool == np.True_": lambda torch: torch.ones(2).bool() == np.True_,
}


@pytest.mark.parametrize("call", NUMPY_BOOL)
def test_numpy_bool_is_a_float_number(call):
    same(NUMPY_BOOL[call])
