"""Batching rules of the view-scatter ops (select_scatter, slice_scatter, diagonal_scatter)
against torch 2.13: self, src or both batched at dim 0 or 1, negative dims included; the
values, shapes, gradients, vmap(grad) and jacrev, and no per-example fallback warning."""
import itertools

import numpy as np
import pytest
from oracle import error_of, same

from .test_vmap_scatter_rules import _batch_of, _vmapped

GEN = np.random.default_rng(1)
X = GEN.standard_normal((4, 5))
ROW = GEN.standard_normal(5)
COL = GEN.standard_normal(4)
DIAG = GEN.standard_normal(3)


# (name, function of one example given torch and its tensors, the example arrays); torch
# writes select_scatter and slice_scatter under vmap as a scatter (ScatterBackward0) and
# ember as the op itself (SelectScatterBackward0, SliceScatterBackward0), so only
# diagonal_scatter's nodes are compared
OPS = [
    ("select_scatter", lambda torch, x, s: torch.select_scatter(x, s, 0, 2), (X, ROW)),
    ("select_scatter_neg", lambda torch, x, s: x.select_scatter(s, -1, -2), (X, COL)),
    ("slice_scatter", lambda torch, x, s: torch.slice_scatter(x, s, 0, 1, 4, 2), (X, X[:2])),
    ("slice_scatter_neg", lambda torch, x, s: x.slice_scatter(s, -1, 2), (X, X[:, :3])),
    ("slice_scatter_default", lambda torch, x, s: torch.slice_scatter(x, s), (X, X)),
    ("diagonal_scatter", lambda torch, x, s: torch.diagonal_scatter(x, s, 1), (X, COL)),
    ("diagonal_scatter_neg", lambda torch, x, s: x.diagonal_scatter(s, -1, -1, -2), (X, DIAG)),
]


def _cases(names=None):
    for name, fn, arrays in OPS:
        for dims in itertools.product((0, 1, None), repeat=2):
            if dims != (None, None) and names in (None, name.split("_")[0]):
                yield pytest.param(fn, arrays, dims, name.startswith("diagonal"),
                                   _torch_scales_the_src(name), id=f"{name}-{dims}")


def _torch_scales_the_src(name):
    """select_scatter: torch's rule scatters src expanded over the whole of self's dim, so
    the gradient of src, taken outside the vmap, comes back multiplied by that dim's size
    (a torch bug ember does not copy: see test_select_scatter_src_gradient_is_each_examples;
    vmap(grad) is right in torch): only self's gradient is compared there."""
    return (1,) if name.startswith("select") else ()


@pytest.mark.parametrize("fn, arrays, dims, nodes, frozen", _cases())
def test_vmap_matches_torch(fn, arrays, dims, nodes, frozen):
    def body(torch):
        out, tree, seen, grads = _vmapped(torch, fn, arrays, dims, frozen)
        assert seen == []
        return out, tree if nodes else None, seen, grads
    same(body, rtol=1e-7, atol=1e-9, grad_fn=nodes)


@pytest.mark.parametrize("fn, arrays, dims, nodes, frozen", _cases("select"))
def test_select_scatter_src_gradient_is_each_examples(fn, arrays, dims, nodes, frozen):
    """Where torch's select_scatter rule scales src's gradient (see _torch_scales_the_src),
    ember's result and gradients are those of select_scatter run on each example."""
    import ember
    out, _, seen, grads = _vmapped(ember, fn, arrays, dims)
    tensors = [ember.tensor(_batch_of(a, d), requires_grad=True) for a, d in zip(arrays, dims)]
    rows = [fn(ember, *(t if d is None else t.select(d, b) for t, d in zip(tensors, dims)))
            for b in range(out.shape[0])]
    expected = ember.stack(rows)
    weights = ember.tensor(np.arange(expected.numel(), dtype="float64").reshape(
        tuple(expected.shape)))
    expected_grads = ember.autograd.grad((expected * weights).sum(), tensors)
    assert seen == []
    np.testing.assert_array_equal(out.detach().numpy(), expected.detach().numpy())
    for g, e in zip(grads, expected_grads):
        np.testing.assert_array_equal(g.numpy(), e.numpy())


@pytest.mark.parametrize("fn, arrays, dims, nodes, frozen", _cases())
def test_vmap_of_grad_and_jacrev_match_torch(fn, arrays, dims, nodes, frozen):
    """Per-example gradients (vmap(grad)) of both arguments and the Jacobian of the
    vmapped op (jacrev) with respect to self and src (but src where torch scales it: the
    jacobian is a gradient taken outside the vmap)."""
    tensors = [_batch_of(a, d) for a, d in zip(arrays, dims)]

    def body(torch):
        t = [torch.tensor(a) for a in tensors]
        loss = lambda x, s: (fn(torch, x, s) ** 2).sum()  # noqa: E731
        per_example = torch.func.vmap(torch.func.grad(loss, argnums=(0, 1)), in_dims=dims)(*t)
        batched = lambda x, s: torch.func.vmap(  # noqa: E731
            lambda a, b: fn(torch, a, b), in_dims=dims)(x, s)
        return per_example, torch.func.jacrev(batched, argnums=(0, 1)[:2 - len(frozen)])(*t)
    same(body, rtol=1e-7, atol=1e-9, grad_fn=False)


@pytest.mark.parametrize("dims", [(0, 0), (None, 0), (0, None)])
def test_wrong_src_shape_raises_as_torch(dims):
    """A src that is not the shape of the view raises torch's error type (torch's text is
    its decomposition's expand error; ember's is select_scatter's own, on the batch)."""
    import ember
    torch = pytest.importorskip("torch")

    def run(m):
        t = [m.tensor(_batch_of(a, d)) for a, d in zip((X, COL), dims)]
        return m.func.vmap(lambda x, s: m.select_scatter(x, s, 0, 1), in_dims=dims)(*t)
    theirs, ours = error_of(lambda: run(torch)), error_of(lambda: run(ember))
    assert theirs is not None and ours is not None and ours[0] == theirs[0], (ours, theirs)


@pytest.mark.parametrize("dims", [(0, 0), (None, 0), (0, None), (1, None)])
def test_as_strided_scatter_is_refused_as_torch(dims):
    """torch has no batching rule for as_strided_scatter and raises its error."""
    def body(torch):
        t = [torch.tensor(_batch_of(a, d)) for a, d in zip((X, COL[:2]), dims)]
        return torch.func.vmap(lambda x, s: torch.as_strided_scatter(x, s, (2,), (1,)),
                               in_dims=dims)(*t)
    same(body)
