"""Tensor creation: ``tensor``, ``zeros``, ``arange``, random tensors and the ``*_like`` forms.

Random tensors come from ``ember.Generator`` streams: on the CPU torch's CPU generator bit for
bit (see ``_random``), on a GPU that GPU's CUDA generator (see ``ember.cuda.random``).
"""
from __future__ import annotations

import math
import operator
import warnings

import numpy as np

from . import _dtype as D
from ._backend import as_array, has_data, is_array
from ._backend.fp_errors import quietly
from ._backend.device import as_device, default_device, empty_on, move
from ._backend.layout import empty_in_order, empty_strided, format_order, kept_strides
from ._compile.hooks import constant, replayed
from ._info import check_scalar
from ._legacy import _is_size, _type_name
from ._linspace_values import linspace_values
from ._numpy_in import check_ndarray, warn_for_listed_arrays
from ._random import fill as _fill
from ._random.generator import (  # noqa: F401
    DeviceDraw,
    Generator,
    default_generator,
    draw_for,
    get_rng_state,
    initial_seed,
    set_rng_state,
)
from ._size import args_or_keyword
from ._state import state
from ._tensor import Tensor, _check_can_require_grad, _wrap
from .random import manual_seed, seed  # noqa: F401


# -- helpers ----------------------------------------------------------------------------------
def _size(size, fn="zeros"):
    """The shape a factory's size arguments give (``f(2, 3)`` or ``f((2, 3))``), torch's
    checks included."""
    return _checked_shape(_size_ints(size, fn))


def _size_ints(size, fn):
    """The ints of a factory's size arguments, with torch's TypeErrors for what is not a
    size (a float is refused, never truncated)."""
    if fn in ("rand", "randn") and (not size or (len(size) > 1 and not _is_size(size[0]))):
        got = ", ".join(_type_name(v) for v in size)
        raise TypeError(_RANDOM_FORMS.format(name=fn, got=got))
    if not size:
        raise TypeError(f'{fn}() missing 1 required positional arguments: "size"')
    first = size[0]
    if len(size) == 1 and isinstance(first, (tuple, list)):
        size = first
        if size and not _is_size(size[0]):
            raise TypeError(f"{fn}(): argument 'size' (position 1) must be tuple of ints, but "
                            f"found element of type {_type_name(size[0])} at pos 0")
    elif not _is_size(first):
        if len(size) > 1:
            raise TypeError(f"{fn}() takes 1 positional argument but {len(size)} were given")
        raise TypeError(f"{fn}(): argument 'size' (position 1) must be tuple of ints, not "
                        f"{_type_name(first)}")
    for pos, value in enumerate(size[1:], start=2):
        if not _is_size(value):
            raise TypeError(f"{fn}(): argument 'size' failed to unpack the object at pos {pos} "
                            f"with error \"type must be tuple of ints,but got "
                            f"{_type_name(value)}\"")
    return tuple(operator.index(v) for v in size)


_INT64_MAX = 2 ** 63 - 1


def _checked_shape(shape, itemsize=8):
    """``shape`` if torch could allocate it: torch's errors for a negative dimension and for a
    number of bytes beyond int64 (then NumPy would say MemoryError or ValueError)."""
    bytes_ = itemsize
    for s in shape:
        if s < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {s}: "
                               f"{list(shape)}")
        bytes_ *= s
    if bytes_ > _INT64_MAX:
        raise RuntimeError(f"Storage size calculation overflowed with sizes={list(shape)}")
    return shape


def _meta(device):
    """Whether a factory given ``device`` makes a meta tensor (which has no data to fill)."""
    if device is None:
        device = default_device()
        return device is not None and device.type == "meta"
    return as_device(device).type == "meta"


def _allocated(make, shape, np_dtype, device=None):
    """``make(shape, np_dtype)``, with torch's error when the memory is not there (on the
    meta device, an array without data: nothing is allocated)."""
    if _meta(device):
        return empty_on(as_device("meta"), shape, np_dtype)
    try:
        return make(shape, np_dtype)
    except (MemoryError, ValueError) as e:
        if isinstance(e, ValueError) and "too big" not in str(e):
            raise
        nbytes = math.prod(shape) * np.dtype(np_dtype).itemsize
        raise RuntimeError("[enforce fail at alloc_cpu.cpp:127] err == 0. DefaultCPUAllocator: "
                           f"can't allocate memory: you tried to allocate {nbytes} bytes. "
                           "Error code 12 (Cannot allocate memory)") from None


def _dtype_arg(fn, dtype):
    """``dtype`` as given to factory ``fn``, refused as torch refuses a non-dtype."""
    if dtype is not None and not isinstance(dtype, D.dtype):
        raise TypeError(f"{fn}(): argument 'dtype' must be ember.dtype, not "
                        f"{type(dtype).__name__}")
    return dtype


def _finish(array, dtype=None, requires_grad=False, device=None):
    if device is None:  # (set_default_device's, if any)
        device = default_device()
    if dtype is not None and array.dtype != dtype.np:
        array = D.cast(array, dtype)
    if device is not None:
        array = move(array, as_device(device))
    t = _wrap(array)
    if requires_grad:
        _check_can_require_grad(t.dtype, factory=True)
        t._requires_grad = True
    if state.inference:  # factories in inference mode make inference tensors, as torch's
        t._is_inference = True
    return t


def tensor_from_array(array):
    return _wrap(as_array(array))


def _infer_dtype(array, data):
    """torch's dtype for data given as Python numbers (NumPy input keeps its own dtype)."""
    kind = array.dtype.kind
    if kind == "f":
        return D.get_default_dtype().np
    if kind in "iu":
        return np.int64
    if kind == "b":
        return np.bool_
    if kind == "c":
        return D.default_complex().np
    raise TypeError(f"Could not infer dtype of {type(data).__name__}")


def _leaves(data):
    """The non-list elements nested in ``data`` (iteratively: deep nesting is fine)."""
    stack = [data]
    while stack:
        x = stack.pop()
        if isinstance(x, (list, tuple)):
            stack.extend(x)
        else:
            yield x


def _leaf_dtype(x):
    """The dtype one element brings to torch's inference (Python floats: the default dtype)."""
    if isinstance(x, (np.generic, np.ndarray)):  # (read by value: any byte order)
        return D.from_numpy_dtype(x.dtype if x.dtype.isnative else x.dtype.newbyteorder("="))
    if isinstance(x, float):
        return D.get_default_dtype()
    if isinstance(x, complex):
        return D.default_complex()
    return D.scalar_dtype(x)


def _inferred_with_numpy(data):
    """torch's dtype for a list holding NumPy scalars or arrays (None: none there).

    torch promotes over the elements, a NumPy scalar counting with its own dtype:
    ``[np.float64(1.5)]`` is float64, ``[np.float32(1.5), 2]`` float32.
    """
    leaves = list(_leaves(data))
    if not any(isinstance(x, (np.generic, np.ndarray)) for x in leaves):
        return None
    out = None
    for x in leaves:
        dt = _leaf_dtype(x)
        out = dt if out is None else D.promote_types(out, dt)
    return out


def check_nested_sizes(data):
    """torch's error where it measures nested data and meets a 0-d ndarray: it reads the sizes
    down the first items (``[np.array(1), 2]`` fails, ``[1, np.array(2)]`` does not)."""
    item = data
    while isinstance(item, (list, tuple, np.ndarray)) and len(item):
        item = item[0]
        if isinstance(item, np.ndarray) and item.ndim == 0:
            raise TypeError("len() of unsized object")


def _has_huge_int(data):
    """Whether ``data`` holds a Python int beyond int64 (NumPy would make it uint64 or an
    object; torch refuses it unless floats make the tensor floating point)."""
    if isinstance(data, int):
        return not -2 ** 63 <= data < 2 ** 63
    if not isinstance(data, (list, tuple)):
        return False
    return any(type(x) is int and not -2 ** 63 <= x < 2 ** 63 for x in _leaves(data))


def _to_array(data, dtype=None):
    """``data`` as a new array, cast straight to ``dtype`` when given (else torch's inference).

    NOTE: a requested dtype is applied to the values as parsed (Python floats are doubles), so
    ``tensor(0.1, dtype=float64)`` is exactly the double 0.1, never a float32 round trip.
    """
    if isinstance(data, Tensor):
        return data._data.copy()
    if is_array(data) and not isinstance(data, np.ndarray):  # (a GPU array stays there)
        return data.copy()
    if isinstance(data, np.ndarray):
        check_ndarray(data, warn_if_not_writeable=False)
        return data.copy()
    if isinstance(data, np.generic):
        return np.array(data)
    check_nested_sizes(data)
    if isinstance(data, (list, tuple)) and any(isinstance(x, Tensor) for x in data):
        return np.stack([_to_array(x, dtype) for x in data]) if data else np.array([])
    array = np.array(data) if not _has_huge_int(data) else np.array(data, dtype=object)
    if array.dtype == object:
        if _has_huge_int(data) and (dtype is None or dtype.category < D.FLOATING) and not any(
                isinstance(x, (float, complex)) for x in _leaves(data)):
            raise ValueError("Overflow when unpacking long long")
        if _has_huge_int(data):
            # (a float dtype through float64, as torch parses the number: ml_dtypes' dtypes
            # take no Python int of that size)
            array = array.astype(np.float64 if dtype is None or dtype.is_floating_point
                                 else dtype.np)
        else:
            raise TypeError(f"Could not infer dtype of {type(data).__name__}")
    if dtype is not None:
        return array
    dt = _inferred_with_numpy(data) if isinstance(data, (list, tuple)) else None
    target = dt.np if dt is not None else _infer_dtype(array, data) if (
        array.size or array.ndim == 0) else D.get_default_dtype().np
    if array.dtype == target:
        return array
    return quietly(array.astype, target)  # (torch overflows to inf without a word)


# -- from data ----------------------------------------------------------------------------------
def tensor(data, *, dtype=None, device=None, requires_grad=False, pin_memory=False):
    """A new tensor holding a copy of ``data`` (dtype inferred as torch infers it)."""
    check_pin_memory(pin_memory)
    _dtype_arg("tensor", dtype)
    if isinstance(data, Tensor):
        warnings.warn("To copy construct from a tensor, it is recommended to use "
                      "sourceTensor.detach().clone() or sourceTensor.detach().clone()."
                      "requires_grad_(True), rather than torch.tensor(sourceTensor).",
                      UserWarning, stacklevel=2)
    array = _to_array(data, dtype)
    _warn_for_listed_arrays(data, array)
    t = _finish(array, dtype, requires_grad, device)
    return constant(t) if _python_data(data) else t


def _warn_for_listed_arrays(data, array):
    """torch warns for each ndarray copied out of a list (none when nothing is copied)."""
    if isinstance(data, (list, tuple)) and array.size:
        warn_for_listed_arrays(sum(isinstance(x, np.ndarray) for x in _leaves(data)),
                               stacklevel=3)


def _python_data(data):
    """Data made of Python values only (no tensor, no array): a copy of it is a constant."""
    if isinstance(data, (list, tuple)):
        return all(_python_data(x) for x in data)
    return isinstance(data, (bool, int, float, complex))


def as_tensor(data, dtype=None, device=None):
    """``data`` as a tensor, sharing memory when it already is one (or an ndarray) of dtype."""
    if device is None:
        device = default_device()
    if isinstance(data, Tensor):
        return data.to(**{k: v for k, v in (("dtype", dtype), ("device", device))
                          if v is not None})
    if isinstance(data, np.ndarray):
        check_ndarray(data, warn_if_not_writeable=True)
    if isinstance(data, np.ndarray) and (dtype is None or data.dtype == dtype.np) and (
            device is None or as_device(device).type == "cpu"):
        return _wrap(data)
    array = _to_array(data, dtype)
    _warn_for_listed_arrays(data, array)
    t = _finish(array, dtype, False, device)
    return constant(t) if _python_data(data) else t


def from_numpy(ndarray):
    """A tensor sharing memory with ``ndarray``."""
    if not isinstance(ndarray, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(ndarray).__name__})")
    check_ndarray(ndarray, warn_if_not_writeable=True)
    return _wrap(ndarray)


def check_pin_memory(pin_memory):
    """torch's refusal of ``pin_memory=True`` where no accelerator is (ember's host arrays are
    what a copy to a GPU reads, pinned or not, where one is)."""
    if pin_memory:
        from . import cuda
        if not cuda.is_available():
            raise RuntimeError("pin_memory=True requires a CUDA or other accelerator backend; "
                               "no pinned memory allocator is available on this system.")


# -- filled -------------------------------------------------------------------------------------
def _dtype_or_default(dtype):
    return (dtype or D.get_default_dtype()).np


def zeros(*args, size=None, out=None, dtype=None, layout=None, device=None,
          requires_grad=False, pin_memory=False):
    check_pin_memory(pin_memory)
    size = args_or_keyword(args, size, "zeros", "size")
    dt = _dtype_or_default(_dtype_arg("zeros", dtype))
    shape = _size_ints(size, "zeros")
    if any(s < 0 for s in shape):  # torch's zeros checks its sizes itself
        raise RuntimeError("zeros: Dimension size must be non-negative.")
    return constant(_finish(_allocated(np.zeros, _checked_shape(shape), dt, device), None,
                            requires_grad, device))


def ones(*args, size=None, out=None, dtype=None, layout=None, device=None,
          requires_grad=False, pin_memory=False):
    check_pin_memory(pin_memory)
    size = args_or_keyword(args, size, "ones", "size")
    dt = _dtype_or_default(_dtype_arg("ones", dtype))
    return constant(_finish(_allocated(np.ones, _size(size, "ones"), dt, device), None,
                            requires_grad, device))


def empty(*args, size=None, out=None, dtype=None, layout=None, device=None,
          requires_grad=False, memory_format=None, pin_memory=False):
    check_pin_memory(pin_memory)
    size = args_or_keyword(args, size, "empty", "size")
    dt = _dtype_or_default(_dtype_arg("empty", dtype))
    array = _allocated(np.empty, _size(size, "empty"), dt, device)
    if memory_format is not None:
        array = _in_memory_format(array, memory_format)
    return constant(_finish(array, None, requires_grad, device))


def _in_memory_format(array, memory_format):
    """A fresh (uninitialised) ``array`` laid out in ``memory_format``, as torch.empty makes
    it: channels-last strides, torch's errors for a rank that format has not, and no
    preserve_format (there is no input to preserve)."""
    name = memory_format.name
    if name == "preserve_format":
        raise RuntimeError("unsupported memory format Preserve")
    order = format_order(array, name)
    return array if order is None else empty_in_order(array, order)


def full(size, fill_value, *, out=None, dtype=None, layout=None, device=None,
         requires_grad=False, pin_memory=False):
    check_pin_memory(pin_memory)
    if _dtype_arg("full", dtype) is None:
        dtype = D.result_type_of(((D.scalar_dtype(fill_value), D.SCALAR),))
    fill_value = check_scalar(fill_value, dtype.np)
    array = _allocated(np.empty, _size((size,)), dtype.np, device)
    array[...] = fill_value
    return constant(_finish(array, None, requires_grad, device))


def _like(maker):
    def like(input, *, dtype=None, layout=None, device=None, requires_grad=False,
             memory_format=None, **kwargs):
        batched = _vmap_example(input)
        if batched is not None:  # (torch's result is batched too: one for each example)
            value, level = batched
            return _batched(like(value, dtype=dtype, layout=layout, device=device,
                                 requires_grad=requires_grad, memory_format=memory_format,
                                 **kwargs), level)
        made = maker(tuple(input.shape), dtype=dtype or input.dtype,
                     device=input.device if device is None else device,
                     requires_grad=requires_grad, **kwargs)
        return _laid_out_like(made, input, memory_format)
    like.__name__ = maker.__name__ + "_like"
    return like


def _vmap_example(input):
    """``(physical value, level)`` of an example under vmap, else None."""
    if is_array(input._data):
        return None
    return input._value, input._level


def _batched(value, level):
    from .func._batched_tensor import BatchedTensor
    return BatchedTensor(value, level)


def _format_name(memory_format):
    """An ``ember.memory_format``'s name (None: preserve_format, a ``*_like``'s default)."""
    return "preserve_format" if memory_format is None else memory_format.name


def _laid_out_like(made, input, memory_format):
    """``made`` (a fresh contiguous tensor shaped like ``input``) laid out as torch lays out a
    ``*_like`` result in ``memory_format``: a contiguous ``input`` costs nothing."""
    if not is_array(input._data):
        return made  # (an example under vmap: no layout to keep)
    name = _format_name(memory_format)
    strides = kept_strides(input._data, name)
    order = format_order(input._data, name) if strides is None else None
    if strides is None and order is None:
        return made
    array = (empty_strided(made._data, strides) if strides is not None
             else empty_in_order(made._data, order))
    array[...] = made._data
    return constant(_finish(array, None, made.requires_grad, made.device))


zeros_like = _like(zeros)
ones_like = _like(ones)
empty_like = _like(empty)


def full_like(input, fill_value, *, dtype=None, layout=None, device=None, requires_grad=False,
              memory_format=None, pin_memory=False):
    check_pin_memory(pin_memory)
    batched = _vmap_example(input)
    if batched is not None:  # (torch's result is batched too: one for each example)
        return _batched(full_like(batched[0], fill_value, dtype=dtype, device=device,
                                  requires_grad=requires_grad, memory_format=memory_format),
                        batched[1])
    made = full(tuple(input.shape), fill_value, dtype=dtype or input.dtype,
                device=input.device if device is None else device, requires_grad=requires_grad)
    return _laid_out_like(made, input, memory_format)


def arange(start, end=None, step=1, *, out=None, dtype=None, layout=None, device=None,
           requires_grad=False, pin_memory=False):
    """Values from ``start`` to ``end`` (exclusive) by ``step``."""
    check_pin_memory(pin_memory)
    if end is None:
        start, end = 0, start
    values = [v.item() if isinstance(v, Tensor) else v for v in (start, end, step)]
    if step == 0:
        raise RuntimeError("step must be nonzero")
    if dtype is None:
        floating = any(isinstance(v, float) for v in values)
        dtype = D.get_default_dtype() if floating else D.int64
    D.refuse_limited(dtype, "arange_cpu")
    start, end, step = values
    n = max(0, math.ceil((end - start) / step))
    array = (start + np.arange(n, dtype=np.float64) * step) if dtype.category >= D.FLOATING \
        else np.arange(start, end, step)
    return constant(_finish(array.astype(dtype.np), None, requires_grad, device))


def _check_steps(steps):
    if steps < 0:
        raise RuntimeError("number of steps must be non-negative")


def _linspace_end(value, dtype):
    """An end of the range as a Python number of the result's kind, refused as torch refuses
    one out of the dtype's range."""
    value = check_scalar(value.item() if isinstance(value, Tensor) else value, dtype.np)
    return complex(value) if dtype.is_complex else float(value)


def linspace(start, end, steps, *, out=None, dtype=None, layout=None, device=None,
             requires_grad=False, pin_memory=False):
    """``steps`` evenly spaced values from ``start`` to ``end`` inclusive."""
    check_pin_memory(pin_memory)
    _check_steps(steps)
    dtype = _dtype_arg("linspace", dtype) or D.get_default_dtype()
    array = linspace_values(_linspace_end(start, dtype), _linspace_end(end, dtype), int(steps),
                            dtype.np)
    return constant(_finish(array, None, requires_grad, device))


def logspace(start, end, steps, base=10.0, *, out=None, dtype=None, layout=None, device=None,
             requires_grad=False, pin_memory=False):
    check_pin_memory(pin_memory)
    _check_steps(steps)
    dtype = _dtype_arg("logspace", dtype) or D.get_default_dtype()
    array = np.logspace(float(start), float(end), int(steps), base=base)
    return constant(_finish(array.astype(dtype.np), None, requires_grad, device))


def eye(n, m=None, *, out=None, dtype=None, layout=None, device=None, requires_grad=False,
        pin_memory=False):
    check_pin_memory(pin_memory)
    for name, v in (("n", n), ("m", m)):
        if v is not None and v < 0:
            raise RuntimeError(f"{name} must be greater or equal to 0, got {v}")
    _checked_shape((n, n if m is None else m))
    dt = _dtype_or_default(_dtype_arg("eye", dtype))
    return constant(_finish(np.eye(n, m, dtype=dt), None, requires_grad, device))


# -- random -------------------------------------------------------------------------------------
def _new_array(size, dtype, device=None):
    """An uninitialised array for a random factory (torch's message for negative sizes)."""
    size = tuple(size)
    for s in size:
        if s < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {s}: "
                               f"{list(size)}")
    return _allocated(np.empty, size, dtype, device)


def _like_array(input, dtype, memory_format=None):
    """An uninitialised host array laid out as torch lays out a ``*_like`` result of
    ``input`` in ``memory_format``. For a GPU tensor it only describes the draw (made on the
    GPU, in C order)."""
    dt = (dtype or input.dtype).np
    if type(input._data) is not np.ndarray:
        return np.empty(input._data.shape, dt)
    name = _format_name(memory_format)
    strides = kept_strides(input._data, name)
    if strides is not None:
        return empty_strided(input._data, strides, dt)
    return empty_in_order(input._data, format_order(input._data, name), dt)


@replayed
def rand(*args, size=None, generator=None, out=None, dtype=None, layout=None, device=None,
         requires_grad=False, pin_memory=False):
    """Returns a tensor filled with random numbers from a uniform distribution on [0, 1)."""
    check_pin_memory(pin_memory)
    size = args_or_keyword(args, size, "rand", "size")
    array = _new_array(_size(size, "rand"), _dtype_or_default(dtype), device)
    values = array if _meta(device) else _fill.uniform(array, 0.0, 1.0,
                                                        draw_for(generator, device))
    return _finish(values, None, requires_grad, device)


@replayed
def randn(*args, size=None, generator=None, out=None, dtype=None, layout=None, device=None,
          requires_grad=False, pin_memory=False):
    """Returns a tensor filled with random numbers from the standard normal distribution."""
    check_pin_memory(pin_memory)
    size = args_or_keyword(args, size, "randn", "size")
    array = _new_array(_size(size, "randn"), _dtype_or_default(dtype), device)
    values = array if _meta(device) else _fill.normal(array, 0.0, 1.0,
                                                       draw_for(generator, device))
    return _finish(values, None, requires_grad, device)


@replayed
def randint(low=None, high=None, size=None, *, generator=None, out=None, dtype=None,
            layout=None, device=None, requires_grad=False, pin_memory=False):
    """Returns a tensor filled with random integers drawn uniformly from [low, high)."""
    check_pin_memory(pin_memory)
    low, high, size = _randint_bounds(low, high, size)
    array = _new_array(size, (dtype or D.int64).np, device)
    values = array if _meta(device) else _fill.random(array, low, high,
                                                       draw_for(generator, device))
    return _finish(values, None, requires_grad, device)


def _randint_bounds(low, high, size):
    """(low, high, size) from torch's two forms, randint(high, size) and randint(low, high,
    size), however they were given; torch's TypeError when neither fits."""
    if size is None and low is not None and high is not None:  # randint(high, size)
        low, high, size = None, low, high
    if high is None and size is not None:  # randint(high, size=size)
        low, high = None, low
    if high is None or size is None:
        given = [f"{name}={type(v).__name__}, " for name, v in
                 (("low", low), ("high", high), ("size", size)) if v is not None]
        got = type(low).__name__ if size is None and high is None and low is not None else \
            "".join(given)
        raise TypeError(_RANDINT_FORMS.format(got))
    return (0 if low is None else low), high, size


# rand's and randn's overloads (with a generator and without), as torch lists them
_RANDOM_FORMS = (
    "{name}() received an invalid combination of arguments - got ({got}), but expected one "
    "of:\n" + "".join(
        f" * (tuple of ints size, *, {gen}Tensor out = None, ember.dtype dtype = None, "
        "ember.layout layout = None, ember.device device = None, bool pin_memory = False, "
        "bool requires_grad = False)\n" for gen in ("ember.Generator generator, ", "")))

_RANDINT_FORMS = (
    "randint() received an invalid combination of arguments - got ({}), but expected one of:\n"
    + "".join(f" * ({first}tuple of ints size, *, {gen}Tensor out = None, torch.dtype dtype = "
              "None, torch.layout layout = None, torch.device device = None, bool pin_memory = "
              "False, bool requires_grad = False)\n"
              for first in ("int high, ", "int low, int high, ")
              for gen in ("torch.Generator generator, ", ""))).replace("torch.", "ember.")


@replayed
def randperm(n, *, generator=None, out=None, dtype=None, layout=None, device=None,
             requires_grad=False, pin_memory=False):
    """Returns a random permutation of integers from 0 to n - 1."""
    check_pin_memory(pin_memory)
    from ._random import cpu_generator, discrete
    dtype = dtype or D.int64
    array = _new_array((n,), dtype.np)
    _check_permutation_fits(n, dtype)
    draw = draw_for(generator, device)
    if not n:
        values = array
    elif isinstance(draw, DeviceDraw):
        values = draw.sample("randperm", n)
    else:
        values = discrete.randperm(cpu_generator(generator), n)
    return _finish(values.astype(dtype.np, copy=False), None, requires_grad, device)


def _check_permutation_fits(n, dtype):
    if dtype == D.bool:
        raise NotImplementedError("\"randperm\" not implemented for 'Bool'")
    if dtype.category == D.FLOATING:
        limit = (1 << (D.np_finfo(dtype.np).nmant + 1)) + 1
        if n > limit:
            raise RuntimeError(f"n cannot be greater than {limit} for {dtype.scalar_name} type.")
    elif n > int(np.iinfo(dtype.np).max) + 1:
        raise RuntimeError(f"value cannot be converted to type {dtype.np.name}_t without "
                           "overflow")


@replayed
def normal(mean=0.0, std=1.0, size=None, *, generator=None, out=None, dtype=None,
           layout=None, device=None, requires_grad=False, pin_memory=False):
    """Returns a tensor of random numbers from normal distributions of the given means and
    standard deviations (tensors broadcast against each other)."""
    check_pin_memory(pin_memory)
    from .autograd.grad_mode import no_grad
    mean_t, std_t = isinstance(mean, Tensor), isinstance(std, Tensor)
    if not mean_t and not std_t:
        array = _new_array(size, _dtype_or_default(dtype))
        values = _fill.normal(array, mean, std, draw_for(generator, device))
        return _finish(values, None, requires_grad, device)
    if std_t and not (std._data >= 0).all():  # (NaN included)
        raise RuntimeError("normal expects all elements of std >= 0.0")
    from ._ops.random import _normal_both, _normal_mean, _normal_std, _on_device_of, sampled

    def draws(like, shape, mean_, std_):
        # drawn where ``like`` is: from the CPU generator's stream, or on its GPU from that
        # GPU's generator (the host array only describes the draw)
        draw = draw_for(generator, like.device)
        values = _fill.normal(_new_array(shape, like.dtype.np), mean_, std_, draw)
        return _wrap(_on_device_of(values, like))

    with no_grad():
        if mean_t and std_t:  # normal_(0, 1), then * std + mean, as torch's kernel does
            shape = np.broadcast_shapes(tuple(mean.shape), tuple(std.shape))
            out = draws(mean, shape, 0, 1).mul_(std).add_(mean)
        elif mean_t:
            out = draws(mean, tuple(mean.shape), 0, std).add_(mean)
        else:
            out = draws(std, tuple(std.shape), 0, 1).mul_(std).add_(
                full((), mean, dtype=std.dtype, device=std.device))
    # the samples are not reparameterised: torch's node has a zero derivative
    if mean_t and std_t:
        return sampled(_normal_both, mean, std, values=out._data)
    return sampled(_normal_mean if mean_t else _normal_std, mean if mean_t else std,
                   values=out._data)


def _random_like(fill, **bounds):
    """A ``*_like`` sampler; ``bounds``: the keywords of its numbers (randint_like's low, high),
    None where not given."""
    @replayed
    def like(input, *args, generator=None, dtype=None, layout=None, device=None,
             requires_grad=False, memory_format=None, pin_memory=False, **given):
        check_pin_memory(pin_memory)
        for k in given:
            if k not in bounds:
                raise TypeError(f"{like.__name__}() got an unexpected keyword argument '{k}'")
        if given:  # by keyword: each goes to its place after the positional ones
            names = list(bounds)
            if any(names.index(k) < len(args) for k in given):
                raise TypeError(f"{like.__name__}() got multiple values for an argument")
            args = tuple(args) + tuple(given.get(k) for k in names[len(args):])
        array = _like_array(input, dtype, memory_format)
        device = input.device if device is None else device
        values = fill(array, *args, generator=draw_for(generator, device))
        if values.strides != array.strides and type(values) is np.ndarray:
            array[...] = values  # (the draw comes back in C order)
            values = array
        made = _finish(values, None, requires_grad, device)
        if has_data(made._data) and has_data(input._data):
            return made
        # (a meta tensor on either side: the host draw's layout does not carry over)
        return _laid_out_like(made, input, memory_format)
    return like


rand_like = _random_like(lambda a, generator: _fill.uniform(a, 0.0, 1.0, generator))
rand_like.__name__ = "rand_like"
rand_like.__doc__ = "A tensor shaped like ``input`` of uniform samples from [0, 1)."
randn_like = _random_like(lambda a, generator: _fill.normal(a, 0.0, 1.0, generator))
randn_like.__name__ = "randn_like"
randn_like.__doc__ = "A tensor shaped like ``input`` of standard normal samples."


def _randint_fill(array, low=None, high=None, *, generator=None):
    if high is None:  # randint_like(input, high)
        if low is None:
            raise TypeError("randint_like() missing 1 required positional argument: 'high'")
        low, high = 0, low
    return _fill.random(array, 0 if low is None else low, high, generator)


randint_like = _random_like(_randint_fill, low=None, high=None)
randint_like.__name__ = "randint_like"
randint_like.__doc__ = "A tensor shaped like ``input`` of integers drawn from [low, high)."


# -- index grids ----------------------------------------------------------------------------------
def _tri_indices(row, col, offset, dtype, lower, device=None):
    r, c = np.indices((row, col))
    keep = (c - r <= offset) if lower else (c - r >= offset)
    return constant(_finish(np.stack([r[keep], c[keep]]).astype((dtype or D.int64).np),
                            device=device))


def _tri_indices_factory(lower):
    def fn(row, col, offset=0, *, dtype=None, device=None, layout=None, pin_memory=False,
           requires_grad=False):
        check_pin_memory(pin_memory)
        made = _tri_indices(row, col, offset, dtype, lower, device)
        if requires_grad:  # (its dtype is an integer one)
            raise RuntimeError("Only Tensors of floating point and complex dtype can require "
                               "gradients")
        return made
    fn.__name__ = fn.__qualname__ = "tril_indices" if lower else "triu_indices"
    part = "lower" if lower else "upper"
    fn.__doc__ = f"Row and column indices of the {part} triangle of a row x col matrix (2 x N)."
    return fn


tril_indices = _tri_indices_factory(True)
triu_indices = _tri_indices_factory(False)


def meshgrid(*tensors, indexing=None):
    """Coordinate grids from 1-D tensors ('ij': matrix indexing, 'xy': Cartesian)."""
    from ._ops.shape import expand, reshape
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    if indexing is None:
        warnings.warn("torch.meshgrid: in an upcoming release, it will be required to pass the "
                      "indexing argument.", UserWarning, stacklevel=2)
        indexing = "ij"
    if indexing not in ("ij", "xy"):
        raise RuntimeError("torch.meshgrid: indexing must be one of \"xy\" or \"ij\", but "
                           f"received: {indexing}")
    for t in tensors:
        if t.ndim > 1:
            raise RuntimeError("torch.meshgrid: Expected 0D or 1D tensor in the tensor list but "
                               f"got: {t}")
    swap = indexing == "xy" and len(tensors) >= 2
    order = list(tensors)
    if swap:
        order[0], order[1] = order[1], order[0]
    shape = tuple(t.numel() for t in order)
    grids = []
    for i, t in enumerate(order):
        view_shape = tuple(-1 if j == i else 1 for j in range(len(order)))
        grids.append(expand(reshape(t, view_shape), shape))
    if swap:
        grids[0], grids[1] = grids[1], grids[0]
    return tuple(grids)


def cartesian_prod(*tensors):
    """Cartesian product of 1-D tensors: one row per combination."""
    from ._ops.shape import flatten, stack
    for t in tensors:
        if t.ndim != 1:
            raise RuntimeError(f"Expect a 1D vector, but got shape {list(t.shape)}")
    if len(tensors) == 1:
        return tensors[0]
    grids = meshgrid(*tensors, indexing="ij")
    return stack([flatten(g) for g in grids], 1)


# -- Tensor.type(...) with torch's legacy type names ----------------------------------------------
def _tensor_type(self, dtype=None, non_blocking=False, **kwargs):
    """The legacy type name ('torch.FloatTensor'), or a copy cast to ``dtype`` (a dtype, a legacy
    class such as ``ember.DoubleTensor``, or its name); self when it already is of that type."""
    for k in kwargs:  # (torch's legacy ``async`` only)
        if k != "async":
            raise TypeError(f"type() got an unexpected keyword argument '{k}'")
    if dtype is None:
        return self.dtype.legacy_type_name
    if isinstance(dtype, str):
        by_name = {d.legacy_type_name.split(".")[-1]: d for d in D.ALL}
        found = by_name.get(dtype.split(".")[-1])
        if found is None:
            raise ValueError(f"invalid type: '{dtype}'")
        dtype = found
    elif not isinstance(dtype, D.dtype):
        dtype = dtype.dtype  # a legacy class
    return self if dtype is self.dtype else self.to(dtype)


Tensor.type = _tensor_type


# -- Tensor.new_*: a new tensor with self's dtype (and device) unless told otherwise -----------
def _new_sized(factory):
    """``Tensor.new_<factory>(*size, dtype=None, ...)``: self's dtype unless told otherwise."""
    def new(self, *args, size=None, dtype=None, device=None, requires_grad=False, layout=None,
            pin_memory=False):
        check_pin_memory(pin_memory)
        size = args_or_keyword(args, size, new.__name__, "size")
        return factory(*size, dtype=dtype or self.dtype, requires_grad=requires_grad,
                       device=self.device if device is None else device)
    new.__name__ = f"new_{factory.__name__}"
    return new


def _new_full(self, size, fill_value, *, dtype=None, device=None, requires_grad=False,
              layout=None, pin_memory=False):
    check_pin_memory(pin_memory)
    return full(size, fill_value, dtype=dtype or self.dtype, requires_grad=requires_grad,
                device=self.device if device is None else device)


def _new_tensor(self, data, *, dtype=None, device=None, requires_grad=False, layout=None,
                pin_memory=False):
    check_pin_memory(pin_memory)
    if isinstance(data, Tensor):
        warnings.warn("To copy construct from a tensor, it is recommended to use "
                      "sourceTensor.detach().clone() or "
                      "sourceTensor.detach().clone().requires_grad_(True), rather than "
                      "tensor.new_tensor(sourceTensor).", UserWarning, stacklevel=2)
        data = data._data
    return tensor(data, dtype=dtype or self.dtype, requires_grad=requires_grad,
                  device=self.device if device is None else device)


Tensor.new_zeros = _new_sized(zeros)
Tensor.new_ones = _new_sized(ones)
Tensor.new_empty = _new_sized(empty)
Tensor.new_full = _new_full
Tensor.new_tensor = _new_tensor
