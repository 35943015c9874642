"""A recorded call turned into two straight-line Python functions on arrays.

``forward(tensors)`` reads the input arrays (and the current arrays of the outside tensors)
and runs every recorded kernel call in order, returning the output arrays and the arrays the
backward program reads. ``backward(grads, saved)`` runs the recorded backward. Each recorded
call becomes one line (``s7 = k3(s2, v4)``); an intermediate's name is deleted after its last
use so NumPy can reuse its memory; a kernel that is exactly a NumPy ufunc is called as that
ufunc. Nothing in them names NumPy or CuPy: kernels take their module from their inputs.

Calls that must run again at each replay (random sampling) are kept whole and called with
their tensors rewrapped. The same instructions replay on Tensors through the ops (``run_ops``)
when a create_graph pass differentiates through a compiled function.
"""
from __future__ import annotations

import weakref

from .._backend import as_array, sum_function
from .._ops.replay import PASS
from .._state import state
from .._tensor import _wrap
from ..autograd._grad_versions import _LIMIT, _NOTES, note_view, note_writes
from .recorder import (
    ADD,
    ASSIGN,
    CAPTURED,
    CAST,
    CONST,
    COPY,
    FORMULA,
    GRAD,
    INPLACE,
    INPUT,
    NESTED,
    REPLAYED,
    SLOT,
    SLOTS,
    SUM_TO,
    TENSOR,
    VALUE,
    Ref,
    shares_memory,
)

_GENERATED = "<ember compiled>"


class Program:
    """The forward and backward functions of one recording, and what they need."""

    def __init__(self, rec, outputs, source_slots):
        self.kinds = rec.kinds
        self.forward_instrs = rec.forward
        self.backward_instrs = rec.backward
        self.outputs = outputs  # output slots, in output order
        self.outside_slots = list(rec.outside)  # slots of input and outside tensors
        self.source_slots = source_slots  # the gradient slot of each source (or None)
        first_backward = min((s for s, (k, _) in enumerate(rec.kinds) if k == GRAD),
                             default=len(rec.kinds))
        self.forward_slots = first_backward  # slots below come from the forward pass
        read = _reads(self.backward_instrs) | {s for s in source_slots if s is not None}
        replayed = {s for i in self.forward_instrs if i.kind == REPLAYED for s in i.outs
                    if s is not None}
        # what the backward reads of the forward pass, and what random calls drew (a
        # create_graph pass differentiates through them with the same numbers)
        self.saved = sorted(s for s in read | replayed if s < first_backward)
        # outside tensors the forward writes into: their values before the writes are kept at
        # each call, so that a create_graph pass can run the forward again from them
        # (only where there is a backward: an optimizer step compiled under no_grad copies
        # nothing)
        self.written = (sorted(s for s in rec.written if s < first_backward)
                        if rec.backward or source_slots else [])
        self.fresh_constants = _written_constants(rec, self.forward_instrs, outputs)
        # the programs call quiet ops' kernels bare: a program with one runs silenced as a
        # whole (fp_errors.silence_noting: NumPy's warnings off, NaNs made noted as in a
        # quiet kernel's own call)
        self.quiet = _any_quiet(self.forward_instrs)
        self.forward = _generate_forward(self, rec.arrays)
        # the array type, dtype and shape of each output gradient the program was recorded
        # with
        self.grad_kinds = {s: (type(rec.arrays[s]), rec.arrays[s].dtype, rec.arrays[s].shape)
                           for s, (k, _) in enumerate(rec.kinds) if k == GRAD}
        self.backward, formed, noted = (_generate_backward(self, rec.arrays)
                                        if rec.backward or source_slots else (None, (), False))
        # the backward for a pass whose gradients go straight to distinct leaves, summed with
        # no other (the engine's one-node pass, see Node._apply_into_leaves): the notes of the
        # gradients that are views in torch, read by such sums alone, left out
        self.backward_into_leaves = (_generate_backward(self, rec.arrays, False)[0] if noted
                                     else self.backward)
        # (the engine's pass has NumPy's errors silenced already: the backward program runs
        # silence_noting only for the quiet kernels it calls bare, whose NaNs are noted;
        # a replay form's callee notes none)
        resolved_ops = [i.resolved[2] for i in self.backward_instrs
                        if i.resolved is not None and i.resolved[2] is not None
                        and i not in formed]
        self.backward_quiet = (_any_quiet(self.backward_instrs)
                               or any(op.quiet for op in resolved_ops))

    # -- a create_graph pass: the forward calls again, on Tensors, through the ops --------------
    def forward_ops(self, tensors, saved, stand_ins):
        """The program's outputs as Tensors with an eager graph: the forward calls again,
        through the ops, on the call's own input tensors (random calls give what they drew
        the first time). A create_graph backward runs the engine on that graph.
        ``stand_ins`` ({id(tensor): tensor}): what the calls read in place of the input and
        captured tensors named there."""
        env = {}
        saved_at = dict(zip(self.saved, saved))
        for s, (kind, payload) in enumerate(self.kinds):
            if kind == INPUT:
                t = tensors[payload]
                env[s] = stand_ins.get(id(t), t)
            elif kind == CAPTURED:
                env[s] = stand_ins.get(id(payload), payload)
            elif kind == CONST:
                env[s] = _wrap(payload.copy())
        for s, before in zip(self.written, saved[len(self.saved):]):
            env[s] = _written_again(env[s], before)
        for instr in self.forward_instrs:
            kind = instr.kind
            if kind == REPLAYED:  # the numbers the forward drew
                for s in instr.outs:
                    if s is not None:
                        env[s] = _wrap(saved_at[s])
                continue
            if kind == COPY:  # (a snapshot for the backward: the in-place op keeps its own)
                continue
            args = [_tensor_arg(env, a) for a in instr.targs]
            prev = state.grad_enabled
            state.grad_enabled = instr.grad  # (the grad mode the call ran in)
            try:
                if kind == INPLACE:
                    instr.op.inplace(*args)
                    continue
                out = instr.op(*args)
            finally:
                state.grad_enabled = prev
            results = (out,) if instr.op.n_outputs == 1 else tuple(out)
            for s, r in zip(instr.outs, results):
                if s is not None:
                    env[s] = r
        return [env[s] for s in self.outputs]


def _any_quiet(instrs):
    return any(i.op is not None and i.op.quiet for i in instrs)


def _written_again(t, before):
    """A stand-in for outside tensor ``t``, which the forward writes into, for its calls made
    again: a copy of what ``t`` held before the call. Where ``t`` requires grad (a parameter
    written under no_grad), the copy's history leads to ``t`` itself with gradient one, so
    the gradient of what reads it reaches ``t`` as in eager."""
    copy = _wrap(before.copy())
    if not t._requires_grad:
        return copy
    prev = state.grad_enabled
    state.grad_enabled = True
    try:
        return copy + (t - t.detach())
    finally:
        state.grad_enabled = prev


def _tensor_arg(env, a):
    """An argument for a call on Tensors (a create_graph pass, a view made again)."""
    kind = a[0]
    if kind == SLOT:
        return env[a[1]].detach() if len(a) > 2 and a[2] is True else env[a[1]]
    if kind == TENSOR:
        return env[a[1]]
    if kind == SLOTS:
        return tuple(env[s] for s in a[1])
    if kind == NESTED:
        return _tensor_nested(env, a[1])
    return a[1]


def _tensor_nested(env, v):
    if type(v) is Ref:
        return env[v.s] if v.as_tensor else env[v.s]._data
    if type(v) in (tuple, list):
        return type(v)(_tensor_nested(env, x) for x in v)
    if type(v) is dict:
        return {k: _tensor_nested(env, x) for k, x in v.items()}
    return v


def _refs(v):
    if type(v) is Ref:
        return [v.s]
    if type(v) in (tuple, list):
        return [s for x in v for s in _refs(x)]
    if type(v) is dict:
        return [s for x in v.values() for s in _refs(x)]
    return []


def _reads_of(instr):
    """The slots one instruction reads (computed once)."""
    found = instr.reads
    if found is None:
        found = instr.reads = tuple(sorted(_reads([instr])))
    return found


def _reads(instrs):
    """The slots some instruction reads."""
    found = set()
    for instr in instrs:
        specs = list(instr.args or ()) if instr.kind != REPLAYED else list(instr.targs)
        specs += list((instr.kwargs or {}).values())
        for a in specs:
            if a[0] == SLOT or a[0] == TENSOR:
                found.add(a[1])
            elif a[0] == SLOTS:
                found.update(x for x in a[1] if x is not None)
            elif a[0] == NESTED:
                found.update(_refs(a[1]))
        if instr.kind == INPLACE:
            found.add(instr.outs[0])
    return found


class _Writer:
    """Builds one generated function: its lines, the objects its names refer to, and the
    local name of each slot. Names are reused once a slot is dead (a new value bound to the
    name frees the old array at once, so NumPy can hand its memory to the next result), which
    also keeps the function short to compile."""

    def __init__(self, kinds, instrs, keep, forward, arrays, view_notes=True):
        self.kinds = kinds
        self.forward = forward  # the forward function (it has the call's tensors)
        # whether it notes the gradients that are views in torch (see _sum_to), and whether
        # it wrote such a note
        self.view_notes = view_notes
        self.noted_views = False
        self.arrays = arrays  # slot -> the array the recording had there (for replay forms)
        self.formed = set()  # the FORMULA instructions written as their replay forms
        self.lines = []
        self.scope = {"as_array": as_array, "wrap": _wrap,
                      "note_view": note_view, "note_writes": note_writes,
                      "notes": _NOTES, "NOTES_LIMIT": _LIMIT, "ref": weakref.ref}
        self.count = 0
        self.names, self.free, self.n_names = {}, [], 0
        self.keep = keep
        self.last = {}
        for i, instr in enumerate(instrs):
            for x in _reads_of(instr):
                self.last[x] = i
            for x in instr.outs:
                if x is not None:
                    self.last[x] = max(self.last.get(x, i), i)

    def bind(self, obj, prefix="v"):
        name = f"{prefix}{self.count}"
        self.count += 1
        self.scope[name] = obj
        return name

    # -- local names -----------------------------------------------------------------------------
    def ref(self, s):
        return self.names[s]

    def out(self, s):
        name = self.names.get(s)
        if name is None:
            if self.free:
                name = self.free.pop()
            else:
                name = f"a{self.n_names}"
                self.n_names += 1
            self.names[s] = name
        return name

    def _release(self, i, slots):
        for x in slots:
            if self.last.get(x) == i and x not in self.keep and x in self.names:
                self.free.append(self.names.pop(x))

    def emit(self, i, instr):
        """The lines of instruction ``i``: its arguments read, the names of the slots it
        reads for the last time given to its results."""
        reads = _reads_of(instr)
        rhs = self.call(instr)
        self._release(i, [x for x in reads if x not in instr.outs])
        outs = [None if x is None else self.out(x) for x in instr.outs]
        self.lines += rhs(outs)
        self._release(i, [x for x in instr.outs if x is not None])

    # -- instructions ---------------------------------------------------------------------------
    def arg(self, a):
        kind = a[0]
        if kind == SLOT:
            x, cast = a[1], a[2]
            name = self.ref(x)
            return name if cast is None else f"{name}.astype({self.bind(cast, 'd')})"
        if kind == TENSOR:
            return self._tensor(a[1])
        if kind == SLOTS:
            return "(" + "".join(f"{self.ref(x)}, " for x in a[1]) + ")"
        if kind == NESTED:
            return self._nested(a[1])
        return self.bind(a[1])

    def _tensor(self, x):
        """Slot ``x`` as the Tensor an op takes as it is: in the forward, an input or outside
        tensor itself (a kernel may update it, as batch norm its running statistics), else the
        array rewrapped."""
        kind, payload = self.kinds[x]
        if self.forward and kind == INPUT:
            return f"tensors[{payload}]"
        if self.forward and kind == CAPTURED:
            return self.bind(payload, "t")
        return f"wrap({self.ref(x)})"

    def _nested(self, v):
        if type(v) is Ref:
            return self._tensor(v.s) if v.as_tensor else self.ref(v.s)
        if type(v) is tuple:
            return "(" + "".join(self._nested(x) + ", " for x in v) + ")"
        if type(v) is list:
            return "[" + ", ".join(self._nested(x) for x in v) + "]"
        if type(v) is dict:
            return "{" + ", ".join(f"{self.bind(k)}: {self._nested(x)}"
                                   for k, x in v.items()) + "}"
        return self.bind(v)

    def call(self, instr):
        """A function of the results' names giving the instruction's lines (the arguments
        are read now, before dead slots give up their names)."""
        kind = instr.kind
        if kind == REPLAYED:
            return self._replayed(instr)
        if kind == FORMULA:
            fn, args = instr.fn, instr.args
            if instr.resolved is not None:
                fn, args, _ = instr.resolved  # (what the formula calls, called itself)
            form = self._replay_form(fn, args) if len(instr.outs) == 1 else None
            if form is not None:
                self.formed.add(instr)
            if passes_gradient(instr.fn) or form is not None and form[0] is PASS:
                # (its result is its argument: no call)
                src = self.arg(instr.args[0] if form is None else args[form[1][0]])
                return lambda outs: [] if outs[0] in (None, src) else [f"{outs[0]} = {src}"]
            if form is not None:
                return _results(self._form_call(form, args, "f"), instr, False, arrays=True)
            call = f"{self.bind(fn, 'f')}({', '.join(self.arg(a) for a in args)})"
            return _results(call, instr, len(instr.outs) > 1)
        if kind in (SUM_TO, CAST, ADD):
            return self._engine_step(instr)
        if kind == COPY:
            src = self.ref(instr.args[0][1])
            if instr.extra:  # (a leaf's gradient eager copies: the copy's version, see backward)
                return lambda outs: [f"{outs[0]} = {src}.copy()",
                                     f"note_writes({outs[0]}, {instr.extra})"]
            return lambda outs: [f"{outs[0]} = {src}.copy()"]
        if kind == ASSIGN:
            target, value = (self.arg(a) for a in instr.args)
            return lambda outs: [f"{target}[...] = {value}"]
        op = instr.op
        # (a quiet op's kernel bare: the program runs silenced as a whole, see Program.quiet)
        kernel, args = op.bare_kernel, instr.args
        if kind != INPLACE and op.n_outputs == 1:
            form = self._replay_form(kernel, args)
            if form is not None and form[0] is not PASS:
                return _results(self._form_call(form, args, "k"), instr, False, arrays=True)
        if op.ufunc is not None and all(
                a[0] == VALUE and type(a[1]) is not bool and a[1] == 1
                for a in args[op.n_tensors:]):
            kernel, args = op.ufunc, args[:op.n_tensors]  # the kernel is exactly this ufunc
        call = f"{self.bind(kernel, 'k')}({', '.join(self.arg(a) for a in args)})"
        if kind == INPLACE:
            bumps = self._bumps(instr)
            return lambda outs: [f"r = {call}", f"if r is not {outs[0]}:",
                                 f"    {outs[0]}[...] = r"] + bumps
        return _results(call, instr, op.n_outputs != 1)

    def _replay_form(self, fn, args):
        """``fn``'s replay form for these arguments, or None (see _ops/replay.py)."""
        form = getattr(fn, "replay_form", None)
        if form is None:
            return None
        values = []
        for a in args:  # (the recorded values: arrays, tensor arguments as their arrays)
            if a[0] == SLOT and a[2] is None or a[0] == TENSOR:
                values.append(self.arrays[a[1]])
            elif a[0] == VALUE:
                values.append(a[1])
            else:
                return None
        return form(*values)

    def _form_call(self, form, args, prefix):
        """The call a replay form names, on the arguments it picks."""
        callee, picked = form
        texts = [self.ref(args[k][1]) if args[k][0] == TENSOR else self.arg(args[k])
                 for k in picked]
        return f"{self.bind(callee, prefix)}({', '.join(texts)})"

    def _engine_step(self, instr):
        a = [self.ref(x[1]) for x in instr.args]
        if instr.kind == SUM_TO:
            return self._sum_to(a[0], instr.args[0][1], *instr.extra)
        if instr.kind == CAST:
            rhs = f"{a[0]}.astype({self.bind(instr.extra, 'd')})"
            return lambda outs: [f"{outs[0]} = {rhs}"]
        rhs = f"as_array({a[0]} + {a[1]})" if instr.zero_d[0] else f"{a[0]} + {a[1]}"
        if not instr.extra:
            return lambda outs: [f"{outs[0]} = {rhs}"]
        # (eager sums into the first gradient in place: the sum shows that write)
        return lambda outs: [f"{outs[0]} = {rhs}", f"note_writes({outs[0]}, {instr.extra})"]

    def _sum_to(self, x, slot, have, shape):
        """The engine's sum of a gradient of shape ``have`` down to its input's ``shape``,
        written out: what ``reduction._sum_to_array`` does, its axes worked out once (the
        shapes are guarded), the same reduction called."""
        from .._ops.reduction import _sum_to_axes
        axes = _sum_to_axes(have, shape)
        lead = len(have) - len(shape)
        # (the array's own reduction, bound: the gradient's array type is fixed, see
        # _generate_backward)
        sum_ = self.bind(sum_function(self.arrays[slot]), "s")
        if not shape:  # (torch's sum(): a tensor of its own)
            return lambda outs: [f"{outs[0]} = as_array({sum_}({x}, None, keepdims=False))"]
        if len(axes) == lead:
            # only leading dimensions: the sum has ``shape`` itself, noted as the view of
            # another tensor's storage that torch's sum would be (as _sum_to_array notes it)
            total = f"{sum_}({x}, {self.bind(axes)}, keepdims=False)"
            if not self.view_notes:
                return lambda outs: [f"{outs[0]} = {total}"]
            self.noted_views = True
            return lambda outs: [f"{outs[0]} = {total}"] + _fresh_view_note(outs[0])
        total = f"{sum_}({x}, {self.bind(axes)}, keepdims=True)"  # (never a NumPy scalar)
        total = f"{total}.reshape({self.bind(shape)})" if lead else total
        return lambda outs: [f"{outs[0]} = {total}"]

    def _replayed(self, instr):
        run = self.bind(_replayed_runner(instr), "R")
        args = ", ".join(self.ref(x) for x in _replayed_slots(instr))
        bumps = self._bumps(instr)
        return lambda outs: [f"r = {run}({args})"] + [
            f"{name} = r[{j}]" for j, name in enumerate(outs) if name is not None] + bumps

    def _bumps(self, instr):
        """An in-place write into an outside tensor bumps its version, as in eager mode."""
        lines = []
        for x in instr.bumps:
            kind, payload = self.kinds[x]
            owner = f"tensors[{payload}]" if kind == INPUT else self.bind(payload, "t")
            lines.append(f"{owner}._bump_version()")
        return lines

    def source(self, name, params):
        return f"def {name}({params}):\n" + "\n".join("    " + line for line in self.lines)

    def build(self, name, params):
        text = self.source(name, params)
        code = compile(text, _GENERATED, "exec")
        exec(code, self.scope)  # noqa: S102 - generated from the recorded calls
        fn = self.scope[name]
        fn.source = text  # what it runs, for readers (print(fn.source))
        return fn


_IDENTITY = (lambda grad: grad).__code__


def passes_gradient(formula):
    """Whether derivative formula ``formula`` is ``def _(grad): return grad`` (add's, sub's,
    clone's for ``self``...): its one parameter returned as it is, whatever the arrays. A
    backward program names the gradient again instead of calling it (a formula that notes
    writes or conjugates is a wrapper with code of its own, and is called)."""
    code = getattr(formula, "__code__", None)
    return (code is not None and code.co_code == _IDENTITY.co_code
            and code.co_argcount == 1 and code.co_flags == _IDENTITY.co_flags
            and not code.co_kwonlyargcount)


def _fresh_view_note(name):
    """Lines doing ``note_view(name)`` for the new array a reduction just bound to ``name``:
    one that owns its memory has no live note yet (its id is new among live arrays), so its
    note is written without note_view's call and lookups (a backward program's bias sums, at
    every step); any other goes through note_view."""
    return [f"if {name}.base is None and len(notes) < NOTES_LIMIT:",
            f"    notes[id({name})] = (ref({name}), 0, True)",
            "else:",
            f"    note_view({name})"]


def _results(call, instr, several, arrays=False):
    """Lines binding a call's result(s), as arrays (NumPy gives 0-d results as scalars;
    ``arrays``: the call gives arrays, as a replay form's callee does)."""
    zero_d = (False,) if arrays else instr.zero_d

    def lines(outs):
        if not several:
            if outs[0] is None:  # an array already named, or no result: the call is idle
                return []
            return [f"{outs[0]} = as_array({call})" if zero_d[0] else f"{outs[0]} = {call}"]
        return [f"r = {call}"] + [
            f"{name} = as_array(r[{j}])" if zero_d[j] else f"{name} = r[{j}]"
            for j, name in enumerate(outs) if name is not None]
    return lines


def _replayed_runner(instr):
    """Calls a replayed function on arrays: its tensor arguments rewrapped, its tensor
    results unwrapped."""
    fn, targs, tkw = instr.fn, instr.targs, instr.kwargs or {}
    slots = _replayed_slots(instr)

    def run(*arrays):
        env = {s: _wrap(a) for s, a in zip(slots, arrays)}
        args = [_tensor_arg(env, a) for a in targs]
        kwargs = {k: _tensor_arg(env, a) for k, a in tkw.items()}
        result = fn(*args, **kwargs)
        results = result if isinstance(result, tuple) else (result,)
        return [getattr(r, "_data", None) for r in results]
    return run


def _replayed_slots(instr):
    return sorted(_reads([instr]))


def _written_constants(rec, instrs, outputs):
    """Constant slots a replay must copy first: something writes into them (or into a view
    of them), or they are returned, so a replay must not share them with the last one."""
    written = [rec.arrays[i.outs[0]] for i in instrs if i.kind == INPLACE]
    written += [rec.arrays[s] for i in instrs if i.kind == REPLAYED for s in _reads([i])]
    written += [rec.arrays[s] for s in outputs]
    return {s for s, (kind, _) in enumerate(rec.kinds)
            if kind == CONST and any(shares_memory(rec.arrays[s], w) for w in written)}


def _generate_forward(prog, arrays):
    keep = set(prog.outputs) | set(prog.saved)
    w = _Writer(prog.kinds, prog.forward_instrs, keep, True, arrays)
    used = set(w.last) | keep
    for x in sorted(used):
        kind, payload = prog.kinds[x]
        if kind == INPUT:
            w.lines.append(f"{w.out(x)} = tensors[{payload}]._data")
        elif kind == CAPTURED:
            w.lines.append(f"{w.out(x)} = {w.bind(payload, 't')}._data")
        elif kind == CONST:
            copy = ".copy()" if x in prog.fresh_constants else ""
            w.lines.append(f"{w.out(x)} = {w.bind(payload, 'c')}{copy}")
    for x in prog.written:  # (before the writes: for a create_graph pass)
        kind, payload = prog.kinds[x]
        owner = f"tensors[{payload}]" if kind == INPUT else w.bind(payload, "t")
        w.lines.append(f"b{x} = {owner}._data.copy()")
    for i, instr in enumerate(prog.forward_instrs):
        w.emit(i, instr)
    outs = "".join(f"{w.ref(x)}, " for x in prog.outputs)
    saved = "".join(f"{w.ref(x)}, " for x in prog.saved)
    saved += "".join(f"b{x}, " for x in prog.written)
    w.lines.append(f"return ({outs}), ({saved})")
    fn = w.build("forward", "tensors")
    fn.lines = w.lines  # (its body, which outputs.generate_replay writes again)
    return fn


# What a backward program returns when it is handed an output gradient of another array type
# or dtype than it was recorded with: its steps are the engine's for the recorded ones (eager
# computes the first formulas in the gradient's dtype, the engine casts their results), so the
# node runs eager's pass instead (CompiledFunctionBackward._apply_eager). So it does for a
# gradient of another shape (an output whose ``.data`` was replaced by one of another shape):
# the program's results then have the shapes and dtypes it recorded, which the engine's
# one-node pass takes without a look (see Entry.usual_grads).
OTHER_GRADIENTS = object()


def _generate_backward(prog, arrays, view_notes=True):
    """The backward program: the recorded formulas and engine steps, a formula that passes
    its arguments on replaced by its callee (backward.resolve). Returns it, the
    instructions written as replay forms, and whether it notes views (``view_notes=False``:
    it notes none, see Program.backward_into_leaves)."""
    keep = {x for x in prog.source_slots if x is not None}
    w = _Writer(prog.kinds, prog.backward_instrs, keep, False, arrays, view_notes)
    used = [x in w.last or x in keep for x in prog.saved]
    if any(used) and not prog.written:  # (one unpacking: the tuple holds these alone)
        names = [w.out(x) if u else "_" for x, u in zip(prog.saved, used)]
        w.lines.append(f"{''.join(n + ', ' for n in names)}= saved")
    else:
        for j, (x, u) in enumerate(zip(prog.saved, used)):
            if u:
                w.lines.append(f"{w.out(x)} = saved[{j}]")
    for x, (kind, payload) in enumerate(prog.kinds):
        if x not in w.last and x not in keep:
            continue
        if kind == GRAD:
            w.lines.append(f"{w.out(x)} = grads[{payload}]")
            name, (array_type, dtype, shape) = w.ref(x), prog.grad_kinds[x]
            w.lines += [f"if type({name}) is not {w.bind(array_type, 'd')} "
                        f"or {name}.dtype != {w.bind(dtype, 'd')} "
                        f"or {name}.shape != {w.bind(shape, 'd')}:",
                        f"    return {w.bind(OTHER_GRADIENTS, 'g')}"]
        elif x >= prog.forward_slots and kind == CAPTURED:
            w.lines.append(f"{w.out(x)} = {w.bind(payload, 't')}._data")
        elif x >= prog.forward_slots and kind == CONST:
            w.lines.append(f"{w.out(x)} = {w.bind(payload, 'c')}")
    for i, instr in enumerate(prog.backward_instrs):
        w.emit(i, instr)
    outs = "".join("None, " if x is None else f"{w.ref(x)}, " for x in prog.source_slots)
    w.lines.append(f"return [{outs}]")
    return w.build("backward", "grads, saved"), w.formed, w.noted_views
