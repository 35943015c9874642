"""``ember.autograd.functional``: vjp, jvp, jacobian, hessian, hvp and vhp against torch 2.13
(values, shapes, tuple structure, create_graph, strict-mode errors).
"""
import numpy as np
import pytest
from oracle import same

import ember

GEN = np.random.default_rng(0)
A = GEN.standard_normal((2, 3))
B = GEN.standard_normal(3)
C = GEN.standard_normal((3, 2))


def _inputs(torch):
    return (torch.tensor(A), torch.tensor(B))


def f_single(x):
    return (x.exp() * x.sin()).sum(1)


def f_pair(x, y):
    return (x * y).tanh(), (x @ y).exp()


def f_scalar(x, y):
    return ((x * y).sin() ** 2).sum() + (y ** 3).sum()


@pytest.mark.parametrize("create_graph", [False, True])
def test_vjp(create_graph):
    def body(torch):
        F = torch.autograd.functional
        x, y = _inputs(torch)
        out1 = F.vjp(f_single, x, torch.ones(2, dtype=torch.float64), create_graph=create_graph)
        out2 = F.vjp(f_pair, (x, y), (torch.ones(2, 3, dtype=torch.float64),
                                      torch.ones(2, dtype=torch.float64)),
                     create_graph=create_graph)
        out3 = F.vjp(lambda a: a.sum(), torch.tensor(B))
        return out1, out2, out3
    same(body, rtol=1e-10, grad_fn=False, check_warnings=False)


@pytest.mark.parametrize("create_graph", [False, True])
def test_jvp(create_graph):
    def body(torch):
        F = torch.autograd.functional
        x, y = _inputs(torch)
        return (F.jvp(f_single, x, torch.ones(2, 3, dtype=torch.float64),
                      create_graph=create_graph),
                F.jvp(f_pair, (x, y), (torch.ones(2, 3, dtype=torch.float64) / 2,
                                       torch.ones(3, dtype=torch.float64)),
                      create_graph=create_graph),
                F.jvp(lambda a: a * 2, torch.tensor([1.5])))
    same(body, rtol=1e-10, grad_fn=False, check_warnings=False)


@pytest.mark.parametrize("vectorize", [False, True])
@pytest.mark.parametrize("create_graph", [False, True])
def test_jacobian_structure_and_values(vectorize, create_graph):
    def body(torch):
        F = torch.autograd.functional
        x, y = _inputs(torch)
        kw = {"vectorize": vectorize, "create_graph": create_graph}
        return (F.jacobian(f_single, x, **kw),
                F.jacobian(f_pair, (x, y), **kw),
                F.jacobian(lambda a: (a * 2,), (x,), **kw),
                F.jacobian(lambda a, b: a.sum() * 0 + 1, (x, y), **kw))
    same(body, rtol=1e-10, grad_fn=False, check_warnings=False)


def test_jacobian_forward_mode():
    def body(torch):
        F = torch.autograd.functional
        x, y = _inputs(torch)
        return (F.jacobian(f_single, x, vectorize=True, strategy="forward-mode"),
                F.jacobian(f_pair, (x, y), vectorize=True, strategy="forward-mode"))
    same(body, rtol=1e-10, check_warnings=False)


@pytest.mark.parametrize("vectorize", [False, True])
def test_hessian(vectorize):
    def body(torch):
        F = torch.autograd.functional
        x, y = _inputs(torch)
        return (F.hessian(f_scalar, (x, y), vectorize=vectorize),
                F.hessian(lambda a: (a ** 3).sum(), y, vectorize=vectorize),
                F.hessian(lambda a: (a ** 3).sum(), y, create_graph=True))
    same(body, rtol=1e-10, grad_fn=False, check_warnings=False)


def test_hessian_outer_forward_mode():
    def body(torch):
        F = torch.autograd.functional
        x, y = _inputs(torch)
        return F.hessian(f_scalar, (x, y), vectorize=True,
                         outer_jacobian_strategy="forward-mode")
    same(body, rtol=1e-10, grad_fn=False, check_warnings=False)


@pytest.mark.parametrize("fn", ["hvp", "vhp"])
@pytest.mark.parametrize("create_graph", [False, True])
def test_hvp_vhp(fn, create_graph):
    def body(torch):
        F = getattr(torch.autograd.functional, fn)
        x, y = _inputs(torch)
        v = (torch.ones(2, 3, dtype=torch.float64), torch.arange(3, dtype=torch.float64))
        return (F(f_scalar, (x, y), v, create_graph=create_graph),
                F(lambda a: (a ** 3).sum(), y, torch.ones(3, dtype=torch.float64)))
    same(body, rtol=1e-10, grad_fn=False, check_warnings=False)


def test_create_graph_keeps_user_graph():
    """With create_graph=True the results stay differentiable w.r.t. the user's inputs."""
    x = ember.tensor(B, requires_grad=True)
    _, (vj,) = ember.autograd.functional.vjp(lambda a: (a ** 3,), (x,), (ember.ones(3,
                                             dtype=ember.float64),), create_graph=True)
    (g,) = ember.autograd.grad(vj.sum(), x)
    np.testing.assert_allclose(g.numpy(), 6 * B)


def _err(torch, fn):
    try:
        fn()
    except Exception as e:
        return type(e).__name__, str(e)
    return None


def test_errors_as_torch():
    def body(torch):
        F = torch.autograd.functional
        x, y = _inputs(torch)
        lin = lambda a: a * 2
        return [
            _err(torch, lambda: F.vjp(lin, [x])),
            _err(torch, lambda: F.vjp(lin, (x, 3))),
            _err(torch, lambda: F.vjp(lin, x)),
            _err(torch, lambda: F.vjp(lin, x, torch.ones(3))),
            _err(torch, lambda: F.vjp(lambda a, b: (a, b), (x, y), (x,))),
            _err(torch, lambda: F.vjp(lambda a, b: (a, b), (x, y), (x, x))),
            _err(torch, lambda: F.jvp(lin, x)),
            _err(torch, lambda: F.vjp(lambda a: a.detach(), x, x, strict=True)),
            _err(torch, lambda: F.vjp(lambda a, b: a * 2, (x, y), x, strict=True)),
            _err(torch, lambda: F.jvp(lin, x, x, strict=True)),
            _err(torch, lambda: F.jvp(lambda a: a.detach() * 0 + 1, x, x, strict=True)),
            _err(torch, lambda: F.jacobian(lambda a, b: a * 2, (x, y), strict=True)),
            _err(torch, lambda: F.jacobian(lin, x, strict=True, vectorize=True)),
            _err(torch, lambda: F.jacobian(lin, x, strategy="sideways")),
            _err(torch, lambda: F.jacobian(lin, x, strategy="forward-mode")),
            _err(torch, lambda: F.jacobian(lin, x, strategy="forward-mode", create_graph=True)),
            _err(torch, lambda: F.jacobian(lin, x, strategy="forward-mode", strict=True)),
            _err(torch, lambda: F.hessian(lin, x)),
            _err(torch, lambda: F.hessian(lambda a: (a, a), x)),
            _err(torch, lambda: F.hessian(lambda a: (a * 2).sum(), x, strict=True)),
            _err(torch, lambda: F.hvp(lambda a: (a ** 2).sum(), x, strict=True)),
            _err(torch, lambda: F.hvp(lambda a: (a ** 2).sum(), x, x, strict=True)),
            _err(torch, lambda: F.vhp(lambda a: (a * 2).sum(), x, x, strict=True)),
            _err(torch, lambda: F.hvp(lambda a: a ** 2, x, x)),
            _err(torch, lambda: F.vhp(lambda a: (a ** 2).sum(), x, y)),
            _err(torch, lambda: F.hvp(lambda a: (a ** 3).sum(), x, x, strict=True,
                                      create_graph=True)),
        ]
    same(body)


def _mlp(w1, b1, w2):
    def f(x):
        h = ember.nn.functional.linear(x.unsqueeze(0).expand(4, 3), w1, b1).tanh()
        return (h @ w2).t().sigmoid().mean(1)
    return f


@pytest.mark.parametrize("create_graph", [False, True])
def test_vectorized_jacobian_and_hessian_run_each_node_once(monkeypatch, create_graph):
    """vectorize=True is one batched backward: no node of an MLP runs once per row."""
    from ember.autograd import _batched
    per_row = []
    original = _batched.per_row
    monkeypatch.setattr(_batched, "per_row",
                        lambda task, fn, *a: per_row.append(fn.name()) or original(task, fn, *a))
    F = ember.autograd.functional
    gen = np.random.default_rng(1)
    w1, b1, w2, x = (ember.tensor(gen.standard_normal(s)) for s in [(5, 3), (5,), (5, 2), (3,)])
    f = _mlp(w1, b1, w2)
    fast = F.jacobian(f, x, vectorize=True, create_graph=create_graph)
    hess = F.hessian(lambda v: f(v).sum(), x, vectorize=True)
    rev = ember.func.jacrev(f)(x)
    assert per_row == []
    np.testing.assert_allclose(rev.numpy(), fast.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(fast.detach().numpy(), F.jacobian(f, x).numpy(), rtol=1e-12)
    np.testing.assert_allclose(hess.numpy(), F.hessian(lambda v: f(v).sum(), x).numpy(),
                               rtol=1e-12)
    # an op without a batched formula (cumsum) runs once per row, with the same result
    g = lambda v: f(v).cumsum(0)  # noqa: E731
    np.testing.assert_allclose(F.jacobian(g, x, vectorize=True).numpy(),
                               F.jacobian(g, x).numpy(), rtol=1e-12)
    assert per_row == ["CumsumBackward0"]


def test_batched_grad_with_a_hook_sees_each_example():
    """A hook in the graph sees one example's gradient, as in an ordinary backward."""
    def body(torch):
        x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
        seen = []
        y = x * 3
        y.register_hook(lambda g: seen.append(tuple(g.shape)))
        (g,) = torch.autograd.grad(y.sin(), x, torch.eye(3), is_grads_batched=True)
        return g, seen[0]
    same(body)


def test_batched_grad_errors():
    def body(torch):
        x = torch.ones(3, requires_grad=True)
        y = x * 2
        return torch.autograd.grad(y, x, torch.ones(2, 3, 1), is_grads_batched=True)
    from oracle import run
    got = run(body, ember).error
    assert got[0] == "RuntimeError" and "If `is_grads_batched=True`" in got[1]
    # (torch's message drops the batch dimension of the first example again: [1], not [3, 1])
    assert "grad_output[0] has a shape of ember.Size([1])" in got[1]
    same(body)


def test_forward_mode_jacobian_is_one_batched_pass(monkeypatch):
    """strategy="forward-mode" pushes every basis tangent through at once: an elementwise
    function runs each op once, whatever the number of input elements."""
    from ember.autograd import _batched_forward
    calls = []
    original = _batched_forward.op_jvp
    monkeypatch.setattr(_batched_forward, "op_jvp",
                        lambda op, *a: calls.append(op.name) or original(op, *a))
    F = ember.autograd.functional
    x = ember.tensor(np.linspace(-1, 1, 7))
    f = lambda v: (v.sin() * v).exp() + v  # noqa: E731
    fwd = F.jacobian(f, x, vectorize=True, strategy="forward-mode")
    assert sorted(calls) == ["add", "exp", "mul", "sin"]
    np.testing.assert_allclose(fwd.numpy(), F.jacobian(f, x).numpy(), rtol=1e-12)
    np.testing.assert_allclose(ember.func.jacfwd(f)(x).numpy(), fwd.numpy(), rtol=1e-12)
