"""Activations and their gradients to the last bit, compared with PyTorch 2.13 (the tests skip
without torch): float16 as torch's CPU kernels compute it (in float32, a number argument
taken in float32 and the result rounded once), and the evaluation order of the gradient
kernels (tanh_backward's fused 1 - y*y, sigmoid_backward's grad * (1 - y) * y; silu's and
mish's first-order gradients are torch's silu_backward and mish_backward kernels)."""
from __future__ import annotations

import numpy as np
import pytest

import ember
from tests.oracle import torch_or_skip

# float16 functions whose kernels torch runs in float32; each with Python number arguments
# that float16 cannot hold (a threshold between two float16 values decides differently in
# float32 than rounded to float16 first)
_HALF_CASES = {
    "threshold": ("threshold", (0.30004, 0.7)),
    "threshold_negative": ("threshold", (-0.2001, 1 / 3)),
    "elu": ("elu", (0.37,)),
    "elu_large_alpha": ("elu", (1.3,)),
    "selu": ("selu", ()),
    "celu": ("celu", (0.7,)),
    "softplus": ("softplus", (1.3, 2.1)),
    "softshrink": ("softshrink", (0.30004,)),
    "hardtanh": ("hardtanh", (-0.30004, 1 / 3)),
    "hardsigmoid": ("hardsigmoid", ()),
    "hardswish": ("hardswish", ()),
    "logsigmoid": ("logsigmoid", ()),
    "rrelu_eval": ("rrelu", (0.1, 0.3, False)),
    "hardshrink": ("hardshrink", (0.30004,)),
    "leaky_relu": ("leaky_relu", (0.13,)),
    "tanh": ("tanh", ()),
    "sigmoid": ("sigmoid", ()),
    "silu": ("silu", ()),
    "mish": ("mish", ()),
}
# elements (of some 40,000) where float16 results may still differ: the exponential of
# torch's vectorized kernels and NumPy's differ in float32, rarely across a float16 rounding
_HALF_SLACK = {"celu": 8, "softplus": 4, "elu": 4, "elu_large_alpha": 4, "selu": 4,
               "logsigmoid": 4, "silu": 24, "mish": 24, "sigmoid": 8}


def _half_inputs():
    """A grid of float16 values, their neighbours (the thresholds' own float16 roundings among
    them) and random ones, both signs."""
    rng = np.random.default_rng(7)
    base = np.concatenate([np.arange(-3, 3, 1 / 512), rng.standard_normal(4000) * 3,
                           rng.standard_normal(300) * 1e-3,
                           [0.30004, 0.7, -0.2001, 1 / 3, 0.1, 0.37]]).astype(np.float16)
    up, down = np.float16(9), np.float16(-9)
    a = np.concatenate([base, np.nextafter(base, up), np.nextafter(base, down)])
    return np.concatenate([a, -a])


def _run(lib, name, args, x, grad, dtype):
    fn = getattr(lib.nn.functional, name, None) or getattr(lib, name)
    dt = getattr(lib, dtype)
    t = lib.tensor(x.astype(np.float32)).to(dt).requires_grad_()
    out = fn(t, *args)
    out.backward(lib.tensor(grad.astype(np.float32)).to(dt))
    return out.detach().float().numpy(), t.grad.float().numpy()


def _differing(a, b):
    return int((~((a == b) | (np.isnan(a) & np.isnan(b)))).sum())


@pytest.mark.parametrize("case", _HALF_CASES)
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_activations_are_torchs_bits(case, dtype):
    # (bfloat16: the values are the float16 grid's, rounded; torch's hardshrink and
    # softshrink's gradient compare in bfloat16 itself, and log_sigmoid's gradient reads its
    # forward's bfloat16 buffer)
    torch = torch_or_skip()
    name, args = _HALF_CASES[case]
    x = _half_inputs()
    grad = np.linspace(-2, 2, x.size).astype(np.float16)
    t_out, t_grad = _run(torch, name, args, x, grad, dtype)
    e_out, e_grad = _run(ember, name, args, x, grad, dtype)
    slack = _HALF_SLACK.get(case, 0)
    assert _differing(t_out, e_out) <= slack
    assert _differing(t_grad, e_grad) <= slack


@pytest.mark.parametrize("name", ["tanh_backward", "sigmoid_backward"])
@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_tanh_and_sigmoid_gradient_kernels_are_torchs_bits(name, dtype):
    # (the saved outputs given, so that only the gradient kernel is compared: torch's tanh
    # and sigmoid themselves are MKL's and Sleef's, not NumPy's)
    torch = torch_or_skip()
    rng = np.random.default_rng(11)
    x = rng.standard_normal(20011) * 2
    y = (np.tanh(x) if name == "tanh_backward" else 1 / (1 + np.exp(-x))).astype(dtype)
    g = rng.standard_normal(20011).astype(dtype)
    want = getattr(torch.ops.aten, name)(torch.tensor(g), torch.tensor(y)).numpy()
    got = getattr(ember.ops.aten, name)(ember.tensor(g), ember.tensor(y)).numpy()
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


def test_tanh_backward_of_small_outputs_is_torchs_bits():
    # 1 - y*y of small float32 y: the float64 difference rounded again (see
    # pointwise._one_minus_square) against torch's fused multiply-add
    torch = torch_or_skip()
    rng = np.random.default_rng(5)
    y = (rng.uniform(-1, 1, 200_000) * 2.0 ** -rng.integers(0, 30, 200_000)).astype(np.float32)
    ones = np.ones_like(y)
    want = torch.ops.aten.tanh_backward(torch.tensor(ones), torch.tensor(y)).numpy()
    got = ember.ops.aten.tanh_backward(ember.tensor(ones), ember.tensor(y)).numpy()
    np.testing.assert_array_equal(got, want)


def test_float32_tanh_backward_edge_values_are_torchs_bits():
    # float32's own path (pointwise._float32_tanh_gradient): every exponent's values (a
    # stride through all bit patterns), subnormals, signed zeros, NaN and inf, outputs near
    # +-1, against gradients with NaN, inf, signed zeros, subnormals and overflowing
    # products; the bits compared, NaN's too, on strided gradients as well
    torch = torch_or_skip()
    rng = np.random.default_rng(17)
    specials = np.array([0.0, -0.0, np.nan, -np.nan, np.inf, -np.inf, 1.0, -1.0, 1e-45,
                         -1e-45, 1.1754942e-38, 0.125, -0.125, 3e38], np.float32)
    near_one = (1 - rng.uniform(0, 1e-3, 20_000)).astype(np.float32)
    y = np.concatenate([np.arange(0, 2**32, 40_009, dtype=np.uint64).astype(np.uint32)
                        .view(np.float32), specials, near_one, -near_one])
    g = rng.standard_normal(2 * y.size).astype(np.float32)
    g[::2][: 7 * 1000] = np.tile(np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-40, 3e38],
                                          np.float32), 1000)
    for grad in (g[::2], np.ascontiguousarray(g[::2])):
        want = torch.ops.aten.tanh_backward(torch.tensor(grad), torch.tensor(y)).numpy()
        with np.errstate(all="ignore"):
            got = ember.ops.aten.tanh_backward(ember.tensor(grad), ember.tensor(y)).numpy()
        np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))


def test_tanh_backward_zero_dim_and_broadcast():
    torch = torch_or_skip()
    for lib in (torch, ember):
        y = lib.tensor([0.25, -0.5, 0.75])
        assert lib.ops.aten.tanh_backward(lib.tensor(2.0), y).tolist() == [
            2 * (1 - v * v) for v in (0.25, -0.5, 0.75)]
        assert lib.ops.aten.tanh_backward(lib.tensor(2.0), lib.tensor(0.5)).item() == 1.5


@pytest.mark.parametrize("name", ["tanh", "sigmoid"])
def test_tanh_and_sigmoid_tangents_are_their_gradient_kernels(name):
    # torch's forward-mode derivative runs the gradient kernel on the tangent: its values to
    # the last bit (given ember's primal) and its one node
    torch = torch_or_skip()
    rng = np.random.default_rng(13)
    x, t = (rng.standard_normal(5003).astype(np.float32) for _ in range(2))
    fa = ember.autograd.forward_ad
    with fa.dual_level():
        out = fa.unpack_dual(getattr(ember, name)(fa.make_dual(ember.tensor(x),
                                                               ember.tensor(t))))
        primal, tangent = out.primal.numpy(), out.tangent.numpy()
    want = getattr(torch.ops.aten, name + "_backward")(torch.tensor(t), torch.tensor(primal))
    np.testing.assert_array_equal(tangent, want.numpy())
    for lib in (torch, ember):
        with lib.autograd.forward_ad.dual_level():
            dual = lib.autograd.forward_ad.make_dual(lib.tensor([0.5], requires_grad=True),
                                                     lib.tensor([1.0], requires_grad=True))
            node = lib.autograd.forward_ad.unpack_dual(getattr(lib, name)(dual)).tangent.grad_fn
            assert node.name() == name.capitalize() + "BackwardBackward0"
