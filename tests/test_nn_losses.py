"""Loss modules and functional losses against torch 2.13: values, gradients, reprs, errors."""
from __future__ import annotations

import numpy as np
import pytest
from nn_helpers import close, repr_norm, torch_mod
from oracle import same

import ember

rng = np.random.default_rng(3)
X = rng.uniform(-2, 2, (4, 5)).astype(np.float32)
T = rng.uniform(-2, 2, (4, 5)).astype(np.float32)
P = rng.uniform(0.05, 0.95, (4, 5)).astype(np.float32)
IDX = np.array([0, 4, 2, 1])
SIGN = np.sign(rng.uniform(-1, 1, (4, 5))).astype(np.float32)
W = rng.uniform(0.5, 2.0, 5).astype(np.float32)


def _t(lib, a):
    return lib.tensor(a)


# (module name, constructor kwargs (values may need the library), inputs builder)
LOSSES = [
    ("L1Loss", {}, lambda lib, x: (x, _t(lib, T))),
    ("MSELoss", {"reduction": "sum"}, lambda lib, x: (x, _t(lib, T))),
    ("SmoothL1Loss", {"beta": 0.5}, lambda lib, x: (x, _t(lib, T))),
    ("HuberLoss", {"delta": 0.8, "reduction": "none"}, lambda lib, x: (x, _t(lib, T))),
    ("BCELoss", {}, lambda lib, x: (lib.sigmoid(x), _t(lib, P))),
    ("BCELoss", {"weight": W}, lambda lib, x: (lib.sigmoid(x), _t(lib, P))),
    ("BCEWithLogitsLoss", {"pos_weight": W}, lambda lib, x: (x, _t(lib, P))),
    ("NLLLoss", {"weight": W, "ignore_index": 2}, lambda lib, x: (x, _t(lib, IDX))),
    ("CrossEntropyLoss", {}, lambda lib, x: (x, _t(lib, IDX))),
    ("CrossEntropyLoss", {"label_smoothing": 0.1, "weight": W},
     lambda lib, x: (x, _t(lib, IDX))),
    ("CrossEntropyLoss", {"reduction": "sum"}, lambda lib, x: (x, _t(lib, P))),
    ("KLDivLoss", {"reduction": "batchmean"}, lambda lib, x: (x, _t(lib, P))),
    ("KLDivLoss", {"reduction": "sum", "log_target": True}, lambda lib, x: (x, _t(lib, T))),
    ("PoissonNLLLoss", {"full": True}, lambda lib, x: (x, _t(lib, P * 4))),
    ("GaussianNLLLoss", {"full": True}, lambda lib, x: (x, _t(lib, T), _t(lib, P))),
    ("HingeEmbeddingLoss", {"margin": 0.5}, lambda lib, x: (x, _t(lib, SIGN))),
    ("SoftMarginLoss", {}, lambda lib, x: (x, _t(lib, SIGN))),
    ("MultiLabelSoftMarginLoss", {"weight": W}, lambda lib, x: (x, _t(lib, P > 0.5) * 1.0)),
    ("CosineEmbeddingLoss", {"margin": 0.1},
     lambda lib, x: (x, _t(lib, T), _t(lib, SIGN[:, 0]))),
    ("MarginRankingLoss", {"margin": 0.2}, lambda lib, x: (x, _t(lib, T), _t(lib, SIGN))),
    ("TripletMarginLoss", {"margin": 0.5, "swap": True},
     lambda lib, x: (x, _t(lib, T), _t(lib, P))),
    ("MultiMarginLoss", {"p": 2, "margin": 0.5, "weight": W},
     lambda lib, x: (x, _t(lib, IDX))),
]


def _kwargs(lib, kw):
    return {k: lib.tensor(v) if isinstance(v, np.ndarray) else v for k, v in kw.items()}


@pytest.mark.parametrize("name,kw,inputs", LOSSES,
                         ids=[f"{n}-{i}" for i, (n, _, _) in enumerate(LOSSES)])
def test_loss_module_matches_torch(name, kw, inputs):
    torch = torch_mod()
    results = []
    for lib in (torch, ember):
        mod = getattr(lib.nn, name)(**_kwargs(lib, kw))
        x = lib.tensor(X, requires_grad=True)
        loss = mod(*inputs(lib, x))
        loss.sum().backward()
        results.append((mod, loss, x.grad, sorted(mod.state_dict())))
    (tm, tl, tg, tk), (em, el, eg, ek) = results
    assert repr(em) == repr_norm(repr(tm))
    assert ek == tk
    close(el, tl, rtol=1e-5, what="loss")
    close(eg, tg, rtol=1e-4, atol=1e-6, what="grad")
    assert type(el.grad_fn).__name__ == type(tl.grad_fn).__name__ or name in (
        "CrossEntropyLoss",)


def test_losses_with_nd_inputs():
    xa = rng.standard_normal((2, 3, 4, 2))
    ta = rng.integers(0, 3, (2, 4, 2))
    ta[0, 0, 0] = -100

    def body(lib):
        F = lib.nn.functional
        x = lib.tensor(xa, requires_grad=True)
        t = lib.tensor(ta)
        losses = [F.cross_entropy(x, t), F.nll_loss(x, t, reduction="sum"),
                  F.cross_entropy(x, t, reduction="none"),
                  F.cross_entropy(x[..., 0], t[..., 0], reduction="none")]
        grads = lib.autograd.grad(sum(v.sum() for v in losses), x)
        return losses, grads
    same(body, rtol=1e-5, atol=1e-6)


def test_loss_errors_match_torch():
    def body(lib):
        F = lib.nn.functional
        x = lib.tensor(X)
        out = []
        for bad in (lambda: F.nll_loss(x, lib.tensor([0, 1])),
                    lambda: F.nll_loss(x, lib.tensor([0, 1, 2, 9])),
                    lambda: F.cross_entropy(x, lib.tensor(IDX), weight=lib.ones(3)),
                    lambda: F.binary_cross_entropy(lib.sigmoid(x), lib.ones(4, 1)),
                    lambda: F.binary_cross_entropy(x, lib.zeros(4, 5)),
                    lambda: F.smooth_l1_loss(x, x, beta=-1.0),
                    lambda: F.kl_div(x, x, reduction="avg"),
                    lambda: F.cross_entropy(x, lib.tensor(IDX), label_smoothing=1.5),
                    lambda: F.gaussian_nll_loss(x, x, lib.ones(3)),
                    lambda: F.gaussian_nll_loss(x, x, -lib.ones(4, 5)),
                    lambda: F.cosine_embedding_loss(x, x, lib.ones(4, 1)),
                    lambda: F.multi_margin_loss(x, lib.tensor(IDX), p=3),
                    lambda: lib.nn.TripletMarginLoss(margin=-1.0),
                    lambda: F.mse_loss(x, x, reduction="bad")):
            try:
                bad()
                out.append(None)
            except Exception as e:  # noqa: BLE001
                out.append((type(e).__name__, str(e)))
        return out
    same(body)


def test_target_size_warnings_match_torch():
    def body(lib):
        F = lib.nn.functional
        x = lib.ones(3, 1)
        return (F.mse_loss(x, lib.ones(3)), F.l1_loss(x, lib.ones(3)),
                F.kl_div(lib.zeros(2), lib.ones(2)))
    same(body, grad_fn=False)


def test_legacy_size_average_reduce():
    def body(lib):
        m = lib.nn.L1Loss(size_average=False)
        n = lib.nn.MSELoss(reduce=False)
        return m.reduction, n.reduction, lib.nn.functional.l1_loss(
            lib.ones(2), lib.zeros(2), size_average=False)
    out = same(body, grad_fn=False, check_warnings=False)
    assert out.warnings and "size_average and reduce args" in out.warnings[0][1]
