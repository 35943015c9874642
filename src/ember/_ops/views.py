"""In-place ops on views: how the base's history is rewritten, as torch does it.

Every view remembers the chain of view ops that made it from its base (``_view_chain``), so
the same region can be cut out of any array of the base's shape by replaying the chain. When
an in-place op ``fn`` modifies a view that is part of a graph:

- the base's history becomes a ``CopySlices`` node: in backward it takes the base's gradient,
  hands the view's region of it to ``fn``, writes ``fn``'s gradient for the old view value back
  into that region, and passes the rest through to the base's old history;
- the view's own grad_fn becomes a fresh view of the base's new history (``AsStridedBackward0``,
  torch's name for it). Other views of the same base notice the version change and regenerate
  theirs the same way when next used.
"""
from __future__ import annotations

import numpy as np

from .._state import state
from ..autograd.graph import Node, short_node_name
from .registry import NONE, op


def replay(chain, x):
    """Cut the view described by ``chain`` out of ``x`` (an array or a Tensor of base shape)."""
    for view_op, rest, index in chain:
        x = view_op(x, *rest)
        if index is not None:
            x = x[index]
    return x


@op("view_scatter", tensors=2, promote=NONE, node="ViewScatterBackward0")
def view_scatter(self, src, chain):
    """A copy of ``self`` whose ``chain`` region is replaced by ``src``."""
    out = np.array(self, copy=True)
    replay(chain, out)[...] = src
    return out


@view_scatter.grad("self")
def _(grad, chain):
    return view_scatter(grad, 0, chain)


@view_scatter.grad("src")
def _(grad, chain):
    return replay(chain, grad)


@op("as_strided", promote=NONE, node="AsStridedBackward0")
def view_of_base(self, chain):
    """The view ``chain`` cuts out of ``self``: how a view's history is regenerated."""
    return replay(chain, self)


@view_of_base.grad("self")
def _(grad, self_shape, chain):
    return view_backward(grad, self_shape, chain)


@op("as_strided_backward", promote=NONE, node="AsStridedBackwardBackward0")
def view_backward(grad, input_sizes, chain):
    out = np.zeros(input_sizes, grad.dtype)
    replay(chain, out)[...] = grad
    return out


@view_backward.grad("grad")
def _(grad, chain):
    return replay(chain, grad)


class CopySlices(Node):
    """The base's node after an in-place op on one of its views."""

    def __init__(self, base_edge, base_meta, fn, chain):
        self._fn = fn
        self._chain = chain
        self._next = (base_edge,) + fn._next[1:]
        self._meta = [base_meta] + list(fn._meta[1:])
        self._seq = fn._seq

    def name(self) -> str:
        return "torch::autograd::CopySlices"

    def _apply(self, grads, graph, needed):
        g = grads[0]
        chain, fn = self._chain, self._fn
        # NOTE: fn's own first edge is not part of the graph (this node replaced it), so fn
        # must not skip its first input's gradient as "not needed": ask for all of them.
        needed = None
        if graph:
            sub = fn._apply([replay(chain, g)], True, needed)
            result = view_scatter(g, 0 if sub[0] is None else sub[0], chain)
        else:
            result = np.array(g, copy=True)
            region = replay(chain, result)
            sub = fn._apply([np.array(region, copy=True)], False, needed)
            region[...] = 0 if sub[0] is None else sub[0]
        return [result] + list(sub[1:])

    def _release(self):
        self._fn._release()


# -- bookkeeping used by the registry ----------------------------------------------------------
def mark_view(view_op, base, result, args, index):
    """Make ``result`` a view of ``base``'s root, remembering how to cut it out again."""
    root = base._base if base._base is not None else base
    link = ((view_op, tuple(args[1:]), index),)
    result._base = root
    result._view_chain = (base._view_chain + link) if base._base is not None else link
    result._vc = base._version_counter()
    result._view_version = result._vc[0]
    if not state.grad_enabled:
        result._view_no_grad = True
    if index is not None:
        result._view_multi = True


def refresh(view):
    """Regenerate a view's grad_fn if its base changed in place since it was set."""
    if view._view_version == view._vc[0]:
        return
    view._view_version = view._vc[0]
    base = view._base
    if base._grad_fn is None:
        return
    regen = _regenerate(view, base)
    view._grad_fn, view._output_nr = regen._grad_fn, regen._output_nr
    view._requires_grad = True


def _regenerate(view, base):
    prev = state.grad_enabled
    state.grad_enabled = True
    try:
        return view_of_base(base, view._view_chain)
    finally:
        state.grad_enabled = prev


_MULTI_VIEW = ("Output {nr} of {name} is a view and is being modified inplace. This view is the "
               "output of a function that returns multiple views. Such functions do not allow "
               "the output views to be modified inplace. You should replace the inplace "
               "operation by an out-of-place one.")
_NO_GRAD_VIEW = ("A view was created in no_grad mode and is being modified inplace with grad "
                 "mode enabled. Given that this use case is ambiguous and error-prone, it is "
                 "forbidden. You can clarify your code by moving both the view and the inplace "
                 "either both inside the no_grad block (if you don't want the inplace to be "
                 "tracked) or both outside (if you want the inplace to be tracked).")


def check_view_inplace(view):
    """torch's refusals for in-place ops on views while grad is being recorded."""
    if view._view_multi:
        fn = view._grad_fn
        name = short_node_name(fn) if fn is not None else "a multi-output view function"
        raise RuntimeError(_MULTI_VIEW.format(nr=view._output_nr, name=name))
    if view._view_no_grad and (view._base._requires_grad or view._requires_grad):
        raise RuntimeError(_NO_GRAD_VIEW)


def rebase_view(view, fn):
    """After ``fn`` modified ``view`` in place: CopySlices on the base, regenerated view."""
    base = view._base
    d = base._data
    base_edge = _base_edge(base)
    cs = CopySlices(base_edge, (d.shape, d.dtype), fn, view._view_chain)
    base._grad_fn, base._output_nr, base._requires_grad = cs, 0, True
    view._view_version = -1  # force regeneration from the new history
    refresh(view)


def _base_edge(base):
    from ..autograd.graph import gradient_edge
    return gradient_edge(base)

