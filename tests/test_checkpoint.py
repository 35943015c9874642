"""``ember.utils.checkpoint``: recomputation instead of stored activations, gradients equal to
the plain run, RNG state replayed on recompute, torch's warnings and errors.
"""
import gc
import warnings
import weakref

import numpy as np
import pytest
from oracle import same

import ember
from ember.utils.checkpoint import checkpoint, checkpoint_sequential

GEN = np.random.default_rng(0)
X = GEN.standard_normal((4, 3))
W = GEN.standard_normal((3, 3))


def block(x, w):
    h = (x @ w).tanh()
    return (h * h.sigmoid()).exp().sum(1)


@pytest.mark.parametrize("use_reentrant", [False, True])
def test_gradients_equal_uncheckpointed(use_reentrant):
    x = ember.tensor(X, requires_grad=True)
    w = ember.tensor(W, requires_grad=True)
    block(x, w).sum().backward()
    ref = (x.grad.numpy().copy(), w.grad.numpy().copy())
    x.grad = w.grad = None
    out = checkpoint(block, x, w, use_reentrant=use_reentrant)
    np.testing.assert_allclose(out.detach().numpy(), block(x, w).detach().numpy())
    out.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), ref[0], rtol=1e-12)
    np.testing.assert_allclose(w.grad.numpy(), ref[1], rtol=1e-12)


@pytest.mark.parametrize("use_reentrant", [False, True])
def test_intermediates_are_not_kept(use_reentrant):
    x = ember.tensor(X, requires_grad=True)
    w = ember.tensor(W, requires_grad=True)
    refs = []

    def fn(a, b):
        h = (a @ b).tanh()
        refs.append(weakref.ref(h))
        return (h * h).sum()
    plain = fn(x, w)
    gc.collect()
    assert refs[0]() is not None  # the plain graph keeps h (MulBackward0 saved it)
    del plain
    out = checkpoint(fn, x, w, use_reentrant=use_reentrant)
    gc.collect()
    assert refs[1]() is None  # the checkpointed forward kept nothing
    out.backward()
    assert len(refs) == 3  # recomputed exactly once, in backward
    np.testing.assert_allclose(x.grad.numpy(), (2 * np.tanh(X @ W) * (1 - np.tanh(X @ W) ** 2))
                               @ W.T, rtol=1e-10)


def test_non_reentrant_nodes_are_the_ordinary_ones_and_grad_works():
    x = ember.tensor(X, requires_grad=True)
    out = checkpoint(lambda a: a.sin().sum(), x, use_reentrant=False)
    assert type(out.grad_fn).__name__ == "SumBackward0"
    (g,) = ember.autograd.grad(out, x)
    np.testing.assert_allclose(g.numpy(), np.cos(X))
    out = checkpoint(lambda a: a.sin().sum(), x, use_reentrant=True)
    assert type(out.grad_fn).__name__ == "CheckpointFunctionBackward"


@pytest.mark.parametrize("use_reentrant", [False, True])
def test_dropout_sees_the_same_rng_state(use_reentrant):
    x = ember.tensor(X, requires_grad=True)

    def fn(a):
        mask = (ember.rand(*a.shape) > 0.5).to(a.dtype)
        return (a.exp() * mask).sum()
    ember.manual_seed(3)
    fn(x).backward()
    ref = x.grad.numpy().copy()
    x.grad = None
    ember.manual_seed(3)
    out = checkpoint(fn, x, use_reentrant=use_reentrant)
    after_forward = ember.rand(1).item()
    out.backward()
    np.testing.assert_allclose(x.grad.numpy(), ref)
    ember.manual_seed(3)
    ember.rand(*X.shape)
    assert ember.rand(1).item() == after_forward  # recompute did not advance the generator


@pytest.mark.parametrize("use_reentrant", [False, True])
def test_checkpoint_sequential(use_reentrant):
    ember.manual_seed(0)
    lin1, lin2 = ember.nn.Linear(3, 3), ember.nn.Linear(3, 3)
    layers = [lin1, ember.tanh, lin2, ember.sigmoid]
    params = list(lin1.parameters()) + list(lin2.parameters())
    x = ember.tensor(X, dtype=ember.float32, requires_grad=True)
    out = x
    for layer in layers:
        out = layer(out)
    out.sum().backward()
    ref = [p.grad.numpy().copy() for p in params] + [x.grad.numpy().copy()]
    for p in params + [x]:
        p.grad = None
    out = checkpoint_sequential(layers, 2, x, use_reentrant=use_reentrant)
    out.sum().backward()
    got = [p.grad.numpy() for p in params] + [x.grad.numpy()]
    for a, b in zip(got, ref):
        np.testing.assert_allclose(a, b, rtol=1e-6)


def test_warnings_and_errors_as_torch():
    def body(torch):
        checkpoint = torch.utils.checkpoint.checkpoint
        checkpoint_sequential = torch.utils.checkpoint.checkpoint_sequential
        out = []
        x = torch.tensor([0.5, 1.0], requires_grad=True)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            out.append(checkpoint(lambda a: a.sin(), x).requires_grad)
            out.append(checkpoint(lambda a: a.sin(), torch.ones(2),
                                  use_reentrant=True).requires_grad)
            out.append(checkpoint(lambda a: a.sin(), torch.ones(2),
                                  use_reentrant=False).requires_grad)
            out.append(checkpoint_sequential([torch.tanh] * 2, 2, x).requires_grad)
        out.append([str(w.message) for w in caught])
        try:
            checkpoint(lambda a: a, x, use_reentrant=True, foo=1)
        except ValueError as e:
            out.append(str(e))
        return out
    same(body, check_warnings=False)
