"""The tensors a transformed function captures from outside, which torch's grad and jvp
levels refuse to see written in place.

torch wraps a transform's inputs, and everything computed while its function runs, at the
transform's level; an in-place op whose ``self`` is not wrapped there (a tensor the function
captured from outside, or a view of one) raises. ember does not wrap, so it finds the tensors
the function can name: its closure's, the globals its code reads, the arguments of a
``functools.partial`` and a bound method's object, and for each ``nn.Module`` among them its
parameters and buffers; and the same of the Python functions it can name in turn (a helper
it calls, which writes a tensor of its own closure or a global). A tensor reached otherwise
(an attribute of an object, an element of a list) is not refused: every tensor found exists
before the function runs, so the check never refuses what torch accepts.
"""
from __future__ import annotations

import functools
import types

from .._state import captured_write_check, set_hook
from .._tensor import Tensor

_active: list = []  # the captured tensors (by id) of each transform whose function runs now

_MESSAGE = ("During a grad (vjp, jvp, grad, etc) transform, the function provided attempted to "
            "call in-place operation ({}) that would mutate a captured Tensor. This is not "
            "supported; please rewrite the function being transformed to explicitly accept "
            "the mutated Tensor(s) as inputs.")

# torch's overload names of the in-place ops (a Python number operand is wrapped: .Tensor)
_OVERLOADS = {"add": ".Tensor", "sub": ".Tensor", "mul": ".Tensor", "div": ".Tensor",
              "copysign": ".Tensor", "fill": ".Scalar", "masked_fill": ".Scalar"}


def _tensors_of(obj, out):
    from ..nn.modules.module import Module
    if isinstance(obj, Tensor):
        out[id(obj)] = obj
    elif isinstance(obj, Module):
        for t in obj.parameters():
            out[id(t)] = t
        for t in obj.buffers():
            out[id(t)] = t


def captured_by(func):
    """The tensors ``func``, and the user functions it names, name from outside, by id."""
    out = {}
    pending, seen = [func], set()
    while pending:  # (a walk, not recursion: helpers may call each other)
        f = pending.pop()
        if id(f) not in seen:
            seen.add(id(f))
            pending += _named_by(f, out)
    return out


def _named_by(func, out):
    """Add the tensors ``func`` names to ``out``; return the user functions it names."""
    while isinstance(func, functools.partial):
        for a in (*func.args, *func.keywords.values()):
            _tensors_of(a, out)
        func = func.func
    self_ = getattr(func, "__self__", None)
    if self_ is not None:
        _tensors_of(self_, out)
        func = getattr(func, "__func__", func)
    _tensors_of(func, out)  # (a module called as the function)
    named = []
    for cell in getattr(func, "__closure__", None) or ():
        try:
            named.append(cell.cell_contents)
        except ValueError:  # (an empty cell)
            pass
    code, names = getattr(func, "__code__", None), getattr(func, "__globals__", None)
    if code is not None and names is not None:
        named += [names[name] for name in _global_names(code) if name in names]
    for obj in named:
        _tensors_of(obj, out)
    return [obj for obj in named if _is_user_function(obj)]


def _global_names(code):
    """The names ``code`` and the functions defined in it (lambdas, inner defs) read."""
    names, codes = set(), [code]
    while codes:
        c = codes.pop()
        names.update(c.co_names)
        codes += [k for k in c.co_consts if isinstance(k, types.CodeType)]
    return names


def _is_user_function(obj):
    """A Python function (or partial, or bound method) outside ember's own modules: ember's
    functions write no tensor of their callers' (and walking them would cost each call)."""
    if isinstance(obj, functools.partial):
        return True
    if isinstance(obj, types.MethodType):
        obj = obj.__func__
    return isinstance(obj, types.FunctionType) and not (
        obj.__module__ or "").startswith("ember.")


def _refuse_captured_write(op, args):
    """The in-place dispatcher's check while a transform's function runs."""
    self = args[0]
    for captured in _active:
        if id(self) in captured or (self._base is not None and id(self._base) in captured
                                    and "_func_call" not in self.__dict__):
            if _vmap_answers_first(op, args):
                return
            raise RuntimeError(_MESSAGE.format(f"{op.aten}_{_OVERLOADS.get(op.name, '')}"))


def _vmap_answers_first(op, args):
    """Whether a vmap entered inside the innermost running transform takes this call (an
    argument is batched at it): torch's innermost level answers first, with its own refusal
    of an unbatched self."""
    from ._batching import _levels, top_level
    from ._batching_rules import _INPLACE_ON_PHYSICAL_IN_TORCH
    if not _levels or _levels[-1].torch_index - _levels[-1].index != len(_active) or (
            op.name in _INPLACE_ON_PHYSICAL_IN_TORCH):  # (torch runs those on the physical
        return False                                  # values: the grad level answers)
    return top_level(op, args) == _levels[-1].index


def running_transforms():
    """How many grad or jvp transforms are running their functions now."""
    return len(_active)


class capturing:
    """Refuse in-place writes to what ``func`` captures while the ``with`` block runs it."""

    def __init__(self, func, arguments=()):
        self.captured = captured_by(func)
        for a in arguments:
            self.captured.pop(id(a), None)

    def __enter__(self):
        _active.append(self.captured)
        set_hook(captured_write_check, _refuse_captured_write)

    def __exit__(self, *exc):
        _active.pop()
        if not _active:
            set_hook(captured_write_check, None)
