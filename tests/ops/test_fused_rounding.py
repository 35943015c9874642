"""Values to the last bit where torch's CPU kernels round once (a fused multiply-add): add,
sub and rsub with ``alpha``, addcmul. Compared with PyTorch 2.13 bit for bit (the tests skip
without torch)."""
from __future__ import annotations

import numpy as np
import pytest

import ember
from ember._ops import fused
from tests.oracle import torch_or_skip

N = 20011  # (not a multiple of any vector width: the kernels' scalar tails are included)

_CASES = {
    "add_alpha": lambda m, a, b, c: m.add(a, b, alpha=-0.1),
    "add_alpha_inplace": lambda m, a, b, c: a.clone().add_(b, alpha=0.37),
    "sub_alpha": lambda m, a, b, c: m.sub(a, b, alpha=0.3),
    "rsub_alpha": lambda m, a, b, c: m.rsub(a, b, alpha=0.3),
    "add_broadcast_alpha": lambda m, a, b, c: m.add(a.reshape(-1, 1)[:100], b[:7], alpha=1.3),
    "momentum": lambda m, a, b, c: a.clone().mul_(0.9).add_(b, alpha=0.1),
    "addcmul": lambda m, a, b, c: m.addcmul(a, b, c, value=0.7),
    "addcmul_default_value": lambda m, a, b, c: m.addcmul(a, b, c),
    "addcmul_small_value": lambda m, a, b, c: a.clone().addcmul_(b, c, value=0.001),
    "lerp_small_weight": lambda m, a, b, c: m.lerp(a, b, 0.1),
    "lerp_large_weight": lambda m, a, b, c: m.lerp(a, b, 0.9),
    "lerp_tensor_weight": lambda m, a, b, c: m.lerp(a, b, c - 1),
}


def _operands(seed, dtype):
    rng = np.random.default_rng(seed)
    # (float32 first: torch converts float64 to the half types through float32)
    a, b, c = (rng.standard_normal(N).astype(np.float32) for _ in range(3))
    return a, b, np.abs(c) + np.float32(0.5)


@pytest.fixture(params=["complex_multiply", "emulation"])
def route(request, monkeypatch):
    """Both ways to the fused result: NumPy's fused complex multiply (where this machine has
    it) and the exact emulation of the other machines and array modules."""
    if request.param == "emulation":
        monkeypatch.setattr(fused, "_complex_multiply_fuses", lambda real: False)
    return request.param


@pytest.mark.parametrize("name", _CASES)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_fused_results_are_torchs_bits(name, dtype, route):
    torch = torch_or_skip()
    fn = _CASES[name]
    arrays = _operands(0, dtype)
    expected = fn(torch, *(torch.tensor(x, dtype=getattr(torch, dtype)) for x in arrays))
    got = fn(ember, *(ember.tensor(x, dtype=getattr(ember, dtype)) for x in arrays))
    np.testing.assert_array_equal(got.numpy().view(np.uint8), expected.numpy().view(np.uint8))


def test_number_operand_with_alpha_fuses_as_torchs_vector_loop():
    """A Python number ``other``: torch's vectorized loop fuses; its scalar remainder loop
    (the last elements of a thread's chunk, fewer than two vectors: 32 on AVX512) rounds
    ``alpha * other`` first, which ember does not copy (docs/optim.md)."""
    torch = torch_or_skip()
    a = _operands(2, "float32")[0]
    expected = torch.add(torch.tensor(a, dtype=torch.float32), 2.5, alpha=0.1).numpy()
    got = ember.add(ember.tensor(a, dtype=ember.float32), 2.5, alpha=0.1).numpy()
    vectorized = N - N % 32  # (one chunk: N is below torch's grain size, 32768)
    np.testing.assert_array_equal(got[:vectorized].view(np.uint32),
                                  expected[:vectorized].view(np.uint32))


@pytest.mark.parametrize("name", ["addcmul", "addcmul_default_value", "add_alpha"])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_types_fuse_in_float32(name, dtype):
    """Half types compute in float32 with one rounding there, then round to their dtype.
    (add's scalar remainder loop, the last elements below two vectors, rounds twice in torch:
    not copied, docs/optim.md.)"""
    torch = torch_or_skip()
    fn = _CASES[name]
    arrays = _operands(1, dtype)
    expected = fn(torch, *(torch.tensor(x, dtype=getattr(torch, dtype)) for x in arrays))
    got = fn(ember, *(ember.tensor(x, dtype=getattr(ember, dtype)) for x in arrays))
    compared = N - N % 64 if name == "add_alpha" else N
    np.testing.assert_array_equal(got.float().numpy()[:compared],
                                  expected.float().numpy()[:compared])


def _constructed(dtype):
    """Products landing exactly on a midpoint of ``dtype`` plus a tiny addend: rounding the
    float64 sum to float32 (or the two-step float64 result) rounds the wrong way."""
    if dtype == "float32":
        x, y, tiny = 1 + 2.0 ** -12, 1 + 2.0 ** -12, [2.0 ** -80, -2.0 ** -80, 2.0 ** -140]
    else:
        x, y, tiny = 1 + 2.0 ** -27, 1 + 2.0 ** -26, [2.0 ** -200, -2.0 ** -200, 2.0 ** -1000]
    n = len(tiny)
    return [tiny, [x] * n, [y] * n]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_midpoint_products_round_once(dtype, route):
    torch = torch_or_skip()
    z, x, y = _constructed(dtype)
    expected = torch.addcmul(*(torch.tensor(v, dtype=getattr(torch, dtype)) for v in (z, x, y)))
    got = ember.addcmul(*(ember.tensor(v, dtype=getattr(ember, dtype)) for v in (z, x, y)))
    assert got.tolist() == expected.tolist()
    expected = torch.add(*(torch.tensor(v, dtype=getattr(torch, dtype)) for v in (z, x)),
                         alpha=y[0])
    got = ember.add(*(ember.tensor(v, dtype=getattr(ember, dtype)) for v in (z, x)), alpha=y[0])
    assert got.tolist() == expected.tolist()


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_wide_exponents_and_subnormal_results(dtype, route):
    torch = torch_or_skip()
    rng = np.random.default_rng(3)
    span = 60 if dtype == "float32" else 400
    x, y, z = (rng.standard_normal(N) * 2.0 ** rng.integers(-span, span // 2, N)
               for _ in range(3))
    with np.errstate(all="ignore"):
        x, y, z = (v.astype(dtype) for v in (x, y, z))
    expected = torch.addcmul(*(torch.from_numpy(v) for v in (z, x, y))).numpy()
    got = ember.addcmul(*(ember.from_numpy(v) for v in (z, x, y))).numpy()
    np.testing.assert_array_equal(got.view(np.uint8), expected.view(np.uint8))


def test_integer_alpha_is_exact_integer_arithmetic():
    torch = torch_or_skip()
    a, b = [3, -7, 2 ** 40], [5, 11, -3]
    expected = torch.add(torch.tensor(a), torch.tensor(b), alpha=-3)
    assert ember.add(ember.tensor(a), ember.tensor(b), alpha=-3).tolist() == expected.tolist()


@pytest.mark.parametrize("value", [1.0, 2.0 ** -140, 3e-39])
def test_zero_dim_operands(value):
    """0-d tensors (a Python-number operand too), on the common and the subnormal path."""
    torch = torch_or_skip()
    for lib_args in ((2.0,), (1e-39,)):
        expected = torch.rsub(torch.tensor(value), *lib_args, alpha=0.3)
        got = ember.rsub(ember.tensor(value), *lib_args, alpha=0.3)
        assert got.item() == expected.item()
        expected = torch.addcmul(torch.tensor(value), torch.tensor(value), torch.tensor(1.5))
        got = ember.addcmul(ember.tensor(value), ember.tensor(value), ember.tensor(1.5))
        assert got.item() == expected.item()


_SPECIAL = [0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, 1e308, -1e308, 5e-324, 2.0 ** -1022,
            1.5, 3.0, 1.5e-323, 1e-300, 3e38, -1e-40]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_special_values_and_signed_zeros(dtype, route):
    """Every combination of zeros of both signs, infinities, NaN, extremes and subnormals."""
    torch = torch_or_skip()
    with np.errstate(all="ignore"):
        values = np.array(_SPECIAL).astype(dtype)
    z, x, y = (v.ravel().copy() for v in np.meshgrid(values, values, values, indexing="ij"))
    expected = torch.addcmul(*(torch.from_numpy(v) for v in (z, x, y))).numpy()
    got = ember.addcmul(*(ember.from_numpy(v) for v in (z, x, y))).numpy()
    compared = np.ones(got.shape, bool)
    if route == "emulation" and dtype == "float64":
        # NOTE: its exact product (Dekker's splitting) needs float64's range: the products
        # that overflow, or fall within 2**53 of the subnormals, are not compared
        with np.errstate(all="ignore"):
            product = np.abs(x * y)
        compared = ((product >= 2.0 ** -969) & np.isfinite(product) | ~np.isfinite(x)
                    | ~np.isfinite(y) | (x == 0) | (y == 0))
    np.testing.assert_array_equal(np.isnan(got[compared]), np.isnan(expected[compared]))
    numbers = compared & ~np.isnan(expected)  # (a NaN's sign bit is the hardware's choice)
    np.testing.assert_array_equal(got[numbers].view(np.uint8), expected[numbers].view(np.uint8))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("size", [2, 3, 65537, 262145])
def test_sizes_across_blocks(dtype, size, route):
    """Large arrays are computed in blocks; the last one may hold a single element."""
    torch = torch_or_skip()
    rng = np.random.default_rng(size)
    z, x, y = (rng.standard_normal(size).astype(dtype) for _ in range(3))
    for fn in (lambda m, z, x, y: m.addcmul(z, x, y, value=0.3),
               lambda m, z, x, y: m.add(z, x, alpha=-0.1)):
        expected = fn(torch, *(torch.from_numpy(v) for v in (z, x, y))).numpy()
        got = fn(ember, *(ember.from_numpy(v) for v in (z, x, y))).numpy()
        np.testing.assert_array_equal(got.view(np.uint8), expected.view(np.uint8))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", [(784, 256), (256, 10), (10,)])
def test_shaped_and_strided_operands(dtype, shape, route):
    """The optimizers' operands (a layer's weight and bias shapes, one block or several) and
    transposed or sliced views: every bit as torch's."""
    torch = torch_or_skip()
    rng = np.random.default_rng(len(shape))
    z, x, y = (rng.standard_normal(shape).astype(dtype) for _ in range(3))
    views = [lambda v: v, lambda v: v.transpose(0, -1), lambda v: v[::2]]
    for view in views:
        for fn in (lambda m, z, x, y: m.addcmul(z, x, y, value=0.3),
                   lambda m, z, x, y: z.clone().add_(x, alpha=-0.1),
                   lambda m, z, x, y: m.lerp(z, x, 0.9)):
            expected = fn(torch, *(view(torch.from_numpy(v)) for v in (z, x, y))).numpy()
            got = fn(ember, *(view(ember.from_numpy(v)) for v in (z, x, y))).numpy()
            np.testing.assert_array_equal(np.ascontiguousarray(got).view(np.uint8),
                                          np.ascontiguousarray(expected).view(np.uint8))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_no_warning_from_the_unused_imaginary_part(dtype, route):
    """The complex route's imaginary part (``z*y - x``) overflows where the result does not:
    no warning, and NumPy's error state set to raise does not raise."""
    import warnings
    torch = torch_or_skip()
    big = np.finfo(dtype).max / 2
    z, x, y = (np.array(v, dtype=dtype) for v in ([-big] * 3, [big] * 3, [2.0] * 3))
    expected = torch.addcmul(*(torch.from_numpy(v) for v in (z, x, y))).numpy()
    with warnings.catch_warnings(), np.errstate(all="raise"):
        warnings.simplefilter("error")
        got = ember.addcmul(*(ember.from_numpy(v) for v in (z, x, y))).numpy()
    np.testing.assert_array_equal(got.view(np.uint8), expected.view(np.uint8))
