"""Op values and errors where ember differed from torch without a word: NaN and infinity in
forward passes, integer wrap-around, dtype mixes torch refuses, negative indices and sizes,
integer tensors written from tensors that require grad, save/load of views, threads.

Each body runs on PyTorch 2.13 and on ember (``oracle.same``); the tests skip when torch is not
installed (the thread test needs no torch: torch's answer is the exact sum).
"""
from __future__ import annotations

import io
import itertools
import threading

import pytest
from oracle import same

import ember

NAN, INF = float("nan"), float("inf")


# -- NaN and infinities in forward passes -------------------------------------------------------
_SPECIAL = [NAN, INF, -INF, 0., -0., 0.1, 2., -3.]

_NAN_FORWARD = {
    "sign": lambda t, x: t.sign(x),
    "sgn": lambda t, x: t.sgn(x),
    "sign_": lambda t, x: x.clone().sign_(),
    "softshrink": lambda t, x: t.nn.functional.softshrink(x, 0.5),
    "hardshrink": lambda t, x: t.nn.functional.hardshrink(x, 0.5),
    "threshold": lambda t, x: t.nn.functional.threshold(x, 0.1, 20.),
    "threshold_": lambda t, x: t.nn.functional.threshold(x.clone(), 0.1, 20., inplace=True),
    "logsigmoid": lambda t, x: t.nn.functional.logsigmoid(x),
}


@pytest.mark.parametrize("name", sorted(_NAN_FORWARD))
def test_nan_and_infinity_forward(name):
    same(lambda t: _NAN_FORWARD[name](t, t.tensor(_SPECIAL)))


@pytest.mark.parametrize("data, low, high", [
    ([INF, 0.5], 0, 0), ([0.5, -INF], 0, 0), ([NAN, 1.], 0, 0), ([1., 2.5], 0, 0),
    ([1.], 0, INF), ([1.], -INF, 1), ([1.], 0.5, 1.25)])
def test_histc_of_a_range_that_is_not_finite(data, low, high):
    same(lambda t: t.histc(t.tensor(data), 4, low, high))


@pytest.mark.parametrize("args", [(0, 0, 0), (4, 2, 1)])
def test_histc_refusals(args):
    same(lambda t: t.histc(t.ones(2), *args))


@pytest.mark.parametrize("fn", ["softmax", "log_softmax", "softmin"])
def test_softmax_family_of_nan_and_infinities(fn):
    def body(t):
        f = getattr(t.nn.functional, fn)
        out = []
        for v in (NAN, INF, -INF, 2.):
            out += [f(t.tensor(v), 0), f(t.tensor([v]), 0), f(t.tensor([v, 1.]), 0),
                    f(t.tensor([[v, 1.], [0., 1.]]), 1)]
        return out
    same(body)


@pytest.mark.parametrize("fn", ["softmax", "log_softmax"])
@pytest.mark.parametrize("shape", [(64, 10), (2, 16, 3), (40, 32)])
def test_softmax_family_over_a_short_last_dim_of_many_rows(fn, shape):
    """The rows' maxima come from a transposed copy there (a faster reduction): the same
    values, NaN, infinities and signed zeros included, and the same gradients."""
    def body(t):
        g = t.Generator().manual_seed(0)
        x = t.randn(shape, generator=g)
        x[0, 0], x[1, 1], x[2, 2], x[3, 0] = NAN, INF, -INF, -0.
        x[4] = 0.
        x = x.requires_grad_()
        y = getattr(t.nn.functional, fn)(x, -1)
        (y.nan_to_num(0., 0., 0.) * t.linspace(-1, 1, shape[-1])).sum().backward()
        return y, x.grad
    same(body)


def test_softmax_of_a_0d_tensor_has_a_gradient():
    def body(t):
        x = t.tensor(0.5, requires_grad=True)
        (t.softmax(x, 0) * 3 + t.log_softmax(x, 0)).backward()
        return x.grad
    same(body)


# -- integers -----------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ["int8", "uint8", "int16", "int32", "int64"])
def test_python_ints_wrap_around_in_integer_ops(dtype):
    def body(t):
        x = t.tensor([1, 2, 100], dtype=getattr(t, dtype))
        out = [x + 200, x * 300, x - 1000, x == 200, x < 200, x.add(2**31), x + (2**63 - 1),
               x + 2**63, x.clone().add_(200), x.clone().mul_(-3)]
        try:
            x + 2**64
        except OverflowError as e:
            out.append(str(e))
        return out
    same(body)


def test_integer_tensor_written_from_a_tensor_requiring_grad_stays_plain():
    def body(t):
        w = t.tensor([5., 7.], requires_grad=True)
        a = t.tensor([1, 2, 3])
        a[0:1] = w[:1]
        b = t.tensor([1, 2, 3])
        b[1:].copy_(w)
        c = t.zeros(2, dtype=t.int32)
        c.copy_(w * 2)
        return a, b, b[1:], c
    same(body)


# -- refusals -----------------------------------------------------------------------------------
_MASK_KEYS = {  # (a key of t, T, F; its mask or index does not fit, or the value does not)
    "int_then_mask": lambda t, T, F: (0, t.tensor([T, F, T, F])),
    "mask_first": lambda t, T, F: (t.tensor([T, F, T]),),
    "ellipsis_mask": lambda t, T, F: (Ellipsis, t.tensor([T, F, T])),
    "slice_then_2d_mask": lambda t, T, F: (slice(1, None), t.tensor([[T, F, T, F]] * 2)),
    "index_then_mask": lambda t, T, F: (t.tensor([0, 1]), t.tensor([T, F])),
    "none_then_mask": lambda t, T, F: (Ellipsis, None, t.tensor([T, F])),
    "fitting_mask": lambda t, T, F: (Ellipsis, t.tensor([T, F, T, F])),
    "fitting_index": lambda t, T, F: (slice(None), t.tensor([0, 1])),
}


@pytest.mark.parametrize("name", sorted(_MASK_KEYS))
@pytest.mark.parametrize("write", ["read", "number", "tensor", "index_put"])
def test_advanced_index_refusals(name, write):
    def body(t):
        x = t.zeros(2, 3, 4)
        key = _MASK_KEYS[name](t, True, False)
        if write == "read":
            return x[key]
        if write == "number":
            x[key] = 1.0
        elif write == "tensor":  # (five values never fit what these keys pick)
            x[key] = t.ones(5)
        else:
            return x.index_put(tuple(k for k in key if isinstance(k, t.Tensor)), t.ones(5))
        return x
    same(body)


@pytest.mark.parametrize("index", [[-1], [0, -3], [3]])
def test_embedding_refuses_negative_and_large_indices(index):
    def body(t):
        w = t.ones(3, 2)
        out = []
        for f in (lambda i: t.nn.functional.embedding(i, w),
                  lambda i: t.nn.Embedding.from_pretrained(w)(i)):
            try:
                out.append(f(t.tensor(index)))
            except IndexError as e:
                out.append(str(e))
        return out
    same(body)


@pytest.mark.parametrize("case", ["scalar", "tensor_mean", "tensor_std", "both", "nan"])
def test_normal_refuses_negative_std(case):
    def body(t):
        if case == "scalar":
            return t.normal(0., -1., (2,))
        if case == "tensor_mean":
            return t.normal(t.zeros(2), -0.5)
        if case == "tensor_std":
            return t.normal(0., t.tensor([1., -1.]))
        if case == "both":
            return t.normal(t.zeros(2), t.tensor([1., -1.]))
        return t.normal(0., NAN, (2,))
    same(body)


@pytest.mark.parametrize("n", [-1, -5])
def test_randperm_of_a_negative_size(n):
    same(lambda t: t.randperm(n))


def _mixed(shapes, fn):
    def make(t, dtypes):
        return fn(t, *[t.ones(s, dtype=getattr(t, d)) for s, d in zip(shapes, dtypes)])
    return make


_MATMUL_FAMILY = {
    "addmm": _mixed([(2, 2), (2, 2), (2, 2)], lambda t, a, b, c: t.addmm(a, b, c)),
    "addmm_": _mixed([(2, 2), (2, 2), (2, 2)], lambda t, a, b, c: a.addmm_(b, c)),
    "addmv": _mixed([(2,), (2, 2), (2,)], lambda t, a, b, c: t.addmv(a, b, c)),
    "addmv_": _mixed([(2,), (2, 2), (2,)], lambda t, a, b, c: a.addmv_(b, c)),
    "addbmm": _mixed([(2, 2), (1, 2, 2), (1, 2, 2)], lambda t, a, b, c: t.addbmm(a, b, c)),
    "baddbmm": _mixed([(1, 2, 2)] * 3, lambda t, a, b, c: t.baddbmm(a, b, c)),
    "baddbmm_": _mixed([(1, 2, 2)] * 3, lambda t, a, b, c: a.baddbmm_(b, c)),
    "linear": _mixed([(2, 2), (2, 2), (2,)], lambda t, a, b, c: t.nn.functional.linear(a, b, c)),
    "bilinear": _mixed([(2, 2), (2, 2), (1, 2, 2)],
                       lambda t, a, b, c: t.nn.functional.bilinear(a, b, c)),
    "multi_dot": _mixed([(2, 2)] * 3, lambda t, a, b, c: t.linalg.multi_dot([a, b, c])),
    "einsum_chain": _mixed([(2, 2)] * 3, lambda t, a, b, c: t.einsum("ij,jk,kl->il", a, b, c)),
    "einsum_product": _mixed([(2,), (2,), (2,)],
                             lambda t, a, b, c: t.einsum("i,i,i->i", a, b, c)),
    "conv2d": _mixed([(1, 1, 3, 3), (1, 1, 2, 2), (1,)],
                     lambda t, a, b, c: t.nn.functional.conv2d(a, b, c)),
    "tensordot": _mixed([(2, 2), (2, 2), ()], lambda t, a, b, c: t.tensordot(a, b)),
    "inner": _mixed([(2,), (2,), ()], lambda t, a, b, c: t.inner(a, b)),
}


@pytest.mark.parametrize("name", sorted(_MATMUL_FAMILY))
def test_matrix_products_refuse_mixed_float_dtypes(name):
    def body(t):
        out = []
        for dtypes in itertools.product(["float32", "float64"], repeat=3):
            try:
                out.append(_MATMUL_FAMILY[name](t, dtypes))
            except RuntimeError as e:
                out.append(str(e))
        return out
    same(body)


# -- empty tensors ------------------------------------------------------------------------------
def test_chunk_of_an_empty_dimension():
    def body(t):
        return (t.zeros(0, 3).chunk(2, 0), t.zeros(0, 3).chunk(3), t.zeros(3, 0).chunk(2, 1),
                t.zeros(5, 3).chunk(2, 0))
    same(body)


# -- save and load keep shared memory -----------------------------------------------------------
def test_load_keeps_views_sharing_memory_with_their_base():
    def body(t):
        x = t.arange(6.)
        saved = {"v": x[2:4], "x": x, "w": x.view(2, 3).t(), "e": t.ones(3)[:, None].expand(3, 4),
                 "z": t.zeros(0, 2), "y": (x * 1).requires_grad_()}
        buf = io.BytesIO()
        t.save(saved, buf)
        buf.seek(0)
        d = t.load(buf)
        d["v"].mul_(10)
        return (d["x"], d["w"], d["v"].storage_offset(), d["w"].stride(), d["e"].stride(),
                d["z"], d["y"], d["w"].is_contiguous())
    same(body)


# -- threads ------------------------------------------------------------------------------------
def test_two_threads_backpropagating_into_one_leaf_lose_nothing():
    x = ember.zeros(200_000, requires_grad=True)

    def work():
        for _ in range(60):
            (x * 1.0).sum().backward()
    threads = [threading.Thread(target=work) for _ in range(2)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert int((x.grad.numpy() != 120).sum()) == 0


def test_matrix_transposes_of_a_0d_tensor_and_permute_without_dims():
    def body(t):
        x = t.tensor(2., requires_grad=True)
        out = [x.mT, x.mH, x.adjoint(), x.mT is x]
        for f in (lambda: t.ones(2).permute(), lambda: t.ones(2, 3).permute(),
                  lambda: t.ones(2).mT):
            try:
                out.append(f())
            except (TypeError, RuntimeError) as e:
                out.append((type(e).__name__, str(e)))
        return out
    same(body, check_warnings=False)  # (torch and ember warn once per process)


def test_cat_skips_legacy_empty_tensors():
    def body(t):
        x = t.zeros(0, requires_grad=True)
        y = t.ones(2, 3, requires_grad=True)
        z = t.cat([x, y, t.zeros(0, dtype=t.float64)])
        z.sum().backward()
        out = [z, x.grad, y.grad, t.cat([t.ones(2, 3), t.tensor([])], 1),
               t.cat([t.tensor([]), t.tensor([])])]
        for bad in ([t.zeros(0, 0), t.ones(2, 3)], [t.tensor(1.), t.zeros(0)]):
            try:
                t.cat(bad)
            except RuntimeError as e:
                out.append(str(e))
        return out
    same(body)


def test_empty_index_and_empty_batch_ops():
    def body(t):
        long = t.long
        x = t.ones(2, 3, requires_grad=True)
        w, b = t.ones(4, requires_grad=True), t.ones(4, requires_grad=True)
        e = t.ones(0, 4, 3, requires_grad=True)
        gn = t.nn.functional.group_norm(e, 2, w, b)
        gn.sum().backward()
        return (t.gather(x, 1, t.zeros(2, 0, dtype=long)),
                x.scatter(1, t.zeros(2, 0, dtype=long), 5.),
                x.scatter_add(1, t.zeros(2, 0, dtype=long), t.ones(2, 0)),
                t.ones(3).scatter(0, t.tensor([], dtype=long), t.tensor([])),
                gn, e.grad, w.grad, b.grad,
                t.nn.GroupNorm(2, 4)(t.ones(0, 4, 3)),
                t.nn.functional.group_norm(t.ones(2, 4, 0), 2),
                t.nn.functional.instance_norm(t.ones(0, 3, 2)))
    same(body)


# -- ties: selection ops pick the index torch picks ---------------------------------------------
def _tie_rows(t):
    """Rows full of equal values (and NaNs), short (insertion sort) and long (introsort, with
    NumPy partitions above 256 elements)."""
    import numpy as np
    rng = np.random.default_rng(7)
    out = {"short": [1., 2., 2., 1., 2., 1.], "same": [3.] * 20,
           "nan": [1., float("nan"), 2., float("nan"), 0., 2.] * 4,
           "mid": rng.integers(0, 3, 40).astype(float).tolist(),
           "long": rng.integers(0, 4, 700).astype(float).tolist()}
    return {k: t.tensor(v) for k, v in out.items()}


_SELECTIONS = {
    "sort": lambda x: tuple(x.sort()),
    "sort_descending": lambda x: tuple(x.sort(descending=True)),
    "sort_stable": lambda x: tuple(x.sort(stable=True, descending=True)),
    "argsort": lambda x: x.argsort(),
    "msort_2d": lambda x: x.reshape(-1, 2).msort(),
    "sort_dim0": lambda x: tuple(x.reshape(-1, 2).sort(0)),
    "topk": lambda x: [tuple(x.topk(k)) for k in (1, 2, 3, x.numel() // 3)],
    "topk_smallest": lambda x: [tuple(x.topk(k, largest=False)) for k in (1, 2, x.numel())],
    "topk_unsorted": lambda x: [tuple(x.topk(k, sorted=False)) for k in (2, x.numel() // 2)],
    "kthvalue": lambda x: [tuple(x.kthvalue(k)) for k in (1, 2, x.numel() // 2, x.numel())],
    "mode": lambda x: tuple(x.mode()),
    "mode_rows": lambda x: tuple(x.reshape(2, -1).mode(1)),
    "median": lambda x: tuple(x.reshape(2, -1).median(1)),
}


@pytest.mark.parametrize("name", sorted(_SELECTIONS))
def test_ties_pick_torch_indices(name):
    same(lambda t: {k: _SELECTIONS[name](x) for k, x in _tie_rows(t).items()})


def test_gradient_through_tied_sort_goes_where_torch_sends_it():
    def body(t):
        x = t.tensor([1., 2., 2., 1., 2., 1.] * 5, requires_grad=True)
        v, _ = x.sort()
        (v * t.arange(30.)).sum().backward()
        return x.grad
    same(body)


# -- masked and indexed writes into an expanded view change only what they write ----------------
_EXPANDED_WRITES = {
    "masked_fill_": lambda t, v, m, i: v.masked_fill_(m, 1.),
    "masked_fill_tensor": lambda t, v, m, i: v.masked_fill_(m, t.tensor(2.)),
    "index_put_": lambda t, v, m, i: v.index_put_(i, t.tensor([4., 5.])),
    "setitem_index": lambda t, v, m, i: v.__setitem__(i, t.tensor([6., 7.])),
    "index_put_accumulate": lambda t, v, m, i: v.index_put_(i, t.tensor([4., 5.]), True),
}


@pytest.mark.parametrize("name", sorted(_EXPANDED_WRITES))
def test_masked_and_indexed_writes_into_an_expanded_view(name):
    def body(t):
        base = t.zeros(3)
        mask = t.tensor([[True, False, False], [False, False, True]])
        index = (t.tensor([0, 1]), t.tensor([0, 2]))
        _EXPANDED_WRITES[name](t, base.expand(2, 3), mask, index)
        return base
    same(body)


@pytest.mark.parametrize("eq,shapes", [
    ("ii", [(2, 3)]), ("ii", [(1, 3)]), ("iij", [(2, 3, 4)]), ("iji", [(2, 3, 4)]),
    ("i,ii", [(3,), (1, 3)]), ("ii,i", [(1, 1), (3,)]), ("ij,ii", [(2, 2), (3, 2)])])
def test_einsum_size_errors_of_repeated_subscripts(eq, shapes):
    """A subscript repeated in one operand (a diagonal) is checked first, with torch's
    message, before sizes are compared across operands."""
    same(lambda t: t.einsum(eq, *[t.ones(s) for s in shapes]))


def test_layer_norm_of_a_row_holding_inf_is_silent():
    """A row holding inf normalises to NaN without NumPy's warnings, forward and backward."""
    def body(t):
        x = t.tensor([[1.0, float("inf"), 2.0], [1.0, 2.0, 3.0]], requires_grad=True)
        w = t.tensor([1.63, -0.36, -0.32], requires_grad=True)
        y = t.nn.functional.layer_norm(x, (3,), w)
        y.sum().backward()
        return y, x.grad, w.grad
    same(body)
