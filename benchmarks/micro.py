"""Micro-benchmarks behind the workloads: what one op, one node, one accumulation costs.

Each entry builds ``name -> callable`` per peer (ember, torch when installed, NumPy where there
is a floor); the runner times them interleaved and prints microseconds and ratios.
"""
from __future__ import annotations

import numpy as np


def _pair(lib, shape=(16,), grad=False):
    rs = np.random.RandomState(0)
    a = lib.tensor(rs.rand(*shape).astype(np.float32), requires_grad=grad)
    b = lib.tensor(rs.rand(*shape).astype(np.float32), requires_grad=grad)
    return a, b


def op_no_grad(lib):
    a, b = _pair(lib)
    return lambda: a * b


def op_recording(lib):
    a, b = _pair(lib, grad=True)
    return lambda: a * b


def backward_per_node(lib, n=100):
    """A chain of ``n`` adds then backward: (forward + backward) of n nodes, divided by n."""
    x = lib.tensor(np.ones(16, np.float32), requires_grad=True)

    def run():
        h = x
        for _ in range(n):
            h = h + 1.0
        h.sum().backward()
        x.grad = None
    return run


def accumulation(lib, n=100):
    """One leaf used ``n`` times: the engine accumulates n gradients into one buffer."""
    x = lib.tensor(np.ones(16, np.float32), requires_grad=True)

    def run():
        total = x * 1.0
        for _ in range(n - 1):
            total = total + x
        total.sum().backward()
        x.grad = None
    return run


def inplace_op(lib):
    x = lib.ones(256, requires_grad=True)
    return lambda: (x * 1.0).mul_(2.0)


def outofplace_op(lib):
    x = lib.ones(256, requires_grad=True)
    return lambda: (x * 1.0).mul(2.0)


def inplace_unary(lib):
    x = lib.ones(256, requires_grad=True)
    return lambda: (x * 1.0).tanh_()


def outofplace_unary(lib):
    x = lib.ones(256, requires_grad=True)
    return lambda: (x * 1.0).tanh()


def _update(lib, n, inplace):
    """An optimizer-style update under no_grad: ``p.mul_(0.9).add_(g)`` or its copy."""
    p, g = _pair(lib, (n,))
    if inplace:
        return lambda: p.mul_(0.9).add_(g)
    return lambda: p.mul(0.9).add(g)


def _logits(lib, grad=True):
    rs = np.random.RandomState(1)
    return lib.tensor(rs.randn(64, 100).astype(np.float32), requires_grad=grad)


def softmax_fused(lib):
    x = _logits(lib)

    def run():
        lib.nn.functional.softmax(x, dim=1).sum().backward()
    return run


def softmax_composite(lib):
    x = _logits(lib)

    def run():
        e = (x - x.amax(dim=1, keepdim=True).detach()).exp() if hasattr(x, "amax") else x.exp()
        (e / e.sum(dim=1, keepdim=True)).sum().backward()
    return run


def cross_entropy_fused(lib):
    x = _logits(lib)
    y = lib.tensor(np.random.RandomState(2).randint(0, 100, 64))

    def run():
        lib.nn.functional.cross_entropy(x, y).backward()
    return run


def cross_entropy_composite(lib):
    x = _logits(lib)
    onehot = np.zeros((64, 100), np.float32)
    onehot[np.arange(64), np.random.RandomState(2).randint(0, 100, 64)] = 1
    target = lib.tensor(onehot)

    def run():
        shifted = x - x.amax(dim=1, keepdim=True).detach()
        logp = shifted - shifted.exp().sum(dim=1, keepdim=True).log()
        (-(logp * target).sum() / 64).backward()
    return run


MICRO = {
    # name: (builder, divide the time by, what it measures)
    "op, no grad": (op_no_grad, 1, "a * b on (16,) float32, nothing requires grad"),
    "op, recording": (op_recording, 1, "a * b on (16,) float32 requiring grad: node creation"),
    "fwd+bwd per node": (backward_per_node, 100, "chain of 100 adds, forward + backward / 100"),
    "accumulate per use": (accumulation, 100, "one leaf used 100 times, fwd + bwd / 100"),
    "in-place mul_": (inplace_op, 1, "(x * 1.0).mul_(2.0), (256,), x requires grad"),
    "out-of-place mul": (outofplace_op, 1, "(x * 1.0).mul(2.0): the same, out of place"),
    "in-place tanh_": (inplace_unary, 1, "(x * 1.0).tanh_(), (256,), x requires grad"),
    "out-of-place tanh": (outofplace_unary, 1, "(x * 1.0).tanh(): the same, out of place"),
    "update in place, small": (lambda lib: _update(lib, 256, True), 1,
                               "p.mul_(0.9).add_(g) on (256,), nothing requires grad"),
    "update out of place, small": (lambda lib: _update(lib, 256, False), 1,
                                   "p.mul(0.9).add(g): the same, out of place"),
    "update in place, large": (lambda lib: _update(lib, 10**6, True), 1,
                               "p.mul_(0.9).add_(g) on (10^6,)"),
    "update out of place, large": (lambda lib: _update(lib, 10**6, False), 1,
                                   "p.mul(0.9).add(g) on (10^6,)"),
    "softmax (fused)": (softmax_fused, 1, "F.softmax (64, 100), fwd + bwd"),
    "softmax (composite)": (softmax_composite, 1, "exp / sum written out, fwd + bwd"),
    "cross_entropy (fused)": (cross_entropy_fused, 1, "F.cross_entropy (64, 100), fwd + bwd"),
    "cross_entropy (composite)": (cross_entropy_composite, 1,
                                  "log-softmax and one-hot written out, fwd + bwd"),
}

def jacobian(lib, vectorize):
    """The 64x64 Jacobian of a small MLP: one batched backward, or one backward per row."""
    rs = np.random.RandomState(0)
    w1, w2 = (lib.tensor(rs.randn(*s).astype(np.float32)) for s in [(128, 64), (64, 128)])
    x = lib.tensor(rs.randn(64).astype(np.float32))
    fn = lambda v: w2 @ (w1 @ v).tanh()  # noqa: E731
    return lambda: lib.autograd.functional.jacobian(fn, x, vectorize=vectorize)


MICRO.update({
    "jacobian, vectorize=True": (lambda lib: jacobian(lib, True), 1,
                                 "64x64 Jacobian of an MLP, one batched backward"),
    "jacobian, vectorize=False": (lambda lib: jacobian(lib, False), 1,
                                  "the same, one backward per output element"),
})

# In-place ops must cost no more than their out-of-place twins: (in-place, out-of-place).
INPLACE_PAIRS = [("in-place mul_", "out-of-place mul"), ("in-place tanh_", "out-of-place tanh"),
                 ("update in place, small", "update out of place, small"),
                 ("update in place, large", "update out of place, large")]
