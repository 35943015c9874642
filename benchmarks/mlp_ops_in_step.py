"""W2's eager step (the MLP training step) line by line, each line timed inside whole steps,
beside the hand-written NumPy step's lines that compute the same.

    python benchmarks/mlp_ops_in_step.py            # CPU µs per line, medians over steps
    python benchmarks/mlp_ops_in_step.py --steps 4000

The step is benchmarks/workloads.py's ``mlp`` written out (``x @ W0``, ``+ b0``, ``relu``,
``@ W1``, ``+ b1``, ``cross_entropy``, ``backward()``, the gradient's copy, the update under
``no_grad``, ``.item()``), with a clock read around each line; ember's forward lines run a
second time with the parameters not requiring grad (in their own step), which tells a
line's recording (node, edges, saved values) from its wrapper and kernel. The NumPy floor
(workloads.numpy_mlp) is cut at the same places. The three steps take turns, so each line
runs where it runs in a step: after the large matrix product, whose operands push the rest
of the step's code and data out of the caches (a NumPy call that takes 1 µs alone takes
3-4 µs there). Each line's figure is its median over steps; the medians do not add up to a
step exactly. Below the table, the Python bytecodes each phase of ember's step executes
(``sys.settrace``), which the machine's load does not change.
"""
from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse
import pathlib
import statistics
import sys
import time

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, os.environ.get("EMBER_SRC", str(HERE.parent / "src")))
sys.path.insert(0, str(HERE))

import numpy as np  # noqa: E402
from workloads import LR, make_data  # noqa: E402

import ember  # noqa: E402

LINES = ("x @ W0", "+ b0", "relu", "@ W1", "+ b1", "cross_entropy", "backward()",
         "copy of W0's gradient", "SGD update", "loss.item()")
FORWARD = 6  # the forward's lines (the no-grad step stops there)


def ember_step(data, grad=True):
    """W2's eager step with a clock read between lines, appending each line's ns to ``T``."""
    F = ember.nn.functional
    x, y = ember.tensor(data["x"]), ember.tensor(data["y"])
    W0, W1 = (ember.tensor(w, requires_grad=grad) for w in data["Ws"])
    b0, b1 = (ember.tensor(b, requires_grad=grad) for b in data["bs"])
    params = [W0, W1, b0, b1]
    clock = time.process_time_ns

    def step(T):
        t = [clock()]
        h = x @ W0
        t.append(clock())
        h = h + b0
        t.append(clock())
        h = h.relu()
        t.append(clock())
        h = h @ W1
        t.append(clock())
        h = h + b1
        t.append(clock())
        loss = F.cross_entropy(h, y)
        t.append(clock())
        if grad:
            loss.backward()
            t.append(clock())
            W0.grad.numpy().copy()
            t.append(clock())
            with ember.no_grad():
                for p in params:
                    p -= LR * p.grad
                    p.grad = None
            t.append(clock())
            loss.item()
            t.append(clock())
        for k in range(len(t) - 1):
            T[k].append(t[k + 1] - t[k])
    return step


def numpy_step(data):
    """workloads.numpy_mlp's step with a clock read at the same places."""
    x, y = data["x"], data["y"]
    rows = np.arange(len(y))
    W0, W1 = (w.copy() for w in data["Ws"])
    b0, b1 = (b.copy() for b in data["bs"])
    clock = time.process_time_ns

    def step(T):
        t = [clock()]
        a = x @ W0
        t.append(clock())
        a = a + b0
        t.append(clock())
        a = np.maximum(a, 0)
        t.append(clock())
        h = a @ W1
        t.append(clock())
        h = h + b1
        t.append(clock())
        shifted = h - h.max(1, keepdims=True)
        logp = shifted - np.log(np.exp(shifted).sum(1, keepdims=True))
        loss = -logp[rows, y].mean()
        t.append(clock())
        g = np.exp(logp)
        g[rows, y] -= 1
        g /= len(y)
        gW1, gb1 = a.T @ g, g.sum(0)
        g = (g @ W1.T) * (a > 0)
        gW0, gb0 = x.T @ g, g.sum(0)
        t.append(clock())
        gW0.copy()
        t.append(clock())
        for p, gp in ((W0, gW0), (b0, gb0), (W1, gW1), (b1, gb1)):
            p -= LR * gp
        t.append(clock())
        float(loss)
        t.append(clock())
        for k in range(len(t) - 1):
            T[k].append(t[k + 1] - t[k])
    return step


def bytecodes_per_phase(data):
    """Python bytecodes per phase of one ember step (forward, backward, update)."""
    step = ember_step(data)
    for _ in range(3):
        step([[] for _ in LINES])
    counts = {"forward": 0, "backward()": 0, "update": 0}
    phase = ["forward"]

    def tracer(frame, event, arg):
        frame.f_trace_opcodes = True

        def local(frame, event, arg):
            if event == "opcode":
                counts[phase[0]] = counts.get(phase[0], 0) + 1
            return local
        return local
    # (the phases told apart by the clock reads the step makes between its lines)
    reads = [0]
    real_clock = time.process_time_ns

    def clock():
        reads[0] += 1
        phase[0] = ("forward" if reads[0] <= FORWARD else "backward()" if reads[0] == 7
                    else "other" if reads[0] in (8, 10, 11) else "update")
        return real_clock()
    time.process_time_ns = clock
    try:
        step = ember_step(data)
        sys.settrace(tracer)
        step([[] for _ in LINES])
    finally:
        sys.settrace(None)
        time.process_time_ns = real_clock
    counts.pop("other", None)
    return counts


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=2000)
    args = parser.parse_args(argv)
    data = make_data("w2")
    peers = {"ember": ember_step(data), "ember, no grad": ember_step(data, grad=False),
             "NumPy floor": numpy_step(data)}
    times = {name: [[] for _ in LINES] for name in peers}
    for _ in range(20):  # (warm-up, not kept)
        for step in peers.values():
            step([[] for _ in LINES])
    for _ in range(args.steps):
        for name, step in peers.items():
            step(times[name])
    print(f"W2 eager step, CPU µs per line inside whole steps (medians of {args.steps} steps); "
          f"ember from {os.path.dirname(os.path.dirname(ember.__file__))}")
    print("| line | " + " | ".join(peers) + " |")
    print("|---|" + "---|" * len(peers))
    for k, line in enumerate(LINES):
        cells = [f"{statistics.median(times[n][k]) / 1e3:.1f}" if times[n][k] else ""
                 for n in peers]
        print(f"| {line} | " + " | ".join(cells) + " |")
    counts = bytecodes_per_phase(data)
    print("\nPython bytecodes per step: " + ", ".join(f"{k} {v}" for k, v in counts.items()))


if __name__ == "__main__":
    main()
