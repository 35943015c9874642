"""Profiling results: events, their averages, torch's summary table and the Chrome trace.

These mirror ``torch.autograd.profiler_util`` (``EventList``, ``FunctionEvent``,
``FunctionEventAvg``) attribute for attribute, so code written against torch's results works
unchanged. Times are in microseconds (floats), memory in bytes.
"""
from __future__ import annotations

import enum
import json
import os
from collections import defaultdict, namedtuple

__all__ = ["DeviceType", "EventList", "FunctionEvent", "FunctionEventAvg", "Interval", "Kernel"]

Kernel = namedtuple("Kernel", ["name", "device", "duration"])

# torch's at::RecordScope values used here.
SCOPE_FUNCTION = 0
SCOPE_BACKWARD_FUNCTION = 1
SCOPE_USER = 7


class DeviceType(enum.IntEnum):
    """Where an event ran (ember records CPU events only)."""

    CPU = 0
    CUDA = 1

    def __repr__(self):
        return f"DeviceType.{self.name}"

    __str__ = __repr__


class Interval:
    """A time range in microseconds."""

    def __init__(self, start, end):
        self.start = start
        self.end = end

    def elapsed_us(self):
        """The length of the interval."""
        return self.end - self.start


def _format_time(time_us):
    """Format a time in microseconds as torch does (s, ms or us, three decimals)."""
    if time_us >= 1e6:
        return f"{time_us / 1e6:.3f}s"
    if time_us >= 1e3:
        return f"{time_us / 1e3:.3f}ms"
    return f"{time_us:.3f}us"


def _format_time_share(time_us, total_time_us):
    """Format a share of the total time as a percentage."""
    if total_time_us == 0:
        return "NaN"
    return f"{time_us * 100.0 / total_time_us:.2f}%"


def _format_memory(nbytes):
    """Format a byte count as torch does (B, KB, MB, GB)."""
    kb, mb, gb = 1024, 1024 ** 2, 1024 ** 3
    if abs(nbytes) >= gb:
        return f"{nbytes * 1.0 / gb:.2f} GB"
    if abs(nbytes) >= mb:
        return f"{nbytes * 1.0 / mb:.2f} MB"
    if abs(nbytes) >= kb:
        return f"{nbytes * 1.0 / kb:.2f} KB"
    return str(nbytes) + " B"


def _time_str(name):
    return property(lambda self: _format_time(getattr(self, name)))


class FormattedTimesMixin:
    """String forms of the times and the per-call average (``cpu_time``)."""

    cpu_time_str = _time_str("cpu_time")
    device_time_str = _time_str("device_time")
    cpu_time_total_str = _time_str("cpu_time_total")
    device_time_total_str = _time_str("device_time_total")
    self_cpu_time_total_str = _time_str("self_cpu_time_total")
    self_device_time_total_str = _time_str("self_device_time_total")

    @property
    def cpu_time(self):
        return 0.0 if self.count == 0 else 1.0 * self.cpu_time_total / self.count

    @property
    def device_time(self):
        return 0.0 if self.count == 0 else 1.0 * self.device_time_total / self.count


class FunctionEvent(FormattedTimesMixin):
    """Profiling information about a single call of an op, backward node or user range."""

    def __init__(self, id, name, thread, start_us, end_us, *, fwd_thread=None,
                 input_shapes=None, stack=None, scope=0, use_device=None,
                 cpu_memory_usage=0, sequence_nr=-1, trace_name=None, flops=None,
                 is_user_annotation=False, overload_name=""):
        self.id = id
        self.node_id = -1
        self.name = name
        self.overload_name = overload_name
        self.trace_name = trace_name if trace_name is not None else name
        self.time_range = Interval(start_us, end_us)
        self.thread = thread
        self.fwd_thread = fwd_thread
        self.kernels = []
        self.count = 1
        self.cpu_children = []
        self.cpu_parent = None
        self.input_shapes = input_shapes if input_shapes is not None else []
        self.concrete_inputs = []
        self.kwinputs = {}
        self.stack = stack if stack is not None else []
        self.scope = scope
        self.use_device = use_device
        self.cpu_memory_usage = cpu_memory_usage
        self.device_memory_usage = 0
        self.is_async = False
        self.is_remote = False
        self.sequence_nr = sequence_nr
        self.device_type = DeviceType.CPU
        self.device_index = 0
        self.is_legacy = False
        self.flops = flops
        self.is_user_annotation = is_user_annotation
        self.self_cpu_percent = -1
        self.total_cpu_percent = -1

    def append_cpu_child(self, child):
        """Append a direct child event (self time subtracts the children's time)."""
        self.cpu_children.append(child)

    def set_cpu_parent(self, parent):
        """Set the direct parent event."""
        self.cpu_parent = parent

    @property
    def cpu_time_total(self):
        return self.time_range.elapsed_us()

    @property
    def self_cpu_time_total(self):
        return self.cpu_time_total - sum(c.cpu_time_total for c in self.cpu_children)

    @property
    def self_cpu_memory_usage(self):
        return self.cpu_memory_usage - sum(c.cpu_memory_usage for c in self.cpu_children)

    @property
    def self_device_memory_usage(self):
        return 0

    @property
    def device_time_total(self):
        """GPU time of this event's own kernels and of its children's (torch's rule)."""
        if self.is_async or not self.use_device:
            return 0
        return (sum(k.duration for k in self.kernels)
                + sum(c.device_time_total for c in self.cpu_children))

    @property
    def self_device_time_total(self):
        if self.is_async or not self.use_device:
            return 0
        return self.device_time_total - sum(c.device_time_total for c in self.cpu_children)

    @property
    def key(self):
        return self.name

    def __repr__(self):
        device_name = self.use_device
        return (
            f"<FunctionEvent id={self.id} name={self.name} overload_name={self.overload_name} "
            f"device_type={self.device_type} node_id={self.node_id} "
            f"cpu_time={self.cpu_time_str} start_us={self.time_range.start} "
            f"end_us={self.time_range.end} "
            f"cpu_children={[child.id for child in self.cpu_children]!s} "
            f"{device_name}_time={self.device_time_str} name={self.name} "
            f"thread={self.thread} input_shapes={self.input_shapes!s} "
            f"cpu_memory_usage={self.cpu_memory_usage} "
            f"{device_name}_memory_usage={self.device_memory_usage} "
            f"is_async={self.is_async} is_remote={self.is_remote} "
            f"seq_nr={self.sequence_nr} is_legacy={self.is_legacy}>")


class FunctionEventAvg(FormattedTimesMixin):
    """Statistics summed over the events that share a key (and shapes or stack, if grouped)."""

    def __init__(self):
        self.key = None
        self.count = 0
        self.node_id = 0
        self.is_async = False
        self.is_remote = False
        self.use_device = None
        self.cpu_time_total = 0
        self.device_time_total = 0
        self.self_cpu_time_total = 0
        self.self_device_time_total = 0
        self.input_shapes = None
        self.overload_name = None
        self.stack = None
        self.scope = None
        self.cpu_memory_usage = 0
        self.device_memory_usage = 0
        self.self_cpu_memory_usage = 0
        self.self_device_memory_usage = 0
        self.cpu_children = None
        self.cpu_parent = None
        self.device_type = DeviceType.CPU
        self.is_legacy = False
        self.flops = 0
        self.is_user_annotation = False

    def add(self, other):
        """Accumulate ``other`` (an event or an average) into this average."""
        if self.key is None:
            # The first event fixes the descriptive fields.
            for name in ("key", "node_id", "is_async", "is_remote", "cpu_parent",
                         "cpu_children", "overload_name", "input_shapes", "stack", "scope",
                         "device_type", "is_legacy", "use_device", "is_user_annotation"):
                setattr(self, name, getattr(other, name))
        if not isinstance(other, (FunctionEvent, FunctionEventAvg)):
            raise AssertionError(  # noqa: TRY004 - torch's exception type
                "Expected other to be a FunctionEvent or FunctionEventAvg")
        if other.key != self.key:
            raise AssertionError(f"Expected keys to match, but got {other.key} vs {self.key}")
        self.cpu_time_total += other.cpu_time_total
        self.self_cpu_time_total += other.self_cpu_time_total
        self.device_time_total += other.device_time_total
        self.self_device_time_total += other.self_device_time_total
        self.cpu_memory_usage += other.cpu_memory_usage
        self.self_cpu_memory_usage += other.self_cpu_memory_usage
        self.count += other.count
        if self.flops is None:
            self.flops = other.flops
        elif other.flops is not None:
            self.flops += other.flops
        return self

    def __iadd__(self, other):
        return self.add(other)

    def __repr__(self):
        device_name = "cuda" if not self.use_device else self.use_device
        return (
            f"<FunctionEventAvg key={self.key} self_cpu_time={self.self_cpu_time_total_str} "
            f"cpu_time={self.cpu_time_str}  self_{device_name}_time="
            f"{self.self_device_time_total_str} {device_name}_time={self.device_time_str} "
            f"input_shapes={self.input_shapes!s} cpu_memory_usage={self.cpu_memory_usage} "
            f"{device_name}_memory_usage={self.device_memory_usage}>")


class EventList(list):
    """A list of profiling events with helpers: ``table``, ``key_averages``, traces."""

    def __init__(self, *args, **kwargs):
        use_device = kwargs.pop("use_device", None)
        profile_memory = kwargs.pop("profile_memory", False)
        with_flops = kwargs.pop("with_flops", False)
        super().__init__(*args, **kwargs)
        self._use_device = use_device
        self._profile_memory = profile_memory
        self._with_flops = with_flops
        self._tree_built = False

    def __str__(self):
        return self.table()

    def _build_tree(self):
        """Drop a child that merely repeats its parent's name, as torch does."""
        self._remove_dup_nodes()
        self._tree_built = True

    def _remove_dup_nodes(self):
        while True:
            drop = set()
            for idx, evt in enumerate(self):
                parent = evt.cpu_parent
                if (parent is not None and parent.name == evt.name
                        and len(parent.cpu_children) == 1):
                    parent.cpu_children = evt.cpu_children
                    for ch in evt.cpu_children:
                        ch.cpu_parent = parent
                    drop.add(idx)
            if not drop:
                return
            kept = [e for i, e in enumerate(self) if i not in drop]
            self.clear()
            self.extend(kept)

    @property
    def self_cpu_time_total(self):
        return sum(event.self_cpu_time_total for event in self)

    def table(self, sort_by=None, row_limit=100, max_src_column_width=75,
              max_name_column_width=55, max_shapes_column_width=80, header=None,
              top_level_events_only=False, time_unit=None):
        """Format the events as torch's summary table (a string)."""
        from ._table import build_table
        return build_table(
            self, sort_by=sort_by, row_limit=row_limit,
            max_src_column_width=max_src_column_width,
            max_name_column_width=max_name_column_width,
            max_shapes_column_width=max_shapes_column_width, header=header,
            profile_memory=self._profile_memory, with_flops=self._with_flops,
            top_level_events_only=top_level_events_only, time_unit=time_unit)

    def export_chrome_trace(self, path):
        """Write the events as a Chrome trace (torch's legacy format: a JSON list)."""
        events = [_complete_event(evt, 0.0, "CPU functions", evt.thread) for evt in self
                  if evt.trace_name is not None]
        for e in events:
            e["args"] = {}
        with open(path, "w") as f:
            json.dump(events, f)

    def supported_export_stacks_metrics(self):
        return ["self_cpu_time_total", "self_cuda_time_total", "self_xpu_time_total",
                "self_privateuse1_time_total"]

    def export_stacks(self, path, metric):
        """Write one ``frame;frame;... value`` line per event with a stack (flame graphs)."""
        if metric not in self.supported_export_stacks_metrics():
            raise ValueError("metric should be one of: "
                             + str(self.supported_export_stacks_metrics()))
        translate = str.maketrans(" ;\t\n", "____")
        attr = metric.replace("cuda", "device").replace("xpu", "device").replace(
            "privateuse1", "device")
        with open(path, "w") as f:
            for evt in self:
                if evt.stack and int(getattr(evt, attr)) > 0:
                    frames = ";".join(e.translate(translate) for e in reversed(evt.stack))
                    f.write(f"{frames} {int(getattr(evt, attr))}\n")

    def key_averages(self, group_by_input_shapes=False, group_by_stack_n=0,
                     group_by_overload_name=False):
        """Average the events over their key (and input shapes / stack when asked)."""
        stats = defaultdict(FunctionEventAvg)
        for evt in self:
            key = [str(evt.key), str(evt.node_id), str(evt.device_type), str(evt.is_legacy),
                   str(evt.is_user_annotation)]
            if group_by_overload_name:
                key.append(evt.overload_name)
            if group_by_input_shapes:
                key.append(str(evt.input_shapes))
            if group_by_stack_n > 0:
                key += evt.stack[:group_by_stack_n]
            stats[tuple(key)].add(evt)
        avg_list = EventList(stats.values(), use_device=self._use_device,
                             profile_memory=self._profile_memory, with_flops=self._with_flops)
        for evt in avg_list:
            evt.stack = evt.stack[:group_by_stack_n]
            if not group_by_input_shapes:
                evt.input_shapes = ""
            if not group_by_overload_name:
                evt.overload_name = ""
        return avg_list

    def total_average(self):
        """Sum every event into one average whose key is ``"Total"``."""
        total = FunctionEventAvg()
        for evt in self:
            total += evt
            total.key = None
        total.key = "Total"
        return total


# -- Chrome trace ---------------------------------------------------------------------------
def _complete_event(evt, base_us, pid, tid):
    return {"ph": "X", "cat": "user_annotation" if evt.is_user_annotation else "cpu_op",
            "name": evt.trace_name, "pid": pid, "tid": tid,
            "ts": round(base_us + evt.time_range.start, 3),
            "dur": round(evt.time_range.elapsed_us(), 3)}


def _event_args(evt):
    args = {"External id": evt.id, "Sequence number": evt.sequence_nr,
            "Fwd thread id": evt.fwd_thread or 0, "Record function id": 0}
    if evt.input_shapes:
        args["Input Dims"] = evt.input_shapes
    if evt.stack:
        args["Call stack"] = ";".join(evt.stack)
    return args


def _flow_events(events, pid, tids, base_us):
    """``s``/``f`` pairs linking each forward op to the backward node it created."""
    creator = {}
    for evt in events:
        # The innermost forward range holding a sequence number made that node (a composite
        # shares its first child's number).
        if evt.scope == SCOPE_FUNCTION and evt.sequence_nr >= 0 and \
                not evt.name.startswith("autograd::engine::evaluate_function: "):
            prev = creator.get(evt.sequence_nr)
            if prev is None or evt.time_range.start >= prev.time_range.start:
                creator[evt.sequence_nr] = evt
    flows = []
    for evt in events:
        if evt.scope != SCOPE_BACKWARD_FUNCTION:
            continue
        fwd = creator.get(evt.sequence_nr)
        if fwd is None:
            continue
        fid = len(flows) // 2 + 1
        common = {"id": fid, "pid": pid, "cat": "fwdbwd", "name": "fwdbwd"}
        flows.append(dict(common, ph="s", tid=tids[fwd.thread],
                          ts=round(base_us + fwd.time_range.start, 3)))
        flows.append(dict(common, ph="f", bp="e", tid=tids[evt.thread],
                          ts=round(base_us + evt.time_range.start, 3)))
    return flows


def write_chrome_trace(events, path, base_us, native_tids, metadata=None):
    """Write ``events`` as a Chrome/Perfetto trace: ``{"traceEvents": [...]}``, times in us."""
    pid = os.getpid()
    tids = defaultdict(int, native_tids)
    trace = [{"ph": "M", "name": "process_name", "pid": pid, "tid": 0,
              "args": {"name": "python"}},
             {"ph": "M", "name": "process_labels", "pid": pid, "tid": 0,
              "args": {"labels": "CPU"}}]
    for small, native in sorted(native_tids.items()):
        trace.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": native,
                      "args": {"name": f"thread {small} (python)"}})
    for idx, evt in enumerate(events):
        e = _complete_event(evt, base_us, pid, tids[evt.thread])
        e["args"] = dict(_event_args(evt), **{"Ev Idx": idx})
        trace.append(e)
    trace.extend(_flow_events(events, pid, tids, base_us))
    doc = {"schemaVersion": 1, "deviceProperties": [], "displayTimeUnit": "ms",
           "traceEvents": trace, "traceName": str(path)}
    if metadata:
        doc.update(metadata)
    with open(path, "w") as f:
        json.dump(doc, f)
