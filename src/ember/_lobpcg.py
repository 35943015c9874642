"""``lobpcg``: the k largest (or smallest) eigenpairs of a symmetric positive definite
generalized eigenvalue problem ``A x = lambda B x``, by the locally optimal block
preconditioned conjugate gradient method (Knyazev 2001), with the robust basis handling and
the backward-stable convergence test of Duersch, Shao, Yang and Gu (2018), as torch's.

Each iteration does a Rayleigh-Ritz step on the basis ``[X, W, P]``: the current Ritz vectors,
the preconditioned residuals of the pairs not yet converged (``iK @ R``) and the previous
directions. The basis is made B-orthonormal by an eigendecomposition of its scaled Gram matrix
(directions below a relative tolerance are dropped), so it stays well conditioned when the
residuals become small. A pair counts as converged when
``|r_i| / (|x_i| (|A| + |lambda_i| |B|)) < tol`` (torch's criterion, with torch's norm
estimates), leading pairs first; iterations stop when the first ``k`` have converged, after
``niter`` of them, or when a tracker sets ``worker.bvars["force_stop"]``.

torch's "basic" and "ortho" methods take different paths to the same eigenpairs; ember runs
this one iteration for both (the ``ortho_*`` parameters tune its dropping tolerance), so the
results agree with torch's to the convergence tolerance, while the iterates a tracker sees
differ.

Gradients (A requires grad, B not given) are the exact derivatives of the returned eigenpairs
of ``(A + A^T) / 2``, torch's symmetrized input.
"""
from __future__ import annotations

__all__ = ["lobpcg"]

from . import _dtype as D
from ._lowrank import _floating


class LOBPCGWorker:
    """The iteration's state, as a tracker sees it: ``E`` (Ritz values), ``X`` (Ritz
    vectors), ``R`` (residuals), ``ivars`` (``istep``, ``converged_count``,
    ``iterations_left``), ``fvars`` (``A_norm``, ``B_norm``, ``X_norm``), ``tvars``
    (``rerr``: the relative residuals), ``bvars`` (set ``force_stop`` to stop) and the
    parameters (``iparams``, ``fparams``, ``bparams``, ``method``)."""

    def __init__(self, A, B, X, iK, iparams, fparams, bparams, method, tracker):  # noqa: N803
        self.A, self.B, self.iK = A, B, iK
        self.iparams, self.fparams, self.bparams = iparams, fparams, bparams
        self.method, self.tracker = method, tracker
        self.X, self.E, self.R, self.P = X, None, None, None
        self.ivars = {"istep": 0}
        self.fvars = {}
        self.bvars = {}
        self.tvars = {}

    def _times(self, M, X):  # noqa: N803
        return X if M is None else M @ X

    def run(self):
        self.update()
        self._track()
        while not self.stop_iteration():
            self.update()
            self._track()

    def _track(self):
        if self.tracker is not None:
            self.tracker(self)

    def stop_iteration(self):
        return (self.bvars.get("force_stop", False) or self.ivars["iterations_left"] == 0
                or self.ivars["converged_count"] >= self.iparams["k"])

    def update(self):
        if self.ivars["istep"] == 0:
            self._start()
            basis = self.X
        else:
            nc = self.ivars["converged_count"]
            W = self._times(self.iK, self.R[:, nc:])
            parts = [self.X, W] + ([self.P] if self.P is not None else [])
            from ._ops.shape import cat
            basis = cat(parts, -1)
        self._rayleigh_ritz(basis)
        self.R = self._times(self.A, self.X) - self._times(self.B, self.X) * self.E
        self._count_converged()
        self.ivars["iterations_left"] -= 1
        self.ivars["istep"] += 1

    def _start(self):
        from . import linalg
        x_norm = float(linalg.norm(self.X))
        self.fvars["X_norm"] = x_norm
        self.fvars["A_norm"] = float(linalg.norm(self._times(self.A, self.X))) / x_norm
        self.fvars["B_norm"] = float(linalg.norm(self._times(self.B, self.X))) / x_norm
        self.ivars.update(iterations_left=self.iparams["niter"], converged_count=0)

    def _orthonormalizer(self, S):  # noqa: N803
        """T with ``(S T)^H B (S T) = I``, from the eigendecomposition of S's scaled Gram
        matrix; directions whose scaled eigenvalue is below the dropping tolerance go."""
        from . import finfo, linalg
        gram = S.mH @ self._times(self.B, S)
        d = gram.diagonal().real.clamp_min(finfo(S.dtype).tiny) ** -0.5
        w, V = linalg.eigh(gram * d[:, None] * d[None, :])
        drop = self.fparams.get("ortho_tol_drop", self.fparams["tol"]) if (
            self.method == "ortho") else self.fparams["tol"]
        keep = w > drop * w[-1].clamp_min(0)
        if int(keep.sum()) < self.iparams["n"]:  # the basis lost rank: keep n directions
            keep[-self.iparams["n"]:] = True
        V, w = V[:, keep], w[keep]
        return d[:, None] * V * w.rsqrt()[None, :]

    def _rayleigh_ritz(self, S):  # noqa: N803
        from . import linalg
        n = self.iparams["n"]
        T = self._orthonormalizer(S)
        ST = S @ T
        M = ST.mH @ self._times(self.A, ST)
        theta, Z = linalg.eigh((M + M.mH) / 2)
        if self.bparams["largest"]:
            theta, Z = theta.flip(-1), Z.flip(-1)
        C = T @ Z[:, :n]
        old = self.X.shape[-1]
        self.X, self.E = S @ C, theta[:n]
        # the next directions: the new Ritz vectors' components outside the old ones
        self.P = S[:, old:] @ C[old:] if S.shape[-1] > old else None

    def _count_converged(self):
        from . import linalg
        A_norm, B_norm = self.fvars["A_norm"], self.fvars["B_norm"]  # noqa: N806
        rerr = linalg.vector_norm(self.R, 2, 0) / (
            linalg.vector_norm(self.X, 2, 0) * (A_norm + self.E.abs() * B_norm))
        count = 0
        for ok in (rerr < self.fparams["tol"]).tolist():
            if not ok:
                break
            count += 1
        self.ivars["converged_count"] = max(count, self.ivars["converged_count"])
        self.tvars["rerr"] = rerr


def _solve(A, k, B, X, n, iK, niter, tol, largest, method, tracker,  # noqa: N803, PLR0913
           ortho_iparams, ortho_fparams, ortho_bparams):
    """torch's checks and defaults, then one worker per matrix (of a batch)."""
    from . import empty, randn
    if A.shape[-2] != A.shape[-1]:
        raise AssertionError(f"A must be square, got shape {A.shape}")
    if B is not None and A.shape != B.shape:
        raise AssertionError(f"A and B must have same shape, got {A.shape} vs {B.shape}")
    dtype = _floating(A.dtype)
    if tol is None:
        tol = {D.float32: 1.2e-07, D.float64: 2.23e-16}[dtype] ** 0.5
    m = A.shape[-1]
    k = (1 if X is None else X.shape[-1]) if k is None else k
    n = (k if n is None else n) if X is None else X.shape[-1]
    if m < 3 * n:
        raise ValueError(f"LOBPCG algorithm is not applicable when the number of A rows (={m})"
                         f" is smaller than 3 x the number of requested eigenpairs (={n})")
    method = "ortho" if method is None else method
    iparams = {"m": m, "n": n, "k": k, "niter": 1000 if niter is None else niter}
    fparams = {"tol": tol}
    bparams = {"largest": True if largest is None else largest}
    if method == "ortho":
        iparams.update(ortho_iparams or {})
        fparams.update(ortho_fparams or {})
        bparams.update(ortho_bparams or {})
        for key in ("ortho_i_max", "ortho_j_max"):
            iparams.setdefault(key, 3)
        for key in ("ortho_tol", "ortho_tol_drop", "ortho_tol_replace"):
            fparams.setdefault(key, tol)
        bparams.setdefault("ortho_use_drop", False)

    def one(A_, B_, X_):  # noqa: N803
        X_ = randn((m, n), dtype=dtype, device=A.device) if X_ is None else X_
        if not (X_.ndim == 2 and tuple(X_.shape) == (m, n)):
            raise AssertionError(f"X shape mismatch: got {X_.shape}, expected {(m, n)}")
        worker = LOBPCGWorker(A_, B_, X_, iK, iparams, fparams, bparams, method, tracker)
        worker.run()
        return worker.E[:k], worker.X[:, :k]

    if A.ndim == 2:
        return one(A, B, X)
    batch = A.shape[:-2]
    count = 1
    for s in batch:
        count *= s
    bA = A.reshape((count, m, m))  # noqa: N806
    bB = None if B is None else B.reshape((count, m, m))  # noqa: N806
    bX = None if X is None else X.reshape((count,) + tuple(X.shape[-2:]))  # noqa: N806
    E, U = empty((count, k), dtype=dtype, device=A.device), empty(  # noqa: N806
        (count, m, k), dtype=dtype, device=A.device)
    for i in range(count):
        iparams["batch_index"] = i
        E[i], U[i] = one(bA[i], None if bB is None else bB[i], None if bX is None else bX[i])
    return E.reshape(tuple(batch) + (k,)), U.reshape(tuple(batch) + (m, k))


def _eigenpair_backward(A, E, U, gE, gU):  # noqa: N803
    """The exact gradient with respect to a symmetric ``A`` of its eigenpairs ``(E, U)``
    (columns of U among A's eigenvectors), from A's full eigendecomposition: an eigenvalue's
    is ``u u^T``, an eigenvector's ``sum_{j != i} v_j v_j^T / (lambda_i - lambda_j)`` times
    ``g u_i^T``."""
    from . import finfo, linalg, zeros_like
    grad = zeros_like(A)
    if gE is not None:
        grad = grad + (U * gE[..., None, :]) @ U.mT
    if gU is not None:
        w, V = linalg.eigh(A)
        gap = E[..., None, :] - w[..., :, None]  # (j, i): lambda_i - lambda_j
        same = gap.abs() <= (w.abs().amax(-1, keepdim=True)[..., None] + 1) * (
            finfo(A.dtype).eps * A.shape[-1] * 10)
        inverse = (1 / gap.masked_fill(same, 1)).masked_fill(same, 0)
        grad = grad + V @ ((V.mT @ gU) * inverse) @ U.mT
    return grad


def _autograd_lobpcg():
    from .autograd import Function

    class LOBPCGAutogradFunction(Function):
        @staticmethod
        def forward(ctx, A, k, B, X, n, iK, niter, tol, largest, method, tracker,  # noqa: N803
                    ortho_iparams, ortho_fparams, ortho_bparams):
            E, U = _solve(A, k, B, X, n, iK, niter, tol, largest, method, tracker,  # noqa: N806
                          ortho_iparams, ortho_fparams, ortho_bparams)
            ctx.save_for_backward(A, B, E, U)
            return E, U

        @staticmethod
        def backward(ctx, gE, gU):  # noqa: N803
            A, B, E, U = ctx.saved_tensors  # noqa: N806
            if A.is_complex() or (B is not None and B.is_complex()):
                raise ValueError("lobpcg.backward does not support complex input yet. Note "
                                 "that lobpcg.forward does though.")
            if B is not None:
                raise ValueError("lobpcg.backward does not support backward with B != I yet.")
            return (_eigenpair_backward(A, E, U, gE, gU),) + (None,) * 13
    return LOBPCGAutogradFunction


_FUNCTION = []


def lobpcg(A, k=None, B=None, X=None, n=None, iK=None, niter=None, tol=None,  # noqa: N803
           largest=None, method=None, tracker=None, ortho_iparams=None, ortho_fparams=None,
           ortho_bparams=None):
    """The ``k`` largest (``largest=False``: smallest) eigenvalues of ``A x = lambda B x``
    (A symmetric, B symmetric positive definite, identity when None) and their
    B-orthonormal eigenvectors, as torch's ``lobpcg``; see this module's docstring."""
    args = (k, B, X, n, iK, niter, tol, largest, method, tracker, ortho_iparams,
            ortho_fparams, ortho_bparams)
    if A.requires_grad or (B is not None and B.requires_grad):
        # (the gradient of a symmetric problem is symmetric, so a step along it keeps A so)
        A_sym = (A + A.mT) / 2  # noqa: N806
        B_sym = (B + B.mT) / 2 if B is not None else None  # noqa: N806
        if not _FUNCTION:
            _FUNCTION.append(_autograd_lobpcg())
        return _FUNCTION[0].apply(A_sym, k, B_sym, *args[2:])
    return _solve(A, *args)
