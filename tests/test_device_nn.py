"""nn and optim on a cuda device: models, losses and every optimizer give on the device what
they give on the CPU, and keep parameters, gradients, buffers and state on the device.

Without a GPU the device is the CPU stand-in for CuPy (tests/fake_cupy.py, via the
``cuda_device`` fixture), so every path that would fall back to host NumPy fails here.
"""
from __future__ import annotations

import copy
import io

import numpy as np
import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F
from test_optim import CASES, _case_id

TOL = {"rtol": 1e-10, "atol": 1e-12}


def _host(t):
    return t.detach().cpu().numpy()


def _models():
    """(name, build, input maker, loss of the output): small float64 models."""
    def mlp():
        return nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Dropout(0.0), nn.Linear(8, 3))

    def cnn():
        return nn.Sequential(nn.Conv2d(2, 4, 3, padding=1), nn.BatchNorm2d(4), nn.GELU(),
                             nn.MaxPool2d(2), nn.Conv2d(4, 4, 3, stride=2, groups=2),
                             nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(4, 3))

    def rnns():
        return nn.ModuleList([nn.LSTM(4, 5, num_layers=2, bidirectional=True),
                              nn.GRU(4, 5, batch_first=True), nn.RNN(4, 5)])

    def transformer():
        return nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0)

    def norms():
        return nn.Sequential(nn.Embedding(10, 8, padding_idx=0), nn.LayerNorm(8),
                             nn.Linear(8, 8), nn.Flatten(1), nn.Unflatten(1, (4, 6)),
                             nn.GroupNorm(2, 4))

    def seq_out(model, x):
        out = 0
        for m in model:
            y, _ = m(x)
            out = out + y.pow(2).mean()
        return out

    def first(model, x):
        return model(x)

    def floats(*shape):  # the same values on every call
        return ember.tensor(np.random.default_rng(0).standard_normal(shape))

    return [
        ("mlp", mlp, lambda: floats(5, 6),
         lambda out: F.cross_entropy(out, ember.tensor([0, 1, 2, 1, 0], device=out.device)),
         first),
        ("cnn", cnn, lambda: floats(3, 2, 8, 8),
         lambda out: F.mse_loss(out, ember.ones_like(out)), first),
        ("rnns", rnns, lambda: floats(3, 2, 4), lambda out: out, seq_out),
        ("transformer", transformer, lambda: floats(5, 2, 8),
         lambda out: F.smooth_l1_loss(out, ember.zeros_like(out)), first),
        ("norms", norms, lambda: ember.tensor([[1, 2, 0], [3, 9, 4]]),
         lambda out: F.binary_cross_entropy_with_logits(out, (out > 0).to(out.dtype)), first),
    ]


MODELS = _models()


def _run_model(build, make, loss_of, call, dev):
    ember.manual_seed(0)
    model = build().double()
    model.to(dev)
    x = make().to(dev)
    loss = loss_of(call(model, x))
    loss.backward()
    return model, loss


@pytest.mark.parametrize("name,build,make,loss_of,call", MODELS, ids=[m[0] for m in MODELS])
def test_models_train_alike_on_the_device(name, build, make, loss_of, call, cuda_device):
    cpu_model, cpu_loss = _run_model(build, make, loss_of, call, "cpu")
    dev_model, dev_loss = _run_model(build, make, loss_of, call, cuda_device)
    assert dev_loss.device == ember.device(cuda_device)
    np.testing.assert_allclose(_host(dev_loss), _host(cpu_loss), **TOL)
    for (pname, p_cpu), (_, p_dev) in zip(cpu_model.named_parameters(),
                                          dev_model.named_parameters()):
        assert p_dev.is_cuda and p_dev.grad.is_cuda, pname
        np.testing.assert_allclose(_host(p_dev.grad), _host(p_cpu.grad), err_msg=pname, **TOL)
    for (bname, b_cpu), (_, b_dev) in zip(cpu_model.named_buffers(), dev_model.named_buffers()):
        assert b_dev.is_cuda, bname
        np.testing.assert_allclose(_host(b_dev), _host(b_cpu), err_msg=bname, **TOL)


def _losses():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((4, 5))
    target = np.array([1, 0, 4, 2])
    return {
        "nll": lambda d: F.nll_loss(F.log_softmax(_t(x, d), 1), _t(target, d)),
        "cross_entropy_smoothing": lambda d: F.cross_entropy(_t(x, d), _t(target, d),
                                                             label_smoothing=0.1),
        "kl_div": lambda d: F.kl_div(F.log_softmax(_t(x, d), 1), F.softmax(_t(x[::-1].copy(),
                                                                             d), 1),
                                     reduction="batchmean"),
        "huber": lambda d: F.huber_loss(_t(x, d), _t(x * 0.5, d, False)),
        "margin_ranking": lambda d: F.margin_ranking_loss(_t(x[0], d), _t(x[1], d),
                                                          _t(np.sign(x[2]), d, False)),
        "cosine_embedding": lambda d: F.cosine_embedding_loss(
            _t(x, d), _t(x[::-1].copy(), d), _t(np.array([1.0, -1.0, 1.0, -1.0]), d, False)),
        "ctc": lambda d: F.ctc_loss(F.log_softmax(_t(rng_ctc, d), 2), _t(ctc_targets, d),
                                    (6, 6), (3, 2)),
    }


rng_ctc = np.random.default_rng(2).standard_normal((6, 2, 4))
ctc_targets = np.array([[1, 2, 3], [2, 1, 0]])


def _t(a, dev, grad=True):
    t = ember.tensor(a).to(dev)
    return t.requires_grad_() if grad and t.is_floating_point() else t


@pytest.mark.parametrize("name", list(_losses()))
def test_losses_agree_on_the_device(name, cuda_device):
    make = _losses()[name]
    results = []
    for dev in ("cpu", cuda_device):
        loss = make(dev)
        grads = ember.autograd.grad(loss, _leaves_of(loss), allow_unused=True)
        results.append((loss, grads))
    (cl, cg), (dl, dg) = results
    assert dl.device == ember.device(cuda_device)
    np.testing.assert_allclose(_host(dl), _host(cl), **TOL)
    for a, b in zip(dg, cg):
        assert a.is_cuda
        np.testing.assert_allclose(_host(a), _host(b), **TOL)


def _leaves_of(t):
    """The leaves requiring grad in ``t``'s graph, in a fixed order."""
    seen, out, stack = set(), [], [t.grad_fn]
    while stack:
        fn = stack.pop()
        if fn is None or fn in seen:
            continue
        seen.add(fn)
        var = getattr(fn, "variable", None)
        if var is not None:
            out.append(var)
        stack.extend(nxt for nxt, _ in fn.next_functions)
    # (by the values themselves: a sum would tie, or not, by its rounding, which differs
    # between the CPU's torch-ordered sums and a device's own order)
    return sorted(out, key=lambda v: (tuple(v.shape), _host(v.detach()).ravel().tolist()))


def _opt_run(name, kwargs, dev, steps=4):
    ember.manual_seed(0)
    params = [ember.randn(3, 4, dtype=ember.float64).to(dev).requires_grad_(),
              ember.randn(4, dtype=ember.float64).to(dev).requires_grad_()]
    opt = getattr(ember.optim, name)(params, **kwargs)
    target = ember.linspace(-1, 1, 12, dtype=ember.float64).reshape(3, 4).to(dev)
    for _ in range(steps):
        opt.zero_grad()
        loss = ((params[0] - target) ** 2).sum() + (params[1] ** 4).sum()
        loss.backward()
        opt.step()
    return params, opt


_HOST_STATE = ("step", "mu_product")  # scalars torch keeps on the CPU (without capturable)


@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_optimizers_step_alike_on_the_device(case, cuda_device):
    name, kwargs = case
    cpu_params, _ = _opt_run(name, kwargs, "cpu")
    dev_params, opt = _opt_run(name, kwargs, cuda_device)
    for a, b in zip(dev_params, cpu_params):
        assert a.is_cuda
        np.testing.assert_allclose(_host(a), _host(b), **TOL)
    for p in dev_params:
        for key, value in opt.state[p].items():
            if isinstance(value, ember.Tensor) and key not in _HOST_STATE:
                assert value.is_cuda, key
    # the state survives a save/load round trip and returns to the parameters' device
    buf = io.BytesIO()
    ember.save(opt.state_dict(), buf)
    buf.seek(0)
    fresh = getattr(ember.optim, name)(dev_params, **kwargs)
    fresh.load_state_dict(ember.load(buf, map_location="cpu"))
    for p in dev_params:
        for key, value in fresh.state[p].items():
            if isinstance(value, ember.Tensor) and key not in _HOST_STATE:
                assert value.is_cuda, key


def test_lbfgs_and_grad_clipping_on_the_device(cuda_device):
    results = []
    for dev in ("cpu", cuda_device):
        x = ember.tensor([1.5, -0.5], dtype=ember.float64).to(dev).requires_grad_()
        opt = ember.optim.LBFGS([x], lr=0.5, max_iter=10, line_search_fn="strong_wolfe")

        def closure():
            opt.zero_grad()
            loss = (x[0] - 1) ** 2 + 10 * (x[1] - x[0] ** 2) ** 2
            loss.backward()
            return loss
        opt.step(closure)
        total = nn.utils.clip_grad_norm_([x], 0.1)
        nn.utils.clip_grad_value_([x], 0.01)
        results.append((x, total))
    (cx, ct), (dx, dt) = results
    assert dx.is_cuda and dt.is_cuda and dx.grad.is_cuda
    np.testing.assert_allclose(_host(dx), _host(cx), **TOL)
    np.testing.assert_allclose(_host(dt), _host(ct), **TOL)
    np.testing.assert_allclose(_host(dx.grad), _host(cx.grad), **TOL)


def test_deepcopy_state_dict_and_functional_call_on_the_device(cuda_device):
    model = nn.Linear(3, 2).cuda()
    clone = copy.deepcopy(model)
    assert clone.weight.is_cuda and clone.weight is not model.weight
    fresh = nn.Linear(3, 2, device="cuda")
    fresh.load_state_dict(model.state_dict())
    np.testing.assert_array_equal(_host(fresh.weight), _host(model.weight))
    x = ember.randn(4, 3, device="cuda")
    params = {k: v * 2 for k, v in model.named_parameters()}
    out = ember.func.functional_call(model, params, (x,))
    assert out.is_cuda
    np.testing.assert_allclose(_host(out), _host(x @ (model.weight * 2).T + model.bias * 2),
                               **TOL)
    jac = ember.func.jacrev(lambda w: (x @ w.T).sum(0))(model.weight)
    assert jac.is_cuda and tuple(jac.shape) == (2, 2, 3)
