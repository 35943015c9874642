"""Under ``create_graph`` a backward node runs its derivative formulas in torch's order (the
sorted names of its derivatives.yaml entries: ``other`` before ``self``, ``end`` before
``self`` before ``weight``), so the nodes they make are numbered as torch numbers them and a
later backward through them runs, and sums gradients, in torch's order: what node hooks
receive and the graph of the summed gradient are torch's.

Each body runs on PyTorch 2.13 and on ember (``oracle.same``); the tests skip when torch is
not installed.
"""
from __future__ import annotations

import pytest
from oracle import same

_OPS = {
    "mul": lambda t, a, b, c: t.mul(a, b),
    "div": lambda t, a, b, c: t.div(a, b),
    "xlogy": lambda t, a, b, c: t.xlogy(a, b),
    "pow": lambda t, a, b, c: t.pow(a, b),
    "hypot": lambda t, a, b, c: t.hypot(a, b),
    "maximum": lambda t, a, b, c: t.maximum(a, b),
    "atan2": lambda t, a, b, c: t.atan2(a, b),
    "lerp": lambda t, a, b, c: t.lerp(a, b, c),
    "clamp": lambda t, a, b, c: t.clamp(a, b * 0.3, c + 0.5),
    "where": lambda t, a, b, c: t.where(a > 0.5, b, c),
    "addcdiv": lambda t, a, b, c: t.addcdiv(a, b, c),
}


def _order(t, gradients):
    """Which input's gradient node was made first, second, ... (by sequence number)."""
    seq = [g.grad_fn._sequence_nr() if hasattr(g.grad_fn, "_sequence_nr") else g.grad_fn._seq
           for g in gradients]
    return sorted(range(len(seq)), key=seq.__getitem__)


@pytest.mark.parametrize("name", sorted(_OPS))
def test_formula_order_under_create_graph(name):
    def body(t):
        a, b, c = (t.tensor(v, dtype=t.float64, requires_grad=True)
                   for v in ([0.3, 0.6], [0.5, 0.7], [0.8, 0.2]))
        x, y, z = a * 1, b * 1, c * 1  # (inputs with nodes: every formula's result has one)
        out = _OPS[name](t, x, y, z)
        go = t.ones_like(out, requires_grad=True) * 2
        gs = t.autograd.grad(out, [x, y, z], go, create_graph=True, allow_unused=True)
        used = [g for g in gs if g is not None]
        second = t.autograd.grad(sum(g.sum() for g in used), [a, b, c], allow_unused=True)
        return _order(t, used), used, second
    same(body)


def test_hook_sees_gradients_summed_in_torch_order():
    # A program of the differential test: the gradient reaching normalize's node in a second
    # backward is a sum whose first term is xlogy's "other" gradient's, as in torch.
    def tree(fn, depth=4):
        if fn is None or depth == 0:
            return None if fn is None else fn.name()
        return (fn.name(), [tree(f, depth - 1) for f, _ in fn.next_functions])

    def body(t):
        seen = []
        x = t.tensor([-1.68, 0.67, -0.78], requires_grad=True)
        n = t.nn.functional.normalize(x, dim=0)
        y = t.xlogy(n, n)
        n.grad_fn.register_prehook(lambda go: seen.append(tree(go[0].grad_fn)))
        g, _ = t.autograd.grad(y.mean(), [n, y], create_graph=True)
        gx, = t.autograd.grad(g.pow(2).sum(), [x], create_graph=True)
        gg, = t.autograd.grad(gx.sum(), [x])
        return seen, gx, gg
    same(body)
