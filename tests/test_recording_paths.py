"""The generated recording path of an op against torch, on the cases its shortcuts skip past:
a view operand whose base changed in place, saved values unpacked by a create_graph pass
(checked for in-place changes, carrying forward-AD tangents), shapes saved from an edge's
metadata, NumPy-scalar results, and ops on inference tensors."""
from __future__ import annotations

import numpy as np
import pytest

from oracle import graph_tree, same

A = np.array([[0.3, -1.2, 0.7], [1.5, 0.1, -0.4]], dtype=np.float32)


def test_view_operand_after_its_base_changed():
    # the op records through the view's regenerated grad_fn (AsStridedBackward0)
    def body(torch):
        base = torch.tensor(A, requires_grad=True).clone()
        v = base[0]
        base.mul_(2)
        out = v * torch.tensor([1.0, 2.0, 3.0])
        out.sum().backward()
        return out, out.grad_fn.next_functions[0][0].name()
    same(body)


def test_view_operand_of_a_tensor_without_grad():
    def body(torch):
        w = torch.tensor(A)
        x = torch.tensor([1.0, -2.0], requires_grad=True)
        y = w.t().mv(x)
        w.requires_grad_()
        return y, w.t().requires_grad, torch.autograd.grad(y.sum(), [x])
    same(body)


def test_create_graph_pass_refuses_a_modified_saved_input():
    def body(torch):
        x = torch.tensor(A, requires_grad=True)
        y = x * 1.0
        z = (y * y).sum()
        y.add_(1)
        return torch.autograd.grad(z, [x], create_graph=True)
    same(body)


def test_create_graph_pass_refuses_a_modified_saved_output():
    def body(torch):
        x = torch.tensor(A, requires_grad=True)
        t = x.tanh()
        z = t.sum()
        t.mul_(2)
        return torch.autograd.grad(z, [x], create_graph=True)
    same(body)


def test_hessian_vector_product_graph_and_values():
    def body(torch):
        w = torch.tensor(A)
        x = torch.tensor([0.5, -1.0, 2.0], requires_grad=True)
        f = (torch.tanh(w @ x) ** 2).sum()
        (g,) = torch.autograd.grad(f, [x], create_graph=True)
        s = (g * torch.tensor([1.0, 0.5, -2.0])).sum()
        (hv,) = torch.autograd.grad(s, [x])
        return g, hv, s
    same(body, rtol=1e-5, atol=1e-6)
    graph = lambda torch: (lambda x: torch.autograd.grad(  # noqa: E731
        (x.tanh() ** 2).sum(), [x], create_graph=True)[0])(torch.tensor(
            [0.5, -1.0], requires_grad=True))
    same(lambda torch: graph_tree(lambda: graph(torch)))


def test_saved_shapes_and_scalar_results():
    def body(torch):
        x = torch.tensor(A, requires_grad=True)
        y = x.unsqueeze(0).expand(3, 2, 3)
        s = (y * y).sum()
        m = (x * x).mean()
        (g,) = torch.autograd.grad(s + m, [x], create_graph=True)
        (gg,) = torch.autograd.grad(g.sum(), [x])
        return s, m, g, gg
    same(body)


def test_forward_ad_over_a_create_graph_pass():
    def body(torch):
        fwAD = torch.autograd.forward_ad
        x = torch.tensor([0.5, -1.0, 2.0], requires_grad=True)
        with fwAD.dual_level():
            d = fwAD.make_dual(x, torch.tensor([1.0, 0.0, -1.0]))
            y = d.tanh()
            (g,) = torch.autograd.grad(y.sum(), [x], create_graph=True)
            return fwAD.unpack_dual(g).tangent, g
    # (torch's first forward-AD call imports modules that warn about torch.jit.script)
    same(body, rtol=1e-5, atol=1e-6, check_warnings=False)


@pytest.mark.parametrize("mode", ["inference", "outside"])
def test_in_place_writing_kernel_on_inference_tensors(mode):
    def body(torch):
        with torch.inference_mode():
            a = torch.tensor(A)
            b = torch.tensor([1.0, 2.0, 3.0])
            if mode == "inference":
                r = a.mv(b)
                return r, r._version, torch.is_inference(r)
        r = a.mv(b)
        return r, r._version, torch.is_inference(r)
    same(body)
