"""``ember.compiler``: torch.compiler's functions around :func:`ember.compile`."""
from __future__ import annotations

from .._compile.api import compile, disable, is_compiling, list_backends
from .._compile.compiled import reset

__all__ = ["allow_in_graph", "compile", "disable", "is_compiling", "is_dynamo_compiling",
           "list_backends", "reset"]


def is_dynamo_compiling() -> bool:
    """Same as :func:`is_compiling` (ember has one recorder)."""
    return is_compiling()


def allow_in_graph(fn):
    """Asks the compiler to put calls of ``fn`` in the graph instead of tracing into them
    (einx marks its operations so when it loads). ember's compile records the ops a call runs
    whichever function runs them, so ``fn`` comes back as it is; a list or tuple of functions
    comes back as a list, and what is not callable is refused, as by torch's."""
    if isinstance(fn, (list, tuple)):
        return [allow_in_graph(f) for f in fn]
    if not callable(fn):
        raise AssertionError("allow_in_graph expects a callable")
    return fn
