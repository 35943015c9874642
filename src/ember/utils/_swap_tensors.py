"""``ember.utils.swap_tensors``: two tensor objects exchange everything they hold.

Afterwards ``t1`` is what ``t2`` was (class, data, autograd state, Python attributes) and the
other way round, while each object keeps its identity: whatever holds a reference to ``t1`` (an
optimizer, a module's parameter list) sees ``t2``'s content. An ember tensor keeps all of that
in its ``__dict__``, so swapping the class, the ``__dict__`` and any slots is the whole swap.
"""
from __future__ import annotations

import copyreg
import gc
import weakref

_POISONED = ("Trying to execute AccumulateGrad node that was poisoned by swap_tensors this can "
             "happen when you try to run backward on a tensor that was swapped. For a module m "
             "with `ember.__future__.set_swap_module_params_on_conversion(True)` you should not "
             "change the device or dtype of the module (e.g. `m.cpu()` or `m.half()`) between "
             "running forward and backward. To resolve this, please only change the "
             "device/dtype before running forward (or after both forward and backward).")


def _poisoned(grad_outputs):
    raise RuntimeError(_POISONED)


def _graph_references(t):
    """How many references to ``t`` the autograd graph holds beside its gradient accumulator:
    each time a node saved it for backward, and each view of it (torch counts these on the
    tensor's storage-owning object, its use count)."""
    from .._tensor import Tensor
    from ..autograd.graph import Node
    count = 0
    sequences = {}  # (the lists and tuples holding t: a node's saved values among them)
    for holder in gc.get_referrers(t):
        # (an object's attributes show as the object itself, or as its __dict__ once made)
        if isinstance(holder, Tensor):
            holder = holder.__dict__
        if isinstance(holder, dict) and holder.get("_base") is t:
            count += 1
        elif isinstance(holder, (list, tuple)):
            sequences[id(holder)] = holder
    if not sequences:
        return count
    # which of them a node holds: one walk of gc's objects for them all (each walk visits
    # every object the collector tracks, so not one walk per sequence)
    saved = set()
    for h in gc.get_referrers(*sequences.values()):
        if isinstance(h, Node):
            saved.update(id(r) for r in gc.get_referents(h) if id(r) in sequences)
        elif type(h) is dict and id(h.get("_saved")) in sequences:
            saved.add(id(h["_saved"]))
    return count + sum(sum(v is t for v in sequences[i]) for i in saved)


def _check_use_count(t, name):
    """torch swaps only a tensor nothing else holds: at most a leaf's AccumulateGrad node,
    which is poisoned (a node saving it, or a view of it, would see the other's content)."""
    ref = t.__dict__.get("_grad_acc")
    node = None if ref is None else ref()
    count = 1 + (node is not None) + _graph_references(t)
    if count > 1:
        if count == 2 and t.is_leaf:
            # (torch looks the leaf's gradient edge up here, which fails for one that does not
            # require grad, and finds a use count of 3 if that made the accumulator)
            if not t.requires_grad:
                raise RuntimeError("It is not possible to get the gradient edge for a Tensor "
                                   "that does not require gradients")
            if node is not None:
                node.register_prehook(_poisoned)
                return
        raise RuntimeError(f"Expected use_count of {name} to be 1 or 2 with an AccumulateGrad "
                           f"node but got {count} make sure you are not holding references to "
                           "the tensor in other places.")


def _retaining(t):
    """The weak references to ``t`` that its node keeps because ``t`` retains its gradient:
    torch's are on the tensor's C++ object, which it refuses to swap while they exist."""
    fn = t.__dict__.get("_grad_fn")
    retained = None if fn is None else getattr(fn, "_retained", None)
    return [r for r in (retained or {}).values() if r() is t]


def _weakrefs(t):
    """The weak references to ``t`` beside ember's own (a base's list of the views that follow
    its requires_grad, which torch keeps in C++ where ``weakref`` does not see them)."""
    base = t.__dict__.get("_base")
    own = list((base.__dict__.get("_following_views") or ()) if base is not None else ())
    own.extend(_retaining(t))
    return [r for r in weakref.getweakrefs(t) if not any(r is o for o in own)]


def swap_tensors(t1, t2):
    """Swap the contents of the tensor objects ``t1`` and ``t2``, keeping their identities."""
    if _weakrefs(t1):
        raise RuntimeError("Cannot swap t1 because it has weakref associated with it")
    if _weakrefs(t2):
        raise RuntimeError("Cannot swap t2 because it has weakref associated with it")
    t1_slots = set(copyreg._slotnames(t1.__class__))
    t2_slots = set(copyreg._slotnames(t2.__class__))
    if t1_slots != t2_slots:
        raise RuntimeError("Cannot swap t1 and t2 if they have different slots")
    _check_use_count(t1, "t1")
    _check_use_count(t2, "t2")
    for t, name in ((t1, "t1"), (t2, "t2")):
        n = len(_retaining(t))
        if n:
            raise RuntimeError(f"Expected no weakrefs to {name}'s Tensor object but got  {n}")
    t1.__class__, t2.__class__ = t2.__class__, t1.__class__
    t1.__dict__, t2.__dict__ = t2.__dict__, t1.__dict__
    for slot in t1_slots:
        missing = object()
        v1, v2 = getattr(t1, slot, missing), getattr(t2, slot, missing)
        for t, v in ((t1, v2), (t2, v1)):
            if v is missing:
                if hasattr(t, slot):
                    delattr(t, slot)
            else:
                setattr(t, slot, v)
