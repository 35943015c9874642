"""torch's in-place forms that are not an op's computation written into self.

- The in-place view ops (``squeeze_``, ``unsqueeze_``, ``t_``, ``transpose_``, ``swapdims_``,
  ``swapaxes_``, ``as_strided_``) change a tensor's geometry in place: the view op's kernel
  gives the new geometry, the tensor's version is bumped and, under grad, its history becomes
  a node of the in-place form's own (``TBackward1``, ...) with the view op's formulas.
- ``resize_`` / ``resize_as_`` (refused for tensors that require grad, as torch does).
- ``fill_diagonal_``: a fill of a strided view of the diagonal, as torch writes it.
- ``set_``: the tensor views another tensor's memory or a storage (a NotImplemented node under
  grad, as torch records it).
"""
from __future__ import annotations

import math

from .._backend import contiguous_strides, data_address, get_xp, storage_of, strided_view
from .._size import args_or_keyword
from .._state import forward_hook, state, vmap_hook
from .._state import recording as compile_recording
from .._tensor import Tensor
from ..autograd.graph import ERR_INFERENCE_INPLACE, follow_base, move_retained_grad
from . import shape as _shape
from . import strided as _strided
from . import views as _views
from .inplace import check_inplace
from .registry import NONE, op, record

__all__: list[str] = []


# -- in-place view ops ------------------------------------------------------------------------
def _transposed_in_place(self):
    return _shape.transposed_2d(self, "t_()")


def _inplace_view_op(view_op, node, kernel=None):
    """The in-place form of ``view_op``: same kernel (or ``kernel``, where torch's refusals
    name the in-place call) and formulas, a node named ``node``."""
    d = op(f"{view_op.name}_", node=node, promote=NONE)(kernel or view_op.kernel)
    for inputs, fn, _ in view_op.formulas:
        d.grad(*[view_op.params[i] for i in inputs])(fn)
    d.view_op = view_op
    return d


def _apply_inplace_view(d, args):
    """``self`` takes the geometry ``d``'s kernel gives it; its history (under grad) is ``d``'s
    node on top of its old one, as torch records an in-place view op."""
    self = args[0]
    vm = vmap_hook[0]
    if vm is not None and (out := vm.inplace_view(d, args)) is not None:
        return out  # (an example under vmap: its physical value takes the geometry)
    recording = state.grad_enabled and self._requires_grad
    check_inplace(self, recording)  # (autograd's refusals first, as in torch)
    new = d.kernel(self._data, *args[1:])
    if new.size == 0:  # (where torch puts it: see empty_views)
        new = _views.placed(d.view_op, self._data, new, args, None)
    if compile_recording[0] is not None:  # ember.compile replays registry ops only: it stops here
        compile_recording[0].graph_break(f"{d.name} changes a tensor's geometry in place")
    fw = forward_hook[0]
    tangent = None if fw is None else fw.tangent(self)
    if recording:
        old_fn, old_nr = self._grad_fn, self._output_nr
        gained = not self._requires_grad
        record(d, args, (self,))  # (edges and saved shapes read before the geometry changes)
        if gained and self._following_views is not None:
            follow_base(self)
        if self._retains_grad:
            move_retained_grad(self, old_fn, old_nr)
    self._data = new
    self._bump_version()  # (an inference tensor outside inference mode is refused here)
    if self._base is not None:  # still a view of its base, one view op further
        self._view_chain = _views.extend_chain(self._view_chain, d.view_op, args[1:])
        self._view_version = self._vc[0]
    if tangent is not None:  # forward AD: the tangent takes the same view
        fw.view_inplace(self, d.view_op, args, tangent)
    return self


_t_ = _inplace_view_op(_shape.t, "TBackward1", _transposed_in_place)
_transpose_ = _inplace_view_op(_shape.transpose, "TransposeBackward1")
_unsqueeze_ = _inplace_view_op(_shape.unsqueeze, "UnsqueezeBackward1")
_squeeze_all_ = _inplace_view_op(_shape._squeeze_all, "SqueezeBackward3")
_squeeze_dim_ = _inplace_view_op(_shape._squeeze_dim, "SqueezeBackward4")
_squeeze_dims_ = _inplace_view_op(_shape._squeeze_dims, "SqueezeBackward5")
_as_strided_ = _inplace_view_op(_strided._as_strided, "AsStridedBackward1")


def t_(self):
    return _apply_inplace_view(_t_, (self,))


def transpose_(self, dim0, dim1):
    return _apply_inplace_view(_transpose_, (self, dim0, dim1))


def unsqueeze_(self, dim):
    return _apply_inplace_view(_unsqueeze_, (self, dim))


def squeeze_(self, dim=None):
    if dim is None:
        return _apply_inplace_view(_squeeze_all_, (self,))
    if isinstance(dim, (tuple, list)):
        return _apply_inplace_view(_squeeze_dims_, (self, tuple(dim)))
    return _apply_inplace_view(_squeeze_dim_, (self, dim))


def as_strided_(self, size, stride, storage_offset=None):
    size = _strided._int_tuple(size, "size", 1)
    stride = _strided._int_tuple(stride, "stride", 2)
    return _apply_inplace_view(_as_strided_, (self, size, stride, storage_offset,
                                              _strided.geometry(self._data)))


Tensor.t_ = t_
def swapaxes_(self, axis0, axis1):
    return transpose_(self, axis0, axis1)


Tensor.transpose_ = Tensor.swapdims_ = transpose_
Tensor.swapaxes_ = swapaxes_
Tensor.unsqueeze_ = unsqueeze_
Tensor.squeeze_ = squeeze_
Tensor.as_strided_ = as_strided_


# -- resize_ ----------------------------------------------------------------------------------
def resize_(self, *args, size=None, memory_format=None):
    """Give ``self`` the (contiguous) shape ``sizes`` over its storage from its offset: existing
    elements are kept in storage order; a storage too small is replaced by a larger copy (new
    elements are zeros; torch leaves them uninitialised).

    NOTE: torch grows a storage in place, so other tensors viewing it keep sharing it; ember
    cannot grow NumPy memory in place, and after a growing resize_ they no longer share it.
    """
    if self._requires_grad:
        raise RuntimeError("cannot resize variables that require grad")
    if self._is_inference and not state.inference:
        raise RuntimeError(ERR_INFERENCE_INPLACE)
    return resize_storage(self, _shape._shape_arg(args_or_keyword(args, size, "resize_", "size")))


def resize_storage(self, shape, bump=True, strides=None):
    """``resize_`` without its refusal of tensors that require grad (torch's out= resizes
    those too, and without a version bump: ``bump=False``); ``strides`` (in elements, of a
    dense layout) in place of the contiguous ones."""
    if any(s < 0 for s in shape):  # (torch multiplies them as unsigned numbers)
        raise RuntimeError("numel: integer multiplication overflow")
    data = self._data
    if shape == data.shape:  # torch: nothing changes, not even the version
        return self
    item = data.itemsize
    owner, start, end = storage_of(data)
    offset = data_address(data) - start
    needed = offset + math.prod(shape) * item
    base = data  # (a view of it keeps the storage alive)
    if needed > end - start:
        base = _grown_storage(owner, start, end, -(-needed // item) * item).view(data.dtype)
        start = data_address(base)
    strides = (contiguous_strides(shape, item) if strides is None
               else tuple(s * item for s in strides))
    self._data = strided_view(base, shape, strides, start + offset)
    if bump:
        self._bump_version()
    return self


def _grown_storage(owner, start, end, needed):
    """A new zeroed storage of at least ``needed`` bytes beginning with the old one's bytes
    (an owner's memory is C or F contiguous: its bytes are one reshape and view away)."""
    xp = get_xp(owner)
    grown = xp.zeros(needed, xp.uint8)
    grown[:end - start] = owner.reshape(-1, order="A").view(xp.uint8)
    return grown


def resize_as_(self, the_template, memory_format=None):
    return resize_(self, tuple(the_template.shape))


Tensor.resize_ = resize_
Tensor.resize_as_ = resize_as_


# -- fill_diagonal_ ---------------------------------------------------------------------------
def fill_diagonal_(self, fill_value, wrap=False):
    """Fill the main diagonal (every index equal) with ``fill_value``; ``wrap``: a tall matrix's
    diagonal restarts below it every ``width + 1`` rows. torch's composite: fills of strided
    views, so the autograd of a view's in-place fill applies (CopySlices)."""
    nd = self.ndim
    if nd < 2:
        raise RuntimeError("dimensions must larger than 1")
    height, width = self.shape[0], self.shape[1]
    if nd > 2 and any(s != height for s in self.shape[1:]):
        raise RuntimeError("all dimensions of input must be of equal length")
    offset = self.storage_offset()
    step = sum(self.stride())
    size = min(height, width)
    self.as_strided((size,), (step,), offset).fill_(fill_value)
    if wrap and nd == 2 and height > width + 1:
        wrap_size = -(-self.numel() // (width + 1)) - size
        self.as_strided((wrap_size,), (step,), offset + self.stride(0) * (width + 1)).fill_(
            fill_value)
    return self


Tensor.fill_diagonal_ = fill_diagonal_


# -- set_ -------------------------------------------------------------------------------------
def _no_set_derivative(grad):
    raise RuntimeError("derivative for set_ is not implemented")


def _set_to(self, source, new):
    return new


def _set_to_storage(self, new):
    return new


_set_source = op("set_", node="NotImplemented", tensors=2, promote=NONE)(_set_to)
_set_source.grad("self")(_no_set_derivative)
_set_source.grad("source")(_no_set_derivative)
_set_storage = op("set_.source_Storage", node="NotImplemented", promote=NONE)(_set_to_storage)
_set_storage.grad("self")(_no_set_derivative)

_SET_FORMS = """set_() received an invalid combination of arguments - got ({got}), but expected one of:
 * ()
 * (ember.Storage source)
 * (ember.Storage source, int storage_offset, tuple of ints size, tuple of ints stride = None)
 * (Tensor source)
 * (Tensor source, int storage_offset, tuple of ints size, tuple of ints stride = None)
"""


def _set_args(args, kwargs):
    """``(source, storage_offset, size, stride)`` from set_'s overloads (None where absent)."""
    names = ("source", "storage_offset", "size", "stride")
    given = dict(zip(names, args))
    if len(args) > 4 or set(given) & set(kwargs) or set(kwargs) - set(names):
        given = None
    else:
        given.update(kwargs)
    ok = given is not None and (
        (not given or set(given) == {"source"}) if len(given or ()) <= 1
        else {"source", "storage_offset", "size"} <= set(given))
    if ok and given:
        from .._storage import is_storage
        source = given["source"]
        ok = (isinstance(source, Tensor) or is_storage(source)) and (
            len(given) == 1 or (isinstance(given["storage_offset"], int)
                                and isinstance(given["size"], (tuple, list))))
    if not ok:
        got = ", ".join([_type_name(a) for a in args]
                        + [f"{k}={_type_name(v)}" for k, v in kwargs.items()])
        raise TypeError(_SET_FORMS.format(got=got))
    return tuple(given.get(n) for n in names)


def _type_name(value):
    if isinstance(value, Tensor):
        return "Tensor"
    cls = type(value)
    return cls.__name__ if cls.__module__ == "builtins" else f"{cls.__module__}.{cls.__name__}"


def _viewed_storage(self, source, offset, size, stride):
    """The array viewing ``source``'s memory (a tensor's storage, or a storage) with
    ``size``/``stride`` from element ``offset``, in self's dtype; torch's bounds check."""
    from .._storage import UntypedStorage
    storage = source.untyped_storage() if isinstance(source, Tensor) else source
    if not isinstance(storage, UntypedStorage):
        storage = storage.untyped()
    item = self._data.itemsize
    if size is None:  # the whole storage as one dimension
        size, offset = (storage.nbytes() // item,), 0
    size = tuple(int(n) for n in size)
    stride = (tuple(int(n) for n in stride) if stride is not None
              else tuple(s // item for s in contiguous_strides(size, item)))
    needed = 0 if 0 in size else item * (
        offset + 1 + sum((n - 1) * s for n, s in zip(size, stride)))
    if needed > storage.nbytes():
        raise RuntimeError(
            f"setStorage: sizes {list(size)}, strides {list(stride)}, storage offset {offset}, "
            f"and itemsize {item} requiring a storage size of {needed} are out of bounds for "
            f"storage of size {storage.nbytes()}")
    owner = storage._owner
    return strided_view(owner, size, [s * item for s in stride],
                        storage._start + offset * item, self._data.dtype)


def set_(self, *args, **kwargs):
    """``self`` views ``source``'s memory: a tensor's (its geometry too, or the given one) or a
    storage's (``set_()``: a new empty one). Its version is bumped; under grad its history
    becomes a NotImplemented node (backward through it raises, as torch's)."""
    source, offset, size, stride = _set_args(args, kwargs)
    from_tensor = isinstance(source, Tensor)
    if from_tensor and source.dtype != self.dtype:
        from .._tensor import _c_type_name
        raise RuntimeError(f"Could not set tensor of type {_c_type_name(source.dtype)} to a "
                           f"tensor of type {_c_type_name(self.dtype)}")
    if source is None:
        new = get_xp(self._data).zeros((0,), self._data.dtype)
    elif from_tensor and offset is None:
        new = source._data
    else:
        new = _viewed_storage(self, source, offset, size, stride)
    recording = state.grad_enabled and (
        self._requires_grad or (from_tensor and source._requires_grad))
    check_inplace(self, recording)
    # (the kernels give the array self takes: the op's forward, as an in-place view op's)
    new = (_set_source.kernel(self._data, source._data, new) if from_tensor
           else _set_storage.kernel(self._data, new))
    if compile_recording[0] is not None:  # ember.compile replays registry ops only
        compile_recording[0].graph_break("set_ changes the memory a tensor views")
    if recording:
        gained = not self._requires_grad
        if from_tensor:
            record(_set_source, (self, source, new), (self,))
        else:
            record(_set_storage, (self, new), (self,))
        if gained and self._following_views is not None:
            follow_base(self)
    self._data = new
    self._bump_version()
    return self


Tensor.set_ = set_
