"""What W6's ops (benchmarks/workloads.py ``conv``) ask of a GPU, counted on ``fake_cupy``.

``op_counts()`` runs each op of the step (conv2d, relu, max_pool2d, linear, log_softmax,
nll_loss) once forward and once backward on the fake ``cuda`` device and returns, per op and
direction, the kernels it would launch and its host <-> device transfers (see
``fake_cupy.counting``). ``python tests/gpu_launches.py`` prints the table.
"""
from __future__ import annotations

import numpy as np

import fake_cupy

W6 = {"batch": 32, "channels": 16, "classes": 10, "side": 28}


def _inputs(torch, device):
    rng = np.random.default_rng(0)
    n, c, k, s = W6["batch"], W6["channels"], W6["classes"], W6["side"]
    feats = c * ((s - 2) // 2) ** 2

    def t(*shape):
        return torch.tensor(rng.standard_normal(shape).astype(np.float32), device=device)
    return {"x": t(n, 1, s, s), "Wc": t(c, 1, 3, 3), "bc": t(c), "h": t(n, c, s - 2, s - 2),
            "flat": t(n, feats), "Wl": t(feats, k), "bl": t(k), "logits": t(n, k),
            "y": torch.tensor(rng.integers(0, k, n), device=device)}


def _ops(torch):
    F = torch.nn.functional
    return {
        "conv2d": (lambda d: F.conv2d(d["x"], d["Wc"], d["bc"]), ("Wc", "bc")),
        "relu": (lambda d: d["h"].relu(), ("h",)),
        "max_pool2d": (lambda d: F.max_pool2d(d["h"], 2), ("h",)),
        "linear": (lambda d: d["flat"] @ d["Wl"] + d["bl"], ("flat", "Wl", "bl")),
        "log_softmax": (lambda d: F.log_softmax(d["logits"], 1), ("logits",)),
        "nll_loss": (lambda d: F.nll_loss(d["logits"], d["y"]), ("logits",)),
        "cross_entropy": (lambda d: F.cross_entropy(d["logits"], d["y"]), ("logits",)),
    }


def _summary(counts):
    return {"kernels": counts["kernels"], "to_host": counts["to_host"],
            "from_host": counts["from_host"]}


def op_counts(torch, device="cuda:0", ops=None, detail=False):
    """{op: {"forward": counts, "backward": counts}} for W6's ops on ``device`` (fake_cupy's:
    the caller installs it)."""
    result = {}
    for name, (fn, wrt) in _ops(torch).items():
        if ops is not None and name not in ops:
            continue
        data = _inputs(torch, device)
        for k in wrt:
            data[k].requires_grad_(True)
        # once first: what a step fills only once (device constants) is no per-call cost
        torch.autograd.grad(fn(data), [data[k] for k in wrt], torch.ones_like(fn(data)))
        with fake_cupy.counting() as forward:
            out = fn(data)
        seed = torch.ones_like(out)
        with fake_cupy.counting() as backward:
            torch.autograd.grad(out, [data[k] for k in wrt], seed)
        pick = dict if detail else _summary
        result[name] = {"forward": pick(forward), "backward": pick(backward)}
    return result


def step_counts(torch, device="cuda:0"):
    """Counts for a whole W6 training step (forward, backward, reading the loss)."""
    F = torch.nn.functional
    data = _inputs(torch, device)
    params = [data[k].requires_grad_(True) for k in ("Wc", "bc", "Wl", "bl")]

    def step():
        for p in params:
            p.grad = None
        h = F.max_pool2d(F.conv2d(data["x"], data["Wc"], data["bc"]).relu(), 2)
        loss = F.cross_entropy(h.reshape(h.shape[0], -1) @ data["Wl"] + data["bl"], data["y"])
        loss.backward()
    step()
    with fake_cupy.counting() as counts:
        step()
    return _summary(counts)


def main():
    import sys
    import ember
    from fake_device import installed
    with installed():
        detail = "--detail" in sys.argv
        for name, dirs in op_counts(ember, detail=detail).items():
            for direction, counts in dirs.items():
                print(f"{name:14s} {direction:9s} {counts}")
        print("step", step_counts(ember))


if __name__ == "__main__":
    main()
