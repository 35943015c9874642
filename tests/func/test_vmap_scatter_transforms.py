"""vmap(grad), jacrev, jacfwd and vmap(jacrev) of block_diag, the distance ops and the
scatter/index family against torch 2.13: the values and errors (the fallback's warnings from
inside torch's backward formulas are not compared: ember batches those formulas)."""
import numpy as np
import pytest
from oracle import same

import ember

from .test_vmap_scatter_rules import B, IDX1, MASK, SRC, X

GEN = np.random.default_rng(1)
IDX = np.array([[0, 1, 2], [3, 0, 1]])

OPS = {
    "block_diag": (lambda L, a, b: L.block_diag(a, b), (X, SRC)),
    "cdist": (lambda L, a, b: L.cdist(a, b), (X, SRC)),
    "cdist_mm": (lambda L, a, b: L.cdist(a, b, compute_mode="use_mm_for_euclid_dist"),
                 (X, SRC)),
    "pdist": (lambda L, a: L.nn.functional.pdist(a), (X,)),
    "scatter": (lambda L, x, s: L.scatter(x, 0, L.tensor(IDX), s), (X, SRC)),
    "scatter_add": (lambda L, x, s: L.scatter_add(x, 0, L.tensor(IDX), s), (X, SRC)),
    **{f"scatter_reduce_{r}": (lambda L, x, s, r=r: L.scatter_reduce(x, 0, L.tensor(IDX), s, r),
                               (X, SRC)) for r in ("sum", "prod", "mean", "amax", "amin")},
    "scatter_reduce_amin_no_self": (lambda L, x, s: L.scatter_reduce(
        x, 0, L.tensor(IDX), s, "amin", include_self=False), (X, SRC)),
    "index_add": (lambda L, x, s: L.index_add(x, 0, L.tensor(IDX1), s, alpha=2), (X, SRC)),
    "index_copy": (lambda L, x, s: L.index_copy(x, 0, L.tensor(IDX1), s), (X, SRC)),
    "index_fill": (lambda L, x, v: L.index_fill(x, 0, L.tensor(IDX1), v), (X, np.array(2.0))),
    "index_put": (lambda L, x, s: L.index_put(x, (L.tensor(IDX1),), s), (X, SRC)),
    "index_put_accumulate": (lambda L, x, s: L.index_put(x, (L.tensor(IDX1),), s,
                                                         accumulate=True), (X, SRC)),
    "masked_scatter": (lambda L, x, s: L.masked_scatter(x, L.tensor(MASK), s),
                       (X, GEN.standard_normal(12))),
    "put": (lambda L, x, s: L.put(x, L.tensor(IDX1), s), (X, SRC[0, :2])),
    "put_accumulate": (lambda L, x, s: L.put(x, L.tensor(IDX1), s, accumulate=True),
                       (X, SRC[0, :2])),
    "take": (lambda L, x: L.take(x, L.tensor(IDX)), (X,)),
}


def _batch(a):
    return np.stack([a + b for b in range(B)])


def _transformed(L, name, mode):
    fn, arrays = OPS[name]
    nums = tuple(range(len(arrays)))
    f = lambda *a: fn(L, *a)  # noqa: E731
    if mode == "vmap_grad":
        g = L.func.grad(lambda *a: (f(*a) ** 2).sum(), argnums=nums)
        return L.func.vmap(g)(*(L.tensor(_batch(a)) for a in arrays))
    if mode == "vmap_jacrev":
        return L.func.vmap(L.func.jacrev(f, argnums=nums))(*(L.tensor(_batch(a))
                                                              for a in arrays))
    jac = L.func.jacrev if mode == "jacrev" else L.func.jacfwd
    return jac(f, argnums=nums)(*(L.tensor(a) for a in arrays))


# where torch 2.13 is wrong, ember is checked against finite differences instead
_TORCH_WRONG = {("cdist", "jacrev"), ("cdist", "vmap_jacrev"),  # rows of the wrong outputs
                ("scatter_reduce_prod", "jacfwd")}  # (its jacrev disagrees with it)
# torch refuses: its prod backward tests the data (.item()) under vmap
_TORCH_REFUSES = {("scatter_reduce_prod", "vmap_grad"), ("scatter_reduce_prod", "vmap_jacrev")}


@pytest.mark.parametrize("mode", ["vmap_grad", "jacrev", "jacfwd", "vmap_jacrev"])
@pytest.mark.parametrize("name", list(OPS))
def test_transforms_match_torch(name, mode):
    if (name, mode) in _TORCH_WRONG | _TORCH_REFUSES:
        pytest.skip("torch 2.13 is wrong or refuses here: see test_where_torch_is_wrong")
    same(lambda L: _transformed(L, name, mode), rtol=1e-6, atol=1e-9, check_warnings=False)


def _numeric_jacobians(name):
    """d fn / d each input by central differences, in float64 (shape: out + input)."""
    fn, arrays = OPS[name]
    out = fn(ember, *(ember.tensor(a) for a in arrays)).numpy()
    jacs = []
    for k, a in enumerate(arrays):
        jac = np.zeros(out.shape + a.shape)
        for pos in np.ndindex(a.shape):
            step = np.zeros_like(a)
            step[pos] = 1e-6
            up = [ember.tensor(b + step if j == k else b) for j, b in enumerate(arrays)]
            down = [ember.tensor(b - step if j == k else b) for j, b in enumerate(arrays)]
            jac[(...,) + pos] = (fn(ember, *up).numpy() - fn(ember, *down).numpy()) / 2e-6
        jacs.append(jac)
    return jacs


@pytest.mark.parametrize("name, mode", sorted(_TORCH_WRONG))
def test_where_torch_is_wrong(name, mode):
    """torch 2.13's jacrev of cdist mixes up the rows of the jacobian and its jacfwd of
    scatter_reduce(prod) disagrees with its own jacrev: ember's are the finite differences'."""
    got = _transformed(ember, name, mode.replace("vmap_", ""))
    for g, n in zip(got, _numeric_jacobians(name)):
        np.testing.assert_allclose(g.numpy(), n, rtol=1e-5, atol=1e-6)
    if mode.startswith("vmap_"):  # each example's jacobian is the one of the example alone
        batched = _transformed(ember, name, mode)
        first = _transformed(ember, name, "jacrev")
        for g, f in zip(batched, first):
            np.testing.assert_allclose(g.numpy()[0], f.numpy(), rtol=1e-12)
