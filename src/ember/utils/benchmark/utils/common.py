"""What a timing is (``TaskSpec``), what it measured (``Measurement``), and unit helpers."""
from __future__ import annotations

import collections
import contextlib
import dataclasses
import math
import textwrap

import numpy as np

import ember

__all__ = ["TaskSpec", "Measurement", "select_unit", "unit_to_english", "trim_sigfig",
           "ordered_unique", "set_torch_threads"]

_MAX_SIGNIFICANT_FIGURES = 4
_MIN_CONFIDENCE_INTERVAL = 25e-9  # 25 ns
# an interquartile range above these shares of the median is reported in the repr
_IQR_WARN_THRESHOLD = 0.1
_IQR_GROSS_WARN_THRESHOLD = 0.25


def _f32(x):
    # NOTE: torch does its unit and digit arithmetic on float32 tensors (torch.tensor(x));
    # doing it in float32 too keeps the chosen units and trimmed values identical.
    return np.float32(x)


def _log10_f32(x) -> float:
    """log10 of float32 ``x``, correctly rounded to float32 (as torch's float32 log10 gives;
    NumPy's float32 log10 can be an ulp off, which moves 1e-6 s from us to ns)."""
    return float(np.float32(math.log10(float(_f32(x)))))


@dataclasses.dataclass(init=True, repr=False, eq=True, frozen=True)
class TaskSpec:
    """What a Timer times: the statement, its setup, and the labels it is reported with."""

    stmt: str
    setup: str
    global_setup: str = ""
    label: str | None = None
    sub_label: str | None = None
    description: str | None = None
    env: str | None = None
    num_threads: int = 1

    @property
    def title(self) -> str:
        """The label (or the statement), with the sub label."""
        sub = f": {self.sub_label}" if self.sub_label else ""
        if self.label is not None:
            return self.label + sub
        if "\n" not in self.stmt:
            return self.stmt + sub
        sub = f" ({self.sub_label})" if self.sub_label else ""
        return f"stmt:{sub}\n{textwrap.indent(self.stmt, '  ')}"

    def setup_str(self) -> str:
        if self.setup == "pass" or not self.setup:
            return ""
        if "\n" in self.setup:
            return f"setup:\n{textwrap.indent(self.setup, '  ')}"
        return f"setup: {self.setup}"

    def summarize(self) -> str:
        """The lines a Measurement's repr starts with."""
        sections = [self.title, self.description or "", self.setup_str()]
        return "\n".join(f"{s}\n" if "\n" in s else s for s in sections if s)


_TASKSPEC_FIELDS = tuple(f.name for f in dataclasses.fields(TaskSpec))


@dataclasses.dataclass(init=True, repr=False)
class Measurement:
    """The times of ``number_per_run`` runs each (``raw_times``) of one TaskSpec, with their
    statistics (median, mean, IQR) and reliability warnings. The TaskSpec's fields read as
    the Measurement's own (``m.label``, ``m.num_threads``)."""

    number_per_run: int
    raw_times: list
    task_spec: TaskSpec
    metadata: dict | None = None

    def __post_init__(self) -> None:
        self._sorted_times: tuple = ()
        self._warnings: tuple = ()
        self._median = self._mean = self._p25 = self._p75 = -1.0

    def __getattr__(self, name):
        if name in _TASKSPEC_FIELDS:
            return getattr(self.task_spec, name)
        return super().__getattribute__(name)

    @property
    def times(self) -> list:
        """The time of one run, per measurement."""
        return [t / self.number_per_run for t in self.raw_times]

    @property
    def median(self) -> float:
        self._lazy_init()
        return self._median

    @property
    def mean(self) -> float:
        self._lazy_init()
        return self._mean

    @property
    def iqr(self) -> float:
        self._lazy_init()
        return self._p75 - self._p25

    @property
    def significant_figures(self) -> int:
        """Digits of the median the spread supports: from a 90% confidence interval of the
        interquartile points' mean, at least 1 and at most 4."""
        self._lazy_init()
        n_total = len(self._sorted_times)
        middle = self._sorted_times[n_total // 4:int(np.ceil(_f32(3 * n_total / 4)))]
        std = float(np.std(np.asarray(middle, dtype=np.float32)))
        sqrt_n = float(np.sqrt(_f32(len(middle))))
        confidence_interval = max(1.645 * std / sqrt_n, _MIN_CONFIDENCE_INTERVAL)
        relative_ci = _log10_f32(self._median / confidence_interval)
        return min(max(int(np.floor(_f32(relative_ci))), 1), _MAX_SIGNIFICANT_FIGURES)

    @property
    def has_warnings(self) -> bool:
        self._lazy_init()
        return bool(self._warnings)

    def _lazy_init(self) -> None:
        if self.raw_times and not self._sorted_times:
            self._sorted_times = tuple(sorted(self.times))
            times = np.asarray(self._sorted_times, dtype=np.float64)
            self._median = float(np.quantile(times, 0.5))
            self._mean = float(times.mean())
            self._p25 = float(np.quantile(times, 0.25))
            self._p75 = float(np.quantile(times, 0.75))
            if not self.meets_confidence(_IQR_GROSS_WARN_THRESHOLD):
                self._add_warning("This suggests significant environmental influence.")
            elif not self.meets_confidence(_IQR_WARN_THRESHOLD):
                self._add_warning("This could indicate system fluctuation.")

    def _add_warning(self, msg):
        rel_iqr = self.iqr / self.median * 100
        self._warnings += (f"  WARNING: Interquartile range is {rel_iqr:.1f}% of the median "
                           f"measurement.\n           {msg}",)

    def meets_confidence(self, threshold: float = _IQR_WARN_THRESHOLD) -> bool:
        """Whether IQR / median is below ``threshold``."""
        return self.iqr / self.median < threshold

    @property
    def title(self) -> str:
        return self.task_spec.title

    @property
    def as_row_name(self) -> str:
        return self.sub_label or self.stmt or "[Unknown]"

    def __repr__(self) -> str:
        self._lazy_init()
        n = len(self._sorted_times)
        unit, scale = select_unit(self._median)
        lines = [super().__repr__(), self.task_spec.summarize(),
                 f"  {'Median: ' if n > 1 else ''}{self._median / scale:.2f} {unit}"]
        if n >= 4:
            lines.append(f"  IQR:    {self.iqr / scale:.2f} {unit} ({self._p25 / scale:.2f} "
                         f"to {self._p75 / scale:.2f})")
        lines.append(f"  {n} measurement{'s' if n > 1 else ''}, {self.number_per_run} runs "
                     f"{'per measurement,' if n > 1 else ','} {self.num_threads} "
                     f"thread{'s' if self.num_threads > 1 else ''}")
        return ("\n".join(lines) + "\n" + "\n".join(self._warnings)).strip()

    @staticmethod
    def merge(measurements):
        """One Measurement per TaskSpec, pooling the times of those given (their run counts
        may differ)."""
        grouped = collections.defaultdict(list)
        for m in measurements:
            grouped[m.task_spec].append(m)
        return [Measurement(number_per_run=1, raw_times=[t for m in group for t in m.times],
                            task_spec=task_spec, metadata=None)
                for task_spec, group in grouped.items()]


def select_unit(t: float):
    """The unit ("ns", "us", "ms" or "s") to show time ``t`` (seconds) in, and its scale."""
    unit = {-3: "ns", -2: "us", -1: "ms"}.get(int(_log10_f32(t) // 3), "s")
    return unit, {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1}[unit]


def unit_to_english(u: str) -> str:
    return {"ns": "nanosecond", "us": "microsecond", "ms": "millisecond", "s": "second"}[u]


def trim_sigfig(x: float, n: int) -> float:
    """``x`` rounded to ``n`` significant figures."""
    if n != int(n):
        raise AssertionError("Number of significant figures must be an integer")
    magnitude = math.ceil(_log10_f32(abs(x)))
    scale = 10 ** (magnitude - n)
    return float(_f32(np.round(_f32(x / scale)) * scale))


def ordered_unique(elements) -> list:
    """The distinct elements, in order of first appearance."""
    return list(dict.fromkeys(elements))


@contextlib.contextmanager
def set_torch_threads(n: int):
    """Run the body with ``n`` intra-op threads (ember's setting; NumPy's BLAS decides)."""
    prior = ember.get_num_threads()
    try:
        ember.set_num_threads(n)
        yield
    finally:
        ember.set_num_threads(prior)
