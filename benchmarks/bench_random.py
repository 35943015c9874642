"""Random numbers: ember (torch's generator, bit for bit, on NumPy) against torch itself.

    PYTHONPATH=src python benchmarks/bench_random.py [--rounds 7] [--size 10000000]
        [--clock cpu] [--only randn] [--torch-threads 1]

The goal: 10**7 float32 normals (``randn``) in at most twice torch's time. torch runs with its
default number of threads, as its users do (its CPU samplers are serial anyway: one thread holds
the generator); ember spreads its Cephes emulation over ``ember.get_num_threads()`` threads.
Times are medians (and best) of interleaved rounds; the CPU model and the load average are
printed beside them, as figures only mean something on a named machine. ``--clock cpu`` times
the CPU the process spends instead (all its threads together: the cost, not the wait), which a
shared, busy machine disturbs much less than the wall clock. ``--only`` keeps the cases whose
name contains the given text. See ``profile_random.py`` for where ember's time goes.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))

import ember
from _timing import cpu_model  # noqa: E402


def cases(lib, n):
    side = int(n ** 0.5)
    return {
        f"randn({n:.0e}) float32": lambda: lib.randn(n),
        f"rand({n:.0e}) float32": lambda: lib.rand(n),
        f"randn({n // 10:.0e}) float64": lambda: lib.randn(n // 10, dtype=lib.float64),
        f"normal_(0, 0.02) on {side}x{side}": lambda: lib.empty(side, side).normal_(0, 0.02),
        f"randint(0, 1000, {n:.0e})": lambda: lib.randint(0, 1000, (n,)),
        f"randperm({n // 10:.0e})": lambda: lib.randperm(n // 10),
        "dropout(0.5) on 1000x1000": lambda: lib.nn.functional.dropout(lib.ones(1000, 1000), 0.5),
        # small draws, where a call's fixed costs are most of its time
        "randn(3), 1000 calls": _calls(lambda: lib.randn(3)),
        "rand(100), 1000 calls": _calls(lambda: lib.rand(100)),
        "randperm(100), 1000 calls": _calls(lambda: lib.randperm(100)),
        "randn(64, 64), 1000 calls": _calls(lambda: lib.randn(64, 64)),
    }


def _calls(fn, count=1000):
    def run():
        for _ in range(count):
            fn()
    return run


def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--size", type=int, default=10 ** 7)
    parser.add_argument("--clock", choices=("wall", "cpu"), default="wall")
    parser.add_argument("--only", default="", help="only the cases whose name contains this")
    parser.add_argument("--torch-threads", type=int, default=None,
                        help="torch.set_num_threads (default: torch's own default)")
    args = parser.parse_args(argv)
    import torch
    if args.torch_threads is not None:
        torch.set_num_threads(args.torch_threads)
    peers = {lib: {name: fn for name, fn in cases(module, args.size).items()
                   if args.only in name}
             for lib, module in (("torch", torch), ("ember", ember))}
    clock = time.perf_counter if args.clock == "wall" else time.process_time
    samples = {(lib, name): [] for lib in peers for name in peers[lib]}
    for r in range(args.rounds):
        for name in peers["torch"]:
            order = ("torch", "ember") if r % 2 == 0 else ("ember", "torch")
            for lib in order:
                t0 = clock()
                peers[lib][name]()
                samples[lib, name].append(clock() - t0)
    load = " ".join(f"{x:.1f}" for x in os.getloadavg()) if hasattr(os, "getloadavg") else "?"
    print(f"CPU: {cpu_model()} ({os.cpu_count()} cores, load {load}); torch {torch.__version__}, "
          f"{torch.get_num_threads()} threads; ember {ember.get_num_threads()} threads; "
          f"{args.clock} clock")
    print(f"{'case':34s} {'torch ms':>10s} {'ember ms':>10s} {'ratio':>7s} {'best ratio':>11s}")
    for name in peers["torch"]:
        t, e = samples["torch", name], samples["ember", name]
        med_t, med_e = statistics.median(t), statistics.median(e)
        print(f"{name:34s} {med_t * 1e3:10.1f} {med_e * 1e3:10.1f} {med_e / med_t:7.2f} "
              f"{min(e) / min(t):11.2f}")


if __name__ == "__main__":
    main()
