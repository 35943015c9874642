"""Timer: ``timeit`` for ember code, with torch.utils.benchmark's API and measurements."""
from __future__ import annotations

import enum
import statistics
import textwrap
import timeit

import ember

from . import common

__all__ = ["Timer", "timer", "Language"]


def timer() -> float:
    """The clock Timer reads: ``timeit.default_timer``, after waiting for a GPU if any."""
    if ember.cuda.is_available():
        ember.cuda.synchronize()
    return timeit.default_timer()


class Language(enum.Enum):
    PYTHON = 0
    CPP = 1


class Timer:
    """Time the execution of ``stmt`` (a string of Python code) after ``setup``, with
    ``globals`` (``torch`` names ember unless given). ``label``, ``sub_label``,
    ``description`` and ``env`` are how ``Compare`` groups and names the results;
    ``num_threads`` the thread setting the statement runs with."""

    _timer_cls = timeit.Timer

    def __init__(self, stmt="pass", setup="pass", global_setup="", timer=timer, globals=None,
                 label=None, sub_label=None, description=None, env=None, num_threads=1,
                 language=Language.PYTHON):
        if not isinstance(stmt, str):
            raise ValueError("Currently only a `str` stmt is supported.")
        self._globals = dict(globals or {})
        if language in (Language.PYTHON, "py", "python"):
            self._globals.setdefault("torch", ember)
            self._language = Language.PYTHON
            if global_setup:
                raise ValueError(f"global_setup is C++ only, got `{global_setup}`. Most likely "
                                 "this code can simply be moved to `setup`.")
        elif language in (Language.CPP, "cpp", "c++"):
            raise ValueError("ember times Python statements only: it has no C++ API to "
                             "compile `stmt` against.")
        else:
            raise ValueError(f"Invalid language `{language}`.")
        stmt, setup = _clean(stmt), _clean(setup)
        self._timer = self._timer_cls(stmt=stmt, setup=setup, timer=timer,
                                      globals=self._globals)
        self._task_spec = common.TaskSpec(stmt=stmt, setup=setup, global_setup=global_setup,
                                          label=label, sub_label=sub_label,
                                          description=description, env=env,
                                          num_threads=num_threads)

    def _timeit(self, number: int) -> float:
        # even an empty statement takes some time: never report 0
        return max(self._timer.timeit(number), 1e-9)

    def timeit(self, number: int = 1000000) -> common.Measurement:
        """Time ``number`` runs of the statement (after a warmup of ``number // 100``)."""
        with common.set_torch_threads(self._task_spec.num_threads):
            self._timeit(number=max(int(number // 100), 2))
            return common.Measurement(number_per_run=number,
                                      raw_times=[self._timeit(number=number)],
                                      task_spec=self._task_spec)

    def repeat(self, repeat: int = -1, number: int = -1):
        raise NotImplementedError("See `Timer.blocked_autorange.`")

    def autorange(self, callback=None):
        raise NotImplementedError("See `Timer.blocked_autorange.`")

    def _measurement_loop(self, number, stop, min_run_time, max_run_time=None, callback=None):
        """Time blocks of ``number`` runs until ``min_run_time`` is spent and ``stop(times)``
        (or ``max_run_time`` is spent)."""
        total, times, can_stop = 0.0, [], False
        with common.set_torch_threads(self._task_spec.num_threads):
            while total < min_run_time or not can_stop:
                spent = self._timeit(number)
                times.append(spent)
                total += spent
                if callback:
                    callback(number, spent)
                can_stop = stop(times)
                if max_run_time and total > max_run_time:
                    break
        return times

    def _estimate_block_size(self, min_run_time: float) -> int:
        """Runs per block: enough for the timer's overhead to be <= 0.01% of a block, and a
        block to take >= min_run_time / 1000 (a power of ten)."""
        with common.set_torch_threads(self._task_spec.num_threads):
            overhead = statistics.median_low([self._timeit(0) for _ in range(5)])
            number = 1
            while True:
                time_taken = self._timeit(number)
                relative_overhead = overhead / time_taken
                if relative_overhead <= 1e-4 and time_taken >= min_run_time / 1000:
                    break
                if time_taken > min_run_time or number * 10 > 2147483647:
                    break
                number *= 10
        return number

    def blocked_autorange(self, callback=None, min_run_time: float = 0.2):
        """Time blocks of runs for at least ``min_run_time`` seconds; the block size is chosen
        first so that timer overhead is negligible."""
        number = self._estimate_block_size(min_run_time)
        times = self._measurement_loop(number, lambda times: True, min_run_time,
                                       callback=callback)
        return common.Measurement(number_per_run=number, raw_times=times,
                                  task_spec=self._task_spec)

    def adaptive_autorange(self, threshold: float = 0.1, *, min_run_time: float = 0.01,
                           max_run_time: float = 10.0, callback=None):
        """Time blocks until the interquartile range is within ``threshold`` of the median
        (after at least 4 blocks and ``min_run_time``), or ``max_run_time`` is spent."""
        number = self._estimate_block_size(min_run_time=0.05)

        def stop(times):
            return len(times) > 3 and common.Measurement(
                number_per_run=number, raw_times=times,
                task_spec=self._task_spec).meets_confidence(threshold=threshold)
        times = self._measurement_loop(number, stop, min_run_time, max_run_time, callback)
        return common.Measurement(number_per_run=number, raw_times=times,
                                  task_spec=self._task_spec)


def _clean(code: str) -> str:
    """Dedented, without a leading newline or trailing whitespace."""
    code = textwrap.dedent(code)
    return (code[1:] if code and code[0] == "\n" else code).rstrip()
