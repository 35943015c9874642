"""Gradients torch computes with backward ops of its own: under ``create_graph=True`` their
nodes carry torch's names (``NativeLayerNormBackwardBackward0``, ``NllLossBackwardBackward0``,
...) and feed from the same inputs, and their own gradients are torch's.

Each body runs on PyTorch 2.13 and on ember (``oracle.same``); the tests skip when torch is not
installed.
"""
from __future__ import annotations

import pytest
from oracle import same
from test_torch_exact_nodes import _grad_graph, _names

_FUSED = {
    # zeros, then scatter_add: ScatterAddBackward0 with an empty first edge
    "cummax": lambda t, x, y: x.cummax(1)[0],
    "cummin_0d": lambda t, x, y: x[0, 0].cummin(0)[0],
    "take_along_dim": lambda t, x, y: t.take_along_dim(x, t.tensor([[2], [0]]), 1),
    # zeros, then _index_put_impl_ (accumulating): IndexPutImplBackward0, an empty first edge
    "index_repeated": lambda t, x, y: x[t.tensor([1, 1, 0])] * y[0],
    "index_columns": lambda t, x, y: x[:, [2, 0, 2]] * y,
    "index_mask": lambda t, x, y: x[y > 0],
}


@pytest.mark.parametrize("key", ["tensor", "column", "ellipsis", "mask", "after_int",
                                 "int_apart", "sliced"])
def test_index_gradient_is_an_index_put(key):
    """index's gradient under create_graph: torch's _index_put_impl_ into zeros, an
    IndexPutImplBackward0 node with no edge for the zeros, its saved indices and accumulate,
    version 1, and torch's second derivative."""
    def body(t):
        x = t.arange(24.0, dtype=t.float64).reshape(2, 4, 3).requires_grad_()
        keys = {"tensor": t.tensor([1, 1]), "column": (slice(None), t.tensor([3, 0, 3])),
                "ellipsis": (Ellipsis, t.tensor([2, 2])), "after_int": (1, t.tensor([0, 0])),
                "mask": t.tensor([[True, False, True, True], [False, True, True, False]]),
                # the integer and the slice are views first (x[1, :, t] is x[1][:, t])
                "int_apart": (1, slice(None), t.tensor([0, 2, 2])),
                "sliced": (slice(1, None), t.tensor([3, 1]), slice(None, 2))}
        y = x[keys[key]]
        g, = t.autograd.grad((y * y).sum(), [x], create_graph=True)
        node = g.grad_fn
        shown = (node._saved_accumulate, node._saved_indices) if key != "ellipsis" else ()
        second, = t.autograd.grad((g * g).sum(), [x])
        return y, _names(g), g._version, shown, g, second
    same(body)


def _layer_norm(weight, bias):
    def expr(t, x, y):
        w = t.tensor([0.7, -1.3, 0.4], dtype=t.float64, requires_grad=True) if weight else None
        b = t.tensor([0.2, 0.1, -0.5], dtype=t.float64, requires_grad=True) if bias else None
        out = t.nn.functional.layer_norm(x, (3,), w, b)
        return out * y if weight else out  # (weight: a second-order term in y too)
    return expr


_FUSED.update({
    "layer_norm": _layer_norm(False, False),
    "layer_norm_affine": _layer_norm(True, True),
    "layer_norm_weight": _layer_norm(True, False),
    "layer_norm_all_dims": lambda t, x, y: t.nn.functional.layer_norm(x, (2, 3)) * y,
})


def test_layer_norm_parameter_gradients():
    """The bias's gradient comes from the same node: it requires grad as torch's does."""
    def body(t):
        x = t.tensor([[0.3, -1.2, 0.7], [1.1, 0.45, -0.6]], dtype=t.float64, requires_grad=True)
        w = t.tensor([0.7, -1.3, 0.4], dtype=t.float64, requires_grad=True)
        b = t.tensor([0.2, 0.1, -0.5], dtype=t.float64, requires_grad=True)
        out = t.nn.functional.layer_norm(x, (3,), w, b)
        gb, = t.autograd.grad(out.sum(), [b], create_graph=True)
        gs = t.autograd.grad((out * out).sum(), [x, w, b], create_graph=True)
        second = t.autograd.grad(sum((g * g).sum() for g in gs), [x, w, b])
        return gb.requires_grad, [_names(g) for g in gs], list(gs), list(second)
    same(body)


def _nll(target, **kw):
    def expr(t, x, y):
        return t.nn.functional.nll_loss(x, t.tensor(target), **kw)
    return expr


def _nll_2d(t, x, y):
    # (the reshape's gradient node feeds from NllLoss2DBackwardBackward0)
    return t.nn.functional.nll_loss(x.reshape(1, 2, 3, 1), t.tensor([[[0], [1], [1]]]))


_FUSED.update({
    "nll_loss": _nll([0, 2]), "nll_loss_sum": _nll([1, 2], reduction="sum"),
    "nll_loss_none": _nll([1, -100], reduction="none"),
    "cross_entropy": lambda t, x, y: t.nn.functional.cross_entropy(x, t.tensor([2, 0])),
    "nll_loss_2d": _nll_2d,
    # where(in range, gradient, nan or 0): a NaN input gets torch's nan / 0
    "logit": lambda t, x, y: x.logit(),
    "logit_eps": lambda t, x, y: x.logit(0.2),
    "logit_nan": lambda t, x, y: (x.log() * 0.3).logit(0.2),
    # the target's gradient is the same op with the inputs swapped
    "smooth_l1_loss": lambda t, x, y: t.nn.functional.smooth_l1_loss(x, y, beta=0.6),
    "smooth_l1_loss_none": lambda t, x, y: t.nn.functional.smooth_l1_loss(x, y, reduction="none"),
    "huber_loss": lambda t, x, y: t.nn.functional.huber_loss(x, y, reduction="sum", delta=0.5),
    "huber_loss_broadcast": lambda t, x, y: t.nn.functional.huber_loss(x, y[0]),
    "glu": lambda t, x, y: t.nn.functional.glu(x, 0) * y[0],
    "glu_last": lambda t, x, y: t.nn.functional.glu(x.t(), -1),
    # torch's formula step by step: the mean divides last (DivBackward1)
    "bce_with_logits": lambda t, x, y: t.nn.functional.binary_cross_entropy_with_logits(
        x, y.sigmoid()),
    "bce_with_logits_weights": lambda t, x, y: t.nn.functional.binary_cross_entropy_with_logits(
        x, y.sigmoid(), weight=y[0].detach(), pos_weight=t.tensor([0.5, 2.0, 1.5],
                                                                 dtype=t.float64)),
    "bce_with_logits_sum": lambda t, x, y: t.nn.functional.binary_cross_entropy_with_logits(
        x, y.sigmoid(), pos_weight=y[1].detach().abs(), reduction="sum"),
    "binary_cross_entropy": lambda t, x, y: t.nn.functional.binary_cross_entropy(
        x.sigmoid(), y.sigmoid()),
    "binary_cross_entropy_weight": lambda t, x, y: t.nn.functional.binary_cross_entropy(
        x.sigmoid(), y.sigmoid(), weight=t.tensor([0.5, 2.0, 1.5], dtype=t.float64),
        reduction="none"),
    # torch's own guards at an input of exactly 0 or 1 (finite second derivatives)
    "binary_cross_entropy_edges": lambda t, x, y: t.nn.functional.binary_cross_entropy(
        x.clamp(0, 1), y.sigmoid().detach(), reduction="sum"),
})


def _batch_norm(training, affine):
    def expr(t, x, y):
        # x's three columns are the channels; y[0] its weight, y[1] its bias
        w, b = (y[0], y[1]) if affine else (None, None)
        rm = t.tensor([0.1, -0.2, 0.3], dtype=t.float64)
        rv = t.tensor([0.8, 1.5, 0.6], dtype=t.float64)
        return t.nn.functional.batch_norm(x * y, rm, rv, w, b, training=training)
    return expr


_FUSED.update({
    "batch_norm_train": _batch_norm(True, False),
    "batch_norm_train_affine": _batch_norm(True, True),
    "batch_norm_eval": _batch_norm(False, False),
    "batch_norm_eval_affine": _batch_norm(False, True),
    "batch_norm_3d": lambda t, x, y: t.nn.functional.batch_norm(
        x.reshape(1, 2, 3), None, None, y[0, :2], None, training=True),
})


_FUSED.update({
    # one ConvolutionBackwardBackward0 for the gradients, its edges the upstream gradient, the
    # input and the weight (the bias's gradient too)
    "conv1d": lambda t, x, y: t.nn.functional.conv1d(x.reshape(1, 2, 3), y.reshape(3, 2, 1),
                                                     y[0]),
    "conv1d_groups": lambda t, x, y: t.nn.functional.conv1d(
        x.reshape(1, 2, 3), y.reshape(2, 1, 3), groups=2, padding=1, stride=2),
    "conv_transpose1d": lambda t, x, y: t.nn.functional.conv_transpose1d(
        x.reshape(1, 2, 3), y.reshape(2, 3, 1), y[1], stride=2, output_padding=1),
    "conv2d_input_only": lambda t, x, y: t.nn.functional.conv2d(
        x.reshape(1, 1, 2, 3), y.detach()[:, :2].reshape(2, 1, 2, 1)),
})


@pytest.mark.parametrize("wanted", [(0, 1, 2), (0,), (1, 2), (2,)])
@pytest.mark.parametrize("transposed", [False, True])
def test_convolution_gradients_share_one_node(wanted, transposed):
    """A convolution's gradients under create_graph are outputs of one
    ConvolutionBackwardBackward0 node (output_nr 0, 1, 2), torch's edges and values, whichever
    of them a pass asks for; their own gradients are torch's."""
    def body(t):
        gen = t.Generator().manual_seed(0)
        x = t.randn(2, 2, 4, 3, generator=gen, dtype=t.float64).requires_grad_()
        w = t.randn(*(2, 3) if transposed else (3, 2), 2, 2, generator=gen,
                    dtype=t.float64).requires_grad_()
        b = t.randn(3, generator=gen, dtype=t.float64).requires_grad_()
        conv = t.nn.functional.conv_transpose2d if transposed else t.nn.functional.conv2d
        out = conv(x, w, b, padding=1)
        leaves = [(x, w, b)[k] for k in wanted]
        gs = t.autograd.grad((out * out).sum(), leaves, create_graph=True)
        nodes = [g.grad_fn for g in gs]
        second = t.autograd.grad(sum((g * g).sum() for g in gs), [x, w, b], allow_unused=True)
        return ([n is nodes[0] for n in nodes], [g.output_nr for g in gs],
                [_names(g) for g in gs], list(gs), list(second))
    same(body)


_FUSED.update({
    # one PreluKernelBackwardBackward0 for both gradients (the weight's summed with keepdim,
    # then viewed to its shape)
    "prelu": lambda t, x, y: t.nn.functional.prelu(x, y[0] * 0.5),
    "prelu_shared": lambda t, x, y: t.nn.functional.prelu(x, y[1, :1]),
    "prelu_vector": lambda t, x, y: t.nn.functional.prelu(x[0] * y[1], y[0, :1]),
    # an input of exactly 0: torch's second derivative compares with >= 0
    "prelu_zero": lambda t, x, y: t.nn.functional.prelu(x.relu() * y, y[1]),
})


@pytest.mark.parametrize("mode", ["use_mm_for_euclid_dist", "donot_use_mm_for_euclid_dist",
                                  "use_mm_for_euclid_dist_if_necessary"])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_cdist_of_identical_rows(mode, dtype):
    """Identical rows are 0 apart in the matrix product form too (torch clamps the squared
    distances at 0), so their gradient is the subgradient 0, not the ratio of a tiny
    distance (which cancellation made 0.75 for 0.7071, or 0 in float32)."""
    def body(t):
        x = t.tensor([[1.0, 2.0], [1.0, 2.0], [3.0, 0.5]], dtype=getattr(t, dtype),
                     requires_grad=True)
        y = t.tensor([[1.0, 2.0], [0.0, 1.0]], dtype=getattr(t, dtype), requires_grad=True)
        out = t.cdist(x, y, compute_mode=mode)
        same_x = t.cdist(x, x, compute_mode=mode)
        return out, t.autograd.grad(out.sum(), (x, y)), t.autograd.grad(same_x.sum(), x)
    same(body)


@pytest.mark.parametrize("p", [2.0, 1.0, 0.0, 0.5, 3.0, float("inf")])
@pytest.mark.parametrize("shapes", [((3, 4), (5, 4)), ((2, 1, 3, 2), (4, 2, 2))])
def test_cdist_gradients(p, shapes):
    """cdist's gradients are CdistBackwardBackward0 nodes with torch's four edges (the second
    one's last edge a clone of the transposed distances), torch's values (an inf-norm tie
    gives each tied element the whole gradient), and their own gradient is torch's
    NotImplementedError."""
    def body(t):
        gen = t.Generator().manual_seed(0)
        x1 = t.randn(*shapes[0], generator=gen, dtype=t.float64).round().requires_grad_()
        x2 = t.randn(*shapes[1], generator=gen, dtype=t.float64).round().requires_grad_()
        out = t.cdist(x1, x2, p=p)
        up = t.randn(*out.shape, generator=gen, dtype=t.float64)
        g1, g2 = t.autograd.grad(out, [x1, x2], up, create_graph=True)
        with pytest.raises(NotImplementedError) as err:
            t.autograd.grad(g1.sum(), [x1])
        return out, [_names(g) for g in (g1, g2)], g1, g2, str(err.value)
    same(body)


@pytest.mark.parametrize("training", [True, False])
def test_batch_norm_parameter_gradients(training):
    """The three gradients come from one NativeBatchNormBackwardBackward0 node, with torch's
    five edges (upstream gradient, input, weight, saved mean and inverse std)."""
    def body(t):
        x = t.tensor([[0.3, -1.2, 0.7], [1.1, 0.45, -0.6]], dtype=t.float64, requires_grad=True)
        w = t.tensor([0.7, -1.3, 0.4], dtype=t.float64, requires_grad=True)
        b = t.tensor([0.2, 0.1, -0.5], dtype=t.float64, requires_grad=True)
        rm = t.tensor([0.1, -0.2, 0.3], dtype=t.float64)
        rv = t.tensor([0.8, 1.5, 0.6], dtype=t.float64)
        out = t.nn.functional.batch_norm(x, rm, rv, w, b, training=training)
        gb, = t.autograd.grad(out.sum(), [b], create_graph=True)
        gs = t.autograd.grad((out * out).sum(), [x, w, b], create_graph=True)
        second = t.autograd.grad(sum((g * g).sum() for g in gs), [x, w, b], allow_unused=True)
        return gb.requires_grad, [_names(g) for g in gs], list(gs), list(second)
    same(body)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_nll_loss_gradient_of_nan(reduction):
    """torch writes the upstream gradient at the target classes only: a NaN or inf there
    reaches no other element (and ignored samples get +0.0)."""
    def body(t):
        x = t.tensor([[1.9, 1.43, -0.3], [0.2, -1.0, 0.5]], requires_grad=True)
        loss = t.nn.functional.nll_loss(x, t.tensor([0, -100]), reduction=reduction)
        upstream = t.full(loss.shape, float("nan"))
        if reduction == "none":
            upstream = t.tensor([float("inf"), float("nan")])
        g, = t.autograd.grad(loss, [x], upstream)
        y = t.tensor([-0.26, -1.0, 1.67])
        t.pow(y, t.nn.functional.nll_loss(x, t.tensor([0]).expand(2))).sum().backward()
        return g, x.grad
    same(body)


@pytest.mark.parametrize("name", sorted(_FUSED))
def test_fused_backward_nodes(name):
    same(_grad_graph(_FUSED[name]))


def _mm_layouts(t):
    """mm's and addmm's gradients follow each input's layout at the call, as torch's
    mm_mat1_backward / mm_mat2_backward: a column-major input's is computed transposed."""
    def leaf(rows, layout):
        x = t.tensor(rows, dtype=t.float64)
        x = x.t().contiguous().t() if layout == "column" else x
        return x.requires_grad_()
    a_rows = [[0.3, -1.2, 0.7], [1.1, 0.45, -0.6]]
    b_rows = [[0.5, 0.2], [-0.8, -0.3], [0.9, 1.3]]
    bias = t.tensor([0.1, -0.2], dtype=t.float64, requires_grad=True)
    seen = []
    for la in ("row", "column"):
        for lb in ("row", "column"):
            a, b = leaf(a_rows, la), leaf(b_rows, lb)
            for out in (t.mm(a, b), a @ b, t.addmm(bias, a, b, beta=0.5, alpha=2.0),
                        t.nn.functional.linear(a, b.t(), bias), t.mm(a, b[:, :1])):
                gs = t.autograd.grad((out * out).sum(), [a, b], create_graph=True)
                second = t.autograd.grad(sum(g.sum() for g in gs), [a, b])
                seen.append(([_names(g) for g in gs], [g.stride() for g in gs], list(gs),
                             list(second)))
    return seen


def test_mm_gradients_follow_the_layout():
    same(_mm_layouts)


@pytest.mark.parametrize("name", ["weight", "pos_weight"])
def test_bce_with_logits_refuses_differentiable_weights(name):
    def body(t):
        x = t.tensor([0.3, -1.2, 0.7], requires_grad=True)
        w = t.tensor([0.5, 2.0, 1.5], requires_grad=True)
        with t.no_grad():  # (refused only where a graph would be recorded)
            t.nn.functional.binary_cross_entropy_with_logits(x, x.sigmoid(), **{name: w})
        return t.nn.functional.binary_cross_entropy_with_logits(x.detach(), x.sigmoid(),
                                                                **{name: w})
    same(body)
