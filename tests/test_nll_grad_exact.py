"""nll_loss's (and cross_entropy's) first-order gradient as torch's kernel writes it: the
upstream gradient reaches only the target classes, so a NaN, infinite or negative upstream
gradient leaves +0.0 everywhere else, and the values are torch's in the input's dtype."""
from __future__ import annotations

import numpy as np
import pytest
from oracle import same

_UPSTREAM = [float("nan"), float("inf"), -2.0, 0.7]


def _case(shape, reduction, weighted, ignore):
    def body(torch):
        rs = np.random.RandomState(len(shape) * 10 + weighted + 2 * ignore)
        x = torch.tensor(rs.randn(*shape).astype(np.float32), requires_grad=True)
        c = shape[1] if len(shape) > 1 else shape[0]
        tshape = (shape[0],) + shape[2:] if len(shape) > 1 else ()
        t = rs.randint(0, c, tshape)
        if ignore:
            t = np.where(rs.rand(*tshape) < 0.4, -100, t) if tshape else np.int64(-100)
        target = torch.tensor(t)
        weight = torch.tensor(rs.rand(c).astype(np.float32) + 0.5) if weighted else None
        out = []
        for g in _UPSTREAM:
            x.grad = None
            loss = torch.nn.functional.nll_loss(x, target, weight=weight, reduction=reduction)
            up = torch.full(loss.shape, g)
            if reduction == "none" and loss.dim():
                up[..., 0] = 1.5
            loss.backward(up)
            out.append((x.grad, torch.signbit(x.grad)))
        return out
    return body


@pytest.mark.parametrize("shape", [(4,), (6, 5), (3, 4, 2), (2, 3, 2, 2)])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("ignore", [False, True])
def test_nll_loss_gradient_with_any_upstream_gradient(shape, reduction, weighted, ignore):
    same(_case(shape, reduction, weighted, ignore))


def test_cross_entropy_gradient_with_a_nan_upstream_gradient():
    def body(torch):
        x = torch.tensor(np.random.RandomState(0).randn(5, 3).astype(np.float32),
                         requires_grad=True)
        torch.nn.functional.cross_entropy(x, torch.tensor([0, 2, 1, 1, 0])).backward(
            torch.tensor(float("nan")))
        return x.grad
    same(body)
