"""Op table rows for torch's native_* normalization and dropout functions (ember._ops.
native_norms) and the synchronized batch norm pieces (ember._ops.batch_norm_parts).

torch's CPU build has kernels for batch_norm_update_stats only; the other batch_norm_* pieces
are CUDA kernels there, so their reference here is their definition written with torch ops
(the grad_fn names are then not torch's to compare: those rows are not ``public``; their
NotImplemented nodes are checked in tests/test_norm_parts.py)."""
from __future__ import annotations

import numpy as np

import ember
from ember._ops import batch_norm_parts as BP
from ember._ops import native_norms as NN
from ember._ops import normalization as NM

from .op_db import C, S, row

_F32 = {"float32": (1e-5, 1e-5)}
_GN_STATS = ("native_group_norm's mean and rstd are computed with ember ops (their gradients "
             "are torch's; their nodes are MeanBackward1 / ViewBackward0, torch's "
             "NativeGroupNormBackward0)")


def _nbn_samples(m):
    rm, rv = C(m(3)), C(m(3, low=0.5, high=2.0))
    return [S("train", m(4, 3, 2), m(3), m(3), rm, rv, True, 0.1, 1e-5),
            S("eval", m(4, 3, 2), m(3), m(3), rm, rv, False, 0.1, 1e-5),
            S("no_affine", m(3, 3), None, None, None, None, True, 0.2, 1e-3)]


row("native_batch_norm", ember.native_batch_norm, "native_batch_norm",
    [NM.batch_norm_op, NM.native_batch_norm_backward], _nbn_samples, tols=_F32)


def _nbnb_samples(m):
    """native_batch_norm_backward at an input's own statistics in training (the input a
    constant there: its derivative treats the statistics as functions of it, which gradcheck
    cannot perturb), at given running statistics in eval."""
    out = []
    for name, shape, axes in (("train", (4, 3, 2), (0, 2)), ("train_2d", (5, 3), (0,))):
        x = m(*shape)
        mean = x.mean(axis=axes)
        invstd = 1.0 / np.sqrt(x.var(axis=axes) + 1e-5)
        out.append(S(name, m(*shape), C(x), m(3), C(mean.astype(x.dtype)),
                     C(invstd.astype(x.dtype)), True, True))
    # (a missing weight or bias: torch returns None there, ember an empty array; the
    # batch_norm rows cover those cases through F.batch_norm)
    return out + [S("eval", m(4, 3, 2), m(4, 3, 2), m(3), C(m(3)), C(m(3, low=0.5, high=2.0)),
                    False, True)]


def _torch_nbnb(torch):
    def fn(g, x, w, mean, invstd, training, has_bias):
        # torch takes the running variance in eval: 1/invstd^2 - eps gives invstd back
        rv = None if training else invstd.pow(-2) - 1e-5
        return torch.ops.aten.native_batch_norm_backward(
            g, x, w, None if training else mean, rv, mean if training else None,
            invstd if training else None, training, 1e-5, [True, w is not None, has_bias])
    return fn


# batch_norm's gradient op on its own (its derivatives give third derivatives)
row("native_batch_norm_backward", NM.native_batch_norm_backward, _torch_nbnb,
    [NM.native_batch_norm_backward], _nbnb_samples, tols=_F32, public=False)
row("native_layer_norm", ember.native_layer_norm, "native_layer_norm", [NM.layer_norm_op],
    lambda m: [S("affine", m(2, 3, 4), (4,), m(4), m(4), 1e-5),
               S("two_dims", m(2, 3, 4), [3, 4], None, None, 1e-3)], tols=_F32)
def _lnb_samples(m):
    """native_layer_norm_backward at an input's own statistics (the input a constant: its
    derivative treats the statistics as functions of it, which gradcheck cannot perturb)."""
    out = []
    for name, shape, k in (("last", (2, 3, 4), 1), ("two_dims", (2, 3), 2)):
        x = m(*shape)
        axes = tuple(range(len(shape) - k, len(shape)))
        mean = x.mean(axis=axes, keepdims=True)
        rstd = 1.0 / np.sqrt(((x - mean) ** 2).mean(axis=axes, keepdims=True) + 1e-5)
        out.append(S(name, m(*shape), C(x), C(mean.astype(x.dtype)), C(rstd.astype(x.dtype)),
                     m(*shape[len(shape) - k:]), C(m(*shape[len(shape) - k:])),
                     list(shape[len(shape) - k:])))
    return out


# layer_norm's gradient op on its own (its derivatives give third derivatives)
row("native_layer_norm_backward", NM.native_layer_norm_backward,
    lambda torch: lambda g, x, mean, rstd, w, b, shape: torch.ops.aten.native_layer_norm_backward(
        g, x, shape, mean, rstd, w, b, [True, True, True]),
    [NM.native_layer_norm_backward], _lnb_samples, tols=_F32, public=False)

row("native_group_norm", ember.native_group_norm, "native_group_norm", [NM.group_norm_op],
    lambda m: [S("affine", m(2, 4, 3), m(4), m(4), 2, 4, 3, 2, 1e-5),
               S("plain", m(3, 2, 2, 2), None, None, 3, 2, 4, 1, 1e-5)], tols=_F32,
    skips={"test_grad_fn_name": _GN_STATS})


_TRAIN_NONE = ("torch's derivative with train=None leaves out the 1/(1-p) its output has: "
               "not the derivative of the output (the gradient is still compared with torch's)")


def _seeded_dropout(mod):
    def run(x, p, train):
        mod.manual_seed(0)
        return mod.native_dropout(x, p, train)
    return run


row("native_dropout", _seeded_dropout(ember), _seeded_dropout, [NN._native_dropout],
    lambda m: [S("train", m(3, 4), 0.3, True), S("train_none", m(2, 5), 0.5, None,
                                                 no_gradcheck=_TRAIN_NONE),
               S("eval", m(2, 3), 0.5, False), S("p1", m(4), 1.0, True)], random=True)
row("norm_except_dim", ember.norm_except_dim, "norm_except_dim", [NN._norm_all],
    lambda m: [S("dim0", m(3, 2, 2), 2, 0), S("last", m(2, 3), 3, 1),
               S("middle", m(2, 3, 2), 2, 1), S("all", m(2, 3), 2, -1)],
    domain=(0.5, 2.0))


# -- the synchronized batch norm pieces ---------------------------------------------------------
def _axes(x):
    return [0] + list(range(2, x.dim()))


def _ch(v, x):
    return v.view((1, -1) + (1,) * (x.dim() - 2))


def _torch_stats(torch):
    def stats(x, eps):
        return x.mean(_axes(x)), (x.var(_axes(x), correction=0) + eps).rsqrt()
    return stats


def _torch_elemt(torch):
    def elemt(x, w, b, mean, invstd, eps):
        out = (x - _ch(mean, x)) * _ch(invstd, x)
        out = out if w is None else out * _ch(w, x)
        return out if b is None else out + _ch(b, x)
    return elemt


def _torch_gather(torch):
    """Every process's statistics merged (the variance of the union from each one's)."""
    def gather(x, mean, invstd, rm, rv, momentum, eps, counts):
        counts = counts.to(mean.dtype).unsqueeze(1)
        total = counts.sum(0)
        avg = (mean * counts).sum(0) / total
        var = ((invstd ** -2 - eps + (mean - avg) ** 2) * counts).sum(0) / total
        for r, v in ((rm, avg), (rv, var * total / (total - 1))):
            if r is not None:
                r.mul_(1 - momentum).add_(momentum * v.detach())
        return avg, (var + eps).rsqrt()
    return gather


def _gather_samples(m):
    return [S("three", m(4, 3, 2), m(3, 3), m(3, 3, low=0.5, high=2.0), C(m(3)),
              C(m(3, low=0.5, high=2.0)), 0.1, 1e-5, C(m.arr([8.0, 4.0, 6.0]))),
            S("no_running", m(2, 2), m(2, 2), m(2, 2, low=0.5, high=2.0), None, None, 0.1,
              1e-3, C(m.arr([2.0, 5.0])))]


def _torch_backward_reduce(torch):
    def reduce(dy, x, mean, invstd, w):
        sum_dy = dy.sum(_axes(x))
        sum_dy_xmu = (dy * (x - _ch(mean, x))).sum(_axes(x))
        return sum_dy, sum_dy_xmu, sum_dy_xmu * invstd, sum_dy
    return reduce


def _torch_backward_elemt(torch):
    def elemt(dy, x, mean, invstd, w, sum_dy, sum_dy_xmu, count):
        n = count.sum()
        scale = invstd if w is None else invstd * w
        return (dy - _ch(sum_dy, x) / n - (x - _ch(mean, x)) * _ch(invstd ** 2 * sum_dy_xmu, x)
                / n) * _ch(scale, x)
    return elemt


_PIECE = dict(public=False, differentiable=False, tols=_F32)
row("batch_norm_stats", ember.batch_norm_stats, _torch_stats, [BP._stats_op],
    lambda m: [S("3d", m(4, 3, 2), 1e-5), S("2d", m(5, 2), 1e-3)], **_PIECE)
row("batch_norm_elemt", ember.batch_norm_elemt, _torch_elemt, [BP._elemt_op],
    lambda m: [S("affine", m(4, 3, 2), m(3), m(3), m(3), m(3, low=0.5), 1e-5),
               S("plain", m(3, 2), None, None, m(2), m(2, low=0.5), 1e-5)], **_PIECE)
row("batch_norm_gather_stats_with_counts", ember.batch_norm_gather_stats_with_counts,
    _torch_gather, [BP._gather_counts_op], _gather_samples, **_PIECE)
row("batch_norm_gather_stats",
    lambda x, mean, invstd, rm, rv, mom, eps, count: ember.batch_norm_gather_stats(
        x, mean, invstd, rm, rv, mom, eps, count),
    lambda torch: lambda x, mean, invstd, rm, rv, mom, eps, count: _torch_gather(torch)(
        x, mean, invstd, rm, rv, mom, eps, torch.full((mean.shape[0],), float(count))),
    [BP._gather_op],
    lambda m: [S("two", m(4, 3, 2), m(2, 3), m(2, 3, low=0.5, high=2.0), C(m(3)),
                 C(m(3, low=0.5, high=2.0)), 0.1, 1e-5, 8)], **_PIECE)
row("batch_norm_backward_reduce",
    lambda dy, x, mean, invstd, w: ember.batch_norm_backward_reduce(dy, x, mean, invstd, w,
                                                                    True, True, True),
    _torch_backward_reduce, [BP._backward_reduce_op],
    lambda m: [S("3d", m(4, 3, 2), m(4, 3, 2), m(3), m(3, low=0.5), m(3))], **_PIECE)
row("batch_norm_backward_elemt", ember.batch_norm_backward_elemt, _torch_backward_elemt,
    [BP._backward_elemt_op],
    lambda m: [S("affine", m(4, 3, 2), m(4, 3, 2), m(3), m(3, low=0.5), m(3), m(3), m(3),
                 C(m.arr([8, 4], "int32"))),
               S("plain", m(3, 2), m(3, 2), m(2), m(2, low=0.5), None, m(2), m(2),
                 C(m.arr([3], "int32")))], **_PIECE)
row("batch_norm_update_stats", ember.batch_norm_update_stats, "batch_norm_update_stats",
    [BP._update_stats_op],
    lambda m: [S("running", m(4, 3, 2), C(m(3)), C(m(3, low=0.5, high=2.0)), 0.1),
               S("none", m(5, 2), None, None, 0.3)], differentiable=False, tols=_F32)
