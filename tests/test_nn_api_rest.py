"""AdaptiveLogSoftmaxWithLoss, CrossMapLRN2d, linear_cross_entropy / LinearCrossEntropyLoss
against torch 2.13: values, gradients, node names, reprs and errors."""
import numpy as np
import pytest
from oracle import same

RNG = np.random.default_rng(0)
X = RNG.standard_normal((6, 8))
W = RNG.standard_normal((5, 8))
B = RNG.standard_normal(5)
T = np.array([0, 4, 2, 2, 1, 3])
IMG = RNG.standard_normal((2, 7, 3, 3))
W3 = RNG.standard_normal((5, 3, 8))
T3 = RNG.integers(0, 5, (6, 3))


def _copy_params(module, arrays, torch):
    with torch.no_grad():
        for p, a in zip(module.parameters(), arrays):
            p.copy_(torch.tensor(a))


def _asm_body(torch, target, cutoffs=(2, 5)):
    asm = torch.nn.AdaptiveLogSoftmaxWithLoss(8, 9, list(cutoffs), div_value=2.0,
                                              head_bias=True).double()
    _copy_params(asm, [np.sin(np.arange(p.numel()) + k).reshape(tuple(p.shape))
                       for k, p in enumerate(asm.parameters())], torch)
    x = torch.tensor(X, requires_grad=True)
    out, loss = asm(x, torch.tensor(target))
    loss.backward()
    grads = [p.grad for p in asm.parameters()]
    return (out, loss, x.grad, grads, asm.log_prob(x), asm.predict(x), repr(asm),
            asm.predict(x[:1] * 0))


@pytest.mark.parametrize("target", [[0, 8, 3, 5, 1, 6], [0, 1, 1, 0, 1, 0], [7, 8, 5, 6, 7, 8]])
def test_adaptive_log_softmax(target):
    same(lambda torch: _asm_body(torch, np.array(target)), rtol=1e-10, atol=1e-12)


def test_adaptive_log_softmax_unbatched():
    def body(torch):
        asm = torch.nn.AdaptiveLogSoftmaxWithLoss(8, 6, [3], head_bias=False).double()
        _copy_params(asm, [np.cos(np.arange(p.numel()) * 0.3 + k).reshape(tuple(p.shape))
                           for k, p in enumerate(asm.parameters())], torch)
        return asm(torch.tensor(X[0]), torch.tensor(4))
    same(body, rtol=1e-10, atol=1e-12)


ASM_ERRORS = {
    "empty_cutoffs": lambda t: t.nn.AdaptiveLogSoftmaxWithLoss(4, 6, []),
    "unsorted": lambda t: t.nn.AdaptiveLogSoftmaxWithLoss(4, 6, [3, 2]),
    "too_big": lambda t: t.nn.AdaptiveLogSoftmaxWithLoss(4, 6, [6]),
    "target_range": lambda t: t.nn.AdaptiveLogSoftmaxWithLoss(4, 6, [3])(
        t.ones(2, 4), t.tensor([1, 6])),
    "batch": lambda t: t.nn.AdaptiveLogSoftmaxWithLoss(4, 6, [3])(t.ones(3, 4), t.tensor([1, 2])),
    "target_2d": lambda t: t.nn.AdaptiveLogSoftmaxWithLoss(4, 6, [3])(
        t.ones(2, 4), t.zeros(2, 1, dtype=t.long)),
    "input_3d": lambda t: t.nn.AdaptiveLogSoftmaxWithLoss(4, 6, [3])(
        t.ones(2, 1, 4), t.tensor([1, 2])),
    "unbatched_2d": lambda t: t.nn.AdaptiveLogSoftmaxWithLoss(4, 6, [3])(t.ones(2, 4),
                                                                         t.tensor(1)),
}


@pytest.mark.parametrize("case", list(ASM_ERRORS))
def test_adaptive_log_softmax_errors(case):
    same(lambda torch: ASM_ERRORS[case](torch))


@pytest.mark.parametrize("size", [1, 2, 3, 4, 5, 9])
def test_cross_map_lrn2d(size):
    def body(torch):
        x = torch.tensor(IMG, requires_grad=True)
        module = torch.nn.CrossMapLRN2d(size, alpha=0.3, beta=0.8, k=1.5)
        y = module(x)
        y.backward(torch.tensor(np.cos(IMG)))
        return y, x.grad, repr(module)
    same(body, rtol=1e-12, atol=1e-14)


def test_cross_map_lrn2d_float32_and_errors():
    def body(torch):
        y = torch.nn.CrossMapLRN2d(3)(torch.tensor(IMG, dtype=torch.float32))
        return y, repr(torch.nn.CrossMapLRN2d(2))
    same(body, rtol=1e-5, atol=1e-6)
    same(lambda torch: torch.nn.CrossMapLRN2d(3)(torch.ones(2, 3, 4)))


LCE_CASES = {
    "mean": dict(),
    "bias_sum": dict(linear_bias=True, reduction="sum"),
    "none_ignore": dict(reduction="none", ignore_index=2),
    "weight_smooth": dict(weight=True, label_smoothing=0.2),
    "chunked_mean": dict(options=dict(batch_chunk_size=4), weight=True, ignore_index=2),
    "chunked_sum": dict(options=dict(batch_chunk_size=5), linear_bias=True, reduction="sum"),
    "chunked_none": dict(options=dict(chunking_method="aspect_ratio"), reduction="none"),
    "chunked_fallback": dict(options=dict(), label_smoothing=0.1),
}


def _lce_args(torch, case):
    kw = dict(LCE_CASES[case])
    if kw.pop("linear_bias", False):
        kw["linear_bias"] = torch.tensor(B, requires_grad=True)
    if kw.pop("weight", False):
        kw["weight"] = torch.tensor(np.linspace(0.5, 2.0, 5))
    if "options" in kw:
        kw["options"] = torch.nn.LinearCrossEntropyOptions(**kw["options"])
    return kw


@pytest.mark.parametrize("case", list(LCE_CASES))
def test_linear_cross_entropy(case):
    def body(torch):
        x, w = torch.tensor(X, requires_grad=True), torch.tensor(W, requires_grad=True)
        kw = _lce_args(torch, case)
        loss = torch.nn.functional.linear_cross_entropy(x, w, torch.tensor(T), **kw)
        loss.sum().backward()
        bias = kw.get("linear_bias")
        return loss.detach(), x.grad, w.grad, None if bias is None else bias.grad
    same(body, rtol=1e-10, atol=1e-12)


def test_linear_cross_entropy_k_dim_and_probabilities():
    def body(torch):
        x = torch.tensor(X, requires_grad=True)
        w = torch.tensor(W3, requires_grad=True)
        target = torch.tensor(T3)
        k_dim = torch.nn.functional.linear_cross_entropy(x, w, target)
        probs = torch.tensor(np.full((6, 5), 0.2))
        soft = torch.nn.functional.linear_cross_entropy(x, torch.tensor(W), probs)
        unbatched = torch.nn.functional.linear_cross_entropy(x[0], torch.tensor(W),
                                                             torch.tensor(3))
        (k_dim + soft).backward()
        return k_dim, soft, unbatched.detach(), x.grad, w.grad
    same(body, rtol=1e-10, atol=1e-12)


def test_linear_cross_entropy_loss_module():
    def body(torch):
        torch.manual_seed(0)
        module = torch.nn.LinearCrossEntropyLoss(8, 5, out_features=(2,), bias=True,
                                                 dtype=torch.float64, ignore_index=1)
        loss = module(torch.tensor(X), torch.tensor(T[:, None].repeat(2, 1) % 5))
        loss.backward()
        return (loss, module.linear.weight.grad, repr(module),
                repr(torch.nn.LinearCrossEntropyOptions(batch_chunk_size=2)))
    same(body, rtol=1e-10, atol=1e-12)


LCE_ERRORS = {
    "input_3d": lambda t, F: F.linear_cross_entropy(t.ones(1, 2, 3), t.ones(4, 3),
                                                    t.zeros(1, dtype=t.long)),
    "weight_1d": lambda t, F: F.linear_cross_entropy(t.ones(2, 3), t.ones(3),
                                                     t.zeros(2, dtype=t.long)),
    "features": lambda t, F: F.linear_cross_entropy(t.ones(2, 3), t.ones(4, 5),
                                                    t.zeros(2, dtype=t.long)),
    "bias": lambda t, F: F.linear_cross_entropy(t.ones(2, 3), t.ones(4, 3),
                                                t.zeros(2, dtype=t.long), linear_bias=t.ones(3)),
    "k_dim_unbatched": lambda t, F: F.linear_cross_entropy(t.ones(3), t.ones(4, 2, 3),
                                                           t.zeros(2, dtype=t.long)),
    "probs_ignore": lambda t, F: F.linear_cross_entropy(t.ones(2, 3), t.ones(4, 3),
                                                        t.ones(2, 4), ignore_index=1),
    "policy": lambda t, F: t.nn.LinearCrossEntropyOptions(acc_policy="fast"),
    "method": lambda t, F: t.nn.LinearCrossEntropyOptions(chunking_method="aspect_ratio:0"),
    "chunk": lambda t, F: t.nn.LinearCrossEntropyOptions(batch_chunk_size=0),
    "acc_dtype": lambda t, F: t.nn.LinearCrossEntropyOptions(acc_dtype=t.int32),
    "conflict": lambda t, F: F.linear_cross_entropy(
        t.ones(8, 3), t.ones(4, 3), t.zeros(8, dtype=t.long),
        options=t.nn.LinearCrossEntropyOptions(batch_chunk_size=3,
                                               chunking_method="aspect_ratio")),
    "module_weight": lambda t, F: t.nn.LinearCrossEntropyLoss(3, 4, weight=t.ones(3)),
    "module_smoothing": lambda t, F: t.nn.LinearCrossEntropyLoss(3, 4, label_smoothing=2.0),
}


@pytest.mark.parametrize("case", list(LCE_ERRORS))
def test_linear_cross_entropy_errors(case):
    same(lambda torch: LCE_ERRORS[case](torch, torch.nn.functional))


TBC_ERRORS = {
    "bias_2d": lambda t: t.conv_tbc(t.ones(5, 2, 3), t.ones(2, 3, 4), t.ones(1, 4)),
    "input_2d": lambda t: t.conv_tbc(t.ones(2, 3), t.ones(2, 3, 4), t.ones(4)),
    "weight_2d": lambda t: t.conv_tbc(t.ones(5, 2, 3), t.ones(3, 4), t.ones(4)),
    "channels": lambda t: t.conv_tbc(t.ones(5, 2, 3), t.ones(2, 2, 4), t.ones(4)),
    "bias_size": lambda t: t.conv_tbc(t.ones(5, 2, 3), t.ones(2, 3, 4), t.ones(3)),
    "too_short": lambda t: t.conv_tbc(t.ones(5, 2, 3), t.ones(7, 3, 4), t.ones(4)),
    "dtypes": lambda t: t.conv_tbc(t.ones(5, 2, 3), t.ones(2, 3, 4, dtype=t.double),
                                   t.ones(4, dtype=t.double)),
}


@pytest.mark.parametrize("case", list(TBC_ERRORS))
def test_conv_tbc_errors(case):
    same(lambda torch: TBC_ERRORS[case](torch))


def _ir(t, **kw):
    base = dict(input=t.arange(12.).reshape(3, 4), dim=0, index=t.tensor([0, 2]),
                source=t.arange(8.).reshape(2, 4) + 1, reduce="prod")
    base.update(kw)
    return t.index_reduce(**base)


INDEX_REDUCE_CASES = {
    "sum": lambda t: _ir(t, reduce="sum"),
    "float_index": lambda t: _ir(t, index=t.tensor([0.0, 2.0])),
    "index_2d": lambda t: _ir(t, index=t.tensor([[0, 2]])),
    "index_length": lambda t: _ir(t, index=t.tensor([0])),
    "source_shape": lambda t: _ir(t, source=t.ones(2, 3)),
    "source_ndim": lambda t: _ir(t, source=t.ones(2, 4, 1)),
    "out_of_range": lambda t: _ir(t, index=t.tensor([0, 3])),
    "negative": lambda t: _ir(t, index=t.tensor([0, -1])),
    "dtypes": lambda t: _ir(t, source=t.ones(2, 4, dtype=t.double)),
    "dim": lambda t: _ir(t, dim=2),
    "int_mean": lambda t: _ir(t, input=t.arange(12).reshape(3, 4), index=t.tensor([0, 0]),
                              source=t.arange(8).reshape(2, 4) + 1, reduce="mean"),
    "nan_amax": lambda t: _ir(t, index=t.tensor([0, 0]), reduce="amax",
                              source=t.tensor([[float("nan"), 1, 2, 3], [1, float("nan"), 2, 3]])),
    "bool_amax": lambda t: _ir(t, input=t.ones(3, 4, dtype=t.bool), reduce="amax",
                               source=t.zeros(2, 4, dtype=t.bool)),
    "zero_dim": lambda t: _ir(t, input=t.tensor(2.0), index=t.tensor([0]), source=t.tensor(3.0)),
    "inplace": lambda t: t.ones(3, 4).index_reduce_(1, t.tensor([1, 1, 3]), t.ones(3, 3) * 2,
                                                    "amin", include_self=False),
}


@pytest.mark.parametrize("case", list(INDEX_REDUCE_CASES))
def test_index_reduce_values_and_errors(case):
    same(lambda torch: INDEX_REDUCE_CASES[case](torch), check_warnings=False)


_SEG = np.array([1.0, 3.0, 3.0, 0.0, 2.0, 0.0, 0.0, 5.0])


def _seg(t, reduce="sum", **kw):
    base = dict(lengths=t.tensor([3, 2, 2, 1]))
    base.update(kw)
    return t.segment_reduce(t.tensor(_SEG, requires_grad=True), reduce, **base)


SEGMENT_CASES = {
    "no_lengths": lambda t: t.segment_reduce(t.ones(3), "sum"),
    "reduce": lambda t: _seg(t, "avg"),
    "total": lambda t: _seg(t, lengths=t.tensor([2, 2])),
    "negative": lambda t: _seg(t, lengths=t.tensor([9, -1])),
    "indices": lambda t: _seg(t, lengths=None, indices=t.tensor([0, 0, 1])),
    "int_data": lambda t: t.segment_reduce(t.arange(8), "sum", lengths=t.tensor([3, 2, 2, 1])),
    "float_lengths": lambda t: _seg(t, lengths=t.tensor([3.0, 2.0, 2.0, 1.0])),
    "axis": lambda t: t.segment_reduce(t.ones(2, 3), "sum", lengths=t.tensor([1, 2]), axis=1),
    "offsets_win": lambda t: _seg(t, offsets=t.tensor([0, 8])),
    "unsafe": lambda t: _seg(t, lengths=t.tensor([2, 2]), unsafe=True),
    "half": lambda t: t.segment_reduce(t.tensor(_SEG, dtype=t.half), "max",
                                       lengths=t.tensor([3, 2, 2, 1])),
}


@pytest.mark.parametrize("case", list(SEGMENT_CASES))
def test_segment_reduce_errors(case):
    same(lambda torch: SEGMENT_CASES[case](torch))


@pytest.mark.parametrize("reduce", ["max", "min", "prod", "mean"])
def test_segment_reduce_gradients(reduce):
    """Ties (split only where the gradient is positive, as torch's kernel), zeros in products,
    and the missing second derivative."""
    def body(torch):
        data = torch.tensor(_SEG, requires_grad=True)
        out = torch.segment_reduce(data, reduce, lengths=torch.tensor([3, 2, 2, 1]))
        weights = torch.tensor(np.cos(np.arange(4.0) + 1))
        grad, = torch.autograd.grad((out * weights).sum(), data, create_graph=True)
        try:
            torch.autograd.grad(grad.sum(), data)
        except RuntimeError as e:
            return out, grad.detach(), str(e)
        return out, grad.detach()
    same(body, rtol=1e-12, atol=1e-12)


def test_index_reduce_and_index_add_write_out():
    def body(torch):
        src = torch.ones(1, 4) * 2
        out_reduce, out_add = torch.zeros(3, 4), torch.zeros(3, 4)
        r = torch.index_reduce(torch.ones(3, 4), 0, torch.tensor([0]), src, "prod",
                               out=out_reduce)
        a = torch.index_add(torch.ones(3, 4), 0, torch.tensor([2]), src, out=out_add)
        return out_reduce, out_add, r is out_reduce, a is out_add
    same(body, check_warnings=False)
