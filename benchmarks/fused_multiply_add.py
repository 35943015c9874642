"""What torch's single rounding costs: ``add(alpha=...)``, ``addcmul`` and optimizer steps,
ember's fused complex-multiply route next to its exact emulation (the route of machines and
array modules without NumPy's fused complex multiply), and torch when installed.

    PYTHONPATH=src python benchmarks/fused_multiply_add.py [--rounds 9]

Process time (``time.process_time``), interleaved rounds, medians, milliseconds per call.
"""
from __future__ import annotations

import argparse
import contextlib
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
import ember  # noqa: E402
from _timing import interleaved  # noqa: E402
from ember._ops import fused  # noqa: E402


@contextlib.contextmanager
def _emulation():
    """The exact emulation instead of the fused complex multiply."""
    saved = fused._complex_multiply_fuses
    fused._complex_multiply_fuses = lambda real: False
    try:
        yield
    finally:
        fused._complex_multiply_fuses = saved


def _routes(make):
    """``ember`` and ``emulation`` callables of ``make(ember)``, and torch's where installed."""
    fn = make(ember)

    def emulated():
        with _emulation():
            fn()
    peers = {"ember": fn, "emulation": emulated}
    try:
        import torch
        torch.set_num_threads(1)
        peers["torch"] = make(torch)
    except ImportError:
        pass
    return peers


def _operands(lib, n, dtype):
    rng = np.random.default_rng(0)
    return [lib.from_numpy(rng.standard_normal(n).astype(dtype)) for _ in range(3)]


def _op_cases(n, dtype):
    yield f"add alpha {dtype} {n:.0e}", lambda lib: (
        lambda a, b, c: lambda: lib.add(a, b, alpha=-0.1))(*_operands(lib, n, dtype))
    yield f"addcmul {dtype} {n:.0e}", lambda lib: (
        lambda a, b, c: lambda: lib.addcmul(a, b, c, value=0.7))(*_operands(lib, n, dtype))


def _optimizer_step(name, n, dtype):
    def make(lib):
        rng = np.random.default_rng(0)
        params = [lib.nn.Parameter(lib.from_numpy(rng.standard_normal(n // 4).astype(dtype)))
                  for _ in range(4)]
        for p in params:
            p.grad = lib.from_numpy(rng.standard_normal(n // 4).astype(dtype))
        optimizer = (lib.optim.SGD(params, lr=0.01, momentum=0.9) if name == "SGD"
                     else lib.optim.Adam(params, lr=1e-3))
        optimizer.step()  # (the state made)
        return optimizer.step
    return make


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--target", type=float, default=0.05, help="seconds per sample")
    args = parser.parse_args()
    cases = [case for n in (1000, 100_000, 1_000_000) for dtype in ("float32", "float64")
             for case in _op_cases(n, dtype)]
    cases += [(f"{name} step {dtype} 1e6 params", _optimizer_step(name, 1_000_000, dtype))
              for name in ("SGD", "Adam") for dtype in ("float32", "float64")]
    print(f"load average {os.getloadavg()[0]:.1f}; ms per call (process time, medians)")
    for label, make in cases:
        times = interleaved(_routes(make), args.rounds, args.target, clock=time.process_time)
        print(f"{label:32s}" + "".join(f"  {k} {v * 1e3:8.3f}" for k, v in times.items()))


if __name__ == "__main__":
    main()
