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
