"""In-place arithmetic written straight into self, and torch's errors when the result won't fit."""
import numpy as np
import pytest

import ember

from oracle import same, torch_or_skip


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


UPDATES = {
    # the generated in-place caller's own cases
    "mul_ scalar": lambda lib, x, y: (x * 1.0).mul_(2.0),
    "add_ tensor": lambda lib, x, y: (x * 1.0).add_(y),
    "exp_": lambda lib, x, y: (x * 1.0).exp_(),
    "tanh_ then mul": lambda lib, x, y: (x * 1.0).tanh_() * y,
    "sqrt_ of negatives": lambda lib, x, y: (x - 2.0).sqrt_(),
    "relu_": lambda lib, x, y: (x - 2.0).relu_(),
    # calls it hands to the general path
    "add_ alpha": lambda lib, x, y: (x * 1.0).add_(y, alpha=2),
    "mul_ by a tensor that requires grad (saves self)": lambda lib, x, y: (y * 1.0).mul_(x),
    "mul_ by itself": lambda lib, x, y: (x * 1.0).mul_(x),
    "mul_ by float64": lambda lib, x, y: (x * 1.0).mul_(y.double()),
    "view": lambda lib, x, y: _on_view(x),
    "leaf": lambda lib, x, y: x.mul_(2.0),
    "int by a float": lambda lib, x, y: lib.ones(3, dtype=lib.int64).mul_(2.5),
    "exp_ of int": lambda lib, x, y: lib.ones(3, dtype=lib.int64).exp_(),
    "saved then modified": lambda lib, x, y: _saved_then_modified(x),
}


def _on_view(x):
    z = x * 1.0
    z[1:].mul_(3.0)
    return z


def _saved_then_modified(x):
    z = (x * 1.0).exp()
    z.mul_(2.0)  # exp saved its result: backward must refuse
    return z


@pytest.mark.parametrize("case", list(UPDATES))
def test_in_place_calls_match_torch(case):
    """Values, grads, grad_fn names, versions and errors, whichever path a call takes."""
    def body(lib):
        x = lib.tensor([0.5, 1.0, 4.0], requires_grad=True)
        y = lib.tensor([1.0, -2.0, 3.0])
        z = UPDATES[case](lib, x, y)
        z.sum().backward()
        return z, x.grad, z._version
    same(body)


def test_unary_in_place_writes_into_self_like_out_of_place():
    x = ember.linspace(-3, 3, 7, dtype=ember.float64)
    for name in ("exp", "tanh", "sin", "cos", "expm1", "arcsinh"):
        y = x.clone()
        data = y.numpy()
        getattr(y, name + "_")()
        assert np.shares_memory(data, y.numpy())
        assert y.tolist() == getattr(x, name)().tolist()


def test_expanded_write_warning_names_the_callers_line():
    x = ember.zeros(3, 1).expand(3, 4)
    mask = ember.ones(3, 4, dtype=ember.bool)
    with pytest.warns(UserWarning, match="on expanded tensors is deprecated") as record:
        x.masked_fill_(mask, 1.0)
        x[mask] = 2.0  # (index_put_'s warning, then the masked_fill_ it runs)
    assert [w.filename for w in record] == [__file__] * 3


def test_a_warning_inside_a_generated_op_call_names_the_callers_line():
    # (ops whose results show torch's writes on inference tensors run through one more layer)
    x = ember.ones(1, 3)
    with ember.inference_mode():
        y = ember.ones(1, 3)
    with pytest.warns(UserWarning, match="degrees of freedom is <= 0") as record:
        x.std(0)
        y.var(0)
        ember.std_mean(x, 0)
    assert [w.filename for w in record] == [__file__] * 3


def test_setitem_of_a_zero_dim_value_that_shares_the_written_memory():
    # a 0-dim value is written with fill_, which reads it first: torch checks no overlap
    def body(t):
        value = t.tensor(-0.01, dtype=t.float64)
        square = value.reshape(1, 1)
        square[-2:3:3] = value
        row = t.arange(4.0)
        row[1:3] = row[0]
        return square, square._version, row
    same(body)
