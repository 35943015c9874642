"""Results laid out as torch lays them out: reductions, scans and softmax allocate their
results contiguous whatever the input's layout (NumPy keeps the input's order), with
torch's strides for dimensions of one element, so a later ``view``/``flatten`` of them is a
view where torch's is.

Each body runs on PyTorch 2.13 and on ember (``oracle.same``); the tests skip when torch is
not installed.
"""
from __future__ import annotations

import pytest
from oracle import same

_OPS = {
    "sum": lambda t, x, d, k: x.sum(d, keepdim=k),
    "sum_two_dims": lambda t, x, d, k: x.sum((d, (d + 1) % 3), keepdim=k),
    "mean": lambda t, x, d, k: x.mean(d, keepdim=k),
    "prod": lambda t, x, d, k: x.prod(d, keepdim=k),
    "nansum": lambda t, x, d, k: x.nansum(d, keepdim=k),
    "nanmean": lambda t, x, d, k: x.nanmean(d, keepdim=k),
    "amax": lambda t, x, d, k: x.amax(d, keepdim=k),
    "amin_two_dims": lambda t, x, d, k: x.amin((d, (d + 1) % 3), keepdim=k),
    "aminmax": lambda t, x, d, k: t.aminmax(x, dim=d, keepdim=k),
    "all": lambda t, x, d, k: x.bool().all(d, keepdim=k),
    "any": lambda t, x, d, k: x.any(d, keepdim=k),
    "count_nonzero": lambda t, x, d, k: t.count_nonzero(x, d),
    "logsumexp": lambda t, x, d, k: x.logsumexp(d, keepdim=k),
    "var": lambda t, x, d, k: x.var(d, keepdim=k),
    "std": lambda t, x, d, k: x.std(d, keepdim=k),
    "var_mean": lambda t, x, d, k: t.var_mean(x, d, keepdim=k),
    "std_mean": lambda t, x, d, k: t.std_mean(x, d, keepdim=k),
    "norm": lambda t, x, d, k: x.norm(dim=d, keepdim=k),
    "vector_norm_1": lambda t, x, d, k: t.linalg.vector_norm(x, 1, dim=d, keepdim=k),
    "median": lambda t, x, d, k: x.median(d, keepdim=k),
    "nanmedian": lambda t, x, d, k: x.nanmedian(d, keepdim=k),
    "max": lambda t, x, d, k: x.max(d, keepdim=k),
    "cumsum": lambda t, x, d, k: x.cumsum(d),
    "cumprod": lambda t, x, d, k: x.cumprod(d),
    "logcumsumexp": lambda t, x, d, k: x.logcumsumexp(d),
    "cummax": lambda t, x, d, k: x.cummax(d),
    "softmax": lambda t, x, d, k: x.softmax(d),
    "log_softmax": lambda t, x, d, k: x.log_softmax(d),
}


def _strides(out):
    return tuple(o.stride() for o in out) if isinstance(out, tuple) else out.stride()


@pytest.mark.parametrize("name", sorted(_OPS))
def test_results_are_contiguous_whatever_the_inputs_layout(name):
    def body(t):
        permuted = (t.arange(24.).reshape(2, 3, 4) - 11.5).permute(2, 0, 1)
        one_wide = (t.arange(6.).reshape(2, 3, 1) - 2.5).permute(1, 2, 0)
        return [_strides(_OPS[name](t, x, d, k)) for x in (permuted, one_wide)
                for d in range(3) for k in (False, True)]
    same(body)


def test_flatten_of_a_mean_over_a_moved_dimension_is_a_view():
    def body(t):
        x = t.tensor([[[0.92], [1.42], [-1.89]], [[-0.55], [-0.88], [-0.29]]])
        m = t.movedim(x, -3, 2).mean(1)
        flat = t.flatten(m, -2)
        return m.stride(), flat._is_view(), flat
    same(body)


def test_reshape_of_log_softmax_over_a_transposed_input_is_a_view():
    def body(t):
        x = t.tensor([[[1.56, -1.28], [-0.29, -0.47], [2.0, -0.2]]]).transpose(-1, 0)
        y = t.nn.functional.log_softmax(x, -2)
        r = y.reshape(1, 1, 6)
        return y.stride(), r._is_view(), r
    same(body)


def test_sort_results_keep_the_inputs_layout():
    # torch's sort allocates values and indices with the input's strides where it is dense
    # (dimensions of one element included), else dense ones in its order; argsort and msort
    # are sort
    def body(t):
        b = t.arange(24.).reshape(2, 3, 4).remainder(5)
        inputs = [b.permute(2, 0, 1), b[:, ::2], b.transpose(0, 1)[:, :, 1:],
                  b[:1].expand(3, 3, 4), b.permute(1, 0, 2)[:, :1],
                  b.reshape(2, 3, 4, 1).permute(3, 2, 0, 1), b[0].t()]
        out = []
        for x in inputs:
            for d in range(x.dim()):
                v, i = t.sort(x, d)
                out.append((v.stride(), i.stride(), t.argsort(x, d).stride(),
                            t.sort(x, dim=d, stable=True)[0].stride(), v, i))
            out.append(t.msort(x).stride())
        return out
    same(body)


# -- elementwise results of inputs laid out differently -----------------------------------------
def _layouts(t):
    """Inputs of one (2, 3) shape (or broadcasting to it) in several layouts."""
    return {"contiguous": t.arange(1., 7.).reshape(2, 3),
            "transposed": t.arange(1., 7.).reshape(3, 2).t(),
            "row": t.arange(1., 4.).reshape(1, 3), "column": t.arange(1., 3.).reshape(2, 1),
            "expanded": t.arange(1., 4.).expand(2, 3),
            "expanded_column": t.arange(1., 3.).reshape(2, 1).expand(2, 3),
            "vector": t.arange(1., 4.), "scalar": t.tensor(2.),
            "sliced": t.arange(1., 13.).reshape(2, 6)[:, ::2]}


_ELEMENTWISE = {
    "add": lambda t, a, b: a + b, "mul": lambda t, a, b: t.mul(a, b),
    "lt": lambda t, a, b: a < b, "atan2": lambda t, a, b: t.atan2(a, b),
    "logical_and": lambda t, a, b: t.logical_and(a, b),
    "bitwise_or": lambda t, a, b: a.long() | b.long(),
    "heaviside": lambda t, a, b: t.heaviside(a, b), "isclose": lambda t, a, b: t.isclose(a, b),
    "where_on_a": lambda t, a, b: t.where(a > 2, a, b),
    "where_on_b": lambda t, a, b: t.where(b > 2, a, b),
    "addcmul_into_a": lambda t, a, b: t.addcmul(a, a, b),
    "addcmul_into_b": lambda t, a, b: t.addcmul(b, a, b),
    "lerp_tensor_weight": lambda t, a, b: t.lerp(a, b, b),
    "mse_loss_none": lambda t, a, b: t.nn.functional.mse_loss(a, b.expand(2, 3),
                                                              reduction="none"),
}


@pytest.mark.parametrize("name", sorted(_ELEMENTWISE))
def test_elementwise_results_take_the_first_deciding_inputs_layout(name):
    def body(t):
        inputs = _layouts(t)
        return [(x, y, _ELEMENTWISE[name](t, inputs[x], inputs[y]).stride())
                for x in inputs for y in inputs]
    same(body)


def test_elementwise_results_of_three_dimensional_and_channels_last_inputs():
    def body(t):
        c = t.arange(24.).reshape(2, 3, 4)
        p = t.arange(24.).reshape(4, 3, 2).permute(2, 1, 0)
        q = t.arange(24.).reshape(2, 4, 3).permute(0, 2, 1)
        nchw = t.arange(48.).reshape(2, 3, 2, 4)
        nhwc = nchw.contiguous(memory_format=t.channels_last)
        pairs = [(c, p), (p, c), (q, p), (p, q), (c, q), (q, c), (nchw, nhwc), (nhwc, nchw),
                 (nhwc, t.arange(4.)), (nhwc, t.arange(3.).reshape(3, 1, 1))]
        return [((a * b).stride(), (b - a).stride(), t.where(a > 3, a, b).stride())
                for a, b in pairs]
    same(body)


def test_the_gradient_of_a_transposed_leaf_times_a_contiguous_one():
    # the product's layout is the gradient's: whether .grad takes it over or copies it
    def body(t):
        a = t.arange(6.).reshape(3, 2).t().detach().requires_grad_()
        w = t.ones(2, 3, requires_grad=True)
        (a * w).sum().backward()
        b = t.arange(6.).reshape(3, 2).requires_grad_()
        (b.t() * t.ones(2, 3)).sum().backward()
        return [(g.stride(), g._version) for g in (a.grad, w.grad, b.grad)]
    same(body)
