"""Optimizer steps give torch's values bit for bit: parameters, state and version counters,
on shapes that take every route of the in-place updates (several cache-sized blocks, an odd
last block, single elements, many small parameters, non-contiguous gradients).

torch's float32 ``sqrt`` on the CPU is MKL's, not IEEE's correctly rounded square root
(docs/optim.md), so for the optimizers whose update takes a square root torch's own update
runs here with NumPy's square root in place of its ``sqrt``: then every other rounding of the
update is compared bit for bit.
"""
from __future__ import annotations

import numpy as np
import pytest

import ember
from ember._ops import fused
from tests.oracle import torch_or_skip

# (130000 + 140001 elements: past fused.py's 131072-element float32 blocks, with a last block
# two elements long; 65536-element float64 blocks likewise)
SHAPES = {
    "blocks": ((260, 500), (140001,)),
    "small": ((64,),) * 3 + ((64, 64),) * 3 + ((1,), (), (2,), (3, 1)),
}
CASES = [
    ("SGD", {"lr": 0.1}),
    ("SGD", {"lr": 0.1, "maximize": True}),
    ("SGD", {"lr": 0.1, "momentum": 0.9}),
    ("SGD", {"lr": 0.1, "momentum": 0.9, "dampening": 0.25}),
    ("SGD", {"lr": 0.1, "momentum": 0.9, "nesterov": True}),
    ("SGD", {"lr": 0.1, "weight_decay": 1e-2}),
    ("SGD", {"lr": 0.1, "weight_decay": 1e-2, "maximize": True}),
    ("SGD", {"lr": 0.1, "momentum": 0.9, "nesterov": True, "weight_decay": 1e-2,
             "maximize": True}),
    ("Adam", {"lr": 1e-2}),
    ("Adam", {"lr": 1e-2, "weight_decay": 1e-2, "maximize": True}),
    ("Adam", {"lr": 1e-2, "betas": (0.3, 0.9)}),
    ("Adam", {"lr": 1e-2, "amsgrad": True, "weight_decay": 1e-2}),
    ("AdamW", {"lr": 1e-2}),
    ("AdamW", {"lr": 1e-2, "amsgrad": True, "maximize": True}),
    ("RMSprop", {"lr": 1e-2}),
    ("RMSprop", {"lr": 1e-2, "momentum": 0.9, "weight_decay": 1e-2}),
    ("RMSprop", {"lr": 1e-2, "centered": True, "maximize": True}),
    ("RMSprop", {"lr": 1e-2, "centered": True, "momentum": 0.5, "alpha": 0.3}),
    ("Adagrad", {"lr": 1e-1}),
    ("Adagrad", {"lr": 1e-1, "lr_decay": 1e-2, "weight_decay": 1e-2,
                 "initial_accumulator_value": 0.1, "maximize": True}),
]


def _case_id(case):
    name, kwargs = case
    return "-".join([name] + [f"{k}={v}" for k, v in kwargs.items()])


@pytest.fixture
def ieee_sqrt_torch(monkeypatch):
    """torch whose ``sqrt``/``sqrt_``/``_foreach_sqrt`` round as IEEE's (NumPy's) square root."""
    torch = torch_or_skip()

    def sqrt(t):
        return torch.from_numpy(np.asarray(np.sqrt(t.detach().numpy())))

    def sqrt_(t):
        t.copy_(sqrt(t))
        return t
    monkeypatch.setattr(torch.Tensor, "sqrt", sqrt)
    monkeypatch.setattr(torch.Tensor, "sqrt_", sqrt_)
    monkeypatch.setattr(torch, "_foreach_sqrt", lambda ts: [sqrt(t) for t in ts])
    monkeypatch.setattr(torch, "_foreach_sqrt_", lambda ts: [sqrt_(t) for t in ts])
    return torch


def _steps(lib, name, kwargs, shapes, foreach, dtype, steps=3, transposed=False):
    """Parameters, optimizer and state versions after ``steps`` steps on random gradients
    (half of the gradients transposed views where ``transposed``)."""
    rng = np.random.default_rng(5)
    params = [lib.nn.Parameter(lib.tensor(rng.standard_normal(s).astype(dtype)))
              for s in shapes]
    opt = getattr(lib.optim, name)(params, foreach=foreach, **kwargs)
    for _ in range(steps):
        for i, p in enumerate(params):
            g = rng.standard_normal(tuple(p.shape)[::-1] if transposed and i % 2 else
                                    tuple(p.shape)).astype(dtype)
            # (small and large gradients: the sums' exponents far apart, as in training)
            g *= dtype(10.0) ** rng.integers(-6, 1, g.shape)
            grad = lib.tensor(g)
            p.grad = grad.T if transposed and i % 2 and grad.dim() == 2 else grad
        opt.step()
    return params, opt


def _bits(t):
    a = t.detach().numpy()
    return a.view({4: np.uint32, 8: np.uint64}[a.itemsize])


def _assert_same_steps(torch, name, kwargs, shapes, foreach, dtype, transposed=False):
    got, opt = _steps(ember, name, kwargs, shapes, foreach, dtype, transposed=transposed)
    expected, topt = _steps(torch, name, kwargs, shapes, foreach, dtype, transposed=transposed)
    for k, (p, tp) in enumerate(zip(got, expected)):
        np.testing.assert_array_equal(_bits(p), _bits(tp), err_msg=f"param {k}")
        assert p._version == tp._version, f"param {k}"
        state, tstate = opt.state[p], topt.state[tp]
        assert list(state) == list(tstate)
        for key, value in tstate.items():
            np.testing.assert_array_equal(_bits(state[key]), _bits(value),
                                          err_msg=f"param {k} {key}")
            assert state[key]._version == value._version, f"param {k} {key}"
            assert state[key].dtype.__repr__().split(".")[-1] == str(value.dtype).split(".")[-1]


@pytest.mark.parametrize("foreach", [None, True, False])
@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_float32_blocks_are_torchs_bits(ieee_sqrt_torch, case, foreach):
    _assert_same_steps(ieee_sqrt_torch, *case, SHAPES["blocks"], foreach, np.float32)


@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_small_parameters_are_torchs_bits(ieee_sqrt_torch, case):
    _assert_same_steps(ieee_sqrt_torch, *case, SHAPES["small"], None, np.float32)


@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_float64_blocks_are_torchs_bits(ieee_sqrt_torch, case):
    _assert_same_steps(ieee_sqrt_torch, *case, SHAPES["blocks"], False, np.float64)


@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_transposed_gradients_are_torchs_bits(ieee_sqrt_torch, case):
    """Gradients that are transposed views (not C-contiguous) take the general route."""
    _assert_same_steps(ieee_sqrt_torch, *case, ((40, 30), (30, 40), (7, 5), (5, 7)), None,
                       np.float32, transposed=True)


@pytest.mark.parametrize("maximize", [False, True])
def test_many_small_parameters_that_share_arrays_update_in_order(maximize):
    """SGD updates many small parameters together; a parameter listed twice, a gradient that
    is another parameter's array, a view, float64 parameters and a parameter without a
    gradient still give torch's values and versions, updated one after another. (float16
    not: torch's add rounds twice in float32 past its vector loop, docs/optim.md.)"""
    torch = torch_or_skip()
    rng = np.random.default_rng(3)
    starts = [rng.standard_normal(s).astype(np.float32) for s in ((5,), (4, 3)) * 6]
    grads = [rng.standard_normal(a.shape).astype(np.float32) for a in starts]
    wide = rng.standard_normal(6)

    def run(lib):
        ps = [lib.nn.Parameter(lib.tensor(a)) for a in starts]
        for p, g in zip(ps, grads):
            p.grad = lib.tensor(g)
        ps[3].grad = ps[1].detach()  # (read after ps[1]'s own update, as torch does)
        base = lib.tensor(np.arange(12, dtype=np.float32))
        view = lib.nn.Parameter(base[2:8])
        view.grad = lib.ones(6)
        extra = [lib.nn.Parameter(lib.tensor(wide)) for _ in range(9)]
        for p in extra:
            p.grad = lib.tensor(wide[::-1].copy())
        none = lib.nn.Parameter(lib.ones(3))
        group = ps + [ps[0], view, none] + extra
        with pytest.warns(UserWarning, match="duplicate parameters"):
            opt = lib.optim.SGD(group, lr=0.1, maximize=maximize)
        for _ in range(2):
            opt.step()
        return [(p.detach().numpy().copy(), p._version) for p in ps + [view, none] + extra]

    for (a, va), (b, vb) in zip(run(ember), run(torch), strict=True):
        np.testing.assert_array_equal(a, b)
        assert va == vb
