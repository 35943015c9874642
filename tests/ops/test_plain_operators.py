"""The operators' plain path (registry.plain_operands): ``x op y`` and ``x op= y`` that record
nothing, on plain NumPy arrays, run the ufunc alone. Each case that must leave it (every check
that could refuse the call or change its result) is compared with torch, bit for bit, and
watched: the op's general path (its generated caller or in-place call) runs for it, and only
for it."""
import numpy as np
import pytest

import ember
from ember._ops import pointwise

from oracle import same, torch_or_skip

_CASES_SETUP = """
x = lib.tensor([[1.5, -2.25, 3.0], [0.1, 0.2, 0.3]])
y = lib.tensor([[0.5, 0.25, -1.0], [1.0, 2.0, 3.0]])
y64 = y.double()
i = lib.tensor([[1, 2, 3], [4, 5, 6]])
i8 = lib.tensor([1, 2, 3], dtype=lib.int8)
b = lib.tensor([True, False])
c = lib.tensor([1 + 2j, 3 - 1j])
h = lib.tensor([0.1, 0.7, 3.3], dtype=lib.float16)
bf = lib.tensor([0.1, 0.7, 3.3], dtype=lib.bfloat16)
s = lib.tensor(2.5)
sq = lib.arange(1., 10.).reshape(3, 3)
w = lib.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], requires_grad=True)
u = lib.from_numpy(np.arange(6, dtype=np.float32).reshape(2, 3))  # an array with a NumPy base
m = lib.arange(1., 10.).reshape(3, 3).clone()
"""

# (code, whether it stays on the plain path): in-place, under no_grad unless it says
_INPLACE = [
    ("with lib.no_grad():\n    x -= 0.5", True),
    ("with lib.no_grad():\n    x -= y", True),
    ("with lib.no_grad():\n    x += x", True),
    ("with lib.no_grad():\n    x *= 0.1\n    x -= 3", True),
    ("with lib.no_grad():\n    w -= 0.01 * y", True),  # a leaf requiring grad, no grad mode
    ("with lib.no_grad():\n    x -= w", True),  # an operand requiring grad, no grad mode
    ("x -= y", True),  # grad mode, nothing requires grad
    ("with lib.no_grad():\n    s -= 0.5", True),  # 0-d
    ("with lib.no_grad():\n    h -= 0.1", True),
    ("with lib.no_grad():\n    x -= y[0]", True),  # a broadcast operand (a fresh view)
    ("with lib.no_grad():\n    u -= y", True),  # self's array a NumPy view: asked for overlap
    ("with lib.no_grad():\n    u -= y[1]", True),  # both NumPy views, apart
    # leaves it
    ("with lib.no_grad():\n    x -= y64", False),  # an operand of another dtype
    ("with lib.no_grad():\n    i -= 0.5", False),  # Float can't be cast to Long
    ("with lib.no_grad():\n    i -= 1", False),  # an integer tensor with a number
    ("with lib.no_grad():\n    i8 += 200", False),  # (wraps around, as torch's)
    ("with lib.no_grad():\n    x -= lib.ones(2, 2, 3)", False),  # does not broadcast
    ("with lib.no_grad():\n    s -= lib.ones(1)", False),  # more dimensions than self
    ("with lib.no_grad():\n    x[0] -= 1", False),  # a view: its base's counter
    ("with lib.no_grad():\n    sq -= sq.t()", False),  # a view
    ("with lib.no_grad():\n    m -= m.t()", False),  # a partial overlap (torch's error)
    ("with lib.no_grad():\n    m -= m[0]", False),  # an operand inside self (torch's error)
    ("with lib.no_grad():\n    u -= u.t()", False),  # the same, self's array a NumPy view
    ("with lib.no_grad():\n    x -= np.float64(0.5)", False),  # a NumPy number
    ("with lib.no_grad():\n    b -= b", False),  # bool tensors
    ("with lib.no_grad():\n    x -= True", False),  # a bool number
    ("with lib.no_grad():\n    c -= 0.5", False),  # complex with a number
    ("with lib.no_grad():\n    bf -= 0.5", False),  # bfloat16 (see opmath.py)
    ("with lib.no_grad():\n    x -= lib.nn.Parameter(y)", False),  # a Tensor subclass operand
    ("w -= 1", False),  # grad mode: the leaf's refusal
    ("v = w * 2\nv -= y\nv.sum().backward()", False),  # grad mode: recorded
    ("x -= w\nx.sum().backward()", False),  # grad mode: an operand requiring grad
    ("with lib.inference_mode():\n    n = lib.ones(3)\nn -= 1", False),  # an inference self
    ("with lib.inference_mode():\n    n = lib.ones(3)\nk = lib.ones(3)\n"
     "with lib.no_grad():\n    k -= n", False),  # an inference operand
    ("with lib.inference_mode():\n    x -= 1", True),  # a normal tensor in inference mode
    ("z = w.clone()\nv = z[0]\nz.mul_(2)\nwith lib.no_grad():\n    x -= v\n"
     "g = v.grad_fn.name()", False),  # an operand that is a view whose base changed
]

# out of place: the result's dtype, values, layout and flags
_OPERATORS = [
    ("r = x * 0.5", True),
    ("r = 0.5 * x", True),
    ("r = x - y", True),
    ("r = x / 3", True),
    ("r = x + y[0]", True),
    ("r = x.t() * 2", True),  # a layout torch's iterator keeps
    ("r = s * 2.0", True),  # 0-d
    ("r = h - 0.1", True),
    ("with lib.no_grad():\n    r = w * 0.5", True),
    ("r = x * w.detach()", True),
    ("r = 2 - x", True),  # reflected operators: a number tested first
    ("r = 2.5 / x", True),
    # leaves it
    ("r = w * 0.5", False),  # grad mode: recorded
    ("r = x * w", False),
    ("with lib.inference_mode():\n    r = x * 0.5", False),  # an inference result
    ("r = i * 0.5", False),  # promoted
    ("r = i / 2", False),
    ("r = x * y64", False),
    ("r = x * lib.ones(4)", False),  # does not broadcast
    ("r = b - b", False),  # bool tensors
    ("r = x - True", False),
    ("r = x * 1j", False),
    ("r = c * 0.5", False),
    ("r = bf * 0.5", False),
    ("r = x * lib.nn.Parameter(y)", False),
    ("with lib.no_grad():\n    r = x * lib.nn.Parameter(y)", False),  # a Tensor subclass
    # a subclass self: the result a Tensor, as torch's
    ("with lib.no_grad():\n    r = lib.nn.Parameter(y) * x\nkind = type(r).__name__", True),
    ("r = x * np.float64(0.5)", False),  # a NumPy number (a float subclass)
    ("r = 2 * np.float32(0.5) * x", False),
]


class _Spy:
    """Stands for an op's generated path, counting the calls that reach it."""

    def __init__(self, call):
        self.call, self.calls = call, 0

    def __call__(self, args):
        self.calls += 1
        return self.call(args)


def _outcome(code):
    def body(lib):
        scope = {"lib": lib, "np": np}
        exec(_CASES_SETUP, scope)
        exec(code, scope)
        out = {}
        for name, value in scope.items():
            if name in ("lib", "np", "__builtins__"):
                continue
            if hasattr(value, "_version"):
                inference = value.is_inference()  # (which has no version)
                out[name] = (value.detach(), None if inference else value._version,
                             value.stride(), inference, value.requires_grad,
                             None if value.grad_fn is None else value.grad_fn.name(),
                             value.grad if value.is_leaf else None)
            else:
                out[name] = value
        return out
    return body


@pytest.fixture
def spies(monkeypatch):
    """The generated paths the operators here fall back to, watched."""
    from ember._ops.inplace import _compile_inplace
    from ember._ops.registry import tensor_caller
    watched = []
    for d in (pointwise.add, pointwise.sub, pointwise.mul, pointwise.div):
        for attr, make in (("caller", tensor_caller), ("inplace_caller", _compile_inplace)):
            monkeypatch.setattr(d, attr, None)
            spy = _Spy(make(d))
            monkeypatch.setattr(d, attr, spy)
            watched.append(spy)
    return watched


@pytest.mark.parametrize("code, plain", _INPLACE + _OPERATORS)
def test_plain_path_or_general_path_as_torch(code, plain, spies):
    torch_or_skip()
    same(_outcome(code), rtol=0, atol=0)  # (runs torch's first, then ember's)
    calls = sum(spy.calls for spy in spies)
    assert (calls == 0) == plain, f"{code!r}: the general path ran {calls} times"


# the in-place methods: the same path, for the trailing arguments its ufunc computes
_METHODS = [
    ("with lib.no_grad():\n    x.sub_(y)", True),
    ("with lib.no_grad():\n    x.sub_(0.5)", True),
    ("with lib.no_grad():\n    w.sub_(y, alpha=1)", True),
    ("x.sub_(y)", True),  # grad mode, nothing requires grad
    # leaves it
    ("with lib.no_grad():\n    x.sub_(y, alpha=2)", False),
    ("with lib.no_grad():\n    x.sub_(y, alpha=1.0)", False),
    ("with lib.no_grad():\n    x.sub_(y, alpha=True)", False),  # a bool alpha
    ("with lib.no_grad():\n    i.sub_(0.5)", False),
    ("with lib.no_grad():\n    b.sub_(b)", False),
    ("with lib.no_grad():\n    x[0].sub_(y[1])", False),
    ("w.sub_(y)", False),  # grad mode: the leaf's refusal
]


@pytest.mark.parametrize("code, plain", _METHODS)
def test_method_plain_path_or_general_path_as_torch(code, plain, monkeypatch):
    """``sub_``'s general paths run sub's check (bools refused), which the plain path
    skips: a watched check tells which path a call took."""
    torch_or_skip()
    from ember._ops.inplace import _compile_inplace
    sub = pointwise.sub
    calls, sub_check = [], sub.check

    def check(*args):
        calls.append(args)
        return sub_check(*args)
    check.refuses_kinds = sub_check.refuses_kinds
    monkeypatch.setattr(sub, "check", check)
    monkeypatch.setattr(sub, "inplace_caller", _compile_inplace(sub))
    same(_outcome(code), rtol=0, atol=0)
    assert (not calls) == plain, f"{code!r}: the general path ran {len(calls)} times"


def test_learning_rate_update_bit_for_bit():
    """The users' SGD update under no_grad, on the plain path: torch's values exactly."""
    torch = torch_or_skip()
    rng = np.random.default_rng(0)
    for dtype in ("float16", "float32", "float64"):
        data = [rng.standard_normal(shape).astype(dtype) for shape in ((64, 32), (32,))]
        grads = [rng.standard_normal(a.shape).astype(dtype) for a in data]
        got = []
        for lib in (torch, ember):
            params = [lib.tensor(a.copy(), requires_grad=True) for a in data]
            for p, g in zip(params, grads):
                p.grad = lib.tensor(g)
            with lib.no_grad():
                for p in params:
                    p -= 0.01 * p.grad
                    p.grad = None
            got.append([(p.detach().numpy().copy(), p._version, p.grad) for p in params])
        for (want, v_want, g_want), (have, v_have, g_have) in zip(*got):
            np.testing.assert_array_equal(have, want)
            assert (v_have, g_have) == (v_want, g_want)


def test_forward_ad_and_profiler_take_the_general_path(spies):
    """A forward AD level (the tangent of ``x -= dual``) and the profiler (its events) see
    every call."""
    torch = torch_or_skip()
    got = []
    for lib in (torch, ember):
        fw = lib.autograd.forward_ad
        x = lib.tensor([1.0, 2.0])
        with fw.dual_level():
            d = fw.make_dual(lib.tensor([3.0, 4.0]), lib.tensor([1.0, -1.0]))
            x -= d
            r = 2.0 * d
            tangents = (fw.unpack_dual(x).tangent.tolist(), fw.unpack_dual(r).tangent.tolist())
        with lib.autograd.profiler.profile() as prof:
            y = lib.ones(2)
            y -= 0.5
            z = y * 0.5
        names = [e.name for e in prof.function_events if e.name in ("aten::sub_", "aten::mul")]
        got.append((tangents, names, x.tolist(), z.tolist()))
    assert got[1] == got[0]
    assert spies[3].calls and spies[4].calls  # sub's in-place call, mul's caller


def test_autocast_lists_no_op_with_a_plain_path():
    """Autocast replaces the generated caller of the ops it lists, which the plain path
    skips: none of them may have one."""
    from ember.amp._policy import RULES
    from ember._ops.registry import _DECLARED, plain_operands
    listed = {name for table in RULES.values() for name in table}
    plain = {d.name for same_name in _DECLARED.values() for d in same_name
             if plain_operands(d) is not None}
    assert plain >= {"add", "sub", "mul", "div"}
    assert not plain & listed


def test_numbers_through_the_scalar_cache_bit_for_bit():
    """The operators' numbers are cached 0-d arrays (registry._SCALARS, read by subscript):
    0.0 then -0.0 (equal keys, never cached), NaN, a float16 tensor's number (rounded through
    float32), an int, and more distinct numbers than the cache keeps: torch's bits each time."""
    torch = torch_or_skip()
    numbers = [0.0, -0.0, 0.0, float("nan"), 0.1, 1e-8, 3, 65504.5, 1e300] + [
        k / 7 for k in range(300)]
    got = []
    for lib in (torch, ember):
        bits = []
        for dtype in ("float16", "float32", "float64"):
            x = lib.tensor(np.array([-1.5, 0.0, 2.0], dtype=dtype))
            for v in numbers:
                y = x.clone()
                with lib.no_grad():
                    y -= v
                for r in (x * v, v * x, x / (v or 1.0), y):
                    bits.append((str(r.dtype).split(".")[-1], r.numpy().tobytes()))
        got.append(bits)
    assert got[1] == got[0]
