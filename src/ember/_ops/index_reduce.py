"""index_reduce: ``source``'s slices along ``dim`` reduced (prod, mean, amax, amin) into
``self``'s slices at ``index``.

It is scatter_reduce with the index vector expanded over the other dims of ``source``, so the
kernel and the derivative formulas are scatter_reduce's (torch's index_reduce backward is the
same formula); the node is torch's IndexReduceBackward0.
"""
from __future__ import annotations

import functools

import numpy as np

from .. import _dtype as D
from .._backend import get_xp
from .._numpy_in import warn_once
from .._tensor import Tensor, _wrap, typename
from .indexing import (_REDUCE_UFUNCS, _check_index_dtype, _check_slices_match, _index_setup,
                       _reduce_identity, _scatter_reduce, _wrap_dim, scatter_reduce_grads)
from .pointwise import no_forward_ad
from .registry import NONE, op
from .strided import refuse_filling_empty

__all__ = ["index_reduce"]
_REDUCTIONS = ("prod", "mean", "amax", "amin")


def _expanded(index, source, dim):
    """The index vector broadcast over ``source``'s shape along ``dim`` (scatter's index)."""
    raw = index._data if isinstance(index, Tensor) else index
    src = source._data if isinstance(source, Tensor) else source
    if src.ndim == 0:
        out = raw.reshape(())
    else:
        shape = [1] * src.ndim
        shape[dim] = raw.size
        out = get_xp(raw).broadcast_to(raw.reshape(shape), src.shape)
    return _wrap(out) if isinstance(source, Tensor) else out


def _check(self, index, source, dim, reduce, include_self=True, *, into_self=False):
    """torch's refusals in its order: the argument parser's, the reduce's, the meta function's
    (index, dtypes, sizes), then the kernel's (the identity's index_fill_, the index range)."""
    if reduce not in _REDUCTIONS:
        raise RuntimeError("index_reduce(): Expected reduce to be one of prod, mean, amax or "
                           f"amin but got {reduce}.")
    _check_index_dtype(index._data, "index_reduce_(): Expected dtype int32/int64 for index but "
                       f"got: {D._BY_NP[index._data.dtype].scalar_name}")
    _index_setup(self._data, index._data, source._data, dim, "index_reduce_", bounds=False)
    _check_slices_match(tuple(self.shape), tuple(source.shape), dim % max(self.ndim, 1))
    raw = index._data.reshape(-1) if index.ndim <= 1 else index._data
    size = self.shape[_wrap_dim(dim, self.ndim)] if self.ndim else 1
    if raw.ndim == 1 and ((raw < 0) | (raw >= size)).any():  # negative ones too, as torch
        if not include_self:  # (torch's index_fill_ of the identity runs first, and refuses)
            if size == 0:
                refuse_filling_empty(self, raw.size, _wrap_dim(dim, max(self.ndim, 1)),
                                      into_self)
            bad = raw[(raw < -size) | (raw >= size)]
            if bad.size:
                raise IndexError(f"index {int(bad[0])} is out of bounds for dimension "
                                 f"{_wrap_dim(dim, max(self.ndim, 1))} with size {size}")
        if size == 0 and self.ndim > 1:  # (torch's kernel selects self's first slice first)
            d = _wrap_dim(dim, self.ndim)
            raise IndexError(f"select(): index 0 out of range for tensor of size "
                             f"{list(self.shape)} at dimension {d}")
        raise IndexError("index out of range in self")


@op("index_reduce", tensors=3, promote=NONE, node="IndexReduceBackward0", check=_check)
def _index_reduce(self, index, source, dim, reduce, include_self=True):
    d = dim % max(self.ndim, 1)
    return _scatter_reduce(self, _expanded(index, source, d), source, d, reduce, include_self)


@_index_reduce.grad("self", "source")
def _(grad, self, index, source, dim, reduce, include_self, result):
    d = dim % max(self.ndim, 1)
    return scatter_reduce_grads(grad, self, _expanded(index, source, d), source, d, reduce,
                                include_self, result)


_index_reduce.jvp("self", "source")(no_forward_ad("index_reduce"))
_index_reduce.inplace_check = functools.partial(_check, into_self=True)


def _index_reduce_into_self(self, index, source, dim, reduce, include_self=True):
    """index_reduce_'s kernel: torch's fills self's indexed slices with the reduction's
    identity (without include_self), then reduces ``source``'s slices into them one after the
    other, each read as it is then: a source sharing self's memory gives the values written
    before (and the identity), and only then divides the means by their counts."""
    out = _index_reduce.kernel(self, index, source, dim, reduce, include_self)
    if (type(self) is not np.ndarray or type(source) is not np.ndarray
            or not np.may_share_memory(self, source)):
        return out
    d = dim % max(self.ndim, 1)
    target = self.reshape(1) if self.ndim == 0 else self  # (a view: writes reach self)
    read = source.reshape(1) if source.ndim == 0 else source
    rows = index.reshape(-1)
    if not include_self:
        np.moveaxis(target, d, 0)[rows] = _reduce_identity(reduce, self.dtype)
    combine = getattr(np, _REDUCE_UFUNCS[reduce])
    for i, row in enumerate(rows.tolist()):
        into = np.moveaxis(target, d, 0)[row:row + 1]  # (slices: views, even of 1-D arrays)
        into[...] = combine(into, np.moveaxis(read, d, 0)[i:i + 1])
    if reduce == "mean":
        count = np.zeros(target.shape[d], np.int64)
        np.add.at(count, rows, 1)
        count = np.maximum(count + (1 if include_self else 0), 1)
        count = count.reshape((-1,) + (1,) * (target.ndim - 1 - d))
        target[...] = target // count if self.dtype.kind in "iu" else target / count
    return self


_index_reduce.inplace_kernel = _index_reduce_into_self


def _warn_beta():
    # torch's TORCH_WARN_ONCE: once per process, every time under set_warn_always(True)
    warn_once("index_reduce() is in beta and the API may change at any time. (Triggered "
              "internally at /__w/pytorch/pytorch/aten/src/ATen/native/"
              "TensorAdvancedIndexing.cpp:1523.)", 3)


def _refuse_non_tensors(name, arguments):
    """torch's argument parser: each of ``arguments`` ((name, position, value), positions as
    the public signature counts them) must be a Tensor."""
    for arg, position, value in arguments:
        if not isinstance(value, Tensor):
            raise TypeError(f"{name}(): argument '{arg}' (position {position}) must be Tensor, "
                            f"not {typename(value)}")


def index_reduce(input, dim, index, source, reduce, *, include_self=True):  # noqa: A002
    """Reduce the slices of ``source`` into those of ``input`` at ``index`` along ``dim``."""
    _refuse_non_tensors("index_reduce", (("input", 1, input), ("index", 3, index),
                                         ("source", 4, source)))
    result = _index_reduce(input, index, source, dim, reduce, include_self)
    _warn_beta()  # (torch warns once its checks have passed)
    return result


def _index_reduce_(self, dim, index, source, reduce, *, include_self=True):
    _refuse_non_tensors("index_reduce_", (("index", 2, index), ("source", 3, source)))
    result = _index_reduce.inplace(self, index, source, dim, reduce, include_self)
    _warn_beta()
    return result


def _index_reduce_method(self, dim, index, source, reduce, *, include_self=True):
    _refuse_non_tensors("index_reduce", (("index", 2, index), ("source", 3, source)))
    return index_reduce(self, dim, index, source, reduce, include_self=include_self)


Tensor.index_reduce = _index_reduce_method
Tensor.index_reduce_ = _index_reduce_
