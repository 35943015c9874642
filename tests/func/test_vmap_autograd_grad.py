"""autograd.grad called under vmap with batched grad_outputs, of a graph made outside the vmap
(``vmap(lambda v: autograd.grad(out, x, v))``), for every differentiable op-table row: each
example's gradients equal one ordinary pass per example, and torch's vmap where torch's own
vmap agrees with its per-example passes (cdist's batched backward in torch 2.13 does not).
Also with is_grads_batched inside the vmap, and with create_graph."""
import warnings

import numpy as np
import pytest
from ops.op_db import OP_DB
from ops.test_ops import bind, outputs
from oracle import torch_or_skip

import ember

BATCH = 3


def _graph(lib, row, sample):
    args, kwargs, diff = bind(sample, lib, True)
    fn = row.torch_fn(lib) if lib is not ember else row.op
    outs = [o for o in outputs(fn(*args, **kwargs)) if isinstance(o, lib.Tensor)
            and o.requires_grad and o.is_floating_point()]
    cotangents = [lib.from_numpy(np.random.default_rng(k).standard_normal(
        (BATCH,) + tuple(o.shape))) for k, o in enumerate(outs)]
    return outs, diff, cotangents


def _grad(lib, outs, diff, cotangents):
    return lib.autograd.grad(outs, diff, cotangents, allow_unused=True, retain_graph=True,
                             materialize_grads=True)


def _arrays(grads):
    return [g.detach().numpy() for g in grads]


def _vmapped(lib, row, sample):
    outs, diff, cotangents = _graph(lib, row, sample)
    if not outs:
        return None, None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        looped = [_arrays(_grad(lib, outs, diff, [c[b] for c in cotangents]))
                  for b in range(BATCH)]
        try:
            batched = _arrays(lib.func.vmap(lambda *cs: _grad(lib, outs, diff, cs))(
                *cotangents))
        except Exception as e:  # noqa: BLE001 - a refusal is compared with torch's below
            batched = f"{type(e).__name__}: {e}"
    return batched, [np.stack([r[k] for r in looped]) for k in range(len(diff))]


def _same(a, b):
    return not isinstance(a, str) and all(
        x.shape == y.shape and np.allclose(x, y, rtol=1e-7, atol=1e-7, equal_nan=True)
        for x, y in zip(a, b, strict=True))


def _rows():
    for row in OP_DB:
        if row.differentiable and "float64" in row.dtypes:
            yield pytest.param(row, id=row.name)


@pytest.mark.parametrize("row", list(_rows()))
def test_vmap_of_autograd_grad_matches_each_example(row):
    torch = torch_or_skip()
    samples = row.make_samples("float64")
    if not samples or not bind(samples[0], ember, True)[2]:
        pytest.skip("no sample with a differentiable input")
    batched, looped = _vmapped(ember, row, samples[0])
    if batched is None:
        pytest.skip("no differentiable float output")
    try:
        torch_batched, torch_looped = _vmapped(torch, row, samples[0])
    except Exception as e:  # noqa: BLE001 - torch cannot run the row itself (sparse layouts)
        torch_batched = torch_looped = f"{type(e).__name__}: {e}"
    if isinstance(batched, str):  # (sparse gradients: no batched pass in either)
        assert isinstance(torch_batched, str), batched
        return
    assert _same(batched, looped)
    if _same(torch_batched, torch_looped) and _same(torch_looped, looped):
        assert _same(batched, torch_batched)

def _cdist_graph(lib):
    x = (lib.arange(12., dtype=lib.float64).reshape(4, 3) * 0.3).requires_grad_()
    y = (lib.arange(6., dtype=lib.float64).reshape(2, 3) * 0.7).requires_grad_()
    cotangents = lib.arange(16., dtype=lib.float64).reshape(2, 4, 2)
    return lib.cdist(x, y, p=1.5), (x, y), cotangents


@pytest.mark.parametrize("create_graph", [False, True])
def test_vmap_of_autograd_grad_through_cdist(create_graph):
    """cdist's backward kernel took a batched cotangent as an array ('_Example' object is not
    subscriptable); torch 2.13's own batched cdist backward is wrong, so each example's pass
    is the reference."""
    out, inputs, cotangents = _cdist_graph(ember)
    grads = ember.func.vmap(lambda v: ember.autograd.grad(
        out, inputs, v, retain_graph=True, create_graph=create_graph))(cotangents)
    for k, g in enumerate(grads):
        expected = ember.stack([ember.autograd.grad(out, inputs, v, retain_graph=True)[k]
                                for v in cotangents])
        assert np.allclose(g.detach().numpy(), expected.numpy())
        assert g.requires_grad is create_graph


def test_vmap_of_autograd_grad_is_grads_batched():
    """is_grads_batched inside the vmap: both batches in one pass, as torch's."""
    torch = torch_or_skip()

    def run(lib):
        x = lib.arange(4., dtype=lib.float64).requires_grad_()
        out = (x * x).sum(0, keepdim=True) * x.sin()
        cotangents = lib.arange(24., dtype=lib.float64).reshape(3, 2, 4)
        grads = lib.func.vmap(lambda v: lib.autograd.grad(
            out, x, v, retain_graph=True, is_grads_batched=True))(cotangents)
        return grads[0].detach().numpy(), grads[0].requires_grad
    (got, flag), (expected, torch_flag) = run(ember), run(torch)
    assert got.shape == expected.shape and np.allclose(got, expected) and flag == torch_flag
