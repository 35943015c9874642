"""``vmap`` against torch 2.13: batched ops, in_dims/out_dims, chunking, randomness, errors,
and composition with grad, vjp, jvp, jacrev, jacfwd, hessian and functional_call (per-example
gradients, model ensembles)."""
import copy
import warnings

import numpy as np
import pytest
from oracle import error_of, graph_tree, same

import ember

GEN = np.random.default_rng(0)
X = GEN.standard_normal((4, 3))
Y = GEN.standard_normal((4, 3))
M = GEN.standard_normal((4, 3, 3))
W = GEN.standard_normal((5, 3))
IMG = GEN.standard_normal((4, 2, 6, 6))
KER = GEN.standard_normal((3, 2, 3, 3))
IDX = np.array([2, 0, 1, 1])
NANS = np.where(GEN.random((4, 3, 3)) < 0.3, np.nan, M)


def _t(torch, a):
    return torch.tensor(a)


# (name, function of one example given torch and its tensors, the inputs' arrays, in_dims)
CASES = [
    ("unary", lambda torch, x: x.sin().exp(), (X,), 0),
    ("binary_broadcast", lambda torch, x, w: x * w, (X, W), (0, None)),
    ("binary_both", lambda torch, x, y: torch.atan2(x, y) + x, (X, Y), 0),
    ("zero_dim_promotion", lambda torch, x: x.sum() * torch.ones(2, dtype=torch.float32),
     (X,), 0),
    ("where", lambda torch, x, y: torch.where(x > 0, x, y), (X, Y), 0),
    # an example of two or more dimensions: the *_like layout is not read off its memory
    ("like_2d", lambda torch, x: torch.ones_like(x) + torch.zeros_like(x) * x, (M,), 0),
    ("like_2d_permuted", lambda torch, x: torch.ones_like(x.t()) * 2, (M,), 1),
    ("sum_all", lambda torch, x: x.sum(), (X,), 0),
    ("reductions", lambda torch, x: (x.mean(0), x.amax(), x.var(), x.std(0, keepdim=True),
                                     x.logsumexp(0), x.norm()), (M,), 0),
    ("max_dim", lambda torch, x: x.max(1), (M,), 0),
    ("aminmax", lambda torch, x: (torch.aminmax(x), torch.aminmax(x, dim=-1, keepdim=True)),
     (M,), 0),
    ("max_min_all", lambda torch, x: (x.max(), x.min(), x.argmax(), x.prod()), (X,), 0),
    ("softmax", lambda torch, x: (torch.softmax(x, -1), torch.log_softmax(x, 0)), (M,), 0),
    ("cumsum_sort", lambda torch, x: (x.cumsum(1), x.sort(0)[0], x.topk(2)[1]), (M,), 0),
    ("views", lambda torch, x: (x.view(9), x.reshape(-1, 3).t(), x.permute(1, 0),
                                x.transpose(0, 1), x.unsqueeze(-1), x[None].squeeze(0),
                                x.flatten(), x.expand(2, 3, 3), x.flip(0), x.diagonal()),
     (M,), 0),
    ("indexing", lambda torch, x: (x[1], x[:, 1:], x[..., 0], x[[0, 2]],
                                   x[[0, 1], :, ][:, [2, 0]], x[[0, 1], 1]), (M,), 0),
    ("cat_stack", lambda torch, x, w: (torch.cat([x, w[:3]]), torch.stack([x, x], 1)),
     (M, W), (0, None)),
    ("split_unbind", lambda torch, x: (x.split(1, 1), x.unbind(0), x.chunk(3, -1)), (M,), 0),
    ("matmul_shapes", lambda torch, x, m: (x @ m, m @ x, x @ x, m @ m, torch.mm(m, m.t()),
                                           torch.outer(x, x), torch.einsum("ij,j->i", m, x)),
     (X, M), 0),
    ("matmul_unbatched", lambda torch, x, w: (w @ x, x @ w.t(), torch.mv(w, x)), (X, W),
     (0, None)),
    ("addr", lambda torch, x, w: (torch.addr(w[:3], x[:3], x, beta=0.5, alpha=2),
                                  torch.addr(x, w[:, 0], x, beta=0)), (X, W), (0, None)),
    ("linear", lambda torch, x, w: torch.nn.functional.linear(x, w, w[:, 0]), (X, W),
     (0, None)),
    ("batched_weight", lambda torch, w, x: torch.nn.functional.linear(x, w), (M, X), 0),
    ("conv", lambda torch, x, k: torch.nn.functional.conv2d(x, k, padding=1), (IMG, KER),
     (0, None)),
    ("conv_unbatched_example", lambda torch, x, k: torch.nn.functional.conv2d(x[None], k),
     (IMG, KER), (0, None)),
    ("conv_batched_weight", lambda torch, k, x: torch.nn.functional.conv2d(x, k),
     (np.stack([KER] * 4), IMG[:2]), (0, None)),
    ("pool_norm", lambda torch, x: (torch.nn.functional.max_pool2d(x, 2),
                                    torch.nn.functional.avg_pool2d(x, 2),
                                    torch.nn.functional.layer_norm(x, (6,)),
                                    torch.nn.functional.adaptive_avg_pool2d(x, 1)), (IMG,), 0),
    ("losses", lambda torch, x, y: (torch.nn.functional.mse_loss(x, y),
                                    torch.nn.functional.smooth_l1_loss(x, y, reduction="sum"),
                                    torch.nn.functional.binary_cross_entropy_with_logits(x, y.sigmoid())),
     (X, Y), 0),
    ("cross_entropy", lambda torch, x, t: torch.nn.functional.cross_entropy(x, t),
     (X, IDX), 0),
    ("nll_batch", lambda torch, x, t: torch.nn.functional.nll_loss(x.log_softmax(-1), t),
     (M, np.stack([IDX[:3]] * 4)), 0),
    ("gather", lambda torch, x, i: x.gather(0, i), (X, IDX[:3]), (0, None)),
    ("gather_rank_error", lambda torch, x, i: x.gather(0, i), (X, IDX[:3].reshape(1, 3)),
     (0, None)),
    ("embedding", lambda torch, i, w: torch.nn.functional.embedding(i, w),
     (IDX.reshape(4, 1), W), (0, None)),
    ("in_place", lambda torch, x: x.clone().mul_(2).add_(x), (X,), 0),
    # ops that ran once per example (or not at all) before their rules
    ("nanmean", lambda torch, x: (x.nanmean(), torch.nanmean(x, 0, keepdim=True),
                                  torch.nanmean(x, -1, dtype=torch.float64), x[0].nanmean(),
                                  torch.nanmean(x[0], 0)), (NANS,), 0),
    ("nanmean_in_dims_1", lambda torch, x: torch.nanmean(x, (0, 1)), (NANS,), 1),
    ("trace_dist", lambda torch, m, x: (torch.trace(m), torch.dist(x, m[0]),
                                        torch.dist(x, m[1], 1), torch.dist(x[0], x[1], 3),
                                        torch.dist(x, m[2], float("inf"))), (M, X), 0),
    ("trace_int", lambda torch, m: torch.trace(m), (M.astype(np.int32),), 0),
    ("unfold", lambda torch, x: (x.unfold(0, 2, 1), x.unfold(-1, 2, 2)), (M,), 1),
    ("frexp_nextafter", lambda torch, x, y: (torch.frexp(x), torch.nextafter(x, y),
                                             torch.nextafter(x, y[0])), (X, Y), 0),
    ("signbit", lambda torch, x: (torch.signbit(x), (x * 0).signbit(), torch.signbit(x[0])),
     (M,), 1),
]


@pytest.mark.parametrize("name,fn,arrays,in_dims", CASES, ids=[c[0] for c in CASES])
def test_batched_ops_match_torch(name, fn, arrays, in_dims):
    def body(torch):
        args = [_t(torch, a) for a in arrays]
        return torch.func.vmap(lambda *a: fn(torch, *a), in_dims=in_dims)(*args)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no per-example fallback for these ops
        same(body, rtol=1e-6, atol=1e-9, grad_fn=False)


def test_in_dims_out_dims_nested():
    def body(torch):
        vmap = torch.func.vmap
        x, y = _t(torch, M), _t(torch, X)
        r1 = vmap(lambda p, q: p[0] * q, in_dims=((1, None), 0))((x, x), y)
        r2 = vmap(lambda d: d["a"] + d["b"], in_dims=({"a": 2, "b": 0},))({"a": x, "b": y.t()})
        r3 = vmap(lambda p: (p, p.sum()), out_dims=(1, 0))(y)
        r4 = vmap(lambda p: p * 0 + 1, in_dims=1, out_dims=-1)(y)
        r5 = vmap(vmap(lambda p: p.sum()))(x)
        r6 = vmap(vmap(lambda p, q: p * q, in_dims=(0, None)), in_dims=(1, 0))(x, y)
        r7 = vmap(lambda p: torch.ones(2), out_dims=1)(y)  # unbatched output: expanded
        r8 = vmap(lambda p, n: p * n, in_dims=(0, None))(y, 3)
        r9 = vmap(lambda p: p.exp(), chunk_size=3)(x)
        return r1, r2, r3, r4, r5, r6, r7, r8, r9
    same(body, grad_fn=False)


@pytest.mark.parametrize("case", [
    "item", "control_flow", "random", "bad_in_dim", "structure", "sizes", "non_tensor",
    "randomness_arg", "chunk_size", "returns_int", "inplace_unbatched", "no_tensors",
    "out_dims_none", "add_unbatched", "add_unbatched_0dim", "add_unbatched_wider",
    "atan2_unbatched", "bitwise_or_unbatched",
])
def test_errors_match_torch(case):
    def body(torch):
        vmap = torch.func.vmap
        x, y = _t(torch, X), _t(torch, M)
        c = torch.zeros(3)
        calls = {
            "item": lambda: vmap(lambda v: v.sum().item())(x),
            "control_flow": lambda: vmap(lambda v: v if v.sum() > 0 else -v)(x),
            "random": lambda: vmap(lambda v: v + torch.rand(3))(x),
            "bad_in_dim": lambda: vmap(lambda v: v, in_dims=2)(x),
            "structure": lambda: vmap(lambda v: v, in_dims=(0, 0))(x),
            "sizes": lambda: vmap(lambda v, w: v)(x, y[:3]),
            "non_tensor": lambda: vmap(lambda v: v)(3),
            "randomness_arg": lambda: vmap(lambda v: v, randomness="foo")(x),
            "chunk_size": lambda: vmap(lambda v: v, chunk_size=0)(x),
            "returns_int": lambda: vmap(lambda v: 3)(x),
            "inplace_unbatched": lambda: vmap(lambda v: torch.ones(3).mul_(v))(x),
            "no_tensors": lambda: vmap(lambda v: v, in_dims=None)(x),
            "out_dims_none": lambda: vmap(lambda v: v, out_dims=None)(x),
            # torch runs these in place on the physical values: a broadcast error
            "add_unbatched": lambda: vmap(lambda v: c.add_(v))(y[0]),
            "add_unbatched_0dim": lambda: vmap(lambda v: torch.ones(()).add_(v[0]))(x),
            "add_unbatched_wider": lambda: vmap(lambda v: torch.ones(2, 3).add_(v, alpha=2))(x),
            "atan2_unbatched": lambda: vmap(lambda v: torch.ones(1).atan2_(v))(x),
            "bitwise_or_unbatched": lambda: vmap(lambda v: c.long().bitwise_or_(v.long()))(x),
        }
        return calls[case]()
    same(body, grad_fn=False)


def test_randomness_same_and_different():
    x = ember.zeros(5, 3)
    same_ = ember.func.vmap(lambda v: v + ember.rand(3), randomness="same")(x)
    assert (same_ == same_[0]).all()
    diff = ember.func.vmap(lambda v: v + ember.rand(3), randomness="different")(x)
    assert not (diff == diff[0]).all()
    drop = ember.func.vmap(lambda v: ember.nn.functional.dropout(v + 1, 0.5),
                           randomness="different")(ember.zeros(6, 20))
    assert not (drop == drop[0]).all()


def test_fallback_warns_and_is_correct():
    x = ember.tensor(M)
    with pytest.warns(UserWarning, match="performance drop.*aten::linalg_matrix_exp"):
        out = ember.func.vmap(ember.linalg.matrix_exp)(x)
    np.testing.assert_allclose(out.numpy(), np.stack([ember.linalg.matrix_exp(x[i]).numpy()
                                                      for i in range(len(M))]))


def test_histc_runs_once_per_example_with_torchs_warning():
    """histc has no batching rule in torch: each example's own range (min=max=0), its own
    errors, and the fallback's performance warning."""
    inf_row = np.array([[1.0, 2.0], [3.0, np.inf]])

    def body(torch):
        vmap = torch.func.vmap
        x = torch.tensor(M)
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            out = (vmap(torch.histc)(x), vmap(lambda v: v.histc(bins=4, min=-1, max=1))(x),
                   vmap(vmap(lambda v: torch.histc(v, 3)))(x),
                   error_of(lambda: vmap(lambda v: torch.histc(v, 2))(torch.tensor(inf_row))))
        # (torch's text ends with the C++ place that warned)
        return out, [str(w.message).split(" (Triggered internally")[0] for w in seen]
    same(body)


def test_unfold_of_0dim_examples_records_torchs_nodes():
    """Tensor.unfold of a 0-dim tensor is torch's unfold op (UnfoldBackward0), and under vmap
    the examples are unfolded as (B, 1) and squeezed back (SqueezeBackward1 over it)."""
    def body(torch):
        x = torch.tensor(X[:, 0], requires_grad=True)
        outs = [torch.func.vmap(lambda v: v.unfold(0, 1, 1))(x),
                torch.func.vmap(lambda v: (v * 2).unfold(-1, 1, 3))(x), x[1].unfold(0, 1, 1)]
        g, = torch.autograd.grad(sum(o.sum() for o in outs), x, create_graph=True)
        gg, = torch.autograd.grad(outs[2].sum() * g.sum(), x)
        return outs, [graph_tree(o.grad_fn) for o in outs], g, gg
    same(body)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("zeros", [False, True])
def test_prod_gradients_under_transforms_are_torchs_bits(dtype, zeros):
    """Under torch.func, prod's backward takes torch's zero-safe path (products of the other
    elements, no division): the same bits as torch, second order and 0-dim examples too."""
    data = np.array([[0.3, 0.7], [1.3, 0.9], [2.1, 0.11]], dtype=dtype)
    if zeros:
        data[0, 1] = data[1] = 0

    def body(torch):
        func = torch.func
        x = torch.tensor(data)
        outs = []
        for prod in (torch.prod, lambda v: v.prod(0), lambda v: v.prod(-1, keepdim=True)):
            first = func.grad(lambda v: prod(v).sum())
            outs += [func.vmap(first)(x), func.vmap(func.grad(lambda v: first(v).sum()))(x),
                     func.vmap(func.vmap(first))(x)]
        outs.append(func.grad(lambda v: func.vmap(torch.prod)(v).sum())(x))
        return outs
    same(body, rtol=0, atol=0)


@pytest.mark.parametrize("name", ["nanmean", "trace", "dist", "unfold", "frexp"])
def test_rules_of_former_fallbacks_record_torchs_nodes(name):
    """nanmean, trace, dist, unfold, frexp under vmap: one batched op each, recorded with
    torch's nodes (nanmean's DivBackward0, trace's SumBackward1, dist's NormBackward1), and
    their gradients are torch's."""
    fns = {"nanmean": lambda torch, x: torch.nanmean(x, -1),
           "trace": lambda torch, x: torch.trace(x),
           "dist": lambda torch, x: torch.dist(x, x[0].detach() + 1, 3),
           "unfold": lambda torch, x: x.unfold(1, 2, 1),
           "frexp": lambda torch, x: torch.frexp(x)[0]}

    def body(torch):
        x = torch.tensor(NANS if name == "nanmean" else M, requires_grad=True)
        out = torch.func.vmap(lambda v: fns[name](torch, v))(x)
        out.sum().backward()
        return out, x.grad
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        same(body, rtol=1e-6, atol=1e-9)


def test_per_sample_grads_and_composition():
    def body(torch):
        F = torch.nn.functional
        func = torch.func
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Conv2d(2, 3, 3), torch.nn.ReLU(),
                                    torch.nn.Flatten(), torch.nn.Linear(48, 4)).double()
        with torch.no_grad():
            for p, a in zip(model.parameters(), _param_arrays(model)):
                p.copy_(torch.tensor(a))
        params = {k: v.detach() for k, v in model.named_parameters()}
        data, targets = _t(torch, IMG), _t(torch, IDX)

        def loss(p, x, t):
            out = func.functional_call(model, p, (x.unsqueeze(0),))
            return F.cross_entropy(out, t.unsqueeze(0))
        per_sample = func.vmap(func.grad(loss), in_dims=(None, 0, 0))(params, data, targets)
        with_value = func.vmap(func.grad_and_value(loss), in_dims=(None, 0, 0))(
            params, data, targets)
        f = lambda x: (x.sin() * x.sum()).cumsum(0)  # noqa: E731
        x = _t(torch, X)
        jr = func.vmap(func.jacrev(f))(x)
        jf = func.vmap(func.jacfwd(f))(x)
        h = func.vmap(func.hessian(lambda v: f(v).sum()))(x)
        jv = func.jacrev(func.vmap(f))(x)
        vj = func.vmap(lambda v: func.vjp(f, v)[1](v.cos()))(x)
        jp = func.vmap(lambda v: func.jvp(f, (v,), (v.cos(),)))(x)
        gg = func.grad(lambda v: func.vmap(f)(v).pow(2).sum())(x)
        _, vjp_fn = func.vjp(f, x[0])
        rows = func.vmap(vjp_fn)(torch.eye(3, dtype=torch.float64))  # vjp_fn made outside
        return per_sample, with_value, jr, jf, h, jv, vj, jp, gg, rows
    # NOTE: torch's Sequential warns about jit.script internally; only values are compared
    same(body, rtol=1e-6, atol=1e-9, grad_fn=False, check_warnings=False)


def _param_arrays(model):
    rng = np.random.default_rng(1)
    return [rng.standard_normal(tuple(p.shape)) * 0.3 for p in model.parameters()]


def test_model_ensemble():
    def body(torch):
        func = torch.func
        models = [torch.nn.Sequential(torch.nn.Linear(3, 5), torch.nn.Tanh(),
                                      torch.nn.Linear(5, 2)).double() for _ in range(3)]
        for k, m in enumerate(models):
            rng = np.random.default_rng(k)
            with torch.no_grad():
                for p in m.parameters():
                    p.copy_(torch.tensor(rng.standard_normal(tuple(p.shape))))
        params, buffers = func.stack_module_state(models)
        base = copy.deepcopy(models[0])

        def run(p, b, x):
            return func.functional_call(base, (p, b), (x,))
        x = _t(torch, X)
        same_batch = func.vmap(run, in_dims=(0, 0, None))(params, buffers, x)
        own_batch = func.vmap(run)(params, buffers, x[:3].unsqueeze(1).expand(3, 2, 3))
        grads = torch.autograd.grad(same_batch.sum(), list(params.values()))
        return same_batch, own_batch, grads
    same(body, rtol=1e-6, atol=1e-9, grad_fn=False)


@pytest.mark.parametrize("shape", [(0,), (0, 3), (2, 0), (0, 2, 2)])
def test_full_reductions_and_grad_over_an_empty_batch_or_example(shape):
    def body(torch):
        x = torch.zeros(shape)
        F = torch.func
        return (F.vmap(F.grad(lambda v: torch.relu(v).pow(2).mean()))(x),
                F.vmap(lambda v: v.sum())(x), F.vmap(lambda v: v.mean())(x),
                F.vmap(lambda v: v.prod())(x))
    same(body)


def test_out_dims_where_the_batch_dimension_already_is_returns_no_view():
    def body(torch):
        x = torch.tensor([[0.5, 1.0], [2.0, -1.0]])
        out = [torch.func.vmap(lambda v: v.exp().sum(), out_dims=-1)(x),
               torch.func.vmap(lambda v: v * 2, out_dims=-1)(x),
               torch.func.vmap(lambda v: v * 2, out_dims=-2)(x)]
        return out, [o._is_view() for o in out]
    same(body)


def test_batched_squeeze_records_torchs_nodes():
    # torch's batching rules: squeeze(dim) and squeeze(dims) are one squeeze of the shifted
    # dimensions (SqueezeBackward2), squeeze() a view of the batch without the size-1 ones
    def body(torch):
        x = _t(torch, X).requires_grad_()
        vmap = torch.func.vmap
        return (vmap(lambda v: v.unsqueeze(0).squeeze(0))(x),
                vmap(lambda v: v.unsqueeze(1).squeeze(-1))(x),
                vmap(lambda v: v.unsqueeze(1).squeeze(0))(x),
                vmap(lambda v: v.unsqueeze(0).squeeze((0,)))(x),
                vmap(lambda v: v.unsqueeze(0).unsqueeze(-1).squeeze())(x))
    same(body)


def test_an_input_returned_as_it_is_comes_back_itself():
    # torch's batched tensor holds the input (batch dimension first), so vmap of the identity
    # returns the input itself: no view, no PermuteBackward0
    def body(torch):
        x = _t(torch, X).requires_grad_()
        vmap = torch.func.vmap
        out = [vmap(lambda v: v)(x), vmap(lambda v: v, in_dims=-2)(x),
               vmap(lambda v: torch.func.vjp(lambda u: u, v)[0])(x), vmap(lambda v: v * 1)(x)]
        return out, [o is x for o in out]
    same(body)


_VMAP_JVP = {
    "sin": lambda t, a, w: t.sin(a), "product": lambda t, a, w: a * a + 1,
    "matmul": lambda t, a, w: a @ w, "mm": lambda t, a, w: t.mm(a, w),
    "self_matmul": lambda t, a, w: a @ a.T, "sum": lambda t, a, w: a.sum(),
    "sum_dim": lambda t, a, w: a.sum(-1), "mean": lambda t, a, w: a.mean(0),
    "amax": lambda t, a, w: a.amax(-1), "norm": lambda t, a, w: a.norm(),
    "prod": lambda t, a, w: a.prod(-1), "logsumexp": lambda t, a, w: t.logsumexp(a, -1),
    "var": lambda t, a, w: a.var(-1), "softmax": lambda t, a, w: t.softmax(a, -1),
    "softmax_dim0": lambda t, a, w: t.nn.functional.softmax(a, dim=0),
    "log_softmax": lambda t, a, w: t.nn.functional.log_softmax(a, dim=-1),
    "gelu": lambda t, a, w: t.nn.functional.gelu(a),
    "layer_norm": lambda t, a, w: t.nn.functional.layer_norm(a, (3,)),
    "linear": lambda t, a, w: t.nn.functional.linear(a, w),
    "cross_entropy": lambda t, a, w: t.nn.functional.cross_entropy(a, t.tensor([0, 2])),
    "einsum": lambda t, a, w: t.einsum("ij,jk->ik", a, w),
}


@pytest.mark.parametrize("name", sorted(_VMAP_JVP))
def test_vmap_of_jvp(name):
    """vmap over torch.func.jvp: a batch of primals with their tangents, and one primal with
    a batch of tangents, as torch's."""
    def body(t):
        f = _VMAP_JVP[name]
        x = t.arange(24.0, dtype=t.float64).reshape(4, 2, 3) / 10
        v = t.ones(4, 2, 3, dtype=t.float64) + x
        w = t.arange(9.0, dtype=t.float64).reshape(3, 3) / 5
        both = t.vmap(lambda a, b: t.func.jvp(lambda z: f(t, z, w), (a,), (b,)))(x, v)
        tangents = t.vmap(lambda b: t.func.jvp(lambda z: f(t, z, w), (x[0],), (b,)))(v)
        return both, tangents
    same(body, rtol=1e-10, atol=1e-12, check_warnings=False)  # (torch.jit notes of its own)


# unary pointwise ops (and the arithmetic ops, whose number operand torch wraps into a tensor)
UNARY = ["x.sin()", "x.abs()", "x.exp().neg()", "x.clone()", "x.contiguous()", "x.sigmoid()",
         "torch.tanh(x)", "x.clamp(0, 1)", "x ** 2", "x.to(torch.float64)", "x.round(decimals=1)",
         "torch.nn.functional.leaky_relu(x, 0.1)", "torch.nn.functional.gelu(x)",
         "torch.nan_to_num(x, 0.5)", "x > 0", "torch.isfinite(x)", "x.sgn()", "torch.frexp(x)",
         "x * 2", "x + 1", "torch.add(x, 2, alpha=3)", "x / 2", "x // 2", "2 - x", "x.sub(1)",
         "torch.fmod(x, 0.5)", "x.logit(0.1)", "x.sin().cos() * 2", "torch.where(x > 0, x, 0.)"]


@pytest.mark.parametrize("expr", UNARY)
@pytest.mark.parametrize("in_dims,out_dims,shape", [(1, 1, (3, 4)), (-1, 0, (3, 4)),
                                                    (1, -1, (2, 3, 2)), (0, 1, (3, 4)),
                                                    (2, 1, (2, 3, 2))])
def test_unary_ops_keep_the_batch_where_torch_does(expr, in_dims, out_dims, shape):
    """torch's rule for a unary pointwise op leaves the batch in the dimension it is in: with
    in_dims=1 and out_dims=1 the result is the op's own (no permuted view), and a batch moved
    by out_dims is a PermuteBackward0 view of it; a binary op (a number operand included)
    moves the batch first."""
    def body(torch):
        x = torch.tensor(X.reshape(shape), requires_grad=True)
        r = torch.func.vmap(lambda x: eval(expr), in_dims=in_dims, out_dims=out_dims)(x)
        return [(t, t._is_view(), t.stride()) for t in (r if isinstance(r, tuple) else (r,))]
    same(body, rtol=1e-6, atol=1e-9)


def test_function_vmap_rule_sees_the_batch_a_unary_op_left_in_place():
    """An autograd.Function's vmap staticmethod gets the in_dims torch's batched tensor has:
    after a unary op of an input batched in dimension 1, still 1 (the tensor as given, not a
    batch-first copy); after a binary op, 0."""
    def body(torch):
        seen = []

        class Mul(torch.autograd.Function):
            forward = staticmethod(lambda x, y: x * y)
            setup_context = staticmethod(lambda ctx, inputs, output: None)

            @staticmethod
            def vmap(info, in_dims, x, y):
                seen.append((in_dims, tuple(x.shape), x.stride()))
                y = y.unsqueeze(0) if in_dims[1] is None else y.movedim(in_dims[1], 0)
                return x.movedim(in_dims[0], 0) * y, 0

        x = torch.tensor(X.T.copy())  # (3, 4): a batch of 4 in dimension 1
        outs = [torch.func.vmap(lambda a, b: Mul.apply(f(a), b), in_dims=(1, None))(
            x, torch.arange(3.0, dtype=torch.float64))
            for f in (lambda a: a.sin(), lambda a: -a.exp(), lambda a: a ** 2,
                      lambda a: a.clamp(0, 1), lambda a: a * 2, lambda a: a.sum(0) + a)]
        return outs, seen
    out = same(body).value
    assert out[1][0][0] == (1, None)


@pytest.mark.parametrize("dims", [(0, None), (1, None), (1, 0), (-1, 1)])
def test_generated_vmap_rule_runs_forward_on_the_batch_as_torch_holds_it(dims):
    """A Function with generate_vmap_rule=True runs its forward on its operands as torch's
    batched tensors hold them: a Function's vmap staticmethod called inside sees the batch in
    the dimension vmap's in_dims gave (1, not ember's batch-first 0), an output that keeps it
    there comes back as a permuted view, and the gradients are torch's."""
    def body(torch):
        seen = []

        class Inner(torch.autograd.Function):
            forward = staticmethod(lambda x: x * 2)
            setup_context = staticmethod(lambda ctx, inputs, output: None)
            backward = staticmethod(lambda ctx, g: g * 2)

            @staticmethod
            def vmap(info, in_dims, x):
                seen.append((in_dims, tuple(x.shape), x.stride()))
                return x * 2, in_dims[0]

        class Gen(torch.autograd.Function):
            generate_vmap_rule = True

            @staticmethod
            def forward(x, y):
                return Inner.apply(x.sin()) * y, Inner.apply(x)

            @staticmethod
            def setup_context(ctx, inputs, output):
                ctx.save_for_backward(*inputs)

            @staticmethod
            def backward(ctx, g, g2):
                x, y = ctx.saved_tensors
                return g * 2 * x.cos() * y + g2 * 2, g * x.sin() * 2

        x = torch.tensor(X[:3].copy(), requires_grad=True)  # (3, 3): examples of 3
        xx = x if dims[0] else x.t()
        y = torch.arange(3.0, dtype=torch.float64) if dims[1] is None else torch.tensor(Y[:3])
        out = torch.func.vmap(Gen.apply, in_dims=dims)(xx, y)
        (out[0].sum() + out[1].sum()).backward()
        return [(o, o._is_view(), o.stride()) for o in out], seen, x.grad
    same(body)
