"""BatchedTensor: what a function under ``vmap`` sees in place of a batch of tensors.

A BatchedTensor holds one ordinary ember Tensor, its *physical* value, whose leading dimension
is the batch of one vmap level; the function sees the *logical* tensor, one example, without
that dimension (shape, dim, size, indexing all speak of the example). Every op called on it
goes to ``_batching.dispatch`` (the op registry hands over any call with a BatchedTensor
argument), which runs the op once on the physical values with the batch dimension kept out of
the op's way. The physical value is an ordinary Tensor, so autograd records the batched ops as
usual: ``grad`` of a vmapped function, and per-example gradients of a function under vmap,
follow from ordinary reverse mode.

Nested vmap nests BatchedTensors: the physical value of a level-2 BatchedTensor is a level-1
BatchedTensor. The array itself is never read through a BatchedTensor: its ``_data`` is an
``_Example``, which tells an example's shape, ndim, dtype and size (what Python-level code
checks before calling ops) and refuses to be used as an array, so code that has no batching
rule stops with an error instead of computing on the wrong shape.
"""
from __future__ import annotations

from .. import _dtype as D
from .._size import Size
from .._tensor import Tensor, _check_can_require_grad, _wrap_dim
from ..overrides import _disabled_torch_function_impl

ITEM = ("vmap: It looks like you're calling .item() on a Tensor. We don't support vmap over "
        "calling .item() on a Tensor, please try to rewrite what you're doing with other "
        "operations. If error is occurring somewhere inside PyTorch internals, please file a "
        "bug report.")
CONTROL_FLOW = ("vmap: It looks like you're attempting to use a Tensor in some data-dependent "
                "control flow. We don't support that yet, please file an issue at "
                "https://github.com/pytorch/pytorch/issues .")


_NO_ARRAY = ("vmap: this operation reads a tensor's memory directly and has no batching rule "
             "in ember; call it outside of vmap (or on each example in a loop)")


# (level, reports) for each vmap level a transform called inside it now runs at, innermost
# last: whether a BatchedTensor at that level reports its physical value's autograd flags.
# It does in the function a reverse-mode transform (grad, vjp, jacrev) runs, and in the
# transform's own work (``_lowering._below``: the wrappers torch's transform unwraps);
# elsewhere the function under vmap sees torch's batched tensor, which has no such flags.
autograd_scopes = []


def reports_autograd(level):
    """Whether a BatchedTensor at ``level`` now reports its physical value's autograd flags."""
    for scope, reports in reversed(autograd_scopes):
        if scope == level:
            return reports
    return False


class _Example:
    """An example's array metadata, without its array."""

    __slots__ = ("shape", "dtype")

    def __init__(self, shape, dtype):
        self.shape, self.dtype = shape, dtype

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def size(self):
        n = 1
        for s in self.shape:
            n *= s
        return n

    @property
    def itemsize(self):
        return self.dtype.itemsize

    def __array__(self, *args, **kwargs):
        raise RuntimeError(_NO_ARRAY)

    def __getattr__(self, name):
        raise RuntimeError(_NO_ARRAY)


class BatchedTensor(Tensor):
    """One example of a batch under vmap level ``_level`` (physical value ``_value``)."""

    __slots__ = ()
    # (torch's batched tensors are no Python subclass: vmap's hook sees their ops, not the
    # __torch_function__ protocol)
    __torch_function__ = _disabled_torch_function_impl

    def __new__(cls, value, level):
        return object.__new__(cls)  # (its data is its value's: no legacy constructor)

    def __init__(self, value, level):
        self.__dict__["_value"] = value
        self.__dict__["_level"] = level

    @property
    def _data(self):
        value = self._value
        return _Example(tuple(value.shape)[1:], value.dtype.np)

    # -- what the function sees: one example ------------------------------------------------
    @property
    def dtype(self):
        return self._value.dtype

    @property
    def shape(self):
        return Size(tuple(self._value.shape)[1:])

    def size(self, dim=None):
        shape = tuple(self._value.shape)[1:]
        if dim is None:
            return Size(shape)
        return shape[_wrap_dim(dim, len(shape))]

    def dim(self):
        return self._value.dim() - 1

    ndimension = dim

    @property
    def ndim(self):
        return self._value.dim() - 1

    def numel(self):
        n = 1
        for s in tuple(self._value.shape)[1:]:
            n *= s
        return n

    nelement = numel

    @property
    def device(self):
        return self._value.device

    @property
    def is_cuda(self):
        return self._value.is_cuda

    @property
    def is_cpu(self):
        return self._value.is_cpu

    def element_size(self):
        return self._value.element_size()

    def stride(self, dim=None):
        st = tuple(self._value.stride())[1:]
        return st if dim is None else st[_wrap_dim(dim, len(st))]

    def is_contiguous(self, memory_format=None):
        return self._value.is_contiguous()

    def is_floating_point(self):
        return self._value.dtype.category == D.FLOATING

    def is_complex(self):
        return self._value.dtype.category == D.COMPLEX

    def type(self, dtype=None):
        if dtype is None:
            return self._value.type()
        return self.to(dtype)

    # -- what needs one example's values: torch's errors ------------------------------------
    def item(self):
        raise RuntimeError(ITEM)

    def tolist(self):
        raise RuntimeError(ITEM)

    def numpy(self, *, force=False):
        raise RuntimeError(ITEM)

    def __array__(self, dtype=None, copy=None):
        raise RuntimeError(ITEM)

    def __bool__(self):
        raise RuntimeError(CONTROL_FLOW)

    def _scalar(self, kind):
        raise RuntimeError(ITEM)

    def __index__(self):
        raise RuntimeError(ITEM)

    def __len__(self):
        if self.dim() == 0:
            raise TypeError("len() of a 0-d tensor")
        return tuple(self._value.shape)[1]

    def __format__(self, spec):
        return object.__format__(self, spec) if spec else repr(self)

    def __repr__(self, *, tensor_contents=None):
        return f"BatchedTensor(lvl={self._level}, bdim=0, value=\n    {self._value!r}\n)"

    def data_ptr(self):
        return self._value.data_ptr()

    def storage_offset(self):
        return self._value.storage_offset()

    def untyped_storage(self):
        return self._value.untyped_storage()

    # -- autograd: the physical value's, where a transform inside this level records --------
    # NOTE: torch's batched tensor has no autograd metadata of its own: the function under
    # vmap sees requires_grad False, a leaf, no grad_fn, whatever records the batch outside
    # (the vmap's outputs do require grad). Only a grad, vjp or jacrev called inside this
    # vmap wraps it in a tensor that records, and reports its flags (see autograd_scopes).
    @property
    def requires_grad(self):
        flag = self.__dict__.get("_wrapper_requires_grad")
        if flag is not None:
            return flag
        return self._value.requires_grad if reports_autograd(self._level) else False

    @requires_grad.setter
    def requires_grad(self, flag):
        # NOTE: torch sets the flag of its batched tensor alone, a wrapper no op records
        # through: the function reads it back, its ops and results do not require grad
        if type(flag) is not bool:
            raise RuntimeError("requires_grad must be a bool")
        if flag:
            _check_can_require_grad(self.dtype)
        self.__dict__["_wrapper_requires_grad"] = flag

    def _set_requires_grad(self, requires_grad=True, from_attribute=False):
        self._value._set_requires_grad(requires_grad, from_attribute)
        return self

    @property
    def grad_fn(self):
        return self._value.grad_fn if reports_autograd(self._level) else None

    @property
    def is_leaf(self):
        return self._value.is_leaf if reports_autograd(self._level) else True

    @property
    def _requires_grad(self):
        return self._value._requires_grad

    @property
    def _grad_fn(self):
        return self._value._grad_fn

    @property
    def _version(self):
        return self._value._version

    @property
    def data(self):
        raise RuntimeError("accessing `data` under vmap transform is not allowed")

    @data.setter
    def data(self, value):
        from ._outer_graph import refuse_data_write
        refuse_data_write(below_every_level(self), self._level)  # (a grad inside this vmap: its wrapper's error)
        raise RuntimeError("mutating directly with `.data` under vmap transform is not allowed.")

    def detach(self):
        return BatchedTensor(self._value.detach(), self._level)

    def backward(self, *args, **kwargs):
        from ..autograd import _refuse_inside_transform
        _refuse_inside_transform()  # (torch's error: a vmap level is active)
        raise RuntimeError("vmap: backward() is not supported on a tensor under vmap; use "
                           "ember.func.grad or vjp inside the vmapped function instead")

    def register_hook(self, hook):
        raise RuntimeError("vmap: register_hook is not supported on a tensor under vmap")

    def __deepcopy__(self, memo):
        raise RuntimeError("vmap: deepcopy of a tensor under vmap is not supported")

    def __reduce_ex__(self, protocol):
        raise RuntimeError("vmap: a tensor under vmap cannot be pickled")


def below_every_level(x):
    """The tensor under every vmap level's BatchedTensor of ``x`` (``x`` when unbatched)."""
    while type(x) is BatchedTensor:
        x = x._value
    return x


def physical(x, level):
    """``x``'s physical value at ``level`` (batch dimension first), or None when ``x`` is not
    batched at that level."""
    if type(x) is BatchedTensor and x._level == level:
        return x._value
    return None


def torch_layout(x, level):
    """``x``'s physical value at ``level`` as torch's batched tensor holds it, and the
    dimension its batch lies in there: what a custom rule (``register_vmap``, an
    autograd.Function's ``vmap``) receives. A vmap input keeps the dimension ``in_dims`` gave
    it (``input_batch_dim``); any other value holds the batch first. (None, None) when ``x``
    is not batched at ``level``."""
    value = physical(x, level)
    if value is None:
        return None, None
    held = held_as_torch(x)
    if held is not None:
        return held
    bdim = x.__dict__.get("_bdim", 0)
    return (value.movedim(0, bdim) if bdim else value), bdim


def input_batch_dim(x, dim, given=None):
    """Note that vmap input ``x`` (a BatchedTensor) holds its batch in dimension ``dim``
    of ``given``, the tensor it was given (torch's batched tensor keeps it there)."""
    if dim:
        x.__dict__["_bdim"] = dim
        if given is not None:
            x.__dict__["_held"] = given
    return x


def batched_at(held, bdim, level):
    """A BatchedTensor at ``level`` for ``held``, a tensor whose batch lies in dimension
    ``bdim``, as torch's batched tensor holds it: its physical value is ``held`` with the
    batch moved first, and ``held`` itself is kept, for the ops whose torch rules leave the
    batch where it is (unary pointwise ops) and for vmap's outputs (torch returns ``held``,
    or ``held`` with its batch moved to ``out_dims``)."""
    x = BatchedTensor(held.movedim(bdim, 0), level)
    x.__dict__["_bdim"] = bdim
    x.__dict__["_held"] = held
    return x


def held_as_torch(x):
    """``(held, bdim)`` of a BatchedTensor whose batch torch holds in a dimension other than
    the first (see batched_at), else None."""
    held = x.__dict__.get("_held")
    return None if held is None else (held, x.__dict__["_bdim"])


def forget_held(x):
    """``x``'s physical value was written in place: torch's layout is no longer kept apart
    (torch_layout moves the batch of the physical value instead)."""
    x.__dict__.pop("_held", None)


def batch_level(x):
    """The vmap level of ``x``, 0 when it is not batched."""
    return x._level if type(x) is BatchedTensor else 0
