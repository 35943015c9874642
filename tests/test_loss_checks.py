"""The losses' checks of their arguments against torch's: the exception type, the message and
which check comes first when several fail (dtypes of class weights and targets, shapes,
weights that require grad, targets out of range), on eager calls and on a compiled
function's replay."""
import numpy as np
import pytest

import ember
from oracle import error_of, norm, same, torch_or_skip


def _data(torch):
    torch.manual_seed(0)
    return torch.randn(4, 3), torch.tensor([0, 1, 2, 0])


def _w(torch, n=3, dtype="float64", **kw):
    return torch.ones(n, dtype=getattr(torch, dtype), **kw)


# (name, body(torch, F, x, t)): each is run on torch and on ember, values or errors compared
NLL_CASES = {
    # class weights of another dtype than the input: torch refuses, for every rank and mode
    "w64": lambda torch, F, x, t: F.nll_loss(x, t, weight=_w(torch)),
    "w16": lambda torch, F, x, t: F.nll_loss(x, t, weight=_w(torch, dtype="float16")),
    "wlong": lambda torch, F, x, t: F.nll_loss(x, t, weight=_w(torch, dtype="long")),
    "double_input_w32": lambda torch, F, x, t: F.nll_loss(x.double(), t,
                                                          weight=_w(torch, dtype="float32")),
    "unbatched_w64": lambda torch, F, x, t: F.nll_loss(x[0], t[0], weight=_w(torch)),
    "3d_w64": lambda torch, F, x, t: F.nll_loss(torch.randn(2, 3, 4), torch.zeros(
        2, 4, dtype=torch.long), weight=_w(torch)),
    "4d_w64": lambda torch, F, x, t: F.nll_loss(torch.randn(2, 3, 4, 4), torch.zeros(
        2, 4, 4, dtype=torch.long), weight=_w(torch)),
    "5d_w64": lambda torch, F, x, t: F.nll_loss(torch.randn(2, 3, 4, 4, 2), torch.zeros(
        2, 4, 4, 2, dtype=torch.long), weight=_w(torch)),
    "empty_w64": lambda torch, F, x, t: F.nll_loss(torch.randn(0, 3), torch.zeros(
        0, dtype=torch.long), weight=_w(torch)),
    "none_w64": lambda torch, F, x, t: F.nll_loss(x, t, weight=_w(torch), reduction="none"),
    "ignore_w64": lambda torch, F, x, t: F.nll_loss(x, t, weight=_w(torch), ignore_index=1),
    "module_w64": lambda torch, F, x, t: torch.nn.NLLLoss(weight=_w(torch))(x, t),
    # the weight's dtype is checked before the targets' range
    "w64_out_of_range": lambda torch, F, x, t: F.nll_loss(x, torch.tensor([0, 1, 2, 5]),
                                                          weight=_w(torch)),
    "4d_w64_out_of_range": lambda torch, F, x, t: F.nll_loss(
        torch.randn(2, 3, 4, 4), torch.full((2, 4, 4), 7), weight=_w(torch)),
    "uint8_w64": lambda torch, F, x, t: F.nll_loss(x, t.to(torch.uint8), weight=_w(torch)),
    # target dtypes: int64 or uint8 only
    "float_target": lambda torch, F, x, t: F.nll_loss(x, t.float()),
    "int_target": lambda torch, F, x, t: F.nll_loss(x, t.int()),
    "short_target": lambda torch, F, x, t: F.nll_loss(x, t.short()),
    "int8_target": lambda torch, F, x, t: F.nll_loss(x, t.to(torch.int8)),
    "bool_target": lambda torch, F, x, t: F.nll_loss(x, t.bool()),
    "uint8_target": lambda torch, F, x, t: F.nll_loss(x, t.to(torch.uint8)),
    "uint8_target_4d": lambda torch, F, x, t: F.nll_loss(torch.randn(2, 3, 4, 4), torch.ones(
        2, 4, 4, dtype=torch.uint8), reduction="none"),
    "int_target_w64": lambda torch, F, x, t: F.nll_loss(x, t.int(), weight=_w(torch)),
    "int_target_4d": lambda torch, F, x, t: F.nll_loss(torch.randn(2, 3, 4, 4), torch.zeros(
        2, 4, 4, dtype=torch.int)),
    "float_target_3d": lambda torch, F, x, t: F.nll_loss(torch.randn(2, 3, 4), torch.zeros(2, 4)),
    # order: shapes, a weight that requires grad, target dtype, weight shape
    "float_target_wshape": lambda torch, F, x, t: F.nll_loss(x, t.float(), weight=_w(torch, 4)),
    "wshape": lambda torch, F, x, t: F.nll_loss(x, t, weight=_w(torch, 4)),
    "wshape_requires_grad": lambda torch, F, x, t: F.nll_loss(
        x, t, weight=_w(torch, 4, "float32", requires_grad=True)),
    "float_target_w_requires_grad": lambda torch, F, x, t: F.nll_loss(
        x, t.float(), weight=_w(torch, requires_grad=True)),
    "2d_target_float": lambda torch, F, x, t: F.nll_loss(x, torch.zeros(4, 2)),
    "unbatched_target_size": lambda torch, F, x, t: F.nll_loss(x[0], t[:2], weight=_w(torch, 4)),
    "unbatched_target_size_float": lambda torch, F, x, t: F.nll_loss(x[0], t[:2].float()),
    "4d_wshape": lambda torch, F, x, t: F.nll_loss(torch.randn(2, 3, 4, 4), torch.zeros(
        2, 4, 4, dtype=torch.long), weight=_w(torch, 4)),
    "3d_wshape": lambda torch, F, x, t: F.nll_loss(torch.randn(2, 3, 4), torch.zeros(
        2, 4, dtype=torch.long), weight=_w(torch, 4, "float32")),
    "4d_wshape_size_mismatch": lambda torch, F, x, t: F.nll_loss(
        torch.randn(2, 3, 4, 4), torch.zeros(2, 4, 5, dtype=torch.long), weight=_w(torch, 4)),
    "4d_size_mismatch_float": lambda torch, F, x, t: F.nll_loss(torch.randn(2, 3, 4, 4),
                                                                torch.zeros(2, 4, 5)),
    "4d_target_2d": lambda torch, F, x, t: F.nll_loss(torch.randn(2, 3, 4, 4), torch.zeros(2, 4)),
    "4d_w_requires_grad": lambda torch, F, x, t: F.nll_loss(
        torch.randn(2, 3, 4, 4), torch.zeros(2, 4, 5, dtype=torch.long),
        weight=_w(torch, 3, "float32", requires_grad=True)),
    "3d_size_mismatch_w_requires_grad": lambda torch, F, x, t: F.nll_loss(
        torch.randn(2, 3, 4), torch.zeros(2, 5, dtype=torch.long),
        weight=_w(torch, 3, "float32", requires_grad=True)),
    # cross_entropy: class indices go through nll_loss; class probabilities promote
    "ce_w64": lambda torch, F, x, t: F.cross_entropy(x, t, weight=_w(torch)),
    "ce_half_w32": lambda torch, F, x, t: F.cross_entropy(x.half(), t,
                                                          weight=_w(torch, dtype="float32")),
    "ce_3d_w64": lambda torch, F, x, t: F.cross_entropy(torch.randn(2, 3, 4), torch.zeros(
        2, 4, dtype=torch.long), weight=_w(torch)),
    "ce_smoothing_w64": lambda torch, F, x, t: F.cross_entropy(x, t, weight=_w(torch),
                                                               label_smoothing=0.1),
    "ce_smoothing_none_w64": lambda torch, F, x, t: F.cross_entropy(
        x, t, weight=_w(torch), label_smoothing=0.1, reduction="none", ignore_index=1),
    "ce_smoothing_int_target": lambda torch, F, x, t: F.cross_entropy(x, t.int(),
                                                                      label_smoothing=0.1),
    "ce_smoothing_out_of_range": lambda torch, F, x, t: F.cross_entropy(x, t, label_smoothing=2.0),
    "ce_float_target_other_shape": lambda torch, F, x, t: F.cross_entropy(x, torch.rand(4)),
    "ce_module_w64": lambda torch, F, x, t: torch.nn.CrossEntropyLoss(weight=_w(torch))(x, t),
    "ce_probs_w64": lambda torch, F, x, t: F.cross_entropy(x, torch.rand(4, 3), weight=_w(torch)),
    "ce_probs_w16": lambda torch, F, x, t: F.cross_entropy(x, torch.rand(4, 3),
                                                           weight=_w(torch, dtype="float16")),
    "ce_probs_smoothing_w64": lambda torch, F, x, t: F.cross_entropy(
        x, torch.rand(4, 3), weight=_w(torch), label_smoothing=0.2),
    "ce_probs_f64_none": lambda torch, F, x, t: F.cross_entropy(x, torch.rand(4, 3).double(),
                                                                reduction="none"),
    "ce_probs_long": lambda torch, F, x, t: F.cross_entropy(x, torch.ones(4, 3, dtype=torch.long)),
    "ce_probs_bool": lambda torch, F, x, t: F.cross_entropy(x, torch.ones(4, 3, dtype=torch.bool)),
    "ce_probs_0d_long": lambda torch, F, x, t: F.cross_entropy(x[0, 0], t[0]),
    "ce_probs_ignore_index": lambda torch, F, x, t: F.cross_entropy(x, torch.rand(4, 3),
                                                                    ignore_index=1),
    "ce_probs_wshape": lambda torch, F, x, t: F.cross_entropy(x, torch.rand(4, 3),
                                                              weight=_w(torch, 4)),
    "ce_probs_w2d": lambda torch, F, x, t: F.cross_entropy(x, torch.rand(4, 3),
                                                           weight=torch.ones(1, 3)),
    # multi_margin_loss: shapes, then the input's dtype, the targets', the weight's, the range
    "mm_w64": lambda torch, F, x, t: F.multi_margin_loss(x, t, weight=_w(torch)),
    "mm_wlong": lambda torch, F, x, t: F.multi_margin_loss(x, t, weight=_w(torch, dtype="long")),
    "mm_double_w32": lambda torch, F, x, t: F.multi_margin_loss(
        x.double(), t, weight=_w(torch, dtype="float32")),
    "mm_unbatched_w64": lambda torch, F, x, t: F.multi_margin_loss(x[0], t[0], weight=_w(torch)),
    "mm_module_w64": lambda torch, F, x, t: torch.nn.MultiMarginLoss(weight=_w(torch))(x, t),
    "mm_w64_out_of_range": lambda torch, F, x, t: F.multi_margin_loss(
        x, torch.tensor([0, 1, 2, 5]), weight=_w(torch)),
    "mm_int_target": lambda torch, F, x, t: F.multi_margin_loss(x, t.int()),
    "mm_uint8_target": lambda torch, F, x, t: F.multi_margin_loss(x, t.to(torch.uint8)),
    "mm_float_target": lambda torch, F, x, t: F.multi_margin_loss(x, t.float()),
    "mm_int_target_w64": lambda torch, F, x, t: F.multi_margin_loss(x, t.int(), weight=_w(torch)),
    "mm_int_target_out_of_range": lambda torch, F, x, t: F.multi_margin_loss(
        x, torch.tensor([0, 1, 2, 5]).int()),
    "mm_int_target_wshape": lambda torch, F, x, t: F.multi_margin_loss(x, t.int(),
                                                                       weight=_w(torch, 4)),
    "mm_target_size": lambda torch, F, x, t: F.multi_margin_loss(x, t[:3].float(),
                                                                 weight=_w(torch, 4)),
    "mm_target_2d": lambda torch, F, x, t: F.multi_margin_loss(x, t.view(4, 1)),
    "mm_no_classes": lambda torch, F, x, t: F.multi_margin_loss(torch.randn(4, 0), t),
    "mm_3d": lambda torch, F, x, t: F.multi_margin_loss(torch.randn(2, 3, 4), t.int()),
    "mm_w_requires_grad": lambda torch, F, x, t: F.multi_margin_loss(
        x, t, weight=_w(torch, requires_grad=True)),
    "mm_w_requires_grad_wshape": lambda torch, F, x, t: F.multi_margin_loss(
        x, t, weight=_w(torch, 4, "float32", requires_grad=True)),
    "mm_half": lambda torch, F, x, t: F.multi_margin_loss(x.half(), t, weight=_w(torch)),
    "mm_bfloat16": lambda torch, F, x, t: F.multi_margin_loss(x.bfloat16(), t),
    "mm_0d": lambda torch, F, x, t: F.multi_margin_loss(x[0, 0], t[0] * 0, p=2),
}


@pytest.mark.parametrize("case", NLL_CASES)
def test_class_loss_checks_as_torch(case):
    def body(torch):
        x, t = _data(torch)
        return NLL_CASES[case](torch, torch.nn.functional, x, t)
    same(body)


def test_weight_that_requires_grad_is_refused_only_when_grad_is_enabled():
    def body(torch):
        x, t = _data(torch)
        with torch.no_grad():
            return (torch.nn.functional.nll_loss(x, t, weight=torch.ones(3, requires_grad=True)),
                    torch.nn.functional.multi_margin_loss(
                        x, t, weight=torch.ones(3, requires_grad=True)))
    same(body)


@pytest.mark.parametrize("kind", ["cross_entropy", "nll_loss", "multi_margin_loss"])
def test_a_compiled_function_checks_each_calls_weight_dtype(kind):
    """A replay runs the kernels alone: they check the weight's dtype (before the targets'
    range), so a compiled call refuses what an eager one does."""
    torch = torch_or_skip()

    def call(lib, x, t, w):
        return getattr(lib.nn.functional, kind)(x, t, weight=w)
    x, t = _data(ember)
    cf = ember.compile(lambda x, t, w: call(ember, x, t, w))
    good = ember.ones(3)
    assert cf(x, t, good).item() == pytest.approx(call(ember, x, t, good).item())
    for w, idx in ((ember.ones(3, dtype=ember.float64), [0, 1, 2, 0]),
                   (ember.ones(3, dtype=ember.float64), [0, 1, 2, 5]),
                   (ember.ones(3), [0, 1, 2, 5])):
        target = ember.tensor(idx)
        got = error_of(lambda: cf(x, target, w))
        tx, tw = torch.tensor(x.numpy()), torch.tensor(w.numpy())
        want = error_of(lambda: call(torch, tx, torch.tensor(idx), tw))
        assert want is not None and got == (want[0], norm(want[1]))


def test_kernel_refuses_weights_of_another_dtype_on_every_path():
    """The nll kernels (forward and backward, host and general paths) check the weight's and
    the targets' dtypes themselves."""
    from ember._ops.loss import _nll_kernel, _nll_backward_kernel
    x = np.zeros((4, 3), np.float32)
    t = np.array([0, 1, 2, 0])
    w64 = np.ones(3)
    with pytest.raises(RuntimeError, match="expected scalar type Float but found Double"):
        _nll_kernel(x, t, w64, "mean", -100)
    with pytest.raises(RuntimeError, match="expected scalar type Float but found Double"):
        _nll_backward_kernel(np.float32(1.0), x, t, w64, "mean", -100)
    with pytest.raises(RuntimeError, match="Long or Byte, but got Int"):
        _nll_kernel(x, t.astype(np.int32), None, "sum", -100)


def _pair(torch):
    torch.manual_seed(0)
    return torch.rand(4, 3) * 0.8 + 0.1, torch.rand(4, 3)


# pointwise and other losses: dtype mismatches, integer operands, shapes, weights
OTHER_CASES = {
    "bce_target64": lambda torch, F, x, y: F.binary_cross_entropy(x, y.double()),
    "bce_input64": lambda torch, F, x, y: F.binary_cross_entropy(x.double(), y),
    "bce_long_target": lambda torch, F, x, y: F.binary_cross_entropy(x, torch.ones(
        4, 3, dtype=torch.long)),
    "bce_long_input": lambda torch, F, x, y: F.binary_cross_entropy(torch.ones(
        4, 3, dtype=torch.long), y),
    "bce_long_input_out_of_range": lambda torch, F, x, y: F.binary_cross_entropy(torch.full(
        (4, 3), 2), y),
    "bce_w64": lambda torch, F, x, y: F.binary_cross_entropy(x, y, weight=torch.ones(
        3, dtype=torch.float64)),
    "bce_w16_none": lambda torch, F, x, y: F.binary_cross_entropy(x, y, reduction="none",
                                                                  weight=torch.rand(3).half()),
    "bce_wshape": lambda torch, F, x, y: F.binary_cross_entropy(x, y, weight=torch.ones(2)),
    "bce_wshape_2d": lambda torch, F, x, y: F.binary_cross_entropy(x, y, weight=torch.ones(2, 1)),
    "bce_w_larger": lambda torch, F, x, y: F.binary_cross_entropy(x, y,
                                                                  weight=torch.ones(5, 4, 3)),
    "bce_w_requires_grad": lambda torch, F, x, y: F.binary_cross_entropy(
        x, y.double(), weight=torch.ones(3, requires_grad=True)),
    "bcel_input64": lambda torch, F, x, y: F.binary_cross_entropy_with_logits(x.double(), y),
    "bcel_target64_none": lambda torch, F, x, y: F.binary_cross_entropy_with_logits(
        x, y.double(), reduction="none"),
    "bcel_w64_pw64": lambda torch, F, x, y: F.binary_cross_entropy_with_logits(
        x, y, weight=torch.rand(3).double(), pos_weight=torch.full((3,), 2.0).double()),
    "bcel_long_pos_weight": lambda torch, F, x, y: F.binary_cross_entropy_with_logits(
        x, y, pos_weight=torch.full((3,), 2)),
    "bcel_pos_weight_larger": lambda torch, F, x, y: F.binary_cross_entropy_with_logits(
        x, y, pos_weight=torch.ones(5, 4, 3)),
    "bcel_weight_larger": lambda torch, F, x, y: F.binary_cross_entropy_with_logits(
        x, y, weight=torch.ones(5, 4, 3)),
    "bcel_long_input": lambda torch, F, x, y: F.binary_cross_entropy_with_logits(x.long(),
                                                                                 y.long()),
    "bcel_long_target_pos_weight_shape": lambda torch, F, x, y:
        F.binary_cross_entropy_with_logits(x, y.long(), pos_weight=torch.ones(2)),
    "bcel_long_target": lambda torch, F, x, y: F.binary_cross_entropy_with_logits(x, y.long()),
    "bcel_bool_target": lambda torch, F, x, y: F.binary_cross_entropy_with_logits(x, y.bool()),
    "bcel_weight_shape": lambda torch, F, x, y: F.binary_cross_entropy_with_logits(
        x, y, weight=torch.ones(2)),
    "bcel_complex_weight": lambda torch, F, x, y: F.binary_cross_entropy_with_logits(
        x, y, weight=torch.ones(3, dtype=torch.cfloat)),
    "bce_long_both": lambda torch, F, x, y: F.binary_cross_entropy(torch.full((4, 3), 2),
                                                                   torch.ones(4, 3).long()),
    "bce_bool_both": lambda torch, F, x, y: F.binary_cross_entropy(x.bool(), y.bool()),
    "soft_margin_long": lambda torch, F, x, y: F.soft_margin_loss(x.int(), y.long()),
    "soft_margin_bool": lambda torch, F, x, y: F.soft_margin_loss(x.bool(), y.bool()),
    "ctc_half": lambda torch, F, x, y: F.ctc_loss(
        torch.randn(6, 2, 4).log_softmax(2).half(), torch.ones(2, 3, dtype=torch.long), [6, 7],
        [3, 3]),
    "ctc_bfloat16": lambda torch, F, x, y: F.ctc_loss(
        torch.randn(6, 2, 4).log_softmax(2).bfloat16(), torch.ones(2, 3, dtype=torch.long),
        [6, 6], [3, 3]),
    "multilabel_margin_half": lambda torch, F, x, y: F.multilabel_margin_loss(
        x.half(), torch.zeros(4, 3, dtype=torch.int)),
    "multilabel_margin_bfloat16": lambda torch, F, x, y: F.multilabel_margin_loss(
        x.bfloat16(), torch.zeros(4, 3, dtype=torch.long)),
    "kl_long_target": lambda torch, F, x, y: F.kl_div(x.log(), torch.ones(4, 3, dtype=torch.long),
                                                      reduction="sum"),
    "kl_long_input": lambda torch, F, x, y: F.kl_div(torch.ones(4, 3, dtype=torch.long), y,
                                                     reduction="sum", log_target=True),
    "kl_bool_target": lambda torch, F, x, y: F.kl_div(x, y.bool(), reduction="sum"),
    "mse_long_both": lambda torch, F, x, y: F.mse_loss(x.long(), y.long()),
    "mse_bool_both": lambda torch, F, x, y: F.mse_loss(x.bool(), y.bool()),
    "mse_long_target": lambda torch, F, x, y: F.mse_loss(x, torch.ones(4, 3, dtype=torch.long)),
    "mse_shape": lambda torch, F, x, y: F.mse_loss(x, y[:, :2]),
    "l1_shape": lambda torch, F, x, y: F.l1_loss(x, y[:, :2]),
    "smooth_l1_long_both": lambda torch, F, x, y: F.smooth_l1_loss(x.long(), y.long()),
    "smooth_l1_long_negative_beta": lambda torch, F, x, y: F.smooth_l1_loss(
        x.long(), y.long(), beta=-1.0),
    "huber_long_both": lambda torch, F, x, y: F.huber_loss(x.long(), y.long()),
    "huber_long_zero_delta": lambda torch, F, x, y: F.huber_loss(x.long(), y.long(), delta=0.0),
    "huber_target64": lambda torch, F, x, y: F.huber_loss(x, y.double(), reduction="none"),
    "huber_half_target64": lambda torch, F, x, y: F.huber_loss(x.half(), y.double()),
    "huber_input64": lambda torch, F, x, y: F.huber_loss(x.double(), y),
    "soft_margin_broadcast": lambda torch, F, x, y: F.soft_margin_loss(x, y[:, :1]),
    "soft_margin_shape": lambda torch, F, x, y: F.soft_margin_loss(x, y[:, :2]),
    "triplet_margin_zero": lambda torch, F, x, y: F.triplet_margin_loss(x, y, y, margin=0.0),
    "triplet_margin_negative": lambda torch, F, x, y: F.triplet_margin_loss(x, y, y, margin=-1),
    "broadcast_tensors_message": lambda torch, F, x, y: torch.broadcast_tensors(
        torch.ones(2, 4, 3), torch.ones(5, 1, 3)),
    "broadcast_tensors_three": lambda torch, F, x, y: torch.broadcast_tensors(
        torch.ones(1, 3), torch.ones(4, 1), torch.ones(2, 3)),
}


@pytest.mark.parametrize("case", OTHER_CASES)
def test_other_loss_checks_as_torch(case):
    def body(torch):
        x, y = _pair(torch)
        return OTHER_CASES[case](torch, torch.nn.functional, x, y)
    same(body)


@pytest.mark.parametrize("name", ["l1_loss", "mse_loss", "huber_loss"])
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("wdtype", ["float32", "float64", "long"])
def test_weighted_pointwise_losses_as_torch(name, reduction, wdtype):
    """l1_loss, mse_loss and huber_loss multiply each term by ``weight`` (the mean of l1 and
    mse divided by the weights' sum, huber's by the number of terms)."""
    def body(torch):
        x, y = _pair(torch)
        x.requires_grad_()
        w = (torch.rand(4, 3) * 3).to(getattr(torch, wdtype))
        out = getattr(torch.nn.functional, name)(x, y, reduction=reduction, weight=w)
        return out, torch.autograd.grad(out.sum(), x)[0]
    same(body)


@pytest.mark.parametrize("name", ["l1_loss", "mse_loss", "huber_loss"])
def test_weight_of_another_size_is_refused(name):
    def body(torch):
        x, y = _pair(torch)
        return getattr(torch.nn.functional, name)(x, y, weight=torch.ones(3))
    same(body)


@pytest.mark.parametrize("dtypes", [("float64", "float32"), ("float32", "float64")])
def test_bce_with_logits_computes_in_the_targets_dtype(dtypes):
    """torch's composite multiplies into (1 - target) in place: the loss has the target's
    dtype, each gradient its own tensor's."""
    def body(torch):
        x, y = _pair(torch)
        x = x.to(getattr(torch, dtypes[0])).requires_grad_()
        y = y.to(getattr(torch, dtypes[1])).requires_grad_()
        out = torch.nn.functional.binary_cross_entropy_with_logits(
            x, y, pos_weight=torch.full((3,), 2.0))
        return out, torch.autograd.grad(out, (x, y))
    same(body, grad_fn=False)


# Operands of mixed dtypes: (loss, input's dtype, target's dtype, which require grad, kwargs).
# torch's huber kernel writes the input's dtype and its backward refuses a target of another
# dtype; integer inputs keep their dtype where torch's formulas do (a mean of them raises).
MIXED_DTYPE_CASES = {
    "huber_f32_f64_input_grad": ("huber_loss", "float32", "float64", "x", {}),
    "huber_f32_f64_target_grad": ("huber_loss", "float32", "float64", "t", {}),
    "huber_f64_f32_both_grad": ("huber_loss", "float64", "float32", "xt", {}),
    "huber_f16_f32_input_grad": ("huber_loss", "float16", "float32", "x", {}),
    "huber_f32_long_target": ("huber_loss", "float32", "int64", "x", {}),
    "huber_f32_bool_target": ("huber_loss", "float32", "bool", "x", {}),
    "huber_long_input_f64_target": ("huber_loss", "int64", "float64", "", {}),
    "huber_bool_input_long_target": ("huber_loss", "bool", "int64", "", {}),
    "huber_same_dtype_both_grad": ("huber_loss", "float64", "float64", "xt", {}),
    "mse_f32_f64_both_grad": ("mse_loss", "float32", "float64", "xt", {}),
    "l1_f64_f32_both_grad": ("l1_loss", "float64", "float32", "xt", {}),
    "smooth_l1_f32_f64_both_grad": ("smooth_l1_loss", "float32", "float64", "xt", {}),
    "bce_f32_f64_input_grad": ("binary_cross_entropy", "float32", "float64", "x", {}),
    "kl_div_f32_f64_both_grad": ("kl_div", "float32", "float64", "xt", {}),
    "poisson_nll_f32_f64_both_grad": ("poisson_nll_loss", "float32", "float64", "xt", {}),
    "soft_margin_f32_f64_input_grad": ("soft_margin_loss", "float32", "float64", "x", {}),
    "soft_margin_target_grad": ("soft_margin_loss", "float32", "float32", "t", {}),
    "soft_margin_long_input_target_grad": ("soft_margin_loss", "int64", "float32", "t", {}),
    "soft_margin_bool_target": ("soft_margin_loss", "float64", "bool", "x", {}),
    "soft_margin_long_input_f64_target": ("soft_margin_loss", "int64", "float64", "", {}),
    "soft_margin_bool_input_f32_target": ("soft_margin_loss", "bool", "float32", "", {}),
    "hinge_long_input_mean": ("hinge_embedding_loss", "int64", "float32", "", {}),
    "hinge_long_input_sum": ("hinge_embedding_loss", "int64", "int64", "",
                             {"reduction": "sum"}),
    "hinge_long_input_half_margin": ("hinge_embedding_loss", "int64", "int64", "",
                                     {"reduction": "none", "margin": 2.5}),
    "hinge_bool_input": ("hinge_embedding_loss", "bool", "float32", "", {}),
    "hinge_f32_f64_both_grad": ("hinge_embedding_loss", "float32", "float64", "xt", {}),
    "triplet_long": ("triplet_margin_loss", "int64", "int64", "", {}),
    "triplet_long_none": ("triplet_margin_loss", "int64", "int64", "", {"reduction": "none"}),
    "margin_ranking_bool_second": ("margin_ranking_loss", "float32", "bool", "x", {}),
    "margin_ranking_two_bools": ("margin_ranking_loss", "bool", "bool", "", {}),
}


def _operand(torch, dtype, requires_grad, values):
    if dtype == "bool":
        values = [[v > 0.3 for v in row] for row in values]
    elif dtype == "int64":
        values = [[round(v) for v in row] for row in values]
    return torch.tensor(values, dtype=getattr(torch, dtype), requires_grad=requires_grad)


def _call_mixed(torch, loss, x, t, kwargs):
    F = torch.nn.functional
    if loss in ("triplet_margin_loss", "margin_ranking_loss"):  # (the target twice)
        return getattr(F, loss)(x, t, t, **kwargs)
    return getattr(F, loss)(x, t, **kwargs)


@pytest.mark.parametrize("case", list(MIXED_DTYPE_CASES))
def test_mixed_dtype_losses_forward_and_backward_as_torch(case):
    """The value and dtype of the forward, then what ``backward()`` gives or raises (a
    backward's error is returned, so a forward that raises where torch's backward does fails)."""
    loss, x_dtype, t_dtype, grads, kwargs = MIXED_DTYPE_CASES[case]

    def body(torch):
        x = _operand(torch, x_dtype, "x" in grads, [[0.25, 0.75, 0.5], [0.5, 0.125, 1.0]])
        t = _operand(torch, t_dtype, "t" in grads, [[0.5, 0.25, 1.0], [0.75, 0.5, 0.0]])
        out = _call_mixed(torch, loss, x, t, kwargs)
        if not out.requires_grad:
            return out
        try:
            out.backward()
        except Exception as e:  # noqa: BLE001 - the backward's error is what is compared
            return out.detach(), ("backward", type(e).__name__, str(e))
        return out.detach(), x.grad, t.grad
    same(body)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_soft_margin_overflows_as_torch(dtype):
    """torch computes exp(-y * x) then log1p: a large -y * x gives inf and a nan gradient."""
    def body(torch):
        x = torch.tensor([-100.0, -1000.0, 30.0, 1e-9], dtype=getattr(torch, dtype),
                         requires_grad=True)
        loss = torch.nn.functional.soft_margin_loss(x, torch.ones(4, dtype=x.dtype),
                                                    reduction="none")
        loss.sum().backward()
        return loss.detach(), x.grad
    same(body)
