"""Results torch rounds in its own way, to the last bit: ``lerp`` of float32 and float16
tensors is one fused multiply-add in float32 (``(w or w - 1) * (end - start) + (start or
end)``), which a float32 multiply and add round twice. One ulp matters where the result is
then divided or raised to a power.

Each body runs on PyTorch 2.13 and on ember (``oracle.same``, here with no tolerance); the
tests skip without torch.
"""
from __future__ import annotations

import numpy as np
import pytest
from oracle import same


def _bits(t, x):
    return np.array(x.float().tolist(), dtype=np.float32).view(np.uint32).tolist()


@pytest.mark.parametrize("dtype", ["float32", "float16"])
@pytest.mark.parametrize("weight", [0.78, 0.3, 0.5, -0.7, 1.3, 1.0, 0.0, "tensor", "0-dim"])
def test_lerp_rounds_as_torch(dtype, weight):
    rs = np.random.RandomState(0)
    a, b, w = rs.randn(300), rs.randn(300) * 3, rs.randn(300) * 1.2

    def body(t):
        start, end = (t.tensor(v, dtype=getattr(t, dtype)) for v in (a, b))
        if weight == "tensor":
            wt = t.tensor(w, dtype=getattr(t, dtype))
        elif weight == "0-dim":
            wt = t.tensor(0.78, dtype=t.float64)
        else:
            wt = weight
        return _bits(t, t.lerp(start, end, wt)), _bits(t, start.clone().lerp_(end, wt))
    same(body, rtol=0, atol=0)


def test_lerp_of_a_program():
    same(lambda t: _bits(t, t.lerp(t.tensor(-0.3).cumprod(-1), t.tensor(0.), 0.78)),
         rtol=0, atol=0)


@pytest.mark.parametrize("dim", [None, 0, 1, -1, (0, 2)])
@pytest.mark.parametrize("seed", range(4))
def test_float16_mean_rounds_once(seed, dim):
    """torch's float16 mean is the float32 sum divided in float32, rounded once to float16
    (rounding the sum first, then dividing in float16, is one step off for many inputs)."""
    rs = np.random.RandomState(seed)
    shape = tuple(rs.randint(1, 40, size=3))
    values = (rs.randn(*shape) * 10.0 ** rs.uniform(-3, 3) + rs.uniform(-1, 1)).astype(np.float32)

    def body(t):
        x = t.tensor(values).half()
        means = [x.mean() if dim is None else x.mean(dim), t.tensor(values).mean(dim=dim or 0,
                                                                                dtype=t.float16)]
        return [_bits(t, m) for m in means]
    same(body)


def test_float16_mean_of_many_sizes():
    rs = np.random.RandomState(5)
    arrays = [(rs.randn(n) * 10.0 ** rs.uniform(-2, 2)).astype(np.float16)
              for n in rs.randint(1, 5001, size=200)]
    same(lambda t: [_bits(t, t.from_numpy(a).mean()) for a in arrays])


def test_float16_sigmoid_rounds_once():
    """torch's float16 sigmoid is computed in float32 and rounded once."""
    values = (np.random.RandomState(0).randn(4000) * 4).astype(np.float16)
    same(lambda t: _bits(t, t.from_numpy(values).sigmoid()))


# 1.1645508316087867 rounds to float32 exactly halfway between two halves, where the tie goes
# down; straight from float64 it is just above the tie and goes up.
_HALF_TIE = 1.1645508316087867


@pytest.mark.parametrize("convert", ["to", "half", "tensor", "tensor_list", "numpy"])
def test_float64_to_float16_rounds_through_float32(convert):
    def body(t):
        wide = t.tensor([_HALF_TIE, -_HALF_TIE, 1 + 2 ** -11 + 2 ** -30], dtype=t.float64)
        made = {"to": lambda: wide.to(t.float16), "half": wide.half,
                "tensor": lambda: t.tensor(_HALF_TIE, dtype=t.float16),
                "tensor_list": lambda: t.tensor([_HALF_TIE, 2.0], dtype=t.float16),
                "numpy": lambda: t.as_tensor(np.array([_HALF_TIE]), dtype=t.float16)}[convert]()
        return made.dtype, made.tolist()
    same(body, rtol=0, atol=0)


@pytest.mark.parametrize("dtype", ["bfloat16", "float8_e4m3fn", "float8_e5m2"])
def test_float64_to_narrow_floats_rounds_as_torch(dtype):
    def body(t):
        wide = t.tensor([1 + 2 ** -8 + 2 ** -30, 1 + 2 ** -4 + 2 ** -30, 1 + 2 ** -3 + 2 ** -30],
                        dtype=t.float64)
        return wide.to(getattr(t, dtype)).float().tolist()
    same(body, rtol=0, atol=0)


@pytest.mark.parametrize("write", ["copy_", "setitem"])
def test_float64_written_into_float16_rounds_through_float32(write):
    def body(t):
        half = t.zeros(3, dtype=t.float16)
        wide = t.tensor([_HALF_TIE, -_HALF_TIE, 1 + 2 ** -11 + 2 ** -30], dtype=t.float64)
        if write == "copy_":
            half.copy_(wide)
        else:
            half[:] = wide
        return half.tolist()
    same(body, rtol=0, atol=0)


_NUMBER_WRITES = {
    "full": lambda t, v: t.full((2,), v, dtype=t.float16),
    "full_like": lambda t, v: t.full_like(t.zeros(2, dtype=t.float16), v),
    "fill_": lambda t, v: t.zeros(2, dtype=t.float16).fill_(v),
    "masked_fill": lambda t, v: t.zeros(2, dtype=t.float16).masked_fill(t.tensor([True, False]), v),
    "index_fill": lambda t, v: t.zeros(2, dtype=t.float16).index_fill(0, t.tensor([1]), v),
    "setitem": lambda t, v: _written(t.zeros(2, dtype=t.float16), v),
    "add": lambda t, v: t.zeros(2, dtype=t.float16) + v,
    "add_": lambda t, v: t.zeros(2, dtype=t.float16).add_(v),
    "rsub": lambda t, v: v - t.zeros(2, dtype=t.float16),
    "add_alpha": lambda t, v: t.zeros(2, dtype=t.float16).add(t.ones(2, dtype=t.float16),
                                                               alpha=v),
    "clamp": lambda t, v: t.full((2,), 6e4, dtype=t.float16).clamp(max=v),
    "nan_to_num": lambda t, v: t.tensor([float("inf")] * 2, dtype=t.float16).nan_to_num(posinf=v),
}


def _written(x, v):
    x[0] = v
    x[1:] = v
    return x


@pytest.mark.parametrize("write", sorted(_NUMBER_WRITES))
def test_number_into_float16_rounds_through_float32(write):
    """torch converts a Python number to Half through a float: a number whose float32
    rounding lands on a float16 tie rounds twice (NumPy's one rounding goes the other way)."""
    ties = [_HALF_TIE, -_HALF_TIE, -53.546874983935936, 3 * 2 ** -20 + 2 ** -40]
    same(lambda t: [_NUMBER_WRITES[write](t, v).tolist() for v in ties], rtol=0, atol=0)


_SCALES = [0.1, 0.000307018679961426, -3.3, 1e3 / 7, 2049, 1 / 3]


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("op", ["mul", "mul_", "div", "div_", "rdiv", "floor", "trunc",
                                "div_none", "floor_divide"])
def test_number_times_reduced_tensor_in_float32(dtype, op):
    """torch's mul and div kernels take a number operand of a float16/bfloat16 tensor in
    float32 and round the float32 result once (add and the rest round the number first)."""
    rs = np.random.RandomState(1)
    a = rs.randn(400).astype(np.float32)
    ops = {"mul": lambda x, s: x * s, "mul_": lambda x, s: x.clone().mul_(s),
           "div": lambda x, s: x / s, "div_": lambda x, s: x.clone().div_(s),
           "rdiv": lambda x, s: s / x,
           "floor": lambda x, s: x.div(s, rounding_mode="floor"),
           "trunc": lambda x, s: x.clone().div_(s, rounding_mode="trunc"),
           "div_none": lambda x, s: x.div(s, rounding_mode=None),
           "floor_divide": lambda x, s: x // s}

    def body(t):
        x = t.tensor(a).to(getattr(t, dtype))
        return [_bits(t, ops[op](x, s)) for s in _SCALES]
    same(body, rtol=0, atol=0)


@pytest.mark.parametrize("op", ["add", "sub", "rsub", "add_", "eq", "lt", "fmod", "remainder",
                                "rpow"])
def test_number_with_bfloat16_tensor_rounds_to_bfloat16(op):
    """Other ops convert a number operand to the tensor's dtype first: bfloat16 ``x + 0.0003``
    adds bfloat16(0.0003), not the float32 number."""
    rs = np.random.RandomState(2)
    a = rs.randn(400).astype(np.float32)
    ops = {"add": lambda x, s: x + s, "sub": lambda x, s: x - s, "rsub": lambda x, s: s - x,
           "add_": lambda x, s: x.clone().add_(s), "eq": lambda x, s: x == s,
           "lt": lambda x, s: x < s, "fmod": lambda x, s: x.fmod(s),
           "remainder": lambda x, s: x % s, "rpow": lambda x, s: abs(s) ** x}

    def body(t):
        x = t.tensor(a).to(t.bfloat16)
        scales = _SCALES + [float(v) for v in a[:20]]
        return [ops[op](x, s).float().tolist() for s in scales]
    same(body, rtol=0, atol=0)


@pytest.mark.parametrize("align_corners", [False, True])
@pytest.mark.parametrize("size", [dict(size=1), dict(size=3), dict(size=7), dict(scale_factor=1.7),
                                  dict(scale_factor=0.5), dict(scale_factor=2)])
@pytest.mark.parametrize("fill", ["random", "inf", "-inf"])
def test_linear_interpolation_as_torch_computes_it(size, align_corners, fill):
    """torch's float32 kernel: each source position and weight computed in float32 (the
    position with one rounding), x0 * w0 + x1 * w1 fused, and a dimension that keeps its
    size multiplied by weights 1 and 0 (inf * 0 is NaN there, forward and backward)."""
    def body(t):
        x = (t.tensor(np.random.RandomState(3).randn(2, 3, 3).astype(np.float32))
             if fill == "random" else t.full((2, 3, 3), float(fill)))
        x.requires_grad_()
        y = t.nn.functional.interpolate(x, mode="linear", align_corners=align_corners, **size)
        y.backward(t.full_like(y, float("inf")))
        return _bits(t, y), [str(v) for v in x.grad.flatten().tolist()]
    same(body, rtol=0, atol=0)


@pytest.mark.parametrize("slope", [0.01, 0.0123, 0.2, 1 / 3])
def test_float16_leaky_relu_takes_its_slope_in_float32(slope):
    def body(t):
        x = t.tensor(np.random.RandomState(4).randn(400).astype(np.float32)).half()
        x.requires_grad_()
        y = t.nn.functional.leaky_relu(x, slope)
        y.backward(t.full_like(y, 0.77))
        return _bits(t, y), _bits(t, x.grad), y.dtype, x.grad.dtype
    same(body, rtol=0, atol=0)


@pytest.mark.parametrize("value", [1, 0.3, -2.7])
def test_float16_addcdiv_rounds_once(value):
    def body(t):
        rs = np.random.RandomState(5)
        x, a, b = (t.tensor(rs.randn(400).astype(np.float32)).half() for _ in range(3))
        return _bits(t, x.addcdiv(a, b, value=value)), _bits(t, x.clone().addcdiv_(a, b,
                                                                                   value=value))
    same(body, rtol=0, atol=0)


_HALF_ALPHA_FORMS = {
    "tensor": lambda t, a, b, c, alpha: t.add(a, b, alpha=alpha),
    "sub": lambda t, a, b, c, alpha: t.sub(a, b, alpha=alpha),
    "number": lambda t, a, b, c, alpha: t.add(a, 2.7, alpha=alpha),
    "sub_number": lambda t, a, b, c, alpha: t.sub(a, 2.7, alpha=alpha),
    "rsub": lambda t, a, b, c, alpha: t.rsub(a, 2.7, alpha=alpha),
    "in_place": lambda t, a, b, c, alpha: a.clone().add_(b, alpha=alpha),
    "in_place_sub": lambda t, a, b, c, alpha: a.clone().sub_(b, alpha=alpha),
    "in_place_number": lambda t, a, b, c, alpha: a.clone().add_(2.7, alpha=alpha),
    "rows": lambda t, a, b, c, alpha: t.add(c, c[0], alpha=alpha),
    "columns": lambda t, a, b, c, alpha: t.add(c, c[:, :1], alpha=alpha),
    "in_place_rows": lambda t, a, b, c, alpha: c.clone().sub_(c[1], alpha=alpha),
    "transposed": lambda t, a, b, c, alpha: t.add(c.t(), c.t().contiguous(), alpha=alpha),
    "both_transposed": lambda t, a, b, c, alpha: t.add(c.t(), c.t() * 2, alpha=alpha),
    "strided": lambda t, a, b, c, alpha: t.add(c[:, ::2], c[:, 1::2], alpha=alpha),
    "0-dim": lambda t, a, b, c, alpha: t.add(a[3], b[5], alpha=alpha),
}


@pytest.mark.parametrize("alpha", [0.1, -1.7, 1 / 3])
@pytest.mark.parametrize("form", sorted(_HALF_ALPHA_FORMS))
def test_float16_add_with_alpha_rounds_as_torch(form, alpha):
    # torch's float16 add/sub with alpha: one fused multiply-add in float32 in its vectorized
    # loop, float16 arithmetic (two roundings) in its scalar loop, which runs the last
    # elements of each row (the rows of strided operands whole)
    rs = np.random.RandomState(3)
    scale = rs.choice([1e-3, 1.0, 100.0, 1000.0], 3 * 1000)
    a, b, c = (rs.randn(n) * scale[:n] for n in (1000, 1000, 37 * 46))

    def body(t):
        ta, tb = (t.tensor(v, dtype=t.float16) for v in (a, b))
        tc = t.tensor(c, dtype=t.float16).reshape(37, 46)
        return _bits(t, _HALF_ALPHA_FORMS[form](t, ta, tb, tc, alpha))
    same(body, rtol=0, atol=0)


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_float16_add_with_alpha_of_many_elements_split_among_threads(threads):
    # from 32768 elements torch's iteration is split among its threads, each range ending in
    # its own scalar loop
    rs = np.random.RandomState(4)
    a, b = rs.randn(2, 70001) * rs.choice([1e-3, 1.0, 100.0], (2, 70001))

    def body(t):
        before = t.get_num_threads()
        t.set_num_threads(threads)
        try:
            x, y = (t.tensor(v, dtype=t.float16) for v in (a, b))
            return _bits(t, t.add(x, y, alpha=0.1)), _bits(t, t.sub(x, 3.3, alpha=-1.7))
        finally:
            t.set_num_threads(before)
    same(body, rtol=0, atol=0)
