"""torch's legacy typed tensor classes: ``ember.FloatTensor``, ``ember.LongTensor``, ...

Each is a constructor (``LongTensor([1, 2])``, ``FloatTensor(2, 3)``: a tensor of its dtype) and
an ``isinstance`` test (``isinstance(x, ember.FloatTensor)``: a float32 tensor), as in torch;
``type(x)`` stays ``ember.Tensor``. ``Tensor.type()`` names them and ``Tensor.type(cls)``
(or the name as a string) casts to them (see _creation.py).
"""
from __future__ import annotations

import numpy as np

from . import _dtype as D
from ._numpy_in import check_ndarray
from ._tensor import Tensor, _wrap


class _LegacyTensorType(type):
    """The metaclass: calling the class makes a tensor, isinstance checks the dtype."""

    def __instancecheck__(cls, obj):
        return isinstance(obj, Tensor) and obj.dtype is cls.dtype and not obj.is_cuda

    def __subclasscheck__(cls, sub):
        return sub is cls

    def __call__(cls, *args, device=None):
        dt = cls.dtype
        if len(args) == 1 and isinstance(args[0], Tensor):
            src = args[0]
            if src.dtype is not dt:
                raise TypeError(f"expected {_options(dt)} (got {_options(src.dtype)})")
            return src
        if len(args) == 1 and not isinstance(args[0], (int, np.integer)):
            data = args[0]
            if isinstance(data, str):
                raise TypeError("new(): invalid data type 'str'")
            if not isinstance(data, (list, tuple, np.ndarray)) and not hasattr(data, "__len__"):
                raise TypeError(f"new(): data must be a sequence (got {type(data).__name__})")
            if isinstance(data, np.ndarray):
                check_ndarray(data, warn_if_not_writeable=True)
            return _wrap(np.array(data).astype(dt.np))
        shape = tuple(int(s) for s in args) if args else (0,)
        return _wrap(np.zeros(shape, dt.np))

    def __repr__(cls):
        return f"<class 'ember.{cls.__name__}'>"


def _options(dt):
    name = {"float32": "float", "float64": "double"}.get(dt.name, dt.name)
    return (f"TensorOptions(dtype={name}, device=cpu, layout=Strided, requires_grad=false "
            "(default), pinned_memory=false (default), memory_format=(nullopt))")


def _make(name, dt):
    cls = _LegacyTensorType(name, (), {"dtype": dt, "is_cuda": False, "is_sparse": False,
                                       "__module__": "ember"})
    return cls


# (the limited-support types have type names but no classes in torch)
LEGACY = {name: _make(name, D._BY_NAME[dt]) for dt, name in D._LEGACY_TYPE.items()
          if dt in D._BY_NAME and D._BY_NAME[dt] not in D._LIMITED}
globals().update(LEGACY)
__all__ = sorted(LEGACY)
