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

import weakref

import numpy as np

from .._backend import get_xp, resolve_bits, scatter_add
from .._state import state
from .._tensor import DetachedCounter, Tensor
from ..autograd.graph import (ERR_FREED, Node, follow_base, move_retained_grad,
                              register_following_view, short_node_name)
from .empty_views import placed
from .inplace import has_internal_overlap
from .registry import NONE, _sequence, op, record
from .shape import _CONTIGUOUS, clone

_new = object.__new__
_weakref = weakref.ref


class ViewChain:
    """The view ops that cut a view out of its base, root first: each view adds one link to its
    parent view's chain, in O(1), sharing it (so 100,000 chained views cost 100,000 links, not
    a copy of the chain each). Iterating it walks back to the root once."""

    __slots__ = ("parent", "link")

    def __init__(self, parent, link):
        self.parent = parent  # the chain of the view this one was cut from (None: the base)
        self.link = link  # (view_op, its other arguments, index of a multi-output op's output)

    def __iter__(self):
        links = []
        node = self
        while node is not None:
            links.append(node.link)
            node = node.parent
        return reversed(links)


def extend_chain(chain, view_op, rest, index=None):
    """``chain`` (a view's, or None for a base) followed by one more view op."""
    return ViewChain(chain or None, (view_op, tuple(rest), index))


def replay(chain, x):
    """Cut the view described by ``chain`` out of ``x`` (an array or a Tensor of base shape)."""
    for view_op, rest, index in chain:
        out = view_op(x, *rest)
        if index is not None:
            out = out[index]
        if not isinstance(out, Tensor) and out.size == 0:  # (a Tensor is placed already)
            out = placed(view_op, x, out, (x,) + rest, index)
        x = out
    return x


_BIT_VIEWS = {"conj": "_conj_bit", "_neg_view": "_neg_bit"}


def cut(chain, x):
    """The memory of array ``x`` that the view ``chain`` describes (``replay``'s region, a view
    of ``x`` where replay's values of a conjugate view are a new array), and the (conjugate,
    negative) bits its values show: how a gradient is written back through such a view."""
    from .._backend import storage_of
    bits = {"_conj_bit": False, "_neg_bit": False}
    start = storage_of(x)[1]
    for view_op, rest, index in chain:
        bit = _BIT_VIEWS.get(getattr(view_op, "name", None))
        if bit is not None:  # (conj and _neg_view keep the geometry: the bit alone changes)
            bits[bit] = not bits[bit]
            continue
        out = view_op(x, *rest)
        if index is not None:
            out = out[index]
        if out.size == 0:
            out = placed(view_op, x, out, (x,) + rest, index)
        bits["_conj_bit"], bits["_neg_bit"] = view_bits(bits["_conj_bit"], bits["_neg_bit"],
                                                        out, start)
        x = out
    return x, bits["_conj_bit"], bits["_neg_bit"]


@op("view_scatter", tensors=2, promote=NONE, node="ViewScatterBackward0", complex_grad=True)
def view_scatter(self, src, chain):
    """A copy of ``self`` whose ``chain`` region is replaced by ``src``."""
    out = self.copy()
    region, conj, neg = cut(chain, out)
    if conj or neg:  # (in the region's dtype: a real view's pairs, a number broadcast)
        xp = get_xp(out)
        src = resolve_bits(xp.broadcast_to(xp.asarray(src, region.dtype), region.shape), conj, neg)
    region[...] = src
    return out


@view_scatter.grad("self")
def _(grad, chain):
    return view_scatter(grad, 0, chain)


@view_scatter.grad("src")
def _(grad, chain):
    return replay(chain, grad)


@op("_view_of_base", aten="aten::as_strided", promote=NONE, node="AsStridedBackward0")
def view_of_base(self, chain, geometries=None):
    """The view ``chain`` cuts out of ``self``: how a view's history is regenerated.
    ``geometries``: the base's and the view's ``strided.geometry``, for create_graph."""
    return replay(chain, self)


@view_of_base.grad("self", writes=1)
def _(grad, self_shape, chain, geometries):
    if isinstance(grad, Tensor) and geometries is not None:
        # create_graph: torch regenerates the view as base.as_strided(view's geometry), so
        # the graph its gradient records is as_strided's (CopySlices into a zero storage,
        # then the base's view of it)
        from .strided import _composed_backward
        base, view = geometries
        return _composed_backward(grad, base, view[0], view[1], view[2])
    out = view_backward(grad, self_shape, chain)
    return out if geometries is None else _in_zero_storage(out, *geometries)


@op("_view_of_base_backward", aten="aten::as_strided_backward", promote=NONE,
    node="AsStridedBackward0")
def view_backward(grad, input_sizes, chain):
    xp = get_xp(grad)
    out = xp.zeros(input_sizes, grad.dtype)
    region = replay(chain, out)
    if has_internal_overlap(region):
        # An expanded view: several of its elements are one element of the base, whose
        # gradient is their sum (assigning would keep only the last of them).
        where = replay(chain, xp.arange(out.size).reshape(out.shape))
        values = xp.broadcast_to(grad, where.shape).reshape(-1)
        scatter_add(out.reshape(-1), where.reshape(-1), values)
    else:
        region[...] = grad
    return out


def _in_zero_storage(grad, base, view):
    """``grad`` (of the base's shape) as torch's as_strided_backward returns it: the base's
    geometry in a zero "storage" that starts where the base or the view starts, whichever is
    first, so a view (of that storage) that the backward pass made. Only where the base's
    elements fill a block of memory densely (in some order of its dimensions), the only layout
    one reshape and transpose give; else ``grad`` itself."""
    shape, strides, offset, _ = base
    order = sorted(range(len(shape)), key=lambda d: -strides[d])
    step = 1
    for d in reversed(order):
        if shape[d] != 1 and strides[d] != step:
            return grad
        step *= shape[d]
    start = offset - min(offset, view[2])
    extent = max(start + grad.size, view[2] - min(offset, view[2]) + 1 + sum(
        (n - 1) * st for n, st in zip(view[0], view[1])))
    storage = get_xp(grad).zeros(extent, grad.dtype)
    out = storage[start:start + grad.size].reshape([shape[d] for d in order])
    out = out.transpose([order.index(d) for d in range(len(shape))])
    out[...] = grad
    return out


@view_backward.grad("grad")
def _(grad, chain):
    return replay(chain, grad)


def _refuse_internal_overlap(region):
    """torch's CopySlices writes the view's gradient back through the view: impossible for a
    view whose elements share memory (an expanded view), which torch refuses."""
    if has_internal_overlap(region._data if isinstance(region, Tensor) else region):
        from .inplace import _INTERNAL_OVERLAP
        raise RuntimeError(_INTERNAL_OVERLAP)


class CopySlices(Node):
    """The base's node after an in-place op on one of its views."""

    def __init__(self, base_edge, base_meta, fn, chain, geometries=None):
        self._fn = fn
        self._chain = chain
        self._geometries = geometries  # (the base's, the view's), see _copy_geometries
        self._next = (base_edge,) + fn._next[1:]
        self._meta = [base_meta] + list(fn._meta[1:])
        shown = fn._edge_positions()  # (kept: _release drops fn)
        self._shown = None if shown is None else (0,) + tuple(k for k in shown if k > 0)
        # a number of its own, after fn's, as torch's: nodes sharing one would tie in the
        # engine's ready queue
        self._seq = next(_sequence)

    def name(self) -> str:
        return "torch::autograd::CopySlices"

    def _edge_positions(self):
        return self._shown

    def _apply(self, grads, graph, needed):
        g = grads[0]
        chain, fn = self._chain, self._fn
        if fn is None:
            raise RuntimeError(ERR_FREED)
        # NOTE: torch writes the view's gradient back through the view only when the base
        # needs a gradient, and refuses then if the view is an expanded one (its geometry
        # is checked on a fresh array: the incoming gradient may itself be a broadcast).
        wanted = self._wanted(needed)
        base_needed = wanted[0]
        # NOTE: fn's own first edge is not part of the graph (this node replaced it), so fn
        # must not skip its first input's gradient as "not needed": ask for all of them.
        needed = None
        if graph:
            if base_needed:
                _refuse_internal_overlap(replay(chain, np.empty(g.shape, g._data.dtype)))
            if self._geometries is not None:
                return self._keep_wanted(self._apply_recorded(g, fn, base_needed), wanted)
            sub = fn._apply([replay(chain, g)], True, needed)
            result = (view_scatter(g, 0 if sub[0] is None else sub[0], chain)
                      if base_needed else None)
        elif base_needed:
            result = g.copy()
            region, conj, neg = cut(chain, result)
            _refuse_internal_overlap(region)
            sub = fn._apply([resolve_bits(region, conj, neg)], False, needed)
            region[...] = 0 if sub[0] is None else resolve_bits(
                get_xp(result).asarray(sub[0]), conj, neg)
        else:
            result = None
            sub = fn._apply([replay(chain, g).copy()], False, needed)
        return self._keep_wanted([result] + list(sub[1:]), wanted)

    def _wanted(self, needed):
        """Which of the node's inputs get a gradient: as torch's task_should_compute_output,
        those with an edge that leads to a wanted input (``needed`` None: every edge)."""
        return [child is not None and (needed is None or child in needed)
                for child, _ in self._next]

    @staticmethod
    def _keep_wanted(grads, wanted):
        """``grads`` with None for the inputs that get none: fn computes every gradient (its
        first edge is not in the graph), but torch's node returns (and its hooks see) only
        the wanted ones."""
        return [g if w else None for g, w in zip(grads, wanted)]

    def _apply_recorded(self, g, fn, base_needed):
        """The create_graph pass, in torch's recorded steps: the gradient copied into a
        tensor of the base's geometry (CopyBackwards), the view's region of it cut out by
        as_strided, fn run on a clone of that region, and fn's gradient for the old view
        value copied back into it (the copy's own CopySlices)."""
        (shape, strides, offset, _), view = self._geometries
        result = g.new_empty_strided(shape, strides)
        result.copy_(g)
        if view is None:
            # (a view of another dtype, or with a conj/neg bit: no geometry in the base's
            # elements gives it, so torch cuts it out with the view's function instead)
            region = _replayed_runs(result, self._chain, _strided_view)
        else:
            size, stride, view_offset, _ = view
            region = result.as_strided(size, stride,
                                       result.storage_offset() + view_offset - offset)
        sub = fn._apply([clone(region, memory_format=_CONTIGUOUS)], True, None)
        if not base_needed:
            return [None] + list(sub[1:])
        region.copy_(region.new_zeros(()) if sub[0] is None else sub[0])
        return [result] + list(sub[1:])

    def _release(self):
        # NOTE: as torch's, drops fn rather than freeing what fn saved: a create_graph pass
        # may have put fn in a graph of its own (a formula reading fn's saved result), where
        # it still has to run.
        self._fn = None


# -- bookkeeping used by the registry ----------------------------------------------------------
def mark_view(view_op, base, result, args, index):
    """Make ``result`` a view of ``base``'s root, remembering how to cut it out again.
    Returns the grad mode it read (the generated caller of a view op reads it no more)."""
    if result._data.size == 0:  # (NumPy's address and strides of an empty view are not torch's)
        result._data = placed(view_op, base._data, result._data, args, index)
    # (extend_chain and Tensor._version_counter written out: this runs once per view op)
    parent = base._base
    if parent is None:
        root, chain = base, None
    else:
        root, chain = parent, base._view_chain or None
        if "_phys" in base.__dict__:  # (a view of a conjugate view: the bit goes with it)
            carry_bits(base, result, view_op)
    result._base = root
    link = _new(ViewChain)  # (ViewChain(chain, ...) without its __init__'s frame)
    link.parent = chain
    link.link = (view_op, args[1:] if type(args) is tuple else tuple(args[1:]), index)
    result._view_chain = link
    vc = base._vc
    if vc is None:
        vc = base._vc = [0]
    elif type(vc) is DetachedCounter:
        vc = vc.shared
    result._vc = vc
    result._view_version = vc[0]
    # torch's CreationMeta: a view made in inference mode, in no_grad mode, or by a
    # multi-output op, may not be modified in place while grad is recorded; a view of such a
    # view made without either inherits its mark (inference mode's, whatever the new view is).
    # (each read of the per-thread state costs as much as a few plain attributes: once each)
    grad_enabled = state.grad_enabled
    if parent is not None and base._view_inference:
        result._view_inference = True
    elif state.inference:
        result._view_inference = True
    elif not grad_enabled:
        result._view_no_grad = True
    elif index is not None:
        result._view_multi = True
    elif parent is not None:
        result._view_no_grad = base._view_no_grad
        result._view_multi = base._view_multi
    if not grad_enabled or not root._requires_grad:  # no node of its own ties it to root
        if root._requires_grad:
            result._requires_grad = True  # torch: a view requires grad when its base does
        # (an integer root too: it requires grad after ``int_tensor[...] = w``, see
        # inplace.dispatch_inplace)
        # (register_following_view written out but for its pruning: every W.t() in a formula,
        # every sum's expanded gradient)
        views = root._following_views
        if views is None:
            root._following_views = [_weakref(result)]
        elif len(views) < 64:
            views.append(_weakref(result))
        else:
            register_following_view(root, result)
    return grad_enabled


def carry_bits(base, view, view_op=None):
    """Make ``view``, cut by ``view_op`` out of the values of ``base`` (a tensor with a
    conjugate or negative bit, see Tensor's _BitValues), a view of ``base``'s memory with the
    bits its values show, as torch's views of a conjugate view are (conj and _neg_view flip
    their bit: their values are laid out as the memory is)."""
    from .._backend import data_address, storage_of, strided_view
    values = view.__dict__.get("_data")
    if values is None or values.size == 0:  # (an empty view shares no element: its bits only)
        view._conj_bit = base.__dict__.get("_conj_bit", False) and _is_complex(values)
        return
    phys = base.__dict__["_phys"]
    _, values_start, _ = storage_of(values)
    _, phys_start, _ = storage_of(phys)
    region = strided_view(phys, values.shape, values.strides,
                          phys_start + data_address(values) - values_start, values.dtype)
    d = base.__dict__
    bits = {"_conj_bit": d.get("_conj_bit", False), "_neg_bit": d.get("_neg_bit", False)}
    flipped = _BIT_VIEWS.get(getattr(view_op, "name", None))
    if flipped is not None:
        bits[flipped] = not bits[flipped]
    conj, neg = view_bits(bits["_conj_bit"], bits["_neg_bit"], region, phys_start)
    del view.__dict__["_data"]
    view.__dict__.pop("_conj_bit", None)
    view.__dict__.pop("_neg_bit", None)
    set_bits(view, region, conj, neg)


def _is_complex(values):
    return values is not None and values.dtype.kind == "c"


def view_bits(conj, neg, region, storage_start):
    """The (conjugate, negative) bits of ``region``, a view of a memory shown with the bits
    ``conj`` and ``neg`` (whose storage starts at ``storage_start``): those, but for a real
    view of a conjugated complex memory (``.real``, ``.imag``): torch's real part of a
    conjugate is a plain view, its imaginary part a view with the negative bit. A real view
    holding both parts (view_as_real's, inside ``imag``) keeps the conjugate bit: it negates
    the imaginary parts it holds."""
    if conj and region.dtype.kind != "c":
        part = _complex_part(region, storage_start)
        if part is not None:
            return False, neg != (part == 1)
    return conj, neg


def _complex_part(region, storage_start):
    """0 when every element of ``region`` (a real view of a complex storage) is a real part, 1
    when every one is an imaginary part, None when it holds both."""
    from .._backend import data_address
    item = region.itemsize
    first = data_address(region) - storage_start
    if any(n > 1 and st % (2 * item) for n, st in zip(region.shape, region.strides)):
        return None
    return (first // item) % 2


def set_bits(t, phys, conj, neg):
    """Make ``t`` show ``phys`` (an array of its memory) with the bits ``conj`` and ``neg``;
    with neither, ``phys`` is its plain ``_data``."""
    if conj or neg:
        t._phys = phys
        if conj:
            t._conj_bit = True
        if neg:
            t._neg_bit = True
    else:
        t._data = phys


def refresh(view):
    """Regenerate a view's grad_fn if its base changed in place since it was set (torch's
    VariableHooks::grad_fn); refuse it for views that may not be rebased."""
    if view._view_version == view._vc[0]:
        return
    base = view._base
    if view._grad_fn is None and not base._requires_grad:
        return  # a view outside any graph: nothing to regenerate
    if view._view_no_grad or view._view_multi or view._view_inference or view._view_custom:
        raise rebase_error(view, indirect=True)
    _regenerate_into(view)


def history_refused(view):
    """Whether reading ``view``'s grad_fn raises (refresh's refusal): its base changed in
    place since the view was made, and it may not be rebased (made in no_grad or inference
    mode, or by a multi-output op such as split)."""
    return (view._view_version != view._vc[0]
            and (view._grad_fn is not None or view._base._requires_grad)
            and (view._view_no_grad or view._view_multi or view._view_inference
                 or view._view_custom))


def _regenerate_into(view):
    old_fn, old_nr = view._grad_fn, view._output_nr
    view._view_version = view._vc[0]
    prev = state.grad_enabled
    state.grad_enabled = True
    try:
        _rechain_if_base_relaid(view)
        regen = _regenerated(view._base, view._view_chain)
    finally:
        state.grad_enabled = prev
    view._grad_fn, view._output_nr = regen._grad_fn, regen._output_nr
    view._requires_grad = True
    if view._retains_grad:
        move_retained_grad(view, old_fn, old_nr)


def _regenerated(base, chain):
    """The view ``chain`` cuts out of ``base``, made again from ``base``'s history: torch's
    as_strided of the view's geometry, or where the chain has conj, _neg_view, view_as_real or
    view_as_complex (which no as_strided gives) torch's replay of the view: an as_strided for
    each run of the other view ops, those ops' own nodes between them."""
    return _replayed_runs(base, chain, _regenerated_strided)


def _replayed_runs(base, chain, strided):
    """The view ``chain`` cuts out of tensor ``base`` as torch's view function replays it:
    conj, _neg_view, view_as_real and view_as_complex by their own ops, each run of the other
    view ops between them by ``strided(base so far, the run's chain)``."""
    run = None
    for link in chain:
        if getattr(link[0], "name", None) in _REPLAYED:
            if run is not None:
                base, run = strided(base, run), None
            base = link[0](base, *link[1])
        else:
            run = ViewChain(run, link)
    return base if run is None else strided(base, run)


def _strided_view(x, chain):
    """``x.as_strided`` to the geometry ``chain`` cuts out of it: a view, so writes to it
    reach ``x``'s history as well as its memory."""
    from .strided import geometry
    size, stride, offset, _ = geometry(replay(chain, x._data))
    return x.as_strided(size, stride, offset)


# view ops torch's regenerated view replays with their own nodes (its view functions)
_DTYPE_VIEWS = frozenset({"view_as_real", "view_as_complex"})
_REPLAYED = frozenset(_BIT_VIEWS) | _DTYPE_VIEWS


def _regenerated_strided(base, chain):
    geometries = _geometries_of(base._data, chain)
    regen = view_of_base(base, chain, geometries)
    if regen._grad_fn is None:
        # the base no longer requires grad (detached in place): torch still regenerates
        # the view's AsStridedBackward0, with no edge
        record(view_of_base, (base, chain, geometries), (regen,))
    return regen


def _rechain_if_base_relaid(view):
    """torch regenerates a view as an as_strided of the view's own geometry in its base's
    storage. Where the base's layout changed in place since (``t_``, ``squeeze_``...), the
    view ops recorded no longer cut the view out of it: that as_strided becomes the chain."""
    from .strided import _as_strided, geometry
    base, own = view._base._data, geometry(view._data)
    try:
        if geometry(replay(view._view_chain, base)) == own:
            return
    except (RuntimeError, IndexError):  # (the recorded ops refuse the base's new layout:
        # select of a base squeezed to 0-d raises IndexError)
        pass
    view._view_chain = extend_chain(None, _as_strided, (own[0], own[1], own[2], geometry(base)))


def _geometries(view):
    """The strided geometry of ``view``'s base and of the view cut out of it, as torch's
    regenerated ``as_strided`` reads them; None where they are no such geometry (a negative
    stride, a view not in its base's memory)."""
    return _geometries_of(view._base._data, view._view_chain)


def _copy_geometries(view):
    """CopySlices' ``_geometries``: the base's geometry and the view's, or None for the view
    where its chain changes the dtype (view_as_real, view_as_complex: torch replays those
    rather than as_strided, see _replayed_runs). A chain with conj or _neg_view has none
    (its values are not the base's memory): CopySlices writes through view_scatter."""
    names = {getattr(view_op, "name", None) for view_op, _, _ in view._view_chain}
    if names & _DTYPE_VIEWS and not names & set(_BIT_VIEWS):
        from .strided import geometry
        base = geometry(view._base._data)
        return None if any(st < 0 for st in base[1]) else (base, None)
    return _geometries(view)


def _geometries_of(base, chain):
    from .._backend import storage_of
    from .strided import geometry
    cut = replay(chain, base)
    if storage_of(cut)[1] != storage_of(base)[1]:
        return None
    geometries = geometry(base), geometry(cut)
    if any(st < 0 for g in geometries for st in g[1]):
        return None
    return geometries


_MULTI_VIEW = (" This view is the output of a function that returns multiple views. Such "
               "functions do not allow the output views to be modified inplace. You should "
               "replace the inplace operation by an out-of-place one.")
_CUSTOM_VIEW = (" This view was created inside a custom Function (or because an input was "
                "returned as-is) and the autograd logic to handle view+inplace would override "
                "the custom backward associated with the custom Function, leading to incorrect "
                "gradients. This behavior is forbidden. You can fix this by cloning the output "
                "of the custom Function.")
_NO_GRAD_VIEW = (" Given that this use case is ambiguous and error-prone, it is forbidden. You "
                 "can clarify your code by moving both the view and the inplace either both "
                 "inside the {} block (if you don't want the inplace to be tracked) or both "
                 "outside (if you want the inplace to be tracked).")


def rebase_error(view, indirect):
    """torch's handle_view_on_rebase: the error for rewriting the history of a view made in
    no_grad mode or by a multi-output op, directly or (``indirect``) through its base."""
    fn = view._grad_fn
    what = "its base or another view of its base has been" if indirect else "is being"
    if view._view_no_grad or view._view_inference or fn is None:
        head = (f"Output {view._output_nr} of {short_node_name(fn)} is a view of a view which "
                "was created in" if fn is not None else "A view was created in")
        if view._view_inference:
            msg = f"{head} inference mode and {what} modified inplace in normal mode."
        else:
            msg = f"{head} no_grad mode and {what} modified inplace with grad mode enabled."
    else:
        msg = (f"Output {view._output_nr} of {short_node_name(fn)} is a view and {what} "
               "modified inplace.")
    if view._view_multi:
        return RuntimeError(msg + _MULTI_VIEW)
    if view._view_custom:
        return RuntimeError(msg + _CUSTOM_VIEW)
    block = "inference_mode" if view._view_inference else "no_grad"
    return RuntimeError(msg + _NO_GRAD_VIEW.format(block))


def check_view_inplace(view):
    """torch's refusals for in-place ops on views while grad is being recorded."""
    if view._view_no_grad or view._view_multi or view._view_inference or view._view_custom:
        raise rebase_error(view, indirect=False)


def rebase_view(view, fn):
    """After ``fn`` modified ``view`` in place: CopySlices on the base, regenerated view."""
    base = view._base
    d = base._data
    base_edge = _base_edge(base)
    # (a base whose own elements share memory has no geometry to copy a gradient into)
    geometries = None if has_internal_overlap(d) else _copy_geometries(view)
    cs = CopySlices(base_edge, (d.shape, d.dtype), fn, view._view_chain, geometries)
    old_fn, old_nr = base._grad_fn, base._output_nr
    gained = not base._requires_grad
    base._grad_fn, base._output_nr, base._requires_grad = cs, 0, True
    if gained and base._following_views is not None:
        follow_base(base)
    if base._retains_grad:
        move_retained_grad(base, old_fn, old_nr)
    _regenerate_into(view)


def _base_edge(base):
    from ..autograd.graph import gradient_edge
    return gradient_edge(base)


def inference_only_call(tensors):
    """Whether a call reads inference tensors only, outside inference mode: torch then runs
    its kernel with no autograd layer, so what a composite kernel does to its fresh result
    (views of it, in-place writes) shows (see ``view_of_fresh`` and registry op()'s
    ``writes``)."""
    return not state.inference and all(
        t._is_inference for t in tensors if isinstance(t, Tensor))


def view_of_fresh(result, base_shape):
    """``result`` as torch's composite kernel returns it there when the kernel ends with a
    view of a tensor it made (stack: cat, then view; repeat: its output written through an
    alias): a view of a base of ``base_shape`` that holds the result's version."""
    from .._tensor import _wrap
    base = _wrap(result._data.reshape(base_shape))
    base._vc = result._vc
    return base.view(tuple(result.shape))
