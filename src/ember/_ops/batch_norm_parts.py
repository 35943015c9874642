"""The pieces of batch normalization that torch exposes for synchronized (multi-process) batch
norm: per-process statistics (``batch_norm_stats``), their combination across processes
(``batch_norm_gather_stats[_with_counts]``, Chan/Welford merging in rank order, with the
running statistics updated in place), the elementwise normalization (``batch_norm_elemt``),
and the two halves of backward (``batch_norm_backward_reduce``: per-channel sums to all-reduce;
``batch_norm_backward_elemt``: the input gradient from the reduced sums), and
``batch_norm_update_stats`` (the running statistics of one batch).

Statistics are computed in float32 for a float16 input (torch's accumulate type). As in torch,
none of these ops has a derivative: they record a ``NotImplemented`` node, and backward
through it raises. torch's CPU build has kernels only for batch_norm_update_stats (the others
are CUDA kernels there); ember runs all of them on every device.
"""
from __future__ import annotations

__all__ = ["batch_norm_backward_elemt", "batch_norm_backward_reduce", "batch_norm_elemt",
           "batch_norm_gather_stats", "batch_norm_gather_stats_with_counts",
           "batch_norm_stats", "batch_norm_update_stats"]

import numpy as np

from .._backend import get_xp
from .normalization import _raw, _stats
from .pointwise import no_derivative
from .registry import NONE, op


def _acc(dtype):
    """torch's accumulate type: float32 for float16, else the dtype itself."""
    return np.dtype(np.float32) if dtype == np.float16 else dtype


def _axes(x):
    return (0,) + tuple(range(2, x.ndim))


def _per_channel(v, ndim):
    return v.reshape((1, -1) + (1,) * (ndim - 2))


def _no_derivative(d, *inputs):
    d.grad(*inputs)(no_derivative(d.name))


def _check_channels(input):  # noqa: A002
    if input.ndim < 2:
        raise IndexError(f"Dimension out of range (expected to be in range of "
                         f"[{-max(input.ndim, 1)}, {max(input.ndim, 1) - 1}], but got 1)")


# -- forward: statistics, their combination, the normalization --------------------------------
@op("batch_norm_stats", promote=NONE, outputs=2, node="NotImplemented")
def _stats_op(input, eps):  # noqa: A002
    x = input.astype(_acc(input.dtype), copy=False)
    with np.errstate(all="ignore"):
        m, _, invstd = _stats(x, _axes(x), eps)
    return m.reshape(-1), invstd.reshape(-1)


_no_derivative(_stats_op, "input")


def batch_norm_stats(input, eps):  # noqa: A002
    """``(mean, invstd)`` per channel (dimension 1): the mean and 1/sqrt(biased var + eps)."""
    _check_channels(input)
    return _stats_op(input, eps)


@op("batch_norm_elemt", tensors=5, promote=NONE, node="NotImplemented")
def _elemt_op(input, weight, bias, mean, invstd, eps):  # noqa: A002
    n = input.ndim
    acc = _acc(input.dtype)
    out = (input.astype(acc) - _per_channel(mean, n)) * _per_channel(invstd, n)
    if weight is not None:
        out = out * _per_channel(weight, n)
    if bias is not None:
        out = out + _per_channel(bias, n)
    return out.astype(input.dtype, copy=False)


_no_derivative(_elemt_op, "input", "weight", "bias", "mean", "invstd")


def batch_norm_elemt(input, weight, bias, mean, invstd, eps):  # noqa: A002
    """``(input - mean) * invstd * weight + bias`` per channel (``eps`` is unused: ``invstd``
    already has it)."""
    return _elemt_op(input, weight, bias, mean, invstd, eps)


def _gather(mean, invstd, counts, running_mean, running_var, momentum, eps):
    """Merge every process's (mean, invstd, count) in rank order, as torch's kernel does."""
    xp = get_xp(mean)
    acc = _acc(mean.dtype)
    avg = xp.zeros(mean.shape[1], acc)
    var_n = xp.zeros(mean.shape[1], acc)
    n = acc.type(0)
    with np.errstate(all="ignore"):
        for j in range(mean.shape[0]):
            count = acc.type(counts[j])
            m = mean[j].astype(acc)
            v = (1 / invstd[j].astype(acc)) ** 2
            v = (v - acc.type(eps)) * count
            factor = 1 / (n + count)
            var_n = var_n + v + (avg - m) * (avg - m) * n * count * factor
            avg = n * factor * avg + count * factor * m
            n = n + count
        invstd_all = 1 / xp.sqrt(var_n / n + acc.type(eps))
        unbiased = var_n / (n - 1)
    for running, value in ((running_mean, avg), (running_var, unbiased)):
        if running is not None:
            r = _raw(running)
            r[...] = ((1 - momentum) * r + momentum * value).astype(r.dtype)  # (no version)
    return avg.astype(mean.dtype, copy=False), invstd_all.astype(mean.dtype, copy=False)


@op("batch_norm_gather_stats_with_counts", tensors=4, promote=NONE, outputs=2,
    node="NotImplemented")
def _gather_counts_op(input, mean, invstd, counts, running_mean, running_var,  # noqa: A002
                      momentum, eps):
    return _gather(mean, invstd, counts, running_mean, running_var, momentum, eps)


_no_derivative(_gather_counts_op, "input", "mean", "invstd", "counts")
_gather_counts_op.updates_taken = True  # (the running statistics, without a version)


@op("batch_norm_gather_stats", tensors=3, promote=NONE, outputs=2, node="NotImplemented")
def _gather_op(input, mean, invstd, running_mean, running_var, momentum, eps,  # noqa: A002
               count):
    counts = get_xp(mean).full(mean.shape[0], count, _acc(input.dtype))
    return _gather(mean, invstd, counts, running_mean, running_var, momentum, eps)


_no_derivative(_gather_op, "input", "mean", "invstd")
_gather_op.updates_taken = True  # (the running statistics, without a version)


def batch_norm_gather_stats_with_counts(input, mean, invstd, running_mean, running_var,  # noqa: A002
                                        momentum, eps, counts):
    """The mean and invstd of the union of every process's batch, from each one's ``mean``,
    ``invstd`` (rows) and element count per channel (``counts``); updates the running
    statistics in place (the unbiased variance into ``running_var``)."""
    return _gather_counts_op(input, mean, invstd, counts, running_mean, running_var, momentum,
                             eps)


def batch_norm_gather_stats(input, mean, invstd, running_mean, running_var, momentum, eps,  # noqa: A002
                            count):
    """``batch_norm_gather_stats_with_counts`` with the same ``count`` for every process."""
    return _gather_op(input, mean, invstd, running_mean, running_var, momentum, eps,
                      int(count))


# -- backward -----------------------------------------------------------------------------------
@op("batch_norm_backward_reduce", tensors=5, promote=NONE, outputs=4, node="NotImplemented")
def _backward_reduce_op(grad_out, input, mean, invstd, weight):  # noqa: A002
    n = input.ndim
    acc = _acc(input.dtype)
    dy = grad_out.astype(acc, copy=False)
    xmu = input.astype(acc, copy=False) - _per_channel(mean, n)
    sum_dy = dy.sum(axis=_axes(dy)).astype(mean.dtype, copy=False)
    sum_dy_xmu = (dy * xmu).sum(axis=_axes(dy)).astype(mean.dtype, copy=False)
    out_dtype = mean.dtype if weight is None else weight.dtype
    grad_weight = (sum_dy_xmu * invstd).astype(out_dtype, copy=False)
    return sum_dy, sum_dy_xmu, grad_weight, sum_dy.astype(out_dtype)


_no_derivative(_backward_reduce_op, "grad_out", "input", "mean", "invstd", "weight")


def batch_norm_backward_reduce(grad_out, input, mean, invstd, weight, input_g, weight_g,  # noqa: A002
                               bias_g):
    """``(sum_dy, sum_dy_xmu, grad_weight, grad_bias)`` per channel: the sums of the output
    gradient and of it times ``input - mean`` (when ``input_g``: to all-reduce before
    ``batch_norm_backward_elemt``), and this process's weight and bias gradients (when
    ``weight_g`` / ``bias_g``); None for the ones not asked for."""
    sums = _backward_reduce_op(grad_out, input, mean, invstd, weight)
    wanted = (input_g, input_g, weight_g, bias_g)
    return tuple(s if w else None for s, w in zip(sums, wanted))


@op("batch_norm_backward_elemt", tensors=8, promote=NONE, node="NotImplemented")
def _backward_elemt_op(grad_out, input, mean, invstd, weight, sum_dy, sum_dy_xmu,  # noqa: A002
                       count):
    n = input.ndim
    acc = _acc(input.dtype)
    norm = acc.type(1) / acc.type(count.sum())
    mean_dy = _per_channel(sum_dy, n) * norm
    factor_1 = _per_channel(invstd * invstd * sum_dy_xmu, n) * norm
    factor_2 = _per_channel(invstd if weight is None else invstd * weight, n)
    xmu = input.astype(acc, copy=False) - _per_channel(mean, n)
    return ((grad_out.astype(acc, copy=False) - mean_dy - xmu * factor_1)
            * factor_2).astype(input.dtype, copy=False)


_no_derivative(_backward_elemt_op, "grad_out", "input", "mean", "invstd", "weight", "sum_dy",
               "sum_dy_xmu")


def batch_norm_backward_elemt(grad_out, input, mean, invstd, weight, sum_dy, sum_dy_xmu,  # noqa: A002
                              count):
    """The input gradient of batch normalization over every process's batch, from the
    all-reduced ``sum_dy`` and ``sum_dy_xmu`` and the per-process element counts ``count``."""
    return _backward_elemt_op(grad_out, input, mean, invstd, weight, sum_dy, sum_dy_xmu, count)


# -- running statistics -------------------------------------------------------------------------
@op("batch_norm_update_stats", promote=NONE, outputs=2, node="NotImplemented")
def _update_stats_op(input, running_mean, running_var, momentum):  # noqa: A002
    param = running_mean if running_mean is not None else running_var
    dtype = input.dtype if param is None else _raw(param).dtype
    x = input.astype(_acc(dtype), copy=False)
    n = input.size // input.shape[1]
    with np.errstate(all="ignore"):
        m, var, _ = _stats(x, _axes(x), 0.0)
        m, var = m.reshape(-1), var.reshape(-1)
        unbiased = var * n / (n - 1) if n > 1 else var * np.inf
    for running, value in ((running_mean, m), (running_var, unbiased)):
        if running is not None:
            r = _raw(running)
            r[...] = (momentum * value + (1 - momentum) * r).astype(r.dtype)  # (no version)
    return m.astype(dtype, copy=False), var.astype(dtype, copy=False)


_no_derivative(_update_stats_op, "input")
_update_stats_op.updates_taken = True  # (the running statistics, without a version)


def batch_norm_update_stats(input, running_mean, running_var, momentum):  # noqa: A002
    """``(mean, var)`` per channel of ``input`` (biased variance), and the running statistics
    updated in place with them (the unbiased variance into ``running_var``)."""
    _check_channels(input)
    if input._data.dtype.kind != "f":
        raise NotImplementedError(f'"batch_norm_update_stats_cpu" not implemented for '
                                  f"'{input.dtype.scalar_name}'")
    return _update_stats_op(input, running_mean, running_var, momentum)
