"""Which error an in-place op raises when several apply, in torch 2.13's order: autograd's
refusals (a view made in no_grad / inference mode / by a multi-output op, a view of a leaf, a
leaf), then the kernel's own checks (overlap, shape, dtype), and the update of an inference
tensor outside inference mode only after the write. Also copy_'s shape errors and
take_along_dim's indices (read modulo the dim's size).

Each body runs on PyTorch and on ember (``oracle.same``); the tests skip without torch.
"""
from __future__ import annotations

import pytest
from oracle import same


def _leaf(t):
    return t.tensor([1., 2, 3], requires_grad=True)


def _no_grad_view(t):
    x = t.ones(3, requires_grad=True).clone()
    with t.no_grad():
        return x[:2]


def _inference_view(t):
    x = t.ones(3, requires_grad=True)
    with t.inference_mode():
        return x[:2]


def _inference(t):
    with t.inference_mode():
        return t.ones(3)


_CASES = {
    "leaf_before_lerp_dtype": (_leaf, lambda t, a: a.lerp_(t.ones(3, dtype=t.float64), 0.5)),
    "leaf_before_shape": (_leaf, lambda t, a: a.mul_(t.ones(2, 3))),
    "leaf_before_index_range": (_leaf, lambda t, a: a.index_add_(0, t.tensor([5]), t.ones(1))),
    "leaf_before_view_op_dim": (lambda t: t.ones(2, 2, 2, requires_grad=True),
                                lambda t, a: a.t_()),
    "leaf_before_squeeze_dim": (_leaf, lambda t, a: a.squeeze_(5)),
    "no_grad_view_before_dtype": (_no_grad_view,
                                  lambda t, a: a.lerp_(t.ones(2, dtype=t.float64), 0.5)),
    "inference_view_before_shape": (_inference_view, lambda t, a: a.add_(t.ones(3))),
    "inference_tensor_shape_first": (_inference, lambda t, a: a.add_(t.ones(2, 3))),
    "type_error_before_leaf": (_leaf, lambda t, a: a.atan2_(1.99)),
    "leaf_before_bool_sub": (_leaf, lambda t, a: a.sub_(t.tensor([True, False, True]))),
    "leaf_before_integer_addcdiv": (_leaf, lambda t, a: a.addcdiv_(t.tensor([1, 2, 3]),
                                                                   t.tensor([1, 2, 3]))),
    "expanded_copies_itself": (lambda t: t.zeros(()).expand(3),
                               lambda t, a: (a.copy_(a), a._version)),
    "expanded_copies_same_layout": (lambda t: t.zeros(()).expand(3),
                                    lambda t, a: (a.copy_(a.view(3)), a._version)),
    "copy_not_broadcast_to_self": (lambda t: t.ones(2, 1), lambda t, a: a.copy_(t.ones(2, 2))),
    "copy_of_more_dims": (lambda t: t.ones(2), lambda t, a: a.copy_(t.ones(1, 2))),
    "copy_into_0dim": (lambda t: t.ones(()), lambda t, a: a.copy_(t.ones(4, 4))),
    "copy_not_broadcastable": (lambda t: t.ones(3, 0), lambda t, a: a.copy_(t.ones(4, 1, 3))),
}


@pytest.mark.parametrize("name", sorted(_CASES))
def test_first_refusal(name):
    make, write = _CASES[name]
    same(lambda t: write(t, make(t)))


@pytest.mark.parametrize("write", [
    lambda t, a: a.add_(1), lambda t, a: a.unsqueeze_(0), lambda t, a: a.copy_(t.zeros(3)),
    lambda t, a: a.__setitem__(0, 7.), lambda t, a: a.fill_(4),
    lambda t, a: a.add_(t.ones(3, requires_grad=True)),
], ids=["add_", "unsqueeze_", "copy_", "setitem", "fill_", "add_grad"])
def test_inference_tensor_is_written_then_refused(write):
    """torch writes an inference tensor (outside inference mode) before refusing the update."""
    def body(t):
        a = _inference(t)
        try:
            write(t, a)
        except RuntimeError as e:
            return str(e), a.tolist(), tuple(a.shape)
        return None
    same(body)


def test_take_along_dim_reads_indices_modulo_the_size():
    def body(t):
        x = t.arange(12., requires_grad=True)
        y = t.take_along_dim(x.reshape(3, 4), t.tensor([[4], [5], [-1], [70]])[:3], 1)
        y.sum().backward()
        out = [y, x.grad, y.grad_fn.next_functions[0][0].name()]
        for fn in (lambda: t.take_along_dim(t.ones(2, 0), t.tensor([[1], [0]]), 1),
                   lambda: t.take_along_dim(t.ones(2, 0), t.zeros(2, 0, dtype=t.long), 1),
                   lambda: t.take_along_dim(t.arange(12.), t.tensor([12]))):
            try:
                out.append(fn())
            except RuntimeError as e:
                out.append(str(e))
        return out
    same(body)
