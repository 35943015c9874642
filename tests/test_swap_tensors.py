"""``utils.swap_tensors`` against torch: two tensor objects exchange their contents and keep
their identities (what an optimizer or a module holds sees the other's content)."""
from __future__ import annotations

import weakref

from oracle import same


def test_swap_exchanges_contents_and_keeps_identities():
    def body(torch):
        t1, t2 = torch.arange(2), torch.arange(3.0, requires_grad=True)
        t1.note = "first"
        ids = id(t1), id(t2)
        torch.utils.swap_tensors(t1, t2)
        return (t1, t2, (id(t1), id(t2)) == ids, t1.requires_grad, t2.requires_grad,
                t1.is_leaf, t2.note, hasattr(t1, "note"), t1.dtype, t2.dtype)
    same(body)


def test_swap_parameter_with_a_tensor_that_an_optimizer_holds():
    def body(torch):
        torch.manual_seed(0)
        mod = torch.nn.Linear(1, 2, bias=False)
        opt = torch.optim.SGD(mod.parameters(), lr=0.5)
        new = torch.nn.Parameter(2 * mod.weight.detach())
        torch.utils.swap_tensors(mod.weight, new)
        mod(torch.ones(1, 1)).sum().backward()
        opt.step()
        return (type(mod.weight).__name__, type(new).__name__, mod.weight,
                opt.param_groups[0]["params"][0] is mod.weight, new)
    same(body)


def test_swap_refuses_weakly_referenced_tensors():
    def body(torch, first):
        t1, t2 = torch.zeros(2), torch.ones(2)
        ref = weakref.ref(t1 if first else t2)  # noqa: F841 - alive during the swap
        torch.utils.swap_tensors(t1, t2)
    same(lambda torch: body(torch, True))
    same(lambda torch: body(torch, False))


def test_backward_through_a_swapped_leaf_raises():
    def body(torch):
        x = torch.ones(2, requires_grad=True)
        y = (x + 1).sum()
        torch.utils.swap_tensors(x, torch.zeros(2, requires_grad=True))
        y.backward()
    same(body)


def test_swap_refuses_tensors_that_a_graph_saved_or_a_view_holds():
    def saved(torch):
        x = torch.ones(2, requires_grad=True)
        y = (x * x).sum()  # noqa: F841 - its node saves x twice
        torch.utils.swap_tensors(x, torch.zeros(2))

    def viewed(torch):
        x, other = torch.ones(3), torch.zeros(3)
        v = x[1:]  # noqa: F841 - alive during the swap
        torch.utils.swap_tensors(other, x)
    same(saved)
    same(viewed)


def test_swap_keeps_slots_apart():
    def body(torch):
        class Slotted(torch.Tensor):
            __slots__ = ("tag",)

        a, b = Slotted([0.0, 0.0]), Slotted([1.0, 1.0, 1.0])
        a.tag = "a"
        torch.utils.swap_tensors(a, b)
        try:
            torch.utils.swap_tensors(a, torch.zeros(1))
        except RuntimeError as e:
            err = str(e)
        return b.tag, hasattr(a, "tag"), a.shape, b.shape, err
    same(body)


def test_swap_sees_past_the_references_ember_keeps_itself():
    def view_made_without_grad(torch):
        with torch.no_grad():
            base = torch.zeros(3)
            v = base[1:]  # (its base keeps a weak reference to it in ember)
        torch.utils.swap_tensors(v, torch.ones(2))
        return v, base

    def retains_grad(torch):
        x = torch.zeros(3, requires_grad=True)
        y = x * 2
        y.retain_grad()
        torch.utils.swap_tensors(y, torch.ones(3))
    same(view_made_without_grad)
    same(retains_grad)
