"""An integer or bool tensor written in place from a tensor that requires grad, as torch
treats it: fill_, masked_fill_ and index_put_ (what ``a[...] = w`` runs) give it a history
whatever its dtype, copy_ does not; then most ops on it are refused ("Autograd not support
dtype"), and a gradient that would reach it is refused too.

Each body runs on PyTorch 2.13 and on ember (``oracle.same``); the tests skip when torch is
not installed.
"""
from __future__ import annotations

import pytest
from oracle import error_of, same

_INT_WRITES = {
    "mask_index_put": lambda t, a, w: a.__setitem__(t.tensor([True]), w),
    "fill_0d": lambda t, a, w: a.__setitem__(Ellipsis, w.sum()),
    "select_fill": lambda t, a, w: a.__setitem__(-1, w.sum()),
    "slice_copy": lambda t, a, w: a.__setitem__((0, slice(0, 1)), w),
    "masked_fill_": lambda t, a, w: a.masked_fill_(t.tensor([[True, False, True]]), w.sum()),
    "copy_": lambda t, a, w: a[0].copy_(w.expand(3)),
}
_INT_USES = {
    "sum": lambda t, a: a.sum(), "mul": lambda t, a: a * 2, "neg": lambda t, a: -a,
    "view": lambda t, a: a.view(3), "index": lambda t, a: a[0], "clone": lambda t, a: a.clone(),
    "float": lambda t, a: a.float(), "eq": lambda t, a: a == 1,
    "detach": lambda t, a: a.detach(), "add_": lambda t, a: a.add_(1),
    "backward_through_float": lambda t, a: a.float().sum().backward(),
    "backward": lambda t, a: a.backward(t.ones(1, 3, dtype=a.dtype)),
}


def _grad_flags(x):
    fn = x.grad_fn
    return x.requires_grad, None if fn is None else fn.name(), x.is_leaf


@pytest.mark.parametrize("write, dtype", [(w, "int64") for w in sorted(_INT_WRITES)]
                         + [("select_fill", "bool")])
def test_integer_tensor_written_from_a_tensor_requiring_grad(write, dtype):
    def body(t):
        w = t.tensor([0.32], requires_grad=True)
        a = t.tensor([[0, -2, 1]], dtype=getattr(t, dtype))
        before = a[0]  # a view made before a requires grad follows it
        _INT_WRITES[write](t, a, w)
        uses = {}
        for name in sorted(_INT_USES):  # (add_ keeps a's history: the others see it after)
            uses[name] = error_of(lambda: _INT_USES[name](t, a))
        return _grad_flags(a), _grad_flags(before), uses, w.grad
    same(body)
