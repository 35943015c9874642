"""Loss modules and functional losses against torch 2.13: values, gradients, reprs, errors."""
from __future__ import annotations

import numpy as np
import pytest
from nn_helpers import close, repr_norm, torch_mod
from oracle import error_of, same

import ember

rng = np.random.default_rng(3)
X = rng.uniform(-2, 2, (4, 5)).astype(np.float32)
T = rng.uniform(-2, 2, (4, 5)).astype(np.float32)
P = rng.uniform(0.05, 0.95, (4, 5)).astype(np.float32)
IDX = np.array([0, 4, 2, 1])
SIGN = np.sign(rng.uniform(-1, 1, (4, 5))).astype(np.float32)
W = rng.uniform(0.5, 2.0, 5).astype(np.float32)


def _t(lib, a):
    return lib.tensor(a)


# (module name, constructor kwargs (values may need the library), inputs builder)
LOSSES = [
    ("L1Loss", {}, lambda lib, x: (x, _t(lib, T))),
    ("MSELoss", {"reduction": "sum"}, lambda lib, x: (x, _t(lib, T))),
    ("SmoothL1Loss", {"beta": 0.5}, lambda lib, x: (x, _t(lib, T))),
    ("HuberLoss", {"delta": 0.8, "reduction": "none"}, lambda lib, x: (x, _t(lib, T))),
    ("BCELoss", {}, lambda lib, x: (lib.sigmoid(x), _t(lib, P))),
    ("BCELoss", {"weight": W}, lambda lib, x: (lib.sigmoid(x), _t(lib, P))),
    ("BCEWithLogitsLoss", {"pos_weight": W}, lambda lib, x: (x, _t(lib, P))),
    ("NLLLoss", {"weight": W, "ignore_index": 2}, lambda lib, x: (x, _t(lib, IDX))),
    ("CrossEntropyLoss", {}, lambda lib, x: (x, _t(lib, IDX))),
    ("CrossEntropyLoss", {"label_smoothing": 0.1, "weight": W},
     lambda lib, x: (x, _t(lib, IDX))),
    ("CrossEntropyLoss", {"reduction": "sum"}, lambda lib, x: (x, _t(lib, P))),
    ("KLDivLoss", {"reduction": "batchmean"}, lambda lib, x: (x, _t(lib, P))),
    ("KLDivLoss", {"reduction": "sum", "log_target": True}, lambda lib, x: (x, _t(lib, T))),
    ("PoissonNLLLoss", {"full": True}, lambda lib, x: (x, _t(lib, P * 4))),
    ("GaussianNLLLoss", {"full": True}, lambda lib, x: (x, _t(lib, T), _t(lib, P))),
    ("HingeEmbeddingLoss", {"margin": 0.5}, lambda lib, x: (x, _t(lib, SIGN))),
    ("SoftMarginLoss", {}, lambda lib, x: (x, _t(lib, SIGN))),
    ("MultiLabelSoftMarginLoss", {"weight": W}, lambda lib, x: (x, _t(lib, P > 0.5) * 1.0)),
    ("CosineEmbeddingLoss", {"margin": 0.1},
     lambda lib, x: (x, _t(lib, T), _t(lib, SIGN[:, 0]))),
    ("MarginRankingLoss", {"margin": 0.2}, lambda lib, x: (x, _t(lib, T), _t(lib, SIGN))),
    ("TripletMarginLoss", {"margin": 0.5, "swap": True},
     lambda lib, x: (x, _t(lib, T), _t(lib, P))),
    ("MultiMarginLoss", {"p": 2, "margin": 0.5, "weight": W},
     lambda lib, x: (x, _t(lib, IDX))),
]


def _kwargs(lib, kw):
    return {k: lib.tensor(v) if isinstance(v, np.ndarray) else v for k, v in kw.items()}


@pytest.mark.parametrize("name,kw,inputs", LOSSES,
                         ids=[f"{n}-{i}" for i, (n, _, _) in enumerate(LOSSES)])
def test_loss_module_matches_torch(name, kw, inputs):
    torch = torch_mod()
    results = []
    for lib in (torch, ember):
        mod = getattr(lib.nn, name)(**_kwargs(lib, kw))
        x = lib.tensor(X, requires_grad=True)
        loss = mod(*inputs(lib, x))
        loss.sum().backward()
        results.append((mod, loss, x.grad, sorted(mod.state_dict())))
    (tm, tl, tg, tk), (em, el, eg, ek) = results
    assert repr(em) == repr_norm(repr(tm))
    assert ek == tk
    close(el, tl, rtol=1e-5, what="loss")
    close(eg, tg, rtol=1e-4, atol=1e-6, what="grad")
    assert type(el.grad_fn).__name__ == type(tl.grad_fn).__name__


def test_losses_with_nd_inputs():
    xa = rng.standard_normal((2, 3, 4, 2))
    ta = rng.integers(0, 3, (2, 4, 2))
    ta[0, 0, 0] = -100

    def body(lib):
        F = lib.nn.functional
        x = lib.tensor(xa, requires_grad=True)
        t = lib.tensor(ta)
        losses = [F.cross_entropy(x, t), F.nll_loss(x, t, reduction="sum"),
                  F.cross_entropy(x, t, reduction="none"),
                  F.cross_entropy(x[..., 0], t[..., 0], reduction="none")]
        grads = lib.autograd.grad(sum(v.sum() for v in losses), x)
        return losses, grads
    same(body, rtol=1e-5, atol=1e-6)


def test_loss_errors_match_torch():
    def body(lib):
        F = lib.nn.functional
        x = lib.tensor(X)
        out = []
        for bad in (lambda: F.nll_loss(x, lib.tensor([0, 1])),
                    lambda: F.nll_loss(x, lib.tensor([0, 1, 2, 9])),
                    lambda: F.cross_entropy(x, lib.tensor(IDX), weight=lib.ones(3)),
                    lambda: F.binary_cross_entropy(lib.sigmoid(x), lib.ones(4, 1)),
                    lambda: F.binary_cross_entropy(x, lib.zeros(4, 5)),
                    lambda: F.smooth_l1_loss(x, x, beta=-1.0),
                    lambda: F.kl_div(x, x, reduction="avg"),
                    lambda: F.cross_entropy(x, lib.tensor(IDX), label_smoothing=1.5),
                    lambda: F.gaussian_nll_loss(x, x, lib.ones(3)),
                    lambda: F.gaussian_nll_loss(x, x, -lib.ones(4, 5)),
                    lambda: F.cosine_embedding_loss(x, x, lib.ones(4, 1)),
                    lambda: F.multi_margin_loss(x, lib.tensor(IDX), p=3),
                    lambda: lib.nn.TripletMarginLoss(margin=-1.0),
                    lambda: F.mse_loss(x, x, reduction="bad")):
            out.append(error_of(bad))
        return out
    same(body)


def test_target_size_warnings_match_torch():
    def body(lib):
        F = lib.nn.functional
        x = lib.ones(3, 1)
        return (F.mse_loss(x, lib.ones(3)), F.l1_loss(x, lib.ones(3)),
                F.kl_div(lib.zeros(2), lib.ones(2)))
    same(body, grad_fn=False)


def test_legacy_size_average_reduce():
    def body(lib):
        m = lib.nn.L1Loss(size_average=False)
        n = lib.nn.MSELoss(reduce=False)
        return m.reduction, n.reduction, lib.nn.functional.l1_loss(
            lib.ones(2), lib.zeros(2), size_average=False)
    out = same(body, grad_fn=False, check_warnings=False)
    assert out.warnings and "size_average and reduce args" in out.warnings[0][1]


def same_ok(body, **kw):
    """``same``, and the body ran without an error (equal errors would also compare equal)."""
    e = same(body, **kw)
    assert e.error is None, e.error
    return e


def _names(fn):
    return None if fn is None else (fn.name(), [None if n is None else n.name()
                                                for n, _ in fn.next_functions])


def test_cross_entropy_graph_is_torchs():
    # torch: NllLossBackward0 -> LogSoftmaxBackward0 (one edge each); 3-D and 5-D inputs go
    # through nll_loss2d on a (N, C, 1, -1) view, their 'none' results viewed back.
    def body(lib):
        F = lib.nn.functional
        x = lib.tensor(X, requires_grad=True)
        t = lib.tensor(IDX)
        x3 = lib.tensor(rng.standard_normal((2, 4, 3)), requires_grad=True)
        x5 = lib.tensor(rng.standard_normal((2, 4, 3, 2, 2)), requires_grad=True)
        t5 = lib.tensor(rng.integers(0, 4, (2, 3, 2, 2)))
        out = []
        for loss in (F.cross_entropy(x, t), F.cross_entropy(x, t, weight=lib.ones(5)),
                     F.cross_entropy(x[0], t[0]), F.nll_loss(x, t),
                     F.cross_entropy(x3, t5[:, :, 0, 0]),
                     F.cross_entropy(x3, t5[:, :, 0, 0], reduction="none"),
                     F.cross_entropy(x5, t5, reduction="none"), F.nll_loss(x5, t5)):
            fn = loss.grad_fn
            out.append((_names(fn), _names(fn.next_functions[0][0])))
        return out
    same_ok(body)


def test_nll_loss_weight_requiring_grad_and_nd_target_errors_match_torch():
    def body(lib):
        F = lib.nn.functional
        w = lib.ones(5, requires_grad=True)
        out = []
        for bad in (lambda: F.nll_loss(lib.tensor(X), lib.tensor(IDX), weight=w),
                    lambda: F.cross_entropy(lib.tensor(X, requires_grad=True),
                                            lib.tensor(IDX), weight=w),
                    lambda: F.nll_loss(lib.ones(2, 3, 4), lib.zeros(2, 5, dtype=lib.long)),
                    lambda: F.nll_loss(lib.ones(2, 3, 4, 5, 6),
                                       lib.zeros(2, 5, 5, 6, dtype=lib.long))):
            out.append(error_of(bad))
        with lib.no_grad():
            out.append(F.nll_loss(lib.tensor(X), lib.tensor(IDX), weight=w))
        return out
    same_ok(body)


T_MLM = np.array([[3, 0, -1, 1, 4], [0, 1, 2, 3, -1], [1, 1, -1, 0, 2], [-1, 2, 0, 0, 0]])


def _value_and_grad(lib, f, *arrays):
    ts = [lib.tensor(a, requires_grad=True) for a in arrays]
    out = f(*ts)
    return out, lib.autograd.grad(out.sum(), ts)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_multilabel_margin_loss_matches_torch(reduction):
    def body(lib):
        F = lib.nn.functional
        t = lib.tensor(T_MLM)
        m = lib.nn.MultiLabelMarginLoss(reduction=reduction)
        return (repr(m), _value_and_grad(lib, lambda x: m(x, t), X),
                _value_and_grad(lib, lambda x: F.multilabel_margin_loss(
                    x, t[1], reduction=reduction), X[0]),
                _value_and_grad(lib, lambda x: F.multilabel_margin_loss(
                    x, lib.tensor(0), reduction=reduction), X[0, 0]))
    same_ok(body, rtol=1e-5, atol=1e-6)


def test_multilabel_margin_loss_has_no_double_backward_like_torch():
    def body(lib):
        x = lib.tensor(X, requires_grad=True)
        loss = lib.nn.functional.multilabel_margin_loss(x, lib.tensor(T_MLM))
        g, = lib.autograd.grad(loss, x, create_graph=True)
        out = [loss.grad_fn.name(), len(loss.grad_fn.next_functions), g.grad_fn.name()]
        try:
            lib.autograd.grad(g.sum(), x)
        except RuntimeError as e:
            out.append(str(e))
        return out
    same_ok(body)


def test_multilabel_margin_loss_errors_match_torch():
    def body(lib):
        F = lib.nn.functional
        x, t = lib.tensor(X), lib.tensor(T_MLM)
        out = []
        for bad in (lambda: F.multilabel_margin_loss(x, t[:2]),
                    lambda: F.multilabel_margin_loss(x, t.float()),
                    lambda: F.multilabel_margin_loss(x, t + 5),
                    lambda: F.multilabel_margin_loss(x, t - 2),
                    lambda: F.multilabel_margin_loss(x[:, :0], t[:, :0]),
                    lambda: F.multilabel_margin_loss(x.int(), t),
                    lambda: F.multilabel_margin_loss(x[0], t),
                    lambda: F.multilabel_margin_loss(x, t.int()),
                    lambda: F.multilabel_margin_loss(x, t, reduction="x")):
            out.append(error_of(bad))
        return out
    same_ok(body)


def test_triplet_margin_with_distance_loss_matches_torch():
    def body(lib):
        nn = lib.nn
        F = nn.functional
        arrays = (X, T, P)
        out = []
        for kw in ({}, {"margin": 0.3, "swap": True}, {"reduction": "none"},
                   {"distance_function": nn.PairwiseDistance(p=1), "reduction": "sum"},
                   {"distance_function": lambda u, v: 1.0 - F.cosine_similarity(u, v)}):
            m = nn.TripletMarginWithDistanceLoss(**kw)
            out.append(_value_and_grad(lib, m, *arrays))
        out.append(_value_and_grad(
            lib, lambda a, p, n: F.triplet_margin_with_distance_loss(a, p, n, swap=True),
            *arrays))
        out += [repr(nn.TripletMarginWithDistanceLoss()),
                repr(nn.TripletMarginWithDistanceLoss(distance_function=nn.CosineSimilarity())),
                repr(nn.PairwiseDistance(3, keepdim=True)), repr(nn.CosineSimilarity(0))]
        a, p = lib.tensor(X), lib.tensor(T)
        for bad in (lambda: nn.TripletMarginWithDistanceLoss(margin=0),
                    lambda: F.triplet_margin_with_distance_loss(a, p, p, margin=-1),
                    lambda: F.triplet_margin_with_distance_loss(a, p[0], p),
                    lambda: F.triplet_margin_with_distance_loss(a, p, p, reduction="bad")):
            out.append(error_of(bad))
        return out
    same_ok(body, rtol=1e-5, atol=1e-6)


def test_distance_modules_match_torch():
    def body(lib):
        nn = lib.nn
        return (_value_and_grad(lib, nn.PairwiseDistance(), X, T),
                _value_and_grad(lib, nn.PairwiseDistance(1.5, 1e-3, True), X, T),
                _value_and_grad(lib, nn.CosineSimilarity(0, 1e-6), X, T))
    # NOTE: node names not compared: Tensor.norm records linalg_vector_norm in ember (see the
    # pairwise_distance row of tests/ops/db_nn.py).
    same_ok(body, rtol=1e-5, atol=1e-6, grad_fn=False)


LP = rng.standard_normal((6, 2, 5))
CTC_T = np.array([[1, 2, 2], [3, 1, 0]])


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_ctc_loss_matches_torch(reduction):
    def body(lib):
        F = lib.nn.functional
        t = lib.tensor(CTC_T)

        def lsm(x):
            return x.log_softmax(-1)
        return (
            _value_and_grad(lib, lambda x: F.ctc_loss(lsm(x), t, [6, 5], [3, 2],
                                                      reduction=reduction), LP),
            # log-probabilities as leaves: torch's gradient formula (with its exp term)
            _value_and_grad(lib, lambda x: F.ctc_loss(x, t, lib.tensor([6, 4]),
                                                      lib.tensor([3, 1]), reduction=reduction),
                            LP),
            _value_and_grad(lib, lambda x: F.ctc_loss(lsm(x), lib.tensor([1, 2, 2, 3, 1]),
                                                      (6, 5), (3, 2), blank=4,
                                                      reduction=reduction), LP),
            _value_and_grad(lib, lambda x: lib.nn.CTCLoss(blank=2, reduction=reduction)(
                lsm(x), t + 1, [6, 6], [2, 3]), LP),
            _value_and_grad(lib, lambda x: F.ctc_loss(lsm(x), lib.tensor([1, 3]), [6], [2],
                                                      reduction=reduction), LP[:, 0]))
    same_ok(body, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("zero_infinity", [False, True])
@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
def test_ctc_loss_of_targets_holding_the_blank(reduction, zero_infinity):
    # a target that ends in the blank class: torch's kernel keeps only the last label's term
    # for the blank at the last step (its gradient there does not sum to zero); a blank
    # elsewhere in the target is an ordinary label
    cases = [([[1, 0], [2, 3], [0, 0]], [6, 5, 6], [2, 2, 2], 0),
             ([[0, 1], [2, 0], [3, 3]], [6, 6, 4], [2, 2, 1], 0),
             ([[1, 4], [4, 4], [2, 4]], [6, 6, 6], [2, 1, 2], 4),
             ([[0, 0, 0], [1, 0, 1], [0, 2, 0]], [6, 6, 6], [3, 3, 3], 0)]

    def body(torch):
        rs = np.random.RandomState(0)
        lp = torch.tensor(rs.randn(6, 3, 5)).log_softmax(2).detach().requires_grad_()
        results = []
        for targets, in_len, tg_len, blank in cases:
            out = torch.nn.functional.ctc_loss(lp, torch.tensor(targets), in_len, tg_len,
                                               blank=blank, reduction=reduction,
                                               zero_infinity=zero_infinity)
            results.append((out, torch.autograd.grad(out.sum(), lp)[0]))
        return results
    same(body)


def test_ctc_loss_infinities_empty_targets_and_padding_match_torch():
    def body(lib):
        F = lib.nn.functional
        lp = lib.tensor(LP).log_softmax(2)
        impossible = lib.tensor([[1, 1, 1], [1, 1, 1]])
        padded = lib.tensor([[1, -1, 99], [2, 3, -5]])  # entries past the lengths: never read
        return (F.ctc_loss(lp, impossible, [4, 5], [3, 3], reduction="none"),
                _value_and_grad(lib, lambda x: F.ctc_loss(
                    x.log_softmax(2), impossible, [4, 5], [3, 3], reduction="sum",
                    zero_infinity=True), LP),
                F.ctc_loss(lp, lib.tensor(CTC_T), [0, 5], [0, 0], reduction="none"),
                F.ctc_loss(lp, lib.tensor(CTC_T), [0, 5], [1, 0], reduction="none"),
                _value_and_grad(lib, lambda x: F.ctc_loss(x.log_softmax(2), padded, [6, 5],
                                                          [1, 2]), LP),
                F.ctc_loss(lp.float(), lib.tensor(CTC_T).float(), [6, 5], [3, 2]),
                repr(lib.nn.CTCLoss(blank=1, zero_infinity=True)))
    same_ok(body, rtol=1e-5, atol=1e-6)


def test_ctc_loss_graph_and_double_backward_error_match_torch():
    def body(lib):
        F = lib.nn.functional
        x = lib.tensor(LP, requires_grad=True)
        t = lib.tensor(CTC_T)
        loss = F.ctc_loss(x, t, [6, 5], [3, 2])
        out = [_names(loss.grad_fn), _names(loss.grad_fn.next_functions[0][0]),
               _names(F.ctc_loss(x, t, [6, 5], [3, 2], reduction="none").grad_fn),
               # NOTE: only the named edges: ember's where has an edge for the condition too
               [n.name() for n, _ in F.ctc_loss(
                   x, t, [6, 5], [3, 2], reduction="sum",
                   zero_infinity=True).grad_fn.next_functions[0][0].next_functions if n]]
        g, = lib.autograd.grad(loss, x, create_graph=True)
        out.append(g.grad_fn.name())
        try:
            lib.autograd.grad(g.sum(), x)
        except RuntimeError as e:
            out.append(str(e))
        return out
    same_ok(body)


@pytest.mark.parametrize("case", [
    "float_lengths", "input_too_long", "negative_input", "negative_target", "target_too_long",
    "input_lengths_size", "target_lengths_size", "blank", "target_batch", "concat_size",
    "unbatched_2d_targets", "log_probs_4d", "int_log_probs", "reduction", "targets_3d",
    "targets_0d", "float_target_lengths"])
def test_ctc_loss_errors_match_torch(case):
    def body(lib):
        F = lib.nn.functional
        lp = lib.tensor(LP).log_softmax(2)
        t = lib.tensor(CTC_T)
        return {
            "float_lengths": lambda: F.ctc_loss(lp, t, lib.tensor([6.0, 5.0]),
                                                lib.tensor([3, 2])),
            "input_too_long": lambda: F.ctc_loss(lp, t, [7, 5], [3, 2]),
            "negative_input": lambda: F.ctc_loss(lp, t, [-1, 5], [3, 2]),
            "negative_target": lambda: F.ctc_loss(lp, t, [6, 5], [-1, 2]),
            "target_too_long": lambda: F.ctc_loss(lp, t, [6, 5], [4, 2]),
            "input_lengths_size": lambda: F.ctc_loss(lp, t, [6], [3, 2]),
            "target_lengths_size": lambda: F.ctc_loss(lp, t, [6, 5], [3]),
            "blank": lambda: F.ctc_loss(lp, t, [6, 5], [3, 2], blank=5),
            "target_batch": lambda: F.ctc_loss(lp, t[:1], [6, 5], [3, 2]),
            "concat_size": lambda: F.ctc_loss(lp, lib.tensor([1, 2, 3]), [6, 5], [3, 2]),
            "unbatched_2d_targets": lambda: F.ctc_loss(lp[:, 0], t, [6], [3]),
            "log_probs_4d": lambda: F.ctc_loss(lp[None], t, [6, 5], [3, 2]),
            "int_log_probs": lambda: F.ctc_loss(lp.int(), t, [6, 5], [3, 2]),
            "reduction": lambda: F.ctc_loss(lp, t, [6, 5], [3, 2], reduction="x"),
            "targets_3d": lambda: F.ctc_loss(lp, t[None], [6, 5], [3, 2]),
            "targets_0d": lambda: F.ctc_loss(lp, lib.tensor(1), [6, 5], [3, 2]),
            "float_target_lengths": lambda: F.ctc_loss(lp, t, lib.tensor([6, 5]),
                                                       lib.tensor([3.0, 2.0])),
        }[case]()
    assert same(body).error is not None


@pytest.mark.parametrize("bad", [-2, -6, 5, 7])
@pytest.mark.parametrize("concatenated", [False, True])
def test_ctc_loss_refuses_targets_outside_the_classes(bad, concatenated):
    """torch's kernel reads such a target from memory beside its row (no defined result);
    ember refuses it as nll_loss does, where NumPy's wrap-around would have read a class from
    the row's other end (-2 read class 3: a loss, no error). Padding past a sample's length
    is never read, whatever it holds."""
    F = ember.nn.functional
    lp = ember.tensor(LP).log_softmax(2)
    rows = [[1, bad, 2], [3, 1, bad]]
    targets = ember.tensor([1, bad, 2, 3, 1] if concatenated else rows)
    with pytest.raises(IndexError, match=f"^Target {bad} is out of bounds.$"):
        F.ctc_loss(lp, targets, [6, 5], [3, 2])
    padded = ember.tensor([[1, 2, 2], [3, 1, bad]])
    assert F.ctc_loss(lp, padded, [6, 5], [3, 2]).isfinite()


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("targets", [[-100, -100], [1, -100], [2, 0]])
def test_nll_loss_with_ignored_targets(targets, reduction):
    """Ignored samples get a +0 loss and a zero gradient, even when every sample is ignored
    (the mean is then NaN and the gradient still zero)."""
    def body(torch):
        x = torch.tensor([[0.1, 0.2, 0.3], [0.3, 0.1, 0.2]], requires_grad=True)
        loss = torch.nn.functional.nll_loss(x, torch.tensor(targets), reduction=reduction)
        loss.sum().backward()
        return loss, x.grad, [str(v) for v in loss.detach().reshape(-1).tolist()]
    same(body)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_log_softmax_gradient_matches_torch(dtype):
    # log_softmax's backward on plain float arrays (cross-entropy's gradient) and through
    # create_graph (its Tensor path), with rows holding inf, -inf and NaN, over dims 1 and 0
    def body(lib):
        F = lib.nn.functional
        dt = getattr(lib, dtype)
        x = lib.tensor([[1.0, 2.0, 3.0], [float("inf"), 0.0, 1.0], [-float("inf"), 0.5, 2.0],
                        [float("nan"), 1.0, 0.0], [40.0, -40.0, 0.0]], dtype=dt,
                       requires_grad=True)
        t = lib.tensor([2, 0, 1, 1, 0])
        gx, = lib.autograd.grad(F.cross_entropy(x[[0, 2, 4]], t[[0, 2, 4]]), x)
        w = lib.arange(15, dtype=dt).reshape(5, 3) / 7
        g0, = lib.autograd.grad((F.log_softmax(x, 0) * w).sum(), x, create_graph=True)
        gg, = lib.autograd.grad((g0[[0, 2, 4]] ** 2).sum(), x)
        gs, = lib.autograd.grad((F.softmax(x, 1) * w).sum(), x)  # (softmax's on plain arrays)
        return gx, g0, gg, gs
    same(body, rtol=1e-5, atol=1e-6)
