"""Gradient clipping, as torch.nn.utils.clip_grad."""
from __future__ import annotations

import functools
import math
import warnings

import numpy as np

from ..._backend import as_array, get_xp
from ..._dtype import from_numpy_dtype, promote_types
from ..._tensor import Tensor, _wrap
from ...autograd.grad_mode import no_grad


def _as_list(tensors):
    if isinstance(tensors, Tensor):
        return [tensors]
    return list(tensors)


def _refuse_sparse(grads, aten):
    """torch's NotImplementedError for a sparse gradient: its norm and clamp kernels are
    dense only."""
    if any(g.is_sparse for g in grads):
        from ..._ops.sparse import _not_on_sparse
        raise _not_on_sparse(aten)


def _total_norm(grads, norm_type):
    """The norm of the norms of ``grads`` (computed in each gradient's dtype, as torch)."""
    _refuse_sparse(grads, "aten::linalg_vector_norm")
    xp = get_xp(*(g._data for g in grads))
    if norm_type == math.inf:
        norms = [xp.max(xp.abs(g._data)) if g._data.size else xp.zeros((), g._data.dtype)
                 for g in grads]
        return xp.max(_stacked(xp, norms)) if norms else None
    if norm_type == -math.inf:
        norms = [xp.min(xp.abs(g._data)) for g in grads]
        return xp.min(_stacked(xp, norms))
    norms = []
    for g in grads:
        a = xp.abs(g._data.astype(np.float64))
        n = xp.count_nonzero(a) if norm_type == 0 else xp.sum(a ** norm_type) ** (1 / norm_type)
        norms.append(xp.asarray(n).astype(g._data.dtype))
    stacked = _stacked(xp, norms)
    dtype = stacked.dtype
    stacked = stacked.astype(np.float64)
    if norm_type == 0:
        # torch's 0-"norm" of the per-tensor counts: how many gradients have a nonzero entry
        return xp.asarray(xp.count_nonzero(stacked)).astype(dtype)
    return xp.asarray(xp.sum(stacked ** norm_type) ** (1 / norm_type)).astype(dtype)


def _stacked(xp, norms):
    """The norms stacked as torch.stack does: in their promoted dtype (a float32 and a
    float64 gradient's total norm is a float64)."""
    dtype = functools.reduce(promote_types, (from_numpy_dtype(n.dtype) for n in norms))
    return xp.stack([n.astype(dtype.np) for n in norms])


def get_total_norm(tensors, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """The norm of the norms of ``tensors``."""
    tensors = _as_list(tensors)
    norm_type = float(norm_type)
    if not tensors:
        return _wrap(np.asarray(0.0, dtype=np.float32))
    total = _total_norm(tensors, norm_type)
    if error_if_nonfinite and not np.isfinite(total):
        raise RuntimeError(
            f"The total norm of order {norm_type} for gradients from `parameters` is "
            "non-finite, so it cannot be clipped. To disable this error and scale the gradients "
            "by the non-finite norm anyway, set `error_if_nonfinite=False`")
    return _wrap(as_array(total))


def clip_grads_with_norm_(parameters, max_norm, total_norm, foreach=None):
    """Scale the gradients of ``parameters`` in place by ``max_norm / total_norm`` (at most 1)."""
    params = _as_list(parameters)
    grads = [p.grad for p in params if p.grad is not None]
    max_norm = float(max_norm)
    if not grads:
        return
    total = total_norm._data if isinstance(total_norm, Tensor) else np.asarray(total_norm)
    xp = get_xp(total)
    # NOTE: torch computes the coefficient in the norm's dtype; a nan norm (inf gradients) gives
    # a nan coefficient, silently.
    with np.errstate(all="ignore"):
        coef = xp.asarray(max_norm, total.dtype) / (total + xp.asarray(1e-6, total.dtype))
        coef = xp.where(coef > 1.0, xp.asarray(1.0, coef.dtype), coef)
        with no_grad():
            for g in grads:
                # (torch's mul_ by the 0-dim coefficient: a float16 gradient's product is
                # computed in float32 and rounded once)
                g.mul_(_wrap(coef))


def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False,
                    foreach=None):
    """Scale the gradients of ``parameters`` in place so that their total norm is at most
    ``max_norm``; returns the total norm before clipping."""
    params = _as_list(parameters)
    grads = [p.grad for p in params if p.grad is not None]
    total = get_total_norm(grads, norm_type, error_if_nonfinite, foreach)
    clip_grads_with_norm_(params, max_norm, total, foreach)
    return total


def clip_grad_norm(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False,
                   foreach=None):
    """Deprecated alias of :func:`clip_grad_norm_`."""
    warnings.warn("`torch.nn.utils.clip_grad_norm` is now deprecated in favor of "
                  "`torch.nn.utils.clip_grad_norm_`.", FutureWarning, stacklevel=2)
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite, foreach)


def clip_grad_value_(parameters, clip_value, foreach=None):
    """Clamp the gradients of ``parameters`` in place to [-clip_value, clip_value]."""
    clip_value = float(clip_value)
    grads = [p.grad for p in _as_list(parameters) if p.grad is not None]
    if not grads:  # (torch groups the gradients by device first, and an empty list fails)
        raise RuntimeError("Expected !nested_tensorlist[0].empty() to be true, but got false.  "
                           "(Could this error message be improved?  If so, please report an "
                           "enhancement request to PyTorch.)")
    _refuse_sparse(grads, "aten::clamp_" if foreach is False else "aten::clamp_min_")
    with no_grad():
        for grad in grads:
            np.clip(grad._data, -clip_value, clip_value, out=grad._data)
            grad._bump_version()
