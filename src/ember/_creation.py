"""Tensor creation: ``tensor``, ``zeros``, ``arange``, random tensors and the ``*_like`` forms.

Random numbers come from NumPy's PCG64 through ``ember.Generator``; ``manual_seed`` makes runs
repeatable (the streams differ from torch's, so seeded values differ from torch's too).
"""
from __future__ import annotations

import math
import warnings

import numpy as np

from . import _dtype as D
from ._backend import as_array, is_array
from ._backend.device import as_device, make_on, move
from ._state import state
from ._tensor import Tensor, _check_can_require_grad, _wrap
from ._tensor import device as _Device

_DEFAULT_SEED = 67280421310721


class Generator:
    """A random number generator (``ember.Generator``): a seedable NumPy PCG64 stream.

    ``Generator(device='cuda')`` makes a CUDA generator (see ``ember.cuda.random``).
    """

    def __new__(cls, device="cpu"):
        if cls is Generator and _Device(device).type == "cuda":
            from .cuda.random import CudaGenerator
            return object.__new__(CudaGenerator)
        return object.__new__(cls)

    def __init__(self, device="cpu"):
        self.device = _Device(device)
        self._seed = _DEFAULT_SEED
        self._stream = None

    @property
    def _rng(self):
        # NOTE: made on first use: importing numpy.random is a tenth of ember's import time.
        rng = self._stream
        if rng is None:
            rng = self._stream = np.random.default_rng(self._seed & 0xFFFFFFFFFFFFFFFF)
        return rng

    def manual_seed(self, seed):
        self._seed = int(seed)
        self._stream = None
        return self

    def seed(self):
        self.manual_seed(int.from_bytes(np.random.bytes(8), "little") >> 1)
        return self._seed

    def initial_seed(self):
        return self._seed

    def get_state(self):
        return self._rng.bit_generator.state

    def set_state(self, state):
        self._rng.bit_generator.state = state
        return self


default_generator = Generator()


def manual_seed(seed):
    """Seed the default generator (and every GPU's, as torch does); returns it."""
    _seed_cuda(seed)
    return default_generator.manual_seed(seed)


def _seed_cuda(seed):
    import sys
    cuda = sys.modules.get("ember.cuda.random")
    if cuda is not None:  # (nothing to seed if CUDA's generators were never asked for)
        cuda.manual_seed_all(seed)


def seed():
    return default_generator.seed()


def initial_seed():
    return default_generator.initial_seed()


def get_rng_state():
    return default_generator.get_state()


def set_rng_state(state):
    default_generator.set_state(state)


def _rng(generator, device=None):
    """The NumPy-Generator-like source of draws for ``device`` (the CPU for None)."""
    if generator is None:
        if device is None or device.type == "cpu":
            return default_generator._rng
        from .cuda.random import default_generator as cuda_default
        return cuda_default(device)._rng
    if device is not None and generator.device.type != device.type:
        raise RuntimeError(f"Expected a '{device.type}' device type for generator but found "
                           f"'{generator.device.type}'")
    return generator._rng


# -- helpers ----------------------------------------------------------------------------------
def _size(size):
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = size[0]
    return tuple(int(s) for s in size)


def _finish(array, dtype=None, requires_grad=False, device=None):
    if dtype is not None and array.dtype != dtype.np:
        array = array.astype(dtype.np)
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
    if isinstance(x, (np.generic, np.ndarray)):
        return D.from_numpy_dtype(x.dtype)
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


def _to_array(data, dtype=None):
    """``data`` as a new array, cast straight to ``dtype`` when given (else torch's inference).

    NOTE: a requested dtype is applied to the values as parsed (Python floats are doubles), so
    ``tensor(0.1, dtype=float64)`` is exactly the double 0.1, never a float32 round trip.
    """
    if isinstance(data, Tensor):
        return data._data.copy()
    if isinstance(data, np.ndarray) or is_array(data):  # (a device array stays there)
        D.from_numpy_dtype(data.dtype)
        return data.copy()
    if isinstance(data, np.generic):
        return np.array(data)
    if isinstance(data, (list, tuple)) and any(isinstance(x, Tensor) for x in data):
        return np.stack([_to_array(x, dtype) for x in data]) if data else np.array([])
    array = np.array(data)
    if array.dtype == object:
        raise TypeError(f"Could not infer dtype of {type(data).__name__}")
    if dtype is not None:
        return array
    dt = _inferred_with_numpy(data) if isinstance(data, (list, tuple)) else None
    if dt is not None:
        return array.astype(dt.np, copy=False)
    target = _infer_dtype(array, data) if array.size or array.ndim == 0 else (
        D.get_default_dtype().np)
    return array.astype(target, copy=False)


# -- from data ----------------------------------------------------------------------------------
def tensor(data, *, dtype=None, device=None, requires_grad=False, pin_memory=False):
    """A new tensor holding a copy of ``data`` (dtype inferred as torch infers it)."""
    if isinstance(data, Tensor):
        warnings.warn("To copy construct from a tensor, it is recommended to use "
                      "sourceTensor.detach().clone() or sourceTensor.detach().clone()."
                      "requires_grad_(True), rather than torch.tensor(sourceTensor).",
                      UserWarning, stacklevel=2)
    return _finish(_to_array(data, dtype), dtype, requires_grad, device)


def as_tensor(data, dtype=None, device=None):
    """``data`` as a tensor, sharing memory when it already is one (or an ndarray) of dtype
    on ``device``."""
    if isinstance(data, Tensor):
        return data.to(**{k: v for k, v in (("dtype", dtype), ("device", device))
                          if v is not None})
    if isinstance(data, np.ndarray) and (dtype is None or data.dtype == dtype.np) and (
            device is None or as_device(device).type == "cpu"):
        return from_numpy(data)
    return _finish(_to_array(data, dtype), dtype, False, device)


def from_numpy(ndarray):
    """A tensor sharing memory with ``ndarray``."""
    if not isinstance(ndarray, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(ndarray).__name__})")
    D.from_numpy_dtype(ndarray.dtype)
    return _wrap(ndarray)


# -- filled -------------------------------------------------------------------------------------
def _dtype_or_default(dtype):
    return (dtype or D.get_default_dtype()).np


def _made(factory, device, *args):
    """``xp.<factory>(*args)`` on ``device`` (made there, never copied from the host)."""
    return make_on(as_device(device), factory, *args)


def zeros(*size, out=None, dtype=None, layout=None, device=None, requires_grad=False):
    return _finish(_made("zeros", device, _size(size), _dtype_or_default(dtype)), None,
                   requires_grad)


def ones(*size, out=None, dtype=None, layout=None, device=None, requires_grad=False):
    return _finish(_made("ones", device, _size(size), _dtype_or_default(dtype)), None,
                   requires_grad)


def empty(*size, out=None, dtype=None, layout=None, device=None, requires_grad=False,
          memory_format=None):
    return _finish(_made("empty", device, _size(size), _dtype_or_default(dtype)), None,
                   requires_grad)


def full(size, fill_value, *, out=None, dtype=None, layout=None, device=None,
         requires_grad=False):
    if dtype is None:
        dtype = D.result_type_of(((D.scalar_dtype(fill_value), D.SCALAR),))
    return _finish(_made("full", device, tuple(size), fill_value, dtype.np), None,
                   requires_grad)


def _like(maker):
    def like(input, *, dtype=None, layout=None, device=None, requires_grad=False,
             memory_format=None, **kwargs):
        return maker(tuple(input.shape), dtype=dtype or input.dtype,
                     device=input.device if device is None else device,
                     requires_grad=requires_grad, **kwargs)
    like.__name__ = maker.__name__ + "_like"
    return like


zeros_like = _like(zeros)
ones_like = _like(ones)
empty_like = _like(empty)


def full_like(input, fill_value, *, dtype=None, layout=None, device=None, requires_grad=False,
              memory_format=None):
    return full(tuple(input.shape), fill_value, dtype=dtype or input.dtype,
                device=input.device if device is None else device, requires_grad=requires_grad)


def arange(start, end=None, step=1, *, out=None, dtype=None, layout=None, device=None,
           requires_grad=False):
    """Values from ``start`` to ``end`` (exclusive) by ``step``."""
    if end is None:
        start, end = 0, start
    values = [v.item() if isinstance(v, Tensor) else v for v in (start, end, step)]
    if step == 0:
        raise RuntimeError("step must be nonzero")
    if dtype is None:
        floating = any(isinstance(v, float) for v in values)
        dtype = D.get_default_dtype() if floating else D.int64
    start, end, step = values
    n = max(0, math.ceil((end - start) / step))
    array = (start + np.arange(n, dtype=np.float64) * step) if dtype.category >= D.FLOATING \
        else np.arange(start, end, step)
    return _finish(array.astype(dtype.np), None, requires_grad, device)


def linspace(start, end, steps, *, out=None, dtype=None, layout=None, device=None,
             requires_grad=False):
    """``steps`` evenly spaced values from ``start`` to ``end`` inclusive."""
    dtype = dtype or D.get_default_dtype()
    array = np.linspace(float(start), float(end), int(steps))
    return _finish(array.astype(dtype.np), None, requires_grad, device)


def logspace(start, end, steps, base=10.0, *, dtype=None, device=None, requires_grad=False):
    dtype = dtype or D.get_default_dtype()
    array = np.logspace(float(start), float(end), int(steps), base=base)
    return _finish(array.astype(dtype.np), None, requires_grad, device)


def eye(n, m=None, *, out=None, dtype=None, layout=None, device=None, requires_grad=False):
    return _finish(_made("eye", device, n, m, 0, _dtype_or_default(dtype)), None,
                   requires_grad)


# -- random -------------------------------------------------------------------------------------
def rand(*size, generator=None, out=None, dtype=None, layout=None, device=None,
         requires_grad=False):
    """Uniform samples from [0, 1)."""
    array = _rng(generator, as_device(device)).random(_size(size), dtype=np.float64)
    return _finish(array.astype(_dtype_or_default(dtype)), None, requires_grad, device)


def randn(*size, generator=None, out=None, dtype=None, layout=None, device=None,
          requires_grad=False):
    """Standard normal samples."""
    array = _rng(generator, as_device(device)).standard_normal(_size(size))
    return _finish(array.astype(_dtype_or_default(dtype)), None, requires_grad, device)


def randint(low=0, high=None, size=None, *, generator=None, out=None, dtype=None, layout=None,
            device=None, requires_grad=False):
    """Integers drawn uniformly from [low, high)."""
    if size is None:
        low, high, size = 0, low, high
    array = _rng(generator, as_device(device)).integers(low, high, size=tuple(size))
    return _finish(array.astype((dtype or D.int64).np), None, requires_grad, device)


def normal(mean=0.0, std=1.0, size=None, *, generator=None, out=None, dtype=None,
           layout=None, device=None, requires_grad=False):
    """Normal samples with the given mean and std (tensors broadcast against each other)."""
    m = mean._data if isinstance(mean, Tensor) else mean
    s = std._data if isinstance(std, Tensor) else std
    if isinstance(std, Tensor):
        if not (s >= 0).all():  # (NaN included)
            raise RuntimeError("normal expects all elements of std >= 0.0")
    elif not std >= 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {std:g}")
    shape = tuple(size) if size is not None else np.broadcast_shapes(np.shape(m), np.shape(s))
    ref = mean if isinstance(mean, Tensor) else std if isinstance(std, Tensor) else None
    dev = as_device(device) if ref is None or device is not None else ref.device
    array = m + s * _rng(generator, dev).standard_normal(shape)
    dt = dtype or (ref.dtype if ref is not None else D.get_default_dtype())
    array = array.astype(dt.np) if hasattr(array, "astype") else np.asarray(array, dt.np)
    return _finish(array, None, requires_grad, device)


def rand_like(input, *, dtype=None, requires_grad=False, device=None, **kwargs):
    return rand(tuple(input.shape), dtype=dtype or input.dtype, requires_grad=requires_grad,
                device=input.device if device is None else device)


def randn_like(input, *, dtype=None, requires_grad=False, device=None, **kwargs):
    return randn(tuple(input.shape), dtype=dtype or input.dtype, requires_grad=requires_grad,
                 device=input.device if device is None else device)


def randint_like(input, low=0, high=None, *, dtype=None, requires_grad=False, device=None,
                 **kwargs):
    if high is None:
        low, high = 0, low
    return randint(low, high, tuple(input.shape), dtype=dtype or input.dtype,
                   device=input.device if device is None else device)


def randperm(n, *, generator=None, dtype=None, device=None, requires_grad=False):
    if n < 0:
        raise RuntimeError(f"Trying to create tensor with negative dimension {n}: [{n}]")
    draws = _rng(generator, as_device(device)).permutation(n)
    return _finish(draws.astype((dtype or D.int64).np), None, requires_grad, device)



# -- index grids ----------------------------------------------------------------------------------
def _tri_indices(row, col, offset, dtype, lower, device):
    r, c = np.indices((row, col))
    keep = (c - r <= offset) if lower else (c - r >= offset)
    return _finish(np.stack([r[keep], c[keep]]).astype((dtype or D.int64).np), device=device)


def tril_indices(row, col, offset=0, *, dtype=None, device=None, layout=None):
    """Row and column indices of the lower triangle of a row x col matrix (2 x N)."""
    return _tri_indices(row, col, offset, dtype, True, device)


def triu_indices(row, col, offset=0, *, dtype=None, device=None, layout=None):
    """Row and column indices of the upper triangle of a row x col matrix (2 x N)."""
    return _tri_indices(row, col, offset, dtype, False, device)


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
    if len(tensors) == 1:
        return tensors[0]
    grids = meshgrid(*tensors, indexing="ij")
    return stack([flatten(g) for g in grids], 1)


# -- Tensor.type(...) with torch's legacy type names ----------------------------------------------
def _tensor_type(self, dtype=None, non_blocking=False, **kwargs):
    """The legacy type name ('torch.FloatTensor'), or a copy cast to ``dtype`` (a dtype or name)."""
    if dtype is None:
        return self.dtype.legacy_type_name
    if isinstance(dtype, str):
        by_name = {d.legacy_type_name.split(".")[-1]: d for d in D.ALL}
        found = by_name.get(dtype.split(".")[-1])
        if found is None:
            raise ValueError(f"invalid type: '{dtype}'")
        dtype = found
    return self.to(dtype)


Tensor.type = _tensor_type


# -- Tensor.new_*: a new tensor with self's dtype (and device) unless told otherwise -----------
def _new_sized(factory):
    """``Tensor.new_<factory>(*size, dtype=None, ...)``: self's dtype unless told otherwise."""
    def new(self, *size, dtype=None, device=None, requires_grad=False, **_):
        return factory(*size, dtype=dtype or self.dtype, requires_grad=requires_grad,
                       device=self.device if device is None else device)
    new.__name__ = f"new_{factory.__name__}"
    return new


def _new_full(self, size, fill_value, *, dtype=None, device=None, requires_grad=False, **_):
    return full(size, fill_value, dtype=dtype or self.dtype, requires_grad=requires_grad,
                device=self.device if device is None else device)


def _new_tensor(self, data, *, dtype=None, device=None, requires_grad=False, **_):
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
