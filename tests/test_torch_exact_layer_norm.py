"""layer_norm on float32 rows of fewer than 8 elements gives torch's values to the last bit:
the output, the statistics native_layer_norm returns and the input's gradient (which, on
rows of two elements, is mostly rounding: only torch's own operations give its values).

Each body runs on PyTorch and on ember (``oracle.same``); the tests skip without torch.
"""
from __future__ import annotations

import numpy as np
import pytest
from oracle import same


def _case(t, seed, affine):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 8))
    rows = rng.normal(size=(3, n)) if seed % 2 else rng.integers(-3, 3, size=(3, n)) * 0.37
    x = t.tensor(rows.astype(np.float32).tolist(), requires_grad=True)
    w = t.tensor(rng.normal(size=n).tolist(), requires_grad=True) if "w" in affine else None
    b = t.tensor(rng.normal(size=n).tolist(), requires_grad=True) if "b" in affine else None
    y, mean, rstd = t.native_layer_norm(x, [n], w, b, 1e-5)
    g, = t.autograd.grad((y * y).sum(), [x])
    return y, mean, rstd, g


@pytest.mark.parametrize("affine", ["", "w", "b", "wb"])
def test_short_rows_bit_exact(affine):
    same(lambda t: [_case(t, seed, affine) for seed in range(12)], rtol=0, atol=0)


def test_two_elements_cancel():
    """The rows of a program whose gradient cancels to rounding (its log2 read it)."""
    def body(t):
        x = t.tensor([[0.4, 0.55], [0.49, 0.0], [1.79, 0.77]], requires_grad=True)
        y = t.nn.functional.layer_norm(x, (2,), t.tensor([-1.83, 1.83], requires_grad=True))
        g, = t.autograd.grad(y.pow(2).sum(), [x])
        return g, g.log2()
    same(body, rtol=0, atol=0, grad_fn=False)


@pytest.mark.parametrize("row", [[1e20, 1e20], [1e19, -1e19, 3.0], [3e38, 1.0],
                                 [float("inf"), 1.0], [1.0, 1.0]])
def test_edges(row):
    """A mean too large to square gives NaN statistics, as torch's merge of moments does."""
    same(lambda t: t.native_layer_norm(t.tensor([row]), [len(row)], None, None, 1e-5),
         rtol=0, atol=0)
