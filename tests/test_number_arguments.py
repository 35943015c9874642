"""Number arguments as torch's argument parser takes them: a 0-dim tensor that requires no
grad stands for its value (``addcdiv(..., value=torch.tensor(2.))``), any other tensor gets
torch's TypeError naming the function (``addcdiv_()`` for the in-place form).

Each body runs on PyTorch 2.13 and on ember (``oracle.same``); the tests skip without torch.
"""
from __future__ import annotations

import pytest
from oracle import same

_VALUES = {
    "0-dim": lambda t: t.tensor(2.0),
    "0-dim int": lambda t: t.tensor(3),
    "0-dim bool": lambda t: t.tensor(True),
    "1-element": lambda t: t.tensor([2.0]),
    "vector": lambda t: t.tensor([2.0, 3.0, 4.0]),
    "requires grad": lambda t: t.tensor(2.0, requires_grad=True),
}
_CALLS = {
    "addcdiv": lambda t, x, a, b, v: t.addcdiv(x, a, b, value=v),
    "addcdiv method": lambda t, x, a, b, v: x.addcdiv(a, b, value=v),
    "addcdiv_": lambda t, x, a, b, v: x.addcdiv_(a, b, value=v),
    "addcdiv out": lambda t, x, a, b, v: t.addcdiv(x, a, b, value=v, out=t.empty(3)),
    "addcmul": lambda t, x, a, b, v: t.addcmul(x, a, b, value=v),
    "addcmul_": lambda t, x, a, b, v: x.addcmul_(a, b, value=v),
}


@pytest.mark.parametrize("value", sorted(_VALUES))
@pytest.mark.parametrize("call", sorted(_CALLS))
def test_tensor_value_of_addcdiv_and_addcmul(call, value):
    def body(t):
        x, a, b = t.zeros(3), t.tensor([1.0, -2.0, 3.0]), t.tensor([2.0, 4.0, -8.0])
        return _CALLS[call](t, x, a, b, _VALUES[value](t))
    same(body, rtol=0, atol=0)


@pytest.mark.parametrize("value", ["0-dim", "0-dim int", "0-dim bool"])
def test_gradients_with_a_tensor_value(value):
    def body(t):
        a = t.tensor([1.0, -2.0, 3.0], requires_grad=True)
        b = t.tensor([2.0, 4.0, -8.0], requires_grad=True)
        v = _VALUES[value](t)
        out = t.addcdiv(t.zeros(3), a, b, value=v) + t.addcmul(t.zeros(3), a, b, value=v)
        return t.autograd.grad(out.sum(), (a, b))
    same(body, rtol=0, atol=0)


_LRS = {
    "0-dim": lambda t: t.tensor(0.01),
    "1-element": lambda t: t.tensor([0.01]),
    "0-dim requires grad": lambda t: t.tensor(0.01, requires_grad=True),
    "1-element requires grad": lambda t: t.tensor([0.01], requires_grad=True),
}


@pytest.mark.parametrize("lr", sorted(_LRS))
@pytest.mark.parametrize("name", ["Adamax", "Adagrad", "RMSprop", "Adadelta", "Rprop"])
def test_differentiable_update_with_a_tensor_lr(name, lr):
    """A 0-dim lr that requires no grad reaches addcdiv_/add_/full_like as a number (the
    update then meets torch's refusal of an in-place write into the leaf); one that requires
    grad gets the TypeError of the op it reaches."""
    def body(t):
        p = t.ones(3, requires_grad=True)
        opt = getattr(t.optim, name)([p], lr=_LRS[lr](t), differentiable=True)
        p.grad = t.full((3,), 0.5)
        opt.step()
        return p
    same(body)
