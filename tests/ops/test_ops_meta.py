"""The op table on the ``meta`` device, against torch's meta kernels: every op's outputs and
first-order gradients have torch's shapes and dtypes, and stay on the meta device.

Each row runs in one dtype (float64 where it has it, else its first), its inputs moved to
``meta`` in both libraries. Where torch has no meta kernel for an op (it raises), the sample
is skipped: there is nothing to compare with. Where torch gives results, ember must give
results of the same shapes and dtypes, and gradients of its inputs' shapes where torch's
backward runs on meta.
"""
from __future__ import annotations

import warnings

import pytest

import ember

from .test_ops import _samples, bind, cases, outputs

_TEST = "test_meta"


def _samples_of(*rows):
    """``{(row, sample index)}`` for ``(row name, count)`` pairs: the first ``count`` samples
    (or the given indices)."""
    return {(name, i) for name, which in rows
            for i in (range(which) if isinstance(which, int) else which)}


# Samples where ember's meta run differs from torch's meta kernels, and why.
KNOWN = {
    **dict.fromkeys(_samples_of(
        ("segment_reduce", 19),
        ("multilabel_margin_loss", 6), ("masked_scatter", 3), ("masked_scatter_", 1),
        ("embedding", [2])),
        "ember's kernel selects elements by a mask of values (padding, pivots, "
        "frequencies), which has no meta result: torch's meta kernel needs none"),
    **dict.fromkeys(_samples_of(
        ("embedding_bag", 13), ("torch_embedding_bag", 3), ("linalg_ldl_factor", 2),
        ("linalg_ldl_factor_ex", 1), ("linalg_ldl_solve", 1)),
        "ember's kernel copies its operands to the host (offsets, pivots): a meta array "
        "has nothing to copy"),
    **dict.fromkeys(_samples_of(("linalg_lu", 4), ("lu_unpack", 4)),
                    "ember's LU backward skips gradients it finds to be all zeros, and a meta "
                    "gradient has no nonzero values (torch gives a meta gradient)"),
    **dict.fromkeys(_samples_of(("pad_backward", 1)),
                    "torch's result is a CPU tensor (its host-side kernel), ember's a meta one"),
    ("native_batch_norm", 1): "in eval mode torch's meta kernel gives the saved mean and "
                              "invstd the channels' size, its CPU kernel (and ember) empty "
                              "ones",
}


def _to_meta(value, torch, leaves):
    """``value`` with every tensor copied to the meta device (leaves stay leaves)."""
    if isinstance(value, torch.Tensor):
        t = value.detach().to("meta").requires_grad_(value.requires_grad)
        leaves[id(value)] = t
        return t
    if isinstance(value, (list, tuple)) and not hasattr(value, "_fields"):
        return type(value)(_to_meta(v, torch, leaves) for v in value)
    return value


def _run(row, sample, lib, backward=True):
    """``(outputs, gradients)`` as (shape, dtype, device) triples, run on meta in ``lib``."""
    args, kwargs, diff = bind(sample, lib, row.differentiable)
    leaves = {}
    args = [a if k in row.host_args else _to_meta(a, lib, leaves) for k, a in enumerate(args)]
    kwargs = {k: _to_meta(v, lib, leaves) for k, v in kwargs.items()}
    diff = [leaves[id(t)] for t in diff if id(t) in leaves]
    fn = row.torch_fn(lib) if lib is not ember else row.op
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        outs = [o for o in outputs(fn(*args, **kwargs)) if isinstance(o, lib.Tensor)]
        grads = None
        live = [o for o in outs if o.requires_grad]
        if backward and diff and live:
            gos = [lib.empty_like(o) for o in live]
            grads = lib.autograd.grad(live, diff, gos, allow_unused=True)
    described = [(tuple(o.shape), str(o.dtype).split(".")[-1], o.device.type) for o in outs]
    return described, None if grads is None else [
        None if g is None else (tuple(g.shape), str(g.dtype).split(".")[-1], g.device.type)
        for g in grads]


def _meta_cases():
    params = []
    for p in cases(_TEST, main=True):
        row, i, dt = p.values
        reason = KNOWN.get((row.name, i)) if row is not None else None
        marks = [pytest.mark.xfail(reason=reason, strict=True)] if reason else []
        params.append(pytest.param(row, i, dt, id=p.id, marks=list(p.marks) + marks))
    return params


@pytest.mark.parametrize("row,i,dt", _meta_cases())
def test_meta(row, i, dt):
    torch = pytest.importorskip("torch")
    sample = _samples(row.name, dt)[i]
    try:
        expected = _run(row, sample, torch, backward=False)
    except Exception as err:  # noqa: BLE001 - torch has no meta kernel here (or refuses)
        pytest.skip(f"torch on meta: {type(err).__name__}")
    try:
        expected = _run(row, sample, torch)
    except Exception:  # noqa: BLE001 - torch's backward has no meta kernel: forward only
        expected = (expected[0], None)
    got = _run(row, sample, ember, backward=expected[1] is not None)
    assert got[0] == expected[0], f"outputs: ember {got[0]}, torch {expected[0]}"
    assert got[1] == expected[1], f"gradients: ember {got[1]}, torch {expected[1]}"
