"""``ember.compile`` and the ``torch.compiler`` / ``torch._dynamo`` functions around it."""
from __future__ import annotations

import functools

from .._state import recording
from .compiled import CompiledFunction, _disabled, reset  # noqa: F401 (reset is public)
from .recorder import Unsupported  # noqa: F401 (public as ember._dynamo.exc.Unsupported)

_MODES = ("default", "lite", "reduce-overhead", "max-autotune-no-cudagraphs", "max-autotune")
# Every backend name runs the same thing: ember records kernel calls and replays them.
_BACKENDS = ("inductor", "eager", "aot_eager", "cudagraphs")


class InvalidBackend(RuntimeError):
    """An unknown ``backend=`` name (``torch._dynamo.exc.InvalidBackend``)."""

    def __init__(self, name):
        super().__init__(f"Invalid backend: {name!r}, see `ember._dynamo.list_backends()` for "
                         "available backends.")


def list_backends(exclude_tags=("debug", "experimental")):
    """The ``backend=`` names ember.compile accepts."""
    return ["inductor"] if exclude_tags else sorted(_BACKENDS)


def compile(model=None, *, fullgraph=False, dynamic=None, backend="inductor",
            mode=None, options=None, disable=False, name=None, recompile_limit=None):
    """Record ``model``'s kernel calls on its first call and replay them on later calls
    whose guards hold (see docs/compile.md); usable as a decorator, with or without
    arguments. A module gives an ``OptimizedModule`` sharing its parameters.

    ``fullgraph=True`` raises ``Unsupported`` where a call cannot be recorded instead of
    running it eagerly. ``dynamic``, ``mode``, ``options`` and ``backend`` are checked as torch
    checks them; every recording is specialised to its shapes, whatever they say.
    """
    _check_options(backend, mode, options, dynamic)
    if model is None:
        def decorate(fn):
            return compile(fn, fullgraph=fullgraph, dynamic=dynamic, backend=backend,
                           mode=mode, options=options, disable=disable, name=name,
                           recompile_limit=recompile_limit)
        return decorate
    if disable:
        return model
    if not callable(model):
        raise AssertionError(  # noqa: TRY004 - torch raises this
            f"A callable function is expected, but {type(model)} is provided.")
    from ..nn.modules.module import Module
    if isinstance(model, Module):
        from .optimized_module import OptimizedModule
        return OptimizedModule(model, CompiledFunction(model._call_impl, fullgraph,
                                                       recompile_limit))
    return CompiledFunction(model, fullgraph, recompile_limit)


def _check_options(backend, mode, options, dynamic):
    if mode is not None and options is not None:
        raise RuntimeError("Either mode or options can be specified, but both can't be "
                           "specified at the same time.")
    if mode is not None and mode not in _MODES:
        raise RuntimeError(f"Unrecognized mode={mode}, should be one of: "
                           + ", ".join(_MODES))
    if options is not None and not isinstance(options, dict):
        raise TypeError(f"options must be a dict, got {type(options).__name__}")
    if callable(backend):
        raise TypeError("ember.compile takes no custom backend: it replays recorded NumPy "
                        f"kernel calls itself (use one of {list(_BACKENDS)})")
    if backend not in _BACKENDS:
        raise InvalidBackend(backend)
    if dynamic not in (None, True, False):
        raise TypeError(f"dynamic must be None, True or False, got {dynamic!r}")


def disable(fn=None, recursive=True, *, reason=None):
    """Run ``fn`` eagerly, never recorded (``torch.compiler.disable``): a compiled function
    calling it runs eagerly (a graph break). Usable as a decorator."""
    if fn is None:
        return functools.partial(disable, recursive=recursive, reason=reason)

    @functools.wraps(fn)
    def eager(*args, **kwargs):
        rec = recording[0]
        if rec is not None:
            rec.graph_break(f"it calls {getattr(fn, '__qualname__', fn)!s}, which "
                            "ember.compiler.disable keeps eager"
                            + (f" ({reason})" if reason else ""))
        _disabled[0] += 1
        try:
            return fn(*args, **kwargs)
        finally:
            _disabled[0] -= 1
    eager._ember_compile_disabled = True
    return eager


def is_compiling() -> bool:
    """True while a compiled function's call is being recorded (its Python code runs only
    then: a replay runs recorded kernels)."""
    return recording[0] is not None
