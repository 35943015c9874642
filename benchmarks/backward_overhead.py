"""The backward engine's fixed cost: one ``loss.backward()`` of a tiny MLP step.

    python benchmarks/backward_overhead.py                 # ember and torch, CPU time
    python benchmarks/backward_overhead.py --counts        # with bytecodes and calls
    EMBER_SRC=/other/checkout/src python benchmarks/backward_overhead.py --no-torch

The step: ``x`` (2, 4) float32, ``relu(x @ W1 + b1) @ W2 + b2``, ``cross_entropy`` against
two labels; four leaf parameters. Its kernels are tiny, so ``backward()`` is mostly the
engine's own work: argument handling, the implicit ones gradient, planning the pass, the
per-node loop and the four leaves' ``AccumulateGrad``. ``eager`` backpropagates through the
op-by-op graph (eight nodes); ``compiled`` through ``ember.compile``'s one node
(``CompiledFunctionBackward``) and the four leaves, so all but that node's replayed kernels is
the engine's fixed cost. Only the ``backward()`` call is timed (CPU time, medians of
interleaved rounds); the forward that builds each graph runs outside the clock.
``--counts`` adds what the load does not change: Python bytecodes (``sys.settrace`` opcode
events) and Python function calls (``sys.setprofile``) per ``backward()``.
"""
from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import gc  # noqa: E402
import pathlib  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, os.environ.get("EMBER_SRC", str(HERE.parent / "src")))
sys.path.insert(0, str(HERE))

import ember  # noqa: E402
from _timing import counts, peers  # noqa: E402


def make_step(lib, compiled):
    """``forward()`` -> a loss whose ``backward()`` is what is measured."""
    rng = np.random.default_rng(0)
    x = lib.tensor(rng.standard_normal((2, 4)).astype(np.float32))
    y = lib.tensor(np.array([0, 2]))
    W1 = lib.tensor(rng.standard_normal((4, 8)).astype(np.float32), requires_grad=True)
    b1 = lib.tensor(np.zeros(8, np.float32), requires_grad=True)
    W2 = lib.tensor(rng.standard_normal((8, 3)).astype(np.float32), requires_grad=True)
    b2 = lib.tensor(np.zeros(3, np.float32), requires_grad=True)
    params = (W1, b1, W2, b2)

    def loss_of(x, y):
        h = lib.relu(x @ W1 + b1)
        return lib.nn.functional.cross_entropy(h @ W2 + b2, y)

    if compiled:
        loss_of = lib.compile(loss_of)

    def forward():
        for p in params:
            p.grad = None
        return loss_of(x, y)
    return forward


def backward_time(forward, calls):
    """CPU seconds of ``calls`` backward() calls (each on a fresh graph)."""
    total = 0.0
    clock = time.process_time
    for _ in range(calls):
        loss = forward()
        t0 = clock()
        loss.backward()
        total += clock() - t0
    return total / calls


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--calls", type=int, default=300, help="backward() calls per round")
    parser.add_argument("--counts", action="store_true")
    parser.add_argument("--no-torch", action="store_true")
    args = parser.parse_args(argv)
    libs = peers(ember, args.no_torch)
    cases = {}
    for name, lib in libs.items():
        cases[name, "eager"] = make_step(lib, False)
        if name == "ember":  # (torch.compile's graph is not one node: not the same question)
            cases[name, "compiled"] = make_step(lib, True)
    for forward in cases.values():
        for _ in range(3):
            forward().backward()
    gc.collect()
    gc.freeze()
    samples = {key: [] for key in cases}
    keys = list(cases)
    for r in range(args.rounds):
        for key in keys[r % len(keys):] + keys[:r % len(keys)]:
            samples[key].append(backward_time(cases[key], args.calls))
    print(f"loss.backward() of a tiny MLP step, CPU time, medians of {args.rounds} interleaved "
          f"rounds; ember from {os.path.dirname(os.path.dirname(ember.__file__))}")
    print("| library | graph | µs" + (" | bytecodes | calls" if args.counts else "") + " |")
    print("|---|---|---" + ("|---|---" if args.counts else "") + "|")
    for (name, graph), s in samples.items():
        row = [name, graph, f"{statistics.median(s) * 1e6:.1f}"]
        if args.counts and name == "ember":
            row += [str(c) for c in counts(lambda loss: loss.backward(),
                                           prepare=cases[name, graph])]
        elif args.counts:
            row += ["", ""]
        print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
