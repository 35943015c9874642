"""``autograd.graph.allow_mutation_on_saved_tensors``: tensors saved for backward may be
modified in place; backward still sees the values they had when they were saved.

torch keeps each saved tensor and clones it when an in-place op is about to write into it
(its dispatch mode sees every write first). ember's in-place ops write and then bump the
version, with no point before the write to hook into, so the pack hook keeps a copy of the
tensor at once, and the unpack hook hands back the tensor itself while its version is the one
it was saved at (no write since) and the copy otherwise: the values and gradients of torch's
scheme, for the memory of one copy of every tensor saved inside the context.
"""
from __future__ import annotations

import contextlib
from weakref import WeakKeyDictionary

from .saved_tensors import saved_tensors_hooks

_enabled = False

_OUTSIDE = ("Trying to backward outside of the 'allow_mutation_on_saved_tensors' context"
            "in which the graph was originally recorded.")  # (sic: torch's, with no space)


class _Handle:
    """What the pack hook returns: the key of a saved tensor in its context's tables."""


class _AllowMutationOnSavedContext:
    """The state of one ``allow_mutation_on_saved_tensors`` block (cleared when it exits):
    by handle, the saved tensor and its version (``original``), and its copy (``cloned``)."""

    def __init__(self):
        self.cloned = WeakKeyDictionary()
        self.original = WeakKeyDictionary()

    def clear(self):
        self.cloned.clear()
        self.original.clear()


class _swap_with_cloned(saved_tensors_hooks):
    def __init__(self, ctx):
        def pack_hook(tensor):
            handle = _Handle()
            ctx.original[handle] = (tensor, tensor._version)
            ctx.cloned[handle] = tensor.clone()
            return handle

        def unpack_hook(handle):
            if not _enabled or handle not in ctx.original:
                raise AssertionError(_OUTSIDE)
            tensor, version = ctx.original[handle]
            return tensor if tensor._version == version else ctx.cloned[handle]

        super().__init__(pack_hook, unpack_hook)


@contextlib.contextmanager
def allow_mutation_on_saved_tensors():
    """Context manager under which tensors saved for backward may be modified in place (the
    forward and the backward pass both run inside it). Yields the context's state, cleared
    when it exits; a backward pass through its graph after that raises."""
    global _enabled
    ctx = _AllowMutationOnSavedContext()
    with _swap_with_cloned(ctx):
        try:
            if _enabled:
                raise RuntimeError("allow_mutation_on_saved_tensors contexts cannot be nested")
            _enabled = True
            yield ctx
        finally:
            ctx.clear()
            _enabled = False
