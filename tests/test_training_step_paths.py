"""A training step's first-order gradients on the paths that compute on NumPy arrays directly
(mm's and addmm's formulas, ReLU's large masked gradient, cross-entropy's), against torch:
row- and column-major operands, non-finite values, and no NumPy warning on the way."""
from __future__ import annotations

import numpy as np
import pytest

from tests.oracle import same, torch_or_skip


def _values(shape, seed, specials=()):
    rs = np.random.default_rng(seed)
    a = rs.standard_normal(shape).astype(np.float32)
    flat = a.reshape(-1)
    for k, v in enumerate(specials):
        flat[(k * 7919) % flat.size] = v
    return a


@pytest.mark.parametrize("transposed", [(False, False), (True, False), (False, True),
                                        (True, True)])
def test_mm_and_relu_gradients_match_torch(transposed):
    torch_or_skip()
    x = _values((64, 96), 0, (np.inf, -0.0, np.nan))
    w = _values((96, 80), 1, (-np.inf, 0.0))

    def body(torch):
        a = torch.tensor(x.T.copy() if transposed[0] else x, requires_grad=True)
        b = torch.tensor(w.T.copy() if transposed[1] else w, requires_grad=True)
        h = (a.t() if transposed[0] else a) @ (b.t() if transposed[1] else b)
        out = h.relu()  # (64 x 80 values: the masked gradient's path)
        out.backward(torch.ones_like(out))
        return a.grad, b.grad
    same(body, rtol=1e-5, atol=1e-6)


def test_addmm_and_cross_entropy_step_matches_torch():
    torch_or_skip()
    x, w, b = _values((64, 32), 2), _values((32, 10), 3), _values((10,), 4)
    x[3, 5] = np.inf
    y = np.random.default_rng(5).integers(0, 10, 64)

    def body(torch):
        W = torch.tensor(w, requires_grad=True)
        bias = torch.tensor(b, requires_grad=True)
        logits = torch.addmm(bias, torch.tensor(x), W)
        loss = torch.nn.functional.cross_entropy(logits, torch.tensor(y))
        loss.backward()
        return loss, W.grad, bias.grad
    same(body, rtol=1e-5, atol=1e-6)
