"""torch's ``native_*`` normalization and dropout functions: the fused ops behind
``F.batch_norm``, ``F.layer_norm``, ``F.group_norm`` and dropout, returning what they save for
backward beside their output (the statistics, the dropout mask); and ``norm_except_dim``, the
norm ``weight_norm`` divides by.

The outputs come from normalization.py's ops (same nodes: NativeBatchNormBackward0, ...). The
statistics native_batch_norm and native_layer_norm return are not differentiable in torch
either; native_group_norm's are, so they are computed here with ember ops.
"""
from __future__ import annotations

__all__ = ["native_batch_norm", "native_dropout", "native_group_norm", "native_layer_norm",
           "native_norm", "norm_except_dim"]

import numpy as np

from .. import _dtype as D
from .._backend import get_xp
from .._tensor import _wrap
from .normalization import (_const, _int_tuple, _normalized, checked_batch_norm,
                            training_stats)
from .registry import NONE, op
from .statistics import _vector_norm_grad, linalg_vector_norm, norm_dim


def _stat_dtype(input, param):  # noqa: A002
    """torch's dtype for saved statistics: a float32 parameter's under a float16 input."""
    if param is not None and param.dtype != input.dtype:
        return param.dtype.np
    return input._data.dtype


def _plain(array):
    return _wrap(array)


# -- batch norm ---------------------------------------------------------------------------------
def native_batch_norm(input, weight, bias, running_mean, running_var, training, momentum,  # noqa: A002
                      eps):
    """``(output, save_mean, save_invstd)``: batch normalization and, in training, the batch's
    per-channel mean and 1/sqrt(biased variance + eps) (empty tensors in evaluation)."""
    # (the statistics before the running ones are updated: the output's own call does that)
    dtype = _stat_dtype(input, weight if weight is not None else running_mean)
    data = input._data
    xp = get_xp(data)
    if training and data.size == 0:
        raise RuntimeError("input tensor must have at least one element, but got input_sizes "
                           f"= {list(input.shape)}")
    if training:
        axes = (0,) + tuple(range(2, input.ndim))
        with np.errstate(all="ignore"):
            m, _, rstd = training_stats(data.astype(dtype), axes, eps)
        mean, invstd = m.reshape(-1), rstd.reshape(-1)
    else:
        mean = invstd = xp.empty((0,), dtype)
    out = checked_batch_norm(input, weight, bias, running_mean, running_var, bool(training),
                             momentum, eps)
    return out, _plain(mean), _plain(invstd)


# -- layer norm ---------------------------------------------------------------------------------
def native_layer_norm(input, normalized_shape, weight, bias, eps):  # noqa: A002
    """``(output, mean, rstd)``: layer normalization over the last dimensions, and each
    row's mean and 1/sqrt(biased variance + eps), shaped ``input.shape[:-k] + (1,) * k``."""
    from .normalization import layer_norm, layer_norm_stats
    shape = _int_tuple(normalized_shape, "native_layer_norm")
    out = layer_norm(input, shape, weight, bias, eps)
    axes = tuple(range(input.ndim - len(shape), input.ndim))
    data = input._data
    with np.errstate(all="ignore"):
        m, rstd = layer_norm_stats(data.astype(_stat_dtype(input, weight)), axes, eps)
    return out, _plain(m), _plain(rstd)


# -- group norm ---------------------------------------------------------------------------------
def native_group_norm(input, weight, bias, N, C, HxW, group, eps):  # noqa: A002, N803
    """``(output, mean, rstd)``: group normalization of ``input`` (N, C, *) in ``group``
    groups of channels, and each group's mean and 1/sqrt(biased variance + eps), (N, group).
    All three are differentiable, as in torch."""
    from .normalization import checked_group_norm
    if input.numel() != N * C * HxW:
        raise RuntimeError("Expected X.numel() == N * C * HxW to be true, but got false.  "
                           "(Could this error message be improved?  If so, please report an "
                           "enhancement request to PyTorch.)")
    out = checked_group_norm(input, group, weight, bias, eps)
    x = input.reshape(N, group, C * HxW // group)
    if _stat_dtype(input, weight) != input._data.dtype:
        x = x.to(D._BY_NP[np.dtype(_stat_dtype(input, weight))])
    xhat, rstd = _normalized(x, (2,), eps)
    mean = x.mean(2)
    return out, mean, rstd.reshape(N, group)


# -- dropout ------------------------------------------------------------------------------------
@op("native_dropout", promote=NONE, node="NativeDropoutBackward0")
def _native_dropout(input, mask, scale, grad_scale):  # noqa: A002
    return (input * mask.astype(input.dtype)) * input.dtype.type(scale)


@_native_dropout.grad("input")
def _(grad, mask, grad_scale):
    return grad * _const(mask, grad) * grad_scale


def _bernoulli_mask(input, keep):  # noqa: A002
    """torch's ``empty_like(input).bernoulli_(keep)``, as a bool array."""
    from .._random import fill
    from .._random.generator import draw_for
    data = input._data
    like = np.empty(data.shape, data.dtype) if type(data) is not np.ndarray else (
        np.empty_like(data, order="K"))
    mask = fill.bernoulli_scalar(like, keep, draw_for(None, input.device))
    return get_xp(data).asarray(mask) != 0


def native_dropout(input, p, train):  # noqa: A002
    """``(output, mask)``: dropout (when ``train`` is True or None) that keeps each element with
    probability 1 - p and scales it by 1/(1-p), and the bool mask of the kept elements."""
    data = input._data
    xp = get_xp(data)
    if input.numel() == 0:
        return input, _plain(xp.empty(data.shape, data.dtype))
    if train is None or train:
        keep = 1.0 - p
        if not 0.0 <= keep <= 1.0:
            raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={keep}")
        if data.dtype.kind not in "fc":
            raise RuntimeError(f"result type Float can't be cast to the desired output type "
                               f"{input.dtype.scalar_name}")
        mask = _bernoulli_mask(input, keep)
        scale = 0.0 if keep == 0 else 1.0 / keep
    else:
        mask, scale = xp.ones(data.shape, bool), 1.0
    # NOTE: torch's derivative scales by 1/(1-p) only when train is True: with train=None the
    # output is scaled but its gradient is not (torch's formula, kept for equal gradients).
    grad_scale = scale if train else 1.0
    return _native_dropout(input, mask, scale, grad_scale), _plain(mask)


# -- norms --------------------------------------------------------------------------------------
def native_norm(input, p=2, dim=None, keepdim=False, dtype=None):  # noqa: A002
    """torch's kernel for sparse tensors only: ember's tensors are dense, so it raises
    torch's error for a dense tensor (use ``ember.linalg.vector_norm``)."""
    from .._out import cpu_backend_error
    raise NotImplementedError(cpu_backend_error("aten::native_norm"))


@op("norm_scalar", aten="aten::norm", promote=NONE, quiet=True, node="NormBackward0")
def _norm_all(self, ord):
    """``at::norm(self, p)``: the ``p``-norm of every element (torch's Scalar overload)."""
    return linalg_vector_norm.kernel(self, ord, None, False, None)


@_norm_all.grad("self")
def _(grad, self, ord, result):
    return _vector_norm_grad(grad, self, ord, None, False, result)


def norm_except_dim(v, pow=2, dim=0):  # noqa: A002
    """The ``pow``-norm of ``v`` over every dimension but ``dim`` (shape 1 there but at
    ``dim``); ``dim=-1``: the norm of all of ``v``."""
    if dim == -1:
        return _norm_all(v, pow)
    if dim == 0:
        size = (v.shape[0],) + (1,) * (v.ndim - 1)
        return norm_dim(v.contiguous().view(v.shape[0], -1), pow, (1,)).view(size)
    if dim == v.ndim - 1:
        size = (1,) * (v.ndim - 1) + (v.shape[-1],)
        return norm_dim(v.contiguous().view(-1, v.shape[-1]), pow, (0,)).view(size)
    return norm_except_dim(v.transpose(0, dim), pow, 0).transpose(0, dim)

