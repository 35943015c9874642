"""``ember.autograd.profiler``: torch's autograd profiler API.

``profile`` records every op run in forward (named as torch names them, ``aten::mul``) and
every node run in backward (``MulBackward0``, ``torch::autograd::AccumulateGrad``), with self
and total CPU time, calls, input shapes and memory; ``record_function`` adds user ranges.
The recording machinery lives in :mod:`ember.profiler`, which shares it.

``emit_nvtx`` and ``load_nvprof`` are for NVIDIA's tools: without a GPU they fail as
PyTorch's CPU build does; with CuPy and a GPU, ``emit_nvtx`` emits an NVTX range per op.
"""
from __future__ import annotations

from .._state import profiler_hook, set_hook
from ..profiler._events import (
    DeviceType,
    EventList,
    FormattedTimesMixin,
    FunctionEvent,
    FunctionEventAvg,
    Interval,
    Kernel,
)
from ..profiler._legacy import profile, record_function
from ..profiler._recorder import _calling_node, _peek_sequence, _shape_of

__all__ = [
    "DeviceType",
    "EnforceUnique",
    "EventList",
    "FormattedTimesMixin",
    "FunctionEvent",
    "FunctionEventAvg",
    "Interval",
    "Kernel",
    "emit_nvtx",
    "load_nvprof",
    "parse_nvprof_trace",
    "profile",
    "record_function",
]


class _NvtxRange:
    """One NVTX range (CuPy's bindings), named as torch names it."""

    __slots__ = ("message", "nvtx")

    def __init__(self, nvtx, message):
        self.nvtx = nvtx
        self.message = message

    def __enter__(self):
        self.nvtx.RangePush(self.message)
        return self

    def __exit__(self, *exc):
        self.nvtx.RangePop()
        return False


class emit_nvtx:
    """Make every op and backward node emit an NVTX range (for nvprof / Nsight Systems).

    Forward ranges read ``aten::mul, seq = N``; backward ranges ``MulBackward0, stashed seq =
    N`` with the same N, so a backward node can be matched to the op that created it.
    ``enabled=False`` makes it a no-op. Without CUDA, entering raises as torch's CPU build.
    """

    def __init__(self, enabled=True, record_shapes=False):
        self.enabled = enabled
        self.entered = False
        self.record_shapes = record_shapes
        self._prev = None
        self._nvtx = None

    def __enter__(self):
        if not self.enabled:
            return None
        if self.entered:
            raise RuntimeError("NVTX annotation context manager is not reentrant")
        self.entered = True
        from .. import cuda
        cuda.synchronize()  # raises "Torch not compiled with CUDA enabled" without a GPU
        from .._backend.device import require_cuda
        self._nvtx = require_cuda().nvtx()  # CuPy's NVTX bindings
        self._prev = profiler_hook[0]
        set_hook(profiler_hook, self._hook)
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        if not self.enabled:
            return None
        from .. import cuda
        cuda.synchronize()
        set_hook(profiler_hook, self._prev)
        return False

    def _hook(self, name, args, node=None):
        if name.startswith("aten::"):
            message = f"{name}, seq = {_peek_sequence()}"
        else:
            node = node if node is not None else _calling_node()
            message = f"{name}, stashed seq = {getattr(node, '_seq', -1)}"
        if self.record_shapes:
            message += f", sizes = {[_shape_of(a) for a in args]}"
        return _NvtxRange(self._nvtx, message)


def load_nvprof(path):
    """Open an nvprof trace file and parse the autograd annotations in it."""
    return EventList(parse_nvprof_trace(path))


class EnforceUnique:
    """Raises an error if a key is seen more than once."""

    def __init__(self):
        self.seen = set()

    def see(self, *key):
        """Observe a key; raise if it was seen before."""
        if key in self.seen:
            raise RuntimeError("duplicate key: " + str(key))
        self.seen.add(key)


_MARKER_QUERY = """
SELECT
    start.id AS marker_id, start.name, start.timestamp AS start_time, end.timestamp AS end_time
FROM
    CUPTI_ACTIVITY_KIND_MARKER AS start INNER JOIN CUPTI_ACTIVITY_KIND_MARKER AS end
    ON start.id = end.id
WHERE
    start.name != 0 AND end.name = 0
"""

_KERNEL_QUERY = """
SELECT
    start.id AS marker_id, start.name, start.timestamp, end.timestamp,
    runtime._id_ AS runtime_id, runtime.cbid, runtime.start AS runtime_start,
    runtime.end AS runtime_end, kernel.start AS kernel_start, kernel.end AS kernel_end,
    kernel.name AS kernel_name
FROM
    CUPTI_ACTIVITY_KIND_MARKER AS start
    INNER JOIN CUPTI_ACTIVITY_KIND_MARKER AS end
        ON start.id = end.id
    INNER JOIN CUPTI_ACTIVITY_KIND_RUNTIME as runtime
        ON (start.timestamp < runtime.start AND runtime.end < end.timestamp)
    INNER JOIN CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL AS kernel
        ON kernel.correlationId = runtime.correlationId
"""


def parse_nvprof_trace(path):
    """FunctionEvents (with their CUDA kernels) from an nvprof SQLite file."""
    import sqlite3

    # NOTE: like torch, this opens the path with sqlite3.connect, so a missing file fails
    # with sqlite3.OperationalError "no such table: StringTable".
    conn = sqlite3.connect(path)
    conn.row_factory = sqlite3.Row
    strings = {r["id"]: r["value"] for r in conn.execute(
        "SELECT _id_ as id, value FROM StringTable")}
    functions, by_id = [], {}
    unique = EnforceUnique()
    for row in conn.execute(_MARKER_QUERY):
        unique.see(row["marker_id"])
        evt = FunctionEvent(row["marker_id"], strings[row["name"]], 0, row["start_time"],
                            row["end_time"])
        evt.node_id = 0
        functions.append(evt)
        by_id[evt.id] = evt
    unique = EnforceUnique()
    for row in conn.execute(_KERNEL_QUERY):
        unique.see(row["marker_id"], row["runtime_id"])
        if row["cbid"] != 211:  # 211 is cudaKernelLaunch for cuda >= 9.2
            raise AssertionError(f"Expected cbid to be 211, but got {row['cbid']}")
        by_id[row["marker_id"]].kernels.append(
            Kernel(row["kernel_name"], 0, row["kernel_end"] - row["kernel_start"]))
    functions.sort(key=lambda evt: evt.time_range.start)
    return functions
