"""A leaf's first gradient is the engine's own array (stolen: ``.grad`` at version 0) unless
something else may hold it. The engine tracks such arrays by identity; a new gradient that
reuses a freed one's id is not taken for it (it would be copied, its ``.grad`` at version 1
where torch's is 0). A hook's returned gradient is such an array: freed once the next node
ran, its id is free for the gradient that node makes."""
from __future__ import annotations

from oracle import same


def _hooked_chains(torch):
    out = []
    for _ in range(3):
        w = torch.ones(3, requires_grad=True)
        b = (w * 5) * 3
        b.register_hook(lambda g: g * 2)
        b.sum().backward()
        v = torch.ones(3, requires_grad=True)
        c = (v * 5).exp() * 3
        c.register_hook(lambda g: g + 1)
        c.sum().backward()
        u = torch.ones(2, 3, requires_grad=True)
        d = (u * 5) @ torch.ones(3, 4)
        d.register_hook(lambda g: g * 2)
        d.sum().backward()
        out.append([(p.grad, p.grad._version) for p in (w, v, u)])
    return out


def test_a_new_gradient_is_stolen_after_a_hooks_gradient_is_freed():
    same(_hooked_chains)
