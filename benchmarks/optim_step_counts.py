"""Python bytecodes and calls of one optimizer step on W2's four float32 parameters
((784, 256), (256,), (256, 10), (10,)): SGD (lr only, momentum, weight_decay), Adam,
AdamW (amsgrad), RMSprop and Adagrad.

Counted with ``_timing.counts`` (``sys.settrace`` opcode events): the machine's load does not
move them. ``--clock cpu`` also times each step, ember's and torch's (one thread), in CPU
time, interleaved medians.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from _timing import counts, interleaved, peers  # noqa: E402

SHAPES = ((784, 256), (256,), (256, 10), (10,))
OPTIMIZERS = {
    "SGD lr": lambda optim, ps: optim.SGD(ps, lr=0.1),
    "SGD momentum": lambda optim, ps: optim.SGD(ps, lr=0.1, momentum=0.9),
    "SGD weight_decay": lambda optim, ps: optim.SGD(ps, lr=0.1, weight_decay=1e-4),
    "Adam": lambda optim, ps: optim.Adam(ps, lr=1e-3),
    "AdamW amsgrad": lambda optim, ps: optim.AdamW(ps, lr=1e-3, amsgrad=True),
    "RMSprop": lambda optim, ps: optim.RMSprop(ps, lr=1e-2),
    "Adagrad": lambda optim, ps: optim.Adagrad(ps, lr=1e-2),
}


def step_of(lib, make):
    """One optimizer step of ``lib`` (ember or torch) on W2's parameters, their gradients set
    once."""
    rng = np.random.default_rng(0)
    params = [lib.tensor(rng.standard_normal(s).astype(np.float32), requires_grad=True)
              for s in SHAPES]
    for p in params:
        p.grad = lib.tensor(rng.standard_normal(tuple(p.shape)).astype(np.float32))
    opt = make(lib.optim, params)
    opt.step()  # (the state made once)
    return opt.step


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--clock", choices=("none", "cpu"), default="none")
    parser.add_argument("--rounds", type=int, default=9)
    args = parser.parse_args()
    import ember
    steps = {name: step_of(ember, make) for name, make in OPTIMIZERS.items()}
    for name, step in steps.items():
        ops, calls = counts(step)
        print(f"{name:18s} {ops:6d} bytecodes {calls:5d} calls")
    if args.clock == "cpu":
        timed = {(lib_name, name): step_of(lib, make)
                 for lib_name, lib in peers(ember).items() for name, make in OPTIMIZERS.items()}
        medians = interleaved(timed, args.rounds, 0.05, clock=time.process_time)
        for (lib_name, name), s in medians.items():
            print(f"{lib_name:6s} {name:18s} {s * 1e6:9.1f} us CPU")


if __name__ == "__main__":
    main()
