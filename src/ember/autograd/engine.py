"""The backward engine: iterative and op-agnostic.

It collects the nodes reachable from the roots, counts each node's incoming edges, and drains
a ready queue ordered like torch's (the most recently created node first). It knows
``Node._apply``, ``next_functions``, ``AccumulateGrad`` and hooks, and nothing about ops.

In first-order backward, gradients flow as raw arrays; with ``create_graph=True`` they flow
as Tensors and the same formulas record a graph of their own.
"""
from __future__ import annotations

import functools
import heapq
import itertools
import importlib
import threading
import warnings
import weakref
from sys import getrefcount as _refcount
from types import MappingProxyType

import numpy as np
from numpy import ndarray

from .._backend import as_array, fp_errors, get_xp, writeable
from .._backend.layout import empty_strided
from .._dtype import REDUCED_NP
from .._sparse.coo import CooArray, SparseOperand, add_into_dense
from .._state import profiler_hook, state
from .._tensor import GRAD_DTYPE_OWN, Tensor, _wrap
from .._tensor import _object_new as _new_tensor
from . import _batched, _gc
from ._grad_versions import (
    _COUNTED,
    _NOTES,
    _note,
    forget,
    note_counter,
    note_writes,
    with_version,
    wrap_versioned,
)
from .graph import AccumulateGrad, GradientEdge, edge_of, gradient_edge

# whether some leaf was ever given a grad_dtype (until then the engine never looks)
GRAD_DTYPES_SET = [False]


class _Borrowed(dict):
    """Arrays by id, each with a weak reference to it: an id is reused once its array is
    freed, and a new gradient that gets a freed one's id is not borrowed (taken for one, it
    would be copied needlessly, and its leaf's ``.grad`` get version 1 where torch's is 0)."""

    __slots__ = ()

    def add(self, a):
        try:
            self[id(a)] = weakref.ref(a)
        except TypeError:  # (a NumPy scalar takes no weak reference: it is kept alive)
            self[id(a)] = lambda: a

    def holds(self, a):
        ref = self.get(id(a))
        return ref is not None and ref() is a


class _PassDefaults:
    """What most backward passes never change, on the class (a pass sets only what it
    changes: its attribute then shadows the class's)."""

    __slots__ = ()
    useful = None  # nodes whose gradients lead to a wanted input (None: all reached)
    run = None  # nodes that run (None: all), when only some inputs are wanted
    # node -> [(output_nr, slot)] for autograd.grad (read-only here: _input_targets sets a
    # pass's own)
    captures = MappingProxyType({})
    captured = ()
    batch = None  # batched pass: every gradient has this leading batch dimension
    roots = ()  # the root nodes (for will_execute)
    # (number: set by current_pass_id when first asked)


class _Task(_PassDefaults):
    """State of one backward pass (kept local, so passes in several threads don't mix); an
    instance dictionary (no __slots__) holds what the pass sets."""

    def __init__(self, graph, retain, batch=None):
        self.graph = graph  # create_graph: gradients are Tensors
        self.retain = retain
        # gradient arrays that something else may still hold (a caller's gradient, a
        # pass-through from a formula, one already stored in a .grad): never stolen.
        self.borrowed = _Borrowed()
        # the Tensors user code has seen around gradient arrays (root gradients, hooks'
        # arguments), by the array's id: autograd.grad returns that very Tensor, as torch does
        self.visible = {}
        self.buffers = {}
        self.deps = {}
        self.queued = []  # callbacks to run at the end of the pass (see queue_callback)
        if batch is not None:
            self.batch = batch


class _OneNodeTask(_PassDefaults):
    """State of implicit_backward's pass (_execute_into_leaves): first-order, with no input
    buffers to fill nor dependencies to count (read-only empty maps). Slots, not a
    dictionary: made at every ``loss.backward()`` of a compiled step."""

    __slots__ = ("retain", "roots", "borrowed", "visible", "queued", "number")
    graph = False
    buffers = deps = MappingProxyType({})

    def __init__(self, retain, fn):
        self.retain = retain
        self.roots = [fn]  # (for will_execute)
        # NOTE: the implicit gradient is not noted as borrowed (as _Task's root gradients
        # are): implicit_backward holds it until the pass ends, so its reference count alone
        # keeps every leaf from taking it over (_accumulate asks the task only of a gradient
        # nothing else holds).
        self.borrowed = _Borrowed()
        self.visible = {}
        self.queued = []


def backward_from(t, g, retain):
    """``run_backward((t,), (g,), retain, False)``: a first-order pass from one tensor into
    the leaves' ``.grad`` (``backward()`` of one tensor without ``inputs=``), by
    _backward_into_leaves when one node's edges lead to leaves alone."""
    fn = t._grad_fn if type(t) is Tensor and t._base is None else None
    if fn is not None and g is not None:
        leaves = _leaves_below(fn)
        if leaves is not None:
            _backward_into_leaves(t, fn, leaves, g, retain)
            return
    run_backward((t,), (g,), retain, False)


def implicit_backward(t, retain, implicit_grad):
    """``backward_from(t, implicit_grad(t), retain)``: ``t.backward()`` with no gradient
    given. When ``t`` is a real floating NumPy scalar (of any shape of one element) of a node
    whose edges lead to distinct leaves alone (see _leaves_below), the implicit gradient is
    made here as the array the engine passes, with no Tensor around it (user code never sees
    it: nothing on that path runs a hook that could)."""
    fn = t._grad_fn
    if fn is None or type(t) is not Tensor or t._base is not None or fn._out_meta is not None:
        backward_from(t, implicit_grad(t), retain)
        return
    leaves = _leaves_below(fn)
    if leaves is None:  # (backward_from's general case, _leaves_below told)
        run_backward((t,), (implicit_grad(t),), retain, False)
        return
    data = t._data
    if type(data) is not ndarray or data.size != 1 or data.dtype.kind != "f":
        backward_from(t, implicit_grad(t), retain)  # (not a real scalar: its error, mostly)
        return
    # (implicit_grad's ones: a copy of the one element filled)
    one = data.copy()
    one.fill(1)
    _run_pass(_OneNodeTask(retain, fn), _execute_into_leaves, [fn, [one], leaves])
    if _NOTES:  # (the versions of gradients written in place: read by now)
        forget()


def run_backward(roots, root_grads, retain_graph, create_graph, inputs=(), capture=False,
                 allow_unused=False, batch=None, unbatched=None):
    """Backpropagate ``root_grads`` from ``roots``.

    ``capture=False``: accumulate into leaves' ``.grad`` (into ``inputs`` only, if given).
    ``capture=True``: return the gradients of ``inputs`` instead (autograd.grad).
    ``batch``: the root gradients carry a leading batch dimension of that size (see
    _batched); if something in the graph needs one pass per example, ``unbatched()`` runs
    instead and its result is returned.
    """
    task = _Task(create_graph, retain_graph, batch)
    root_edges = []
    root_nodes = []
    for t in roots:
        if type(t) is Tensor and t._base is None and t._grad_fn is not None:
            edge = (t._grad_fn, t._output_nr)  # (gradient_edge's usual case, without a call)
        else:
            edge = edge_of(t)
        if edge[0] is None:
            raise RuntimeError(f"element {len(root_edges)} of tensors does not require grad "
                               "and does not have a grad_fn")
        root_edges.append(edge)
        root_nodes.append(edge[0])
    if create_graph and not capture:
        _warn_reference_cycle()
    if inputs and batch is None:
        _collect_planned(task, root_nodes, _input_targets(task, inputs, capture), capture)
    else:
        _collect_dependencies(task, root_nodes)
        if batch is not None and not _batched.batchable(task):
            return unbatched()
        if inputs:
            _plan_inputs(task, inputs, capture)
    for i, (t, (fn, nr), g) in enumerate(zip(roots, root_edges, root_grads)):
        if g is not None:
            _seed_root(task, fn, nr, g._data.dtype if type(t) is GradientEdge else t._data.dtype,
                       g, i)
    task.roots = root_nodes  # (for will_execute)
    _run_pass(task, _execute, root_nodes)
    if capture:
        result = _captured_results(task, inputs, allow_unused)
    if _NOTES:  # (the versions of gradients written in place: read by now)
        forget()
    return result if capture else None


def _backward_into_leaves(t, fn, children, g, retain):
    """run_backward from tensor ``t`` alone, of node ``fn`` whose edges lead to the distinct
    leaves ``children`` alone (see _leaves_below), given gradient ``g``, in first-order
    backward: no dependencies to count (each leaf is reached once, from the root), and the
    root's gradient handed to the node without its input buffer."""
    task = _Task(False, retain)
    task.roots = [fn]  # (for will_execute)
    data = g._data
    if (type(data) is ndarray and (dt := data.dtype) is t._data.dtype and dt.kind in "fc"
            and fn._out_meta is None):
        # the usual root gradient (backward()'s implicit one): an array of its output's
        # float dtype, for the node's one output (_seed_root's lines for it)
        task.visible[id(data)] = (data, g)
        task.borrowed[id(data)] = weakref.ref(data)  # (as _Borrowed.add: an array)
        grads = [data]
    else:
        _seed_root(task, fn, t._output_nr, t._data.dtype, g)
        grads = task.buffers.pop(fn)
    # (a list the pass empties: the node's gradients are then held by the pass alone, see
    # _execute_into_leaves)
    _run_pass(task, _execute_into_leaves, [fn, grads, children])
    if _NOTES:  # (the versions of gradients written in place: read by now)
        forget()


def _seed_root(task, fn, nr, dt, g, index=0):
    """Root gradient ``g`` (a Tensor, root ``index`` of the pass) of output ``nr`` of node
    ``fn``, whose forward output has dtype ``dt``, into the node's input buffer."""
    if dt.kind not in "fc":
        _check_differentiable(dt)
    if not task.graph:
        data = g._data
        task.visible[id(data)] = (data, g)
        task.borrowed.add(data)
        g = data
    replaced = fn._replaced_outputs
    if replaced is not None and nr in replaced:
        g, dt = _root_as_recorded(g, index, *replaced[nr])
    if type(fn) is AccumulateGrad:  # a leaf root: its gradient in its grad dtype
        g = _cast_for_leaf(task, g, fn.variable)
    elif (g._data.dtype if task.graph else g.dtype) != dt:
        # torch validates the root gradients as any node's outputs: cast to the output's
        # dtype before the first formula runs (a float64 gradient of a float32 loss flows
        # through the graph in float32)
        g = _cast(task, g, dt)
    if fn._out_meta is None and fn not in task.buffers:  # (one output: nr is 0)
        task.buffers[fn] = [g]
    else:
        _add_to_buffer(task, fn, nr, g)


def _root_as_recorded(g, index, shape, dt):
    """Root gradient ``g`` of an output whose .data was replaced, validated as torch validates
    root gradients: against the shape its node recorded (summed to it if that broadcasts to
    ``g``'s, else torch's error, which names no node), then cast to the recorded dtype ``dt``
    (returned with it)."""
    gshape = g.shape
    if gshape != shape:
        if not _expandable(shape, gshape):
            raise RuntimeError(f"invalid gradient at index {index} - got {list(gshape)} but "
                               f"expected shape compatible with {list(shape)}")
        g = _late("reduction.sum_to")(g, shape)
    return g, dt


def _run_pass(task, execute, arg):
    """``execute(task, arg)`` as a backward pass: grad mode on only under create_graph, the
    pass on this thread's stack (its final callbacks, will_execute), NumPy's floating point
    errors silenced; the notes of gradients' versions dropped if it fails."""
    prev = state.grad_enabled
    state.grad_enabled = True if task.graph else False  # (bool()'s, without a call)
    callbacks = _local.callbacks
    callbacks.append(task)
    try:
        # NOTE: NumPy's errors silenced once for the whole pass: formulas may divide by zero
        # where torch is silent (e.g. at a kink), and silencing them per op would cost more
        # than the op.
        quiet = fp_errors.silence()
        try:
            execute(task, arg)
        finally:
            fp_errors.restore(quiet)
        if task.queued:
            _run_final_callbacks(task.queued)
    except BaseException:
        if _NOTES:
            forget()
        raise
    finally:
        callbacks.pop()
        state.grad_enabled = prev
    # (else nothing to adjust: no call; a one-node pass counts no dependencies)
    if (task.deps and len(task.deps) >= _gc.DEEP) or _gc.raised:
        _gc.after_backward(len(task.deps))


class _Local(threading.local):
    def __init__(self):  # (run in each thread at its first use: no default to test for)
        # this thread's stack of the backward passes in progress (each with its final
        # callbacks, and the innermost the current one)
        self.callbacks = []


_local = _Local()


def in_backward_pass():
    """Whether a backward pass runs on this thread (its formulas being called)."""
    return bool(_local.callbacks)


_pass_numbers = itertools.count()


def current_pass_id():
    """The number of the backward pass running in this thread, -1 outside one (torch's
    ``torch._C._current_graph_task_id``)."""
    stack = _local.callbacks
    if not stack:
        return -1
    task = stack[-1]
    try:
        return task.number
    except AttributeError:  # (numbered when first asked: nothing to do in every pass)
        task.number = next(_pass_numbers)
        return task.number


def will_execute(node):
    """Whether the backward pass running in this thread runs ``node`` (reaches it, and in
    ``autograd.grad`` or ``backward(inputs=...)`` needs it or captures its gradient): torch's
    ``torch._C._will_engine_execute_node``, which register_multi_grad_hook counts with."""
    stack = _local.callbacks
    if not stack:
        raise RuntimeError("_get_should_execute_nodes should only be called during the "
                           "backward pass")
    task = stack[-1]
    roots = task.roots
    if len(roots) == 1 and node is roots[0]:
        # torch's engine starts a pass of one root at that root's node (no GraphRoot before
        # it), which it never counts among the nodes of the graph: a multi-grad hook ("all")
        # over the root tensor then never fires
        return False
    if task.deps:
        reached = node in task.deps
    else:  # (_execute_into_leaves counts no dependencies: one root, leaves below it)
        reached = node in roots or any(child is node for child, _ in roots[0]._next)
    if not reached or task.run is None:
        return reached
    if node in task.captures and not any(child is not None for child, _ in node._next):
        raise RuntimeError("A leaf node was passed to _will_engine_execute_node but we are "
                           "currently running autograd.grad(). This is currently not "
                           "supported.")
    return node in task.run or node in task.captures


def queue_callback(callback):
    """Run ``callback()`` when the current backward pass has run every node (torch's
    ``Variable._execution_engine.queue_callback``; DDP waits for its reductions so)."""
    stack = _local.callbacks
    if not stack:
        raise RuntimeError("Final callbacks can only be installed during backward pass.")
    stack[-1].queued.append(callback)


def _run_final_callbacks(callbacks):
    i = 0
    while i < len(callbacks):  # a callback may queue more
        callbacks[i]()
        i += 1


_REFERENCE_CYCLE = (
    "Using backward() with create_graph=True will create a reference cycle between the "
    "parameter and its gradient which can cause a memory leak. We recommend using autograd.grad "
    "when creating the graph to avoid this. If you have to use this function, make sure to reset "
    "the .grad fields of your parameters to None after use to break the cycle and avoid the "
    "leak. (Triggered internally at /__w/pytorch/pytorch/torch/csrc/autograd/engine.cpp:1307.)")
_warned = set()  # warnings torch gives once per process (TORCH_WARN_ONCE)


def _warn_reference_cycle():
    """torch warns (once per process) that ``.grad`` built with a graph references itself."""
    if "reference cycle" not in _warned:
        _warned.add("reference cycle")
        from .._ops.inplace import _user_stacklevel
        warnings.warn(_REFERENCE_CYCLE, UserWarning, stacklevel=_user_stacklevel())


def _collect_dependencies(task, root_nodes):
    """Count each reachable node's incoming edges (roots start at 0: reached, not pushed)."""
    deps = task.deps
    for fn in root_nodes:
        deps[fn] = 0
    stack = list(deps)
    get = deps.get
    while stack:
        for nxt, _ in stack.pop()._next:
            if nxt is not None:
                count = get(nxt)
                if count is None:
                    deps[nxt] = 1
                    if nxt._next:  # (a leaf's AccumulateGrad has no edges to walk)
                        stack.append(nxt)
                else:
                    deps[nxt] = count + 1
    task.useful = deps.keys()  # refined by _plan_inputs


def _input_targets(task, inputs, capture):
    """The nodes that receive ``inputs``' gradients (noting which to capture)."""
    targets = set()
    captures = {}
    for slot, t in enumerate(inputs):
        if type(t) is GradientEdge:  # (the gradient flowing into that edge; nothing retained)
            fn, nr = t.node, t.output_nr
        elif not isinstance(t, Tensor):
            raise RuntimeError("all inputs have to be Tensors or GradientEdges, but got "
                               f"{type(t).__name__}")
        else:
            fn, nr = gradient_edge(t)
        if not capture and type(t) is not GradientEdge:
            # NOTE: as torch does, backward(inputs=[t]) retains t's grad: a non-leaf input gets
            # its .grad through retain_grad (now and in later passes), a leaf through its
            # AccumulateGrad node.
            t.retain_grad()
        if fn is None:
            if not t._requires_grad:
                raise RuntimeError("One of the differentiated Tensors does not require grad")
            # a view requiring grad through its base, with no history or gradient of its own
            # (made in no_grad mode): no edge leads to it, so it is unreachable, as in torch
            continue
        if capture:
            captures.setdefault(fn, []).append((nr, slot, t))
        targets.add(fn)
    if captures:
        task.captures = captures
    task.captured = [None] * len(inputs)
    return targets


def _plan_inputs(task, inputs, capture):
    """Mark which nodes lead to ``inputs``; only those run (torch's exec_info)."""
    targets = _input_targets(task, inputs, capture)
    # Walk back from the inputs along reversed edges: a node runs when one of its children
    # leads to an input (a target that is also an interior node runs only then, too).
    parents = {}
    for fn in task.useful:
        for nxt, _ in fn._next:
            if nxt is not None:
                found = parents.get(nxt)
                if found is None:
                    parents[nxt] = [fn]
                else:
                    found.append(fn)
    useful, run = set(targets), set()
    stack = list(targets)
    while stack:
        for fn in parents.get(stack.pop(), ()):
            if fn not in run:
                run.add(fn)
                if fn not in useful:
                    useful.add(fn)
                    stack.append(fn)
    _set_plan(task, targets, useful, run, capture)


def _set_plan(task, targets, useful, run, capture):
    if not capture:
        # backward(inputs=...): the inputs' own nodes run (torch's exec_info marks them
        # needed), a leaf's AccumulateGrad and a non-leaf's grad_fn alike: the latter computes
        # no gradient (none of its children is needed) but frees what it saved, so a later
        # pass through it raises, as does a version error of its saved tensors now
        run.update(targets)
    task.useful = useful  # (None: every node reached)
    task.run = run


def _collect_planned(task, root_nodes, targets, capture):
    """``_collect_dependencies`` and ``_plan_inputs`` for ``autograd.grad`` and
    ``backward(inputs=)``: count each reachable node's incoming edges and find the nodes that
    lead to an input (those run).

    NOTE: the planning cost of every such call. The walk that counts dependencies also notes
    the nodes with edges and whether every node without one (a leaf's AccumulateGrad) is an
    input: then every node leads to an input (each path ends in such a node), so the nodes
    that run are those with edges, and no second walk is needed. Otherwise (a leaf that is not
    an input, e.g. a parameter in ``grad(out, [x])``) ``_mark_useful`` walks the graph again.
    """
    deps = task.deps
    for fn in root_nodes:
        deps[fn] = 0
    get = deps.get
    run = set()
    run_add = run.add
    all_lead = True  # every node without edges is an input's
    stack = list(deps)
    push, pop = stack.append, stack.pop
    while stack:
        fn = pop()
        inner = False
        for nxt, _ in fn._next:
            if nxt is not None:
                inner = True
                count = get(nxt)
                if count is None:
                    deps[nxt] = 1
                    push(nxt)
                else:
                    deps[nxt] = count + 1
        if inner:
            run_add(fn)
        elif all_lead and fn not in targets:
            all_lead = False
    if all_lead:
        # (every node reached leads to an input: no formula needs to ask, see _execute)
        _set_plan(task, targets, None, run, capture)
    else:
        _set_plan(task, targets, *_mark_useful(root_nodes, targets), capture)


def _mark_useful(root_nodes, targets):
    """The nodes that lead to ``targets`` (with the targets) and those of them that run (the
    ones with a child that leads to a target), by one depth-first walk: a node is left after
    its children (the graph is acyclic), so whether it leads to a target is known then."""
    useful, run = set(targets), set()
    entered = set()
    stack = list(dict.fromkeys(root_nodes))
    push, pop = stack.append, stack.pop
    while stack:
        fn = pop()
        if fn is None:  # leaving the node below the marker
            fn = pop()
            for nxt, _ in fn._next:
                if nxt in useful:  # (None never is)
                    run.add(fn)
                    useful.add(fn)
                    break
            continue
        if fn in entered:
            continue
        entered.add(fn)
        push(fn)
        push(None)
        for nxt, _ in fn._next:
            if nxt is not None and nxt not in entered:
                push(nxt)
    return useful, run


def _add_to_buffer(task, fn, nr, g):
    buf = task.buffers.get(fn)
    if buf is None:
        n = max(1, _num_outputs(fn))
        buf = task.buffers[fn] = [None] * n
    old = buf[nr]
    buf[nr] = g if old is None else _sum(old, g, task.graph)


def _sum(a, b, graph):
    s = a + b
    # NOTE: NumPy sums two 0-d arrays into a NumPy scalar; gradients stay arrays.
    return s if graph or type(s) is np.ndarray else as_array(s)


class _Ready(int):
    """A ready-queue entry: its node's sequence number, negated (so the heap's smallest is the
    most recently created node), with the node as ``fn``. Entries compare as the numbers
    alone, in C: nodes themselves are never compared.

    NOTE: heapq's push and pop are the very algorithms of libstdc++'s push_heap / pop_heap
    (sift up with a strict comparison; pop moves the larger child up to a leaf, then sifts the
    last element up from there), which torch's ready queue (a std::priority_queue) uses. So
    nodes run latest-created first, and nodes with equal numbers (every AccumulateGrad has the
    largest, nodes made outside the registry have none) come out in torch's order, provided
    equal entries compare equal.
    """


def _entry(fn):
    entry = _Ready(-fn._seq)
    entry.fn = fn
    return entry


def _num_outputs(fn):
    meta = fn._out_meta
    return len(meta) if meta else 1


def _execute(task, root_nodes):
    deps = task.deps
    buffers = task.buffers
    heap = []
    push, pop = heapq.heappush, heapq.heappop
    following = None  # the next node, when it is known without the queue (see below)
    if len(root_nodes) == 1:  # (one root: all the queue would hold)
        if deps.get(root_nodes[0], 0) == 0:
            following = root_nodes[0]
    else:
        for fn in dict.fromkeys(root_nodes):  # the roots in order, as torch's GraphRoot has
            if deps.get(fn, 0) == 0:
                push(heap, _entry(fn))
    prof = profiler_hook[0]
    # The common case (no hooks, no profiler, no anomaly mode) runs inline; with inputs given
    # (autograd.grad), for the nodes that run and whose gradients nobody captures.
    plain = prof is None and not state.anomaly and task.batch is None
    run = task.run
    captures = task.captures
    needed = task.useful if run is not None else None
    # the nodes that run and whose gradients nobody captures (None: all), one set lookup
    runnable = run if run is None or not captures else run - captures.keys()
    graph = task.graph
    retain = task.retain
    borrowed = task.borrowed
    borrowed_get = borrowed.get
    notes_get = _NOTES.get
    ndarray = np.ndarray
    validate = _validate_one if task.batch is None else _validate  # (one call, not two)
    Ready = _Ready
    grad_dtypes = GRAD_DTYPES_SET[0]  # (some leaf may have a grad_dtype of its own)
    while True:
        if following is not None:
            fn, following = following, None
        elif heap:
            fn = pop(heap).fn
        else:
            break
        grads = buffers.pop(fn, None)
        # (each test first where it fails soonest: a leaf's node is never _apply_plain, an op
        # node never _leaf_plain)
        if fn._apply_plain and plain and grads is not None and (
                runnable is None or fn in runnable):
            outs = fn._apply(grads, graph, needed)
            if not retain:  # (_release by its class's case, see Node._releases)
                frees = fn._releases
                if frees == 1:
                    fn._saved = None
                elif frees:
                    fn._release()
            if not graph and not fn._fresh_outputs:
                _note_borrowed(task, fn, outs)
        elif (fn._leaf_plain and plain and grads is not None and grads[0] is not None
              and not fn.variable._hooks and (runnable is None or fn in runnable)):
            _run_plain_leaf(task, fn, grads, 0)
            continue
        elif (plain and type(fn) is AccumulateGrad and grads is not None
              and fn in captures and fn not in run and fn._retained is None
              and not fn.variable._hooks):
            # an input of autograd.grad without hooks: its gradient is captured, nothing
            # accumulated (what _run_node and _capture do for it)
            for nr, slot, _ in captures[fn]:
                task.captured[slot] = grads[nr]
            continue
        elif prof is not None:
            with prof(fn.name(), grads or (), fn):
                outs = _run_node(task, fn, grads)
        else:
            outs = _run_node(task, fn, grads)
        # (the node's own gradients, spent now: torch's engine frees them before handing its
        # results on, so a gradient it also passed to another node is that node's alone)
        grads = None
        meta = fn._meta
        ready = None
        for i, (child, nr) in enumerate(fn._next):
            if child is None:
                continue
            g = outs[i] if outs is not None else None
            if g is not None:
                m = meta[i]
                if grad_dtypes and type(child) is AccumulateGrad and (
                        child.variable._grad_dtype is not GRAD_DTYPE_OWN):
                    g = validate(task, fn, i, g, child.variable._grad_dtype)
                elif graph:  # a Tensor: validate only a shape or dtype that is not its input's
                    if m is not None and (g._data.shape, g._data.dtype) != m:
                        g = validate(task, fn, i, g)
                # (m: the input's (shape, dtype), compared as one tuple)
                elif type(g) is not ndarray or (m is not None and (g.shape, g.dtype) != m):
                    g = validate(task, fn, i, g)
                buf = buffers.get(child)
                if buf is None:
                    if child._out_meta is None:
                        buffers[child] = [g]
                    else:
                        _add_to_buffer(task, child, nr, g)
                elif buf[nr] is None:
                    buf[nr] = g
                else:
                    old = buf[nr]
                    # (borrowed.holds, _times_in when the count alone settles it, and
                    # is_torch_view written out: `old` owns its memory, so it is its own
                    # owner in _NOTES, and the note read here serves the count below)
                    if (not graph and old.base is None and old.shape == g.shape
                            and old.dtype == g.dtype
                            and ((lent := borrowed_get(key := id(old))) is None
                                 or lent() is not old)
                            # (a NumPy scalar: += would rebind it)
                            and (old.flags.writeable if type(old) is ndarray
                                 else not isinstance(old, (np.generic, CooArray)))
                            and ((refs := _refcount(old)) == 3
                                 or refs == 3 + _times_in(outs, old))
                            and ((seen := notes_get(key)) is None or seen[0]() is not old
                                 or not seen[2])):
                        # NOTE: a gradient a formula made (not passed through, not a view, and
                        # held by nothing but this buffer: the 3 counts are the buffer, `old`
                        # and the call, besides this node's own gradients, which torch's
                        # engine has moved into the buffer by now) is the buffer's own: sum
                        # into it, as torch's InputBuffer does, instead of allocating a new
                        # array per use (and as there, that is a write the gradient's version
                        # shows).
                        try:
                            old += g
                        except SparseOperand:  # (a sparse one into a dense one: a new sum)
                            buf[nr] = _sum_across_layouts(old, g)
                        else:
                            if type(old) is not ndarray:
                                note_writes(old, 1)
                            elif seen is not None and seen[0]() is old:  # (_note's lines)
                                # (a note not of a view: _COUNTED is set already)
                                _NOTES[key] = (seen[0], seen[1] + 1, False)
                            else:
                                _note(old, 1, False)
                    else:
                        g = (old + g if type(old) is ndarray and type(g) is ndarray
                             else _buffer_sum(old, g))
                        # NOTE: NumPy sums two 0-d arrays into a NumPy scalar; keep arrays.
                        buf[nr] = g if graph or type(g) is ndarray else as_array(g)
            d = deps[child] - 1
            deps[child] = d
            if d == 0:
                if ready is not None:
                    entry = Ready(-ready._seq)  # (_entry's lines: no call per push)
                    entry.fn = ready
                    push(heap, entry)
                ready = child
        # (this node's gradients, passed on: a reference left here would make a leaf's
        # gradient look held by someone else, see _accumulate)
        outs = g = old = None
        if ready is not None:
            # NOTE: in a chain the one ready child is all the queue would hold: run it next
            # without the push and pop. Otherwise the queue decides (its order among equal
            # numbers, as every AccumulateGrad has, is torch's and depends on its layout).
            if not heap:
                following = ready
            else:
                entry = Ready(-ready._seq)
                entry.fn = ready
                push(heap, entry)


def _run_plain_leaf(task, fn, grads, i):
    """The usual leaf (no hooks, its gradient ``grads[i]`` not captured): what _run_node
    does for it, without the general path's calls (a leaf has no edges to follow).
    ``grads`` is the list the engine holds the gradient in (the leaf's input buffer, or the
    gradients of the one node above the leaves, see _execute_into_leaves): the reference
    counts below count it once."""
    var = fn.variable
    lock = fn.lock
    lock.acquire()  # (what ``with fn.lock`` does, in half the time: a fixed cost per leaf)
    try:
        if not var._requires_grad:
            return
        g = grads[i]
        # the usual first gradient, only the engine's (refs counted as _accumulate counts its
        # argument: the list, `g`, getrefcount's), laid out as its leaf: what _accumulate,
        # _plainly_owned and wrap_versioned do for it, written out (a fixed cost of every leaf
        # and backward), each test first where it fails soonest
        if (var._grad is None and type(g) is ndarray and _refcount(g) <= _OWN_REFS
                and not task.graph and not var._post_acc_hooks
                and type(data := var._data) is ndarray
                and (id(g) not in task.borrowed or not task.borrowed.holds(g))):
            flags = g.flags
            if flags.writeable and (
                    (flags.c_contiguous and g.strides == data.strides
                     and data.flags.c_contiguous)
                    or not _layout_policy.enforce or _obeys_layout(g, data)):
                # NOTE: not noted as borrowed (as _accumulate notes it): the .grad now holds
                # it, so any later holder is told by the reference counts, as torch's are
                if _COUNTED[0]:  # (a version to look up: wrap_versioned's lookup)
                    var._grad = wrap_versioned(g)
                    return
                t = _new_tensor(Tensor)  # (_wrap's lines: no call, a fixed cost per leaf)
                t._data = g
                var._grad = t
                return
        g = flags = None  # (so that _accumulate counts the references as it expects)
        _accumulate(task, var, grads[i])
    finally:
        lock.release()


_LEAF_ONLY = frozenset((AccumulateGrad,))
_LEAF_OR_NOTHING = frozenset((AccumulateGrad, type(None)))


def _leaves_below(fn):
    """The nodes ``fn``'s edges lead to, in edge order, if ``fn`` may run by
    _execute_into_leaves (None if not): no hooks on it, no profiler or anomaly mode, and each
    of its edges leads to a leaf's AccumulateGrad (or nowhere), no leaf twice (a compiled
    function's node into its parameters). Told by C calls over the edges, not a loop, or
    kept from the last pass of a node that shares its edges (see Node._leaves_cache)."""
    if not fn._apply_plain or profiler_hook[0] is not None or state.anomaly:
        return None
    cache = fn._leaves_cache
    if cache is None:
        nxt = fn._next
        if nxt and type(nxt[0][0]) in _LEAF_OR_NOTHING:
            return _leaves_of(nxt)
        return None  # (an op's node first, the usual root of an eager graph: told at once)
    # (one tuple read, so that threads replacing it never pair edges with another's leaves)
    kept = cache[0]
    nxt = fn._next
    if kept[0] is not nxt:
        kept = cache[0] = (nxt, _leaves_of(nxt))
    return kept[1]


def _leaves_of(nxt):
    """_leaves_below's answer for edges ``nxt`` (the part that depends on them alone)."""
    if not nxt or type(nxt[0][0]) not in _LEAF_OR_NOTHING:
        return None
    children = next(zip(*nxt))
    kinds = set(map(type, children))
    if kinds == _LEAF_ONLY:
        return children if len(set(children)) == len(children) else None
    if kinds <= _LEAF_OR_NOTHING:  # (edges to nothing: each None counted apart)
        distinct = len(set(children)) - 1 + children.count(None)
        return children if distinct == len(children) else None
    return None


def _execute_into_leaves(task, root):
    """``_execute`` for a graph of one node ``fn`` (the root, given its gradients ``grads``:
    ``root`` is ``[fn, grads, children]``) whose edges all lead to distinct leaves
    (``children``, see _leaves_below), in first-order
    backward: the node, then its leaves in the order the ready queue gives them (every
    AccumulateGrad has the same sequence number, so the heap's layout decides), without
    counting dependencies or going through the queue. Each leaf runs as in _execute: by
    _run_plain_leaf, or the general path when it has hooks."""
    fn, grads, children = root
    # (the node's gradients held here alone, and dropped once it ran, as _execute drops a
    # node's buffer: a gradient it passes on to a leaf is counted as that leaf's, see
    # _accumulate)
    root[1] = root = None
    into = fn._apply_into_leaves
    outs = fn._apply(grads, False, None) if into is None else into(grads)
    if not task.retain:  # (as _execute: see Node._releases)
        frees = fn._releases
        if frees == 1:
            fn._saved = None
        elif frees:
            fn._release()
    if not fn._fresh_outputs:
        _note_borrowed(task, fn, outs)
    grads = None
    # the gradients, one per edge, held by this list alone (see _accumulate)
    gs = list(outs)
    outs = None
    if GRAD_DTYPES_SET[0] or None in children or not (
            fn._usual_grads or _usual_leaf_grads(gs, fn._meta)):
        # (the usual gradients, arrays of their inputs' shapes and dtypes for an edge each,
        # which a node may vouch for (Node._usual_grads); otherwise each is validated as
        # _execute validates an edge's gradient)
        _validate_leaf_grads(task, fn, children, gs)
        _into_leaves(task, children, gs)
        return
    borrowed = task.borrowed
    # (some gradient's version noted, its own or its owner's: read once, as no leaf's
    # shortcut notes one, and a nested pass in a hook that forgets the notes leaves nothing
    # for wrap_versioned to find)
    counted = _COUNTED[0]
    for i in _leaf_order(len(children)):
        child = children[i]
        var = child.variable
        lock = child.lock
        lock.acquire()
        try:
            # NOTE: _run_plain_leaf's usual case written out (a call fewer per leaf, in the
            # pass of every compiled step): a leaf with no hooks given a first gradient only
            # this list holds (the list, `g`, getrefcount's), laid out as its leaf; any other
            # leaf is left to _into_leaf
            if (var._grad is None and child._leaf_plain and not var._hooks
                    and var._requires_grad and not var._post_acc_hooks
                    and _refcount(g := gs[i]) <= _OWN_REFS
                    and type(data := var._data) is ndarray and id(g) not in borrowed
                    and g.strides == data.strides and (flags := g.flags).writeable
                    and flags.c_contiguous and data.flags.c_contiguous):
                gs[i] = None
                if counted:
                    var._grad = wrap_versioned(g)
                else:
                    t = _new_tensor(Tensor)  # (_wrap's lines: no call)
                    t._data = g
                    var._grad = t
                continue
        finally:
            lock.release()
        # (so that _into_leaf counts the references as it expects: a flags object holds its
        # array)
        g = flags = None
        _into_leaf(task, child, gs, i)


def _into_leaves(task, children, gs):
    """_execute_into_leaves's leaves, each given its gradient in ``gs`` (validated), by
    _into_leaf: for a node's edges some of which lead nowhere, or gradients _execute's
    checks validated."""
    if None in children:
        order = _leaf_edges(tuple(c is not None for c in children))
    else:
        order = _leaf_order(len(children))
    for i in order:
        if gs[i] is not None:  # (a leaf given no gradient: _run_node does nothing for it)
            _into_leaf(task, children[i], gs, i)


def _into_leaf(task, child, gs, i):
    """Leaf ``child`` given gradient ``gs[i]``, as _execute runs it: by _run_plain_leaf, or
    the general path when it has hooks."""
    if not child._leaf_plain or child.variable._hooks:
        grads = [gs[i]]
        gs[i] = None  # (the list alone holds it, as _accumulate expects)
        _run_node(task, child, grads)
    else:
        _run_plain_leaf(task, child, gs, i)
        gs[i] = None  # (given: a later leaf given the same array may take it over)


def _usual_leaf_grads(gs, meta):
    """Whether the gradients ``gs`` are ndarrays of the shapes and dtypes ``meta`` gives for
    their edges, one each. A loop, not mapped C calls (``set(map(type, gs))``,
    ``tuple(map(attrgetter("shape", "dtype"), gs))``): those build a dozen objects, which
    after the backward program's last matrix product (caches cold) cost more than the loop's
    bytecodes (W2's backward(): the engine's overhead 2-4 us lower, paired medians of
    interleaved rounds, AMD EPYC)."""
    for g, m in zip(gs, meta):
        if type(g) is not ndarray or m is None or g.shape != m[0] or g.dtype != m[1]:
            return False
    return len(gs) == len(meta)


def _validate_leaf_grads(task, fn, children, gs):
    """Each edge's gradient in ``gs`` validated as _execute validates it (a leaf's grad
    dtype, else its input's shape and dtype)."""
    meta = fn._meta
    grad_dtypes = GRAD_DTYPES_SET[0]
    for i, child in enumerate(children):
        g = gs[i]
        if child is None or g is None:
            continue
        m = meta[i]
        if grad_dtypes and child.variable._grad_dtype is not GRAD_DTYPE_OWN:
            gs[i] = _validate_one(task, fn, i, g, child.variable._grad_dtype)
        elif type(g) is not ndarray or (m is not None and (g.shape, g.dtype) != m):
            gs[i] = _validate_one(task, fn, i, g)


@functools.cache
def _leaf_edges(has_leaf):
    """``_leaf_order`` for edges some of which lead nowhere (``has_leaf``: whether each
    leads to a leaf), as edge positions."""
    edges = [i for i, leaf in enumerate(has_leaf) if leaf]
    return tuple(edges[k] for k in _leaf_order(len(edges)))


@functools.cache
def _leaf_order(n):
    """The order in which the ready queue gives back ``n`` leaves' nodes pushed in edge order
    into it while empty (equal sequence numbers: heapq's algorithm, as _execute's queue)."""
    heap = []
    for k in range(n):
        entry = _Ready(-AccumulateGrad._seq)
        entry.fn = k
        heapq.heappush(heap, entry)
    return tuple(heapq.heappop(heap).fn for _ in range(n))


def _times_in(outs, g):
    """How many of a node's gradients ``outs`` are the very array ``g``."""
    return 0 if outs is None else sum(1 for o in outs if o is g)


def _run_node(task, fn, grads):
    """Hooks, capture, then the node itself; returns its input gradients (or None)."""
    if grads is None or all(g is None for g in grads):
        return _run_undefined(task, fn)
    runs = task.run is None or fn in task.run
    if not runs and fn not in task.captures and not _sole_root(task, fn):
        # a node the pass neither runs nor captures from: torch's engine never queues it, so
        # its tensor hooks (retain_grad's too) are not called
        return None
    if task.captures and fn in task.captures:
        # NOTE: as torch's engine: a node that runs has its tensor hooks called with it, after
        # the capture (autograd.grad returns the gradient before the hooks, though they
        # change what flows on); for one that does not run they are called before it.
        if runs:
            _capture(task, fn, grads)
            grads = _tensor_pre_hooks(task, fn, grads)
        else:
            grads = _tensor_pre_hooks(task, fn, grads)
            _capture(task, fn, grads)
    else:
        grads = _tensor_pre_hooks(task, fn, grads)
    if not runs:
        return None
    if fn._pre_hooks:
        grads = _call_pre_hooks(task, fn, grads)
    if isinstance(fn, AccumulateGrad):
        # NOTE: a leaf that stopped requiring grad after the graph was built
        # (requires_grad_(False), detach_()) gets nothing, as in torch.
        with fn.lock:
            if grads[0] is not None and fn.variable._requires_grad:
                _accumulate(task, fn.variable, grads[0])
            if fn._post_hooks:
                _call_post_hooks(task, fn, (), grads)
        return None
    if all(g is None for g in grads):  # a pre-hook dropped every gradient
        outs = [None] * len(fn._next)
    else:
        needed = task.useful if task.run is not None else None
        if task.batch is not None:
            outs = _batched.apply(task, fn, grads, needed)
        elif state.anomaly:
            from .anomaly_mode import run_with_anomaly
            outs = run_with_anomaly(fn, grads, task.graph, needed)
        else:
            outs = fn._apply(grads, task.graph, needed)
    if fn._post_hooks:
        # torch's post hooks see the gradients validated (shape and dtype of each input)
        outs = [None if o is None else _validate(task, fn, i, o) for i, o in enumerate(outs)]
        outs = _call_post_hooks(task, fn, outs, grads)
    if not task.retain:
        fn._release()
    if not task.graph and not fn._fresh_outputs:
        _note_borrowed(task, fn, outs)
    return outs


def _run_undefined(task, fn):
    """A node reached with undefined gradients alone: a custom Function's backward is called
    with them (torch's engine calls every node it reaches; what such a backward returns may
    be defined), any other node gives undefined gradients and is not called."""
    if (not fn._runs_undefined or task.batch is not None
            or not (task.run is None or fn in task.run)):
        return None
    needed = task.useful if task.run is not None else None
    outs = fn._apply([None] * _num_outputs(fn), task.graph, needed)
    if not task.retain:
        fn._release()
    if not task.graph and not fn._fresh_outputs:
        _note_borrowed(task, fn, outs)
    return outs


def _sole_root(task, fn):
    """Whether ``fn`` is the pass's one root node: torch's engine queues it without a
    ``GraphRoot`` before it, needed or not, and so calls its tensor hooks."""
    roots = task.roots
    return len(roots) == 1 and roots[0] is fn


def _capture(task, fn, grads):
    for nr, slot, _ in task.captures[fn]:
        task.captured[slot] = grads[nr]


def _note_borrowed(task, fn, outs):
    """Remember the gradients of a node whose outputs user code may hold (a custom Function's
    backward may return tensors it keeps). A gradient a built-in node passed through unchanged
    is not noted: what holds it is counted when it reaches a leaf (see _accumulate)."""
    borrowed = task.borrowed
    unshared = fn.__dict__.pop("_unshared", None)  # (a custom Function's fresh gradients)
    for o in outs:
        if o is None:
            continue
        if unshared is None or id(o) not in unshared:
            borrowed.add(o)
        elif (t := unshared[id(o)]) is not None:
            # a tensor with a version counter (a view of one the user holds): user code sees
            # that very tensor (a hook's argument, what autograd.grad returns), and the .grad
            # that takes it over, or a view a node makes of it, shares the counter as torch's
            task.visible[id(o)] = (o, t)
            note_counter(o, t._vc)


def _tensor_pre_hooks(task, fn, grads):
    hooks = fn._tensor_hooks
    if isinstance(fn, AccumulateGrad):
        leaf_hooks = fn.variable._hooks
        hooks = {0: leaf_hooks} if leaf_hooks else None
    if hooks:
        grads = _own_list(grads)
        for nr, hs in hooks.items():
            for hook in list(hs.values()):
                g = grads[nr]
                # (torch calls a tensor's hooks with None too, when its node runs but got no
                # gradient for it: the unused output of a split)
                r = hook(g if task.graph or g is None else _visible(task, g))
                if r is not None:
                    grads[nr] = _hook_value(task, g, r, hook)
    retained = fn._retained
    if retained:
        for nr, ref in retained.items():
            t = ref()
            g = grads[nr]
            if t is None or g is None:
                continue
            g = g if task.graph else _wrap(g)
            t._grad = g.clone() if t._grad is None else t._grad + g
    return grads


def _own_list(grads):
    """``grads`` as a list hooks' values may be written into. The list the engine popped from
    a node's input buffer is its own and is changed in place: a copy would hold every gradient
    twice, and a leaf's gradient would look held by someone else (see _accumulate)."""
    return grads if type(grads) is list else list(grads)


def _hook_name(hook):
    name = getattr(hook, "__name__", None)
    return name if isinstance(name, str) else "<unknown>"


def _hook_value(task, original, r, hook):
    """A value a hook returned in place of gradient ``original``, checked as torch does."""
    if r is None:
        return None
    if original is None:
        raise RuntimeError("can't replace a None gradient with a non-None value")
    if not isinstance(r, Tensor):
        raise TypeError(f"expected Variable, but hook returned '{type(r).__name__}'")
    data = original._data if task.graph else original
    if r._data.dtype != data.dtype:
        from .. import _dtype as D
        raise RuntimeError(
            f"hook '{_hook_name(hook)}' has changed the type of value (was "
            f"{D._BY_NP[data.dtype].legacy_type_name} got {r.dtype.legacy_type_name})")
    if r._data.shape != np.shape(data):
        raise RuntimeError(f"hook '{_hook_name(hook)}' has changed the size of value")
    if task.graph:
        return r
    task.visible[id(r._data)] = (r._data, r)
    return r._data


def _hook_values(task, originals, r, hook):
    """The tuple a node hook returned in place of ``originals``, checked as torch does."""
    if not isinstance(r, tuple):
        raise TypeError(f"expected tuple, but hook returned '{type(r).__name__}'")
    if len(r) != len(originals):
        raise RuntimeError(f"hook '{_hook_name(hook)}' has returned an incorrect number of "
                           f"values (got {len(r)}, but expected {len(originals)})")
    return [_hook_value(task, o, v, hook) for o, v in zip(originals, r)]


def _call_pre_hooks(task, fn, grads):
    shown = fn._output_positions()  # torch's grad_outputs: one per differentiable output
    grads = _own_list(grads)
    for hook in list(fn._pre_hooks.values()):
        visible = grads if shown is None else [grads[k] for k in shown]
        r = hook(_as_tensors(task, visible))
        if r is not None:
            new = _hook_values(task, visible, r, hook)
            for k, v in zip(range(len(grads)) if shown is None else shown, new):
                grads[k] = v
    return grads


def _call_post_hooks(task, fn, outs, grads):
    shown = fn._edge_positions()  # torch's grad_inputs: one per edge it has
    grads_shown = fn._output_positions()
    if grads_shown is not None:
        grads = [grads[k] for k in grads_shown]
    outs = list(outs)
    for hook in list(fn._post_hooks.values()):
        visible = outs if shown is None else [outs[k] for k in shown]
        r = hook(_as_tensors(task, visible), _as_tensors(task, grads))
        if r is not None:
            new = _hook_values(task, visible, r, hook)
            for k, v in zip(range(len(outs)) if shown is None else shown, new):
                outs[k] = v
    return outs


def _as_tensors(task, grads):
    """Gradients as a hook sees them. A hook may keep them, so they are never stolen into a
    ``.grad`` (which later accumulation would change in place)."""
    if task.graph:
        return tuple(grads)
    out = []
    for g in grads:
        if g is None:
            out.append(None)
            continue
        out.append(_visible(task, g if type(g) is np.ndarray else as_array(g)))
    return tuple(out)


def _visible(task, g):
    """Gradient array ``g`` as a Tensor user code sees (a hook's argument, what autograd.grad
    returns): the same Tensor each time, and never stolen into a ``.grad`` (which later
    accumulation would change in place)."""
    seen = task.visible.get(id(g))
    if seen is not None and seen[0] is g:
        return seen[1]
    t = _expanded_view(task, g) if g.base is not None else None
    if t is None:
        t = with_version(_wrap(g)) if _COUNTED[0] else _wrap(g)
    task.visible[id(g)] = (g, t)
    return t


def _expanded_view(task, g):
    """A gradient that is a view of another (sum's expansion, a 0-d sum's, a permutation's)
    as torch's: a view of the gradient it views (its ``_base``; the very tensor when user
    code holds it, a grad_output). None where ``g`` is not a NumPy view that as_strided can
    give again."""
    base = g.base
    if type(base) is not np.ndarray:  # (NumPy's as_strided hangs its view off a DummyArray
        base = getattr(base, "base", None)  # holding the array viewed: an expansion's)
    if type(g) is not np.ndarray or type(base) is not np.ndarray or g.dtype != base.dtype:
        return None
    item = g.itemsize
    offset = g.__array_interface__["data"][0] - base.__array_interface__["data"][0]
    if offset < 0 or offset % item or any(st < 0 or st % item for st in g.strides):
        return None
    owner = _visible(task, base)
    prev, state.grad_enabled = state.grad_enabled, False
    try:  # (made by the backward pass, so a view made in no_grad mode, as torch's)
        # (as_strided's offset counts from the storage's start, where the owner may not)
        view = owner.as_strided(g.shape, [st // item for st in g.strides],
                                owner.storage_offset() + offset // item)
    finally:
        state.grad_enabled = prev
    return view if view._data.flags.writeable == g.flags.writeable else None


def _validate(task, fn, i, g, grad_dtype=GRAD_DTYPE_OWN):
    """Bring an input gradient to its input's shape (undoing broadcasting) and dtype (a
    leaf's ``grad_dtype`` when one was set: None keeps the gradient's)."""
    if task.batch is None:
        return _validate_one(task, fn, i, g, grad_dtype)
    meta = fn._meta[i] if i < len(fn._meta) else None
    if not task.graph and type(g) is not np.ndarray:
        g = as_array(g)
    if meta is None:
        return g
    g = _batched.validate(task, fn, i, g, meta[0])
    return _cast_to_grad_dtype(task, g, meta[1], grad_dtype, _flows(fn, i))


def _validate_one(task, fn, i, g, grad_dtype=GRAD_DTYPE_OWN):
    """``_validate`` for one example's gradient (any pass but a batched one)."""
    meta = fn._meta[i] if i < len(fn._meta) else None
    if not task.graph and type(g) is not np.ndarray:
        g = as_array(g)
    if meta is None:
        return g
    shape, dt = meta
    gshape = g._data.shape if task.graph else g.shape
    if gshape != shape:
        gdt = g._data.dtype if task.graph else g.dtype
        if gdt is not dt and gdt.kind == "c" and dt.kind != "c":
            # a real input's share first, then the sum, in torch's order (its formula's
            # handle_r_to_c, then validate_outputs' sum_to): under create_graph the sum is
            # of a real tensor, and its view of the result is a ViewBackward0
            g = g.real
        lead = len(gshape) - len(shape)
        if not task.graph and lead > 0 and gshape[lead:] == shape:
            # only leading dimensions broadcast (a bias's gradient): expandable, and summed
            # as sum_to sums it, without its general checks
            g = _late("reduction.sum_leading")(g, lead)
        else:
            check_expandable(fn, i, shape, gshape)
            g = _late("reduction.sum_to")(g, shape)
        if grad_dtype is GRAD_DTYPE_OWN and (g._data.dtype if task.graph else g.dtype) == dt:
            return g  # (a broadcast input's gradient, summed: what _cast returns for it)
    return _cast_to_grad_dtype(task, g, dt, grad_dtype, _flows(fn, i))


def _late(name):
    """``ember._ops.<module>.<attr>``, for ``name`` "module.attr": imported on first use (the
    ops import the engine), then found by one dict lookup instead of an import statement."""
    found = _LATE.get(name)
    if found is None:
        module, attr = name.split(".")
        found = _LATE[name] = getattr(importlib.import_module(f".._ops.{module}", __package__),
                                      attr)
    return found


_LATE: dict = {}


def _cast_to_grad_dtype(task, g, dt, grad_dtype, flows=True):
    if grad_dtype is GRAD_DTYPE_OWN:
        return _cast(task, g, dt, flows)
    return g if grad_dtype is None else _cast(task, g, grad_dtype.np, flows)


def _cast_for_leaf(task, g, var):
    """A gradient for leaf ``var`` in its grad dtype (its dtype unless one was set)."""
    want = var._grad_dtype
    return _cast_to_grad_dtype(task, g, var._data.dtype, want)


_NOT_DIFFERENTIABLE = ('isDifferentiableType(grad.scalar_type()) INTERNAL ASSERT FAILED at '
                      '"/__w/pytorch/pytorch/torch/csrc/autograd/engine.cpp":998, please report '
                      'a bug to PyTorch. ')


def _check_differentiable(dt):
    """A gradient for an integer tensor (one that requires grad: ``int_tensor[...] = w``) is
    refused, with torch's own (internal) error: no gradient flows on from it."""
    if dt.kind not in "fc" and dt not in REDUCED_NP:
        raise RuntimeError(_NOT_DIFFERENTIABLE)


def _flows(fn, i):
    nxt = fn._next
    return i < len(nxt) and nxt[i][0] is not None


def _cast(task, g, dt, flows=True):
    """``g`` in dtype ``dt`` (``flows``: an edge takes it on, as torch checks only those)."""
    gdt = g._data.dtype if task.graph else g.dtype
    if gdt != dt:
        if flows:
            _check_differentiable(dt)
        if gdt.kind == "c" and dt.kind != "c":
            # A real input's share of a complex gradient is its real part (torch's
            # handle_r_to_c, done here once for every formula).
            g = g.real if task.graph else g.real.copy()
            if (g._data.dtype if task.graph else g.dtype) == dt:
                return g
        g = g.to(_dtype_of(dt)) if task.graph else g.astype(dt)
    return g


def _dtype_of(npdtype):
    from .. import _dtype as D
    return D._BY_NP[npdtype]


def check_expandable(fn, i, shape, gshape):
    """torch's error for a gradient that no broadcasting of its input's shape gives."""
    if not _expandable(shape, gshape):
        raise RuntimeError(
            f"Function {fn.name()} returned an invalid gradient at index {_edge_index(fn, i)} "
            f"- got {list(gshape)} but expected shape compatible with {list(shape)}")


def _edge_index(fn, i):
    """Gradient slot ``i`` of ``fn`` as torch counts it: among the edges its node has (none
    for an index or a mask: scatter_add's src is its gradient 1, not 2)."""
    shown = fn._edge_positions()
    return i if shown is None or i not in shown else list(shown).index(i)


def _expandable(shape, gshape):
    """Can a tensor of ``shape`` be broadcast to ``gshape`` (so that sum_to undoes it)?"""
    if len(shape) > len(gshape):
        return False
    for s, gs in zip(reversed(shape), reversed(gshape)):
        if s != gs and s != 1:
            return False
    return True


# NOTE: torch's AccumulateGrad takes a gradient over when nothing but the engine holds it
# (its use count). A gradient the engine alone holds has these references here: the list
# the engine popped from the node's input buffer, ``g`` in _accumulate, and getrefcount's
# argument. One more is another holder: another node's input buffer (a gradient a node passed
# on to two inputs), a Tensor user code sees (a root gradient, a hook's argument or return
# value), a .grad that took it over, or a NumPy view of it.
def _refs_of_argument(g):
    return _refcount(g)  # (counted as _accumulate counts its argument)


# NOTE: measured, not written down: what the interpreter counts for a frame's argument and a
# call's operand differs between Python versions, and a count too low would hand over a
# gradient that something else still holds.
_probe = [np.empty(0)]
_OWN_REFS = _refs_of_argument(_probe[0])  # (3 on CPython 3.11)
del _probe


def _refs_of_entry(entry):
    t = entry[1]
    return _refcount(t)  # (counted as _owned counts the Tensor of a map entry)


_ENTRY_REFS = _refs_of_entry((None, object()))


def _owned(task, g, refs):
    """Whether nothing but the engine holds gradient array ``g``, as torch's use count says.
    A Tensor a hook received or returned around it counts only while something besides the
    engine's map of such Tensors holds it (the map's entry holds ``g`` twice: in its tuple,
    and as the Tensor's data)."""
    if task.borrowed.holds(g):
        return False
    seen = task.visible.get(id(g))
    if seen is not None and seen[0] is g:
        t = seen[1]
        # (held by more than the entry, or an expanded view: torch copies those)
        if _refcount(t) > _ENTRY_REFS or (t._base is not None and 0 in t._data.strides):
            return False
        refs -= 2
    return refs <= _OWN_REFS


def _accumulate(task, var, g):
    """Sum ``g`` into ``var.grad`` as torch's AccumulateGrad does: the first gradient is
    stolen when nobody else holds it, else copied into a new tensor (``copy_``: version 1, and
    under create_graph a CopyBackwards node); later ones are added in place (a version bump),
    or out of place under create_graph."""
    old = var._grad
    if task.graph:
        if old is None and type(g._data) is CooArray:  # (torch clones a sparse one)
            var._grad = g.clone()
        elif old is None:
            new = _wrap(_grad_buffer(var._data, g._data))
            new.copy_(g)
            var._grad = new
        else:  # NOTE: torch refuses sparse + dense, so a sparse .grad goes second
            var._grad = g + old if _is_sparse(old) and not _is_sparse(g) else old + g
            if _layout_unchecked(282):
                _check_summed_layout(var._grad._data, var._data, 282)
    elif old is None:
        refs = _refcount(g)  # (counted before any call holds `g` on the stack)
        if refs <= _OWN_REFS and type(g) is ndarray and _plainly_owned(task, g, var._data):
            # the usual first gradient, taken over as it is: what the general path below
            # does for it, in fewer calls (a fixed cost per leaf and backward)
            task.borrowed.add(g)
            var._grad = wrap_versioned(g)
        else:
            var._grad = _first_grad(task, var, g, refs)
    else:
        odata = old._data
        if type(odata) is CooArray or type(g) is CooArray:
            var._grad = _accumulate_across_layouts(old, g)
            odata = var._grad._data
        elif odata.shape == g.shape and writeable(odata):
            if type(odata) is not ndarray or not odata.flags.c_contiguous:
                _check_no_internal_overlap(odata)  # (a C-contiguous array never overlaps)
            odata += g
            old._bump_version()
        else:
            if odata.shape != g.shape:  # (torch adds in place: its errors for a .grad that
                # a gradient does not broadcast into, after .data was replaced by another shape)
                _late("pointwise._check_copies_into")(odata.shape, g.shape)
            old._data = odata = odata + g
        # (the usual .grad, a NumPy array of its C-contiguous NumPy variable's strides, obeys
        # the contract: told without a call)
        vdata = var._data
        if ((type(odata) is not ndarray or type(vdata) is not ndarray
                or odata.strides != vdata.strides or not vdata.flags.c_contiguous)
                and _layout_unchecked(252)):
            _check_summed_layout(odata, vdata, 252)
    hooks = var._post_acc_hooks
    if hooks:
        for hook in list(hooks.values()):
            r = hook(var)
            if r is not None:
                if isinstance(r, Tensor):
                    raise RuntimeError("Tensor post accumulate grad hooks should return None.")
                raise TypeError(f"expected Variable, but hook returned '{type(r).__name__}'")


def _layout_unchecked(line):
    """Whether a ``.grad`` gradients were summed into is still to be checked against the
    layout contract at torch's check ``line`` (see _check_summed_layout): until that check
    warned once, or always under ``set_warn_always(True)``."""
    if not _layout_policy.enforce:  # (a layout the user allowed: no warning about it)
        return False
    if line not in _warned_layouts:
        return True
    from .._namespace import is_warn_always_enabled
    return is_warn_always_enabled()


_warned_layouts = set()  # the lines of torch's layout checks that warned (TORCH_WARN_ONCE)


def _check_summed_layout(grad, var_data, line):
    """torch's CHECK_RESULT after summing a gradient into a ``.grad`` (at ``line`` of its
    accumulate_grad.h: 252 without a graph, 282 under create_graph): a warning, once per
    process at each line, when the sum ``grad`` does not obey the layout contract of the
    variable's ``var_data`` (not an error: a ``.grad`` the user set transposed, say)."""
    if type(grad) is CooArray or type(var_data) is CooArray or _obeys_layout(grad, var_data):
        return
    from .._namespace import is_warn_always_enabled
    if not is_warn_always_enabled():  # (torch's warning under warn_always is not its once)
        _warned_layouts.add(line)

    def layout(a):
        return f"sizes() = {list(a.shape)}, strides() = {[s // a.itemsize for s in a.strides]}"
    from .._ops.inplace import _user_stacklevel
    warnings.warn("grad and param do not obey the gradient layout contract. This is not an "
                  f"error, but may impair performance.\ngrad.{layout(grad)}\n"
                  f"param.{layout(var_data)} (Triggered internally at "
                  "/__w/pytorch/pytorch/torch/csrc/autograd/functions/accumulate_grad.h:"
                  f"{line}.)", UserWarning, stacklevel=_user_stacklevel())


def _is_sparse(t):
    return type(t._data if type(t) is Tensor else t) is CooArray


def _buffer_sum(old, g):
    """``old + g`` for two gradients of one input (Tensors under create_graph, else arrays),
    as torch's InputBuffer sums them: after a sparse ``old`` (``g + old``: the new gradient's
    sparse entries first, and a dense one first, as torch refuses sparse + dense), and a
    sparse array and a dense one into a new dense array."""
    first, second = (g, old) if _is_sparse(old) else (old, g)
    if type(first) is Tensor:
        return first + second
    try:
        return first + second
    except SparseOperand:
        return _sum_across_layouts(first, second)


def _sum_across_layouts(a, b):
    """A sparse and a dense gradient array summed into a new dense array."""
    dense, sparse = (b, a) if type(a) is CooArray else (a, b)
    return add_into_dense(dense.copy(), sparse)


def _accumulate_across_layouts(old, g):
    """The ``.grad`` after summing ``g`` into ``old`` when either is sparse, as torch's
    AccumulateGrad: sparse into sparse or into dense in place (a version bump; sparse entries
    appended as torch's add_ leaves them), a dense one into a sparse ``.grad`` a new dense
    tensor (torch's ``new_grad + variable_grad``)."""
    odata = old._data
    if type(odata) is CooArray and type(g) is not CooArray:
        return _wrap(add_into_dense(g.copy(), odata))
    if type(odata) is CooArray:
        odata += g
    else:
        add_into_dense(odata, g)
    old._bump_version()
    return old


def _first_grad(task, var, g, refs):
    """The Tensor that becomes ``var.grad`` for its first gradient ``g`` (held ``refs`` times,
    as _accumulate counted): ``g`` itself when nobody else holds it (the very Tensor a hook saw
    around it, if one did), else a copy laid out as ``var``."""
    if not _owned(task, g, refs) or not writeable(g) or (
            _layout_policy.enforce and not _obeys_layout(g, var._data)):
        g = _clone_obeying_layout(g, var._data)
    else:
        seen = task.visible.get(id(g))
        if seen is not None and seen[0] is g:  # the very Tensor a hook saw, as in torch
            g = seen[1]
            if g._base is not None:  # (torch takes a view over detached: its counter shared)
                g = g.detach()
    task.borrowed.add(g._data if type(g) is Tensor else g)
    if type(g) is not Tensor:
        g = with_version(_wrap(g)) if _COUNTED[0] else _wrap(g)
    return g


def _plainly_owned(task, g, var_data):
    """For a NumPy gradient ``g`` that only the engine's references hold (so no Tensor user
    code saw wraps it): whether ``_accumulate`` takes it over as ``.grad`` as it is (nothing
    borrowed, writable, and, when the layout policy is enforced, laid out as ``var_data``)."""
    if task.borrowed.holds(g) or not g.flags.writeable:
        return False
    return not _layout_policy.enforce or _obeys_layout(g, var_data)


def _check_no_internal_overlap(grad_data):
    """torch's ``+=`` into an expanded ``.grad`` (one the user set) is refused."""
    if _late("inplace.has_internal_overlap")(grad_data):
        raise RuntimeError(_late("inplace._INTERNAL_OVERLAP"))


def _dense(a):
    if type(a) is CooArray:
        return False
    return _late("inplace._dense")(a)


class _LayoutPolicy(threading.local):
    enforce = True  # (see autograd.enforce_grad_layout_policy)


_layout_policy = _LayoutPolicy()


def _obeys_layout(g, var_data):
    """torch's obeys_layout_contract: a gradient may become ``.grad`` as it is (a view
    included) only if it has its variable's strides over every dimension of more than one
    element (and no zero stride elsewhere), or, for a variable whose layout is not dense,
    if it is C-contiguous. An expanded gradient (sum's) never does. A sparse gradient
    always may; a dense one of a sparse variable if it is C-contiguous. Strides are compared
    in elements, as torch's: a gradient in a leaf's ``grad_dtype`` of another item size has
    other strides in bytes."""
    if type(g) is CooArray or type(var_data) is CooArray:
        return type(g) is CooArray or g.flags.c_contiguous
    if g.flags.c_contiguous and var_data.flags.c_contiguous:  # the usual case, both dense
        if g.strides == var_data.strides:
            return True
    elif not _dense(var_data):
        return g.flags.c_contiguous
    gsize, vsize = g.itemsize, var_data.itemsize
    for n, gs, vs in zip(g.shape, g.strides, var_data.strides):
        if gs * vsize != vs * gsize if n != 1 else gs == 0:  # (gs / gsize != vs / vsize)
            return False
    return True


def _grad_buffer(var_data, like):
    """An empty array for a copied gradient: with the variable's strides if its layout is
    dense (torch's new_empty_strided: those of its dimensions of one element too), else
    C-contiguous."""
    xp = get_xp(like)
    if _dense(var_data) and type(var_data) is type(like):
        return empty_strided(var_data, tuple(s // var_data.itemsize for s in var_data.strides),
                             like.dtype)
    return xp.empty(like.shape, like.dtype)


def _clone_obeying_layout(g, var_data):
    """torch's clone_obey_contract: a copy with the variable's strides, written by ``copy_``
    (version 1) when its layout is dense, else a contiguous clone (version 0)."""
    if _dense(var_data):
        out = _grad_buffer(var_data, g)
        if out.shape != g.shape:  # (a leaf whose .data was replaced by another shape)
            _late("pointwise._check_copies_into")(out.shape, g.shape)
        out[...] = g
        t = _wrap(out)
        t._vc = [1]
        return t
    return g.copy(order="C")


def _captured_results(task, inputs, allow_unused):
    out = []
    for i, (t, g) in enumerate(zip(inputs, task.captured)):
        if g is None:
            if not allow_unused:
                raise RuntimeError(
                    f"The differentiated Tensor at index {i} appears to not have been used in "
                    "the graph. Set allow_unused=True if this is the desired behavior.")
            out.append(None)
            continue
        if not task.graph:
            # NOTE: a gradient is returned as the pass left it, as torch's: an expanded one
            # (sum's) stays expanded, so writing into it in place is refused as in torch, and
            # one user code holds (a grad_output passed through, a hook's argument) is returned
            # as that very Tensor. Only one that cannot be written is copied.
            if type(g) is np.ndarray and g.base is None and g.flags.writeable:
                # the usual one, a writable array of its own: what as_array, writeable and
                # _visible do for it, without their calls (once per input and pass)
                seen = task.visible.get(id(g))
                if seen is None or seen[0] is not g:
                    seen = task.visible[id(g)] = (g, wrap_versioned(g))
                out.append(seen[1])
                continue
            g = as_array(g)
            seen = task.visible.get(id(g))
            if not writeable(g) and (seen is None or seen[0] is not g):
                g = g.copy()
            g = _visible(task, g)
        out.append(g)
    return tuple(out)

