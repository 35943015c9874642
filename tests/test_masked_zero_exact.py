"""The masked zeros of ReLU's gradient (threshold_backward) and of ``where`` with a +0.0
operand on arrays of a few thousand elements and more, where ember ands the values' bits with
a mask word (see _backend.masked_or_zero): torch's bits exactly, NaN, infinities and -0.0 kept
where the mask keeps them, +0.0 elsewhere, and a mask broadcast against the values."""
from __future__ import annotations

import numpy as np
import pytest
from oracle import same

_SPECIAL = [float("nan"), float("inf"), -float("inf"), -0.0, 0.0]


def _values(shape, seed):
    """Normal values with NaN, infinities and signed zeros sprinkled in."""
    rs = np.random.RandomState(seed)
    a = rs.randn(*shape).astype(np.float32)
    flat = a.reshape(-1)
    where = rs.randint(0, flat.size, 64)
    flat[where] = rs.choice(_SPECIAL, 64)
    return a


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_relu_gradient_bits(dtype):
    def body(torch):
        x = torch.tensor(_values((64, 256), 0).astype(dtype), requires_grad=True)
        up = torch.tensor(_values((64, 256), 1).astype(dtype))
        x.relu().backward(up)
        return x.grad, torch.signbit(x.grad), torch.isnan(x.grad)
    same(body, rtol=0, atol=0)


@pytest.mark.parametrize("case", ["same shape", "values broadcast", "mask broadcast",
                                  "zero first"])
def test_where_with_a_zero_operand_bits(case):
    def body(torch):
        rs = np.random.RandomState(2)
        if case == "values broadcast":
            cond, values = rs.rand(64, 256) > 0.5, _values((1, 256), 3)
        elif case == "mask broadcast":
            cond, values = rs.rand(64, 256) > 0.5, _values((2, 64, 256), 3)
        else:
            cond, values = rs.rand(64, 256) > 0.5, _values((64, 256), 3)
        c, v = torch.tensor(cond), torch.tensor(values)
        out = torch.where(c, 0.0, v) if case == "zero first" else torch.where(c, v, 0.0)
        return out, torch.signbit(out), torch.isnan(out)
    same(body, rtol=0, atol=0)


@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
def test_compiled_relu_gradient_bits(layout):
    # the backward program's replay form of threshold_backward (its own mask words): torch's
    # bits at the recording call and at each replay, for an input laid out either way
    import ember

    def body(torch):
        up = torch.tensor(_values((64, 256), 1))

        def f(x):
            return x.relu() * 1.0
        f = ember.compile(f) if torch is ember else f
        grads = []
        for k in range(3):  # (recorded, then replayed)
            values = _values((64, 256), k)
            if layout == "transposed":
                x = torch.tensor(values.T.copy()).t().detach().requires_grad_()
            else:
                x = torch.tensor(values, requires_grad=True)
            f(x).backward(up)
            grads += [x.grad, torch.signbit(x.grad), torch.isnan(x.grad), x.is_contiguous()]
        return grads
    same(body, rtol=0, atol=0)
