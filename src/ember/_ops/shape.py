"""Shape ops and views: reshape, transpose, expand, squeeze, indexing, copies and casts.

View ops return NumPy views, so they share memory (and, through the registry, the version
counter) with their base, as torch's views do.
"""
from __future__ import annotations

__all__ = ['cat', 'chunk', 'clone', 'flatten', 'permute', 'ravel', 'reshape', 'select', 'split',
           'squeeze', 'stack', 't', 'transpose', 'unbind', 'unsqueeze']
__all__ += ['swapaxes', 'unsafe_chunk', 'unsafe_split', 'unsafe_split_with_sizes']

import re
import warnings
from math import prod

import numpy as np

from .. import _dtype as D
from .._backend import asarray_like, get_xp, is_array
from .._backend.layout import copy_in_format, empty_in_order, format_order
from .._backend.device import CPU, as_device, move, same_device
from .._backend.device import device as Device
from .._compile.hooks import constant
from .._info import check_scalar, half_source
from .._size import args_or_keyword
from .._state import forward_hook, profiler_hook, state, vmap_hook
from .._tensor import Tensor, _wrap, _wrap_dim
from .empty_views import expand_strides
from .pointwise import zero_gradient
from .registry import NONE, index_key, op

# -- reshaping ---------------------------------------------------------------------------------


def _shape_arg(shape):
    """Accept ``f(2, 3)`` and ``f((2, 3))`` like torch's size arguments."""
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = shape[0]
    return tuple(map(int, shape))  # (map: a third of a generator's cost on this hot path)


def infer_shape(shape, numel):
    """Resolve a single -1 in ``shape``, with torch's errors for impossible shapes."""
    shape = tuple(shape)
    if -1 not in shape:
        if prod(shape) != numel:
            raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
        return shape
    if shape.count(-1) > 1:
        raise RuntimeError("only one dimension can be inferred")
    known = 1
    for s in shape:
        if s != -1:
            known *= s
    if known == 0 or numel % known:
        raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
    return tuple(numel // known if s == -1 else s for s in shape)


@op("view", view=True, promote=NONE)
def view(self, shape):
    shape = infer_shape(shape, self.size)
    try:
        return self.reshape(shape, copy=False)
    except ValueError:
        raise RuntimeError("view size is not compatible with input tensor's size and stride (at "
                           "least one dimension spans across two contiguous subspaces). Use "
                           ".reshape(...) instead.") from None


@view.grad("self")
def _(grad, self_shape):
    return reshape(grad, self_shape)


@view.batched_grad("self")
def _(grad, self_shape):
    return reshape(grad, (grad.shape[0],) + tuple(self_shape))


@op("_fw_primal", view=True, promote=NONE, node="CppFunction", elementwise=True)
def fw_primal(self):
    """Forward AD's primal of a tensor (``unpack_dual``): an alias of it, torch's
    ``_fw_primal`` view, whose node is torch's generic C++ one (``Identity``)."""
    return self.view()


@fw_primal.grad("self")
def _(grad):
    return grad


fw_primal.node_cls.name = lambda node: "torch::autograd::Identity"


@op("_unsafe_view", node="UnsafeViewBackward0", promote=NONE)
def unsafe_view(self, shape):
    return self.reshape(infer_shape(shape, self.size))


@unsafe_view.grad("self")
def _(grad, self_shape):
    return reshape(grad, self_shape)


unsafe_view.batched_grad("self")(view.batched_formulas[0][1])


@op("_reshape_alias", view=True, promote=NONE, node="ReshapeAliasBackward0")
def reshape_alias(self, shape):
    """A reshape of a non-contiguous tensor that its strides allow as a view."""
    return view.kernel(self, shape)


@reshape_alias.grad("self")
def _(grad, self_shape):
    return reshape(grad, self_shape)


reshape_alias.batched_grad("self")(view.batched_formulas[0][1])


def reshape(input, *args, shape=None):  # noqa: A002 - torch's name
    """Same data in a new shape, as torch does it: a view of a contiguous tensor, an alias with
    new strides when the strides allow it, else a copy."""
    # (the keyword form is checked only when given: reshape and view are on every hot path)
    try:  # (a try costs nothing until it catches: a wrapper would cost every call a frame)
        size = _shape_arg(args if shape is None else args_or_keyword(args, shape, "reshape",
                                                                      "shape"))
        if not isinstance(input, Tensor):
            return input.reshape(size)
        if vmap_hook[0] is not None and type(input) is not Tensor:
            return _reshape_example(input, size)
        data = input._data
        if data.flags.c_contiguous:
            return view(input, size)
        try:
            data.reshape(infer_shape(size, data.size), copy=False)
        except ValueError:
            return unsafe_view(clone(input), size)
        return reshape_alias(input, size)
    except Exception:  # noqa: BLE001 - a failed call, read against torch's parser
        # (as the method words it; ember.reshape's wrapper words it as the function)
        from .._arg_parser import raise_refusal
        raise_refusal("reshape", (input, *args), _given(shape=shape), True)
        raise


def _reshape_example(self, shape):
    """reshape of one example under vmap (its array has no layout of its own to look at): a
    view where the view op's batching rule can make one, else a copy."""
    try:
        return view(self, shape)
    except RuntimeError as e:
        if "view size" not in str(e):
            raise
    return unsafe_view(clone(self), shape)


def _view_method(self, *args, size=None, dtype=None):
    try:  # (a try costs nothing until it catches: a wrapper would cost every call a frame)
        shape = args if size is None and dtype is None else args_or_keyword(
            args, size if dtype is None else dtype, "view", "size" if dtype is None else "dtype")
        if len(shape) == 1 and isinstance(shape[0], D.dtype):
            return _view_dtype(self, shape[0])
        return view(self, _shape_arg(shape))
    except Exception:  # noqa: BLE001 - a failed call, read against torch's parser
        return _method_failed(_view_method, "view", (self, *args),
                              _given(size=size, dtype=dtype))


def _given(**kwargs):
    """The keywords of a failed call that it gave (those not None, each parameter's default)."""
    return {k: v for k, v in kwargs.items() if v is not None}


def _method_failed(method, name, args, kwargs):
    from .registry import method_failed
    return method_failed(method, name, args, kwargs)


_view_method.parses_on_failure = True  # (see _arg_parser.install_methods)


def _view_dtype(self, dtype):
    """``x.view(dtype)``: the same memory read as ``dtype`` (the last dim scaled by the ratio of
    the element sizes). As in torch it is outside autograd (never requires grad, no grad_fn),
    and, like ``detach()``, it shares its version counter with ``self``."""
    if "_phys" in self.__dict__:  # (torch's refusal for a view with a bit, whatever dtype)
        what = ("conjugate view tensors" if self.__dict__.get("_conj_bit")
                else "tensors with negative bit set")
        raise RuntimeError(f"ember.Tensor.view is not supported for {what} when converting to "
                           "a different dtype.")
    data = self._data
    old, new = data.dtype.itemsize, np.dtype(dtype.np).itemsize
    if old != new:
        _check_view_dtype(self, dtype, old, new)
    t = self.detach()
    if data.size == 0:  # (NumPy refuses some of these, and would not place them as torch)
        from .empty_views import as_dtype
        t._data = as_dtype(data, dtype.np)
    else:
        t._data = data.view(dtype.np)
    return t


def _check_view_dtype(self, dtype, old, new):
    """torch's conditions for viewing as a dtype of another element size."""
    what = (f" to view {D._BY_NP[self._data.dtype].scalar_name} as {dtype.scalar_name} "
            "(different element sizes)")
    if self.ndim == 0:
        raise RuntimeError("self.dim() cannot be 0" + what)
    strides = self.stride()
    ratio = new // old if new > old else 1  # (torch checks in this order)
    for name, value in (("self.size(-1)", self.shape[-1]),
                        ("self.storage_offset()", self.storage_offset())):
        if value % ratio:
            raise RuntimeError(f"{name} must be divisible by {ratio}{what}, but got {value}")
    if strides[-1] != 1:
        raise RuntimeError(f"self.stride(-1) must be 1{what}, but got {strides[-1]}")
    for i, value in enumerate(strides[:-1]):
        if value % ratio:
            raise RuntimeError(f"self.stride({i}) must be divisible by {ratio}{what}, but got "
                               f"{value}")


Tensor.view = _view_method
Tensor.reshape = reshape
reshape.parses_on_failure = True  # (see _arg_parser.install_methods)
Tensor.view_as = lambda self, other: view(self, other._data.shape)
Tensor.reshape_as = lambda self, other: reshape(self, other._data.shape)


def flatten(input, start_dim=0, end_dim=-1):  # noqa: A002 - torch's name
    nd = input.ndim
    if nd == 0:
        return reshape(input, (1,))
    s, e = _wrap_dim(start_dim, nd), _wrap_dim(end_dim, nd)
    if s > e:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    shp = input.shape
    if s == e:
        return input
    mid = 1
    for d in shp[s:e + 1]:
        mid *= d
    return reshape(input, tuple(shp[:s]) + (mid,) + tuple(shp[e + 1:]))


Tensor.flatten = flatten


def ravel(input):
    """The elements as a 1-D view (of a contiguous copy when ``input`` is not contiguous)."""
    return view(input.contiguous(), (-1,))


Tensor.ravel = ravel


def transposed_2d(self, name="t()"):
    """``self`` (an array of at most 2 dimensions) transposed; ``name``: the call torch's
    refusal names (``t()`` or ``t_()``)."""
    if self.ndim > 2:
        raise RuntimeError(f"{name} expects a tensor with <= 2 dimensions, but self is "
                           f"{self.ndim}D")
    return self.T


@op("t", view=True, promote=NONE, method=True, node="TBackward0")
def t(self):
    return transposed_2d(self)


@t.grad("self")
def _(grad):
    return t(grad)


@t.batched_grad("self")
def _(grad):
    return transpose(grad, -1, -2) if grad.ndim == 3 else grad  # (batch, *self.t().shape)


_T_DEPRECATED = ("The use of `x.T` on tensors of dimension other than 2 to reverse their shape "
                 "is deprecated and it will throw an error in a future release. Consider `x.mT` "
                 "to transpose batches of matrices or `x.permute(*torch.arange(x.ndim - 1, -1, "
                 "-1))` to reverse the dimensions of a tensor.")


def _numpy_T(self):
    """``x.T``: the dims reversed, a permute (torch's numpy_T), also for matrices."""
    nd = self.ndim
    if nd == 0:
        warnings.warn("Tensor.T is deprecated on 0-D tensors. This function is the identity in "
                      "these cases.", UserWarning, stacklevel=2)
    elif nd != 2:
        warnings.warn(_T_DEPRECATED, UserWarning, stacklevel=2)
    return _permute(self, tuple(range(nd - 1, -1, -1)))


def _conj_if_complex(x):
    """``x.conj()`` for complex tensors; real ones are their own conjugate (torch too)."""
    if x.dtype.is_complex:
        conj = getattr(Tensor, "conj", None)
        if conj is None:
            raise NotImplementedError("the conjugate transpose of a complex tensor needs "
                                      "Tensor.conj, which ember does not have")
        return conj(x)
    return x


_ZERO_DIM_TRANSPOSE = {  # (each warned once per process, as torch's TORCH_WARN_ONCE)
    "mT": "Tensor.mT is deprecated on 0-D tensors. This function is the identity in these "
          "cases.",
    "mH": "Tensor.mH is deprecated on 0-D tensors. Consider using x.conj().",
    "adjoint()": "adjoint() is deprecated on 0-D tensors. Consider using x.conj().",
}


def _matrix_transpose(self, name="mT"):
    if self.ndim == 0:  # torch: the tensor itself, with a deprecation warning (once)
        message = _ZERO_DIM_TRANSPOSE.pop(name, None)
        if message is not None:
            from .inplace import _user_stacklevel
            warnings.warn(message, UserWarning, stacklevel=_user_stacklevel())
        return self
    if self.ndim < 2:
        raise RuntimeError(f"tensor.{name} is only supported on matrices or batches of "
                           f"matrices. Got {self.ndim}-D tensor.")
    return transpose(self, -2, -1)


def _adjoint(self):
    """``x.H``: the conjugate transpose of a matrix."""
    nd = self.ndim
    if nd == 0:
        warnings.warn("Tensor.H is deprecated on 0-D tensors. Consider using x.conj().",
                      UserWarning, stacklevel=2)
        return _conj_if_complex(self)
    if nd != 2:
        extra = (" For batches of matrices, consider using tensor.mH" if nd > 2 else "")
        raise RuntimeError(f"tensor.H is only supported on matrices (2-D tensors). Got "
                           f"{nd}-D tensor.{extra}")
    return _conj_if_complex(transpose(self, -2, -1))  # (the dims torch's node shows)


Tensor.T = property(_numpy_T)
Tensor.mT = property(_matrix_transpose)
Tensor.mH = property(lambda self: _conj_if_complex(_matrix_transpose(self, "mH")))
Tensor.H = property(_adjoint)
Tensor.adjoint = lambda self: _conj_if_complex(_matrix_transpose(self, "adjoint()"))


@op("transpose", view=True, promote=NONE, method=("transpose", "swapdims"))
def transpose(self, dim0, dim1):
    d0, d1 = _wrap_dim(dim0, self.ndim), _wrap_dim(dim1, self.ndim)
    if self.ndim == 0:  # torch wraps dims 0 and -1 of a 0-dim tensor and returns it (a view)
        return self.view()
    return get_xp(self).swapaxes(self, d0, d1)


@transpose.grad("self")
def _(grad, dim0, dim1):
    return transpose(grad, dim0, dim1)


def swapaxes(input, axis0, axis1):  # noqa: A002 - torch's name
    """``transpose`` under NumPy's argument names, as torch's swapaxes takes them."""
    return transpose(input, axis0, axis1)


Tensor.swapaxes = swapaxes


@transpose.batched_grad("self")
def _(grad, dim0, dim1):
    ndim = grad.ndim - 1
    if ndim == 0:
        return grad
    return transpose(grad, _wrap_dim(dim0, ndim) + 1, _wrap_dim(dim1, ndim) + 1)


@op("permute", view=True, promote=NONE)
def _permute(self, dims):
    if len(dims) != self.ndim:
        raise RuntimeError(f"permute(sparse_coo): number of dimensions in the tensor input does "
                           f"not match the length of the desired ordering of dimensions i.e. "
                           f"input.dim() = {self.ndim} is not equal to len(dims) = {len(dims)}")
    dims = tuple(_wrap_dim(d, self.ndim) for d in dims)
    if len(set(dims)) != len(dims):
        raise RuntimeError("permute(): duplicate dims are not allowed.")
    return get_xp(self).transpose(self, dims)


@_permute.grad("self")
def _(grad, dims):
    n = len(dims)
    inverse = [0] * n
    for i, d in enumerate(dims):
        inverse[d % n] = i
    return permute(grad, tuple(inverse))


def _permute_dims(dims, position):
    """permute's ``dims`` (given as one sequence or spread out), with torch's TypeErrors."""
    if not dims:
        raise TypeError('permute() missing 1 required positional arguments: "dims"')
    seq = dims[0] if len(dims) == 1 and not isinstance(dims[0], int) else dims
    if not isinstance(seq, (tuple, list)):  # (a Size is a tuple)
        raise TypeError(f"permute(): argument 'dims' (position {position}) must be tuple of "
                        f"ints, not {type(seq).__name__}")
    for i, d in enumerate(seq):
        if not isinstance(d, (int, np.integer)) and not (isinstance(d, Tensor) and d.ndim == 0):
            raise TypeError(f"permute(): argument 'dims' (position {position}) must be tuple "
                            f"of ints, but found element of type {type(d).__name__} at pos {i}")
    return _shape_arg(dims)


def permute(input, *args, dims=None):  # noqa: A002 - torch's name
    return _permute(input, _permute_dims(args_or_keyword(args, dims, "permute", "dims"), 2))


def _permute_method(self, *args, dims=None):
    if dims is not None:
        args = args_or_keyword(args, dims, "permute", "dims")
    return _permute(self, _permute_dims(args, 1))


Tensor.permute = _permute_method


@op("expand", view=True, promote=NONE)
def _expand(self, size):
    shape = self.shape  # (read once: ndarray.shape builds a new tuple on every access)
    if not shape and type(self) is np.ndarray and -1 not in size:
        # a 0-d array to any shape (sum's gradient): one number everywhere, stride 0 (what
        # _expanded gives it, without working out the strides)
        try:
            return np.ndarray(size, self.dtype, self, 0, (0,) * len(size))
        except ValueError:
            pass  # another negative size: torch's error below (a min() over the sizes
            # first would cost as much as the ndarray call; NumPy reads -1 as "any")
    size = tuple(size)
    nd = len(size)
    lead = nd - len(shape)
    if lead < 0:
        typename = D._BY_NP[self.dtype].type_string
        raise RuntimeError(f"expand({typename}{{{list(shape)}}}, size={list(size)}): "
                           f"the number of sizes provided ({nd}) must be greater or equal to "
                           f"the number of dimensions in the tensor ({len(shape)})")
    if not shape and min(size, default=0) < 0:  # (torch's 0-d path checks no size first)
        raise RuntimeError("numel: integer multiplication overflow")
    target = list(size)
    for k in reversed(range(len(shape))):  # (the last dimension first, as torch checks)
        n, s = shape[k], size[lead + k]
        if s == -1:
            target[lead + k] = n
        elif n != s and n != 1:
            raise RuntimeError(
                f"The expanded size of the tensor ({s}) must match the existing size "
                f"({n}) at non-singleton dimension {lead + k}.  Target sizes: "
                f"{list(size)}.  Tensor sizes: {list(shape)}")
    for i in reversed(range(lead)):
        if size[i] == -1:
            raise RuntimeError(f"The expanded size of the tensor (-1) isn't allowed in a "
                               f"leading, non-existing dimension {i}")
    if min(target, default=0) < 0:  # (another negative size: torch's count of elements)
        raise RuntimeError("numel: integer multiplication overflow")
    return _expanded(self, tuple(target))


def _expanded(a, target):
    """``a`` broadcast to ``target`` as a view on its memory, as writable as ``a``.

    NOTE: writable, as torch's expanded views are: the few in-place ops torch allows on them
    (fill_, zero_, masked_fill_, index_put_) write through; the others are refused by the
    in-place path (inplace._check_no_internal_overlap). Gradients torch makes with ``expand``
    (sum's) are such views too, and behave so when user code writes into them.
    """
    out = _broadcast_view(a, target)
    if out is not None:
        return out
    if type(a) is np.ndarray:  # (with torch's strides: copy_ of x onto x[None] is no copy)
        return np.lib.stride_tricks.as_strided(
            a, target, expand_strides(a.shape, a.strides, target),
            writeable=a.flags.writeable)
    return get_xp(a).broadcast_to(a, target)  # (CuPy's views are all writable)


@_expand.grad("self")
def _(grad, self_shape):
    from .reduction import sum_to
    return sum_to(grad, self_shape)


@_expand.batched_grad("self")
def _(grad):
    return grad  # the engine sums the batch of rows to self's shape


def _broadcast_view(a, target):
    """``a`` broadcast to ``target`` (a valid broadcast) as a view on its buffer, or None
    when ``a`` is not a C-contiguous NumPy array.

    NOTE: torch's strides (0 where it broadcasts), in one ndarray() call: a tenth of the cost
    of broadcast_to (and of as_strided, which the writable case would need on top).
    """
    if type(a) is not np.ndarray or not a.flags.c_contiguous:
        return None
    return np.ndarray(target, a.dtype, a, 0, expand_strides(a.shape, a.strides, target))


def expand(self, *args, size=None, implicit=False):
    # (implicit: torch's flag for traced expansions; it changes nothing when run)
    try:  # (a try costs nothing until it catches: a wrapper would cost every call a frame)
        if size is None and not args:
            raise TypeError('expand() missing 1 required positional arguments: "size"')
        # (the sizes under another name: a failure reads the keyword given)
        shape = args if size is None else args_or_keyword(args, size, "expand", "size")
        if not isinstance(self, Tensor):  # a first-order formula's gradient
            if (type(self) is np.ndarray and self.ndim == 0 and len(shape) == 1
                    and type(shape[0]) is tuple):
                # sum's, given its input's shape: one number everywhere, as a stride-0 view
                # (no strides to work out, so not _broadcast_view: half the cost on this hot
                # path) (as writable as self: np.ndarray on a buffer keeps its writability)
                shape = shape[0]
                return np.ndarray(shape, self.dtype, self, 0, (0,) * len(shape))
            return _expanded(self, _shape_arg(shape))
        shape = _shape_arg(shape)
        if type(self) is Tensor and forward_hook[0] is None and profiler_hook[0] is None:
            call = _expand.caller  # (the op's generated path, as the op's call would take:
            if call is not None:   # every create_graph pass through a sum expands its gradient)
                return call((self, shape))
        return _expand(self, shape)
    except Exception:  # noqa: BLE001 - a failed call, read against torch's parser
        return _method_failed(expand, "expand", (self, *args),
                              _given(size=size, implicit=implicit or None))


def expand_to(self, shape):
    """``expand(self, shape)`` for a formula's ``shape``: a tuple of ints (an input's shape, as
    its node saved it), so none of ``expand``'s argument parsing.

    NOTE: every sum's and mean's gradient; a create_graph pass takes the op's generated path
    as ``expand`` would (the kernel still checks the sizes).
    """
    if type(self) is np.ndarray and not self.shape:  # (sum's first-order gradient: see expand)
        return np.ndarray(shape, self.dtype, self, 0, (0,) * len(shape))
    if not isinstance(self, Tensor):
        return _expanded(self, shape)
    if type(self) is Tensor and forward_hook[0] is None and profiler_hook[0] is None:
        call = _expand.caller
        if call is not None:
            return call((self, shape))
    return _expand(self, shape)


Tensor.expand = expand
expand.parses_on_failure = True  # (see _arg_parser.install_methods)
Tensor.expand_as = lambda self, other: _expand(self, other._data.shape)
Tensor.broadcast_to = lambda self, size: _expand(self, tuple(size))


@op("squeeze", view=True, promote=NONE, node="SqueezeBackward0")
def _squeeze_all(self):
    return self.reshape(tuple(s for s in self.shape if s != 1))


def _unsqueeze_to(grad, dims, self_shape, batch=0):
    """torch's unsqueeze_to: the squeezed dimensions (of size one) back, one unsqueeze each.
    ``batch=1``: ``grad`` has a leading batch dimension (a batched backward)."""
    for d in sorted(dims):
        if self_shape[d] == 1:
            grad = unsqueeze(grad, d + batch)
    return grad


@_squeeze_all.grad("self")
def _(grad, self_shape):
    return _unsqueeze_to(grad, range(len(self_shape)), self_shape)


@_squeeze_all.batched_grad("self")
def _(grad, self_shape):
    return _unsqueeze_to(grad, range(len(self_shape)), self_shape, 1)


@op("squeeze", view=True, promote=NONE, node="SqueezeBackward1")
def _squeeze_dim(self, dim):
    d = _wrap_dim(dim, self.ndim)
    return self.reshape(tuple(s for i, s in enumerate(self.shape) if not (i == d and s == 1)))


@_squeeze_dim.grad("self")
def _(grad, self_shape, dim):
    return _unsqueeze_to(grad, (_wrap_dim(dim, len(self_shape)),) if self_shape else (),
                         self_shape)


@_squeeze_dim.batched_grad("self")
def _(grad, self_shape, dim):
    return _unsqueeze_to(grad, (_wrap_dim(dim, len(self_shape)),) if self_shape else (),
                         self_shape, 1)


@op("squeeze", view=True, promote=NONE, node="SqueezeBackward2")
def _squeeze_dims(self, dim):
    dims = _unique_dims(dim, self.ndim)
    return self.reshape(tuple(s for i, s in enumerate(self.shape) if not (i in dims and s == 1)))


@_squeeze_dims.grad("self")
def _(grad, self_shape, dim):
    return _unsqueeze_to(grad, _unique_dims(dim, len(self_shape)) if self_shape else (),
                         self_shape)


@_squeeze_dims.batched_grad("self")
def _(grad, self_shape, dim):
    return _unsqueeze_to(grad, _unique_dims(dim, len(self_shape)) if self_shape else (),
                         self_shape, 1)


@op("squeeze_", promote=NONE, node="SqueezeBackward4")
def squeeze_result(self, dim):
    """``result.squeeze_(dim)`` on a fresh result nobody else holds (matmul of a vector and a
    matrix, linear of a vector): torch squeezes it in place, so it is no view."""
    return _squeeze_dim.kernel(self, dim)


@squeeze_result.grad("self")
def _(grad, self_shape, dim):
    return _unsqueeze_to(grad, (_wrap_dim(dim, len(self_shape)),) if self_shape else (),
                         self_shape)


def _unique_dims(dims, ndim):
    """Wrapped dims, with torch's error for a dim given twice."""
    out = [_wrap_dim(d, ndim) for d in dims]
    for i, d in enumerate(out):
        if d in out[:i]:
            raise RuntimeError(f"dim {d} appears multiple times in the list of dims")
    return out


def squeeze(input, dim=None):  # noqa: A002 - torch's name
    """Remove dims of size 1 (all of them, or those of ``dim``, an int or a tuple)."""
    if dim is None:
        return _squeeze_all(input)
    if isinstance(dim, (tuple, list)):
        return _squeeze_dims(input, tuple(dim))
    return _squeeze_dim(input, dim)


Tensor.squeeze = squeeze


@op("unsqueeze", view=True, promote=NONE, method=True)
def unsqueeze(self, dim):
    d = _wrap_dim(dim, self.ndim + 1)
    out = self.reshape(self.shape[:d] + (1,) + self.shape[d:])
    if type(out) is np.ndarray and (1 in self.shape or (
            d == self.ndim and d and out.strides[-1] != out.itemsize)):
        # torch keeps every stride and gives the new dimension the one that continues the
        # next (1 at the end); NumPy's reshape repeats the last dimension's at the end and
        # recomputes those of dimensions of one element (NOTE: kept on other array modules,
        # whose views of views may not be re-strided)
        s = self.strides
        strides = s[:d] + ((self.shape[d] * s[d]) if d < self.ndim else self.itemsize,) + s[d:]
        if strides != out.strides:
            out = np.lib.stride_tricks.as_strided(out, out.shape, strides)
    return out


@unsqueeze.grad("self")
def _(grad, self_shape, dim):  # (self_shape: what the batched formula below uses)
    return _squeeze_dim(grad, _wrap_dim(dim, len(self_shape) + 1))


unsqueeze.batched_grad("self")(view.batched_formulas[0][1])


# -- copies and casts --------------------------------------------------------------------------
@op("clone", elementwise=True, promote=NONE, method=True, writes=1, own_layout=True,
    conj_saved=True, copies="whole")
def clone(self, memory_format=None):
    # (torch's preserve_format by default: a permuted input keeps its strides)
    if memory_format is None:
        if self.flags.c_contiguous and 1 not in self.shape:  # (the common case, kept fast)
            return self.copy()
        return copy_in_format(self)
    return copy_in_format(self, memory_format.name)


@clone.grad("self")
def _(grad):
    return grad


@clone.jvp("self")
def _(self_t, memory_format):
    # a copy laid out like the result (a view of it may follow)
    return clone(self_t, memory_format=memory_format)


def contiguous(self, memory_format=None):
    if memory_format is not None and memory_format.name == "preserve_format":
        raise RuntimeError("preserve memory format is unsupported by the contiguous operator")
    if self.is_contiguous(memory_format=memory_format):
        return self
    return clone(self, memory_format=memory_format or _CONTIGUOUS)


class _Contiguous:  # (ember.contiguous_format, which is made after the ops)
    name = "contiguous_format"


_CONTIGUOUS = _Contiguous()
Tensor.contiguous = contiguous


def _preserving(out, source):
    """``out``, an array computed from ``source``, laid out as torch's preserve_format lays out
    a copy of ``source`` (NumPy's order='K' differs on expanded and size-1 dimensions)."""
    flags = getattr(source, "flags", None)  # (None: a sparse array, which has no layout)
    if flags is None or flags.c_contiguous and 1 not in source.shape:
        return out
    laid = empty_in_order(out, format_order(source))
    if laid.strides == out.strides:
        return out
    laid[...] = out
    return laid


@op("_to_copy", node="ToCopyBackward0", promote=NONE, writes=1, conj_saved=True,
    copies="whole")
def to_copy(self, dtype=None, device=None, non_blocking=False, source=None,
            memory_format=None):
    # (D.cast is quiet: NaN, inf or an out-of-range value cast to an integer or a narrower
    # float gives torch's kernel's value without a word)
    out = self if dtype is None or self.dtype == dtype.np else _preserving(D.cast(self, dtype),
                                                                          self)
    if device is not None:
        moved = move(out, device, non_blocking)
        if moved is not self:
            return moved
    out = copy_in_format(out) if out is self else out
    return out if memory_format is None else _in_format(out, memory_format)


def _in_format(out, memory_format):
    """``out`` (a fresh array) laid out in ``memory_format`` (a name)."""
    laid = empty_in_order(out, format_order(out, memory_format))
    if laid.strides == out.strides:
        return out
    laid[...] = out
    return laid


to_copy.tangent_dtype_param = "dtype"  # (see forward_ad._tangent_dtype)


@to_copy.grad("self")
def _(grad, source):
    # (the engine casts it back to the input's dtype; a move goes back to where it came from)
    return grad if source is None else to_copy(grad, None, source)


def _parse_to(args, kwargs):
    """``(dtype, device, non_blocking, copy)`` from ``Tensor.to``'s arguments."""
    dtype = kwargs.pop("dtype", None)
    copy = kwargs.pop("copy", False)
    non_blocking = kwargs.pop("non_blocking", False)
    dev = kwargs.pop("device", None)
    if kwargs:
        raise TypeError(f"to() received an invalid combination of arguments - got unexpected "
                        f"keyword arguments {sorted(kwargs)}")
    flags = []
    for a in args:
        if isinstance(a, D.dtype):
            dtype = a
        elif isinstance(a, Tensor):
            dtype, dev = a.dtype, a.device
        elif isinstance(a, bool):
            flags.append(a)
        elif isinstance(a, (str, Device, int)):
            dev = a
    if flags:  # to(dtype_or_device, non_blocking, copy)
        non_blocking = flags[0]
        copy = flags[1] if len(flags) > 1 else copy
    return dtype, as_device(dev), non_blocking, copy


def _suggested_format(shape, strides):
    """torch's suggest_memory_format of element ``strides``: the format ``to(memory_format=)``
    leaves a tensor in without a copy. Only a 4-d (5-d) tensor whose strides are ordered as
    channels-last's suggests that format; ambiguous ones (a single channel, N111) suggest the
    contiguous format, so that ``to`` gives them channels-last strides, and a transposed
    matrix is left as it is when asked for the contiguous format, as torch's."""
    if len(shape) == 4 and _strides_like(shape, strides, (1, 3, 2, 0)):
        return "channels_last"
    if len(shape) == 5 and _strides_like(shape, strides, (1, 4, 3, 2, 0)):
        return "channels_last_3d"
    return "contiguous_format"


def _strides_like(shape, strides, order):
    """torch's is_channels_last_strides_2d_s4 (3d_s5): the strides grow along ``order``
    (innermost first), an N111-like tie and a zero channel stride read as NCHW."""
    if strides[1] == 0:
        return False
    low = 0
    for d in order:
        if shape[d] == 0 or strides[d] < low or (d == 0 and low == strides[1]):
            return False
        low = strides[d] * max(shape[d], 1)
    return True


def to(self, *args, memory_format=None, **kwargs):
    """Cast to a dtype, move to a device and/or lay out in a memory format: ``self`` itself
    when nothing changes."""
    dtype, dev, non_blocking, copy = _parse_to(args, dict(kwargs))
    if memory_format is not None and memory_format.name == "preserve_format":
        memory_format = None
    if dtype is not None and dtype.np == self._data.dtype:
        dtype = None
    source = None
    if dev is not None:
        source = self.device
        if same_device(source, dev):
            dev = source = None
    if dtype is None and dev is None and (
            memory_format is None
            or _suggested_format(self.shape, self.stride()) == memory_format.name):
        return clone(self) if copy else self
    return to_copy(self, dtype, dev, non_blocking, source,
                   memory_format=memory_format and memory_format.name)


def cuda(self, device=None, non_blocking=False, memory_format=None):
    """A copy in CUDA memory (``self`` when it is there already)."""
    dev = as_device("cuda" if device is None else device)
    if dev.type != "cuda":
        raise RuntimeError("Invalid device, must be cuda device")
    return to(self, dev, non_blocking=non_blocking)


def cpu(self, memory_format=None):
    """A copy in CPU memory (``self`` when it is there already)."""
    if type(self._data) is np.ndarray:  # (what to() finds, without parsing its arguments)
        return self
    return to(self, CPU)


Tensor.to = to
Tensor.cuda = cuda
Tensor.cpu = cpu


def _caster(dt):
    def cast(self, memory_format=None):
        return to(self, dt, memory_format=memory_format)
    cast.__name__ = dt.name
    return cast


for _name, _dt in [("float", D.float32), ("double", D.float64), ("half", D.float16),
                   ("int", D.int32), ("long", D.int64), ("short", D.int16), ("char", D.int8),
                   ("byte", D.uint8), ("bool", D.bool), ("cfloat", D.complex64),
                   ("cdouble", D.complex128), ("bfloat16", D.bfloat16)]:
    setattr(Tensor, _name, _caster(_dt))
Tensor.type_as = lambda self, other: to(self, other.dtype)

# -- indexing ----------------------------------------------------------------------------------


@op("select", view=True, promote=NONE, method=True)
def select(self, dim, index):
    if self.ndim == 0:  # (torch's check, before the dimension's)
        raise IndexError("select() cannot be applied to a 0-dim tensor.")
    d = _wrap_dim(dim, self.ndim)
    size = self.shape[d]
    if not -size <= index < size:
        raise IndexError(f"select(): index {index} out of range for tensor of size "
                         f"{list(self.shape)} at dimension {d}")
    # NOTE: the Ellipsis keeps a full index (a 1-d input) a 0-d view, not a NumPy scalar copy.
    return self[(slice(None),) * d + (index, Ellipsis)]


@select.grad("self")
def _(grad, self_shape, dim, index):
    return select_backward(grad, self_shape, dim, index)


@op("select_backward", promote=NONE, node="SelectBackwardBackward0")
def select_backward(grad, input_sizes, dim, index):
    out = get_xp(grad).zeros(input_sizes, grad.dtype)
    d = dim % len(input_sizes)
    out[(slice(None),) * d + (index,)] = grad
    return out


@select_backward.grad("grad")
def _(grad, dim, index):
    return select(grad, dim, index)


@op("slice", view=True, promote=NONE)
def slice_(self, dim, start, end, step):
    d = _wrap_dim(dim, self.ndim)
    return self[(slice(None),) * d + (slice(start, end, step),)]


@slice_.grad("self")
def _(grad, self_shape, dim, start, end, step):
    return slice_backward(grad, self_shape, dim, start, end, step)


@op("slice_backward", promote=NONE, node="SliceBackwardBackward0")
def slice_backward(grad, input_sizes, dim, start, end, step):
    out = get_xp(grad).zeros(input_sizes, grad.dtype)
    d = dim % len(input_sizes)
    out[(slice(None),) * d + (slice(start, end, step),)] = grad
    return out


@slice_backward.grad("grad")
def _(grad, dim, start, end, step):
    return slice_(grad, dim, start, end, step)


def _torch_index_error(err, shape, key):
    """An IndexError of the array module in torch's words: a boolean mask's mismatch as torch
    names it, an out-of-bounds index with 'dimension', not 'axis'."""
    mismatch = _mask_mismatch(tuple(shape), key)
    if mismatch is not None:
        return mismatch
    text = str(err)
    if text.startswith(_NUMPY_BROADCAST):  # index tensors whose shapes do not broadcast
        shapes = re.findall(r"\(([^)]*)\)", text[len(_NUMPY_BROADCAST):])
        return IndexError("shape mismatch: indexing tensors could not be broadcast together "
                          "with shapes " + ", ".join(
                              "[" + ", ".join(n.strip() for n in s.split(",") if n.strip())
                              + "]" for s in shapes))
    return _out_of_bounds(shape, key) or IndexError(text.replace(" for axis ", " for dimension "))


def _out_of_bounds(shape, key):
    """torch's index kernel's IndexError for the first index out of range in the order it
    visits them (C order of the broadcast index tensors), naming the index tensor's position
    among the key's index tensors as its 'dimension'; None for a key with a boolean mask."""
    arrays = [(d, k) for d, k in enumerate(key) if not isinstance(k, slice)]
    if not arrays or any(not is_array(k) or k.dtype.kind == "b" for _, k in arrays):
        return None
    xp = get_xp(arrays[0][1])
    common = xp.broadcast_arrays(*(k for _, k in arrays))
    bad = [(k < -shape[d]) | (k >= shape[d]) for (d, _), k in zip(arrays, common)]
    first_bad = xp.stack([b.reshape(-1) for b in bad]).any(0)
    if not first_bad.any():
        return None
    at = int(xp.argmax(first_bad))
    for position, ((d, _), k, b) in enumerate(zip(arrays, common, bad)):
        if b.reshape(-1)[at]:
            return IndexError(f"index {int(k.reshape(-1)[at])} is out of bounds for dimension "
                              f"{position} with size {shape[d]}")
    return None


_NUMPY_BROADCAST = "shape mismatch: indexing arrays could not be broadcast together with shapes"


def _is_mask(k):
    return is_array(k) and k.dtype.kind == "b"


def _mask_mismatch(shape, key):
    """torch's error for the first boolean mask in ``key`` whose shape differs from the dims it
    indexes in the tensor that the key's other (basic) indices leave; None if none does."""
    used = sum(k.ndim if _is_mask(k) else 1 for k in key
               if k is not None and k is not Ellipsis and type(k) is not bool)
    sliced, masks, d = [], [], 0
    for k in key:
        if k is Ellipsis:
            sliced += shape[d:d + len(shape) - used]
            d += max(len(shape) - used, 0)
        elif k is None or type(k) is bool:
            sliced.append(1)
        elif isinstance(k, slice):
            sliced.append(len(range(*k.indices(shape[d]))) if d < len(shape) else 0)
            d += 1
        elif _is_mask(k):
            masks.append((len(sliced), k))
            sliced += shape[d:d + k.ndim]
            d += k.ndim
        elif is_array(k):
            sliced += shape[d:d + 1]
            d += 1
        else:  # an integer: its dim goes
            d += 1
    sliced += shape[d:]
    for pos, mask in masks:
        for j, size in enumerate(mask.shape):
            if pos + j < len(sliced) and size != sliced[pos + j]:
                return IndexError(f"The shape of the mask {list(mask.shape)} at index {j} does "
                                  "not match the shape of the indexed tensor "
                                  f"{list(sliced)} at index {pos + j}")
    return None


@op("index", promote=NONE, checked=("indices",), conj_saved=True)
def index(self, indices):
    try:
        return self[indices]
    except IndexError as e:
        raise _torch_index_error(e, self.shape, indices) from None


@index.grad("self", writes=1)
def _(grad, self_shape, indices):
    # torch's index_backward: the gradient added into zeros at the indices (_index_put_impl_)
    from .indexing import _index_put_impl
    graph = isinstance(grad, Tensor)
    data = grad._data if graph else grad
    zeros = get_xp(data).zeros(self_shape, data.dtype)
    # (under create_graph a Tensor without history: no edge, as torch's, and the node records
    # its shape, which its saved indices read an ellipsis's span from)
    return _index_put_impl(_wrap(zeros) if graph else zeros, grad, indices, True)


def _normalize_key(key):
    """A tuple index with Tensors and lists turned into arrays; says if it is advanced."""
    if not isinstance(key, tuple):
        key = (key,)
    out, advanced, sources = [], False, []
    for k in key:
        if isinstance(k, Tensor):
            if k._data.dtype.kind not in "biu":
                raise IndexError("tensors used as indices must be long, int, byte or bool "
                                 "tensors")
            if k.ndim == 0 and k.dtype.category == D.INTEGRAL:
                k = int(k.item())
            else:
                sources.append(k)
                k = k._data
                advanced = True
        elif isinstance(k, (list, tuple, range)):  # (torch: any sequence indexes as a tensor)
            k = np.asarray(list(k))
            if k.dtype.kind not in "bu":  # (torch: a list not of bools indexes as int64)
                k = k.astype(np.int64)
            k = constant(k)  # (from Python values: the same at every call)
            advanced = True
        elif isinstance(k, np.ndarray):
            k = np.asarray(k)
            advanced = True
        elif isinstance(k, (bool, np.bool_)) or is_array(k):
            advanced = True
        elif k is not None and k is not Ellipsis and not isinstance(k, slice):
            k = _as_index(k)
        out.append(k)
    if not sources:
        return tuple(out), advanced
    # the node that saves the key checks these tensors' versions at backward (as torch
    # checks the index tensors it saves)
    return index_key(out, sources), advanced


def _as_index(k):
    """An integer index, or torch's error for what cannot index."""
    if isinstance(k, str):
        raise TypeError("new(): invalid data type 'str'")
    if not hasattr(type(k), "__index__"):
        raise IndexError("only integers, slices (`:`), ellipsis (`...`), None and long or byte "
                         f"Variables are valid indices (got {type(k).__name__})")
    return k.__index__()


def _check_zero_dim_key(self, key):
    """torch's errors for a lone slice or integer (not in a tuple) indexing a 0-dim tensor."""
    if self.ndim != 0 or isinstance(key, (tuple, bool, np.bool_, Tensor)):
        return
    if isinstance(key, slice):
        raise IndexError("slice() cannot be applied to a 0-dim tensor.")
    if isinstance(key, (int, np.integer)):
        if key != 0:  # (torch's select checks the index against a size of 0 first)
            raise IndexError(f"index {key} is out of bounds for dimension 0 with size 0")
        raise IndexError("invalid index of a 0-dim tensor. Use `tensor.item()` in Python or "
                         "`tensor.item<T>()` in C++ to convert a 0-dim tensor to a number")


def _check_index_count(self, key):
    """How many of ``self``'s dimensions the normalized ``key`` indexes (a mask as many as it
    has, a 0-dim bool none), or torch's error when that is more than ``self`` has."""
    used = sum(k.ndim if _is_mask(k) else (0 if is_array(k) and k.ndim == 0 and k.dtype.kind
                                           == "b" else 1)
               for k in key if k is not None and k is not Ellipsis and type(k) is not bool)
    if used > self.ndim:
        raise IndexError(f"too many indices for tensor of dimension {self.ndim}")
    return used


def getitem(self, key):
    """``self[key]`` as torch does it: basic indices as a chain of views, else ``index``.

    Within a tuple key, a slice that keeps its whole dimension is no view at all (torch skips
    it), and a key that selects nothing else gives an alias; a lone slice is always a slice.
    """
    vm = vmap_hook[0]
    if vm is not None and (out := vm.getitem(self, key)) is not None:
        return out  # (a batched index tensor: the vmap's rule)
    lone_slice = isinstance(key, slice)
    _check_zero_dim_key(self, key)
    key, advanced = _normalize_key(key)
    used = _check_index_count(self, key)
    if advanced:
        if not any(_is_basic(k) for k in key):
            return index(self, key)
        # torch applies the integers and partial slices as views first, then indexes the
        # view with the tensors (x[1, :, t] is (x[1])[:, t], not NumPy's broadcast order)
        sliced, idx = _apply_slicing(self, key)
        return index(sliced, index_key(idx, getattr(key, "tensors", ())))
    if Ellipsis in key:
        i = key.index(Ellipsis)
        key = key[:i] + (slice(None),) * (self.ndim - used) + key[i + 1:]
    out, dim = self, 0
    for k in key:
        if k is None:
            out = unsqueeze(out, dim)
            dim += 1
        elif isinstance(k, slice):
            if k.step is not None and k.step < 0:
                raise ValueError("step must be greater than zero")
            if lone_slice or not _whole(k, out.shape[dim]):
                out = slice_(out, dim, k.start, k.stop, k.step)
            dim += 1
        else:
            size = out.shape[dim]
            if not -size <= k < size:
                raise IndexError(f"index {k} is out of bounds for dimension {dim} with size "
                                 f"{size}")
            out = select(out, dim, k)
    if out is self:  # x[...] (and x[()], x[:, :]) is an alias
        out = alias(self)
    return out


def _whole(k, size):
    """Whether torch skips slice ``k`` of a dimension of ``size``: it starts at 0 and ends at or
    beyond the end (as written: -3: of 3 elements is still sliced), one step at a time."""
    return (k.start is None or k.start == 0) and (k.stop is None or k.stop >= size) and (
        k.step is None or k.step == 1)


@op("alias", view=True, promote=NONE, method=True)
def alias(self):
    """The same data as a new view (what ``x[...]`` returns)."""
    return self.view()


@alias.grad("self")
def _(grad):
    return grad


Tensor.__getitem__ = getitem


def put_at(target, key, value):
    """``target[key] = value`` as torch's index_put_ kernel writes it (see ``check_put``), an
    index out of range being torch's IndexError."""
    check_put(target, key, value)
    try:
        target[key] = value
    except IndexError as e:
        error = _torch_index_error(e, target.shape, key)
        write_visited(target, key, value)
        raise error from None


def write_visited(target, key, value, accumulate=False):
    """What torch's index_put_ kernel writes before it meets an index out of range: it visits
    the elements of the indexing result in C order and stops at the first whose index is out
    of range (``x[t] = v`` with ``t = [1, 3]`` on 3 rows writes row 1, then raises). Those
    elements are written (added, ``accumulate``) into ``target``; a key with a boolean mask
    writes nothing."""
    arrays = [(d, k) for d, k in enumerate(key) if not isinstance(k, slice)]
    if not arrays or any(not is_array(k) or k.dtype.kind == "b" for _, k in arrays):
        return
    xp, shape = get_xp(target), target.shape
    common = xp.broadcast_arrays(*(k for _, k in arrays))
    bad = xp.zeros(common[0].shape, bool)
    for (d, _), k in zip(arrays, common):
        bad |= (k < -shape[d]) | (k >= shape[d])
    dims = [d for d, _ in arrays]
    rest = [d for d in range(len(shape)) if d not in dims]
    # (NumPy's and torch's layout: adjacent index tensors in place, apart ones first)
    lead = [d for d in rest if d < dims[0]] if dims == list(range(dims[0], dims[-1] + 1)) else []
    trail = [d for d in rest if d not in lead]
    nb = bad.ndim
    result = tuple(shape[d] for d in lead) + bad.shape + tuple(shape[d] for d in trail)
    bad = xp.broadcast_to(bad.reshape((1,) * len(lead) + bad.shape + (1,) * len(trail)), result)
    count = int(xp.argmax(bad.reshape(-1)))  # (the elements before the first bad one)
    if count == 0:
        return
    pos = xp.unravel_index(xp.arange(count), result)
    coords = [None] * len(shape)
    for i, d in enumerate(lead):
        coords[d] = pos[i]
    for (d, _), k in zip(arrays, common):
        c = xp.broadcast_to(k[pos[len(lead):len(lead) + nb]], (count,))
        coords[d] = xp.where(c < 0, c + shape[d], c)
    for i, d in enumerate(trail):
        coords[d] = pos[len(lead) + nb + i]
    values = xp.broadcast_to(value, result).reshape(-1)[:count]
    if accumulate:
        from .._backend import scatter_add
        scatter_add(target, tuple(coords), values)
    else:
        target[tuple(coords)] = values


def check_put(target, key, value):
    """torch's checks before an index_put_ writes, in its order: the value must broadcast to
    the indexed shape, then have target's dtype (only then are the indices read)."""
    indexed = _indexed_shape(target.shape, key)
    shape = tuple(np.shape(value))
    if len(shape) > len(indexed) or any(s not in (1, n) for s, n in zip(shape[::-1],
                                                                          indexed[::-1])):
        raise RuntimeError(f"shape mismatch: value tensor of shape {list(shape)} cannot be "
                           f"broadcast to indexing result of shape {list(indexed)}")
    if value.dtype != target.dtype:
        raise RuntimeError("Index put requires the source and destination dtypes match, got "
                           f"{D._BY_NP[target.dtype].scalar_name} for the destination and "
                           f"{D._BY_NP[value.dtype].scalar_name} for the source.")


def _indexed_shape(shape, key):
    """The shape of ``x[key]`` for a key of index arrays, integers and full slices, found
    without reading the indices: each index array stands in as zeros into a dimension of one
    (a boolean mask as one array per dimension, of its number of True elements)."""
    mismatch = _mask_mismatch(tuple(shape), key)
    if mismatch is not None:
        raise mismatch
    dims, stand_in, d = [], [], 0
    for k in key:
        if _is_mask(k):
            count = int(get_xp(k).count_nonzero(k))
            stand_in += [np.zeros(count, np.intp)] * k.ndim
            dims += [1] * k.ndim
            d += k.ndim
        else:
            stand_in.append(np.zeros(k.shape, np.intp) if is_array(k) else
                            (0 if isinstance(k, int) else k))
            dims.append(1 if is_array(k) or isinstance(k, int) else shape[d])
            d += 1
    dims += shape[d:]
    try:
        return np.broadcast_to(np.empty((), np.int8), dims)[tuple(stand_in)].shape
    except IndexError:
        shapes = ", ".join(str(list(k.shape)) for k in key if is_array(k))
        raise IndexError("shape mismatch: indexing tensors could not be broadcast together "
                         f"with shapes {shapes}") from None


def fills_a_mask(key, value):
    """torch's canDispatchToMaskedFill: index_put_ of a one-element value (on the CPU) at one
    boolean (or uint8) mask, the other dimensions whole, is a masked_fill_ with the value as
    a number, which neither checks its dtype nor its overlap with the tensor written."""
    if value.size != 1 or get_xp(value) is not np:
        return False
    arrays = [k for k in key if is_array(k)]
    return (len(arrays) == 1 and (arrays[0].dtype.kind == "b" or arrays[0].dtype == np.uint8)
            and all(is_array(k) or isinstance(k, slice) for k in key))


def fill_mask(target, key, value):
    """Write the one-element ``value`` where ``fills_a_mask``'s key selects, as masked_fill_
    does: a number cast to target's dtype."""
    from .indexing import _check_mask
    mismatch = _mask_mismatch(tuple(target.shape), key)
    if mismatch is not None:
        raise mismatch
    _check_mask(next(k for k in key if is_array(k)))
    value = check_scalar(value.reshape(()), target.dtype)  # (masked_fill_ of value.item())
    with np.errstate(invalid="ignore"):
        target[key] = value.astype(target.dtype) if is_array(value) else value


def _setitem_kernel(self, value, key):
    put_at(self, key, value)
    return self


def raw(x):
    """A tensor's array (an array stays as it is: formulas run on both)."""
    return x._data if isinstance(x, Tensor) else x


def check_reduced_put(self, value, key, accumulate=False):
    """``check_put`` of an index_put_ that a bfloat16 operand takes to the general path, whose
    kernel sees bfloat16 widened to float32 (opmath.py), where the dtypes would look alike: it
    is made on the tensors first. (A mask filled with one value is masked_fill_'s: no check.)"""
    self, value = raw(self), raw(value)  # (formulas also run on arrays)
    if D.REDUCED_NP.intersection((self.dtype, value.dtype)) and (
            accumulate or not fills_a_mask(key, value)):
        check_put(self, key, value)


@op("index_put", tensors=2, promote=NONE, node="IndexPutBackward0",
    checked=("key",), check=check_reduced_put)
def _setitem_advanced(self, value, key):
    return _setitem_kernel(self, value, key)


@op("index_put_masked", tensors=2, promote=NONE, node="IndexPutBackward0",
    aten="aten::index_put", checked=("key",))
def index_put_masked(self, value, key):
    """index_put_ as torch runs it when ``fills_a_mask``: through masked_fill_ (so the
    in-place path neither checks the value's overlap with self nor its dtype)."""
    fill_mask(self, key, value)
    return self


def _overwritten_grad(grad, key):
    """torch's ``grad.index_put(key, zeros_like(value))``: its IndexPutBackward0 node under
    create_graph, with an edge to the gradient and none to the zeros."""
    from .indexing import _index_put
    data = grad._data if isinstance(grad, Tensor) else grad
    return _index_put(grad, get_xp(data).zeros((), data.dtype), key, False)


def _written_grad(grad, key):
    return grad[key]


for _put in (_setitem_advanced, index_put_masked):
    _put.grad("self")(_overwritten_grad)
    _put.grad("value")(_written_grad)


def setitem(self, key, value):
    """``self[key] = value`` as torch does it: basic indices write through the view
    ``self[key]`` (copy_, or fill_ for a 0-dim value), so the in-place rules of views apply;
    tensor indices use index_put_ on the view the key's basic indices make."""
    vm = vmap_hook[0]
    if vm is not None and vm.setitem(self, key, value):
        return  # (a batched index tensor: the vmap's rule)
    value = _setitem_value(self, value)
    if type(key) is bool:  # torch: x[True] is x[None]; x[False] selects nothing
        if key:
            _copy_to(unsqueeze(self, 0), value)
        return
    _check_zero_dim_key(self, key)
    key, advanced = _normalize_key(key)
    if advanced:
        sliced, index = _apply_slicing(self, key)
        index = index_key(index, getattr(key, "tensors", ()))
        sizes = tuple(value.shape)
        if sizes and sizes[0] == 1:  # torch drops the value's leading ones (a view)
            while sizes and sizes[0] == 1:
                sizes = sizes[1:]
            value = value.view(sizes)
        if fills_a_mask(index, value._data):
            index_put_masked.inplace(sliced, value, index)
        else:
            _setitem_advanced.inplace(sliced, value, index)
        _refresh_written_view(self, sliced)
    elif _tracked(self, value) or "_phys" in self.__dict__:  # (or a conjugate view: its
        # view takes its bit, and copy_ writes through it)
        target, _ = _apply_slicing(self, key)
        _copy_to(target, value)
        _refresh_written_view(self, target)
    else:  # nothing to record: the same writes, on the arrays (the view ops take arrays too)
        target, _ = _apply_slicing(self._data, key)
        source = _value_for(target, value._data)
        from .inplace import (_INTERNAL_OVERLAP, _PARTIAL_OVERLAP, _partial_overlap,
                              has_internal_overlap, same_elements)
        if has_internal_overlap(target):  # (torch's copy_ and fill_ of a tensor refuse it)
            if same_elements(target, source):  # x[...] = x: copy_ returns before its checks
                self._bump_version()
                return
            raise RuntimeError(_INTERNAL_OVERLAP)
        # (a 0-dim value goes to fill_, which reads it first: no overlap check there)
        if source.ndim and source is not target and type(source) is type(target) and get_xp(
                target).may_share_memory(target, source) and _partial_overlap(target, source):
            raise RuntimeError(_PARTIAL_OVERLAP)
        if source.dtype.kind == "c" and target.dtype.kind != "c":
            source = source.real  # (torch drops the imaginary part without a word)
        source = D.as_half_source(source, target.dtype)
        with np.errstate(invalid="ignore", over="ignore"):  # (NaN into integers: silent too)
            np.copyto(target, source, casting="unsafe")
        self._bump_version()  # (an inference tensor outside inference mode is refused here)


def _refresh_written_view(self, target):
    if target is not self and self._base is not None:
        # NOTE: ops decide to record from _requires_grad, which a view of a base that
        # only now requires grad (written through a sibling view) does not have yet.
        from .views import refresh
        refresh(self)


def _tracked(self, value):
    """Whether a write must go through the ops: autograd, forward AD or the profiler sees it."""
    return ((state.grad_enabled and (self._requires_grad or value._requires_grad))
            or forward_hook[0] is not None or profiler_hook[0] is not None)


def _setitem_value(self, value):
    """The value as a tensor: Python numbers become 0-dim tensors of self's dtype."""
    if isinstance(value, Tensor):
        return value
    if isinstance(value, (bool, int, float, complex, np.number, np.bool_)):
        if type(value) is int and not -2**63 <= value < 2**63:  # (read as a C long long)
            raise ValueError("Overflow when unpacking long long")
        dtype = self._data.dtype
        if self.dtype.is_floating_point and dtype.itemsize == 2:  # (made as a double, then cast)
            value = check_scalar(value, np.dtype(np.float64))
        else:
            value = check_scalar(value, dtype)
        with np.errstate(over="ignore"):
            return constant(_wrap(asarray_like(half_source(value) if dtype == np.float16
                                               else value, self._data, dtype)))
    cls = type(value)
    name = cls.__name__ if cls.__module__ == "builtins" else f"{cls.__module__}.{cls.__name__}"
    raise TypeError(f"can't assign a {name} to a {self.dtype.legacy_type_name}")


def _is_basic(k):
    """Whether key element ``k`` is an integer or a slice that may cut (a view of its own)."""
    if isinstance(k, slice):
        return k != slice(None)
    return isinstance(k, (int, np.integer)) and type(k) is not bool


def _apply_slicing(self, key):
    """torch's applySlicing for ``self[key] = v``: the key's basic indices as a chain of views
    of self (unlike ``self[key]``, full slices and Ellipsis add no view, so it may be self
    itself), and the index of that view's dimensions its tensor indices make (full slices
    elsewhere; None when there is no tensor index). A Python bool is an unsqueeze indexed by
    [0] (True) or [] (False)."""
    used = _check_index_count(self, key)
    out, dim, index, indexed = self, 0, [], False
    for pos, k in enumerate(key):
        if k is Ellipsis:
            index += [slice(None)] * (self.ndim - used)
            dim += self.ndim - used
        elif k is None:
            out = unsqueeze(out, dim)
            index.append(slice(None))
            dim += 1
        elif type(k) is bool or (is_array(k) and k.ndim == 0 and k.dtype.kind == "b"):
            out = unsqueeze(out, dim)
            index.append(get_xp(k if is_array(k) else _data_of(self)).zeros(int(bool(k)),
                                                                             np.int64))
            indexed = True
            dim += 1
        elif isinstance(k, slice):
            if k.step is not None and k.step < 0:
                raise ValueError("step must be greater than zero")
            if not _whole(k, out.shape[dim]):
                out = slice_(out, dim, k.start, k.stop, k.step)
            index.append(slice(None))
            dim += 1
        elif is_array(k):
            index.append(k)
            indexed = True
            dim += k.ndim if _is_mask(k) else 1
        else:
            size = out.shape[dim]
            if not -size <= k < size:
                raise IndexError(f"index {k} is out of bounds for dimension {pos} with size "
                                 f"{size}")
            out = select(out, dim, k)
    while index and isinstance(index[-1], slice):
        index.pop()
    return out, (tuple(index) if indexed else None)


def _data_of(x):
    return x._data if isinstance(x, Tensor) else x


def _value_for(dst, src):
    """torch's copy_to for arrays (a write nothing records): the value viewed without its
    leading ones and expanded to ``dst``'s shape (with torch's errors) unless 0-dim or of
    that shape already."""
    if dst.shape == src.shape or not src.ndim:
        return src
    sizes = tuple(src.shape)
    while sizes and sizes[0] == 1:
        sizes = sizes[1:]
    src = src.reshape(sizes)
    return src if src.shape == dst.shape else _expand(src, tuple(dst.shape))


def _copy_to(dst, src):
    """torch's copy_to: copy_ a same-shape value, fill_ a 0-dim one, else view it without its
    leading ones and expand it to ``dst``'s shape (unless that view has it already) first."""
    if dst.shape != src.shape and src.ndim:
        sizes = tuple(src.shape)
        while sizes and sizes[0] == 1:  # leading 1s go, so that the value can expand
            sizes = sizes[1:]
        src = src.view(sizes)
        if src.shape != dst.shape:
            src = src.expand(dst.shape)
    if src.ndim == 0 and dst.ndim:
        dst.fill_(src)
    else:
        dst.copy_(src)


Tensor.__setitem__ = setitem


# -- joining and splitting ----------------------------------------------------------------------
def _legacy_empty(shape):
    """torch's cat skips 1-D tensors with no element, whatever the other tensors' shapes."""
    return len(shape) == 1 and shape[0] == 0


def _check_cat(tensors, dim):
    if len(tensors) == 0:
        raise RuntimeError("torch.cat(): expected a non-empty list of Tensors")
    for k, t in enumerate(tensors):
        if t.ndim == 0:
            raise RuntimeError(f"zero-dimensional tensor (at position {k}) cannot be "
                               "concatenated")
    ref = next((t for t in tensors if not _legacy_empty(t.shape)), tensors[0])
    d = _wrap_dim(dim, ref.ndim)
    for k, t in enumerate(tensors):
        if _legacy_empty(t.shape):
            continue
        if t.ndim != ref.ndim:
            raise RuntimeError(f"Tensors must have same number of dimensions: got {ref.ndim} "
                               f"and {t.ndim}")
        for i, (a, b) in enumerate(zip(ref.shape, t.shape)):
            if i != d and a != b:
                raise RuntimeError(f"Sizes of tensors must match except in dimension {d}. "
                                   f"Expected size {a} but got size {b} for tensor number {k} "
                                   "in the list.")
    return d


@op("cat", conj_saved=True)
def _cat(tensors, dim=0):
    d = _check_cat(tensors, dim)
    kept = [t for t in tensors if not _legacy_empty(t.shape)]
    if len(kept) == len(tensors):
        return np.concatenate(tensors, axis=d)
    return np.concatenate(kept, axis=d) if kept else tensors[0].copy()


@_cat.grad("tensors")
def _(grad, dim, shapes):
    kept = [s for s in shapes if not _legacy_empty(s)] or shapes
    d = dim % len(kept[0])
    out, start = [], 0
    for s in shapes:  # (torch narrows the gradient for each input: SliceBackward0 nodes)
        if _legacy_empty(s):
            out.append(zero_gradient(grad, (0,)))
            continue
        out.append(slice_(grad, d, start, start + s[d], 1))
        start += s[d]
    return out


def _check_tensor_list(name, tensors):
    """A tensor is iterable, but torch's parser takes no tensor for a tuple of Tensors (the
    caller's wrapper words the error as torch's parser does, see _arg_parser)."""
    if isinstance(tensors, Tensor):
        raise TypeError(f"{name}(): argument 'tensors' must be tuple of Tensors, not Tensor")


def cat(tensors, dim=0, *, out=None):
    """Concatenate tensors along an existing dimension."""
    _check_tensor_list("cat", tensors)
    tensors = list(tensors)
    if not tensors:
        raise ValueError("ember.cat(): expected a non-empty list of Tensors")
    return _cat.specialize(len(tensors))(*tensors, dim)


@op("stack", conj_saved=True)
def _stack(tensors, dim=0):
    shapes = {t.shape for t in tensors}
    if len(shapes) > 1:
        first = tensors[0].shape
        k, bad = next((k, t.shape) for k, t in enumerate(tensors) if t.shape != first)
        raise RuntimeError(f"stack expects each tensor to be equal size, but got {list(first)} "
                           f"at entry 0 and {list(bad)} at entry {k}")
    return np.stack(tensors, axis=_wrap_dim(dim, tensors[0].ndim + 1))


@_stack.grad("tensors")
def _(grad, dim):
    d = _wrap_dim(dim, grad.ndim)  # (torch selects each input's gradient: SelectBackward0)
    return [select(grad, d, i) for i in range(grad.shape[d])]


@_stack.batched_grad("tensors")
def _(grad, dim):
    d = _wrap_dim(dim, grad.ndim - 1) + 1
    return [select(grad, d, i) for i in range(grad.shape[d])]


def stack(tensors, dim=0, *, out=None):
    """Join tensors along a new dimension."""
    _check_tensor_list("stack", tensors)
    tensors = list(tensors)
    if not tensors:
        raise RuntimeError("stack expects a non-empty TensorList")
    out = _stack.specialize(len(tensors))(*tensors, dim)
    first = tensors[0]
    if isinstance(first, Tensor) and first._is_inference:
        from .views import inference_only_call, view_of_fresh
        if inference_only_call(tensors) and _wrap_dim(dim, first.ndim + 1) < first.ndim:
            # torch's stack is cat along dim, then a view splitting that dim
            d = _wrap_dim(dim, first.ndim + 1)
            shape = tuple(out.shape)
            return view_of_fresh(out, shape[:d] + (shape[d] * shape[d + 1],) + shape[d + 2:])
    return out


@op("unbind", view=True, promote=NONE, outputs=-1, method=True)
def unbind(self, dim=0):
    d = _wrap_dim(dim, self.ndim)
    moved = np.moveaxis(self, d, 0)
    # NOTE: moved[i, ...], not iteration: iterating a 1-D array gives NumPy scalars (copies),
    # and every output must be a view of self, as in torch.
    return tuple(moved[i, ...] for i in range(moved.shape[0]))


@unbind.grad("self")
def _(grads, dim):
    return stack(list(grads), dim)


@op("split_with_sizes", view=True, promote=NONE, outputs=-1, method=True)
def split_with_sizes(self, split_sizes, dim=0):
    d = _wrap_dim(dim, self.ndim)
    if sum(split_sizes) != self.shape[d]:
        raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to "
                           f"{self.shape[d]} (input tensor's size at dimension {d}), but got "
                           f"split_sizes={list(split_sizes)}")
    edges = np.cumsum(split_sizes)[:-1].tolist()
    return tuple(np.split(self, edges, axis=d))


@split_with_sizes.grad("self")
def _(grads, split_sizes, dim):  # (split_sizes: what torch's node saves and shows)
    return cat(list(grads), dim)


@op("split", view=True, promote=NONE, outputs=-1, node="SplitBackward0")
def _split(self, split_size, dim=0):
    d = _wrap_dim(dim, self.ndim)
    size = self.shape[d]
    if split_size < 0:
        raise RuntimeError(f"split expects split_size be non-negative, but got "
                           f"split_size={split_size}")
    if split_size == 0 and size != 0:
        raise RuntimeError(f"split_size can only be 0 if dimension size is 0, but got "
                           f"dimension size of {size}")
    edges = list(range(split_size, size, split_size)) if split_size else []
    return tuple(get_xp(self).split(self, edges, axis=d))


@_split.grad("self")
def _(grads, split_size, dim):  # (split_size: what torch's node saves and shows)
    return cat(list(grads), dim)


# torch's unsafe_split and unsafe_split_with_sizes: split's pieces (sharing the input's memory),
# which autograd does not treat as views (no shared version counter, no rebase when one is
# written in place); torch's recurrent cells chunk their gates with them
@op("unsafe_split", promote=NONE, outputs=-1, method=True, node="UnsafeSplitBackward0")
def unsafe_split(self, split_size, dim=0):
    return _split.kernel(self, split_size, dim)


@op("unsafe_split_with_sizes", promote=NONE, outputs=-1, method=True,
    node="UnsafeSplitWithSizesBackward0")
def unsafe_split_with_sizes(self, split_sizes, dim=0):
    return split_with_sizes.kernel(self, split_sizes, dim)


@unsafe_split.grad("self")
def _(grads, self_shape, split_size, dim):  # (what torch's node saves)
    return cat(list(grads), dim)


@unsafe_split_with_sizes.grad("self")
def _(grads, self_shape, split_sizes, dim):
    return cat(list(grads), dim)


def unsafe_chunk(input, chunks, dim=0):  # noqa: A002 - torch's name
    """``chunk`` made of ``unsafe_split``'s pieces."""
    size = input.shape[_wrap_dim(dim, input.ndim)]
    if chunks <= 0:
        raise RuntimeError(f"chunk expects `chunks` to be greater than 0, got: {chunks}")
    if size == 0:
        return unsafe_split_with_sizes(input, [0] * chunks, dim)
    return unsafe_split(input, -(-size // chunks), dim)


def split(tensor, split_size_or_sections, dim=0):
    """Split into chunks of a given size (or the given list of sizes) along ``dim``."""
    if isinstance(split_size_or_sections, int):
        return _split(tensor, split_size_or_sections, dim)
    try:
        return split_with_sizes(tensor, list(split_size_or_sections), dim)
    except Exception:  # noqa: BLE001 - torch's split hands anything but an int to the parser
        from .._arg_parser import failed_call
        return failed_call(split, "split_with_sizes", (tensor, split_size_or_sections, dim),
                           {}, False)


def chunk(input, chunks, dim=0):
    """Split into ``chunks`` pieces of (almost) equal size along ``dim``."""
    size = input.shape[_wrap_dim(dim, input.ndim)]
    step = -(-size // chunks) if chunks > 0 else 0
    if chunks <= 0:
        raise RuntimeError("chunk expects `chunks` to be greater than 0, got: " f"{chunks}")
    if size == 0:  # torch: `chunks` empty pieces
        return split_with_sizes(input, [0] * chunks, dim)
    return split(input, step, dim)


def _split_method(self, split_size, dim=0):
    return split(self, split_size, dim)


Tensor.split = _split_method
Tensor.chunk = chunk
Tensor.unsafe_chunk = unsafe_chunk


# The rest of the shape family (movedim, repeat, flip, roll, stacks, ...) lives in rearrange.py.
from . import rearrange as _rearrange
from .rearrange import *

__all__ += _rearrange.__all__
