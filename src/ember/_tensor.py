"""Tensor: an array plus autograd metadata.

A Tensor holds a NumPy (or CuPy) array in ``_data``. Everything autograd needs sits beside it
as plain attributes with class-level defaults, so creating an op's output sets only what
differs from a fresh leaf. Operators and methods are attached by the op registry: each op is
declared once, in its family file, and that declaration also makes the method.
"""
from __future__ import annotations

import sys
import warnings

import numpy as np

from . import _dtype as D
from ._backend import is_array, to_numpy
from ._backend.device import CPU, device, device_of
from ._compile.hooks import grad_accessed, read_data, tensor_state_set, version_bumped
from ._size import Size
from ._sparse.coo import CooArray
from ._state import recording, state

_object_new = object.__new__
_ndarray = np.ndarray
# what numpy() hands out as it is; a complex tensor takes _host_array's tests (conj's bit)
_PLAIN_NUMPY = D.NATIVE_NP - {np.dtype(np.complex64), np.dtype(np.complex128)}


GRAD_DTYPE_OWN = object()  # (a leaf's grad_dtype when none was set: its own dtype)
_NON_LEAF_GRAD_WARNING = (
    "The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. Its .grad "
    "attribute won't be populated during autograd.backward(). If you indeed want the .grad "
    "field to be populated for a non-leaf Tensor, use .retain_grad() on the non-leaf Tensor. "
    "If you access the non-leaf Tensor by mistake, make sure you access the leaf Tensor "
    "instead. See github.com/pytorch/pytorch/pull/30531 for more information. (Triggered "
    "internally at /__w/pytorch/pytorch/build/aten/src/ATen/core/TensorBody.h:493.)")
_NON_LEAF_REQUIRES_GRAD = (
    "you can only change requires_grad flags of leaf variables. If you want to use a computed "
    "variable in a subgraph that doesn't require differentiation use "
    "var_no_grad = var.detach().")
_REQUIRES_GRAD_IN_TRANSFORM = (
    "You are attempting to call Tensor.requires_grad_() (or perhaps using "
    "ember.autograd.functional.* APIs) inside of a function being transformed by a functorch "
    "transform. This is unsupported, please attempt to use the functorch transforms (e.g. "
    "grad, vjp, jacrev, jacfwd, hessian) or call requires_grad_() outside of a function being "
    "transformed instead.")
_DETACH_VIEW = (
    "Can't detach views in-place. Use detach() instead. If you are using "
    "DistributedDataParallel (DDP) for training, and gradient_as_bucket_view is set as True, "
    "gradients are views of DDP buckets, and hence detach_() cannot be called on these "
    "gradients. To fix this error, please refer to the Optimizer.zero_grad() function in "
    "torch/optim/optimizer.py as the solution.")


DETACHED = 1 << 62


class DetachedCounter(list):
    """The version counter of a non-leaf detached in place (``y.detach_()``): a window on the
    counter it shares with its views and aliases (torch keeps one counter: their ``_version``
    sees every write), read and written offset by ``DETACHED`` for each ``detach_()``. A node
    that saved the tensor before (at a version below the offset) fails its version check and
    unpacking raises torch's "detached in-place" error, while uses saved after are checked as
    usual. Only the detached tensor itself holds the window; ``shared`` is the plain counter."""

    __slots__ = ("shared", "offset")

    def __init__(self, shared, offset):
        self.shared = shared
        self.offset = offset

    def __getitem__(self, i):
        return self.shared[0] + self.offset

    def __setitem__(self, i, value):
        self.shared[0] = value - self.offset


def shared_counter(vc):
    """The plain counter behind ``vc`` (itself unless a DetachedCounter window)."""
    return vc.shared if type(vc) is DetachedCounter else vc


# ember.autograd, once Tensor.backward has imported it (autograd imports this module)
_AUTOGRAD = [None]


def _check_grad_device_type(dev, own):
    """torch's refusal of a gradient assigned from another kind of device (``own``: the
    tensor's)."""
    if dev.type != own.type:
        raise RuntimeError(
            f"attempting to assign a gradient with device type '{dev.type}' to a tensor with "
            f"device type '{own.type}'. Please ensure that the gradient and the tensor are on "
            "the same device")


def _check_grad_layout(data, own):
    """torch's refusal of a dense gradient (array ``data``) for a sparse tensor (``own``).
    A sparse gradient goes to a tensor of either layout (torch checks only a gradient that
    is not sparse against the tensor's type)."""
    if type(own) is CooArray and type(data) is not CooArray:
        raise RuntimeError(
            "attempting to assign a gradient to a tensor that has data of a different type")


def _check_grad_device_index(dev, own):
    """torch's refusal of a gradient assigned from another device of the tensor's kind."""
    if dev.index != own.index:
        raise RuntimeError(
            "attempting to assign a gradient located on device with index "
            f"'{-1 if dev.index is None else dev.index}' to a tensor located on device with "
            f"index '{-1 if own.index is None else own.index}'. Please ensure that the "
            "gradient and the tensor are on the same device")


def _wrap(array, cls=None):
    """A new leaf Tensor around ``array`` (no copy). The fast constructor every op uses."""
    t = _object_new(cls or Tensor)
    t._data = array
    return t


def _bits_alias(d):
    """A new leaf sharing the memory and the conjugate and negative bits of the tensor whose
    ``__dict__`` is ``d``, as torch's detach() and .data of a conjugate view have them."""
    alias = _object_new(Tensor)
    for name in ("_phys", "_conj_bit", "_neg_bit"):
        if name in d:
            alias.__dict__[name] = d[name]
    return alias


def _inference_alias(t):
    """``t``, sharing an inference tensor's memory (detach(), .data), made one too: with a
    version counter of its own when made outside inference mode, as torch's."""
    t._is_inference = True
    if not state.inference:
        t._inference_versions = True


def checked_values(t):
    """The array a validity check ("every target is a class index") reads. Under vmap that is
    the whole batch's: a check every value must pass holds for each example exactly when it
    holds for the batch."""
    value = t.__dict__.get("_value")  # a BatchedTensor's physical value
    while value is not None:
        t = value
        value = t.__dict__.get("_value")
    return t._data


def refuse_negative_strides(array):
    """torch's refusal to make a tensor share an ndarray with a negative stride."""
    if any(s < 0 for s in array.strides):
        raise ValueError(
            "At least one stride in the given numpy array is negative, and tensors with "
            "negative strides are not currently supported. (You can probably work around "
            "this by making a copy of your array  with array.copy().) ")


def typename(obj) -> str:
    """torch.typename: ``ember.FloatTensor`` for a tensor, the qualified type name otherwise."""
    if isinstance(obj, Tensor):
        return obj.type()
    module = getattr(obj, "__module__", "") or ""
    if hasattr(obj, "__qualname__"):
        qualname = obj.__qualname__
    elif hasattr(obj, "__name__"):
        qualname = obj.__name__
    else:
        module = obj.__class__.__module__ or ""
        qualname = obj.__class__.__qualname__
    return qualname if module in ("", "builtins") else f"{module}.{qualname}"


def _check_can_require_grad(dt, factory=False):
    if dt.category < D.FLOATING:
        if factory:
            raise RuntimeError("Only Tensors of floating point and complex dtype can require "
                               "gradients")
        raise RuntimeError("only Tensors of floating point and complex dtype can require "
                           "gradients")


_SCALAR_OF_GRAD_TENSOR = (
    "Converting a tensor with requires_grad=True to a scalar may lead to unexpected behavior.\n"
    "Consider using tensor.detach() first. (Triggered internally at "
    "/__w/pytorch/pytorch/torch/csrc/autograd/generated/python_variable_methods.cpp:822.)")


def _refuse_bits_numpy(t):
    """torch's numpy() refuses a tensor whose conjugate or negative bit is set: the array
    would be its memory, not its values."""
    from ._ops.complex import is_conj
    if is_conj(t):
        raise RuntimeError("Can't call numpy() on Tensor that has conjugate bit set. Use "
                           "tensor.resolve_conj().numpy() instead.")
    if t.__dict__.get("_neg_bit"):
        raise RuntimeError("Can't call numpy() on Tensor that has negative bit set. Use "
                           "tensor.resolve_neg().numpy() instead.")


class _BitValues:
    """``t._data`` of a tensor with torch's conjugate or negative bit (``x.conj()`` of a
    complex ``x``, ``x._neg_view()``, their views): such a tensor keeps no ``_data`` of its
    own but ``_phys``, the memory it shares with its base, and each read resolves the bits
    (``_backend.bit_values``), so it shows what was written through any alias since. A
    non-data descriptor: every other tensor's own ``_data`` is found first, at no cost."""

    def __get__(self, t, owner=None):
        if t is None:
            return self
        d = t.__dict__
        phys = d.get("_phys")
        if phys is None:
            raise AttributeError("_data")
        from ._backend import bit_values
        return bit_values(phys, d.get("_conj_bit", False), d.get("_neg_bit", False))


def physical(t):
    """The array holding ``t``'s memory: its ``_data``, or for a tensor with a conjugate or
    negative bit the memory it shares with its base (its values unresolved)."""
    phys = t.__dict__.get("_phys")
    return t._data if phys is None else phys


class Tensor:
    """A multi-dimensional array that records the operations applied to it.

    ``Tensor(data)`` and ``Tensor(*sizes)`` follow torch's legacy constructor (always the
    default float dtype); use :func:`ember.tensor` to infer the dtype.
    """

    # Autograd metadata, stored on the instance only when it differs from these defaults.
    _grad_fn = None
    _requires_grad = False
    _grad = None
    _vc = None  # version counter: a one-item list shared by a tensor, its views and detach()
    _output_nr = 0
    _base = None
    _hooks = None  # leaf tensors' hooks (non-leaf hooks live on their grad_fn)
    _post_acc_hooks = None
    _retains_grad = False
    _grad_acc = None  # weakref to the AccumulateGrad node of a leaf
    _is_inference = False
    # An inference tensor tracks no versions, except one made by detach() or .data from an
    # inference tensor outside inference mode (torch gives that one a counter of its own).
    _inference_versions = False
    _fw_grad = None  # forward-mode AD tangent at the current dual level (autograd.forward_ad)
    # Views: how to cut this view out of its base again, and the base version that its grad_fn
    # reflects (see _ops/views.py).
    _view_chain = ()
    _view_version = 0
    _view_no_grad = False
    _view_multi = False
    _view_inference = False
    _view_custom = False  # an output of a custom Function (torch's IN_CUSTOM_FUNCTION)
    _following_views = None  # a base's views whose requires_grad follows its (autograd.graph)
    # A view's own requires_grad_(True), beside what it takes from its base: with no history,
    # it then has a gradient of its own to accumulate (torch's requires_grad_ field).
    _own_requires_grad = False
    _data = _BitValues()
    __array_priority__ = 1000  # so ndarray <op> Tensor defers to Tensor's reflected operator

    def __new__(cls, *args, **kwargs):
        # (a subclass's ``super().__new__(cls, data)``, torch's way of making one: its own
        # __init__ may then take other arguments. Ops make tensors without this, see _wrap)
        t = _object_new(cls)
        Tensor.__init__(t, *args, **kwargs)
        return t

    def __init__(self, *args, **kwargs):
        # Legacy constructor: Tensor([1, 2]) or Tensor(2, 3) (uninitialised; we give zeros).
        if self.__dict__.get("_data") is not None:
            return
        if len(args) == 1 and isinstance(args[0], Tensor):
            self._data = args[0]._data
            return
        from ._legacy import legacy_array
        self._data = legacy_array(args, D.get_default_dtype().np)

    # -- basic properties ------------------------------------------------------------------
    @property
    def dtype(self) -> D.dtype:
        return D._BY_NP[self._data.dtype]

    @property
    def shape(self) -> Size:
        return Size(self._data.shape)

    def size(self, dim=None):
        if dim is None:
            return Size(self._data.shape)
        return self._data.shape[_wrap_dim(dim, self._data.ndim)]

    def dim(self) -> int:
        return self._data.ndim

    ndimension = dim

    @property
    def ndim(self) -> int:
        return self._data.ndim

    def numel(self) -> int:
        return int(self._data.size)

    nelement = numel

    @property
    def device(self) -> device:
        data = self._data
        return CPU if type(data) is _ndarray else device_of(data)

    @property
    def is_cuda(self) -> bool:
        return type(self._data) is not _ndarray and device_of(self._data).type == "cuda"

    @property
    def is_cpu(self) -> bool:
        return type(self._data) is _ndarray or device_of(self._data).type == "cpu"

    def get_device(self) -> int:
        """The index of the GPU holding this tensor (-1 on the CPU)."""
        dev = self.device
        return -1 if dev.index is None else dev.index  # (cpu and meta)

    @property
    def layout(self):
        return strided

    def type(self, dtype=None):
        if dtype is None:
            name = self.dtype.legacy_type_name
            # (a sparse tensor's type is torch's ``torch.sparse.FloatTensor``)
            return name.replace(".", ".sparse.", 1) if type(self._data) is CooArray else name
        return self.to(dtype)

    def is_floating_point(self) -> bool:
        return self.dtype.category == D.FLOATING

    def is_complex(self) -> bool:
        return self.dtype.category == D.COMPLEX

    def element_size(self) -> int:
        return self._data.itemsize

    def stride(self, dim=None):
        data = self._data
        if data.size:
            st = tuple(s // data.itemsize for s in data.strides)
        else:  # (NumPy's strides of an empty array are not torch's)
            from ._backend import empty_strides
            st = empty_strides(data)
        return st if dim is None else st[_wrap_dim(dim, data.ndim)]

    def is_contiguous(self, memory_format=None) -> bool:
        if memory_format is None or memory_format.name in ("contiguous_format",
                                                             "preserve_format"):
            return bool(self._data.flags.c_contiguous)
        from ._backend.layout import is_in_format
        return is_in_format(self._data.shape, self.stride(), memory_format.name)

    def data_ptr(self) -> int:
        read_data("Tensor.data_ptr()")
        data = physical(self)  # (a conjugate view's address is its base's memory's)
        if data.size == 0:  # torch: no element, no address
            return 0
        from ._backend import data_address
        return data_address(data)

    def storage_offset(self) -> int:
        """How many elements into its storage this tensor's first element is."""
        from ._backend import data_address, storage_of
        _, start, _ = storage_of(self._data)
        return (data_address(self._data) - start) // self._data.itemsize

    def untyped_storage(self):
        """The memory this tensor views (shared with its views), as bytes."""
        read_data("Tensor.untyped_storage()")
        from ._storage import UntypedStorage
        return UntypedStorage._of(physical(self))

    def pin_memory(self, device=None):
        """A copy in page-locked host memory (``self`` if it is there already)."""
        from ._backend.device import is_pinned, pinned
        data = self._data
        if type(data) is not _ndarray:
            raise RuntimeError(f"cannot pin '{self.type().replace('ember.', 'ember.cuda.')}' "
                               "only dense CPU tensors can be pinned")
        if is_pinned(data):
            return self
        return _wrap(pinned(data))

    def is_pinned(self, device=None) -> bool:
        """Whether this tensor lives in page-locked host memory."""
        from ._backend.device import is_pinned
        return is_pinned(self._data)

    def is_inference(self) -> bool:
        return self._is_inference

    # -- conversion to Python and NumPy ----------------------------------------------------
    def item(self):
        if recording[0] is not None:  # (read_data's test written out: a loss is read per step)
            read_data("Tensor.item()")
        data = self._data
        if data.size != 1:
            raise RuntimeError(f"a Tensor with {data.size} elements cannot be converted "
                               "to Scalar")
        return data.item() if type(data) is _ndarray else data.reshape(()).item()

    def tolist(self):
        read_data("Tensor.tolist()")
        return to_numpy(self._data).tolist()

    def numpy(self, *, force=False):
        if recording[0] is not None:  # (read_data's test written out)
            read_data("Tensor.numpy()")
        data = self.__dict__.get("_data")  # (None for a tensor with a conjugate or negative
        # bit: its values are resolved from memory it shares, which numpy() refuses to hand out)
        if (type(data) is _ndarray and not force and data.dtype in _PLAIN_NUMPY
                and not (self._requires_grad and state.grad_enabled)):
            return data.view()  # (the usual call: what _host_array returns, no refusal)
        return self._host_array(force)

    def _host_array(self, force=False):
        D.refuse_numpy(self._data.dtype)
        if force:  # torch: a host copy, whatever the device and requires_grad
            return to_numpy(self._data)
        if self._requires_grad and state.grad_enabled:  # (torch: allowed under no_grad)
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. Use "
                               "tensor.detach().numpy() instead.")
        if type(self._data) is not _ndarray:
            if type(self._data) is CooArray:
                raise TypeError("can't convert Sparse layout tensor to numpy. Use "
                                "Tensor.to_dense() first.")
            raise TypeError(f"can't convert {self.device} device type tensor to numpy. Use "
                            "Tensor.cpu() to copy the tensor to host memory first.")
        if "_phys" in self.__dict__ or self.__dict__.get("_conj_bit"):
            _refuse_bits_numpy(self)
        # a new array object on the tensor's memory, as torch's: setting its shape, strides or
        # flags leaves the tensor as it is (writes to its elements reach the tensor)
        return self._data.view()

    def __array__(self, dtype=None, copy=None):
        read_data("a tensor converted to a NumPy array")
        a = self._host_array()
        return a if dtype is None else a.astype(dtype, copy=False)

    def __array_wrap__(self, array, context=None, return_scalar=False):
        """A NumPy ufunc's result on a tensor (``np.sin(t)``, ``ndarray + t``) as a tensor
        sharing it, a bool one as uint8, as torch's."""
        if array.dtype == np.bool_:
            array = array.astype(np.uint8)
        refuse_negative_strides(array)  # (NumPy keeps an operand's reversed layout)
        D.from_numpy_dtype(array.dtype)
        return _wrap(array)

    def __len__(self):
        if self._data.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self._data.shape[0]

    def __iter__(self):
        if self._data.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        return iter(self.unbind(0))

    def _scalar(self, kind):
        read_data(f"{kind.__name__}(tensor)")
        if self._data.size != 1:
            raise ValueError("only one element tensors can be converted to Python scalars")
        # torch warns (once per process) for float() and complex(), only while grad is on:
        # under no_grad, e.g. in an optimizer step reading its closure's loss, it is silent
        if self._requires_grad and kind is not int and state.grad_enabled:
            from ._numpy_in import warn_once
            warn_once(_SCALAR_OF_GRAD_TENSOR, stacklevel=3)
        return kind(self._data.reshape(()).item())

    def __float__(self):
        return self._scalar(float)

    def __int__(self):
        return self._scalar(int)

    def __complex__(self):
        return self._scalar(complex)

    def __index__(self):
        read_data("a tensor used as an index")
        if self._data.size != 1 or self.dtype.category > D.INTEGRAL:
            raise TypeError("only integer tensors of a single element can be converted to an "
                            "index")
        return int(self._data.reshape(()).item())

    def __bool__(self):
        read_data("bool(tensor): data-dependent control flow")
        if self._data.size != 1:
            if self._data.size == 0:
                raise RuntimeError("Boolean value of Tensor with no values is ambiguous")
            raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
        return bool(self._data.reshape(()).item())

    __hash__ = object.__hash__

    # -- printing --------------------------------------------------------------------------
    def _repr_suffixes(self):
        try:
            fn = self.grad_fn  # (a view regenerates its history first, as torch's repr reads)
            name = None if fn is None else type(fn).__name__
        except RuntimeError:  # a view whose history may not be regenerated
            name = "Invalid"
        if name is not None:
            out = [f"grad_fn=<{name}>"]
        elif self._requires_grad:
            out = ["requires_grad=True"]
        else:
            out = []
        if self._fw_grad is not None:
            out.append(f"tangent={self._fw_grad}")  # (format: a 0-dim one prints its number)
        return out

    def _repr_prefix(self):
        # torch prints a subclass's instances under its class name, a Parameter as a tensor
        cls = type(self)
        parameter = sys.modules.get("ember.nn.parameter")
        if cls is Tensor or (parameter is not None and isinstance(self, parameter.Parameter)):
            return "tensor("
        return f"{cls.__name__}("

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        from .overrides import _subclass_made
        _subclass_made(cls)

    @staticmethod
    def _make_subclass(cls, data, require_grad=False, dispatch_sizes_strides_policy=None,
                       dispatch_device=False, dispatch_layout=False, _extra_dispatch_keys=None,
                       storage_size=None):
        """A ``cls`` instance sharing ``data``'s memory and version counter, a leaf
        (detached), requiring grad if ``require_grad``."""
        if not isinstance(cls, type):
            raise TypeError(f"cls must be a type (got {typename(cls)})")
        if not issubclass(cls, Tensor):
            raise TypeError(f"Creating a Tensor subclass from a class that does not inherit "
                            f"from Tensor is not possible. Make sure your class inherits "
                            f"from Tensor.")
        if not isinstance(data, Tensor):
            raise TypeError(f"_make_subclass(): argument 'data' (position 2) must be Tensor, "
                            f"not {typename(data)}")
        t = _wrap(data._data, cls)
        t._vc = data._version_counter()
        if require_grad:
            Tensor._set_requires_grad(t, True)
        return t

    def __repr__(self, *, tensor_contents=None):
        read_data("a tensor printed")
        from ._printing import tensor_str
        data = self._data  # printed from a host copy, as torch prints
        if type(data) is CooArray:
            from ._sparse.printing import sparse_repr
            return sparse_repr(self)
        if type(data) is not _ndarray and device_of(data).type == "meta":
            from ._printing import meta_str
            return meta_str(data.shape, dtype_name=self.dtype.name,
                            default_float_name=D.get_default_dtype().name,
                            suffixes=self._repr_suffixes(), prefix=self._repr_prefix())
        return tensor_str(to_numpy(data), dtype_name=self.dtype.name,
                          default_float_name=D.get_default_dtype().name,
                          suffixes=self._repr_suffixes(), prefix=self._repr_prefix(),
                          device=None if type(data) is _ndarray else device_of(data))

    def __format__(self, spec):
        data = self._data
        if data.ndim == 0 and (type(data) is _ndarray or device_of(data).type != "meta"):
            return self.item().__format__(spec)  # torch formats a 0-dim tensor as its number
        return object.__format__(self, spec) if spec else repr(self)

    # -- autograd metadata -----------------------------------------------------------------
    @property
    def requires_grad(self) -> bool:
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, flag):
        if type(flag) is not bool:  # (torch's setter takes a bool only; requires_grad_ any)
            raise RuntimeError("requires_grad must be a bool")
        self._set_requires_grad(flag, from_attribute=True)

    def requires_grad_(self, requires_grad=True):
        # NOTE: torch refuses the method (not the attribute, nor a factory's or Parameter's
        # requires_grad) while a torch.func transform runs: the tensors there are its wrappers
        from .autograd import _transform_is_running
        if _transform_is_running():
            raise RuntimeError(_REQUIRES_GRAD_IN_TRANSFORM)
        return self._set_requires_grad(requires_grad)

    def _set_requires_grad(self, requires_grad=True, from_attribute=False):
        """requires_grad_ as the factories, Parameter and the transforms themselves set it
        (torch sets it in C++ there, never refused inside a transform)."""
        if self._grad_fn is not None:  # (torch: the setter refuses any flag, the method False
            if not requires_grad:      # and, for True, a dtype that cannot require grad)
                raise RuntimeError(_NON_LEAF_REQUIRES_GRAD)
            if from_attribute:
                raise RuntimeError(_NON_LEAF_REQUIRES_GRAD.split(" If")[0])
            if self.dtype.category < D.FLOATING:
                raise RuntimeError("only Tensors of floating point dtype can require gradients")
            return self
        if requires_grad:  # (the dtype first, as torch: an int inference tensor says so)
            dt = self.dtype
            if dt.category < D.FLOATING:
                if from_attribute:
                    _check_can_require_grad(dt)
                raise RuntimeError("only Tensors of floating point dtype can require gradients")
            if self._is_inference and not state.inference:
                raise RuntimeError("Setting requires_grad=True on inference tensor outside "
                                   "InferenceMode is not allowed.")
        flag = bool(requires_grad)
        base = self._base
        if base is not None:  # (no history here: torch's view requires grad through its base)
            self._own_requires_grad = flag
            flag = flag or base._requires_grad
        changed = self._requires_grad != flag
        if changed:
            tensor_state_set("requires_grad")
        self._requires_grad = flag
        if changed and self._following_views is not None:
            from .autograd.graph import follow_base
            follow_base(self)
        return self

    @property
    def grad_fn(self):
        if self._base is not None:
            from ._ops.views import refresh
            refresh(self)
        return self._grad_fn

    @property
    def is_leaf(self) -> bool:
        # torch reads grad_fn: a view regenerates it after an in-place change of its base
        # first (or raises, for a view that may not be rebased)
        return self.grad_fn is None

    # the dtype a leaf's gradients are cast to (see ember._grad_dtype): its own dtype, a given
    # one, or None (any)
    _grad_dtype = GRAD_DTYPE_OWN

    # NOTE: an optimizer reads and resets every parameter's .grad each step: the getter and
    # the setter test for a recording themselves (grad_accessed's test) before calling it.
    @property
    def grad(self):
        if recording[0] is not None:
            grad_accessed("Tensor.grad")
        # (torch warns only while the non-leaf has no .grad: one assigned is read silently)
        if self._grad_fn is not None and not self._retains_grad and self._grad is None:
            warnings.warn(_NON_LEAF_GRAD_WARNING, UserWarning, stacklevel=2)
        return self._grad

    @grad.setter
    def grad(self, value):
        if recording[0] is not None:
            grad_accessed("Tensor.grad")
        if value is not None:
            if not isinstance(value, Tensor):
                raise TypeError("assigned grad expected to be a Tensor or None but got grad of "
                                f"type {type(value).__name__}")
            data, own = value._data, self._data
            if (self._grad_dtype is GRAD_DTYPE_OWN and type(data) is _ndarray
                    and type(own) is _ndarray and data.dtype == own.dtype
                    and data.shape == own.shape):
                self._grad = value  # (the usual value: on the CPU, of this dtype and shape)
                return
            want = self.dtype if self._grad_dtype is GRAD_DTYPE_OWN else self._grad_dtype
            if want is not None and value.dtype is not want:
                raise RuntimeError(
                    f"attempting to assign a gradient with dtype '{_c_type_name(value.dtype)}' "
                    f"to a tensor with grad_dtype '{want.scalar_name}'. The gradient must "
                    "match the tensor's grad_dtype (defaults to the tensor's dtype). You can set "
                    "the tensor's grad_dtype attribute with a specific dtype, or None to allow "
                    "any dtype. Set grad_dtype with caution. Diverging the dtypes of a tensor "
                    "and its gradient may break downstream systems that assume they match.")
            # (in torch's order: device type, layout, device index, then size)
            dev, own_dev = value.device, self.device
            _check_grad_device_type(dev, own_dev)
            _check_grad_layout(data, own)
            _check_grad_device_index(dev, own_dev)
            if value._data.shape != self._data.shape:
                raise RuntimeError(
                    f"attempting to assign a gradient of size '{list(value.shape)}' to a tensor "
                    f"of size '{list(self.shape)}'. Please ensure that the gradient and the "
                    "tensor are the same size")
        self._grad = value

    @grad.deleter
    def grad(self):
        grad_accessed("Tensor.grad")
        self._grad = None

    @property
    def data(self):
        # Shares memory but not the version counter: changes through .data are invisible to
        # autograd's correctness checks, as in torch.
        d = self.__dict__
        t = _wrap(d["_data"]) if "_phys" not in d else _bits_alias(d)
        if self._is_inference:
            _inference_alias(t)
        return t

    @data.setter
    def data(self, value):
        if not isinstance(value, Tensor):
            raise TypeError(f"Variable data has to be a tensor, but got {type(value).__name__}")
        if self._requires_grad and value.dtype.category < D.FLOATING:
            raise RuntimeError("data set to a tensor that requires gradients must be floating "
                               "point or complex dtype")
        from .autograd import _transform_is_running
        if _transform_is_running():
            from .func._outer_graph import refuse_data_write
            refuse_data_write(self)
        tensor_state_set(".data")
        if self._grad_fn is not None:
            from .autograd.graph import note_replaced_data
            note_replaced_data(self, value._data)
        self._data = value._data

    def detach(self):
        """A new leaf sharing data and version counter with this tensor, outside the graph."""
        d = self.__dict__
        t = _wrap(d["_data"]) if "_phys" not in d else _bits_alias(d)
        if self._is_inference:
            _inference_alias(t)
        else:
            t._vc = self._version_counter()
        return t

    def detach_(self):
        if self._base is not None:
            raise RuntimeError(_DETACH_VIEW)
        if self._grad_fn is not None:
            # A node that saved this tensor before now finds a version it never saw, and
            # unpacking it gives torch's "detached in-place" error (see DetachedCounter).
            vc = self._vc
            offset = vc.offset if type(vc) is DetachedCounter else 0
            self._vc = DetachedCounter(self._version_counter(), offset + DETACHED)
        self._grad_fn = None
        changed, self._requires_grad = self._requires_grad, False
        self._output_nr = 0
        if changed and self._following_views is not None:
            from .autograd.graph import follow_base
            follow_base(self)
        return self

    def retain_grad(self):
        if not self._requires_grad:
            raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
        if self._grad_fn is None:
            # NOTE: torch asks whether the tensor is a leaf from the node it holds, without
            # regenerating a view's history: a view made in no_grad mode has none, so this is
            # a no-op for it (its base written in place since or not; grad_fn then raises).
            return
        fn = self.grad_fn  # (a view's history regenerated first)
        if self._retains_grad:
            return
        self._retains_grad = True
        fn._retain(self._output_nr, self)

    @property
    def retains_grad(self) -> bool:
        return self._retains_grad

    def register_hook(self, hook):
        """Register ``hook(grad) -> Tensor or None`` run when this tensor's gradient is computed."""
        from .autograd.graph import RemovableHandle, _HookDict
        if not self._requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        fn = self._grad_fn
        if fn is not None:
            return fn._add_tensor_hook(self._output_nr, hook)
        if self._hooks is None:
            self._hooks = _HookDict()
        return RemovableHandle(self._hooks, hook)

    def register_post_accumulate_grad_hook(self, hook):
        """Register ``hook(tensor)`` run after a gradient is accumulated into this leaf."""
        from .autograd.graph import RemovableHandle, _HookDict
        if not self._requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        if self._grad_fn is not None:
            raise RuntimeError("post accumulate grad hooks cannot be registered on non-leaf "
                               "tensors")
        if self._post_acc_hooks is None:
            self._post_acc_hooks = _HookDict()
        return RemovableHandle(self._post_acc_hooks, hook)

    def _version_counter(self):
        """The counter a new alias or view of this tensor shares (a plain one: only a tensor
        detached in place reads it through a DetachedCounter window)."""
        vc = self._vc
        if vc is None:
            vc = self._vc = [0]
        return vc.shared if type(vc) is DetachedCounter else vc

    @property
    def _version(self) -> int:
        if self._is_inference and not self._inference_versions:
            raise RuntimeError("Inference tensors do not track version counter.")
        vc = self._vc
        if vc is None:
            return 0
        return vc.shared[0] if type(vc) is DetachedCounter else vc[0]

    def _bump_version(self):
        if self._is_inference:
            # torch bumps after the write: an inference tensor is written into, then refused
            # outside inference mode; inside it, nothing tracks an inference tensor's version
            if state.inference:
                return
            if not self._inference_versions:
                from .autograd.graph import ERR_INFERENCE_INPLACE
                raise RuntimeError(ERR_INFERENCE_INPLACE)
        version_bumped(self)
        vc = self._vc
        if vc is None:
            self._vc = [1]
        else:
            vc[0] += 1

    @property
    def output_nr(self) -> int:
        return self._output_nr

    def _is_view(self) -> bool:
        return self._base is not None

    is_view = _is_view

    def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
        """Compute the gradient of this tensor w.r.t. graph leaves (see autograd.backward)."""
        autograd = _AUTOGRAD[0]
        if autograd is None:  # (imported once: an import statement costs a call per backward())
            from . import autograd
            _AUTOGRAD[0] = autograd
        # (looked up on the module at each call, as torch's: a wrapper set there is called)
        autograd.backward(self, gradient, retain_graph, create_graph, inputs=inputs)

    def to_dot(self, params=None, show_saved=False, show_attrs=False) -> str:
        """Graphviz DOT text of the graph behind this tensor (see ember.autograd.to_dot)."""
        from .autograd.graphviz import to_dot
        return to_dot(self, params=params, show_saved=show_saved, show_attrs=show_attrs)

    # Variable's removed attribute, kept readable as torch does.
    @property
    def volatile(self):
        warnings.warn("volatile was removed (Variable.volatile is always False)", UserWarning,
                      stacklevel=2)
        return False

    # -- copying ---------------------------------------------------------------------------
    def __deepcopy__(self, memo):
        if self._grad_fn is not None:
            raise RuntimeError("Only Tensors created explicitly by the user (graph leaves) "
                               "support the deepcopy protocol at the moment.  If you were "
                               "attempting to deepcopy a module, this may be because of a "
                               "torch.nn.utils.weight_norm usage, see "
                               "https://github.com/pytorch/pytorch/pull/103001")
        if id(self) in memo:
            return memo[id(self)]
        if type(self) is not Tensor and type(self.new_empty(())) is not type(self):
            # (torch's test: its copy is made by new_empty, which a subclass's default
            # __torch_function__ runs with subclass dispatch off, so a plain tensor)
            raise RuntimeError(
                "The default implementation of __deepcopy__() for non-wrapper subclasses "
                "only works for subclass types that implement new_empty() and for which that "
                "function returns another instance of the same subclass. You should either "
                "properly implement new_empty() for your subclass or override __deepcopy__() "
                "if it is intended behavior for new_empty() to return an instance of a "
                "different type.")
        new = _wrap(self._data.copy(), type(self))
        new._vc = [1]  # torch sets the copied storage in place (set_): version 1
        new._requires_grad = self._requires_grad
        if self._grad is not None:
            new._grad = self._grad.__deepcopy__(memo)
        extra = {k: v for k, v in self.__dict__.items() if not k.startswith("_")}
        new.__dict__.update(extra)
        memo[id(self)] = new
        return new

    def __reduce_ex__(self, protocol):
        dev = self.device
        if dev.type == "meta":  # (no values: its shape and dtype are what there is to keep)
            return (_rebuild_meta, (type(self), tuple(self._data.shape), self._data.dtype.str,
                                    self._requires_grad))
        # a subclass's own attributes travel with it (torch's _rebuild_from_type_v2)
        extra = {k: v for k, v in self.__dict__.items() if not k.startswith("_")} if (
            type(self) is not Tensor) else None
        phys = self.__dict__.get("_phys")
        if phys is not None:  # (torch keeps the memory and the bits)
            return (_rebuild_with_bits, (type(self), to_numpy(phys), self._requires_grad,
                                         None if dev.type == "cpu" else str(dev),
                                         bit_metadata(self)))
        return (_rebuild, (type(self), to_numpy(self._data), self._requires_grad,
                           None if dev.type == "cpu" else str(dev)) + ((extra,) if extra else ()))


def bit_metadata(t):
    """torch's tensor metadata of ``t``'s bits (``{'conj': True}``, ``{'neg': True}``): what
    torch.save and pickle keep beside the memory of a conjugate or negative view."""
    d = t.__dict__
    if "_phys" not in d:  # (conj's copy under vmap or compile: values of its own)
        return {}
    return {name: True for name, bit in (("conj", "_conj_bit"), ("neg", "_neg_bit"))
            if d.get(bit)}


def set_bit_metadata(t, metadata):
    """Give ``t``, showing its own array, the bits ``metadata`` names (see bit_metadata):
    its array becomes the memory they are read from."""
    if not metadata or not (metadata.get("conj") or metadata.get("neg")):
        return t
    d = t.__dict__
    d["_phys"] = d.pop("_data")
    for name, bit in (("conj", "_conj_bit"), ("neg", "_neg_bit")):
        if metadata.get(name):
            d[bit] = True
    return t


def _rebuild_with_bits(cls, array, requires_grad, dev, metadata):
    return set_bit_metadata(_rebuild(cls, array, requires_grad, dev), metadata)


def _rebuild(cls, array, requires_grad, dev=None, extra=None):
    if dev is not None:
        from ._backend.device import move
        array = move(array, device(dev))
    t = _wrap(array, cls)
    t._vc = [1]  # torch rebuilds a tensor by setting its storage in place: version 1
    t._requires_grad = requires_grad
    if extra:
        t.__dict__.update(extra)
    return t


def _rebuild_meta(cls, shape, dtype, requires_grad):
    from ._backend.device import empty_on
    t = _wrap(empty_on(device("meta"), shape, np.dtype(dtype)), cls)
    t._requires_grad = requires_grad
    return t


class _Layout:
    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return "ember." + self.name


strided = _Layout("strided")
sparse_coo = _Layout("sparse_coo")

_C_NAMES = {"float32": "float", "float64": "double", "float16": "c10::Half",
            "bfloat16": "c10::BFloat16", "int64": "long int",
            "int32": "int", "int16": "short int", "int8": "signed char", "uint8": "unsigned char",
            "bool": "bool", "complex64": "c10::complex<float>",
            "complex128": "c10::complex<double>"}


def _c_type_name(dt):
    return _C_NAMES[dt.name]


def _wrap_dim(dim, ndim):
    """Normalise a possibly negative dim, with torch's IndexError when out of range."""
    n = max(ndim, 1)
    if not -n <= dim < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], "
                         f"but got {dim})")
    return dim + n if dim < 0 else dim


def is_tensor(obj) -> bool:
    return isinstance(obj, Tensor)



def seal_read_only_attributes():
    """Assigning to a read-only attribute (``x.T = y``, and ``x.T *= 2``, which assigns after
    the in-place op) raises torch's AttributeError, not Python's "property has no setter".
    Run once every module has installed its properties on Tensor."""
    for name, attr in list(vars(Tensor).items()):
        if isinstance(attr, property) and attr.fset is None:
            setattr(Tensor, name, property(attr.fget, _refuse_assignment(name), attr.fdel,
                                           attr.__doc__))


def _refuse_assignment(name):
    message = f"attribute '{name}' of 'ember._C.TensorBase' objects is not writable"

    def refuse(self, value):
        raise AttributeError(message)
    return refuse
