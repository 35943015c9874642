"""What a recorded graph leaves in the garbage collector's care, and W1/W4's Python work.

    python benchmarks/graph_objects.py             # objects per node, bytecodes and calls
    python benchmarks/graph_objects.py --no-counts # objects per node only (seconds)
    EMBER_SRC=/other/checkout/src python benchmarks/graph_objects.py

A graph is freed by reference counting, yet every object of it that the cyclic collector
tracks is walked by each collection that reaches its generation, and each tracked allocation
brings the next young collection nearer. This builds a chain of ``N`` ops (add, mul and sin in
turn on a (16,) float32 tensor that requires grad) with the collector off, and prints the
tracked objects (``gc.get_objects()``) it added per node, by type: ``at creation`` right after
the ops ran, ``after a collection`` once a ``gc.collect()`` has untracked what it can (tuples
holding only untracked values; a tuple in a tuple goes a collection after its content): what
the next collections of the older generations walk while the graph is alive. A count does
not depend on the machine's load.

``--counts`` (the default) adds Python bytecodes (``sys.settrace`` opcode events) and calls
(``sys.setprofile``) of one W1 step (300 ops and backward) and one W4 step (20,000), and the
collections CPython ran per W4 step (``gc.callbacks``) with the tracked objects they walked
(those of the generations collected, at each start), over ``--steps`` steps after two.
"""
from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import collections  # noqa: E402
import gc  # noqa: E402
import pathlib  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, os.environ.get("EMBER_SRC", str(HERE.parent / "src")))
sys.path.insert(0, str(HERE))

import ember  # noqa: E402
from _timing import counts  # noqa: E402
from workloads import WORKLOADS, make_data  # noqa: E402


def build_chain(x, n):
    """``n`` ops on ``x``: add, mul and sin in turn; the chain's last tensor."""
    h = x
    for i in range(n):
        k = i % 3
        h = h + x if k == 0 else h * x if k == 1 else ember.sin(h)
    return h


def tracked_by_type():
    return collections.Counter(type(o).__name__ for o in gc.get_objects())


def objects_per_node(n):
    """``(at creation, after a collection)``: Counters of tracked objects per type, per node."""
    x = ember.tensor(np.linspace(-1, 1, 16, dtype=np.float32), requires_grad=True)
    build_chain(x, 30)  # (first calls fill what the ops cache)
    was_enabled = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        before = tracked_by_type()
        h = build_chain(x, n)
        created = tracked_by_type()
        gc.collect()
        collected = tracked_by_type()
    finally:
        if was_enabled:
            gc.enable()
    del h
    created.subtract(before)
    collected.subtract(before)
    return created, collected


def collections_per_step(step, steps):
    """``{generation: (collections, objects walked, CPU seconds)}`` per call of ``step``,
    averaged, and the CPU seconds of a step (the collections' included)."""
    seen = collections.defaultdict(lambda: [0, 0, 0.0])
    started = [0.0, 0.0]  # (this collection's start, the counting's own time so far)

    def callback(phase, info):
        g = info["generation"]
        if phase == "start":
            t0 = time.process_time()
            seen[g][0] += 1
            seen[g][1] += sum(len(gc.get_objects(generation=k)) for k in range(g + 1))
            started[0] = time.process_time()
            started[1] += started[0] - t0
        else:
            seen[g][2] += time.process_time() - started[0]
    step()
    step()  # (the thresholds ember sets after a deep pass are in place from here)
    gc.callbacks.append(callback)
    try:
        t0 = time.process_time()
        for _ in range(steps):
            step()
        total = time.process_time() - t0 - started[1]
    finally:
        gc.callbacks.remove(callback)
    return ({g: (c / steps, w / steps, s / steps) for g, (c, w, s) in sorted(seen.items())},
            total / steps)


def show(label, counter, n):
    total = sum(counter.values()) / n
    top = sorted(((v / n, k) for k, v in counter.items() if v / n >= 0.05), reverse=True)
    print(f"{label}: {total:.2f} per node (" + ", ".join(f"{k} {v:.2f}" for v, k in top) + ")")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=3000)
    parser.add_argument("--no-counts", action="store_true")
    parser.add_argument("--steps", type=int, default=8, help="W4 steps watched (default 8)")
    args = parser.parse_args(argv)
    print(f"ember from {os.path.dirname(os.path.dirname(ember.__file__))}, "
          f"Python {sys.version.split()[0]}")
    created, collected = objects_per_node(args.nodes)
    print(f"tracked objects, chain of {args.nodes} add/mul/sin ops on a (16,) tensor:")
    show("  at creation", created, args.nodes)
    show("  after a collection", collected, args.nodes)
    if args.no_counts:
        return
    for name in ("w1", "w4"):
        step = WORKLOADS[name][3](ember, make_data(name))
        ops, calls = counts(step)
        print(f"{name} step: {ops} bytecodes, {calls} calls")
    seen, step_s = collections_per_step(WORKLOADS["w4"][3](ember, make_data("w4")), args.steps)
    print(f"w4 collections per step (of {args.steps}; thresholds {gc.get_threshold()}):")
    for g, (c, w, s) in seen.items():
        print(f"  generation {g}: {c:.2f} walking {w:,.0f} objects, {s * 1e3:.1f} ms CPU time")
    print(f"  in all {sum(s for _, _, s in seen.values()) * 1e3:.1f} ms of a {step_s * 1e3:.0f} ms"
          " step (CPU time, less the counting of walked objects)")


if __name__ == "__main__":
    main()
