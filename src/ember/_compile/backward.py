"""Recording the backward program: the engine's first-order pass, written down.

Over the nodes a recorded call made, this runs what ``autograd/engine.py`` runs in a
first-order pass, in the same order (the most recently created ready node first): each
node's derivative formulas on arrays, then the engine's own steps (a gradient summed down to
its input's shape and cast to its dtype, two gradients of one input added). Each step is
written down as an instruction on slots, so the replay calls the very formulas eager mode
calls, on the very kind of arguments, and their raw-array internals (masks, index
arithmetic) run again on the new arrays.
"""
from __future__ import annotations

import dis
import heapq
import inspect
import itertools
import types

import numpy as np

from .._backend import as_array, fp_errors, get_xp, is_array, writeable
from .._dtype import SPECIAL_NP
from .._ops.registry import OpDef
from .._ops.views import CopySlices
from .._state import state
from ..autograd._grad_versions import is_torch_view, note_writes, writes_of
from ..autograd.graph import ERR_FREED, AccumulateGrad, gradient_edge
from .recorder import ADD, ASSIGN, CAST, CONST, COPY, FORMULA, SLOT, SLOTS, SUM_TO, VALUE, Instr


def trace(rec, outputs, grad_slots, sources):
    """Slots of the sources' gradients after a pass from ``outputs`` (whose gradients are in
    ``grad_slots``); every step is appended to ``rec.instrs``."""
    root_edges = [gradient_edge(t) for t in outputs]
    targets = {}
    for k, t in enumerate(sources):
        fn, nr = gradient_edge(t)
        targets.setdefault(fn, []).append((nr, k))
    deps = _dependencies(rec, [fn for fn, _ in root_edges], targets)
    buffers = {}
    rec.first_owned = max(grad_slots, default=len(rec.arrays) - 1) + 1  # (see _sums_in_place)
    for (fn, nr), s in zip(root_edges, grad_slots):
        _accumulate(rec, buffers, fn, nr, s)
    heap, order = [], itertools.count()
    for fn in dict.fromkeys(fn for fn, _ in root_edges):
        if deps.get(fn, 0) == 0:
            heapq.heappush(heap, (-fn._seq, next(order), fn))
    prev = state.grad_enabled
    state.grad_enabled = False
    quiet = fp_errors.silence()
    reached = set()  # the sources' nodes the pass has reached
    try:
        while heap:
            fn = heapq.heappop(heap)[2]
            if fn in targets:  # a source's node: its gradient stays in its buffer
                if type(fn) is AccumulateGrad:
                    _copy_if_held(rec, buffers, fn, reached)
                reached.add(fn)
                continue
            outs = _run_node(rec, fn, buffers.pop(fn, None))
            for i, (child, nr) in enumerate(fn._next):
                if child is None:
                    continue
                s = outs[i] if outs is not None else None
                if s is not None:
                    _accumulate(rec, buffers, child, nr, _validate(rec, fn, i, s))
                deps[child] -= 1
                if deps[child] == 0:
                    heapq.heappush(heap, (-child._seq, next(order), child))
    finally:
        fp_errors.restore(quiet)
        state.grad_enabled = prev
    _note_chains_once(rec.instrs)
    found = [None] * len(sources)
    for fn, wanted in targets.items():
        buf = buffers.get(fn)
        for nr, k in wanted:
            found[k] = None if buf is None else buf[nr]
    return found


def _copy_if_held(rec, buffers, fn, reached):
    """A leaf's gradient that a node still to run also holds when eager's engine reaches the
    leaf: eager copies it into ``.grad`` (engine._accumulate: version 1), while the program
    would hand the engine an array nothing else holds by then (the formulas have run), which
    it takes over (version 0). The program hands over a copy noted as written once, which
    the engine takes over with eager's version."""
    buf = buffers[fn] if fn in buffers else ()
    held = [x for node, b in buffers.items() if node is not fn and node not in reached
            for x in b if x is not None]
    for nr, s in enumerate(buf):
        if s is None:
            continue
        a = rec.arrays[s]
        if s in held or any(rec.arrays[x].base is a for x in held):
            buf[nr] = _step(rec, COPY, (s,), 1, a.copy())


def _dependencies(rec, roots, targets):
    """Incoming edge counts of the nodes between the outputs and the sources; every node
    there must be a plain op node (no hooks, no retained gradient, no leaf of its own)."""
    from .._ops.registry import OpNode
    deps = {fn: 0 for fn in roots}
    stack = list(deps)
    while stack:
        fn = stack.pop()
        if fn in targets:
            continue
        if isinstance(fn, AccumulateGrad):
            rec._stop("a leaf that requires grad is made inside the function")
        if not (isinstance(fn, OpNode) and fn._op is not None) and type(fn) is not CopySlices:
            rec._stop(f"its backward runs a {type(fn).__name__} node, which ember.compile "
                      "does not replay")
        if not fn._apply_plain or getattr(fn, "_hooked", False):
            rec._stop("a hook, retain_grad() or saved tensor hook inside the function")
        for child, _ in fn._next:
            if child is not None:
                count = deps.get(child)
                if count is None:
                    deps[child] = 1
                    stack.append(child)
                else:
                    deps[child] = count + 1
    return deps


def _run_node(rec, fn, grads):
    """Run one node's formulas on arrays (as OpNode._apply_generic does), writing each down."""
    if grads is None or all(g is None for g in grads):
        return None
    if type(fn) is CopySlices:
        return _run_copy_slices(rec, fn, grads[0])
    op = fn._op
    env = fn._unpack(False) if op.saved_spec else ()
    nxt = fn._next
    if op.n_outputs == 1:
        g_spec, g = (SLOT, grads[0], None), rec.arrays[grads[0]]
    else:  # formulas expect every output's gradient: zeros where none came
        like = rec.arrays[next(s for s in grads if s is not None)]
        slots = tuple(_zeros(rec, m, like) if s is None else s
                      for s, m in zip(grads, fn._out_meta))
        g_spec, g = (SLOTS, slots), tuple(rec.arrays[s] for s in slots)
    outs = [None] * len(nxt)
    for inputs, formula, env_idx in fn._formulas():  # (conjugated for complex outputs)
        if not any(nxt[i][0] is not None for i in inputs):
            continue
        mask = tuple(nxt[i][0] is not None for i in inputs)  # (grad_input_mask)
        values = [mask if j is None else env[j] for j in env_idx]
        args = (g_spec,) + tuple(rec.formula_arg(v) for v in values)
        r = formula(g, *values)
        results = (r,) if len(inputs) == 1 else tuple(r)
        out_slots, zero_d = [], []
        for i, ri in zip(inputs, results):
            if ri is None:
                out_slots.append(None)
                zero_d.append(False)
                continue
            normal = type(ri) is np.ndarray or is_array(ri)
            s = rec.backward_slot(ri if normal else as_array(ri))
            outs[i] = s
            out_slots.append(s)
            zero_d.append(not normal)
        instr = Instr(FORMULA, None, formula, args, None, None, tuple(out_slots),
                      tuple(zero_d))
        if len(inputs) == 1 and r is not None and not zero_d[0]:
            instr.resolved = resolve(formula, args, (g,) + tuple(values), r)
        rec.instrs.append(instr)
    return outs


# -- a formula that only passes its arguments on ----------------------------------------------
def resolve(formula, args, values, result):
    """``(function, arguments, op)`` a backward program may call in place of ``formula``
    (whose arguments are ``args``, with values ``values``), or None.

    A formula that is one call, ``return f(grad, result, 0)``, of its own parameters and
    constants, passes them on: the program calls ``f`` itself (a frame fewer). Where ``f`` is
    an op (relu's ``threshold_backward``, nll_loss's ``nll_loss_backward``), the op's call on
    NumPy arrays runs its kernel (see registry._compile_call): the program calls the kernel,
    without the op's call, when this call took that path and its result is an array of one
    dimension or more (so the kernel's own result is that array). The path depends on the
    arrays' types and dtypes only, which the guards and the gradients' check fix (see
    program._generate_backward)."""
    call = _one_call(formula)
    if call is None:
        return None
    name, params = call
    if any(type(p) is int and p >= len(args) for p in params):
        return None  # (a parameter left to its default)
    fn = formula.__globals__.get(name)
    passed = [args[p] if type(p) is int else (VALUE, p[0]) for p in params]
    if isinstance(fn, OpDef):
        given = [values[p] if type(p) is int else p[0] for p in params]
        if not (_array_path(fn, given) and type(result) is np.ndarray and result.ndim):
            return None
        return (fn.bare_kernel if fn.quiet else fn.kernel), tuple(passed), fn
    if type(fn) is not types.FunctionType:
        return None
    return fn, tuple(passed), None


def _array_path(op, args):
    """Whether op ``op``'s call with positional ``args`` runs its kernel on them straight
    (registry._compile_call's test: the op's arity, then its leading raw arrays of dtypes
    NumPy computes itself)."""
    n = op.__dict__.get("array_args", 0)
    if not n or len(args) != op.arity or len(args) < n:
        return False
    return all(type(a) is np.ndarray and a.dtype not in SPECIAL_NP for a in args[:n])


_PASSING = frozenset({"RESUME", "NOP", "CACHE", "PRECALL", "PUSH_NULL"})


def _one_call(formula):
    """``(global name, params)`` when ``formula``'s code is ``return name(p, ...)`` with each
    argument one of its parameters (its position) or a constant (``(value,)``); else None."""
    code = getattr(formula, "__code__", None)
    if (code is None or formula.__closure__ or code.co_kwonlyargcount
            or code.co_flags & (inspect.CO_VARARGS | inspect.CO_VARKEYWORDS)):
        return None
    # (read once per formula's code: disassembling every node's formula at each recording
    # took a third of a 300-op recording's time)
    found = _ONE_CALL.get(code, _UNREAD)
    if found is _UNREAD:
        if len(_ONE_CALL) >= 4096:  # (generated formulas could bring new code objects)
            _ONE_CALL.clear()
        found = _ONE_CALL[code] = _read_one_call(code)
    return found


_ONE_CALL: dict = {}  # code object -> what _read_one_call found in it
_UNREAD = object()


def _read_one_call(code):
    steps = [i for i in dis.get_instructions(code) if i.opname not in _PASSING]
    if len(steps) < 3 or steps[0].opname != "LOAD_GLOBAL" or steps[-1].opname != "RETURN_VALUE":
        return None
    call = steps[-2]
    params = []
    for i in steps[1:-2]:
        if i.opname == "LOAD_FAST" and i.arg < code.co_argcount:
            params.append(i.arg)
        elif i.opname == "LOAD_CONST":
            params.append((i.argval,))
        else:
            return None
    if call.opname != "CALL" or call.arg != len(params):
        return None
    return steps[0].argval, tuple(params)


def _run_copy_slices(rec, node, g):
    """CopySlices._apply on arrays, written down: the base's gradient copied, the in-place
    op's formulas run on a copy of the view's region of it, their result written back into
    that region (views.py)."""
    from .._ops.registry import OpNode
    from .._ops.views import _refuse_internal_overlap, replay
    inner, chain = node._fn, node._chain
    if inner is None:
        raise RuntimeError(ERR_FREED)
    if not isinstance(inner, OpNode) or inner._op is None or inner._hooked:
        rec._stop("an in-place write into a view whose op ember.compile does not replay")
    result = _step(rec, COPY, (g,), None, rec.arrays[g].copy())
    region = replay(chain, rec.arrays[result])
    s_region = rec.backward_slot(region)
    rec.instrs.append(Instr(FORMULA, None, replay, ((VALUE, chain), (SLOT, result, None)),
                            None, None, (s_region,), (False,)))
    if node._next[0][0] is not None:
        _refuse_internal_overlap(region)
    copied = _step(rec, COPY, (s_region,), None, region.copy())
    sub = _run_node(rec, inner, [copied])
    value = 0 if sub[0] is None else rec.arrays[sub[0]]
    region[...] = value
    src = (VALUE, 0) if sub[0] is None else (SLOT, sub[0], None)
    rec.instrs.append(Instr(ASSIGN, None, None, ((SLOT, s_region, None), src), None, None,
                            (), ()))
    return [result] + list(sub[1:])


def _zeros(rec, meta, like):
    shape, dtype = meta
    z = get_xp(like).zeros(shape, dtype)
    z.flags.writeable = False
    return rec._new_slot(z, CONST, z)


def _validate(rec, fn, i, s):
    """The engine's validation of an input gradient: summed down to the input's shape, cast
    to its dtype."""
    meta = fn._meta[i] if i < len(fn._meta) else None
    if meta is None:
        return s
    shape, dt = meta
    a = rec.arrays[s]
    if a.shape != shape:
        from .._ops.reduction import sum_to
        from ..autograd.engine import check_expandable
        check_expandable(fn, i, shape, a.shape)
        out = as_array(sum_to(a, shape))
        s = _step(rec, SUM_TO, (s,), (a.shape, shape), out)
        a = out
    if a.dtype != dt:
        if a.dtype.kind == "c" and dt.kind != "c":
            rec._stop("a complex gradient of a real input, which ember.compile does not replay")
        s = _step(rec, CAST, (s,), dt, a.astype(dt))
    return s


def _accumulate(rec, buffers, fn, nr, s):
    buf = buffers.get(fn)
    if buf is None:
        meta = fn._out_meta
        buf = buffers[fn] = [None] * (len(meta) if meta else 1)
    old = buf[nr]
    if old is None:
        buf[nr] = s
    else:
        written = writes_of(rec.arrays[old]) + 1 if _sums_in_place(rec, buffers, old, s) else 0
        total = as_array(rec.arrays[old] + rec.arrays[s])
        if written:
            note_writes(total, written)  # (what a third gradient's sum finds)
        buf[nr] = _step(rec, ADD, (old, s), written, total)


def _note_chains_once(instrs):
    """A sum that the next in-place sum takes as its first gradient is seen by nothing else
    (see _sums_in_place): only the last sum of such a chain notes the writes (it counts them
    all), so a gradient summed from a hundred uses pays for one note, not a hundred."""
    continued = {i.args[0][1] for i in instrs if i.kind == ADD and i.extra}
    for instr in instrs:
        if instr.kind == ADD and instr.extra and instr.outs[0] in continued:
            instr.extra = 0


def _sums_in_place(rec, buffers, old, s):
    """Whether the engine's first-order pass would add gradient ``s`` into ``old`` in place
    (engine.py: a gradient a formula made, not a view, which nothing but its buffer holds), a
    write torch's version of the sum shows. The program adds out of place (the same values)
    and notes that write against the sum instead."""
    a, g = rec.arrays[old], rec.arrays[s]
    if (old < rec.first_owned or old == s or a.base is not None or a.shape != g.shape
            or a.dtype != g.dtype or not is_array(a) or not writeable(a) or is_torch_view(a)):
        return False  # (below first_owned: the caller's gradients and the forward's arrays)
    held = [x for buf in buffers.values() for x in buf if x is not None]
    return held.count(old) == 1 and not any(
        rec.arrays[x].base is a for x in held + [s])


def _step(rec, kind, slots, value, out):
    s = rec.backward_slot(out)
    rec.instrs.append(Instr(kind, None, None, tuple((SLOT, x, None) for x in slots), None,
                            None, (s,), (out.ndim == 0,), extra=value))
    return s

