"""Recording a compiled function's first call: each kernel call written down on slots.

The recorder runs the function eagerly (the call's results are eager results) while sitting
in the registry's op interceptor (``_state.forward_hook``): every op call goes through
``dispatch`` / ``dispatch_inplace``, which run the op as usual and then write down which
kernel it called on which arrays. Arrays are named by slots: the function's tensor inputs,
tensors it reaches from outside (parameters, globals: read afresh at every replay), constants
and the results of earlier calls. The backward program comes from the graph the eager run
built: the engine runs its formulas on Tensors, with grad mode off, and every op they call is
written down the same way.

Anything the recorder cannot prove a replay would repeat (data read into Python, a tensor of
unknown origin, a write outside the ops, hooks...) is a graph break: recording stops, the
call finishes eagerly, and the function runs eagerly from then on.
"""
from __future__ import annotations

import threading

import numpy as np

from .. import _dtype as D
from .._backend import get_xp, is_array
from .._ops import opmath
from .._state import forward_hook, recording, set_hook, state
from .._ops.registry import IndexKey
from .._tensor import Tensor

# What a slot holds.
INPUT, CAPTURED, CONST, COMPUTED, GRAD = range(5)
# What an instruction does: a kernel call, an in-place kernel call, a replayed call; and in the
# backward program a derivative formula, and the engine's own steps (sum a gradient down to its
# input's shape, cast it to its input's dtype, add two gradients of one input); COPY copies an
# array (what an in-place op overwrites, for its node: inplace.py's snapshot); ASSIGN writes one
# array into another (CopySlices' write-back).
CALL, INPLACE, REPLAYED, FORMULA, SUM_TO, CAST, ADD, COPY, ASSIGN = range(9)
# An argument: a slot (with the dtype it is cast to first, or None), a constant, a slot's array
# rewrapped as a Tensor, a tuple of slots (a multi-output node's gradients), or a tuple or
# list holding slots' arrays or tensors (see Recorder.param).
SLOT, VALUE, TENSOR, SLOTS, NESTED = range(5)

_SCALARS = (type(None), bool, int, float, complex, str, slice, type(Ellipsis))
# Ops whose output shape depends on their input's values (a replay would carry the recorded
# shape into code that read it): graph breaks, as in torch.compile's default.
_DATA_SHAPED = frozenset({"masked_select"})


class Unsupported(RuntimeError):
    """What ``fullgraph=True`` raises at a graph break (``torch._dynamo.exc.Unsupported``)."""

    __module__ = "ember._dynamo.exc"  # where users reach it, and where tracebacks name it


class _Stop(Exception):
    """Recording was abandoned (a graph break); the eager run goes on."""


class Instr:
    """One recorded call.

    ``args``: the kernel's arguments, ``(SLOT, slot, cast_dtype)`` or ``(VALUE, value)``;
    ``targs``: the op's own arguments as the function passed them, ``(SLOT, slot)`` or
    ``(VALUE, value)`` (a create_graph pass calls the op again on Tensors with them);
    ``outs``: one slot per result (None where a result is an array already in a slot);
    ``bumps``: slots of outside tensors whose version an in-place write bumps;
    ``extra``: the shapes from and to of SUM_TO, the dtype of CAST, the writes ADD notes
    against its sum, or COPY against its copy (0 or None: none).
    """

    __slots__ = (
        "args",
        "bumps",
        "extra",
        "fn",
        "grad",
        "kind",
        "kwargs",
        "op",
        "outs",
        "reads",
        "resolved",
        "targs",
        "zero_d",
    )

    def __init__(self, kind, op, fn, args, targs, kwargs, outs, zero_d, bumps=(), extra=None):
        self.kind, self.op, self.fn = kind, op, fn
        self.args, self.targs, self.kwargs = args, targs, kwargs
        self.outs, self.zero_d, self.bumps, self.extra = outs, zero_d, bumps, extra
        # a FORMULA that is one call of another function or op: (the function or the op's
        # kernel, its arguments, the op or None), called in its place (backward.resolve)
        self.resolved = None
        self.reads = None  # the slots it reads (program._reads_of)
        self.grad = state.grad_enabled  # the grad mode it ran in (a call on Tensors again)


class Recorder:
    """The op interceptor while a compiled function's call is recorded."""

    def __init__(self, fullgraph, roots):
        self.fullgraph = fullgraph
        self.roots = roots  # guards.Roots: tensors the function may reach from outside
        self.thread = threading.get_ident()
        self.arrays = []  # slot -> array (held, so that ids stay unique while recording)
        self.kinds = []  # slot -> (kind, payload)
        self.ids = {}  # id(array) -> slot
        self.constants = {}  # id(array) -> (array, its value when marked constant)
        self.forward, self.backward = [], []
        self.instrs = self.forward
        self.broken = None  # why recording stopped, once it has
        self.depth = 0  # > 0 inside an op or a replayed call: bumps and draws are its own
        self.written = set()  # outside slots written into (by an in-place op or a kernel)
        self.before_write = {}  # outside slot -> its values before the recording wrote
        self.inputs = []  # the call's input tensors, by flat position
        self.outside = {}  # slot -> the outside Tensor (input or captured) behind it

    # -- installing ---------------------------------------------------------------------------
    def install(self):
        self._saved_hooks = (forward_hook[0], recording[0])
        set_hook(forward_hook, self)
        set_hook(recording, self)

    def uninstall(self):
        if recording[0] is self:
            set_hook(forward_hook, self._saved_hooks[0])
            set_hook(recording, self._saved_hooks[1])

    @property
    def active(self):
        return self.broken is None

    # -- graph breaks ---------------------------------------------------------------------------
    def graph_break(self, why):
        """Stop recording: the call finishes eagerly (``fullgraph=True``: raise instead)."""
        if self.broken is not None or threading.get_ident() != self.thread:
            return
        self.broken = why
        self.uninstall()
        if self.fullgraph:
            raise Unsupported(f"ember.compile(fullgraph=True) cannot record this function: "
                              f"{why}")

    def _stop(self, why):
        self.graph_break(why)
        raise _Stop

    def random_draw(self, what):
        if self.depth == 0:
            self.graph_break(f"{what} drew random numbers outside ember's replayed calls")

    def version_bumped(self, tensor):
        if self.depth == 0:
            self.graph_break("a tensor was modified in place outside ember's ops")

    def constant(self, value):
        a = value._data if isinstance(value, Tensor) else value
        if id(a) not in self.ids:  # (its value now: the function may fill it in place later)
            self.constants[id(a)] = (a, a.copy())

    def function_jvp(self, cls, ctx, args, outputs):
        # a custom autograd.Function's forward runs outside the interceptor: its outputs are
        # of unknown origin (see autograd/function.py)
        self.graph_break(f"custom autograd.Function {cls.__name__}")

    # -- slots ----------------------------------------------------------------------------------
    def _new_slot(self, array, kind, payload=None):
        s = len(self.arrays)
        self.arrays.append(array)
        self.kinds.append((kind, payload))
        self.ids[id(array)] = s
        return s

    def add_input(self, t):
        """A tensor argument of the call (flat position ``len(self.inputs)``)."""
        k = len(self.inputs)
        self.inputs.append(t)
        s = self.ids.get(id(t._data))
        if s is None:
            s = self._new_slot(t._data, INPUT, k)
            self.outside[s] = t
        return s

    def slot_of(self, t):
        """The slot of tensor ``t``'s array, made on first sight of an outside tensor."""
        a = t._data
        s = self.ids.get(id(a))
        if s is not None:
            return s
        if id(a) in self.constants:
            return self._new_slot(a, CONST, self.constants[id(a)][1])
        owner = self.roots.owner(t)
        if owner is None:
            self._stop("it uses a tensor made outside ember's ops, or reached other than "
                       "through its arguments, closure, globals or module attributes")
        s = self._new_slot(owner._data, CAPTURED, owner)
        self.outside[s] = owner
        return s

    def param(self, v):
        """A non-tensor argument: ``(VALUE, v)`` for a constant; ``(TENSOR, slot)`` for a
        tensor passed as it is; ``(NESTED, template)`` for a tuple or list holding tensors or
        arrays of slots (an index key), whose leaves are ``Ref``s."""
        if isinstance(v, Tensor):
            return (TENSOR, self.slot_of(v))
        found = []
        template = self._nested(v, found, 0)
        return (NESTED, template) if found else (VALUE, v)

    def _nested(self, v, found, depth):
        t = type(v)
        if t in _SCALARS or isinstance(v, np.generic):
            return v
        if isinstance(v, Tensor):
            found.append(v)
            return Ref(self.slot_of(v), True)
        if is_array(v):
            s = self.ids.get(id(v))
            if s is None:
                if id(v) in self.constants:
                    return self.constants[id(v)][1]
                self._stop("an array of unknown origin is passed to an op")
            found.append(v)
            return Ref(s, False)
        if (t is tuple or t is list or t is IndexKey) and depth < 8:
            # (an IndexKey replays as the plain tuple: its version checks belong to eager)
            return (list if t is list else tuple)(self._nested(x, found, depth + 1) for x in v)
        if t is dict and depth < 8:
            return {k: self._nested(x, found, depth + 1) for k, x in v.items()}
        return v

    # -- op calls -------------------------------------------------------------------------------
    def dispatch(self, op, args):
        from .._ops.registry import _tensor_call
        if threading.get_ident() != self.thread:
            return _tensor_call(op, args)
        # a kernel may update a tensor it takes as it is (batch norm's running statistics,
        # which torch's kernels write without counting a write: the op says so)
        taken = [a for a in args[op.n_tensors:] if isinstance(a, Tensor)]
        versions = [(t, _version_of(t)) for t in taken]
        silent = _updates_taken(op, args)
        for t in taken:
            self._keep_before_write(t)
        self.depth += 1
        try:
            out = _tensor_call(op, args)
        finally:
            self.depth -= 1
        if self.broken is None:
            try:
                for t, v in versions:
                    if silent or _version_of(t) != v:  # (only outside tensors are kept)
                        self.written.update(s for s, u in self.outside.items()
                                            if shares_memory(u._data, t._data))
                self._record_call(op, args, out)
            except _Stop:
                pass
        return out

    def dispatch_inplace(self, op, args):
        from .._ops.inplace import dispatch_inplace
        if threading.get_ident() != self.thread:
            return self._unhooked(dispatch_inplace, op, args)
        if isinstance(args[0], Tensor):
            self._keep_before_write(args[0])  # (first: it gives an outside tensor its slot)
        before = self._outside_metadata()
        self.depth += 1
        try:
            out = self._unhooked(dispatch_inplace, op, args)
        finally:
            self.depth -= 1
        if self.broken is None:
            try:
                self._record_inplace(op, args, before)
            except _Stop:
                pass
        return out

    def _keep_before_write(self, t):
        """Before a write into ``t``: keep the values of the outside tensors it may reach (a
        create_graph pass runs the forward again from them, see Program.forward_ops)."""
        if self.broken is not None:
            return
        try:
            self.slot_of(t)  # (an outside tensor seen first here gets its slot now)
        except _Stop:
            return
        for s, u in self.outside.items():
            if s not in self.before_write and shares_memory(u._data, t._data):
                self.before_write[s] = u._data.copy()

    def _unhooked(self, fn, *args):
        set_hook(forward_hook, None)
        try:
            return fn(*args)
        finally:
            if recording[0] is self:
                set_hook(forward_hook, self)

    def _kernel_args(self, op, args, target, weak=True):
        """The kernel's arguments as the registry prepares them (see registry._arrays and the
        generated callers): tensors cast to the compute dtype, NumPy scalars as Python
        numbers, weak scalars as cached 0-d arrays."""
        from .._ops.registry import number_dtype, scalar_array
        n = op.n_tensors
        kargs, targs = [], []
        for k, a in enumerate(args):
            if k < n and isinstance(a, Tensor):
                s = self.slot_of(a)
                cast = (target if target is not None and a._data.dtype != target
                        and k >= op.promote_from else None)
                kargs.append((SLOT, s, cast))
                targs.append(_tensor_ref(s, a))
                continue
            spec = self.param(a)  # (a tensor here is taken by the kernel as it is)
            if spec[0] == VALUE and k < n:
                v = a
                if isinstance(a, np.generic):
                    v = a.item()
                elif (weak and op.weak_scalars and target is not None and target.kind == "f"
                      and (type(a) is float or type(a) is int)):
                    v = scalar_array(a, number_dtype(op, target))
                kargs.append((VALUE, v))
            else:
                kargs.append(spec)
            targs.append(spec)
        return tuple(kargs), tuple(targs)

    def _record_call(self, op, args, out):
        from .._ops.registry import compute_dtype
        if op.name in _DATA_SHAPED or (op.name == "index" and _has_mask(args[1])):
            self._stop(f"{op.name}'s output shape depends on the values of its input")
        self._refuse_special(op, args)
        dt = compute_dtype(op, args)
        self._refuse_half_number(op, args, dt)
        kargs, targs = self._kernel_args(op, args, None if dt is None else dt.np)
        results = (out,) if op.n_outputs == 1 else tuple(out)
        outs, zero_d = [], []
        for r in results:
            a = r._data
            outs.append(None if id(a) in self.ids else self._new_slot(a, COMPUTED))
            zero_d.append(a.ndim == 0)
        self.instrs.append(Instr(CALL, op, None, kargs, targs, None, tuple(outs),
                                 tuple(zero_d)))

    def _record_inplace(self, op, args, before):
        from .._ops.inplace import _same_dtype_arrays
        from .._ops.registry import compute_dtype
        self._refuse_special(op, args)
        self._refuse_half_number(op, args, D._BY_NP.get(args[0]._data.dtype))
        self_t = args[0]
        target = self.slot_of(self_t)
        # as _inplace_call: operands of self's dtype as they are, else promoted (never weak
        # scalars there)
        dt = None if _same_dtype_arrays(op, args) is not None else compute_dtype(op, args)
        kargs, targs = self._kernel_args(op, args, None if dt is None else dt.np, weak=False)
        bumps = self._outside_writes(self_t._data, before)
        snapshot = _snapshot(self_t)
        if snapshot is not None and id(snapshot) not in self.ids:
            # the node saved a copy of self from before the write: copy it at each replay too
            s_copy = self._new_slot(snapshot, COMPUTED)
            self.instrs.append(Instr(COPY, None, None, ((SLOT, target, None),), None, None,
                                     (s_copy,), (False,)))
        self.instrs.append(Instr(INPLACE, op, None, kargs, targs, None, (target,),
                                 (self_t._data.ndim == 0,), bumps))

    def _refuse_special(self, op, args):
        """A kernel call on bfloat16 (or a limited-support dtype) operands: eager runs it
        through opmath (widened to float32, rounded back once; a sum accumulates in
        float32), while a program calls the kernel bare, which refuses bfloat16 or
        accumulates in it (a sum of 1000 bfloat16 values 256 instead of 500)."""
        if not op.view and opmath.special_dtype(op, args) is not None:
            self._stop(f"{op.name} computes in {opmath.special_dtype(op, args).scalar_name}, "
                       "which a replay does not widen to float32 as eager mode does")

    def _refuse_half_number(self, op, args, dt):
        """mul or div (ops computing with a number in float32, OpDef.numbers_in_opmath) of a
        float16 tensor and a Python number: the kernel meets the number in float32 and
        rounds the result back to float16 once, as torch; the program calls it as its ufunc,
        which gives float32 (the number held as a float32 array) or, in place, rounds the
        number to float16 first (-0.32 * -0.37: 0.1185 where eager gives 0.1184)."""
        # NOTE: the fix belongs to the program's choice of the ufunc (program.py, Lines.call)
        # (a 0-dim other tensor of another dtype is such a number too: see
        # registry.scalar_operand_dtype)
        if (op.numbers_in_opmath and op.ufunc is not None and dt is not None
                and dt.np == np.float16
                and (any(type(a) in (int, float) for a in args[:op.n_tensors])
                     or _scalar_operand(op, args, dt.np))):
            self._stop(f"{op.name} of a float16 tensor and a number computes in float32 "
                       "and rounds back once, which a replay's ufunc does not")

    def _outside_metadata(self):
        return {s: (t._grad_fn, t._requires_grad, _version_of(t))
                for s, t in self.outside.items()}

    def _outside_writes(self, array, before):
        """Slots of outside tensors whose memory a write into ``array`` touched (their
        versions are bumped at every replay, as eager bumps them). A write that changed such
        a tensor's autograd history cannot be replayed."""
        touched = []
        for s, t in self.outside.items():
            was = before.get(s, (None, False, None))
            # (or its version moved: a write into an empty view touches no memory, and
            # eager bumps the version its base shares all the same)
            if shares_memory(t._data, array) or (was[2] is not None
                                                 and _version_of(t) != was[2]):
                if (t._grad_fn, t._requires_grad) != was[:2]:
                    self._stop("an in-place op gave an input's history a new node")
                touched.append(s)
        self.written.update(touched)
        return tuple(touched)

    # -- replayed calls (random sampling) ---------------------------------------------------------
    def replayed_call(self, fn, args, kwargs):
        if self.depth or threading.get_ident() != self.thread:
            return fn(*args, **kwargs)  # inside another recorded call: part of it
        versions = _versions(args, kwargs)
        for t, _ in versions:
            self._keep_before_write(t)  # (first: it gives an outside tensor its slot)
        before = self._outside_metadata()
        self.depth += 1
        try:
            result = self._unhooked(lambda: fn(*args, **kwargs))
        finally:
            self.depth -= 1
        if self.broken is None:
            try:
                self._record_replayed(fn, args, kwargs, result, before, versions)
            except _Stop:
                pass
        return result

    def _record_replayed(self, fn, args, kwargs, result, before, versions):
        targs = tuple(self._template(a) for a in args)
        tkw = {k: self._template(v) for k, v in kwargs.items()}
        written = []
        for t, v in versions:
            if _version_of(t) != v:  # filled in place
                written += (s for s in self._outside_writes(t._data, before) if s not in written)
        # each written outside tensor bumped as often as the call bumped it (a custom op's
        # own bump of what it mutates, then its kernel's in-place ops': eager's count)
        bumps = [s for s in written for _ in range(_bumps_of(self.outside[s], before.get(s)))]
        results = result if isinstance(result, tuple) else (result,)
        outs, zero_d = [], []
        for r in results:
            if isinstance(r, Tensor):
                if r._requires_grad:
                    self._stop(f"{fn.__name__} made a tensor that requires grad")
                a = r._data
                outs.append(None if id(a) in self.ids else self._new_slot(a, COMPUTED))
                zero_d.append(a.ndim == 0)
            elif r is not None and not _is_generator(r):
                self._stop(f"{fn.__name__} returned a {type(r).__name__}")
            else:
                outs.append(None)
                zero_d.append(False)
        self.instrs.append(Instr(REPLAYED, None, fn, None, targs, tkw, tuple(outs),
                                 tuple(zero_d), tuple(bumps)))

    def _template(self, v):
        return _tensor_ref(self.slot_of(v), v) if isinstance(v, Tensor) else self.param(v)

    # -- the backward program -------------------------------------------------------------------
    def trace_backward(self, outputs, sources):
        """Record the backward of ``outputs`` (tensors that require grad) with respect to
        ``sources``: the engine's first-order pass over the nodes the function made, each
        node's formulas run on arrays (and written down as calls of those formulas), in the
        engine's order. Returns the slot of each source's gradient (None: no gradient)."""
        from .backward import trace
        self.instrs = self.backward
        grads = []
        for k, t in enumerate(outputs):
            g = get_xp(t._data).ones_like(t._data)
            grads.append(self._new_slot(g, GRAD, k))
        return trace(self, outputs, grads, sources)

    def backward_slot(self, value):
        """The slot of an array a formula or the engine produced while tracing (new ones
        are the program's own)."""
        s = self.ids.get(id(value))
        return self._new_slot(value, COMPUTED) if s is None else s

    def formula_arg(self, v):
        """A formula's saved value as an argument: an array in a slot, a tensor whose array
        is in one (handed to the formula rewrapped), or a constant."""
        if is_array(v):
            s = self.ids.get(id(v))
            if s is None:
                self._stop("a node saved an array made outside the recorded calls")
            return (SLOT, s, None)
        return self.param(v)


class Ref:
    """A leaf of a NESTED argument: slot ``s``'s array, or it rewrapped as a Tensor."""

    __slots__ = ("as_tensor", "s")

    def __init__(self, s, as_tensor):
        self.s, self.as_tensor = s, as_tensor


def _tensor_ref(s, t):
    """An op's tensor argument for a call on Tensors (a create_graph pass, a view made
    again): slot ``s``, detached when ``t`` did not require grad (``x.detach()``, ``x.data``
    share ``x``'s array, and slot, but not its history)."""
    return (SLOT, s, True) if not t._requires_grad else (SLOT, s)


def _snapshot(t):
    """The copy of ``t`` its in-place op's node saved (see inplace._inplace_call), or None."""
    from .._ops.registry import INPUT as SAVED_INPUT
    from .._ops.registry import OpNode
    from .._ops.views import CopySlices
    node = t._grad_fn
    if t._base is not None and type(t._base._grad_fn) is CopySlices:
        node = t._base._grad_fn._fn  # a view: its base's CopySlices holds the op's node
    if not isinstance(node, OpNode) or node._op is None or not node._saved:
        return None
    for j, kind, i in node._op.unpack_plan:
        v = node._saved[j]
        if kind == SAVED_INPUT and i == 0 and isinstance(v, Tensor) and v is not t:
            return v._data
    return None


def shares_memory(a, b):
    """Whether two arrays may share memory (arrays of different modules never do)."""
    return type(a) is type(b) and get_xp(a).may_share_memory(a, b)


def _has_mask(key):
    """An index key with a boolean mask (x[mask]: as many rows as the mask holds True)."""
    parts = key if isinstance(key, tuple) else (key,)
    return any(is_array(k) and k.dtype == np.bool_ for k in parts)


def _versions(args, kwargs):
    """(tensor, its version) for the tensors among the arguments, those in a list or tuple
    among them too (a custom operator may write into a list of tensors)."""
    found = []
    for a in list(args) + list(kwargs.values()):
        if isinstance(a, Tensor):
            found.append((a, _version_of(a)))
        elif isinstance(a, (list, tuple)):
            found += _versions(a, {})
    return found


def _updates_taken(op, args):
    """Whether ``op``'s kernel writes the tensors it takes as they are without bumping their
    versions: ``op.updates_taken`` is True, or the name of the flag argument that says so."""
    flag = getattr(op, "updates_taken", False)
    return bool(args[op.index[flag]]) if isinstance(flag, str) else flag


def _bumps_of(t, was):
    """How many times a call bumped outside tensor ``t``'s version (at least once: it wrote
    ``t``), ``was`` its ``(grad_fn, requires_grad, version)`` before."""
    if was is None or was[2] is None:
        return 1
    return max(1, _version_of(t) - was[2])


def _version_of(t):
    vc = t._vc  # (read directly: inference tensors have no version to ask for)
    return 0 if vc is None else vc[0]


def _is_generator(obj):
    from .._creation import Generator
    return isinstance(obj, Generator)


def _scalar_operand(op, args, target):
    """Whether ``op``'s other operand is a 0-dim tensor its kernel reads in float32 for a
    computation in ``target`` (registry.scalar_operand_dtype)."""
    from .._ops.registry import scalar_operand_dtype
    other = args[1] if op.n_tensors > 1 else None
    return (isinstance(other, Tensor) and other._data.dtype != target
            and scalar_operand_dtype(op, 1, other._data, target) != target)
