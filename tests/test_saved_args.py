"""The arguments a node shows as ``grad_fn._saved_<name>`` for calls the op table's samples
leave out: slice bounds left out, var's correction given or not, activations' defaults."""
from __future__ import annotations

import pytest
from oracle import same


def _shown(node, *names):
    """Each named saved argument with its type (an int and a float of one value differ)."""
    return [(name, type(getattr(node, f"_saved_{name}")).__name__,
             getattr(node, f"_saved_{name}")) for name in names]


@pytest.mark.parametrize("key", ["1:3", "-3:", ":", "::2", "1:100", "-1:-3:-1"])
def test_slice_bounds(key):
    def body(torch):
        x = torch.ones(6, 5, requires_grad=True)  # noqa: F841 - read by the eval
        return _shown(eval(f"x[{key}]").grad_fn, "start", "end", "step")
    same(body)


@pytest.mark.parametrize("call", [
    "x.var()", "x.var(keepdim=True)", "x.var(0)", "x.var(dim=0)",
    "x.var(True)", "x.var(unbiased=False)", "x.var(correction=2)", "x.std()", "x.std(1, True)",
    "torch.var_mean(x)[0]", "torch.std_mean(x, 1)[0]", "torch.std_mean(x)[0]"])
def test_var_correction(call):
    def body(torch):
        x = torch.arange(20.0).reshape(4, 5).requires_grad_()
        out = eval(call)
        out.sum().backward()
        return _shown(out.grad_fn, "correction"), out, x.grad
    same(body)


@pytest.mark.parametrize("call, names", [
    ("F.elu(x)", ("alpha", "scale", "input_scale")),
    ("F.elu(x, 2)", ("alpha", "scale", "input_scale")),
    ("F.selu(x)", ("alpha", "scale", "input_scale")),
    ("F.relu6(x)", ("min_val", "max_val")),
    ("F.hardtanh(x, -2.0, 2.0)", ("min_val", "max_val")),
    ("F.softplus(x)", ("beta", "threshold")),
    ("F.softplus(x, 2.0, 10.0)", ("beta", "threshold")),
])
def test_activation_scalars(call, names):
    def body(torch):
        F = torch.nn.functional  # noqa: F841 - read by the eval
        x = torch.linspace(-8, 8, 9, requires_grad=True)
        out = eval(call)
        out.sum().backward()
        return _shown(out.grad_fn, *names), out, x.grad
    same(body)


@pytest.mark.parametrize("call", [
    "a.mm(b)", "b.t().mm(a.t())", "torch.addmm(c, a, b)", "F.linear(a, b.t(), c)", "a @ b"])
def test_matmul_input_sizes(call):
    """mm/addmm's nodes show both inputs' sizes beside their strides, either input grad-free."""
    def body(torch):
        F = torch.nn.functional  # noqa: F841 - read by the eval
        a = torch.ones(3, 4, requires_grad=True)  # noqa: F841 - read by the eval
        b, c = torch.ones(4, 2), torch.zeros(2)  # noqa: F841 - read by the eval
        node = eval(call).grad_fn
        return sorted((n, getattr(node, n)) for n in dir(node) if n.endswith("_sym_sizes"))
    same(body)


@pytest.mark.parametrize("call", [
    "F.glu(x)", "F.glu(x, 0)", "F.glu(x, -2)", "torch.real(z)", "torch.imag(z)", "z.real",
    "torch.real(z[0, 0])"])
def test_dims_as_torch_saves_them(call):
    """glu keeps its dim as given; real/imag select the wrapped last dim of view_as_real."""
    def body(torch):
        F = torch.nn.functional  # noqa: F841 - read by the eval
        x = torch.arange(16.0).reshape(4, 4).requires_grad_()
        z = torch.complex(x, -x)  # noqa: F841 - read by the eval
        out = eval(call)
        out.sum().backward()
        return out.grad_fn._saved_dim, out, x.grad
    same(body)


@pytest.mark.parametrize("call, names", [
    ("torch.diag(v)", ("dim1", "dim2", "offset")), ("torch.diag(m, -1)", ("dim1", "dim2")),
    ("m.H", ("dim0", "dim1")), ("m.roll(1, -1)", ("dims", "shifts")),
    ("m.roll((1, 2), (0, -1))", ("dims",))])
def test_dims_shown_unwrapped(call, names):
    def body(torch):
        v, m = torch.ones(3, requires_grad=True), torch.arange(12.0).reshape(3, 4).requires_grad_()
        out = eval(call)
        out.sum().backward()
        return _shown(out.grad_fn, *names), out, v.grad, m.grad
    same(body)


@pytest.mark.parametrize("call", [
    "torch.linalg.norm(v)", "torch.linalg.norm(m)", "torch.linalg.norm(m, dim=1)",
    "torch.linalg.norm(v, 3)", "torch.linalg.vector_norm(v)", "torch.linalg.matrix_norm(m)"])
def test_norm_ord(call):
    def body(torch):
        v, m = torch.ones(3, requires_grad=True), torch.arange(12.0).reshape(3, 4).requires_grad_()
        out = eval(call)
        out.backward()
        return _shown(out.grad_fn, "ord"), out, v.grad, m.grad
    same(body)
