"""How far below the NumPy floor a replay of an MLP step could go, option by option.

    python benchmarks/floor_options.py            # W2, 11 interleaved rounds, CPU time
    python benchmarks/floor_options.py w3 --rounds 5

A compiled step replays NumPy kernels, so its floor is a hand-written NumPy step. The
floor of benchmarks/workloads.py is written naively (every line allocates its result); this
script times it beside variants that each add one thing a generated replay could do, so the
report says what each option is worth inside a whole step (not alone, where the operands stay
in the caches):

- ``buffers``: every product and intermediate written into a buffer reused across steps
  (``out=``): no allocation;
- ``fused``: that, and the elementwise work in place (ReLU's gradient one multiply by the
  mask, bias gradients summed into their buffers, log-softmax and its gradient in place);
- ``fused+sgd``: that, and the SGD update without a temporary (``g *= lr; w -= g``), as an
  optimizer step inside the replayed program could do it (the benchmark's step updates
  eagerly, outside the compiled function);
- ``...+sgemm``: that, and the weight gradients by SciPy's ``sgemm`` with the transposed
  operand passed as a flag (when SciPy is installed).

with torch eager (one thread), ember eager and ember compiled on the same step as reference.
Every variant computes the same loss and gradient (checked before timing). Nothing here
asserts a time.
"""
from __future__ import annotations

import argparse
import os
import pathlib
import sys
import time

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "src"))
sys.path.insert(0, str(HERE))

import numpy as np
from _timing import interleaved
from workloads import LR, make_data, mlp, numpy_mlp

import ember


def _sgemm_at_b():
    """``a.T @ b`` by SciPy's sgemm (the transpose a flag, no copy), or None without SciPy."""
    try:
        from scipy.linalg.blas import sgemm
    except ImportError:
        return None
    # (sgemm is column-major: ``out.T = b.T @ a`` there, where ``b.T``, ``a.T`` and ``out.T``
    # are C-contiguous arrays read as Fortran ones, so nothing is copied and the product is
    # written into ``out``)
    return lambda a, b, out: sgemm(1.0, b.T, a.T, trans_b=1, c=out.T, overwrite_c=1)


def tuned_mlp(data, fused=True, sgd_in_place=False, at_b=None):
    """The floor's step with every array in a buffer reused across steps; ``fused``: the
    elementwise work in place too; ``sgd_in_place``: the update without temporaries;
    ``at_b``: how ``a.T @ b`` (the weight gradients) is computed (default ``np.matmul``)."""
    x, y = data["x"], data["y"]
    n = len(y)
    rows = np.arange(n)
    Ws = [w.copy() for w in data["Ws"]]
    bs = [b.copy() for b in data["bs"]]
    hs = [np.empty((n, W.shape[1]), np.float32) for W in Ws]
    masks = [np.empty(h.shape, bool) for h in hs[:-1]]
    gs = [np.empty_like(h) for h in hs]
    gWs, gbs = [np.empty_like(W) for W in Ws], [np.empty_like(b) for b in bs]
    temps = [np.empty_like(W) for W in Ws] + [np.empty_like(b) for b in bs]
    col = np.empty((n, 1), np.float32)
    at_b = at_b or (lambda a, b, out: np.matmul(a.T, b, out=out))

    def step():
        h = x
        for i, (W, b) in enumerate(zip(Ws, bs)):
            out = hs[i]
            np.matmul(h, W, out=out)
            np.add(out, b, out=out)
            if i < len(Ws) - 1:
                np.maximum(out, 0, out=out)
            h = out
        if fused:  # log-softmax in place, its gradient in the last layer's gradient buffer
            np.max(h, axis=1, keepdims=True, out=col)
            np.subtract(h, col, out=h)
            g = gs[-1]
            np.exp(h, out=g)
            np.sum(g, axis=1, keepdims=True, out=col)
            np.log(col, out=col)
            np.subtract(h, col, out=h)
            loss = -h[rows, y].mean()
            np.exp(h, out=g)
        else:
            shifted = h - h.max(1, keepdims=True)
            logp = shifted - np.log(np.exp(shifted).sum(1, keepdims=True))
            loss = -logp[rows, y].mean()
            g = gs[-1]
            np.exp(logp, out=g)
        g[rows, y] -= 1
        g /= n
        for i in reversed(range(len(Ws))):
            inp = hs[i - 1] if i else x
            at_b(inp, g, gWs[i])
            if fused:
                np.sum(g, axis=0, out=gbs[i])
            else:
                gbs[i][...] = g.sum(0)
            if i:
                back = gs[i - 1]
                np.matmul(g, Ws[i].T, out=back)
                if fused:  # ReLU's gradient: one multiply by the mask
                    np.greater(hs[i - 1], 0, out=masks[i - 1])
                    np.multiply(back, masks[i - 1], out=back)
                else:
                    back *= hs[i - 1] > 0
                g = back
        grad0 = gWs[0].copy()
        for p, gp, tmp in zip(Ws + bs, gWs + gbs, temps):
            if sgd_in_place:
                np.multiply(gp, LR, out=gp)
                np.subtract(p, gp, out=p)
            else:
                np.multiply(gp, LR, out=tmp)
                np.subtract(p, tmp, out=p)
        return float(loss), grad0
    return step


def variants(name):
    """``{label: step}``: the naive floor and each option added in turn."""
    out = {"numpy floor": numpy_mlp(make_data(name)),
           "buffers": tuned_mlp(make_data(name), fused=False),
           "fused": tuned_mlp(make_data(name)),
           "fused+sgd": tuned_mlp(make_data(name), sgd_in_place=True)}
    at_b = _sgemm_at_b()
    if at_b is not None:
        out["fused+sgd+sgemm"] = tuned_mlp(make_data(name), sgd_in_place=True, at_b=at_b)
    return out


def peers(name):
    steps = {}
    try:
        import torch
        torch.set_num_threads(1)
        steps["torch"] = mlp(torch, make_data(name))
    except ImportError:
        pass
    steps["ember"] = mlp(ember, make_data(name))
    steps["ember.compile"] = mlp(ember, make_data(name), compiled=True)
    return steps


def check(steps):
    """Every step gives the first one's loss and first gradient (float32 noise aside)."""
    results = {k: step() for k, step in steps.items()}
    loss, grad = next(iter(results.values()))
    for k, (l2, g2) in results.items():
        if abs(l2 - loss) > 1e-4 * max(1.0, abs(loss)) or \
                np.abs(np.asarray(g2) - grad).max() > 1e-4 * max(1.0, np.abs(grad).max()):
            raise SystemExit(f"{k} computes another step: loss {l2} against {loss}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("workload", nargs="?", default="w2", choices=("w2", "w3"))
    parser.add_argument("--rounds", type=int, default=11)
    parser.add_argument("--runs", type=int, default=2, help="interleaved runs to report")
    args = parser.parse_args()
    steps = {**peers(args.workload), **variants(args.workload)}
    check(steps)
    ref = "torch" if "torch" in steps else "numpy floor"
    for run in range(args.runs):
        times = interleaved(steps, args.rounds, 0.1, time.process_time)
        print(f"{args.workload} run {run + 1} (CPU time per step, median of {args.rounds} "
              f"rounds; ratio to {ref}):")
        for k, t in times.items():
            print(f"  {k:18s} {t * 1e6:8.1f} us  {t / times[ref]:5.2f}")


if __name__ == "__main__":
    main()
