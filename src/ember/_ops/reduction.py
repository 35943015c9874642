"""Reductions: sum, mean, max/min, norms, and sum_to (how broadcasting is undone)."""
from __future__ import annotations

__all__ = ['max', 'mean', 'min', 'norm', 'sum']

import builtins
import collections
import math

import numpy as np

from .. import _dtype as D
from .._tensor import Tensor, _wrap_dim
from .registry import NONE, op
from .pointwise import abs, maximum, minimum, sign, where
from .shape import expand, reshape


def _dims(dim, ndim):
    """A sorted tuple of non-negative dims from an int, a sequence, or None (all dims)."""
    if dim is None or (isinstance(dim, (tuple, list)) and len(dim) == 0):
        return tuple(range(ndim))
    if isinstance(dim, (tuple, list)):
        dims = tuple(sorted(_wrap_dim(d, ndim) for d in dim))
        if len(set(dims)) != len(dims):
            raise RuntimeError(f"dim {dims[0]} appears multiple times in the list of dims")
        return dims
    return (_wrap_dim(dim, ndim),)


def _kept_shape(shape, dims):
    return tuple(1 if i in dims else s for i, s in enumerate(shape))


def _unreduce(x, shape, dim, keepdim):
    """Reshape a reduced tensor so that it broadcasts against the input it came from."""
    if keepdim:
        return x
    return reshape(x, _kept_shape(shape, _dims(dim, len(shape))))


# -- sum_to: the inverse of broadcasting --------------------------------------------------------
@op("sum_to_size", promote=NONE, node="SumToSizeBackward0")
def sum_to(self, shape):
    shape = tuple(shape)
    if self.shape == shape:
        return self
    lead = self.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(
        i + lead for i, s in enumerate(shape) if s == 1 and self.shape[i + lead] != 1)
    return np.sum(self, axis=axes).reshape(shape)


@sum_to.grad("self")
def _(grad, self_shape):
    return expand(grad, self_shape)


# -- sum and mean -------------------------------------------------------------------------------
def _acc_dtype(x, dtype):
    """torch accumulates integers and bools in int64, and float16 in float32."""
    if dtype is not None:
        return dtype.np
    if x.dtype.kind in "biu":
        return np.int64
    return x.dtype


def _reduce_sum(x, axis, keepdim, dtype):
    acc = _acc_dtype(x, dtype)
    if acc == np.float16:
        return np.sum(x, axis=axis, keepdims=keepdim, dtype=np.float32).astype(np.float16)
    return np.sum(x, axis=axis, keepdims=keepdim, dtype=acc)


@op("sum", promote=NONE, node="SumBackward0")
def sum_all(self, dtype=None):
    return _reduce_sum(self, None, False, dtype)


@sum_all.grad("self")
def _(grad, self_shape):
    return expand(grad, self_shape)


@op("sum", promote=NONE, node="SumBackward1")
def sum_dim(self, dim, keepdim=False, dtype=None):
    return _reduce_sum(self, _dims(dim, self.ndim), keepdim, dtype)


@sum_dim.grad("self")
def _(grad, self_shape, dim, keepdim):
    return expand(_unreduce(grad, self_shape, dim, keepdim), self_shape)


def sum(input, dim=None, keepdim=False, *, dtype=None):  # noqa: A001 - torch's name
    """Sum of all elements, or over ``dim`` (an int or a tuple of ints)."""
    if dim is None:
        return sum_all(input, dtype)
    return sum_dim(input, dim, keepdim, dtype)


def _check_mean_dtype(x, dtype):
    if dtype is None and x.dtype.kind not in "fc":
        name = D._BY_NP[x.dtype].scalar_name
        raise RuntimeError("mean(): could not infer output dtype. Input dtype must be either a "
                           f"floating point or complex dtype. Got: {name}")


@op("mean", promote=NONE, node="MeanBackward0")
def mean_all(self, dtype=None):
    _check_mean_dtype(self, dtype)
    s = _reduce_sum(self, None, False, dtype)
    return (s / self.size).astype(s.dtype) if self.size else np.full((), np.nan, s.dtype)


@mean_all.grad("self")
def _(grad, self_shape):
    return expand(grad / builtins.max(math.prod(self_shape), 1), self_shape)


@op("mean", promote=NONE, node="MeanBackward1")
def mean_dim(self, dim, keepdim=False, dtype=None):
    _check_mean_dtype(self, dtype)
    dims = _dims(dim, self.ndim)
    n = math.prod(self.shape[d] for d in dims)
    s = _reduce_sum(self, dims, keepdim, dtype)
    return (s / n).astype(s.dtype) if n else np.full(s.shape, np.nan, s.dtype)


@mean_dim.grad("self")
def _(grad, self_shape, dim, keepdim):
    n = math.prod(self_shape[d] for d in _dims(dim, len(self_shape)))
    return expand(_unreduce(grad, self_shape, dim, keepdim) / n, self_shape)


def mean(input, dim=None, keepdim=False, *, dtype=None):
    """Mean of all elements, or over ``dim``."""
    if dim is None:
        return mean_all(input, dtype)
    return mean_dim(input, dim, keepdim, dtype)


Tensor.sum = sum
Tensor.mean = mean

# -- max / min ----------------------------------------------------------------------------------


def _check_nonempty(x, name):
    if x.size == 0:
        raise RuntimeError(f"{name}(): Expected reduction dim to be specified for input.numel() "
                           "== 0. Specify the reduction dim with the 'dim' argument.")


@op("max", promote=NONE, node="MaxBackward1")
def max_all(self):
    _check_nonempty(self, "max")
    return np.max(self)


@op("min", promote=NONE, node="MinBackward1")
def min_all(self):
    _check_nonempty(self, "min")
    return np.min(self)


def _evenly_distribute(grad, self, result):
    # NOTE: ties share the gradient equally, as torch's evenly_distribute_backward does.
    mask = self == result
    return where(mask, grad / sum_all(mask), 0)


max_all.grad("self")(_evenly_distribute)
min_all.grad("self")(_evenly_distribute)

MaxResult = collections.namedtuple("max", ["values", "indices"])
MinResult = collections.namedtuple("min", ["values", "indices"])
MaxResult.__module__ = MinResult.__module__ = "ember.return_types"


@op("max", promote=NONE, node="MaxBackward0", outputs=2, diff_outputs=(True, False),
    result_type=MaxResult)
def max_dim(self, dim, keepdim=False):
    d = _wrap_dim(dim, self.ndim)
    idx = np.argmax(self, axis=d, keepdims=keepdim)
    return np.max(self, axis=d, keepdims=keepdim), idx


@op("min", promote=NONE, node="MinBackward0", outputs=2, diff_outputs=(True, False),
    result_type=MinResult)
def min_dim(self, dim, keepdim=False):
    d = _wrap_dim(dim, self.ndim)
    idx = np.argmin(self, axis=d, keepdims=keepdim)
    return np.min(self, axis=d, keepdims=keepdim), idx


def _select_back(grads, self_shape, dim, keepdim, result1):
    return value_selecting_backward(grads[0], result1, dim, self_shape, keepdim)


max_dim.grad("self")(_select_back)
min_dim.grad("self")(_select_back)


@op("value_selecting_reduction_backward", promote=NONE, tensors=2,
    node="ValueSelectingReductionBackwardBackward0")
def value_selecting_backward(grad, indices, dim, sizes, keepdim):
    """Scatter ``grad`` into zeros of ``sizes`` at ``indices`` along ``dim``."""
    d = dim % len(sizes)
    if not keepdim:
        grad, indices = np.expand_dims(grad, d), np.expand_dims(indices, d)
    out = np.zeros(sizes, grad.dtype)
    np.put_along_axis(out, indices, grad, axis=d)
    return out


@value_selecting_backward.grad("grad")
def _(grad, indices, dim, keepdim):
    return take_along_dim_keep(grad, indices, dim, keepdim)


@op("take_along_dim", promote=NONE, tensors=2)
def take_along_dim_keep(self, indices, dim, keepdim=True):
    d = dim % self.ndim
    if not keepdim:
        indices = np.expand_dims(indices, d)
    out = np.take_along_axis(self, indices, axis=d)
    return out if keepdim else np.squeeze(out, d)


@take_along_dim_keep.grad("self")
def _(grad, indices, dim, self_shape, keepdim):
    return value_selecting_backward(grad, indices, dim, self_shape, keepdim)


def _minmax(name, all_op, dim_op, binary):
    def f(input, dim=None, keepdim=False, *, out=None):
        if isinstance(dim, Tensor):
            return binary(input, dim)
        if dim is None:
            return all_op(input)
        return dim_op(input, dim, keepdim)
    f.__name__ = name
    return f


max = _minmax("max", max_all, max_dim, maximum)  # noqa: A001 - torch's name
min = _minmax("min", min_all, min_dim, minimum)  # noqa: A001
Tensor.max = max
Tensor.min = min

# -- norms --------------------------------------------------------------------------------------


@op("linalg_vector_norm", promote=NONE)
def linalg_vector_norm(self, ord=2, dim=None, keepdim=False, dtype=None):  # noqa: A002
    if self.dtype.kind not in "fc":
        name = D._BY_NP[self.dtype].scalar_name
        raise RuntimeError("linalg.vector_norm: Expected a floating point or complex tensor as "
                           f"input. Got {name}")
    axis = _dims(dim, self.ndim) if self.ndim else None
    a = np.abs(self)
    if ord == 2:
        out = np.sqrt(np.sum(a * a, axis=axis, keepdims=keepdim))
    elif ord == 1:
        out = np.sum(a, axis=axis, keepdims=keepdim)
    elif ord == math.inf:
        out = np.max(a, axis=axis, keepdims=keepdim)
    elif ord == -math.inf:
        out = np.min(a, axis=axis, keepdims=keepdim)
    elif ord == 0:
        out = np.sum(a != 0, axis=axis, keepdims=keepdim).astype(a.dtype)
    else:
        out = np.sum(a ** ord, axis=axis, keepdims=keepdim) ** (1.0 / ord)
    return out.astype(a.dtype)


@linalg_vector_norm.grad("self")
def _(grad, self, ord, dim, keepdim, result):  # noqa: A002
    shape = self.shape
    g = _unreduce(grad, shape, dim, keepdim)
    r = _unreduce(result, shape, dim, keepdim)
    if ord == 0:
        return self * 0
    if ord == 1:
        return g * sign(self)
    if ord in (math.inf, -math.inf):
        mask = abs(self) == r
        return g * sign(self) * mask / sum_dim(mask, _dims(dim, len(shape)), True)
    safe_r = where(r == 0, 1, r)
    if ord == 2:
        return where(r == 0, 0, g * self / safe_r)
    return where(r == 0, 0, g * self * abs(self) ** (ord - 2) / safe_r ** (ord - 1))


def norm(input, p="fro", dim=None, keepdim=False, dtype=None):
    """Vector norm of ``input`` (p='fro' and p=2 are the 2-norm)."""
    if p == "fro" or p is None:
        p = 2
    if p == "nuc":
        raise NotImplementedError("nuclear norm arrives with the linalg op library")
    return linalg_vector_norm(input, p, dim, keepdim, dtype)


Tensor.norm = norm

