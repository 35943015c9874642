"""``__torch_function__``: Tensor subclasses, tensor-like objects and TorchFunctionMode.

torch's protocol: a call whose arguments include an object whose type defines
``__torch_function__`` (a Tensor subclass, or any class) hands the call to that method,
``cls.__torch_function__(func, types, args, kwargs)``; the default one, ``Tensor``'s, runs the
call with subclass dispatch disabled and returns its tensors as the most derived subclass.
An active :class:`TorchFunctionMode` sees every call first.

Where ember dispatches (nothing of it runs for plain Tensors and Parameters until a Tensor
subclass with ``__torch_function__`` behaviour is defined or a mode entered):

- every public function (``ember.add``, ``F.linear``, ``linalg``, ``fft``, ``special``): the
  function object's code becomes a call of its dispatching path (``route_public``), ``func``
  the function itself with the call's own arguments, as torch's;
- every op of the registry, whatever calls it (``Tensor.add``, ``x + y``, ember's own
  composites): the op's Tensor path, ``op.caller``, becomes a property that routes a call with
  such arguments here (``route_ops``). ``func`` is then the op itself (its ``__name__`` torch's
  name), called with the op's arguments: what a handler sees of an op reached by no public
  function nor subclass method;
- every public method, operator and property of a Tensor subclass (``y.add(1)``, ``y + 1``,
  ``y[0]``, ``y.T``): the subclass gets methods that dispatch with ``func`` torch's
  (``Tensor.add``, ``Tensor.__getitem__``, ``Tensor.T.__get__``), installed when the class is
  made, so that ``Tensor``'s own methods stay as they are; while a mode is open, Tensor's own
  dispatch the same way (``_route_tensor``);
- the ``ember.*`` functions of torch's parser, for objects that are not tensors (torch's
  ``ScalarTensor`` example): a call that failed on them is handed to their
  ``__torch_function__`` with ``func`` the public function.
"""
from __future__ import annotations

import contextlib
import functools
import inspect
import threading
import types
import warnings

from ._state import function_mode, set_hook, state
from ._tensor import Tensor

__all__ = ["get_ignored_functions", "get_overridable_functions", "get_testing_overrides",
           "handle_torch_function", "has_torch_function", "has_torch_function_unary",
           "has_torch_function_variadic", "is_tensor_like", "is_tensor_method_or_property",
           "wrap_torch_function", "TorchFunctionMode", "BaseTorchFunctionMode",
           "enable_reentrant_dispatch", "get_default_nowrap_functions", "resolve_name",
           "DisableTorchFunction", "DisableTorchFunctionSubclass"]

# -- the switches -------------------------------------------------------------------------------
def _disabled_torch_function_impl(func, types, args=(), kwargs=None):
    """The ``__torch_function__`` of a type that takes no part in the protocol (Parameter):
    the call runs as for a plain Tensor."""
    with DisableTorchFunctionSubclass():
        return func(*args, **(kwargs or {}))


class _Disabled:
    """Context manager setting ``state.torch_function_off`` to at least ``level``."""

    level = 0

    def __enter__(self):
        self._before = state.torch_function_off
        state.torch_function_off = max(self._before, self.level)
        return self

    def __exit__(self, *exc):
        state.torch_function_off = self._before
        return False


class DisableTorchFunctionSubclass(_Disabled):
    """Within it, Tensor subclasses' ``__torch_function__`` is not called (modes still are)."""

    level = 1


class DisableTorchFunction(_Disabled):
    """Within it, neither ``__torch_function__`` nor TorchFunctionMode is called."""

    level = 2


def _is_torch_function_enabled() -> bool:
    return state.torch_function_off == 0


def _is_torch_function_mode_enabled() -> bool:
    return state.torch_function_off < 2 and bool(state.function_modes)


# -- who overrides --------------------------------------------------------------------------------
def _overrides(cls) -> bool:
    """Whether objects of type ``cls`` take part in the protocol (a plain Tensor does not: its
    default ``__torch_function__`` is the plain call; nor a type that disabled it)."""
    if cls is Tensor:
        return False
    method = getattr(cls, "__torch_function__", None)
    return method is not None and method is not _disabled_torch_function_impl


_PLAIN = frozenset((Tensor, int, float, bool, complex, str, type(None)))
_PLAIN_NOT_TENSOR = _PLAIN - {Tensor}


def _get_overloaded_args(relevant_args, get_type_fn=None):
    """The arguments whose types define ``__torch_function__``, one per type, a subclass
    before its bases (in which order their ``__torch_function__`` is tried): a plain Tensor
    too, as torch's Python helper (its default handler runs the call)."""
    return _overloaded(relevant_args, get_type_fn or type, _PLAIN_NOT_TENSOR)


def _overloaded(relevant_args, get_type_fn=type, plain=_PLAIN):
    """``_get_overloaded_args`` less the types in ``plain`` (a plain Tensor, where torch's C
    functions leave it out)."""
    types, out = [], []
    for arg in relevant_args:
        cls = get_type_fn(arg)
        if cls in plain or cls in types or (cls is not Tensor and not _overrides(cls)):
            continue
        index = len(out)
        for k, old in enumerate(out):
            if issubclass(cls, get_type_fn(old)):
                index = k
                break
        types.append(cls)
        out.insert(index, arg)
    return out


def _flat(args, kwargs=None):
    """The arguments a call's dispatch looks at: each one, and the items of a list or tuple
    (``cat([x, y])``), as torch's parser reads its Tensor and TensorList parameters."""
    for a in args:
        if type(a) in (list, tuple):
            yield from a
        else:
            yield a
    if kwargs:
        yield from _flat(kwargs.values())


def has_torch_function(relevant_args) -> bool:
    """Whether a call with ``relevant_args`` would be handed to ``__torch_function__``."""
    off = state.torch_function_off
    if off == 2:
        return False
    if state.function_modes:
        return True
    return off == 0 and any(_overrides(type(a)) for a in relevant_args)


def has_torch_function_unary(obj) -> bool:
    """``has_torch_function((obj,))``."""
    return has_torch_function((obj,))


def has_torch_function_variadic(*args) -> bool:
    """``has_torch_function(args)``."""
    return has_torch_function(args)


def is_tensor_like(inp) -> bool:
    """Whether ``inp`` is a Tensor or an object whose type defines ``__torch_function__``."""
    return type(inp) is Tensor or hasattr(inp, "__torch_function__")


def _qualified_name(func, python=False):
    """How torch's error names ``func``: its C functions by their qualified names
    (``torch.Tensor.exp``), a Python function by its module and name."""
    from ._ops.registry import OpDef
    if isinstance(func, OpDef):
        return f"ember.{func.name}"
    owner = getattr(func, "__self__", None)  # (a property's __get__)
    if isinstance(owner, property) and owner.fget is not None:
        return f"ember.Tensor.{owner.fget.__name__}.__get__"
    module = getattr(func, "__module__", None) or "ember"
    name = getattr(func, "__name__", func)
    return f"{module}.{name if python else getattr(func, '__qualname__', name)}"


def handle_torch_function(public_api, relevant_args, *args, **kwargs):
    """Call ``public_api(*args, **kwargs)`` through the ``__torch_function__`` of the modes
    and of the overriding types among ``relevant_args``: the first result that is not
    NotImplemented, else torch's TypeError."""
    overloaded = _get_overloaded_args(relevant_args) if state.torch_function_off == 0 else []
    return _handle(public_api, overloaded, args, kwargs, python=True)


def _handle(public_api, overloaded, args, kwargs, python=False):
    """``handle_torch_function`` with the overriding arguments found, ``kwargs`` None where
    torch's C functions hand None (no keyword given); the error when every handler returned
    NotImplemented is torch's C functions' unless ``python``."""
    types = tuple(map(type, overloaded))
    mode_on = _is_torch_function_mode_enabled()
    if mode_on:
        with _pop_mode_temporarily() as mode:
            result = mode.__torch_function__(public_api, types, args, kwargs)
        if result is not NotImplemented:
            return result
    for arg in overloaded:
        method = arg.__torch_function__
        if getattr(method, "__self__", None) is arg:
            warnings.warn("Defining your `__torch_function__ as a plain method is deprecated and "
                          "will be an error in future, please define it as a classmethod.",
                          DeprecationWarning, stacklevel=2)
        result = method(public_api, types, args, kwargs)
        if result is not NotImplemented:
            return result
    if not python:
        lines = [f"  - mode object {_get_current_function_mode()!r}"] if mode_on else []
        lines += [f"  - tensor subclass {type(a)!r}" for a in overloaded]
        raise TypeError(f"Multiple dispatch failed for '{_qualified_name(public_api)}'; all "
                        "__torch_function__ handlers returned NotImplemented:\n\n"
                        + "".join(line + "\n" for line in lines)
                        + "\nFor more information, try re-running with "
                        "TORCH_LOGS=not_implemented")
    msg = (f"no implementation found for '{_qualified_name(public_api, True)}' on types that "
           f"implement __torch_function__: {[type(a) for a in overloaded]}")
    if mode_on:
        msg += f" nor in mode {_get_current_function_mode()}"
    raise TypeError(msg)


def _dispatched(func, args, kwargs, run=None):
    """``func(*args, **kwargs)``, through ``__torch_function__`` where the call has an
    overriding argument or a mode is on (the handlers see ``func``; ``run``, if given, is
    what runs the call otherwise)."""
    off = state.torch_function_off
    if off < 2:
        overloaded = _call_overloaded(args, kwargs) if off == 0 else ()
        if overloaded or state.function_modes:
            return _handle(func, overloaded, args, kwargs or None)
    return (run or func)(*args, **(kwargs or {}))


def _call_overloaded(args, kwargs=None):
    """``_overloaded`` of a call's arguments, after a look at their types that finds none in
    most calls (plain tensors and numbers) without flattening them."""
    for a in (*args, *kwargs.values()) if kwargs else args:
        cls = type(a)
        if cls not in _PLAIN and (_overrides(cls) if cls not in (list, tuple) else any(
                type(b) not in _PLAIN and _overrides(type(b)) for b in a)):
            return _overloaded(_flat(args, kwargs))
    return ()


# -- the default: Tensor.__torch_function__ --------------------------------------------------
@functools.cache
def get_default_nowrap_functions():
    """The functions whose results the default ``__torch_function__`` leaves as they are."""
    # (torch's _base and _grad too: ember's are plain attributes, read without dispatch)
    return frozenset((vars(Tensor)["grad"].__get__,))


def _convert(ret, cls):
    """``ret``'s tensors (also inside tuples and lists) as instances of ``cls``."""
    if cls is Tensor:
        return ret
    if isinstance(ret, Tensor) and not isinstance(ret, cls):
        ret = ret.as_subclass(cls)
    if isinstance(ret, (tuple, list)):
        items = [_convert(r, cls) for r in ret]
        make = getattr(type(ret), "_make", None)  # (a named tuple: torch's return types)
        ret = make(items) if make is not None else type(ret)(items)
    return ret


def _tensor_torch_function(cls, func, types, args=(), kwargs=None):
    """Run ``func`` without subclass dispatch, its tensors returned as ``cls`` (but for the
    functions of ``get_default_nowrap_functions``, as ``.grad``: a plain Tensor)."""
    if kwargs is None:
        kwargs = {}
    if not all(issubclass(cls, t) for t in types):
        return NotImplemented
    with DisableTorchFunctionSubclass():
        ret = func(*args, **kwargs)
        if func in get_default_nowrap_functions():
            return ret
        return _convert(ret, cls)


Tensor.__torch_function__ = classmethod(_tensor_torch_function)


# -- modes --------------------------------------------------------------------------------------
_mode_count = [0]
_mode_lock = threading.Lock()


def _count_modes(change):
    """Count the modes open (all threads together): while one is, the generated operators
    take their general path and Tensor's own methods dispatch (see _route_tensor)."""
    if change > 0:
        route_ops()
    with _mode_lock:
        before = _mode_count[0]
        _mode_count[0] += change
        set_hook(function_mode, _mode_count[0] or None)
        if not before or not _mode_count[0]:
            _route_tensor(bool(_mode_count[0]))


def _push_mode(mode):
    state.function_modes = state.function_modes + (mode,)
    _count_modes(1)


def _pop_mode():
    modes = state.function_modes
    if not modes:
        raise RuntimeError("Trying to pop from an empty mode stack")
    state.function_modes = modes[:-1]
    _count_modes(-1)
    return modes[-1]


@contextlib.contextmanager
def _pop_mode_temporarily():
    """The innermost mode off while its handler runs (not counted as closed: Tensor's methods
    stay routed, see _count_modes)."""
    modes = state.function_modes
    if not modes:
        raise RuntimeError("Trying to pop from an empty mode stack")
    state.function_modes = modes[:-1]
    try:
        yield modes[-1]
    finally:
        state.function_modes = state.function_modes + modes[-1:]


def _get_current_function_mode():
    """The innermost active TorchFunctionMode, or None."""
    modes = state.function_modes
    return modes[-1] if modes else None


def _len_torch_function_stack():
    return len(state.function_modes)


def _get_function_stack_at(i):
    return state.function_modes[i]


_push_on_torch_function_stack = _push_mode
_pop_torch_function_stack = _pop_mode


def _get_current_function_mode_stack():
    """The active TorchFunctionModes, outermost first."""
    return list(state.function_modes)


class TorchFunctionMode:
    """A context manager whose ``__torch_function__(func, types, args, kwargs)`` sees every
    call of the protocol made within it (the mode itself off while it runs)."""

    def __init__(self):
        pass

    def __torch_function__(self, func, types, args=(), kwargs=None):
        raise NotImplementedError

    def __enter__(self):
        _push_mode(self)
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        _pop_mode()

    @classmethod
    def push(cls, *args, **kwargs):
        warnings.warn("`Mode.push()` is no longer necessary and can be replaced with just "
                      "`with Mode()`", stacklevel=2)
        return cls(*args, **kwargs)


class BaseTorchFunctionMode(TorchFunctionMode):
    """A mode that runs every call as it is (a base to override a few functions on)."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        return func(*args, **(kwargs or {}))


@contextlib.contextmanager
def enable_reentrant_dispatch():
    """Kept for torch's API: ember's dispatch needs no re-entrancy guard."""
    yield


def wrap_torch_function(dispatcher):
    """Decorate a function so that it takes part in the protocol: ``dispatcher`` (called
    with the same arguments) returns the arguments to look at."""
    def inner(func):
        @functools.wraps(func)
        def wrapped(*args, **kwargs):
            relevant = dispatcher(*args, **kwargs)
            if has_torch_function(relevant):
                return handle_torch_function(wrapped, relevant, *args, **kwargs)
            return func(*args, **kwargs)
        return wrapped
    return inner


# -- where ember dispatches: the ops ----------------------------------------------------------
_ops_routed = [False]


def route_ops():
    """From now on, every op call on tensors passes ``_op_call`` (what a Tensor subclass with
    ``__torch_function__`` behaviour, or a mode, needs): ``op.caller``, the op's Tensor path
    every caller takes, becomes a property giving the path through it. Until then no op
    pays anything for the protocol."""
    if _ops_routed[0]:
        return
    from ._ops.registry import OpDef
    OpDef.caller = _routed_path("caller", "_torch_function_caller", _op_caller,
                                "The op's Tensor path, through __torch_function__.")
    OpDef.inplace_caller = _routed_path("inplace_caller", "_torch_function_inplace",
                                        _inplace_caller,
                                        "The op's in-place path, through __torch_function__.")
    _ops_routed[0] = True
    route_public()


def _routed_path(attr, cached, make, doc):
    """An OpDef attribute (``caller`` or ``inplace_caller``) as a property: reading it gives
    the path through ``__torch_function__`` (``make(op)``, kept in ``cached``), writing it sets
    the op's own path, which that routed path calls."""
    def get(op):
        call = op.__dict__.get(cached)
        if call is None or call.op is not op:  # (a list op's copy has its own)
            call = op.__dict__[cached] = make(op)
        return call

    def set_(op, value):
        # putting back what was read (``saved = op.caller; ...; op.caller = saved``, as
        # monkeypatch does) hands in the routed path itself: the op's own path is then the
        # generated one again (made anew on its next call), never the routed path, which
        # would call itself
        if value is not None and value is op.__dict__.get(cached):
            value = None
        op.__dict__[attr] = value
    return property(get, set_, doc=doc)


def _routed(op, func, real):
    """``op``'s path ``real(args)`` (its Tensor path, or in-place path), through
    ``__torch_function__`` for a call with overriding arguments or under a mode, ``func`` the
    function the handlers see."""
    def call(args):
        off = state.torch_function_off
        if off < 2:
            overloaded = _call_overloaded(args) if off == 0 else ()
            if overloaded or state.function_modes:
                return _handle(func, overloaded, _given(op, args), None)
        return real(op)(args)
    call.op = op
    return call


def _op_caller(op):
    from ._ops.registry import tensor_caller
    return _routed(op, op, tensor_caller)


def _inplace_caller(op):
    def inplace(*args, **kwargs):  # (what the handlers see of x.add_(y): "add_")
        return op.inplace(*args, **kwargs)
    inplace.__name__ = inplace.__qualname__ = op.name + "_"
    inplace.__module__ = "ember.Tensor"
    return _routed(op, inplace, _real_inplace_caller)


def _real_inplace_caller(op):
    from ._ops.inplace import _compile_inplace
    call = op.__dict__["inplace_caller"]
    if call is None:
        call = op.inplace_caller = _compile_inplace(op)
    return call


def _given(op, args):
    """An op's full arguments less the trailing ones left at their defaults (the call as
    written, usually: ``add(x, y)``, not ``add(x, y, 1)``)."""
    defaults = getattr(op, "defaults", None)
    n = len(args)
    if defaults is not None and len(defaults) == n:
        while n and args[n - 1] is defaults[n - 1]:
            n -= 1
    return tuple(args[:n])  # (a call whose keywords were bound passes a list)


# -- where ember dispatches: nn.functional's Python functions ----------------------------------
# The nn.functional functions torch writes in Python, with has_torch_function at their top:
# {name: (the parameters whose types are looked at, how many parameters its
# handle_torch_function call passes by position)}; the rest it passes by keyword, as here.
# (the others, C functions in torch, hand the call as given: see route_public)
_FUNCTIONAL = {
    **dict.fromkeys((
        "alpha_dropout celu dropout dropout1d dropout2d dropout3d elu feature_alpha_dropout glu "
        "hardsigmoid hardswish hardtanh leaky_relu log_softmax mish relu relu6 rrelu selu silu "
        "softmax softmin softsign tanhshrink").split(), (("input",), 1)),
    **dict.fromkeys((
        "adaptive_avg_pool2d adaptive_avg_pool3d adaptive_max_pool1d_with_indices "
        "adaptive_max_pool2d_with_indices adaptive_max_pool3d_with_indices "
        "local_response_norm max_pool1d_with_indices max_pool2d_with_indices "
        "max_pool3d_with_indices pad unfold").split(), (("input",), 2)),
    **dict.fromkeys("fold lp_pool1d lp_pool2d lp_pool3d max_unpool1d max_unpool2d "
                    "max_unpool3d".split(), (("input",), 3)),
    **dict.fromkeys("hinge_embedding_loss kl_div multilabel_margin_loss poisson_nll_loss "
                    "smooth_l1_loss soft_margin_loss".split(), (("input", "target"), 2)),
    **dict.fromkeys("binary_cross_entropy cross_entropy huber_loss mse_loss multi_margin_loss "
                    "multilabel_soft_margin_loss nll_loss".split(),
                    (("input", "target", "weight"), 2)),
    **dict.fromkeys(("cosine_embedding_loss", "margin_ranking_loss"),
                    (("input1", "input2", "target"), 3)),
    **dict.fromkeys(("triplet_margin_loss", "triplet_margin_with_distance_loss"),
                    (("anchor", "positive", "negative"), 3)),
    **dict.fromkeys(("fractional_max_pool2d_with_indices", "fractional_max_pool3d_with_indices"),
                    (("input", "_random_samples"), 2)),
    "affine_grid": (("theta",), 2),
    "batch_norm": (("input", "running_mean", "running_var", "weight", "bias"), 3),
    "instance_norm": (("input", "running_mean", "running_var", "weight", "bias"), 1),
    "binary_cross_entropy_with_logits": (("input", "target", "weight", "pos_weight"), 2),
    "ctc_loss": (("log_probs", "targets", "input_lengths", "target_lengths"), 4),
    "embedding": (("input", "weight"), 2),
    "embedding_bag": (("input", "weight", "offsets", "per_sample_weights"), 2),
    "gaussian_nll_loss": (("input", "target", "var"), 3),
    "grid_sample": (("input", "grid"), 2),
    "group_norm": (("input", "weight", "bias"), 2),
    "gumbel_softmax": (("logits",), 1),
    "layer_norm": (("input", "weight", "bias"), 2),
    "linear_cross_entropy": (("input", "linear_weight", "target", "linear_bias", "weight"), 3),
    "rms_norm": (("input", "weight"), 2),
}


# torch.functional's functions (Python in torch) whose handle_torch_function call passes some
# parameters by keyword: as _FUNCTIONAL (those taking *tensors pass them as given, as here)
_TORCH_FUNCTIONAL = {
    **dict.fromkeys(("norm", "unique", "unique_consecutive"), (("input",), 1)),
    "lu": (("A",), 1),
    "unravel_index": (("indices",), 1),
    "split": (("tensor",), 2),
    "stft": (("input",), 2),
    "tensordot": (("a", "b"), 2),
    "cdist": (("x1", "x2"), 2),
}


def route_public():
    """``route_ops`` for the public functions (``ember.*``, ``nn.functional``, ``linalg``,
    ``fft``, ``special``): each starts handing a call with an overriding argument, or any call
    under a mode, to the handlers with ``func`` itself, called with the call's own arguments,
    as torch's functions do (until then their calls pay nothing). nn.functional's functions of
    ``_FUNCTIONAL`` pass them as torch's Python functions pass them; the others as given (as
    torch's C functions do: ``add(y, 1)``, ``{'alpha': 2}``), all but those torch runs
    without dispatch (``_RUN_WITHOUT_DISPATCH``)."""
    import ember
    from .nn import functional
    for name, (relevant, n_positional) in _FUNCTIONAL.items():
        public = getattr(functional, name)
        if _route(public, lambda public, own: _functional_dispatching(
                public, own, relevant, n_positional)):
            public.__module__ = functional.__name__  # (the name torch's error gives)
    for name, (relevant, n_positional) in _TORCH_FUNCTIONAL.items():
        _route(getattr(ember, name), lambda public, own: _functional_dispatching(
            public, own, relevant, n_positional))
    for namespace, prefix in _namespaces().items():
        left_out = _RUN_WITHOUT_DISPATCH.get(prefix, ())
        for name, public in _public_callables(namespace) if namespace is not Tensor else ():
            if name not in left_out:
                _route(public, _public_dispatching)


# the public functions that torch runs without dispatch (settings, Python helpers), by
# namespace: they stay as they are
_RUN_WITHOUT_DISPATCH = {
    "ember": frozenset((
        "are_deterministic_algorithms_enabled autocast_decrement_nesting "
        "autocast_increment_nesting broadcast_shapes clear_autocast_cache compile eig "
        "from_dlpack get_autocast_cpu_dtype get_autocast_dtype get_autocast_gpu_dtype "
        "get_default_device get_default_dtype get_deterministic_debug_mode get_device_module "
        "get_float32_matmul_precision get_num_interop_threads get_num_threads get_printoptions "
        "get_rng_state initial_seed is_anomaly_check_nan_enabled is_anomaly_enabled "
        "is_autocast_cache_enabled is_autocast_cpu_enabled is_autocast_enabled "
        "is_deterministic_algorithms_warn_only_enabled is_grad_enabled "
        "is_inference_mode_enabled is_storage is_tensor is_warn_always_enabled load lstsq "
        "manual_seed matrix_rank save seed set_anomaly_enabled set_autocast_cache_enabled "
        "set_autocast_cpu_dtype set_autocast_cpu_enabled set_autocast_dtype "
        "set_autocast_enabled set_autocast_gpu_dtype set_default_device set_default_dtype "
        "set_default_tensor_type set_deterministic_debug_mode set_flush_denormal "
        "set_float32_matmul_precision set_grad_enabled set_num_interop_threads "
        "set_num_threads set_printoptions set_rng_state set_warn_always solve symeig "
        "to_dlpack typename use_deterministic_algorithms vmap").split()),
    "ember.nn.functional": frozenset(
        ("assert_int_or_pair", "upsample", "upsample_bilinear", "upsample_nearest")),
    "ember.fft": frozenset(("check_pin_memory",)),
    "ember.special": frozenset(("refusing_arrays",)),
}


def _route(public, make):
    """Make ``public`` (a function of ember's) run ``make(public, own)``, where ``own`` is a
    copy of it: the function object stays the same (a default argument ``activation=F.relu``
    or a handler's table still finds it), its code becomes a call of the dispatching path.
    Returns ``own``, or None for what is left as it is: not a Python function of ember's,
    one routed already, one that dispatches itself (``broadcast_tensors``)."""
    module = (public.__module__ or "") if type(public) is types.FunctionType else ""
    if (not (module == "ember" or module.startswith("ember."))
            or "_dispatching" in (public.__kwdefaults__ or ())
            or "has_torch_function" in public.__code__.co_names):
        return None
    own = types.FunctionType(public.__code__, public.__globals__, public.__name__,
                             public.__defaults__, public.__closure__)
    own.__kwdefaults__ = public.__kwdefaults__
    own.__dict__.update(vars(public))
    own.__qualname__, own.__doc__ = public.__qualname__, public.__doc__
    public.__wrapped__ = own  # (its signature, for inspect)
    public.__code__ = _calls_dispatching_code(len(public.__code__.co_freevars))
    public.__defaults__ = None
    public.__kwdefaults__ = {"_dispatching": make(public, own)}
    return own


def _calls_dispatching(*args, _dispatching, **kwargs):
    """The code of a routed public function (``_dispatching`` its own keyword default: code
    with no free variables fits any function)."""
    return _dispatching(*args, **kwargs)


@functools.cache
def _calls_dispatching_code(n_free):
    """``_calls_dispatching``'s code for a function with ``n_free`` free variables (a closure,
    such as the functions that raise torch's parser errors): Python replaces a function's code
    only with code of as many, which this code names and never reads."""
    if not n_free:
        return _calls_dispatching.__code__
    names = ", ".join(f"_free{i}" for i in range(n_free))
    source = (f"def outer():\n    {names} = {(None,) * n_free}\n"
              "    def _calls_dispatching(*args, _dispatching, **kwargs):\n"
              f"        if False:\n            ({names},)\n"
              "        return _dispatching(*args, **kwargs)\n"
              "    return _calls_dispatching\n")
    scope = {}
    exec(compile(source, __file__, "exec"), scope)  # noqa: S102 - generated code
    return scope["outer"]().__code__


def _public_dispatching(public, own):
    """``own`` dispatching as torch's C function ``public`` does: the handlers see
    ``public`` with the call's own arguments (``kwargs`` None when none is given)."""
    def dispatching(*args, **kwargs):
        return _dispatched(public, args, kwargs, own)
    return dispatching


def _functional_dispatching(public, fn, relevant, n_positional):
    """``fn`` dispatching through ``__torch_function__`` as torch's Python function
    ``public`` does: the handlers see ``public``, called as torch's calls
    ``handle_torch_function`` (its first ``n_positional`` parameters by position, the others
    by keyword)."""
    signature = inspect.signature(fn)
    names = list(signature.parameters)

    def dispatching(*args, **kwargs):
        off = state.torch_function_off
        if off < 2 and (state.function_modes or off == 0 and _overloaded(_flat(args, kwargs))):
            bound = signature.bind(*args, **kwargs)
            bound.apply_defaults()
            given = bound.arguments
            relevant_args = tuple(given[n] for n in relevant)
            if has_torch_function(relevant_args):
                return handle_torch_function(
                    public, relevant_args, *(given[n] for n in names[:n_positional]),
                    **{n: given[n] for n in names[n_positional:]})
        return fn(*args, **kwargs)
    return dispatching


# -- where ember dispatches: a Tensor subclass's methods ----------------------------------------
# the special methods of Tensor that dispatch on a subclass, as torch's do (its public methods
# and properties all do)
_SPECIAL = frozenset(f"__{n}__" for n in (
    "add radd iadd sub rsub isub mul rmul imul truediv rtruediv itruediv floordiv rfloordiv "
    "ifloordiv mod rmod imod pow rpow ipow matmul rmatmul imatmul and rand iand or ror ior xor "
    "rxor ixor lshift rlshift ilshift rshift rrshift irshift eq ne lt le gt ge neg pos abs "
    "invert getitem setitem repr format len iter contains reversed bool float int index "
    "complex deepcopy").split())
# public names that do not dispatch in torch either
_NOT_DISPATCHED = frozenset(("as_subclass", "__torch_function__"))


# the operators whose call torch's handler sees as a method's (x + y as Tensor.add(x, y)):
# those torch's C tensor implements with that method's parser
_OPERATOR_METHODS = {
    "__add__": "add", "__radd__": "add", "__mul__": "mul", "__rmul__": "mul", "__sub__": "sub",
    "__truediv__": "div", "__mod__": "remainder", "__matmul__": "matmul",
    "__rand__": "bitwise_and", "__ror__": "bitwise_or", "__rxor__": "bitwise_xor",
    "__ne__": "ne", "__lt__": "lt", "__le__": "le", "__gt__": "gt", "__ge__": "ge",
    "__iadd__": "add_", "__isub__": "sub_", "__imul__": "mul_", "__itruediv__": "div_",
    "__ifloordiv__": "floor_divide_", "__imod__": "remainder_",
    # (unary)
    "__neg__": "neg", "__pos__": "positive", "__abs__": "abs",
}
_REFLECTED = frozenset(("__radd__", "__rmul__", "__rand__", "__ror__", "__rxor__"))


def _tensor_attributes():
    """(name, attribute) of Tensor's methods and properties that dispatch on a subclass."""
    for name, attr in vars(Tensor).items():
        if (name.startswith("_") and name not in _SPECIAL) or name in _NOT_DISPATCHED:
            continue
        if isinstance(attr, property) or (inspect.isfunction(attr)
                                          or inspect.isbuiltin(attr)):
            yield name, attr


def _static_lookup(cls, name):
    for base in cls.__mro__:
        if name in base.__dict__:
            return base.__dict__[name]
    return None


def _subclass_made(cls):
    """``Tensor.__init_subclass__``: a subclass that takes part in the protocol gets
    Tensor's methods and properties that dispatch, where it does not define its own (its
    subclasses inherit them), and the ops start dispatching."""
    if not _overrides(cls):
        return
    if "_dispatches_torch_function" not in vars(cls) and not any(
            getattr(b, "_dispatches_torch_function", False) for b in cls.__mro__[1:]):
        for name, attr in _tensor_attributes():
            if _static_lookup(cls, name) is attr:
                setattr(cls, name, _dispatching(name, attr))
        cls._dispatches_torch_function = True
    route_ops()


def _dispatching(name, attr):
    """Tensor's method or property ``attr`` dispatching through ``__torch_function__``."""
    if isinstance(attr, property):
        get = attr.__get__

        def getter(self):
            return _dispatched(get, (self,), None)
        return property(getter, attr.fset, attr.fdel, attr.__doc__)
    from ._ops.registry import OPERANDS, OPERATORS, foreign_operand
    if name in OPERATORS:
        def operator(self, other):
            # an operand ember does not take, nor its __torch_function__: NotImplemented, as
            # Tensor's operator gives (``y == None`` compares identities)
            if not (isinstance(other, OPERANDS) or _overrides(type(other))):
                return foreign_operand(name, self, other)
            if method is None:
                return _dispatched(attr, (self, other), None)
            # (Python calls a subclass's reflected operator first, x + y as y.__radd__(x):
            # torch's handler sees add(x, y), a tensor on the left kept there)
            pair = (other, self) if name in _REFLECTED and isinstance(other, Tensor) else (
                self, other)
            return _dispatched(method, pair, None)
        method = vars(Tensor).get(_OPERATOR_METHODS.get(name, ""))
        operator.__name__ = operator.__qualname__ = name
        operator.__doc__ = attr.__doc__
        return operator

    if name == "__repr__":  # (torch's, in Python, hands its keyword on)
        def method(self, *, tensor_contents=None):
            return _dispatched(attr, (self,), {"tensor_contents": tensor_contents})
        functools.update_wrapper(method, attr)
        return method
    seen = vars(Tensor).get(_OPERATOR_METHODS.get(name, ""), attr)  # (-y as Tensor.neg)

    @functools.wraps(attr)
    def method(*args, **kwargs):
        return _dispatched(seen, args, kwargs)
    return method


def _route_tensor(on):
    """What a mode needs of a plain tensor's methods, operators and properties: while one is
    open (``on``), Tensor's own (the same objects: ``func is Tensor.add`` holds in a handler)
    hand a call under a mode, or with an overriding argument, to the handlers as a subclass's
    do (``x + 1`` as ``Tensor.add``, ``x[0]`` as ``Tensor.__getitem__``, ``x.shape`` as
    ``Tensor.shape.__get__``); once the last mode is closed they run their own code again, at
    no cost. Each function's two states are made once: switching sets its code."""
    if not _tensor_routes:
        if not on:
            return
        for name, attr in _tensor_attributes():
            public = attr.fget if isinstance(attr, property) else attr
            dispatching = _dispatching(name, attr)
            own = _route(public, lambda public, own, d=getattr(dispatching, "fget", dispatching):
                         _tensor_dispatching(d, own))
            if own is not None:
                _tensor_routes.append((public, own, (public.__code__, public.__defaults__,
                                                     public.__kwdefaults__)))
        return
    for public, own, routed in _tensor_routes:
        public.__code__, public.__defaults__, public.__kwdefaults__ = routed if on else (
            own.__code__, own.__defaults__, own.__kwdefaults__)


# (function, its own copy, its routed (code, defaults, kwdefaults)) of Tensor's methods and
# property getters, made when the first mode is entered
_tensor_routes = []


def _tensor_dispatching(dispatching, own):
    """``own``, a Tensor method's own code, with a call that needs dispatch sent to
    ``dispatching`` (what a subclass's method runs) instead."""
    def call(*args, **kwargs):
        off = state.torch_function_off
        if off < 2 and (state.function_modes or off == 0 and _call_overloaded(args, kwargs)):
            return dispatching(*args, **kwargs)
        return own(*args, **kwargs)
    return call


# -- where ember dispatches: objects that are not tensors ---------------------------------------
def foreign_overloaded(args, kwargs):
    """The arguments of a call that are no Tensor but define ``__torch_function__`` (a call
    that failed on them is handed to them: see _arg_parser._parsed)."""
    if state.torch_function_off:
        return ()
    return [a for a in _overloaded(_flat(args, kwargs)) if not isinstance(a, Tensor)]


def handle_foreign(func, overloaded, args, kwargs):
    """A failed call of ``func`` with arguments ``overloaded`` (see foreign_overloaded) handed
    to their ``__torch_function__``."""
    return _handle(func, overloaded, args, kwargs or None)


# -- what can be overridden ---------------------------------------------------------------------
# ember's public functions that take no tensor to dispatch on (factories, settings, checks of
# a type): torch lists them in get_ignored_functions
_IGNORED = (
    "arange range linspace logspace eye empty empty_like empty_strided full full_like zeros "
    "zeros_like ones ones_like rand rand_like randn randn_like randint randint_like randperm "
    "tensor as_tensor as_strided_copy from_numpy frombuffer asarray scalar_tensor "
    "sparse_coo_tensor "
    "tril_indices triu_indices normal poisson bernoulli manual_seed seed initial_seed "
    "get_rng_state set_rng_state is_tensor is_storage is_floating_point is_complex "
    "set_default_dtype get_default_dtype set_default_device get_default_device "
    "set_grad_enabled is_grad_enabled no_grad enable_grad inference_mode is_inference_mode_enabled "
    "set_printoptions get_num_threads set_num_threads promote_types result_type can_cast "
    "compile load save typename use_deterministic_algorithms "
    "are_deterministic_algorithms_enabled hann_window hamming_window bartlett_window "
    "blackman_window kaiser_window").split()


def _public_callables(namespace):
    for name in dir(namespace):
        if name.startswith("_"):
            continue
        attr = getattr(namespace, name, None)
        if callable(attr) and not isinstance(attr, type) and not inspect.ismodule(attr):
            yield name, attr


@functools.cache
def get_ignored_functions():
    """The public functions that ``__torch_function__`` cannot override."""
    import ember
    out = {f for name in _IGNORED if callable(f := getattr(ember, name, None))}
    out |= {vars(Tensor)[n] for n in ("as_subclass", "_make_subclass", "__init_subclass__",
                                      "__torch_function__") if n in vars(Tensor)}
    return frozenset(out)


def _namespaces():
    import ember
    from ember import fft, linalg, special
    from ember.nn import functional
    return {ember: "ember", functional: "ember.nn.functional", linalg: "ember.linalg",
            fft: "ember.fft", special: "ember.special", Tensor: "ember.Tensor"}


@functools.cache
def _overridable():
    """{namespace: {name: function}} of what ``__torch_function__`` can override; a Tensor
    property is there as its ``__get__``."""
    ignored = get_ignored_functions()
    out = {}
    for namespace in _namespaces():
        found = {}
        if namespace is Tensor:
            for name, attr in vars(Tensor).items():
                if name.startswith("_") and name not in _SPECIAL:
                    continue
                if isinstance(attr, property):
                    found[name] = attr.__get__
                elif callable(attr) and attr not in ignored and not isinstance(
                        attr, (type, classmethod, staticmethod)):
                    found[name] = attr
        else:
            found = {n: f for n, f in _public_callables(namespace) if f not in ignored}
        out[namespace] = found
    return out


def get_overridable_functions():
    """``{namespace: [functions]}`` of the functions ``__torch_function__`` can override."""
    return {ns: list(found.values()) for ns, found in _overridable().items()}


@functools.cache
def _tensor_methods():
    return frozenset(_overridable()[Tensor].values())


def is_tensor_method_or_property(func) -> bool:
    """Whether ``func`` is a Tensor method or a Tensor property's ``__get__``."""
    return func in _tensor_methods() or getattr(func, "__name__", None) == "__get__"


def resolve_name(f):
    """The name ``f`` has in its namespace (``ember.add``, ``ember.ones``, ``ember.Tensor.add``,
    ``ember.Tensor.shape.__get__``), or None."""
    try:
        return _names_of_functions().get(f)
    except TypeError:  # (unhashable)
        return None


@functools.cache
def _names_of_functions():
    """{function: its name} over the namespaces, the functions torch cannot override too (a
    mode sees ``ember.ones``); a Tensor property as its ``__get__``."""
    index = {}
    for namespace, prefix in _namespaces().items():
        if namespace is Tensor:
            found = [(n + ".__get__" if isinstance(a, property) else n,
                      a.__get__ if isinstance(a, property) else a)
                     for n, a in vars(Tensor).items()
                     if (not n.startswith("_") or n in _SPECIAL) and callable(
                         a.__get__ if isinstance(a, property) else a)
                     and not isinstance(a, (type, classmethod, staticmethod))]
        else:
            found = _public_callables(namespace)
        names = {}
        for name, f in found:  # (aliases, ``dim`` and ``ndimension``: the first)
            names.setdefault(f, f"{prefix}.{name}")
        index.update(names)  # (a function of two namespaces: the last one's, as torch's)
    return index


def get_testing_overrides():
    """``{function: dummy}`` for every overridable function: a dummy takes the function's
    arguments and returns -1 (a test's stand-in for an override)."""
    out = {}
    for found in _overridable().values():
        for f in found.values():
            out[f] = _dummy(f)
    return out


def _dummy(f):
    def dummy(*args, **kwargs):
        return -1
    try:
        dummy.__signature__ = inspect.signature(f)
    except (TypeError, ValueError):  # (a builtin without one)
        pass
    dummy.__name__ = dummy.__qualname__ = getattr(f, "__name__", "dummy")
    return dummy
