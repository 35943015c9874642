"""The engine's shortcuts for the usual call give what its general path gives, as torch does.

``loss.backward()`` with nothing but a scalar goes around the general argument handling, a
leaf's first gradient that nobody else holds is taken over through one check, a leaf
without hooks is run inline, and the ready queue compares its entries in C. Each case here
is one of those shortcuts' edges, compared with torch: errors, ``retain_graph``, ``.grad``
identity, version and strides, hooks added to a leaf's node after a first pass, and the
order in which leaves are reached.
"""
from __future__ import annotations

import numpy as np
import pytest

from oracle import same


def _mlp(lib, hooks=None):
    """A tiny MLP's four parameters and its loss."""
    rng = np.random.default_rng(0)
    x = lib.tensor(rng.standard_normal((2, 4)).astype(np.float32))
    W1 = lib.tensor(rng.standard_normal((4, 8)).astype(np.float32), requires_grad=True)
    b1 = lib.zeros(8, requires_grad=True)
    W2 = lib.tensor(rng.standard_normal((8, 3)).astype(np.float32), requires_grad=True)
    b2 = lib.zeros(3, requires_grad=True)
    params = (W1, b1, W2, b2)
    if hooks is not None:
        for k, p in enumerate(params):
            p.register_post_accumulate_grad_hook(lambda p, k=k: hooks.append(k))
    loss = lib.nn.functional.cross_entropy(lib.relu(x @ W1 + b1) @ W2 + b2,
                                           lib.tensor([0, 2]))
    return params, loss


@pytest.mark.parametrize("case", ["non-scalar", "complex", "no-grad", "int-tuple"])
def test_implicit_gradient_errors(case):
    def body(torch):
        x = torch.tensor([1.0, 2.0], requires_grad=True)
        if case == "non-scalar":
            (x * 2).backward()
        elif case == "complex":
            (x.to(torch.complex64) * 2).sum().backward()
        elif case == "no-grad":
            torch.tensor(1.0).backward()
        else:
            torch.autograd.backward(((x * 2).sum(),), retain_graph=True)
        return x.grad
    same(body)


@pytest.mark.parametrize("retain", [None, False, True])
def test_retain_graph_on_the_plain_call(retain):
    def body(torch):
        x = torch.tensor([1.0, 2.0], requires_grad=True)
        y = (x.exp() * 3).sum()
        y.backward(retain_graph=retain)
        first = x.grad.clone()
        y.backward()  # a second pass: torch's error unless the graph was retained
        return first, x.grad
    same(body)


def test_first_and_later_gradients_of_leaves():
    """The first gradient taken over (version 0, the very Tensor kept after), later ones
    added in place (one version per pass), for every parameter of a small network."""
    def body(torch):
        params, loss = _mlp(torch)
        loss.backward()
        grads = [p.grad for p in params]
        versions = [p.grad._version for p in params]
        params2, loss2 = _mlp(torch)
        for p, q in zip(params, params2):
            q.grad = p.grad
        loss2.backward()
        return (versions, [q.grad._version for q in params2],
                [q.grad is g for q, g in zip(params2, grads)], [p.grad for p in params2])
    same(body)


def test_leaf_gradient_layout():
    """A leaf laid out otherwise (transposed) gets its gradient copied with its strides
    (version 1); a scalar leaf as the root gets the ones it was given."""
    def body(torch):
        w = torch.ones(3, 4).t().detach().requires_grad_()
        (w * torch.arange(12.0).reshape(4, 3)).sum().backward()
        s = torch.tensor(2.0, requires_grad=True)
        s.backward()
        return w.grad, w.grad.stride(), w.grad._version, s.grad, s.grad._version
    same(body)


def test_expanded_gradient_set_by_user():
    def body(torch):
        x = torch.ones(3, requires_grad=True)
        x.grad = torch.zeros(1).expand(3)
        (x * 2).sum().backward()
        return x.grad
    same(body)


def test_hooks_added_to_a_leaf_node_after_a_pass():
    """A leaf run inline in one pass gets the general path once its node has a hook."""
    def body(torch):
        x = torch.tensor([1.0, 2.0], requires_grad=True)
        (x * 3).sum().backward()
        seen = []
        y = (x * 5).sum()
        node = y.grad_fn.next_functions[0][0]
        node.register_prehook(lambda g: seen.append(g[0].clone()))
        node.register_hook(lambda gi, go: seen.append(go[0] * 2))
        y.backward()
        x.register_hook(lambda g: g * 10)
        (x * 7).sum().backward()
        return seen, x.grad
    same(body)


def test_order_leaves_are_reached():
    """Leaves of equal sequence numbers come off the ready queue in torch's order."""
    def body(torch):
        order = []
        _, loss = _mlp(torch, order)
        loss.backward()
        return order
    same(body)


def _stop_then_backward(leaf, loss):
    leaf.requires_grad_(False)
    loss.backward()


FIRST_GRADIENTS = {
    # a gradient the caller holds, passed through add to two leaves: copied into both
    "given-shared": lambda torch, a, b, g: (a + b).backward(g),
    # a formula's own gradient, one per leaf: taken over (version 0)
    "made": lambda torch, a, b, g: (a * g + b * 2).sum().backward(),
    # sum's gradient, an expanded view: copied with the leaf's strides
    "expanded": lambda torch, a, b, g: (a.sum() + b.sum()).backward(),
    # a transposed (non-contiguous) gradient for a contiguous leaf: copied with the leaf's
    # strides, or kept as it is when the layout policy is relaxed
    "transposed": lambda torch, a, b, g: ((a.t().contiguous() * g.t()).sum()
                                          + (b * 2).sum()).backward(),
    # a leaf that stopped requiring grad after the graph was built gets nothing
    "stopped": lambda torch, a, b, g: _stop_then_backward(b, (a * g + b * 3).sum()),
    # a bias's gradient, summed over its leading dimension
    "broadcast": lambda torch, a, b, g: (a * g + b[0]).sum().backward(),
}


@pytest.mark.parametrize("case", list(FIRST_GRADIENTS))
@pytest.mark.parametrize("enforce", [True, False])
def test_first_gradient_of_a_plain_leaf(case, enforce):
    """A leaf without hooks takes its first gradient over, or copies it, as torch decides:
    its values, identity with the given gradient, strides and version."""
    def body(torch):
        a = torch.arange(6.0).reshape(2, 3).requires_grad_()
        b = torch.ones(2, 3, requires_grad=True)
        g = torch.full((2, 3), 0.5)
        with torch.autograd.enforce_grad_layout_policy(enforce):
            FIRST_GRADIENTS[case](torch, a, b, g)
        return [(p.grad, p.grad is g, p.grad.stride(), p.grad._version)
                if p.grad is not None else None for p in (a, b)]
    same(body)


def test_gradients_summed_over_leading_dimensions():
    """A 0-d leaf's gradient summed from a matrix is torch's sum() (a second gradient added
    into it in place: version 1), a vector's a view in torch (added out of place: 0)."""
    def body(torch):
        s = torch.tensor(1.0, requires_grad=True)
        v = torch.ones(3, requires_grad=True)
        x = torch.ones(2, 3)
        # (the summed gradients made last, so they reach the leaves first)
        ((s * 2) + (x + s).sum() + (v * 2).sum() + (x + v).sum()).backward()
        return s.grad, s.grad._version, v.grad, v.grad._version
    same(body)


@pytest.mark.parametrize("create_graph", [False, True])
def test_broadcast_input_gradient_summed_and_cast(create_graph):
    """A broadcast input's gradient is summed to its shape, then cast to its dtype when the
    op promoted (the summed gradient of the same dtype returned as it is)."""
    def body(torch):
        b32 = torch.zeros(3, requires_grad=True)
        b64 = torch.zeros(1, 3, dtype=torch.float64, requires_grad=True)
        x = torch.ones(2, 3, dtype=torch.float64)
        ((x + b32) * (x * b64 + 2)).sum().backward(create_graph=create_graph)
        return b32.grad, b64.grad
    # (create_graph's reference-cycle warning comes once per process: not compared here)
    same(body, grad_fn=False, check_warnings=False)


def test_tensor_backward_calls_autograd_backward_as_set_on_the_module(monkeypatch):
    """``Tensor.backward`` looks ``autograd.backward`` up at each call, as torch's does: a
    wrapper put there (a profiler's, a test's) sees every call."""
    import ember
    seen = []
    original = ember.autograd.backward

    def wrapper(*args, **kwargs):
        seen.append(args[0])
        return original(*args, **kwargs)
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    (x * 2).sum().backward()  # (before the wrapper: the module already imported)
    monkeypatch.setattr(ember.autograd, "backward", wrapper)
    y = (x * 3).sum()
    y.backward()
    assert seen == [y] and x.grad.tolist() == [5.0, 5.0]


GRAD_CALLS = {
    "first-order": lambda torch, x, y: torch.autograd.grad((x * y).sum(), [x]),
    "create_graph": lambda torch, x, y: torch.autograd.grad((x ** 3).sum(), (x,),
                                                            create_graph=True),
    "retained": lambda torch, x, y: _grad_twice(torch, (x.exp() * y).sum(), x),
    "freed": lambda torch, x, y: _grad_twice(torch, (x.exp() * y).sum(), x, retain=None),
    "unused": lambda torch, x, y: torch.autograd.grad((x * 2).sum(), [x, y]),
    "non-scalar": lambda torch, x, y: torch.autograd.grad(x * 2, [x]),
    "no-grad-output": lambda torch, x, y: torch.autograd.grad(y.sum(), [x]),
    "not-a-tensor": lambda torch, x, y: torch.autograd.grad((x * 2).sum(), [x, 3]),
    "none-input": lambda torch, x, y: torch.autograd.grad((x * 2).sum(), (x, None)),
    "backward-not-a-tensor": lambda torch, x, y: (x * 2).sum().backward(inputs=[x, 3]),
    "output-not-a-tensor": lambda torch, x, y: torch.autograd.grad([x.sum(), 3], [x]),
    "backward-output-not-a-tensor": lambda torch, x, y: torch.autograd.backward([x.sum(), 3]),
}


def _grad_twice(torch, out, x, retain=True):
    first = torch.autograd.grad(out, [x], retain_graph=retain)
    return first, torch.autograd.grad(out, [x])


@pytest.mark.parametrize("case", list(GRAD_CALLS))
def test_usual_autograd_grad_call(case):
    """``grad(loss, [x])`` with nothing else goes around the general argument handling:
    the same gradients, graphs and errors as torch."""
    def body(torch):
        x = torch.tensor([1.0, 2.0], requires_grad=True)
        y = torch.tensor([3.0, 4.0], requires_grad=True)
        return GRAD_CALLS[case](torch, x, y)
    same(body)
