"""ember.utils.benchmark against torch.utils.benchmark: Measurement reprs and statistics,
Compare's tables, units, Timer's protocol, and the Fuzzer's draws (times themselves differ
from run to run, so the printed forms are compared on measurements built from fixed times)."""
from __future__ import annotations

import re

import numpy as np
import pytest

import ember
import ember.utils.benchmark as eb
from tests.oracle import same


def _tb():
    torch = pytest.importorskip("torch")
    import torch.utils.benchmark as tb
    return torch, tb


def _bench(lib):
    import importlib
    return importlib.import_module(f"{lib.__name__}.utils.benchmark")


def _strip_address(text):
    return re.sub(r"<(torch|ember)(\.utils\.benchmark\.utils\.common\.Measurement) object at "
                  r"0x[0-9a-f]+>", r"<ember\2 object>", text)


_RNG = np.random.default_rng(11)
TIMES = {
    "one": [2.5e-4],
    "three": [1.2e-6, 1.1e-6, 1.3e-6],
    "steady": list(3e-5 * (1 + 0.01 * _RNG.standard_normal(30))),
    "noisy": list(7e-3 * (1 + 0.3 * _RNG.standard_normal(12)).clip(0.2)),
    "wild": list(1.5 * np.exp(_RNG.standard_normal(9))),
}
SPECS = {
    "plain": dict(stmt="x + y", setup="pass"),
    "labelled": dict(stmt="x + y", setup="x = make(3)\ny = x", label="add",
                     sub_label="small", description="ember", num_threads=4),
    "multiline": dict(stmt="a = 1\nb = a + 1", setup="import math", sub_label="s"),
}


def _measurement(lib, spec, times, number=100):
    b = _bench(lib)
    return b.Measurement(number_per_run=number, raw_times=[t * number for t in times],
                         task_spec=b.TaskSpec(**SPECS[spec]))


@pytest.mark.parametrize("spec", list(SPECS))
@pytest.mark.parametrize("times", list(TIMES))
def test_measurement_repr_and_statistics(spec, times):
    def body(lib):
        m = _measurement(lib, spec, TIMES[times])
        return (_strip_address(repr(m)), m.median, m.mean, m.iqr, m.significant_figures,
                m.has_warnings, m.meets_confidence(0.05), m.title, m.as_row_name, m.times,
                m.label, m.env, m.num_threads)
    same(body, rtol=1e-12, atol=0)


def test_units():
    def body(lib):
        b = _bench(lib)
        values = [3e-10, 1e-9, 4.2e-8, 1e-6, 999e-9, 5e-4, 1e-3, 0.25, 1.0, 12.5, 1234.5]
        return ([b.select_unit(v) for v in values],
                [b.unit_to_english(u) for u in ("ns", "us", "ms", "s")],
                [b.trim_sigfig(v, n) for v in (123.456, 0.0123456, 98765.4321, 1.5)
                 for n in (1, 2, 4)],
                b.ordered_unique([3, 1, 3, 2, 1]))
    same(body)


def _compare_results(lib):
    b = _bench(lib)
    out = []
    for label, stmt, scale in (("add", "x + y", 1e-6), ("mm", "a @ b", 3e-4)):
        for desc, factor in (("float32", 1.0), ("float64", 1.7)):
            for sub, threads, k in (("small", 1, 1.0), ("big", 1, 40.0), ("small", 4, 0.6)):
                rng = np.random.default_rng(len(out))
                times = list(scale * factor * k * (1 + 0.02 * rng.standard_normal(8)))
                if sub == "big" and desc == "float64":
                    times = list(scale * k * (1 + 0.4 * np.abs(rng.standard_normal(8))))
                spec = b.TaskSpec(stmt=stmt, setup="pass", label=label, sub_label=sub,
                                  description=desc, num_threads=threads,
                                  env=("env2" if label == "mm" and k == 40.0 else
                                       "env1" if label == "mm" else None))
                out.append(b.Measurement(10, [t * 10 for t in times], spec))
    return out


@pytest.mark.parametrize("options", [(), ("trim_significant_figures",), ("colorize",),
                                     ("colorize_rowwise",), ("highlight_warnings",),
                                     ("trim_significant_figures", "colorize",
                                      "highlight_warnings")])
def test_compare_table(options):
    def body(lib):
        compare = _bench(lib).Compare(_compare_results(lib))
        for option in options:
            if option == "colorize_rowwise":
                compare.colorize(rowwise=True)
            else:
                getattr(compare, option)()
        return str(compare)
    same(body)


def test_compare_refuses_other_objects():
    same(lambda lib: _bench(lib).Compare([1.0]))


def test_merge_pools_times():
    def body(lib):
        b = _bench(lib)
        spec = b.TaskSpec(stmt="x", setup="pass")
        merged = b.Measurement.merge([b.Measurement(10, [1.0, 2.0], spec),
                                      b.Measurement(5, [1.0], spec)])
        return [(m.number_per_run, m.raw_times, m.median) for m in merged]
    same(body)


def test_timer_protocol():
    """A Timer runs its statement with its setup and globals (``torch`` is ember), and
    reports what it ran; the measured values themselves are not compared."""
    calls = []
    t = eb.Timer("f(x)", setup="x = torch.ones(2) * 3", globals={"f": calls.append},
                 label="L", sub_label="S", description="D", num_threads=2)
    m = t.timeit(number=7)
    assert isinstance(m, eb.Measurement) and m.number_per_run == 7 and len(m.raw_times) == 1
    assert len(calls) == 7 + 2  # the timed runs and a warmup of max(7 // 100, 2)
    assert isinstance(calls[0], ember.Tensor) and calls[0].tolist() == [3.0, 3.0]
    assert (m.label, m.sub_label, m.description, m.num_threads) == ("L", "S", "D", 2)
    assert m.median > 0 and "2 threads" in repr(m)
    b = t.blocked_autorange(min_run_time=0.01)
    assert sum(b.raw_times) >= 0.01 and b.number_per_run >= 1
    seen = []
    a = t.adaptive_autorange(threshold=0.5, min_run_time=0.005, max_run_time=0.5,
                             callback=lambda n, s: seen.append((n, s)))
    assert len(seen) == len(a.raw_times) >= 1 and all(n == a.number_per_run for n, _ in seen)


def test_timer_arguments():
    def body(lib):
        b = _bench(lib)
        t = b.Timer("""
            y = x + 1
            z = y * 2
        """, setup="\n    x = 1\n", label="lbl")
        spec = t.timeit(10).task_spec
        errors = []
        for bad in (lambda: b.Timer(stmt=len), lambda: b.Timer(global_setup="int x;"),
                    lambda: b.Timer(language="fortran"), lambda: t.repeat(),
                    lambda: t.autorange()):
            try:
                bad()
            except Exception as e:  # noqa: BLE001 - the type and message are compared
                errors.append((type(e).__name__, str(e)))
        return spec.stmt, spec.setup, spec.title, errors
    same(body)


def _fuzzer(lib):
    b = _bench(lib)
    return b.Fuzzer(
        parameters=[b.FuzzedParameter("k0", 4, 64, distribution="loguniform"),
                    b.FuzzedParameter("k1", 1, 8, distribution="uniform"),
                    b.FuzzedParameter("step", distribution={1: 0.3, 2: 0.7 + 1e-3}),
                    b.FuzzedParameter("scale", 0.5, 2.0, distribution="uniform"),
                    [b.FuzzedParameter("d", 2, 3, distribution="uniform", strict=True)]],
        tensors=[b.FuzzedTensor("x", size=("k0", "k1", 3), steps=("step", 1, 1),
                                dim_parameter="d", max_elements=300,
                                probability_contiguous=0.4),
                 b.FuzzedTensor("y", size=("k1",), dtype=lib.int64)],
        constraints=[lambda p: p["k0"] != 5], seed=123)


def test_fuzzer_draws_as_torch():
    """The same seed gives the same parameters, shapes, strides and layouts (the tensors'
    values come from each library's own generator)."""
    def body(lib):
        fuzzer = _fuzzer(lib)
        out = []
        for tensors, props, params in fuzzer.take(6):
            out.append((params, {k: (tuple(t.shape), t.stride(), t.dtype,
                                     props[k]["is_contiguous"], props[k]["numel"],
                                     list(props[k]["order"]), props[k]["steps"],
                                     props[k]["dtype"])
                                 for k, t in tensors.items()}))
        return out, fuzzer.rejection_rate
    same(body)


def test_fuzzer_errors():
    def body(lib):
        b = _bench(lib)
        errors = []
        for bad in (lambda: b.FuzzedParameter("p", distribution="normal"),
                    lambda: b.FuzzedParameter("p", distribution={1: -0.5, 2: 1.5}),
                    lambda: b.FuzzedParameter("p", 0, 1, distribution={1: 0.5, 2: 0.5}),
                    lambda: b.Fuzzer([b.FuzzedParameter("x", 1, 2, "uniform")],
                                     [b.FuzzedTensor("x", size=(2,))]),
                    lambda: next(b.Fuzzer([b.FuzzedParameter("n", 1, 2, "uniform")], [],
                                          constraints=[lambda p: False]).take(1)),
                    lambda: next(b.Fuzzer([b.FuzzedParameter("n", 1, 2, "uniform")],
                                          [], seed=1).take(1))
                    and b.Fuzzer._resolve_aliases({"a": b.ParameterAlias("b"),
                                                   "b": b.ParameterAlias("a")})):
            try:
                bad()
            except Exception as e:  # noqa: BLE001
                errors.append((type(e).__name__, str(e)))
        return errors, repr(b.ParameterAlias("n"))
    same(body)
