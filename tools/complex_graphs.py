"""Which op-table samples' create_graph gradients of complex tensors record other nodes than
torch's.

    python tools/complex_graphs.py          # the differing samples, then their count
    python tools/complex_graphs.py 3        # comparing node names three levels down
    python tools/complex_graphs.py 2 sgn_complex istft   # those rows, with both graphs

For each differentiable op-table row (its main dtype's samples) whose inputs or outputs are
complex, the gradients are taken with create_graph=True (output gradients drawn as
tests/ops/test_ops.py draws them) and each gradient's node names are compared with torch's,
``depth`` levels down (default 1: the node and its inputs' nodes). A sample torch refuses is
left out. This is a development tool: it imports torch (the reference).
"""
from __future__ import annotations

import sys
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "src"), str(ROOT)]


def gradient_graphs(mod, row, sample, depth):
    """(whether the call is complex, each input gradient's node names ``depth`` down)."""
    import numpy as np

    import ember
    from tests.ops.test_ops import _grad, _seed, _tensor, bind, call, dtype_name, outputs
    from tests.oracle import graph_tree
    fn = row.op if mod is ember else row.torch_fn(mod)
    args, kwargs, diff = bind(sample, mod, True)
    outs = [o for o in outputs(call(fn, args, kwargs))
            if hasattr(o, "grad_fn") and o.requires_grad]
    complex_call = any(t.is_complex() for t in (*outs, *diff))
    if not diff or not outs:
        return complex_call, []
    rng = np.random.default_rng(_seed(row.name, "names"))
    gos = [_tensor(mod, rng.standard_normal(o.shape).astype(dtype_name(o)), True) for o in outs]
    grads = _grad(mod, outs, diff, gos, create_graph=True)
    return complex_call, [None if g is None else graph_tree(g.grad_fn, depth) for g in grads]


def main(depth=1, names=()):
    import torch

    import ember
    from tests.ops.op_db import OP_DB
    from tests.ops.test_ops import _main_dtype, _samples
    warnings.simplefilter("ignore")
    differ = 0
    for row in OP_DB:
        if not (row.public and row.differentiable and row.gradgrad) or (
                names and row.name not in names):
            continue
        for sample in _samples(row.name, _main_dtype(row)):
            try:
                complex_call, want = gradient_graphs(torch, row, sample, depth)
            except Exception:  # noqa: BLE001, S112 - a sample torch refuses has nothing to match
                continue
            if not complex_call:
                continue
            try:
                got = gradient_graphs(ember, row, sample, depth)[1]
            except Exception as e:  # noqa: BLE001 - reported as the difference
                got = f"{type(e).__name__}: {e}"
            if got != want:
                differ += 1
                print(row.name, sample.name)
                if names:
                    print("  torch", want, "\n  ember", got)
    print(f"complex samples whose create_graph gradients differ from torch's: {differ}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 1, tuple(sys.argv[2:]))
