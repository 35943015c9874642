"""A compiled function: its recordings, the guards that pick one, and the eager fallback.

A call looks for a recording whose guards hold (newest first) and replays its program; with
none, it records the call (up to the recompile limit, then it runs eagerly). A graph break, a
Python side effect on the state the guards watch, hooks, or anything else a replay could not
repeat makes the function run eagerly from then on, after one warning. Outputs that require
grad share one ``CompiledFunctionBackward`` node, which runs the backward program.
"""
from __future__ import annotations

import functools
import warnings
import weakref

import numpy as np

from .._backend import fp_errors, get_xp
from .._state import forward_hook, intercepted, profiler_hook, record_extras, recording, state
from .._tensor import Tensor, _wrap
from ..autograd.graph import ERR_FREED, Node, version_error
from .config import config
from .guards import Roots, _Identity, _tensor_meta, call_guard, flatten_args, world
from .outputs import MISS, generate_call, generate_finish, generate_replay
from .program import OTHER_GRADIENTS, Program, _reads, _tensor_arg
from .recorder import (
    CALL,
    CAPTURED,
    COMPUTED,
    CONST,
    INPUT,
    SLOT,
    TENSOR,
    Recorder,
    _Stop,
    shares_memory,
)

_object_new = object.__new__
_ALL = weakref.WeakSet()  # every compiled function, for reset()


class CompiledFunctionBackward(Node):
    """The backward of a compiled function's outputs: one node running the recorded
    backward program (torch's node of the same name)."""

    _saved = None
    # (Node._usual_grads: what the program hands back is, see Entry.usual_grads; a node of a
    # recording that cannot tell, or one whose gradients ran eager's pass, says False)
    _usual_grads = True

    def _apply(self, grads, graph, needed):
        if graph:
            self._check_saved()
            return self._apply_graph(grads)
        return self._apply_into_leaves(grads, False)

    def _check_saved(self):
        """Eager's errors for a freed graph, or a saved tensor modified in place."""
        if self._saved is None:
            raise RuntimeError(ERR_FREED)
        _raise_modified(self._checks)

    def _apply_into_leaves(self, grads, into_leaves=True):
        """_apply's first-order pass, which the engine's one-node pass calls itself
        (Node._apply_into_leaves): then the program that notes no views (see
        Program.backward_into_leaves)."""
        if self._saved is None:  # (_check_saved's lines: no call, at every backward)
            raise RuntimeError(ERR_FREED)
        # (a loop: mapped C calls building lists cost more for a few checks)
        for vc, version, t in self._checks:
            if vc[0] != version:
                raise _version_error(t, vc, version)
        for g in grads:  # (a loop: a generator in any() costs more, at every backward)
            if g is None:
                grads = _zeros_for_missing(grads, self._entry.out_meta)
                break
        program = self._entry.program
        backward = program.backward_into_leaves if into_leaves else program.backward
        if program.backward_quiet:
            quiet = fp_errors.silence_noting()
            try:
                out = backward(grads, self._saved)
            finally:
                fp_errors.restore(quiet)
        else:
            out = backward(grads, self._saved)
        if out is OTHER_GRADIENTS:  # (not of the array types, dtypes and shapes recorded)
            self._usual_grads = False
            return self._apply_eager(grads)
        return out

    def _apply_eager(self, grads):
        """Gradients of another dtype (or array type) than the program was recorded with:
        eager's pass, whose first formulas compute in their dtype (the engine casts what
        they give): the forward again through the ops and the engine's pass over it."""
        wrapped = [None if g is None else _wrap(g) for g in grads]
        return [None if r is None else r._data
                for r in self._apply_graph(wrapped, create_graph=False)]

    def _apply_graph(self, grads, create_graph=True):
        """A create_graph pass: the forward again on Tensors, through the ops (the call's
        inputs must be as they were), and the engine's create_graph pass over that graph, so
        the gradients carry a graph of their own."""
        from ..autograd.engine import run_backward
        entry = self._entry
        if create_graph:
            # what a replay saves is not what a create_graph pass needs (that runs the
            # forward again through the ops): later calls this recording matches run eagerly
            entry.runs_eagerly = True
        _raise_modified(self._outside)
        sources = [self._tensors[k] if kind == "in" else k for kind, k in entry.sources]
        stand_ins = [_stand_in(t) for t in sources]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # (the call warned already: eager warns once)
            outputs = entry.program.forward_ops(
                self._tensors, self._saved, {id(t): s for t, s in zip(sources, stand_ins)})
        roots, root_grads = [], []
        for k, g in zip(entry.grad_outputs, grads):
            if g is not None:
                roots.append(outputs[k])
                root_grads.append(g)
        from .._ops.registry import _sequence
        start = next(_sequence)
        grads = list(run_backward(roots, root_grads, retain_graph=True,
                                  create_graph=create_graph, inputs=stand_ins, capture=True,
                                  allow_unused=True))
        if create_graph:
            _past_stand_ins(grads, stand_ins, sources, start)
        return grads

    # (the saved arrays alone are freed, which the engine's usual path does itself, see
    # Node._releases: the call's tensors stay, as _outside keeps those the forward read; a
    # call of _release after the backward program's last large product, caches cold, cost
    # about 1 us of W2's step)
    _releases = 1

    def _release(self):
        self._saved = None

    @property
    def _leaves_cache(self):
        return self._entry.leaves_cache


def _stand_in(source):
    """What a create_graph pass's forward reads in place of ``source``: an alias whose
    history is ``source`` alone. The engine's pass, with the stand-ins as its inputs, ends at
    them: what lies behind a source (another source, a custom Function) is the outer pass's
    business, reached once through the node's edge, while the gradients the pass builds
    still lead to ``source`` for a double backward."""
    from .._ops.registry import REGISTRY
    prev = state.grad_enabled
    state.grad_enabled = True  # (_apply_eager's pass runs with grad mode off)
    try:
        return REGISTRY["alias"](source)
    finally:
        state.grad_enabled = prev


def _past_stand_ins(grads, stand_ins, sources, start):
    """The graphs of a create_graph pass's gradients (the nodes made since sequence number
    ``start``) with their edges to a stand-in's alias node led to its source's edge instead,
    as eager's gradients lead to the source itself (torch's next_functions show no alias)."""
    from ..autograd.graph import gradient_edge
    edges = {id(s._grad_fn): gradient_edge(t) for s, t in zip(stand_ins, sources)
             if s._grad_fn is not None}
    seen = set()
    todo = [g._grad_fn for g in grads if g is not None and g._grad_fn is not None]
    while todo:
        node = todo.pop()
        if id(node) in seen or id(node) in edges or getattr(node, "_seq", 0) < start:
            continue
        seen.add(id(node))
        nexts = getattr(node, "_next", None)
        if not nexts:
            continue
        if any(e[0] is not None and id(e[0]) in edges for e in nexts):
            node._next = tuple(edges[id(e[0])] if e[0] is not None and id(e[0]) in edges
                               else e for e in nexts)
        todo.extend(e[0] for e in node._next if e[0] is not None)


def _raise_modified(checks):
    """Eager's error for the first tensor of ``checks`` (``(counter, version, tensor)`` each)
    modified in place since the forward, if one was."""
    for vc, version, t in checks:
        if vc[0] != version:
            raise _version_error(t, vc, version)


def _zeros_for_missing(grads, out_meta):
    """The output gradients, zeros where none came (the program reads them all)."""
    xp = get_xp(*(g for g in grads if g is not None))
    return [xp.zeros(m[0], m[1]) if g is None else g for g, m in zip(grads, out_meta)]


def _version_error(t, vc, version):
    """Eager's error for a saved tensor modified in place (named by its grad_fn now)."""
    return version_error(t._data, vc[0], version, t._grad_fn, t._output_nr)


class Entry:
    """One recording: its guards, its program, and how to wrap what the program returns."""

    def __init__(self, matches, program, template, out_info, sources, checked_outside,
                 outside_plan):
        # matches(args, kwargs): its guards (guards.call_guard), checked at every call: the
        # call's tensor arguments, or False
        self.matches = matches
        self.program = program
        self.template = template
        self.out_info = out_info  # per output: (requires_grad, version, checked)
        self.sources = sources  # ("in", flat position) or ("cap", tensor)
        self.checked_outside = checked_outside  # those of outside_plan the backward reads
        self.outside_plan = outside_plan  # every outside tensor the forward reads
        grads = [k for k, info in enumerate(out_info) if info[0]]
        self.grad_outputs = grads
        self.out_meta = ()  # (shape, dtype) of each output that requires grad
        self.source_meta = ()  # (shape, dtype) of each source
        # whether each gradient the backward program hands back is an ndarray of its source's
        # shape and dtype (Node._usual_grads): so it was when recorded, and a replay runs the
        # same kernels on arrays of the same types, shapes and dtypes (the guards fix the
        # inputs', the program checks the output gradients', and it reads no outside tensor
        # afresh), whose results' types, shapes and dtypes follow from those alone
        self.usual_grads = False
        self.quiet = program.quiet
        self._runs_eagerly = False  # set once a create_graph pass went through a call of it
        # the nodes' Node._leaves_cache, when every source is an outside leaf: their edges are
        # then one tuple from call to call (outputs._edge_lines), which the cache may hold as
        # the function does (a tuple made per call would be kept alive until the next pass)
        self.leaves_cache = ([(None, None)] if all(
            kind == "cap" and k._grad_fn is None and k._base is None for kind, k in sources)
            else None)
        # finish(tensors, outs, saved): the output arrays made tensors (outputs.py)
        self.finish = None
        # call(args, kwargs): the guards, then the replay (outputs.generate_call): the
        # result, or MISS; for a recording that runs eagerly, the function's result (fn)
        self.call = self.call_in_two
        self.fn = None  # the compiled function's own

    @property
    def runs_eagerly(self):
        return self._runs_eagerly

    @runs_eagerly.setter
    def runs_eagerly(self, value):
        self._runs_eagerly = value
        if value:  # (no check of it at each call: the call itself is replaced)
            self.call = self._call_eagerly

    def _call_eagerly(self, args, kwargs):
        return MISS if self.matches(args, kwargs) is False else self.fn(*args, **kwargs)

    def call_in_two(self, args, kwargs):
        """``call``'s work through ``matches`` and ``replay`` (tools that watch them call
        this instead)."""
        tensors = self.matches(args, kwargs)
        return MISS if tensors is False else self.replay(tensors)

    def replay(self, tensors):
        if self.quiet:
            quiet = fp_errors.silence_noting()
            try:
                outs, saved = self.program.forward(tensors)
            finally:
                fp_errors.restore(quiet)
        else:
            outs, saved = self.program.forward(tensors)
        return self.finish(tensors, outs, saved)

    def _leaves(self, tensors, results):
        leaves, env = [], None
        for kind, x in self.leaf_kinds:
            if kind == "out":
                leaves.append(results[x])
            elif kind == "in":
                leaves.append(tensors[x])
            elif kind == "obj":
                leaves.append(x)
            elif kind == "leaf":
                leaves.append(leaves[x])
            else:  # a view, made again through its view ops
                if env is None:
                    env = self._view_env(tensors, results)
                for instr, j in x:
                    out = instr.op(*[_tensor_arg(env, a) for a in instr.targs])
                    env[instr.outs[j]] = out if instr.op.n_outputs == 1 else out[j]
                leaves.append(env[x[-1][0].outs[x[-1][1]]])
        return leaves

    def _view_env(self, tensors, results):
        env = {s: tensors[k] if kind == "in" else k
               for s, (kind, k) in zip(self.program.outside_slots, self.outside_plan)}
        env.update(zip(self.program.outputs, results))
        return env


class CompiledFunction:
    """What ``ember.compile(fn)`` returns: calls ``fn`` through its recordings."""

    def __init__(self, fn, fullgraph=False, recompile_limit=None):
        self.fn = fn
        self.fullgraph = fullgraph
        self.recompile_limit = recompile_limit
        self.entries = []
        self.eager = None  # why the function runs eagerly for good, once it does
        self.limit_hit = False
        functools.update_wrapper(self, fn, updated=())
        self._torchdynamo_orig_callable = fn
        _ALL.add(self)

    def __get__(self, obj, objtype=None):
        """Used as a method (a decorated ``def`` in a class body): bind it like a function."""
        if obj is None:
            return self
        return functools.partial(self, obj)

    def reset(self):
        self.entries = []
        self.eager = None
        self.limit_hit = False

    def __call__(self, *args, **kwargs):
        # (the usual call reads three global flags: a hook, or anomaly mode or saved tensor
        # hooks in some thread, send it to the exact tests)
        if (_disabled[0] or intercepted[0] or record_extras[0]) and (
                _disabled[0] or recording[0] is not None
                or forward_hook[0] is not None or profiler_hook[0] is not None
                or state.anomaly or state.saved_hooks):
            return self.fn(*args, **kwargs)
        for entry in self.entries:
            result = entry.call(args, kwargs)
            if result is not MISS:
                return result
        if self.eager is not None:  # (then it has no recordings: tested after them)
            return self.fn(*args, **kwargs)
        tensors, spec = flatten_args(args, kwargs)
        limit = self.recompile_limit or config.recompile_limit
        if len(self.entries) >= limit:
            if not self.limit_hit:
                self.limit_hit = True
                _warn(f"{self._name()} hit the recompile limit ({limit}): calls that match "
                      "none of its recordings run eagerly")
            return self.fn(*args, **kwargs)
        return self._record(args, kwargs, tensors, spec)

    def _name(self):
        return getattr(self.fn, "__qualname__", None) or type(self.fn).__name__

    def _fall_back(self, why):
        self.eager = why
        self.entries = []
        _warn(f"{self._name()} runs eagerly from now on: {why}")

    # -- recording ------------------------------------------------------------------------------
    def _record(self, args, kwargs, tensors, spec):
        extra = [leaf.obj for leaf in spec if type(leaf) is _Identity]
        roots = Roots(self.fn, extra)
        if roots.hooks:
            self._fall_back("a module it calls has forward or backward hooks")
            return self.fn(*args, **kwargs)
        world_key = world()
        rec = Recorder(self.fullgraph, roots)
        for t in tensors:
            rec.add_input(t)
        rec.install()
        try:
            result = self.fn(*args, **kwargs)
        except BaseException:
            rec.uninstall()
            raise
        try:
            if forward_hook[0] is not rec and rec.broken is None:
                rec.graph_break("the op interceptor was replaced (forward-mode AD?)")
            entry = None if rec.broken else self._build(rec, result, (args, kwargs), tensors,
                                                        spec, roots)
        except _Stop:
            entry = None
        except Exception as error:  # noqa: BLE001 - e.g. the eager backward would raise too
            rec.uninstall()
            self._fall_back(f"recording its backward raised {type(error).__name__}: {error}")
            return result
        finally:
            rec.uninstall()
        if entry is None:
            self._fall_back(rec.broken or "it cannot be recorded")
            return result
        if world() != world_key or not roots.hold():
            self._fall_back("it changes the globals, closure or module state it reads (a "
                            "Python side effect a replay would not repeat)")
            return result
        self.entries.insert(0, entry)
        outs = [rec.arrays[s] for s in entry.program.outputs]
        saved = tuple([rec.arrays[s] for s in entry.program.saved]
                      + [rec.before_write[s] for s in entry.program.written])
        return entry.finish(tensors, outs, saved)

    def _build(self, rec, result, call, tensors, spec, roots):
        leaves, template = _flatten_result(result)
        if leaves is None:
            rec._stop(f"it returns a {template}")
        out_slots, plain, leaf_kinds = _classify_outputs(rec, leaves, tensors)
        grad_outputs = [t for t in plain if t._requires_grad] if state.grad_enabled else []
        sources, source_tensors = _sources(rec, tensors) if grad_outputs else ([], [])
        source_slots = (rec.trace_backward(grad_outputs, source_tensors)
                        if grad_outputs else [])
        if not rec.written <= rec.before_write.keys():
            rec._stop("it writes into an outside tensor whose values were not kept")
        program = Program(rec, out_slots, source_slots)
        saved = set(program.saved)
        out_info = [(t._requires_grad and bool(grad_outputs), 0 if t._vc is None else t._vc[0],
                     _overlaps(rec, s, saved)) for t, s in zip(plain, out_slots)]
        outside_plan = [("in", rec.kinds[s][1]) if rec.kinds[s][0] == INPUT
                        else ("cap", rec.kinds[s][1]) for s in rec.outside]
        checked = [j for j, s in enumerate(rec.outside) if _overlaps(rec, s, saved)]
        # outside tensors are read afresh: what a replay assumes of them (shape, dtype,
        # strides, requires_grad: a frozen parameter gets no gradient) is guarded
        captured = [(t, _tensor_meta(t)) for s, t in rec.outside.items()
                    if rec.kinds[s][0] == CAPTURED]
        entry = Entry(call_guard(*call, spec, tensors, captured, roots), program, template,
                      out_info, sources, checked, outside_plan)
        entry.fn = self.fn
        entry.source_meta = tuple((t._data.shape, t._data.dtype) for t in source_tensors)
        entry.leaf_kinds = leaf_kinds
        entry.out_meta = tuple((t._data.shape, t._data.dtype) for t in grad_outputs)
        entry.usual_grads = _usual_grads(rec, program, source_slots, entry.source_meta)
        # gradients the program hands out that are not its own new arrays (a passed-through
        # output gradient, one array for two sources): the engine must not keep them
        own = [s for s in source_slots if s is not None]
        entry.fresh = len(own) == len(set(own)) and all(
            rec.kinds[s][0] == COMPUTED and s >= program.forward_slots for s in own)
        entry.finish = generate_finish(entry, CompiledFunctionBackward)
        # (an attribute of the entry: called in place of the method, which does the same in
        # two calls)
        entry.replay = generate_replay(entry, entry.finish)
        entry.call = generate_call(entry, entry.matches, entry.replay)
        return entry


def _usual_grads(rec, program, source_slots, source_meta):
    """Entry.usual_grads: each source's gradient, as recorded, an ndarray of its shape and
    dtype, and no outside tensor read afresh by the backward program (its array may have been
    replaced since the forward ran, by one of another shape)."""
    if any(s >= program.forward_slots and rec.kinds[s][0] == CAPTURED
           for s in _reads(program.backward_instrs)):
        return False
    for s, (shape, dtype) in zip(source_slots, source_meta):
        a = None if s is None else rec.arrays[s]
        if type(a) is not np.ndarray or a.shape != shape or a.dtype != dtype:
            return False
    return len(source_slots) == len(source_meta)


def _classify_outputs(rec, leaves, tensors):
    """How each returned tensor is rebuilt at a replay: ``("out", j)`` the program's j-th
    output (a new tensor), ``("in", k)`` / ``("obj", t)`` an input or outside tensor returned
    as it is, ``("leaf", i)`` the same tensor as an earlier one, ``("view", chain)`` a view of
    an input, an outside tensor or an earlier output, made again through the recorded view
    ops so that it is a view as in eager mode (its base, version counter and history)."""
    producer = {}
    for instr in rec.forward:
        if instr.kind == CALL:  # (an in-place write names its target, but did not make it)
            for j, s in enumerate(instr.outs):
                if s is not None:
                    producer.setdefault(s, (instr, j))
    bases = {s: None for s in rec.outside}  # slots a view may be made from
    out_slots, plain, kinds = [], [], []
    for i, t in enumerate(leaves):
        same = next((j for j, u in enumerate(leaves[:i]) if u is t), None)
        if same is not None:
            kinds.append(("leaf", same))
            continue
        k = next((k for k, u in enumerate(tensors) if u is t), None)
        if k is not None:
            kinds.append(("in", k))
            continue
        s = rec.ids.get(id(t._data))
        kind = None if s is None else rec.kinds[s][0]
        if kind == CAPTURED and rec.kinds[s][1] is t:
            kinds.append(("obj", t))
            continue
        if kind not in (COMPUTED, CONST):  # (a constant is copied at each replay)
            rec._stop("it returns an input's or outside tensor's data in a new tensor")
        a = t._data
        # (an empty view shares no memory: its view calls alone say what it is a view of)
        if t._base is not None and (a.size == 0 or any(shares_memory(a, rec.arrays[b])
                                                      for b in bases)):
            chain = _view_chain(rec, producer, s, bases)
            if chain is not None:
                kinds.append(("view", chain))
                continue
            if a.size:
                rec._stop("an output shares memory with an input or another output, other "
                          "than as a view of it")
        kinds.append(("out", len(out_slots)))
        bases[s] = None
        out_slots.append(s)
        plain.append(t)
    return out_slots, plain, kinds


def _view_chain(rec, producer, s, bases):
    """The view calls that make slot ``s`` from one of ``bases`` (first to last), or None.
    Their other tensor arguments must be outside tensors (a replay has those as tensors)."""
    chain = []
    while s not in bases:
        found = producer.get(s)
        if found is None:
            return None
        instr, j = found
        if instr.kind != CALL or not instr.op.view:
            return None
        slots = [a[1] for a in instr.targs if a[0] in (SLOT, TENSOR)]
        if not slots or any(x not in rec.outside for x in slots[1:]):
            return None
        chain.append((instr, j))
        s = slots[0]
    chain.reverse()
    return chain


def _sources(rec, tensors):
    """The tensors gradients flow to: inputs and outside tensors that require grad."""
    sources, seen = [], []
    for k, t in enumerate(tensors):
        if t._requires_grad and not any(t is u for u in seen):
            sources.append(("in", k))
            seen.append(t)
    for s, t in rec.outside.items():
        if rec.kinds[s][0] == CAPTURED and t._requires_grad and not any(t is u for u in seen):
            sources.append(("cap", t))
            seen.append(t)
    return sources, seen


def _overlaps(rec, s, slots):
    a = rec.arrays[s]
    return s in slots or any(shares_memory(a, rec.arrays[x]) for x in slots)


# -- outputs ---------------------------------------------------------------------------------
_PLAIN = (type(None), bool, int, float, complex, str)


def _flatten_result(obj):
    """``(tensors, template)`` of a function's result, or ``(None, what)`` when it holds
    something a replay could not rebuild."""
    leaves = []
    try:
        template = _template(obj, leaves)
    except TypeError as what:
        return None, str(what)
    return leaves, template


def _template(v, leaves):
    if isinstance(v, Tensor):
        leaves.append(v)
        return ("T", len(leaves) - 1)
    if type(v) in _PLAIN:
        return ("V", v)
    if isinstance(v, tuple):
        items = tuple(_template(x, leaves) for x in v)
        return ("tuple", type(v), items)
    if type(v) is list:
        return ("list", list, tuple(_template(x, leaves) for x in v))
    if type(v) is dict:
        return ("dict", tuple(v), tuple(_template(x, leaves) for x in v.values()))
    from .._dtype import dtype
    from .._size import Size
    if isinstance(v, (Size, dtype)):
        return ("V", v)
    raise TypeError(type(v).__name__)


def _rebuild(template, tensors):
    kind = template[0]
    if kind == "T":
        return tensors[template[1]]
    if kind == "V":
        return template[1]
    if kind == "tuple":
        items = [_rebuild(x, tensors) for x in template[2]]
        cls = template[1]
        if cls is tuple:
            return tuple(items)
        return cls(*items) if hasattr(cls, "_fields") else cls(items)
    if kind == "list":
        return [_rebuild(x, tensors) for x in template[2]]
    return dict(zip(template[1], (_rebuild(x, tensors) for x in template[2])))


# -- switches --------------------------------------------------------------------------------
_disabled = [0]  # > 0 inside ember.compiler.disable'd code: compiled functions run eagerly


def _warn(message):
    from .._ops.inplace import _user_stacklevel
    warnings.warn(f"ember.compile: {message}", UserWarning, stacklevel=_user_stacklevel())


def reset():
    """Forget every recording of every compiled function (``torch._dynamo.reset``)."""
    for cf in list(_ALL):
        cf.reset()

