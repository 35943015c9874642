"""Recording: the hook the op dispatcher and the backward engine call while a profiler runs.

When no profiler runs, ``ember._state.profiler_hook[0]`` is None and every op pays one global
read. A running session puts its ``hook`` there; ``hook(name, args)`` returns a range (a
context manager) timed with ``perf_counter_ns``. Each thread keeps a stack of open ranges, so
parents and children are known exactly (not guessed from overlapping times) and self time is
total time minus the children's.

Forward ops are told apart from backward nodes by their name: ops are ``aten::...``. A backward
node gets two ranges as in torch, ``autograd::engine::evaluate_function: <Node>`` around
``<Node>`` (scope BACKWARD_FUNCTION), both carrying the node's sequence number. A forward op
carries the number the op registry gives the next node it creates (read on entering the
range) when the op did create one; the Chrome trace links the two with a flow arrow.

With CUDA activity, every range also records a CUDA event on the current stream when it opens
and when it closes: the GPU time between them is the time of the kernels the range launched
(its children's included), read when the results are built.
"""
from __future__ import annotations

import itertools
import os
import sys
import threading
import time

from .._ops.registry import GENERATED
from .._state import profiler_hook, set_hook
from ._events import SCOPE_BACKWARD_FUNCTION, SCOPE_FUNCTION, SCOPE_USER, FunctionEvent

_EMBER_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_EVALUATE = "autograd::engine::evaluate_function: "
# AccumulateGrad nodes sort last in the ready queue by having a huge sequence number; torch
# reports -1 for them.
_NO_SEQ_ABOVE = 1 << 62
_sessions_lock = threading.Lock()
_active = [None]  # the running _Session (one at a time)


class _Raw:
    """One recorded range, turned into a FunctionEvent when results are read."""

    __slots__ = (
        "counted",
        "cuda",
        "end",
        "flops",
        "id",
        "mem",
        "name",
        "parent",
        "scope",
        "seq",
        "shapes",
        "stack",
        "start",
        "thread",
        "user",
    )

    def __init__(self, rid, name, thread, parent, scope=SCOPE_FUNCTION, seq=-1):
        self.id = rid
        self.name = name
        self.thread = thread
        self.parent = parent
        self.scope = scope
        self.seq = seq
        self.shapes = None
        self.mem = 0
        self.counted = None
        self.stack = None
        self.user = scope == SCOPE_USER
        self.flops = None
        self.start = self.end = 0
        self.cuda = None  # [start event, end event] with CUDA activity


_registry = []


def _peek_sequence():
    """The sequence number the op registry will give the next node (without taking it)."""
    if not _registry:
        from .._ops import registry
        _registry.append(registry)
    return _registry[0].peek_sequence()


def _calling_node():
    """The backward node the engine is about to run (the ``fn`` of its ``_execute`` frame)."""
    frame = sys._getframe(2)
    if frame.f_code.co_name == "_execute":
        return frame.f_locals.get("fn")
    return None


def _shape_of(a):
    shape = getattr(a, "shape", None)
    if shape is not None and hasattr(a, "dtype") and not isinstance(a, (list, tuple)):
        return list(shape)
    return []


def user_stack():
    """The Python stack outside ember (its files and the ops' generated code), innermost
    first, as ``file(line): function``."""
    out = []
    frame = sys._getframe(1)
    while frame is not None:
        code = frame.f_code
        if not code.co_filename.startswith(_EMBER_DIR) and code.co_filename != GENERATED:
            out.append(f"{code.co_filename}({frame.f_lineno}): {code.co_name}")
        frame = frame.f_back
    return out


class _Range:
    """A timed range: pushed on its thread's stack on enter, popped on exit."""

    __slots__ = ("raws", "seq0", "session", "stack")

    def __init__(self, session, stack, raws, seq0=None):
        self.session = session
        self.stack = stack
        self.raws = raws
        self.seq0 = seq0

    def __enter__(self):
        stack = self.stack
        timer = self.session.cuda
        if timer is not None:
            events = [timer.mark(), None]
            for raw in self.raws:
                raw.cuda = events
        now = time.perf_counter_ns()
        for raw in self.raws:
            raw.start = now
            stack.append(raw)
        return self

    def __exit__(self, *exc):
        now = time.perf_counter_ns()
        timer = self.session.cuda
        if timer is not None and self.raws[0].cuda is not None:
            self.raws[0].cuda[1] = timer.mark()
        stack = self.stack
        if self.seq0 is not None and _peek_sequence() != self.seq0:
            self.raws[0].seq = self.seq0  # the op made a node: it got number seq0
        memory = self.session.profile_memory
        for raw in reversed(self.raws):
            raw.end = now
            if stack and stack[-1] is raw:
                stack.pop()
            if memory and raw.parent is not None:
                _merge_memory(raw)
        return False


def _merge_memory(raw):
    """Add a closed range's bytes (and the arrays it counted) to its parent's."""
    parent = raw.parent
    parent.mem += raw.mem
    if raw.counted:
        if parent.counted is None:
            parent.counted = set()
        parent.counted |= raw.counted


class _CudaTimer:
    """CUDA events recorded on the current stream, timing the kernels between them."""

    def __init__(self, backend):
        self.backend = backend
        self.index = backend.current_index()

    def mark(self):
        event = self.backend.event(True, False, False)
        event.record(self.backend.current_stream(self.index))
        return event

    def elapsed_us(self, events):
        start, end = events
        if end is None:
            return 0.0
        return self.backend.elapsed_ms(start, end) * 1000.0

    def synchronize(self):
        self.backend.synchronize(self.index)


class _Session:
    """One recording window: the raw ranges and how to record them."""

    def __init__(self, record_shapes=False, profile_memory=False, with_stack=False,
                 with_flops=False, use_cuda=False):
        self.record_shapes = record_shapes or with_flops
        self.profile_memory = profile_memory
        self.with_stack = with_stack
        self.with_flops = with_flops
        self.raws = []
        self._next_id = itertools.count(1).__next__  # atomic under the GIL
        self._tls = threading.local()
        self._threads = {}  # native id -> small id (1, 2, ...), as torch numbers threads
        self.start_ns = self.end_ns = 0
        self._prev_hook = None
        self._taps = None
        self.cuda = None
        if use_cuda:
            from .._backend.device import cuda_backend
            backend = cuda_backend()
            self.cuda = None if backend is None else _CudaTimer(backend)

    # -- bookkeeping ---------------------------------------------------------------------
    def _stack(self):
        """This thread's stack of open ranges (innermost last)."""
        try:
            return self._tls.stack
        except AttributeError:
            native = threading.get_native_id()
            with _sessions_lock:
                self._threads.setdefault(native, len(self._threads) + 1)
            self._tls.thread = self._threads[native]
            self._tls.stack = []
            return self._tls.stack

    def _new_raw(self, stack, name, scope=SCOPE_FUNCTION, seq=-1):
        raw = _Raw(self._next_id(), name, self._tls.thread, stack[-1] if stack else None,
                   scope, seq)
        self.raws.append(raw)
        return raw

    # -- the hook ------------------------------------------------------------------------
    def hook(self, name, args, node=None):
        """Called by the dispatcher (ops) and the engine (nodes): a range to time the call."""
        stack = self._stack()
        if name.startswith("aten::"):
            raw = self._new_raw(stack, name)
            if self.record_shapes or self.with_stack:
                self._describe(raw, args)
            return _Range(self, stack, (raw,), _peek_sequence())
        if node is None:
            node = _calling_node()
        seq = getattr(node, "_seq", -1)
        if seq is None or seq >= _NO_SEQ_ABOVE:
            seq = -1
        outer = self._new_raw(stack, _EVALUATE + name, SCOPE_FUNCTION, seq)
        inner = self._new_raw([outer], name, SCOPE_BACKWARD_FUNCTION, seq)
        self._describe(inner, args)
        return _Range(self, stack, (outer, inner))

    def user_range(self, name):
        """A ``record_function`` range."""
        stack = self._stack()
        raw = self._new_raw(stack, name, SCOPE_USER)
        if self.with_stack:
            raw.stack = user_stack()
        return _Range(self, stack, (raw,))

    def _describe(self, raw, args):
        if self.record_shapes:
            raw.shapes = [_shape_of(a) for a in args]
            if self.with_flops:
                from ._flops import estimate_flops
                raw.flops = estimate_flops(raw.name, raw.shapes)
        if self.with_stack:
            raw.stack = user_stack()

    # -- memory ----------------------------------------------------------------------------
    def note_outputs(self, arrays, inputs=()):
        """Count the bytes of freshly allocated output arrays in the innermost open range."""
        stack = self._stack()
        if not stack:
            return
        raw = stack[-1]
        counted = raw.counted
        if counted is None:
            counted = raw.counted = set()
        for a in arrays:
            if a is None or id(a) in counted or any(a is i for i in inputs):
                continue
            counted.add(id(a))
            if getattr(a, "base", None) is None or not _shares(a, inputs):
                raw.mem += int(a.nbytes)

    # -- start / stop ----------------------------------------------------------------------
    def start(self):
        """Install the hook (one session at a time)."""
        with _sessions_lock:
            if _active[0] is not None:
                raise RuntimeError("ember: another profiler is already running; profilers "
                                   "cannot be nested")
            _active[0] = self
        self._prev_hook = profiler_hook[0]
        if self.profile_memory:
            from ._memory import install_taps
            self._taps = install_taps(self)
        self.start_ns = time.perf_counter_ns()
        set_hook(profiler_hook, self.hook)

    def stop(self):
        """Remove the hook and close ranges left open (an exception unwound past them)."""
        self.end_ns = time.perf_counter_ns()
        set_hook(profiler_hook, self._prev_hook)
        if self._taps is not None:
            self._taps()
            self._taps = None
        with _sessions_lock:
            _active[0] = None
        for raw in self.raws:
            if raw.end == 0:
                raw.end = self.end_ns

    def native_threads(self):
        """Small thread id -> native thread id (for the Chrome trace's ``tid``)."""
        return {small: native for native, small in self._threads.items()}

    def events(self, use_device=None):
        """The recorded ranges as FunctionEvents, in start order, with parents and children."""
        base = self.start_ns
        events = {}
        ordered = sorted(self.raws, key=lambda r: (r.start, r.id))
        for raw in ordered:
            name = raw.name
            trace_name = name
            if name.startswith("ProfilerStep#"):
                name = "ProfilerStep*"  # torch's wildcard, so steps average together
            evt = FunctionEvent(
                raw.id, name, raw.thread, (raw.start - base) / 1000.0, (raw.end - base) / 1000.0,
                fwd_thread=raw.thread if raw.seq >= 0 and raw.scope == SCOPE_BACKWARD_FUNCTION
                else 0, input_shapes=raw.shapes or [],
                stack=raw.stack or [], scope=raw.scope, use_device=use_device,
                cpu_memory_usage=raw.mem, sequence_nr=raw.seq, trace_name=trace_name,
                flops=raw.flops, is_user_annotation=raw.user)
            events[raw.id] = evt
        for raw in ordered:
            if raw.parent is not None and raw.parent.id in events:
                parent, evt = events[raw.parent.id], events[raw.id]
                evt.set_cpu_parent(parent)
                parent.append_cpu_child(evt)
        if self.cuda is not None:
            self._kernel_times(ordered, events)
        return [events[r.id] for r in ordered]

    def _kernel_times(self, ordered, events):
        """Each event's own GPU time (its range's, less its children's) as one kernel."""
        from ._events import Kernel
        self.cuda.synchronize()
        total = {raw.id: self.cuda.elapsed_us(raw.cuda) if raw.cuda else 0.0
                 for raw in ordered}
        inner = dict.fromkeys(total, 0.0)
        for raw in ordered:
            if raw.parent is not None and raw.parent.id in inner:
                inner[raw.parent.id] += total[raw.id]
        for raw in ordered:
            own = total[raw.id] - inner[raw.id]
            if raw.cuda is not None and own > 0:
                events[raw.id].kernels.append(Kernel(raw.name, self.cuda.index, own))


def _shares(a, inputs):
    from numpy import may_share_memory
    return any(may_share_memory(a, i) for i in inputs if hasattr(i, "__array_interface__"))


def active_session():
    """The running session, or None."""
    return _active[0]
