"""``ember.jit``: what eager programs and model libraries call from torch.jit.

torch.jit compiles Python into TorchScript. Code written to be scriptable asks, while it runs
eagerly, whether it is being scripted or traced, and marks functions for the compiler with
decorators that leave them unchanged in eager mode; programs also import ``script`` and
``trace`` at the top without calling them (the chatbot tutorial does). Those eager behaviours
are torch's here. ember has no TorchScript compiler: ``script`` of a function runs it as
Python (libraries script small helpers when they load), while ``trace``, ``save``, ``load`` and
``script`` of a module refuse (``ember.compile`` records and replays eager code instead).
"""
from __future__ import annotations

import functools
import inspect
import typing
import warnings
from typing import Any, Final, NamedTuple

__all__ = ["Attribute", "Final", "ScriptFunction", "TracerWarning", "annotate", "export", "fork",
           "ignore", "is_scripting", "is_tracing", "load", "save", "script", "script_if_tracing",
           "trace", "unused", "wait"]


class Attribute(NamedTuple):
    """A module attribute's value with the type the compiler should give it (eager: the pair)."""
    value: Any
    type: Any


def is_scripting() -> bool:
    """Whether the running code is being compiled by TorchScript: never in ember."""
    return False


def is_tracing() -> bool:
    """Whether the running code is being traced by torch.jit.trace: never in ember."""
    return False


def annotate(the_type, the_value):
    """A type hint for the compiler; eagerly, the value itself."""
    return the_value


def export(fn):
    """Marks a method for the compiler; eagerly, the method unchanged."""
    return fn


def unused(fn):
    """Marks a function (or a property) the compiler replaces by a raise; eagerly unchanged."""
    return fn


def ignore(drop=False, **kwargs):
    """Marks a function the compiler leaves to Python: ``@ignore`` or ``@ignore(drop=...)``.
    Eagerly the function is unchanged; torch's argument checks and deprecation are kept."""
    if callable(drop):
        return drop
    if not isinstance(drop, bool):
        raise RuntimeError("Argument to @ember.jit.ignore must be a bool or a function "
                           f"but got {drop}")
    drop_on_export = kwargs.pop("drop_on_export", None)
    if drop_on_export:
        warnings.warn("ignore(drop_on_export=True) has been deprecated. TorchScript will now "
                      "drop the function call on compilation. Use ember.jit.unused now. "
                      f"{kwargs}", category=FutureWarning, stacklevel=2)
    elif drop:
        warnings.warn("ignore(True) has been deprecated. TorchScript will now drop the function "
                      f"call on compilation. Use ember.jit.unused now. {kwargs}",
                      category=FutureWarning, stacklevel=2)
    return lambda fn: fn


def script_if_tracing(fn):
    """Scripts ``fn`` when a trace calls it: a wrapper (as torch's) that, never traced in
    ember, calls ``fn``."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return fn(*args, **kwargs)
    return wrapper


def _deprecated(name: str, advice: str) -> None:
    # (torch 2.13 deprecates TorchScript's entry points; its warnings name torch's own file,
    # so the default filters, which show DeprecationWarnings only of __main__, hide them)
    warnings.warn(f"`ember.jit.{name}` is deprecated. {advice}", DeprecationWarning, stacklevel=2)


def fork(func, *args, **kwargs):
    """Runs ``func(*args, **kwargs)`` and returns a completed Future of its result, as torch's
    fork does outside TorchScript (the call runs at once, in the caller's thread)."""
    from .futures import Future
    _deprecated("fork", "Please use `ember.compile` instead.")
    future = Future()
    future.set_result(func(*args, **kwargs))
    return future


def wait(future):
    """The result of a Future that ``fork`` returned."""
    _deprecated("wait", "Please use `ember.compile` instead.")
    return future.wait()


class TracerWarning(Warning):
    """The warning category of torch.jit.trace's warnings; programs filter it (pyro ignores it
    around its jitted ELBOs). ember never traces, so none is raised."""

    @staticmethod
    def ignore_lib_warnings():
        # (torch ignores the library's own trace warnings, outside its jit package)
        warnings.filterwarnings("ignore", category=TracerWarning, module="ember.(?!jit)")


def _no_torchscript(what: str):
    raise RuntimeError(f"ember.jit.{what}: ember has no TorchScript compiler; run the module or "
                       "function eagerly, or record it with ember.compile")


class ScriptFunction:
    """What ``script`` gives for a function (libraries script small helpers at import:
    x-transformers' ``softclamp``). ember has no TorchScript compiler, so the function runs as
    Python; a call checks what TorchScript types as a Tensor (a parameter annotated ``Tensor``
    or not annotated) as the compiled function does, and the compiled forms (``graph``,
    ``code``, ``save``) are refused."""

    def __init__(self, fn):
        try:
            inspect.getsourcelines(fn)
        except OSError as e:  # (torch's compiler reads the source)
            raise OSError(f"Can't get source for {fn}. TorchScript requires source access in "
                          "order to carry out compilation, make sure original .py files are "
                          "available.") from e
        self._fn = fn
        self._signature = inspect.signature(fn)
        self._tensor_parameters = _tensor_parameters(fn, self._signature)
        self.name = fn.__name__
        self.qualified_name = f"__torch__.{fn.__qualname__}"
        self.__doc__ = fn.__doc__

    def __call__(self, *args, **kwargs):
        from ._tensor import Tensor
        bound = self._signature.bind(*args, **kwargs)
        for position, (name, value) in enumerate(bound.arguments.items()):
            if name in self._tensor_parameters and not isinstance(value, Tensor):
                typed = self._tensor_parameters[name]
                inferred = (f"\nInferred '{name}' to be of type 'Tensor' because it was not "
                            "annotated with an explicit type." if "inferred" in typed else "")
                raise RuntimeError(f"{self.name}() Expected a value of type '{typed}' for "
                                   f"argument '{name}' but instead found type "
                                   f"'{type(value).__name__}'.{inferred}\nPosition: {position}"
                                   f"\nValue: {value!r}")
        return self._fn(*args, **kwargs)

    def __getattr__(self, name):
        if name in ("graph", "code", "inlined_graph", "schema", "save", "graph_for"):
            _no_torchscript(f"ScriptFunction.{name}")
        raise AttributeError(f"'ScriptFunction' object has no attribute '{name}'")


def _tensor_parameters(fn, signature):
    """The parameters TorchScript types as Tensors, each with the type its errors name:
    ``Tensor`` where annotated so, ``Tensor (inferred)`` where not annotated."""
    from ._tensor import Tensor
    try:
        hints = typing.get_type_hints(fn)
    except Exception:  # (an annotation naming what the function's module cannot resolve)
        hints = dict(getattr(fn, "__annotations__", {}))
    typed = {}
    for name in signature.parameters:
        if name not in hints:
            typed[name] = "Tensor (inferred)"
        elif hints[name] is Tensor or hints[name] in ("Tensor", "torch.Tensor"):
            typed[name] = "Tensor"
    return typed


def script(obj=None, *args, **kwargs):
    """A function runs as Python behind a :class:`ScriptFunction`; modules and classes are
    refused: ember cannot compile TorchScript."""
    _deprecated("script", "Please switch to `ember.compile`.")
    if isinstance(obj, ScriptFunction):
        return obj
    if inspect.isfunction(obj):
        return ScriptFunction(obj)
    _no_torchscript("script")


def trace(func, *args, **kwargs):
    """Refused: ember cannot trace into TorchScript."""
    _deprecated("trace", "Please switch to `ember.compile`.")
    _no_torchscript("trace")


def save(m, f, *args, **kwargs):
    """Refused: ember has no TorchScript modules to save."""
    _no_torchscript("save")


def load(f, *args, **kwargs):
    """Refused: ember cannot run a saved TorchScript archive."""
    _no_torchscript("load")

