"""The version counts of gradients that torch's backward formulas write in place.

torch computes some gradients by writing into a new tensor of zeros (``index_put_``,
``scatter_``, ``copy_`` into a slice), so the gradient of indexing, ``gather``, ``sort``,
``max(dim)``... has ``_version`` 1 or 2, and its input buffer adds a second gradient into the
first in place (one more). ember's first-order formulas make such gradients without in-place
writes, as arrays with no counter; a formula declared with ``writes`` (``@op.grad("self",
writes=2)``) notes the count against its array here, the engine's in-place sum of two
gradients adds one, and the engine gives a gradient that becomes a Tensor user code sees (a
``.grad`` taken over, a hook's argument, what ``autograd.grad`` returns) that version.

An array is noted by the array that owns its memory, so the views a gradient passes through
afterwards (a ``view``'s or ``t``'s backward) keep its count, as views share torch's counter.
The notes of a backward pass are dropped when it ends.
"""
from __future__ import annotations

import weakref

from .._backend import is_array

_NOTES: dict = {}  # id(owner array) -> (weak reference to it, count)
_LIMIT = 100_000  # (passes that never end through run_backward, e.g. a compiled replay)


def _owner(a):
    base = a.base
    return a if base is None or not is_array(base) else base


def note_writes(g, count):
    """Note that torch's formula wrote ``count`` times into gradient ``g`` (an array; a
    Tensor under create_graph is left alone: nodes may have saved it already)."""
    if not is_array(g):
        return
    owner = _owner(g)
    key = id(owner)
    seen = _NOTES.get(key)
    if seen is not None and seen[0]() is owner:
        count += seen[1]
    elif len(_NOTES) >= _LIMIT:
        _NOTES.clear()
    _NOTES[key] = (weakref.ref(owner), count)


def writes_of(g):
    """The count noted for array ``g`` (0: none)."""
    if not is_array(g):
        return 0
    owner = _owner(g)
    seen = _NOTES.get(id(owner))
    return seen[1] if seen is not None and seen[0]() is owner else 0


def with_version(t):
    """Tensor ``t`` (just made around a gradient array) with the version noted for it."""
    count = writes_of(t._data)
    if count:
        t._vc = [count]
    return t


def forget():
    _NOTES.clear()


def writing(formula, count):
    """``formula`` noting ``count`` writes against each gradient it returns."""
    def written(*args):
        out = formula(*args)
        if type(out) is tuple:
            for o in out:
                note_writes(o, count)
        else:
            note_writes(out, count)
        return out
    written.__wrapped__ = formula
    return written
