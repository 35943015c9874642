"""The special functions without scipy: ember's NumPy-only kernels.

ember uses scipy.special when it is importable (an optional extra) and otherwise NumPy-only
kernels. These tests switch the scipy lookup off and check the fallback's values (against
scipy over wide ranges, and against torch), its gradients and its edge values.
"""
from __future__ import annotations

import sys

import numpy as np
import pytest

import ember
from ember._ops import special as SP

sps = pytest.importorskip("scipy.special")

_RNG = np.random.default_rng(1234)
_WIDE = np.concatenate([_RNG.uniform(-10, 10, 3000), _RNG.uniform(0, 1e-3, 200),
                        _RNG.uniform(-300, 300, 300), _RNG.uniform(10, 1e6, 200),
                        [0.5, 1.0, 2.0, 1e-30, 1e-300, 170.0, -0.5, -2.5]])


@pytest.fixture
def numpy_only(monkeypatch):
    """ember's scipy lookup reports scipy missing."""
    monkeypatch.setattr(SP, "scipy_special", lambda: None)


def _assert_close(actual, expected, rtol, atol=0.0):
    np.testing.assert_allclose(actual, expected, rtol=rtol, atol=atol, equal_nan=True)


def _poles_free(x):
    return x[~((x <= 0) & (x == np.floor(x)))]


@pytest.mark.parametrize("name,kernel,ref,rtol", [
    ("erf", SP._erf_np, sps.erf, 1e-15),
    ("erfc", SP._erfc_np, sps.erfc, 1e-12),
    ("lgamma", SP._lgamma_np, sps.gammaln, 1e-12),
])
def test_kernels_match_scipy(name, kernel, ref, rtol):
    with np.errstate(all="ignore"):
        _assert_close(kernel(_WIDE), ref(_WIDE), rtol, atol=1e-300)


def test_digamma_kernel_matches_scipy():
    x = _poles_free(_WIDE)
    # NOTE: absolute tolerance near digamma's root (1.4616...), where relative error grows.
    _assert_close(SP._digamma_np(x), sps.psi(x), 1e-12, atol=1e-13)


def test_erfinv_kernel_matches_scipy():
    y = np.concatenate([_RNG.uniform(-1, 1, 5000), 1 - 10.0 ** -np.arange(1, 16),
                        -1 + 10.0 ** -np.arange(1, 16), [0.0, 1e-300, -1e-20, 0.5]])
    _assert_close(SP._erfinv_np(y), sps.erfinv(y), 1e-14, atol=1e-300)


@pytest.mark.parametrize("n", [1, 2, 3, 4, 7])
def test_polygamma_kernel_matches_scipy(n):
    x = _WIDE[_WIDE > 0]
    _assert_close(SP._polygamma_np(n, x), sps.polygamma(n, x), 1e-12)


def test_edge_values_match_torch(numpy_only):
    torch = pytest.importorskip("torch")
    x = np.array([0.0, -0.0, -1.0, -2.0, -2.5, np.inf, -np.inf, np.nan, 1e-30, 1.0])
    y = np.array([-1.0, 1.0, 0.0, -0.0, 1.5, -1.5, np.nan, 0.999999, -0.5])
    for name, values in (("erf", x), ("erfc", x), ("lgamma", x), ("digamma", x),
                         ("erfinv", y)):
        with np.errstate(all="ignore"):
            got = getattr(ember, name)(ember.from_numpy(values)).numpy()
        want = getattr(torch, name)(torch.from_numpy(values)).numpy()
        _assert_close(got, want, 1e-12, atol=1e-300)
        assert np.array_equal(np.signbit(got[got == 0]), np.signbit(want[got == 0])), name


@pytest.mark.parametrize("name,low,high", [("erf", -2, 2), ("erfc", -2, 2),
                                           ("erfinv", -0.9, 0.9), ("lgamma", 0.2, 4),
                                           ("digamma", 0.2, 4)])
def test_values_and_gradients_without_scipy(numpy_only, name, low, high):
    from ember.autograd import gradcheck
    torch = pytest.importorskip("torch")
    x = _RNG.uniform(low, high, (2, 3))
    t = ember.tensor(x, dtype=ember.float64, requires_grad=True)
    want = getattr(torch, name)(torch.from_numpy(x))
    _assert_close(getattr(ember, name)(t).detach().numpy(), want.numpy(), 1e-12)
    assert gradcheck(getattr(ember, name), (t,))
    fn = getattr(ember, name)

    def first_derivative(u):
        with ember.enable_grad():
            return ember.autograd.grad(fn(u).sum(), u, create_graph=True)[0]
    assert gradcheck(first_derivative, (t,))


def test_polygamma_without_scipy(numpy_only):
    torch = pytest.importorskip("torch")
    x = _RNG.uniform(0.5, 3, 5)
    for n in range(4):
        got = ember.polygamma(n, ember.from_numpy(x)).numpy()
        # NOTE: torch's own trigamma series is good to ~5e-10 (ours and scipy's to 1e-15).
        _assert_close(got, torch.polygamma(n, torch.from_numpy(x)).numpy(), 1e-8)


def test_float32_results_keep_their_dtype(numpy_only):
    x = ember.tensor([0.25, 0.5], dtype=ember.float32)
    for fn in (ember.erf, ember.erfc, ember.erfinv, ember.lgamma, ember.digamma):
        assert fn(x).dtype is ember.float32
    assert ember.erf(ember.tensor([1, 2])).dtype is ember.float32


def test_lookup_reports_missing_scipy(monkeypatch):
    """With scipy not importable the lookup gives None and ember still computes."""
    monkeypatch.setattr(SP, "_SCIPY", [])
    monkeypatch.setitem(sys.modules, "scipy", None)
    monkeypatch.setitem(sys.modules, "scipy.special", None)
    assert SP.scipy_special() is None
    got = ember.erf(ember.tensor([0.5], dtype=ember.float64)).item()
    assert got == pytest.approx(0.5204998778130465, rel=1e-15)
