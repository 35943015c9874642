"""``ember.func`` against torch 2.13 where transforms meet inference mode, nest forward-mode
levels (``jvp`` of ``jvp``), and ``functionalize`` / ``debug_unwrap``."""
import numpy as np
import pytest
from oracle import error_of, same

GEN = np.random.default_rng(3)
A = GEN.standard_normal(3)
B = GEN.standard_normal(3)


def _inference(torch, values):
    with torch.inference_mode():
        return torch.tensor(values)


def _under(torch, mode, fn):
    if mode == "no_grad":
        with torch.no_grad():
            return fn()
    if mode == "inference":
        with torch.inference_mode():
            return fn()
    return fn()


@pytest.mark.parametrize("mode", ["plain", "no_grad", "inference"])
def test_transforms_save_a_captured_inference_tensor(mode):
    # (torch's transforms save an inference tensor at their own levels; under inference
    # mode they run the function with it off, so the gradients are not zeros)
    def body(torch):
        F = torch.func
        xi = _inference(torch, A)
        a = torch.tensor(B)

        def run():
            return (F.grad(lambda q: (q * xi).sum())(a),
                    F.grad(lambda q: (q.exp() * xi).sum())(a),
                    F.grad_and_value(lambda q: (q * xi).sum())(a),
                    F.vjp(lambda q: q * xi, a)[1](torch.ones(3, dtype=a.dtype)),
                    F.jacrev(lambda q: q * xi)(a),
                    F.jacfwd(lambda q: q * xi)(a),
                    F.jvp(lambda q: q * xi, (a,), (a,)),
                    F.grad(lambda r: F.grad(lambda q: (q * q * xi).sum())(r).sum())(a),
                    F.grad(lambda q: (q * q).sum())(xi),
                    F.hessian(lambda q: (q ** 3 * xi).sum())(a))
        return _under(torch, mode, run)
    same(body, rtol=1e-10, check_warnings=False)


@pytest.mark.parametrize("mode", ["plain", "no_grad"])
def test_inference_tensor_saved_by_plain_autograd_inside_a_transform_is_refused(mode):
    # (a captured tensor that requires grad makes plain autograd record the call too)
    def body(torch):
        F = torch.func
        xi = _inference(torch, A)
        w = torch.tensor(B, requires_grad=True)
        return _under(torch, mode, lambda: F.grad(lambda q: ((q * w) * xi).sum())(
            torch.tensor(A)))
    same(body, check_warnings=False)


def test_transforms_run_with_inference_mode_off():
    def body(torch):
        F = torch.func
        seen = []

        def probe(q):
            seen.append((torch.is_inference_mode_enabled(), torch.is_grad_enabled()))
            return (q * q).sum()
        a = torch.tensor(A)
        with torch.inference_mode():
            out = (F.grad(probe)(a), F.jvp(probe, (a,), (a,)), F.vjp(probe, a)[0])
        return out, [r.is_inference() for r in out[:1] + out[1]], seen
    same(body, check_warnings=False)


# -- jvp inside jvp (nested forward-mode levels) --------------------------------------------------
def _xuv(torch):
    return torch.tensor(A), torch.tensor(B), torch.tensor(A[::-1].copy())


def _f(z):
    return z.sin() * z.exp() + z ** 3


def test_jvp_of_jvp():
    # (the inner jvp's results carry the outer jvp's tangents: second-order terms)
    def body(torch):
        F = torch.func
        x, u, v = _xuv(torch)
        inner = lambda y: F.jvp(_f, (y,), (v,))  # noqa: E731
        return (F.jvp(inner, (x,), (u,)),
                F.jvp(lambda y: F.jvp(lambda z: (z * y).tanh(), (y * 2,), (v,)), (x,), (u,)),
                F.jvp(lambda a: F.jvp(lambda b: F.jvp(lambda c: c.exp() * c, (b,), (v,))[1],
                                      (a,), (u,))[1], (x,), (v,)),
                F.jvp(lambda y: F.jvp(lambda z: (z * 2.5).sum(), (y,), (v,)),
                      (x.float(),), (u.float(),)))
    same(body, rtol=1e-10, check_warnings=False)


def test_jvp_of_jvp_in_place_and_views():
    def body(torch):
        F = torch.func
        x, u, v = _xuv(torch)

        def g(z):
            w = z.clone()
            w[1:].mul_(z[:2].exp())
            w.t_() if w.dim() == 2 else w.unsqueeze_(0)
            return w.squeeze(0).cumsum(0)

        def views_in_place(z):
            # (each level's tangent takes the new geometry: the outer ones kept the old one)
            w = z.exp().reshape(3, 1)
            w.unsqueeze_(0)
            w.transpose_(0, 2)
            return w.sin() * (z * 1.5).reshape(1, 3).t_()
        return (F.jvp(lambda y: F.jvp(g, (y,), (v,)), (x,), (u,)),
                F.jvp(lambda y: F.jvp(views_in_place, (y,), (v,)), (x,), (u,)),
                F.jvp(lambda a: F.jvp(lambda b: F.jvp(views_in_place, (b,), (v,))[1], (a,),
                                      (u,))[1], (x,), (v,)))
    same(body, rtol=1e-10, check_warnings=False)


def test_jvp_nested_with_jacfwd_grad_and_graph():
    def body(torch):
        F = torch.func
        x, u, v = _xuv(torch)
        w = x.clone().requires_grad_()
        nested = F.jvp(lambda y: F.jvp(_f, (y,), (v,)), (w,), (u,))
        (nested[1][1].sum() + nested[0][0].sum()).backward()
        return (F.jvp(F.jacfwd(_f), (x,), (u,)),
                F.jacfwd(lambda y: F.jvp(_f, (y,), (v,))[1])(x),
                F.grad(lambda y: F.jvp(lambda z: _f(z).sum(), (y,), (v,))[1])(x),
                F.jvp(F.grad(lambda z: _f(z).sum()), (x,), (u,)),
                nested, w.grad)
    same(body, rtol=1e-10, check_warnings=False)


def test_forward_ad_levels_do_not_nest_outside_transforms():
    # (torch's dual_level nests neither inside jvp nor around it; unpack_dual inside jvp
    # reads the transform's level)
    def body(torch):
        F, fwAD = torch.func, torch.autograd.forward_ad
        x, u, v = _xuv(torch)
        out = []

        def dual_inside(y):
            with fwAD.dual_level():
                return y

        def unpacked(y):
            out.append(fwAD.unpack_dual(y))
            return y.sin()
        with fwAD.dual_level():
            d = fwAD.make_dual(x, u)
            try:
                F.jvp(torch.sin, (d,), (v,))
            except RuntimeError as e:
                out.append(str(e))
        try:
            F.jvp(dual_inside, (x,), (v,))
        except RuntimeError as e:
            out.append(str(e))
        out.append(F.jvp(unpacked, (x,), (v,)))
        return out
    same(body, rtol=1e-10, check_warnings=False)


# -- vmap(jvp): a Python float operand of examples that are 0-dim ------------------------------
def test_vmap_of_jvp_reads_a_float_operand_as_torch_does():
    # (inside jvp, torch's formulas read ``b * 2.5`` of a 0-dim ``b`` as a float64 tensor's
    # product: a float64 tangent; under vmap the examples' dimensions count, not the batch's)
    def body(torch):
        F = torch.func
        xs = torch.tensor(A, dtype=torch.float32)
        grid = torch.tensor(np.outer(A, B), dtype=torch.float32)

        def jvp_of(fn):
            return lambda a: F.jvp(fn, (a,), (torch.ones_like(a),))
        return (F.vmap(jvp_of(lambda b: b * 2.5))(xs),
                F.vmap(jvp_of(lambda b: (b + 2.5).sin() * b))(xs),
                F.vmap(jvp_of(lambda b: 1.5 - b))(grid),
                F.vmap(F.vmap(jvp_of(lambda b: b / 3.0)))(grid),
                F.jvp(F.vmap(lambda b: b * 2.5), (xs,), (xs,)))
    same(body, rtol=1e-6, check_warnings=False)


# -- functionalize and debug_unwrap ---------------------------------------------------------------
def _facts(r, inp):
    """What torch's functionalization decides about an output: its value, history, whether it
    is the input, a view of it, and the versions."""
    return (r, r is inp, r._is_view(), r._base is inp, r._version, inp._version)


def test_functionalize_values_and_input_mutations():
    def body(torch):
        F = torch.func
        x = torch.tensor(np.outer(A, B)[:2, :2])
        out = []

        def run(fn, *args, **kw):
            inputs = [a.clone() for a in args]
            r = F.functionalize(fn, **kw)(*inputs)
            out.append((r if not isinstance(r, torch.Tensor) else _facts(r, inputs[0]),
                        inputs, [a._version for a in inputs]))
        run(lambda a: a.clone().add_(1), x)
        run(lambda a: a.add_(1) * 2, x)
        run(lambda a: (a[0].mul_(2), a)[1], x)
        run(lambda a: a.view(-1).add_(1.5).sum(), x)
        run(lambda a, b: b.copy_(a.sin()), x, x * 0)
        run(lambda a: a, x)
        run(lambda a: a[0], x)
        run(lambda a: a.add_(1)[0], x)
        run(lambda a: a.t(), x, remove="mutations_and_views")
        run(lambda a: {"s": a.exp_(), "t": (a.sum(), None)}, x)
        run(lambda a, b: a.add_(b), x, x)
        v = x.clone()[1]
        out.append((F.functionalize(lambda a: a.mul_(3))(v), v._base, v._base._version))
        out.append(F.functionalize(lambda a, b=1.0: a.clone().add_(b))(x, b=2.0))
        out.append(F.vmap(F.functionalize(lambda a: a.clone().add_(1)))(x))
        return out
    same(body, rtol=1e-12, check_warnings=False)


def test_functionalize_graph():
    # (the outputs' graph is the function's, in-place ops recorded as their out-of-place
    # forms; a mutated input that records takes torch's one copy_ at the end)
    def body(torch):
        F = torch.func
        w = torch.tensor(np.outer(A, B)[:2, :2], requires_grad=True)
        ww = w * 1
        r = F.functionalize(lambda a: a.mul_(2).sum())(ww)
        g1 = torch.autograd.grad(ww.sum() + r, w)
        ww2 = w * 1
        r2 = F.functionalize(lambda a: a[0].mul_(2).sum())(ww2)
        g2 = torch.autograd.grad(ww2.sum() + r2, w)
        views = (F.functionalize(lambda a: a.view(4))(w), F.functionalize(lambda a: a.t())(w),
                 F.functionalize(lambda a: a * 2, remove="mutations_and_views")(w))
        y = F.functionalize(lambda a: (a * 1).mul_(3).exp())(w)
        return (r, ww.grad_fn.name(), g1, r2, g2, [_facts(v, w) for v in views], y,
                [n[0].name() for n in y.grad_fn.next_functions],
                torch.autograd.grad(y.sum(), w),
                F.grad(F.functionalize(lambda a: (a * 1).mul_(3).exp().sum()))(w.detach()),
                F.functionalize(F.grad(lambda a: (a * 1).mul_(3).exp().sum()))(w.detach()))
    same(body, rtol=1e-12, check_warnings=False)


def test_functionalize_errors():
    def body(torch):
        F = torch.func
        w = torch.tensor(A, requires_grad=True)
        out = []
        for fn in (lambda: F.functionalize(lambda a: a, remove="views"),
                   lambda: F.functionalize(lambda a: a.add_(1))(w),
                   lambda: F.debug_unwrap(3)):
            try:
                fn()
            except (RuntimeError, TypeError) as e:
                out.append((type(e).__name__, str(e)))
        return out
    same(body, check_warnings=False)


def test_debug_unwrap():
    def body(torch):
        F = torch.func
        x = torch.tensor(np.outer(A, B))
        seen = []

        def probe(a):
            seen.append((F.debug_unwrap(a).shape, F.debug_unwrap(a, recurse=False).shape,
                         type(F.debug_unwrap(a)) is torch.Tensor))
            return a
        F.vmap(F.vmap(probe))(x)
        F.vmap(probe)(x)
        return seen, F.debug_unwrap(x) is x
    same(body, check_warnings=False)


# -- linearize: torch traces func once, its primals and captured tensors constants of the trace --
def test_linearize_results_and_their_graph():
    def body(torch):
        F = torch.func
        w = torch.tensor(B, requires_grad=True)
        w2 = w * 2
        x, t = torch.tensor(A), torch.tensor(B[::-1].copy())
        out = []

        def facts(r):
            return (r, r._is_view(), r._version)
        for fn in (lambda a: (a * w).sin(), lambda a: (a * w2).exp(), lambda a: a,
                   lambda a: a[0], lambda a: {"s": a.sin(), "c": (a.cos(), a * 1)}):
            value, jvp_fn = F.linearize(fn, x)
            j = jvp_fn(t)
            leaves = j if isinstance(j, torch.Tensor) else [j["s"], *j["c"]]
            leaves = [leaves] if isinstance(leaves, torch.Tensor) else leaves
            out.append((value, [facts(q) for q in leaves]))
            if leaves[0].requires_grad:  # (no gradient reaches w: a constant of the trace)
                out.append(torch.autograd.grad(leaves[0].sum(), w, allow_unused=True))
        tr = t.clone().requires_grad_()
        j = F.linearize(lambda a: (a * w2).sin(), x)[1](tr)
        out.append((j, torch.autograd.grad(j.sum(), [tr, w], allow_unused=True)))
        out.append(torch.autograd.grad(w2.sum(), w))  # (w2's graph not consumed by jvp_fn's)
        xr = x.clone().requires_grad_()
        j = F.linearize(lambda a: a.sin(), xr)[1](t)
        out.append((j, torch.autograd.grad(j.sum(), xr, allow_unused=True)))
        value, jvp_fn = F.linearize(lambda a, b: a * b, x, x * 2)
        out.append(jvp_fn(t, t))
        for bad in ((t,), (t[:1], t), (t.float(), t)):
            try:
                jvp_fn(*bad)
            except RuntimeError as e:
                out.append(str(e))
        return out
    same(body, rtol=1e-12, check_warnings=False)


def test_jvp_of_jvp_through_formulas_reading_saved_results():
    # (prod's derived tangent reads its saved result, which carries the outer tangent)
    def body(torch):
        F = torch.func
        x, u, v = _xuv(torch)
        f = lambda z: z.prod() + (z[0] * z[1:]).prod()  # noqa: E731
        return (F.jvp(lambda y: F.jvp(f, (y,), (v,))[1], (x,), (u,)),
                F.jvp(lambda y: F.jvp(lambda z: z.exp().tanh().sigmoid(), (y,), (v,)), (x,), (u,)),
                F.jvp(F.jacfwd(f), (x,), (u,)), F.jacfwd(lambda y: F.jvp(f, (y,), (v,))[1])(x))
    same(body, rtol=1e-10, check_warnings=False)


def test_jvp_of_jvp_refuses_what_it_cannot_nest():
    # (ember-only: these ops' nested tangents miss second-order terms or differ from torch's
    # where a formula meets a zero or a log of a negative; torch computes them, ember refuses
    # rather than give other values. cumprod over a zero gave 1.95 where torch gives 0.025;
    # scatter_reduce's prod tangent is the derivative where torch gives none)
    import ember
    import ember.autograd.forward_ad as fwAD
    F = ember.func
    x, u, v = _xuv(ember)

    def prod_inplace(z):
        w = z.clone()
        return w.scatter_reduce_(0, ember.tensor([0, 2, 0]), z * 2, "prod")
    refused = {"native_layer_norm": lambda z: ember.nn.functional.layer_norm(z.unsqueeze(0), (3,)),
               "native_batch_norm": lambda z: ember.nn.functional.batch_norm(
                   z.unsqueeze(0).expand(2, 3) * z, None, None, training=True),
               "cumprod": lambda z: (z * ember.tensor([1.0, 0.0, 1.0])).cumprod(0),
               "scatter_reduce": lambda z: ember.zeros(3, dtype=z.dtype).scatter_reduce(
                   0, ember.tensor([0, 1, 0]), z, "prod"),
               "linalg_det": lambda z: ember.linalg.det(ember.outer(z, z) + ember.eye(3)),
               "scatter_reduce ": prod_inplace,  # (in place)
               # (values right, but a float64 second-order tangent for float32 inputs)
               "binary_cross_entropy": lambda z: ember.nn.functional.binary_cross_entropy(
                   z.sigmoid(), ember.tensor([0.0, 1.0, 0.5], dtype=ember.float64))}
    for name, f in refused.items():
        assert name.strip() not in fwAD._NESTED_VERIFIED
        with pytest.raises(NotImplementedError, match=f"jvp of jvp.* through {name.strip()}:"):
            F.jvp(lambda y: F.jvp(f, (y,), (v,))[1], (x,), (u,))
        assert F.jvp(f, (x,), (v,))[1] is not None  # (one level: supported)


def test_jvp_of_jvp_of_an_mlp_and_of_comparisons():
    # (matrix-vector products, in-place squeeze; comparisons run at a nested level: no tangent)
    def body(torch):
        F = torch.func
        x, u, v = _xuv(torch)
        w = torch.tensor(np.outer(A, B) + np.eye(3))

        def mlp(z):
            h = torch.tanh(w @ z + 0.5).unsqueeze(0)
            h.squeeze_(0)
            h = torch.where(h > 0, torch.relu(h) * h, torch.sigmoid(h))
            return torch.mv(w.t(), h).pow(2).mean() + (h == h.max()).sum()
        return F.jvp(lambda y: F.jvp(mlp, (y,), (v,)), (x,), (u,))
    same(body, rtol=1e-10, check_warnings=False)


@pytest.mark.parametrize("where", ["jvp", "vmap", "jvp_aux"])
def test_jacfwd_in_reverse_mode_refuses_with_jvps_message(where):
    # (a jacfwd that ember computes in reverse mode, inside jvp or vmap, named vjp in its
    # error where torch's, a forward pass, names jvp)
    def body(torch):
        F = torch.func
        x = torch.tensor([1.0, 2.0])
        if where == "jvp":
            F.jvp(lambda y: F.jacfwd(lambda z: z.sum().item())(y), (x,), (x,))
        elif where == "vmap":
            F.vmap(F.jacfwd(lambda z: 3.0))(x)
        else:
            F.jvp(lambda y: F.jacfwd(lambda z: z.sin(), has_aux=True)(y)[0], (x,), (x,))
    assert same(body).error is not None


def test_backward_inside_a_transform_is_refused_as_torch():
    """backward() (the method or autograd.backward) while grad, vjp, jvp, jacrev, jacfwd,
    hessian or vmap runs its function: torch's functorch error, also for a graph that reaches
    only a tensor from outside; autograd.grad inside, and backward() after the transform or
    through a vjp_fn, run."""
    def body(torch):
        F = torch.func
        w = torch.ones(3, requires_grad=True)
        x = torch.tensor([1.0, 2.0, 3.0])

        def f(v):
            y = (v * w).sum()
            y.backward(retain_graph=True)
            return y

        def g(v):
            torch.autograd.backward([(v * 2).sum()])
            return (v * 2).sum()
        out = [error_of(lambda: F.grad(f)(x)), error_of(lambda: F.vjp(f, x)),
               error_of(lambda: F.jvp(f, (x,), (x,))), error_of(lambda: F.jacrev(f)(x)),
               error_of(lambda: F.jacfwd(f)(x)), error_of(lambda: F.hessian(f)(x)),
               error_of(lambda: F.vmap(f)(x.expand(2, 3))), error_of(lambda: F.grad(g)(x)),
               error_of(lambda: F.grad(lambda v: (
                   (w * 2).sum().backward(), (v * 2).sum())[1])(x)),
               F.grad(lambda v: torch.autograd.grad((v * v).sum(), v, create_graph=True)[0]
                      .sum())(x)]
        F.grad(lambda v: (v * w).sum())(x).sum().backward()
        F.vjp(lambda v: v * w, x)[1](torch.ones(3))[0].sum().backward()
        return out, w.grad
    out = same(body).value
    assert out[0][0][0] == "RuntimeError"


def test_writing_a_captured_tensor_in_place_is_refused_as_torch():
    """An in-place op on a tensor the transformed function captures from outside (a global,
    a closure's, a view of one, a partial's argument, a module's buffer or parameter, the
    module called as the function) raises torch's error under grad, vjp, jvp, jacrev, jacfwd,
    hessian and vmap(grad); a tensor made inside, a clone, an argument of the function (a
    buffer passed to functional_call) may be written, and vmap alone does not refuse."""
    import functools

    def body(torch):
        F = torch.func
        c = torch.zeros(3)
        x = torch.tensor([1.0, 2.0, 3.0])

        class M(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.register_buffer("b", torch.zeros(3))
                self.lin = torch.nn.Linear(3, 3)

            def forward(self, v):
                self.b.add_(1)
                return self.lin(v)
        torch.manual_seed(0)
        m = M()
        params, buffers = dict(m.named_parameters()), dict(m.named_buffers())
        calls = [
            lambda: F.grad(lambda v: (c.add_(v) * v).sum())(x),
            lambda: F.grad(lambda v: (c.add_(1.0) * v).sum())(x),
            lambda: F.vjp(lambda v: c.mul_(v), x),
            lambda: F.jvp(lambda v: c.add_(v), (x,), (x,)),
            lambda: F.jacrev(lambda v: c.add_(v))(x),
            lambda: F.jacfwd(lambda v: c.add_(v))(x),
            lambda: F.hessian(lambda v: (c.add_(1.0), (v ** 3).sum())[1])(x),
            lambda: F.vmap(F.grad(lambda v: (c.add_(1.0), (v ** 3).sum())[1]))(x.expand(2, 3)),
            lambda: F.grad(lambda v: (c.__setitem__(0, v[0]) or c).sum())(x),
            lambda: F.grad(lambda v: (c[:2].add_(v[:2]), v.sum())[1])(x),
            lambda: F.grad(lambda v: (c.zero_(), v.sum())[1])(x),
            lambda: F.vjp(lambda v: (c.copy_(v), v * 2)[1], x),
            lambda: F.grad(functools.partial(lambda w, v: (w.mul_(2), v.sum())[1], c))(x),
            lambda: F.grad(lambda v: m(v).sum())(x),
            lambda: F.jacrev(m)(x),
            lambda: F.grad(lambda p, b, v: torch.func.functional_call(m, (p, b), (v,)).sum())(
                params, buffers, x),
            lambda: F.grad(lambda v: (torch.zeros(3).add_(v) * v).sum())(x),
            lambda: F.grad(lambda v: (c.clone().add_(v) * v).sum())(x),
            lambda: F.jvp(lambda v: v.clone().mul_(2), (x,), (x,)),
            lambda: F.vmap(lambda v: (c.add_(1.0), v * 2)[1])(x.expand(2, 3))]
        return [error_of(f) for f in calls], c
    out = same(body).value
    assert out[0][0][0] == "RuntimeError" and out[0][-1] is None
