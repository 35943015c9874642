"""Values at the edges of floating point, as torch's CPU kernels give them: no NumPy warning
where torch is silent (inf, nan, overflow), and torch's float32 gelu at +inf.

Each body runs on PyTorch 2.13 and on ember (``oracle.same``: values, dtypes, errors and
warnings); the tests skip when torch is not installed.
"""
from __future__ import annotations

import pytest
from oracle import same

_SPECIAL = [float("inf"), float("-inf"), float("nan"), 0.0, -1.0, 1e30, -1e30, 2.0]

# ops that torch computes without a word at inf, nan and overflow
_SILENT = {
    "sin": lambda t, x, y: t.sin(x),
    "cos": lambda t, x, y: t.cos(x),
    "exp": lambda t, x, y: t.exp(x),
    "frac": lambda t, x, y: x.frac(),
    "lerp": lambda t, x, y: t.lerp(x, y, 0.3),
    "lerp_": lambda t, x, y: x.clone().lerp_(y, 0.5),
    "addcmul_": lambda t, x, y: x.clone().addcmul_(x, y),
    "gelu": lambda t, x, y: t.nn.functional.gelu(x),
    "silu": lambda t, x, y: t.nn.functional.silu(x),
    "hardswish": lambda t, x, y: t.nn.functional.hardswish(x),
    "cumprod": lambda t, x, y: x.cumprod(0),
    "prod": lambda t, x, y: x.prod(),
    "int": lambda t, x, y: x.int(),
    "long": lambda t, x, y: x.long(),
    "int8": lambda t, x, y: x.to(t.int8),
    "half": lambda t, x, y: x.double().half(),
}


@pytest.mark.parametrize("name", sorted(_SILENT))
def test_no_warning_at_inf_nan_and_overflow(name):
    def body(t):
        x = t.tensor(_SPECIAL)
        y = t.tensor(_SPECIAL[::-1])
        return _SILENT[name](t, x, y)
    same(body)


def test_digamma_pole_then_gelu():
    # digamma's pole gives -inf; gelu of it is nan, without a warning
    def body(t):
        x = t.tensor([[0.0, -1.17]], requires_grad=True)
        return t.nn.functional.gelu(x.digamma())
    same(body, rtol=1e-5)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64"])
def test_gelu_at_inf_as_torch_vectorized_kernel(dtype):
    # torch's oneDNN kernel (a contiguous input of more than one element, float32 always, the
    # 2-byte types where this CPU has oneDNN's native support: float16 on Sapphire Rapids, not
    # on AMD Zen 4) gives nan at +inf and overflows a huge finite input; one element, a
    # strided input or torch's own kernel gives inf
    def body(t):
        d = getattr(t, dtype)
        big = 6e4 if dtype == "float16" else 3e38
        gelu = t.nn.functional.gelu
        return (gelu(t.tensor([float("inf"), 1.0, big, -float("inf"), -1.0], dtype=d)),
                gelu(t.tensor([float("inf")], dtype=d)),
                gelu(t.tensor([[float("inf"), 1.0], [2.0, 3.0]], dtype=d).t()))
    same(body, rtol=1e-2 if dtype == "bfloat16" else 1e-3 if dtype == "float16" else 1e-6)


@pytest.mark.parametrize("value", [0.5, 2.0, 1e-10])
def test_addcmul_addcdiv_overflow_as_torch_kernel(value):
    # torch computes self + value * t1 * t2 and self + value * t1 / t2 left to right, in the
    # tensors' dtype: value * t1 can overflow before the division, t1 / t2 is never formed
    def body(t):
        big = 3e38
        x = t.tensor([0.0, 1.0, big, -big, 0.0])
        a = t.tensor([big, big, 2.0, 1e-30, 1e20])
        b = t.tensor([4.0, 0.25, big, 1e-30, 1e20])
        return (t.addcmul(x, a, b, value=value), t.addcdiv(x, a, b, value=value),
                x.clone().addcdiv_(a, b, value=value))
    same(body)


def test_remainder_zero_keeps_the_dividend_sign():
    # torch's float remainder is fmod moved by the divisor: 0.0 % -1.0 is +0.0 (rsqrt: +inf)
    def body(t):
        a = t.tensor([0.0, -0.0, 2.0, -2.0, 3.0, -3.0, 1.5], dtype=t.float64)
        b = t.tensor([-1.0, 1.0, -1.0, 1.0, 1.5, -1.5, -0.5], dtype=t.float64)
        return (t.rsqrt(a % b), t.rsqrt(t.remainder(a, -1.0)), t.rsqrt(a.float() % b.float()),
                t.signbit(t.remainder(a, b)))
    same(body)


def test_erfinv_saves_its_input():
    # torch's formula computes erfinv of the saved input again: the result may change in place
    def body(t):
        x = t.tensor([-0.5, 0.3], dtype=t.float64, requires_grad=True)
        y = x.erfinv()
        y.mul_(2)
        y.sum().backward()
        return x.grad
    same(body)


def test_pairwise_distance_at_inf():
    def body(t):
        x = t.log(t.tensor([[0.0, 4.0], [-3.0, 4.0], [1.0, 3.0]]))
        return t.nn.functional.pairwise_distance(x, x)
    same(body)


# matrix products and convolutions at inf and nan: torch's BLAS calls are silent
_PRODUCTS = {
    "mm": lambda t, x, y: x @ y,
    "matmul_nd": lambda t, x, y: t.matmul(x.expand(2, 3, 3), y),
    "mv": lambda t, x, y: t.mv(x, y[0]),
    "dot": lambda t, x, y: t.dot(x[0], y[1]),
    "bmm": lambda t, x, y: t.bmm(x[None], y[None]),
    "einsum": lambda t, x, y: t.einsum("ij,jk->ik", x, y),
    "addmm": lambda t, x, y: t.addmm(x, x, y),
    "baddbmm": lambda t, x, y: t.baddbmm(x[None], x[None], y[None]),
    "conv2d": lambda t, x, y: t.nn.functional.conv2d(x[None, None], y[None, None, :2, :2]),
}


@pytest.mark.parametrize("name", sorted(_PRODUCTS))
def test_products_silent_at_inf_and_nan(name):
    def body(t):
        x = t.log(t.tensor([[0.0, 4.0, 1.0], [-3.0, 4.0, 2.0], [1.0, 3.0, 0.0]]))
        y = t.tensor([[1.5, -2.0, 0.5], [0.25, 1.0, -1.0], [2.0, 0.0, 1.0]])
        return _PRODUCTS[name](t, x, y)
    same(body)


def test_sign_of_a_nan_scalar_result():
    # NumPy's sign of a 0-d array is a scalar: the NaN it holds becomes torch's 0 all the same
    def body(t):
        x = t.tensor([[float("nan"), 1.0], [2.0, 3.0]], requires_grad=True)
        return t.sign(x.std()), t.sign(t.tensor(float("nan"), dtype=t.float64))
    same(body)


def test_layer_norm_of_nothing_twice_differentiated():
    def body(t):
        x = t.zeros(0, requires_grad=True)
        y = t.nn.functional.layer_norm(x, x.shape[-1:])
        (g,) = t.autograd.grad(y.pow(2).sum(), x, create_graph=True)
        return g
    same(body)


@pytest.mark.parametrize("call", [
    lambda t: t.zeros(0).amax(-1), lambda t: t.zeros(2, 0).amax((0, -1)),
    lambda t: t.zeros(2, 0).amin(-1), lambda t: t.zeros(2, 0).amax([-1, 0]),
    lambda t: t.zeros(2, 0).max(-1), lambda t: t.zeros(2, 0).argmax(-1),
    lambda t: t.zeros(0, 3).aminmax(dim=-2), lambda t: t.zeros(3, 0).aminmax(dim=-1),
    lambda t: t.zeros(3, 2).aminmax(dim=4)])
def test_reductions_over_an_empty_dim_name_it_as_torch(call):
    same(call)
