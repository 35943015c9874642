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


def _custom_function_gradients(torch):
    class Spread(torch.autograd.Function):
        @staticmethod
        def forward(ctx, a, b, c, d, e):
            return a * 1 + b * 2 + c * 3 + d * 4 + e * 5

        @staticmethod
        def backward(ctx, g):
            kept = g * 6
            ctx.kept = kept  # (held by the node: copied)
            return g, g, g * 3, kept, g * 5

    class Lone(torch.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            return a * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    leaves = [torch.ones(3, requires_grad=True) for _ in range(6)]
    Spread.apply(*leaves[:5]).sum().backward()
    Lone.apply(leaves[5]).sum().backward()
    return [(p.grad, p.grad._version) for p in leaves]


def test_a_custom_functions_fresh_gradient_is_stolen():
    # torch's AccumulateGrad takes over a gradient no one else holds (use count 1): a
    # backward's g * 3 is, its incoming g returned twice or a tensor it keeps is not
    same(_custom_function_gradients)
