"""``lobpcg`` against torch: the eigenvalues it converges to (largest and smallest, with a
generalized B, batches, float32, a given start and preconditioner), its argument checks, the
tracker protocol, and the gradient of the symmetrized problem."""
from __future__ import annotations

import pytest
from oracle import same, torch_or_skip

import ember


def _spd(lib, m, seed):
    """A symmetric positive definite matrix with the spectrum 1, 2^1.5, ..., m^1.5 (well
    separated at both ends: few iterations) in a random basis."""
    g = lib.Generator().manual_seed(seed)
    q = lib.linalg.qr(lib.randn(m, m, dtype=lib.float64, generator=g)).Q
    return (q * lib.arange(1.0, m + 1, dtype=lib.float64) ** 1.5) @ q.mT


_CALLS = {
    "largest": lambda t, A, B: t.lobpcg(A, k=3),
    "smallest": lambda t, A, B: t.lobpcg(A, k=2, largest=False),
    "generalized": lambda t, A, B: t.lobpcg(A, k=2, B=B),
    "generalized_smallest": lambda t, A, B: t.lobpcg(A, k=2, B=B, largest=False),
    "start": lambda t, A, B: t.lobpcg(A, X=t.eye(12, 4, dtype=t.float64) + 0.1, k=2),
    "preconditioned": lambda t, A, B: t.lobpcg(A, k=2, iK=t.diag(1 / A.diagonal())),
    "batch": lambda t, A, B: t.lobpcg(t.stack([A, 2 * A]), k=1),
    "float32": lambda t, A, B: t.lobpcg(A.float(), k=2, tol=1e-5),
}


@pytest.mark.parametrize("name", sorted(_CALLS))
def test_eigenvalues_as_torch(name):
    """The eigenvalues torch converges to; the eigenvectors are checked as what they are
    (eigenvectors, B-orthonormal), their signs being the iteration's choice."""
    def body(t):
        t.manual_seed(0)
        A, B = _spd(t, 12, 1), _spd(t, 12, 2)  # noqa: N806
        E, X = _CALLS[name](t, A, B)  # noqa: N806
        if X.ndim == 2:
            Bm = B if "generalized" in name else t.eye(12, dtype=X.dtype)  # noqa: N806
            Am = A.to(X.dtype)  # noqa: N806
            residual = (Am @ X - Bm.to(X.dtype) @ X * E).norm() / Am.norm()
            ortho = (X.mT @ Bm.to(X.dtype) @ X - t.eye(X.shape[1], dtype=X.dtype)).abs().max()
            assert float(residual) < 1e-4 and float(ortho) < 1e-4
        return E, tuple(X.shape), X.dtype
    same(body, rtol=1e-5 if name == "float32" else 1e-8)


def test_ember_generalized_basic_converges():
    """torch's method="basic" with a B can stop at a repeated eigenvalue; ember's iteration
    gives the generalized eigenvalues (here checked against torch's "ortho")."""
    torch = torch_or_skip()
    A, B = _spd(torch, 12, 1), _spd(torch, 12, 2)  # noqa: N806
    want = torch.lobpcg(A, k=2, B=B, method="ortho")[0]
    got = ember.lobpcg(ember.tensor(A.numpy()), k=2, B=ember.tensor(B.numpy()),
                       method="basic")[0]
    assert got.tolist() == pytest.approx(want.tolist(), rel=1e-8)


_ERRORS = ["t.lobpcg(t.ones(2, 3))", "t.lobpcg(A, k=5)", "t.lobpcg(A, B=t.eye(3))",
           "t.lobpcg(A, k=2, X=t.ones(3, 2, dtype=t.float64))",
           "t.lobpcg(A, X=t.ones(12, 2), k=1)", "t.lobpcg(A, n=5, k=1)"]


@pytest.mark.parametrize("call", _ERRORS)
def test_argument_errors_as_torch(call):
    def body(t):
        A = _spd(t, 12, 1)  # noqa: N806, F841
        return eval(call)[0].shape
    same(body)


def test_tracker_sees_each_iteration_and_may_stop():
    def body(t):
        t.manual_seed(0)
        A = _spd(t, 12, 1)  # noqa: N806
        seen = []

        def tracker(worker):
            seen.append((worker.ivars["istep"], tuple(worker.X.shape), tuple(worker.E.shape)))
            if len(seen) == 2:
                worker.bvars["force_stop"] = True
        t.lobpcg(A, k=2, tracker=tracker)
        count = []
        t.lobpcg(A, k=2, niter=3, tracker=lambda w: count.append(w.ivars["istep"]))
        return seen, count
    same(body)


def test_gradient_as_torch():
    """The gradient of the returned eigenpairs (a loss that does not depend on the
    eigenvectors' signs), symmetric as torch's."""
    def body(t):
        t.manual_seed(0)
        A = (_spd(t, 12, 1) + t.arange(12.0, dtype=t.float64)[:, None] * 0.1)  # noqa: N806
        A.requires_grad_()
        E, X = t.lobpcg(A, k=2)  # noqa: N806
        weights = t.arange(12.0, dtype=t.float64)[:, None]
        (E.sum() + (X ** 2 * weights).sum()).backward()
        return E.detach(), A.grad
    same(body, rtol=1e-5, atol=1e-7, grad_fn=False)


def test_backward_with_b_refused_as_torch():
    def body(t):
        A, B = _spd(t, 12, 1).requires_grad_(), _spd(t, 12, 2)  # noqa: N806
        E, _ = t.lobpcg(A, k=1, B=B)  # noqa: N806
        E.sum().backward()
    same(body)


def test_forward_ad_through_the_iteration_as_torch():
    """A dual A that does not require grad: forward AD follows the iteration's ops, in torch
    as in ember, to the derivative of the converged eigenpairs."""
    def body(t):
        import importlib
        fw = importlib.import_module(t.__name__ + ".autograd.forward_ad")
        A = _spd(t, 12, 1)  # noqa: N806
        with fw.dual_level():
            d = fw.make_dual(A, t.ones_like(A) + t.eye(12, dtype=A.dtype))
            E, _ = t.lobpcg(d, k=2, X=t.eye(12, 2, dtype=A.dtype) + 0.25, tol=1e-12)  # noqa: N806
            return tuple(fw.unpack_dual(E))
    same(body, rtol=1e-6, atol=1e-8, check_warnings=False)  # (torch warns on its import)
