"""Floating-point edges as torch gives them: the core arithmetic silent at inf, nan and overflow
(NumPy would warn), without touching the user's NumPy error settings.

The bodies run on PyTorch 2.13 and on ember (``oracle.same`` compares values and warnings);
those tests skip when torch is not installed.
"""
from __future__ import annotations

import threading
import warnings

import numpy as np
import pytest
from oracle import same

import ember
from ember._backend.fp_errors import quietly

_INF = float("inf")
_EDGES = [_INF, -_INF, float("nan"), 0.0, -0.0, 1.0, 3e38, -3e38]

# the core arithmetic, whose NumPy ufuncs warn at inf - inf, 0 * inf and overflow
_CORE = {
    "add": lambda t, x, y: x + y,
    "sub": lambda t, x, y: x - y,
    "rsub": lambda t, x, y: 1.0 - x * 1e38,
    "mul": lambda t, x, y: x * y,
    "mul_number": lambda t, x, y: x * 0.0,
    "add_number": lambda t, x, y: x + -_INF,
    "sum": lambda t, x, y: t.stack([x, y]).sum(0),
    "sum_all": lambda t, x, y: t.tensor([_INF, -_INF]).sum(),
    "mean": lambda t, x, y: t.stack([x, y]).mean(0),
    "nansum": lambda t, x, y: t.stack([x, y]).nansum(0),
    "cumsum": lambda t, x, y: t.stack([x, y]).cumsum(0),
    "add_": lambda t, x, y: x.clone().add_(y),
    "sub_": lambda t, x, y: x.clone().sub_(y),
    "mul_": lambda t, x, y: x.clone().mul_(y),
    "isub": lambda t, x, y: x.clone().__isub__(y),
    "hypot": lambda t, x, y: t.hypot(x, y),
    "isclose": lambda t, x, y: t.isclose(x, y),
    "mse_loss": lambda t, x, y: t.nn.functional.mse_loss(x, y, reduction="none"),
    "huber_loss": lambda t, x, y: t.nn.functional.huber_loss(x, y, reduction="none"),
    "smooth_l1_loss": lambda t, x, y: t.nn.functional.smooth_l1_loss(x, y, reduction="none"),
    "float16_mul": lambda t, x, y: x.half() * y.half(),
    "backward": lambda t, x, y: _grad_of_product(t, x, y),
    "glu": lambda t, x, y: t.nn.functional.glu(t.stack([x, y], -1), -1),
    "glu_double_backward": lambda t, x, y: _glu_grads(t, x, y),
}


def _glu_grads(t, x, y):
    xy = t.stack([x, y], -1).requires_grad_()
    g, = t.autograd.grad(t.nn.functional.glu(xy, -1).sum(), xy, create_graph=True)
    return g, t.autograd.grad(g.sum(), xy)[0]


def _grad_of_product(t, x, y):
    x = x.clone().requires_grad_()
    (x * y).sum().backward(t.full_like(x[0], _INF))
    return x.grad


@pytest.mark.parametrize("name", sorted(_CORE))
def test_core_arithmetic_is_silent_at_inf_nan_and_overflow(name):
    def body(t):
        x = t.tensor([a for a in _EDGES for _ in _EDGES])
        y = t.tensor([b for _ in _EDGES for b in _EDGES])
        return _CORE[name](t, x, y)
    same(body)


def test_the_users_numpy_error_settings_are_left_alone():
    x = ember.tensor([_INF, 0.0])
    with np.errstate(over="raise", invalid="raise"):
        (x - x, x * _INF, x.sum())  # torch raises nothing: neither does ember
        with pytest.raises(FloatingPointError):
            np.subtract(np.inf, np.inf)
    assert np.geterr()["invalid"] == "warn"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        np.subtract(np.array(np.inf), np.inf)
    assert [w.category for w in caught] == [RuntimeWarning]


def test_silent_in_threads_at_once():
    x = ember.tensor([_INF, -_INF] * 4000)
    failures = []

    def work():
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            try:
                for _ in range(200):
                    assert bool((x - x).isnan().all())
            except BaseException as e:  # noqa: BLE001 - reported below
                failures.append(e)
    threads = [threading.Thread(target=work) for _ in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert failures == []


def test_a_quiet_kernel_calling_another_runs_it_directly():
    def outer(a):
        return quietly(np.subtract, a, a) + 1
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = quietly(outer, np.array([np.inf]))
    assert np.isnan(out).all()


def test_a_kernels_own_runtime_error_comes_through():
    def kernel():
        raise RuntimeError("the kernel's own")
    with pytest.raises(RuntimeError, match="the kernel's own"):
        quietly(kernel)


# -- the sign of NaN: torch's kernels give +NaN outside the domain where NumPy gives the x86
# default NaN (sign bit set), in float32 and float64 (float16 and bfloat16: as NumPy)
_OUT_OF_DOMAIN = [-2.0, -_INF, -0.5, 2.5, _INF, -0.0, 0.0, 0.3]
_NAN_SIGN = {
    "log": lambda t, x: t.log(x),
    "log2": lambda t, x: t.log2(x),
    "log10": lambda t, x: t.log10(x),
    "log1p": lambda t, x: t.log1p(x - 1),
    "sqrt": lambda t, x: t.sqrt(x),
    "pow_half": lambda t, x: x ** 0.5,
    "logit": lambda t, x: t.logit(x),
    "erfinv": lambda t, x: t.erfinv(x - 1),
    "xlogy": lambda t, x: t.xlogy(x - 1, x),
    "log_": lambda t, x: x.clone().log_(),
    "sqrt_": lambda t, x: x.clone().sqrt_(),
    "log10_": lambda t, x: x.clone().log10_(),
    "pow_": lambda t, x: x.clone().pow_(0.5),
    "neg_bfloat16": lambda t, x: -x.bfloat16(),
}


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64"])
@pytest.mark.parametrize("name", sorted(_NAN_SIGN))
def test_sign_of_nan_outside_the_domain(name, dtype):
    def body(t):
        x = t.tensor(_OUT_OF_DOMAIN * 5, dtype=getattr(t, dtype))  # (40: torch's vector path)
        r = _NAN_SIGN[name](t, x)
        r1 = _NAN_SIGN[name](t, x[:1])  # (one element: torch's scalar path)
        return t.signbit(r), r.isnan(), t.signbit(r1), t.copysign(t.ones_like(r), r)
    same(body)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64"])
def test_trigamma_at_its_poles_is_torchs_formula(dtype):
    # torch's reflection pi**2 / sin(pi x)**2 with the rounded pi: large finite numbers at
    # the negative integers (6.58e32 at -1 in float64), inf at 0, NaN at -inf
    def body(t):
        x = t.tensor([0.0, -0.0, -1.0, -2.0, -3.0, -10.0, -100.0, -1e6, -_INF, -1.5, 0.5, 2.0],
                     dtype=getattr(t, dtype), requires_grad=True)
        t.digamma(x).sum().backward()
        return t.polygamma(1, x), x.grad, t.special.polygamma(1, x.detach()).clone().polygamma_(1)
    same(body)


@pytest.mark.parametrize("dtype", ["float32", "float16", "int32", "int64", "int16"])
def test_casts_of_edges_are_silent(dtype):
    def body(t):
        x = t.tensor([float("nan"), _INF, -_INF, 1e300, -1e300, 2.5], dtype=t.float64)
        return x.to(getattr(t, dtype)), x.float().to(getattr(t, dtype))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        same(body)


# piecewise activations at a signed zero: torch's kernels (x < 0 ? 0 : x, min(max(x, lo), hi),
# an exponential branch for x <= 0) keep -0.0, whatever the tensor's size
_AT_ZERO = {
    "relu": lambda t, x: t.relu(x),
    "relu_": lambda t, x: x.clone().relu_(),
    "clamp_min": lambda t, x: x.clamp(min=0.0),
    "clamp_max": lambda t, x: x.clamp(max=0.0),
    "clamp_both": lambda t, x: x.clamp(0.0, 1.0),
    "clamp_": lambda t, x: x.clone().clamp_(min=0.0),
    "clamp_min_method": lambda t, x: x.clamp_min(0.0),
    "clamp_max_method": lambda t, x: x.clamp_max(0.0),
    "elu": lambda t, x: t.nn.functional.elu(x),
    "elu_": lambda t, x: t.nn.functional.elu(x.clone(), inplace=True),
    "selu": lambda t, x: t.nn.functional.selu(x),
    "celu": lambda t, x: t.nn.functional.celu(x),
    "hardtanh": lambda t, x: t.nn.functional.hardtanh(x),
    "relu6": lambda t, x: t.nn.functional.relu6(x),
    "leaky_relu": lambda t, x: t.nn.functional.leaky_relu(x),
    "hardsigmoid": lambda t, x: t.nn.functional.hardsigmoid(x),
    "hardswish": lambda t, x: t.nn.functional.hardswish(x),
    "threshold": lambda t, x: t.nn.functional.threshold(x, 0.0, -1.0),
}


@pytest.mark.parametrize("size", [1, 5, 1000])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", sorted(_AT_ZERO))
def test_sign_of_zero_through_activations(name, dtype, size):
    def body(t):
        values = t.tensor([-0.0, 0.0, -1.5, 1.5, -1e-30, 2.5, -4.0], dtype=getattr(t, dtype))
        x = values.repeat(size).requires_grad_()
        y = _AT_ZERO[name](t, x)
        gy = t.tensor([1.0, -1.0, -0.0, 0.5, 1.0, -2.0, 0.25], dtype=x.dtype).repeat(size)
        g, = t.autograd.grad(y, x, gy)
        return y, t.signbit(y), g, t.signbit(g)
    same(body, check_warnings=False)  # (signs exactly; values to rounding: exp of elu)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_hardsigmoid_rounds_as_torch(dtype):
    # torch computes min(max(x + 3, 0), 6) / 6 and multiplies the gradient by its float32
    # constant 1.0f / 6.0f (so a float64 gradient is 0.1666666716... times the incoming one)
    def body(t):
        gen = np.random.default_rng(3)
        x = t.tensor(gen.uniform(-4, 4, 300), dtype=getattr(t, dtype), requires_grad=True)
        y = t.nn.functional.hardsigmoid(x)
        g, = t.autograd.grad(y, x, t.tensor(gen.standard_normal(300), dtype=x.dtype))
        return y, g
    same(body, rtol=0, atol=0)
