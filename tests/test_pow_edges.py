"""``pow`` at the special values (signed zeros, infinities, NaN, subnormals, negative bases)
as torch gives them, per dtype: torch's float16 computes ``x ** 0.5`` and ``x ** -0.5`` with
C's pow (inf at -0.0 for -0.5), its float32 and float64 with sqrt and rsqrt (-inf there), and
its bfloat16 rounds a Python-number exponent to bfloat16 first. Values, signs and gradients
are compared with torch 2.13 (skipped without torch).
"""
from __future__ import annotations

import pytest
from oracle import same

_INF, _NAN = float("inf"), float("nan")
_BASES = [0.0, -0.0, _INF, -_INF, _NAN, 1.0, -1.0, 2.0, -2.0, 0.5, -0.5, 3.0, -3.0, 1e-40,
          -1e-40, 1e-310, -1e-310, 7.0, 0.1]
_BASES_HALF = _BASES + [6e-8, -6e-8]  # (float16 subnormals)
_EXPONENTS = [-0.5, 0.5, -1.5, 1.5, -2.5, 0.25, -0.25, 0.3, -0.3, 1 / 3, -1 / 3, 0.75, 1.7,
              -1, 2, 3, -2, 0, -0.0, 2.0, _INF, -_INF, _NAN]
_DTYPES = ["float16", "bfloat16", "float32", "float64"]
# one rounding apart (libm's pow and the order of the gradient's products differ); the signs,
# zeros, infinities and NaN are compared exactly
_RTOL = {"float16": 2e-3, "bfloat16": 1e-2, "float32": 2e-6, "float64": 1e-15}


def _bases(t, dtype):
    values = _BASES_HALF if dtype == "float16" else _BASES
    return t.tensor(values, dtype=getattr(t, dtype), requires_grad=True)


def _exact(r):
    """The values and the signs: -inf and inf, -0.0 and 0.0 differ (NaN's sign is left out)."""
    r = r.detach()
    return r, r.signbit() & ~r.isnan()


@pytest.mark.parametrize("dtype", _DTYPES)
def test_pow_with_a_number_exponent(dtype):
    def body(t):
        out = []
        for e in _EXPONENTS:
            x = _bases(t, dtype)
            y = x ** e
            (g,) = t.autograd.grad(y.sum(), x)
            out += [_exact(y), _exact(g), _exact(t.pow(x.detach(), e)),
                    _exact(x.detach().clone().pow_(e))]
        return out
    same(body, rtol=_RTOL[dtype], atol=0)


@pytest.mark.parametrize("dtype", _DTYPES)
def test_pow_with_a_tensor_exponent(dtype):
    def body(t):
        out = []
        for e in _EXPONENTS:
            x = _bases(t, dtype)
            p = t.full_like(x, e).requires_grad_()
            y = x ** p
            gx, gp = t.autograd.grad(y.sum(), (x, p))
            out += [_exact(y), _exact(gx), _exact(gp)]
        return out
    same(body, rtol=_RTOL[dtype], atol=0)


@pytest.mark.parametrize("dtype", _DTYPES)
def test_sqrt_gradient_at_the_signed_zeros(dtype):
    # (sqrt's gradient is 0.5 * x ** -0.5: -inf at -0.0 in torch's float32 and float64, inf
    # in its float16, through the rsqrt or C pow of each)
    def body(t):
        out = []
        for f in (lambda x: x ** 0.5, t.sqrt):
            x = t.tensor([0.0, -0.0, -_INF, _INF, 4.0], dtype=getattr(t, dtype),
                         requires_grad=True)
            out.append(_exact(t.autograd.grad(f(x).sum(), x)[0]))
        return out
    same(body, rtol=_RTOL[dtype], atol=0)
