"""``ember.compiler``: torch.compiler's functions around :func:`ember.compile`."""
from __future__ import annotations

from .._compile.api import compile, disable, is_compiling, list_backends
from .._compile.compiled import reset

__all__ = ["compile", "disable", "is_compiling", "is_dynamo_compiling", "list_backends",
           "reset"]


def is_dynamo_compiling() -> bool:
    """Same as :func:`is_compiling` (ember has one recorder)."""
    return is_compiling()
