"""``step()`` of ember's optimizers next to torch's, microseconds per step.

Two parameter sets: ``large`` (one 2048x2048 and one 4096x1024 float32 parameter) and
``small`` (200 parameters: 100 of shape (64,) and 100 of (64, 64)); each optimizer with
``foreach`` None, True and False. The gradients are set once; every step updates the
parameters and the state in place, as a training step does.

    PYTHONPATH=src python benchmarks/optim_step.py [--sets large,small] [--only Adam]
        [--foreach None,True,False] [--rounds 5] [--no-torch]

Process time (``time.process_time``: this process's CPU time, steadier than wall time on a
shared machine), interleaved rounds (every case sampled once a round, the order rotating),
medians. torch runs on one thread, as NumPy does. The CPU model and load average are
printed with the table.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from _timing import cpu_model, interleaved, peers  # noqa: E402

SETS = {
    "large": ((2048, 2048), (4096, 1024)),
    "small": ((64,),) * 100 + ((64, 64),) * 100,
}
OPTIMIZERS = {
    "SGD": ("SGD", {"lr": 0.1}),
    "SGD momentum": ("SGD", {"lr": 0.1, "momentum": 0.9}),
    "SGD nesterov": ("SGD", {"lr": 0.1, "momentum": 0.9, "nesterov": True}),
    "SGD weight_decay": ("SGD", {"lr": 0.1, "weight_decay": 1e-4}),
    "SGD maximize": ("SGD", {"lr": 0.1, "maximize": True}),
    "Adam": ("Adam", {"lr": 1e-3}),
    "AdamW": ("AdamW", {"lr": 1e-3}),
    "AdamW amsgrad": ("AdamW", {"lr": 1e-3, "amsgrad": True}),
    "RMSprop": ("RMSprop", {"lr": 1e-2}),
    "Adagrad": ("Adagrad", {"lr": 1e-2}),
}
FOREACH = {"None": None, "True": True, "False": False}


def step_of(lib, name, kwargs, shapes, foreach):
    """``opt.step`` of ``lib``'s optimizer ``name`` on parameters of ``shapes``, their
    gradients set and the state made by one step."""
    rng = np.random.default_rng(0)
    params = [lib.nn.Parameter(lib.tensor(rng.standard_normal(s).astype(np.float32)))
              for s in shapes]
    for p in params:
        p.grad = lib.tensor(rng.standard_normal(tuple(p.shape)).astype(np.float32) * 1e-2)
    opt = getattr(lib.optim, name)(params, foreach=foreach, **kwargs)
    opt.step()
    return opt.step


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sets", default="large,small")
    parser.add_argument("--only", default="", help="optimizer names containing this")
    parser.add_argument("--foreach", default="None,True,False")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--target", type=float, default=0.05, help="seconds a sample")
    parser.add_argument("--no-torch", action="store_true")
    args = parser.parse_args()
    import ember
    libs = peers(ember, args.no_torch)
    cases = {}
    for set_name in args.sets.split(","):
        for opt_name, (cls, kwargs) in OPTIMIZERS.items():
            if args.only and args.only not in opt_name:
                continue
            for fe in args.foreach.split(","):
                for lib_name, lib in libs.items():
                    cases[(set_name, opt_name, fe, lib_name)] = step_of(
                        lib, cls, kwargs, SETS[set_name], FOREACH[fe])
    print(f"CPU: {cpu_model()} ({os.cpu_count()} cores), load average "
          f"{' '.join(f'{x:.1f}' for x in os.getloadavg())}; NumPy {np.__version__}"
          + (f", torch {libs['torch'].__version__} (1 thread)" if "torch" in libs else ""))
    medians = interleaved(cases, args.rounds, args.target, clock=time.process_time)
    print(f"{'set':6s} {'optimizer':17s} {'foreach':7s} {'ember us':>10s} {'torch us':>10s} "
          f"{'ember/torch':>11s}")
    for key in dict.fromkeys(k[:3] for k in cases):
        e = medians[key + ("ember",)] * 1e6
        t = medians.get(key + ("torch",))
        t_text = "" if t is None else f"{t * 1e6:10.0f} {e / (t * 1e6):11.2f}"
        print(f"{key[0]:6s} {key[1]:17s} {key[2]:7s} {e:10.0f} {t_text}")
    print(f"load average after: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
