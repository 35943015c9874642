"""Node hooks see torch's slots: a node's ``grad_outputs`` hold one gradient per
differentiable output (not the indices of ``sort``, ``max(dim)`` or ``max_pool2d``, not
``linalg.lu``'s permutation), in pre-hooks and post-hooks alike, and a value a pre-hook returns
replaces those slots.

Each body runs on PyTorch 2.13 and on ember (``oracle.same``); the tests skip when torch is
not installed.
"""
from __future__ import annotations

import pytest
from oracle import same

_MULTI_OUTPUT = {
    "sort": lambda t, x: x.sort(-1)[0],
    "topk": lambda t, x: x.topk(2)[0],
    "max_dim": lambda t, x: x.max(-1)[0],
    "kthvalue": lambda t, x: x.kthvalue(2)[0],
    "cummax": lambda t, x: x.cummax(-1)[0],
    "frexp": lambda t, x: x.frexp()[0],
    "max_pool2d": lambda t, x: t.nn.functional.max_pool2d(x, (1, 2)),
    "max_pool2d_indices": lambda t, x: t.nn.functional.max_pool2d(x, (1, 2),
                                                                  return_indices=True)[0],
    "lu_upper": lambda t, x: t.linalg.lu(x[0, :, :2].T @ x[0, :, :2])[2],
}


@pytest.mark.parametrize("name", sorted(_MULTI_OUTPUT))
def test_node_hooks_see_differentiable_outputs_only(name):
    def body(t):
        x = t.tensor([[[0.45, 1.91, -0.3, 0.7], [1.2, -0.8, 0.1, 2.5]]], dtype=t.float64,
                     requires_grad=True)
        out = _MULTI_OUTPUT[name](t, x)
        seen = []
        out.grad_fn.register_prehook(lambda go: seen.append(("pre", go)))
        out.grad_fn.register_hook(lambda gi, go: seen.append(("post", gi, go)))
        out.sum().backward(create_graph=name == "max_pool2d")
        return seen, x.grad
    same(body, check_warnings=False)  # (create_graph's reference-cycle warning comes once)


def test_a_pre_hook_replaces_the_differentiable_outputs_gradients():
    def body(t):
        x = t.tensor([[[0.45, 1.91]]], dtype=t.float64, requires_grad=True)
        out = t.nn.functional.max_pool2d(x, (1, 2))
        out.grad_fn.register_prehook(lambda go: (go[0] * 3,))
        diag = t.diagonal(out, 1)
        t.cat([diag, diag], 0).sum().backward()
        return x.grad
    same(body)


# -- grad_inputs: None for an input that gets no gradient ---------------------------------------
# torch's node computes a gradient only for an input whose edge leads to a wanted input
# (task_should_compute_output): a constant operand, a base that needs no gradient, or, in
# autograd.grad, an input no wanted tensor lies behind, shows None in its post hooks.

def _write_into_constant(t, w, _):
    base = t.zeros(2, 3, dtype=t.float64)
    base[0, 1:2] = w
    return base


def _write_into_history(t, w, x):
    base = x.clone()
    base[0, 1:2] = w
    return base


def _write_constant_into_history(t, w, x):
    base = x.clone()
    base[0, 1:2] = w.detach()
    return base


def _copy_into_constant_view(t, w, _):
    base = t.zeros(2, 3, dtype=t.float64)
    base[1, :2].copy_(w.expand(2) * 2)
    return base


def _custom_function(t):
    class Scale(t.autograd.Function):
        @staticmethod
        def forward(ctx, a, k, b):
            return a * b

        @staticmethod
        def backward(ctx, g):
            return g * 2, None, g * 3
    return Scale


_NODE_KINDS = {
    "copy_slices_constant_base": _write_into_constant,
    "copy_slices_history_base": _write_into_history,
    "copy_slices_constant_value": _write_constant_into_history,
    "copy_slices_copy_": _copy_into_constant_view,
    "add_constant": lambda t, w, x: x + t.ones(2, 3, dtype=t.float64),
    "add_scalar": lambda t, w, x: 2 + x,
    "mul_constant": lambda t, w, x: t.full((2, 3), 3.0, dtype=t.float64) * x,
    "mul_both": lambda t, w, x: w * x,
    "cat": lambda t, w, x: t.cat([t.zeros(1, 3, dtype=t.float64), x, w.expand(1, 3)]),
    "index_put": lambda t, w, x: t.zeros(4, dtype=t.float64).index_put(
        (t.tensor([0, 2]),), w.expand(2)),
    "index_put_": lambda t, w, x: t.zeros(4, dtype=t.float64).index_put_(
        (t.tensor([0, 2]),), w.expand(2) * x[0, :2]),
    "custom_function": lambda t, w, x: _custom_function(t).apply(
        t.ones(1, dtype=t.float64), 5, w),
}


def _hook_seen(t, name, wanted):
    w = t.tensor([1.5], dtype=t.float64, requires_grad=True)
    x = t.tensor([[0.5, -1.0, 2.0], [0.25, 3.0, -0.5]], dtype=t.float64, requires_grad=True)
    out = _NODE_KINDS[name](t, w, x)
    seen = []
    out.grad_fn.register_prehook(lambda go: seen.append(("pre", go)))
    out.grad_fn.register_hook(lambda gi, go: seen.append(("post", gi, go)))
    loss = (out * t.arange(out.numel(), dtype=t.float64).reshape(out.shape)).sum()
    if wanted == "backward":
        loss.backward()
        return seen, w.grad, x.grad
    inputs = {"grad_w": [w], "grad_x": [x]}[wanted]
    return seen, t.autograd.grad(loss, inputs, allow_unused=True)


@pytest.mark.parametrize("wanted", ["backward", "grad_w", "grad_x"])
@pytest.mark.parametrize("name", sorted(_NODE_KINDS))
def test_node_hooks_see_none_for_inputs_that_get_no_gradient(name, wanted):
    same(lambda t: _hook_seen(t, name, wanted))


def test_copy_slices_of_a_base_without_gradient_passes_none():
    # the reported case: ``t[k] = w`` where ``t`` needs no gradient
    def body(t):
        t2 = t.tensor([1.0], requires_grad=True)
        t3 = t.zeros(2, 3, dtype=t.float64)
        t3[0, 1:2] = t2
        seen = []
        t3.grad_fn.register_hook(lambda gi, go: seen.append(gi))
        t3.backward(t.ones(2, 3, dtype=t.float64))
        return seen, t2.grad
    same(body)


def test_copy_slices_create_graph_passes_none_for_an_unwanted_base():
    def body(t):
        w = t.tensor([1.5], dtype=t.float64, requires_grad=True)
        base = t.ones(2, 3, dtype=t.float64, requires_grad=True).clone()
        base[0, 1:2] = w * w
        seen = []
        base.grad_fn.register_hook(lambda gi, go: seen.append(gi))
        g, = t.autograd.grad((base * base).sum(), [w], create_graph=True)
        return seen, g, t.autograd.grad(g.sum(), [w])
    same(body)


def test_an_unwanted_base_is_not_written_through_an_expanded_view():
    # torch refuses the write-back through an overlapping view only when it makes it
    def body(t):
        w = t.tensor([2.0], dtype=t.float64, requires_grad=True)
        base = t.ones(3, dtype=t.float64, requires_grad=True).clone()
        base[:1].expand(3).mul_(w)
        return t.autograd.grad(base.sum(), [w])
    same(body)


def test_grad_viewing_a_view_with_an_offset_matches_torch():
    """autograd.grad's result that views a gradient which itself starts past its storage's
    start (diagonal_scatter's src gradient, a diagonal with an offset, reshaped by a view's
    backward): the same elements (as_strided from the view's own offset; it read the
    diagonal of offset 0)."""
    def body(torch):
        x = torch.zeros(3, 4, 5, dtype=torch.float64, requires_grad=True)
        s = torch.zeros(3, 4, dtype=torch.float64, requires_grad=True)
        w = torch.arange(60.0, dtype=torch.float64).reshape(3, 4, 5)
        out = torch.diagonal_scatter(x, s.view(3, 4), 1, 1, 2)
        g, = torch.autograd.grad(out, s, w)
        return g, g.storage_offset(), g.stride()
    same(body)
