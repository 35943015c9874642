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
import operator
import sys
import types

import numpy as np

from .. import _dtype as D
from .._state import state
from .._tensor import Tensor

_SIMPLE = (type(None), bool, int, float, complex, str, bytes, type(Ellipsis), slice)
_MAX_DEPTH = 4
_MAX_ITEMS = 2048
# A list (tuple) of at most this many tensors is guarded item by item (``x[k] is not o``),
# a longer one by its items' ids (``[*map(id, x)] != ids``). NOTE: the ids cost more up to
# far longer lists (W2's two lists of two parameters: 240 ns each by ids, 80 item by item;
# 16 items: 930 and 250): map() and the int objects id() makes each time.
_CHAINED_ITEMS = 64
_LIBRARIES = ("ember", "numpy", "torch", "builtins", "functools", "typing", "abc")


def _is_library(obj):
    name = getattr(obj, "__module__", None) or getattr(obj, "__name__", "") or ""
    top = name.split(".")[0]
    return top in _LIBRARIES or top in sys.stdlib_module_names


# -- arguments ---------------------------------------------------------------------------------
def flatten_args(args, kwargs):
    """``(tensors, spec)``: the tensors in the arguments in order, and a hashable picture of
    everything else (compared by ``==`` at each call; objects appear by identity)."""
    tensors, spec = [], [(tuple, len(args))]
    for v in args:  # (the top level written out: _flatten(args, ...) without a call per tensor)
        if isinstance(v, Tensor):
            tensors.append(v)
            spec.append(_tensor_meta(v))
        else:
            _flatten(v, tensors, spec, 1)
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


# What a recording assumes of a tensor, as an expression on the tensor ``{t}`` and its array
# ``{a}`` (one text: _tensor_meta and the generated guards compute the same tuple).
_META_FIELDS = ("type({t})", "type({a})", "{a}.shape", "{a}.dtype", "{a}.strides",
                "{t}._requires_grad", "{t}._base is None", "{t}._is_inference",
                "None if type({a}) is ndarray else {t}.device")
_TENSOR_META = f"({', '.join(_META_FIELDS)})"


def _meta_function():
    scope = {"ndarray": np.ndarray}
    text = f"def _tensor_meta(t):\n    a = t._data\n    return {_TENSOR_META.format(t='t', a='a')}\n"
    exec(compile(text, "<ember guard>", "exec"), scope)  # noqa: S102 - the text above
    return scope["_tensor_meta"]


_tensor_meta = _meta_function()


def alias_pattern(tensors):
    """For each tensor argument, the first argument holding the same array."""
    first = {}
    return tuple(first.setdefault(id(t._data), k) for k, t in enumerate(tensors))


def world():
    """The global modes a recording depends on."""
    return (state.grad_enabled, state.inference, D.get_default_dtype())


def call_guard(args, kwargs, spec, tensors, captured, roots):
    """``matches(args, kwargs)``: one recording's guard, a straight-line function. It returns
    the call's tensor arguments (``flatten_args``'s, in order; ``args`` itself when they are
    all tensors) when the arguments look as they did (``spec``), the global modes are the
    same, its tensor arguments share arrays as they did, the outside tensors it read
    (``captured``: ``(tensor, _tensor_meta)`` pairs) have the same metadata, and ``roots``'
    guards hold; else False."""
    w = GuardWriter("c")
    # the plain tensors (NumPy arrays, no views) among the outside ones, their metadata read
    # by one mapped getter call (with the arguments' when those are all such tensors)
    plain = [(t, meta) for t, meta in captured if _is_plain(meta)]
    names = _argument_lines(w, args, kwargs, spec, len(tensors), plain)
    grad, inference, dtype = world()
    mode, default = w.bind(state), w.bind(D._default)
    w.fail_if(f"{w.bind(_MODES)}({mode}) != {(grad, inference)!r} "
              f"or {default}[0] != {w.bind(dtype)}")
    _alias_lines(w, alias_pattern(tensors), names)
    _outside_alias_lines(w, tensors, names, roots)
    for t, meta in captured:
        if not any(t is u for u, _ in plain):
            w.fail_if(_meta_changed(w, w.bind(t), meta))
    w.adopt(roots.guard)
    return w.build("matches", "args, kwargs", "tensors")


_MODES = operator.attrgetter("grad_enabled", "inference")  # (world()'s modes, one C call)


def _is_plain(meta):
    """A NumPy array's tensor that is no view (_tensor_meta's tuple): read by
    _plain_meta."""
    return meta[1] is np.ndarray and meta[6]


def _plain_metas(w, tensors, metas):
    """A condition: the tensors named by the expressions ``tensors`` no longer have
    ``metas`` (_tensor_meta's tuples of plain tensors), all compared at once: one list of
    their metadata tuples, written out tensor by tensor.

    NOTE: written out, each tensor's array is read once; a mapped ``attrgetter`` of the
    same fields (fewer bytecodes) reads it for each of its four fields, and costs a third
    more per call (W2's six tensors, about 0.5 us)."""
    expected = [meta[:6] + (meta[7], None) for meta in metas]
    return f"[{', '.join(_plain_meta(w, t) for t in tensors)}] != {w.bind(expected)}"


def _plain_meta(w, t):
    """An expression: _META_GETTER's fields of tensor ``t`` and its ``_base`` (None for a
    tensor that is no view, compared in the same tuple), its array read once."""
    a = w._name("a")
    return (f"({t}.__class__, ({a} := {t}._data).__class__, {a}.shape, {a}.dtype, "
            f"{a}.strides, {t}._requires_grad, {t}._is_inference, {t}._base)")


def _argument_lines(w, args, kwargs, spec, n_tensors, plain):
    """Checks that a call's arguments look as ``args`` and ``kwargs`` did (whose picture is
    ``spec``), and that the ``plain`` outside tensors (``(tensor, _tensor_meta)`` pairs, see
    _is_plain) have the same metadata, binding the local ``tensors``; returns the names of
    the tensor arguments. Positional tensors and simple values are checked one by one,
    without flatten_args (no spec tuple, no call per tensor), or all at once with the outside
    tensors when they are all plain tensors; anything else through flatten_args and
    ``spec``."""
    if plain:
        outside = [w.bind(t) for t, _ in plain]
        outside_metas = [meta for _, meta in plain]
    if kwargs or not all(isinstance(v, Tensor) or type(v) in _SIMPLE for v in args):
        w.scope["flatten_args"] = flatten_args
        w.lines.append("tensors, spec = flatten_args(args, kwargs)")
        w.fail_if(f"spec != {w.bind(spec)}")
        if plain:
            w.fail_if(_plain_metas(w, outside, outside_metas))
        return [f"tensors[{k}]" for k in range(n_tensors)]
    metas = [_tensor_meta(v) for v in args if isinstance(v, Tensor)]
    if args and len(metas) == len(args) and all(_is_plain(meta) for meta in metas):
        # (another number of arguments fails to unpack; an object in a tensor's place
        # lacks a tensor's attributes, or gives another class first)
        names = [w._name("p") for _ in args]
        changed = _plain_metas(w, names + (outside if plain else []),
                               metas + (outside_metas if plain else []))
        w.lines += ["try:", f"    {''.join(n + ', ' for n in names)}= args",
                    f"    if kwargs or {changed}: return _fail",
                    "except Exception:", "    return _fail", "tensors = args"]
        return names
    if plain:
        w.fail_if(_plain_metas(w, outside, outside_metas))
    w.fail_if("kwargs")
    names = [f"p{k}" for k in range(len(args))]
    if not names:
        w.fail_if("args")
    start = len(w.lines)
    if names:
        w.lines.append(f"{''.join(n + ', ' for n in names)}= args")
    tensor_names = []
    for name, v in zip(names, args):
        if isinstance(v, Tensor):  # (its type and array read by one getter call)
            w.fail_if(_meta_changed(w, name, _tensor_meta(v)))
            tensor_names.append(name)
        else:
            w.fail_if(w._changed(name, v))
    if names:
        # (another number of arguments fails to unpack; an object in a tensor's place
        # lacks a tensor's attributes, or gives another class first)
        w.lines[start:] = (["try:"] + ["    " + line for line in w.lines[start:]]
                           + ["except Exception:", "    return _fail"])
    w.lines.append("tensors = args" if len(tensor_names) == len(args)
                   else f"tensors = [{', '.join(tensor_names)}]")
    return tensor_names


# _tensor_meta's fields but the view-ness and the device, read in one C call (a NumPy
# array's device is the CPU: its type says it)
_GOT = ("__class__", "_data.__class__", "_data.shape", "_data.dtype", "_data.strides",
        "_requires_grad", "_is_inference")
_META_GETTER = operator.attrgetter(*_GOT)


def _meta_changed(w, t, meta):
    """A condition: tensor ``t`` no longer has metadata ``meta`` (_tensor_meta's tuple)."""
    if meta[1] is not np.ndarray:  # (another array type: the whole picture, device too)
        a = w.local(f"{t}._data")
        return f"{_TENSOR_META.format(t=t, a=a)} != {w.bind(meta)}"
    if meta[6]:  # no view: its base (None) read with the rest
        return f"{_plain_meta(w, t)} != {w.bind(meta[:6] + (meta[7], None))}"
    return f"{w.bind(_META_GETTER)}({t}) != {w.bind(meta[:6] + (meta[7],))} or {t}._base is None"


def _alias_lines(w, aliases, names):
    """The tensor arguments (``names``) share arrays as ``aliases`` (see alias_pattern)
    says: a few arguments pair by pair, more through alias_pattern."""
    n = len(aliases)
    if n > 4:
        w.scope["alias_pattern"] = alias_pattern
        w.fail_if(f"alias_pattern(tensors) != {aliases!r}")
        return
    arrays = [w.local(f"{name}._data") for name in names] if n > 1 else []
    for j in range(n):
        for i in range(j):
            same = aliases[i] == aliases[j]
            w.fail_if(f"{arrays[i]} is {'not ' if same else ''}{arrays[j]}")


def _outside_alias_lines(w, tensors, names, roots):
    """A tensor argument holding the array of a tensor the function reaches from outside (a
    global passed as the argument, ``f(w)`` of ``def f(a): return a + w``) must hold it
    again: the recording read both through one slot, the argument's, so another argument
    would stand for the outside tensor too (a stale value). (No check where none did: with
    separate slots a replay reads, and writes into, whatever arrays the two hold.)"""
    for name, t in zip(names, tensors):
        owner = roots.arrays.get(id(t._data))
        if owner is not None:
            w.fail_if(f"{name}._data is not {w.bind(owner)}._data")


# -- the world around the call -----------------------------------------------------------------
class Roots:
    """What a function reaches from outside its arguments: closure cells, globals its code
    names, ``self``, default arguments, recursively through the Python functions among them
    and the ``forward`` of the modules among them. Builds the guard of each and indexes the
    tensors it finds (a recording reads them afresh at each replay)."""

    def __init__(self, fn, extra=()):
        self.tensors = {}  # id(tensor) -> tensor
        self.arrays = {}  # id(array) -> the tensor holding it
        self.guard = GuardWriter("r")  # the checks of what it reaches, as lines of code
        self.hooks = False  # some module holds forward or backward hooks
        self._seen_fns = set()
        for obj in extra:
            self._add_root(None, obj)
        self._add_function(fn, 0)
        self.hold = self.guard.build("hold", "")  # () -> True when every guard holds now

    def owner(self, t):
        """The outside tensor that ``t`` is, or whose array ``t`` holds (``p.detach()``)."""
        if id(t) in self.tensors:
            return t
        return self.arrays.get(id(t._data))

    # -- collecting --------------------------------------------------------------------------
    def _add_function(self, fn, depth):
        self_obj = getattr(fn, "__self__", None)
        fn = getattr(fn, "__func__", fn)
        if id(fn) in self._seen_fns or depth > 3 or len(self._seen_fns) > 64:
            return
        self._seen_fns.add(id(fn))
        if self_obj is not None and not isinstance(self_obj, types.ModuleType):
            self._add_root(None, self_obj)
        code = getattr(fn, "__code__", None)
        if code is None:
            if callable(fn) and not _is_library(fn):  # a callable object (a Module...)
                self._add_root(None, fn)
            return
        if fn.__closure__:
            for cell in fn.__closure__:
                try:
                    value = cell.cell_contents
                except ValueError:  # not filled yet
                    continue
                self._add_root(f"{self.guard.bind(cell)}.cell_contents", value, depth)
        names = _global_names(code)
        g = fn.__globals__
        for name in names:
            if name in g:
                value = g[name]
                self._add_root(f"{self.guard.bind(g)}.get({name!r}, _MISSING)", value, depth,
                               names)
        for defaults in (fn.__defaults__, fn.__kwdefaults__):
            if defaults:
                self._add_root(None, defaults, depth)

    def _add_root(self, get, value, depth=0, names=()):
        """Guard ``value``, read again by expression ``get`` at each call (None: the root is
        this very object, as ``self`` or a default argument tuple)."""
        if get is None:
            self.guard.check(self.guard.bind(value), value, 0, same=True)
        else:
            self.guard.check(self.guard.local(get), value, 0)
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
                        self._add_root(
                            f"getattr({self.guard.bind(v)}, {name!r}, _MISSING)",
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


_MISSING = object()
_MODULE_FIELDS = frozenset({
    "training", "_parameters", "_buffers", "_modules", "_non_persistent_buffers_set",
    "_backward_pre_hooks", "_backward_hooks", "_is_full_backward_hook", "_forward_hooks",
    "_forward_hooks_with_kwargs", "_forward_hooks_always_called", "_forward_pre_hooks",
    "_forward_pre_hooks_with_kwargs", "_state_dict_hooks", "_state_dict_pre_hooks",
    "_load_state_dict_pre_hooks", "_load_state_dict_post_hooks"})


_HOOK_FIELDS = ("_forward_hooks", "_forward_pre_hooks", "_backward_hooks", "_backward_pre_hooks")


class GuardWriter:
    """Builds a straight-line guard function: one ``if <changed>: return _fail`` line per
    thing a recording assumed, the objects compared by identity bound as names of its scope
    (which keeps them alive, so no other object takes their ids). Checked at every call, this
    costs a fraction of generic checks walking the values (no call per value). ``_fail`` is
    False in the guard's scope; a compiled call that opens with the guard's lines (its
    ``lines``) binds it to its own miss marker."""

    def __init__(self, prefix):
        self.prefix = prefix  # (names of two writers' lines never clash)
        self.lines = []
        # (_fail: what a failed check returns, see build)
        self.scope = {"_MISSING": _MISSING, "ndarray": np.ndarray, "_fail": False}
        self.count = 0

    def _name(self, kind):
        self.count += 1
        return f"{self.prefix}{kind}{self.count}"

    def bind(self, obj):
        """A name of the scope for ``obj``."""
        name = self._name("o")
        self.scope[name] = obj
        return name

    def literal(self, key):
        """``key`` written in the code (a string or small value), else bound."""
        return repr(key) if type(key) in (str, int, bool, type(None)) else self.bind(key)

    def local(self, expr):
        """A local name holding ``expr``'s value (evaluated once, here)."""
        name = self._name("x")
        self.lines.append(f"{name} = {expr}")
        return name

    def fail_if(self, condition):
        self.lines.append(f"if {condition}: return _fail")

    def adopt(self, other):
        """Append another writer's checks (its names stay its own)."""
        self.lines += other.lines
        self.scope.update(other.scope)

    def build(self, name, params, result="True"):
        text = f"def {name}({params}):\n" + "".join(
            f"    {line}\n" for line in self.lines + [f"return {result}"])
        exec(compile(text, "<ember guard>", "exec"), self.scope)  # noqa: S102 - generated
        fn = self.scope[name]
        fn.source = text  # what it checks, for readers (print(fn.source))
        fn.lines = list(self.lines)  # (its checks, for a function that opens with them)
        return fn

    # -- what a value must still be ------------------------------------------------------------
    def check(self, x, v, level, same=False):
        """Lines checking that local ``x`` is still ``v`` as far as a recording cares: simple
        values by value, lists, tuples and dicts element by element (as deep as _MAX_DEPTH),
        modules by their state, user objects by identity and attribute by attribute, anything
        else by identity. ``same``: ``x`` is ``v`` itself (a root held as it is)."""
        t = type(v)
        if t in _SIMPLE or t is D.dtype:
            self._simple(x, v)
            return
        container = t is tuple or t is list or t is dict
        if container and level < _MAX_DEPTH and len(v) <= _MAX_ITEMS:
            self._container(x, v, level)
            return
        if not same:
            self.fail_if(f"{x} is not {self.bind(v)}")
        if container or level >= _MAX_DEPTH or isinstance(v, Tensor):
            return
        from ..nn.modules.module import Module
        if isinstance(v, Module):
            for m in v.modules():
                self._module(m)
        elif (hasattr(v, "__dict__") and not isinstance(v, type)
              and not isinstance(v, (types.FunctionType, types.MethodType, types.ModuleType))
              and not _is_library(t)):
            self._items(self.local(f"vars({x})"), dict(vars(v)), level)

    def _container(self, x, v, level):
        t = type(v)
        if t is dict:
            self.fail_if(f"type({x}) is not dict")
            self._items(x, v, level)
        elif all(type(item) in _SIMPLE for item in v):  # (compared at once, with a copy)
            self.fail_if(f"type({x}) is not {t.__name__} or not {x} == {self.bind(t(v))}")
        elif len(v) > _CHAINED_ITEMS and all(isinstance(item, Tensor) for item in v):
            # (many tensors, by identity: their ids, read in one mapped call; the tensors
            # bound keep their ids their own)
            self.bind(tuple(v))
            self.fail_if(f"type({x}) is not {t.__name__} "
                         f"or [*map(id, {x})] != {self.bind([id(item) for item in v])}")
        elif all(isinstance(item, Tensor) for item in v):
            # (tensors, by identity: one condition, item by item)
            self.fail_if(" or ".join([f"type({x}) is not {t.__name__} or len({x}) != {len(v)}"]
                                     + [f"{x}[{k}] is not {self.bind(item)}"
                                        for k, item in enumerate(v)]))
        else:
            self.fail_if(f"type({x}) is not {t.__name__} or len({x}) != {len(v)}")
            for k, item in enumerate(v):
                self.check(self.local(f"{x}[{k}]"), item, level + 1)

    def _simple(self, x, v):
        self.fail_if(self._changed(x, v))

    def _changed(self, x, v):
        """A condition: the simple value ``x`` (an expression) is no longer ``v``."""
        if v is None or type(v) is bool:  # (singletons)
            return f"{x} is not {v!r}"
        name = self.bind(v)
        if type(v) is float and math.isnan(v):  # NaN: the same object only
            return f"{x} is not {name}"
        return f"({x} is not {name} and (type({x}) is not {self.bind(type(v))} or not {x} == {name}))"

    def _items(self, x, d, level):
        """Dict (or attributes) ``x`` holds the keys of ``d`` in their order, each value still
        as recorded."""
        self.fail_if(f"tuple({x}) != {self.bind(tuple(d))}")
        for key, v in d.items():
            self.check(self.local(f"{x}[{self.literal(key)}]"), v, level + 1)

    def _module(self, m):
        """One module's state: ``training``, the identity of every parameter, buffer and
        submodule, its hooks, and its plain attributes (one condition)."""
        d = self.local(f"{self.bind(m)}.__dict__")
        state_of = m.__dict__
        changed = [f"tuple({d}) != {self.bind(tuple(state_of))}",  # (none added or removed)
                   f"not {d}['training'] == {self.literal(state_of['training'])}"]
        for field in ("_parameters", "_buffers", "_modules"):
            members = state_of[field]
            x = f"{d}[{field!r}]"
            changed += [f"tuple({x}) != {self.bind(tuple(members))}"] if members else [x]
            changed += [f"{x}[{self.literal(k)}] is not {self.bind(v)}"
                        for k, v in members.items()]
        for field in _HOOK_FIELDS:
            n = len(state_of[field])
            changed.append(f"{d}[{field!r}]" if n == 0 else f"len({d}[{field!r}]) != {n}")
        for key, v in state_of.items():
            if key not in _MODULE_FIELDS:
                changed.append(self._changed(f"{d}[{self.literal(key)}]", v) if type(v) in _SIMPLE
                               else f"{d}[{self.literal(key)}] is not {self.bind(v)}")
        self.fail_if(" or ".join(changed))


def _global_names(code):
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _global_names(const)
    return names
