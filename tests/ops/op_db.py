"""The op table: one row per op variant; ``tests/ops/test_ops.py`` is generated from it.

A row names the public callable under test, its PyTorch equivalent (the oracle), the registry
``OpDef`` objects it exercises (so that a meta-test can check that every registered op has a
row), and a sample generator. Samples are built from NumPy arrays, so the same values reach
ember and torch:

* a NumPy array becomes a tensor (it requires grad in the gradient tests when it is floating
  point), ``C(array)`` a tensor that never requires grad (targets, weights, masks),
* ``DT("float64")`` becomes ``ember.float64`` / ``torch.float64``,
* anything else (Python numbers, dims, shapes, index keys) is passed as it is.

Arrays are made by a :class:`Maker` bound to the dtype under test and to the row's input domain
(``domain`` bounds, ``kinks`` kept at a distance: abs, relu, clamp bounds).

Known ember bugs are ``XFail`` entries (strict), each with the reason; skips carry a reason too.
"""
from __future__ import annotations

import math
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

import ember
import ember.nn.functional as F
from ember._ops import indexing as IX
from ember._ops import linalg as LA
from ember._ops import logical as LG
from ember._ops import nn_ops as NN
from ember._ops import pointwise as PW
from ember._ops import reduction as R
from ember._ops import shape as SH
from ember._ops import strided as ST
from ember._ops import unary as UN
from ember._ops import views as VW
from ember._ops.registry import OpDef


def _op_modules():
    """Every op family module of ember._ops (all but the registry), found by walking it."""
    import importlib
    import pkgutil

    import ember._ops as ops
    return tuple(importlib.import_module(f"ember._ops.{m.name}")
                 for m in pkgutil.iter_modules(ops.__path__) if m.name != "registry")


OP_MODULES = _op_modules()

# ---------------------------------------------------------------------------------------------
# Table machinery
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class C:
    """A tensor input that never requires grad (a target, a weight, an index, a mask)."""

    value: np.ndarray


@dataclass(frozen=True)
class DT:
    """A dtype argument, resolved on ember or on torch (``DT("float64")``)."""

    name: str


@dataclass
class Sample:
    """One call: positional and keyword arguments (see the module docstring for conventions)."""

    name: str
    args: tuple
    kwargs: dict = field(default_factory=dict)
    # Why gradcheck must not run here (a tie, a kink, a lossy cast); empty: it runs.
    no_gradcheck: str = ""
    # Extra keyword arguments for gradcheck (eps for casts to float32, ...).
    gradcheck_kwargs: dict = field(default_factory=dict)


def S(name, *args, no_gradcheck="", gradcheck_kwargs=None, **kwargs) -> Sample:
    return Sample(name, args, kwargs, no_gradcheck, gradcheck_kwargs or {})


@dataclass(frozen=True)
class XFail:
    """A known ember bug: ``test`` (a test function name) fails for the matching cases."""

    test: str
    reason: str
    samples: tuple | None = None  # sample names (None: all)
    dtypes: tuple | None = None  # dtype names (None: all)

    def matches(self, test, sample, dtype):
        return (self.test == test and (self.samples is None or sample in self.samples)
                and (self.dtypes is None or dtype is None or dtype in self.dtypes))


class Maker:
    """Makes sample arrays in the dtype under test, inside the row's input domain."""

    def __init__(self, dtype: str, domain=(-2.0, 2.0), kinks=(), seed: int = 0):
        self.dtype = dtype
        self.domain = domain
        self.kinks = kinks
        self.rng = np.random.default_rng(seed)

    def __call__(self, *shape, dtype=None, low=None, high=None, kinks=None):
        if len(shape) == 1 and isinstance(shape[0], tuple):
            shape = shape[0]
        dt = np.dtype(dtype or self.dtype)
        lo = self.domain[0] if low is None else low
        hi = self.domain[1] if high is None else high
        kinks = self.kinks if kinks is None else kinks
        if dt.kind == "b":
            return np.asarray(self.rng.random(shape) < 0.5)
        if dt.kind in "iu":
            lo_i = max(math.ceil(lo), 0) if dt.kind == "u" else math.ceil(lo)
            x = self.rng.integers(lo_i, math.floor(hi) + 1, size=shape)
            for k in kinks:
                x = np.where(np.abs(x - k) < 0.5, x + 1, x)
            return np.asarray(x).astype(dt)
        x = self.rng.uniform(lo, hi, size=shape)
        for k in kinks:  # keep a distance of 0.25 from non-differentiable points
            d = x - k
            x = np.where(np.abs(d) < 0.25, k + d + np.where(d >= 0, 0.25, -0.25), x)
        return np.asarray(x).astype(dt)

    def complex(self, *shape):
        """Complex values in the domain (real and imaginary parts drawn apart), in the complex
        dtype of the precision under test (complex64 for float32, complex128 for float64)."""
        re, im = self(*shape, dtype="float64"), self(*shape, dtype="float64")
        return np.asarray(re + 1j * im).astype(_COMPLEX_OF.get(self.dtype, "complex128"))

    def arr(self, values, dtype=None):
        """Fixed values (ties, zeros, NaNs) in the dtype under test."""
        return np.asarray(values).astype(dtype or self.dtype)

    def idx(self, *shape, high):
        """int64 indices in [0, high)."""
        return np.asarray(self.rng.integers(0, high, size=shape)).astype(np.int64)

    def mask(self, *shape):
        return np.asarray(self.rng.random(shape) < 0.5)

    @property
    def floating(self):
        return np.dtype(self.dtype).kind == "f"


_COMPLEX_OF = {"float32": "complex64", "float64": "complex128", "float16": "complex64"}
FLOATS = ("float32", "float64")
INTS = ("int64", "int32")
ALL_REAL = ("float32", "float64", "float16", "int64", "int32", "uint8", "bool")


@dataclass
class OpInfo:
    """One op variant: the callable, its torch oracle, what it exercises and how to feed it."""

    name: str
    op: Callable
    # torch: a dotted name on the torch module, a ``lambda torch: fn``, or None when ``op``
    # itself works on torch tensors (method and operator lambdas).
    ref: str | Callable | None
    opdefs: tuple
    samples: Callable[[Maker], list]
    np_ref: Callable | None = None
    dtypes: tuple = FLOATS
    domain: tuple = (-2.0, 2.0)
    kinks: tuple = ()
    differentiable: bool = True
    gradgrad: bool = True
    public: bool = True  # a public callable: its grad_fn names are compared with torch's
    promotion: bool = False  # a binary op: run the dtype promotion matrix against torch
    # draws random numbers: on a GPU from its own generator, so the device test compares
    # only the shapes, dtypes and devices of what it gives
    random: bool = False
    # positions of arguments torch wants on the CPU beside device tensors (tensor_split's
    # index tensor): the device tests leave them there
    host_args: tuple = ()
    tols: dict = field(default_factory=dict)  # dtype name -> (rtol, atol)
    skips: dict = field(default_factory=dict)  # test name -> reason
    xfails: tuple = ()

    def make_samples(self, dtype: str) -> list:
        seed = zlib.crc32(f"{self.name}/{dtype}".encode())
        return self.samples(Maker(dtype, self.domain, self.kinks, seed))

    def torch_fn(self, torch):
        if self.ref is None:
            return self.op
        if isinstance(self.ref, str):
            obj = torch
            for part in self.ref.split("."):
                obj = getattr(obj, part)
            return obj
        return self.ref(torch)

    def xfail_reason(self, test, sample, dtype):
        for x in self.xfails:
            if x.matches(test, sample, dtype):
                return x.reason
        return None


OP_DB: list[OpInfo] = []


def row(name, op, ref, opdefs, samples, **kw) -> OpInfo:
    info = OpInfo(name, op, ref, tuple(opdefs), samples, **kw)
    OP_DB.append(info)
    return info


def all_opdefs() -> dict:
    """Every OpDef object declared in the op family modules, keyed by 'name/NodeName'."""
    found = {}
    for mod in OP_MODULES:
        for value in vars(mod).values():
            if isinstance(value, OpDef):
                key = f"{value.name}/{value.node_cls.__name__}"
                if found.get(key, value) is not value:  # (x[idx] = v and index_put: two ops
                    key += f"@{mod.__name__}"            # of torch's one name and node)
                found[key] = value
    return found


# ---------------------------------------------------------------------------------------------
# Sample sets shared by many rows
# ---------------------------------------------------------------------------------------------
def unary(m):
    return [S("scalar", m()), S("vector", m(5)), S("matrix", m(2, 3)), S("3d", m(2, 1, 3)),
            S("empty", m(0, 3))]


def binary(m, scalar=1.5, empty=True):
    out = [S("same", m(2, 3), m(2, 3)), S("bcast_row", m(2, 3), m(3)),
           S("bcast_both", m(2, 1), m(1, 3)), S("0dim_rhs", m(2, 3), m()),
           S("0dim_lhs", m(), m(2, 3)), S("0dims", m(), m())]
    if scalar is not None:
        out.append(S("py_scalar", m(2, 3), scalar))
    if empty:
        out.append(S("empty", m(0, 3), m(3)))
    return out


def inplace_binary(m, scalar=1.5):
    out = [S("same", m(2, 3), m(2, 3)), S("bcast_row", m(2, 3), m(3)),
           S("bcast_col", m(2, 3), m(2, 1)), S("0dim", m(2, 3), m())]
    if scalar is not None:
        out.append(S("py_scalar", m(2, 3), scalar))
    return out


def inplace_unary(m):
    return [S("vector", m(4)), S("matrix", m(2, 3)), S("scalar", m())]


def _np_unary(f):
    return lambda x, *a, **k: f(x)


def method(name):
    """``lambda x, *args, **kwargs: x.<name>(*args, **kwargs)`` (works on ember and torch)."""
    def call(x, *args, **kwargs):
        return getattr(x, name)(*args, **kwargs)
    call.__name__ = name
    return call


# Grad-fn name mismatches with torch, shared wording.
def _gf(node_torch, node_ember, where):
    return (f"grad_fn name: torch names this node {node_torch}, ember gives {node_ember} "
            f"({where})")


# ---------------------------------------------------------------------------------------------
# Pointwise arithmetic
# ---------------------------------------------------------------------------------------------
def _add_samples(m):
    return binary(m) + [S("alpha", m(2, 3), m(3), alpha=2),
                        S("alpha_float", m(2, 3), m(2, 3), alpha=0.5)]


row("add", ember.add, "add", [PW.add], _add_samples,
    np_ref=lambda a, b, alpha=1: a + alpha * b, dtypes=ALL_REAL, promotion=True)
row("add_operator", lambda a, b: a + b, None, [PW.add], binary,
    np_ref=lambda a, b: a + b, dtypes=("float32", "float64", "int64", "bool"))
row("radd_scalar", lambda x: 2.5 + x, None, [PW.add], unary, np_ref=lambda x: 2.5 + x,
    dtypes=("float32", "float64", "int64"))
row("add_", lambda a, b, **k: a.clone().add_(b, **k), None, [PW.add, SH.clone],
    lambda m: inplace_binary(m) + [S("alpha", m(2, 3), m(3), alpha=-0.5)],
    np_ref=lambda a, b, alpha=1: a + alpha * b, dtypes=("float32", "float64", "int64"))


def _iadd(a, b):
    a = a.clone()
    a += b
    return a


row("iadd", _iadd, None, [PW.add, SH.clone], inplace_binary, np_ref=lambda a, b: a + b,
    dtypes=("float32", "float64", "int64"))

row("sub", ember.sub, "sub", [PW.sub], _add_samples,
    np_ref=lambda a, b, alpha=1: a - alpha * b, dtypes=ALL_REAL, promotion=True)
row("sub_operator", lambda a, b: a - b, None, [PW.sub], binary, np_ref=lambda a, b: a - b,
    dtypes=("float32", "float64", "int64"))
row("sub_", lambda a, b, **k: a.clone().sub_(b, **k), None, [PW.sub, SH.clone],
    lambda m: inplace_binary(m) + [S("alpha", m(2, 3), m(3), alpha=2)],
    np_ref=lambda a, b, alpha=1: a - alpha * b, dtypes=("float32", "float64", "int64"))


def _isub(a, b):
    a = a.clone()
    a -= b
    return a


row("isub", _isub, None, [PW.sub, SH.clone], inplace_binary, np_ref=lambda a, b: a - b)
row("rsub", ember.rsub, "rsub", [PW.rsub],
    lambda m: binary(m, scalar=None) + [S("alpha", m(2, 3), m(3), alpha=2)],
    np_ref=lambda a, b, alpha=1: b - alpha * a, dtypes=("float32", "float64", "int64"),
    promotion=True)
row("rsub_scalar", lambda x: 2 - x, None, [PW.rsub], unary, np_ref=lambda x: 2 - x,
    dtypes=("float32", "float64", "int64"))
row("rsub_scalar_fn", lambda x: ember.rsub(x, 2.5, alpha=2),
    lambda torch: lambda x: torch.rsub(x, 2.5, alpha=2), [PW.rsub], unary,
    np_ref=lambda x: 2.5 - 2 * x)

row("mul", ember.mul, "mul", [PW.mul], binary, np_ref=lambda a, b: a * b, dtypes=ALL_REAL,
    promotion=True)
row("mul_operator", lambda a, b: a * b, None, [PW.mul], binary, np_ref=lambda a, b: a * b,
    dtypes=("float32", "float64", "int64", "bool"))
row("rmul_scalar", lambda x: 1.5 * x, None, [PW.mul], unary, np_ref=lambda x: 1.5 * x,
    dtypes=("float32", "float64", "int64", "bool"))
row("mul_", lambda a, b: a.clone().mul_(b), None, [PW.mul, SH.clone], inplace_binary,
    np_ref=lambda a, b: a * b, dtypes=("float32", "float64", "int64"))


def _imul(a, b):
    a = a.clone()
    a *= b
    return a


row("imul", _imul, None, [PW.mul, SH.clone], inplace_binary, np_ref=lambda a, b: a * b)

row("div", ember.div, "div", [PW.div], binary, np_ref=lambda a, b: a / b,
    dtypes=("float32", "float64", "float16", "int64", "int32", "bool"), kinks=(0.0,),
    promotion=True)
row("div_operator", lambda a, b: a / b, None, [PW.div], binary, np_ref=lambda a, b: a / b,
    dtypes=("float32", "float64", "int64"), kinks=(0.0,))
row("div_", lambda a, b: a.clone().div_(b), None, [PW.div, SH.clone], inplace_binary,
    np_ref=lambda a, b: a / b, dtypes=("float32", "float64", "int64"), kinks=(0.0,))


def _idiv(a, b):
    a = a.clone()
    a /= b
    return a


row("idiv", _idiv, None, [PW.div, SH.clone], inplace_binary, np_ref=lambda a, b: a / b,
    kinks=(0.0,))
row("rdiv_scalar", lambda x: 2 / x, None, [PW.reciprocal, PW.mul], unary,
    np_ref=lambda x: 2 / x, dtypes=("float32", "float64", "int64"), kinks=(0.0,))

row("neg", ember.neg, "neg", [PW.neg], unary, np_ref=lambda x: -x,
    dtypes=("float32", "float64", "int64", "int32", "bool"))
row("neg_operator", lambda x: -x, None, [PW.neg], unary, np_ref=lambda x: -x,
    dtypes=("float32", "float64", "int64"))
row("neg_", lambda x: x.clone().neg_(), None, [PW.neg, SH.clone], inplace_unary,
    np_ref=lambda x: -x, dtypes=("float32", "float64", "int64"))
row("negative", lambda x: x.negative(), None, [PW.neg], unary, np_ref=lambda x: -x)

# -- the three pow variants ----------------------------------------------------------------------


def _pow_scalar_samples(m):
    pos = {"low": 0.5, "high": 2.0}
    return [S("square", m(2, 3), 2), S("cube", m(5), 3), S("zero_exp", m(2, 3), 0),
            S("one_exp", m(3), 1), S("neg_int_exp", m(2, 3), -1) if m.floating else
            S("neg_int_exp", m(2, 3, **pos), 2),
            S("half_exp", m(2, 3, **pos), 0.5), S("neg_float_exp", m(4, **pos), -1.5),
            S("scalar", m(), 3), S("empty", m(0, 2), 2)]


row("pow_scalar", ember.pow, "pow", [PW.pow_scalar], _pow_scalar_samples,
    np_ref=lambda x, e: np.power(x, float(e)) if x.dtype.kind == "f" else x ** e,
    dtypes=("float32", "float64", "int64"), kinks=(0.0,))
row("pow_scalar_operator", lambda x, e: x ** e, None, [PW.pow_scalar], _pow_scalar_samples,
    np_ref=lambda x, e: np.power(x, float(e)), kinks=(0.0,))
row("pow_", lambda x, e: x.clone().pow_(e), None, [PW.pow_scalar, SH.clone],
    lambda m: [S("square", m(2, 3), 2), S("cube", m(4), 3), S("half", m(3, low=0.5), 0.5)],
    np_ref=lambda x, e: np.power(x, float(e)), kinks=(0.0,))


def _pow_tensor_samples(m):
    base = {"low": 0.5, "high": 2.0}
    exp = {"low": -2.0, "high": 2.0} if m.floating else {"low": 0.0, "high": 3.0}
    out = [S("same", m(2, 3, **base), m(2, 3, **exp)),
           S("bcast_exp", m(2, 3, **base), m(3, **exp)),
           S("bcast_both", m(2, 1, **base), m(1, 3, **exp)),
           S("0dim_exp", m(2, 3, **base), m(**exp)),
           S("0dim_base", m(**base), m(2, 3, **exp)),
           S("empty", m(0, 3, **base), m(3, **exp))]
    if m.floating:
        out.append(S("zero_base", m.arr([0.0, 0.0, 1.0, 2.0]), m.arr([0.0, -1.0, 0.5, 2.0]),
                     no_gradcheck="x**y is not differentiable in y at x == 0"))
    else:
        out.append(S("neg_int_exp", m.arr([1, 2, -1, 3]), m.arr([-1, -2, -3, 2]),
                     no_gradcheck="integers"))
    return out


row("pow_tensor", ember.pow, "pow", [PW.pow_tensor], _pow_tensor_samples,
    np_ref=lambda x, y: np.power(x, y), dtypes=("float32", "float64", "int64"),
    promotion=True)
row("pow_tensor_operator", lambda x, y: x ** y, None, [PW.pow_tensor], _pow_tensor_samples,
    np_ref=lambda x, y: np.power(x, y))


def _pow_base_samples(m):
    out = [S("base2", 2, m(2, 3)), S("base_float", 2.5, m(5)), S("scalar", 3, m()),
           S("base_half", 0.5, m(2, 2)), S("empty", 2, m(0, 3))]
    if m.floating:
        out.append(S("base0", 0, m.arr([-1.0, 0.5, 2.0]),
                     no_gradcheck="0**y is not differentiable in y for y <= 0"))
    return out


row("pow_scalar_base", lambda b, x: ember.pow(b, x), lambda torch: lambda b, x: torch.pow(b, x),
    [PW.pow_scalar_base], _pow_base_samples, np_ref=lambda b, x: np.power(float(b), x),
    dtypes=("float32", "float64", "int64"))
row("rpow_operator", lambda x: 2 ** x, None, [PW.pow_scalar_base], unary,
    np_ref=lambda x: 2.0 ** x, dtypes=("float32", "float64", "int64"))

# -- maximum / minimum ---------------------------------------------------------------------------


def _minmax_binary(m):
    out = binary(m, scalar=None)
    if m.floating:
        out += [S("ties", m.arr([1.0, 2.0, -3.0, 0.5]), m.arr([1.0, 0.0, -3.0, 1.0]),
                  no_gradcheck="not differentiable at ties"),
                S("nan", m.arr([1.0, np.nan, 0.0]), m.arr([np.nan, 2.0, 1.0]),
                  no_gradcheck="NaN")]
    return out


row("maximum", ember.maximum, "maximum", [PW.maximum], _minmax_binary, np_ref=np.maximum,
    dtypes=("float32", "float64", "int64", "bool"), promotion=True)
row("maximum_method", lambda a, b: a.maximum(b), None, [PW.maximum], _minmax_binary,
    np_ref=np.maximum)
row("max_binary", ember.max, "max", [PW.maximum], _minmax_binary, np_ref=np.maximum)
row("minimum", ember.minimum, "minimum", [PW.minimum], _minmax_binary, np_ref=np.minimum,
    dtypes=("float32", "float64", "int64", "bool"), promotion=True)
row("min_binary", lambda a, b: a.min(b), None, [PW.minimum], _minmax_binary,
    np_ref=np.minimum)

# -- unary maths ---------------------------------------------------------------------------------
UNARY_FLOAT_DTYPES = ("float32", "float64", "float16", "int64", "bool")


def _unary_rows(name, np_fn, domain=(-2.0, 2.0), kinks=(), dtypes=UNARY_FLOAT_DTYPES,
                extra=None, xfails=()):
    d = PW.__dict__[name]
    samples = unary if extra is None else (lambda m: unary(m) + extra(m))
    kw = {"np_ref": _np_unary(np_fn), "domain": domain, "kinks": kinks}
    row(name, getattr(ember, name), name, [d], samples, dtypes=dtypes, xfails=xfails, **kw)
    row(f"{name}_method", lambda x: getattr(x, name)(), None, [d], unary, **kw)
    row(f"{name}_", lambda x: getattr(x.clone(), name + "_")(), None, [d, SH.clone],
        inplace_unary, dtypes=("float32", "float64", "int64"), **kw)


_unary_rows("exp", np.exp)
_unary_rows("log", np.log, domain=(0.1, 3.0))
_unary_rows("sin", np.sin)
_unary_rows("cos", np.cos)
_unary_rows("tanh", np.tanh)
row("tanh_backward", PW.tanh_backward, lambda torch: torch.ops.aten.tanh_backward,
    [PW.tanh_backward],
    lambda m: [S("same", m(2, 3), m(2, 3)), S("bcast_row", m(2, 3), m(3)),
               S("0dims", m(), m())],
    np_ref=lambda g, y: g * (1 - y * y), public=False)
row("sigmoid_backward", PW.sigmoid_backward, lambda torch: torch.ops.aten.sigmoid_backward,
    [PW.sigmoid_backward],
    lambda m: [S("same", m(2, 3), m(2, 3)), S("bcast_row", m(2, 3), m(3)),
               S("0dims", m(), m())],
    np_ref=lambda g, y: g * y * (1 - y), public=False)
_unary_rows("sigmoid", lambda x: 1 / (1 + np.exp(-x)), domain=(-4.0, 4.0),
            extra=lambda m: [S("large", m.arr([-30.0, 0.0, 30.0]) if m.floating else
                                m.arr([-30, 0, 30]))])
_unary_rows("sqrt", np.sqrt, domain=(0.1, 3.0))
_unary_rows("reciprocal", lambda x: 1 / x, kinks=(0.0,))
_unary_rows("relu", lambda x: np.maximum(x, 0), kinks=(0.0,),
            dtypes=("float32", "float64", "int64", "int32", "bool"))
_unary_rows("abs", np.abs, kinks=(0.0,),
            dtypes=("float32", "float64", "float16", "int64", "int32", "bool"))
_unary_rows("sign", np.sign, kinks=(0.0,),
            dtypes=("float32", "float64", "float16", "int64", "int32", "bool"))
row("relu_functional", F.relu, "nn.functional.relu", [PW.relu, PW.threshold_backward], unary,
    np_ref=lambda x: np.maximum(x, 0), kinks=(0.0,))
row("relu_functional_inplace", lambda x: F.relu(x.clone(), inplace=True),
    lambda torch: lambda x: torch.nn.functional.relu(x.clone(), inplace=True),
    [PW.relu, SH.clone], inplace_unary, np_ref=lambda x: np.maximum(x, 0), kinks=(0.0,))
row("sigmoid_functional", F.sigmoid, "nn.functional.sigmoid",
    [PW.sigmoid, PW.sigmoid_backward], unary,
    np_ref=lambda x: 1 / (1 + np.exp(-x)))
row("tanh_functional", F.tanh, "nn.functional.tanh", [PW.tanh], unary, np_ref=np.tanh)
row("abs_operator", abs, None, [PW.abs], unary, np_ref=np.abs, kinks=(0.0,))

# -- clamp ---------------------------------------------------------------------------------------


def _clamp_samples(m):
    return [S("both", m(2, 3), -0.5, 0.5), S("min_only", m(5), min=0.0),
            S("max_only", m(2, 3), max=0.0), S("min_gt_max", m(4), 1.0, -1.0),
            S("scalar", m(), -0.5, 0.5), S("empty", m(0, 2), -0.5, 0.5),
            S("float_bounds", m(2, 3), -0.5, 1.5)]


def _clamp_np(x, min=None, max=None):
    return np.minimum(np.maximum(x, min if min is not None else -np.inf),
                      max if max is not None else np.inf)


row("clamp", ember.clamp, "clamp", [UN.clamp_scalar, UN.clamp_mask], _clamp_samples,
    np_ref=_clamp_np, kinks=(-0.5, 0.5, 0.0, 1.0, -1.0, 1.5),
    dtypes=("float32", "float64", "int64"))
row("clip", ember.clip, "clip", [UN.clamp_scalar], _clamp_samples, np_ref=_clamp_np,
    kinks=(-0.5, 0.5, 0.0, 1.0, -1.0, 1.5))
row("clamp_method", lambda x, *a, **k: x.clamp(*a, **k), None, [UN.clamp_scalar], _clamp_samples,
    np_ref=_clamp_np, kinks=(-0.5, 0.5, 0.0, 1.0, -1.0, 1.5))
row("clamp_", lambda x, *a, **k: x.clone().clamp_(*a, **k), None, [UN.clamp_scalar, SH.clone],
    _clamp_samples, np_ref=_clamp_np, kinks=(-0.5, 0.5, 0.0, 1.0, -1.0, 1.5))


def _torch_clamp_mask(torch):
    def f(x, lo, hi):
        mask = torch.ones(x.shape, dtype=torch.bool)
        if lo is not None:
            mask &= x >= lo
        if hi is not None:
            mask &= x <= hi
        return mask
    return f


row("clamp_mask", UN.clamp_mask, _torch_clamp_mask, [UN.clamp_mask],
    lambda m: [S("both", m(2, 3), -0.5, 0.5), S("min", m(4), 0.0, None),
               S("max", m(4), None, 0.0), S("ties", m.arr([-0.5, 0.5, 0.0]), -0.5, 0.5)],
    np_ref=lambda x, lo, hi: ((x >= lo) if lo is not None else True)
    & ((x <= hi) if hi is not None else True),
    differentiable=False, public=False, dtypes=("float32", "float64", "int64"))

# -- where ---------------------------------------------------------------------------------------


def _where_samples(m):
    return [S("same", C(m.mask(2, 3)), m(2, 3), m(2, 3)),
            S("bcast", C(m.mask(2, 1)), m(3), m(2, 3)),
            S("bcast_cond", C(m.mask(3)), m(2, 3), m(1, 3)),
            S("0dim_other", C(m.mask(2, 3)), m(2, 3), m()),
            S("py_other", C(m.mask(2, 3)), m(2, 3), 0.0),
            S("py_input", C(m.mask(4)), 1.0, m(4)),
            S("empty", C(m.mask(0, 3)), m(0, 3), m(3))]


row("where", ember.where, "where", [PW._where], _where_samples, np_ref=np.where,
    dtypes=("float32", "float64", "int64", "bool"))
row("where_method", lambda c, x, y: x.where(c, y), None, [PW._where],
    lambda m: [s for s in _where_samples(m) if s.name != "py_input"],
    np_ref=np.where)
_MIXED = "float32 inputs: finite differences need float64 (gradients are compared with torch's)"
row("where_promotion", lambda c, x, y: ember.where(c, x, y),
    lambda torch: lambda c, x, y: torch.where(c, x, y), [PW._where],
    lambda m: [S("int_float_scalar", C(m.mask(3)), m(3, dtype="int64"), 1.5),
               S("f32_f64", C(m.mask(3)), m(3, dtype="float32"), m(3, dtype="float64")),
               S("f32_0dim_f64", C(m.mask(3)), m(3, dtype="float32"), m(dtype="float64")),
               S("int_bool", C(m.mask(3)), m(3, dtype="int32"), m(3, dtype="bool"))],
    np_ref=np.where, dtypes=("float64",),
    skips={"test_gradcheck": _MIXED, "test_gradgradcheck": _MIXED})

# -- comparisons, logic, bitwise (no gradient) ---------------------------------------------------
_CMP = {"eq": ("__eq__", np.equal), "ne": ("__ne__", np.not_equal), "lt": ("__lt__", np.less),
        "le": ("__le__", np.less_equal), "gt": ("__gt__", np.greater),
        "ge": ("__ge__", np.greater_equal)}


def _cmp_samples(m):
    out = binary(m, scalar=0.5)
    if m.floating:
        out.append(S("equal_values", m.arr([1.0, 2.0, np.nan]), m.arr([1.0, 3.0, np.nan])))
    return out


for _name, (_dunder, _np) in _CMP.items():
    _d = PW.__dict__[_name]
    row(_name, getattr(ember, _name), _name, [_d], _cmp_samples, np_ref=_np,
        dtypes=("float32", "float64", "int64", "bool"), differentiable=False, promotion=True)
    row(f"{_name}_operator", method(_dunder), None, [_d],
        _cmp_samples, np_ref=_np, dtypes=("float32", "int64"), differentiable=False)

def _bitwise_samples(m):
    out = binary(m, scalar=None)
    out.append(S("py_int", m(2, 3), 3 if np.dtype(m.dtype).kind != "b" else True))
    return out


for _name, _dunder, _np in [("bitwise_and", "__and__", np.bitwise_and),
                            ("bitwise_or", "__or__", np.bitwise_or),
                            ("bitwise_xor", "__xor__", np.bitwise_xor)]:
    _d = LG.__dict__[_name]
    row(_name, getattr(ember, _name), _name, [_d], _bitwise_samples, np_ref=_np,
        dtypes=("int64", "int32", "uint8", "bool", "float32"), differentiable=False,
        promotion=True, domain=(-5, 5))
    row(f"{_name}_operator", method(_dunder), None, [_d],
        _bitwise_samples, np_ref=_np, dtypes=("int64", "bool"), differentiable=False,
        domain=(-5, 5))
row("rand_operator", lambda x: True & x, None, [LG.bitwise_and], unary,
    np_ref=lambda x: np.bitwise_and(True, x), dtypes=("bool", "int64"), differentiable=False)
row("ror_operator", lambda x: 6 | x, None, [LG.bitwise_or], unary,
    np_ref=lambda x: np.bitwise_or(6, x), dtypes=("int64",), differentiable=False)
row("bitwise_not", ember.bitwise_not, "bitwise_not", [LG.bitwise_not], unary,
    np_ref=np.invert, dtypes=("int64", "int32", "uint8", "bool", "float32"),
    differentiable=False, domain=(-5, 5))
row("invert_operator", lambda x: ~x, None, [LG.bitwise_not], unary, np_ref=np.invert,
    dtypes=("int64", "bool"), differentiable=False, domain=(-5, 5))
row("logical_not", ember.logical_not, "logical_not", [LG.logical_not],
    lambda m: unary(m) + [S("zeros", m.arr([0, 1, 0]))], np_ref=np.logical_not,
    dtypes=("float32", "float64", "int64", "bool"), differentiable=False)
row("logical_not_method", lambda x: x.logical_not(), None, [LG.logical_not], unary,
    np_ref=np.logical_not, dtypes=("float32", "bool"), differentiable=False)


def _isclose_samples(m):
    a = m(2, 3)
    b = a.copy()
    b[0] = b[0] + (1 if not m.floating else 1e-3)
    out = [S("default", a, b), S("bcast", m(2, 3), m(3)),
           S("atol", a, b, atol=1e-2 if m.floating else 1), S("rtol", a, b, rtol=0.5)]
    if m.floating:
        n = m.arr([np.nan, 1.0, np.inf])
        out += [S("nan", n, n.copy()), S("equal_nan", n, n.copy(), equal_nan=True)]
    return out


# the Scalar overloads torch's own formulas call (mul.Scalar, div.Scalar, add.Scalar, sub.Scalar)
row("mul_scalar", lambda x: PW.mul_scalar(x, 2.5), lambda torch: lambda x: torch.ops.aten.mul.Scalar(
    x, 2.5), [PW.mul_scalar], unary, np_ref=lambda x: x * 2.5)
row("div_scalar", lambda x: PW.div_scalar(x, 2.5), lambda torch: lambda x: torch.ops.aten.div.Scalar(
    x, 2.5), [PW.div_scalar], unary, np_ref=lambda x: x / 2.5)
row("add_scalar", lambda x: PW.add_scalar(x, 2.5), lambda torch: lambda x: torch.ops.aten.add.Scalar(
    x, 2.5), [PW.add_scalar], unary, np_ref=lambda x: x + 2.5)
row("sub_scalar", lambda x: PW.sub_scalar(x, 2.5), lambda torch: lambda x: torch.ops.aten.sub.Scalar(
    x, 2.5), [PW.sub_scalar], unary, np_ref=lambda x: x - 2.5)

row("isclose", ember.isclose, "isclose", [LG.isclose], _isclose_samples,
    np_ref=np.isclose, dtypes=("float32", "float64", "int64"), differentiable=False)
row("isclose_method", lambda a, b, **k: a.isclose(b, **k), None, [LG.isclose],
    _isclose_samples, np_ref=np.isclose, differentiable=False)

# -- fill / zero / copy (in place) ---------------------------------------------------------------
row("fill_", lambda x, v: x.clone().fill_(v), None, [PW.fill, SH.clone],
    lambda m: [S("float", m(2, 3), 2.5), S("int", m(4), 3), S("0dim_tensor", m(2, 3), m()),
               S("scalar", m(), -1.0)],
    np_ref=lambda x, v: np.full_like(x, v), dtypes=("float32", "float64", "int64"))
row("fill", ember.fill, "fill", [PW.fill_out_of_place],
    lambda m: [S("float", m(2, 3), 2.5), S("int", m(4), 3), S("0dim_tensor", m(2, 3), m()),
               S("scalar", m(), -1.0), S("empty", m(0, 3), m())],
    np_ref=lambda x, v: np.full_like(x, v), dtypes=("float32", "float64", "int64"))
row("zero_", lambda x: x.clone().zero_(), None, [PW.zero, SH.clone], inplace_unary,
    np_ref=np.zeros_like, dtypes=("float32", "float64", "int64"))


def _copy_samples(m):
    return [S("same", m(2, 3), m(2, 3)), S("bcast", m(2, 3), m(3)),
            S("0dim_src", m(2, 3), m()),
            S("f64_src", m(2, 3), m(2, 3, dtype="float64")),
            S("f32_src", m(2, 3), m(2, 3, dtype="float32"),
              no_gradcheck="a float32 source loses the precision finite differences need"),
            S("int_src", m(3), C(m(3, dtype="int64")))]


row("copy_", lambda x, y: x.clone().copy_(y), None, [PW.copy, SH.clone], _copy_samples,
    np_ref=lambda x, y: np.broadcast_to(y, x.shape).astype(x.dtype),
    dtypes=("float32", "float64", "int64"))

# ---------------------------------------------------------------------------------------------
# Reductions
# ---------------------------------------------------------------------------------------------


def _torch_sum_to(torch):
    return lambda x, shape: x.sum_to_size(shape)


row("sum_to_size", lambda x, s: x.sum_to_size(s), _torch_sum_to, [R.sum_dim, R.sum_all, SH.view],
    lambda m: [S("rows", m(2, 3), (1, 3)), S("lead", m(2, 3), (3,)), S("cols", m(2, 3), (2, 1)),
               S("3d", m(2, 3, 4), (3, 1)), S("same", m(2, 3), (2, 3)), S("all", m(2, 3), ()),
               S("empty", m(0, 3), (1, 3))],
    np_ref=lambda x, s: np.sum(x, axis=tuple(range(x.ndim - len(s))) + tuple(
        i + x.ndim - len(s) for i, n in enumerate(s) if n == 1 and x.shape[i + x.ndim - len(s)]
        != 1)).reshape(s),
    dtypes=("float32", "float64", "int64"))


def _sum_all_samples(m):
    return unary(m) + [S("dtype_f64", m(2, 3), dtype=DT("float64"))]


row("sum", ember.sum, "sum", [R.sum_all], _sum_all_samples,
    np_ref=lambda x, dtype=None: np.sum(x), dtypes=ALL_REAL)
row("sum_method", lambda x, **k: x.sum(**k), None, [R.sum_all], _sum_all_samples,
    np_ref=lambda x, dtype=None: np.sum(x), dtypes=("float32", "int64", "bool"))


def _dim_samples(m):
    return [S("dim1", m(2, 3), 1), S("dim_neg_keep", m(2, 3), -1, keepdim=True),
            S("dims_tuple", m(2, 3, 4), (0, 2)), S("dims_list_keep", m(2, 3, 4), [0, 1],
                                                  keepdim=True),
            S("dim0_vector", m(4), 0), S("0dim", m(), 0), S("0dim_keep", m(), -1, keepdim=True),
            S("empty_reduced", m(0, 3), 0), S("empty_kept", m(0, 3), 1),
            S("dims_all", m(2, 3), (0, 1))]


def _np_reduce(f):
    def ref(x, dim, keepdim=False, dtype=None):
        axis = None if x.ndim == 0 else tuple(np.atleast_1d(dim) % x.ndim)
        return f(x, axis=axis, keepdims=keepdim)
    return ref


row("sum_dim", lambda x, *a, **k: x.sum(*a, **k), None, [R.sum_dim],
    lambda m: _dim_samples(m) + [S("dtype", m(2, 3), 1, dtype=DT("float64"))],
    np_ref=_np_reduce(np.sum), dtypes=("float32", "float64", "int64", "bool"))
row("sum_dim_fn", ember.sum, "sum",
    [R.sum_dim], lambda m: [S("dim1", m(2, 3), 1), S("keep", m(2, 3), 0, True),
                            S("kw", m(2, 3, 4), dim=(1, 2), keepdim=True)],
    np_ref=_np_reduce(np.sum))
row("mean", ember.mean, "mean", [R.mean_all],
    lambda m: unary(m) + [S("dtype", C(m(2, 3, dtype="int64")), dtype=DT("float64"))],
    np_ref=lambda x, dtype=None: np.mean(x) if x.size else np.nan,
    dtypes=("float32", "float64", "float16"))
row("mean_method", lambda x: x.mean(), None, [R.mean_all], unary,
    np_ref=lambda x: np.mean(x) if x.size else np.nan)
row("mean_dim", lambda x, *a, **k: x.mean(*a, **k), None, [R.mean_dim],
    lambda m: _dim_samples(m) + [S("int_dtype", C(m(2, 3, dtype="int64")), 1,
                                   dtype=DT("float32"))],
    np_ref=_np_reduce(np.mean))
row("mean_dim_fn", ember.mean, "mean", [R.mean_dim],
    lambda m: [S("dim1", m(2, 3), 1), S("keep", m(2, 3), 0, True)], np_ref=_np_reduce(np.mean))


def _max_all_samples(m):
    out = [S("scalar", m()), S("vector", m(5)), S("matrix", m(2, 3)), S("3d", m(2, 1, 3))]
    if m.floating:
        out.append(S("ties", m.arr([[1.0, 3.0], [3.0, -1.0]]),
                     no_gradcheck="not differentiable at ties"))
    return out


for _name, _d, _np in [("max", R.max_all, np.max), ("min", R.min_all, np.min)]:
    row(f"{_name}_all", getattr(ember, _name), _name, [_d], _max_all_samples,
        np_ref=_np_unary(_np), dtypes=("float32", "float64", "int64", "bool"))
    row(f"{_name}_all_method", method(_name), None, [_d],
        _max_all_samples, np_ref=_np_unary(_np))


def _max_dim_samples(m):
    return [S("dim1", m(2, 3), 1), S("dim0_keep", m(2, 3), 0, keepdim=True),
            S("neg_dim", m(2, 3, 4), -1), S("vector", m(5), 0), S("0dim", m(), 0),
            S("kw", m(3, 2), dim=1, keepdim=False)]


def _np_max_dim(f, arg):
    def ref(x, dim, keepdim=False):
        if x.ndim == 0:
            return x, np.array(0)
        return f(x, axis=dim, keepdims=keepdim), arg(x, axis=dim, keepdims=keepdim)
    return ref


for _name, _d, _np, _arg in [("max", R.max_dim, np.max, np.argmax),
                             ("min", R.min_dim, np.min, np.argmin)]:
    row(f"{_name}_dim", method(_name), None,
        [_d, IX._scatter_src], _max_dim_samples,
        np_ref=_np_max_dim(_np, _arg), dtypes=("float32", "float64", "int64"))
    row(f"{_name}_dim_fn", getattr(ember, _name), _name, [_d],
        lambda m: [S("dim1", m(2, 3), 1), S("keep", m(2, 3), 0, True)],
        np_ref=_np_max_dim(_np, _arg))


def _torch_vsrb(torch):
    return lambda g, idx, dim, sizes, keepdim: (
        torch.ops.aten.value_selecting_reduction_backward(g, dim, idx, list(sizes), keepdim))


def _np_vsrb(g, idx, dim, sizes, keepdim):
    out = np.zeros(sizes, g.dtype)
    if not keepdim:
        g, idx = np.expand_dims(g, dim), np.expand_dims(idx, dim)
    np.put_along_axis(out, idx, g, axis=dim)
    return out


row("value_selecting_reduction_backward", R.value_selecting_backward, _torch_vsrb,
    [IX._scatter_src, IX._gather],
    lambda m: [S("dim0", m(3), m.idx(3, high=2), 0, (2, 3), False),
               S("dim1_keep", m(2, 1), m.idx(2, 1, high=3), 1, (2, 3), True),
               S("neg_dim", m(2, 3), m.idx(2, 3, high=4), -1, (2, 3, 4), False)],
    np_ref=_np_vsrb)


def _torch_take_along(torch):
    def f(x, idx, dim, keepdim=True):
        if keepdim:
            return torch.take_along_dim(x, idx, dim)
        return torch.take_along_dim(x, idx.unsqueeze(dim), dim).squeeze(dim)
    return f


def _np_take_along(x, idx, dim, keepdim=True):
    if keepdim:
        return np.take_along_axis(x, idx, axis=dim)
    return np.squeeze(np.take_along_axis(x, np.expand_dims(idx, dim), axis=dim), dim)


row("take_along_dim_keep", R.take_along_dim_keep, _torch_take_along,
    [R.take_along_dim_keep],
    lambda m: [S("keep", m(2, 3), m.idx(2, 1, high=3), 1),
               S("no_keep", m(2, 3), m.idx(3, high=2), 0, False),
               S("repeat", m(2, 3), m.idx(2, 4, high=3), 1),
               S("neg_dim", m(2, 3, 4), m.idx(2, 3, high=4), -1, False)],
    np_ref=_np_take_along, public=False)


def _norm_samples(m):
    return [S("default", m(2, 3)), S("p1", m(5), 1), S("p2_dim", m(2, 3), 2, 1),
            S("inf", m(2, 3), math.inf), S("neg_inf", m(2, 3), -math.inf, 0),
            S("p3_keep", m(2, 3), 3, 1, True), S("p0", m(4), 0), S("fro", m(2, 3), "fro"),
            S("scalar", m()), S("dims", m(2, 3, 2), 2, (0, 2)),
            S("zeros", m.arr([0.0, 0.0]), no_gradcheck="the 2-norm is not differentiable at 0")]


def _np_norm(x, p="fro", dim=None, keepdim=False):
    p = 2 if p == "fro" else p
    axis = None if dim is None else dim
    a = np.abs(x)
    if p == math.inf:
        return np.max(a, axis=axis, keepdims=keepdim)
    if p == -math.inf:
        return np.min(a, axis=axis, keepdims=keepdim)
    if p == 0:
        return np.sum(a != 0, axis=axis, keepdims=keepdim).astype(x.dtype)
    return np.sum(a ** p, axis=axis, keepdims=keepdim) ** (1 / p)


row("norm", ember.norm, "norm", [R.linalg_vector_norm], _norm_samples, np_ref=_np_norm,
    kinks=(0.0,))
row("norm_method", lambda x, *a, **k: x.norm(*a, **k), None, [R.linalg_vector_norm],
    lambda m: [S("default", m(2, 3)), S("p1_dim", m(2, 3), p=1, dim=1, keepdim=True)],
    np_ref=_np_norm, kinks=(0.0,))

# ---------------------------------------------------------------------------------------------
# Shape ops and views
# ---------------------------------------------------------------------------------------------
row("view", lambda x, *s: x.view(*s), None, [SH.view],
    lambda m: [S("2x3_to_3x2", m(2, 3), 3, 2), S("flat", m(2, 3), -1),
               S("tuple_arg", m(6), (2, -1, 1)), S("0dim_to_1", m(), 1),
               S("1_to_0dim", m(1), ()), S("empty", m(0, 3), 3, 0)],
    np_ref=lambda x, *s: x.reshape(*s), dtypes=("float32", "float64", "int64", "bool"))
row("view_as", lambda x, y: x.view_as(y), None, [SH.view],
    lambda m: [S("3x2", m(2, 3), C(m(3, 2))), S("flat", m(2, 3), C(m(6)))],
    np_ref=lambda x, y: x.reshape(y.shape))
row("reshape_contiguous", ember.reshape, "reshape", [SH.view],
    lambda m: [S("3x2", m(2, 3), (3, 2)), S("flat", m(2, 3), (-1,)), S("0dim", m(), (1, 1))],
    np_ref=lambda x, s: x.reshape(s), dtypes=("float32", "float64", "int64"))
row("reshape_method", lambda x, *s: x.reshape(*s), None, [SH.view],
    lambda m: [S("3x2", m(2, 3), 3, 2), S("same", m(2, 3), 2, 3)],
    np_ref=lambda x, *s: x.reshape(s))
row("reshape_as", lambda x, y: x.reshape_as(y), None, [SH.view],
    lambda m: [S("3x2", m(2, 3), C(m(3, 2)))], np_ref=lambda x, y: x.reshape(y.shape))
row("reshape_noncontiguous", lambda x, *s: x.t().reshape(*s), None,
    [SH.unsafe_view, SH.clone, SH.t],
    lambda m: [S("flat", m(2, 3), -1), S("2x3", m(2, 3), 2, 3), S("3d", m(4, 3), 2, 3, 2)],
    np_ref=lambda x, *s: x.T.reshape(s), dtypes=("float32", "float64", "int64"))
row("reshape_alias", lambda x, *s: x.t().reshape(*s), None, [SH.reshape_alias, SH.t],
    lambda m: [S("3x1x2", m(2, 3), 3, 1, 2), S("same", m(2, 3), 3, 2)],
    np_ref=lambda x, *s: x.T.reshape(s), dtypes=("float32", "float64", "int64"))
row("reshape_transposed_3d", lambda x: x.transpose(0, 2).reshape(-1, 2), None,
    [SH.unsafe_view, SH.clone, SH.transpose],
    lambda m: [S("3d", m(2, 3, 2))], np_ref=lambda x: np.swapaxes(x, 0, 2).reshape(-1, 2))
row("flatten", ember.flatten, "flatten", [SH.view],
    lambda m: [S("matrix", m(2, 3)), S("3d_start1", m(2, 3, 2), 1),
               S("3d_mid", m(2, 3, 2, 2), 1, 2), S("0dim", m()), S("same_dim", m(2, 3), 1)],
    np_ref=lambda x, s=0, e=-1: x.reshape(
        x.shape[:s] + (-1,) + (x.shape[e % x.ndim + 1:] if x.ndim else ())) if x.ndim else
    x.reshape(1), dtypes=("float32", "float64", "int64"))
row("ravel", ember.ravel, "ravel", [SH.view],
    lambda m: [S("matrix", m(2, 3)), S("0dim", m())], np_ref=lambda x: x.reshape(-1))
row("ravel_noncontiguous", lambda x: x.t().ravel(), None, [SH.view, SH.clone, SH.t],
    lambda m: [S("matrix", m(2, 3))], np_ref=lambda x: x.T.reshape(-1))
row("contiguous", lambda x: x.t().contiguous(), None, [SH.clone, SH.t],
    lambda m: [S("matrix", m(2, 3)), S("vector", m(3))], np_ref=lambda x: x.T.copy())
row("t", ember.t, "t", [SH.t],
    lambda m: [S("matrix", m(2, 3)), S("vector", m(3)), S("0dim", m()), S("empty", m(0, 3))],
    np_ref=lambda x: x.T, dtypes=("float32", "float64", "int64", "bool"))
row("t_method", lambda x: x.t(), None, [SH.t], lambda m: [S("matrix", m(2, 3))],
    np_ref=lambda x: x.T)
row("T_property", lambda x: x.T, None, [SH._permute],
    lambda m: [S("matrix", m(2, 3)), S("3d", m(2, 3, 4)), S("vector", m(3)), S("0dim", m())],
    np_ref=lambda x: x.T)
row("mT_property", lambda x: x.mT, None, [SH.transpose],
    lambda m: [S("matrix", m(2, 3)), S("3d", m(2, 3, 4))], np_ref=lambda x: np.swapaxes(x, -1, -2))
row("transpose", ember.transpose, "transpose", [SH.transpose],
    lambda m: [S("matrix", m(2, 3), 0, 1), S("3d_neg", m(2, 3, 4), -1, 0),
               S("same_dim", m(3), 0, 0), S("0dim", m(), 0, -1)],
    np_ref=lambda x, a, b: np.swapaxes(x, a, b) if x.ndim else x,
    dtypes=("float32", "float64", "int64"))
row("transpose_method", lambda x, a, b: x.transpose(a, b), None, [SH.transpose],
    lambda m: [S("3d", m(2, 3, 4), 1, 2)], np_ref=lambda x, a, b: np.swapaxes(x, a, b))
row("swapaxes", lambda x, a, b: x.swapaxes(a, b), None, [SH.transpose],
    lambda m: [S("3d", m(2, 3, 4), 0, 2)], np_ref=lambda x, a, b: np.swapaxes(x, a, b))
row("swapdims_fn", ember.swapdims, "swapdims", [SH.transpose],
    lambda m: [S("matrix", m(2, 3), 1, 0)], np_ref=lambda x, a, b: np.swapaxes(x, a, b))
row("permute", ember.permute, "permute", [SH._permute],
    lambda m: [S("3d", m(2, 3, 4), (2, 0, 1)), S("neg", m(2, 3, 4), (-1, 0, 1)),
               S("matrix", m(2, 3), (1, 0)), S("0dim", m(), ())],
    np_ref=lambda x, d: np.transpose(x, d), dtypes=("float32", "float64", "int64"))
row("permute_method", lambda x, *d: x.permute(*d), None, [SH._permute],
    lambda m: [S("varargs", m(2, 3, 4), 1, 2, 0), S("tuple", m(2, 3), (1, 0))],
    np_ref=lambda x, *d: np.transpose(x, d[0] if len(d) == 1 else d))
row("expand", lambda x, *s: x.expand(*s), None, [SH._expand],
    lambda m: [S("row", m(1, 3), 2, 3), S("minus1", m(2, 1), -1, 3),
               S("new_lead", m(2, 3), 4, 2, 3), S("0dim", m(), 3), S("tuple", m(3), (2, 3)),
               S("same", m(2, 3), 2, 3), S("empty", m(1, 3), 0, 3)],
    np_ref=lambda x, *s: np.broadcast_to(x, tuple(
        x.shape[i - (len(s[0] if len(s) == 1 and isinstance(s[0], tuple) else s) - x.ndim)]
        if d == -1 else d for i, d in enumerate(s[0] if len(s) == 1 and isinstance(s[0], tuple)
                                                   else s))),
    dtypes=("float32", "float64", "int64", "bool"))
row("expand_as", lambda x, y: x.expand_as(y), None, [SH._expand],
    lambda m: [S("row", m(3), C(m(2, 3))), S("0dim", m(), C(m(2, 2)))],
    np_ref=lambda x, y: np.broadcast_to(x, y.shape))
row("broadcast_to", lambda x, s: x.broadcast_to(s), None, [SH._expand],
    lambda m: [S("row", m(1, 3), (4, 3)), S("new_lead", m(3), (2, 2, 3))],
    np_ref=np.broadcast_to)
row("squeeze", ember.squeeze, "squeeze", [SH._squeeze_all, SH._squeeze_dim],
    lambda m: [S("all", m(1, 3, 1)), S("none_to_squeeze", m(2, 3)), S("0dim", m()),
               S("dim0", m(1, 3), 0), S("dim_noop", m(2, 3), 1), S("neg", m(2, 1), -1),
               S("all_ones", m(1, 1))],
    np_ref=lambda x, dim=None: np.squeeze(x) if dim is None else (
        np.squeeze(x, dim) if x.ndim and x.shape[dim] == 1 else x),
    dtypes=("float32", "float64", "int64"))
row("squeeze_method", lambda x, *a: x.squeeze(*a), None, [SH._squeeze_all, SH._squeeze_dim],
    lambda m: [S("all", m(1, 3, 1)), S("dim", m(1, 3), 0)],
    np_ref=lambda x, *d: np.squeeze(x, *d))
row("squeeze_dims", lambda x, d: x.squeeze(d), None, [SH._squeeze_dims],
    lambda m: [S("tuple", m(1, 3, 1), (0, 2)), S("list", m(1, 3, 1), [0, 1]),
               S("tuple_neg", m(2, 1, 1), (-1,)), S("0dim", m(), (0,)),
               S("0dim_empty", m(), ())],
    np_ref=lambda x, d: np.squeeze(x, tuple(i for i in d if x.ndim and x.shape[i] == 1)))
row("unsqueeze", ember.unsqueeze, "unsqueeze", [SH.unsqueeze],
    lambda m: [S("front", m(2, 3), 0), S("back", m(2, 3), -1), S("mid", m(2, 3), 1),
               S("0dim", m(), 0)],
    np_ref=lambda x, d: np.expand_dims(x, d), dtypes=("float32", "float64", "int64", "bool"))
row("unsqueeze_method", lambda x, d: x.unsqueeze(d), None, [SH.unsqueeze],
    lambda m: [S("neg", m(3), -2)], np_ref=lambda x, d: np.expand_dims(x, d))
row("clone", ember.clone, "clone", [SH.clone], unary, np_ref=np.copy,
    dtypes=("float32", "float64", "int64", "bool"))
row("clone_method", lambda x: x.clone(), None, [SH.clone], unary, np_ref=np.copy)


def _to_samples(m):
    lossy = "the cast to a lower precision loses what finite differences need"
    return [S("to_f64", m(2, 3), DT("float64")),
            S("to_f32", m(2, 3), DT("float32"), gradcheck_kwargs={"eps": 1e-3}),
            S("to_f16", m(3), DT("float16"), no_gradcheck=lossy),
            S("to_int", m(2, 3), DT("int64")), S("to_bool", m(3), DT("bool")),
            S("scalar", m(), DT("float64")), S("empty", m(0, 2), DT("float32"))]


row("to_dtype", lambda x, dt: x.to(dt), None, [SH.to_copy], _to_samples,
    np_ref=None, dtypes=("float32", "float64", "int64", "bool"))
row("to_kw", lambda x, dt: x.to(dtype=dt), None, [SH.to_copy],
    lambda m: [S("to_f64", m(2, 3), DT("float64"))])
for _meth in ("double", "float", "half", "long", "int", "bool"):
    row(f"cast_{_meth}", method(_meth), None, [SH.to_copy],
        lambda m: [S("matrix", m(2, 3)), S("scalar", m())],
        dtypes=("float32", "float64", "int64"),
        skips={t: "a cast to a lower precision loses what finite differences need; "
                  "gradients are compared with torch's instead"
               for t in ("test_gradcheck", "test_gradgradcheck")}
        if _meth in ("float", "half") else {})
row("type_as", lambda x, y: x.type_as(y), None, [SH.to_copy],
    lambda m: [S("to_f64", m(2, 3), C(m(1, dtype="float64"))),
               S("to_int", m(3), C(m(1, dtype="int32")))])

# -- indexing --------------------------------------------------------------------------------------
row("select", ember.select, "select", [SH.select],
    lambda m: [S("dim1", m(2, 3), 1, 0), S("neg_index", m(2, 3), 0, -1),
               S("neg_dim", m(2, 3, 4), -1, 2), S("vector", m(4), 0, 3)],
    np_ref=lambda x, d, i: np.take(x, i, axis=d), dtypes=("float32", "float64", "int64"))
row("select_method", lambda x, d, i: x.select(d, i), None, [SH.select],
    lambda m: [S("dim0", m(3, 2), 0, 1)], np_ref=lambda x, d, i: np.take(x, i, axis=d))


def _index_key_row(name, key, opdefs, shape=(3, 4), np_key=None, dtypes=FLOATS, xfails=(),
                   samples=None):
    np_key = key if np_key is None else np_key
    row(name, lambda x: x[key], None, opdefs,
        samples or (lambda m: [S("x", m(*shape))]), np_ref=lambda x: x[np_key], dtypes=dtypes,
        xfails=xfails)


_index_key_row("getitem_int", 1, [SH.select], dtypes=("float32", "float64", "int64", "bool"))
_index_key_row("getitem_int_col", (slice(None), 2), [SH.select])
_index_key_row("getitem_int_int", (-1, 0), [SH.select])
row("getitem_0dim_tensor_index", lambda x, i: x[i], None, [SH.select],
    lambda m: [S("x", m(3, 2), np.array(1))], np_ref=lambda x, i: x[int(i)])
row("select_backward", SH.select_backward,
    lambda torch: lambda g, sizes, dim, index: torch.ops.aten.select_backward(
        g, list(sizes), dim, index),
    [SH.select_backward, SH.select],
    lambda m: [S("dim1", m(2), (2, 3), 1, 0), S("neg", m(2, 3), (2, 3, 4), -1, -2),
               S("dim0", m(3), (4, 3), 0, 2)],
    np_ref=None, public=False)
_index_key_row("getitem_slice", slice(1, None), [SH.slice_],
               dtypes=("float32", "float64", "int64", "bool"))
_index_key_row("getitem_slice_step", (slice(None), slice(None, None, 2)), [SH.slice_])
_index_key_row("getitem_slice_2d", (slice(0, 1), slice(1, 3)), [SH.slice_])
_index_key_row("getitem_ellipsis_slice", (Ellipsis, slice(1, None)), [SH.slice_])
_index_key_row("getitem_slice_neg", slice(-2, None), [SH.slice_])
_index_key_row("getitem_slice_clamped", slice(1, 100), [SH.slice_])
_index_key_row("getitem_slice_empty", slice(3, 1), [SH.slice_])
_index_key_row("getitem_full_slice", slice(None), [SH.slice_])
_index_key_row("getitem_ellipsis", Ellipsis, [SH.alias])
_index_key_row("getitem_none", None, [SH.unsqueeze])
_index_key_row("getitem_none_ellipsis", (Ellipsis, None, 1), [SH.unsqueeze, SH.select])
_index_key_row("getitem_mixed", (1, slice(None, None, 2)), [SH.select, SH.slice_])
row("slice_backward", SH.slice_backward,
    lambda torch: lambda g, sizes, dim, start, end, step: torch.ops.aten.slice_backward(
        g, list(sizes), dim, start, end, step),
    [SH.slice_backward, SH.slice_],
    lambda m: [S("step2", m(2, 3), (2, 5), 1, 0, 5, 2), S("dim0", m(1, 3), (3, 3), 0, 1, 2, 1),
               S("neg_dim", m(2, 2), (2, 4), -1, 2, 4, 1)],
    np_ref=None, public=False)
_index_key_row("getitem_list", [0, 2, 0], [SH.index, IX._index_put_impl])
_index_key_row("getitem_list_col", (slice(None), [0, 0, 3]), [SH.index, IX._index_put_impl])
_index_key_row("getitem_two_lists", ([0, 1, 2], [1, 3, 3]), [SH.index, IX._index_put_impl])
row("getitem_tensor_index", lambda x, i: x[i], None, [SH.index, IX._index_put_impl],
    lambda m: [S("1d", m(4, 2), m.idx(5, high=4)), S("2d", m(4, 2), m.idx(2, 3, high=4)),
               S("bool_mask", m(3, 2), C(m.mask(3, 2))), S("bool_rows", m(3, 2), C(m.mask(3)))],
    np_ref=lambda x, i: x[i], dtypes=("float32", "float64", "int64"))
row("getitem_mask_of_self", lambda x: x[x > 0], None, [SH.index, PW.gt],
    lambda m: [S("matrix", m(3, 4)), S("none_true", -np.abs(m(2, 2)) - 0.1)],
    np_ref=lambda x: x[x > 0])


def _torch_index_put_impl(torch):
    def f(self, values, indices, accumulate):
        idx = tuple(torch.tensor(i) for i in indices)
        return torch._index_put_impl_(self.clone(), idx, values, accumulate)
    return f


def _np_index_put_impl(self, values, indices, accumulate):
    out = self.copy()
    key = tuple(np.asarray(i) for i in indices)
    if accumulate:
        np.add.at(out, key, values)
    else:
        out[key] = values
    return out


# index's gradient: the gradient added into zeros (IndexPutImplBackward0)
row("_index_put_impl", IX._index_put_impl, _torch_index_put_impl,
    [IX._index_put_impl, IX._index_put, SH.index],
    lambda m: [S("rows", m(3, 4), m(3, 4), ([0, 2, 0],), True),
               S("pairs", m(3, 4), m(3), ([0, 1, 0], [1, 3, 1]), True),
               S("written", m(3, 4), m(2), ([0, 2], [1, 3]), False)],
    np_ref=_np_index_put_impl, public=False)


def _np_setitem(x, v, k):
    y = x.copy()
    y[k] = v
    return y


def _setitem(x, v, key):
    y = x.clone()
    y[key] = v
    return y


def _setitem_samples(m):
    return [S("row", m(3, 4), m(4), 0), S("col", m(3, 4), m(3), (slice(None), 1)),
            S("bcast_rows", m(3, 4), m(4), slice(1, None)),
            S("py_scalar", m(3, 4), 2.0, (0, 1)), S("0dim_value", m(3, 4), m(), Ellipsis),
            S("block", m(3, 4), m(2, 2), (slice(0, 2), slice(1, 3)))]


# Basic indices write through the view self[key]: copy_ (after view + expand for a value that
# broadcasts), or fill_ for a 0-dim value.
row("setitem_basic", _setitem, None,
    [SH.select, SH.slice_, SH.view, SH._expand, PW.copy, PW.fill, SH.clone],
    _setitem_samples, np_ref=lambda x, v, k: _np_setitem(x, v, k),
    dtypes=("float32", "float64", "int64"))


def _setitem_adv_samples(m):
    return [S("list_rows", m(3, 4), m(2, 4), [0, 2]), S("bcast", m(3, 4), m(4), [2, 0]),
            S("tensor_index", m(3, 4), m(2, 4), m.arr([1, 2], dtype="int64")),
            S("mask_rows", m(3, 4), m(4), C(m.mask(3))),
            S("pairs", m(3, 4), m(2), ([0, 1], [3, 2]))]


row("setitem_advanced", _setitem, None, [SH._setitem_advanced, IX._index_put, SH.clone],
    _setitem_adv_samples, np_ref=_np_setitem, dtypes=("float32", "float64", "int64"))


def _setitem_mask_samples(m):
    return [S("mask", m(3, 4), m(), C(m.mask(3, 4))), S("rows", m(3, 4), m(1), C(m.mask(3))),
            S("after_int", m(3, 4), m(1, 1), (1, C(m.mask(4))))]


# One value at one boolean mask: index_put_ runs masked_fill_ with the value as a number.
row("setitem_mask_value", _setitem, None, [SH.index_put_masked, IX._index_put, SH.clone],
    _setitem_mask_samples, np_ref=_np_setitem, dtypes=("float32", "float64", "int64"))


# ---------------------------------------------------------------------------------------------
# Matrix products and linear algebra: tests/ops/db_linalg.py
# ---------------------------------------------------------------------------------------------
_LINALG_DTYPES = ("float32", "float64", "int64")

# ---------------------------------------------------------------------------------------------
# nn.functional
# ---------------------------------------------------------------------------------------------


def _bce_samples(m):
    t = {"low": 0.0, "high": 1.0}
    return [S("mean", m(2, 3), C(m(2, 3, **t))), S("sum", m(2, 3), C(m(2, 3, **t)),
                                                    reduction="sum"),
            S("none", m(2, 3), C(m(2, 3, **t)), reduction="none"),
            S("target_grad", m(2, 3), m(2, 3, **t)),
            S("weight", m(2, 3), C(m(2, 3, **t)), weight=C(m(3, low=0.5, high=2.0))),
            S("pos_weight", m(2, 3), m(2, 3, **t), pos_weight=C(m(3, low=0.5, high=2.0))),
            S("both_none", m(2, 3), m(2, 3, **t), weight=C(m(2, 3, low=0.5, high=2.0)),
              pos_weight=C(m(3, low=0.5, high=2.0)), reduction="none"),
            S("both_sum", m(4), C(m(4, **t)), weight=C(m(4, low=0.5, high=2.0)),
              pos_weight=C(m(4, low=0.5, high=2.0)), reduction="sum"),
            S("0dim", m(), m(**t)), S("large_logits", m.arr([-40.0, 0.0, 40.0]),
                                      C(m.arr([1.0, 0.5, 0.0])))]


def _np_bce(x, t, weight=None, reduction="mean", pos_weight=None):
    sp = np.logaddexp(0, -x)
    lw = 1 if pos_weight is None else 1 + (pos_weight - 1) * t
    loss = (1 - t) * x + lw * sp
    if weight is not None:
        loss = loss * weight
    return {"mean": np.mean, "sum": np.sum, "none": lambda a: a}[reduction](loss)


row("binary_cross_entropy_with_logits", F.binary_cross_entropy_with_logits,
    "nn.functional.binary_cross_entropy_with_logits", [NN.bce_with_logits], _bce_samples,
    np_ref=_np_bce, domain=(-3.0, 3.0))


def _mse_samples(m):
    return [S("mean", m(2, 3), m(2, 3)), S("sum", m(2, 3), m(2, 3), reduction="sum"),
            S("none", m(2, 3), C(m(2, 3)), reduction="none"), S("0dim", m(), m()),
            S("bcast_target", m(2, 3), m(3)), S("empty_mean", m(0), m(0)),
            S("empty_sum", m(0, 2), m(0, 2), reduction="sum")]


def _np_mse(x, t, reduction="mean"):
    d = (x - t) ** 2
    return {"mean": lambda a: np.mean(a) if a.size else np.nan, "sum": np.sum,
            "none": lambda a: a}[reduction](d)


row("mse_loss", F.mse_loss, "nn.functional.mse_loss", [NN.mse, NN.mse_loss_backward],
    _mse_samples, np_ref=_np_mse)
# mse_loss's gradient op on its own (its derivatives give third derivatives)
row("mse_loss_backward", lambda g, x, t: NN.mse_loss_backward(g, x, t, "mean"),
    lambda torch: lambda g, x, t: torch.ops.aten.mse_loss_backward(g, x, t, 1),
    [NN.mse_loss_backward], lambda m: [S("mean", m(), m(2, 3), m(2, 3))],
    np_ref=lambda g, x, t: 2.0 / x.size * (x - t) * g, public=False)


def _linear_samples(m):
    return [S("2d_bias", m(2, 3), m(4, 3), m(4)), S("2d_nobias", m(2, 3), m(4, 3)),
            S("1d_bias", m(3), m(4, 3), m(4)), S("3d_bias", m(2, 2, 3), m(4, 3), m(4)),
            S("3d_nobias", m(2, 2, 3), m(4, 3)), S("kw_bias", m(2, 3), m(2, 3), bias=m(2))]


row("linear", F.linear, "nn.functional.linear", [LA.addmm, LA.mm, SH.t], _linear_samples,
    np_ref=lambda x, w, bias=None: x @ w.T + (0 if bias is None else bias))


# ---------------------------------------------------------------------------------------------
# Joining and splitting
# ---------------------------------------------------------------------------------------------
def _cat_samples(m):
    return [S("dim0", [m(2, 3), m(1, 3)]), S("dim1", [m(2, 1), m(2, 3), m(2, 2)], 1),
            S("neg_dim", [m(2, 2, 1), m(2, 2, 2)], -1), S("one", [m(3)]),
            S("with_empty", [m(0, 3), m(2, 3)]), S("kw", [m(2), m(3)], dim=0)]


row("cat", ember.cat, "cat", [SH._cat, SH.slice_], _cat_samples,
    np_ref=lambda ts, dim=0: np.concatenate(ts, axis=dim),
    dtypes=("float32", "float64", "int64", "bool"))
row("cat_mixed_dtypes", ember.cat, "cat", [SH._cat],
    lambda m: [S("f32_f64", [m(2, dtype="float32"), m(3, dtype="float64")]),
               S("int_float", [C(m(2, dtype="int64")), m(2, dtype="float32")])],
    np_ref=lambda ts, dim=0: np.concatenate(ts, axis=dim), dtypes=("float64",),
    skips={"test_gradcheck": _MIXED, "test_gradgradcheck": _MIXED})
row("concat_alias", ember.concat, "concat", [SH._cat],
    lambda m: [S("dim1", [m(2, 1), m(2, 2)], 1)], np_ref=lambda ts, d: np.concatenate(ts, d))


def _stack_samples(m):
    return [S("dim0", [m(2, 3), m(2, 3)]), S("dim_last", [m(3), m(3), m(3)], -1),
            S("dim1", [m(2, 2), m(2, 2)], 1), S("0dims", [m(), m()]), S("one", [m(2)])]


row("stack", ember.stack, "stack", [SH._stack, SH.select], _stack_samples,
    np_ref=lambda ts, dim=0: np.stack(ts, axis=dim),
    dtypes=("float32", "float64", "int64", "bool"))
row("unbind", ember.unbind, "unbind", [SH.unbind, SH._stack],
    lambda m: [S("dim0", m(3, 2)), S("dim1", m(2, 3), 1), S("neg", m(2, 2, 2), -1),
               S("vector", m(3))],
    np_ref=lambda x, dim=0: tuple(np.moveaxis(x, dim, 0)),
    dtypes=("float32", "float64", "int64"))
row("unbind_method", lambda x, *a: x.unbind(*a), None, [SH.unbind],
    lambda m: [S("dim1", m(2, 3), 1)], np_ref=lambda x, dim=0: tuple(np.moveaxis(x, dim, 0)))
row("split_with_sizes", lambda x, sizes, dim=0: x.split(sizes, dim), None,
    [SH.split_with_sizes, SH._cat],
    lambda m: [S("rows", m(4, 3), [1, 3]), S("cols", m(2, 5), [2, 2, 1], 1),
               S("with_zero", m(3, 2), [0, 3]), S("neg", m(2, 4), [3, 1], -1)],
    np_ref=lambda x, sizes, dim=0: tuple(np.split(x, np.cumsum(sizes)[:-1], axis=dim)),
    dtypes=("float32", "float64", "int64"))
row("split_int", lambda x, size, dim=0: x.split(size, dim), None, [SH._split, SH._cat],
    lambda m: [S("even", m(4, 3), 2), S("ragged", m(5, 2), 2), S("cols", m(2, 5), 3, 1),
               S("empty_dim", m(0, 2), 0)],
    np_ref=lambda x, n, dim=0: tuple(np.split(x, range(n, x.shape[dim], n) if n else [],
                                              axis=dim)))
row("split_fn", ember.split, "split", [SH.split_with_sizes, SH._split],
    lambda m: [S("list", m(4, 3), [1, 3]), S("int", m(4, 3), 3)],
    np_ref=lambda x, s: tuple(np.split(x, np.cumsum(s)[:-1] if isinstance(s, list)
                                       else range(s, x.shape[0], s))))
row("chunk", lambda x, n, dim=0: x.chunk(n, dim), None, [SH._split],
    lambda m: [S("even", m(4, 3), 2), S("ragged", m(5, 2), 3), S("cols", m(2, 5), 2, 1)],
    np_ref=None)
# split's pieces that autograd does not treat as views (UnsafeSplitBackward0, ...)
row("unsafe_split", ember.unsafe_split, "unsafe_split", [SH.unsafe_split, SH._cat],
    lambda m: [S("even", m(4, 3), 2), S("ragged", m(5, 2), 2), S("cols", m(2, 5), 3, 1)],
    np_ref=lambda x, n, dim=0: tuple(np.split(x, range(n, x.shape[dim], n), axis=dim)))
row("unsafe_split_with_sizes", ember.unsafe_split_with_sizes, "unsafe_split_with_sizes",
    [SH.unsafe_split_with_sizes, SH._cat],
    lambda m: [S("rows", m(4, 3), [1, 3]), S("cols", m(2, 5), [2, 2, 1], 1),
               S("with_zero", m(3, 2), [0, 3])],
    np_ref=lambda x, sizes, dim=0: tuple(np.split(x, np.cumsum(sizes)[:-1], axis=dim)))
row("unsafe_chunk", lambda x, n, dim=0: x.unsafe_chunk(n, dim), None, [SH.unsafe_split],
    lambda m: [S("even", m(4, 3), 2), S("ragged", m(5, 2), 3), S("cols", m(2, 5), 2, 1)],
    np_ref=None)

# ---------------------------------------------------------------------------------------------
# In-place ops on views: CopySlices on the base, the view regenerated as AsStridedBackward0
# ---------------------------------------------------------------------------------------------


def _inplace_on_view(x, key, value):
    y = x.clone()
    v = y[key]
    v.mul_(value)
    return y, v


row("inplace_on_view", _inplace_on_view, None,
    # (under create_graph the view's regenerated node and the base's CopySlices record
    # as_strided's steps: view_scatter and view_backward serve first-order backward)
    [VW.view_of_base, PW.mul, SH.clone, ST._as_strided, PW.copy],
    lambda m: [S("row", m(3, 4), 0, m(4)), S("col", m(3, 4), (slice(None), 1), 2.0),
               S("block", m(3, 4), (slice(1, None), slice(0, 2)), m(2, 2)),
               S("transposed", m(3, 4), (slice(None), slice(None, None, 2)), m(3, 1))],
    np_ref=None)


def _chain(*links):
    """A view chain as ember's views module replays it: (view op, args, index)."""
    return tuple((op, args, None) for op, args in links)


_T_VIEWS = {"select": lambda x, d, i: x.select(d, i),
            "slice": lambda x, d, a, b, c: x[(slice(None),) * (d % x.ndim) + (slice(a, b, c),)],
            "transpose": lambda x, a, b: x.transpose(a, b)}


def _torch_replay(chain, x):
    for view_op, rest, _ in chain:
        x = _T_VIEWS[view_op.name](x, *rest)
    return x


def _torch_view_scatter(torch):
    def f(self, src, chain):
        out = self.clone()
        _torch_replay(chain, out).copy_(src)
        return out
    return f


def _torch_view_backward(torch):
    def f(grad, sizes, chain):
        out = grad.new_zeros(sizes)
        _torch_replay(chain, out).copy_(grad)
        return out
    return f


_CHAINS = {"select": _chain((SH.select, (0, 1))),
           "slice": _chain((SH.slice_, (1, 0, 4, 2))),
           "select_slice": _chain((SH.slice_, (0, 1, 3, 1)), (SH.select, (1, 0))),
           "transpose_select": _chain((SH.transpose, (0, 1)), (SH.select, (0, 2)))}
_REGION = {"select": (4,), "slice": (3, 2), "select_slice": (2,), "transpose_select": (3,)}
row("view_scatter", VW.view_scatter, _torch_view_scatter, [VW.view_scatter],
    lambda m: [S(k, m(3, 4), m(*_REGION[k]), c) for k, c in _CHAINS.items()]
    + [S("py_src", m(3, 4), 0, _CHAINS["slice"])],
    public=False)
row("as_strided_view_of_base", VW.view_of_base, lambda torch: lambda x, c: _torch_replay(c, x),
    [VW.view_of_base, VW.view_backward],
    lambda m: [S(k, m(3, 4), c) for k, c in _CHAINS.items()], public=False)
row("as_strided_backward", VW.view_backward, _torch_view_backward, [VW.view_backward],
    lambda m: [S(k, m(*_REGION[k]), (3, 4), c) for k, c in _CHAINS.items()], public=False)


# ---------------------------------------------------------------------------------------------
# Known ember bugs (strict xfails), attached to the rows that expose them
# ---------------------------------------------------------------------------------------------


def _import_family_tables():
    """Rows of further op families live in ``tests/ops/db_<family>.py`` (each calls ``row``)."""
    import importlib
    import pathlib
    import pkgutil
    here = pathlib.Path(__file__).parent
    for m in sorted(pkgutil.iter_modules([str(here)]), key=lambda m: m.name):
        if m.name.startswith("db_"):
            importlib.import_module(f"{__package__}.{m.name}")


_BY_NAME = {r.name: r for r in OP_DB}
GRAD_TESTS = ("test_gradcheck", "test_gradgradcheck", "test_raw_equals_create_graph",
              "test_grad_shapes", "test_grad_vs_torch", "test_gradgrad_vs_torch")
ALL_TESTS = ("test_forward_torch", "test_forward_numpy", "test_no_grad", "test_grad_fn_name",
             *GRAD_TESTS)


def bug(rows, tests, reason, samples=None, dtypes=None):
    """Mark ``tests`` of ``rows`` (names) as strict xfails for a known ember bug."""
    for name in rows:
        r = _BY_NAME.get(name) or next(r for r in OP_DB if r.name == name)
        r.xfails = tuple(r.xfails) + tuple(XFail(t, reason, samples, dtypes) for t in tests)


# Last, so that family tables can use everything above (row, S, Maker, bug, ...).
_import_family_tables()
