"""Forward-mode AD (``ember.autograd.forward_ad``): levels, dual tensors, per-op JVPs checked
against reverse mode, views and in-place ops, custom Functions, and torch 2.13's error texts.
"""
import numpy as np
import pytest
from oracle import same

import ember
import ember.autograd.forward_ad as fwAD
from ember.autograd import gradcheck
from ember.autograd.function import Function

rng = np.random.default_rng(0)


def T(*shape, pos=False):
    a = rng.standard_normal(shape)
    return ember.tensor(np.abs(a) + 0.5 if pos else a)


def jvp_forward(f, xs, ts):
    with fwAD.dual_level():
        out = f(*[fwAD.make_dual(x, t) for x, t in zip(xs, ts)])
        return fwAD.unpack_dual(out).tangent


def jvp_reverse(f, xs, ts):
    """J t by reverse mode only (the double-vjp trick on the whole function)."""
    xs = [x.detach().requires_grad_() for x in xs]
    out = f(*xs)
    u = ember.zeros_like(out).requires_grad_()
    gs = ember.autograd.grad(out, xs, u, create_graph=True, allow_unused=True)
    s = sum((g * t).sum() for g, t in zip(gs, ts) if g is not None)
    return ember.autograd.grad(s, u)[0]


CASES = {
    "exp": (lambda x: x.exp(), [(3, 4)]),
    "log": (lambda x: x.log(), [(3, 4, "pos")]),
    "sin": (lambda x: x.sin(), [(3,)]),
    "cos": (lambda x: x.cos(), [(3,)]),
    "tanh": (lambda x: ember.tanh(x), [(3,)]),
    "sigmoid": (lambda x: ember.sigmoid(x), [(3,)]),
    "relu": (lambda x: ember.relu(x), [(5,)]),
    "sqrt": (lambda x: x.sqrt(), [(5, "pos")]),
    "abs": (lambda x: x.abs(), [(5,)]),
    "neg_reciprocal": (lambda x: -x.reciprocal(), [(5, "pos")]),
    "pow_scalar": (lambda x: x ** 3, [(5,)]),
    "pow_tensor": (lambda x, y: x ** y, [(5, "pos"), (5,)]),
    "pow_scalar_base": (lambda x: 2 ** x, [(5,)]),
    "add_broadcast": (lambda x, y: x + y, [(2, 3), (3,)]),
    "sub_alpha": (lambda x, y: ember.sub(x, y, alpha=2), [(2, 3), (3,)]),
    "rsub": (lambda x: 2 - x, [(3,)]),
    "mul_broadcast": (lambda x, y: x * y, [(2, 1), (3,)]),
    "div_broadcast": (lambda x, y: x / y, [(2, 3), (3, "pos")]),
    "maximum": (lambda a, b: ember.maximum(a, b), [(4,), (4,)]),
    "where": (lambda a, b: ember.where(a > 0, a, b), [(4,), (4,)]),
    "clamp": (lambda a: a.clamp(-0.5, 0.5), [(6,)]),
    "sum": (lambda x: x.sum(), [(2, 3)]),
    "sum_dim": (lambda x: x.sum(1, keepdim=True), [(2, 3)]),
    "mean": (lambda x: x.mean(), [(2, 3)]),
    "mean_dim": (lambda x: x.mean(0), [(2, 3)]),
    "max_dim": (lambda x: x.max(1)[0], [(2, 3)]),
    "norm": (lambda a: a.norm(), [(4,)]),
    "mm": (lambda a, b: a @ b, [(2, 3), (3, 4)]),
    "mv": (lambda a, b: a @ b, [(2, 3), (3,)]),
    "dot": (lambda a, b: a @ b, [(3,), (3,)]),
    "bmm": (lambda a, b: a @ b, [(2, 2, 3), (2, 3, 4)]),
    "matmul_broadcast": (lambda a, b: a @ b, [(2, 2, 3), (3, 4)]),
    "transpose": (lambda a: a.t() * 2, [(2, 3)]),
    "reshape_slice": (lambda a: a.reshape(6)[1:4] * 2, [(2, 3)]),
    "index": (lambda a: a[[0, 1, 1]], [(3, 2)]),
    "cat": (lambda a, b: ember.cat([a, b], 1), [(2, 3), (2, 2)]),
    "stack": (lambda a, b: ember.stack([a, b]), [(2, 3), (2, 3)]),
    "unbind": (lambda a: a.unbind(1)[1] * 3, [(2, 3)]),
    "split": (lambda a: a.split(2)[1] * 3, [(4, 3)]),
    "expand": (lambda a: a.expand(3, 2) + 0, [(2,)]),
    "softmax_composite": (lambda a: a.exp() / a.exp().sum(1, keepdim=True), [(2, 3)]),
}


def _inputs(specs):
    return [T(*[d for d in s if d != "pos"], pos="pos" in s) for s in specs]


@pytest.mark.parametrize("name", sorted(CASES))
def test_jvp_equals_reverse_mode(name):
    f, specs = CASES[name]
    xs = _inputs(specs)
    ts = [ember.tensor(rng.standard_normal(tuple(x.shape))) for x in xs]
    fwd = jvp_forward(f, xs, ts)
    rev = jvp_reverse(f, xs, ts)
    assert fwd is not None and fwd.shape == rev.shape and fwd.dtype == rev.dtype
    np.testing.assert_allclose(fwd.numpy(), rev.numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", ["exp", "tanh", "sigmoid", "div_broadcast", "mm", "sum_dim",
                                  "pow_tensor", "mean_dim", "relu", "sub_alpha"])
def test_explicit_rules_equal_derived_rules(name, monkeypatch):
    """An op's explicit @jvp rule gives what the rule derived from its grad formulas gives."""
    from ember._ops.registry import REGISTRY
    f, specs = CASES[name]
    xs = _inputs(specs)
    ts = [ember.tensor(rng.standard_normal(tuple(x.shape))) for x in xs]
    explicit = jvp_forward(f, xs, ts)
    for op in list(REGISTRY.values()):
        if "jvp_rules" in op.__dict__:
            monkeypatch.delitem(op.__dict__, "jvp_rules")
    import ember._ops.pointwise as pw
    for name_ in ("pow_tensor", "pow_scalar", "pow_scalar_base"):
        op = getattr(pw, name_)
        if "jvp_rules" in op.__dict__:
            monkeypatch.delitem(op.__dict__, "jvp_rules")
    derived = jvp_forward(f, xs, ts)
    np.testing.assert_allclose(explicit.numpy(), derived.numpy(), rtol=1e-12, atol=1e-12)


def test_hot_ops_have_explicit_rules():
    import ember._ops.linalg as la
    import ember._ops.pointwise as pw
    import ember._ops.reduction as rd
    for op in (pw.add, pw.sub, pw.mul, pw.div, pw.exp, pw.log, pw.tanh, pw.sigmoid, pw.relu,
               pw.pow_scalar, pw.pow_tensor, la.mm, la.mv, rd.sum_all, rd.sum_dim, rd.mean_all,
               rd.mean_dim):
        assert op.__dict__.get("jvp_rules"), op.name


@pytest.mark.parametrize("f", [lambda a: (a.exp() * a.sin()).sum(0),
                               lambda a: a.tanh() @ a,
                               lambda a: ember.sigmoid(a).log() / (a * a + 1)])
def test_gradcheck_check_forward_ad(f):
    x = ember.tensor(rng.standard_normal((3, 3)), requires_grad=True)
    assert gradcheck(f, (x,), check_forward_ad=True)
    assert gradcheck(f, (x,), check_forward_ad=True, check_backward_ad=False)


def test_tangent_is_differentiable_in_reverse_mode():
    """Forward-over-reverse: the tangent records a graph when grad mode is on."""
    x = ember.tensor([0.5, 1.0, 2.0], dtype=ember.float64, requires_grad=True)
    t = ember.tensor([1.0, 0.0, 1.0], dtype=ember.float64)
    with fwAD.dual_level():
        y = (fwAD.make_dual(x, t) ** 3).sum()
        tangent = fwAD.unpack_dual(y).tangent
    (g,) = ember.autograd.grad(tangent, x)
    np.testing.assert_allclose(g.numpy(), 6 * x.detach().numpy() * t.numpy())


def test_no_grad_tangent_records_nothing():
    x = ember.tensor([0.5, 1.0], requires_grad=True)
    with fwAD.dual_level(), ember.no_grad():
        out = fwAD.make_dual(x, ember.ones(2)).sin()
        assert fwAD.unpack_dual(out).tangent.grad_fn is None


def test_level_exit_deletes_tangents():
    with fwAD.dual_level():
        d = fwAD.make_dual(ember.ones(2), ember.ones(2))
        y = d * 2
        assert fwAD.unpack_dual(y).tangent is not None
    assert fwAD.unpack_dual(y).tangent is None
    assert fwAD.unpack_dual(d).tangent is None
    assert "tangent" not in repr(y)


def test_views_share_the_base_tangent():
    with fwAD.dual_level():
        base = fwAD.make_dual(ember.zeros(2, 3), ember.zeros(2, 3))
        row = base[0]
        row.mul_(fwAD.make_dual(ember.full((3,), 2.0), ember.ones(3)))
        assert fwAD.unpack_dual(base).tangent.tolist() == [[0, 0, 0], [0, 0, 0]]
        view = base.t()
        base.add_(fwAD.make_dual(ember.ones(2, 3), ember.full((2, 3), 5.0)))
        assert fwAD.unpack_dual(view).tangent.tolist() == [[5, 5]] * 3


def test_decorator_form():
    @fwAD.dual_level()
    def f():
        return fwAD.unpack_dual(fwAD.make_dual(ember.ones(1), ember.ones(1)) * 3).tangent
    assert f().tolist() == [3.0]
    assert fwAD._current_level == -1


# -- compared with torch ------------------------------------------------------------------------
def _errors(torch):
    fw = torch.autograd.forward_ad
    out = []

    def attempt(fn):
        try:
            out.append(fn())
        except Exception as e:  # noqa: BLE001
            out.append((type(e).__name__, str(e).replace("torch.", "ember.")))
    x, t = torch.tensor([1.0, 2.0, 3.0]), torch.tensor([1.0, 0.0, 0.0])
    attempt(lambda: fw.make_dual(x, t))
    attempt(lambda: fw.exit_dual_level())
    with fw.dual_level() as level:
        out.append(level)
        attempt(fw.enter_dual_level)
        attempt(lambda: fw.make_dual(x, torch.ones(2)))
        attempt(lambda: fw.make_dual(torch.ones(3, dtype=torch.long), torch.ones(3)))
        attempt(lambda: fw.make_dual(x, torch.ones(3, dtype=torch.long)))
        d = fw.make_dual(x, t)
        attempt(lambda: fw.make_dual(d, t))
        attempt(lambda: fw.exit_dual_level(level=5))
    out.append(fw._current_level)
    return out


def test_errors_as_torch():
    same(_errors, check_warnings=False)  # torch warns while loading its jvp decompositions


def _values(torch):
    fw = torch.autograd.forward_ad
    gen = np.random.default_rng(1)
    x = torch.tensor(gen.standard_normal((2, 3)), requires_grad=True)
    w = torch.tensor(gen.standard_normal((3, 2)))
    t = torch.tensor(gen.standard_normal((2, 3)))
    with fw.dual_level():
        d = fw.make_dual(x, t)
        y = torch.tanh(d @ w).exp().sum(0) / 3 - d.mean()
        p, tan = fw.unpack_dual(y)
        plain = fw.unpack_dual(w)
        z = fw.make_dual(torch.ones(2, 3), torch.zeros(2, 3))
        z[1] = d[0].detach() * 0 + fw.make_dual(torch.ones(3), torch.ones(3))
        zt = fw.unpack_dual(z).tangent
        text = repr(fw.make_dual(torch.tensor([1.0, 2.0]), torch.tensor([0.5, 0.0])))
        det = fw.unpack_dual(d.detach()).tangent
    return p, tan, plain.tangent, type(plain).__name__, plain._fields, zt, text, det


def test_values_as_torch():
    same(_values, rtol=1e-10, atol=1e-12, grad_fn=False, check_warnings=False)


def _custom_function(torch):
    fw = torch.autograd.forward_ad

    class Scale(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, y, k):
            ctx.save_for_forward(x, y)
            ctx.k = k
            seen = fw.unpack_dual(x).tangent
            return x * y * k, seen

        @staticmethod
        def backward(ctx, g, _):
            return g, g, None

        @staticmethod
        def jvp(ctx, xt, yt, kt):
            x, y = ctx.saved_tensors
            return (xt * y + yt * x) * ctx.k, None

    class NoJvp(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    out = []
    with fw.dual_level():
        x = fw.make_dual(torch.tensor([1.0, 2.0]), torch.tensor([1.0, -1.0]))
        y = torch.tensor([3.0, 4.0])
        o, seen = Scale.apply(x, y, 2)
        out += [fw.unpack_dual(o), seen]
        try:
            NoJvp.apply(x)
        except NotImplementedError as e:
            out.append(str(e))
        out.append(fw.unpack_dual(NoJvp.apply(y)).tangent)
    return out


def test_custom_function_jvp_as_torch():
    same(_custom_function, check_warnings=False)


def test_custom_function_jvp_matches_reverse():
    class Cube(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            ctx.save_for_forward(x)
            return x ** 3

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * 3 * x ** 2

        @staticmethod
        def jvp(ctx, t):
            (x,) = ctx.saved_tensors
            return t * 3 * x ** 2

    x = ember.tensor(rng.standard_normal(4), requires_grad=True)
    assert gradcheck(Cube.apply, (x,), check_forward_ad=True)


def test_unpack_dual_primal_is_torchs_fw_primal_view():
    # inside a dual level the primal is always a fresh alias (torch's _fw_primal), whose node
    # is torch's generic C++ Identity, with or without a tangent; under no_grad a view with
    # no node that still requires grad
    def body(t):
        fw = t.autograd.forward_ad
        x = t.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
        y = x * 2
        out = []
        with fw.dual_level():
            d = fw.make_dual(y, t.ones(2, 2))
            for v in (d.sin(), d, y, x, t.tensor(3.0)):
                p, _ = fw.unpack_dual(v)
                fn = p.grad_fn
                out.append((p is v, p._is_view(), p._base is v, p.requires_grad, p._version,
                            None if fn is None else (fn.name(), type(fn).__name__,
                                                     [f.name() for f, _ in fn.next_functions])))
            with t.no_grad():
                p, _ = fw.unpack_dual(d)
                out.append((p._is_view(), p.grad_fn is None, p.requires_grad))
            primal, _ = fw.unpack_dual(d.exp())
        primal.sum().backward()
        return out, x.grad
    same(body, check_warnings=False)  # (torch warns about torch.jit while it loads forward AD)


_DERIVED = {
    "logsumexp": lambda t, d: t.logsumexp(d, -1),
    "logsumexp_keepdim": lambda t, d: t.logsumexp(d.reshape(2, 2), 1, keepdim=True),
    "prod": lambda t, d: d.reshape(1, 4).prod(-2),
    "stack": lambda t, d: t.stack([d, d]),
    "sum": lambda t, d: d.sum(),
}


@pytest.mark.parametrize("name", sorted(_DERIVED))
def test_tangent_is_a_fresh_tensor(name):
    # a non-view op's tangent is the result of its formula: no view, at the version torch's
    # formula leaves (logsumexp's divides in place)
    def body(t):
        with t.no_grad():
            p, tan = _unpacked(t, _DERIVED[name], t.tensor([1.51, 0.62, -0.3, 2.0]),
                               t.tensor([0.66, -1.83, 0.5, 1.0]))
        return p, tan, tan._is_view(), tan._version
    same(body, check_warnings=False)


def _unpacked(t, f, primal, tangent):
    """``(primal, tangent)`` of ``f(t, dual)``, the dual tensor made of the two given."""
    fw = t.autograd.forward_ad
    with fw.dual_level():
        return tuple(fw.unpack_dual(f(t, fw.make_dual(primal, tangent))))


def _mixed_dtype_loss_jvp(loss, dtypes, tangents):
    def body(torch):
        fw = torch.autograd.forward_ad
        x = torch.tensor([0.5, -1.0, 2.0, 0.1], dtype=getattr(torch, dtypes[0]))
        y = torch.tensor([0.2, 0.3, -0.4, 0.9], dtype=getattr(torch, dtypes[1]))
        with fw.dual_level():
            if tangents in ("input", "both"):
                x = fw.make_dual(x, torch.linspace(-1, 1, 4, dtype=x.dtype))
            if tangents in ("target", "both"):
                y = fw.make_dual(y, torch.linspace(0.5, 2, 4, dtype=y.dtype))
            primal, tangent = fw.unpack_dual(getattr(torch.nn.functional, loss)(x, y))
            return primal, tangent
    return body


MIXED = [("float32", "float64"), ("float64", "float32"), ("float16", "float32")]


@pytest.mark.parametrize("tangents", ["input", "target", "both"])
@pytest.mark.parametrize("dtypes", MIXED)
@pytest.mark.parametrize("loss", ["huber_loss", "binary_cross_entropy_with_logits"])
def test_loss_jvp_with_mixed_dtypes(loss, dtypes, tangents):
    """huber_loss's tangent formula fails in target's dtype first (torch computes target's
    term first); binary_cross_entropy_with_logits' tangent keeps its formulas' dtype (float64
    for a float64 input, where the loss is float32)."""
    same(_mixed_dtype_loss_jvp(loss, dtypes, tangents), rtol=1e-6, atol=1e-6,
         check_warnings=False)


def test_ops_of_inference_tensors_only_get_no_tangent():
    # torch's autograd layer (forward AD's formulas too) does not see a call whose tensors are
    # all inference tensors: a dual made of one keeps its tangent, what is computed from it
    # alone has none (and nothing is saved, so nothing refuses)
    def body(t):
        fw = t.autograd.forward_ad
        with t.inference_mode():
            x = t.tensor([0.5, 2.0])
        y = t.tensor([1.0, -1.0])
        with fw.dual_level():
            d = fw.make_dual(x, t.tensor([1.0, 0.5]))
            out = [fw.unpack_dual(d).tangent, d.is_inference()]
            with t.no_grad():
                out += [fw.unpack_dual(t.atan2(d, x)).tangent, fw.unpack_dual(d.expm1()).tangent,
                        fw.unpack_dual(t.gather(d, 0, t.tensor([1, 0]))).tangent,
                        fw.unpack_dual(d * y).tangent]
            out.append(fw.unpack_dual(d.relu()).tangent)
        return out
    same(body, check_warnings=False)


@pytest.mark.parametrize("call", ["d * 0.63", "0.5 + d", "torch.add(d, 2.0, alpha=0.5)",
                                  "d / 2", "d - 1", "2 - d", "torch.mul(d, 2)", "2 * d",
                                  "d ** 2", "d.clamp(0.1)", "d * y", "2 / d", "d.lerp(y, 0.5)"])
def test_a_python_number_operand_is_a_normal_tensor_beside_an_inference_dual(call):
    # torch wraps the number of add, sub, mul and div (their Tensor overloads) in a normal
    # tensor, so its autograd layer sees the call and the result has a tangent; ops taking a
    # Scalar (pow, clamp, lerp's weight) or only inference tensors give none
    def body(t):
        fw = t.autograd.forward_ad
        with t.inference_mode():
            x, y = t.tensor([0.76, 0.33]) * 2, t.tensor([0.5, 0.25])
        with fw.dual_level():
            d = fw.make_dual(x, t.tensor([1.0, -0.84]))
            with t.no_grad():
                p, tangent = fw.unpack_dual(eval(call, {"torch": t, "d": d, "y": y}))
        return p, tangent, p.is_inference()
    same(body, check_warnings=False)


@pytest.mark.parametrize("call", [
    "F.pad(d, (1, 1))", "F.pad(d, (1, 2), value=3.0)", "F.pad(d, (0, 0))", "F.pad(d, (-1, 0))",
    "F.pad(d, (-1, 2))", "F.pad(d, (1, 1), mode='reflect')", "F.pad(d, (1, 1), mode='replicate')",
    "F.pad(d, (1, 1), mode='circular')", "torch.nn.ZeroPad2d(1)(d)", "d.clone()",
    "d.clone().fill_(1.0)", "d.to(torch.float64)", "d.float_power(2)", "torch.diag_embed(d)",
    "torch.alias_copy(d)", "d.exp()", "torch.cat([d, d])"])
def test_a_kernel_copying_an_inference_dual_carries_its_tangent(call):
    # no autograd layer runs for a call on an inference dual, but torch's kernels that copy
    # it into their fresh result with copy_ (constant padding, clone, casts) run copy_'s,
    # which carries the tangent (and shows in _version); a dual made in inference mode, or of
    # an inference tangent, has no tangent to carry
    def body(t):
        fw, out = t.autograd.forward_ad, []
        for inference in ("p", "pt", "pd", "ptd", "t"):
            with t.inference_mode("p" in inference):
                x = t.arange(24.0).reshape(2, 3, 4) / 7
            with t.inference_mode("t" in inference):
                v = t.full((2, 3, 4), 2.0)
            with fw.dual_level():
                with t.inference_mode("d" in inference):
                    d = fw.make_dual(x, v)
                r = eval(call, {"torch": t, "F": t.nn.functional, "d": d})
                out.append((fw.unpack_dual(r).tangent, r.is_inference(),
                            None if r.is_inference() else r._version))
        return out
    same(body, check_warnings=False)


_INDEX = "torch.tensor([[[0, 1, 2, 0]]])"


@pytest.mark.parametrize("call", [
    "d.new_zeros(2, 3)", "d.new_ones(3)", "d.new_full((2,), 1.5)", "d.new_empty(2).zero_()",
    "d.new_tensor([1.0])", "torch.rot90(d, 1, [1, 2])", "torch.rot90(d, 2, [1, 2])",
    "torch.rot90(d, 0, [0, 1])", "torch.block_diag(d[0], d[1])",
    "torch.block_diag(d[0], torch.ones(2, 2))", f"d.scatter(1, {_INDEX}, d[:1, :1])",
    f"d.scatter(1, {_INDEX}, 2.0)", f"d.scatter_add(1, {_INDEX}, d[:1, :1])",
    f"d.scatter_reduce(1, {_INDEX}, d[:1, :1], 'sum')",
    f"d.scatter_reduce(1, {_INDEX}, d[:1, :1] * 2, 'amax')",
    f"d.scatter_reduce(1, {_INDEX}, d[:1, :1], 'mean', include_self=False)",
    f"d.clone().scatter_add_(1, {_INDEX}, d[:1, :1])",
    "d.index_add(2, torch.tensor([0, 3]), d[..., :2])",
    "d.clone().index_add_(2, torch.tensor([0, 3]), d[..., :2], alpha=2)",
    "d.index_copy(2, torch.tensor([0, 3]), d[..., :2])",
    "d.index_fill(2, torch.tensor([1]), 3.0)", "d.masked_scatter(d > 1, d * 2)",
    "torch.index_put(d, (torch.tensor([1]),), d[:1])", "torch.copysign(d, -d)",
    "torch.fmod(d, 2)", "torch.remainder(d, 1.5)", "torch.xlogy(d, 2.0)", "torch.xlogy(2.0, d)",
    "torch.special.xlog1py(d, 2.0)", "torch.special.ndtr(d)", "d ** 2", "torch.cov(d[0])",
    "torch.isnan(d)", "torch.std(d, 1)", "torch.median(d)", "torch.sum(d)"])
def test_shape_and_scatter_ops_of_inference_duals(call):
    # as above: an inference dual's call runs no autograd layer (no tangent) unless its kernel
    # copies the dual with copy_; a normal dual's call gets torch's tangent
    def body(t):
        fw, out = t.autograd.forward_ad, []
        for inference in ("", "p", "pt", "pd", "ptd", "t"):
            with t.inference_mode("p" in inference):
                x = t.arange(24.0).reshape(2, 3, 4) / 7
            with t.inference_mode("t" in inference):
                v = t.arange(24.0).reshape(2, 3, 4) - 11
            with fw.dual_level():
                with t.inference_mode("d" in inference):
                    d = fw.make_dual(x, v)
                r = eval(call, {"torch": t, "d": d})
                out.append((fw.unpack_dual(r).tangent, r.is_inference()))
        return out
    same(body, check_warnings=False)


@pytest.mark.parametrize("call", [
    "torch.abs(d)", "d.abs()", "torch.isinf(d)", "torch.isfinite(d)", "torch.nan_to_num(d)",
    "d.nan_to_num(posinf=1.0)", "torch.mean(d)", "d.mean(1)", "torch.std(d)", "torch.var(d)",
    "torch.logsumexp(d, 1)", "torch.cummax(d, 1)", "torch.cummin(d, 0)", "d.kthvalue(1, 1)",
    "torch.median(d, 1)", "torch.nanmedian(d, 0)", "torch.nn.functional.hardtanh(d)",
    "torch.nn.functional.relu6(d)", "torch.frexp(d)", "torch.deg2rad(d)", "torch.rad2deg(d)",
    "torch.renorm(d, 2, 0, 1.0)"])
def test_kernels_writing_through_an_out_function_refuse_an_inference_dual(call):
    # torch's kernels of these ops write their result with an out= function (nan_to_num_out,
    # mean's sum_out, ...), whose autograd layer refuses a dual input: an inference primal
    # with a tangent, outside inference mode; in inference mode, or without a tangent, they
    # run (and in-place forms, whose layer is their own, get a tangent)
    def body(t):
        fw, out = t.autograd.forward_ad, []
        with t.inference_mode():
            x = t.tensor([[3.0, 1.0, 2.0], [0.5, 5.0, 4.0]])
        with fw.dual_level():
            for inference_mode, tangent in ((False, True), (True, True), (False, False)):
                d = fw.make_dual(x, t.ones(2, 3)) if tangent else x
                with t.inference_mode(inference_mode):
                    r = eval(call, {"torch": t, "d": d})
                r = r[0] if isinstance(r, tuple) else r
                out.append((r, fw.unpack_dual(r).tangent))
        return out
    same(body, check_warnings=False)


def test_sort_of_an_inference_dual_has_no_tangent():
    # torch's sort kernel copies its input into the values (copy_ carries the tangent) and
    # sorts them in place without autograd: its tangent is the input's, unsorted, a wrong
    # derivative; ember gives none, as for the other calls torch's layer does not see
    torch = pytest.importorskip("torch")
    for lib in (torch, ember):
        fw = lib.autograd.forward_ad
        with lib.inference_mode():
            x = lib.tensor([3.0, 1.0, 2.0])
        with fw.dual_level():
            d = fw.make_dual(x, lib.tensor([10.0, 20.0, 30.0]))
            tangent = fw.unpack_dual(lib.sort(d)[0]).tangent
        assert (tangent is None) == (lib is ember)
        if lib is torch:
            assert tangent.tolist() == [10.0, 20.0, 30.0]  # (unsorted: not the derivative)


def test_ops_in_inference_mode_get_no_tangent():
    # in inference mode no autograd layer runs: an op of a normal dual tensor, a view of it or
    # an in-place write into it computes no tangent (the one it had stays)
    def body(t):
        fw = t.autograd.forward_ad
        x = t.tensor([0.76, 0.33])
        with fw.dual_level():
            d = fw.make_dual(x, t.tensor([1.0, -0.84]))
            e = fw.make_dual(x.clone(), t.tensor([1.0, -0.84]))
            with t.inference_mode():
                out = [fw.unpack_dual(r).tangent for r in (d * 2, d.exp(), d[0], d.view(2, 1))]
                e.mul_(2)
            out += [fw.unpack_dual(e), e._version]
        return out
    same(body, check_warnings=False)


@pytest.mark.parametrize("call", ["d.expm1()", "d.sin()", "torch.tanh(d) * -0.43", "d.sum()",
                                  "d.sigmoid_()", "torch.func.jvp(torch.expm1, (x,), (v,))[1]"])
def test_bfloat16_tangents(call):
    # a bfloat16 result has a tangent as a float32 one has (its formula's, rounded), where
    # it had none (and torch.func.jvp gave zeros)
    def body(t):
        fw = t.autograd.forward_ad
        x = t.tensor([1.5, -0.5, 0.25], dtype=t.bfloat16)
        v = t.tensor([-1.19, -1.74, 0.5], dtype=t.bfloat16)
        with fw.dual_level():
            d = fw.make_dual(x.clone(), v)
            r = eval(call, {"torch": t, "d": d, "x": x, "v": v})
            return fw.unpack_dual(r)
    same(body, rtol=1e-2, atol=1e-3, check_warnings=False)  # (a bfloat16 ulp is 2**-8)


def test_relu_tangent_at_nan():
    # torch's relu JVP is threshold_backward of the tangent: kept where the result is not <= 0
    def body(t):
        fw = t.autograd.forward_ad
        with fw.dual_level():
            d = fw.make_dual(t.tensor([float("nan"), -1.0, 2.0, 0.0]),
                             t.tensor([1.5, 1.0, 1.0, 1.0]))
            return (fw.unpack_dual(t.relu(d)).tangent,
                    fw.unpack_dual(t.nn.functional.relu(d)).tangent)
    same(body, check_warnings=False)


_ZERO_TERMS = {
    "add_alpha": lambda t, d, y: t.add(d, y, alpha=1.5),
    "add_alpha_number": lambda t, d, y: t.add(d, 2.0, alpha=-0.5),
    "add_alpha_int": lambda t, d, y: t.add(d, y, alpha=2),
    "add_other_dual": lambda t, d, y: t.add(y, d, alpha=1.5),
    "sub_alpha": lambda t, d, y: t.sub(d, y, alpha=1.5),
    "rsub_alpha": lambda t, d, y: t.rsub(y, d, alpha=1.5),
    "addcmul": lambda t, d, y: t.addcmul(d, y, y, value=-1.64),
    "addcmul_one": lambda t, d, y: t.addcmul(d, y, y, value=1.0),
    "addcdiv": lambda t, d, y: t.addcdiv(y, d, y, value=1.5),
    "addcdiv_": lambda t, d, y: y.addcdiv_(y, d, value=-0.5),
    "addcmul_dims": lambda t, d, y: t.addcmul(d, y, y.expand(2), value=1.5),
}


@pytest.mark.parametrize("name", sorted(_ZERO_TERMS))
def test_tangent_dtype_of_a_scaled_zero_term(name):
    # torch's formulas scale an input's tangent by alpha or value; an input without one is a
    # ZeroTensor there, whose product with a float is float64: so is a 0-dim result's tangent
    def body(t):
        fw = t.autograd.forward_ad
        y = t.tensor(0.5)
        with fw.dual_level():
            d = fw.make_dual(t.tensor(1.87), t.tensor(0.27))
            p, tan = fw.unpack_dual(_ZERO_TERMS[name](t, d, y))
            return p, tan, tan._version
    same(body, check_warnings=False)


_OWN_TANGENT = {
    "add": lambda t, d, y: t.add(d, y),
    "add_broadcast": lambda t, d, y: d + y.reshape(1, 1),
    "sub_broadcast": lambda t, d, y: t.sub(d, y.reshape(1)),
    "add_": lambda t, d, y: y.add_(d),
    "copy_": lambda t, d, y: y.copy_(d),
    "mul_": lambda t, d, y: y.mul_(d),
    "alias": lambda t, d, y: d[...],
    "movedim_0d": lambda t, d, y: t.movedim(d, -1, 0),
}


@pytest.mark.parametrize("name", sorted(_OWN_TANGENT))
def test_tangent_identity(name):
    # add's tangent is a new tensor (torch sums self_t with the other input's zeros), also
    # where growing dimensions of one element keeps it contiguous; an in-place op on a tensor
    # without a tangent gives it the formula's result (version 0); alias (x[...], movedim of
    # a 0-dim tensor) passes on its input's tangent itself
    def body(t):
        fw = t.autograd.forward_ad
        y = t.tensor(0.5)
        with fw.dual_level():
            given = t.tensor(0.27)
            d = fw.make_dual(t.tensor(1.87), given)
            with t.no_grad():
                p, tan = fw.unpack_dual(_OWN_TANGENT[name](t, d, y))
            return (tan, tan._is_view(), tan._version, tan is given,
                    tan is fw.unpack_dual(d).tangent)
    same(body, check_warnings=False)


_AFTER_A_WIDE_TANGENT = {
    "sin": lambda t, d: d.sin(),
    "sum": lambda t, d: d.sum(),
    "mul_self": lambda t, d: d * d,
    "plus_float32": lambda t, d: d + t.tensor([1.5, 2.0]),
    "log_softmax": lambda t, d: d.log_softmax(0),
    "stack": lambda t, d: t.stack([d, d.exp()]),
    "where": lambda t, d: t.where(d > 0, d, d.cos()),
    "tanh_of_half": lambda t, d: d.half().tanh(),
    "abs": lambda t, d: d.abs(),
}


@pytest.mark.parametrize("name", sorted(_AFTER_A_WIDE_TANGENT))
def test_a_wider_tangent_keeps_its_precision(name):
    # torch's formulas are linear in the tangents and promote them with the primals: a float64
    # tangent given to a float32 tensor stays float64 through the ops after it
    same(lambda t: _unpacked(t, _AFTER_A_WIDE_TANGENT[name], t.tensor([0.3, -1.2]),
                             t.tensor([0.55, 1.0], dtype=t.float64)), check_warnings=False)


@pytest.mark.parametrize("index", [[0, 0, 0, 0], [0], [1]])
def test_index_select_of_a_0dim_dual(index):
    # torch refuses more than one index of a 0-dim tensor with a RuntimeError (ember's was an
    # IndexError; difftest 22000711); a 0-dim tangent prints as its number in the repr
    def body(t):
        fw = t.autograd.forward_ad
        with fw.dual_level():
            d = fw.make_dual(t.tensor(0.78), t.tensor(0.25))
            with t.no_grad():
                out = t.index_select(d, -1, t.tensor(index))
            return repr(out), tuple(fw.unpack_dual(out))
    same(body, check_warnings=False)


def test_repr_of_dual_tensors():
    def body(t):
        fw = t.autograd.forward_ad
        with fw.dual_level():
            return (repr(fw.make_dual(t.tensor(0.5), t.tensor(-1.25, dtype=t.float64))),
                    repr(fw.make_dual(t.tensor([0.5, 1.0]), t.tensor([0.0, 2.0]))))
    same(body, check_warnings=False)


_PICKS = {
    "maximum": lambda t, x, y: t.maximum(x, y),
    "minimum": lambda t, x, y: t.minimum(x, y),
    "fmax": lambda t, x, y: t.fmax(x, y),
    "fmin": lambda t, x, y: t.fmin(x, y),
    "clamp_min": lambda t, x, y: t.clamp(x, min=y),
    "clamp_max": lambda t, x, y: t.clamp(x, max=y),
    "clamp_both": lambda t, x, y: t.clamp(x, min=y, max=y + 1),
    "clamp_crossed": lambda t, x, y: t.clamp(x, min=y + 1, max=y),
    "max": lambda t, x, y: x.max() + y.min(),
    "maximum_broadcast": lambda t, x, y: t.maximum(x, y[:1]),
}


@pytest.mark.parametrize("which", ["self", "other", "both"])
@pytest.mark.parametrize("name", sorted(_PICKS))
def test_tangent_of_a_pick_at_nan_and_ties(name, which):
    # torch's forward formulas of maximum, minimum, fmax and clamp compare the primals: where
    # NaN makes no comparison true the tangent is the other input's (a signed zero without
    # one), a tie halves maximum's; max()'s is the mean tangent of the elements equal to the
    # result, NaN for a NaN result (ember's came from the reverse formulas, which differ
    # there; difftest 22000926)
    def body(t):
        fw = t.autograd.forward_ad
        nan = float("nan")
        a = t.tensor([1.0, nan, 2.0, nan, 3.0, -1.0])
        b = t.tensor([nan, 1.0, 2.0, nan, 1.0, 2.0])
        ta = t.tensor([-0.5, 0.25, 0.75, -2.0, 1.5, -3.0])
        tb = t.tensor([0.125, -4.0, 0.5, 8.0, -0.25, 2.5])
        with fw.dual_level():
            x = a if which == "other" else fw.make_dual(a, ta)
            y = b if which == "self" else fw.make_dual(b, tb)
            return fw.unpack_dual(_PICKS[name](t, x, y)).tangent
    same(body, check_warnings=False)


@pytest.mark.parametrize("name", ["maximum", "minimum", "fmax"])
def test_jacfwd_of_a_pick_at_nan(name):
    # (jacfwd's batch of tangents takes the forward formula too, not the reverse one)
    def body(t):
        y = t.tensor([float("nan"), 1.0, 2.0])
        return t.func.jacfwd(lambda v: _PICKS[name](t, v, y))(t.tensor([1.0, float("nan"), 2.0]))
    same(body, check_warnings=False)


@pytest.mark.parametrize("which", ["self", "other", "both"])
def test_copysign_tangent_is_selfs_term_only(which):
    # torch's forward formula reads only self's tangent: with a tangent on other alone the
    # result has none (not zeros)
    def body(t):
        fw = t.autograd.forward_ad
        x, y = t.tensor([1.0, -2.0, 0.0, 3.0]), t.tensor([-1.0, 1.0, -0.0, 0.0])
        with fw.dual_level():
            a = fw.make_dual(x, t.ones(4)) if which != "other" else x
            b = fw.make_dual(y, t.ones(4)) if which != "self" else y
            return fw.unpack_dual(t.copysign(a, b)), t.func.jvp(t.copysign, (x, y), (x, y))
    same(body)


@pytest.mark.parametrize("reduce", ["prod", "mean", "amax"])
def test_index_reduce_refuses_forward_ad(reduce):
    def body(t):
        fw = t.autograd.forward_ad
        x = t.arange(1.0, 13.0).reshape(3, 4)
        with fw.dual_level():
            d = fw.make_dual(x, t.ones(3, 4))
            t.index_reduce(d, 0, t.tensor([0, 2]), x[:2], reduce)
    same(body, check_warnings=False)
    same(lambda t: t.func.jvp(lambda a: a.index_reduce(
        0, t.tensor([0, 2]), t.ones(2, 4), reduce), (t.ones(3, 4),), (t.ones(3, 4),)),
        check_warnings=False)


@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce_prod_tangent_is_the_derivative(include_self):
    # torch gives scatter_reduce(prod) no tangent (docs/gradients.md); ember's is the
    # derivative: central differences of the forward, zeros of self and src included
    rng = np.random.default_rng(0)
    x0 = rng.normal(size=(3, 4))
    x0[0, 1] = x0[2, 2] = 0.0
    t0 = rng.normal(size=(3, 4))
    idx = ember.tensor([[0, 1, 2, 0], [2, 0, 1, 1]])

    def f(x):
        return ember.scatter_reduce(x, 0, idx, x[:2] * 2, "prod", include_self=include_self)
    eps = 1e-6
    numeric = (f(ember.tensor(x0 + eps * t0)) - f(ember.tensor(x0 - eps * t0))) / (2 * eps)
    _, tangent = ember.func.jvp(f, (ember.tensor(x0),), (ember.tensor(t0),))
    np.testing.assert_allclose(tangent.numpy(), numeric.numpy(), atol=1e-6)


def test_xlog1py_derivative_at_a_zero_self():
    # the derivative in self is log1p(other) wherever other > -1, at self == 0 too (ember
    # gave 0 there, backward and forward)
    def body(t):
        x = t.tensor([0.0, 1.0, 0.0, 0.0], requires_grad=True)
        other = t.tensor([2.0, 2.0, -1.0, -3.0])
        (g,) = t.autograd.grad(t.special.xlog1py(x, other).sum(), x)
        (g2,) = t.autograd.grad(t.special.xlog1py(x, 0.5).sum(), x)
        jvp = t.func.jvp(lambda a: t.special.xlog1py(a, other), (x.detach(),), (t.ones(4),))
        return g, g2, jvp
    same(body)


@pytest.mark.parametrize("fn", ["xlogy", "special.xlog1py"])
@pytest.mark.parametrize("other", [float("nan"), -float("inf"), -1.0, -0.5, 1e-300,
                                   float("inf"), 2.0, "nan tensor"])
def test_xlogy_self_derivative_at_zero_for_a_number_other(fn, other):
    # torch's Scalar_Other overloads keep a 0 derivative at self == 0 unless other > bound:
    # for a NaN number too (a NaN tensor gives NaN there); ember gave NaN for a NaN number
    def body(t):
        x = t.tensor([0.0, 1.0], requires_grad=True)
        f = t.special.xlog1py if fn == "special.xlog1py" else t.xlogy
        f(x, t.tensor(float("nan")) if other == "nan tensor" else other).sum().backward()
        return x.grad
    assert same(body, rtol=0, atol=0).error is None


def test_a_dual_of_an_expanded_primal_refuses_a_tangent_of_another_layout():
    """torch lays a tangent out as its primal, copying one of another layout into the
    primal's strides: an expanded primal refuses that write ("more than one element of the
    written-to tensor refers to a single memory location"), so do jvp, jacfwd and hessian of
    it (difftest 29000116: hessian of sum's expanded gradient); a tangent expanded alike is
    kept."""
    def body(torch):
        fw = torch.autograd.forward_ad
        e = torch.tensor([[1.0]], dtype=torch.float64).expand(3, 1)
        out = []
        for make in (lambda: fw.make_dual(e, torch.ones(3, 1, dtype=torch.float64)),
                     lambda: fw.make_dual(e, torch.tensor([[2.0]], dtype=torch.float64)
                                          .expand(3, 1))):
            with fw.dual_level():
                try:
                    out.append(fw.unpack_dual(make()).tangent.stride())
                except RuntimeError as err:
                    out.append(str(err))
        f = lambda v: (torch.cos(v) * 1.78).sum()  # noqa: E731
        for call in (lambda: torch.func.hessian(f)(e), lambda: torch.func.jacfwd(f)(e)):
            try:
                out.append(call())
            except RuntimeError as err:
                out.append(str(err))
        return out
    same(body, check_warnings=False)  # (torch warns of jit.script on its first func call)


def test_jacfwd_inside_a_dual_level_the_user_entered_is_refused():
    """Only one dual level at a time: torch's jacfwd (and hessian) inside ``dual_level()``
    raises "Nested forward mode AD is not supported at the moment", as jvp does; inside a jvp
    transform they compute."""
    def body(torch):
        f = lambda v: (torch.sin(v) * 2.0).sum()  # noqa: E731
        x = torch.tensor([0.5, -1.0])
        with torch.autograd.forward_ad.dual_level():
            try:
                torch.func.jacfwd(f)(x)
            except RuntimeError as err:
                refused = str(err)
        inner = torch.func.jvp(lambda v: torch.func.jacfwd(f)(v), (x,), (torch.ones(2),))
        return refused, inner
    same(body, check_warnings=False)


_DUAL_LAYOUTS = {
    "expanded": "t.ones(3, 1), t.tensor([[2.]]).expand(3, 1)",
    "slice": "t.ones(3), t.arange(6.)[1:4]",
    "transposed": "t.ones(2, 3), t.arange(6.).reshape(3, 2).t()",
    "same": "t.ones(2, 3), t.arange(6.).reshape(2, 3)",
    "transposed primal": "t.ones(3, 2).t(), t.arange(6.).reshape(2, 3)",
    "size-1 dim": "t.ones(3, 1), t.arange(6.).reshape(3, 2)[:, :1]",
    "requires grad": "t.ones(3, 1), t.tensor([[2.]], requires_grad=True).expand(3, 1)",
    "view primal": "t.ones(6)[2:5], t.arange(3.)",
}


@pytest.mark.parametrize("case", _DUAL_LAYOUTS)
def test_make_dual_lays_the_tangent_out_as_its_primal(case):
    # torch copies a tangent of another layout (strides, offset, storage size) into the
    # primal's, a view primal's into a view of a new base; ember kept it as given
    def body(t):
        primal, tangent = eval(_DUAL_LAYOUTS[case], {"t": t})  # noqa: S307 - the case
        with t.autograd.forward_ad.dual_level():
            dual = t.autograd.forward_ad.make_dual(primal, tangent)
            kept = t.autograd.forward_ad.unpack_dual(dual).tangent
            return (kept, kept.stride(), kept.storage_offset(), kept is tangent, kept._version,
                    kept.grad_fn is not None and kept.grad_fn.name())
    same(body, check_warnings=False)  # (torch's first forward-AD call warns about jit.script)


def test_batched_tangents_of_an_offset_as_strided_are_each_rows_own():
    # jacfwd and forward-mode jacobian push a batch of tangents; as_strided's formula reads
    # storage offsets, so each row must sit on a storage of its own (it read row 0 for all)
    def body(torch):
        x = torch.arange(12., dtype=torch.float64)
        f = lambda v: torch.as_strided(v, (3, 3), (2, 1), 1)  # noqa: E731
        return (torch.func.jacfwd(f)(x),
                torch.autograd.functional.jacobian(f, x, vectorize=True,
                                                   strategy="forward-mode"))
    # (torch's first call of the forward-mode jacobian warns about torch.jit, whatever the op)
    same(body, rtol=0, atol=0, check_warnings=False)


@pytest.mark.parametrize("upper", [False, True])
def test_cholesky_inverse_tangent_is_the_derivative(upper):
    """cholesky_inverse's tangent is the derivative of (L Lᴴ)⁻¹ (central differences agree,
    and it is the adjoint of the reverse-mode gradient). torch 2.13's forward formula gives
    another value for it (about 0.05 off here) while its backward agrees: ember follows the
    mathematics, not that formula."""
    rng = np.random.default_rng(0)
    L = np.tril(rng.standard_normal((3, 3))) + 3 * np.eye(3)
    T = np.tril(rng.standard_normal((3, 3)))
    V = rng.standard_normal((3, 3))
    if upper:
        L, T = L.T.copy(), T.T.copy()

    def inverse_of_product(a):
        return np.linalg.inv(a.T @ a if upper else a @ a.T)
    h = 1e-6
    central = (inverse_of_product(L + h * T) - inverse_of_product(L - h * T)) / (2 * h)
    f = lambda z: ember.cholesky_inverse(z, upper=upper)  # noqa: E731
    tangent = ember.func.jvp(f, (ember.tensor(L),), (ember.tensor(T),))[1].numpy()
    np.testing.assert_allclose(tangent, central, atol=1e-8)
    x = ember.tensor(L, requires_grad=True)
    grad, = ember.autograd.grad(f(x), x, ember.tensor(V))
    np.testing.assert_allclose((tangent * V).sum(), (grad.numpy() * T).sum(), rtol=1e-12)


def test_logcumsumexp_tangent():
    # (the tangent derived from its reverse formula was NaN everywhere: that formula takes
    # log|grad| at grad = 0; forward against reverse could not see it, both were NaN)
    def body(torch):
        F = torch.func
        x = torch.tensor(rng.standard_normal((2, 4)) * 3)
        v = torch.tensor(rng.standard_normal((2, 4)))
        f = lambda z: torch.logcumsumexp(z, 1)  # noqa: E731
        return (F.jvp(f, (x,), (v,)), F.jvp(f, (x[0, 0],), (v[0, 0],)),
                F.jvp(lambda y: F.jvp(f, (y,), (v,))[1], (x,), (v * 2,)),
                F.jvp(f, (x.float(),), (v.float(),)))
    same(body, rtol=1e-10, check_warnings=False)


@pytest.mark.parametrize("fn", ["xlogy", "special.xlog1py"])
def test_xlogy_tangent_where_the_log_is_nan(fn):
    # torch's tangent is its formula with the tangent for grad: NaN where other is below the
    # log's domain and self != 0 (the tangent derived at grad = 0 read xlogy's own
    # derivative mask there and gave other_t * self / other)
    def body(t):
        f = t.special.xlog1py if fn == "special.xlog1py" else t.xlogy
        x = t.tensor([1.0, 0.0, 2.0, 0.0, 3.0, -1.0], dtype=t.float64)
        y = t.tensor([-1.5, -2.0, 3.0, 0.0, -0.5, float("nan")], dtype=t.float64) - 0.5
        u, v = t.linspace(0.5, 1.5, 6, dtype=t.float64), t.linspace(-1.0, 2.0, 6, dtype=t.float64)
        fw = t.autograd.forward_ad
        with fw.dual_level():
            dual = fw.unpack_dual(f(fw.make_dual(x, u), y)).tangent
        return (t.func.jvp(f, (x, y), (u, v)), t.func.jvp(lambda a: f(a, -2.0), (x,), (u,)),
                t.func.jvp(lambda b: f(2.0, b), (y,), (v,)), dual)
    same(body, check_warnings=False)


@pytest.mark.parametrize("which", ["self", "other", "both"])
def test_zeta_refuses_forward_ad(which):
    def body(t):
        x, q = t.tensor([2.0, 3.0], dtype=t.float64), t.tensor([1.5, 2.5], dtype=t.float64)
        f = {"self": lambda a: t.special.zeta(a, 2.0), "other": lambda b: t.special.zeta(2.0, b),
             "both": lambda b: t.special.zeta(x, b)}[which]
        return t.func.jvp(f, (q,), (q,))
    assert same(body, check_warnings=False).error is not None


@pytest.mark.parametrize("fn", ["median", "nanmedian", "max", "min"])
@pytest.mark.parametrize("values", [[], [1.0, float("nan"), 2.0], [float("nan")] * 2,
                                    [3.0, 1.0, 3.0, 2.0]])
def test_evenly_read_tangent(fn, values):
    # torch's evenly_read_jvp, sum(mask * (t / count)): 0 for an empty input (ember gave
    # NaN), NaN where no element equals the result (median's NaN: ember gave a tangent)
    def body(t):
        x = t.tensor(values, dtype=t.float64)
        return t.func.jvp(getattr(t, fn), (x,), (t.linspace(0.5, 2.0, len(values),
                                                             dtype=t.float64),))
    same(body, check_warnings=False)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("shapes", [((0,), (0,)), ((2, 3), (3,)), ((3,), (3,))])
def test_mse_loss_tangent(reduction, shapes):
    # torch's: the unreduced gradients with the tangents for grad, then reduced (an empty
    # mean's tangent is NaN: ember's was 0)
    def body(t):
        a, b = (t.linspace(-1.0, 2.0, int(np.prod(s))).reshape(s) for s in shapes)
        u, v = a * 0.5 + 1, b.double() - 2
        f = lambda x, y: t.nn.functional.mse_loss(x, y, reduction=reduction)  # noqa: E731
        return (t.func.jvp(f, (a, b), (u, v.float())), t.func.jvp(f, (a, b.double()), (u, v)),
                t.func.jvp(lambda x: f(x, b), (a,), (u,)), t.func.jvp(lambda y: f(a, y), (b,), (u,)
                                                                     if shapes[0] == shapes[1]
                                                                     else (v.float(),)))
    same(body, check_warnings=False)


@pytest.mark.parametrize("ord", [0, 0.5, 1, 1.5, 2, 3, -1, float("inf"), -float("inf")])
def test_norm_tangent_is_torchs_norm_jvp(ord):
    # torch's norm_jvp masks a zero norm (p >= 1) and zero elements (p < 1) to a 0 tangent,
    # where the tangent derived from the reverse formula was NaN (p = 3, 1.5); dist's p = 0
    # raised, its tangent is 0
    def body(t):
        x = t.tensor([[0.0, 0.0, 0.0], [1.0, -2.0, 2.0]], dtype=t.float64)
        u = t.tensor([[0.5, -1.0, 2.0], [1.5, 0.25, -0.5]], dtype=t.float64)
        z = t.complex(x, x.flip(1))
        F = t.func
        vn = t.linalg.vector_norm
        out = [F.jvp(lambda a: vn(a, ord, 1), (x,), (u,)),
               F.jvp(lambda a: vn(a, ord, (0, 1), True), (x,), (u,)),
               F.jvp(lambda a: a.norm(ord, 1, True), (x,), (u,)),
               F.jvp(lambda a, b: t.dist(a, b, ord), (x[1], x[0]), (u[0], u[1])),
               F.jvp(lambda a: t.dist(a, x[0], ord), (x[0],), (u[1],)),
               F.jvp(lambda b: t.dist(x[1], b, ord), (x[0],), (u[1],)),
               F.jacfwd(lambda a: vn(a, ord, 1))(x)]
        if ord > 0:
            out.append(F.jvp(lambda a: vn(a, ord, 1), (z,), (t.complex(u, u),)))
        return out
    same(body, check_warnings=False)


@pytest.mark.parametrize("matrix", [[[1.0, 2.0], [2.0, 4.0]], [[0.0, 0.0], [0.0, 0.0]],
                                    [[2.0, 1.0], [-1.0, 3.0]], [[-1.0, 0.0], [0.0, 2.0]]])
def test_slogdet_tangent_at_a_singular_matrix(matrix):
    # torch's slogdet_jvp solves against A's LU: a singular A gives an inf / NaN tangent
    # (ember's, derived from a formula that inverts A, raised linalg.inv's error)
    def body(t):
        a = t.tensor(matrix, dtype=t.float64)
        e = t.tensor([[1.5, 0.5], [0.5, 1.5]], dtype=t.float64)
        F = t.func

        def slogdet_jvp(z, u):  # (torch's sign tangent of a real A: a zero tensor, unreadable)
            (sign, logabsdet), (sign_t, logabsdet_t) = F.jvp(t.linalg.slogdet, (z,), (u,))
            return sign, logabsdet, t.zeros(sign.shape, dtype=sign_t.dtype) + sign_t, logabsdet_t
        return (slogdet_jvp(a, e), F.jvp(t.logdet, (a,), (e,)),
                F.jvp(lambda z: t.linalg.slogdet(z)[1], (a.expand(2, 2, 2),), (e.expand(2, 2, 2),)),
                F.jacfwd(lambda z: t.linalg.slogdet(z)[1])(a @ a.T + t.eye(2, dtype=t.float64)),
                slogdet_jvp(t.complex(a, a.T) + 3 * t.eye(2), t.complex(e, -e)))
    same(body, check_warnings=False)


@pytest.mark.parametrize("reduce", [None, "add", "sum", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("which", ["self", "src", "both"])
def test_scatter_tangents(reduce, include_self, which):
    # torch's formulas scatter the tangents as the op scatters values: a src larger than the
    # index (ember's tangent, a gather of the index's shape, refused it); ties of amax / amin
    # share the tangent
    def body(t):
        x = t.tensor([[1.0, 5.0, 2.0], [3.0, 3.0, 0.5], [2.0, 1.0, 4.0]], dtype=t.float64)
        src = t.tensor([[3.0, 0.0, 2.0, 7.0], [1.0, 5.0, 4.0, 1.0], [6.0, 6.0, 6.0, 6.0]],
                       dtype=t.float64)
        idx = t.tensor([[0, 1, 2], [0, 1, 0]])
        u, v = x.sin(), src.cos()
        if reduce is None:
            f = lambda a, s: a.scatter(0, idx, s)  # noqa: E731
        elif reduce == "add":
            f = lambda a, s: a.scatter_add(0, idx, s)  # noqa: E731
        else:
            f = lambda a, s: a.scatter_reduce(0, idx, s, reduce,  # noqa: E731
                                              include_self=include_self)
        F = t.func
        if which == "self":
            return F.jvp(lambda a: f(a, src), (x,), (u,))
        if which == "src":
            return F.jvp(lambda s: f(x, s), (src,), (v,))
        return F.jvp(f, (x, src[:2]), (u, v[:2])), F.jvp(f, (x, src), (u, v))
    same(body, check_warnings=False)


@pytest.mark.parametrize("reduce", ["add", "multiply"])
def test_scatter_with_a_reduce_argument_refuses_forward_ad(reduce):
    def body(t):
        idx = t.tensor([[0, 1], [1, 0]])
        return t.func.jvp(lambda a: t.zeros(2, 2).scatter(0, idx, a, reduce=reduce),
                          (t.ones(2, 2),), (t.ones(2, 2),))
    assert same(body, check_warnings=False).error is not None


def test_scatter_reduce_prod_tangent_of_a_larger_src():
    # (the part of src the index reads; torch gives no tangent at all: docs/gradients.md)
    rng = np.random.default_rng(1)
    x0, s0 = rng.normal(size=(3, 3)), rng.normal(size=(3, 4))
    tx, ts = rng.normal(size=(3, 3)), rng.normal(size=(3, 4))
    idx = ember.tensor([[0, 1, 2], [2, 0, 0]])

    def f(x, s):
        return ember.scatter_reduce(x, 0, idx, s, "prod")
    eps = 1e-6
    plus = f(ember.tensor(x0 + eps * tx), ember.tensor(s0 + eps * ts))
    minus = f(ember.tensor(x0 - eps * tx), ember.tensor(s0 - eps * ts))
    _, tangent = ember.func.jvp(f, (ember.tensor(x0), ember.tensor(s0)),
                                (ember.tensor(tx), ember.tensor(ts)))
    np.testing.assert_allclose(tangent.numpy(), ((plus - minus) / (2 * eps)).numpy(), atol=1e-6)


@pytest.mark.parametrize("padding_idx", [None, 1, -3])
@pytest.mark.parametrize("scale_grad_by_freq", [False, True])
def test_embedding_tangent_reads_the_padding_row(padding_idx, scale_grad_by_freq):
    # torch's tangent is the lookup of the weight's tangent, padding row included (ember's,
    # derived from the gradient, was 0 there)
    def body(t):
        w = t.arange(12.0, dtype=t.float64).reshape(4, 3)
        idx = t.tensor([[1, 0, 1], [3, 1, 2]])
        f = lambda a: t.nn.functional.embedding(  # noqa: E731
            idx, a, padding_idx=padding_idx, scale_grad_by_freq=scale_grad_by_freq)
        return t.func.jvp(f, (w,), (w.cos(),)), t.func.jacfwd(f)(w)
    same(body, check_warnings=False)


@pytest.mark.parametrize("case", ["sinc", "logit", "logit_eps", "pow_self", "pow_exponent",
                                  "pow_both", "pow_float32"])
def test_elementwise_tangents_at_their_formulas_edges(case):
    # torch's elementwise tangents are the gradient formulas with the tangent for grad
    # (auto_element_wise): sinc's 0 at 0, logit's NaN outside [0, 1] and 0 outside [eps,
    # 1 - eps], pow's masks; the tangents derived at grad = 0 gave NaN or 0 there
    def body(t):
        x = t.tensor([0.0, 1.0, 0.05, -1.0, 0.5], dtype=t.float64)
        e = t.tensor([-1.0, 0.0, 2.0, 0.5, -2.0], dtype=t.float64)
        u, v = t.linspace(0.5, 1.5, 5, dtype=t.float64), t.linspace(-1.0, 1.0, 5, dtype=t.float64)
        F = t.func
        base = t.tensor([0.0, 0.0, 0.0, 2.0, 0.0], dtype=t.float64)
        return {"sinc": lambda: F.jvp(t.sinc, (x,), (u,)),
                "logit": lambda: F.jvp(t.logit, (x,), (u,)),
                "logit_eps": lambda: F.jvp(lambda a: t.logit(a, 0.1), (x,), (u,)),
                "pow_self": lambda: F.jvp(lambda a: a ** e, (base,), (u,)),
                "pow_exponent": lambda: F.jvp(lambda b: base ** b, (e,), (v,)),
                "pow_both": lambda: F.jvp(t.pow, (base, e), (u, v)),
                "pow_float32": lambda: F.jvp(t.pow, (base.float(), e.float()), (u, v)),
                }[case]()
    same(body, check_warnings=False)


STD_VAR_EDGES = {"four": [0.3, -1.2, 2.0, 0.7], "one": [1.5], "constant": [2.0, 2.0, 2.0],
                 "nan": [1.0, float("nan"), 2.0], "inf": [1.0, float("inf"), 2.0],
                 "both_infs": [float("inf"), float("-inf"), 1.0], "empty": [], "0-dim": 1.25}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", list(STD_VAR_EDGES))
def test_std_and_var_tangents_at_their_edges_are_torchs(name, dtype):
    """std's and var's tangents bit for bit (torch's var_jvp: var's backward formula of the
    tangent, summed), and at the edges: std 0 (a constant input, one element with correction
    0) has tangent 0, not 0/0; correction >= N, NaN and inf give torch's NaN and inf; an empty
    input's mean tangent (std_mean, var_mean) is NaN."""
    calls = [lambda v: v.var(), lambda v: v.std(), lambda v: v.var(correction=0),
             lambda v: v.std(correction=0), lambda v: v.var(correction=2),
             lambda v: v.std(correction=5), lambda v: v.std(correction=1.5),
             lambda v: v.var(0, keepdim=True) if v.dim() else v.var(),
             lambda v: v.std(-1, correction=0) if v.dim() else v.std(correction=0),
             lambda v: v.std(unbiased=False)]

    def body(torch):
        values = STD_VAR_EDGES[name]
        dt = getattr(torch, dtype)
        p = torch.tensor(values, dtype=dt)
        t = torch.tensor([0.5 * k - 1 for k in range(len(values))] if isinstance(values, list)
                         else 2.0, dtype=dt)
        fw, out = torch.autograd.forward_ad, []
        for call in calls:
            with fw.dual_level():
                out.append(fw.unpack_dual(call(fw.make_dual(p, t))).tangent)
            out.append(torch.func.jvp(call, (p,), (t,))[1])
        for f in (torch.std_mean, torch.var_mean):
            out.append(torch.func.jvp(lambda v: f(v, correction=0), (p,), (t,))[1])
        return out
    same(body, rtol=0, atol=0)
