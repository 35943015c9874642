"""The graphs create_graph=True records for the gradients of complex tensors, against torch's.

torch's derivative formulas conjugate inside (``grad * other.conj()``, ``grad.conj()`` for
conj), so a complex gradient computed with create_graph ends in the formula's own node with a
ConjBackward0 on a saved tensor, and its zero imaginary parts carry torch's signs. Each case
compares the gradient's node names four levels down, its printed form (``+0.j`` against
``-0.j``), the signs of its parts, and the second derivative taken through it.
"""
from __future__ import annotations

import numpy as np
import pytest

from tests.oracle import graph_tree, same

# (no zero real or imaginary parts: torch's vectorized complex product gives a zero part a sign
# that depends on the element's position, which the signed-zero test below keeps out of)
_Z = [[0.3 + 0.2j, 1.0 - 0.4j, -0.7 - 1.1j], [2.0 - 0.5j, -1.5 + 0.6j, 0.25 + 0.75j]]
_W = [[1.5 - 0.5j, -0.2 + 0.1j, 0.3 + 1.0j], [0.7 + 0.2j, 1.0 - 2.0j, -0.4 + 0.3j]]
_X = [[0.5, -1.25, 2.0], [-0.75, 1.5, 0.2]]

# op name -> a function of (torch, z, w, x): z, w complex and x real, all requiring grad
_OPS = {
    "mul": lambda torch, z, w, x: z * w,
    "mul_real_complex": lambda torch, z, w, x: x * w,
    "mul_number": lambda torch, z, w, x: z * (2 - 1j),
    "div_number": lambda torch, z, w, x: z.exp() / (2 - 1j),
    "div_by_constant": lambda torch, z, w, x: z / w.detach(),
    "exp": lambda torch, z, w, x: z.exp(),
    "sum_dim": lambda torch, z, w, x: (z * w).sum(1),
    "sum": lambda torch, z, w, x: z.exp().sum(),
    "add_alpha": lambda torch, z, w, x: torch.add(z.exp(), w, alpha=2),
    "sub": lambda torch, z, w, x: z.exp() - w.exp(),
    "neg": lambda torch, z, w, x: -(z * w),
    "conj": lambda torch, z, w, x: torch.conj(z) * w,
    "conj_physical": lambda torch, z, w, x: torch.conj_physical(z) * w,
    "vdot": lambda torch, z, w, x: torch.vdot(z.reshape(-1), w.reshape(-1)).expand(2),
    # ops that move or sum values (a gradient with no conjugation at all, as torch's)
    "clone": lambda torch, z, w, x: z.clone() * w,
    "cat": lambda torch, z, w, x: torch.cat([z, w.exp()], 1),
    "stack": lambda torch, z, w, x: torch.stack([z, w]).exp(),
    "flip": lambda torch, z, w, x: z.flip(1) * w,
    "roll": lambda torch, z, w, x: z.roll(1, 1) * w,
    "index": lambda torch, z, w, x: z[[1, 0]] * w,
    "index_select": lambda torch, z, w, x: torch.index_select(z, 1, torch.tensor([2, 0, 1])) * w,
    "repeat": lambda torch, z, w, x: z.repeat(1, 2)[:, 1:4] * w,
    "mean": lambda torch, z, w, x: (z * w).mean(1),
    "cumsum": lambda torch, z, w, x: (z * w).cumsum(1),
    "to": lambda torch, z, w, x: (x.to(torch.complex128) * z).exp(),
}

# how the gradient's output gradient is made from the op's complex result y
_LOSSES = {
    "real": lambda torch, y: y.real.sum(),
    "imag": lambda torch, y: y.imag.sum(),
    "abs": lambda torch, y: y.abs().sum(),
    "weighted": lambda torch, y: (y * torch.full_like(y, 0.5 - 2j)).real.sum(),
}


def _grads(torch, name, loss, values=(_Z, _W, _X)):
    z, w = (torch.tensor(v, dtype=torch.complex128, requires_grad=True) for v in values[:2])
    x = torch.tensor(values[2], dtype=torch.float64, requires_grad=True)
    y = _OPS[name](torch, z, w, x)
    grads = torch.autograd.grad(_LOSSES[loss](torch, y), (z, w, x), create_graph=True,
                                allow_unused=True)
    return (z, w, x), [g for g in grads if g is not None]


@pytest.mark.parametrize("loss", sorted(_LOSSES))
@pytest.mark.parametrize("name", sorted(_OPS))
def test_create_graph_of_complex_gradient(name, loss):
    """Node names four levels down, values, and the second derivative through them."""
    def body(torch):
        inputs, got = _grads(torch, name, loss)
        total = sum((g * g.conj()).real.sum() if g.is_complex() else (g * g).sum()
                    for g in got)
        return [graph_tree(g.grad_fn, 4) for g in got], got, torch.autograd.grad(
            total, inputs, allow_unused=True)
    same(body)


def _signs(t):
    a = np.asarray(t.detach().resolve_conj().numpy())
    return np.signbit(a.real).tolist(), np.signbit(a.imag).tolist()


# one element whose imaginary part is zero: the gradient's zero part has torch's sign
_REAL_VALUED = ([[1.0 + 0.0j]], [[0.7 + 0.0j]], [[0.5]])


@pytest.mark.parametrize("loss", ["real", "imag"])
@pytest.mark.parametrize("name", sorted(set(_OPS) - {"mul_number"}))
def test_signed_zeros_of_complex_gradient(name, loss):
    def body(torch):
        _, got = _grads(torch, name, loss, _REAL_VALUED)
        return [repr(g) for g in got], [_signs(g) for g in got]
    same(body)


@pytest.mark.parametrize("fn", ["tanh", "sigmoid", "exp"])
def test_unary_gradient_node_and_signs(fn):
    """The gradient's own node is the formula's (TanhBackwardBackward0, not a conjugation),
    and a zero imaginary part prints as torch's does."""
    def body(torch):
        z = torch.tensor([0.3 + 0.2j, 1.0 + 0.0j], dtype=torch.complex128, requires_grad=True)
        y = getattr(z, fn)()
        g, = torch.autograd.grad(y.real.sum(), z, create_graph=True)
        return g.grad_fn.name(), repr(g), _signs(g)
    same(body)


# Ops whose create_graph gradients torch writes with a conjugation inside a kernel or on a
# computed value (tanh_backward's conj(1 - y^2), div's ((self / other) / other).conj(), mm's
# mat2.t().conj(), acosh's conjugated rsqrt product), by a Scalar overload (angle's * 1j, sgn's
# 2 * |z|), or with a real operand's share taken before the broadcast sum: (torch, z, w, x)
_CONJUGATING = {
    "tanh": lambda torch, z, w, x: z.tanh(),
    "sigmoid": lambda torch, z, w, x: (z * w).sigmoid(),
    "div": lambda torch, z, w, x: z / w,
    "mm": lambda torch, z, w, x: z.mm(w.t()),
    "mm_column_major": lambda torch, z, w, x: z.t().mm(w),
    "acosh": lambda torch, z, w, x: torch.acosh(z * w),
    "angle": lambda torch, z, w, x: (z * w).angle(),
    "sgn": lambda torch, z, w, x: z.sgn() * w,
    "real_broadcast": lambda torch, z, w, x: (x[:1] * z).exp(),
    # (the decompositions' formulas take x.mH as torch's, the transpose's conjugate; compared
    # three levels down, as their formulas are composed otherwise further down: see _DEPTH)
    "qr": lambda torch, z, w, x: sum(f.sum(0) for f in torch.linalg.qr(z.t())),
    "cholesky": lambda torch, z, w, x: torch.linalg.cholesky(
        z @ z.mH + torch.eye(2, dtype=z.dtype)) * w[:, :2],
}


# how many levels down each case's graph is compared (default 6)
_DEPTH = {"qr": 3, "cholesky": 3}


def _leaves(torch, values=(_Z, _W, _X)):
    z, w = (torch.tensor(v, dtype=torch.complex128, requires_grad=True) for v in values[:2])
    return z, w, torch.tensor(values[2], dtype=torch.float64, requires_grad=True)


@pytest.mark.parametrize("name", sorted(_CONJUGATING))
def test_create_graph_of_conjugating_formula(name):
    """Node names six levels down (see _DEPTH; the output gradient's own edges included),
    values, the second derivative through them, and gradgradcheck."""
    def body(torch):
        inputs = _leaves(torch)
        y = _CONJUGATING[name](torch, *inputs)
        go = torch.full_like(y, 0.5 - 2j if y.is_complex() else 0.75).requires_grad_()
        got = [g for g in torch.autograd.grad(y, inputs, go, create_graph=True,
                                              allow_unused=True) if g is not None]
        total = sum((g * g.conj()).real.sum() if g.is_complex() else (g * g).sum()
                    for g in got)
        second = torch.autograd.grad(total, (*inputs, go), allow_unused=True)
        checked = torch.autograd.gradgradcheck(
            lambda *ts: _CONJUGATING[name](torch, *ts), tuple(
                t.detach().requires_grad_(t.is_complex() or name == "real_broadcast")
                for t in inputs))
        return [graph_tree(g.grad_fn, _DEPTH.get(name, 6)) for g in got], got, second, checked
    same(body)


@pytest.mark.parametrize("name", ["angle", "sgn"])
def test_conjugating_formula_at_zero(name):
    """angle's and sgn's gradients are 0 where the input is (torch's where / masked_fill)."""
    def body(torch):
        z = torch.tensor([0.3 + 0.2j, 0j, -1.5 + 0.0j], dtype=torch.complex128,
                         requires_grad=True)
        y = getattr(z, name)()
        go = torch.ones_like(y) * (0.5 - 2j if y.is_complex() else 0.75)
        g, = torch.autograd.grad(y, z, go, create_graph=True)
        return graph_tree(g.grad_fn, 3), g, _signs(g)
    same(body)


# in-place writes through a real view of a complex tensor (its real or imaginary part, its
# view_as_real), whose CopySlices replays the view on the gradient: its geometry counts the
# view's real elements, not the base's complex ones
_PART_WRITES = {
    "imag_mul_": lambda torch, a, w: a.imag.mul_(w.real),
    "real_add_": lambda torch, a, w: a.real.add_(w.imag * w.real),
    "imag_setitem": lambda torch, a, w: a.imag.__setitem__(0, w[1].imag * w[0].real),
    "view_as_real_mul_": lambda torch, a, w: torch.view_as_real(a).mul_(w.real[:, None]),
    "view_as_real_column": lambda torch, a, w: torch.view_as_real(a)[:, 1].mul_(w.imag),
    "conj_imag_mul_": lambda torch, a, w: a.conj().imag.mul_(w.real),
}


def _written_part(torch, name, x, w):
    a = x.clone()
    _PART_WRITES[name](torch, a, w)
    return a * w


@pytest.mark.parametrize("name", sorted(_PART_WRITES))
def test_create_graph_through_written_complex_part(name):
    """The gradient's graph, values, and the second derivative through it."""
    def body(torch):
        x = torch.tensor([1 + 2j, 3 - 1j], dtype=torch.complex128, requires_grad=True)
        w = torch.tensor([2 - 1j, 0.5j], dtype=torch.complex128, requires_grad=True)
        go = torch.tensor([1 - 0.5j, 0.25 + 2j], dtype=torch.complex128)
        got = torch.autograd.grad(_written_part(torch, name, x, w), (x, w), go,
                                  create_graph=True)
        total = sum((g * g.conj()).real.sum() for g in got)
        # (through a conjugate view ember's gradient is view_scatter's, not CopySlices': its
        # values alone are compared)
        conj = "conj" in name
        trees = None if conj else [graph_tree(g.grad_fn, 3) for g in got]
        shown = [g.detach() for g in got] if conj else got
        return trees, shown, torch.autograd.grad(total, (x, w))
    same(body)


@pytest.mark.parametrize("name", sorted(_PART_WRITES))
def test_gradgradcheck_of_written_complex_part(name):
    import ember
    x = ember.tensor([1 + 2j, 3 - 1j], dtype=ember.complex128, requires_grad=True)
    w = ember.tensor([2 - 1j, 0.5j], dtype=ember.complex128, requires_grad=True)
    assert ember.autograd.gradgradcheck(
        lambda x, w: _written_part(ember, name, x, w), (x, w))


def test_complex64_abs_and_its_gradient_bit_exact():
    """|z| of complex64 correctly rounded as torch's (NumPy's is 1 ulp off at 1+6j), so
    (|z| ** 2).sum()'s gradient is torch's 2z exactly."""
    def body(torch):
        special = [1 + 6j, 3 - 3j, 0j, float("inf") + float("nan") * 1j, 3e38 + 3e38j, 1e-40j]
        rng = np.random.default_rng(0)
        z = np.concatenate([special, rng.standard_normal(500) * 3 + 1j * rng.standard_normal(500)])
        x = torch.tensor(z.astype(np.complex64), requires_grad=True)
        (x[:2].abs() ** 2).sum().backward()
        return x.detach().abs(), x.grad
    same(body, rtol=0, atol=0)


@pytest.mark.parametrize("method", ["abs_", "absolute_"])
def test_inplace_abs_of_complex_refused(method):
    """|z| is real: torch refuses to write it into the complex tensor in place."""
    def body(torch):
        x = torch.tensor([1 + 6j, 3 - 3j])
        return getattr(x, method)()
    same(body)
