"""Batching rules of block_diag, the distance ops and the scatter/index family against torch
2.13: for each argument batched at dim 0, at dim 1 or not at all, the values, shapes, nodes,
the per-example fallback's warning (where torch falls back) and torch's errors."""
import itertools
import warnings

import numpy as np
import pytest
from oracle import graph_tree, same

B = 3
GEN = np.random.default_rng(0)
X = GEN.standard_normal((4, 3))
SRC = GEN.standard_normal((2, 3))
IDX = np.array([[0, 1, 2], [3, 0, 1]])
IDX1 = np.array([0, 2])
MASK = GEN.random((4, 3)) < 0.5


def _batch_of(example, dim):
    """``B`` different examples stacked at ``dim`` (None: the example itself, unbatched)."""
    if dim is None:
        return example
    if example.dtype.kind in "bi":  # indices and masks: rolled, so each example differs
        return np.stack([np.roll(example, b) for b in range(B)], dim)
    return np.stack([example + b for b in range(B)], dim)


# (name, function of one example given torch and its tensors, the example arrays)
OPS = [
    ("block_diag", lambda torch, a, b: torch.block_diag(a, b), (X, SRC)),
    ("block_diag_ranks", lambda torch, a, b, c: torch.block_diag(a, b[0], c[0, 0]),
     (X, SRC, X)),
    ("cdist", lambda torch, a, b: torch.cdist(a, b), (X, SRC)),
    ("cdist_inf", lambda torch, a, b: torch.cdist(a, b, p=float("inf")), (X, SRC)),
    ("cdist_mm", lambda torch, a, b: torch.cdist(a, b, compute_mode="use_mm_for_euclid_dist"),
     (X, SRC)),
    ("pdist", lambda torch, a: torch.nn.functional.pdist(a), (X,)),
    ("pdist_1", lambda torch, a: torch.nn.functional.pdist(a, 1.0), (X,)),
    ("take", lambda torch, x, i: torch.take(x, i), (X, IDX)),
    ("put", lambda torch, x, i, s: torch.put(x, i, s), (X, IDX1, SRC[0, :2])),
    ("put_accumulate", lambda torch, x, i, s: torch.put(x, i, s, accumulate=True),
     (X, IDX1, SRC[0, :2])),
    ("masked_scatter", lambda torch, x, m, s: torch.masked_scatter(x, m, s),
     (X, MASK, GEN.standard_normal(12))),
]


def _cases(table):
    for name, fn, arrays in table:
        for dims in itertools.product((0, 1, None), repeat=len(arrays)):
            if any(d is not None for d in dims):
                yield pytest.param(fn, arrays, dims, id=f"{name}-{dims}")


def _vmapped(torch, fn, arrays, dims):
    """``fn`` vmapped over the batched arrays (float ones requiring grad): its result, the
    result's nodes, the warnings it raised (torch's text without the C++ place), and the
    gradients of a weighted sum of the result."""
    tensors = [torch.tensor(_batch_of(a, d), requires_grad=a.dtype.kind == "f")
               for a, d in zip(arrays, dims)]
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        out = torch.func.vmap(lambda *t: fn(torch, *t), in_dims=dims)(*tensors)
    weights = torch.tensor(np.arange(out.numel(), dtype="float64").reshape(tuple(out.shape)))
    floats = [t for t in tensors if t.requires_grad]
    grads = torch.autograd.grad((out * weights).sum(), floats, allow_unused=True)
    return out, graph_tree(out.grad_fn, 2), [
        str(w.message).split(" (Triggered internally")[0] for w in seen], grads


@pytest.mark.parametrize("fn, arrays, dims", _cases(OPS))
def test_vmap_matches_torch(fn, arrays, dims):
    same(lambda torch: _vmapped(torch, fn, arrays, dims), rtol=1e-6, atol=1e-9)
