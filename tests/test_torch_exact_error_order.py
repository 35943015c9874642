"""Errors whose text depends on which check torch makes first: a lone integer or slice
indexing a 0-dim tensor (an integer other than 0 is out of bounds of a size of 0 first), the
operand order in ``rsub``'s broadcast error, an inference tensor a recorded call would save.

Each body runs on PyTorch 2.13 and on ember (``oracle.same``); the tests skip without torch.
"""
from __future__ import annotations

import numpy as np
import pytest
from oracle import same

_ZERO_DIM_KEYS = {
    "slice": slice(None), "slice_step": slice(None, None, 2), "range": slice(0, 1),
    "zero": 0, "one": 1, "minus_one": -1, "numpy_zero": np.int64(0), "numpy_two": np.int32(2),
    "list": [0], "index_tensor": "tensor([0])", "int_tensor_0d": "tensor(0)",
    "tuple_slice": (slice(None),), "tuple_int": (0,), "none_slice": (None, slice(None)),
    "ellipsis_slice": (Ellipsis, slice(None)), "true": True, "ellipsis": Ellipsis,
}


def _key(t, key):
    return t.tensor(eval(key[len("tensor"):])) if isinstance(key, str) else key


@pytest.mark.parametrize("name", sorted(_ZERO_DIM_KEYS))
def test_reading_a_0dim_tensor_with_one_index(name):
    same(lambda t: t.tensor(1.5, requires_grad=True)[_key(t, _ZERO_DIM_KEYS[name])])


@pytest.mark.parametrize("name", sorted(_ZERO_DIM_KEYS))
def test_writing_a_0dim_tensor_with_one_index(name):
    def body(t):
        x = t.tensor(1.5)
        x[_key(t, _ZERO_DIM_KEYS[name])] = 2.
        return x
    same(body)


@pytest.mark.parametrize("alpha", [1, 2])
def test_rsub_names_the_operands_other_first(alpha):
    same(lambda t: t.rsub(t.zeros(2, 6), t.zeros(3, 3, requires_grad=True), alpha=alpha))
    same(lambda t: t.rsub(t.zeros(3, 3), t.zeros(2, 6), alpha=alpha))


_INFERENCE_OPERAND = {
    "pow_": lambda x, i: x.pow_(i), "mul_": lambda x, i: x.mul_(i),
    "atan2_": lambda x, i: x.atan2_(i), "div_": lambda x, i: x.div_(i),
    "add_": lambda x, i: x.add_(i), "sub_": lambda x, i: x.sub_(i),
    "copy_": lambda x, i: x.copy_(i), "mul": lambda x, i: x.mul(i),
    "pow": lambda x, i: x.pow(i), "rmul": lambda x, i: i * x, "add": lambda x, i: x + i,
}


@pytest.mark.parametrize("shape", [(1, 3, 3), (), (2,)])
@pytest.mark.parametrize("name", sorted(_INFERENCE_OPERAND))
def test_an_inference_operand_to_save_is_refused_before_the_kernel(name, shape):
    """torch saves the node's inputs before its kernel checks shapes or writes: an inference
    tensor that would be saved is refused first, and self is left as it was."""
    def body(t):
        x = t.tensor([2., 3.], requires_grad=True).clone()
        with t.inference_mode():
            i = t.ones(shape)
        try:
            _INFERENCE_OPERAND[name](x, i)
        except RuntimeError as e:
            return str(e), x, x._version
        return x, x._version
    same(body)
