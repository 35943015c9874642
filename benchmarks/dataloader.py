"""DataLoader with worker processes: throughput and per-batch overhead, ember against torch.

    python benchmarks/dataloader.py            # both tables, a minute or so on 2 cores
    python benchmarks/dataloader.py --quick    # fewer batches

1. Throughput: a dataset whose ``__getitem__`` spends ~1 ms of CPU (a busy loop on the thread's
   CPU clock) and returns a (3, 32, 32) float32 image and a label; batches of 16. Batches per
   second with ``num_workers=0`` and ``num_workers=2``, and their ratio.
2. Per-batch overhead: a dataset whose ``__getitem__`` costs nothing, so the time per batch is
   the loader's own (index hand-out, collation, the trip from worker to main process): small
   batches (64 numbers) and large ones (64 images of (3, 32, 32) float32: 786 KiB, which ember
   passes in shared memory).
Workers are started before timing (the first batch is not counted). Figures depend on the CPU:
the model is printed with them.
"""
from __future__ import annotations

import argparse
import importlib
import platform
import statistics
import sys
import time

import numpy as np


def _cpu_model():
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


class Costly:
    """~1 ms of CPU per item."""

    def __init__(self, lib, n):
        self.lib, self.n = lib, n
        self.image = np.random.default_rng(0).standard_normal((3, 32, 32)).astype(np.float32)

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        start = time.thread_time()
        while time.thread_time() - start < 1e-3:
            pass
        return self.lib.from_numpy(self.image), i


class Free:
    """Items that cost nothing: a number, or an image."""

    def __init__(self, lib, n, image):
        self.lib, self.n = lib, n
        self.image = np.zeros((3, 32, 32), np.float32) if image else None

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if self.image is None:
            return i
        return self.lib.from_numpy(self.image), i


def _loader_lib(name):
    lib = importlib.import_module(name)
    data = importlib.import_module(f"{name}.utils.data")
    return lib, data


def seconds_per_batch(name, dataset_factory, batch_size, num_workers, batches):
    """Median seconds per batch over three passes, workers already running."""
    lib, data = _loader_lib(name)
    dataset = dataset_factory(lib)
    loader = data.DataLoader(dataset, batch_size=batch_size, num_workers=num_workers,
                             persistent_workers=num_workers > 0)
    times = []
    for _ in range(3):
        iterator = iter(loader)
        next(iterator)  # workers up, first batch out of the way
        start = time.perf_counter()
        count = 0
        for _ in iterator:
            count += 1
            if count == batches:
                break
        times.append((time.perf_counter() - start) / count)
    del loader
    return statistics.median(times)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--peers", default="ember,torch")
    args = parser.parse_args(argv)
    peers = []
    for name in args.peers.split(","):
        try:
            importlib.import_module(name)
            peers.append(name)
        except ImportError:
            print(f"({name} not installed: skipped)")
    batches = 40 if args.quick else 120
    print(f"## DataLoader ({_cpu_model()}, Python {sys.version.split()[0]})\n")

    print("| throughput, 1 ms/item, batch 16 | batches/s, 0 workers | batches/s, 2 workers "
          "| speed-up |")
    print("|---|---|---|---|")
    n = 16 * (batches + 2)
    for name in peers:
        zero = seconds_per_batch(name, lambda lib: Costly(lib, n), 16, 0, batches // 2)
        two = seconds_per_batch(name, lambda lib: Costly(lib, n), 16, 2, batches)
        print(f"| {name} | {1 / zero:.1f} | {1 / two:.1f} | {zero / two:.2f} |")

    print("\n| per-batch overhead, 2 workers | µs per batch, 64 numbers "
          "| µs per batch, 64 (3,32,32) float32 images |")
    print("|---|---|---|")
    n = 64 * (batches * 2 + 2)
    for name in peers:
        small = seconds_per_batch(name, lambda lib: Free(lib, n, False), 64, 2, batches * 2)
        large = seconds_per_batch(name, lambda lib: Free(lib, n, True), 64, 2, batches * 2)
        print(f"| {name} | {small * 1e6:.0f} | {large * 1e6:.0f} |")


if __name__ == "__main__":
    main()
