"""Views and in-place ops: values, gradients, grad_fn names, versions and errors, as torch.

Most tests write their body once as ``body(lib)`` and run it on PyTorch 2.13 (the oracle; the
test skips when torch is absent) and on ember, comparing everything the body returns or the
error it raises (type and message, with ``torch.`` spelled ``ember.``). The case tables (view
ops, in-place ops) live in ``views_cases.py``. The gradcheck tests run without torch.

Known ember bugs are ``xfail(strict=True)`` with the reason saying what is wrong.
"""
from __future__ import annotations

import numpy as np
import pytest
from views_cases import (
    ERRORS,
    INPLACE,
    SEMANTICS,
    VIEWS,
    assert_same,
    const,
    grid_body,
    leaf,
    name,
    outcome,
    variants,
)

import ember


@pytest.fixture(scope="module")
def torch():
    return pytest.importorskip("torch")


def check(body, torch):
    return assert_same(body, torch, ember)


# -- known bugs (see the module docstring) ------------------------------------------------------

def grid_bug(view_name, op_name, base_kind):
    """The reason a grid case fails on ember today, or None."""
    return None


def _grid_params():
    """One test per (view op, in-place op) for the cases with no known bug; the cases with a
    known bug are grouped by (bug, view op, base kind), one xfail test per group."""
    ok, groups = [], {}
    for v in VIEWS:
        for o in INPLACE:
            good = []
            for u, b in variants(o):
                reason = grid_bug(v, o, b)
                if reason is None:
                    good.append((u, b))
                else:
                    groups.setdefault((reason, v, b), []).append((o, u, b))
            if good:
                ok.append(pytest.param(v, o, tuple(good), id=f"{v}-{o}"))
    bugs = [pytest.param(v, tuple(cases), id=f"{v}-{b}-{len(cases)}cases",
                         marks=pytest.mark.xfail(reason=reason, strict=True,
                                                 raises=AssertionError))
            for (reason, v, b), cases in groups.items()]
    return ok, bugs


GRID_OK, GRID_BUGS = _grid_params()


def _grid_failure(torch, view_name, op_name, usage, base_kind):
    """None if the case matches torch, else a one-line description of the difference."""
    try:
        check(grid_body(view_name, op_name, usage, base_kind), torch)
    except AssertionError as e:
        return f"{view_name}-{op_name}-{usage}-{base_kind}: {str(e).strip()[:300]}"
    return None


# == 1. the grid: view op x in-place op x (view used before / only after) x base kind ===========
# usage "before": the view's old value feeds the loss (through exp, which saves its output,
# not the view); "after": only the mutated view is used. base "graph": base = leaf * 1.5;
# "plain": a tensor that does not require grad (only the operand brings autograd in).
@pytest.mark.parametrize("view_name, op_name, variants", GRID_OK)
def test_grid(torch, view_name, op_name, variants):
    """Forward values, returned value, every leaf's .grad, grad_fn names and versions."""
    failures = [f for u, b in variants
                if (f := _grid_failure(torch, view_name, op_name, u, b)) is not None]
    assert not failures, "\n".join(failures)


@pytest.mark.filterwarnings("ignore:Use of .* on expanded tensors is deprecated:UserWarning")
@pytest.mark.parametrize("view_name, cases", GRID_BUGS)
def test_grid_known_bug(torch, view_name, cases):
    """Every case of a known-bug group must still fail (xfail); once all pass, the strict
    xfail reports it; if only some pass, this fails outright, naming them."""
    failures = [f for o, u, b in cases
                if (f := _grid_failure(torch, view_name, o, u, b)) is not None]
    if failures and len(failures) < len(cases):
        failed = {f.split(":")[0] for f in failures}
        fixed = [f"{view_name}-{o}-{u}-{b}" for o, u, b in cases
                 if f"{view_name}-{o}-{u}-{b}" not in failed]
        pytest.fail(f"partly fixed: these cases now match torch: {fixed}", pytrace=False)
    if failures:
        raise AssertionError(f"{len(failures)} cases differ from torch; first: {failures[0]}")


def test_grid_covers_every_view_and_inplace_kind():
    kinds = {k for _, _, k in VIEWS.values()}
    assert kinds == {"view", "expand", "multi"}
    assert len(INPLACE) >= 20
    covered = {(p.values[0], p.values[1]) for p in GRID_OK}
    covered |= {(p.values[0], o) for p in GRID_BUGS for o, _, _ in p.values[1]}
    assert covered == {(v, o) for v in VIEWS for o in INPLACE}


# == 2. the same cases under gradcheck (ember only, float64) ====================================
def _gradcheck_fn(view_name, op_name, usage, base_kind):
    shape, view_fn, _ = VIEWS[view_name]
    op_fn, _ = INPLACE[op_name]

    def fn(*inputs):
        if base_kind == "graph":
            a, b = inputs
            base = a * 1.5
        else:
            (b,) = inputs
            base = const(ember, shape, -0.8, 0.9, seed=3)
        v = view_fn(ember, base)
        pre = v.exp() if usage == "before" else None
        op_fn(ember, v, b)
        parts = [base.reshape(-1), v.reshape(-1) * 0.5]
        if pre is not None:
            parts.append(pre.reshape(-1))
        return ember.cat(parts)
    return fn


# Every view with these ops; every op with the last two views (each case costs ~20 ms).
GRADCHECK_OPS = ("mul_", "div_", "pow_", "sigmoid_", "exp_", "clamp_", "copy_",
                 "setitem_basic", "setitem_index", "setitem_mask", "add_alpha")
GRADCHECK_ALL_OPS_VIEWS = ("select_col", "view_of_view")


def _gradcheck_params():
    out = []
    for v, (_, _, kind) in VIEWS.items():
        if kind != "view":
            continue  # torch refuses these (checked in the grid)
        for o, (_, uses_b) in INPLACE.items():
            if o not in GRADCHECK_OPS and v not in GRADCHECK_ALL_OPS_VIEWS:
                continue
            out.append(pytest.param(v, o, "before", "graph", id=f"{v}-{o}-graph"))
            if uses_b and (o in ("mul_", "setitem_mask") or v in GRADCHECK_ALL_OPS_VIEWS):
                out.append(pytest.param(v, o, "after", "plain", id=f"{v}-{o}-plain"))
    return out


@pytest.mark.parametrize("view_name, op_name, usage, base_kind", _gradcheck_params())
def test_gradcheck(view_name, op_name, usage, base_kind):
    shape = VIEWS[view_name][0]
    fn = _gradcheck_fn(view_name, op_name, usage, base_kind)
    base_shape = shape
    with ember.no_grad():
        vshape = tuple(VIEWS[view_name][1](ember, ember.zeros(base_shape, dtype=ember.float64))
                       .shape)
    b = leaf(ember, vshape, 0.5, 1.5, seed=2)
    inputs = (leaf(ember, shape), b) if base_kind == "graph" else (b,)
    assert ember.autograd.gradcheck(fn, inputs)


# == 3. double backward through CopySlices =======================================================
DOUBLE_CASES = {
    "select-mul_": lambda lib, base, b: base[0].mul_(b[0]),
    "t-row-exp_": lambda lib, base, b: base.t()[1].exp_(),
    "slice-pow_": lambda lib, base, b: base[1:].pow_(3),
    "col-div_": lambda lib, base, b: base[:, 2].div_(b[:, 2]),
    "view-sigmoid_": lambda lib, base, b: base.view(-1)[3:9].sigmoid_(),
    "setitem": lambda lib, base, b: base.__setitem__((1, slice(0, 2)), b[1, :2] * b[0, :2]),
    "setitem_mask": lambda lib, base, b: base.__setitem__(
        lib.tensor([[True, False, True, False]] * 3), (b * b)[:, ::2].reshape(-1)),
    # NOTE: not tanh_ here: its saved result would be invalidated by the second in-place op
    # on the same base (one version counter), an error in torch too.
    "two_views": lambda lib, base, b: (base[0].mul_(b[0]), base[1:, 1].add_(b[1:, 1] ** 2)),
}


def _double_fn(lib, case):
    def fn(a, b):
        base = a * a
        DOUBLE_CASES[case](lib, base, b)
        return base
    return fn


@pytest.mark.parametrize("case", list(DOUBLE_CASES))
def test_double_backward(torch, case):
    def body(lib):
        a = leaf(lib, (3, 4))
        b = leaf(lib, (3, 4), 0.5, 1.5, seed=2)
        base = _double_fn(lib, case)(a, b)
        w = const(lib, (3, 4), seed=4)
        ga, gb = lib.autograd.grad((base * w).sum(), (a, b), create_graph=True,
                                   allow_unused=True)
        gb = lib.zeros_like(b) if gb is None else gb
        s = (ga * ga).sum() + (gb * const(lib, (3, 4), seed=6)).sum()
        gga, ggb = lib.autograd.grad(s, (a, b), allow_unused=True)
        return {"base_fn": name(base), "ga": ga, "gb": gb, "ga_fn": name(ga), "gga": gga,
                "ggb": ggb}
    check(body, torch)


def _second_order(fn, a, b, ua, ub, w):
    """Analytical and central-difference d/d(a, b) of S = <dL/da, ua> + <dL/db, ub>."""
    def s_of(a, b):
        with ember.enable_grad():
            ga, gb = ember.autograd.grad((fn(a, b) * w).sum(), (a, b), create_graph=True,
                                         allow_unused=True)
            s = (ga * ua).sum()
            if gb is not None:
                s = s + (gb * ub).sum()
        return s
    analytical = ember.autograd.grad(s_of(a, b), (a, b), allow_unused=True)
    numerical = []
    eps = 1e-6
    for x in (a, b):
        flat = x.detach().view(-1)  # shares memory: perturbs x in place
        rows = []
        for k in range(flat.shape[0]):
            orig = flat[k].item()
            with ember.no_grad():
                flat[k] = orig + eps
            plus = s_of(a, b).item()
            with ember.no_grad():
                flat[k] = orig - eps
            minus = s_of(a, b).item()
            with ember.no_grad():
                flat[k] = orig
            rows.append((plus - minus) / (2 * eps))
        numerical.append(np.array(rows).reshape(tuple(x.shape)))
    return analytical, numerical


@pytest.mark.parametrize("case", list(DOUBLE_CASES))
def test_second_derivatives_numerically(case):
    """A gradgradcheck written out: second derivatives against finite differences."""
    fn = _double_fn(ember, case)
    a, b = leaf(ember, (3, 4)), leaf(ember, (3, 4), 0.5, 1.5, seed=2)
    ua, ub = const(ember, (3, 4), seed=6), const(ember, (3, 4), seed=8)
    analytical, numerical = _second_order(fn, a, b, ua, ub, const(ember, (3, 4), seed=4))
    for an, num in zip(analytical, numerical):
        an = np.zeros_like(num) if an is None else np.array(an.tolist())
        np.testing.assert_allclose(an, num, rtol=1e-4, atol=1e-6)


def test_gradgradcheck_through_copyslices():
    fn = _double_fn(ember, "select-mul_")
    inputs = (leaf(ember, (3, 4)), leaf(ember, (3, 4), 0.5, 1.5, seed=2))
    assert ember.autograd.gradgradcheck(fn, inputs)


# == more semantics: several views, chains, self-referencing updates ==============================
@pytest.mark.parametrize("case", list(SEMANTICS))
def test_semantics(torch, case):
    check(SEMANTICS[case], torch)


# == 4. errors ===================================================================================
@pytest.mark.parametrize("case", list(ERRORS))
def test_errors(torch, case):
    check(ERRORS[case], torch)


# == 5. optimizer-style updates and the version counter ===========================================
def _loss(lib, p):
    return ((p * const(lib, tuple(p.shape))).sin()).sum()


UPDATES = {
    "isub_under_no_grad": lambda lib, p: p.__isub__(0.1 * p.grad),
    "add_alpha_under_no_grad": lambda lib, p: p.add_(p.grad, alpha=-0.1),
    "mul_then_setitem": lambda lib, p: (p.mul_(0.9), p.__setitem__(0, 0.0)),
    "clamp_": lambda lib, p: p.clamp_(-0.2, 0.3),
    "copy_": lambda lib, p: p.copy_(p.grad),
    "zero_grad": lambda lib, p: p.grad.zero_(),
}


@pytest.mark.parametrize("update", list(UPDATES))
def test_optimizer_update_under_no_grad(torch, update):
    def body(lib):
        p = leaf(lib, (2, 3))
        out = []
        for _ in range(3):
            p.grad = None
            _loss(lib, p).backward()
            with lib.no_grad():
                UPDATES[update](lib, p)
            out.append((p.detach().clone(), p.grad, p._version, p.is_leaf, p.requires_grad,
                        name(p), p.grad._version))
        return out
    check(body, torch)


def test_data_updates_invisible_to_version_counter(torch):
    def body(lib):
        p = leaf(lib, (3,))
        loss = (p * p).sum()
        p.data.add_(p.detach(), alpha=-0.5)      # not under no_grad: .data records nothing
        p.data.mul_(2)
        p.data[0] = 7.0
        v0 = p._version
        loss.backward()                          # no version error: .data is invisible
        return v0, p, p.grad, p.is_leaf, name(p), p.data.requires_grad
    check(body, torch)


def test_detach_shares_version_counter(torch):
    def body(lib):
        x = leaf(lib, (3,)) * 2
        d = x.detach()
        d.add_(1)
        d[0] = 3.0
        dd = d.detach()
        dd.zero_()
        return x._version, d._version, dd._version, x, d.requires_grad, name(d)
    check(body, torch)


def test_no_grad_updates_record_no_graph(torch):
    def body(lib):
        p = leaf(lib, (4,))
        g = leaf(lib, (4,), seed=3)
        with lib.no_grad():
            p.mul_(g)
            p.add_(g, alpha=2)
            p[1:3] = g[:2]
            p += g
            p.sub_(g)
            p.div_(2)
            q = p * g
        return p, name(p), p.is_leaf, p._version, q.requires_grad, name(q), g._version
    check(body, torch)


def test_nn_parameter_sgd_step(torch):
    def body(lib):
        weight = lib.nn.Parameter(lib.zeros(2, 3, dtype=lib.float64))
        bias = lib.nn.Parameter(lib.zeros(2, dtype=lib.float64))
        with lib.no_grad():
            weight.copy_(const(lib, (2, 3)))
            bias.fill_(0.1)
        x = const(lib, (4, 3), -1, 1, seed=7)
        for _ in range(2):
            for p in (weight, bias):
                p.grad = None
            ((x @ weight.t() + bias) ** 2).sum().backward()
            with lib.no_grad():
                for p in (weight, bias):
                    p -= 0.05 * p.grad
        return (weight, bias, weight._version, bias._version, weight.is_leaf, name(weight),
                type(weight).__name__)
    check(body, torch)


# == 6. _base, _is_view(), data_ptr(), shared memory ==============================================
VIEW_FNS = {
    "slice": lambda lib, x: x[1:],
    "select": lambda lib, x: x[1],
    "none": lambda lib, x: x[None],
    "t": lambda lib, x: x.t(),
    "view": lambda lib, x: x.view(4, 3),
    "reshape_contig": lambda lib, x: x.reshape(-1),
    "reshape_copy": lambda lib, x: x.t().reshape(-1),
    "view_of_view": lambda lib, x: x[1:].t()[2],
    "view_of_view_of_view": lambda lib, x: x.t()[1:].unsqueeze(0).squeeze(0)[::2],
    "expand": lambda lib, x: x[:1].expand(5, 4),
    "unbind": lambda lib, x: x.unbind(1)[2],
    "split": lambda lib, x: x.split([1, 2])[1],
    "advanced": lambda lib, x: x[[0, 2]],
    "mask": lambda lib, x: x[x > 0],
    "clone": lambda lib, x: x.clone(),
    "contiguous_same": lambda lib, x: x.contiguous(),
    "contiguous_copy": lambda lib, x: x.t().contiguous(),
    "detach": lambda lib, x: x.detach(),
    "data": lambda lib, x: x.data,
    "permute": lambda lib, x: x.permute(1, 0),
    "transpose": lambda lib, x: x.transpose(0, 1),
}


SHARES_MEMORY = set(VIEW_FNS) - {"reshape_copy", "advanced", "mask", "clone", "contiguous_copy"}


@pytest.mark.parametrize("requires_grad", [False, True], ids=["plain", "grad"])
@pytest.mark.parametrize("view", list(VIEW_FNS))
def test_view_metadata(torch, view, requires_grad):
    def body(lib):
        a = leaf(lib, (3, 4), requires_grad=requires_grad)
        x = a * 1 if requires_grad else a
        v = VIEW_FNS[view](lib, x)
        itemsize = 8
        return {
            "is_view": v._is_view(),
            "base_is_root": v._base is x,
            "base_none": v._base is None,
            "same_object": v is x,
            "offset": ((v.data_ptr() - x.data_ptr()) // itemsize if view in SHARES_MEMORY
                       else v.data_ptr() != x.data_ptr()),
            "stride": v.stride(),
            "contiguous": v.is_contiguous(),
            "grad_fn": name(v),
            "requires_grad": v.requires_grad,
        }
    check(body, torch)


@pytest.mark.parametrize("view", [k for k in VIEW_FNS if k not in ("expand",)])
def test_views_share_memory_and_version(torch, view):
    def body(lib):
        x = lib.tensor(np.arange(12.0).reshape(3, 4))
        v = VIEW_FNS[view](lib, x)
        v0 = x._version
        with lib.no_grad():
            v.mul_(-1)
        return x, v, v0, x._version, v._version
    check(body, torch)


def test_base_of_views_is_root_and_version_shared(torch):
    def body(lib):
        x = leaf(lib, (3, 4)) * 1
        a = x[1:]
        b = a.t()
        c = b[1]
        d = c.unsqueeze(0)
        c.add_(1)
        return ([t._base is x for t in (a, b, c, d)], [t._version for t in (x, a, b, c, d)],
                [name(t) for t in (x, a, b, c, d)], x._base is None, x._is_view())
    check(body, torch)


def test_leaf_views_base_is_leaf(torch):
    def body(lib):
        a = leaf(lib, (3, 4))
        v = a.t()[1:]
        return v._base is a, v.is_leaf, v.requires_grad, name(v), v._is_view()
    check(body, torch)


def test_is_view_alias():
    """ember's ``is_view()`` (torch has only ``_is_view()``) answers the same."""
    x = ember.zeros(3, 4)
    for t in (x, x[0], x.t(), x[[0]], x.detach(), x.view(-1)[1:]):
        assert t.is_view() == t._is_view() == (t._base is not None)


# == custom Function with mark_dirty on a view =====================================================
def _dirty_body(on_view):
    def body(lib):
        class MulTwo_(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                x.mul_(2)
                ctx.mark_dirty(x)
                return x

            @staticmethod
            def backward(ctx, g):
                return g * 2

        a = leaf(lib, (3, 4))
        base = a * 1
        target = base[1] if on_view else base
        out = MulTwo_.apply(target)
        fns = (name(base), name(target), out is target, base._version)
        ((base * const(lib, (3, 4))).sum() + out.sum()).backward()
        return fns, base, a.grad
    return body


def test_mark_dirty_on_tensor(torch):
    check(_dirty_body(False), torch)


def test_mark_dirty_on_view(torch):
    check(_dirty_body(True), torch)


# == a saved input that no needed gradient uses is not saved (torch's conditional saving) ========
def test_modifying_unneeded_saved_input_is_fine(torch):
    def body(lib):
        a = leaf(lib, (3, 4))
        base = a * 1.5
        v = base[1:3]
        pre = v * const(lib, (2, 4))  # only d/dv needed: torch saves the constant, not v
        v.mul_(2)
        (pre.sum() + base.sum()).backward()
        return a.grad
    check(body, torch)


def test_modifying_unneeded_saved_input_scalar_other(torch):
    def body(lib):
        a = leaf(lib, (3,))
        b = a * 1
        c = b * 2.0
        b.add_(1)
        c.sum().backward()
        return a.grad
    check(body, torch)


def test_tensor_from_float_list_float64_is_exact():
    assert ember.tensor([0.1], dtype=ember.float64).tolist() == [0.1]


def test_outcome_captures_errors():
    """The runner itself: an exception becomes its type and normalised message."""
    def body(lib):
        raise RuntimeError("torch.float64 bad")
    assert outcome(body, ember) == ("error", "RuntimeError", "ember.float64 bad")
