"""``ember.autograd.profiler.profile`` and ``record_function``, as torch has them."""
from __future__ import annotations

import functools
import time
import warnings

from ._events import EventList, write_chrome_trace
from ._recorder import _Session, active_session

__all__ = ["profile", "record_function"]

_VALID_DEVICES = ("cuda", "xpu", "mtia", "hpu")


def _cuda_available():
    from .. import cuda
    return cuda.is_available()


class profile:
    """Context manager that records every op and backward node run inside it.

    Results: ``key_averages()``, ``table()``, ``total_average()``, ``function_events``,
    ``self_cpu_time_total``, ``export_chrome_trace(path)`` and ``print(prof)``.
    ``enabled=False`` records nothing and ``with ... as prof`` binds None, as in torch.
    """

    def __init__(self, enabled=True, *, use_cuda=False, use_device=None, record_shapes=False,
                 with_flops=False, profile_memory=False, with_stack=False, with_modules=False,
                 use_kineto=False, use_cpu=True, experimental_config=None, acc_events=False,
                 custom_trace_id_callback=None, post_processing_timeout_s=None,
                 activity_filters=None):
        self.enabled = enabled
        if not enabled:
            return
        self.use_cuda = use_cuda
        self.use_device = _checked_device(use_cuda, use_device)
        if self.use_device is None:
            self.use_cuda = False
        self.record_shapes = record_shapes or with_flops
        self.with_flops = with_flops
        self.profile_memory = profile_memory
        self.with_stack = with_stack
        self.with_modules = with_modules
        self.use_cpu = use_cpu
        self.acc_events = acc_events
        self.experimental_config = experimental_config
        self.entered = False
        self.trace_id = ""
        self._session = None
        self._function_events = None
        self._old_function_events = None
        self._needs_processing = False
        if not use_cpu:
            if not use_kineto:
                raise AssertionError(
                    "Device-only events supported only with Kineto (use_kineto=True)")
            if self.use_device is None:
                raise AssertionError("No activities specified for the profiler")

    def __enter__(self):
        if not self.enabled:
            return None
        if self.entered:
            raise RuntimeError("Profiler context manager is not reentrant")
        self._prepare_trace()
        self._start_trace()
        return self

    def _prepare_trace(self):
        self.entered = True
        self._session = _Session(self.record_shapes, self.profile_memory, self.with_stack,
                                 self.with_flops, use_cuda=self.use_device == "cuda")

    def _start_trace(self):
        self.entered = True
        self._session.start()

    def __exit__(self, exc_type, exc_val, exc_tb):
        if not self.enabled:
            return None
        self._session.stop()
        if self._function_events and self.acc_events:
            self._old_function_events = self._function_events
        self._function_events = None
        self._needs_processing = True
        if self.acc_events:
            self._ensure_function_events()
        return False

    def __repr__(self):
        if self._needs_processing:
            self._ensure_function_events()
        if self._function_events is None:
            return "<unfinished ember.autograd.profile>"
        return repr(self._function_events)

    def __str__(self):
        if self._needs_processing:
            self._ensure_function_events()
        if self._function_events is None:
            return "<unfinished ember.autograd.profile>"
        return str(self._function_events)

    def _ensure_function_events(self):
        """Turn the recorded ranges into an EventList (once, lazily)."""
        if self._function_events is not None:
            return
        self._needs_processing = False
        raw = self._session.events(self.use_device) if self._session is not None else []
        self._function_events = EventList(raw, use_device=self.use_device,
                                          profile_memory=self.profile_memory,
                                          with_flops=self.with_flops)
        self._function_events._build_tree()
        if self._old_function_events and self.acc_events:
            self._function_events.extend(self._old_function_events)
            self._old_function_events = None

    def _results(self):
        self._ensure_function_events()
        if self._function_events is None:
            raise AssertionError("Expected profiling results")
        return self._function_events

    @property
    def function_events(self):
        if self._function_events is None or self._needs_processing:
            self._ensure_function_events()
        return self._function_events

    def table(self, sort_by=None, row_limit=100, max_src_column_width=75,
              max_name_column_width=55, max_shapes_column_width=80, header=None,
              top_level_events_only=False):
        """Format the recorded events as torch's summary table."""
        return self._results().table(
            sort_by=sort_by, row_limit=row_limit, max_src_column_width=max_src_column_width,
            max_name_column_width=max_name_column_width,
            max_shapes_column_width=max_shapes_column_width, header=header,
            top_level_events_only=top_level_events_only)

    def export_chrome_trace(self, path, metadata=None, use_python_export=False):
        """Write a Chrome/Perfetto trace (JSON) with forward->backward flow arrows."""
        events = self._results()
        session = self._session
        # ts are perf_counter (monotonic clock) microseconds, as Kineto's; the wall-clock
        # time of that clock's zero goes in baseTimeNanoseconds.
        meta = {"baseTimeNanoseconds": time.time_ns() - time.perf_counter_ns()}
        meta.update(metadata or {})
        write_chrome_trace(events, path, session.start_ns / 1000.0, session.native_threads(),
                           meta)

    def export_stacks(self, path, metric="self_cpu_time_total"):
        """Write the recorded stacks for flame graphs (needs ``with_stack=True``)."""
        events = self._results()
        if not self.with_stack:
            raise AssertionError("export_stacks() requires with_stack=True")
        return events.export_stacks(path, metric)

    def key_averages(self, group_by_input_shape=False, group_by_stack_n=0,
                     group_by_overload_name=False):
        """Average the events over their names (and shapes or stacks when asked)."""
        return self._results().key_averages(group_by_input_shape, group_by_stack_n,
                                            group_by_overload_name)

    def total_average(self):
        """Everything summed into one entry whose key is ``"Total"``."""
        return self._results().total_average()

    @property
    def self_cpu_time_total(self):
        """Total time spent on CPU: the sum of every event's self time (us)."""
        return self._results().self_cpu_time_total


def _checked_device(use_cuda, use_device):
    """torch's warnings for deprecated or unavailable devices; the device kept (or None)."""
    if use_cuda:
        warnings.warn("The attribute `use_cuda` will be deprecated soon, please use "
                      "``use_device = 'cuda'`` instead.", FutureWarning, stacklevel=3)
        use_device = "cuda"
    if use_device is None:
        return None
    if use_device not in _VALID_DEVICES:
        warnings.warn(f"The {use_device} is not a valid device option.", stacklevel=3)
        return None
    if use_device == "cuda" and not _cuda_available():
        warnings.warn("CUDA is not available, disabling CUDA profiling", stacklevel=3)
        return None
    if use_device != "cuda":
        warnings.warn(f"{use_device.upper()} is not available, disabling "
                      f"{use_device.upper()} profiling", stacklevel=3)
        return None
    return use_device


class record_function:
    """Label a block of code (context manager) or every call of a function (decorator).

    The label shows in the profiler's table and trace as a range around what runs inside;
    with no profiler running it costs almost nothing.
    """

    def __init__(self, name: str, args: str | None = None):
        self.name = name
        self.args = args
        self.run_callbacks_on_exit = True
        self.record = None

    def __enter__(self):
        session = active_session()
        if session is not None:
            self.record = session.user_range(self.name)
            self.record.__enter__()
        return self

    def __exit__(self, exc_type, exc_value, traceback):
        record, self.record = self.record, None
        if record is not None and self.run_callbacks_on_exit:
            record.__exit__(exc_type, exc_value, traceback)
        return False

    def __call__(self, func):
        name, args = self.name, self.args

        @functools.wraps(func)
        def wrapped(*a, **kw):
            # A fresh range per call, so recursive and concurrent calls nest correctly.
            with record_function(name, args):
                return func(*a, **kw)
        return wrapped
