"""Guards: what a recording assumed about a call, checked before every replay.

A recording holds for a later call when the call looks the same in everything the function
could have read:

- its arguments: the nesting of lists, tuples and dicts; each tensor's type, shape, dtype,
  strides, array type (device), ``requires_grad``, view-ness and inference-ness; which
  arguments are the same array; every other argument by value (numbers, strings) or by
  identity;
- the world around it: grad mode, inference mode, the default dtype, and the values the
  function (and the Python functions it reaches) reads from its closure cells, its globals and
  ``self``: numbers and strings by value, containers element by element, tensors and other
  objects by identity, and modules by their state (``training``, the identity of every
  parameter, buffer and submodule, hooks, plain attributes).

An optimizer step changes parameters in place: their identity holds and replays read their
new values. Replacing a parameter, flipping ``train()``/``eval()`` or changing a global the
function reads makes the guards fail, and the function is recorded again.
"""
from __future__ import annotations

import math
import sys
import types

import numpy as np

from .. import _dtype as D
from .._state import state
from .._tensor import Tensor

_SIMPLE = (type(None), bool, int, float, complex, str, bytes, type(Ellipsis), slice)
_MAX_DEPTH = 4
_MAX_ITEMS = 2048
_LIBRARIES = ("ember", "numpy", "torch", "builtins", "functools", "typing", "abc")


def _is_library(obj):
    name = getattr(obj, "__module__", None) or getattr(obj, "__name__", "") or ""
    top = name.split(".")[0]
    return top in _LIBRARIES or top in sys.stdlib_module_names


# -- arguments ---------------------------------------------------------------------------------
def flatten_args(args, kwargs):
    """``(tensors, spec)``: the tensors in the arguments in order, and a hashable picture of
    everything else (compared by ``==`` at each call; objects appear by identity)."""
    tensors, spec = [], []
    _flatten(args, tensors, spec, 0)
    if kwargs:
        _flatten(kwargs, tensors, spec, 0)
    return tensors, tuple(spec)


def _flatten(v, tensors, spec, depth):
    t = type(v)
    if isinstance(v, Tensor):
        tensors.append(v)
        spec.append(_tensor_meta(v))
    elif t in _SIMPLE:
        spec.append((t, v))
    elif t is tuple or t is list:
        spec.append((t, len(v)))
        for x in v:
            _flatten(x, tensors, spec, depth + 1)
    elif t is dict:
        spec.append((t, tuple(v)))
        for x in v.values():
            _flatten(x, tensors, spec, depth + 1)
    elif isinstance(v, (D.dtype,)):
        spec.append((t, v))
    else:  # by identity (the guards of the world around the call look inside it)
        spec.append(_Identity(v))


class _Identity:
    """Compares equal to an _Identity of the same object (never calls the object's __eq__)."""

    __slots__ = ("obj",)

    def __init__(self, obj):
        self.obj = obj

    def __eq__(self, other):
        return type(other) is _Identity and other.obj is self.obj

    def __hash__(self):
        return id(self.obj)


def _tensor_meta(t):
    a = t._data
    return (type(t), type(a), a.shape, a.dtype, a.strides, t._requires_grad, t._base is None,
            t._is_inference, None if type(a) is np.ndarray else t.device)


def alias_pattern(tensors):
    """For each tensor argument, the first argument holding the same array."""
    first = {}
    return tuple(first.setdefault(id(t._data), k) for k, t in enumerate(tensors))


def world():
    """The global modes a recording depends on."""
    return (state.grad_enabled, state.inference, D.get_default_dtype())


# -- the world around the call -----------------------------------------------------------------
class Roots:
    """What a function reaches from outside its arguments: closure cells, globals its code
    names, ``self``, default arguments, recursively through the Python functions among them
    and the ``forward`` of the modules among them. Builds the guard of each and indexes the
    tensors it finds (a recording reads them afresh at each replay)."""

    def __init__(self, fn, extra=()):
        self.tensors = {}  # id(tensor) -> tensor
        self.arrays = {}  # id(array) -> the tensor holding it
        self.checks = []  # (getter, check(value) -> bool)
        self.hooks = False  # some module holds forward or backward hooks
        self._seen_fns = set()
        self._held = []  # objects whose ids the guards compare: kept alive
        for obj in extra:
            self._add_root(lambda obj=obj: obj, obj)
        self._add_function(fn, 0)

    def owner(self, t):
        """The outside tensor that ``t`` is, or whose array ``t`` holds (``p.detach()``)."""
        if id(t) in self.tensors:
            return t
        return self.arrays.get(id(t._data))

    def hold(self):
        """True when every guard holds now."""
        for get, check in self.checks:
            if not check(get()):
                return False
        return True

    # -- collecting --------------------------------------------------------------------------
    def _add_function(self, fn, depth):
        self_obj = getattr(fn, "__self__", None)
        fn = getattr(fn, "__func__", fn)
        if id(fn) in self._seen_fns or depth > 3 or len(self._seen_fns) > 64:
            return
        self._seen_fns.add(id(fn))
        if self_obj is not None and not isinstance(self_obj, types.ModuleType):
            self._add_root(lambda: self_obj, self_obj)
        code = getattr(fn, "__code__", None)
        if code is None:
            if callable(fn) and not _is_library(fn):  # a callable object (a Module...)
                self._add_root(lambda: fn, fn)
            return
        if fn.__closure__:
            for cell in fn.__closure__:
                try:
                    value = cell.cell_contents
                except ValueError:  # not filled yet
                    continue
                self._add_root(lambda cell=cell: cell.cell_contents, value, depth)
        names = _global_names(code)
        g = fn.__globals__
        for name in names:
            if name in g:
                value = g[name]
                self._add_root(lambda g=g, name=name: g.get(name, _MISSING), value, depth,
                               names)
        for defaults in (fn.__defaults__, fn.__kwdefaults__):
            if defaults:
                self._add_root(lambda d=defaults: d, defaults, depth)

    def _add_root(self, get, value, depth=0, names=()):
        self.checks.append((get, self._check_for(value, 0)))
        self._index(value, 0, names, depth)

    def _index(self, v, level, names, fn_depth):
        """Find the tensors, modules and functions inside a root (as deep as its guard)."""
        if isinstance(v, Tensor):
            self.tensors[id(v)] = v
            self.arrays.setdefault(id(v._data), v)
            return
        if level > _MAX_DEPTH:
            return
        from ..nn.modules.module import Module
        if isinstance(v, Module):
            for m in v.modules():
                for t in list(m._parameters.values()) + list(m._buffers.values()):
                    if t is not None:
                        self._index(t, level + 1, (), fn_depth)
                for x in m.__dict__.values():
                    if isinstance(x, Tensor):
                        self._index(x, level + 1, (), fn_depth)
                if (m._forward_hooks or m._forward_pre_hooks or m._backward_hooks
                        or m._backward_pre_hooks):
                    self.hooks = True
                self._add_methods(type(m), fn_depth)
            return
        t = type(v)
        if t is tuple or t is list or t is set or t is frozenset:
            if len(v) <= _MAX_ITEMS:
                for x in v:
                    self._index(x, level + 1, names, fn_depth)
        elif t is dict:
            if len(v) <= _MAX_ITEMS:
                for x in v.values():
                    self._index(x, level + 1, names, fn_depth)
        elif isinstance(v, (types.FunctionType, types.MethodType)):
            if not _is_library(v):
                self._add_function(v, fn_depth + 1)
        elif isinstance(v, types.ModuleType):
            if not _is_library(v):
                for name in names:
                    if hasattr(v, name):
                        self._add_root(lambda v=v, name=name: getattr(v, name, _MISSING),
                                       getattr(v, name), fn_depth)
        elif t not in _SIMPLE and hasattr(v, "__dict__") and not isinstance(v, type):
            for x in vars(v).values():
                self._index(x, level + 1, names, fn_depth)
            self._add_methods(t, fn_depth)

    def _add_methods(self, cls, fn_depth):
        """The globals and closures of the methods a user class defines (forward, and what it
        may call on self)."""
        for klass in cls.__mro__:
            if _is_library(klass):
                continue
            for attr in vars(klass).values():
                fn = getattr(attr, "__func__", attr)
                if isinstance(fn, types.FunctionType):
                    self._add_function(fn, fn_depth + 1)

    def _check_for(self, v, level):
        """A function telling whether a value is still ``v`` (as far as a recording cares)."""
        t = type(v)
        if t in _SIMPLE or t is D.dtype:
            if t is float and math.isnan(v):  # NaN: the same object only
                return lambda x, v=v: x is v
            return lambda x, v=v, t=t: x is v or (type(x) is t and x == v)
        self._held.append(v)
        if isinstance(v, Tensor) or level >= _MAX_DEPTH:
            return lambda x, v=v: x is v
        from ..nn.modules.module import Module
        if isinstance(v, Module):
            states = [(m, _module_state(m, self._held)) for m in v.modules()]
            return lambda x, v=v, states=states: x is v and all(
                _module_state(m) == s for m, s in states)
        if t is tuple or t is list:
            if len(v) > _MAX_ITEMS:
                return lambda x, v=v: x is v
            if all(type(x) in _SIMPLE for x in v):
                copy = t(v)
                return lambda x, copy=copy, t=t: type(x) is t and x == copy
            items = [self._check_for(x, level + 1) for x in v]
            n = len(v)
            return lambda x, t=t, items=items, n=n: (
                type(x) is t and len(x) == n and _all_hold(items, x))
        if t is dict:
            if len(v) > _MAX_ITEMS:
                return lambda x, v=v: x is v
            keys = tuple(v)
            items = [self._check_for(x, level + 1) for x in v.values()]
            return lambda x, keys=keys, items=items: (
                type(x) is dict and tuple(x) == keys
                and _all_hold(items, x.values()))
        if (t not in _SIMPLE and hasattr(v, "__dict__") and not isinstance(v, type)
                and not isinstance(v, (types.FunctionType, types.MethodType,
                                       types.ModuleType))
                and not _is_library(t)):
            attrs = dict(vars(v))
            keys = tuple(attrs)
            items = [self._check_for(x, level + 1) for x in attrs.values()]
            return lambda x, v=v, keys=keys, items=items: x is v and tuple(vars(x)) == keys \
                and _all_hold(items, vars(x).values())
        return lambda x, v=v: x is v


def _all_hold(checks, values):
    """Every check holds for its value (a loop: checked at every call, where a generator in
    all() costs more than the checks)."""
    for check, v in zip(checks, values):
        if not check(v):
            return False
    return True


_MISSING = object()
_MODULE_FIELDS = frozenset({
    "training", "_parameters", "_buffers", "_modules", "_non_persistent_buffers_set",
    "_backward_pre_hooks", "_backward_hooks", "_is_full_backward_hook", "_forward_hooks",
    "_forward_hooks_with_kwargs", "_forward_hooks_always_called", "_forward_pre_hooks",
    "_forward_pre_hooks_with_kwargs", "_state_dict_hooks", "_state_dict_pre_hooks",
    "_load_state_dict_pre_hooks", "_load_state_dict_post_hooks"})


def _module_state(m, held=None):
    """What a recording depends on in one module, as a tuple compared by ``==`` (objects by
    id: ``held`` keeps the first snapshot's objects alive, so their ids stay theirs)."""
    d = m.__dict__
    objects = (list(d["_parameters"].values()) + list(d["_buffers"].values())
               + list(d["_modules"].values()))
    plain = []
    for key, v in d.items():
        if key in _MODULE_FIELDS:
            continue
        if type(v) in _SIMPLE:
            plain.append((key, type(v), v))
        else:
            plain.append((key, id(v)))
            objects.append(v)
    if held is not None:
        held.extend(objects)
    return (d["training"], tuple(d["_parameters"]), tuple(d["_buffers"]),
            tuple(d["_modules"]), tuple(map(id, objects)),
            len(d["_forward_hooks"]), len(d["_forward_pre_hooks"]),
            len(d["_backward_hooks"]), len(d["_backward_pre_hooks"]), tuple(plain))


def _global_names(code):
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _global_names(const)
    return names
