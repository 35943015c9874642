"""The gradient of ``as_strided`` under ``create_graph`` is composed as torch's formula: a
zero storage the gradient is copied into (``CopySlices``; ``IndexAddBackward0`` where output
elements overlap, then a division where input elements do), and the input's
``AsStridedBackward0`` view of it, so its ``next_functions``, its version and second
derivatives are torch's.

Each body runs on PyTorch 2.13 and on ember (``oracle.same``); the tests skip when torch is
not installed.
"""
from __future__ import annotations

import pytest
from oracle import same

_GEOMETRIES = {
    "window": ((2,), (1,), None),
    "overlapping_output": ((3, 3), (2, 1), 1),
    "rows": ((2, 2), (4, 1), None),
    "broadcast": ((2, 3), (0, 1), None),
    "size_one_dims": ((2, 1, 2), (1, 5, 2), 2),
    "zero_dim": ((), (), 3),
    "empty": ((0, 3), (1, 1), None),
}
_BASES = {
    "flat": lambda x: x.reshape(-1),
    "transposed": lambda x: x.t(),
    "overlapping_input": lambda x: x.reshape(-1).as_strided((3, 3), (1, 1)),
}


def _chain(fn, depth=6):
    names = []
    while fn is not None and len(names) < depth:
        names.append(fn.name())
        nxt = [f for f, _ in fn.next_functions if f is not None]
        fn = nxt[0] if nxt else None
    return names


@pytest.mark.parametrize("base", sorted(_BASES))
@pytest.mark.parametrize("geometry", sorted(_GEOMETRIES))
def test_as_strided_gradient_graph(geometry, base):
    def body(t):
        x = t.tensor([[1.58, -0.11, -1.51, -0.87], [0.3, 0.2, -1.0, 0.9],
                      [0.5, 0.4, 2.0, -0.3]], dtype=t.float64, requires_grad=True)
        size, stride, offset = _GEOMETRIES[geometry]
        y = _BASES[base](x).as_strided(size, stride, offset)
        g, = t.autograd.grad(y.pow(2).sum(), [x], create_graph=True)
        gg, = t.autograd.grad((g * g).sum(), [x])
        return g, g._version, _chain(g.grad_fn), g.grad_fn.next_functions[0][0].name(), gg
    same(body)


def test_shrunk_program():
    def body(t):
        x = t.tensor([[1.58, -0.11, -1.51, -0.87]], requires_grad=True)
        v = x.as_strided((2,), (1,))
        g, = t.autograd.grad(v.pow(2).sum(), [x], create_graph=True, allow_unused=True)
        return g, [(None if f is None else f.name(), n) for f, n in g.grad_fn.next_functions]
    same(body)
