"""torch.quasirandom.SobolEngine against torch: the points (plain and scrambled with a seed or
the global generator, in every dimension range), draw/draw_base2/fast_forward/reset, the
engine's state tensors, dtypes, reprs and errors."""
from __future__ import annotations

import pytest

from tests.oracle import error_of, same


def _engine(torch, *args, **kwargs):
    return torch.quasirandom.SobolEngine(*args, **kwargs)


@pytest.mark.parametrize("dimension", [1, 2, 7, 40, 1111, 1112, 21201])
@pytest.mark.parametrize("scramble", [False, True])
def test_points(dimension, scramble):
    """Each dimension's direction numbers (Joe and Kuo's table, all 21201 of them) and, for a
    seeded scrambled engine, its random matrices and shift: the same points as torch's."""
    def body(torch):
        e = _engine(torch, dimension, scramble=scramble, seed=7)
        first = e.draw(5)
        later = e.draw(300)
        return first[:, -8:], later[-4:, :8], later[:, -8:], e.sobolstate[-3:], e.quasi[-8:]
    same(body, rtol=0, atol=0)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_dtypes_and_the_kept_first_point(dtype):
    """float32 rounds each 30-bit integer (cast, then scaled, as torch's kernel); a scrambled
    engine's first point is divided in the default dtype when the engine is made, so a float64
    draw shows it in float32's precision, as torch's."""
    def body(torch):
        e = _engine(torch, 9, scramble=True, seed=123)
        out = [e.draw(4, dtype=getattr(torch, dtype)), e.draw(3, dtype=getattr(torch, dtype))]
        out.append(_engine(torch, 3, True, 5).draw(1, dtype=torch.float64))
        torch.set_default_dtype(torch.float64)
        try:
            out.append(_engine(torch, 3, True, 5).draw(2))
        finally:
            torch.set_default_dtype(torch.float32)
        out.append(_engine(torch, 3).draw(1, dtype=torch.float16))  # (only converted)
        out.append(_engine(torch, 3).draw(1, dtype=torch.int32))
        return out
    same(body, rtol=0, atol=0)


def test_fast_forward_reset_and_base2():
    def body(torch):
        out = []
        e = _engine(torch, 5, scramble=True, seed=1)
        out.append(e.fast_forward(1000).draw(3))
        out.append(e.fast_forward(0).draw(2))
        out.append((e.num_generated, e.reset().num_generated, e.draw(2)))
        fresh = _engine(torch, 5)
        out += [fresh.fast_forward(1).draw(2), fresh.fast_forward(7).draw(1)]
        zero = _engine(torch, 4)
        zero.fast_forward(0)
        out.append((zero.num_generated, zero.draw(2)))
        b = _engine(torch, 6)
        out += [b.draw_base2(3), b.draw_base2(3), b.num_generated]
        drawn = _engine(torch, 4)
        drawn.draw(3)
        out += [drawn.draw(0), drawn.num_generated]
        return out
    same(body, rtol=0, atol=0)


def test_global_generator_without_seed():
    """Without a seed, the scrambling draws from the global generator."""
    def body(torch):
        torch.manual_seed(11)
        e = _engine(torch, 6, scramble=True)
        return e.draw(4), e.shift, torch.rand(2)
    same(body, rtol=0, atol=0)


def test_out_and_state():
    def body(torch):
        e = _engine(torch, 5, scramble=True, seed=0)
        state = (e.shift, e.quasi, e.sobolstate[:, :6], e._first_point, e.MAXBIT, e.MAXDIM,
                 e.seed, e.scramble, e.dimension)
        out = torch.empty(1, 1, dtype=torch.float64)
        result = e.draw(3, out=out)
        return state, result is out, out, e.quasi
    same(body, rtol=0, atol=0)


def test_reprs_and_errors():
    def body(torch):
        S = torch.quasirandom.SobolEngine
        reprs = [repr(S(3)), repr(S(3, scramble=True)), repr(S(3, seed=4)), repr(S(3, True, 4))]
        return reprs, [error_of(f) for f in (
            lambda: S(0), lambda: S(21202), lambda: S(3).draw(0), lambda: S(3).draw(-1),
            lambda: S(3).draw(2, dtype=torch.float16), lambda: S(3).draw(2, dtype=torch.int64),
            lambda: S(3).draw(2.0), lambda: S(3).fast_forward(1).draw_base2(2),
            lambda: S(3).draw(2, dtype=torch.bfloat16))]
    same(body)
