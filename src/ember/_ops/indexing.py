"""Indexing ops: gather/scatter, index_* and masked_* ops, take, triangles and diagonals.

Index tensors are data, never differentiated. Accumulating writes (scatter_add, index_add, the
gradients of gather, index_select and take) go through the backend's ``scatter_add`` so that
repeated indices add up on NumPy and CuPy alike. Triangles, diagonals and trace are
in diagonal.py, padding (``nn.functional.pad``) in pad.py; this module re-exports both.
"""
from __future__ import annotations

__all__ = ['diag', 'diag_embed', 'diagonal', 'gather', 'index_add', 'index_copy', 'index_fill',
           'index_put', 'index_select', 'masked_fill', 'masked_scatter', 'masked_select', 'scatter',
           'scatter_add', 'scatter_reduce', 'take', 'take_along_dim', 'trace', 'tril', 'triu']


import numpy as np

from .._backend import asarray_like, get_xp
from .._backend.layout import copy_in_format
from .._backend import scatter_reduce as _reduce_at
from .._backend import scatter_add as _accumulate
from .._info import check_scalar
from .._numpy_in import warn_once
from .._tensor import Tensor, _wrap, _wrap_dim
from ..autograd._grad_versions import note_writes
from .registry import NONE, method_refusals, op
from .scatter_order import visited_before_error
from .strided import refuse_filling_empty
from .shape import check_reduced_put

# nn.functional names (ember.nn.functional collects FUNCTIONAL of every nn family).
FUNCTIONAL = ["pad"]


# -- helpers -------------------------------------------------------------------------------------
def _data(x):
    return x._data if isinstance(x, Tensor) else x


def _const(like, array):
    """``array`` as a constant of the same kind as ``like`` (a Tensor under create_graph)."""
    return _wrap(array) if isinstance(like, Tensor) else array


def _zeros(like, shape):
    d = _data(like)
    return _const(like, get_xp(d).zeros(tuple(shape), d.dtype))


def _dim_index(index, dim):
    """The NumPy key that addresses ``out[i, ..., index[i, ...], ...]`` (gather's pattern)."""
    xp = get_xp(index)
    nd = index.ndim
    return tuple(index if i == dim else
                 xp.arange(n).reshape([n if j == i else 1 for j in range(nd)])
                 for i, n in enumerate(index.shape))


def _axis_key(dim, index):
    """``x[:, ..., index]`` with ``index`` on axis ``dim``."""
    return (slice(None),) * dim + (index,)


def _check_index_dtype(index, what, ok="iu"):
    if index.dtype.kind not in ok:
        raise RuntimeError(what)


def _check_bounds(index, size, dim, exc=RuntimeError, prefix="", negative=False):
    low = -size if negative else 0
    bad = (index < low) | (index >= size)
    if bad.any():
        first = int(index[bad].reshape(-1)[0])
        raise exc(f"{prefix}index {first} is out of bounds for dimension {dim} with size {size}")


def _check_gather_shapes(self, index, dim, src=None, bounds=True, self_name="input"):
    """torch's checks of gather's (``self_name`` "input") and the scatters' ("self")
    shapes."""
    nd = max(self.ndim, 1)
    if max(index.ndim, 1) != nd:
        raise RuntimeError("Index tensor must have the same number of dimensions as "
                           f"{self_name} tensor")
    if src is not None and max(src.ndim, 1) != nd:
        raise RuntimeError("Index tensor must have the same number of dimensions as src tensor")
    ishape, sshape = index.shape or (1,), self.shape or (1,)
    for i in range(nd):
        if src is not None and (ishape[i] > (src.shape or (1,))[i]
                                or (i != dim and ishape[i] > sshape[i])):
            raise RuntimeError(f"Expected index {list(index.shape)} to be no larger than self "
                               f"{list(self.shape)} apart from dimension {dim} and to be no "
                               f"larger size than src {list(src.shape)}")
        if src is None and i != dim and ishape[i] > sshape[i]:
            raise RuntimeError(f"Size does not match at dimension {i} expected index "
                               f"{list(index.shape)} to be no larger than self "
                               f"{list(self.shape)} apart from dimension {dim}")
    if bounds:
        _check_bounds(index, sshape[dim], dim)


def _shaped_as(out, self):
    """A kernel's result ``out`` (computed on ``self`` seen as at least 1-D) in ``self``'s
    shape: a 0-d view only for a 0-d ``self``, so that a gradient made so owns its memory (the
    engine sums a second gradient into such a one in place, as torch's into its new tensor)."""
    return out if out.shape == self.shape else out.reshape(self.shape)


def _scatter_setup(self, index, dim, src=None):
    """Checks and the (self as >= 1-D, key, src part, error) a scatter kernel works with.
    With an index out of bounds, key and part are those of the elements torch's kernel
    writes before it meets it, and error what it then raises (see ``_written_then``)."""
    _check_index_dtype(index, "scatter(): Expected dtype int64 for index", "i")
    d = _wrap_dim(dim, self.ndim)
    _check_gather_shapes(self, index, d, src, bounds=False, self_name="self")
    if src is not None and src.dtype != self.dtype:
        raise RuntimeError("scatter(): Expected self.dtype to be equal to src.dtype")
    flat = self.reshape(self.shape or (1,))
    index = index.reshape(index.shape or (1,))
    src = None if src is None else src.reshape(src.shape or (1,))
    key = _dim_index(index, d)
    part = None if src is None else src[tuple(slice(0, n) for n in index.shape)]
    refused = visited_before_error(index, d, flat.shape[d],
                                   [a for a in (flat, src, index) if a is not None])
    if refused is None:
        return flat, key, part, None
    message, done = refused
    xp = get_xp(index)
    key = tuple(xp.broadcast_to(k, index.shape)[done] for k in key)
    return flat, key, None if part is None else part[done], RuntimeError(message)


def _written_then(error, out, self):
    """``out`` (self's new value), or ``error`` carrying it: an in-place call writes what
    torch's kernel wrote before it refused (inplace._inplace_call), an out-of-place one
    just raises."""
    if error is None:
        return _shaped_as(out, self)
    error.written = _shaped_as(out, self)
    raise error


# -- gather and the scatter family ------------------------------------------------------------------
@op("gather", tensors=2, promote=NONE)
def _gather(self, index, dim, sparse_grad=False):
    _check_index_dtype(index, "gather(): Expected dtype int32/int64 for index")
    d = _wrap_dim(dim, self.ndim)
    _check_gather_shapes(self, index, d)
    flat = self.reshape(self.shape or (1,))
    return flat[_dim_index(index.reshape(index.shape or (1,)), d)].reshape(index.shape)


@_gather.grad("self", writes=1)
def _(grad, self, index, dim):
    # NOTE: only self's shape is needed, but torch saves self (an in-place change of it makes
    # backward raise, and saved tensor hooks see it): so does ember.
    return _scatter_add(_zeros(grad, self.shape), index, grad, dim)


def gather(input, dim, index, *, sparse_grad=False, out=None):
    """Values of ``input`` along ``dim`` at ``index``: ``out[i][j] = input[index[i][j]][j]``."""
    return _gather(input, index, dim, sparse_grad)


@op("scatter_add", tensors=3, promote=NONE, writes=1)
def _scatter_add(self, index, src, dim):
    flat, key, part, error = _scatter_setup(self, index, dim, src)
    out = flat.copy()
    return _written_then(error, _accumulate(out, key, part), self)


@_scatter_add.grad("self")
def _(grad):
    return grad


@_scatter_add.grad("src")
def _(grad, index, dim):
    return _gather(grad, index, dim)


def _tangent_or_zeros(tangent, primal):
    """An input's tangent, zeros where it has none (torch's ZeroTensor)."""
    return _zeros(primal, primal.shape) if tangent is None else tangent


# torch's forward formulas scatter the tangents as the op scatters the values (the whole of
# src's tangent, of which the index takes its part), where the tangent derived from the
# gradient of src (a gather of index's shape) refused a src larger than index
@_scatter_add.jvp("self", "src", joint=True)
def _(tangents, self, index, src, dim):
    self_t, src_t = tangents
    return _scatter_add(_tangent_or_zeros(self_t, self), index, _tangent_or_zeros(src_t, src),
                        dim)


def scatter_add(input, dim, index, src):
    """``input`` with ``src`` added at ``index`` along ``dim`` (repeated indices add up)."""
    return _scatter_add(input, index, src, dim)


@op("scatter", tensors=3, promote=NONE, node="ScatterBackward0", writes=1)
def _scatter_src(self, index, src, dim):
    flat, key, part, error = _scatter_setup(self, index, dim, src)
    out = flat.copy()
    out[key] = part
    return _written_then(error, out, self)


@_scatter_src.grad("self")
def _(grad, index, dim):
    return _scatter_value(grad, index, dim, 0)


@_scatter_src.grad("src")
def _(grad, index, dim):
    return _gather(grad, index, dim)


@_scatter_src.jvp("self", "src", joint=True)
def _(tangents, self, index, src, dim):
    self_t, src_t = tangents
    return _scatter_src(_tangent_or_zeros(self_t, self), index, _tangent_or_zeros(src_t, src),
                        dim)


@op("scatter", tensors=2, promote=NONE, node="ScatterBackward1", writes=1)
def _scatter_value(self, index, dim, value):
    flat, key, _, error = _scatter_setup(self, index, dim)
    out = flat.copy()
    out[key] = value
    return _written_then(error, out, self)


@_scatter_value.grad("self")
def _(grad, index, dim):
    return _scatter_value(grad, index, dim, 0)


_NO_SCATTER_REDUCE_GRAD = "derivative for aten::scatter is not implemented"


@op("scatter", tensors=3, promote=NONE, node="NotImplemented", number_node="NotImplemented",
    writes=1)
def _scatter_reduce_arg(self, index, src, dim, reduce, is_value=False):
    """scatter(..., reduce='add' | 'multiply'): torch does not differentiate it either."""
    if reduce not in ("add", "multiply"):
        raise RuntimeError("reduce argument must be either add or multiply.")
    flat, key, part, error = _scatter_setup(self, index, dim, None if is_value else src)
    if is_value:
        part = src
    out = flat.copy()
    if reduce == "add":
        _accumulate(out, key, part)
    else:
        _reduce_at("multiply", out, key, part)
    return _written_then(error, out, self)


@_scatter_reduce_arg.grad("self", "src")
def _(grad):
    raise RuntimeError(_NO_SCATTER_REDUCE_GRAD)


@_scatter_reduce_arg.jvp("self", "src")
def _(*_):
    raise NotImplementedError("Trying to use forward AD with aten::scatter that does not "
                              "support it.")


def _warn_reduce_with_tensor_src(dim, index, reduce):
    """torch's TORCH_WARN_ONCE for ``reduce=`` with a Tensor src: one flag for scatter and
    scatter_, given on the caller's line before the kernel's checks, but not for a call that
    torch's parser refuses (a ``reduce`` that is no string, say)."""
    if not (isinstance(reduce, str) and isinstance(index, Tensor) and isinstance(dim, int)):
        return
    from .inplace import _user_stacklevel
    warn_once("The reduce argument of ember.scatter with Tensor src is deprecated and will be "
              "removed in a future PyTorch release. Use ember.scatter_reduce instead for more "
              "reduction options. (Triggered internally at "
              "/__w/pytorch/pytorch/aten/src/ATen/native/TensorAdvancedIndexing.cpp:225.)",
              _user_stacklevel())


def scatter(input, dim, index, src=None, value=None, *, reduce=None):
    """``input`` with ``src`` (a tensor or a number) written at ``index`` along ``dim``."""
    if src is None:
        src = value
    if reduce is not None:
        if isinstance(src, Tensor):
            _warn_reduce_with_tensor_src(dim, index, reduce)
            return _scatter_reduce_arg(input, index, src, dim, reduce)
        src = asarray_like(src, input._data, input._data.dtype)
        return _scatter_reduce_arg(input, index, src, dim, reduce, True)
    if isinstance(src, Tensor):
        return _scatter_src(input, index, src, dim)
    return _scatter_value(input, index, dim, src)


def _scatter_(self, dim, index, src=None, value=None, *, reduce=None):
    if src is None:
        src = value
    if reduce is not None:
        if isinstance(src, Tensor):
            _warn_reduce_with_tensor_src(dim, index, reduce)
            return _scatter_reduce_arg.inplace(self, index, src, dim, reduce)
        src = asarray_like(src, self._data, self._data.dtype)
        return _scatter_reduce_arg.inplace(self, index, src, dim, reduce, True)
    if isinstance(src, Tensor):
        return _scatter_src.inplace(self, index, src, dim)
    return _scatter_value.inplace(self, index, dim, src)


_REDUCE_UFUNCS = {"sum": "add", "mean": "add", "prod": "multiply", "amax": "maximum",
                  "amin": "minimum"}


def _reduce_identity(reduce, dtype):
    if reduce in ("sum", "mean"):
        return 0
    if reduce == "prod":
        return 1
    if dtype.kind == "f":
        return -np.inf if reduce == "amax" else np.inf
    if dtype.kind == "b":
        return reduce != "amax"
    info = np.iinfo(dtype)
    return info.min if reduce == "amax" else info.max


@op("scatter_reduce", tensors=3, promote=NONE)
def _scatter_reduce(self, index, src, dim, reduce, include_self=True):
    if reduce not in _REDUCE_UFUNCS:
        raise RuntimeError("reduce argument must be either sum, prod, mean, amax or amin, got "
                           f"{reduce}")
    flat, key, part, error = _scatter_setup(self, index, dim, src)
    xp = get_xp(flat)
    out = flat.copy()
    if not include_self:
        # torch first scatters the identity (a scatter of a value: its own visiting order)
        # into the positions reduced into; an index out of bounds stops it there
        if error is not None:
            _, key, _, error = _scatter_setup(self, index, dim)
            out[key] = _reduce_identity(reduce, out.dtype)
            return _written_then(error, out, self)
        out[key] = _reduce_identity(reduce, out.dtype)
    name = _REDUCE_UFUNCS[reduce]
    if name == "add":
        _accumulate(out, key, part)
    else:
        _reduce_at(name, out, key, part)
    if error is not None:  # (the elements reduced before it, mean's division not made)
        return _written_then(error, out, self)
    if reduce == "mean":
        count = xp.full(out.shape, 1 if include_self else 0, np.int64)
        _accumulate(count, key, xp.ones(part.shape, np.int64))
        count[count == 0] = 1
        out = out // count if out.dtype.kind in "iu" else (out / count).astype(out.dtype)
    return _shaped_as(out, self)


@_scatter_reduce.grad("self", "src")
def scatter_reduce_grads(grad, self, index, src, dim, reduce, include_self, result):
    """(d self, d src) of scatter_reduce (index_reduce's too, with its index expanded)."""
    if reduce == "sum":
        g_self, g_src = grad, _gather(grad, index, dim)
    elif reduce == "mean":
        count = _scatter_add(_full(grad, grad.shape, 1 if include_self else 0), index,
                             _full(grad, src.shape, 1), dim)
        count = _const(grad, get_xp(_data(count)).maximum(_data(count), 1))
        g_self, g_src = grad / count, _gather(grad, index, dim) / _gather(count, index, dim)
    elif reduce == "prod":
        g_self, g_src = _prod_backward(grad, self, index, src, dim, include_self, result)
    else:
        # NOTE: ties share the gradient evenly, and an excluded self that equals the result
        # still counts as a tie: torch's formula, reproduced as it is.
        self_is = _mask_as(_data(self) == _data(result), grad)
        src_is = _mask_as(_data(src) == _data(_gather(_data(result), _data(index), dim)), grad)
        share = grad / _scatter_add(self_is, index, src_is, dim)
        g_self, g_src = share * self_is, _gather(share, index, dim) * src_is
    if not include_self:
        g_self = _scatter_value(g_self, index, dim, 0)
    return g_self, g_src


@_scatter_reduce.jvp("self", "src", joint=True)
def _(tangents, self, index, src, dim, reduce, include_self, result):
    """torch's scatter_reduce_jvp for sum, mean, amax and amin (the ties of amax and amin
    share the tangent evenly); for prod, the derivative (see docs/gradients.md): each
    element's tangent times its partial derivative, the gradient formula's at grad = 1."""
    self_t, src_t = (_tangent_or_zeros(t, p) for t, p in zip(tangents, (self, src)))
    if reduce in ("sum", "mean"):
        return _scatter_reduce(self_t, index, src_t, dim, reduce, include_self)
    if reduce == "prod":
        if index.ndim:  # (the part of src the index reads)
            part = tuple(slice(0, n) for n in index.shape)
            src, src_t = src[part], src_t[part]
        d_self, d_src = scatter_reduce_grads(_full(result, result.shape, 1), self, index, src,
                                             dim, reduce, include_self, result)
        return self_t * d_self + _scatter_add(_full(result, result.shape, 0), index,
                                              src_t * d_src, dim)
    self_is = (self == result).to(result.dtype)
    src_is = (src == _gather(result, index, dim)).to(result.dtype)
    count = _scatter_reduce(self_is, index, src_is, dim, "sum", include_self)
    return _scatter_reduce(self_t * self_is, index, src_t * src_is, dim, "sum",
                           include_self) / count


def _full(like, shape, value):
    d = _data(like)
    return _const(like, get_xp(d).full(tuple(shape), value, d.dtype))


def _mask_as(mask, like):
    """A boolean array as a constant in ``like``'s dtype (and kind: array or Tensor)."""
    return _const(like, mask.astype(_data(like).dtype))


def _prod_backward(grad, self, index, src, dim, include_self, result):
    """torch's scatter_reduce 'prod' gradient, exact where single zeros are scattered."""
    from .pointwise import where
    masked_self = masked_fill(self, _const(grad, _data(self) == 0), 1)
    masked_self_result = _scatter_reduce(masked_self, index, src, dim, "prod", include_self)
    g_self = grad * masked_self_result / masked_self
    src_zero = _data(src) == 0
    n_zeros = _data(_gather(_scatter_add(_full(grad, self.shape, 0), index,
                                         _mask_as(src_zero, grad), dim), index, dim))
    single = _const(grad, src_zero & (n_zeros == 1))
    masked_src_result = _scatter_reduce(self, index, masked_fill(src, single, 1), dim, "prod",
                                        include_self)
    g_src = where(single, _gather(grad * masked_src_result, index, dim),
                  _gather(grad * result, index, dim)
                  / masked_fill(src, _const(grad, src_zero), 1))
    return g_self, g_src


def scatter_reduce(input, dim, index, src, reduce, *, include_self=True, out=None):
    """Reduce ``src`` into ``input`` at ``index`` along ``dim`` (sum, prod, mean, amax, amin)."""
    return _scatter_reduce(input, index, src, dim, reduce, include_self)


# -- index_select, index_add, index_copy, index_fill -----------------------------------------------
def _vector_index(index, what):
    if index.ndim > 1:
        raise IndexError(what)
    return index.reshape(-1)


@op("index_select", tensors=2, promote=NONE, conj_saved=True)
def _index_select(self, index, dim):
    _check_index_dtype(index, "index_select(): Expected dtype int32 or int64 for index")
    index = _vector_index(index, "index_select(): Index is supposed to be a vector")
    if self.ndim == 0:
        if index.size != 1:
            raise RuntimeError(f"index_select(): Index to scalar can have only 1 value, got "
                             f"{index.size} value(s)")
        _wrap_dim(dim, 0)
        if (index < 0).any() or (index >= 1).any():
            raise IndexError("index out of range in self")
        return self.copy()
    d = _wrap_dim(dim, self.ndim)
    _check_select_range(self, index, d)
    return get_xp(self).take(self, index, axis=d)


def _check_select_range(self, index, d):
    """torch's index_select range checks: its kernel for more than one dimension checks an
    empty input, and dimension 1 of any input, before copying, with messages of their own."""
    n = self.shape[d]
    bad = (index < 0) | (index >= n)
    if self.ndim > 1 and index.size and (self.size == 0 or d == 1):
        if n == 0:
            raise RuntimeError("index_select(): self indexing axis dim should be positive")
        if bad.any():
            raise RuntimeError(f"INDICES element is out of DATA bounds, "
                               f"id={int(index[bad][0])} axis_dim={n}")
    elif bad.any():
        raise IndexError("index out of range in self")


@_index_select.grad("self", writes=1)
def _(grad, self_shape, index, dim):
    return _index_add(_zeros(grad, self_shape), index, grad, dim, 1)


def index_select(input, dim, index, *, out=None):
    """The slices of ``input`` along ``dim`` at the positions ``index`` (a copy)."""
    return _index_select(input, index, dim)


def _check_slices_match(self_shape, source_shape, d):
    # index_add's own check (torch's index_copy broadcasts a 0-d source instead)
    others = [n for k, n in enumerate(self_shape) if k != d]
    if (len(source_shape) != len(self_shape)
            or [n for k, n in enumerate(source_shape) if k != d] != others):
        raise RuntimeError("source tensor shape must match self tensor shape, excluding the "
                           f"specified dimension. Got self.shape = {list(self_shape)} "
                           f"source.shape = {list(source_shape)}")


def _index_setup(self, index, source, dim, name, exc=IndexError, bounds=True):
    """torch's index_func_meta_impl checks (and, with ``bounds``, the index range); the self
    and source of the kernel, with the index as a vector and the wrapped dim."""
    index = index.reshape(-1) if index.ndim <= 1 else index
    if index.ndim > 1:
        raise IndexError(f"{name}(): Index is supposed to be a vector, but got dim: "
                         f"{index.ndim} with type: Long and size: {list(index.shape)}")
    d = _wrap_dim(dim, self.ndim)
    flat = self.reshape(self.shape or (1,))
    if source is not None:
        if source.dtype != self.dtype:
            from .. import _dtype as D
            raise RuntimeError(f"{name}(): self ({D._BY_NP[self.dtype].scalar_name}) and "
                               f"source ({D._BY_NP[source.dtype].scalar_name}) must have the "
                               "same scalar type")
        if 0 < source.ndim <= d:
            raise RuntimeError(f"{name}(): Indexing dim {d} is out of bounds of the source "
                               f"tensor with dim {source.ndim}")
        n = source.shape[d] if source.ndim else 1
        if n != index.shape[0]:
            raise RuntimeError(f"{name}(): Number of indices ({index.shape[0]}) should be equal "
                               f"to source.size(dim): ({n}), for dim: {d}")
        if name == "index_add_":
            _check_slices_match(self.shape, source.shape, d)
        source = source.reshape(source.shape or (1,))
    if name == "index_add_" and self.ndim <= 1:  # torch's one-dimensional kernel says less
        if ((index < 0) | (index >= flat.shape[d])).any():
            raise IndexError("index out of range in self")
    if bounds:
        _check_bounds(index, flat.shape[d], d, exc, "" if exc is RuntimeError else f"{name}(): ")
    return flat, index, source, d


@op("index_add", tensors=3, promote=NONE)
def _index_add(self, index, source, dim, alpha=1):
    flat, index, source, d = _index_setup(self, index, source, dim, "index_add_", RuntimeError)
    out = flat.copy()
    _accumulate(out, _axis_key(d, index), source * alpha if alpha != 1 else source)
    return _shaped_as(out, self)


@_index_add.grad("self")
def _(grad):
    return grad


@_index_add.grad("source")
def _(grad, index, source_shape, dim, alpha):
    from .pointwise import mul_scalar
    picked = _index_select(grad, index, dim)
    if len(source_shape) == 0:
        if _data(picked).ndim:  # (a 0-d source added into a vector)
            from .shape import reshape
            picked = reshape(picked, ())
    elif isinstance(picked, Tensor):  # torch's expand_as(source): a node where shapes agree too
        picked = picked.expand(source_shape)
    return picked if alpha == 1 else mul_scalar(picked, alpha)  # (torch's maybe_multiply)


def index_add(input, dim, index, source, *, alpha=1, out=None):
    """``input`` with ``alpha * source`` added at ``index`` along ``dim`` (repeats add up)."""
    return _index_add(input, index, source, dim, alpha)


@op("index_copy", tensors=3, promote=NONE, writes=1)
def _index_copy(self, index, source, dim):
    flat, index, source, d = _index_setup(self, index, source, dim, "index_copy_")
    out = flat.copy()
    out[_axis_key(d, index)] = source
    return _shaped_as(out, self)


@_index_copy.grad("self")
def _(grad, index, dim):
    return _index_fill(grad, index, dim, 0)


@_index_copy.grad("source")
def _(grad, index, source_shape, dim):
    from .shape import reshape
    return reshape(_index_select(grad, index, dim), source_shape)


def index_copy(input, dim, index, source):
    """``input`` with the slices at ``index`` along ``dim`` replaced by ``source``."""
    return _index_copy(input, index, source, dim)


def _fill_setup(self, index, dim):
    if index.ndim > 1:
        raise RuntimeError("Index has to be a vector/scalar")
    d = _wrap_dim(dim, self.ndim)
    flat = self.reshape(self.shape or (1,))
    index = index.reshape(-1)
    if all(n for k, n in enumerate(flat.shape) if k != d):
        _check_bounds(index, flat.shape[d], d, IndexError, negative=True)
    else:  # (torch's kernel reads the index as it fills: nothing to fill, nothing read)
        index = index[:0]
    return flat, _axis_key(d, index)


def _check_fill(self, index, dim, into_self=False):
    """torch's index_fill_ views self (out of place, the new copy of self) with ``dim`` as
    long as ``index``, of stride 0, before it fills: for an empty ``dim`` that view reaches
    past the storage (self's, or the copy's, which holds nothing) unless self is a view with
    memory after it (see strided.refuse_filling_empty)."""
    if (self.ndim and index.ndim <= 1 and index._data.dtype == np.int64 and index.numel()
            and self.shape[_wrap_dim(dim, self.ndim)] == 0):
        refuse_filling_empty(self, index.numel(), _wrap_dim(dim, self.ndim), into_self)


def _index_fill_value(value, dtype):
    if dtype.kind != "c" and getattr(value, "dtype", np.dtype(type(value))).kind == "c":
        raise RuntimeError("index_fill_(): Converting complex Scalar to non-complex type is not "
                           "supported")
    return check_scalar(value, dtype)


@op("index_fill", tensors=2, promote=NONE, node="IndexFillBackward0", writes=2,
    check=lambda self, index, dim, value: _check_fill(self, index, dim))
def _index_fill(self, index, dim, value):
    flat, key = _fill_setup(self, index, dim)
    value = _index_fill_value(value, self.dtype)
    out = flat.copy()
    out[key] = value
    return _shaped_as(out, self)


@_index_fill.grad("self")
def _(grad, index, dim):
    return _index_fill(grad, index, dim, 0)


@op("index_fill", tensors=3, promote=NONE, node="IndexFillBackward1", writes=2,
    check=lambda self, index, value, dim: _check_fill(self, index, dim))
def _index_fill_tensor(self, index, value, dim):
    if value.ndim:
        raise RuntimeError(f"index_fill_ only supports a 0-dimensional value tensor, but got "
                           f"tensor with {value.ndim} dimension(s).")
    flat, key = _fill_setup(self, index, dim)
    value = _index_fill_value(value, self.dtype)  # (torch fills with value.item())
    out = flat.copy()
    out[key] = value
    return _shaped_as(out, self)


@_index_fill_tensor.grad("self")
def _(grad, index, dim):
    return _index_fill(grad, index, dim, 0)


@_index_fill_tensor.grad("value")
def _(grad, index, dim):
    from .reduction import sum_all
    d = _data(index).reshape(-1)
    size = _data(grad).shape[dim] if _data(grad).ndim else 1
    unique = get_xp(d).unique(d % size)  # a position filled twice is one use of value
    picked = _index_select(grad, _const(grad, unique), dim)
    return sum_all(picked)


_index_fill.inplace_check = lambda self, index, dim, value: _check_fill(self, index, dim, True)
_index_fill_tensor.inplace_check = (
    lambda self, index, value, dim: _check_fill(self, index, dim, True))


def index_fill(input, dim, index, value):
    """``input`` with the slices at ``index`` along ``dim`` set to ``value``."""
    if isinstance(value, Tensor):
        return _index_fill_tensor(input, index, value, dim)
    return _index_fill(input, index, dim, value)


def _index_fill_(self, dim, index, value):
    if isinstance(value, Tensor):
        return _index_fill_tensor.inplace(self, index, value, dim)
    return _index_fill.inplace(self, index, dim, value)


# -- masked ops ------------------------------------------------------------------------------------
_C_TYPE_NAMES = {"float32": "float", "float64": "double", "int32": "int", "int64": "long int",
                 "uint8": "unsigned char", "int8": "signed char", "int16": "short int"}


def _check_mask(mask, name="masked_fill_"):
    if mask.dtype.kind != "b":
        # NOTE: torch names the mask's dtype by its C++ type here ("float", "double").
        raise RuntimeError(f"{name} only supports boolean masks, but got mask with dtype "
                           f"{_C_TYPE_NAMES.get(mask.dtype.name, mask.dtype.name)}")


@op("masked_fill", tensors=2, promote=NONE, node="MaskedFillBackward0", writes=2)
def _masked_fill(self, mask, value):
    _check_mask(mask)
    value = check_scalar(value, self.dtype)
    return get_xp(self).where(mask, value, self).astype(self.dtype, copy=False)


@_masked_fill.grad("self")
def _(grad, mask):
    return _masked_fill(grad, mask, 0)


@op("masked_fill", tensors=3, promote=NONE, node="MaskedFillBackward1", writes=2)
def _masked_fill_tensor(self, mask, value):
    _check_mask(mask)
    if value.ndim:
        raise RuntimeError(f"masked_fill_ only supports a 0-dimensional value tensor, but got "
                           f"tensor with {value.ndim} dimension(s).")
    value = check_scalar(value, self.dtype)  # (torch fills with value.item())
    return get_xp(self).where(mask, value, self).astype(self.dtype, copy=False)


@_masked_fill_tensor.grad("self")
def _(grad, mask):
    return _masked_fill(grad, mask, 0)


@_masked_fill_tensor.grad("value")
def _(grad, mask):
    from .reduction import sum_all
    from .shape import expand
    keep = _const(grad, get_xp(_data(mask)).logical_not(_data(mask)))
    return sum_all(_masked_fill(expand(grad, _bshape(grad, mask)), keep, 0))


def _bshape(*xs):
    return np.broadcast_shapes(*(_data(x).shape for x in xs))


def masked_fill(input, mask, value):
    """``input`` with ``value`` where ``mask`` is True (``mask`` broadcasts)."""
    if isinstance(value, Tensor):
        return _masked_fill_tensor(input, mask, value)
    return _masked_fill(input, mask, value)


def _masked_fill_(self, mask, value):
    if isinstance(value, Tensor):
        return _masked_fill_tensor.inplace(self, mask, value)
    return _masked_fill.inplace(self, mask, value)


@op("masked_select", tensors=2, promote=NONE)
def _masked_select(self, mask):
    if mask.dtype.kind != "b":
        raise RuntimeError("masked_select: expected BoolTensor for mask")
    xp = get_xp(self)
    shape = np.broadcast_shapes(self.shape, mask.shape)
    return xp.broadcast_to(self, shape)[xp.broadcast_to(mask, shape)]


@_masked_select.grad("self", writes=1)
def _(grad, self, mask):
    # The engine sums the broadcast gradient back down to self's shape. (Only its shape is
    # needed, but torch saves self.)
    shape = np.broadcast_shapes(tuple(self.shape), _data(mask).shape)
    return _masked_scatter(_zeros(grad, shape), mask, grad)


def masked_select(input, mask, *, out=None):
    """The elements of ``input`` where ``mask`` is True, as a 1-D tensor."""
    return _masked_select(input, mask)


@op("masked_scatter", tensors=3, promote=NONE)
def _masked_scatter(self, mask, source):
    _check_mask(mask, "masked_scatter_")
    if source.dtype != self.dtype:
        from .. import _dtype as D
        raise RuntimeError(f"masked_scatter: expected self and source to have same dtypes but "
                           f"got{D._BY_NP[self.dtype].scalar_name} and "
                           f"{D._BY_NP[source.dtype].scalar_name}")
    xp = get_xp(self)
    shape = np.broadcast_shapes(self.shape, mask.shape)
    m = xp.broadcast_to(mask, shape)
    count = int(m.sum())
    if source.size < count:
        raise RuntimeError("Number of elements of source < number of ones in mask")
    out = xp.broadcast_to(self, shape).copy()
    out[m] = source.reshape(-1)[:count]
    return out


@_masked_scatter.grad("self")
def _(grad, mask):
    return _masked_fill(grad, mask, 0)


@_masked_scatter.grad("source")
def _(grad, mask, source_shape):
    from .pad import constant_pad_nd
    from .shape import reshape
    picked = _masked_select(grad, mask)
    n = 1
    for s in source_shape:
        n *= s
    return reshape(constant_pad_nd(picked, (0, n - _data(picked).shape[0]), 0), source_shape)


def _masked_scatter_into_self(self, mask, source):
    """masked_scatter_'s kernel: torch's loop writes self's masked elements in order, each read
    from the source as it is then, so a (contiguous) source sharing self's memory gives the
    elements written before; torch copies a non-contiguous source first."""
    out = _masked_scatter.kernel(self, mask, source)  # (its checks, and the usual result)
    if (type(self) is not np.ndarray or type(source) is not np.ndarray or out.shape != self.shape
            or self.ndim == 0  # (one element: read before it is written)
            or not source.flags.c_contiguous or not np.may_share_memory(self, source)):
        return out
    read = source.reshape(-1)  # (a view: it sees each write)
    for k, where in enumerate(zip(*np.nonzero(np.broadcast_to(mask, self.shape)))):
        self[where] = read[k]
    return self


_masked_scatter.inplace_kernel = _masked_scatter_into_self


def masked_scatter(input, mask, source):
    """``input`` with the elements where ``mask`` is True taken, in order, from ``source``."""
    return _masked_scatter(input, mask, source)


# -- take ------------------------------------------------------------------------------------------
@op("take", tensors=2, promote=NONE)
def _take(self, index):
    n = self.size
    bad = (index < -n) | (index >= n)
    if bad.any():
        raise IndexError(f"out of range: tried to access index {int(index[bad].reshape(-1)[0])} "
                         f"on a tensor of {n} elements.")
    return self.reshape(-1)[index]


@_take.grad("self")
def _(grad, self, index):
    self_shape = tuple(self.shape)  # (torch saves self itself)
    if isinstance(grad, Tensor):  # create_graph: torch's zeros_like(self).put_(index, grad, True)
        return _zeros(grad, self_shape).put_(_const(grad, _data(index)), grad, True)  # (v1)
    # summed into a flat view of zeros of self's shape: the result owns its memory, as
    # torch's (put_ into zeros), and is no view
    n = 1
    for s in self_shape:
        n *= s
    flat_index = _data(index).reshape(-1) % max(n, 1)
    out = get_xp(grad).zeros(self_shape, grad.dtype)
    _accumulate(out.reshape(-1), flat_index, grad.reshape(-1))
    note_writes(out, 1)  # (torch's put_: version 1)
    return out


def take(input, index):
    """The elements of ``input`` (as if flattened) at ``index``, shaped like ``index``."""
    return _take(input, index)


# -- put --------------------------------------------------------------------------------------------
def _check_put(self, index, source, accumulate=False):
    """torch's put_ argument checks, in its order: before its overlap checks (a source of the
    wrong size that is self itself is refused for its size)."""
    from .. import _dtype as D
    from .registry import refuse_non_tensor
    for a in (self, index, source):  # (the in-place path raises this TypeError at once)
        if not hasattr(a, "dtype"):
            refuse_non_tensor(_put, (self, index, source, accumulate),
                              AttributeError(name="dtype", obj=a))
    self, index, source = _data(self), _data(index), _data(source)
    if index.dtype != np.int64:
        raise RuntimeError("put_(): Expected a long tensor for index, but got "
                           f"{D._BY_NP[index.dtype].scalar_name}")
    if self.dtype != source.dtype:
        raise RuntimeError("put_(): self and source expected to have the same dtype, but got "
                           f"self.dtype = {D._BY_NP[self.dtype].scalar_name} and "
                           f"source.dtype = {D._BY_NP[source.dtype].scalar_name}")
    if source.size != index.size:
        raise IndexError("put_(): Expected source and index to have the same number of "
                         f"elements, but got source.numel() = {source.size}, index.numel() = "
                         f"{index.size}")
    if self.size == 0 and index.size != 0:
        raise IndexError("put_(): Tried to put elements into an empty tensor")


def _check_put_range(self, index):
    """torch's put_ kernel's check, after the overlap checks."""
    n = self.size
    bad = (index < -n) | (index >= n)
    if bad.any():
        raise IndexError(f"out of range: tried to access index {int(index[bad].reshape(-1)[0])} "
                         f"on a tensor of {n} elements.")


@op("put", tensors=3, promote=NONE, inplace=True, check=_check_put)
def _put(self, index, source, accumulate=False):
    """A copy of ``self`` with ``source`` written (or, accumulating, added) at the positions
    ``index`` of ``self`` taken as flattened in row-major order."""
    _check_put_range(self, index)
    xp = get_xp(self)
    # (torch: self.clone(preserve_format).put_(...); a NumPy scalar, one row of a batched
    # backward, becomes an array first so that writes through its reshape reach it)
    out = copy_in_format(xp.asarray(self))
    if index.size == 0:
        return out
    target = out.reshape(1) if out.ndim == 0 else out
    key = xp.unravel_index(index.reshape(-1) % self.size, target.shape)
    if accumulate:
        _accumulate(target, key, source.reshape(-1))
    else:
        target[key] = source.reshape(-1)
    return out


@_put.grad("self")
def _(grad, index, source_shape, accumulate):
    if accumulate:
        return grad
    return _put(grad, index, _zeros(grad, source_shape), False)


@_put.grad("source")
def _(grad, index, source_shape):
    from .shape import reshape
    return reshape(_take(grad, index), source_shape)


def put(input, index, source, accumulate=False):
    """``input`` with ``source`` written (or added) at the flat positions ``index``."""
    return _put(input, index, source, accumulate)


_put_method = method_refusals(put, "put")  # (refused arguments counted after self)


def take_along_dim(input, indices, dim=None, *, out=None):
    """``input`` gathered at ``indices`` along ``dim``, after broadcasting the other dims."""
    from .shape import broadcast_to, reshape
    if dim is None:
        return _gather(reshape(input, (-1,)), reshape(indices, (-1,)), 0)
    if input.ndim != indices.ndim:
        raise RuntimeError(f"torch.take_along_dim(): input and indices should have the same "
                           f"number of dimensions, but got {input.ndim} dimensions for input, "
                           f"and {indices.ndim} dimensions for indices".replace("torch.",
                                                                                 "ember."))
    if indices.dtype.name != "int64":
        raise RuntimeError(f"ember.take_along_dim(): dtype of indices should be Long but got "
                           f"{indices.dtype.scalar_name}")
    d = _wrap_dim(dim, input.ndim)
    ishape, xshape = list(input.shape), list(indices.shape)
    ishape[d], xshape[d] = indices.shape[d], input.shape[d]
    idx_b = broadcast_to(indices, _infer_size(ishape, indices.shape))
    in_b = broadcast_to(input, _infer_size(xshape, input.shape))
    return _gather(in_b, _wrapped_indices(idx_b, input.shape[d]), d)


def _infer_size(a, b):
    """The shape ``a`` and ``b`` broadcast to, with torch's error (infer_size's) if none."""
    try:
        return np.broadcast_shapes(tuple(a), tuple(b))
    except ValueError:
        from .registry import shapes_broadcast_error
        raise shapes_broadcast_error([a, b]) from None


def _wrapped_indices(indices, size):
    """torch's take_along_dim with a dim gathers at a new tensor of the indices modulo the
    dim's size (Python's remainder: -1 is the last, ``size`` the first; a dim of size 0
    divides by zero), so the node saves that tensor, not the indices given."""
    if size == 0 and indices._data.size == 0:
        return indices
    from .binary import remainder
    return remainder(indices, size)


# -- Tensor methods ------------------------------------------------------------------------------
# -- index_put ----------------------------------------------------------------------------------
def _put_copy(self, values, key, accumulate):
    """A copy of ``self`` with ``values`` written (or, accumulating, added) at ``key``."""
    from .shape import check_put, fill_mask, fills_a_mask, put_at
    out = self.copy()
    if accumulate:
        check_put(out, key, values)
        _accumulate_put(out, key, values)
    elif fills_a_mask(key, values):
        fill_mask(out, key, values)
    else:
        try:
            put_at(out, key, values)
        except IndexError as e:  # (an in-place call writes what torch's kernel wrote first)
            e.written = out
            raise
    return out


def _accumulate_put(out, key, values):
    """``out[key] += values`` (repeated indices adding up), an index out of range raising
    torch's IndexError after the elements torch's kernel adds before it (``e.written``)."""
    from .shape import _torch_index_error, write_visited
    try:
        return _accumulate(out, key, values)
    except IndexError as e:
        error = _torch_index_error(e, out.shape, key)
        write_visited(out, key, values, accumulate=True)
        error.written = out
        raise error from None


_index_put = op("index_put", tensors=2, promote=NONE, node="IndexPutBackward0",
                aten="aten::index_put", checked=("key",), check=check_reduced_put,
                copies=True)(_put_copy)
# what torch's index gradient is: the gradient put into zeros by _index_put_impl_ (accumulate,
# so that repeated indices add up); under create_graph its IndexPutImplBackward0 node has no
# edge for the zeros, and its derivatives are index_put's
@op("_index_put_impl", tensors=2, promote=NONE, node="IndexPutImplBackward0",
    aten="aten::_index_put_impl_", checked=("key",))
def _index_put_impl(self, values, key, accumulate):
    """A copy of ``self`` with ``values``, of the indexed shape, added (or written) at ``key``,
    any key ``index`` takes."""
    from .shape import put_at
    out = self.copy()
    if accumulate:
        return _accumulate_put(out, key, values)
    put_at(out, key, values)
    return out


def _put_grad_self(grad, key, accumulate):
    if accumulate:
        return grad
    from .shape import _overwritten_grad
    return _overwritten_grad(grad, key)


def _put_grad_values(grad, key):
    return grad[key]


for _putting in (_index_put, _index_put_impl):
    _putting.grad("self")(_put_grad_self)
    _putting.grad("values")(_put_grad_values)


def _index_put_args(self, indices, values, name):
    from .shape import _normalize_key, _setitem_value
    if not isinstance(indices, (tuple, list)):
        raise TypeError(f"{name}(): argument 'indices' must be tuple of Tensors, not "
                        f"{type(indices).__name__}")
    for i, k in enumerate(indices):
        if not isinstance(k, Tensor):
            where = 0 if name.endswith("_") else 1  # (the method's self is no argument)
            raise TypeError(f"expected Tensor as element {i} in argument {where}, but got "
                            f"{type(k).__name__}")
    if not isinstance(values, Tensor):  # (x[i] = 1.0 takes a number; index_put_ does not)
        raise TypeError(f"{name}(): argument 'values' must be Tensor, not "
                        f"{type(values).__name__}")
    key, _ = _normalize_key(tuple(indices))
    return key, _setitem_value(self, values)


def _batched_index_put(self, indices, values, accumulate, inplace):
    """Under vmap, per-example indices have a batching rule of their own (the key of the
    op holds arrays, one index for the whole batch); None otherwise."""
    from .._state import vmap_hook
    vm = vmap_hook[0]
    return None if vm is None else vm.index_put(self, indices, values, accumulate, inplace)


def index_put(input, indices, values, accumulate=False):  # noqa: A002 - torch's name
    """``input`` with ``values`` put at the tensor ``indices`` (added when ``accumulate``)."""
    batched = _batched_index_put(input, indices, values, accumulate, False)
    if batched is not None:
        return batched
    key, values = _index_put_args(input, indices, values, "index_put")
    return _index_put(input, values, key, bool(accumulate))


def index_put_(self, indices, values, accumulate=False):
    """In place: ``self[indices] = values`` (``+=`` with repeats adding up when ``accumulate``)."""
    from .shape import fills_a_mask, index_put_masked
    batched = _batched_index_put(self, indices, values, accumulate, True)
    if batched is not None:
        return batched
    key, values = _index_put_args(self, indices, values, "index_put_")
    if not accumulate and fills_a_mask(key, values._data):
        return index_put_masked.inplace(self, values, key)
    return _index_put.inplace(self, values, key, bool(accumulate))


def _method(fn):
    method = lambda self, *args, **kwargs: fn(self, *args, **kwargs)  # noqa: E731
    method.__wrapped__ = fn  # (its signature is fn's)
    return method


Tensor.scatter_ = _scatter_
Tensor.scatter_add_ = lambda self, dim, index, src: _scatter_add.inplace(self, index, src, dim)
Tensor.scatter_reduce_ = (lambda self, dim, index, src, reduce, *, include_self=True:
                          _scatter_reduce.inplace(self, index, src, dim, reduce, include_self))
Tensor.index_add_ = (lambda self, dim, index, source, *, alpha=1:
                     _index_add.inplace(self, index, source, dim, alpha))
Tensor.index_copy_ = (lambda self, dim, index, source:
                      _index_copy.inplace(self, index, source, dim))
Tensor.index_fill_ = _index_fill_
Tensor.index_put_ = index_put_
Tensor.index_put = index_put
Tensor.masked_fill_ = _masked_fill_
Tensor.masked_scatter_ = (lambda self, mask, source:
                          _masked_scatter.inplace(self, mask, source))

# Triangles, diagonals and trace live in diagonal.py, pad (nn.functional.pad) in pad.py.
from .diagonal import (  # noqa: F401
    _diag_embed,
    _diagonal,
    _diagonal_copy,
    _trace,
    diag,
    diag_embed,
    diagonal,
    diagonal_backward,
    trace,
    tril,
    triu,
)
from .pad import pad  # noqa: F401  (collected through FUNCTIONAL)

for _name in ("gather", "scatter", "scatter_add", "scatter_reduce", "index_select", "index_add",
              "index_copy", "index_fill", "masked_fill", "masked_select", "masked_scatter",
              "take", "take_along_dim", "diagonal", "diag_embed", "diag", "trace"):
    setattr(Tensor, _name, _method(globals()[_name]))
