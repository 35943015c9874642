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

torch's input buffer sums a second gradient into the first in place only when the first owns
its storage alone: never into a view of another tensor. ember makes some such gradients as
arrays of their own (``sum_to`` dropping leading dimensions, a view in torch, is a new array
that a leaf can take over as ``.grad`` without a copy); ``note_view`` marks them so the engine
sums out of place there too, and the gradient keeps torch's version.

Under ``create_graph`` a formula's result is a Tensor: it gets the count as its version when
it is not a view and nothing else shares its counter (no node saved it, no view or alias of
it exists), as then nothing has seen the version that torch's in-place writes raised.
"""
from __future__ import annotations

import weakref
from sys import getrefcount

from numpy import ndarray

from .._backend import is_array
from .._tensor import Tensor, _object_new as _new

_NOTES: dict = {}  # id(owner array) -> (weak reference to it, count, a view in torch)
# whether some note has a count (a version to give), or is not of a view (whose count a sum
# may raise): until then a gradient that becomes a Tensor needs no lookup (most passes note
# only views, or nothing)
_COUNTED = [False]
# id(owner array) -> (weak reference to it, the version counter of a tensor user code holds
# around that memory): a custom backward's gradient that torch takes over as it is (see
# note_counter)
_COUNTERS: dict = {}
_LIMIT = 100_000  # (passes that never end through run_backward, e.g. a compiled replay)


def _owner(a):
    base = a.base
    return a if base is None or not is_array(base) else base


def note_writes(g, count):
    """Note that torch's formula wrote ``count`` times into gradient ``g``: an array, or a
    Tensor under create_graph (see _bump_unshared)."""
    if not is_array(g):
        if count and type(g) is Tensor:
            _bump_unshared(g, count)
        return
    _note(g, count, False)


def _bump_unshared(t, count):
    """Add ``count`` to Tensor ``t``'s version if its counter is its own: one a node saved or
    a view or alias shares stays as it is (raising it would make that node's check fail, or
    a view take its base for changed in place)."""
    if t._base is not None:
        return
    vc = t._vc
    if vc is None:
        t._vc = [count]
    elif type(vc) is list and getrefcount(vc) == 3:  # (`t`, `vc` here, the argument)
        vc[0] += count


def note_view(g):
    """Note that gradient ``g`` (an array; a Tensor is left as it is) is, in torch, a view of
    another tensor's storage."""
    if type(g) is not ndarray and not is_array(g):  # (a NumPy array told without a call)
        return
    # (_note(g, 0, True)'s lines: a call fewer per note, a backward program's bias sums)
    base = g.base
    owner = g if base is None or not is_array(base) else base
    key = id(owner)
    seen = _NOTES.get(key)
    if seen is not None and seen[0]() is owner:
        _NOTES[key] = (seen[0], seen[1], True)
        return
    if len(_NOTES) >= _LIMIT:
        _NOTES.clear()
    _NOTES[key] = (weakref.ref(owner), 0, True)


def note_counter(g, vc):
    """Note that gradient array ``g`` is the memory of a tensor with version counter ``vc`` (a
    custom backward returned a view of a tensor the user holds, or one written in place):
    torch takes that tensor over as ``.grad``, and every view a node makes of it shares the
    counter, so the ``.grad`` made around ``g`` or around such a view shares ``vc``."""
    owner = _owner(g)
    if len(_COUNTERS) >= _LIMIT:
        _COUNTERS.clear()
    _COUNTERS[id(owner)] = (weakref.ref(owner), vc)
    _COUNTED[0] = True  # (so that each take-over looks the owner up: see wrap_versioned)


def _note(g, count, view):
    base = g.base  # (_owner's lines: a call fewer per note, a backward program's bias sums)
    owner = g if base is None or not is_array(base) else base
    key = id(owner)
    if count or not view:  # (so that any note not of a view implies it: see _execute)
        _COUNTED[0] = True
    seen = _NOTES.get(key)
    if seen is not None and seen[0]() is owner:
        count += seen[1]
        view = view or seen[2]
    elif len(_NOTES) >= _LIMIT:
        _NOTES.clear()
    _NOTES[key] = (weakref.ref(owner), count, view)


def _seen(g):
    owner = _owner(g)
    seen = _NOTES.get(id(owner))
    return seen if seen is not None and seen[0]() is owner else None


def writes_of(g):
    """The count noted for array ``g`` (0: none)."""
    if not is_array(g):
        return 0
    seen = _seen(g)
    return 0 if seen is None else seen[1]


def is_torch_view(g):
    """Whether array ``g`` was noted as a view of another gradient in torch."""
    seen = _seen(g)
    return seen is not None and seen[2]


def with_version(t):
    """Tensor ``t`` (just made around a gradient array) with the version noted for it, or the
    counter it shares (see note_counter)."""
    count = writes_of(t._data)
    if count:
        t._vc = [count]
    if _COUNTERS:
        _share_counter(t, t._data)
    return t


def _share_counter(t, a):
    owner = _owner(a)
    kept = _COUNTERS.get(id(owner))
    if kept is not None and kept[0]() is owner:
        t._vc = kept[1]


def wrap_versioned(a):
    """``with_version(_wrap(a))`` for a NumPy gradient array ``a``, in one call: the Tensor
    that becomes a leaf's ``.grad`` when it takes ``a`` over (once per leaf and backward)."""
    t = _new(Tensor)  # (_wrap's two lines: no call)
    t._data = a
    if _COUNTED[0]:
        base = a.base
        owner = a if base is None or not is_array(base) else base
        seen = _NOTES.get(id(owner))
        if seen is not None and seen[1] and seen[0]() is owner:
            t._vc = [seen[1]]
        if _COUNTERS:
            _share_counter(t, a)
    return t


def forget():
    _NOTES.clear()
    _COUNTERS.clear()
    _COUNTED[0] = False


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
