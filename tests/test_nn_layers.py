"""nn layers against torch 2.13: activations, Linear, Bilinear, Flatten, Embedding, Dropout."""
from __future__ import annotations

import math

import numpy as np
import pytest
from nn_helpers import close, copy_weights, repr_norm, torch_mod
from oracle import error_of, same

import ember

ACTIVATIONS = [
    ("ReLU", ()), ("ReLU", (True,)), ("ReLU6", ()), ("LeakyReLU", (0.2,)), ("ELU", (0.5,)),
    ("SELU", ()), ("CELU", (0.7,)), ("GELU", ()), ("GELU", ("tanh",)), ("SiLU", ()),
    ("Mish", ()), ("Softplus", (2.0, 5.0)), ("Softsign", ()), ("Hardtanh", (-0.5, 0.7)),
    ("Hardsigmoid", ()), ("Hardswish", ()), ("LogSigmoid", ()), ("Tanhshrink", ()),
    ("Softshrink", (0.3,)), ("Hardshrink", (0.3,)), ("Threshold", (0.1, -2.0)),
    ("Sigmoid", ()), ("Tanh", ()), ("Softmax", (1,)), ("LogSoftmax", (-1,)), ("Softmin", (0,)),
    ("GLU", ()), ("PReLU", ()), ("PReLU", (4, 0.1)), ("Softmax2d", ()), ("RReLU", ()),
]


@pytest.mark.parametrize("name,args", ACTIVATIONS,
                         ids=[f"{n}{a}" for n, a in ACTIVATIONS])
def test_activation_module(name, args):
    torch = torch_mod()
    x = np.random.default_rng(0).uniform(-4, 4, (2, 4, 3, 2)).astype(np.float32)
    tm = getattr(torch.nn, name)(*args)
    em = getattr(ember.nn, name)(*args)
    assert repr(em) == repr_norm(repr(tm))
    if name == "RReLU":  # random slopes in training; the mean slope in evaluation
        tm.eval()
        em.eval()
    copy_weights(tm, em)
    xt = torch.tensor(x, requires_grad=True)
    xe = ember.tensor(x, requires_grad=True)
    inplace = args == (True,)
    yt = tm(xt * 1 if inplace else xt)
    ye = em(xe * 1 if inplace else xe)
    close(ye, yt, what="forward")
    yt.pow(2).sum().backward()
    ye.pow(2).sum().backward()
    close(xe.grad, xt.grad, what="grad")
    for (n, pt), (_, pe) in zip(tm.named_parameters(), em.named_parameters()):
        close(pe.grad, pt.grad, what=n)


def test_activation_reprs_with_options():
    def body(lib):
        nn = lib.nn
        return [repr(m) for m in (
            nn.ReLU(inplace=True), nn.ELU(alpha=2.0, inplace=True), nn.SiLU(inplace=True),
            nn.Hardswish(inplace=True), nn.Threshold(0.5, 1, inplace=True), nn.Softmax(),
            nn.LeakyReLU(inplace=True), nn.Hardtanh(inplace=True), nn.GELU("tanh"),
            nn.RReLU(0.1, 0.2, True), nn.Softplus(beta=3), nn.SELU(True), nn.Mish(True))]
    same(body)


def _layer_pairs(torch):
    return [
        (torch.nn.Linear(5, 3), ember.nn.Linear(5, 3), [(4, 5)]),
        (torch.nn.Linear(5, 3, bias=False), ember.nn.Linear(5, 3, bias=False), [(2, 2, 5)]),
        (torch.nn.Linear(5, 3), ember.nn.Linear(5, 3), [(5,)]),
        (torch.nn.Bilinear(3, 2, 4), ember.nn.Bilinear(3, 2, 4), [(5, 3), (5, 2)]),
        (torch.nn.Bilinear(3, 2, 4, bias=False), ember.nn.Bilinear(3, 2, 4, bias=False),
         [(2, 5, 3), (2, 5, 2)]),
        (torch.nn.Identity(54, unused="x"), ember.nn.Identity(54, unused="x"), [(2, 3)]),
        (torch.nn.Flatten(), ember.nn.Flatten(), [(2, 3, 4)]),
        (torch.nn.Flatten(0, -2), ember.nn.Flatten(0, -2), [(2, 3, 4)]),
        (torch.nn.Unflatten(1, (2, 6)), ember.nn.Unflatten(1, (2, 6)), [(3, 12)]),
        (torch.nn.Unflatten(-1, (2, -1)), ember.nn.Unflatten(-1, (2, -1)), [(3, 12)]),
    ]


def test_layers_match_torch():
    torch = torch_mod()
    rng = np.random.default_rng(2)
    for tm, em, shapes in _layer_pairs(torch):
        assert repr(em) == repr_norm(repr(tm))
        copy_weights(tm, em)
        xs = [rng.standard_normal(s).astype(np.float32) for s in shapes]
        xt = [torch.tensor(x, requires_grad=True) for x in xs]
        xe = [ember.tensor(x, requires_grad=True) for x in xs]
        yt, ye = tm(*xt), em(*xe)
        close(ye, yt, what=repr(em))
        (yt * yt).sum().backward()
        (ye * ye).sum().backward()
        for a, b in zip(xe, xt):
            close(a.grad, b.grad, rtol=1e-4, what=f"{em!r} input grad")
        for (n, pt), (_, pe) in zip(tm.named_parameters(), em.named_parameters()):
            close(pe.grad, pt.grad, rtol=1e-4, what=f"{em!r} {n}")


def _uniform_bound_ok(t, bound):
    a = t.detach().numpy()
    return a.min() >= -bound and a.max() <= bound and a.max() > 0.5 * bound


def test_default_initialisations_follow_torch():
    ember.manual_seed(0)
    lin = ember.nn.Linear(400, 50)
    # kaiming_uniform_(a=sqrt(5)): bound = gain * sqrt(3 / fan_in) = 1 / sqrt(fan_in)
    assert _uniform_bound_ok(lin.weight, 1 / math.sqrt(400))
    assert _uniform_bound_ok(lin.bias, 1 / math.sqrt(400))
    assert abs(lin.weight.detach().numpy().std() - 1 / math.sqrt(400) / math.sqrt(3)) < 2e-3
    bil = ember.nn.Bilinear(30, 20, 40)
    assert _uniform_bound_ok(bil.weight, 1 / math.sqrt(30))
    emb = ember.nn.Embedding(1000, 20, padding_idx=3)
    w = emb.weight.detach().numpy()
    assert abs(w.std() - 1) < 0.02 and not w[3].any()
    assert ember.nn.PReLU(3).weight.tolist() == pytest.approx([0.25] * 3)
    assert lin.weight.dtype == ember.float32
    assert ember.nn.Linear(2, 2, dtype=ember.float64).weight.dtype == ember.float64


def test_embedding_module():
    torch = torch_mod()
    idx = np.array([[0, 2, 4], [4, 3, 2]])
    for kwargs in ({}, {"padding_idx": 2}, {"padding_idx": -1, "scale_grad_by_freq": True},
                   {"max_norm": 1.0}):
        tm = torch.nn.Embedding(5, 3, **kwargs)
        em = ember.nn.Embedding(5, 3, **kwargs)
        assert repr(em) == repr_norm(repr(tm))
        copy_weights(tm, em)
        yt, ye = tm(torch.tensor(idx)), em(ember.tensor(idx))
        close(ye, yt, what=str(kwargs))
        (yt * yt).sum().backward()
        (ye * ye).sum().backward()
        close(em.weight.grad, tm.weight.grad, what=f"{kwargs} grad")
        close(em.weight, tm.weight, what=f"{kwargs} weight after max_norm")


def test_embedding_from_pretrained_and_errors():
    def body(lib):
        w = lib.tensor([[1.0, 2.0], [3.0, 4.0]])
        e = lib.nn.Embedding.from_pretrained(w)
        f = lib.nn.Embedding.from_pretrained(w, freeze=False, padding_idx=0)
        out = [repr(e), e.weight.requires_grad, f.weight.requires_grad,
               e(lib.tensor([1, 0]))]
        for bad in (lambda: e(lib.tensor([2])), lambda: e(lib.tensor([0.5])),
                    lambda: lib.nn.Embedding(3, 2, padding_idx=3),
                    lambda: lib.nn.Embedding.from_pretrained(lib.ones(3))):
            try:
                bad()
            except Exception as err:  # noqa: BLE001
                out.append((type(err).__name__, str(err)))
        return out
    same(body)


def test_dropout_statistics_seed_and_modes():
    x = ember.ones(2000, 50)
    drop = ember.nn.Dropout(0.3)
    ember.manual_seed(7)
    y1 = drop(x)
    ember.manual_seed(7)
    y2 = drop(x)
    assert ember.equal(y1, y2)
    a = y1.numpy()
    np.testing.assert_allclose(np.unique(a), [0.0, 1 / 0.7], rtol=1e-6)
    assert abs((a == 0).mean() - 0.3) < 0.01
    drop.eval()
    assert drop(x) is x
    xg = ember.ones(4, 5, requires_grad=True)
    y = ember.nn.functional.dropout(xg, 0.5)
    assert type(y.grad_fn).__name__ == "MulBackward0"
    y.sum().backward()
    assert np.array_equal(xg.grad.numpy(), y.detach().numpy())
    z = ember.nn.Dropout2d(0.5)(ember.ones(3, 4, 5, 5)).numpy()
    per_channel = z.reshape(3, 4, -1)
    assert all(len(np.unique(c)) == 1 for c in per_channel.reshape(12, -1))
    ad = ember.nn.AlphaDropout(0.2)(ember.randn(20000))
    assert abs(float(ad.mean())) < 0.05 and abs(float(ad.std()) - 1) < 0.05
    assert ember.nn.functional.dropout(ember.ones(3), 1.0).tolist() == [0.0, 0.0, 0.0]


def test_dropout_reprs_and_errors():
    def body(lib):
        nn, F = lib.nn, lib.nn.functional
        out = [repr(nn.Dropout()), repr(nn.Dropout(0.2, True)), repr(nn.Dropout2d(0.1)),
               repr(nn.AlphaDropout(0.3)), repr(nn.Dropout1d())]
        for bad in (lambda: nn.Dropout(1.5), lambda: F.dropout(lib.ones(2), -0.1),
                    lambda: F.dropout1d(lib.ones(2, 2, 2, 2))):
            try:
                bad()
            except Exception as e:  # noqa: BLE001
                out.append((type(e).__name__, str(e)))
        return out
    same(body)


def test_functional_errors_match_torch():
    def body(lib):
        F = lib.nn.functional
        out = []
        for bad in (lambda: F.glu(lib.ones(3)), lambda: F.softshrink(lib.ones(2), -1.0),
                    lambda: F.prelu(lib.ones(2, 3), lib.ones(2)),
                    lambda: F.one_hot(lib.tensor([1.0])), lambda: F.one_hot(lib.tensor([3]), 2),
                    lambda: F.one_hot(lib.tensor([-1])),
                    lambda: F.gelu(lib.ones(1), approximate="x"),
                    lambda: F.hardtanh(lib.ones(1), 2.0, 1.0)):
            out.append(error_of(bad))
        return out
    same(body)


def test_softmax_implicit_dim_warns_like_torch():
    def body(lib):
        return lib.nn.functional.softmax(lib.ones(2, 3)), lib.nn.Softmax()(lib.ones(3))
    same(body, check_warnings=False)


def test_one_hot_and_normalize():
    def body(lib):
        F = lib.nn.functional
        return (F.one_hot(lib.tensor([[0, 2], [1, 1]])), F.one_hot(lib.tensor([1]), 4),
                F.normalize(lib.tensor([[3.0, 4.0], [0.0, 0.0]])),
                F.cosine_similarity(lib.tensor([[1.0, 0.0]]), lib.tensor([[1.0, 1.0]])),
                F.pairwise_distance(lib.tensor([[1.0, 2.0]]), lib.tensor([[0.0, 0.0]])))
    same(body, grad_fn=False)


def _chain(t):
    """Node names from ``t`` down its first non-leaf edges."""
    out, fn = [], t.grad_fn
    while fn is not None:
        out.append(fn.name())
        nxt = [n for n, _ in fn.next_functions
               if n is not None and "AccumulateGrad" not in n.name()]
        fn = nxt[0] if nxt else None
    return out


def test_linear_graph_is_torchs():
    # torch views a contiguous 1-D / N-D input as 2-D for one addmm; a non-contiguous one goes
    # through matmul and an add.
    def body(lib):
        lib.manual_seed(0)
        lin = lib.nn.Linear(3, 2)
        x = lib.randn(4, 3, requires_grad=True)
        return [_chain(lin(v)) for v in (x, x[0], x.reshape(2, 2, 3), x.reshape(1, 2, 2, 3),
                                         x.reshape(2, 2, 3).transpose(0, 1))]
    assert same(body).error is None


@pytest.mark.parametrize("bias", ["expanded", "strided", "0-dim", "(1, 2)", "(3, 2)"])
def test_linear_graph_with_a_bias_torch_does_not_fuse(bias):
    # torch's addmm path takes a contiguous bias with one dimension of more than one element;
    # any other bias (sum's expanded gradient, a strided slice, a 0-dim tensor) is added in
    # place after a matmul (AddBackward0, the result's version 1 or 2)
    def body(lib):
        w = lib.tensor([[0.85, 0.5], [-0.07, -1.72]], requires_grad=True)
        b = {"expanded": lib.ones(1).expand(2), "strided": lib.ones(4)[::2],
             "0-dim": lib.tensor(0.5), "(1, 2)": lib.ones(1, 2),
             "(3, 2)": lib.ones(3, 2)}[bias].requires_grad_()
        x = lib.tensor([[[1.96, 0.5], [0.25, -1.0], [0.0, 2.0]]] * 2, requires_grad=True)
        seen = []
        vs = (x, x.reshape(1, 2, 3, 2))
        for v in vs if bias == "(3, 2)" else (x[0, 0], x[0], x.transpose(0, 1)) + vs:
            out = lib.nn.functional.linear(v, w, b)
            out.sum().backward()
            seen.append((_chain(out), out._version, out, x.grad, w.grad, b.grad))
        return seen
    assert same(body).error is None


def test_rrelu_nodes_and_training_gradient_match_torch():
    def body(lib):
        F = lib.nn.functional
        x = lib.tensor([0.0, -1.0, 2.0, -3.0], requires_grad=True)
        names = [F.rrelu(x).grad_fn.name(), F.rrelu(x, training=True).grad_fn.name(),
                 F.rrelu(x * 1, inplace=True).grad_fn.name(),
                 F.rrelu_(x * 1, training=True).grad_fn.name(),
                 lib.nn.RReLU()(x).grad_fn.name(), len(F.rrelu(x).grad_fn.next_functions)]
        y = F.rrelu(x, 0.1, 0.1, training=True)  # lower == upper: deterministic
        g, = lib.autograd.grad(y.sum(), x, create_graph=True)
        gg = g.grad_fn.name()
        return names, y, g, gg, F.rrelu(x, 0.1, 0.3)
    assert same(body).error is None
    # With lower < upper the slopes are random: each negative (or zero) input gets its own
    # slope in [lower, upper], and the gradient there is that slope.
    ember.manual_seed(0)
    x = ember.tensor([0.0, -1.0, 2.0, -3.0, -0.5], requires_grad=True)
    y = ember.nn.functional.rrelu(x, 0.1, 0.3, training=True)
    y.sum().backward()
    g = x.grad.numpy()
    assert g[2] == 1.0 and np.all((g[[0, 1, 3, 4]] >= 0.1) & (g[[0, 1, 3, 4]] <= 0.3))
    np.testing.assert_allclose(y.detach().numpy()[[1, 3, 4]], (x.detach().numpy() * g)[[1, 3, 4]])


PAD_X = np.random.default_rng(4).standard_normal((2, 3, 4, 5, 6))


@pytest.mark.parametrize("dims", [1, 2, 3])
def test_padding_modules_match_torch(dims):
    def body(lib):
        nn = lib.nn
        x = lib.tensor(PAD_X[(0,) * (3 - dims)] if dims < 3 else PAD_X, requires_grad=True)
        out = []
        for m in (getattr(nn, f"ZeroPad{dims}d")(1),
                  getattr(nn, f"ZeroPad{dims}d")(tuple(range(1, 2 * dims + 1))),
                  getattr(nn, f"ConstantPad{dims}d")(2, 3.5),
                  getattr(nn, f"ReflectionPad{dims}d")(1),
                  getattr(nn, f"ReplicationPad{dims}d")([1, 2] * dims),
                  getattr(nn, f"CircularPad{dims}d")(2)):
            y = m(x)
            out.append((repr(m), y, lib.autograd.grad((y * y).sum(), x)))
        try:
            getattr(nn, f"CircularPad{dims}d")(1)(lib.ones(*([2] * (dims + 3))))
        except ValueError as e:
            out.append(str(e))
        return out
    assert same(body).error is None


def test_channel_shuffle_matches_torch():
    def body(lib):
        x = lib.tensor(PAD_X[0, :, :, :2], requires_grad=True)  # (3, 4, 5, 2)
        m = lib.nn.ChannelShuffle(2)
        y = m(x)
        out = [repr(m), y, lib.autograd.grad((y * y).sum(), x),
               lib.nn.functional.channel_shuffle(x[:, :3], 3)]
        for bad in (lambda: lib.nn.functional.channel_shuffle(x, 3),
                    lambda: lib.nn.functional.channel_shuffle(x[0, 0], 2),
                    lambda: lib.nn.functional.channel_shuffle(x, 0)):
            try:
                bad()
            except RuntimeError as e:
                out.append(str(e))
        return out
    assert same(body).error is None


LP_X = np.random.default_rng(8).uniform(0.1, 2, (2, 3, 6, 5))


def test_lp_pool_matches_torch():
    def body(lib):
        F = lib.nn.functional
        x = lib.tensor(LP_X, requires_grad=True)
        out = []
        for f in (lambda: F.lp_pool2d(x, 2, 2), lambda: F.lp_pool2d(x, 3, (2, 3), 1, True),
                  lambda: F.lp_pool2d(x, float("inf"), 2), lambda: F.lp_pool1d(x[0], 2, 3),
                  lambda: F.lp_pool1d(x[0], 1.5, 2, stride=1),
                  lambda: F.lp_pool1d(x[0], -float("inf"), 2),
                  lambda: lib.nn.LPPool2d(2, 3, stride=2)(x), lambda: lib.nn.LPPool1d(3, 2)(x[0])):
            y = f()
            out.append((y, lib.autograd.grad(y.sum(), x)))
        return out, repr(lib.nn.LPPool2d(2, 3, stride=2)), repr(lib.nn.LPPool1d(1.5, 2, None, True))
    assert same(body).error is None


def test_pooling_and_upsampling_aliases_match_torch():
    def body(lib):
        F = lib.nn.functional
        x = lib.tensor(LP_X)
        return (F.max_pool2d_with_indices(x, 2), F.max_pool1d_with_indices(x[0], 2, 1),
                F.adaptive_max_pool2d_with_indices(x, 3),
                F.adaptive_max_pool1d_with_indices(x[0], 2),
                F.upsample_nearest(x, scale_factor=2), F.upsample_bilinear(x, size=(7, 7)))
    assert same(body).error is None


def test_gumbel_softmax_is_a_distribution_like_torch():
    # Random draws differ between the libraries; what a sample is does not.
    def body(lib):
        lib.manual_seed(0)
        F = lib.nn.functional
        x = lib.tensor(LP_X[0, 0], requires_grad=True)
        soft = F.gumbel_softmax(x, tau=0.5)
        hard = F.gumbel_softmax(x, hard=True, dim=0)
        F.gumbel_softmax(x, eps=1e-3)  # deprecated argument: a warning
        return (tuple(soft.shape), [round(v, 5) for v in soft.sum(-1).tolist()], hard.sum(0),
                hard.grad_fn.name(), soft.grad_fn.name(), bool(((hard == 0) | (hard == 1)).all()))
    assert same(body).error is None


def test_embedding_double_backward_node_is_torchs():
    def body(lib):
        w = lib.tensor(np.arange(15.0).reshape(5, 3), requires_grad=True)
        y = lib.nn.functional.embedding(lib.tensor([0, 2, 2]), w)
        g, = lib.autograd.grad((y ** 2).sum(), w, create_graph=True)
        return y.grad_fn.name(), g.grad_fn.name(), g
    assert same(body).error is None


def _exact(t):
    """Values with the sign of zero and NaN positions made visible (for bit-exact checks)."""
    a = t.detach().numpy()
    return np.nan_to_num(a, nan=7.0), np.signbit(a), np.isnan(a)


def test_large_relu_and_where_masks_match_torch_bit_for_bit():
    # From 4,096 elements on, where(mask, grad, 0) takes a bitwise path: the sign of zero, NaN
    # and infinities must come out as torch's where() writes them.
    torch = pytest.importorskip("torch")
    rs = np.random.RandomState(0)
    x = rs.randn(64, 100).astype(np.float32)
    g = rs.randn(64, 100).astype(np.float32)
    g[::7] = np.nan
    g[1::7] = -0.0
    g[2::7] = -np.inf
    for dt in ("float32", "float64"):
        outs = []
        for lib in (torch, ember):
            xt = lib.tensor(x.astype(dt), requires_grad=True)
            gt = lib.tensor(g.astype(dt))
            xt.relu().backward(gt)
            c = lib.tensor(x > 0)
            outs.append([_exact(v) for v in (xt.grad, lib.where(c, gt, 0), lib.where(c, 0, gt),
                                             lib.where(c, gt, -0.0), lib.where(c, 0.0, gt))])
        for t_parts, e_parts in zip(*outs):
            for a, b in zip(t_parts, e_parts):
                np.testing.assert_array_equal(a, b)


def test_tiled_max_pool_matches_torch_with_ties():
    # Non-overlapping windows run a knockout between kernel offsets: ties must go to the first.
    def body(lib):
        F = lib.nn.functional
        rs = np.random.RandomState(1)
        out = []
        for shape, k in (((4, 3, 26, 26), 2), ((2, 3, 7, 9), 3), ((2, 2, 6, 7), (2, 3)),
                         ((1, 2, 5, 5), 5), ((1, 1, 3, 3), 1)):
            x = lib.tensor(np.round(rs.randn(*shape)).clip(0, None).astype(np.float32),
                           requires_grad=True)
            y, idx = F.max_pool2d(x, k, return_indices=True)
            out.append((y, idx, lib.autograd.grad((y * y).sum(), x)))
        return out
    assert same(body).error is None


@pytest.mark.parametrize("shape,bias", [((4, 3), True), ((4, 3), False), ((3,), True),
                                        ((2, 4, 3), True), ((0, 3), True)])
def test_bilinear_graph_and_double_gradients(shape, bias):
    # torch's bilinear is one _trilinear of the flattened inputs (TrilinearBackward0 between
    # two views), whose gradients are _trilinear calls again: the first gradients' nodes and
    # the second derivatives are torch's
    from oracle import graph_tree

    def body(t):
        gen = np.random.default_rng(7)
        x1 = t.tensor(gen.standard_normal(shape), requires_grad=True)
        x2 = t.tensor(gen.standard_normal(shape[:-1] + (5,)), requires_grad=True)
        w = t.tensor(gen.standard_normal((2, 3, 5)), requires_grad=True)
        b = t.tensor(gen.standard_normal(2), requires_grad=True) if bias else None
        y = t.nn.functional.bilinear(x1, x2, w, b)
        firsts = t.autograd.grad((y * y).sum(), [x1, x2, w], create_graph=True)
        seconds = t.autograd.grad(sum((g * g).sum() for g in firsts), [x1, x2, w])
        return (y, graph_tree(y.grad_fn), [graph_tree(g.grad_fn, 2) for g in firsts],
                [g.stride() for g in firsts], firsts, seconds)
    same(body, check_warnings=False)


@pytest.mark.parametrize("shapes", [((4, 3), (2, 4, 5), (5,)), ((2, 4, 3), (2, 3, 5), (2,)),
                                    ((4, 3), (4, 5), (3,)), ((4, 3), (4, 5), (2, 2))])
def test_bilinear_refusals(shapes):
    def body(t):
        a, b, bias = shapes
        return t.nn.functional.bilinear(t.ones(a), t.ones(b), t.ones(2, 3, 5), t.ones(bias))
    same(body)
