"""Gradients laid out as torch lays them out: ``sum``'s gradient is an expanded view (what
``autograd.grad`` returns and hooks receive), so writing into it in place is refused or warns
as in torch; ``.grad`` takes a gradient over as it is when it has the leaf's strides (a view
included) and is otherwise copied with the leaf's strides (version 1); ``autograd.grad``
returns the very Tensor user code already holds (a grad_output passed through, a hook's
argument).

Each body runs on PyTorch 2.13 and on ember (``oracle.same``); the tests skip when torch is
not installed.
"""
from __future__ import annotations

import pytest
from oracle import error_of, same


def layout(t):
    base = t._base
    return {"stride": t.stride(), "contiguous": t.is_contiguous(), "_version": t._version,
            "base": None if base is None else tuple(base.shape)}


_WRITES = {
    "add_": lambda t, g: g.add_(1),
    "mul_through_transpose": lambda t, g: g.transpose(0, -1).mul_(2),
    "fill_tensor": lambda t, g: g.fill_(t.tensor(0.5)),
    "fill_number": lambda t, g: g.fill_(0.5),
    "zero_": lambda t, g: g.zero_(),
    "copy_": lambda t, g: g.copy_(t.ones(2, 3)),
    "index_put": lambda t, g: g.__setitem__(t.tensor([0]), -1.5),
    "mask_fill": lambda t, g: g.masked_fill_(t.tensor([[True, False, True]]), 2.0),
}


@pytest.mark.parametrize("write", sorted(_WRITES))
def test_writing_into_sums_gradient(write):
    def body(t):
        x = t.tensor([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]], requires_grad=True)
        g, = t.autograd.grad(x.sum(), x)
        before = layout(g)
        return before, error_of(lambda: _WRITES[write](t, g)), g
    same(body)


def test_sums_gradient_passed_through_stays_expanded():
    # cumsum over a dimension of one element passes its gradient through, as torch's does;
    # the overlap error comes before the shape check
    def body(t):
        x = t.tensor([[1.03, -0.51, 0.0], [1.52, -0.09, -1.24]], requires_grad=True)
        y = t.gather(x, 1, t.tensor([[0, 0, 2]]))
        g_y, g_x = t.autograd.grad(t.cumsum(y, 0).sum(), [y, x])
        with t.inference_mode():
            err = error_of(lambda: g_y.copy_(g_x))
        # (not g_x's version: torch's gather backward writes its result in place, ember's not)
        return layout(g_y), g_x.stride(), err
    same(body)


def test_hook_receives_the_expanded_gradient():
    def body(t):
        x = t.ones(2, 3, requires_grad=True)
        seen = []
        y = x * 1
        y.register_hook(lambda g: seen.append((layout(g), error_of(lambda: g.mul_(2)))))
        y.sum().backward()
        return seen, layout(x.grad), x.grad
    same(body)


@pytest.mark.parametrize("make", ["view", "slice", "transpose_1d", "sum_twice"])
def test_grad_taken_over_or_copied(make):
    # a view with the leaf's strides becomes .grad as it is (version 0); an expanded one is
    # copied (torch's copy_: version 1)
    def body(t):
        x = t.tensor([1.74, 2.0, -0.5, 0.25], requires_grad=True)
        if make == "view":
            x.view(2, 2).exp().sum().backward()
        elif make == "slice":
            x[:].exp().sum().backward()
        elif make == "transpose_1d":
            x.unsqueeze(0).t().exp().sum().backward()
        else:
            (x.sum() + x.sum()).backward()
        return layout(x.grad), x.grad
    same(body)


def test_grad_copied_with_the_leafs_strides():
    def body(t):
        xt = t.ones(3, 2).t().requires_grad_()
        xt.sum().backward()
        first = layout(xt.grad)
        xt.grad = None
        (xt * 2).sum().backward()
        xs = t.ones(3, 4)[:, ::2].requires_grad_()
        xs.sum().backward()
        return first, layout(xt.grad), layout(xs.grad)
    same(body)


def test_accumulating_into_an_expanded_grad_is_refused():
    def body(t):
        x = t.ones(2, 3, requires_grad=True)
        x.grad = t.ones(1).expand(2, 3)
        return error_of(lambda: (x * 2).sum().backward()), x.grad
    same(body)


def test_autograd_grad_returns_the_tensor_user_code_holds():
    def body(t):
        x = t.ones(2, 3, requires_grad=True)
        y = x + 0
        go = t.full((2, 3), 2.0)
        g_x, = t.autograd.grad(y, x, go)
        seen = []
        z = x * 2
        z.register_hook(seen.append)
        g_z, = t.autograd.grad(z.sum(), z)
        scalar = t.tensor(1.0)
        g_s, = t.autograd.grad(x.sum(), x, scalar)
        scalar.fill_(3.0)  # sum's gradient is a view of it
        return g_x is go, g_z is seen[0], g_s, g_s._base is scalar
    same(body)



def test_setitem_of_an_expanded_gradient_with_itself():
    # torch's copy_ of the very elements returns before its overlap check (a version bump)
    def body(t):
        x = t.tensor([-1.02, 1.53, 1.13], requires_grad=True)
        g, = t.autograd.grad(x.sum(), x)
        writes = [error_of(lambda: g.__setitem__(Ellipsis, g)),
                  error_of(lambda: g.__setitem__(slice(None), g)),
                  error_of(lambda: g.copy_(g)), error_of(lambda: g.__setitem__(Ellipsis, g * 1))]
        return writes, g._version, g
    same(body)


def test_a_permuted_gradient_is_a_view_made_in_no_grad_mode():
    # movedim's gradient is a view of its grad_output made by backward (no_grad): an in-place
    # op on it that grad mode would record is refused, as torch refuses it
    def body(t):
        x = t.tensor([0.41, 0.0], requires_grad=True)
        y = t.lerp(x * 1, x * 1, 0.49)
        g_x, g_y = t.autograd.grad(t.movedim(y, 0, 0).mean(), [x, y], retain_graph=True)
        return g_y._is_view(), g_y._base, error_of(lambda: g_y.add_(y)), g_y
    same(body)


def test_a_zero_dim_sums_gradient_is_a_view():
    def body(t):
        x = t.tensor(-1.04, dtype=t.float64, requires_grad=True)
        g, = t.autograd.grad(x.sum(), [x], retain_graph=True)
        dropped = t.nn.functional.dropout(g, 0.0)
        return g._is_view(), g._base, dropped._is_view(), dropped
    same(body)


_REGENERATED = {  # (the base, made from the leaf; the view of it whose grad_fn is regenerated)
    "slice_of_leaf": (lambda x: x, lambda b: b[1:, ::2]),
    "row_of_permuted_base": (lambda x: x.t() * 2, lambda b: b[1]),
    "slice_of_transpose": (lambda x: x.t() * 2, lambda b: b.t()[2:]),
    "as_strided_in_base": (lambda x: x * 2, lambda b: b.as_strided((2, 2), (1, 4), 1)),
    "expanded": (lambda x: (x * 2)[:, :2] * 1, lambda b: b.expand(2, 3, 2)),
}


@pytest.mark.parametrize("case", sorted(_REGENERATED))
def test_gradient_through_a_regenerated_view_is_a_view(case):
    # a view whose base was written in place (here through a detached alias) differentiates
    # as torch's as_strided: its gradient is the base's geometry in a zero "storage", a view
    # made in no_grad mode, which dropout in eval mode passes on as it is
    make_base, make_view = _REGENERATED[case]

    def body(t):
        x = t.arange(1., 13.).reshape(3, 4).requires_grad_()
        base = make_base(x)
        view = make_view(base)
        base.detach().mul_(1)
        g, = t.autograd.grad((view * view).sum(), base)
        kept = t.nn.functional.dropout(g, 0.5, training=False)
        return layout(g), g.storage_offset(), g._is_view(), kept._is_view(), g, error_of(
            lambda: g.add_(t.ones(1, requires_grad=True)))
    same(body)


def test_a_gradient_summed_over_broadcast_leading_dimensions_is_a_view():
    # torch's sum_to sums the leading dimensions keeping them, then views the sum without
    # them: a view made in no_grad mode, which an in-place op grad mode records refuses
    def body(t):
        x = t.tensor([[1.18, -0.41], [0.03, 1.92], [1.05, -0.79]], requires_grad=True)
        y = x * 1
        z = y + t.zeros(1, 3, 2, requires_grad=True)
        g, = t.autograd.grad(z.sum(), [y], retain_graph=True)
        b = t.zeros(2, requires_grad=True)
        (x + b).sum().backward()
        return (g._is_view(), g._base, error_of(lambda: g.add_(z)), g, b.grad._is_view(),
                b.grad)
    same(body)
