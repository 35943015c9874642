"""The registry's generated Tensor path records a call's node itself (its recorder's lines are
written out in it): what a node saves follows the op's formulas even when they are declared
after the op was first called, and the inline recording keeps the generic path's errors."""
from __future__ import annotations

import numpy as np
import pytest
from oracle import same

import ember
from ember._ops.registry import REGISTRY, op


def test_a_formula_declared_after_the_first_call_is_recorded():
    @op("_test_late_square")
    def late_square(self):
        return self * self

    try:
        x = ember.tensor([1.0, -2.0, 3.0], requires_grad=True)
        y = late_square(x)  # (the Tensor path is generated now, with no formula to save for)
        assert y.grad_fn.name() == "TestLateSquareBackward0"
        (g,) = ember.autograd.grad(y.sum(), [x], allow_unused=True)
        assert g is None  # no formula: no gradient reaches x

        @late_square.grad("self")
        def _(grad, self):
            return grad * 2 * self

        y = late_square(x)
        assert y.grad_fn._saved_self is x
        (g,) = ember.autograd.grad(y.sum(), [x])
        np.testing.assert_array_equal(g.numpy(), [2.0, -4.0, 6.0])
    finally:
        REGISTRY.pop("_test_late_square", None)


def _recorded(torch):
    x = torch.tensor([0.5, -1.0], requires_grad=True)
    w = torch.tensor([[1.0, 2.0], [3.0, -1.0]])
    y = torch.tanh(torch.mv(w, x)) ** 2
    m = x * torch.tensor([2.0, 3.0])
    (g,) = torch.autograd.grad(y.sum(), [x], create_graph=True)
    (h,) = torch.autograd.grad((g * m).sum(), [x])
    out = [y, m, g, h, y.grad_fn.name(), m.grad_fn.name(), g.grad_fn.name(),
           [f[0].name() if f[0] is not None else None for f in g.grad_fn.next_functions],
           y.grad_fn._saved_self is not None, m.grad_fn._saved_other is not None]
    with torch.inference_mode():
        i = torch.ones(2)
    try:
        x * i
    except RuntimeError as e:
        out.append(str(e))
    return out


def test_inline_recording_matches_torch():
    same(_recorded)


def test_saved_values_and_versions_checked_as_before():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    a = x * 1.0
    b = a * a
    a.add_(1.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        b.sum().backward()
