"""Op table rows for LAPACK's QR in Householder form (ember._ops.linalg_geqrf): geqrf (no
derivative, as in torch) and ormqr (any reflectors and scales are valid inputs), and the
randomized low-rank SVD and PCA built on linalg.qr and linalg.svd."""
from __future__ import annotations

import ember
from ember._ops import linalg_geqrf as GQ

from .op_db import S, row

_ORMQR = ("ormqr is householder_product's full Q times other here (MmBackward0 ... where "
          "torch records one OrmqrBackward0)")

row("geqrf", ember.geqrf, "geqrf", [GQ._geqrf],
    lambda m: [S("tall", m(4, 3)), S("wide", m(2, 4)), S("batch", m(2, 3, 3))],
    differentiable=False)
row("ormqr", ember.ormqr, "ormqr", [],
    lambda m: [S("left", m(4, 3), m(3), m(4, 2)),
               S("left_t", m(3, 3), m(3), m(3, 2), transpose=True),
               S("right", m(4, 2), m(2), m(3, 4), left=False),
               S("right_t_batch", m(2, 3, 2), m(2, 2), m(2, 2, 3), False, True)],
    skips={"test_grad_fn_name": _ORMQR})


# -- randomized low-rank SVD and PCA (ember/_lowrank.py) ---------------------------------------
def _lowrank(fn_name):
    """The seeded call's singular values and rank-q reconstruction U diag(S) V^H: what does
    not depend on the signs linalg.svd picks for a wide matrix (NumPy's LAPACK and torch's
    may differ there)."""
    def bind(mod):
        def run(a, *args, **kwargs):
            mod.manual_seed(0)
            U, S, V = getattr(mod, fn_name)(a, *args, **kwargs)
            return S, (U * S.unsqueeze(-2)) @ V.mT
        return run
    return bind


row("svd_lowrank", _lowrank("svd_lowrank")(ember), _lowrank("svd_lowrank"), [],
    lambda m: [S("tall", m(5, 3), 2), S("wide", m(2, 4), 2, 1), S("batch", m(2, 4, 3), 2)],
    random=True)
row("pca_lowrank", _lowrank("pca_lowrank")(ember), _lowrank("pca_lowrank"), [],
    lambda m: [S("centered", m(5, 3), 2), S("plain", m(4, 3), 2, False)], random=True)


# -- LOBPCG (ember/_lobpcg.py) ---------------------------------------------------------------
def _lobpcg(mod):
    """lobpcg of the symmetric positive definite ``a a^T + 6 I`` from a fixed start, converged
    tightly (finite differences need it): the eigenvalues and the projector ``U U^T``, which
    does not depend on the eigenvectors' signs."""
    def run(a, k, largest=True):
        eye = mod.eye(a.shape[-1], dtype=a.dtype, device=a.device)
        A = a @ a.mT + 6 * eye  # noqa: N806
        X = eye[:, :k] + 0.25  # noqa: N806
        E, U = mod.lobpcg(A, k=k, X=X, largest=largest, tol=1e-13)  # noqa: N806
        return E, U @ U.mT
    return run


row("lobpcg", _lobpcg(ember), _lobpcg, [],
    lambda m: [S("largest", m(7, 7), 2), S("smallest", m(6, 6), 1, False)],
    dtypes=("float64",),
    skips={"test_forward_ad": "with an input that requires grad, an autograd.Function "
                              "without jvp, as torch's: forward AD raises in both"})
