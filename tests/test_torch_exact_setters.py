"""Assigning to a tensor's read-only attributes raises torch's AttributeError (also through
an augmented assignment, ``x.T *= 2``, which runs the in-place op and then assigns), and
``requires_grad`` takes a bool only.

Each body runs on PyTorch 2.13 and on ember (``oracle.same``, exception messages with
``torch.`` read as ``ember.``); the tests skip when torch is not installed.
"""
from __future__ import annotations

import pytest
from oracle import same

_ASSIGNMENTS = ["x.T *= 2", "x.mT += 1", "x.H -= 1", "x.mH *= 2", "x.T = x", "x.shape = (3,)",
                "x.grad_fn = None", "x.is_leaf = True", "x.ndim = 2", "x.dtype = None",
                "x.device = None", "p.T = p"]


@pytest.mark.parametrize("code", _ASSIGNMENTS)
def test_read_only_attribute(code):
    def body(t):
        x = t.ones(2, 3)
        p = t.nn.Parameter(t.ones(2, 2))
        exec(code, {"x": x, "p": p})
        return x
    same(body)


@pytest.mark.parametrize("value", [True, False, 1, 0, 1.0, None])
def test_requires_grad_takes_a_bool(value):
    def body(t):
        x = t.ones(2)
        x.requires_grad = value
        return x.requires_grad
    same(body)
