"""Batching rules of block_diag, the distance ops and the scatter/index family against torch
2.13: for each argument batched at dim 0, at dim 1 or not at all, the values, shapes, nodes,
the per-example fallback's warning (where torch falls back) and torch's errors."""
import itertools
import warnings

import numpy as np
import pytest
from oracle import error_of, graph_tree, same

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


INDEX_OPS = [
    ("index_add", lambda torch, x, i, s: torch.index_add(x, 0, i, s, alpha=2), (X, IDX1, SRC)),
    ("index_add_dim1", lambda torch, x, i, s: x.index_add(1, i, s.t()), (X, IDX1, SRC)),
    ("index_copy", lambda torch, x, i, s: torch.index_copy(x, 0, i, s), (X, IDX1, SRC)),
    ("index_copy_dim1", lambda torch, x, i, s: x.index_copy(-1, i, s.t()), (X, IDX1, X[:2])),
    ("index_copy_wrong_source", lambda torch, x, i, s: x.index_copy(-1, i, s.t()),
     (X, IDX1, SRC)),
    ("index_fill", lambda torch, x, i: torch.index_fill(x, 0, i, -1.5), (X, IDX1)),
    ("index_fill_tensor", lambda torch, x, i, v: x.index_fill(1, i, v),
     (X, IDX1, np.array(3.0))),
    ("index_select", lambda torch, x, i: torch.index_select(x, 0, i), (X, IDX1)),
    ("index_select_dim1", lambda torch, x, i: x.index_select(-1, i), (X, IDX1)),
    ("index_put", lambda torch, x, i, s: torch.index_put(x, (i,), s), (X, IDX1, SRC)),
    ("index_put_broadcast", lambda torch, x, i, s: x.index_put((i,), s[0]), (X, IDX1, SRC)),
    ("index_put_two", lambda torch, x, i, s: x.index_put((i, i.flip(0)), s[:, 0]),
     (X, IDX1, SRC)),
    ("index_put_accumulate", lambda torch, x, i, s: torch.index_put(
        x, (i.repeat(2),), s.repeat(2, 1), accumulate=True), (X, IDX1, SRC)),
]


def _torch_aliases(name, dims):
    """index_fill of an unbatched self with a batched value: torch's rule fills the one
    self expanded over the batch in place, so every example ends up with the last one's
    value (a torch bug ember does not copy: see test_index_fill_of_an_unbatched_self)."""
    return name.startswith("index_fill_tensor") and dims[0] is None and dims[2] is not None


def _torch_drops_the_value(name, dims):
    """index_fill with an unbatched 0-dim value tensor: torch's rule fills with the value's
    number where the index is batched or self's batch is not first, and the value gets no
    gradient (None); ember's gets one, so only self's gradient is compared."""
    return name.startswith("index_fill_tensor") and dims[2] is None


def _cases(table):
    for name, fn, arrays in table:
        for dims in itertools.product((0, 1, None), repeat=len(arrays)):
            if any(d is not None for d in dims) and not _torch_aliases(name, dims):
                frozen = (2,) if _torch_drops_the_value(name, dims) else ()
                yield pytest.param(fn, arrays, dims, _compares_nodes(name, dims), frozen,
                                   id=f"{name}-{dims}")


def _compares_nodes(name, dims):
    """Whether the result's nodes are compared: torch builds index_fill of a batched index
    or value, or of a self batched in another dim than the first, from in-place fills of
    views (CopySlices over AsStridedBackward0 or PermuteBackward0, depending on the inputs'
    layouts), which ember does not copy; its values and gradients are compared all the
    same."""
    return not (name.startswith("index_fill") and (
        dims[0] not in (0, None) or any(d is not None for d in dims[1:])))


def _vmapped(torch, fn, arrays, dims, frozen=()):
    """``fn`` vmapped over the batched arrays (float ones requiring grad, but those at the
    positions ``frozen``): its result, the result's nodes, the warnings it raised (torch's
    text without the C++ place), and the gradients of a weighted sum of the result."""
    tensors = [torch.tensor(_batch_of(a, d), requires_grad=a.dtype.kind == "f" and
                            k not in frozen) for k, (a, d) in enumerate(zip(arrays, dims))]
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        out = torch.func.vmap(lambda *t: fn(torch, *t), in_dims=dims)(*tensors)
    weights = torch.tensor(np.arange(out.numel(), dtype="float64").reshape(tuple(out.shape)))
    floats = [t for t in tensors if t.requires_grad]
    grads = torch.autograd.grad((out * weights).sum(), floats, allow_unused=True)
    return out, graph_tree(out.grad_fn, 2), [
        str(w.message).split(" (Triggered internally")[0] for w in seen], grads


@pytest.mark.parametrize("fn, arrays, dims, nodes, frozen", _cases(OPS + INDEX_OPS))
def test_vmap_matches_torch(fn, arrays, dims, nodes, frozen):
    def body(torch):
        out, tree, seen, grads = _vmapped(torch, fn, arrays, dims, frozen)
        return out, tree if nodes else None, seen, grads
    same(body, rtol=1e-6, atol=1e-9, grad_fn=nodes)


@pytest.mark.parametrize("dims", [(None, 0, 0), (None, None, 0), (None, 0, None), (0, 0, None),
                                  (1, None, None)])
def test_index_fill_is_each_examples_index_fill(dims):
    """Where torch's index_fill rule goes wrong (see _torch_aliases, _torch_drops_the_value),
    ember's result and gradients are those of index_fill run on each example by itself."""
    import ember
    fn = INDEX_OPS[[n for n, _, _ in INDEX_OPS].index("index_fill_tensor")][1]
    arrays = (X, IDX1, np.array(3.0))
    out, _, seen, grads = _vmapped(ember, fn, arrays, dims)
    tensors = [ember.tensor(_batch_of(a, d), requires_grad=a.dtype.kind == "f")
               for a, d in zip(arrays, dims)]
    rows = [fn(ember, *(t if d is None else t.select(d, b) for t, d in zip(tensors, dims)))
            for b in range(B)]
    expected = ember.stack(rows)
    weights = ember.tensor(np.arange(expected.numel(), dtype="float64").reshape(
        tuple(expected.shape)))
    floats = [t for t in tensors if t.requires_grad]
    expected_grads = ember.autograd.grad((expected * weights).sum(), floats)
    assert seen == []
    np.testing.assert_array_equal(out.detach().numpy(), expected.detach().numpy())
    for g, e in zip(grads, expected_grads):
        np.testing.assert_array_equal(g.numpy(), e.numpy())


@pytest.mark.parametrize("mode", ["reflect", "replicate"])
@pytest.mark.parametrize("shape, pad", [((2, 5), (2, 1)), ((2, 4, 5), (1, 2, 2, 1))])
def test_reflect_and_replicate_pads_of_examples_match_torch(mode, shape, pad):
    """A reflect or replicate pad of examples (and its gradient, vmap(grad) included) pads
    each example's own last dims (the batch is not one of them), with torch's nodes."""
    arr = GEN.standard_normal((B,) + shape)

    def body(torch):
        x = torch.tensor(arr, requires_grad=True)
        f = lambda v: torch.nn.functional.pad(v, pad, mode)  # noqa: E731
        out = torch.func.vmap(f)(x)
        per_example = torch.func.vmap(torch.func.grad(lambda v: (f(v) ** 2).sum()))(x)
        # (the per-example gradients' own node is not compared: ember's backward under vmap
        # records pad_backward's node where torch's views its batched result)
        return (out, per_example.detach(), torch.autograd.grad((out * out).sum(), x),
                graph_tree(out.grad_fn, 2))
    same(body, rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("dims", [(0, 0, 0), (0, 0, None), (None, 0, 0), (0, None, 0),
                                  (1, 0, None)])
def test_layer_norm_with_per_example_affine_parameters_matches_torch(dims):
    """layer_norm whose weight or bias is batched: the examples' normalised values scaled and
    shifted by their own parameters (the rule unpacked the one output as three: rows of
    the result came back as a tuple), with torch's values and gradients."""
    x_arr, w_arr, b_arr = (GEN.standard_normal(s) for s in ((B, 3, 4), (B, 4), (B, 4)))

    def body(torch):
        x = torch.tensor(np.moveaxis(x_arr, 0, dims[0] or 0).copy(), requires_grad=True)
        w, b = (torch.tensor(a, requires_grad=True) for a in (w_arr, b_arr))
        args = [t if d is not None else t[0] for t, d in zip((x, w, b), dims)]
        f = lambda *a: torch.nn.functional.layer_norm(a[0], (4,), a[1], a[2])  # noqa: E731
        out = torch.func.vmap(f, in_dims=dims)(*args)
        per_example = torch.func.vmap(torch.func.grad(lambda *a: (f(*a) ** 2).sum(),
                                                      argnums=(0, 1, 2)), in_dims=dims)(*args)
        return out, per_example, torch.autograd.grad((out * out).sum(), (x, w, b))
    # (nodes not compared: torch's rule records its own decomposition of the affine step)
    same(body, rtol=1e-7, atol=1e-9, grad_fn=False)


def test_squeeze_of_0dim_examples_matches_torch():
    """squeeze of 0-dim examples: dim 0 or none aliases them (AliasBackward0), also under
    vmap(grad); another dim is torch's out-of-range error (the rule squeezed a physical dim
    the batch does not have)."""
    def body(torch):
        x = torch.tensor(np.array([1.0, 2.0, 3.0]), requires_grad=True)
        out = []
        for f in (lambda v: v.squeeze(0), lambda v: v.squeeze((0,)), lambda v: v.squeeze(),
                  lambda v: v.squeeze(())):
            o = torch.func.vmap(f)(x)
            per_example = torch.func.vmap(torch.func.grad(lambda v: (f(v) ** 2).sum()))(x)
            out += [o, per_example, graph_tree(o.grad_fn, 2)]
        for f in (lambda v: v.squeeze(-1), lambda v: v.squeeze((0, 0)), lambda v: v.squeeze(1)):
            out.append(error_of(lambda: torch.func.vmap(f)(x)))
        return out
    same(body)


def test_batch_norm_training_with_shared_running_stats_is_refused_as_torch():
    """batch_norm in training mode under vmap with running statistics that are not batched:
    every example would update them in place in turn (ember did, silently), torch refuses;
    without running statistics, or in eval mode, it runs."""
    x_arr = GEN.standard_normal((2, 4, 3))

    def body(torch):
        x = torch.tensor(x_arr)
        mean, var = torch.zeros(3, dtype=torch.float64), torch.ones(3, dtype=torch.float64)
        bn = torch.nn.functional.batch_norm
        return (error_of(lambda: torch.func.vmap(lambda v: bn(v, mean, var, training=True))(x)),
                mean, var, torch.func.vmap(lambda v: bn(v, None, None, training=True))(x),
                torch.func.vmap(lambda v: bn(v, mean, var, training=False))(x))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (the fallback's warning: not the point here)
        same(body, rtol=1e-6, atol=1e-9, check_warnings=False)
