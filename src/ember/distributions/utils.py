"""Helpers shared by the distributions: parameter broadcasting, probabilities and logits,
lazily computed parameters, packing lower triangles."""
from __future__ import annotations

import math
from functools import update_wrapper
from numbers import Number

import numpy as np

import ember

from .._ops.registry import broadcast_error
from .._size import Size
from .._tensor import Tensor
from ..overrides import is_tensor_like

euler_constant = 0.57721566490153286060  # Euler-Mascheroni constant

__all__ = ['broadcast_all', 'logits_to_probs', 'clamp_probs', 'probs_to_logits', 'lazy_property',
           'tril_matrix_to_vec', 'vec_to_tril_matrix']


class _FloatInfo:
    """The machine limits the distributions use (eps, tiny, min, max) for a float dtype."""

    def __init__(self, dtype):
        info = np.finfo(dtype.np)
        self.eps, self.tiny = float(info.eps), float(info.tiny)
        self.min, self.max = float(info.min), float(info.max)


def finfo(dtype) -> _FloatInfo:
    return _FloatInfo(dtype)


def broadcast_shapes(*shapes) -> Size:
    """The shape ``shapes`` broadcast to (torch's rules and message)."""
    try:
        return Size(np.broadcast_shapes(*(tuple(s) for s in shapes)))
    except ValueError:
        raise broadcast_error([np.empty(tuple(s), dtype=np.bool_) for s in shapes]) from None


def broadcast_tensors(*tensors):
    """``tensors`` expanded to their common shape."""
    shape = broadcast_shapes(*(t.shape for t in tensors))
    return tuple(t if t.shape == shape else t.expand(shape) for t in tensors)


def broadcast_all(*values):
    """Broadcast numbers and tensor-like values (tensors, objects with a
    ``__torch_function__``) to one shape with ``ember.broadcast_tensors``; numbers become
    tensors of the first tensor's dtype and device (the default dtype when there is no
    tensor)."""
    if not all(is_tensor_like(v) or isinstance(v, Number) for v in values):
        raise ValueError("Input arguments must all be instances of Number, ember.Tensor or "
                         "objects implementing __torch_function__.")
    if not all(is_tensor_like(v) for v in values):
        like = next((v for v in values if isinstance(v, Tensor)), None)
        options = ({"dtype": like.dtype, "device": like.device} if like is not None
                   else {"dtype": ember.get_default_dtype()})
        values = [v if is_tensor_like(v) else ember.tensor(v, **options) for v in values]
    return ember.broadcast_tensors(*values)


def _standard_normal(shape, dtype, device):
    return ember.empty(shape, dtype=dtype, device=device).normal_()


def _sum_rightmost(value, dim):
    """Sum out the ``dim`` rightmost dimensions of ``value``."""
    if dim == 0:
        return value
    return value.reshape(value.shape[:value.dim() - dim] + (-1,)).sum(-1)


def logits_to_probs(logits, is_binary=False):
    """Probabilities from logits: a sigmoid (``is_binary``) or a softmax over the last dim."""
    if is_binary:
        return ember.sigmoid(logits)
    return ember.nn.functional.softmax(logits, dim=-1)


def clamp_probs(probs):
    """``probs`` clamped to [eps, 1 - eps] of their dtype."""
    eps = finfo(probs.dtype).eps
    return probs.clamp(min=eps, max=1 - eps)


def probs_to_logits(probs, is_binary=False):
    """Logits from probabilities (log-odds when ``is_binary``, else log-probabilities)."""
    p = clamp_probs(probs)
    if is_binary:
        return ember.log(p) - ember.log1p(-p)
    return ember.log(p)


class lazy_property:
    """A property computed on first access (with grad enabled) and then stored on the
    instance, so that a distribution given ``probs`` computes ``logits`` only when asked."""

    def __init__(self, wrapped):
        self.wrapped = wrapped
        update_wrapper(self, wrapped)

    def __get__(self, instance, obj_type=None):
        if instance is None:
            return _lazy_property_and_property(self.wrapped)
        with ember.enable_grad():
            value = self.wrapped(instance)
        setattr(instance, self.wrapped.__name__, value)
        return value


class _lazy_property_and_property(lazy_property, property):
    """What a lazy_property looks like on the class: also a property (for introspection)."""

    def __init__(self, wrapped):
        property.__init__(self, wrapped)


def _tril_mask(n, diag, device):
    rows = ember.arange(n, device=device)
    return rows < rows.view(-1, 1) + (diag + 1)


def tril_matrix_to_vec(mat, diag=0):
    """The entries of ``mat`` on and below diagonal ``diag``, row by row."""
    n = mat.shape[-1]
    if diag < -n or diag >= n:
        raise ValueError(f"diag ({diag}) provided is outside [{-n}, {n - 1}].")
    return mat[..., _tril_mask(n, diag, mat.device)]


def vec_to_tril_matrix(vec, diag=0):
    """The lower triangular matrix (below diagonal ``diag``) whose entries are ``vec``."""
    # n solves n (n + 1) / 2 + n * diag = len(vec) (for diag <= 0)
    n = (-(1 + 2 * diag) + ((1 + 2 * diag) ** 2 + 8 * vec.shape[-1]
                            + 4 * abs(diag) * (diag + 1)) ** 0.5) / 2
    if round(n) - n > finfo(vec.dtype).eps:
        raise ValueError(f"The size of last dimension is {vec.shape[-1]} which cannot be "
                         "expressed as the lower triangular part of a square D x D matrix.")
    n = round(n)
    mat = vec.new_zeros(vec.shape[:-1] + Size((n, n)))
    mat[..., _tril_mask(n, diag, vec.device)] = vec
    return mat


def _one_of_probs_logits(probs, logits):
    """Refuse both or neither of ``probs`` and ``logits``; the name and value given."""
    if (probs is None) == (logits is None):
        raise ValueError("Either `probs` or `logits` must be specified, but not both.")
    return ("probs", probs) if probs is not None else ("logits", logits)


def _set_probs_or_logits(dist, probs, logits):
    """Store the given one of ``probs`` / ``logits`` (broadcast to a tensor) on ``dist`` and
    as ``dist._param``; the batch shape it gives (empty for a number)."""
    name, value = _one_of_probs_logits(probs, logits)
    (param,) = broadcast_all(value)
    setattr(dist, name, param)
    dist._param = param
    return Size() if isinstance(value, Number) else param.size()


class _BinaryParams:
    """Parameters of Bernoulli-type distributions: one of ``probs`` / ``logits`` is given (and
    is ``_param``), the other is computed from it on first use."""

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self):
        return logits_to_probs(self.logits, is_binary=True)

    @property
    def param_shape(self):
        return self._param.size()

    def _new(self, *args, **kwargs):
        return self._param.new_empty(*args, **kwargs)


def _mvlgamma(x, p):
    """The multivariate log-gamma function of dimension ``p``."""
    halves = ember.arange(p, dtype=x.dtype, device=x.device) / 2
    return (p * (p - 1) / 4 * math.log(math.pi)
            + ember.lgamma(x.unsqueeze(-1) - halves).sum(-1))
