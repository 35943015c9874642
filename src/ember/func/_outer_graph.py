"""Which of a transform's results the outer graph records (torch's functorch levels).

torch.func wraps a transform's inputs at a new level; autograd at the levels outside keeps
recording through everything else. ember has one graph, so a transform differentiates w.r.t.
fresh leaves of its own and then sorts its results: one whose graph reaches anything but those
leaves (a captured tensor that requires grad, an input that does, an outer transform's leaf)
keeps that graph, as torch's result keeps the outer levels' history; one whose graph reaches only
the fresh leaves is, to the levels outside, a constant, and is returned without history.

The fresh leaves of a transform are outer only to the transforms called inside it, while it
runs: once it has returned, no level outside can differentiate w.r.t. them (torch unwraps
them), so a graph that reaches them there reaches nothing outer through them.

Deciding this needs the function's outputs, so a transform runs the function first and asks
:meth:`OuterGraph.needs_graph` whether its derivatives must be recorded (``create_graph``).
"""
from __future__ import annotations

import itertools
import threading

from .._ops.shape import cat
from .._state import state
from .._tensor import Tensor, _wrap
from ..autograd import forward_ad as fwAD
from ..autograd import graph as _graph
from ..autograd.graph import AccumulateGrad
from ._batched_tensor import below_every_level
from ._batching import _levels as _vmap_levels  # (the list itself: vmap pushes and pops it)


_calls = itertools.count(1)


class _Running(threading.local):
    calls = ()  # the transform calls running now in this thread, outermost first
    plain_records = False  # whether plain autograd recorded where the outermost was called


_running = _Running()


def plain_autograd_records():
    """Whether plain autograd records the running transforms' ops (grad mode was on where
    the outermost of them was called)."""
    return _running.plain_records


class OuterGraph:
    """The levels outside one transform call (made where the transform is called: under
    no_grad no level outside records)."""

    def __init__(self):
        self.recording = state.grad_enabled
        self.call = next(_calls)
        self.enclosing = frozenset(_running.calls)  # the transform calls this one runs in
        self.fresh = set()  # ids of the transform's own leaves (none for jvp and jacfwd)
        self.inputs = {}  # id of a fresh tensor -> the input it stands for
        # nodes whose whole subgraph reaches only fresh leaves, by id (held, so that no new
        # node takes the id of one freed since)
        self.inner_only = {}

    def own(self, fresh, inputs):
        """Note ``fresh`` as the transform's own leaves (and whose they are, for the
        transforms called inside this one), standing for ``inputs``; returns it."""
        for t, inp in zip(fresh, inputs):
            self.inputs[id(t)] = inp
            if t.grad_fn is None:
                self.fresh.add(id(t))
                t._func_call = self.call
                # (the vmap levels it lies inside: under vmap(grad(f)) f's tensors are the
                # grad's wrappers, under grad(vmap(f)) they are batched)
                t._func_vmap_depth = len(_vmap_levels)
        return fresh

    def mark_inputs(self, inputs):
        """Note ``inputs`` as the transform's own tensors (jvp's duals) without
        differentiating w.r.t. them: where the function makes one require grad
        (``x.requires_grad = True``), torch records that on its wrapper, which no level
        outside sees."""
        for t in inputs:
            if t.grad_fn is None:
                t._func_call = self.call
        return inputs

    def running(self):
        """A context in which the transforms called see this one's leaves as outer."""
        return _RunningCall(self.call, self.recording)

    def _is_outer_leaf(self, t):
        if id(t) in self.fresh:
            return False
        owner = t.__dict__.get("_func_call")
        return owner is None or owner in self.enclosing

    def reaches(self, t):
        """Whether the outer graph records through ``t``."""
        if not (self.recording and t.requires_grad):
            return False
        fn = t.grad_fn
        if fn is None:
            return self._is_outer_leaf(t)
        # (iterative: a deep graph must not exhaust the stack)
        seen, todo, inner_only = {id(fn): fn}, [fn], self.inner_only
        while todo:
            node = todo.pop()
            if type(node) is AccumulateGrad:
                if self._is_outer_leaf(node.variable):
                    return True
                continue
            for nxt, _ in node._next:  # (every edge: next_functions shows torch's subset)
                if nxt is not None:
                    key = id(nxt)
                    if key not in seen and key not in inner_only:
                        seen[key] = nxt
                        todo.append(nxt)
        self.inner_only.update(seen)  # explored to the end: none of it reaches an outer leaf
        return False

    def needs_graph(self, outputs):
        """Whether the derivatives of ``outputs`` must be recorded: an outer level
        differentiates through them (reverse mode, or the tangents of a running jvp/jacfwd
        that the derivative formulas carry when they run on tensors)."""
        return (any(self.reaches(o) for o in outputs)
                or (fwAD._level is not None
                    and any(fwAD._tangent_of(o) is not None for o in outputs)))

    def finish_aux(self, t):
        """An auxiliary output as the transform returns it: as :meth:`finish`, but detached
        where the outer graph does not record through it."""
        inp = self.inputs.get(id(t))
        if inp is not None:
            return inp
        return t if self.reaches(t) else t.detach()

    def finish_parts(self, parts, dim):
        """Results torch computes as one tensor and splits along ``dim`` (a Jacobian's blocks
        for one input, or one output): where the outer graph records through one part, it
        records through all of them (a zero block too), as parts of that tensor."""
        if not any(self.reaches(p) for p in parts):
            return [self.finish(p) for p in parts]
        if len(parts) == 1:
            return list(parts)
        return list(cat(parts, dim).split([p.shape[dim] for p in parts], dim))

    def finish(self, t):
        """A result as the transform returns it: with its graph if the outer graph records
        through it, else a new tensor around its data at version 0 (torch unwraps it; a
        gradient the formulas summed into in place shows no version), with the tangent of a
        running jvp/jacfwd. A fresh tensor returned as it is gives back its input (torch
        unwraps it to the input itself)."""
        inp = self.inputs.get(id(t))
        if inp is not None:
            return inp
        if self.reaches(t):
            return t
        return self.keep_tangent(t, _unwrapped(t))

    def keep_tangent(self, t, out):
        """``out`` (``t`` as the transform returns it) with ``t``'s tangents of the running
        jvps/jacfwds, where it has none of its own."""
        for k in range(len(fwAD._levels)):
            with fwAD._at_level(k):
                tangent = fwAD._tangent_of(t)
                if tangent is not None and fwAD._tangent_of(out) is None:
                    # (computed on this graph: sorted as the result is, with its own tangents
                    # at the levels outside this one)
                    fwAD._set_tangent(out, tangent if self.reaches(tangent) else
                                      self.keep_tangent(tangent, _wrap(tangent._data)))
        return out


def _unwrapped(t):
    """A new tensor around ``t``'s data at version 0; a view (sum's expanded gradient, a
    reshaped one) stays a view, of its base unwrapped, as torch's unwrapped result does."""
    base = t._base
    if base is None or base.dtype != t.dtype:  # (.real of a complex: a tensor of its own)
        return _wrap(t._data)
    prev, state.grad_enabled = state.grad_enabled, False
    try:
        return _wrap(base._data).as_strided(tuple(t.shape), t.stride(), t.storage_offset())
    finally:
        state.grad_enabled = prev


class _RunningCall:
    def __init__(self, call, recording):
        self.call, self.recording = call, recording

    def __enter__(self):
        self.prev = _running.calls, _running.plain_records
        if not self.prev[0]:
            _running.plain_records = self.recording
        _running.calls = self.prev[0] + (self.call,)

    def __exit__(self, *exc):
        _running.calls, _running.plain_records = self.prev


def transform_running():
    """Whether a transform is running the function it transforms now (``grad``, ``vjp``,
    ``jacrev``, ``jvp``, ``jacfwd``, ``vmap``): torch's functorch levels are active then."""
    return bool(_running.calls or _vmap_levels or fwAD._in_transform[0])


def _transform_may_save_inference(args):
    """Whether a call recorded with ``args`` may save an inference tensor: inside a running
    transform, when every tensor of ``args`` that requires grad does so through the leaves of
    running transforms only. torch's functorch levels save such a tensor at the transform's
    level; a call that plain autograd records too (through a captured tensor that requires
    grad, where grad mode was on outside the transforms) is refused as outside any transform."""
    calls = _running.calls
    if not calls:
        return False
    if not _running.plain_records:
        return True
    running = set(calls)
    return all(leaf.__dict__.get("_func_call") in running for leaf in _graph_leaves(args))


def _graph_leaves(args):
    """The leaves that the graphs of the tensors among ``args`` that require grad reach
    (iterative: a deep graph must not exhaust the stack)."""
    todo = [a for a in args if isinstance(a, Tensor) and a._requires_grad]
    seen = set()
    while todo:
        t = todo.pop()
        fn = t.grad_fn if isinstance(t, Tensor) else t
        if fn is None or type(fn) is AccumulateGrad:
            yield t if fn is None else fn.variable
            continue
        for nxt, _ in fn._next:
            if nxt is not None and id(nxt) not in seen:
                seen.add(id(nxt))
                todo.append(nxt)


def refuse_missing_forward_formulas(outputs):
    """For a jacfwd computed in reverse mode (under vmap, or inside another jacfwd or jvp):
    torch's forward-mode refusal of the first op recorded on the way from the running
    transforms' inputs to ``outputs`` that torch gives no forward formula for the input its
    tangent would reach (``no_forward_ad``'s rule; torch raises it as the op runs)."""
    running = set(_running.calls)
    tangent = set()  # the nodes a tangent of an input reaches
    # (the physical values' graph: a BatchedTensor shows no grad_fn to jacfwd's function)
    values = [below_every_level(o) for o in outputs if isinstance(o, Tensor)]
    roots = [v.grad_fn for v in values if v.grad_fn is not None]
    for node in _inputs_first(roots):
        if type(node) is AccumulateGrad:
            if node.variable.__dict__.get("_func_call") in running:
                tangent.add(id(node))
            continue
        reached = [nxt is not None and id(nxt) in tangent for nxt, _ in node._next]
        if not any(reached):
            continue
        tangent.add(id(node))
        op = getattr(type(node), "_op", None)
        rules = None if op is None else op.__dict__.get("jvp_rules")
        if rules:
            for name, hit in zip(op.params, reached):
                rule = rules.get(name)
                if hit and hasattr(rule, "refuse_inplace"):
                    rule()


def _inputs_first(roots):
    """The nodes of the graph under ``roots``, each after every node it leads to (an
    iterative depth-first post-order: a deep graph must not exhaust the stack)."""
    done, order, todo = set(), [], [(r, False) for r in roots]
    while todo:
        node, expanded = todo.pop()
        if expanded:
            order.append(node)
            continue
        if id(node) in done:
            continue
        done.add(id(node))
        todo.append((node, True))
        if type(node) is not AccumulateGrad:
            todo.extend((nxt, False) for nxt, _ in node._next
                        if nxt is not None and id(nxt) not in done)
    return order


def refuse_data_write(t, vmap_level=0):
    """torch's refusal of ``t.data = ...`` where ``t`` is, in torch, a wrapper of a running
    grad, vjp, jacrev, jvp or jacfwd (one of its inputs, or computed from them), one made
    inside vmap level ``vmap_level`` where ``t`` is batched. (A tensor that a factory made
    inside the function is one too in torch; ember cannot tell it from a captured one and
    lets it be written.)"""
    running = set(_running.calls)
    wrapped = (running and any(leaf.__dict__.get("_func_call") in running
                               and leaf.__dict__.get("_func_vmap_depth", 0) >= vmap_level
                               for leaf in _graph_leaves((t,))))
    if not vmap_level:
        wrapped = wrapped or (fwAD._in_transform[0] and fwAD._tangent_of(t) is not None)
    if wrapped:
        raise RuntimeError("mutating directly with `.data` inside functorch transform is not "
                           "allowed.")


_graph.inference_save_allowed[0] = _transform_may_save_inference
