"""Per-example gradients and model ensembles: vmap against a Python loop, and against torch.

    PYTHONPATH=src python benchmarks/bench_vmap.py [--batch 64] [--rounds 5]

Two workloads, each timed three ways (median seconds per call, interleaved rounds):
  per-sample grads: a small CNN (conv 1->8, conv 8->16, max-pool, linear 1600->32->10) on
      14x14 images, the gradient of each example's loss w.r.t. every parameter:
      ``vmap(grad(loss), in_dims=(None, 0, 0))`` against one ``autograd.grad`` per example;
  ensemble: 8 MLPs (64->128->128->10) stacked with ``stack_module_state``, run on the same
      batch: ``vmap(functional_call)`` against a loop over the models.
torch (CPU, if installed) runs the same two vmap calls for reference.
"""
from __future__ import annotations

import argparse
import copy
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from _timing import interleaved  # noqa: E402


def _cnn(lib):
    nn, F = lib.nn, lib.nn.functional

    class CNN(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(1, 8, 3)
            self.conv2 = nn.Conv2d(8, 16, 3)
            self.fc1 = nn.Linear(16 * 5 * 5, 32)
            self.fc2 = nn.Linear(32, 10)

        def forward(self, x):
            x = F.max_pool2d(F.relu(self.conv2(F.relu(self.conv1(x)))), 2)
            return F.log_softmax(self.fc2(F.relu(self.fc1(lib.flatten(x, 1)))), dim=1)
    return CNN()


def per_sample(lib, batch):
    """(vmap call, loop call) computing per-example gradients with ``lib``."""
    import numpy as np
    func, F = lib.func, lib.nn.functional
    lib.manual_seed(0)
    model = _cnn(lib)
    rng = np.random.default_rng(0)
    data = lib.tensor(rng.standard_normal((batch, 1, 14, 14)), dtype=lib.float32)
    targets = lib.tensor(rng.integers(0, 10, batch))
    params = {k: v.detach() for k, v in model.named_parameters()}

    def loss(p, x, t):
        out = func.functional_call(model, p, (x.unsqueeze(0),))
        return F.nll_loss(out, t.unsqueeze(0))
    batched = func.vmap(func.grad(loss), in_dims=(None, 0, 0))

    def loop():
        grads = [lib.autograd.grad(F.nll_loss(model(data[i:i + 1]), targets[i:i + 1]),
                                   list(model.parameters())) for i in range(batch)]
        return [lib.stack(g) for g in zip(*grads)]
    return (lambda: batched(params, data, targets)), loop


def ensemble(lib, batch, n_models=8):
    """(vmap call, loop call) running ``n_models`` MLPs on one batch with ``lib``."""
    import numpy as np
    nn, func = lib.nn, lib.func
    lib.manual_seed(0)
    models = [nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 128), nn.ReLU(),
                            nn.Linear(128, 10)) for _ in range(n_models)]
    params, buffers = func.stack_module_state(models)
    base = copy.deepcopy(models[0])
    x = lib.tensor(np.random.default_rng(0).standard_normal((batch, 64)), dtype=lib.float32)

    def run(p, b, data):
        return func.functional_call(base, (p, b), (data,))
    batched = func.vmap(run, in_dims=(0, 0, None))
    return (lambda: batched(params, buffers, x)), (lambda: [m(x) for m in models])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    import ember
    try:
        import torch
        torch.set_num_threads(1)
    except ImportError:
        torch = None
    rows = []
    for name, make in (("per-sample grads", per_sample), ("ensemble of 8", ensemble)):
        fns = {}
        fns["ember vmap"], fns["ember loop"] = make(ember, args.batch)
        if torch is not None:
            fns["torch vmap"], fns["torch loop"] = make(torch, args.batch)
        times = interleaved(fns, args.rounds, 0.2)
        rows.append((name, times))
    print(f"batch {args.batch}; median ms per call (torch: 1 thread)")
    for name, times in rows:
        cells = "  ".join(f"{k}: {v * 1e3:8.2f}" for k, v in times.items())
        print(f"{name:18s} {cells}")


if __name__ == "__main__":
    main()
