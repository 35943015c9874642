"""nn.init against torch 2.13: gains, fans, deterministic fills, distributions, errors."""
from __future__ import annotations

import math

import numpy as np
import pytest
from oracle import same

import ember
from ember.nn import init


def test_gains_and_fans_match_torch():
    def body(lib):
        I = lib.nn.init
        gains = [I.calculate_gain(n) for n in ("linear", "conv2d", "sigmoid", "tanh", "relu",
                                                "selu", "leaky_relu")]
        gains += [I.calculate_gain("leaky_relu", 0.2), I.calculate_gain("leaky_relu", 1)]
        fans = [I._calculate_fan_in_and_fan_out(lib.empty(*s))
                for s in ((3, 4), (8, 3, 5), (6, 2, 3, 3), (2, 2, 1, 2, 2))]
        errors = []
        for bad in (lambda: I.calculate_gain("foo"), lambda: I.calculate_gain("leaky_relu", True),
                    lambda: I._calculate_fan_in_and_fan_out(lib.empty(3)),
                    lambda: I.kaiming_uniform_(lib.empty(2, 2), mode="fan_avg"),
                    lambda: I.eye_(lib.empty(2, 2, 2)), lambda: I.dirac_(lib.empty(2, 2)),
                    lambda: I.dirac_(lib.empty(3, 2, 3), groups=2),
                    lambda: I.orthogonal_(lib.empty(3)), lambda: I.sparse_(lib.empty(3), 0.1)):
            try:
                bad()
            except ValueError as e:
                errors.append(str(e))
        return gains, fans, errors
    same(body)


def test_deterministic_fills_match_torch():
    def body(lib):
        I = lib.nn.init
        w = lib.empty(3, 4, requires_grad=True)
        out = [I.constant_(w, 0.3).clone(), I.ones_(w).clone(), I.zeros_(w).clone(),
               I.eye_(w).clone(), w.requires_grad, w.is_leaf]
        for shape, groups in (((4, 2, 3), 1), ((4, 2, 3, 3), 2), ((2, 2, 1, 3, 3), 1)):
            out.append(I.dirac_(lib.empty(*shape), groups))
        return out
    same(body)


def test_zero_element_tensors_warn():
    def body(lib):
        return lib.nn.init.kaiming_uniform_(lib.empty(0, 3)).shape
    same(body)


@pytest.mark.parametrize("fn,kwargs,std", [
    (init.uniform_, {"a": -2.0, "b": 4.0}, 6 / math.sqrt(12)),
    (init.normal_, {"mean": 1.0, "std": 0.5}, 0.5),
    (init.xavier_uniform_, {"gain": 2.0}, 2.0 * math.sqrt(2 / (200 + 300))),
    (init.xavier_normal_, {}, math.sqrt(2 / (200 + 300))),
    (init.kaiming_uniform_, {"a": math.sqrt(5)}, 1 / math.sqrt(3 * 200)),
    (init.kaiming_normal_, {"mode": "fan_out", "nonlinearity": "relu"}, math.sqrt(2 / 300)),
    (init.trunc_normal_, {"std": 0.5, "a": -0.5, "b": 0.5}, None),
])
def test_distributions(fn, kwargs, std):
    ember.manual_seed(0)
    w = ember.empty(300, 200, requires_grad=True)
    assert fn(w, **kwargs) is w
    a = w.detach().numpy()
    assert a.dtype == np.float32 and w.requires_grad and w.grad_fn is None
    if std is not None:
        assert abs(a.std() - std) / std < 0.02
    if fn is init.trunc_normal_:
        assert a.min() >= -0.5 and a.max() <= 0.5 and a.std() > 0.25
    if fn is init.kaiming_uniform_:
        assert np.abs(a).max() <= 1 / math.sqrt(200)


def test_seeded_and_generator_draws_repeat():
    ember.manual_seed(3)
    a = init.normal_(ember.empty(5)).clone()
    ember.manual_seed(3)
    b = init.normal_(ember.empty(5)).clone()
    assert ember.equal(a, b)
    g = ember.Generator().manual_seed(1)
    c = init.uniform_(ember.empty(4), generator=g).clone()
    g.manual_seed(1)
    assert ember.equal(c, init.uniform_(ember.empty(4), generator=g))


@pytest.mark.parametrize("shape", [(3, 5), (5, 3), (4, 2, 3)])
def test_orthogonal(shape):
    w = init.orthogonal_(ember.empty(*shape), gain=2.0).numpy().reshape(shape[0], -1)
    rows, cols = w.shape
    gram = w @ w.T if rows <= cols else w.T @ w
    np.testing.assert_allclose(gram, 4 * np.eye(min(rows, cols)), atol=1e-5)


def test_sparse_and_deprecated_aliases():
    w = init.sparse_(ember.empty(10, 4), sparsity=0.3)
    assert ((w.numpy() == 0).sum(axis=0) >= 3).all()

    def body(lib):
        return lib.nn.init.constant(lib.empty(2), 1.5)
    same(body)


def test_init_in_place_bumps_version():
    w = ember.nn.Parameter(ember.empty(2, 2))
    v = w._version
    init.ones_(w)
    assert w._version > v


@pytest.mark.parametrize("shape", [(2, 3, 0), (2, 2, 3, 0), (2, 2, 0, 0, 3), (0, 2, 0), (2, 0, 0)])
def test_dirac_of_empty_kernels_matches_torch(shape):
    """torch writes the first centre and fails on the first empty spatial dimension; with no
    channel pair to write it returns the (empty) tensor."""
    same(lambda lib: lib.nn.init.dirac_(lib.empty(shape)))
