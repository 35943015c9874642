"""Where W5's time goes (the Hessian-vector product by double backward), phase by phase.

    python benchmarks/hvp_phases.py                    # ember and torch, CPU time per phase
    python benchmarks/hvp_phases.py --rounds 25 --counts
    EMBER_SRC=/other/checkout/src python benchmarks/hvp_phases.py   # another ember

A step is four phases: the forward ``f = (tanh(W @ x) ** 2).sum()``, the create_graph pass
``g = grad(f, [x], create_graph=True)``, ``(g * v).sum()``, and the second pass with its
``.numpy()``. Each round times the step cut after each phase (the same step, stopped
earlier), each library once and the order rotating; a phase's time is the difference of the
medians of consecutive cuts. ``--counts`` adds what the load does not change: Python bytecodes
executed (``sys.settrace`` opcode events) and Python function calls (``sys.setprofile``) per
phase, ember only.

The objects alive before timing (both libraries' modules) are frozen out of the garbage
collector's generations (``gc.freeze()``): steps of two libraries taking turns leave the
collector's counts uneven, and a full collection walking torch's and ember's import-time
objects would otherwise land in whichever cut is running (one in a few hundred steps, some
milliseconds each), which makes the phase differences swing. ``--no-freeze`` keeps them.
"""
from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import gc  # noqa: E402
import pathlib  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, os.environ.get("EMBER_SRC", str(HERE.parent / "src")))
sys.path.insert(0, str(HERE))

import ember  # noqa: E402
from _timing import counts, interleaved, peers  # noqa: E402
from workloads import make_data  # noqa: E402

PHASES = ("forward", "create_graph pass", "(g * v).sum()", "second pass + numpy")


def cut_steps(lib, data):
    """``cut_steps(lib, data)[k]`` runs W5's step up to the end of phase ``k``."""
    x = lib.tensor(data["x"], requires_grad=True)
    W, v = lib.tensor(data["W"]), lib.tensor(data["v"])

    def up_to(k):
        f = (lib.tanh(W @ x) ** 2).sum()
        if k == 0:
            return f
        (g,) = lib.autograd.grad(f, [x], create_graph=True)
        if k == 1:
            return g
        s = (g * v).sum()
        if k == 2:
            return s
        (hv,) = lib.autograd.grad(s, [x])
        return hv.numpy()
    return [lambda k=k: up_to(k) for k in range(len(PHASES))]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--counts", action="store_true")
    parser.add_argument("--no-torch", action="store_true")
    parser.add_argument("--smoke", action="store_true", help="n = 64 instead of 256")
    parser.add_argument("--no-freeze", action="store_true",
                        help="leave the objects alive before timing in the collector's care")
    args = parser.parse_args(argv)
    data = make_data("w5", small=args.smoke)
    libs = peers(ember, args.no_torch)
    fns = {(name, k): fn for name, lib in libs.items()
           for k, fn in enumerate(cut_steps(lib, data))}
    for fn in fns.values():
        fn()
    if not args.no_freeze:
        gc.collect()
        gc.freeze()
    times = interleaved(fns, args.rounds, 0.05, time.process_time)
    print(f"W5 n = {len(data['x'])}, CPU time, medians of {args.rounds} interleaved rounds; "
          f"ember from {os.path.dirname(os.path.dirname(ember.__file__))}")
    print("| phase | " + " | ".join(f"{name} µs" for name in libs)
          + (" | bytecodes | calls" if args.counts else "") + " |")
    print("|---|" + "---|" * (len(libs) + (2 if args.counts else 0)))
    previous = {name: 0.0 for name in libs}
    previous_counts = (0, 0)
    cuts = cut_steps(ember, data)
    for k, phase in enumerate(PHASES):
        row = []
        for name in libs:
            row.append(f"{(times[name, k] - previous[name]) * 1e6:.1f}")
            previous[name] = times[name, k]
        if args.counts:
            c = counts(cuts[k])
            row += [str(c[0] - previous_counts[0]), str(c[1] - previous_counts[1])]
            previous_counts = c
        print(f"| {phase} | " + " | ".join(row) + " |")
    total = [f"{times[name, len(PHASES) - 1] * 1e6:.1f}" for name in libs]
    if args.counts:
        total += [str(previous_counts[0]), str(previous_counts[1])]
    print("| the step | " + " | ".join(total) + " |")
    if "torch" in libs:
        k = len(PHASES) - 1
        print(f"ember / torch: {times['ember', k] / times['torch', k]:.3f}")


if __name__ == "__main__":
    main()
