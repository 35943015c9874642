"""The synchronized batch norm pieces (batch_norm_stats, _gather_stats[_with_counts], _elemt,
_backward_reduce, _backward_elemt, _update_stats) against torch 2.13: two simulated processes'
pieces put together give torch's batch norm of the whole batch, its running statistics and its
gradients; the pieces record torch's NotImplemented node; native_norm and the errors."""
import numpy as np
import pytest
from oracle import same, torch_or_skip

import ember

GEN = np.random.default_rng(5)
X = GEN.standard_normal((6, 3, 4))
DY = GEN.standard_normal((6, 3, 4))
W = GEN.standard_normal(3)
B = GEN.standard_normal(3)
SHARDS = (slice(0, 2), slice(2, 6))  # two processes' batches, of different sizes


def _two_process_batch_norm(lib, x, w, b, dy, rm, rv):
    """Batch norm of ``x`` computed as two processes would, from the pieces; returns the
    output and the input, weight and bias gradients."""
    stats = [lib.batch_norm_stats(x[s], 1e-5) for s in SHARDS]
    counts = lib.tensor([float(x[s].shape[0] * x.shape[2]) for s in SHARDS],
                        dtype=x.dtype)
    mean, invstd = lib.batch_norm_gather_stats_with_counts(
        x, lib.stack([m for m, _ in stats]), lib.stack([v for _, v in stats]), rm, rv, 0.1,
        1e-5, counts)
    out = lib.cat([lib.batch_norm_elemt(x[s], w, b, mean, invstd, 1e-5) for s in SHARDS])
    reduced = [lib.batch_norm_backward_reduce(dy[s], x[s], mean, invstd, w, True, True, True)
               for s in SHARDS]
    sum_dy = sum(r[0] for r in reduced)  # the all-reduce
    sum_dy_xmu = sum(r[1] for r in reduced)
    count = counts.to(lib.int32)
    grad_x = lib.cat([lib.batch_norm_backward_elemt(dy[s], x[s], mean, invstd, w, sum_dy,
                                                    sum_dy_xmu, count) for s in SHARDS])
    return out, grad_x, sum(r[2] for r in reduced), sum(r[3] for r in reduced)


def test_pieces_give_torchs_batch_norm_of_the_whole_batch():
    torch = torch_or_skip()
    e_rm, e_rv = ember.zeros(3, dtype=ember.float64), ember.ones(3, dtype=ember.float64)
    got = _two_process_batch_norm(ember, *(ember.tensor(a) for a in (X, W, B, DY)), e_rm, e_rv)
    x, w, b = (torch.tensor(a, requires_grad=True) for a in (X, W, B))
    rm, rv = torch.zeros(3, dtype=torch.float64), torch.ones(3, dtype=torch.float64)
    out = torch.nn.functional.batch_norm(x, rm, rv, w, b, True, 0.1, 1e-5)
    want = (out, *torch.autograd.grad(out, (x, w, b), torch.tensor(DY)))
    for g, t in zip(got, want):
        np.testing.assert_allclose(g.numpy(), t.detach().numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(e_rm.numpy(), rm.numpy(), rtol=1e-12)
    np.testing.assert_allclose(e_rv.numpy(), rv.numpy(), rtol=1e-12)


def test_gather_stats_is_gather_with_equal_counts():
    x = ember.tensor(X)
    means, invstds = ember.tensor(GEN.standard_normal((2, 3))), ember.tensor(
        GEN.uniform(0.5, 2.0, (2, 3)))
    rm1, rv1, rm2, rv2 = (ember.ones(3, dtype=ember.float64) for _ in range(4))
    a = ember.batch_norm_gather_stats(x, means, invstds, rm1, rv1, 0.2, 1e-5, 7)
    b = ember.batch_norm_gather_stats_with_counts(x, means, invstds, rm2, rv2, 0.2, 1e-5,
                                                  ember.tensor([7.0, 7.0]))
    for u, v in zip((*a, rm1, rv1), (*b, rm2, rv2)):
        assert np.array_equal(u.numpy(), v.numpy())
    # (written as torch's CUDA kernel writes them: without counting a write)
    assert rm1._version == 0 and rv1._version == 0


def test_backward_reduce_returns_none_for_what_is_not_asked():
    x, dy = ember.tensor(X), ember.tensor(DY)
    mean, invstd = ember.batch_norm_stats(x, 1e-5)
    out = ember.batch_norm_backward_reduce(dy, x, mean, invstd, None, False, False, True)
    assert out[:3] == (None, None, None)
    assert np.allclose(out[3].numpy(), DY.sum((0, 2)))


def test_float16_statistics_are_float32():
    mean, invstd = ember.batch_norm_stats(ember.tensor(X).half(), 1e-5)
    assert mean.dtype == invstd.dtype == ember.float32
    np.testing.assert_allclose(mean.numpy(), X.astype(np.float16).astype(np.float32).mean(
        (0, 2)), rtol=1e-5)


@pytest.mark.parametrize("name,call", [
    ("batch_norm_stats", lambda x: ember.batch_norm_stats(x, 1e-5)[0]),
    ("batch_norm_elemt", lambda x: ember.batch_norm_elemt(x, None, None, x.mean((0, 2)),
                                                          x.std((0, 2)), 1e-5)),
    ("batch_norm_backward_reduce",
     lambda x: ember.batch_norm_backward_reduce(x, x, x.mean((0, 2)), x.std((0, 2)), None,
                                                True, False, False)[0]),
    ("batch_norm_update_stats", lambda x: ember.batch_norm_update_stats(x, None, None, 0.1)[1]),
])
def test_pieces_have_no_derivative(name, call):
    out = call(ember.tensor(X, requires_grad=True))
    assert type(out.grad_fn).__name__ == "NotImplemented"
    with pytest.raises(RuntimeError, match=f"derivative for aten::{name} is not implemented"):
        out.sum().backward()


def test_update_stats_node_and_error_as_torchs():
    def body(torch):
        x = torch.tensor(X, requires_grad=True)
        mean, var = torch.batch_norm_update_stats(x, None, None, 0.1)
        return mean.grad_fn.name(), torch.autograd.grad(var.sum(), x)
    same(body)


@pytest.mark.parametrize("case", ["1d", "long"])
def test_update_stats_errors(case):
    same(lambda torch: torch.batch_norm_update_stats(
        torch.ones(3, dtype=torch.float64) if case == "1d" else torch.ones(2, 3,
                                                                           dtype=torch.long),
        None, None, 0.1))


def test_native_norm_refuses_dense_tensors():
    torch = torch_or_skip()
    with pytest.raises(NotImplementedError) as want:
        torch.native_norm(torch.ones(3))
    with pytest.raises(NotImplementedError) as got:
        ember.native_norm(ember.ones(3))
    assert str(want.value).startswith(str(got.value).replace("ember", "torch"))


def test_native_functions_as_torchs():
    def body(torch):
        x = torch.tensor(X, requires_grad=True)
        out = []
        rm, rv = torch.zeros(3, dtype=torch.float64), torch.ones(3, dtype=torch.float64)
        out.append(torch.native_batch_norm(x, None, None, rm, rv, True, 0.1, 1e-5))
        out += [rm, rv, torch.native_batch_norm(x, None, None, rm, rv, False, 0.1, 1e-5)]
        out.append(torch.native_layer_norm(x, [4], None, None, 1e-5))
        gn = torch.native_group_norm(x, None, None, 6, 3, 4, 3, 1e-5)
        out.append(torch.autograd.grad(gn[0].sum() + (gn[1] ** 2).sum() + gn[2].sum(), x))
        torch.manual_seed(0)
        out.append(torch.native_dropout(x, 0.25, True))
        out.append(torch.native_dropout(x, 0.25, False))
        out.append(torch.native_dropout(torch.ones(0, 2), 0.5, True))
        out.append([torch.norm_except_dim(x, p, d) for p, d in ((2, 0), (3, 1), (2, -1),
                                                                (2, 2), (2, -2), (2, -3))])
        return out
    same(body, grad_fn=False, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("call", [
    lambda torch: torch.native_group_norm(torch.ones(4, 3, 5), None, None, 4, 3, 6, 3, 1e-5),
    lambda torch: torch.native_group_norm(torch.ones(4, 3, 5), None, None, 4, 3, 5, 2, 1e-5),
    lambda torch: torch.native_layer_norm(torch.ones(4, 3, 5), [4], None, None, 1e-5),
    lambda torch: torch.native_dropout(torch.ones(3), 1.5, True),
    lambda torch: torch.native_dropout(torch.ones(3, dtype=torch.long), 0.5, True),
    lambda torch: torch.norm_except_dim(torch.ones(2, 3), 2, 3),
])
def test_native_errors(call):
    same(call)


_EMPTY_BATCH_NORMS = {
    "eval": lambda t, x, w, b, rm, rv: t.nn.functional.batch_norm(x, rm, rv, w, b),
    "training": lambda t, x, w, b, rm, rv: t.nn.functional.batch_norm(x, rm, rv, w, b,
                                                                      training=True),
    "no_running_stats": lambda t, x, w, b, rm, rv: t.nn.functional.batch_norm(x, None, None,
                                                                              w, b),
    "wrong_sizes_unchecked": lambda t, x, w, b, rm, rv: t.nn.functional.batch_norm(
        x, t.zeros(5), t.ones(5), w, b),
    "float64_weight": lambda t, x, w, b, rm, rv: t.nn.functional.batch_norm(
        x, rm, rv, None if w is None else w.double(), b),
    "module": lambda t, x, w, b, rm, rv: _module_norm(t, x, rm, rv),
    "native_training": lambda t, x, w, b, rm, rv: t.native_batch_norm(x, w, b, rm, rv, True,
                                                                      0.1, 1e-5)[0],
    "instance_norm": lambda t, x, w, b, rm, rv: t.nn.functional.instance_norm(x, rm, rv, w, b),
}


def _module_norm(t, x, rm, rv):
    m = t.nn.BatchNorm1d(3)
    y = m(x)
    rm.copy_(m.running_mean)
    rv.copy_(m.running_var)
    return y


@pytest.mark.parametrize("shape", [(0, 3), (2, 3, 0)])
@pytest.mark.parametrize("affine", [(True, True), (True, False), (False, True), (False, False)])
@pytest.mark.parametrize("name", sorted(_EMPTY_BATCH_NORMS))
def test_batch_norm_of_an_empty_input(name, affine, shape):
    # torch's batch norm of no elements is clone, times weight[0], plus bias[0], whatever the
    # running statistics (left as they are, even in training: ember's were NaN), and its
    # native_batch_norm refuses to train on it (difftest 22000708); instance norm's running
    # statistics of an empty batch are NaN (ember raised ZeroDivisionError)
    from oracle import graph_tree

    def body(t):
        x = t.zeros(shape, requires_grad=True)
        w = t.tensor([2.0, 0.88, -1.88], requires_grad=True) if affine[0] else None
        b = t.tensor([-0.28, 1.9, -0.01], requires_grad=True) if affine[1] else None
        rm, rv = t.tensor([0.5, 0.0, -1.0]), t.tensor([1.0, 2.0, 0.5])
        if name == "instance_norm" and len(shape) == 2:
            x = t.zeros(0, 3, 4, requires_grad=True)
        y = _EMPTY_BATCH_NORMS[name](t, x, w, b, rm, rv)
        y.sum().backward()
        return (y, graph_tree(y.grad_fn), x.grad, w is not None and w.grad,
                b is not None and b.grad, rm, rv)
    same(body, check_warnings=False)


@pytest.mark.parametrize("shape, groups, affine", [((2, 6, 3), 3, True), ((2, 6, 3), 3, False),
                                                   ((3, 4, 2, 2), 2, True), ((2, 4), 4, True)])
def test_group_norm_create_graph_records_torchs_composite(shape, groups, affine):
    # torch's group_norm derivative under create_graph is its infinitely differentiable
    # composite (dX = a * dY + b * X + c, ...): the gradients' nodes and their inputs' are
    # torch's, and so are the second derivatives (deeper, torch reads the forward's saved
    # mean and rstd where ember recomputes them)
    def body(t):
        rng = np.random.default_rng(0)
        x = t.tensor(rng.standard_normal(shape), requires_grad=True)
        params = [t.tensor(rng.random(shape[1]) + 0.5, requires_grad=True) for _ in "wb"]
        w, b = params if affine else (None, None)
        y = t.nn.functional.group_norm(x, groups, w, b)
        inputs = (x, w, b) if affine else (x,)
        grads = t.autograd.grad((y ** 3).sum(), inputs, create_graph=True)

        def names(f, depth):
            if f is None or depth == 0:
                return None if f is None else f.name()
            return (f.name(), [names(n, depth - 1) for n, _ in f.next_functions])
        second = t.autograd.grad(sum((g * g).sum() for g in grads), inputs)
        return [names(g.grad_fn, 2) for g in grads], grads, second
    same(body, rtol=1e-6, atol=1e-9)
