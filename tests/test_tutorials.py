"""PyTorch's "learning with examples" tutorials, run with ember and with torch.

Each example fits y = sin(x) on [-pi, pi] with a third order polynomial, as the beginner
tutorial does: with plain autograd, a custom autograd Function (the Legendre polynomial P3), an
nn.Sequential with Flatten, an optimizer, a custom Module and a dynamic network. Both libraries
start from the same weights and must reach the same loss (and print the same model). Each takes
a ``device`` too, as torch code does: on the (fake) GPU ember must reach the CPU's losses.
"""
from __future__ import annotations

import math
import random

import numpy as np
import pytest
from nn_helpers import repr_norm

import ember

STEPS = 300
RTOL = 1e-3


def _data(lib, device):
    x = lib.linspace(-math.pi, math.pi, 2000, device=device)
    return x, lib.sin(x)


def _init(n, seed=0):
    return np.random.default_rng(seed).standard_normal(n).astype(np.float32)


def plain_autograd(lib, device="cpu"):
    x, y = _data(lib, device)
    a, b, c, d = (lib.tensor(v, requires_grad=True, device=device) for v in _init(4))
    lr = 1e-6
    losses = []
    for _ in range(STEPS):
        y_pred = a + b * x + c * x ** 2 + d * x ** 3
        loss = (y_pred - y).pow(2).sum()
        losses.append(loss.item())
        loss.backward()
        with lib.no_grad():
            for p in (a, b, c, d):
                p -= lr * p.grad
                p.grad = None
    return losses, f"y = {a.item():.4f} + {b.item():.4f} x"


def legendre(lib, device="cpu"):
    class LegendrePolynomial3(lib.autograd.Function):
        @staticmethod
        def forward(ctx, input):
            ctx.save_for_backward(input)
            return 0.5 * (5 * input ** 3 - 3 * input)

        @staticmethod
        def backward(ctx, grad_output):
            (input,) = ctx.saved_tensors
            return grad_output * 1.5 * (5 * input ** 2 - 1)

    x, y = _data(lib, device)
    a = lib.full((), 0.0, requires_grad=True, device=device)
    b = lib.full((), -1.0, requires_grad=True, device=device)
    c = lib.full((), 0.0, requires_grad=True, device=device)
    d = lib.full((), 0.3, requires_grad=True, device=device)
    lr = 5e-6
    losses = []
    for _ in range(STEPS):
        P3 = LegendrePolynomial3.apply
        y_pred = a + b * P3(c + d * x)
        loss = (y_pred - y).pow(2).sum()
        losses.append(loss.item())
        loss.backward()
        with lib.no_grad():
            for p in (a, b, c, d):
                p -= lr * p.grad
                p.grad = None
    return losses, type(y_pred.grad_fn).__name__


def _sequential(lib, device):
    model = lib.nn.Sequential(lib.nn.Linear(3, 1), lib.nn.Flatten(0, 1))
    w = _init(4, seed=1)
    with lib.no_grad():
        model[0].weight.copy_(lib.tensor(w[:3]).reshape(1, 3))
        model[0].bias.copy_(lib.tensor(w[3:]))
    return model.to(device)


def _features(lib, device):
    x, y = _data(lib, device)
    p = lib.tensor([1, 2, 3], device=device)
    return x.unsqueeze(-1).pow(p), y


def nn_sequential(lib, device="cpu"):
    xx, y = _features(lib, device)
    model = _sequential(lib, device)
    loss_fn = lib.nn.MSELoss(reduction="sum")
    lr = 1e-6
    losses = []
    for _ in range(STEPS):
        loss = loss_fn(model(xx), y)
        losses.append(loss.item())
        model.zero_grad()
        loss.backward()
        with lib.no_grad():
            for param in model.parameters():
                param -= lr * param.grad
    return losses, repr(model)


def nn_optim(lib, device="cpu"):
    xx, y = _features(lib, device)
    model = _sequential(lib, device)
    loss_fn = lib.nn.MSELoss(reduction="sum")
    optimizer = lib.optim.RMSprop(model.parameters(), lr=1e-3)
    losses = []
    for _ in range(STEPS):
        loss = loss_fn(model(xx), y)
        losses.append(loss.item())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    linear = model[0]
    return losses, (repr(model), len(linear.weight[:, 0]))


def custom_module(lib, device="cpu"):
    class Polynomial3(lib.nn.Module):
        def __init__(self):
            super().__init__()
            a, b, c, d = _init(4, seed=2)
            self.a = lib.nn.Parameter(lib.tensor(a, device=device))
            self.b = lib.nn.Parameter(lib.tensor(b, device=device))
            self.c = lib.nn.Parameter(lib.tensor(c, device=device))
            self.d = lib.nn.Parameter(lib.tensor(d, device=device))

        def forward(self, x):
            return self.a + self.b * x + self.c * x ** 2 + self.d * x ** 3

        def string(self):
            return f"y = {self.a.item():.2f} + {self.b.item():.2f} x"

    x, y = _data(lib, device)
    model = Polynomial3()
    criterion = lib.nn.MSELoss(reduction="sum")
    optimizer = lib.optim.SGD(model.parameters(), lr=1e-6)
    losses = []
    for _ in range(STEPS):
        loss = criterion(model(x), y)
        losses.append(loss.item())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return losses, (repr(model), model.string(), [n for n, _ in model.named_parameters()])


def dynamic_net(lib, device="cpu"):
    class DynamicNet(lib.nn.Module):
        def __init__(self):
            super().__init__()
            for name, v in zip("abcde", _init(5, seed=3)):
                setattr(self, name, lib.nn.Parameter(lib.tensor(v)))
            self.rng = random.Random(0)  # the same "random" depths in both libraries

        def forward(self, x):
            y = self.a + self.b * x + self.c * x ** 2 + self.d * x ** 3
            for exp in range(4, self.rng.randint(4, 6)):
                y = y + self.e * x ** exp
            return y

    x, y = _data(lib, device)
    model = DynamicNet().to(device)
    criterion = lib.nn.MSELoss(reduction="sum")
    optimizer = lib.optim.SGD(model.parameters(), lr=1e-8, momentum=0.9)
    losses = []
    for _ in range(STEPS):
        loss = criterion(model(x), y)
        losses.append(loss.item())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return losses, repr(model)


EXAMPLES = [plain_autograd, legendre, nn_sequential, nn_optim, custom_module, dynamic_net]


@pytest.mark.parametrize("example", EXAMPLES, ids=[f.__name__ for f in EXAMPLES])
def test_tutorial_example_matches_torch(example):
    torch = pytest.importorskip("torch")
    t_losses, t_printed = example(torch)
    e_losses, e_printed = example(ember)
    np.testing.assert_allclose(e_losses[::50], t_losses[::50], rtol=RTOL)
    np.testing.assert_allclose(e_losses[-1], t_losses[-1], rtol=RTOL)
    if isinstance(t_printed, str):
        t_printed = repr_norm(t_printed)
    elif isinstance(t_printed, tuple):
        t_printed = tuple(repr_norm(v) if isinstance(v, str) else v for v in t_printed)
    assert e_printed == t_printed


@pytest.mark.parametrize("example", EXAMPLES, ids=[f.__name__ for f in EXAMPLES])
def test_tutorial_example_learns(example):
    """Without torch: the loss goes down (the examples run on ember alone)."""
    losses, _ = example(ember)
    assert all(math.isfinite(v) for v in losses)
    assert losses[-1] < losses[0]


@pytest.mark.parametrize("example", EXAMPLES, ids=[f.__name__ for f in EXAMPLES])
def test_tutorial_example_runs_on_the_device(example, cuda_device, monkeypatch):
    """With ``device='cuda'`` (the fake GPU: the same kernels) the CPU's losses and printouts."""
    monkeypatch.setitem(globals(), "STEPS", 60)  # (the device paths are the same every step)
    ember.cuda.reset_peak_memory_stats()
    on_device, printed = example(ember, cuda_device)
    assert ember.cuda.max_memory_allocated() >= 2000 * 4  # (the data was on the device)
    on_cpu, cpu_printed = example(ember)
    np.testing.assert_allclose(on_device, on_cpu, rtol=1e-6)
    assert printed == cpu_printed
