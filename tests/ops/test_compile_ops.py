"""The op table through ember.compile: every op gives the same values and gradients compiled
as eager, on the recording call and on a replay with new values (a replay that kept a value
of the first call would fail here), and the same second derivatives through a replay.

Each row's samples (main dtype) are called through a compiled function of all their tensor
inputs: once with the table's arrays (recorded), once with arrays of another seed (replayed),
each checked against an eager call on the same inputs, gradients included.
"""
from __future__ import annotations

import warnings
import zlib

import numpy as np
import pytest

import ember

from .op_db import OP_DB, Maker, OpInfo
from .test_ops import _main_dtype, assert_close, bind, call, outputs

# Rows whose compiled function falls back to eager mode (for some sample), and why.
_MASK = "a boolean mask: the output's shape depends on the input's values"
_NO_GRAD = "its backward raises (no derivative), as eager's does: recorded, it falls back"
_RAW = "computed from the input's values outside the ops"
_SAMPLER = ("a sampler of tensors that require grad: the replayed call makes a tensor that "
            "requires grad")
_REAL_OF_COMPLEX = "a real input's share of a complex gradient (its real part) is not replayed"
FALLS_BACK = {
    "getitem_0dim_tensor_index": "a 0-dim integer tensor index is read with .item()",
    "getitem_tensor_index": _MASK, "getitem_mask_of_self": _MASK, "masked_select": _MASK,
    "combinations": _MASK, "torch_vander": _NO_GRAD,
    "instance_norm": "the affine weight is tiled outside the ops",
    "scatter_reduce_arg": _NO_GRAD, "scatter_reduce_arg_": _NO_GRAD, "linalg_qr_r": _NO_GRAD,
    "asinh_": _NO_GRAD, "arcsinh_": _NO_GRAD, "acosh_": _NO_GRAD, "arccosh_": _NO_GRAD,
    "atanh_": _NO_GRAD, "arctanh_": _NO_GRAD, "floor_divide": _NO_GRAD,
    "floordiv_operator": _NO_GRAD, "rfloordiv_operator": _NO_GRAD, "ifloordiv": _NO_GRAD,
    "rmod_operator": _NO_GRAD, "rremainder": _NO_GRAD, "_dirichlet_grad": _NO_GRAD,
    "_sample_dirichlet": _NO_GRAD, "_sample_dirichlet_certain": _NO_GRAD,
    "_standard_gamma_grad": _NO_GRAD, "_cdist_backward": _NO_GRAD, "_pdist_backward": _NO_GRAD,
    "binomial": _NO_GRAD, "binomial_certain": _NO_GRAD,
    "heaviside": _NO_GRAD, "heaviside_": _NO_GRAD, "sparse_sqrt": _NO_GRAD, "detach_copy": _NO_GRAD, "unique": _NO_GRAD,
    "unique_consecutive": _NO_GRAD, "bincount_weights": _NO_GRAD, "histogram": _NO_GRAD,
    "histogramdd": _NO_GRAD, "bernoulli": _SAMPLER, "bernoulli_": _SAMPLER,
    "poisson": _SAMPLER, "normal_tensors": _SAMPLER, "normal_": _SAMPLER, "uniform_": _SAMPLER,
    "exponential_": _SAMPLER, "geometric_": _SAMPLER, "log_normal_": _SAMPLER,
    "cauchy_": _SAMPLER, "random_": _SAMPLER,
    "one_hot": _RAW, "repeat_interleave_tensor": _RAW,
    "repeat_interleave_repeats_only": _RAW, "nanmean": _RAW, "nanmean_method": _RAW,
    "rrelu_inplace": "training noise " + _RAW,
    "pack_padded_sequence": "the lengths are read with .tolist()",
    "sparse_zero_": "a sparse tensor is written in place outside the ops",
    "dense_mul_sparse_": "dense.mul_(sparse) writes its dense result into self outside the ops",
    **dict.fromkeys(("t_", "transpose_", "swapdims_", "unsqueeze_", "squeeze_", "as_strided_"),
                    "an in-place view op changes a tensor's geometry outside the ops"),
    **dict.fromkeys(("set_", "set_storage"), "set_ changes the memory a tensor views"),
    "mul_real_complex": _REAL_OF_COMPLEX, "irfft_of_real": _REAL_OF_COMPLEX,
    "fftn_of_real": _REAL_OF_COMPLEX, "linalg_eigvals": _REAL_OF_COMPLEX,
    "linalg_eig_vectors": _REAL_OF_COMPLEX, "linalg_svd_complex": _REAL_OF_COMPLEX,
    "istft": "the window envelope is checked with .item()",
    "linalg_ldl_factor": _NO_GRAD, "linalg_ldl_factor_ex": _NO_GRAD, "linalg_ldl_solve": _NO_GRAD,
    "linalg_cholesky_ex_failing": "its backward through the failed factorization raises",
    "native_batch_norm": "the statistics it returns are " + _RAW,
    "native_layer_norm": "the statistics it returns are " + _RAW,
    "native_dropout": "its mask is drawn outside the replayed random calls",
    "geqrf": _NO_GRAD,
    "lobpcg": "its number of iterations depends on the values (the convergence test reads them)",
    **dict.fromkeys(("batch_norm_stats", "batch_norm_elemt", "batch_norm_gather_stats",
                     "batch_norm_gather_stats_with_counts", "batch_norm_backward_reduce",
                     "batch_norm_backward_elemt", "batch_norm_update_stats"), _NO_GRAD),
}


def _flatten(value, found):
    """``value`` with each tensor replaced by its position in ``found``."""
    if isinstance(value, ember.Tensor):
        found.append(value)
        return _Slot(len(found) - 1)
    if isinstance(value, (list, tuple)) and (_has_tensor(value)):
        return type(value)(_flatten(v, found) for v in value)
    return value


def _has_tensor(value):
    return any(isinstance(v, ember.Tensor) or (isinstance(v, (list, tuple)) and _has_tensor(v))
               for v in value)


class _Slot:
    def __init__(self, k):
        self.k = k


def _fill(value, tensors):
    if isinstance(value, _Slot):
        return tensors[value.k]
    if isinstance(value, (list, tuple)) and any(isinstance(v, (_Slot, list, tuple))
                                                 for v in value):
        return type(value)(_fill(v, tensors) for v in value)
    return value


def _samples(row, dt, seed):
    return row.samples(Maker(dt, row.domain, row.kinks, seed))


def _inputs(sample):
    """(tensors, args template, kwargs template) of one sample, tensors requiring grad where
    the table makes them."""
    args, kwargs, _ = bind(sample, ember, requires_grad=True)
    tensors = []
    targs = [_flatten(a, tensors) for a in args]
    tkw = {k: _flatten(v, tensors) for k, v in kwargs.items()}
    return tensors, targs, tkw


def _run(fn, tensors):
    out = call(fn, tensors, {})
    outs = [o for o in outputs(out) if isinstance(o, ember.Tensor)]
    return out, outs


def _grads(outs, tensors, seed):
    """The gradients of the inputs, or the error the backward raises (type and message)."""
    diff = [t for t in tensors if t.requires_grad]
    outs = [o for o in outs if o.requires_grad]
    if not diff or not outs:
        return []
    rng = np.random.default_rng(seed)
    gos = [ember.tensor(rng.standard_normal(tuple(o.shape)).astype(str(o.dtype).split(".")[1]))
           for o in outs]
    try:
        return ember.autograd.grad(outs, diff, gos, allow_unused=True)
    except Exception as error:  # noqa: BLE001 - compared with the other mode's
        return (type(error), str(error))


def _second_order(fn, tensors, seed):
    """d/dinputs of the squared norm of the first-order gradients (a create_graph pass), or
    the error it raises."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        outs = [o for o in outputs(fn(*tensors))
                if isinstance(o, ember.Tensor) and o.requires_grad]
    diff = [t for t in tensors if t.requires_grad]
    if not diff or not outs:
        return []
    rng = np.random.default_rng(seed)
    gos = [ember.tensor(rng.standard_normal(tuple(o.shape)).astype(str(o.dtype).split(".")[1]))
           for o in outs]
    try:
        grads = ember.autograd.grad(outs, diff, gos, create_graph=True, allow_unused=True)
        norm = [(g * g).sum() for g in grads if g is not None and g.requires_grad]
        if not norm:
            return []
        return ember.autograd.grad(sum(norm), diff, allow_unused=True)
    except Exception as error:  # noqa: BLE001 - compared with the other mode's
        return (type(error), str(error))


def _check(row, dt, got, want, what):
    (g_outs, g_grads), (w_outs, w_grads) = got, want
    assert len(g_outs) == len(w_outs), f"{what}: number of outputs"
    tols = {"float16": (1e-3, 1e-3), "float32": (1.3e-6, 1e-5), "float64": (1e-7, 1e-7),
            **row.tols}
    for k, (g, w) in enumerate(zip(g_outs, w_outs)):
        assert_close(g, w, dt, tols, what=f"{what}: output {k}")
        assert g.requires_grad == w.requires_grad, f"{what}: output {k} requires_grad"
    if isinstance(w_grads, tuple) and w_grads and isinstance(w_grads[0], type):
        assert g_grads == w_grads, f"{what}: backward raised {w_grads}, compiled {g_grads}"
        return
    for k, (g, w) in enumerate(zip(g_grads, w_grads)):
        assert (g is None) == (w is None), f"{what}: grad {k} None-ness"
        if g is not None:
            assert_close(g, w, dt, tols, what=f"{what}: grad {k}")


def _case(row, dt, sample_a, sample_b, seed):
    tensors_a, targs, tkw = _inputs(sample_a)
    tensors_b = _inputs(sample_b)[0]
    if len(tensors_a) != len(tensors_b) or not tensors_a:
        pytest.skip("no tensor input")

    def fn(*tensors):
        return row.op(*_fill(targs, tensors), **{k: _fill(v, tensors) for k, v in tkw.items()})

    compiled = ember.compile(fn)
    for label, tensors in (("recording", tensors_a), ("replay", tensors_b)):
        eager_inputs = [t.detach().clone().requires_grad_(t.requires_grad) for t in tensors]
        _, w_outs = _run(fn, eager_inputs)
        want = (w_outs, _grads(w_outs, eager_inputs, seed))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # a fallback's warning: checked by the caller
            g_outs = [o for o in outputs(compiled(*tensors)) if isinstance(o, ember.Tensor)]
        got = (g_outs, _grads(g_outs, tensors, seed))
        _check(row, dt, got, want, f"{sample_a.name} ({label})")
    if row.gradgrad and compiled.eager is None:  # double backward through the replay
        eager_inputs = [t.detach().clone().requires_grad_(t.requires_grad) for t in tensors_b]
        want = _second_order(fn, eager_inputs, seed)
        _check(row, dt, ([], _second_order(compiled, tensors_b, seed)), ([], want),
               f"{sample_a.name} (double backward)")
    return compiled


def _rows():
    return [pytest.param(r, id=r.name) for r in OP_DB]


@pytest.mark.parametrize("row", _rows())
def test_compiled_equals_eager(row: OpInfo):
    dt = _main_dtype(row)
    seed = zlib.crc32(f"{row.name}/{dt}/compile".encode())
    samples_a = row.make_samples(dt)
    samples_b = _samples(row, dt, seed)
    fell_back = []
    for sample_a, sample_b in zip(samples_a[:3], samples_b[:3]):
        try:
            compiled = _case(row, dt, sample_a, sample_b, seed)
        except pytest.skip.Exception:
            continue
        if compiled.eager is not None:
            fell_back.append(compiled.eager)
        else:  # the second call replayed the first call's recording
            assert len(compiled.entries) == 1, f"{sample_a.name}: recorded twice"
    if row.name in FALLS_BACK:
        assert fell_back, f"expected a fallback: {FALLS_BACK[row.name]}"
    else:
        assert not fell_back, fell_back[0]
