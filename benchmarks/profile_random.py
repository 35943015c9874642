"""Where ember's time goes in its costliest samplers, stage by stage, beside torch's whole call.

    PYTHONPATH=src python benchmarks/profile_random.py [--rounds 5] [--size 10000000]

Each stage is timed on its own, on one thread, in CPU time (the best of ``--rounds``), for the
work of ``randn(size)`` (float32), ``randn(size // 10, dtype=float64)`` and
``randperm(size // 10)``: the raw words from NumPy's ``MT19937``, then each transform ember
applies to them. torch's own call is timed with one thread and with its default threads, in
CPU and wall time. A stage's share of torch's time says what it would take to be within twice
torch's time: on one thread, the stages must sum to at most twice torch's figure.
"""
from __future__ import annotations

import argparse
import functools
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))

from bench_random import cpu_model

import ember
from ember._random import cephes, cpu_generator, discrete, libm, sampling, table_log


def best(fn, rounds):
    """(CPU ms, wall ms), each the best of ``rounds`` calls."""
    cpu, wall = [], []
    for _ in range(rounds):
        c0, t0 = time.process_time(), time.perf_counter()
        fn()
        cpu.append(time.process_time() - c0)
        wall.append(time.perf_counter() - t0)
    return min(cpu) * 1e3, min(wall) * 1e3


def _fresh():
    return cpu_generator(ember.Generator().manual_seed(0))


def words(n):
    return _fresh().random(n)


def float32_stages(n):
    """The Cephes kernel's steps over the chunks of ``n`` words, each timed with the ones
    before it."""
    blocks = words(n).reshape(-1, 16)
    out = np.empty(blocks.shape, np.float32)
    rows = cephes._CHUNK_ROWS

    def upto(stage):
        def run():
            for start in range(0, len(blocks), rows):
                chunk = blocks[start:start + rows]
                b = cephes._buffers(len(chunk) * 8)
                np.copyto(b.k_halves, cephes._halves(chunk))
                np.bitwise_and(b.k, cephes._C["mask24"], out=b.k)
                if stage >= 1:
                    cephes._half_radius(b, b.k[0], b.normals[0])
                if stage >= 2:
                    cephes._rotation(b, b.k[1])
                if stage >= 3:
                    n1, n2 = b.normals
                    np.multiply(n1, b.re_trig, out=n2)
                    np.multiply(n1, b.im_trig, out=n1)
                    np.copyto(cephes._halves(out[start:start + rows]), b.normals.view("V32"))
        return run
    names = ["24-bit halves (split, mask)", "+ radius: Cephes log, sqrt",
             "+ angle: Cephes sincos, octant", "+ products, interleave (all)"]
    return [(name, upto(i)) for i, name in enumerate(names)]


def float64_stages(n):
    u = sampling.doubles(_fresh(), n)
    first, second = 1 - u[0::2], 2 * np.pi * u[1::2]
    stages = [("words to 53-bit doubles (with the words)", lambda: sampling.doubles(_fresh(), n)),
              ("log (the C library's bits)", lambda: libm.libm("log", first))]
    if libm.elementwise("log") is libm._log_from_table:
        stages.append(("  of which the table's double-double", lambda: table_log.log_parts(first)))
    return stages + [("cos and sin", lambda: (libm.libm("cos", second), libm.libm("sin", second)))]


def randperm_stages(n):
    w = words(n - 1)
    j = np.arange(n, dtype=np.int32)
    j[:n - 1] += (w % np.arange(n, 1, -1, dtype=np.uint32)).view(np.int32)
    return [("word % (n - i)", lambda: w % np.arange(n, 1, -1, dtype=np.uint32)),
            ("grouped by position (one sort)", lambda: discrete._by_key(j)),
            ("whole reconstruction", lambda: discrete._fisher_yates(w, n))]


def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--size", type=int, default=10 ** 7)
    args = parser.parse_args(argv)
    import torch
    n, r = args.size, args.rounds
    prior = ember.get_num_threads()
    ember.set_num_threads(1)
    load = " ".join(f"{x:.1f}" for x in os.getloadavg()) if hasattr(os, "getloadavg") else "?"
    print(f"CPU: {cpu_model()} ({os.cpu_count()} cores, load {load}); torch "
          f"{torch.__version__} (default {torch.get_num_threads()} threads); ms, best of {r}")
    cases = [
        (f"randn({n:.0e}) float32", lambda lib: lib.randn(n), n, float32_stages(n)),
        (f"randn({n // 10:.0e}) float64", lambda lib: lib.randn(n // 10, dtype=lib.float64),
         2 * (n // 10), float64_stages(n // 10)),
        (f"randperm({n // 10:.0e})", lambda lib: lib.randperm(n // 10), n // 10,
         randperm_stages(n // 10)),
    ]
    default_threads = torch.get_num_threads()
    for title, call, n_words, stages in cases:
        print(f"\n{title}")
        torch.set_num_threads(default_threads)
        cpu, wall = best(functools.partial(call, torch), r)
        print(f"  {'torch, default threads':40s} cpu {cpu:8.1f}  wall {wall:8.1f}")
        torch.set_num_threads(1)
        cpu, wall = best(functools.partial(call, torch), r)
        print(f"  {'torch, one thread':40s} cpu {cpu:8.1f}  wall {wall:8.1f}")
        cpu, wall = best(functools.partial(call, ember), r)
        print(f"  {'ember, one thread (whole call)':40s} cpu {cpu:8.1f}  wall {wall:8.1f}")
        print(f"  {'  raw words (NumPy MT19937)':40s} cpu {best(functools.partial(words, n_words), r)[0]:8.1f}")
        for name, fn in stages:
            print(f"  {'  ' + name:40s} cpu {best(fn, r)[0]:8.1f}")
    torch.set_num_threads(default_threads)
    ember.set_num_threads(prior)


if __name__ == "__main__":
    main()
