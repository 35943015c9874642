"""torch's legacy typed tensor classes: ``ember.FloatTensor``, ``ember.LongTensor``, ...

Each is a constructor (``LongTensor([1, 2])``, ``FloatTensor(2, 3)``: a tensor of its dtype) and
an ``isinstance`` test (``isinstance(x, ember.FloatTensor)``: a float32 tensor), as in torch;
``type(x)`` stays ``ember.Tensor``. ``Tensor.type()`` names them and ``Tensor.type(cls)``
(or the name as a string) casts to them (see _creation.py).
"""
from __future__ import annotations

import operator

import numpy as np

from . import _dtype as D
from ._numpy_in import check_ndarray, warn_once
from ._size import Size
from ._tensor import Tensor, _wrap, typename


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
        return _wrap(legacy_array(args, dt.np))

    def __repr__(cls):
        return f"<class 'ember.{cls.__name__}'>"


def legacy_array(args, np_dtype):
    """The array that torch's legacy constructors (``Tensor(...)``, ``FloatTensor(...)``) make
    of ``args`` (other than one tensor): sizes (ints, a ``Size``, or anything with
    ``__index__``, such as a 0-d integer ndarray: ``Tensor(np.array(3))`` has 3 elements) or one
    sequence of data (an ndarray, a list or a tuple), cast to ``np_dtype``."""
    if len(args) == 1 and not isinstance(args[0], Size) and not _is_size(args[0]):
        return _from_sequence(args[0], np_dtype)
    if not args:
        shape = (0,)
    elif len(args) == 1 and isinstance(args[0], Size):
        shape = tuple(args[0])
    else:
        shape = _sizes(args)
    from ._creation import _checked_shape
    # (torch leaves the memory uninitialised; zeros are one of its possible contents)
    return np.zeros(_checked_shape(shape), np_dtype)


def _is_size(value):
    """Whether torch reads ``value`` as a size where it comes first: an index, not a bool."""
    if isinstance(value, (bool, np.bool_)):
        return False
    try:
        operator.index(value)
    except TypeError:
        return False
    return True


def _sizes(args):
    """The ints of sizes given one by one, with torch's errors for what is not one."""
    if not _is_size(args[0]):
        raise TypeError(_invalid_combination(args))
    for pos, value in enumerate(args[1:], start=2):
        try:
            operator.index(value)
        except TypeError:
            raise TypeError(f"new(): argument 'size' failed to unpack the object at pos {pos} "
                            f"with error \"type must be tuple of ints,but got "
                            f"{_type_name(value)}\"") from None
    return tuple(operator.index(v) for v in args)


def _from_sequence(data, np_dtype):
    if isinstance(data, str):
        raise TypeError("new(): invalid data type 'str'")
    if isinstance(data, (dict, np.generic)) or not hasattr(type(data), "__getitem__"):
        raise TypeError(f"new(): data must be a sequence (got {_type_name(data)})")
    if isinstance(data, np.ndarray):
        check_ndarray(data, warn_if_not_writeable=True)
        array = data
    else:
        from ._creation import check_nested_sizes
        check_nested_sizes(data)
        array = np.array(data)
    if array.dtype.kind == "c" and np.dtype(np_dtype).kind != "c":
        warn_once(_COMPLEX_TO_REAL, stacklevel=4)
        array = array.real
    return array.astype(np_dtype)


_COMPLEX_TO_REAL = ("Casting complex values to real discards the imaginary part (Triggered "
                    "internally at /__w/pytorch/pytorch/aten/src/ATen/native/Copy.cpp:307.)")
_SIGNATURES = ("(*, ember.device device = None)", "(ember.Storage storage)",
               "(Tensor other)", "(tuple of ints size, *, ember.device device = None)",
               "(object data, *, ember.device device = None)")


def _invalid_combination(args):
    """torch's message for sizes that do not start with an int: its signatures, those that
    take as many arguments as were given marked with why they did not match."""
    marked = ", ".join(f"!{_described(v)}!" for v in args)
    annotated = {2: (0,), 3: (3, 4)}.get(len(args), ())
    lines = ["new() received an invalid combination of arguments - got "
             f"({', '.join(_type_name(v) for v in args)}), but expected one of:"]
    for index, signature in enumerate(_SIGNATURES):
        lines.append(f" * {signature}")
        if index in annotated:
            lines.append("      didn't match because some of the arguments have invalid "
                         f"types: ({marked})")
    return "\n".join(lines) + "\n"


def _type_name(value):
    """Python's name of ``value``'s type as torch's messages give it (``numpy.ndarray``)."""
    if isinstance(value, Tensor):
        return "Tensor"
    if isinstance(value, Size):
        return "ember.Size"
    return typename(type(value))


def _described(value):
    """torch's description of a wrong argument: a list or tuple with its items' types."""
    if isinstance(value, (list, tuple)):
        items = ", ".join(_type_name(v) for v in value)
        if isinstance(value, list):
            return f"list of [{items}]"
        return f"{_type_name(value)} of ({items}{',' if len(value) == 1 else ''})"
    return _type_name(value)


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
