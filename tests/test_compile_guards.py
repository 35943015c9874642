"""ember.compile's generated guards: each thing a recording assumed, changed between calls,
records again (or runs eagerly where docs/compile.md says so), and no call replays a stale
result. Results are compared with the same function run eagerly."""
from __future__ import annotations

import collections
import math
import types
import warnings

import numpy as np
import pytest
from oracle import torch_or_skip

import ember
from ember import nn


def _fallbacks(record):
    return [str(w.message) for w in record if "ember.compile" in str(w.message)]


def _check(cf, fn, *args):
    """The compiled call gives what the function gives eagerly."""
    got, want = cf(*args), fn(*args)
    assert got.dtype == want.dtype
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-6)


class _Scaled(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 2)
        self.scale = 2.0
        self.act = ember.tanh

    def forward(self, x):
        return self.act(self.lin(x)) * self.scale


def test_a_modules_plain_attributes_submodules_and_buffers_are_guarded():
    model = _Scaled()
    cm = ember.compile(model)
    x = ember.ones(4, 3)
    changes = [lambda: setattr(model, "scale", 3.0),  # a number, by value
               lambda: setattr(model, "scale", 3),  # the same value, another type
               lambda: setattr(model, "act", ember.sigmoid),  # an object, by identity
               lambda: setattr(model, "lin", nn.Linear(3, 2)),  # a submodule replaced
               lambda: model.lin.register_buffer("unused", ember.zeros(1)),  # one added
               lambda: setattr(model, "extra", 1)]  # a plain attribute added
    _check(cm, model, x)
    for n, change in enumerate(changes, 2):
        change()
        _check(cm, model, x)
        assert len(cm._compiled.entries) == n
    _check(cm, model, x)  # the last recording holds again
    assert len(cm._compiled.entries) == len(changes) + 1


def test_a_hook_added_to_a_submodule_runs_eagerly():
    model = nn.Sequential(nn.Linear(3, 3), nn.ReLU())
    cm = ember.compile(model)
    x = ember.ones(2, 3)
    _check(cm, model, x)
    model[0].register_forward_hook(lambda m, args, out: out * 10)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        _check(cm, model, x)
    assert len(_fallbacks(record)) == 1 and "hooks" in _fallbacks(record)[0]


def test_which_arguments_share_an_array_is_guarded():
    def f(*xs):
        out = xs[0] * 1
        for k, x in enumerate(xs[1:], 2):
            out = out + x * k
        return out
    x, y = ember.ones(2), ember.full((2,), 3.0)
    for n in (3, 6):  # (pair by pair; more than four arguments: through alias_pattern)
        cf = ember.compile(f)
        patterns = [[x] * n, [x] + [y] * (n - 1), [y] * (n - 1) + [x], [x, y] * (n // 2)]
        for k, args in enumerate(patterns, 1):
            _check(cf, f, *args)
            assert len(cf.entries) == k
        _check(cf, f, *patterns[0])
        assert len(cf.entries) == len(patterns)


CONFIG = [ember.ones(2), 2.0, ("a", 1)]
LIMIT = float("nan")
USER_MODULE = types.ModuleType("user_settings")
USER_MODULE.factor = 2.0


class _Options:
    def __init__(self):
        self.shift = 1.0
        self.table = {"k": [1.0, 2.0]}


OPTIONS = _Options()


def _reads_containers(x):
    out = x * CONFIG[0] * CONFIG[1] + OPTIONS.shift + OPTIONS.table["k"][1]
    return out * USER_MODULE.factor if math.isnan(LIMIT) else out


def test_containers_objects_and_module_attributes_are_guarded():
    global LIMIT
    cf = ember.compile(_reads_containers)
    x = ember.ones(2)
    changes = [lambda: CONFIG.__setitem__(1, 3.0),  # a list item
               lambda: CONFIG.__setitem__(0, ember.full((2,), 5.0)),  # a tensor in it, by identity
               lambda: CONFIG.__setitem__(2, ("a", 2)),  # a tuple inside
               lambda: setattr(OPTIONS, "shift", 4.0),  # an object's attribute
               lambda: OPTIONS.table["k"].append(9.0),  # a list in a dict in an object
               lambda: setattr(USER_MODULE, "factor", 7.0),  # a user module's attribute
               lambda: globals().__setitem__("LIMIT", 1.0)]  # a global NaN replaced
    saved = (list(CONFIG), OPTIONS.shift, list(OPTIONS.table["k"]), USER_MODULE.factor, LIMIT)
    try:
        _check(cf, _reads_containers, x)
        _check(cf, _reads_containers, x)  # (NaN: the same object holds)
        assert len(cf.entries) == 1
        for n, change in enumerate(changes, 2):
            change()
            _check(cf, _reads_containers, x)
            assert len(cf.entries) == n
    finally:
        CONFIG[:], OPTIONS.shift, OPTIONS.table["k"][:], USER_MODULE.factor, LIMIT = saved


def test_default_arguments_and_the_default_dtype_are_guarded():
    def f(x, weights=[1.0, 2.0]):  # noqa: B006 - a mutable default, mutated below
        return x * ember.tensor(weights)
    cf = ember.compile(f)
    x = ember.ones(2, dtype=ember.int64)
    _check(cf, f, x)
    f.__defaults__[0][1] = 5.0
    _check(cf, f, x)
    ember.set_default_dtype(ember.float64)
    try:
        _check(cf, f, x)  # the constant is made in the default dtype
    finally:
        ember.set_default_dtype(ember.float32)
    assert len(cf.entries) == 3


def test_a_parameters_strides_and_requires_grad_are_guarded():
    lin = nn.Linear(3, 3)
    cf = ember.compile(lambda x: lin(x).sum())
    x = ember.ones(2, 3, requires_grad=True)
    cf(x).backward()
    with ember.no_grad():
        lin.weight.data = lin.weight.detach().t().contiguous().t()  # other strides
    _check(cf, lambda x: lin(x).sum(), x)
    lin.bias.requires_grad_(False)
    lin.bias.grad = None
    cf(x).backward()
    assert lin.bias.grad is None and lin.weight.grad is not None
    assert len(cf.entries) == 3


def test_a_replay_gives_quiet_kernels_nans_as_eager_and_torch():
    """A program runs its quiet kernels bare, silenced as a whole: NumPy warns of nothing, and
    a kernel that fixes the sign of the NaNs it makes (log, sqrt below 0: torch's +NaN) still
    sees them made."""
    torch = torch_or_skip()
    x = ember.tensor([-1.0, 4.0, -0.5], dtype=ember.float64)
    def f(x):
        return x.log(), x.sqrt(), x.log1p()
    cf = ember.compile(f)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for _ in range(2):  # (record, replay)
            got = [t.numpy() for t in cf(x)]
    want = [t.numpy() for t in f(torch.tensor(x.numpy()))]
    for g, w in zip(got, want):
        np.testing.assert_array_equal(np.signbit(g), np.signbit(w))
        np.testing.assert_allclose(g, w)
    assert len(cf.entries) == 1


_Pair = collections.namedtuple("_Pair", "first second")


def _many_outputs(x, w):
    y = (x * w).exp()  # (its backward reads y)
    z = x.sin()
    return {"pair": _Pair(y, [z, 2]), "same": (y, x), "sum": (y * z).sum(), "n": 3}


def test_the_outputs_are_rebuilt_as_eager_in_every_mode():
    """A replay wraps its arrays in the same structure eager mode returns (dicts, named tuples,
    an input returned as it is, one tensor twice), with grad_fn, requires_grad and inference
    as eager mode gives them, and an output its backward reads checked for in-place changes."""
    cf = ember.compile(_many_outputs)
    x, w = ember.ones(3), ember.full((3,), 0.5, requires_grad=True)
    for _ in range(2):  # (record, replay)
        got, want = cf(x, w), _many_outputs(x, w)
        assert type(got["pair"]) is _Pair and got["n"] == 3 and got["same"][1] is x
        assert got["same"][0] is got["pair"].first and got["pair"].second[1] == 2
        for a, b in ((got["pair"].first, want["pair"].first), (got["sum"], want["sum"]),
                     (got["pair"].second[0], want["pair"].second[0])):
            np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-6)
            assert a.requires_grad == b.requires_grad and (a.grad_fn is None) == (b.grad_fn is None)
        assert got["sum"].grad_fn.name() == "CompiledFunctionBackward"
        got["pair"].first.add_(1)  # read by the backward: eager's error
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            got["sum"].backward()
    with ember.no_grad():
        out = cf(x, w)
    assert out["sum"].grad_fn is None and not out["sum"].requires_grad
    with ember.inference_mode():
        out = cf(x, w)
    assert out["sum"].is_inference() and not out["same"][1].is_inference()
    assert len(cf.entries) == 3


def test_each_argument_check_of_the_generated_guard_fires():
    # positional tensors and numbers are checked one by one in the guard itself (no
    # argument picture): each change below misses every recording so far and records again
    def f(*args, **kwargs):
        out = ember.zeros(())
        for v in list(args) + list(kwargs.values()):
            out = out + (v.float().sum() if isinstance(v, ember.Tensor) else v)
        return out
    cf = ember.compile(f, recompile_limit=32)
    x = ember.ones(2, 3)
    base = ember.ones(4, 3)
    with ember.inference_mode():
        inference = ember.ones(2, 3)
    calls = [(x, 2.0), (x, 3.0), (x, 3), (x, True), (x,), (x, 2.0, x), (2.0, x),
             (ember.ones(3, 2), 2.0),  # shape
             (ember.ones(2, 3, dtype=ember.float64), 2.0),  # dtype
             (ember.ones(3, 2).t().clone(), 2.0),  # strides (not a view)
             (ember.ones(2, 3, requires_grad=True), 2.0),  # requires_grad
             (base[:2], 2.0),  # a view (same shape, dtype and strides)
             (inference, 2.0),  # an inference tensor
             (nn.Parameter(ember.ones(2, 3)), 2.0)]  # a subclass
    for n, args in enumerate(calls, 1):
        _check(cf, f, *args)
        assert len(cf.entries) == n, args
    for args in calls:  # (each replays its own recording now)
        _check(cf, f, *args)
    for scale in (2.0, 2.0, 4.0):  # keyword arguments: through the argument picture
        assert cf(x, scale=scale).item() == f(x, scale=scale).item()
    assert len(cf.entries) == len(calls) + 2


def test_each_outside_tensor_check_of_the_generated_guard_fires():
    # an outside tensor's class, array type, shape, dtype, strides, requires_grad,
    # inference-ness and view-ness are read in one call and one comparison: each changed in
    # turn records again
    W = ember.ones(2, 3)

    def f(x):
        return (x * W.float()).sum()
    cf = ember.compile(f)
    x = ember.ones(2, 3)
    _check(cf, f, x)
    for n, other in enumerate(_tensor_changes(), 2):
        ember.utils.swap_tensors(W, other)
        _check(cf, f, x)
        assert len(cf.entries) == n


def _tensor_changes():
    """Tensors like ``ember.ones(2, 3)`` but for one thing a recording assumes of it."""
    with ember.inference_mode():
        inference = ember.ones(2, 3)
    return [ember.ones(3, 2).t().clone(),  # strides (not a view)
            ember.ones(2, 3, dtype=ember.float64),  # dtype
            ember.ones(1, 3),  # shape
            ember.ones(2, 3, requires_grad=True),  # requires_grad
            nn.Parameter(ember.ones(2, 3)),  # class
            inference,  # inference-ness
            ember.ones(4, 3)[1:3]]  # a view


def test_tensor_arguments_and_outside_tensors_checked_in_one_mapped_call_each_fire():
    # all-tensor arguments and the plain outside tensors have their metadata read by one
    # mapped getter call and compared at once: a change to any one of them, argument or
    # outside tensor, first or last, records again (never a stale replay)
    A, B = ember.ones(2, 3), ember.ones(2, 3)

    def f(x, y):
        return (x * A.float() + y * B.float()).sum()
    cf = ember.compile(f, recompile_limit=64)
    x, y = ember.ones(2, 3), ember.ones(2, 3)
    _check(cf, f, x, y)
    n = 1
    for other in _tensor_changes():
        _check(cf, f, other, y)
        _check(cf, f, x, other)
        n += 2
        assert len(cf.entries) == n
    for other in _tensor_changes():
        ember.utils.swap_tensors(B, other)  # the last outside tensor
        _check(cf, f, x, y)
        n += 1
        assert len(cf.entries) == n
        ember.utils.swap_tensors(B, ember.ones(2, 3))
        _check(cf, f, x, y)  # (replays the first recording again)
        assert len(cf.entries) == n
    for other in _tensor_changes():
        ember.utils.swap_tensors(A, other)  # the first
        _check(cf, f, x, y)
        n += 1
        assert len(cf.entries) == n
        ember.utils.swap_tensors(A, ember.ones(2, 3))
    # another number of arguments, an object in a tensor's place, a keyword
    with pytest.raises(TypeError):
        cf(x)
    with pytest.raises(TypeError):
        cf(x, y, x)
    assert cf(x, 2.0).item() == f(x, 2.0).item()
    assert cf(x, y=y).item() == f(x, y=y).item()
    assert len(cf.entries) == n + 2


def test_outside_tensors_are_checked_with_arguments_of_every_kind():
    # beside numbers (checked one by one) and keywords (through the argument picture), the
    # plain outside tensors are still read in one mapped call: changing one records again
    W = ember.ones(2, 3)

    def f(x, scale=1.0):
        return (x * W.float()).sum() * scale
    cf = ember.compile(f, recompile_limit=64)
    x = ember.ones(2, 3)
    for call in ((x, 2.0), (x,)):
        kwargs = {"scale": 3.0} if len(call) == 1 else {}
        got = cf(*call, **kwargs)
        entries = len(cf.entries)
        for other in _tensor_changes():
            ember.utils.swap_tensors(W, other)
            assert cf(*call, **kwargs).item() == f(*call, **kwargs).item()
            assert len(cf.entries) == entries + 1
            entries += 1
            ember.utils.swap_tensors(W, ember.ones(2, 3))
            assert cf(*call, **kwargs).item() == got.item()
            assert len(cf.entries) == entries


def test_a_list_of_tensors_in_a_closure_is_guarded_by_identity_and_type():
    # (a short list: item by item)
    _check_list_guard([ember.ones(2), ember.ones(2), ember.ones(2)])


def test_a_long_list_of_tensors_is_guarded_by_its_items_ids():
    # a list longer than guards._CHAINED_ITEMS is compared by its items' ids, a shorter one
    # item by item: each change to the long one records again too
    from ember._compile.guards import _CHAINED_ITEMS
    n = _CHAINED_ITEMS + 2
    _check_list_guard([ember.full((2,), 1.0 + k / n) for k in range(n)])


def _check_list_guard(Ws):
    """Each change to the list ``Ws`` that a compiled function multiplies by records again,
    and the same tensors replay their own recording."""
    def f(x):
        out = x
        for W in Ws:
            out = out * W
        return out.sum()
    cf = ember.compile(f, recompile_limit=64)
    x = ember.full((2,), 2.0)
    _check(cf, f, x)
    changes = [lambda: Ws.__setitem__(-1, ember.full((2,), 3.0)),  # the last item replaced
               lambda: Ws.__setitem__(0, ember.full((2,), 5.0)),  # the first
               lambda: Ws.append(ember.full((2,), 7.0)),  # one more
               lambda: Ws.pop(),  # one fewer (the items of the second recording)
               lambda: Ws.reverse()]  # the same tensors, in another order
    expected = [2, 3, 4, 4, 5]
    for change, n in zip(changes, expected):
        change()
        _check(cf, f, x)
        assert len(cf.entries) == n
    cell = f.__closure__[0]
    cell.cell_contents = tuple(Ws)  # the same tensors, in a tuple
    _check(cf, f, x)
    assert len(cf.entries) == 6
