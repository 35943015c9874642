"""Overhead of the profiler: off (one global read per op) versus on, with each option.

    PYTHONPATH=src python benchmarks/bench_profiler.py [--repeat 7] [--steps 200]

Prints a table: time per training step (forward + backward of a small MLP) and per op, and
the slowdown against the profiler being off. The cost of "off" itself is the dispatcher's
``hook = profiler_hook[0]; if hook is not None`` check, timed alone in the last line.
"""
from __future__ import annotations

import argparse
import statistics
import time
import timeit

import ember
from ember._state import profiler_hook
from ember.autograd import profiler


def make_step(size):
    """A forward+backward step of a 2-layer MLP on ``size``-wide tensors."""
    if hasattr(ember, "manual_seed"):
        ember.manual_seed(0)
    x = ember.randn(8, size)
    w1 = ember.randn(size, size, requires_grad=True)
    w2 = ember.randn(size, 1, requires_grad=True)

    def step():
        h = ember.mm(x, w1).relu()
        loss = (ember.mm(h, w2) ** 2).mean()
        loss.backward()
        w1.grad = None
        w2.grad = None
    return step


def count_ops(step):
    """Ops and backward nodes one step records."""
    with profiler.profile() as prof:
        step()
    return len([e for e in prof.function_events if e.scope == 1 or e.name.startswith("aten::")])


def time_steps(step, steps, repeat, **options):
    """Best-of-``repeat`` median seconds per step, the profiler set up as ``options`` say."""
    runs = []
    for _ in range(repeat):
        if options.get("enabled", True) is False:
            t0 = time.perf_counter()
            for _ in range(steps):
                step()
            runs.append((time.perf_counter() - t0) / steps)
            continue
        with profiler.profile(**options):
            t0 = time.perf_counter()
            for _ in range(steps):
                step()
            runs.append((time.perf_counter() - t0) / steps)
    return statistics.median(runs)


CONFIGS = [
    ("off", {"enabled": False}),
    ("on", {}),
    ("on + record_shapes", {"record_shapes": True}),
    ("on + profile_memory", {"profile_memory": True}),
    ("on + with_stack", {"with_stack": True}),
]


def hook_check_ns():
    """Nanoseconds of the dispatcher's check when the profiler is off."""
    n = 2_000_000
    t = timeit.timeit("hook = profiler_hook[0]\nif hook is not None: pass",
                      globals={"profiler_hook": profiler_hook}, number=n)
    return t / n * 1e9


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--steps", type=int, default=200)
    args = parser.parse_args()
    print(f"{'size':>5}  {'profiler':<22}{'us/step':>10}{'us/op':>9}{'vs off':>9}")
    for size in (4, 256):
        step = make_step(size)
        for _ in range(20):  # warm up caches and lazy imports
            step()
        n_ops = count_ops(step)
        base = None
        for name, options in CONFIGS:
            t = time_steps(step, args.steps, args.repeat, **options)
            base = t if base is None else base
            print(f"{size:>5}  {name:<22}{t * 1e6:>10.1f}{t * 1e6 / n_ops:>9.2f}"
                  f"{t / base:>8.2f}x")
    ns = hook_check_ns()
    print(f"\nprofiler off: the per-op check costs {ns:.1f} ns "
          f"({n_ops} ops/step -> {ns * n_ops / 1000:.2f} us/step)")


if __name__ == "__main__":
    main()
