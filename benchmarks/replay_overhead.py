"""What a compiled call costs around its kernels, in this checkout and (``--against``) another.

    python benchmarks/replay_overhead.py                      # this checkout
    python benchmarks/replay_overhead.py --against ../old     # and another ember, interleaved

Times, with this process's CPU clock, the calls of a compiled function: a small MLP's loss
(``Linear(4, 8)``, ReLU, ``Linear(8, 3)``, cross-entropy on a (2, 4) batch: its kernels cost
little, so the replay's own work shows), the same loss's call alone under ``no_grad``, and
W2's loss function (benchmarks/workloads.py, the MLP 784-256-10 on a batch of 64) and whole
step (and the small loss in torch's eager mode, when torch is installed). Each checkout runs in its own process, in rounds that alternate between them; the report
gives the median over rounds of each round's median, in microseconds per call.
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import time

HERE = pathlib.Path(__file__).resolve().parent


def _per_call(fn, calls):
    """Median CPU microseconds of ``calls`` calls of ``fn``, each timed alone."""
    times = []
    clock = time.process_time_ns
    for _ in range(calls):
        t0 = clock()
        fn()
        times.append(clock() - t0)
    return statistics.median(times) / 1e3


def measure(calls):
    """One round in this process: ``{case: microseconds per call}``."""
    from workloads import WORKLOADS, make_data

    import ember

    ember.manual_seed(0)
    model = ember.nn.Sequential(ember.nn.Linear(4, 8), ember.nn.ReLU(), ember.nn.Linear(8, 3))
    x, y = ember.randn(2, 4), ember.tensor([0, 2])

    def loss_of(x, y):
        return ember.nn.functional.cross_entropy(model(x), y)
    small = ember.compile(loss_of)
    step = WORKLOADS["w2"][3](ember, make_data("w2"), compiled=True)
    step()
    w2_loss = next(cf for cf in _compiled_functions() if cf.entries)
    data = make_data("w2")
    w2_args = (ember.tensor(data["x"]), ember.tensor(data["y"]))
    small(x, y)
    w2_loss(*w2_args)
    out = {"small MLP loss, call": _per_call(lambda: small(x, y), calls),
           "small MLP loss, eager": _per_call(lambda: loss_of(x, y), calls)}
    with ember.no_grad():
        out["small MLP loss, call under no_grad"] = _per_call(lambda: small(x, y), calls)
    out["W2 loss, call"] = _per_call(lambda: w2_loss(*w2_args), calls // 4)
    out["W2 step"] = _per_call(step, calls // 8)
    out.update(_torch_small(calls))
    return out


def _torch_small(calls):
    """The small MLP's loss in torch's eager mode (when torch is installed), for scale."""
    try:
        import torch
    except ImportError:
        return {}
    torch.set_num_threads(1)
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 3))
    x, y = torch.randn(2, 4), torch.tensor([0, 2])
    return {"small MLP loss, torch eager": _per_call(
        lambda: torch.nn.functional.cross_entropy(model(x), y), calls)}


def _compiled_functions():
    from ember._compile.compiled import _ALL
    return list(_ALL)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--against", help="another ember checkout (its src/ is imported)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--round", help=argparse.SUPPRESS)  # (one round, in a child process)
    args = parser.parse_args()
    if args.round:
        sys.path[:0] = [args.round, str(HERE)]
        print(json.dumps(measure(args.calls)))
        return
    checkouts = {"this": HERE.parent}
    if args.against:
        checkouts["against"] = pathlib.Path(args.against).resolve()
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    rounds = {name: [] for name in checkouts}
    for r in range(args.rounds):
        order = list(checkouts.items())
        for name, root in order[r % len(order):] + order[:r % len(order)]:
            run = subprocess.run([sys.executable, __file__, "--round", str(root / "src"),
                                  "--calls", str(args.calls)], env=env, check=True,
                                 capture_output=True, text=True)
            rounds[name].append(json.loads(run.stdout))
    cases = list(rounds["this"][0])
    print("| case (CPU us per call, median of round medians) | " + " | ".join(checkouts) + " |")
    print("|---|" + "---|" * len(checkouts))
    for case in cases:
        cells = [f"{statistics.median(r[case] for r in rounds[name]):.1f}" for name in checkouts]
        print(f"| {case} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
