"""Storages: the memory a tensor's array views (``Tensor.untyped_storage()``, the deprecated
typed ``Tensor.storage()``), and what works on it: ``Tensor.set_`` (make a tensor view another
tensor's or a storage's memory) and ``Tensor.as_subclass``."""
from __future__ import annotations

import math
import warnings
import weakref

import numpy as np

from . import _dtype as D
from ._backend import contiguous_strides, data_address, get_xp, storage_of, strided_view
from ._tensor import Tensor, _wrap

# Each storage's object while someone holds it, by its owner array's id: two calls on
# tensors sharing memory give one object, as torch's do (the object keeps its owner alive, so
# the id stays that owner's while the entry exists).
_LIVE = weakref.WeakValueDictionary()


class UntypedStorage:
    """The memory behind a tensor (the array owning it), as bytes: an address and a size.
    Views of one tensor share it. ``UntypedStorage(n)`` is ``n`` new bytes (zeros),
    ``UntypedStorage(sequence)`` those byte values."""

    __slots__ = ("_owner", "_start", "_end", "__weakref__")
    __module__ = "ember.storage"

    def __init__(self, *args, device=None):
        if len(args) > 1:
            raise TypeError(f"UntypedStorage(): expected at most 1 argument, got {len(args)}")
        arg = args[0] if args else 0
        data = (np.zeros(int(arg), np.uint8) if isinstance(arg, int)
                else np.array(arg, dtype=np.uint8).reshape(-1))
        if device is not None:
            from ._backend.device import as_device, move, resolve
            data = move(data, resolve(as_device(device)))
        self._owner, self._start, self._end = storage_of(data)

    @classmethod
    def _of(cls, array):
        """The storage ``array`` views (one object for all views while it is held)."""
        owner, start, end = storage_of(array)
        found = _LIVE.get(id(owner))
        if found is None:
            found = cls.__new__(cls)
            found._owner, found._start, found._end = owner, start, end
            _LIVE[id(owner)] = found
        return found

    def data_ptr(self) -> int:
        return self._start if self._end > self._start else 0

    def nbytes(self) -> int:
        return self._end - self._start

    def size(self) -> int:
        return self.nbytes()

    def __len__(self) -> int:
        return self.nbytes()

    def element_size(self) -> int:
        return 1

    @property
    def device(self):
        return _wrap(self._owner).device

    @property
    def is_cuda(self) -> bool:
        return self.device.type == "cuda"

    def _bytes(self):
        """The storage's bytes as a flat uint8 array sharing its memory."""
        owner = self._owner
        xp = get_xp(owner)
        if owner.dtype.itemsize == 0 or self.nbytes() == 0:
            return xp.zeros(0, xp.uint8)
        return strided_view(owner, (self.nbytes(),), (1,), self._start, np.uint8)

    def tolist(self):
        return [int(b) for b in self._bytes().tolist()]

    def __getitem__(self, index):
        return int(self._bytes()[index])

    def __repr__(self):
        lines = [f" {b}" for b in self.tolist()]
        lines.append(f"[ember.storage.UntypedStorage(device={self.device}) of size "
                     f"{self.nbytes()}]")
        return "\n".join(lines)


_WARNED = [False]


def _warn_typed_storage():
    """torch's deprecation warning for typed storages (once per process, as torch's)."""
    if not _WARNED[0]:
        _WARNED[0] = True
        warnings.warn(
            "TypedStorage is deprecated. It will be removed in the future and UntypedStorage "
            "will be the only storage class. This should only matter to you if you are using "
            "storages directly.  To access UntypedStorage directly, use "
            "tensor.untyped_storage() instead of tensor.storage()", UserWarning, stacklevel=3)


class TypedStorage:
    """A storage read as elements of one dtype (torch's deprecated ``Tensor.storage()``)."""

    __slots__ = ("_untyped_storage", "dtype")
    __module__ = "ember.storage"

    def __init__(self, untyped, dtype):
        self._untyped_storage, self.dtype = untyped, dtype

    def untyped(self):
        return self._untyped_storage

    def data_ptr(self) -> int:
        return self._untyped_storage.data_ptr()

    def nbytes(self) -> int:
        return self._untyped_storage.nbytes()

    def element_size(self) -> int:
        return self.dtype.itemsize

    def size(self) -> int:
        return self.nbytes() // self.element_size()

    def __len__(self) -> int:
        return self.size()

    @property
    def device(self):
        return self._untyped_storage.device

    @property
    def is_cuda(self) -> bool:
        return self._untyped_storage.is_cuda

    def _values(self):
        return self._untyped_storage._bytes().view(self.dtype.np)

    def tolist(self):
        return self._values().tolist()

    def __getitem__(self, index):
        return self._values()[index].item()

    def __repr__(self):
        lines = [f" {v}" for v in self.tolist()]
        lines.append(f"[ember.storage.TypedStorage(dtype={self.dtype}, device={self.device}) "
                     f"of size {self.size()}]")
        return "\n".join(lines)


def is_storage(obj) -> bool:
    """Whether ``obj`` is a storage (untyped or typed)."""
    return isinstance(obj, (UntypedStorage, TypedStorage))


def _storage(self):
    _warn_typed_storage()
    return TypedStorage(self.untyped_storage(), self.dtype)


def _as_subclass(self, cls):
    """``self`` as an instance of the Tensor subclass ``cls`` (an alias: same memory, and
    still in the autograd graph through AliasBackward0)."""
    if not (isinstance(cls, type) and issubclass(cls, Tensor)):
        raise TypeError("Creating a Tensor subclass from a class that does not inherit from "
                        "Tensor is not possible. Make sure your class inherits from Tensor.")
    out = self.alias()
    out.__class__ = cls
    return out


Tensor.storage = _storage
Tensor.as_subclass = _as_subclass
