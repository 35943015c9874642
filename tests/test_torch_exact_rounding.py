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
