"""``ember.func`` (torch.func style transforms) against torch 2.13: values, pytree structure,
argnums/has_aux, composition (grad of grad, jacfwd of jacrev) and error texts.
"""
import numpy as np
import pytest
from oracle import same

import ember

GEN = np.random.default_rng(0)
A = GEN.standard_normal(3)
B = GEN.standard_normal(3)


def _xy(torch):
    return torch.tensor(A), torch.tensor(B)


def f(x, y):
    return (x.sin() * y ** 2).sum()


def g(x, y):
    return x.exp() * y, (x * y).sum()


def test_grad_and_value():
    def body(torch):
        F = torch.func
        x, y = _xy(torch)
        return (F.grad(f)(x, y), F.grad(f, argnums=1)(x, y), F.grad(f, argnums=(0, 1))(x, y),
                F.grad(f, argnums=-1)(x, y), F.grad_and_value(f)(x, y),
                F.grad(lambda x, y: (f(x, y), x.mean()), has_aux=True)(x, y),
                F.grad_and_value(lambda x, y: (f(x, y), {"m": x.mean()}), has_aux=True)(x, y),
                F.grad(lambda d: (d["a"] * d["b"][0]).sum())({"a": x, "b": [y]}),
                F.grad(lambda x: x.sum() * 0 + 1.0)(x))
    same(body, rtol=1e-10, check_warnings=False)


def test_grad_composes():
    def body(torch):
        F = torch.func
        x, _ = _xy(torch)
        cube = lambda t: (t ** 3).sum()
        return (F.grad(F.grad(lambda t: (t ** 3)))(torch.tensor(2.0)),
                F.grad(lambda t: F.grad(cube)(t).sum())(x))
    same(body, rtol=1e-10, check_warnings=False)


def test_grad_through_outer_autograd():
    x = ember.tensor(A, requires_grad=True)
    gx = ember.func.grad(lambda t: (t ** 3).sum())(x)
    (h,) = ember.autograd.grad(gx.sum(), x)
    np.testing.assert_allclose(h.numpy(), 6 * A)


def test_vjp_and_jvp():
    def body(torch):
        F = torch.func
        x, y = _xy(torch)
        out, fn = F.vjp(g, x, y)
        ct = (torch.ones(3, dtype=torch.float64), torch.tensor(2.0, dtype=torch.float64))
        out2, fn2, aux = F.vjp(lambda a: (a ** 2, a.sum()), x, has_aux=True)
        return (out, fn(ct), fn(ct), out2, fn2(torch.ones(3, dtype=torch.float64)), aux,
                F.jvp(g, (x, y), (torch.ones(3, dtype=torch.float64), y)),
                F.jvp(lambda a: (a ** 2, {"a": a}), (x,), (y,), has_aux=True))
    same(body, rtol=1e-10, check_warnings=False)


@pytest.mark.parametrize("which", ["jacrev", "jacfwd"])
def test_jacobians(which):
    def body(torch):
        J = getattr(torch.func, which)
        x, y = _xy(torch)
        return (J(lambda a: a.sin() * 2)(x), J(g, argnums=(0, 1))(x, y), J(g, argnums=1)(x, y),
                J(lambda a: (a ** 2, a.sum()), has_aux=True)(x),
                J(lambda d: {"o": d["a"] * d["b"]})({"a": x, "b": y}))
    same(body, rtol=1e-10, check_warnings=False)


def test_hessian():
    def body(torch):
        F = torch.func
        x, y = _xy(torch)
        return (F.hessian(lambda a: (a ** 3).sum())(x), F.hessian(f, argnums=(0, 1))(x, y),
                F.jacfwd(F.jacrev(lambda a: a.sin().sum() * a))(x),
                F.jacrev(F.jacrev(lambda a: (a.exp() * a).sum()))(x))
    same(body, rtol=1e-10, check_warnings=False)


def test_errors_as_torch():
    def body(torch):
        F = torch.func
        x, y = _xy(torch)
        out = []

        def attempt(fn):
            try:
                out.append(fn())
            except Exception as e:
                out.append((type(e).__name__, str(e)))
        attempt(lambda: F.grad(lambda a: a * 2)(x))
        attempt(lambda: F.grad(lambda a: 3.0)(x))
        attempt(lambda: F.grad(lambda a: a.sum(), has_aux=True)(x))
        attempt(lambda: F.grad(f, argnums=2)(x, y))
        attempt(lambda: F.grad(f, argnums=(0, 0))(x, y))
        attempt(lambda: F.grad(f, argnums=1.0)(x, y))
        attempt(lambda: F.grad(f, argnums=())(x, y))
        attempt(lambda: F.grad(lambda a: a.sum())(3.0))
        attempt(lambda: F.vjp(lambda a: a ** 2, x)[1](torch.ones(2, dtype=torch.float64)))
        attempt(lambda: F.vjp(lambda a: a ** 2, x, has_aux=True))
        attempt(lambda: F.jvp(lambda a: a ** 2, x, (y,)))
        attempt(lambda: F.jvp(lambda a: a ** 2, (x,), (torch.ones(2, dtype=torch.float64),)))
        attempt(lambda: F.jacrev(lambda a: a ** 2, has_aux=True)(x))
        return out
    same(body, check_warnings=False)


def test_no_vmap():
    """vmap is deliberately absent (no batching rules; see ember.func's docstring)."""
    assert not hasattr(ember.func, "vmap")
