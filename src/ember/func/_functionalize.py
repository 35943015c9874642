"""``functionalize`` and ``debug_unwrap``, as torch.func's.

torch's functionalization runs the function on wrappers of its inputs, turns each in-place op
into its out-of-place form, and at the end copies the final value of every input the function
mutated back into it (one ``copy_``: one version bump, torch's ``CopyBackwards`` node where it
records). ember has no wrappers: the function runs on stand-ins of the inputs, new tensors
holding a copy of each input's data and standing for it in the graph (their gradient reaches
the input's own history), so an in-place op changes only the stand-in, and the mutated
stand-ins are copied back afterwards. The values, the inputs' mutations and the graph the
outputs record are torch's.
"""
from __future__ import annotations

import functools
import weakref

from .._tensor import Tensor, _wrap
from ..autograd.graph import grad_accumulator
from ._batched_tensor import BatchedTensor

__all__ = ["functionalize", "debug_unwrap"]

_REMOVE_ERROR = (
    "functionalize(f, remove='mutations'): received invalid argument for remove={}. Valid "
    "options are:\n     remove='mutations': all inplace and out= operators will be removed "
    "from the program, and replaced with their out-of-place equivalents.\n     "
    "remove='mutations_and_views': In addition to the above, all aliasing operators {{view}} "
    "will be replaced with their non-aliasing counterparts, {{view}}_copy.\n")


def functionalize(func, *, remove="mutations"):
    """``func`` run without mutating its inputs while it runs: in-place ops change copies,
    and the inputs it mutated are updated with their final values when it returns.
    ``remove='mutations_and_views'`` also returns an output that is a view of an input as a
    tensor of its own."""
    if remove not in ("mutations", "mutations_and_views"):
        raise RuntimeError(_REMOVE_ERROR.format(remove))
    keep_views = remove == "mutations"

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        from ._transforms import _flatten, _unflatten
        leaves, spec = _flatten((args, kwargs))
        stand_ins = {}  # id(input) -> (input, its stand-in): one for an input given twice
        inner = _unflatten([_stand_in(x, stand_ins) if isinstance(x, Tensor) else x
                            for x in leaves], spec)
        output = func(*inner[0], **inner[1])
        mutated = {id(s) for x, s in stand_ins.values() if _copy_back(x, s)}
        by_stand_in = {id(s): x for x, s in stand_ins.values()}
        out_leaves, out_spec = _flatten(output)
        return _unflatten([_output(o, by_stand_in, mutated, keep_views)
                           if isinstance(o, Tensor) else o for o in out_leaves], out_spec)
    return wrapper


def _stand_in(x, stand_ins):
    """A new tensor with a copy of ``x``'s data (its layout too), whose gradient goes where
    ``x``'s goes: ``x``'s node, or for a leaf that requires grad, ``x``'s accumulator (an
    in-place op on it is refused as on the leaf itself)."""
    known = stand_ins.get(id(x))
    if known is not None:
        return known[1]
    if type(x) is BatchedTensor:  # (under vmap: a copy in the graph, as any batched op's)
        s = x.clone()
    else:
        s = _wrap(x._data.copy(order="K"))
        if x._requires_grad:
            s._requires_grad = True
            if x._grad_fn is not None:
                s._grad_fn, s._output_nr = x._grad_fn, x._output_nr
            else:
                acc = grad_accumulator(x)
                if acc is not None:
                    s._grad_acc = weakref.ref(acc)
                    s._accumulator = acc  # (held: the input's node lives as long as it)
    stand_ins[id(x)] = (x, s)
    return s


def _copy_back(x, s):
    """Copy the stand-in ``s``'s final value into ``x`` if the function mutated it (torch's
    one ``copy_`` at the end); whether it did."""
    if debug_unwrap(s)._version == 0:
        return False
    if tuple(s.shape) != tuple(x.shape):  # (resized: the input takes the new size)
        x.resize_(tuple(s.shape))
    x.copy_(s)
    return True


def _output(o, by_stand_in, mutated, keep_views):
    """An output as torch's functionalization returns it: an unmutated input given back as
    it is, a view of one as the same view of the input, a tensor the function mutated (or a
    view of one) as a new one at version 0 (or that view of it), any view as a tensor of its
    own under ``remove='mutations_and_views'``; anything else unchanged."""
    x = by_stand_in.get(id(o))
    if x is not None:
        return _own(o) if id(o) in mutated else x
    if type(o) is BatchedTensor:  # (under vmap: the batching rules' own tensors)
        return o
    from .._ops.views import replay
    base = o._base
    if base is None:  # (a tensor the function mutated is torch's out-of-place result)
        return o if o._version == 0 else _own(o)
    if not keep_views:
        return _own(o)
    x = by_stand_in.get(id(base))
    if x is not None and id(base) not in mutated:
        return replay(o._view_chain, x)
    # (a view of a mutated tensor: the same view of torch's out-of-place result)
    return o if base._version == 0 else replay(o._view_chain, _own(base))


def _own(o):
    """``o``'s value and history in a tensor of its own, at version 0: the result of the
    out-of-place ops torch's functionalization ran instead of in-place ones or views."""
    own = _wrap(o._data.copy(order="K"))
    own._grad_fn, own._output_nr, own._requires_grad = o._grad_fn, o._output_nr, o._requires_grad
    return own


def debug_unwrap(tensor, *, recurse=True):
    """The tensor under a vmap level's BatchedTensor (its physical value, the batch dimension
    first), through every level (``recurse``) or one; any other tensor as it is."""
    if not isinstance(tensor, Tensor):
        raise TypeError("is_functorch_wrapped_tensor(): incompatible function arguments. The "
                        "following argument types are supported:\n    1. (arg0: "
                        f"ember.Tensor) -> bool\n\nInvoked with: {tensor!r}")
    while type(tensor) is BatchedTensor:
        tensor = tensor._value
        if not recurse:
            break
    return tensor
