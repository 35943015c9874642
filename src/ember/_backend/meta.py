"""The meta backend: arrays with a shape, a dtype and strides, and no data.

A ``MetaArray`` is what a ``meta`` tensor holds. Kernels run on it unchanged: NumPy hands
every ufunc and array function called on one to it (``__array_ufunc__`` /
``__array_function__``), and the array module of a meta array (``META_XP``) makes meta arrays
where NumPy would allocate. What an op gives is derived, never computed:

- elementwise ufuncs work out the result's shape from their operands' shapes and its dtype
  from a run on 0-d stand-ins (no memory, no time, whatever the size); reductions run on
  stand-ins one element long along the reduced axes;
- views (reshape, transpose, basic indexing, ...) are taken of a *phantom*: a NumPy array with
  the meta array's strides over a one-element buffer, never read, so a view's strides and
  storage offset are NumPy's own;
- matmul, concatenate, stack and advanced indexing run NumPy on small stand-ins (each
  distinct length replaced by a small one) and work out the result's real lengths;
- anything else runs the real NumPy function on zero-strided stand-ins (one element each,
  broadcast to the operand's shape) and keeps only the result's shape and dtype: that costs
  a temporary of the result's size.

Values never exist: asking for one (``item()``, a host copy) raises torch's errors. Where a
kernel branches on its data, ``any()`` is False and ``all()`` True (its checks pass, as torch's
meta kernels skip data-dependent checks), and a number it reads (``int(n.max())``) is 0. Ops whose output shape depends on values (nonzero, unique,
boolean-mask indexing) raise torch's NotImplementedError.
"""
from __future__ import annotations

import contextlib
import math
import operator
import types

import numpy
from numpy.lib.stride_tricks import as_strided

from . import contiguous_strides, strided_view

NO_DATA = "Cannot copy out of meta tensor; no data!"
NO_ITEM = "Tensor.item() cannot be called on meta tensors"
_UNBACKED = ("The register_meta function for ember.{}() raises unimplemented by default, as a "
             "correct data-independent implementation does not exist. This implementation "
             "returns a fake value, assuming all elements of the tensor are non-zero. To "
             "enable this registration, please set 'ember.fx.experimental._config."
             "meta_nonzero_assume_all_nonzero' to True.")
_NO_KERNEL = ("aten::{}: attempted to run this operator with Meta tensors, but there was no "
              "fake impl or Meta kernel registered. You may have run into this message while "
              "using an operator with PT2 compilation APIs (ember.compile/ember.export); in "
              "order to use this operator with those APIs you'll need to add a fake impl. "
              "Please see the following for next steps:  https://pytorch.org/tutorials/"
              "advanced/custom_ops_landing_page.html")
# NumPy functions whose result's shape depends on values, and the aten op torch names.
_DATA_DEPENDENT = {"nonzero": "nonzero", "argwhere": "nonzero", "flatnonzero": "nonzero",
                   "unique": "_unique2", "unique_values": "_unique2",
                   "unique_counts": "_unique2", "unique_inverse": "_unique2",
                   "unique_all": "_unique2", "extract": "masked_select",
                   "compress": "masked_select", "bincount": "bincount",
                   "array_equal": "equal", "trim_zeros": "nonzero"}
# Reductions: the reduced axes' lengths don't change the result's shape or dtype, so they
# run on stand-ins one element long along those axes.
_REDUCTIONS = frozenset({
    "sum", "prod", "mean", "max", "min", "amax", "amin", "any", "all", "argmax", "argmin",
    "std", "var", "nansum", "nanprod", "nanmean", "nanmax", "nanmin", "nanargmax",
    "nanargmin", "nanstd", "nanvar", "count_nonzero", "ptp", "median", "nanmedian",
    "average", "logsumexp"})
# Functions that work elementwise as ufuncs do (their results keep a transposed layout).
_ELEMENTWISE = frozenset({"where", "clip"})
# Functions and methods that return views of their first operand: taken of the phantom.
_VIEWS = frozenset({
    "transpose", "swapaxes", "moveaxis", "rollaxis", "squeeze", "expand_dims",
    "broadcast_to", "diagonal", "atleast_1d", "atleast_2d", "atleast_3d", "split",
    "array_split", "hsplit", "vsplit", "dsplit", "flip", "fliplr", "flipud", "real", "imag",
    "matrix_transpose", "permute_dims", "unstack"})


class _Memory:
    """What ``storage_of``/``data_address`` read off a CuPy-like ``.data``: byte addresses
    counted from 0, the start of the meta storage (``owner``: the array owning it)."""

    __slots__ = ("mem", "owner", "ptr", "size")

    def __init__(self, ptr, size, mem=None, owner=None):
        self.ptr, self.size, self.owner = ptr, size, owner
        self.mem = self if mem is None else mem

    def __add__(self, offset):
        return _Memory(self.ptr + int(offset), self.size, self.mem, self.owner)


class _Flags:
    __slots__ = ("c_contiguous", "f_contiguous", "owndata", "writeable")

    def __init__(self, a):
        probe = a.phantom()
        self.c_contiguous = probe.flags.c_contiguous
        self.f_contiguous = probe.flags.f_contiguous
        self.owndata = a.base is None
        self.writeable = True

    def __getitem__(self, key):
        return getattr(self, key.lower())


_CONSTANTS = {}  # (value, dtype) -> a read-only 0-d array of it


def _constant(value, dtype):
    """A 0-d array of ``value``: zeros are what phantoms point at, ones what dtypes are
    probed with."""
    z = _CONSTANTS.get((value, dtype))
    if z is None:
        z = _CONSTANTS[value, dtype] = numpy.full((), value, dtype)
        z.flags.writeable = False
    return z


def _zero(dtype):
    return _constant(0, dtype)


def _one(dtype):
    return _constant(1, dtype)


class MetaArray:
    """An array without data: shape, dtype, byte strides and a byte offset into a storage of
    ``nbytes`` bytes (shared by the views of one array through ``base``)."""

    __slots__ = ("__weakref__", "_storage", "base", "dtype", "offset", "shape", "strides",
                 "truth")
    __array_priority__ = 100

    def __init__(self, shape, dtype=float, strides=None, offset=0, base=None, memptr=None):
        if memptr is not None:  # (xp.ndarray(shape, dtype, memptr=x.data + k, strides=...))
            offset, base = memptr.ptr, memptr.owner
        self.shape = tuple(int(n) for n in shape)
        self.dtype = numpy.dtype(dtype)
        self.strides = (contiguous_strides(self.shape, self.dtype.itemsize) if strides is None
                        else tuple(int(s) for s in strides))
        self.offset = int(offset)
        self.base = base
        self.truth = False
        self._storage = (math.prod(self.shape) * self.dtype.itemsize if base is None
                         else base._storage)

    # -- attributes ------------------------------------------------------------------------------
    ndim = property(lambda self: len(self.shape))
    size = property(lambda self: math.prod(self.shape))
    itemsize = property(lambda self: self.dtype.itemsize)
    nbytes = property(lambda self: self.size * self.dtype.itemsize)
    flags = property(_Flags)
    data = property(lambda self: _Memory(self.offset, self._storage,
                                         owner=self.base if self.base is not None else self))
    T = property(lambda self: self._view("transpose"))
    mT = property(lambda self: self._view("swapaxes", -1, -2))
    real = property(lambda self: self._view_of(numpy.real),
                    lambda self, value: self.real.__setitem__(Ellipsis, value))
    imag = property(lambda self: self._view_of(numpy.imag),
                    lambda self, value: self.imag.__setitem__(Ellipsis, value))

    def phantom(self):
        """A NumPy array with this array's shape and strides over one element of memory.
        Only views may be taken of it: its elements must never be read."""
        zero = _zero(self.dtype)
        address = zero.__array_interface__["data"][0] + self.offset
        out = strided_view(zero, self.shape, self.strides, address)
        out.flags.writeable = False
        return out

    def standin(self):
        """A NumPy array of this shape and dtype whose every element is one zero (its stride
        is 0 everywhere): safe to read and to write (functions that fill their operands in
        place), costs one element."""
        return as_strided(numpy.zeros(1, self.dtype), self.shape, (0,) * len(self.shape))

    def _from_phantom(self, view):
        """The meta view of this array that ``view`` (a view of its phantom) describes."""
        start = _zero(self.dtype).__array_interface__["data"][0]
        address = view.__array_interface__["data"][0]
        return MetaArray(view.shape, view.dtype, view.strides, address - start,
                         self.base if self.base is not None else self)

    def _view_of(self, fn, *args, **kwargs):
        out = fn(self.phantom(), *args, **kwargs)
        if isinstance(out, (list, tuple)):
            return type(out)(self._from_phantom(v) for v in out)
        return self._from_phantom(out)

    def _view(self, name, *args, **kwargs):
        return self._view_of(getattr(numpy.ndarray, name), *args, **kwargs)

    # -- what has no data ------------------------------------------------------------------------
    def __array__(self, dtype=None, copy=None):
        raise NotImplementedError(NO_DATA)

    def item(self, *args):
        raise RuntimeError(NO_ITEM)

    def tolist(self):
        raise NotImplementedError(NO_DATA)

    # A kernel's number read off its data (a loop count, a count of masked elements): 0, as
    # a meta run has no values to count (tensors' own int()/float() go through item()).
    def __int__(self):
        return 0

    __index__ = __int__

    def __float__(self):
        return 0.0

    def __complex__(self):
        return 0j

    def __bool__(self):
        # A kernel's data-dependent branch (a check, a fast path): torch's meta kernels
        # skip them, so the check passes: any(...) is False, all(...) is True.
        return self.truth

    def __len__(self):
        if not self.shape:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    def __iter__(self):
        if not self.shape:
            raise TypeError("iteration over a 0-d array")
        return (self[i] for i in range(self.shape[0]))

    def __repr__(self):
        return f"MetaArray(shape={self.shape}, dtype={self.dtype})"

    def __copy__(self):
        return MetaArray(self.shape, self.dtype)

    def __deepcopy__(self, memo):
        return MetaArray(self.shape, self.dtype)

    def __reduce__(self):
        return (MetaArray, (self.shape, self.dtype.str))

    # -- views -----------------------------------------------------------------------------------
    def reshape(self, *shape, order="C", copy=None):
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = shape[0]
        try:
            return self._view_of(numpy.reshape, tuple(shape), copy=False)
        except ValueError:  # (not expressible as a view: a copy, laid out afresh)
            return MetaArray(self.standin().reshape(shape).shape, self.dtype)

    def ravel(self, order="C"):
        return self.reshape(-1)

    def view(self, dtype=None, type=None):  # (NumPy's keywords)
        if dtype is None or numpy.dtype(dtype) == self.dtype:
            return self._from_phantom(self.phantom())
        return self._view_of(numpy.ndarray.view, dtype)

    def __getitem__(self, key):
        if _basic_index(key):
            return self._view_of(operator.getitem, key)
        parts = tuple(key) if isinstance(key, tuple) else (key,)
        if any(getattr(p, "dtype", None) == numpy.bool_ for p in parts):
            raise NotImplementedError(_UNBACKED.format("nonzero"))  # (a mask's count)
        return _advanced_index(self, parts)

    def __setitem__(self, key, value):
        # (no data to write: only the shapes are checked, as NumPy checks them, where they
        # do not depend on values as a mask's do)
        if not _basic_index(key):
            return
        target = self[key]
        if isinstance(value, MetaArray) or getattr(value, "ndim", 0):
            numpy.broadcast_shapes(value.shape, target.shape)

    def __getattr__(self, name):
        if name.startswith("__"):  # (NumPy's protocols: __array_struct__ and the like)
            raise AttributeError(name)
        if name in _VIEWS:
            return lambda *args, **kwargs: self._view(name, *args, **kwargs)
        fn = getattr(numpy, name, None)
        if name in _REDUCTIONS or (callable(fn) and hasattr(fn, "_implementation")):
            return lambda *args, **kwargs: fn(self, *args, **kwargs)
        method = getattr(numpy.ndarray, name, None)
        if method is None:
            raise AttributeError(f"'MetaArray' object has no attribute '{name}'")
        return lambda *args, **kwargs: _compute(method, (self,) + args, kwargs)

    def astype(self, dtype, order="K", casting="unsafe", subok=True, copy=True):
        dtype = numpy.dtype(dtype)
        if not copy and dtype == self.dtype:
            return self
        return MetaArray(self.shape, dtype, _layout_like(self, self.shape, dtype.itemsize))

    def copy(self, order="C"):
        return MetaArray(self.shape, self.dtype)

    def fill(self, value):
        return None

    # -- NumPy's dispatch ------------------------------------------------------------------------
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        return _ufunc(ufunc, method, inputs, kwargs)

    def __array_function__(self, func, types_, args, kwargs):
        return _function(func, args, kwargs)

    __hash__ = None


def _binary(ufunc, reflected=False, inplace=False):
    def op(self, other):
        if inplace:
            return ufunc(self, other, out=self)
        return ufunc(other, self) if reflected else ufunc(self, other)
    return op


for _name, _uf in [("add", numpy.add), ("sub", numpy.subtract), ("mul", numpy.multiply),
                   ("truediv", numpy.true_divide), ("floordiv", numpy.floor_divide),
                   ("mod", numpy.remainder), ("pow", numpy.power), ("matmul", numpy.matmul),
                   ("and", numpy.bitwise_and), ("or", numpy.bitwise_or),
                   ("xor", numpy.bitwise_xor), ("lshift", numpy.left_shift),
                   ("rshift", numpy.right_shift)]:
    setattr(MetaArray, f"__{_name}__", _binary(_uf))
    setattr(MetaArray, f"__r{_name}__", _binary(_uf, reflected=True))
    setattr(MetaArray, f"__i{_name}__", _binary(_uf, inplace=True))
for _name, _uf in [("eq", numpy.equal), ("ne", numpy.not_equal), ("lt", numpy.less),
                   ("le", numpy.less_equal), ("gt", numpy.greater),
                   ("ge", numpy.greater_equal)]:
    setattr(MetaArray, f"__{_name}__", _binary(_uf))
for _name, _uf in [("neg", numpy.negative), ("pos", numpy.positive), ("abs", numpy.absolute),
                   ("invert", numpy.invert)]:
    setattr(MetaArray, f"__{_name}__", lambda self, _uf=_uf: _uf(self))


def _basic_index(key):
    """Whether indexing with ``key`` takes a view (ints, slices, None, Ellipsis only)."""
    parts = key if isinstance(key, tuple) else (key,)
    return all(p is None or p is Ellipsis or type(p) is slice
               or (isinstance(p, (int, numpy.integer)) and not isinstance(p, bool))
               for p in parts)


def _layout_like(a, shape, itemsize):
    """Byte strides for a new array of ``shape`` made from ``a`` elementwise: ``a``'s order of
    dimensions where ``a`` is a dense permutation of that shape (a transpose), as NumPy's and
    torch's elementwise kernels keep it; C order otherwise."""
    if a is None or a.shape != tuple(shape) or a.flags.c_contiguous:
        return None
    order = sorted(range(a.ndim), key=lambda d: -a.strides[d])
    dense = contiguous_strides([shape[d] for d in order], itemsize)
    expected = contiguous_strides([shape[d] for d in order], a.itemsize)
    if any(a.strides[d] != s for d, s in zip(order, expected) if shape[d] > 1):
        return None
    strides = [0] * a.ndim
    for d, s in zip(order, dense):
        strides[d] = s
    return tuple(strides)


# -- running NumPy on stand-ins -----------------------------------------------------------------
def _refuse_host(x):
    """A CPU array among a meta call's operands: the other device's TypeError (as CuPy
    refuses NumPy arrays), which ember reads as operands on two devices."""
    raise TypeError(f"meta arrays do not mix with arrays of another device "
                    f"({type(x).__name__} of shape {x.shape})")


def _standins(x, host_ok=False):
    """``x`` with every meta array in it replaced by its zero-strided stand-in."""
    t = type(x)
    if t is MetaArray:
        return x.standin()
    if t is numpy.ndarray:
        if x.ndim and not host_ok:
            _refuse_host(x)
        return x
    if t is list or isinstance(x, tuple):
        return (list if t is list else tuple)(_standins(v, host_ok) for v in x)
    return x


def _small_lengths(lengths):
    """``{length: a small stand-in}`` for the lengths (0 and 1 kept, equal lengths equal,
    distinct ones distinct), with the way back: NumPy's shape rules on the small lengths give
    the small form of the result's shape."""
    small = {n: i + 2 for i, n in enumerate(sorted(set(lengths) - {0, 1}))}
    return small, {v: k for k, v in small.items()}


def _small(shape, small):
    return tuple(small.get(n, n) for n in shape)


def _concatenation(func, args, kwargs):
    """``concatenate`` / ``stack`` of meta arrays by their shapes: NumPy's checks and dtype
    from a run on small stand-ins, the result's lengths from the operands' (no memory of the
    result's size). None where the call is not one of meta arrays (the general path)."""
    arrays = args[0] if args else kwargs.get("arrays")
    if not isinstance(arrays, (list, tuple)) or not arrays or kwargs.get("out") is not None or any(
            type(a) is not MetaArray for a in arrays):
        return None
    small, _ = _small_lengths(n for a in arrays for n in a.shape)
    tiny = [numpy.broadcast_to(_zero(a.dtype), _small(a.shape, small)) for a in arrays]
    try:
        r = func(tiny, *args[1:], **{k: v for k, v in kwargs.items() if k != "arrays"})
    except ValueError:  # (raised again on the real lengths, which NumPy's message names)
        return None
    axis = kwargs.get("axis", args[1] if len(args) > 1 else 0)
    if func.__name__ == "stack":
        shape = list(arrays[0].shape)
        shape.insert(int(axis) % (len(shape) + 1), len(arrays))
    elif axis is None:
        shape = [sum(a.size for a in arrays)]
    else:
        shape = list(arrays[0].shape)
        d = int(axis) % len(shape)
        shape[d] = sum(a.shape[d] for a in arrays)
    return MetaArray(tuple(shape), r.dtype)


def _advanced_index(a, parts):
    """``a[parts]`` with index arrays (from the host too, as CuPy takes them) by shapes only:
    NumPy indexes a small stand-in (each length the result can take replaced by a small one:
    a sliced dimension's length after slicing, an index array's lengths; an indexed dimension
    one long, the indices 0) and the result's small lengths are mapped back. As torch's meta
    kernel, it reads no index: one out of range is not refused."""
    expanded = _without_ellipsis(parts, a.ndim)
    if expanded is None:
        return _metas(a.standin()[_standins(parts, host_ok=True)])
    lengths, dims, tiny_parts, tiny_shape = [], iter(a.shape), [], []
    for p in expanded:
        if p is None or p is Ellipsis:
            tiny_parts.append(p)
            continue
        n = next(dims)
        if type(p) is slice:
            length = len(range(*p.indices(n)))
            lengths.append(length)
            tiny_parts.append(("slice", length))
        else:
            shape = numpy.shape(p)
            lengths.extend(shape)
            tiny_parts.append(("int", ()) if isinstance(p, (int, numpy.integer)) else
                              ("index", shape))
    small, large = _small_lengths(lengths)
    key = []
    for p in tiny_parts:
        if p is None or p is Ellipsis:
            key.append(p)
        elif p[0] == "slice":
            tiny_shape.append(small.get(p[1], p[1]))
            key.append(slice(None))
        else:
            tiny_shape.append(1)
            key.append(0 if p[0] == "int" else numpy.zeros(_small(p[1], small), numpy.intp))
    try:
        r = numpy.broadcast_to(_zero(a.dtype), tuple(tiny_shape))[tuple(key)]
    except IndexError:  # (raised again on the real lengths, which NumPy's message names)
        return _metas(a.standin()[_standins(parts, host_ok=True)])
    return MetaArray(tuple(large.get(n, n) for n in r.shape), a.dtype)


def _without_ellipsis(parts, ndim):
    """``parts`` with the dimensions its Ellipsis covers (or the missing trailing ones) as
    full slices; None where they index more dimensions than there are (NumPy's own error
    then)."""
    taken = sum(1 for p in parts if p is not None and p is not Ellipsis)
    if taken > ndim or sum(1 for p in parts if p is Ellipsis) > 1:
        return None
    fill = (slice(None),) * (ndim - taken)
    k = next((k for k, p in enumerate(parts) if p is Ellipsis), None)
    if k is None:
        return tuple(parts) + fill
    # (the Ellipsis kept before its slices: it parts index arrays, when it covers nothing too)
    return tuple(parts[:k + 1]) + fill + tuple(parts[k + 1:])


def _metas(r):
    """A NumPy result as meta arrays (shape and dtype kept, values dropped; C order)."""
    if isinstance(r, numpy.ndarray):
        return MetaArray(r.shape, r.dtype)
    if isinstance(r, numpy.generic):
        return MetaArray((), r.dtype)
    if type(r) is tuple or type(r) is list:
        return type(r)(_metas(v) for v in r)
    if isinstance(r, tuple) and hasattr(r, "_fields"):  # named tuples (eigh, svd, ...)
        return type(r)(*(_metas(v) for v in r))
    return r


def _compute(fn, args, kwargs):
    with numpy.errstate(all="ignore"):
        return _metas(fn(*_standins(args), **{k: _standins(v) for k, v in kwargs.items()}))


def _shrunk(a, axis):
    """``a``'s stand-in with the axes in ``axis`` (all for None) one element long (none
    long where ``a`` is empty along them, so that empty reductions still raise)."""
    axes = range(a.ndim) if axis is None else (
        (axis,) if isinstance(axis, (int, numpy.integer)) else axis)
    shape = list(a.shape)
    for d in axes:
        d = int(d) % max(a.ndim, 1) if a.ndim else 0
        if a.ndim:
            shape[d] = min(shape[d], 1)
    return numpy.broadcast_to(_zero(a.dtype), tuple(shape))


_ALL = frozenset({"all", "alltrue"})


def _reduction(func, args, kwargs, every=None):
    a = args[0]
    axis = kwargs.get("axis", args[1] if len(args) > 1 else None)
    rest = {k: _standins(v) for k, v in kwargs.items()}
    out = rest.pop("out", None) if isinstance(kwargs.get("out"), MetaArray) else None
    with numpy.errstate(all="ignore"):
        r = func(_shrunk(a, axis), *_standins(args[1:]), **rest)
    if out is not None:
        return out
    r = _metas(r)
    if type(r) is MetaArray:
        r.truth = func.__name__ in _ALL if every is None else every
    return r


def _function(func, args, kwargs):
    name = func.__name__
    if name in _DATA_DEPENDENT:
        aten = _DATA_DEPENDENT[name]
        raise NotImplementedError((_UNBACKED if aten == "nonzero" else _NO_KERNEL)
                                  .format(aten))
    first = args[0] if args else None
    if type(first) is MetaArray:
        if name in _REDUCTIONS and kwargs.get("where") is None:
            return _reduction(func, args, kwargs)
        if name in _VIEWS and func.__module__ == "numpy":
            return first._view_of(func, *args[1:], **kwargs)
        if name == "reshape":
            return first.reshape(*args[1:2], **{k: v for k, v in kwargs.items()
                                                 if k in ("shape", "newshape")})
        if name == "ravel":
            return first.reshape(-1)
    if name in ("may_share_memory", "shares_memory"):
        return _overlap(func, *args[:2])
    if name in ("shape", "ndim", "size", "result_type", "iscomplexobj", "isrealobj"):
        return func(*_standins(args), **kwargs)  # (shapes and dtypes only)
    if name in ("concatenate", "stack"):
        r = _concatenation(func, args, kwargs)
        if r is not None:
            return r
    if func.__module__.startswith("numpy.linalg"):
        # (zero matrices are singular: linear algebra runs on identities of their shape)
        with numpy.errstate(all="ignore"):
            return _metas(func(*_identities(args), **kwargs))
    r = _compute(func, args, kwargs)
    if name in _ELEMENTWISE and type(r) is MetaArray:  # (laid out as its operands, as ufuncs)
        like = next((a for a in args if type(a) is MetaArray and a.shape == r.shape), None)
        r.strides = _layout_like(like, r.shape, r.itemsize) or r.strides
    return r


def _identities(x):
    """``x`` with every meta array in it replaced by a stack of identity matrices (a
    zero-strided one: one matrix of memory)."""
    if type(x) is MetaArray:
        if x.ndim < 2:
            return x.standin()
        return numpy.broadcast_to(numpy.eye(*x.shape[-2:], dtype=x.dtype), x.shape)
    if isinstance(x, (list, tuple)):
        return (list if type(x) is list else tuple)(_identities(v) for v in x)
    return _standins(x)


def _overlap(func, a, b):
    """``may_share_memory`` / ``shares_memory`` of meta arrays: views of one storage only,
    told by NumPy from their phantoms (which it reads the bounds of, never the elements)."""
    if type(a) is not MetaArray or type(b) is not MetaArray:
        return False
    if (a.base if a.base is not None else a) is not (b.base if b.base is not None else b):
        return False
    return bool(func(a.phantom(), b.phantom()))


def _ufunc(ufunc, method, inputs, kwargs):
    out = kwargs.pop("out", None)
    if out is not None and len(out) == 1:
        out = out[0]
    for x in inputs:
        if type(x) is numpy.ndarray and x.ndim:
            _refuse_host(x)
    if method == "__call__" and ufunc.signature is None:
        return _elementwise(ufunc, inputs, kwargs, out)
    if method == "at":  # (an in-place scatter: nothing to write)
        return None
    if method == "reduce":
        a = inputs[0]
        axis = kwargs.pop("axis", inputs[1] if len(inputs) > 1 else 0)
        r = _reduction(ufunc.reduce, (a, axis) + tuple(inputs[2:]), kwargs,
                       every=ufunc is numpy.logical_and)
        return _into(out, r)
    if method == "outer":
        a, b = inputs
        dtype = _result_dtypes(ufunc, inputs, kwargs)[0]
        return _into(out, MetaArray(tuple(numpy.shape(a)) + tuple(numpy.shape(b)), dtype))
    if method == "accumulate":
        a = inputs[0]
        dtype = ufunc.accumulate(numpy.zeros((1,), a.dtype), **{
            k: v for k, v in kwargs.items() if k == "dtype"}).dtype
        return _into(out, MetaArray(a.shape, dtype))
    if method == "__call__" and not any(c.isdigit() for c in ufunc.signature):
        return _into(out, _generalized(ufunc, inputs, kwargs))
    return _into(out, _compute(getattr(ufunc, method) if method != "__call__" else ufunc,
                               inputs, kwargs))


def _generalized(ufunc, inputs, kwargs):
    """A generalized ufunc (matmul, vecdot, ...) of meta arrays, whatever their size: its
    result's every length is one of its operands' (a core or a broadcast dimension), so it
    runs on stand-ins with each distinct length replaced by a small one (0 and 1 kept, as
    broadcasting treats them apart; equal lengths stay equal, so mismatches raise NumPy's
    errors) and the result's lengths are mapped back."""
    lengths = sorted({n for x in inputs if type(x) is MetaArray for n in x.shape} - {0, 1})
    small = {n: i + 2 for i, n in enumerate(lengths)}
    large = {v: k for k, v in small.items()}
    small_inputs = tuple(
        numpy.broadcast_to(_zero(x.dtype), tuple(small.get(n, n) for n in x.shape))
        if type(x) is MetaArray else _standins(x) for x in inputs)
    try:
        with numpy.errstate(all="ignore"):
            r = ufunc(*small_inputs, **{k: _standins(v) for k, v in kwargs.items()})
    except ValueError:  # (raised again on the real lengths, which NumPy's message names)
        return _compute(ufunc, inputs, kwargs)
    rs = r if isinstance(r, tuple) else (r,)
    metas = tuple(MetaArray(tuple(large.get(n, n) for n in numpy.shape(v)),
                            numpy.asarray(v).dtype) for v in rs)
    return metas if isinstance(r, tuple) else metas[0]


def _into(out, r):
    if type(out) is MetaArray:
        numpy.broadcast_shapes(out.shape, r.shape)
        return out
    if out is not None:
        _refuse_host(out)
    return r


def _result_dtypes(ufunc, inputs, kwargs):
    """The dtypes ``ufunc`` gives for ``inputs`` (a run on 0-d ones of their dtypes)."""
    probes = tuple(_one(x.dtype) if isinstance(x, (MetaArray, numpy.ndarray)) else x
                   for x in inputs)
    with numpy.errstate(all="ignore"):
        r = ufunc(*probes, **kwargs)
    rs = r if ufunc.nout > 1 else (r,)
    return [numpy.asarray(v).dtype for v in rs]


def _elementwise(ufunc, inputs, kwargs, out):
    shape = numpy.broadcast_shapes(*(numpy.shape(x) for x in inputs
                                     if isinstance(x, (MetaArray, numpy.ndarray))))
    kwargs = {k: v for k, v in kwargs.items() if k in ("dtype", "casting", "signature")}
    dtypes = _result_dtypes(ufunc, inputs, kwargs)
    outs = out if isinstance(out, tuple) else (out,) * len(dtypes)
    like = next((x for x in inputs if type(x) is MetaArray and x.shape == shape), None)
    results = []
    for o, dt in zip(outs, dtypes):
        if type(o) is MetaArray:
            if numpy.broadcast_shapes(o.shape, shape) != o.shape:
                raise ValueError(f"non-broadcastable output operand with shape {o.shape} "
                                 f"doesn't match the broadcast shape {shape}")
            results.append(o)
        elif o is not None:
            _refuse_host(o)
        else:
            results.append(MetaArray(shape, dt, _layout_like(like, shape, dt.itemsize)))
    return results[0] if len(results) == 1 else tuple(results)


class _OnStandins:
    """A module of functions on arrays (SciPy's) made to take meta arrays: its ufuncs take
    them already (``__array_ufunc__``), its other functions run on stand-ins."""

    def __init__(self, module):
        self._module = module

    def __getattr__(self, name):
        fn = getattr(self._module, name)
        if isinstance(fn, numpy.ufunc) or not callable(fn):
            return fn
        return lambda *args, **kwargs: _compute(fn, args, kwargs)


# -- random draws ---------------------------------------------------------------------------------
def sample(kernel, *args):
    """A random draw for a meta tensor: an array of the draw's shape and dtype, nothing drawn.
    ``args`` are the CPU kernel's of the same name after its generator: ``(n, dtype, ...)``,
    or the parameter arrays first (bernoulli with tensor p, poisson, gamma, ...)."""
    if kernel == "randperm":
        return MetaArray((args[0],), numpy.int64)
    if kernel == "multinomial":
        probs, num_samples = args[0], args[1]
        return MetaArray(tuple(probs.shape[:-1]) + (num_samples,), numpy.int64)
    first = args[0]
    if type(first) is MetaArray:
        dtype = next((a for a in args[1:] if isinstance(a, numpy.dtype)), first.dtype)
        return MetaArray(first.shape, dtype)
    return MetaArray((int(first),), args[1])


# -- the array module of meta arrays ------------------------------------------------------------
def _full_maker(name):
    def make(shape, *args, dtype=None, order="C", **kwargs):
        if name == "full":
            fill = args[0] if args else kwargs.pop("fill_value")
            if len(args) > 1:
                dtype = args[1]
            dtype = dtype if dtype is not None else numpy.asarray(fill).dtype
        elif args:
            dtype = args[0]
        shape = (shape,) if isinstance(shape, (int, numpy.integer)) else tuple(shape)
        return MetaArray(shape, numpy.float64 if dtype is None else dtype)
    make.__name__ = name
    return make


def _like_maker(name):
    def like(a, *args, dtype=None, shape=None, **kwargs):
        if name == "full_like" and dtype is None:
            dtype = a.dtype
        elif args and name != "full_like":
            dtype = args[0]
        shape = a.shape if shape is None else shape
        return MetaArray(shape, a.dtype if dtype is None else dtype)
    like.__name__ = name
    return like


def _from_host(name):
    fn = getattr(numpy, name)

    def make(*args, **kwargs):
        if any(type(a) is MetaArray for a in args):
            return _function(fn, args, kwargs)
        return _metas(fn(*args, **kwargs))
    make.__name__ = name
    return make


def _as_meta(a, dtype=None, *args, **kwargs):
    """``xp.asarray``: meta arrays stay themselves (cast where asked); host values become
    meta arrays of their shape and dtype."""
    if type(a) is MetaArray:
        return a if dtype is None or numpy.dtype(dtype) == a.dtype else a.astype(dtype)
    if isinstance(a, (list, tuple)) and any(type(v) is MetaArray for v in a):
        return _compute(numpy.asarray, (a,), {"dtype": dtype})
    return _metas(numpy.asarray(a, dtype))


def _as_strided(x, shape=None, strides=None, subok=False, writeable=True):
    """``as_strided`` of a meta array: the view those strides describe (no bounds checked,
    as NumPy checks none)."""
    shape = x.shape if shape is None else tuple(shape)
    strides = x.strides if strides is None else tuple(strides)
    return MetaArray(shape, x.dtype, strides, x.offset, x.base if x.base is not None else x)


def _sliding_window_view(x, *args, **kwargs):
    return x._view_of(numpy.lib.stride_tricks.sliding_window_view, *args, **kwargs)


def _module():
    space = types.ModuleType("ember_meta_numpy", "NumPy's namespace for meta arrays.")
    for name in ("empty", "zeros", "ones", "full"):
        setattr(space, name, _full_maker(name))
    for name in ("empty_like", "zeros_like", "ones_like", "full_like"):
        setattr(space, name, _like_maker(name))
    for name in ("arange", "linspace", "logspace", "eye", "identity", "tri", "indices",
                 "geomspace"):
        setattr(space, name, _from_host(name))
    space.lib = types.SimpleNamespace(stride_tricks=types.SimpleNamespace(
        as_strided=_as_strided, sliding_window_view=_sliding_window_view))
    space.asarray = space.array = space.asanyarray = space.ascontiguousarray = _as_meta

    def __getattr__(name):  # everything else: NumPy's own, which dispatches to MetaArray
        return getattr(numpy, name)
    space.__getattr__ = __getattr__
    space.ndarray = MetaArray
    return space


META_XP = _module()


class MetaBackend:
    """Serves the ``meta`` device (one device, no index)."""

    type = "meta"
    launch_bound = False  # (see ember._backend.launch_bound: no kernels run here)
    xp = META_XP
    array_type = MetaArray

    def __init__(self):
        from .device import device
        self.device = device("meta")

    def device_of(self, array):
        return self.device

    def current_index(self):
        return None

    def index_of(self, array):
        return None

    def make(self, index, factory, *args, **kwargs):
        return getattr(META_XP, factory)(*args, **kwargs)

    def from_host(self, array, index=None, non_blocking=False):
        """A meta array shaped as ``array`` (its layout kept where it is a dense one, as
        torch's ``.to('meta')`` keeps it)."""
        source = MetaArray(array.shape, array.dtype, array.strides)
        return MetaArray(array.shape, array.dtype,
                         _layout_like(source, array.shape, array.dtype.itemsize))

    def to_host(self, array, non_blocking=False):
        raise NotImplementedError(NO_DATA)

    # -- what the other backends spell differently: nothing to write, nothing to check --------
    def scatter_add(self, target, index, values):
        return target

    def scatter_reduce(self, name, target, index, values):
        return target

    def linalg_errors(self):
        return contextlib.nullcontext()

    def special(self):
        """SciPy's special functions, run on meta arrays (None without SciPy, as on the
        CPU)."""
        try:
            import scipy.special
        except ImportError:
            return None
        return _OnStandins(scipy.special)

    def linalg(self):
        return None  # (SciPy's linear algebra reads values: ember's own kernels serve)

    def copy_between(self, array, index):
        return MetaArray(array.shape, array.dtype)
