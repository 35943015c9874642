"""Results laid out as torch lays them out: reductions, scans and softmax allocate their
results contiguous whatever the input's layout (NumPy keeps the input's order), with
torch's strides for dimensions of one element, so a later ``view``/``flatten`` of them is a
view where torch's is.

Each body runs on PyTorch 2.13 and on ember (``oracle.same``); the tests skip when torch is
not installed.
"""
from __future__ import annotations

import itertools
import math
import warnings

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


# -- results of one input, and out= tensors a call resizes ---------------------------------------
def _one_input_layouts(t):
    """Three-dimensional inputs in the layouts that tell torch's rules apart: permuted,
    transposed, expanded, sliced, and with dimensions of one element placed by their strides."""
    b = t.arange(1., 25.).reshape(2, 3, 4) / 7
    return {"contiguous": b, "permuted": b.permute(2, 0, 1), "transposed": b.transpose(0, 1),
            "mT": b.mT, "expanded": b[:1].expand(2, 3, 4), "row": b[:1, :1],
            "sliced_column": b[:, :1].transpose(0, 1), "sliced": b[:, ::2],
            "one_wide_permuted": b[:, :1].permute(1, 2, 0)}


_UNARY = {
    "neg": lambda t, x: t.neg(x), "exp": lambda t, x: x.exp(), "abs": lambda t, x: t.abs(x),
    "sigmoid": lambda t, x: t.sigmoid(x), "clamp": lambda t, x: t.clamp(x, 0.5, 2.0),
    "mul_number": lambda t, x: x * 2, "pow": lambda t, x: x ** 2,
    "i0": lambda t, x: t.i0(x), "logit": lambda t, x: t.logit(x / 4),
    "nan_to_num": lambda t, x: t.nan_to_num(x), "mvlgamma": lambda t, x: t.mvlgamma(x + 1, 2),
    "tril": lambda t, x: t.tril(x), "triu": lambda t, x: t.triu(x, 1),
    "squeeze_copy": lambda t, x: t.squeeze_copy(x), "alias_copy": lambda t, x: t.alias_copy(x),
    "slice_copy": lambda t, x: t.slice_copy(x, 1, 0, 2),
    "unsqueeze_copy": lambda t, x: t.unsqueeze_copy(x, 1),
}


@pytest.mark.parametrize("name", sorted(_UNARY))
def test_results_of_one_input_take_torch_layout(name):
    # TensorIterator's order for elementwise ops (dimensions of one element included), the
    # input's layout for nan_to_num (empty_like), contiguous for tril/triu, mvlgamma and the
    # *_copy functions
    def body(t):
        return [(n, _UNARY[name](t, x).stride(), _UNARY[name](t, x))
                for n, x in _one_input_layouts(t).items()]
    same(body)


def _resized(t, fn, *args, dtype=None, **kwargs):
    out = t.empty(0, dtype=dtype)
    fn(*args, **kwargs, out=out)
    return out.stride(), out


_OUT_CALLS = {
    "add": lambda t, x, y: _resized(t, t.add, x, y),
    "mul_broadcast": lambda t, x, y: _resized(t, t.mul, x, y[0, 0]),
    "sub_wrong_shape": lambda t, x, y: _resized_wrong(t, t.sub, x, y),
    "atan2": lambda t, x, y: _resized(t, t.atan2, x, y),
    "maximum": lambda t, x, y: _resized(t, t.maximum, x, y),
    "eq": lambda t, x, y: _resized(t, t.eq, x, y, dtype=t.bool),
    "where": lambda t, x, y: _resized(t, t.where, x > 0.5, x, y),
    "addcmul": lambda t, x, y: _resized(t, t.addcmul, x, x, y),
    "lerp": lambda t, x, y: _resized(t, t.lerp, x, y, 0.3),
    "neg": lambda t, x, y: _resized(t, t.neg, x),
    "clamp": lambda t, x, y: _resized(t, t.clamp, x, 0.5, 2.0),
    "sigmoid": lambda t, x, y: _resized(t, t.sigmoid, x),
    "double_output": lambda t, x, y: _resized(t, t.add, x, y, dtype=t.float64),
    "sort": lambda t, x, y: _resized_pair(t, t.sort, x, 1),
    "frexp": lambda t, x, y: _resized_pair(t, t.frexp, x, dtype=t.int32),
    "sum_keepdim": lambda t, x, y: _resized(t, t.sum, x, 1, keepdim=True),
    "cumsum": lambda t, x, y: _resized(t, t.cumsum, x, 2),
    "matmul": lambda t, x, y: _resized(t, t.matmul, x, y.mT),
    "cat": lambda t, x, y: _resized(t, t.cat, [x, y], 1),
    "tril": lambda t, x, y: _resized(t, t.tril, x),
    "permute_copy": lambda t, x, y: _resized(t, t.permute_copy, x, (1, 0, 2)),
    "linalg_lu": lambda t, x, y: _resized_all(t, t.linalg.lu, x[..., :3, :3] + 2 * t.eye(3)),
}


def _resized_wrong(t, fn, *args):
    out = t.empty(5)
    with warnings.catch_warnings():  # (torch's deprecation warning: tested elsewhere)
        warnings.simplefilter("ignore")
        fn(*args, out=out)
    return out.stride(), out


def _resized_pair(t, fn, *args, dtype=None):
    outs = (t.empty(0), t.empty(0, dtype=dtype or t.long))
    fn(*args, out=outs)
    return [(o.stride(), o) for o in outs]


def _resized_all(t, fn, *args):
    outs = tuple(t.empty(0) for _ in fn(*args))
    fn(*args, out=outs)
    return [(o.stride(), o) for o in outs]


@pytest.mark.parametrize("name", sorted(_OUT_CALLS))
def test_a_resized_out_takes_the_layout_torch_gives_it(name):
    # an empty (or wrong-shaped) out= is laid out as the op's result where torch's kernel lays
    # it out (TensorIterator's order, sort's), contiguous where torch resizes it so
    def body(t):
        inputs = _one_input_layouts(t)
        pairs = [(a, b) for a in inputs for b in ("contiguous", "permuted", "row")
                 if inputs[a].shape == inputs[b].shape or "row" in (a, b)]
        return [(a, b, _OUT_CALLS[name](t, inputs[a], inputs[b])) for a, b in pairs]
    same(body)


def test_a_copied_gradient_keeps_the_variables_strides():
    # AccumulateGrad copies a gradient that does not obey the variable's layout into
    # new_empty_strided(variable's strides): those of its dimensions of one element too
    def body(t):
        b = t.arange(24.).reshape(2, 3, 4) / 10
        leaves = [b[:1, :1], b[:, :1].permute(1, 2, 0).clone(), b.permute(2, 0, 1),
                  b[:, :1].transpose(0, 1).clone(), t.arange(3.).reshape(1, 3).t()]
        out = []
        for leaf in leaves:
            for loss in (lambda p: p.sum(), lambda p: (p.contiguous() * 3).sum(),
                         lambda p: (p * t.ones(p.shape)).sum()):
                p = leaf.detach().requires_grad_()
                loss(p).backward()
                out.append((p.stride(), p.grad.stride(), p.grad._version, p.grad))
        return out
    same(body)


def test_dimensions_of_one_element_in_views_and_results():
    # torch places a dimension of one element by its stride: a new last dimension has stride
    # 1, elementwise results and keepdim reductions follow TensorIterator's sort
    def body(t):
        b = t.arange(24.).reshape(2, 3, 4)
        out = []
        for x in (b, b.transpose(1, 2), b.permute(2, 0, 1), b[:, :1].permute(1, 2, 0),
                  b[:, :, ::2], b.mT.unsqueeze(0)):
            out.append((x.unsqueeze(-1).stride(), x[..., None].stride(), x[:, None].stride(),
                        x[None].stride(), (x.unsqueeze(1) * 2).stride(),
                        x.unsqueeze(-1).neg().stride(), x.sum(-1, keepdim=True).stride(),
                        (x[:, :1] + x[:, :1]).stride(), x[:, :1].exp().stride()))
        for shape in ((1, 3), (3, 1), (2, 1, 3), (1, 2, 1)):
            y = t.arange(6.)[:math.prod(shape)].reshape(shape)
            out.append([(y.permute(p).neg().stride(), y.permute(p).contiguous().stride(),
                         [y.permute(p).unsqueeze(d).stride() for d in range(y.dim() + 1)])
                        for p in itertools.permutations(range(y.dim()))])
        return out
    same(body)


# torch's solvers leave their solution as LAPACK does: each matrix column-major for A X = B
# (a batch of vector solutions laid out as one matrix), row-major for X A = B
_SOLVERS = {
    "solve": lambda t, A, B, b, L: t.linalg.solve(A, B),
    "solve_vector": lambda t, A, B, b, L: t.linalg.solve(A, b),
    "solve_one_vector": lambda t, A, B, b, L: t.linalg.solve(A[0], b[0]),
    "solve_right": lambda t, A, B, b, L: t.linalg.solve(A, B.mT, left=False),
    "solve_broadcast": lambda t, A, B, b, L: t.linalg.solve(A[:1], B.expand(4, 2, 5, 3)),
    "solve_ex": lambda t, A, B, b, L: t.linalg.solve_ex(A, B)[0],
    "solve_ex_vector": lambda t, A, B, b, L: t.linalg.solve_ex(A, b)[0],
    "solve_ex_right": lambda t, A, B, b, L: t.linalg.solve_ex(A, B.mT, left=False)[0],
    "lu_solve": lambda t, A, B, b, L: t.linalg.lu_solve(*t.linalg.lu_factor(A), B),
    "lu_solve_adjoint": lambda t, A, B, b, L: t.linalg.lu_solve(
        *t.linalg.lu_factor(A), B, adjoint=True),
    "lu_solve_right": lambda t, A, B, b, L: t.linalg.lu_solve(
        *t.linalg.lu_factor(A), B.mT, left=False),
    "lu_solve_broadcast": lambda t, A, B, b, L: t.linalg.lu_solve(
        *t.linalg.lu_factor(A[0]), B),
    "cholesky_solve": lambda t, A, B, b, L: t.cholesky_solve(B, L),
    "cholesky_solve_upper": lambda t, A, B, b, L: t.cholesky_solve(B, L.mH, upper=True),
    "cholesky_solve_broadcast": lambda t, A, B, b, L: t.cholesky_solve(B[0], L),
    # lstsq's solution: the first rows of LAPACK's column-major max(m, n)-row buffer
    "lstsq": lambda t, A, B, b, L: t.linalg.lstsq(A, B).solution,
    "lstsq_vector": lambda t, A, B, b, L: t.linalg.lstsq(A, b).solution,
    "lstsq_tall": lambda t, A, B, b, L: t.linalg.lstsq(A[..., :3], B).solution,
    "lstsq_wide": lambda t, A, B, b, L: t.linalg.lstsq(A[..., :3, :], B[..., :3, :]).solution,
    # solve_triangular's solution is column-major for X A = B too
    "solve_triangular": lambda t, A, B, b, L: t.linalg.solve_triangular(A, B, upper=True),
    "solve_triangular_right": lambda t, A, B, b, L: t.linalg.solve_triangular(
        A, B.mT, upper=False, left=False),
    "solve_triangular_broadcast": lambda t, A, B, b, L: t.linalg.solve_triangular(
        A[0], B, upper=True, unitriangular=True),
}


@pytest.mark.parametrize("dtype", ["float32", "float64", "complex128"])
@pytest.mark.parametrize("name", sorted(_SOLVERS))
def test_solvers_results_are_laid_out_as_lapack_leaves_them(name, dtype):
    def body(t):
        dt = getattr(t, dtype)
        A = (t.arange(50.).reshape(2, 5, 5).cos() + 3 * t.eye(5)).to(dt)
        B = t.arange(30.).reshape(2, 5, 3).sin().to(dt)
        b = t.arange(10.).reshape(2, 5).cos().to(dt)
        L = t.linalg.cholesky(A @ A.mH)
        X = _SOLVERS[name](t, A, B, b, L)
        return X.stride(), X.reshape(-1)._is_view()
    same(body)
