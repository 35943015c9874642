"""In-place arithmetic written straight into self, and torch's errors when the result won't fit."""
import numpy as np
import pytest

import ember

from oracle import torch_or_skip


@pytest.fixture
def torch():
    return torch_or_skip()


def both(body, torch):
    return body(ember), body(torch)


def _error(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - the type and message are what is compared
        return type(e).__name__, str(e)
    return None


@pytest.mark.parametrize("other_shape", [(2, 2, 3), (3, 3), (2, 1, 3)])
@pytest.mark.parametrize("method", ["add_", "sub_", "mul_", "div_"])
def test_result_that_does_not_fit_self_raises_torchs_error(torch, method, other_shape):
    def body(lib):
        x = lib.ones(2, 3)
        return _error(lambda: getattr(x, method)(lib.ones(*other_shape)))
    got, want = both(body, torch)
    assert want is not None and got == want


@pytest.mark.parametrize("case", ["x += x", "x *= x.view(9).view(3, 3)", "x[0].add_(x[1])",
                                  "x += x.t()", "x.add_(x[0])", "x[:2].mul_(x[1:])",
                                  "x.clamp_(min=x[0])", "x /= x.t().contiguous()"])
def test_operand_overlapping_self(torch, case):
    """The same memory in the same layout is fine; a partial overlap is torch's error."""
    def body(lib):
        x = lib.arange(1., 10.).reshape(3, 3)
        error = _error(lambda: exec(case, {"x": x}))
        return error, x.numpy().tolist()
    (got_error, got), (want_error, want) = both(body, torch)
    assert got_error == want_error
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_mixed_dtypes_and_scalars_follow_torch(torch):
    def body(lib):
        a = lib.ones(3, dtype=lib.int64)
        a *= 3
        a -= lib.ones(3, dtype=lib.int32)
        b = lib.ones(3, dtype=lib.float64)
        b += lib.ones(3, dtype=lib.float32) * 0.1
        c = lib.ones(3)
        c /= 0
        d = lib.ones(2, 3)
        d.sub_(lib.ones(3), alpha=2)
        return [t.numpy().tolist() for t in (a, b, c, d)] + [str(t.dtype) for t in (a, b)]
    got, want = both(body, torch)
    assert got[:4] == want[:4]
    assert [s.replace("ember", "torch") for s in got[4:]] == want[4:]


def test_in_place_result_is_written_into_self_and_versioned():
    x = ember.ones(4)
    data = x.numpy()
    before = x._version
    x.mul_(2.5)
    assert np.shares_memory(data, x.numpy()) and x.tolist() == [2.5] * 4
    assert x._version == before + 1
