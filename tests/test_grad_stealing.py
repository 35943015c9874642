"""A leaf's first gradient is the engine's own array (stolen: ``.grad`` at version 0) unless
something else may hold it. The engine tracks such arrays by identity; a new gradient that
reuses a freed one's id is not taken for it (it would be copied, its ``.grad`` at version 1
where torch's is 0). A hook's returned gradient is such an array: freed once the next node
ran, its id is free for the gradient that node makes."""
from __future__ import annotations

import pytest
from oracle import same

import ember


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


def test_a_grad_dropped_by_a_hook_and_passed_on_is_stolen_by_the_next_leaf():
    """A first gradient a plain leaf took over is held by its ``.grad`` alone: a hook that sets
    that ``.grad`` to None and returns the tensor in place of another gradient hands it to
    the next leaf, which takes it over (version 0) as torch's does."""
    def body(t):
        a = t.tensor([1.0, 2.0], requires_grad=True)
        b = t.tensor([3.0, 4.0], requires_grad=True)
        h = b.clone()  # (its node passes the hook's value on to b unchanged)

        def hook(g):
            old = a.grad
            a.grad = None
            return old
        h.register_hook(hook)
        hs = h.sum()
        (hs + (a * 1.0).sum()).backward()  # (a's node, created last, runs first)
        return a.grad, b.grad, b.grad._version
    same(body)


@pytest.mark.parametrize("compiled", [False, True])
def test_leaf_versions_after_a_written_gradient(compiled):
    """A pass whose formulas wrote a gradient in place (index's, version 1 in torch) gives
    that leaf's ``.grad`` its version and the others' none; the next pass, with no such write,
    none at all (the engine looks versions up only while a pass noted one)."""
    def body(t):
        w = t.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], requires_grad=True)
        b = t.tensor([1.0, 2.0], requires_grad=True)
        idx = t.tensor([0, 2])

        def indexed(w, b, idx):
            return (w[idx] * b).sum()

        def plain(w, b, idx):
            return (w * b).sum()
        if compiled and t is ember:
            indexed, plain = ember.compile(indexed), ember.compile(plain)
        versions = []
        for loss_of in (indexed, plain, indexed):
            for _ in range(2):  # (compiled: recorded, then replayed)
                loss_of(w, b, idx).backward()
                versions.append((w.grad._version, b.grad._version))
                w.grad = b.grad = None
        return versions
    same(body)


def _view_of_a_kept_tensor_as_gradient(torch):
    """Custom backwards returning a view of a tensor the test holds (one and two inputs, the
    one-node and the general leaf paths), a tensor written in place, and the kept tensor
    itself: torch steals the view, so the .grad shares its memory and version counter."""
    kept = torch.arange(6.0)
    alias = torch.ones(2, 3)
    out = []
    for returned in (lambda g: kept.view(2, 3), lambda g: kept.view(3, 2).t(),
                     lambda g: (g * 2).add_(1).mul_(2), lambda g: alias):
        class Two(torch.autograd.Function):
            @staticmethod
            def forward(ctx, a, b):
                return a * 2 + b * 3

            @staticmethod
            def backward(ctx, g):
                return returned(g), g * 3

        class One(torch.autograd.Function):
            @staticmethod
            def forward(ctx, a):
                return a * 2

            @staticmethod
            def backward(ctx, g):
                return returned(g)

        a, b, c = (torch.ones(2, 3, requires_grad=True) for _ in range(3))
        Two.apply(a, b).backward(torch.ones(2, 3))
        One.apply(c).backward(torch.ones(2, 3))
        before = [(p.grad._version, p.grad._base is None, p.grad.is_contiguous(),
                   p.grad.data_ptr() == kept.data_ptr(), p.grad is alias) for p in (a, c)]
        kept.add_(100)
        alias.add_(1)
        out.append((before, [(p.grad, p.grad._version) for p in (a, c)]))
    return out


def _giving_a_view_of(torch, kept):
    """A Function of two (2, 3) inputs whose backward gives the first a view of ``kept``."""
    class Two(torch.autograd.Function):
        @staticmethod
        def forward(ctx, a, b):
            return a * 2 + b * 3

        @staticmethod
        def backward(ctx, g):
            return kept.view(2, 3), g * 3
    return Two


def _second_gradient_into_a_stolen_view(torch):
    """A second backward sums into the stolen view in place: into the kept tensor."""
    kept = torch.arange(6.0)

    Two = _giving_a_view_of(torch, kept)
    a, b = (torch.ones(2, 3, requires_grad=True) for _ in range(2))
    for _ in range(2):
        Two.apply(a, b).backward(torch.ones(2, 3))
    return kept, kept._version, a.grad, a.grad._version


def test_a_gradient_viewing_a_kept_tensor_shares_its_version_counter():
    same(_view_of_a_kept_tensor_as_gradient)


def test_a_second_gradient_sums_into_a_stolen_view_in_place():
    same(_second_gradient_into_a_stolen_view)


def _stolen_view_through_a_view_node(torch):
    """The kept tensor's view goes through a view's backward before reaching the leaf: the
    leaf takes over a view of it, sharing the kept tensor's counter (torch's views do)."""
    kept = torch.arange(6.0)

    Two = _giving_a_view_of(torch, kept)
    a = torch.ones(6, requires_grad=True)
    b = torch.ones(2, 3, requires_grad=True)
    Two.apply(a.view(2, 3), b).backward(torch.ones(2, 3))
    before = a.grad._version, a.grad.data_ptr() == kept.data_ptr(), a.grad._base is None
    kept.add_(1)
    return before, a.grad, a.grad._version


def test_a_view_of_a_stolen_view_shares_the_kept_tensors_counter():
    same(_stolen_view_through_a_view_node)
