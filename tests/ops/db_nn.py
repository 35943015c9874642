"""Op table rows for activations, losses and the nn_ops helpers (ember._ops.activation, loss,
nn_ops). Shapes stay tiny: every row runs gradcheck and gradgradcheck."""
from __future__ import annotations

import math

import numpy as np

import ember.nn.functional as F
from ember._ops import activation as A
from ember._ops import loss as L
from ember._ops import nn_ops as NN
from ember._ops import pointwise as PW
from ember._ops import statistics as ST

from .op_db import DT, C, S, XFail, _gf, row


def _act(m):
    return [S("vector", m(5)), S("matrix", m(2, 3)), S("3d", m(2, 1, 3)), S("scalar", m()),
            S("empty", m(0, 3))]


def _no_torch_gradgrad(why):
    return {"test_gradgrad_vs_torch": why}


_KINK = (0.0,)
_HSIG = "torch has no double backward for hardsigmoid (derivative for hardsigmoid_backward)"

row("leaky_relu", F.leaky_relu, "nn.functional.leaky_relu",
    [A._leaky_relu, A.leaky_relu_backward],
    lambda m: _act(m) + [S("slope", m(2, 3), 0.2), S("kw", m(4), negative_slope=-0.5)],
    kinks=_KINK, np_ref=lambda x, s=0.01, negative_slope=None: np.where(
        x > 0, x, x * (s if negative_slope is None else negative_slope)))
row("leaky_relu_inplace", lambda x, *a: F.leaky_relu(x.clone(), *a, inplace=True),
    lambda torch: lambda x, *a: torch.nn.functional.leaky_relu(x.clone(), *a, inplace=True),
    [A._leaky_relu_inplace], lambda m: [S("matrix", m(2, 3)), S("slope", m(4), 0.3)],
    kinks=_KINK)
row("elu", F.elu, "nn.functional.elu", [A._elu, A.elu_backward],
    lambda m: _act(m) + [S("alpha", m(2, 3), 0.5), S("big", m.arr([-30.0, 30.0, 800.0]))],
    kinks=_KINK)
row("elu_inplace", lambda x: F.elu(x.clone(), 1.5, inplace=True),
    lambda torch: lambda x: torch.nn.functional.elu(x.clone(), 1.5, inplace=True),
    [A._elu_inplace, A.elu_backward], lambda m: [S("matrix", m(2, 3))], kinks=_KINK)
row("selu_inplace", lambda x: F.selu(x.clone(), inplace=True),
    lambda torch: lambda x: torch.nn.functional.selu(x.clone(), inplace=True),
    [A._elu_inplace], lambda m: [S("matrix", m(2, 3))], kinks=_KINK)
row("celu_inplace", lambda x: F.celu(x.clone(), 0.5, inplace=True),
    lambda torch: lambda x: torch.nn.functional.celu(x.clone(), 0.5, inplace=True),
    [A._celu_inplace, A.elu_backward], lambda m: [S("matrix", m(2, 3))], kinks=_KINK)
row("selu", F.selu, "nn.functional.selu", [A._elu], _act, kinks=_KINK)
row("celu", F.celu, "nn.functional.celu", [A._celu, A.elu_backward],
    lambda m: _act(m) + [S("alpha", m(2, 3), 0.7)], kinks=_KINK)
row("gelu", F.gelu, "nn.functional.gelu", [A._gelu, A.gelu_backward],
    lambda m: _act(m) + [S("tanh", m(2, 3), approximate="tanh"),
                         S("wide", m(6, low=-6.0, high=6.0))])
row("silu", F.silu, "nn.functional.silu", [A._silu], _act)
row("mish", F.mish, "nn.functional.mish", [A._mish], _act)
row("softplus", F.softplus, "nn.functional.softplus",
    [A._softplus, A.softplus_backward],
    lambda m: _act(m) + [S("beta_thr", m(2, 3), 2.0, 1.0),
                         S("above", m.arr([25.0, -30.0, 0.5]))], kinks=(0.5,))
row("softsign", F.softsign, "nn.functional.softsign", [], _act, kinks=_KINK,
    np_ref=lambda x: x / (1 + np.abs(x)))
row("hardtanh", F.hardtanh, "nn.functional.hardtanh", [A._hardtanh, A.hardtanh_backward],
    lambda m: _act(m) + [S("bounds", m(2, 3), -0.5, 0.5)], kinks=(-1.0, 1.0, -0.5, 0.5),
    np_ref=lambda x, lo=-1.0, hi=1.0: np.clip(x, lo, hi))
row("hardtanh_inplace", lambda x: F.hardtanh(x.clone(), -0.5, 0.5, inplace=True),
    lambda torch: lambda x: torch.nn.functional.hardtanh(x.clone(), -0.5, 0.5, inplace=True),
    [A._hardtanh], lambda m: [S("matrix", m(2, 3))], kinks=(-0.5, 0.5))
row("relu6", F.relu6, "nn.functional.relu6", [A._hardtanh],
    lambda m: [S("wide", m(6, low=-3.0, high=9.0))], kinks=(0.0, 6.0))
row("hardsigmoid", F.hardsigmoid, "nn.functional.hardsigmoid",
    [A._hardsigmoid, A.hardsigmoid_backward],
    lambda m: [S("wide", m(6, low=-5.0, high=5.0)), S("matrix", m(2, 3))], kinks=(-3.0, 3.0),
    skips={"test_gradgrad_vs_torch": _HSIG, "test_gradgradcheck": _HSIG,
           "test_forward_ad": "its reverse-mode reference is a double backward: " + _HSIG})
row("hardswish", F.hardswish, "nn.functional.hardswish", [A._hardswish, A.hardswish_backward],
    lambda m: [S("wide", m(6, low=-5.0, high=5.0)), S("matrix", m(2, 3))], kinks=(-3.0, 3.0))
row("logsigmoid", F.logsigmoid, "nn.functional.logsigmoid",
    [A._logsigmoid, A.log_sigmoid_backward],
    lambda m: _act(m) + [S("large", m.arr([-50.0, 0.0, 50.0]))])
row("tanhshrink", F.tanhshrink, "nn.functional.tanhshrink", [], _act,
    np_ref=lambda x: x - np.tanh(x))
row("softshrink", F.softshrink, "nn.functional.softshrink",
    [A._softshrink, A.softshrink_backward],
    lambda m: _act(m) + [S("lambd", m(2, 3), 1.0)], kinks=(-0.5, 0.5, -1.0, 1.0))
row("hardshrink", F.hardshrink, "nn.functional.hardshrink",
    [A._hardshrink, A.hardshrink_backward],
    lambda m: _act(m) + [S("lambd", m(2, 3), 1.0)], kinks=(-0.5, 0.5, -1.0, 1.0))
row("threshold", F.threshold, "nn.functional.threshold",
    [A._threshold, A.threshold_backward],
    lambda m: [S("matrix", m(2, 3), 0.1, 20.0), S("vector", m(5), -0.5, 0.0)],
    kinks=(0.1, -0.5), np_ref=lambda x, t, v: np.where(x > t, x, v))
row("threshold_inplace", lambda x, t, v: F.threshold(x.clone(), t, v, inplace=True),
    lambda torch: lambda x, t, v: torch.nn.functional.threshold(x.clone(), t, v, inplace=True),
    [A._threshold_inplace], lambda m: [S("matrix", m(2, 3), 0.1, -2.0)], kinks=(0.1,))


def _prelu_samples(m):
    return [S("shared", m(2, 3), m(1)), S("channels", m(2, 3, 4), m(3)),
            S("vector", m(4), m(1)), S("4d", m(2, 2, 2, 2), m(2))]


row("prelu", F.prelu, "nn.functional.prelu", [A._prelu, A._prelu_kernel_backward],
    _prelu_samples, kinks=_KINK)
# prelu's gradient op on its own (its derivatives give third derivatives)
row("_prelu_kernel_backward", A._prelu_kernel_backward,
    lambda torch: torch.ops.aten._prelu_kernel_backward, [A._prelu_kernel_backward],
    lambda m: [S("channels", m(2, 3, 2), m(2, 3, 2), m(1, 3, 1)),
               S("shared", m(4), m(4), m(1))], kinks=_KINK, public=False)


def _softmax_samples(m):
    return [S("dim1", m(2, 3), 1), S("dim0", m(2, 3), 0), S("neg", m(2, 3, 4), -1),
            S("vector", m(5), 0), S("scalar", m(), 0), S("dtype", m(2, 3), 1,
                                                            dtype=DT("float64")),
            S("large", m.arr([[1000.0, 0.0, -1000.0]]), 1), S("empty", m(0, 3), 1)]


def _np_softmax(x, dim, dtype=None):
    e = np.exp(x - np.max(x, axis=dim, keepdims=True)) if x.size else x
    return e / np.sum(e, axis=dim, keepdims=True) if x.size else x


row("softmax", F.softmax, "nn.functional.softmax", [A._softmax, A.softmax_backward_data],
    _softmax_samples, np_ref=_np_softmax)
row("log_softmax", F.log_softmax, "nn.functional.log_softmax",
    [A._log_softmax, A.log_softmax_backward_data], _softmax_samples)
row("_safe_softmax", A.safe_softmax, lambda torch: torch._safe_softmax,
    [A.safe_softmax, A.softmax_backward_data],
    lambda m: [s for s in _softmax_samples(m) if not s.kwargs] + [
        S("masked_row", m.arr([[0.5, -1.0, 2.0], [-math.inf, -math.inf, -math.inf]]), 1),
        S("masked_column", m.arr([[-math.inf, 1.0], [-math.inf, 0.5]]), 0)],
    public=False)
# softmax's gradient ops, on their own (their derivatives give third derivatives)
row("softmax_backward_data", lambda g, y: A.softmax_backward_data(g, y, 1),
    lambda torch: lambda g, y: torch.ops.aten._softmax_backward_data(g, y, 1, y.dtype),
    [A.softmax_backward_data], lambda m: [S("rows", m(2, 3), m(2, 3))],
    np_ref=lambda g, y: y * (g - (g * y).sum(1, keepdims=True)), public=False)
row("log_softmax_backward_data", lambda g, y: A.log_softmax_backward_data(g, y, 1),
    lambda torch: lambda g, y: torch.ops.aten._log_softmax_backward_data(g, y, 1, y.dtype),
    [A.log_softmax_backward_data], lambda m: [S("rows", m(2, 3), m(2, 3))],
    np_ref=lambda g, y: g - np.exp(y) * g.sum(1, keepdims=True), public=False)
row("softmin", F.softmin, "nn.functional.softmin", [A._softmax],
    lambda m: [S("dim1", m(2, 3), 1), S("dim0", m(3, 2), 0)])
row("softmax_method", lambda x, d: x.softmax(d), None, [A._softmax],
    lambda m: [S("dim1", m(2, 3), 1)])
row("glu", F.glu, "nn.functional.glu", [A._glu, A.glu_backward],
    lambda m: [S("last", m(2, 4)), S("dim0", m(4, 3), 0), S("vector", m(6))])
# glu's gradient op on its own (its derivatives give third derivatives)
row("glu_backward", A.glu_backward, lambda torch: torch.ops.aten.glu_backward, [A.glu_backward],
    lambda m: [S("last", m(2, 2), m(2, 4), 1), S("dim0", m(2, 3), m(4, 3), 0)], public=False)

# -- nn_ops --------------------------------------------------------------------------------------
_DROP_EVAL = "eval mode returns the input itself"
row("dropout_eval", lambda x: F.dropout(x, 0.5, training=False),
    lambda torch: lambda x: torch.nn.functional.dropout(x, 0.5, training=False), [],
    lambda m: [S("matrix", m(2, 3))], skips={"test_no_grad": _DROP_EVAL})
row("dropout_p0", lambda x: F.dropout(x, 0.0), lambda torch: lambda x: torch.nn.functional
    .dropout(x, 0.0), [], lambda m: [S("matrix", m(2, 3))], skips={"test_no_grad": _DROP_EVAL})
row("normalize", F.normalize, "nn.functional.normalize", [],
    lambda m: [S("dim1", m(2, 3)), S("dim0_p1", m(3, 2), 1.0, 0), S("3d", m(2, 3, 2), dim=-1)],
    kinks=_KINK)
row("cosine_similarity", F.cosine_similarity, "nn.functional.cosine_similarity", [],
    lambda m: [S("dim1", m(2, 3), m(2, 3)), S("bcast", m(2, 3), m(3), 1)])
row("pairwise_distance", F.pairwise_distance, "nn.functional.pairwise_distance",
    [ST.norm_dim, PW.add_scalar],
    lambda m: [S("p2", m(3, 4), m(3, 4)), S("p1_keep", m(3, 4), m(3, 4), 1.0, keepdim=True)],
    kinks=_KINK)


_BY_DESIGN = "the gradient is not the derivative by design (padding row, frequency scaling)"


def _emb_samples(m):
    idx = C(np.array([[0, 2], [2, 1]]))
    return [S("basic", idx, m(4, 3)),
            S("padding", idx, m(4, 3), padding_idx=2, no_gradcheck=_BY_DESIGN),
            S("freq", C(np.array([0, 0, 3, 1])), m(4, 2), scale_grad_by_freq=True,
              no_gradcheck=_BY_DESIGN),
            S("neg_padding", idx, m(3, 2), padding_idx=-1, no_gradcheck=_BY_DESIGN),
            S("scalar_idx", C(np.array(1)), m(3, 2))]


row("embedding", F.embedding, "nn.functional.embedding",
    [NN._embedding, NN._embedding_backward], _emb_samples,
    np_ref=lambda i, w, **k: w[i])
row("bilinear", F.bilinear, "nn.functional.bilinear", [NN.trilinear],
    lambda m: [S("nobias", m(3, 2), m(3, 4), m(5, 2, 4)),
               S("bias", m(2, 3), m(2, 2), m(4, 3, 2), m(4)),
               S("batch", m(2, 2, 3), m(2, 2, 2), m(1, 3, 2))])


# -- losses --------------------------------------------------------------------------------------
_RED = ("mean", "sum", "none")
_REDUCTION_ENUM = {"none": 0, "mean": 1, "sum": 2}  # (torch.ops.aten's reduction argument)


def _pair_loss(m, **kw):
    return [S(r, m(2, 3), m(2, 3), reduction=r, **kw) for r in _RED] + [
        S("0dim", m(), m(), **kw), S("target_const", m(4), C(m(4)), **kw)]


row("l1_loss", F.l1_loss, "nn.functional.l1_loss", [], _pair_loss, kinks=_KINK)
row("smooth_l1_loss", F.smooth_l1_loss, "nn.functional.smooth_l1_loss",
    [L._smooth_l1, L.smooth_l1_loss_backward],
    lambda m: _pair_loss(m) + [S("beta", m(2, 3), m(2, 3), beta=0.5)],
    domain=(-1.0, 1.0))
row("smooth_l1_loss_beta0", lambda x, t: F.smooth_l1_loss(x, t, beta=0.0),
    lambda torch: lambda x, t: torch.nn.functional.smooth_l1_loss(x, t, beta=0.0), [],
    lambda m: [S("basic", m(2, 3), m(2, 3))])
row("huber_loss", F.huber_loss, "nn.functional.huber_loss", [L._huber, L.huber_loss_backward],
    lambda m: _pair_loss(m) + [S("delta", m(2, 3), m(2, 3), delta=0.3)])


def _robust_backward_samples(m):
    return [S("mean", m(), m(2, 3), m(2, 3), "mean", 0.5),
            S("sum_broadcast", m(), m(2, 3), m(3), "sum", 1.0),
            S("none", m(2, 3), m(2, 3), m(2, 3), "none", 0.7)]


# the losses' gradient ops on their own (their derivatives give third derivatives)
for _name, _fn in (("smooth_l1_loss_backward", L.smooth_l1_loss_backward),
                   ("huber_loss_backward", L.huber_loss_backward)):
    row(_name, _fn, lambda torch, _name=_name: lambda g, x, t, red, w: getattr(
        torch.ops.aten, _name)(g, x, t, _REDUCTION_ENUM[red], w),
        [_fn], _robust_backward_samples, domain=(-1.0, 1.0), kinks=_KINK, public=False)


def _bce_samples(m):
    p = {"low": 0.05, "high": 0.95}
    return [S(r, m(2, 3, **p), m(2, 3, **p), reduction=r) for r in _RED] + [
        S("weight", m(2, 3, **p), C(m(2, 3, **p)), C(m(3, low=0.5, high=2.0))),
        S("0dim", m(**p), m(**p)), S("edges", m.arr([0.0, 1.0, 0.5]), C(m.arr([0.0, 1.0, 1.0])),
                                     no_gradcheck="log is clamped at 0 and 1")]


row("binary_cross_entropy", F.binary_cross_entropy, "nn.functional.binary_cross_entropy",
    [L._bce, L.binary_cross_entropy_backward], _bce_samples)


# binary_cross_entropy's gradient op on its own (its derivatives give third derivatives)
row("binary_cross_entropy_backward", L.binary_cross_entropy_backward,
    lambda torch: lambda g, x, t, w, red: torch.ops.aten.binary_cross_entropy_backward(
        g, x, t, w, _REDUCTION_ENUM[red]),
    [L.binary_cross_entropy_backward],
    lambda m: [S("mean", m(), m(2, 3, low=0.05, high=0.95), m(2, 3, low=0.05, high=0.95),
                 None, "mean"),
               S("none_weight", m(2, 3), m(2, 3, low=0.05, high=0.95),
                 m(2, 3, low=0.05, high=0.95), C(m(3, low=0.5, high=2.0)), "none")],
    public=False)


def _nll_samples(m):
    t = C(np.array([0, 2, 3]))
    w = C(m(4, low=0.5, high=2.0))
    t3 = C(np.array([[0, 1, 2], [2, 2, 0]]))
    return [S(r, m(3, 4), t, reduction=r) for r in _RED] + [
        S("weight", m(3, 4), t, w), S("weight_none", m(3, 4), t, w, reduction="none"),
        S("ignore", m(3, 4), t, ignore_index=2), S("ignore_w", m(3, 4), t, w, ignore_index=3),
        S("unbatched", m(4), C(np.array(1))),
        S("2d", m(2, 3, 3), t3), S("2d_none", m(2, 3, 3), t3, reduction="none"),
        S("4d", m(2, 3, 2, 2), C(np.array([[[0, 1], [2, 1]], [[0, 0], [1, 2]]])),
          reduction="sum"),
        S("5d_none", m(2, 3, 1, 2, 2), C(np.array([[[[0, 1], [2, 1]]], [[[0, 0], [1, 2]]]])),
          reduction="none"),
        S("5d_w", m(2, 4, 2, 1, 2), C(np.array([[[[0, 1]], [[2, 1]]], [[[0, 3]], [[1, 2]]]])), w)]


_NLL_BACKWARD = [L._nll, L._nll2d, L.nll_loss_backward, L.nll_loss2d_backward]
row("nll_loss", F.nll_loss, "nn.functional.nll_loss", _NLL_BACKWARD, _nll_samples)
row("cross_entropy", F.cross_entropy, "nn.functional.cross_entropy",
    _NLL_BACKWARD + [A._log_softmax], _nll_samples)


def _torch_nll_backward(aten_name):
    def ref(torch):
        def run(g, x, t, w, reduction, ignore_index=-100):
            red = _REDUCTION_ENUM[reduction]
            forward = getattr(torch.ops.aten, aten_name.replace("backward", "forward"))
            total = forward(x, t, w, red, ignore_index)[1]
            return getattr(torch.ops.aten, aten_name)(g, x, t, w, red, ignore_index, total)
        return run
    return ref


def _nll_backward_samples(m):
    t = C(np.array([0, 2, 3]))
    w = C(m(4, low=0.5, high=2.0))
    return [S("mean", m(), m(3, 4), t, None, "mean"), S("sum_w", m(), m(3, 4), t, w, "sum"),
            S("none_ignore", m(3), m(3, 4), t, w, "none", 2)]


# nll_loss's gradient ops on their own (their derivatives give third derivatives)
row("nll_loss_backward", L.nll_loss_backward, _torch_nll_backward("nll_loss_backward"),
    [L.nll_loss_backward], _nll_backward_samples, public=False)
row("nll_loss2d_backward", L.nll_loss2d_backward, _torch_nll_backward("nll_loss2d_backward"),
    [L.nll_loss2d_backward],
    lambda m: [S("mean", m(), m(2, 3, 2, 2), C(np.array([[[0, 1], [2, 1]], [[0, 0], [1, 2]]])),
                 None, "mean"),
               S("none", m(2, 2, 2), m(2, 3, 2, 2),
                 C(np.array([[[0, 1], [2, 1]], [[0, 0], [1, 2]]])), None, "none")],
    public=False)


def _ce_extra(m):
    t = C(np.array([0, 2, 3]))
    p = C(m(3, 4, low=0.0, high=1.0))
    w = C(m(4, low=0.5, high=2.0))
    return [S("probs", m(3, 4), p), S("probs_none", m(3, 4), p, reduction="none"),
            S("probs_w_ls", m(3, 4), p, w, label_smoothing=0.2),
            S("ls", m(3, 4), t, label_smoothing=0.1),
            S("ls_w_ignore", m(3, 4), t, w, ignore_index=2, label_smoothing=0.3),
            S("ls_none", m(3, 4), t, reduction="none", label_smoothing=0.3),
            S("ls_sum", m(3, 4), t, reduction="sum", label_smoothing=0.3)]


row("cross_entropy_variants", F.cross_entropy, "nn.functional.cross_entropy",
    [L._nll, A._log_softmax, PW.div_scalar, PW.mul_scalar, PW.add_scalar], _ce_extra)


def _kl_samples(m):
    p = {"low": 0.1, "high": 1.0}
    return [S(r, m(2, 3), m(2, 3, **p), reduction=r) for r in ("sum", "none", "batchmean")] + [
        S("mean", m(2, 3), C(m(2, 3, **p))),
        S("log_target", m(2, 3), m(2, 3), reduction="sum", log_target=True)]


row("kl_div", F.kl_div, "nn.functional.kl_div", [], _kl_samples)
row("poisson_nll_loss", F.poisson_nll_loss, "nn.functional.poisson_nll_loss", [],
    lambda m: [S("log", m(2, 3), C(m(2, 3, low=0.0, high=3.0))),
               S("full", m(2, 3), C(m(2, 3, low=0.0, high=3.0)), full=True, reduction="none"),
               S("nolog", m(2, 3, low=0.2, high=2.0), m(2, 3, low=0.0, high=3.0), False,
                 reduction="sum")])
row("gaussian_nll_loss", F.gaussian_nll_loss, "nn.functional.gaussian_nll_loss", [],
    lambda m: [S("basic", m(2, 3), m(2, 3), m(2, 3, low=0.2, high=2.0)),
               S("full_none", m(2, 3), m(2, 3), m(2, 3, low=0.2, high=2.0), full=True,
                 reduction="none"),
               S("var_last1", m(2, 3), C(m(2, 3)), m(2, 1, low=0.2, high=2.0), reduction="sum"),
               S("var_bcast", m(2, 3), C(m(2, 3)), m(2, low=0.2, high=2.0))])
row("cosine_embedding_loss", F.cosine_embedding_loss, "nn.functional.cosine_embedding_loss", [],
    lambda m: [S("mean", m(3, 4), m(3, 4), C(np.array([1.0, -1.0, 1.0]))),
               S("margin_none", m(3, 4), m(3, 4), C(np.array([-1, -1, 1])), 0.2,
                 reduction="none"),
               S("1d", m(4), m(4), C(np.array(-1.0)), -0.5)])
row("margin_ranking_loss", F.margin_ranking_loss, "nn.functional.margin_ranking_loss", [],
    lambda m: [S("mean", m(4), m(4), C(np.array([1.0, -1.0, 1.0, -1.0]))),
               S("margin_none", m(4), m(4), C(np.array([1.0, -1.0, -1.0, 1.0])), 0.5,
                 reduction="none")], kinks=_KINK)
row("hinge_embedding_loss", F.hinge_embedding_loss, "nn.functional.hinge_embedding_loss", [],
    lambda m: [S("mean", m(2, 3), C(np.array([[1.0, -1.0, 1.0], [-1.0, -1.0, 1.0]]))),
               S("margin_sum", m(4), C(np.array([1.0, -1.0, -1.0, 1.0])), 0.5,
                 reduction="sum")], kinks=(1.0, 0.5))
row("triplet_margin_loss", F.triplet_margin_loss, "nn.functional.triplet_margin_loss", [],
    lambda m: [S("mean", m(3, 4), m(3, 4), m(3, 4)),
               S("swap_p1", m(3, 4), m(3, 4), m(3, 4), 2.0, 1, swap=True, reduction="none")])
row("soft_margin_loss", F.soft_margin_loss, "nn.functional.soft_margin_loss",
    [L._soft_margin, L.soft_margin_loss_backward],
    lambda m: [S(r, m(2, 3), C(np.array([[1.0, -1.0, 1.0], [-1.0, 1.0, 1.0]])), reduction=r)
               for r in _RED])
row("multilabel_soft_margin_loss", F.multilabel_soft_margin_loss,
    "nn.functional.multilabel_soft_margin_loss", [A._logsigmoid],
    lambda m: [S("mean", m(2, 3), C(np.array([[1.0, 0.0, 1.0], [0.0, 0.0, 1.0]]))),
               S("weight_none", m(2, 3), C(np.array([[1.0, 0.0, 1.0], [0.0, 1.0, 1.0]])),
                 C(m(3, low=0.5, high=2.0)), reduction="none")])
_MM = "torch has no double backward for multi_margin_loss (multi_margin_loss_backward)"
row("multi_margin_loss", F.multi_margin_loss, "nn.functional.multi_margin_loss",
    [L._multi_margin],
    lambda m: [S("mean", m(3, 4), C(np.array([0, 2, 3]))),
               S("p2_w_none", m(3, 4), C(np.array([1, 2, 0])), 2, 0.7,
                 C(m(4, low=0.5, high=2.0)), reduction="none"),
               S("sum", m(3, 4), C(np.array([3, 3, 1])), reduction="sum"),
               S("1d_p2", m(4), C(np.array(2)), 2)],
    kinks=_KINK, skips=_no_torch_gradgrad(_MM))

# one_hot has no gradient: forward against torch only.
row("one_hot", F.one_hot, "nn.functional.one_hot", [],
    lambda m: [S("infer", C(np.array([0, 2, 1]))), S("classes", C(np.array([[0], [3]])), 5)],
    dtypes=("int64",), differentiable=False, np_ref=None)


# Losses whose backward torch cannot differentiate (its double backward raises): no gradgrad.
def _mlm_samples(m):
    t = C(np.array([[3, 0, -1, 1], [0, 1, 2, 3], [1, 1, -1, 0]]))
    return [S(r, m(3, 4), t, reduction=r) for r in _RED] + [
        S("vector", m(4), C(np.array([2, 0, -1, 3]))),
        S("vector_none", m(4), C(np.array([2, -1, 0, 0])), reduction="none"),
        S("scalar", m(), C(np.array(0)), reduction="sum")]


row("multilabel_margin_loss", F.multilabel_margin_loss, "nn.functional.multilabel_margin_loss",
    [L._multilabel_margin, L._multilabel_margin_backward], _mlm_samples, gradgrad=False,
    skips={"test_forward_ad": "no forward-mode derivative (torch has none either)"})


def _ctc(x, targets, input_lengths, target_lengths, **kw):
    # NOTE: torch's CTC gradient is the gradient through log_softmax (it carries an exp(x) term
    # that only cancels there), so the rows differentiate logits.
    return F.ctc_loss(x.log_softmax(-1), targets, input_lengths, target_lengths, **kw)


def _ctc_samples(m):
    t = C(np.array([[1, 2, 2], [3, 1, 0]]))
    return [S(r, m(6, 2, 5), t, (6, 5), (3, 2), reduction=r) for r in _RED] + [
        S("concat_blank4", m(6, 2, 5), C(np.array([1, 2, 2, 3, 1])), (6, 4), (3, 2), blank=4),
        S("short_zero_inf", m(6, 2, 5), C(np.array([[1, 1, 1], [2, 3, 0]])), (4, 6), (3, 2),
          reduction="none", zero_infinity=True),
        S("empty_target_padded", m(5, 2, 3), C(np.array([[1, -1, 9], [2, -1, 7]])), (5, 3),
          (0, 1), reduction="sum"),
        S("unbatched", m(6, 5), C(np.array([1, 3])), (6,), (2,))]


row("ctc_loss", _ctc, lambda torch: lambda x, t, il, tl, **kw: torch.nn.functional.ctc_loss(
    x.log_softmax(-1), t, il, tl, **kw), [L._ctc_loss, L._ctc_loss_backward], _ctc_samples,
    gradgrad=False, tols={"float32": (1e-4, 1e-5)},
    skips={"test_forward_ad": "no forward-mode derivative (torch has none either)"})


def _packed_data(x, lengths, **kw):
    import ember
    return ember.nn.utils.rnn.pack_padded_sequence(x, lengths, **kw).data


row("pack_padded_sequence", _packed_data,
    lambda torch: lambda x, lengths, **kw: torch.nn.utils.rnn.pack_padded_sequence(
        x, lengths, **kw).data,
    [NN._pack_padded_sequence, NN._pack_padded_sequence_backward],
    lambda m: [S("time_major", m(4, 3, 2), [4, 2, 1]),
               S("batch_first", m(3, 4, 2), [4, 3, 3], batch_first=True),
               S("unsorted", m(4, 3), [2, 4, 1], enforce_sorted=False)])


# rrelu: the evaluation slope, and training with lower == upper (the drawn slopes are then all
# the same value, so the forward is deterministic and torch's backward takes its leaky path).
def _rrelu_samples(m):
    return _act(m) + [S("bounds", m(2, 3), 0.1, 0.3),
                      S("train_fixed", m(2, 3), 0.2, 0.2, training=True)]


row("rrelu", F.rrelu, "nn.functional.rrelu", [A._rrelu_with_noise, A._rrelu_backward],
    _rrelu_samples, kinks=_KINK)
row("rrelu_inplace", lambda x, *a, **k: F.rrelu(x.clone(), *a, inplace=True, **k),
    lambda torch: lambda x, *a, **k: torch.nn.functional.rrelu(x.clone(), *a, inplace=True,
                                                               **k),
    [A._rrelu_with_noise_inplace], lambda m: [S("matrix", m(2, 3)),
                                              S("train_fixed", m(4), 0.3, 0.3, training=True)],
    kinks=_KINK)
row("channel_shuffle", F.channel_shuffle, "nn.functional.channel_shuffle", [NN._channel_shuffle],
    lambda m: [S("4d", m(2, 6, 2, 2), 3), S("3d", m(1, 4, 3), 2), S("5d", m(1, 4, 2, 1, 2), 4),
               S("one_group", m(2, 3, 2), 1)])
