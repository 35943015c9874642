"""The rest of torch's top-level namespace: constants, aliases, the function forms of in-place
methods (``ember.abs_(x)``), array interop (``asarray``, ``frombuffer``), the default device,
and the global switches torch has that NumPy does not need (they are kept and reported, with
torch's checks, so code that sets them runs)."""
from __future__ import annotations

import math
import warnings

import numpy as np

from . import _dtype as D
from ._creation import check_pin_memory
from ._tensor import Tensor, _wrap
from ._tensor import device as _Device

e, pi, inf, nan = math.e, math.pi, math.inf, math.nan
newaxis = None

_ALIASES = {"greater": "gt", "greater_equal": "ge", "less": "lt", "less_equal": "le",
            "not_equal": "ne"}
# torch.<name>_(x, ...) is x.<name>_(...)
_INPLACE_FUNCTIONS = (
    "abs_ acos_ acosh_ addmv_ alpha_dropout_ arccos_ arccosh_ arcsin_ arcsinh_ arctan_ "
    "arctanh_ as_strided_ asin_ asinh_ atan_ atanh_ ceil_ celu_ clamp_ clamp_max_ clamp_min_ "
    "clip_ conj_physical_ cos_ cosh_ deg2rad_ detach_ dropout_ erf_ erfc_ exp2_ exp_ expm1_ "
    "feature_alpha_dropout_ feature_dropout_ fill_ fix_ floor_ frac_ gcd_ i0_ index_put_ lcm_ "
    "ldexp_ log10_ log1p_ log2_ log_ logit_ nan_to_num_ neg_ negative_ rad2deg_ reciprocal_ "
    "relu_ resize_as_ round_ rrelu_ rsqrt_ selu_ sigmoid_ sin_ sinc_ sinh_ sqrt_ square_ tan_ "
    "tanh_ threshold_ trunc_ xlogy_ zero_").split()


def inplace_function(name, method=None):
    """``torch.<name>(input, ...)``: ``input.<name>(...)``, or ``method(input, ...)`` when
    given (a method as it was before something wrapped it)."""
    if method is None:
        def fn(input, *args, **kwargs):  # noqa: A002 - torch's name
            return getattr(input, name)(*args, **kwargs)
    else:
        def fn(input, *args, **kwargs):  # noqa: A002 - torch's name
            return method(input, *args, **kwargs)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"``input.{name}(...)``."
    fn.__ember_forwards__ = f"ember.Tensor.{name}"  # (whose keywords it takes)
    return fn


def names(namespace):
    """Put the aliases and in-place function forms into ``namespace`` (ember's globals), for
    the methods that exist."""
    for alias, target in _ALIASES.items():
        namespace[alias] = namespace[target]
    for name in _INPLACE_FUNCTIONS:
        if hasattr(Tensor, name) and name not in namespace:
            namespace[name] = inplace_function(name)


# -- arrays in, tensors out ---------------------------------------------------------------------
def asarray(obj, *, dtype=None, device=None, copy=None, requires_grad=False):
    """A tensor of ``obj``, sharing its memory when it is a tensor or an array of the dtype
    asked for (and ``copy`` is not True)."""
    from ._creation import tensor
    from ._numpy_in import check_ndarray
    if isinstance(obj, Tensor):
        out = obj if dtype is None or obj.dtype is dtype else obj.to(dtype)
        if copy and out is obj:
            out = obj.clone()
    elif isinstance(obj, np.ndarray) or hasattr(obj, "__array_interface__"):
        arr = np.asarray(obj)
        if isinstance(obj, np.ndarray):
            check_ndarray(arr, warn_if_not_writeable=True)
        elif arr.dtype not in D._BY_NP:
            raise TypeError(f"can't convert np.ndarray of type {arr.dtype}.")
        if dtype is not None and arr.dtype != dtype.np:
            arr = arr.astype(dtype.np)
        elif copy:
            arr = arr.copy()
        out = _wrap(arr)
    else:
        out = tensor(obj, dtype=dtype)
    if device is not None:
        out = out.to(device)  # (the same tensor when it is there already)
    if requires_grad:
        out._set_requires_grad()
    return out


def frombuffer(buffer, *, dtype, count=-1, offset=0, requires_grad=False):
    """A 1-D tensor viewing the bytes of a Python buffer (shared, not copied)."""
    view = memoryview(buffer)
    if view.readonly:
        from ._numpy_in import warn_once
        warn_once("The given buffer is not writable, and PyTorch does not support non-writable "
                  "tensors. This means you can write to the underlying (supposedly "
                  "non-writable) buffer using the tensor. You may want to copy the buffer to "
                  "protect its data or make it writable before converting it to a tensor. This "
                  "type of warning will be suppressed for the rest of this program. (Triggered "
                  "internally at /__w/pytorch/pytorch/torch/csrc/utils/tensor_new.cpp:1556.)",
                  stacklevel=2)
    length = view.nbytes
    if length <= 0:
        raise ValueError(f"both buffer length ({length}) and count ({count}) must not be 0")
    if not 0 <= offset < length:
        raise ValueError(f"offset ({offset} bytes) must be non-negative and no greater than "
                         f"buffer length ({length} bytes) minus 1")
    itemsize = dtype.itemsize
    if count <= 0 and (length - offset) % itemsize:
        raise ValueError(f"buffer length ({length - offset} bytes) after offset ({offset} "
                         f"bytes) must be a multiple of element size ({itemsize})")
    n = (length - offset) // itemsize if count <= 0 else count
    if offset + n * itemsize > length:
        raise ValueError(f"requested buffer length ({n} * {itemsize} bytes) after offset "
                         f"({offset} bytes) must not be greater than actual buffer length "
                         f"({length} bytes)")
    arr = np.frombuffer(view if not view.readonly else view.tobytes(), dtype=dtype.np,
                        count=n, offset=offset)
    if view.readonly:
        arr = arr.copy()
    out = _wrap(arr)
    if requires_grad:
        out._set_requires_grad()
    return out


def scalar_tensor(s, *, dtype=None, layout=None, device=None, pin_memory=False,
                  requires_grad=False):
    """A 0-dim tensor holding ``s`` (the default float dtype unless told)."""
    check_pin_memory(pin_memory)
    from ._creation import tensor
    return tensor(s, dtype=dtype or D.get_default_dtype(), device=device,
                  requires_grad=requires_grad)


# -- small predicates and no-op conversions -----------------------------------------------------
def is_nonzero(input):  # noqa: A002
    return bool(input)


def is_same_size(input, other):  # noqa: A002
    return tuple(input.shape) == tuple(other.shape)


def is_signed(input):  # noqa: A002
    return input.dtype.is_signed


def fill(input, value):  # noqa: A002
    """A copy of ``input`` filled with ``value`` (a number or a 0-dim tensor)."""
    from ._ops.pointwise import fill_out_of_place
    return fill_out_of_place(input, value)


for _name in ("is_nonzero", "is_same_size", "is_signed"):
    setattr(Tensor, _name, globals()[_name])



# -- global switches ----------------------------------------------------------------------------
_switches = {"deterministic": False, "warn_only": False, "warn_always": False,
             "matmul_precision": "highest", "interop_threads": 1}


def set_default_device(device):
    """The device factory functions make tensors on when given none ('cpu'; None resets it).
    Tensors made from others (``*_like``, ``new_*``) and ``from_numpy`` are not affected."""
    from ._backend.device import set_default
    d = None if device is None else _Device(device)
    if d is not None and d.type not in ("cpu", "cuda", "meta"):
        raise RuntimeError(f"ember has no {d.type} device available here")
    set_default(d)


def get_default_device():
    """The default device (a CUDA device with its index)."""
    from ._backend.device import default_device, resolve
    d = default_device()
    return _Device("cpu") if d is None else resolve(d)


def use_deterministic_algorithms(mode, *, warn_only=False):
    """Recorded: ember's ops are deterministic already."""
    _switches["deterministic"], _switches["warn_only"] = bool(mode), bool(warn_only)


def are_deterministic_algorithms_enabled():
    return _switches["deterministic"]


def is_deterministic_algorithms_warn_only_enabled():
    return _switches["warn_only"]


def set_deterministic_debug_mode(debug_mode):
    modes = {"default": 0, "warn": 1, "error": 2}
    mode = modes[debug_mode] if isinstance(debug_mode, str) else int(debug_mode)
    use_deterministic_algorithms(mode > 0, warn_only=mode == 1)


def get_deterministic_debug_mode():
    if not _switches["deterministic"]:
        return 0
    return 1 if _switches["warn_only"] else 2


def set_warn_always(b):
    _switches["warn_always"] = bool(b)


def is_warn_always_enabled():
    return _switches["warn_always"]


def set_float32_matmul_precision(precision):
    """Recorded only: NumPy's float32 matmul has one precision."""
    if precision not in ("highest", "high", "medium"):
        warnings.warn(f"{precision} is not one of 'highest', 'high', or 'medium'; the current"
                      "setFloat32MatmulPrecision call has no effect.", UserWarning, stacklevel=2)
        return
    _switches["matmul_precision"] = precision


def get_float32_matmul_precision():
    return _switches["matmul_precision"]


def get_num_interop_threads():
    return _switches["interop_threads"]


def set_num_interop_threads(n):
    _switches["interop_threads"] = int(n)


def set_flush_denormal(mode):
    """False: NumPy gives no control over denormals (torch returns False where unsupported)."""
    return False


# NOTE: last in the module, so that nothing here calls it in place of the builtin
def range(start=0, end=None, step=1, *, out=None, dtype=None, layout=None,  # noqa: A001
          device=None, requires_grad=False, pin_memory=False):
    """Deprecated torch.range: like arange, but ``end`` included (default float dtype)."""
    check_pin_memory(pin_memory)
    from ._creation import tensor
    warnings.warn("ember.range is deprecated and will be removed in a future release because its "
                  "behavior is inconsistent with Python's range builtin. Instead, use "
                  "ember.arange, which produces values in [start, end).", UserWarning,
                  stacklevel=2)
    if end is None:
        start, end = 0, start
    n = int(np.floor((end - start) / step)) + 1
    values = start + step * np.arange(max(n, 0))
    return tensor(values, dtype=dtype or D.get_default_dtype(), requires_grad=requires_grad)
