"""Where one workload step's time goes in ember: cProfile over repeated steps, the functions
with the most time of their own first.

    python benchmarks/profile_step.py w6 --device cuda --steps 200 --top 30
"""
from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from run import _data
from workloads import WORKLOADS

import ember


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("workload", choices=sorted(WORKLOADS))
    parser.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--top", type=int, default=30)
    parser.add_argument("--sort", default="tottime")
    parser.add_argument("--smoke", action="store_true", help="small sizes")
    args = parser.parse_args(argv)
    step = WORKLOADS[args.workload][3](ember, _data(args.workload, args))
    for _ in range(5):  # warm: caches, compiled kernels, workspaces
        step()
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(args.steps):
        step()
    profiler.disable()
    stats = pstats.Stats(profiler)
    print(f"{args.workload} on {args.device}: {stats.total_tt / args.steps * 1e3:.3f} ms per "
          f"step under the profiler ({args.steps} steps)")
    stats.sort_stats(args.sort).print_stats(args.top)


if __name__ == "__main__":
    main()
