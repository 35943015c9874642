"""``ember.profiler.profile``: torch's newer profiler API (CPU activity), with schedules."""
from __future__ import annotations

import enum
import os
import socket
import time
import warnings
from functools import partial

from ._legacy import profile as _legacy_profile
from ._legacy import record_function

__all__ = ["ProfilerAction", "ProfilerActivity", "profile", "schedule", "supported_activities",
           "tensorboard_trace_handler"]


_WARNINGS_SHOWN = set()


def _warn_once(message):
    """Warn once per process, as torch's profiler does for what it says at every cycle."""
    if message not in _WARNINGS_SHOWN:
        _WARNINGS_SHOWN.add(message)
        warnings.warn(message, UserWarning, stacklevel=2)


class ProfilerActivity(enum.Enum):
    """What to record: CPU activity (ops, backward nodes, user ranges) and, on a GPU, the
    CUDA time of each (measured with CUDA events)."""

    CPU = 0
    XPU = 1
    MTIA = 2
    CUDA = 3
    HPU = 4
    PrivateUse1 = 5

    def __repr__(self):
        return f"<ProfilerActivity.{self.name}: {self.value}>"

    def __str__(self):
        return f"ProfilerActivity.{self.name}"


class ProfilerAction(enum.Enum):
    """What the profiler does at a step, as a ``schedule`` returns it."""

    NONE = 0
    WARMUP = 1
    RECORD = 2
    RECORD_AND_SAVE = 3


def supported_activities():
    """The activities this build can record (CUDA too when CuPy sees a GPU)."""
    from .. import cuda
    if cuda.is_available():
        return {ProfilerActivity.CPU, ProfilerActivity.CUDA}
    return {ProfilerActivity.CPU}


def schedule(*, wait: int, warmup: int, active: int, repeat: int = 0, skip_first: int = 0,
             skip_first_wait: int = 0):
    """A schedule: skip ``skip_first`` steps, then cycles of wait, warmup and active steps."""
    def schedule_fn(step: int) -> ProfilerAction:
        if step < 0:
            raise AssertionError(f"Step must be non-negative. Got {step}.")
        if step < skip_first:
            return ProfilerAction.NONE
        step -= skip_first
        if skip_first_wait != 0:
            step += wait
        num_steps = wait + warmup + active
        if repeat > 0 and step / num_steps >= repeat:
            return ProfilerAction.NONE
        mod_step = step % num_steps
        if mod_step < wait:
            return ProfilerAction.NONE
        if mod_step < wait + warmup:
            return ProfilerAction.WARMUP
        return (ProfilerAction.RECORD if mod_step < num_steps - 1
                else ProfilerAction.RECORD_AND_SAVE)

    if wait < 0 or warmup < 0 or active <= 0 or repeat < 0 or skip_first < 0:
        raise AssertionError(
            f"Invalid profiler schedule arguments. Got wait={wait} (need >= 0), "
            f"warmup={warmup} (need >= 0), active={active} (need > 0), repeat={repeat} "
            f"(need >= 0), skip_first={skip_first} (need >= 0).")
    if warmup == 0:
        warnings.warn("Profiler won't be using warmup, this can skew profiler results",
                      stacklevel=2)
    return schedule_fn


def _default_schedule_fn(_: int) -> ProfilerAction:
    return ProfilerAction.RECORD


def tensorboard_trace_handler(dir_name: str, worker_name: str | None = None,
                              use_gzip: bool = False, use_python_export: bool = False):
    """An ``on_trace_ready`` handler writing ``<worker>.<time_ns>.pt.trace.json`` traces."""
    def handler_fn(prof) -> None:
        nonlocal worker_name
        if not os.path.isdir(dir_name):
            try:
                os.makedirs(dir_name, exist_ok=True)
            except Exception as e:
                raise RuntimeError("Can't create directory: " + dir_name) from e
        if not worker_name:
            worker_name = f"{socket.gethostname()}_{os.getpid()}"
        file_name = f"{worker_name}.{time.time_ns()}.pt.trace.json"
        if use_gzip:
            file_name += ".gz"
        prof.export_chrome_trace(os.path.join(dir_name, file_name))
    return handler_fn


class profile:
    """Profiler context manager with ``schedule``, ``on_trace_ready`` and ``step()``."""

    def __init__(self, *, activities=None, schedule=None, on_trace_ready=None,
                 record_shapes=False, profile_memory=False, with_stack=False, with_flops=False,
                 with_modules=False, experimental_config=None, execution_trace_observer=None,
                 acc_events=False, use_cuda=None, custom_trace_id_callback=None,
                 post_processing_timeout_s=None):
        self.activities = _activities(activities, use_cuda)
        self.options = {"record_shapes": record_shapes, "profile_memory": profile_memory,
                        "with_stack": with_stack, "with_flops": with_flops,
                        "with_modules": with_modules, "acc_events": acc_events}
        self.record_shapes, self.profile_memory = record_shapes, profile_memory
        self.with_stack, self.with_flops = with_stack, with_flops
        self.acc_events = acc_events
        self.profiler = None
        self.record_steps = schedule is not None
        self.schedule = schedule or _default_schedule_fn
        self.on_trace_ready = on_trace_ready
        self.step_num = 0
        self.step_rec_fn = None
        self.current_action = self.schedule(self.step_num)
        self._recording = False
        self.action_map = self._action_map()

    def _action_map(self):
        A = ProfilerAction
        stop_save = [self.stop_trace, self._trace_ready]
        restart = stop_save + [self.prepare_trace, self.start_trace]
        return {
            (A.NONE, A.WARMUP): [self.prepare_trace],
            (A.NONE, A.RECORD): [self.prepare_trace, self.start_trace],
            (A.NONE, A.RECORD_AND_SAVE): [self.prepare_trace, self.start_trace],
            (A.WARMUP, A.NONE): [partial(warnings.warn, "Incorrect schedule: WARMUP followed "
                                         "by NONE"), self.start_trace, self.stop_trace],
            (A.WARMUP, A.RECORD): [self.start_trace],
            (A.WARMUP, A.RECORD_AND_SAVE): [self.start_trace],
            (A.RECORD, A.NONE): [partial(warnings.warn, "Incorrect schedule: RECORD followed "
                                         "by NONE"), self.stop_trace],
            (A.RECORD, A.WARMUP): [partial(warnings.warn, "Incorrect schedule: RECORD followed "
                                           "by WARMUP"), self.stop_trace],
            (A.RECORD_AND_SAVE, A.NONE): stop_save,
            (A.RECORD_AND_SAVE, A.WARMUP): stop_save + [self.prepare_trace],
            (A.RECORD_AND_SAVE, A.RECORD): restart,
            (A.RECORD_AND_SAVE, A.RECORD_AND_SAVE): restart,
            (A.WARMUP, None): [self.start_trace, self.stop_trace],
            (A.RECORD, None): stop_save,
            (A.RECORD_AND_SAVE, None): stop_save,
        }

    # -- the recording window ------------------------------------------------------------
    def prepare_trace(self):
        """Make a fresh recorder for the next cycle (kept when ``acc_events``)."""
        if self.profiler is not None and not self.acc_events:
            _warn_once("Warning: Profiler clears events at the end of each cycle. Only events "
                       "from the current cycle will be reported. To keep events across "
                       "cycles, set acc_events=True.")
        if self.profiler is None or not self.acc_events:
            cuda = ProfilerActivity.CUDA in (self.activities & supported_activities())
            self.profiler = _legacy_profile(use_kineto=True, use_device="cuda" if cuda else None,
                                            **self.options)
        self.profiler._prepare_trace()

    def start_trace(self):
        """Start recording."""
        self.profiler._start_trace()
        self._recording = True

    def stop_trace(self):
        """Stop recording."""
        if self._recording:
            self.profiler.__exit__(None, None, None)
            self._recording = False

    def _trace_ready(self):
        if self.on_trace_ready:
            self.on_trace_ready(self)

    def _transit_action(self, prev_action, current_action):
        for action in self.action_map.get((prev_action, current_action), ()):
            action()

    # -- public API ------------------------------------------------------------------------
    def __enter__(self):
        self.start()
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        self.stop()

    def start(self):
        """Begin at step 0 of the schedule."""
        self._transit_action(ProfilerAction.NONE, self.current_action)
        self._enter_step()

    def stop(self):
        """End profiling; a pending cycle's trace is handed to ``on_trace_ready``."""
        self._exit_step()
        self._transit_action(self.current_action, None)

    def step(self):
        """Signal that the next step (e.g. training iteration) begins."""
        self._exit_step()
        prev_action = self.current_action
        self.step_num += 1
        self.current_action = self.schedule(self.step_num)
        self._transit_action(prev_action, self.current_action)
        self._enter_step()

    def _enter_step(self):
        if self.record_steps:
            self.step_rec_fn = record_function("ProfilerStep#" + str(self.step_num))
            self.step_rec_fn.__enter__()

    def _exit_step(self):
        if self.record_steps and self.step_rec_fn is not None:
            self.step_rec_fn.__exit__(None, None, None)
            self.step_rec_fn = None

    def _results(self, what):
        if self.profiler is None:
            raise AssertionError(f"Profiler must be initialized before {what}")
        return self.profiler

    def events(self):
        """The recorded (not averaged) events of the last cycle."""
        return self._results("accessing events").function_events

    def key_averages(self, group_by_input_shape=False, group_by_stack_n=0,
                     group_by_overload_name=False):
        """Averaged events of the last cycle."""
        return self._results("getting key averages").key_averages(
            group_by_input_shape, group_by_stack_n, group_by_overload_name)

    def export_chrome_trace(self, path, use_python_export=False):
        """Write the last cycle as a Chrome trace (gzip-compressed when path ends in .gz)."""
        prof = self._results("exporting chrome trace")
        if not path.endswith(".gz"):
            return prof.export_chrome_trace(path)
        import gzip
        import tempfile
        with tempfile.TemporaryDirectory() as d:
            tmp = os.path.join(d, "trace.json")
            prof.export_chrome_trace(tmp)
            with open(tmp, "rb") as fin, gzip.open(path, "wb") as fout:
                fout.writelines(fin)

    def export_stacks(self, path, metric="self_cpu_time_total"):
        """Write stacks for flame graphs (needs ``with_stack=True``)."""
        return self._results("exporting stacks").export_stacks(path, metric)


def _activities(activities, use_cuda):
    chosen = set()
    if activities is not None:
        for item in activities:
            chosen.update(item.keys() if isinstance(item, dict) else (item,))
    else:
        chosen = supported_activities()
    if use_cuda is not None:
        warnings.warn("`use_cuda` is deprecated, use `activities` argument instead",
                      FutureWarning, stacklevel=3)
        if use_cuda:
            chosen.add(ProfilerActivity.CUDA)
        else:
            chosen.discard(ProfilerActivity.CUDA)
    if not chosen:
        raise AssertionError("No valid profiler activities found")
    unsupported = chosen - supported_activities()
    if unsupported:
        names = ", ".join(sorted(a.name for a in unsupported))
        warnings.warn(f"ember records CPU activity only; ignoring {names}", stacklevel=3)
    return chosen
