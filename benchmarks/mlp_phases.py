"""Where W2's time goes (the MLP training step), phase by phase, in torch, ember and
ember.compile, beside each matrix product of the step timed alone in NumPy and in torch.

    python benchmarks/mlp_phases.py                # CPU time per phase, medians of rounds
    python benchmarks/mlp_phases.py --rounds 15 --no-torch
    python benchmarks/mlp_phases.py --counts       # bytecodes and calls per phase (no clock)

The step is benchmarks/workloads.py's ``mlp``, cut into phases that a clock reads around:
the loss (the forward call; for ember.compile, the compiled call: guards, the replayed
forward program, the backward node), ``backward()`` (the engine's pass; compiled, the one
node's backward program inside it), the copy of the first weight's gradient, the SGD update
(``p -= LR * p.grad; p.grad = None`` under ``no_grad``, four parameters) and ``loss.item()``.
The peers take turns step by step (interleaved rounds), and each phase's time is the median
over rounds of its mean per step, so a phase is timed inside whole steps (its operands in
the caches the rest of the step leaves, not warm as when timed alone). A clock read costs
about half a microsecond, charged to the phases around it.

Below the table, the step's five matrix products timed alone (best of a few repeats): what
the BLAS each library calls costs at these shapes, which no replay changes.
"""
from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse
import gc
import pathlib
import statistics
import sys
import time
import timeit

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, os.environ.get("EMBER_SRC", str(HERE.parent / "src")))
sys.path.insert(0, str(HERE))

import numpy as np
from _timing import counts, peers
from workloads import LR, make_data, mlp_model, numpy_mlp

import ember

PHASES = ("loss (forward call)", "backward()", "copy of W0's gradient", "SGD update",
          "loss.item()")


def phased_step(lib, data, compiled, spent):
    """W2's step (workloads.mlp) with a clock read between phases, adding each phase's CPU
    time into ``spent``."""
    x, y, Ws, bs, loss_of = mlp_model(lib, data, compiled)
    clock = time.process_time_ns

    def step():
        t0 = clock()
        loss = loss_of(x, y)
        t1 = clock()
        loss.backward()
        t2 = clock()
        grad = Ws[0].grad.numpy().copy()
        t3 = clock()
        with lib.no_grad():
            for p in Ws + bs:
                p -= LR * p.grad
                p.grad = None
        t4 = clock()
        value = loss.item()
        t5 = clock()
        for k, (a, b) in enumerate(((t0, t1), (t1, t2), (t2, t3), (t3, t4), (t4, t5))):
            spent[k] += b - a
        return value, grad
    return step


def phase_counts(lib, data, compiled):
    """Python bytecodes and calls (Python and C functions) of each phase of one step, the
    other phases run untraced around it (what the machine's load does not change)."""
    x, y, Ws, bs, loss_of = mlp_model(lib, data, compiled)
    held = {}

    def update():
        with lib.no_grad():
            for p in Ws + bs:
                p -= LR * p.grad
                p.grad = None
    phases = [lambda: held.update(loss=loss_of(x, y)), lambda: held["loss"].backward(),
              lambda: held.update(grad=Ws[0].grad.numpy().copy()), update,
              lambda: held["loss"].item()]
    for _ in range(2):  # (untraced steps first: a step's first call records)
        for phase in phases:
            phase()
    found = []
    for k in range(len(phases)):
        # phase k counted alone, from just after it ran: the rest of that step and the start
        # of the next run untraced before it
        for phase in phases[:k + 1]:
            phase()
        found.append(counts(lambda _, k=k: phases[k](),
                            lambda k=k: [phase() for phase in phases[k + 1:] + phases[:k]]))
        for phase in phases[k + 1:]:
            phase()
    return found


def print_counts(data):
    """Bytecodes and calls per phase: ember.compile's step and ember's eager one, beside the
    NumPy floor's whole step."""
    rows = {"ember.compile": phase_counts(ember, data, True),
            "ember": phase_counts(ember, data, False)}
    print("W2 step, Python bytecodes / calls (Python and C functions) per phase")
    print("| phase | " + " | ".join(rows) + " |")
    print("|---|" + "---|" * len(rows))
    for k, phase in enumerate(PHASES):
        print(f"| {phase} | " + " | ".join(f"{r[k][0]:,} / {r[k][1]}" for r in rows.values())
              + " |")
    print("| the step | " + " | ".join(f"{sum(o for o, _ in r):,} / {sum(c for _, c in r)}"
                                      for r in rows.values()) + " |")
    floor = counts(numpy_mlp(data))
    print(f"\nthe NumPy floor's whole step: {floor[0]:,} / {floor[1]}")


def phase_times(steps, rounds, per_round):
    """``{name: [µs per phase]}``: medians over rounds of each phase's mean per step."""
    samples = {name: [] for name in steps}
    names = list(steps)
    for r in range(rounds):
        for name in names[r % len(names):] + names[:r % len(names)]:
            step, spent = steps[name]
            spent[:] = [0] * len(PHASES)
            for _ in range(per_round):
                step()
            samples[name].append([t / per_round / 1e3 for t in spent])
    return {name: [statistics.median(s[k] for s in got) for k in range(len(PHASES))]
            for name, got in samples.items()}


def products(data):
    """The step's matrix products as ``{label: (a, b)}`` (NumPy arrays, as the step has them)."""
    x, (W0, W1) = data["x"], data["Ws"]
    h = np.maximum(x @ W0, 0)
    g = np.ones((len(x), W1.shape[1]), np.float32) / len(x)
    g1 = np.ones_like(h) / len(x)
    return {"x @ W0 (64x784 @ 784x256)": (x, W0), "h @ W1 (64x256 @ 256x10)": (h, W1),
            "h.T @ g (W1's gradient)": (h.T, g), "g @ W1.T (h's gradient)": (g, W1.T),
            "x.T @ g1 (W0's gradient)": (x.T, g1)}


def products_alone(libs, data, repeat=200):
    """``{label: {library: µs}}``: each product alone, best of five blocks of ``repeat``."""
    out = {}
    for label, (a, b) in products(data).items():
        row = {"numpy": (lambda a=a, b=b: a @ b)}
        if "torch" in libs:  # (the same memory, transposed operands as strides)
            ta, tb = libs["torch"].from_numpy(a), libs["torch"].from_numpy(b)
            row["torch"] = lambda ta=ta, tb=tb: ta @ tb
        out[label] = {k: min(timeit.repeat(fn, number=repeat, repeat=5,
                                           timer=time.process_time)) / repeat * 1e6
                      for k, fn in row.items()}
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--steps", type=int, default=100, help="steps per round and peer")
    parser.add_argument("--no-torch", action="store_true")
    parser.add_argument("--counts", action="store_true",
                        help="count each phase's bytecodes and calls instead of timing it")
    args = parser.parse_args(argv)
    data = make_data("w2")
    if args.counts:
        print_counts(data)
        return
    libs = peers(ember, args.no_torch)
    steps = {}
    for name in ("torch", "ember"):
        if name in libs:
            spent = [0] * len(PHASES)
            steps[name] = (phased_step(libs[name], data, False, spent), spent)
    spent = [0] * len(PHASES)
    steps["ember.compile"] = (phased_step(ember, data, True, spent), spent)
    for step, _ in steps.values():
        step(), step()
    gc.collect()
    gc.freeze()  # (see hvp_phases.py: a full collection of the modules' objects mid-round)
    times = phase_times(steps, args.rounds, args.steps)
    print(f"W2 step, CPU µs per phase (medians of {args.rounds} interleaved rounds of "
          f"{args.steps} steps); ember from {os.path.dirname(os.path.dirname(ember.__file__))}")
    print("| phase | " + " | ".join(steps) + " |")
    print("|---|" + "---|" * len(steps))
    for k, phase in enumerate(PHASES):
        print(f"| {phase} | " + " | ".join(f"{times[n][k]:.1f}" for n in steps) + " |")
    print("| the step | " + " | ".join(f"{sum(times[n]):.1f}" for n in steps) + " |")
    print("\n| matrix product alone, µs | NumPy (its BLAS) | torch |\n|---|---|---|")
    for label, row in products_alone(libs, data).items():
        theirs = f"{row['torch']:.1f}" if "torch" in row else ""
        print(f"| {label} | {row['numpy']:.1f} | {theirs} |")


if __name__ == "__main__":
    main()
