"""``index_fill_`` into an expanded tensor (one whose elements share memory, like the
gradient of a sum) is allowed with torch's deprecation warning, and writes the elements the
index selects, as in torch.

Each body runs on PyTorch 2.13 and on ember (``oracle.same``); the tests skip when torch is
not installed.
"""
from __future__ import annotations

import pytest
from oracle import same

_WRITES = {
    "all_shared": lambda t, x: x.index_fill_(1, t.tensor([0]), 2.0),
    "rows": lambda t, x: x.index_fill_(0, t.tensor([0]), 5.0),
    "value_tensor": lambda t, x: x.index_fill_(0, t.tensor([0]), t.tensor(7.)),
    "negative_dim": lambda t, x: x.index_fill_(-1, t.tensor([1]), 4.0),
}


@pytest.mark.parametrize("write", sorted(_WRITES))
def test_index_fill_into_an_expanded_tensor(write):
    def body(t):
        x = t.tensor([[1.], [2.], [3.]]).expand(3, 2)
        _WRITES[write](t, x)
        return x, x._version
    same(body)


def test_shrunk_program_index_fill_into_a_sums_gradient():
    def body(t):
        x = t.tensor([[[0.5, -0.78], [1.54, -1.0]], [[-1.65, 2.0], [-0.97, 0.5]]],
                     requires_grad=True)
        g, = t.autograd.grad(x.sum(), [x], allow_unused=True)
        g.index_fill_(0, t.tensor([0]), 2.0)
        return g
    same(body)
