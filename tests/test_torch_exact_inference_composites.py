"""Calls on inference tensors only, outside inference mode: torch runs its kernel with no
autograd layer, so what its composite kernel does to the fresh result shows: stack is cat then
a view, repeat (and tile) return a view of a result written once, and scatter, index_copy,
index_fill, masked_fill and nan_to_num write theirs in place once or twice (``_version``).

Each body runs on PyTorch 2.13 and on ember (``oracle.same``); the tests skip when torch is
not installed.
"""
from __future__ import annotations

import math

import pytest
from oracle import same

_CALLS = {
    "stack": lambda t, x, a: t.stack([x, x]),
    "stack_last": lambda t, x, a: t.stack([x, x], -1),
    "repeat": lambda t, x, a: x.repeat(2, *[1] * x.dim()),
    "tile": lambda t, x, a: x.tile((2,)),
    "scatter": lambda t, x, a: x.scatter(0, a["zeros"], 1.0),
    "scatter_add": lambda t, x, a: x.scatter_add(0, a["zeros"], x),
    "index_copy": lambda t, x, a: x.index_copy(0, a["first"], a["src"]),
    "index_fill": lambda t, x, a: x.index_fill(0, a["first"], -1.0),
    "masked_fill": lambda t, x, a: x.masked_fill(a["mask"], 1.0),
    "nan_to_num": lambda t, x, a: x.nan_to_num(),
}


@pytest.mark.parametrize("call", sorted(_CALLS))
@pytest.mark.parametrize("shape", [(3,), (2, 3), (0, 3)])
@pytest.mark.parametrize("operands", ["inference", "normal"])
def test_result_of_a_call_on_inference_tensors(call, shape, operands):
    # (with an operand that is not an inference tensor, torch's autograd layer runs, and
    # hides all this)
    def body(t):
        with t.inference_mode():
            x = t.arange(float(math.prod(shape))).reshape(shape) - 2
        with t.inference_mode(operands == "inference"):
            aux = {"zeros": t.zeros(shape, dtype=t.int64), "mask": t.ones(shape, dtype=t.bool),
                   "first": t.tensor([0]), "src": t.ones((1,) + shape[1:])}
        if call in ("index_copy", "index_fill") and shape[0] == 0:
            return None
        r = _CALLS[call](t, x, aux)
        base = r._base
        return (r, r._version, r.is_inference(),
                None if base is None else (tuple(base.shape), base._version))
    same(body)
