"""Op tests generated from the op table (``op_db.OP_DB``): one case per row and sample.

For every op: forward values, shape and dtype against PyTorch (and NumPy), dtype promotion,
gradcheck and gradgradcheck in float64, raw against create_graph gradients, gradients and
second derivatives against torch's, gradient shapes, no graph under no_grad, grad_fn names, and
a meta-test that every registered OpDef has a row (and that the row really exercises it).
"""
from __future__ import annotations

import functools
import warnings
import zlib

import numpy as np
import pytest

import ember

from .op_db import DT, OP_DB, C, OpInfo, all_opdefs

# ---------------------------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------------------------
TOLS = {"float16": (1e-3, 1e-3), "float32": (1.3e-6, 1e-5), "float64": (1e-7, 1e-7)}
GRAD_TOLS = {"float16": (1e-2, 1e-2), "float32": (1e-5, 1e-5), "float64": (1e-7, 1e-7)}


@functools.cache
def _samples(row_name: str, dtype: str):
    return _ROWS[row_name].make_samples(dtype)


_ROWS = {r.name: r for r in OP_DB}
assert len(_ROWS) == len(OP_DB), "row names must be unique"


def _seed(*parts) -> int:
    return zlib.crc32("/".join(map(str, parts)).encode())


def _is_ember(mod) -> bool:
    return mod is ember


def _tensor(mod, array, requires_grad):
    a = np.array(array, copy=True)
    t = ember.from_numpy(a) if _is_ember(mod) else mod.from_numpy(a)
    if requires_grad and a.dtype.kind in "fc":
        t.requires_grad_()
    return t


def _has_array(value):
    return isinstance(value, (list, tuple)) and any(
        isinstance(v, (np.ndarray, C)) or _has_array(v) for v in value)


def _convert(mod, value, requires_grad, diff, given):
    if isinstance(value, C):
        return _tensor(mod, value.value, False)
    if isinstance(value, np.ndarray):
        if given is not None and value.dtype.kind in "fc" and requires_grad:
            t = given[len(diff)]
        else:
            t = _tensor(mod, value, requires_grad)
        if t.requires_grad:
            diff.append(t)
        return t
    if isinstance(value, DT):
        return getattr(mod, value.name)
    if _has_array(value):  # a list of tensors (cat, stack)
        return type(value)(_convert(mod, v, requires_grad, diff, given) for v in value)
    return value


def bind(sample, mod, requires_grad=False, given=None):
    """(args, kwargs, differentiable inputs) for ``mod`` (ember or torch).

    ``given``: tensors to use, in order, for the differentiable inputs (for gradcheck).
    """
    diff = []
    args = [_convert(mod, a, requires_grad, diff, given) for a in sample.args]
    kwargs = {k: _convert(mod, v, requires_grad, diff, given)
              for k, v in sample.kwargs.items()}
    return args, kwargs, diff


def rebinder(sample, mod):
    """A function of the differentiable inputs that calls the op (for gradcheck)."""
    _, _, diff = bind(sample, mod, True)

    def make(*ts):
        args, kwargs, _ = bind(sample, mod, True, given=ts)
        return args, kwargs
    return make, diff


def call(fn, args, kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args, **kwargs)


def outputs(out):
    """The tensor outputs of an op result, as a list."""
    return list(out) if isinstance(out, tuple) else [out]


def to_np(t):
    if getattr(t, "_is_zerotensor", lambda: False)():  # torch's lazy zeros (sgn's derivative)
        return np.zeros(tuple(t.shape), dtype_name(t))
    return np.asarray(t.detach().resolve_conj().numpy())


def random_like(rng, shape, dtype):
    """Standard normal values of ``dtype`` (complex ones with a random imaginary part too)."""
    x = rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * rng.standard_normal(shape)
    return x.astype(dtype)


def dtype_name(t) -> str:
    return str(t.dtype).split(".")[-1]


def assert_close(actual, expected, dtype=None, tols=TOLS, what="value"):
    """Same shape, same dtype (when tensors), close values (NaN equal to NaN)."""
    a = to_np(actual) if hasattr(actual, "detach") else np.asarray(actual)
    e = to_np(expected) if hasattr(expected, "detach") else np.asarray(expected)
    assert a.shape == e.shape, f"{what}: shape {a.shape} != {e.shape}"
    if hasattr(actual, "detach") and hasattr(expected, "detach"):
        assert dtype_name(actual) == dtype_name(expected), (
            f"{what}: dtype {dtype_name(actual)} != {dtype_name(expected)}")
    if e.dtype.kind in "fc" or a.dtype.kind in "fc":
        rtol, atol = tols.get(dtype or dtype_name_np(e), tols["float64"])
        wide = np.complex128 if "c" in (a.dtype.kind, e.dtype.kind) else np.float64
        np.testing.assert_allclose(a.astype(wide), e.astype(wide), rtol=rtol,
                                   atol=atol, equal_nan=True, err_msg=what)
    else:
        np.testing.assert_array_equal(a, e, err_msg=what)


def dtype_name_np(a) -> str:
    return a.dtype.name if a.dtype.name in TOLS else "float32"


def row_tols(row, base):
    return {**base, **row.tols}


def cases(test, *, dtypes=None, want=None, main=False):
    """pytest params (row, sample index, dtype) for ``test``, with skips and xfails attached.

    ``dtypes(row)``: the dtypes to run; by default float64 (gradient tests), or with
    ``main=True`` the row's main dtype (float64 when it has it, else its first).
    """
    params = []
    for row in OP_DB:
        if want is not None and not want(row):
            continue
        if test in row.skips:
            params.append(pytest.param(row, 0, None, id=row.name,
                                       marks=pytest.mark.skip(reason=row.skips[test])))
            continue
        dts = dtypes(row) if dtypes else [_main_dtype(row) if main else "float64"]
        for dt in dts:
            for i, sname in enumerate(s.name for s in _samples(row.name, dt)):
                marks = []
                reason = row.xfail_reason(test, sname, dt)
                if reason:
                    marks.append(pytest.mark.xfail(reason=reason, strict=True))
                params.append(pytest.param(row, i, dt, id=f"{row.name}-{i}:{sname}-{dt}",
                                           marks=marks))
    return params


def _main_dtype(row):
    return "float64" if "float64" in row.dtypes else row.dtypes[0]


def _float_dtypes(row):
    return [d for d in row.dtypes if d in ("float32", "float64")] or ["float64"]


def _diff(row):
    return row.differentiable


# ---------------------------------------------------------------------------------------------
# 1. forward against torch: values, shape, dtype
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("row,i,dt", cases("test_forward_torch", dtypes=lambda r: r.dtypes))
def test_forward_torch(row: OpInfo, i, dt):
    torch = pytest.importorskip("torch")
    sample = _samples(row.name, dt)[i]
    t_args, t_kwargs, _ = bind(sample, torch)
    try:
        expected = call(row.torch_fn(torch), t_args, t_kwargs)
    except Exception as err:  # noqa: BLE001 - torch refuses: ember must refuse the same way
        e_args, e_kwargs, _ = bind(sample, ember)
        with pytest.raises(type(err)):
            call(row.op, e_args, e_kwargs)
        return
    e_args, e_kwargs, _ = bind(sample, ember)
    actual = call(row.op, e_args, e_kwargs)
    exp_outs, act_outs = outputs(expected), outputs(actual)
    assert len(act_outs) == len(exp_outs)
    tols = row_tols(row, TOLS)
    for k, (a, e) in enumerate(zip(act_outs, exp_outs)):
        assert isinstance(a, ember.Tensor), f"output {k} is {type(a).__name__}, not a Tensor"
        assert_close(a, e, dt if dt in tols else None, tols, what=f"output {k}")
    if isinstance(expected, tuple) and hasattr(expected, "_fields"):
        assert tuple(actual._fields) == tuple(expected._fields)


# ---------------------------------------------------------------------------------------------
# 1b. dtype promotion matrix for binary ops (int, bool, float32/64, 0-dim, Python scalars)
# ---------------------------------------------------------------------------------------------
PROMOTION_PAIRS = [
    ("int64", "T", "float", "S"), ("int64", "T", "int", "S"), ("int64", "T", "bool", "S"),
    ("int32", "T", "int", "S"), ("uint8", "T", "int", "S"), ("bool", "T", "int", "S"),
    ("bool", "T", "float", "S"), ("bool", "T", "bool", "S"), ("float32", "T", "float", "S"),
    ("float16", "T", "float", "S"), ("float32", "T", "int", "S"),
    ("float32", "T", "float64", "0"), ("int64", "T", "float64", "0"),
    ("int32", "T", "int64", "0"), ("float16", "T", "float64", "0"),
    ("float32", "0", "float64", "0"), ("float64", "0", "int32", "T"),
    ("float32", "T", "float64", "T"), ("int64", "T", "float32", "T"),
    ("uint8", "T", "int8", "T"), ("int32", "T", "bool", "T"), ("bool", "T", "bool", "T"),
    ("int32", "T", "int64", "T"), ("float16", "T", "float32", "T"),
]


_PAIR_IDS = {"{}{}-{}{}".format(*p) for p in PROMOTION_PAIRS}


def _operand(dtype, kind, rng):
    if kind == "S":
        return {"float": 1.5, "int": 2, "bool": True}[dtype]
    shape = (3,) if kind == "T" else ()
    if dtype == "bool":
        return rng.random(shape) < 0.5
    if dtype.startswith("float"):
        return rng.uniform(0.5, 2.0, shape).astype(dtype)
    return rng.integers(1, 4, shape).astype(dtype)


def _promotion_cases():
    out = []
    for row in OP_DB:
        if not row.promotion:
            continue
        for pair in PROMOTION_PAIRS:
            pid = "{}{}-{}{}".format(*pair)
            reason = row.xfail_reason("test_promotion", pid, None)
            marks = [pytest.mark.xfail(reason=reason, strict=True)] if reason else []
            out.append(pytest.param(row, pair, id=f"{row.name}-{pid}", marks=marks))
    return out


@pytest.mark.parametrize("row,pair", _promotion_cases())
def test_promotion(row: OpInfo, pair):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(_seed(row.name, pair))
    a, b = _operand(pair[0], pair[1], rng), _operand(pair[2], pair[3], rng)

    def args(mod):
        return [_tensor(mod, v, False) if isinstance(v, np.ndarray) else v for v in (a, b)]
    try:
        expected = call(row.torch_fn(torch), args(torch), {})
    except Exception as err:  # noqa: BLE001 - torch refuses: ember must refuse the same way
        with pytest.raises(type(err)):
            call(row.op, args(ember), {})
        return
    actual = call(row.op, args(ember), {})
    assert_close(actual, expected, dtype_name(expected), what="promoted result")


# ---------------------------------------------------------------------------------------------
# 2. forward against a NumPy reference (runs without torch)
# ---------------------------------------------------------------------------------------------
def _np_value(v):
    if isinstance(v, C):
        return v.value
    if isinstance(v, DT):
        return np.dtype(v.name)
    if _has_array(v):
        return type(v)(_np_value(x) for x in v)
    return v


@pytest.mark.parametrize("row,i,dt", cases("test_forward_numpy",
                                           want=lambda r: r.np_ref is not None, main=True))
def test_forward_numpy(row: OpInfo, i, dt):
    sample = _samples(row.name, dt)[i]
    args, kwargs, _ = bind(sample, ember)
    try:
        actual = call(row.op, args, kwargs)
    except Exception:  # noqa: BLE001 - ember refuses: so must the NumPy reference
        with pytest.raises(Exception):  # noqa: B017
            call(row.np_ref, [_np_value(v) for v in sample.args],
                 {k: _np_value(v) for k, v in sample.kwargs.items()})
        return
    with np.errstate(all="ignore"):
        expected = call(row.np_ref, [_np_value(v) for v in sample.args],
                        {k: _np_value(v) for k, v in sample.kwargs.items()})
    act = outputs(actual)
    exp = list(expected) if isinstance(expected, tuple) else [expected]
    for k, (a, e) in enumerate(zip(act, exp)):
        assert_close(a, np.asarray(e), dt if dt in TOLS else "float64", row_tols(row, TOLS),
                     what=f"output {k}")


# ---------------------------------------------------------------------------------------------
# 3. gradcheck and gradgradcheck in float64
# ---------------------------------------------------------------------------------------------
def _gradcheck_sample(row, i, dt):
    sample = _samples(row.name, dt)[i]
    if sample.no_gradcheck:
        pytest.skip(sample.no_gradcheck)
    make, diff = rebinder(sample, ember)
    if not diff:
        pytest.skip("no floating point input to differentiate")

    def fn(*ts):
        a, k = make(*ts)
        return call(row.op, a, k)
    return sample, fn, diff


@pytest.mark.parametrize("row,i,dt", cases("test_gradcheck", want=_diff))
def test_gradcheck(row: OpInfo, i, dt):
    from ember.autograd import gradcheck
    sample, fn, diff = _gradcheck_sample(row, i, dt)
    assert gradcheck(fn, tuple(diff), **sample.gradcheck_kwargs)


def gradgradcheck(fn, inputs, **kwargs):
    """gradgradcheck built on ember's gradcheck, with grad mode on inside the first derivative.

    NOTE: written before ``ember.autograd.gradgradcheck`` worked (its numerical Jacobian
    called the first-derivative function under ``no_grad``); it is checked on its own in
    ``test_ember_gradgradcheck_runs``.
    """
    from ember.autograd import gradcheck
    with ember.enable_grad():
        outs = [o for o in outputs(fn(*inputs)) if o.requires_grad]
    rng = np.random.default_rng(0)
    gos = tuple(_tensor(ember, random_like(rng, tuple(o.shape), dtype_name(o)), True)
                for o in outs)
    n = len(inputs)

    def first_derivatives(*args):
        with ember.enable_grad():
            ins, g = args[:n], args[n:]
            outs = [o for o in outputs(fn(*ins)) if o.requires_grad]
            grads = ember.autograd.grad(outs, ins, g, create_graph=True, allow_unused=True)
        return tuple(x for x in grads if x is not None)
    with warnings.catch_warnings():  # float32 upstream gradients of casts (eps is raised)
        warnings.simplefilter("ignore", UserWarning)
        return gradcheck(first_derivatives, tuple(inputs) + gos, **kwargs)


def test_ember_gradgradcheck_runs():
    x = ember.tensor([0.5, -1.0, 2.0], dtype=ember.float64, requires_grad=True)
    assert ember.autograd.gradgradcheck(lambda t: t * t * t, (x,))


def _jvp_forward(fn, xs, ts, batch=None):
    """Output tangents of ``fn`` at ``xs`` along ``ts`` (a batch of them when ``batch``)."""
    import contextlib

    import ember.autograd.forward_ad as fwAD
    from ember.autograd._batched_forward import batched_tangents
    with fwAD.dual_level(), (batched_tangents(batch) if batch else contextlib.nullcontext()):
        # (inputs that require grad: the sample's rebinder places its inputs by that flag)
        outs = outputs(fn(*[fwAD.make_dual(x.detach().clone().requires_grad_(), t)
                            for x, t in zip(xs, ts)]))
        return [fwAD.unpack_dual(o).tangent for o in outs]


def _jvp_reverse(fn, xs, ts):
    """J t by reverse mode alone: the gradient of <vjp(u), t> w.r.t. u."""
    xs = [x.detach().clone().requires_grad_() for x in xs]  # (in-place rows write into them)
    outs = outputs(fn(*xs))
    live = [o for o in outs if o.requires_grad]
    us = [ember.zeros_like(o).requires_grad_() for o in live]
    gs = ember.autograd.grad(live, xs, us, create_graph=True, allow_unused=True)
    # (a real inner product: a complex value counts as its real and imaginary parts)
    s = sum(((g.conj() * t).sum().real if g.is_complex() or t.is_complex() else (g * t).sum())
            for g, t in zip(gs, ts) if g is not None)
    # (a constant s: every gradient is a constant, zeros_like(grad) for floor or sign)
    jts = iter(ember.autograd.grad(s, us, allow_unused=True)
               if isinstance(s, ember.Tensor) and s.requires_grad else [None] * len(us))
    return [next(jts) if o.requires_grad else None for o in outs]


# rows of ops torch gives no forward-mode formula: ember raises torch's NotImplementedError
# for them (tests/func/test_jvp_op_table.py compares it), so there is no JVP to check
_NO_FORWARD_FORMULA = {
    "conv_tbc", "nn.functional.conv_tbc", "nn.functional.grid_sample", "grid_sampler",
    "grid_sampler_2d", "grid_sampler_3d", "cholesky", "huber_loss_backward", "igamma_method",
    "multi_margin_loss", "ormqr", "pack_padded_sequence", "rrelu_inplace", "special_gammainc",
    "special_gammainc_numpy_only", "special_gammaincc", "special_gammaincc_numpy_only"}


# view ops torch's vmap has no batching rule for (and its fallback refuses views): a batch of
# tangents, which torch pushes through with vmap, gets the refusal
_NO_BATCHING_RULE = {"_neg_view"}


@pytest.mark.parametrize("row,i,dt", cases("test_forward_ad", want=_diff))
def test_forward_ad(row: OpInfo, i, dt):
    """Forward mode: each op's JVP is J t as reverse mode computes it, and a batch of
    tangents pushed through in one pass gives what one pass per tangent gives."""
    if row.name in _NO_FORWARD_FORMULA:
        pytest.skip("torch has no forward-mode formula for this op: ember raises its error")
    sample, fn, diff = _gradcheck_sample(row, i, dt)
    rng = np.random.default_rng(_seed(row.name, i, dt) + 2)
    batch = 2
    tans = [ember.tensor(random_like(rng, (batch,) + tuple(x.shape), dtype_name(x)))
            for x in diff]
    rows = [_jvp_forward(fn, diff, [t[b] for t in tans]) for b in range(batch)]
    if row.name in _NO_BATCHING_RULE:  # (torch batches tangents with vmap: its refusal)
        with pytest.raises(RuntimeError, match="Batching rule not implemented"):
            _jvp_forward(fn, diff, tans, batch)
        got = [None if r is None else ember.stack([x[k] for x in rows])
               for k, r in enumerate(rows[0])]
    else:
        got = _jvp_forward(fn, diff, tans, batch)
    want = _jvp_reverse(fn, diff, [t[0] for t in tans])
    # (an empty input: torch's JVP of mean is NaN there, its reverse-mode derivative 0)
    empty = any(x.numel() == 0 for x in diff)
    for k, (g, w) in enumerate(zip(got, want)):
        if w is None:
            continue
        for b in range(batch):
            one = rows[b][k]
            one = ember.zeros_like(w) if one is None else one
            if b == 0 and not empty:
                assert_close(one, w, dt, what=f"output {k}: forward vs reverse")
            assert g is not None, f"output {k}: no batched tangent"
            assert_close(g[b], one, dt, what=f"output {k}, row {b}: batched vs one pass")


_GRADGRAD_NAN_AT_EMPTY = {("nanmean", "empty"), ("nanmean", "empty_reduced"),
                          ("median", "empty"), ("nanmedian", "empty")}


@pytest.mark.parametrize("row,i,dt", cases("test_gradgradcheck",
                                           want=lambda r: r.differentiable and r.gradgrad))
def test_gradgradcheck(row: OpInfo, i, dt):
    sample, fn, diff = _gradcheck_sample(row, i, dt)
    if (row.name, sample.name) in _GRADGRAD_NAN_AT_EMPTY:
        pytest.skip("the second derivative at an empty input is 0/0 (NaN): torch's "
                    "gradgradcheck fails its zero-grad_output check there too")
    assert gradgradcheck(fn, tuple(diff), **sample.gradcheck_kwargs)


# ---------------------------------------------------------------------------------------------
# 4-6. first-order gradients: raw == create_graph, == torch's, shaped like their inputs
# ---------------------------------------------------------------------------------------------
def _forward_for_grad(row, i, dt, mod):
    sample = _samples(row.name, dt)[i]
    args, kwargs, diff = bind(sample, mod, True)
    fn = row.op if _is_ember(mod) else row.torch_fn(mod)
    outs = [o for o in outputs(call(fn, args, kwargs)) if o.requires_grad]
    if not diff or not outs:
        pytest.skip("no differentiable input or output in this sample")
    rng = np.random.default_rng(_seed(row.name, i, dt))
    gos = [_tensor(mod, random_like(rng, tuple(o.shape), dtype_name(o)), False)
           for o in outs]
    return outs, diff, gos


def _grad(mod, outs, ins, gos, **kw):
    return mod.autograd.grad(outs, ins, gos, allow_unused=True, **kw)


@pytest.mark.parametrize("row,i,dt", cases("test_raw_equals_create_graph", want=_diff))
def test_raw_equals_create_graph(row: OpInfo, i, dt):
    outs, diff, gos = _forward_for_grad(row, i, dt, ember)
    raw = _grad(ember, outs, diff, gos, retain_graph=True)
    graph = _grad(ember, outs, diff, gos, create_graph=True)
    for k, (r, g) in enumerate(zip(raw, graph)):
        assert (r is None) == (g is None), f"input {k}: None-ness differs"
        if r is not None:
            assert_close(r, g, dt, what=f"grad {k}")


@pytest.mark.parametrize("row,i,dt", cases("test_grad_shapes", want=_diff))
def test_grad_shapes(row: OpInfo, i, dt):
    outs, diff, gos = _forward_for_grad(row, i, dt, ember)
    for create_graph in (False, True):
        grads = _grad(ember, outs, diff, gos, retain_graph=True, create_graph=create_graph)
        for k, (g, x) in enumerate(zip(grads, diff)):
            if g is not None:
                assert tuple(g.shape) == tuple(x.shape), f"grad {k}: shape"
                assert g.dtype == x.dtype, f"grad {k}: dtype"


@pytest.mark.parametrize("create_graph", [False, True], ids=["raw", "graph"])
@pytest.mark.parametrize("row,i,dt", cases("test_batched_grad", want=_diff))
def test_batched_grad(row: OpInfo, i, dt, create_graph):
    """One batched backward (is_grads_batched) gives what one backward per row gives."""
    outs, diff, _ = _forward_for_grad(row, i, dt, ember)
    rng = np.random.default_rng(_seed(row.name, i, dt) + 1)
    batch = 3
    gos = [ember.tensor(random_like(rng, (batch,) + tuple(o.shape), dtype_name(o)))
           for o in outs]
    got = _grad(ember, outs, diff, gos, retain_graph=True, create_graph=create_graph,
                is_grads_batched=True)
    rows = [_grad(ember, outs, diff, [g[b] for g in gos], retain_graph=True)
            for b in range(batch)]
    for k, g in enumerate(got):
        want = [r[k] for r in rows]
        if g is None:
            assert all(w is None or not to_np(w).any() for w in want), f"grad {k}: None"
            continue
        assert g.requires_grad == (create_graph and g.grad_fn is not None)
        for b, w in enumerate(want):
            expected = ember.zeros_like(diff[k]) if w is None else w
            assert_close(g[b], expected, dt, what=f"grad {k}, row {b}")


@pytest.mark.parametrize("row,i,dt", cases("test_grad_vs_torch", want=_diff,
                                           dtypes=_float_dtypes))
def test_grad_vs_torch(row: OpInfo, i, dt):
    torch = pytest.importorskip("torch")
    e_outs, e_in, e_gos = _forward_for_grad(row, i, dt, ember)
    t_outs, t_in, t_gos = _forward_for_grad(row, i, dt, torch)
    e_grads = _grad(ember, e_outs, e_in, e_gos)
    t_grads = _grad(torch, t_outs, t_in, t_gos)
    tols = row_tols(row, GRAD_TOLS)
    for k, (e, t) in enumerate(zip(e_grads, t_grads)):
        if t is None:
            assert e is None or not to_np(e).any(), f"grad {k}: torch gives None"
            continue
        assert e is not None, f"grad {k}: ember gives None, torch does not"
        assert_close(e, t, dt, tols, what=f"grad {k}")


@pytest.mark.parametrize("row,i,dt", cases("test_gradgrad_vs_torch",
                                           want=lambda r: r.differentiable and r.gradgrad))
def test_gradgrad_vs_torch(row: OpInfo, i, dt):
    """Second derivatives (w.r.t. the inputs and the upstream gradients) against torch's."""
    torch = pytest.importorskip("torch")
    results = []
    for mod in (ember, torch):
        outs, ins, gos = _forward_for_grad(row, i, dt, mod)
        for g in gos:
            g.requires_grad_()
        grads = _grad(mod, outs, ins, gos, create_graph=True)
        rng = np.random.default_rng(_seed(row.name, i, "gg"))
        total = None
        for g, x in zip(grads, ins):
            # Draw a weight for every input, so that both libraries get the same weights even
            # where one of them returns a constant (or undefined) first derivative.
            w = random_like(rng, tuple(x.shape), "complex128")
            if g is not None and g.requires_grad:
                # (the real part of a complex weight for real gradients)
                w = w if g.is_complex() else w.real
                term = (g * _tensor(mod, w, False).to(g.dtype)).sum()
                term = term.real if term.is_complex() else term
                total = term if total is None else total + term
        if total is None:
            pytest.skip("first derivatives are constant")
        results.append(_grad(mod, [total], list(ins) + list(gos), None))
    for k, (e, t) in enumerate(zip(*results)):
        if t is None and e is None:
            continue
        e_np = np.zeros(1) if e is None else to_np(e)
        t_np = np.zeros(1) if t is None else to_np(t)
        if e is None or t is None:  # an undefined gradient stands for zeros
            assert not np.any(e_np) and not np.any(t_np), f"second grad {k}"
            continue
        assert_close(e, t, dt, row_tols(row, GRAD_TOLS), what=f"second grad {k}")


# ---------------------------------------------------------------------------------------------
# 7. no graph under no_grad (and inference_mode)
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("row,i,dt", cases("test_no_grad", main=True))
def test_no_grad(row: OpInfo, i, dt):
    sample = _samples(row.name, dt)[i]
    for mode in (ember.no_grad, ember.inference_mode):
        args, kwargs, diff = bind(sample, ember, True)
        with mode():
            outs = outputs(call(row.op, args, kwargs))
        for k, o in enumerate(outs):
            if any(o is x for x in diff):  # the op returned its input itself (flatten(1, 1))
                continue
            # torch: a view requires grad when its base does, whatever the grad mode
            want = o._is_view() and o._base.requires_grad
            assert o.requires_grad == want, f"output {k}'s requires_grad under {mode.__name__}"
            assert o.grad_fn is None, f"output {k} has a grad_fn under {mode.__name__}"


# ---------------------------------------------------------------------------------------------
# 8. grad_fn names equal torch's
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("row,i,dt", cases("test_grad_fn_name", want=lambda r: r.public,
                                           main=True))
def test_grad_fn_name(row: OpInfo, i, dt):
    torch = pytest.importorskip("torch")
    sample = _samples(row.name, dt)[i]
    names = []
    for mod, fn in ((ember, row.op), (torch, row.torch_fn(torch))):
        args, kwargs, _ = bind(sample, mod, True)
        outs = outputs(call(fn, args, kwargs))
        names.append([(type(o.grad_fn).__name__ if o.grad_fn is not None else None,
                       o.requires_grad) for o in outs])
    assert names[0] == names[1]


# ---------------------------------------------------------------------------------------------
# 8b. the graph's node names one level down, and those create_graph records, equal torch's
# ---------------------------------------------------------------------------------------------
# Rows whose first derivative (computed with create_graph=True) still ends in other ops than
# torch's: torch's formula is a backward op of its own (EluBackwardBackward0, MseLossBackward-
# Backward0, ConvolutionBackwardBackward0...), calls a Scalar overload, or is composed
# differently (cat's gradient: slices, not a split), or for complex tensors is composed
# otherwise (the FFTs' padding and trimming).
_GRADIENT_NAMES_DIFFER = frozenset({
    "adaptive_max_pool2d", "adaptive_max_pool3d", "amax", "amin", "aminmax",
    "angle_real", "as_strided_scatter", "conv_tbc", "cumprod", "cumsum", "det_method",
    "div_true_kw", "fft_complex", "grid_sampler", "grid_sampler_2d",
    "grid_sampler_3d", "ifft_complex", "index_copy", "index_copy_",
    "index_reduce", "index_reduce_", "index_reduce_method", "irfft", "irfft2", "irfftn",
    "linalg_det", "linalg_householder_product", "linalg_slogdet",
    "logcumsumexp", "logdet", "masked_scatter",
    "masked_scatter_", "mean_dim", "multi_margin_loss",
    "nn.functional.conv_tbc", "nn.functional.grid_sample", "orgqr", "pack_padded_sequence",
    "pad_reflect", "pad_replicate", "slogdet",
    "special_ndtr", "special_xlog1py", "trace", "trace_method",
    "xlogy", "xlogy_", "xlogy_method", "native_group_norm", "ormqr",
})
# Rows whose node's inputs (next_functions) are other ops than torch's.
_EDGE_NAMES_DIFFER = frozenset({
    "_standard_gamma_grad",
    "special_ndtr",
    "native_group_norm", "ormqr",
})


def _node_names(mod, row, sample, create_graph):
    fn = row.op if _is_ember(mod) else row.torch_fn(mod)
    args, kwargs, diff = bind(sample, mod, True)
    outs = [o for o in outputs(call(fn, args, kwargs)) if hasattr(o, "grad_fn")]
    if not create_graph:
        return [None if o.grad_fn is None else
                [None if f is None else f.name() for f, _ in o.grad_fn.next_functions]
                for o in outs]
    outs = [o for o in outs if o.requires_grad]
    if not diff or not outs:
        return []
    rng = np.random.default_rng(_seed(row.name, "names"))
    gos = [_tensor(mod, rng.standard_normal(o.shape).astype(dtype_name(o)), True) for o in outs]
    grads = _grad(mod, outs, diff, gos, create_graph=True)
    return [None if g is None or g.grad_fn is None else g.grad_fn.name() for g in grads]


def _name_cases(differ, want):
    return [pytest.param(r, id=r.name, marks=[pytest.mark.xfail(
        reason="node names differ from torch's (see the set above)", strict=True)]
        if r.name in differ else []) for r in OP_DB if r.public and want(r)]


@pytest.mark.parametrize("row", _name_cases(_EDGE_NAMES_DIFFER, lambda r: True))
def test_next_function_names(row: OpInfo):
    torch = pytest.importorskip("torch")
    dt = _main_dtype(row)
    for sample in _samples(row.name, dt):
        assert (_node_names(ember, row, sample, False) == _node_names(torch, row, sample, False)
                ), sample.name


@pytest.mark.parametrize("row", _name_cases(
    _GRADIENT_NAMES_DIFFER, lambda r: r.differentiable and r.gradgrad))
def test_gradient_node_names(row: OpInfo):
    """The nodes a create_graph pass records for the first derivatives (so second-order graphs
    read as torch's: SoftmaxBackwardDataBackward0, ...)."""
    torch = pytest.importorskip("torch")
    dt = _main_dtype(row)
    for sample in _samples(row.name, dt):
        assert (_node_names(ember, row, sample, True) == _node_names(torch, row, sample, True)
                ), sample.name


# ---------------------------------------------------------------------------------------------
# 9. every registered OpDef has a row, and its rows really run it
# ---------------------------------------------------------------------------------------------
def test_every_opdef_has_a_row():
    covered = {id(d) for row in OP_DB for d in row.opdefs}
    missing = sorted(key for key, d in all_opdefs().items() if id(d) not in covered)
    assert not missing, f"OpDefs without a row in tests/ops/op_db.py: {missing}"


def test_registry_opdefs_are_in_the_modules():
    from ember._ops.registry import REGISTRY
    known = {id(d) for d in all_opdefs().values()}
    stray = sorted(name for name, d in REGISTRY.items() if id(d) not in known)
    assert not stray, f"registered ops outside the family modules: {stray}"


def test_rows_are_well_formed():
    for row in OP_DB:
        names = set()
        for dt in set(row.dtypes) | {"float64"}:
            dt_names = [s.name for s in row.make_samples(dt)]
            assert len(set(dt_names)) == len(dt_names), f"{row.name}: duplicate sample names"
            names |= set(dt_names)
        assert names, f"{row.name}: no samples"
        for reason in row.skips.values():
            assert reason, f"{row.name}: a skip without a reason"
        for x in row.xfails:
            assert x.reason, f"{row.name}: an xfail without a reason"
            known = _PAIR_IDS if x.test == "test_promotion" else names
            assert x.samples is None or set(x.samples) <= set(known), (
                f"{row.name}: xfail names unknown samples {set(x.samples) - set(known)}")


def _counting(kernel, key, called):
    def counting(*args, **kwargs):
        called.add(key)
        return kernel(*args, **kwargs)
    return counting


@pytest.mark.parametrize("row", [pytest.param(r, id=r.name) for r in OP_DB])
def test_row_exercises_its_opdefs(row: OpInfo, monkeypatch):
    """Each declared OpDef's kernel (or its ufunc, in place) runs in the row's forward,
    backward or double backward."""
    called = set()
    for d in row.opdefs:
        # List ops (cat, stack) run through per-arity copies of their OpDef: count those too.
        for target in [d, *getattr(d, "_specialized", {}).values()]:
            monkeypatch.setattr(target, "kernel", _counting(target.kernel, id(d), called))
            if target.ufunc is not None:  # in-place arithmetic writes with the op's ufunc
                monkeypatch.setattr(target, "ufunc", _counting(target.ufunc, id(d), called))
    dts = {d for d in row.dtypes if d.startswith("float")} | {"float64"}
    for sample in [s for dt in sorted(dts) for s in _samples(row.name, dt)]:
        args, kwargs, diff = bind(sample, ember, row.differentiable)
        # NOTE: failures here are reported by the other tests; this one is about coverage.
        try:
            outs = [o for o in outputs(call(row.op, args, kwargs)) if o.requires_grad]
            if not (diff and outs):
                continue
            gos = [ember.ones_like(o).requires_grad_() for o in outs]
            grads = [g for g in _grad(ember, outs, diff, gos, create_graph=True)
                     if g is not None and g.requires_grad]
            if grads and row.gradgrad:
                total = sum(((g * g).sum().real if g.is_complex() else (g * g).sum())
                            for g in grads)
                _grad(ember, [total], diff + gos, None)
        except Exception:  # noqa: BLE001, S112 - reported by the other tests
            continue
    missing = [f"{d.name}/{d.node_cls.__name__}" for d in row.opdefs if id(d) not in called]
    assert not missing, f"{row.name} declares OpDefs that none of its samples runs: {missing}"


# ---------------------------------------------------------------------------------------------
# A 0-dim result used twice: its gradients are summed before its node runs
# ---------------------------------------------------------------------------------------------
_ZERO_DIM_VIEWS = {
    "t": lambda x: x.t(), "permute": lambda x: x.permute(()), "expand": lambda x: x.expand(()),
    "view": lambda x: x.view(()), "reshape": lambda x: x.reshape(()),
    "unsqueeze": lambda x: x.unsqueeze(0), "squeeze": lambda x: x.squeeze(),
    "clone": lambda x: x.clone(), "sum": lambda x: x.sum(), "mul": lambda x: x * 1.0,
}


@pytest.mark.parametrize("name", list(_ZERO_DIM_VIEWS))
def test_zero_dim_result_used_twice(name):
    f = _ZERO_DIM_VIEWS[name]
    x = ember.tensor(2.0, dtype=ember.float64, requires_grad=True)
    y = f(x)
    (g,) = ember.autograd.grad((y * y).sum(), x)
    assert g.shape == () and g.item() == 4.0
