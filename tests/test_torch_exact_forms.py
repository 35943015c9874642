"""torch's in-place and out= forms: the in-place view ops (squeeze_, t_, ...), resize_,
fill_diagonal_, the torch.xxx_ functions of torch's namespace, and the out= keyword.

Each body runs on PyTorch 2.13 and on ember (``oracle.same``); the tests skip when torch is
not installed.
"""
from __future__ import annotations

import re

import pytest
from oracle import run, same, torch_or_skip

import ember

# -- in-place view ops --------------------------------------------------------------------------
_VIEW_INPLACE = {
    "squeeze_": lambda x: x.squeeze_(),
    "squeeze_dim": lambda x: x.squeeze_(1),
    "squeeze_dims": lambda x: x.squeeze_((1, 0)),
    "unsqueeze_": lambda x: x.unsqueeze_(-1),
    "transpose_": lambda x: x.transpose_(0, 2),
    "swapdims_": lambda x: x.swapdims_(0, 1),
    "swapaxes_": lambda x: x.swapaxes_(2, 0),
    "t_": lambda x: x.reshape(2, 3).t_(),
    "as_strided_": lambda x: x.as_strided_((3,), (2,), 0),
}


@pytest.mark.parametrize("name", sorted(_VIEW_INPLACE))
def test_in_place_view_ops(name):
    def body(t):
        plain = t.arange(6.).reshape(2, 1, 3)
        r = _VIEW_INPLACE[name](plain)
        x = t.arange(6., requires_grad=True)
        y = x.reshape(2, 1, 3) * 1
        y = _VIEW_INPLACE[name](y)  # (t_ works on a reshaped copy)
        (y * t.arange(y.numel(), dtype=t.float32).reshape(y.shape)).sum().backward()
        return (r, r.stride(), r._version, r.is_contiguous(), y, x.grad, y.grad_fn.name(),
                y._version)
    same(body)


def test_in_place_view_op_refusals_and_views():
    def body(t):
        out = []
        leaf = t.ones(2, 1, requires_grad=True)
        try:
            leaf.squeeze_()
        except RuntimeError as e:
            out.append(str(e))
        with t.no_grad():
            leaf.squeeze_()
        out += [leaf, leaf.is_leaf]
        x = t.ones(2, 3, requires_grad=True)
        y = x * 1
        v = y[0]
        v.unsqueeze_(0)
        (v * 2).sum().backward()
        z = t.arange(6.)
        w = z[1:5]
        w.unsqueeze_(0)
        w.mul_(10)
        return out + [v.grad_fn.name(), v._base is y, x.grad, z, w, w._base is z]
    same(body)


def test_t_in_place_names_itself_in_its_refusal():
    # torch's check of t_() names the in-place call; a leaf that requires grad is refused
    # before it (autograd's check comes first)
    def body(t):
        with t.inference_mode():
            inference = t.ones(2, 2, 2)
        out = []
        for x in (t.ones(2, 2, 2, requires_grad=True), inference, t.ones(2, 2, 2) * 1):
            try:
                x.t_()
            except RuntimeError as e:
                out.append(str(e))
        return out
    same(body)


def test_in_place_view_op_under_forward_ad():
    same(_forward_ad_body, check_warnings=False)  # (torch's first forward_ad use warns)


def _forward_ad_body(t):
    fw = t.autograd.forward_ad
    with fw.dual_level():
        x = fw.make_dual(t.arange(6.).reshape(2, 3), t.arange(6.).reshape(2, 3) * 2)
        y = x * 1
        y.t_().unsqueeze_(0)
        return fw.unpack_dual(y).tangent, fw.unpack_dual(y).primal


# -- resize_ ------------------------------------------------------------------------------------
def test_resize():
    def body(t):
        out = []
        for f in (lambda: t.ones(2, requires_grad=True).resize_(3),
                  lambda: (t.ones(2, requires_grad=True) * 1).resize_(2),
                  lambda: t.ones(2).resize_(1, 2), lambda: t.arange(6.).resize_(2, 2),
                  lambda: t.ones(2).resize_as_(t.ones(1, 2)),
                  lambda: t.ones(2, 3).t().resize_(3, 2).stride(),
                  lambda: t.ones(2).resize_(-1)):
            try:
                out.append(f())
            except RuntimeError as e:
                out.append(str(e))
        x = t.arange(4.)
        v = x[1:3]
        v.resize_(1)
        v.fill_(7)
        out += [x, v._base is x, v, v._version]
        x = t.arange(4.)
        x.resize_(6)
        return out + [x[:4], x.shape, x._version]  # (x[4:] is uninitialised)
    same(body)


# -- fill_diagonal_ -----------------------------------------------------------------------------
def test_fill_diagonal():
    def body(t):
        out = [t.zeros(7, 3).fill_diagonal_(1, wrap=True), t.zeros(7, 3).fill_diagonal_(1),
               t.zeros(2, 2, 2).fill_diagonal_(1), t.zeros(3, 7).fill_diagonal_(2., wrap=True),
               t.zeros(4, 4)[::2, ::2].fill_diagonal_(3)]
        for f in (lambda: t.zeros(2, 3, 2).fill_diagonal_(1), lambda: t.zeros(2).fill_diagonal_(1)):
            try:
                f()
            except RuntimeError as e:
                out.append(str(e))
        x = t.ones(3, 2, requires_grad=True)
        y = x * 1
        y.fill_diagonal_(5.)
        y.sum().backward()
        return out + [y, x.grad]
    same(body)


# -- torch.xxx_ ---------------------------------------------------------------------------------
def test_torch_in_place_functions():
    def body(t):
        x = t.tensor([-1.5, 0.5, 2.])
        c = x.clone
        out = [t.relu_(c()), t.sigmoid_(c()), t.clamp_(c(), 0, 1), t.threshold_(c(), 0.6, 9.),
               t.selu_(c()), t.celu_(c()), t.rrelu_(c()), t.dropout_(c(), 0.5, False),
               t.alpha_dropout_(c(), 0.5, False), t.feature_alpha_dropout_(c(), 0.5, False),
               t.fill_(c(), 2.), t.zero_(c()), t.exp_(c()), t.square_(c()), t.xlogy_(c(), 2.),
               t.nan_to_num_(t.tensor([float("nan")])), t.logit_(t.tensor([0.25])),
               t.sinc_(c()), t.negative_(c()), t.abs_(c()), t.clip_(c(), -1, 1),
               t.embedding_renorm_(t.ones(3, 2) * 3, t.tensor([0, 2]), 1., 2.),
               t.detach_(x * 1), t.as_strided_(t.arange(6.), (2,), (2,)),
               t.resize_as_(t.ones(2), t.ones(3))[:2]]  # (the third is uninitialised)
        y = c()
        return out + [t.tanh_(y) is y, t.relu_(x * 1)]
    same(body)


def test_every_torch_in_place_function_ember_can_have_exists():
    torch = torch_or_skip()
    names = {n for n in dir(torch) if n.endswith("_") and not n.startswith("_")
             and callable(getattr(torch, n))}
    # torch.xxx_ that need ops ember does not have (gcd, lcm, ldexp, i0, deg2rad, rad2deg,
    # conj_physical) or sparse tensors (resize_as_sparse_)
    absent = {"conj_physical_", "deg2rad_", "gcd_", "i0_", "lcm_", "ldexp_", "rad2deg_",
              "resize_as_sparse_"}
    assert sorted(n for n in names - absent if not hasattr(ember, n)) == []


# -- out= ---------------------------------------------------------------------------------------
_OUT = {
    "add": (lambda t, x, out: t.add(x, 1, out=out), "f"),
    "exp": (lambda t, x, out: t.exp(x, out=out), "f"),
    "sum_dim": (lambda t, x, out: t.sum(x, 0, out=out), "f"),
    "mean_dim": (lambda t, x, out: t.mean(x, 1, out=out), "f"),
    "cumsum": (lambda t, x, out: t.cumsum(x, 0, out=out), "f"),
    "clamp": (lambda t, x, out: t.clamp(x, 0, 0.5, out=out), "f"),
    "clip": (lambda t, x, out: t.clip(x, 0, 0.5, out=out), "f"),
    "subtract": (lambda t, x, out: t.subtract(x, x, out=out), "f"),
    "matmul": (lambda t, x, out: t.matmul(x, x, out=out), "f"),
    "mm": (lambda t, x, out: t.mm(x, x, out=out), "f"),
    "cat": (lambda t, x, out: t.cat([x, x], out=out), "f"),
    "stack": (lambda t, x, out: t.stack([x, x], out=out), "f"),
    "hstack": (lambda t, x, out: t.hstack([x, x], out=out), "f"),
    "kron": (lambda t, x, out: t.kron(x, x, out=out), "f"),
    "outer": (lambda t, x, out: t.outer(x[0], x[1], out=out), "f"),
    "where": (lambda t, x, out: t.where(x > 0.3, x, x, out=out), "f"),
    "linalg_inv": (lambda t, x, out: t.linalg.inv(x + t.eye(2), out=out), "f"),
    "linalg_vector_norm": (lambda t, x, out: t.linalg.vector_norm(x, out=out), "f"),
    "normalize": (lambda t, x, out: t.nn.functional.normalize(x, out=out), "f"),
    "eq": (lambda t, x, out: t.eq(x, 0.5, out=out), "b"),
    "gt": (lambda t, x, out: t.gt(x, 0.5, out=out), "b"),
    "max_dim": (lambda t, x, out: t.max(x, 1, out=out), "pair"),
    "sort": (lambda t, x, out: t.sort(x, out=out), "pair"),
    "topk": (lambda t, x, out: t.topk(x, 1, out=out), "pair"),
    "zeros": (lambda t, x, out: t.zeros(2, 2, out=out), "f"),
    "arange": (lambda t, x, out: t.arange(4., out=out), "f"),
    "full": (lambda t, x, out: t.full((2, 2), 3., out=out), "f"),
}


def _without_origin(warnings_):
    """Warnings without torch's "(Triggered internally at <C++ file>)" suffix."""
    return [(c, re.sub(r" \(Triggered internally at [^)]*\)", "", m)) for c, m in warnings_]


@pytest.mark.parametrize("name", sorted(_OUT))
def test_out_keyword(name):
    fn, kind = _OUT[name]

    def body(t):
        x = t.tensor([[0.25, 0.5], [0.75, 1.0]])

        def o(dt=t.float32, n=0, rg=False):
            return t.zeros(n, dtype=dt, requires_grad=rg)
        if kind == "pair":
            outs = [lambda: (o(), o(t.long)), lambda: (o(n=5), o(t.long, n=5)),
                    lambda: (o(), o()), lambda: (o(rg=True), o(t.long))]
        elif kind == "b":
            outs = [lambda: o(t.bool), lambda: o(), lambda: o(t.long), lambda: o(rg=True)]
        else:
            outs = [lambda: o(), lambda: o(n=3), lambda: o(t.long), lambda: o(rg=True),
                    lambda: o(t.float64)]
        res = []
        for make in outs:
            out = make()
            try:
                r = fn(t, x, out)
                written = all(a is b for a, b in zip(r, out)) if kind == "pair" else r is out
                res.append((tuple(r) if kind == "pair" else r, written))
            except (RuntimeError, TypeError) as e:
                res.append(str(e))
        xr = x.clone().requires_grad_()
        for grad in (True, False):
            with t.set_grad_enabled(grad):
                try:
                    r = fn(t, xr, (o(), o(t.long)) if kind == "pair" else o())
                    res.append(tuple(r) if kind == "pair" else r)
                except RuntimeError as e:
                    res.append(str(e))
        return res
    torch = torch_or_skip()
    want, got = run(body, torch), run(body, ember)
    assert got.error == want.error
    from oracle import assert_close
    assert_close(want.value, got.value, grad_fn=False)
    assert _without_origin(got.warnings) == _without_origin(want.warnings)
