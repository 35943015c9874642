"""The graph as torch builds it: node names and edges, version counters, what is saved, and
the errors and warnings around them, each checked against torch."""
from __future__ import annotations

import subprocess
import sys
import warnings

import pytest

import ember
from ember.autograd import engine

from oracle import same, torch_or_skip


def _edges(node):
    return [(None if f is None else f.name(), nr) for f, nr in node.next_functions]


# -- next_functions: one edge per differentiable tensor argument ------------------------------
@pytest.mark.parametrize("expr", [
    "torch.take(x, torch.tensor([0, 1]))",
    "torch.gather(x, 0, torch.tensor([1, 0]))",
    "torch.where(x > 0, x, 2.0)",
    "x.masked_fill(x > 0, 2.0)",
    "x.index_fill(0, torch.tensor([1]), -1.0)",
    "torch.scatter(x, 0, torch.tensor([0]), torch.ones(1))",
    "x * 2",
    "2 ** x",
    "x // 2",
])
def test_next_functions_are_torchs(expr):
    def body(torch):
        x = torch.tensor([1.0, -2.0, 3.0], requires_grad=True)
        y = eval(expr)  # noqa: S307 - the expression is the test case
        return y.grad_fn.name(), _edges(y.grad_fn)
    same(body)


def test_node_hook_grad_inputs_follow_the_edges():
    def body(torch):
        x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
        y = torch.gather(x, 0, torch.tensor([2, 0]))
        seen = []
        y.grad_fn.register_hook(lambda gi, go: seen.append(len(gi)))
        y.sum().backward()
        return seen, x.grad
    same(body)


# -- .grad made by AccumulateGrad ---------------------------------------------------------------
def test_grad_versions_and_copy_backwards():
    def body(torch):
        out = []
        x = torch.tensor([1.0, 2.0], requires_grad=True)
        (x * x).sum().backward(create_graph=True)
        out.append((x.grad.grad_fn.name(), _edges(x.grad.grad_fn), x.grad._version))
        (x * x).sum().backward(create_graph=True)
        out.append((x.grad.grad_fn.name(), x.grad._version))
        g = x.grad
        (x * x).sum().backward()  # added in place, under no grad: same tensor, version bumped
        out.append((x.grad is g, x.grad.grad_fn.name(), x.grad._version, x.grad.requires_grad))
        y = torch.tensor([1.0, 2.0], requires_grad=True)
        y.sum().backward()  # an expanded gradient is copied into a new tensor
        out.append(y.grad._version)
        y.sum().backward()
        out.append(y.grad._version)
        z = torch.tensor([1.0, 2.0], requires_grad=True)
        (z * 2).sum().backward()  # a fresh gradient nobody holds is taken as it is
        out.append(z.grad._version)
        return out
    same(body, check_warnings=False)


def test_create_graph_backward_warns_once_about_the_reference_cycle(monkeypatch):
    torch_or_skip()
    script = ("import warnings, torch\nwarnings.simplefilter('always')\n"
              "x = torch.ones(2, requires_grad=True)\n"
              "with warnings.catch_warnings(record=True) as w:\n"
              "    warnings.simplefilter('always')\n"
              "    for _ in range(2):\n"
              "        (x * x).sum().backward(create_graph=True)\n"
              "    torch.autograd.grad((x * x).sum(), x, create_graph=True)\n"
              "print([(c.category.__name__, str(c.message)) for c in w])\n")
    expected = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                              check=True).stdout.strip()
    monkeypatch.setattr(engine, "_warned", set())
    x = ember.ones(2, requires_grad=True)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        for _ in range(2):
            (x * x).sum().backward(create_graph=True)
        ember.autograd.grad((x * x).sum(), x, create_graph=True)
    got = [(c.category.__name__, str(c.message).replace("ember.", "torch.")) for c in w]
    assert repr(got) == expected


def test_non_leaf_grad_warning_is_torchs():
    def body(torch):
        y = torch.ones(2, requires_grad=True) * 2
        return y.grad
    same(body)


def test_non_leaf_grad_assigned_is_read_without_warning():
    """torch warns only while a non-leaf has no .grad (differentiable optimizers read the
    .grad assigned to a cloned parameter)."""
    def body(torch):
        y = torch.ones(2, requires_grad=True) * 2
        y.grad = torch.full((2,), 3.0)
        return y.grad
    same(body)


# -- versions and errors after in-place ops -------------------------------------------------------
def _detach_cases(torch):
    x = torch.ones(3, requires_grad=True)
    out = []
    for make in (lambda: x * 1, lambda: x.exp()):
        y = make()
        z = y * y  # saves y
        y.detach_()
        try:
            z.sum().backward()
            out.append(("ok", x.grad.tolist()))
        except RuntimeError as e:
            out.append(str(e))
        y2 = x * 2
        y2.detach_()
        w = x * y2  # saved after the detach: fine
        w.sum().backward()
        out.append((y2._version, y2.requires_grad, y2.is_leaf))
    return out


def test_detach_of_a_saved_tensor_raises_on_backward():
    same(_detach_cases)


@pytest.mark.parametrize("code", ["x[0] = 1.0", "x[:, 1:] = 2.0", "x[:, -3:] = 2.0",
                                  "x[:, :] = 1.0", "x[...] = 1.0", "x[0].mul_(2)",
                                  "x.t().add_(1)", "x[torch.tensor([0])] = 1.0"])
def test_inplace_on_a_view_of_a_leaf(code):
    def body(torch):
        x = torch.ones(2, 3, requires_grad=True)
        exec(code, {"x": x, "torch": torch})  # noqa: S102 - the statement is the test case
    same(body)


def test_mark_dirty_on_a_view_bumps_versions():
    def body(torch):
        class Double(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                x.mul_(2)
                ctx.mark_dirty(x)
                return x

            @staticmethod
            def backward(ctx, g):
                return g * 2
        a = torch.ones(3, requires_grad=True).clone()
        v = a[1:]
        y = Double.apply(v)
        versions = (a._version, v._version, y is v, y.grad_fn.name(), a.grad_fn.name())
        a.sum().backward()
        return versions
    same(body)


def test_one_hot_version():
    same(lambda torch: (torch.nn.functional.one_hot(torch.tensor([0, 2]))._version,
                        torch.nn.functional.one_hot(torch.tensor([], dtype=torch.int64),
                                                    3)._version))


@pytest.mark.parametrize("code", [
    "y = torch.gather(x, 0, torch.tensor([1, 0])); x.mul_(2); y.sum().backward()",
    "y = torch.take(x, torch.tensor([1])); x.add_(1); y.sum().backward()",
    "y = F.avg_pool1d(x.view(1, 1, 4), 2).sum(); y.backward(); y.backward()",
    "y = F.max_pool1d(x.view(1, 1, 4), 2).sum(); y.backward(); y.backward()",
    "y = F.adaptive_avg_pool1d(x.view(1, 1, 4), 2).sum(); y.backward(); y.backward()",
    "y = torch.masked_select(x, x > 1); x.mul_(2); y.sum().backward()",
])
def test_saves_what_torch_saves(code):
    def body(torch):
        x = torch.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True) * 1
        exec(code, {"x": x, "torch": torch, "F": torch.nn.functional})  # noqa: S102
    same(body)


def test_saved_tensor_hooks_count_packs_as_torch():
    def body(torch):
        F = torch.nn.functional
        counts = []
        x = torch.ones(1, 2, 4, requires_grad=True)
        for fn in (lambda: torch.gather(x, 2, torch.tensor([[[1, 0]]])),
                   lambda: F.avg_pool1d(x, 2), lambda: F.max_pool1d(x, 2),
                   lambda: torch.take(x, torch.tensor([1])), lambda: x.cummax(2)):
            n = [0]

            def pack(t):
                n[0] += 1
                return t
            with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
                fn()
            counts.append(n[0])
        return counts
    same(body)


# -- node names --------------------------------------------------------------------------------
def _names(node, depth=3):
    if node is None or depth == 0:
        return None
    return (node.name(), tuple(_names(f, depth - 1) for f, _ in node.next_functions))


@pytest.mark.parametrize("expr", [
    "torch.einsum('ij,jk->ik', x, x.t())", "torch.einsum('ij->j', x)", "torch.einsum('ii', x[:, :2])",
    "torch.einsum('ij,ij->ij', x, x)", "F.linear(x[0], x)", "x[0] @ x.t()", "x.unsqueeze(0) @ x.t()",
    "x[:, :]", "x[..., :]", "x[:, 0:3]", "x[:, -3:]", "x[:3, 1]", "x.t().reshape(3, 2)",
    "torch.tensordot(x, x, 2)", "torch.inner(x[0], x[1])", "x.ravel()", "x.t().ravel()",
    "torch.rsub(x, x)", "torch.rsub(x, 2)", "F.pairwise_distance(x, x)",
])
def test_first_order_node_names(expr):
    def body(torch):
        x = torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], requires_grad=True) * 1
        y = eval(expr, {"x": x, "torch": torch, "F": torch.nn.functional})  # noqa: S307
        return _names(y.grad_fn)
    same(body)


def test_fill_names():
    def body(torch):
        x = torch.ones(3, requires_grad=True) * 1
        y = torch.ones(3, requires_grad=True) * 1
        x.fill_(2.0)
        y.fill_(torch.tensor(3.0, requires_grad=True))
        return _names(x.grad_fn), _names(y.grad_fn)
    same(body)


@pytest.mark.parametrize("fn", ["softmax", "log_softmax"])
def test_second_order_node_names(fn):
    def body(torch):
        x = torch.tensor([[0.3, -1.2, 2.0]], requires_grad=True)
        y = getattr(torch, fn)(x, 1)
        g, = torch.autograd.grad((y * torch.tensor([1.0, 2.0, 3.0])).sum(), x,
                                 create_graph=True)
        gg, = torch.autograd.grad((g * g).sum(), x)
        return _names(g.grad_fn), g, gg
    same(body, rtol=1e-5, atol=1e-6)


def test_index_put_on_views_and_regenerated_views():
    def body(torch):
        out = []
        x = torch.ones(4, requires_grad=True) * 1
        v = x[1:]
        v[torch.tensor([0, 1])] = torch.ones(2, requires_grad=True)
        out.append((_names(x.grad_fn), _names(v.grad_fn), x._version))
        x = torch.ones(4, requires_grad=True) * 1
        v = x[1:]
        x.mul_(2)
        out.append(_names(v.grad_fn))
        return out
    same(body)


_ACTIVATIONS = {
    "sigmoid": "torch.sigmoid(x)", "elu": "F.elu(x, 1.3)", "celu": "F.celu(x, 0.7)",
    "selu": "F.selu(x)", "elu_": "F.elu(x * 1, 1.3, inplace=True)",
    "celu_": "F.celu(x * 1, 0.5, inplace=True)", "gelu": "F.gelu(x)",
    "gelu_tanh": "F.gelu(x, approximate='tanh')", "hardswish": "F.hardswish(x)",
    "softplus": "F.softplus(x, 2.0, 1.0)", "logsigmoid": "F.logsigmoid(x)",
    "hardsigmoid": "F.hardsigmoid(x)",
}


@pytest.mark.parametrize("name", sorted(_ACTIVATIONS))
def test_activation_second_order(name):
    """The first derivative is torch's backward op (EluBackwardBackward0, ...), with its
    values at the kinks and its own derivative (or torch's refusal: hardsigmoid)."""
    def body(torch):
        x = torch.tensor([-40.0, -3.0, -1.5, -0.2, 0.0, 0.3, 3.0, 25.0], dtype=torch.float64,
                         requires_grad=True)
        y = eval(_ACTIVATIONS[name], {"x": x, "torch": torch,  # noqa: S307
                                      "F": torch.nn.functional})
        g, = torch.autograd.grad((y * torch.arange(8.0)).sum(), x, create_graph=True)
        gg, = torch.autograd.grad((g * g).sum(), x)
        return _names(g.grad_fn), g, gg
    same(body, rtol=1e-6, atol=1e-9)


def test_gradients_summed_into_a_0d_input():
    """Two paths into one 0-d input: the engine sums both (a 0-d sum is no NumPy scalar that
    an in-place add would drop)."""
    def body(torch):
        u = torch.zeros((), dtype=torch.float64, requires_grad=True)
        a = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64)
        g, = torch.autograd.grad((u * a).sum() + (u * a * 2).sum(), u)
        ((u * a).sum() + (u * a * 2).sum()).backward()
        return g, u.grad
    same(body)


@pytest.mark.parametrize("expr", [
    "torch.remainder(x, c)", "torch.fmod(x, c)", "torch.lerp(x, c, 0.3)",
    "torch.addcmul(x, c, c)", "torch.sub(c, x, alpha=2)", "x * c", "x.exp()", "c / x",
    "torch.maximum(x, c)"])
def test_second_pass_after_free(expr):
    """After a pass that freed the graph, another pass raises only where a formula it runs
    reads a freed tensor (remainder's gradient for x reads none)."""
    def body(torch):
        x = torch.tensor([1.5, -2.0, 3.0], requires_grad=True)
        c = torch.tensor([2.0, 3.0, -1.0])
        y = eval(expr, {"x": x, "c": c, "torch": torch})  # noqa: S307
        g1, = torch.autograd.grad(y.sum(), x)
        g2, = torch.autograd.grad(y.sum(), x)
        return g1, g2
    same(body)


@pytest.mark.parametrize("op", ["copy_", "add_", "mul_"])
def test_inplace_from_a_view_of_self(op):
    """The node's edge for a view of the tensor written is the view's history before the
    write (PermuteBackward0); the view regenerates after it."""
    def body(torch):
        a = torch.tensor([[1.0, 2.0, 3.0]], requires_grad=True)
        y = a * 2
        v = y.permute(1, 0).permute(1, 0)
        getattr(y, op)(v)
        edges = _edges(y.grad_fn)
        (y * torch.tensor([1.0, 2.0, 3.0])).sum().backward()
        return edges, _names(v.grad_fn), a.grad
    same(body)


def test_inplace_on_a_view_from_itself():
    def body(torch):
        a = torch.tensor([1.14, 0.72], requires_grad=True)
        y = a * 1
        v = y.unflatten(-1, (1, -1))
        v.add_(v)
        first = _edges(y.grad_fn), _edges(v.grad_fn)
        v.add_(v)
        y.sum().backward()
        return first, _edges(y.grad_fn), _edges(v.grad_fn), a.grad
    same(body)


def test_rsqrt_gradient_nodes():
    """rsqrt's formula as torch's: -0.5 * grad (MulBackward1) * result.pow(3)."""
    def body(torch):
        x = torch.tensor([[1.77, 0.41], [1.2, 1.0]], dtype=torch.float64, requires_grad=True)
        g, = torch.autograd.grad(x.rsqrt().pow(2).sum(), x, create_graph=True)
        gg, = torch.autograd.grad(g.sum(), x)
        return _names(g.grad_fn), g, gg
    same(body)


@pytest.mark.parametrize("fn", ["std", "var", "std_mean", "var_mean"])
def test_degrees_of_freedom_warning_names_the_op(fn):
    def body(torch):
        return getattr(torch, fn)(torch.tensor([1.0]))
    same(body)


@pytest.mark.parametrize("grad", [False, True])
def test_max_pool1d_is_a_view_only_with_indices(grad):
    """torch's max_pool1d squeezes its with-indices result (a view) only where a gradient may
    be needed; otherwise its kernel gives a tensor of its own."""
    def body(torch):
        out = []
        for x in (torch.tensor([[-1.39, 0.99, 0.3, 2.0]], requires_grad=grad),
                  torch.tensor([[[-1.39, 0.99, 0.3, 2.0]]], requires_grad=grad)):
            y = torch.nn.functional.max_pool1d(x, 2)
            with torch.no_grad():
                z = torch.nn.functional.max_pool1d(x, 2)
            out.append((y, y._base is not None, z._base is not None, y._version, z._version))
        return out
    same(body)


def test_div_gradient_for_the_divisor():
    """-grad * ((self / other) / other), as torch's formula: the same nodes and values, 0/0
    included."""
    def body(torch):
        x = torch.tensor([1.5, 2.0, 0.0], dtype=torch.float64, requires_grad=True)
        y = torch.tensor([0.5, 3.0, 0.0], dtype=torch.float64, requires_grad=True)
        g, = torch.autograd.grad((x / y).exp().sum(), y, create_graph=True)
        return _names(g.grad_fn), g, torch.autograd.grad(g.sum(), [x, y])
    same(body)


@pytest.mark.parametrize("fn", ["logaddexp", "logaddexp2"])
def test_logaddexp_of_nan_is_quiet(fn):
    def body(torch):
        x = torch.tensor([float("nan"), 1.0, float("inf")], requires_grad=True)
        return getattr(torch, fn)(x, torch.tensor([1.0, float("nan"), float("inf")]))
    same(body)
