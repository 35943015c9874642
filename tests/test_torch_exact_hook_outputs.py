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
