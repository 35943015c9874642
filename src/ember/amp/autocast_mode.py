"""``ember.autocast``: regions where chosen ops run in a lower precision, as torch's autocast.

Inside an enabled region, the ops on torch's lists for the tensors' device type cast their
floating-point tensor arguments before running (see ``_policy.py``): matmuls and convolutions
to the region's dtype (bfloat16 on the CPU by default), precision-sensitive ops (losses,
decompositions, FFTs, ...) to float32, and the "promote" ops to their widest argument. float64
tensors are never cast. The state (enabled flag and dtype per device type, the cache flag, the
nesting depth) is per thread, as torch's.

The listed functions are wrapped only while some thread has autocast enabled, so code outside
autocast pays nothing for it.
"""
from __future__ import annotations

import collections.abc
import functools
import threading
import warnings

from .. import _dtype as D
from .._backend.device import device as _device
from . import _policy

__all__ = ["autocast", "is_autocast_available", "custom_fwd", "custom_bwd",
           "autocast_decorator"]

# Device types torch keeps an autocast state for, with their default lower-precision dtype.
_DEFAULT_DTYPE = {"cpu": "bfloat16", "cuda": "float16", "xpu": "bfloat16", "ipu": "float16",
                  "hpu": "bfloat16", "xla": "bfloat16", "mps": "float16",
                  "privateuseone": "float16", "mtia": "bfloat16", "maia": "float16"}


class _State(threading.local):
    def __init__(self):
        self.enabled = {}
        self.dtype = {}
        self.cache_enabled = True
        self.nesting = 0
        self.cache = {}  # id(leaf) -> (leaf, its cast): torch's weight cache
        self.inside = False  # running a listed op (its own inner ops are not cast again)


_state = _State()
_lock = threading.Lock()
_enabled_anywhere: set = set()  # (thread id, device type) with autocast on


def _checked(device_type):
    """``device_type`` as torch's autocast state knows it, or torch's error."""
    if not isinstance(device_type, str):
        raise TypeError(f"is_autocast_enabled(): argument 'device_type' must be str, not "
                        f"{type(device_type).__name__}")
    kind = _device(device_type).type  # (torch's error for a string that names no device)
    if kind not in _DEFAULT_DTYPE:
        raise RuntimeError(
            "unknown device type for autocast in get_autocast_dispatch_key_from_device_type")
    return kind


def is_autocast_available(device_type: str) -> bool:
    """Whether autocast can be used with ``device_type`` (``'cpu'``, ``'cuda'``, ...)."""
    return _device(device_type).type in _DEFAULT_DTYPE


# -- the state functions of ember's namespace ----------------------------------------------------------------
def is_autocast_enabled(device_type: str | None = None) -> bool:
    """Whether autocast is on for ``device_type`` (without one: for CUDA, as torch's)."""
    return _state.enabled.get("cuda" if device_type is None else _checked(device_type), False)


def set_autocast_enabled(device_type, enabled=None) -> None:
    """``set_autocast_enabled(device_type, enabled)``, or the older ``(enabled)`` for CUDA."""
    if enabled is None:
        device_type, enabled = "cuda", device_type
    kind = _checked(device_type)
    _state.enabled[kind] = bool(enabled)
    key = (threading.get_ident(), kind)
    with _lock:
        if enabled:
            _enabled_anywhere.add(key)
        else:
            _enabled_anywhere.discard(key)
        _policy.install(_wrap, {k for _, k in _enabled_anywhere})


def get_autocast_dtype(device_type: str):
    """The lower-precision dtype autocast uses on ``device_type``."""
    kind = _checked(device_type)
    return _state.dtype.get(kind) or getattr(D, _DEFAULT_DTYPE[kind])


def set_autocast_dtype(device_type: str, dtype) -> None:
    _state.dtype[_checked(device_type)] = dtype


def _deprecated(old, new, line):
    # (torch's text, with the place in torch's C++ that issues it)
    warnings.warn(f"ember.{old} is deprecated. Please use ember.{new} instead. (Triggered "
                  f"internally at /__w/pytorch/pytorch/torch/csrc/autograd/init.cpp:{line}.)",
                  DeprecationWarning, stacklevel=3)


def is_autocast_cpu_enabled() -> bool:
    _deprecated("is_autocast_cpu_enabled()", "is_autocast_enabled('cpu')", 883)
    return is_autocast_enabled("cpu")


def set_autocast_cpu_enabled(enabled: bool) -> None:
    _deprecated("set_autocast_cpu_enabled(enabled)", "set_autocast_enabled('cpu', enabled)", 874)
    set_autocast_enabled("cpu", enabled)


def get_autocast_cpu_dtype():
    _deprecated("get_autocast_cpu_dtype()", "get_autocast_dtype('cpu')", 1016)
    return get_autocast_dtype("cpu")


def set_autocast_cpu_dtype(dtype) -> None:
    _deprecated("set_autocast_cpu_dtype(dtype)", "set_autocast_dtype('cpu', dtype)", 967)
    set_autocast_dtype("cpu", dtype)


def get_autocast_gpu_dtype():
    _deprecated("get_autocast_gpu_dtype()", "get_autocast_dtype('cuda')", 1007)
    return get_autocast_dtype("cuda")


def set_autocast_gpu_dtype(dtype) -> None:
    _deprecated("set_autocast_gpu_dtype(dtype)", "set_autocast_dtype('cuda', dtype)", 952)
    set_autocast_dtype("cuda", dtype)


def is_autocast_cache_enabled() -> bool:
    return _state.cache_enabled


def set_autocast_cache_enabled(enabled: bool) -> None:
    _state.cache_enabled = bool(enabled)


def clear_autocast_cache() -> None:
    _state.cache.clear()


def autocast_increment_nesting() -> int:
    _state.nesting += 1
    return _state.nesting


def autocast_decrement_nesting() -> int:
    _state.nesting -= 1
    return _state.nesting


# -- the context manager ------------------------------------------------------------------------
class autocast:  # noqa: N801 - torch's name
    """Run the ops of a region (a ``with`` block or a decorated function) in mixed precision.

    ``dtype`` defaults to ``get_autocast_dtype(device_type)`` (bfloat16 on the CPU, float16 on
    CUDA); the CPU takes bfloat16 and float16 and disables itself, warning, for another.
    ``cache_enabled`` keeps the casts of leaf tensors that require grad (the weights) for the
    whole outermost region.
    """

    def __init__(self, device_type: str, dtype=None, enabled: bool = True,
                 cache_enabled: bool | None = None):
        if not isinstance(device_type, str):
            raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
        self.fast_dtype = get_autocast_dtype(device_type) if dtype is None else dtype
        self.device = device_type
        self._cache_enabled = (is_autocast_cache_enabled() if cache_enabled is None
                               else cache_enabled)
        name = device_type.upper()
        if enabled:
            if device_type == "cuda":
                from .. import cuda
                if not cuda.is_available():
                    warnings.warn("CUDA is not available or torch_xla is imported. Disabling "
                                  "autocast.", stacklevel=2)
                    enabled = False
            elif self.fast_dtype not in (D.bfloat16, D.float16):
                warnings.warn(f"In {name} autocast, but the target dtype is not supported. "
                              f"Disabling autocast.\n{name} Autocast only supports dtypes of "
                              "ember.bfloat16, ember.float16 currently.", stacklevel=2)
                enabled = False
        self._enabled = enabled

    def __enter__(self):
        self.prev_cache_enabled = is_autocast_cache_enabled()
        self.prev = is_autocast_enabled(self.device)
        self.prev_fastdtype = get_autocast_dtype(self.device)
        set_autocast_enabled(self.device, self._enabled)
        set_autocast_dtype(self.device, self.fast_dtype)
        autocast_increment_nesting()
        set_autocast_cache_enabled(self._cache_enabled)
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        if autocast_decrement_nesting() == 0:
            clear_autocast_cache()
        set_autocast_enabled(self.device, self.prev)
        set_autocast_dtype(self.device, self.prev_fastdtype)
        set_autocast_cache_enabled(self.prev_cache_enabled)
        return False

    def __call__(self, func):
        if not callable(func):
            raise TypeError(
                f"autocast()(func) requires a callable, but got {type(func).__name__}. Did you "
                "mean to use autocast as a context manager? For example:\n"
                "    with ember.autocast(device_type=...):\n"
                "        output = model(input)")
        return autocast_decorator(self, func)


def autocast_decorator(autocast_instance, func):
    @functools.wraps(func)
    def decorate_autocast(*args, **kwargs):
        with autocast_instance:
            return func(*args, **kwargs)
    return decorate_autocast


# -- casting ------------------------------------------------------------------------------------
def _tensors(values):
    from .._tensor import Tensor
    for v in values:
        if isinstance(v, Tensor):
            yield v
        elif isinstance(v, (list, tuple)):
            yield from _tensors(v)


def _eligible(t, kind):
    return t.dtype.is_floating_point and t.device.type == kind and t.dtype is not D.float64


def _cast_to(t, dtype, kind, use_cache):
    if not _eligible(t, kind) or t.dtype is dtype:
        return t
    if not (use_cache and t.dtype is D.float32 and t.requires_grad and t.is_leaf
            and t._base is None and _state.cache_enabled):
        return t.to(dtype)
    hit = _state.cache.get(id(t))
    if hit is None or hit[0] is not t:
        hit = _state.cache[id(t)] = (t, t.to(dtype))
    return hit[1]


def _map(value, cast):
    from .._tensor import Tensor
    if isinstance(value, Tensor):
        return cast(value)
    if isinstance(value, (list, tuple)) and any(True for _ in _tensors(value)):
        return type(value)(_map(v, cast) for v in value)
    return value


def _promoted(tensors, kind, low):
    """The widest floating dtype among the eligible tensors, as torch's autocast finds it."""
    out = low
    for t in tensors:
        if not _eligible(t, kind):
            continue
        if t.dtype is D.float32 or out is D.float32:
            out = D.float32
        elif not (t.dtype is low and out is low):
            raise RuntimeError("Unexpected floating ScalarType in at::autocast::prioritize")
    return out


def _cast_arguments(name, args, kwargs):
    first = next(_tensors(list(args) + list(kwargs.values())), None)
    if first is None:
        return args, kwargs
    kind = first.device.type
    if not _state.enabled.get(kind):
        return args, kwargs
    rule = _policy.rule(kind, name)
    if rule is None:
        return args, kwargs
    low = get_autocast_dtype(kind)
    if rule == _policy.FP32_SET_OPT_DTYPE:
        if kwargs.get("dtype") is not None:
            return args, kwargs
        target, use_cache = D.float32, False
    elif rule == _policy.LOWER:
        target, use_cache = low, True
    elif rule == _policy.FP32:
        target, use_cache = D.float32, False
    else:  # PROMOTE
        target = _promoted(list(_tensors(list(args) + list(kwargs.values()))), kind, low)
        use_cache = False

    def cast(t):
        return _cast_to(t, target, kind, use_cache)
    return (tuple(_map(a, cast) for a in args),
            {k: _map(v, cast) for k, v in kwargs.items()})


def _wrap(fn, name, packed=False):
    """``fn`` casting its arguments by ``name``'s rule while autocast is on in this thread
    (``packed``: a registry op's caller, taking the arguments as one tuple)."""
    if packed:
        def autocast_caller(args):
            st = _state
            if st.inside or not st.enabled:
                return fn(args)
            args, _ = _cast_arguments(name, args, {})
            st.inside = True
            try:
                return fn(args)
            finally:
                st.inside = False
        return autocast_caller

    def autocast_op(*args, **kwargs):
        st = _state
        if st.inside or not st.enabled:
            return fn(*args, **kwargs)
        args, kwargs = _cast_arguments(name, args, kwargs)
        st.inside = True
        try:
            return fn(*args, **kwargs)
        finally:
            st.inside = False
    # (functools.wraps would copy an op object's whole __dict__)
    autocast_op.__name__ = autocast_op.__qualname__ = getattr(fn, "__name__", name)
    autocast_op.__doc__ = getattr(fn, "__doc__", None)
    autocast_op.__wrapped__ = fn
    return autocast_op


# -- custom autograd functions ------------------------------------------------------------------
def _cast(value, device_type, dtype):
    from .._tensor import Tensor
    if isinstance(value, Tensor):
        eligible = (value.is_floating_point() and value.device.type == device_type
                    and value.dtype is not D.float64)
        return value.to(dtype) if eligible else value
    if isinstance(value, (str, bytes)) or type(value).__module__ == "numpy":
        return value
    if isinstance(value, collections.abc.Mapping):
        return {_cast(k, device_type, dtype): _cast(v, device_type, dtype)
                for k, v in value.items()}
    if isinstance(value, collections.abc.Iterable):
        items = (_cast(v, device_type, dtype) for v in value)
        return type(value)(items) if isinstance(value, (list, tuple)) else items
    return value


def custom_fwd(fwd=None, *, device_type: str, cast_inputs=None):
    """Decorate a custom Function's ``forward``: it records the autocast state for
    ``backward`` and, with ``cast_inputs``, runs on inputs cast to it with autocast off."""
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    if fwd is None:
        return functools.partial(custom_fwd, device_type=device_type, cast_inputs=cast_inputs)

    @functools.wraps(fwd)
    def decorate_fwd(*args, **kwargs):
        ctx = args[0]
        ctx._dtype = get_autocast_dtype(device_type)
        if cast_inputs is None:
            ctx._fwd_used_autocast = is_autocast_enabled(device_type)
            return fwd(*args, **kwargs)
        autocast_context = is_autocast_enabled(device_type)
        ctx._fwd_used_autocast = False
        if autocast_context:
            with autocast(device_type=device_type, enabled=False):
                return fwd(*_cast(args, device_type, cast_inputs),
                           **_cast(kwargs, device_type, cast_inputs))
        return fwd(*args, **kwargs)
    return decorate_fwd


def custom_bwd(bwd=None, *, device_type: str):
    """Decorate a custom Function's ``backward``: it runs with the autocast state its
    ``forward`` (decorated with :func:`custom_fwd`) ran with."""
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    if bwd is None:
        return functools.partial(custom_bwd, device_type=device_type)

    @functools.wraps(bwd)
    def decorate_bwd(*args, **kwargs):
        ctx = args[0]
        with autocast(device_type=device_type, enabled=ctx._fwd_used_autocast,
                      dtype=ctx._dtype):
            return bwd(*args, **kwargs)
    return decorate_bwd
