"""Cross-entropy's four kernels (log_softmax, nll_loss, their gradients) on W2's (64, 10)
float32 logits, each timed alone and right after a W2-sized matrix product.

    python benchmarks/cross_entropy_kernels.py              # this checkout's ember
    python benchmarks/cross_entropy_kernels.py --src ../other/src --rounds 800

Inside a training step a kernel runs after large matrix products, with its code and NumPy's
no longer in the caches, and costs several times what it costs timed alone; the second
figure reproduces that (a (64, 784) @ (784, 256) product before every call, untimed). These
are the kernels a compiled step replays; an eager step adds the ops' dispatch and nodes. To
compare two versions, run each checkout's copy (``--src``) alternately: the figures move
with the machine's load. CPU time per call, medians; nothing here asserts a time.
"""
from __future__ import annotations

import argparse
import os
import pathlib
import statistics
import sys
import time

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np


def kernels(src):
    """``{name: call}`` of the four kernels on fixed W2-like arrays, from ember at ``src``."""
    sys.path.insert(0, str(src))
    from ember._ops import activation, loss
    rs = np.random.RandomState(2)
    logits = rs.randn(64, 10).astype(np.float32)
    target = rs.randint(0, 10, 64).astype(np.int64)
    logp = activation._softmax_kernel(logits, 1, True)
    seed = np.asarray(1.0, np.float32)
    grad = loss._nll_backward_kernel(seed, logp, target, None, "mean", -100)
    return {"log_softmax": lambda: activation._softmax_kernel(logits, 1, True),
            "nll_loss": lambda: loss._nll_kernel(logp, target, None, "mean", -100),
            "nll_loss_backward": lambda: loss._nll_backward_kernel(seed, logp, target, None,
                                                                   "mean", -100),
            "log_softmax_backward": lambda: activation.log_softmax_backward_data.kernel(
                grad, logp, 1)}


def timed(calls, rounds, before=None):
    """Median CPU seconds per call of each ``name -> call``, the calls taking turns; ``before``
    runs untimed ahead of every call."""
    clock = time.process_time
    samples = {name: [] for name in calls}
    for _ in range(rounds):
        for name, call in calls.items():
            if before is not None:
                before()
            t0 = clock()
            call()
            samples[name].append(clock() - t0)
    return {name: statistics.median(s) for name, s in samples.items()}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--src", default=pathlib.Path(__file__).resolve().parent.parent / "src",
                        help="the src folder of the ember to time")
    parser.add_argument("--rounds", type=int, default=500)
    args = parser.parse_args()
    calls = kernels(args.src)
    rs = np.random.RandomState(0)
    x, w = rs.randn(64, 784).astype(np.float32), rs.randn(784, 256).astype(np.float32)
    h = np.empty((64, 256), np.float32)
    alone = timed(calls, args.rounds)
    in_step = timed(calls, args.rounds, lambda: np.matmul(x, w, out=h))
    print(f"CPU time per call, medians of {args.rounds} (alone / after a W2-sized product):")
    for name in calls:
        print(f"  {name:22s} {alone[name] * 1e6:6.2f} / {in_step[name] * 1e6:6.2f} us")
    print(f"  {'the four':22s} {sum(alone.values()) * 1e6:6.2f} / "
          f"{sum(in_step.values()) * 1e6:6.2f} us")


if __name__ == "__main__":
    main()
