"""``ember.func`` (torch.func style transforms) against torch 2.13: values, pytree structure,
argnums/has_aux, composition (grad of grad, jacfwd of jacrev) and error texts.
"""
import numpy as np
import pytest
from oracle import error_of, same

import ember

GEN = np.random.default_rng(0)
A = GEN.standard_normal(3)
B = GEN.standard_normal(3)


def _xy(torch):
    return torch.tensor(A), torch.tensor(B)


def f(x, y):
    return (x.sin() * y ** 2).sum()


def g(x, y):
    return x.exp() * y, (x * y).sum()


def test_grad_and_value():
    def body(torch):
        F = torch.func
        x, y = _xy(torch)
        return (F.grad(f)(x, y), F.grad(f, argnums=1)(x, y), F.grad(f, argnums=(0, 1))(x, y),
                F.grad(f, argnums=-1)(x, y), F.grad_and_value(f)(x, y),
                F.grad(lambda x, y: (f(x, y), x.mean()), has_aux=True)(x, y),
                F.grad_and_value(lambda x, y: (f(x, y), {"m": x.mean()}), has_aux=True)(x, y),
                F.grad(lambda d: (d["a"] * d["b"][0]).sum())({"a": x, "b": [y]}),
                F.grad(lambda x: x.sum() * 0 + 1.0)(x))
    same(body, rtol=1e-10, check_warnings=False)


def test_grad_composes():
    def body(torch):
        F = torch.func
        x, _ = _xy(torch)
        cube = lambda t: (t ** 3).sum()
        return (F.grad(F.grad(lambda t: (t ** 3)))(torch.tensor(2.0)),
                F.grad(lambda t: F.grad(cube)(t).sum())(x))
    same(body, rtol=1e-10, check_warnings=False)


def test_grad_through_outer_autograd():
    x = ember.tensor(A, requires_grad=True)
    gx = ember.func.grad(lambda t: (t ** 3).sum())(x)
    (h,) = ember.autograd.grad(gx.sum(), x)
    np.testing.assert_allclose(h.numpy(), 6 * A)


def test_vjp_and_jvp():
    def body(torch):
        F = torch.func
        x, y = _xy(torch)
        out, fn = F.vjp(g, x, y)
        ct = (torch.ones(3, dtype=torch.float64), torch.tensor(2.0, dtype=torch.float64))
        out2, fn2, aux = F.vjp(lambda a: (a ** 2, a.sum()), x, has_aux=True)
        return (out, fn(ct), fn(ct), out2, fn2(torch.ones(3, dtype=torch.float64)), aux,
                F.jvp(g, (x, y), (torch.ones(3, dtype=torch.float64), y)),
                F.jvp(lambda a: (a ** 2, {"a": a}), (x,), (y,), has_aux=True))
    same(body, rtol=1e-10, check_warnings=False)


@pytest.mark.parametrize("which", ["jacrev", "jacfwd"])
def test_jacobians(which):
    def body(torch):
        J = getattr(torch.func, which)
        x, y = _xy(torch)
        return (J(lambda a: a.sin() * 2)(x), J(g, argnums=(0, 1))(x, y), J(g, argnums=1)(x, y),
                J(lambda a: (a ** 2, a.sum()), has_aux=True)(x),
                J(lambda d: {"o": d["a"] * d["b"]})({"a": x, "b": y}))
    same(body, rtol=1e-10, check_warnings=False)


def test_hessian():
    def body(torch):
        F = torch.func
        x, y = _xy(torch)
        return (F.hessian(lambda a: (a ** 3).sum())(x), F.hessian(f, argnums=(0, 1))(x, y),
                F.jacfwd(F.jacrev(lambda a: a.sin().sum() * a))(x),
                F.jacrev(F.jacrev(lambda a: (a.exp() * a).sum()))(x))
    same(body, rtol=1e-10, check_warnings=False)


def test_errors_as_torch():
    def body(torch):
        F = torch.func
        x, y = _xy(torch)
        out = []

        def attempt(fn):
            try:
                out.append(fn())
            except Exception as e:
                out.append((type(e).__name__, str(e)))
        attempt(lambda: F.grad(lambda a: a * 2)(x))
        attempt(lambda: F.grad(lambda a: 3.0)(x))
        attempt(lambda: F.grad(lambda a: a.sum(), has_aux=True)(x))
        attempt(lambda: F.grad(f, argnums=2)(x, y))
        attempt(lambda: F.grad(f, argnums=(0, 0))(x, y))
        attempt(lambda: F.grad(f, argnums=1.0)(x, y))
        attempt(lambda: F.grad(f, argnums=())(x, y))
        attempt(lambda: F.grad(lambda a: a.sum())(3.0))
        attempt(lambda: F.vjp(lambda a: a ** 2, x)[1](torch.ones(2, dtype=torch.float64)))
        attempt(lambda: F.vjp(lambda a: a ** 2, x, has_aux=True))
        attempt(lambda: F.jvp(lambda a: a ** 2, x, (y,)))
        attempt(lambda: F.jvp(lambda a: a ** 2, (x,), (torch.ones(2, dtype=torch.float64),)))
        attempt(lambda: F.jacrev(lambda a: a ** 2, has_aux=True)(x))
        return out
    same(body, check_warnings=False)


def same_ok(body, **kw):
    """``same``, and the body ran without an error (equal errors would also compare equal)."""
    e = same(body, **kw)
    assert e.error is None, e.error
    return e


def test_output_and_primal_type_errors_as_torch():
    def body(torch):
        F = torch.func
        x = torch.ones(3)
        out = []
        for fn in (lambda: F.vjp(lambda a: 3, x), lambda: F.jacrev(lambda a: (a, 3))(x),
                   lambda: F.jvp(lambda a: 3, (x,), (x,)),
                   lambda: F.jacfwd(lambda a: [a, "x"])(x), lambda: F.vjp(lambda a: a, 3),
                   lambda: F.jvp(lambda a: a, (3,), (x,)), lambda: F.jacrev(lambda a: a)(3),
                   lambda: F.jvp(lambda a: a, (x,), (3,))):
            out.append(error_of(fn))
        return out
    same_ok(body, check_warnings=False)


def test_aux_of_numbers_refused_as_torch():
    """An aux output must hold only tensors: a Python int, None or a string among its leaves
    is refused by every transform, grad after its output's own checks, the others before."""
    def body(torch):
        F = torch.func
        x = torch.ones(3)
        out = []
        for aux in (3, 2.5, None, "ab", (x, None), [x, 2], {"a": 1}, torch.Size([3]), (),
                    {"a": x}):
            out += [error_of(lambda: F.jacfwd(lambda a: (a.sin(), aux), has_aux=True)(x)),
                    error_of(lambda: F.jacrev(lambda a: (a.sin(), aux), has_aux=True)(x)),
                    error_of(lambda: F.grad(lambda a: (a.sum(), aux), has_aux=True)(x)),
                    error_of(lambda: F.grad_and_value(lambda a: (a.sum(), aux),
                                                      has_aux=True)(x)),
                    error_of(lambda: F.vjp(lambda a: (a.sin(), aux), x, has_aux=True)),
                    error_of(lambda: F.jvp(lambda a: (a.sin(), aux), (x,), (x,),
                                           has_aux=True)),
                    error_of(lambda: F.vmap(F.grad(lambda a: (a.sum(), aux), has_aux=True))(
                        x.unsqueeze(1))),
                    error_of(lambda: F.vmap(F.jacfwd(lambda a: (a.sin(), aux), has_aux=True))(
                        x.unsqueeze(1)))]
        # which error comes first: grad's output check, the others' aux check
        out += [error_of(lambda: F.grad(lambda a: (a, 3), has_aux=True)(x)),
                error_of(lambda: F.vjp(lambda a: (3, 3), x, has_aux=True)),
                error_of(lambda: F.jvp(lambda a: (3, 3), (x,), (x,), has_aux=True)),
                error_of(lambda: F.jacfwd(lambda a: (3, 3), has_aux=True)(x))]
        return out
    out = same_ok(body, check_warnings=False).value
    assert out[0] == ("RuntimeError", "Expected tensors, got unsupported type <class 'int'>")


def test_tree_spec_text_in_errors_as_torch():
    def body(torch):
        F = torch.func
        x, y = _xy(torch)
        _, fn = F.vjp(lambda a, b: ((a * b, a), {"s": b.sum()}), x, y)
        try:
            fn(((x, x), x))
        except RuntimeError as e:
            return str(e)
    assert same_ok(body).value is not None


def _model(torch):
    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 2),
                            torch.nn.BatchNorm1d(2)).double()
    with torch.no_grad():
        for i, p in enumerate(m.parameters()):
            p.copy_(torch.linspace(-1, 1, p.numel(), dtype=torch.float64).reshape(p.shape)
                    * (i + 1))
    return m


X4 = GEN.standard_normal((4, 3))


def test_functional_call_as_torch():
    def body(torch):
        F = torch.func
        m = _model(torch)
        x = torch.tensor(X4)
        params = {k: v.detach() * 2 for k, v in m.named_parameters()}
        out = [F.functional_call(m, params, (x,)),
               F.functional_call(m, (params, {"3.running_mean": torch.ones(2, dtype=torch.float64)}),
                                 x),
               F.functional_call(m[0], {"weight": torch.ones(4, 3, dtype=torch.float64)},
                                 kwargs={"input": x})]
        p2 = {k: v.clone().requires_grad_() for k, v in params.items()}
        loss = F.functional_call(m, p2, (x,)).pow(2).sum()
        out.append(torch.autograd.grad(loss, list(p2.values())))
        m.eval()
        out.append(F.grad(lambda p: F.functional_call(m, p, (x,)).pow(2).sum())(params))
        out.append(list(m.state_dict().values()))  # the module's own tensors are back
        return out
    same_ok(body, rtol=1e-10, atol=1e-12, grad_fn=False)


def test_functional_call_tied_weights_and_errors_as_torch():
    def body(torch):
        F = torch.func

        class Tied(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.a = torch.nn.Linear(2, 2, bias=False)
                self.b = torch.nn.Linear(2, 2, bias=False)
                self.b.weight = self.a.weight

            def forward(self, x):
                return self.b(self.a(x))
        t = Tied()
        with torch.no_grad():
            t.a.weight.copy_(torch.tensor([[1.0, 2.0], [3.0, -4.0]]))
        x = torch.ones(1, 2)
        m = _model(torch)
        w = torch.ones(4, 3, dtype=torch.float64)
        out = [F.functional_call(t, {"a.weight": torch.eye(2) * 2}, (x,)),
               F.functional_call(t, {"a.weight": torch.eye(2) * 2}, (x,), tie_weights=False)]
        for bad in (lambda: F.functional_call(t, {"a.weight": torch.eye(2),
                                                  "b.weight": torch.eye(2) * 3}, (x,)),
                    lambda: F.functional_call(m, {"0.weight": w}, (x,), strict=True),
                    lambda: F.functional_call(m, {"0.weight": w, "nope": w}, (x,),
                                              strict=True),
                    lambda: F.functional_call(m, ({"a": w}, {"a": w}), (x,)),
                    lambda: F.functional_call(m, [1], (x,)),
                    lambda: F.functional_call(m, 3, (x,)),
                    lambda: F.functional_call(m, {"0.weight": 3}, (x,)),
                    lambda: F.functional_call(m, {"9.weight": w}, (x,))):
            out.append(error_of(bad))
        return out
    same_ok(body, grad_fn=False)


def test_stack_module_state_as_torch():
    def body(torch):
        models = [_model(torch) for _ in range(3)]
        params, buffers = torch.func.stack_module_state(models)
        out = [params, buffers]
        models[1].eval()
        for bad in (lambda: torch.func.stack_module_state([]),
                    lambda: torch.func.stack_module_state(models),
                    lambda: torch.func.stack_module_state([models[0], torch.nn.Linear(1, 1)])):
            try:
                bad()
            except RuntimeError as e:
                out.append(str(e))
        return out
    same_ok(body, grad_fn=False)


def test_linearize_as_torch():
    def body(torch):
        F = torch.func
        x, y = _xy(torch)
        out, jvp_fn = F.linearize(lambda a, b: (a.sin() * b, (a * b).sum()), x, y)
        res = [out, jvp_fn(torch.ones_like(x), torch.ones_like(y) * 2)]
        out2, jvp2 = F.linearize(lambda a: a.exp(), x)
        res += [out2, jvp2(x)]
        for bad in (lambda: jvp2(x, x), lambda: jvp2(x[:2]), lambda: jvp2(x.float())):
            try:
                bad()
            except RuntimeError as e:
                res.append(str(e))
        return res
    # NOTE: torch's linearize traces with make_fx, which warns about torch.jit internals.
    same_ok(body, rtol=1e-10, grad_fn=False, check_warnings=False)


def test_forward_over_reverse_through_saved_outputs():
    """Formulas that read the op's result (exp, log_softmax) see its tangent in forward AD."""
    def body(torch):
        x = torch.tensor(A)
        return (torch.func.hessian(lambda a: a.exp().sum())(x),
                torch.func.jacfwd(torch.func.jacrev(lambda a: torch.log_softmax(a, 0)[0]))(x))
    same_ok(body, rtol=1e-10, check_warnings=False)


def test_replace_all_batch_norm_modules_as_torch():
    def body(torch):
        m = torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.BatchNorm1d(2),
                                torch.nn.Sequential(torch.nn.BatchNorm1d(2, affine=False)),
                                torch.nn.InstanceNorm1d(2, track_running_stats=True))
        root = torch.func.replace_all_batch_norm_modules_(m)
        m.eval()
        x = torch.tensor(X4, dtype=torch.float32)
        return (root is m, [n for n, _ in m.named_buffers()],
                [getattr(k, "track_running_stats", None) for k in m], m[:3](x).shape)
    same_ok(body)


def test_jacfwd_of_jacfwd():
    def body(torch):
        F = torch.func
        x = torch.tensor(A)
        f = lambda v: (v.sin() * v.sum()).exp()  # noqa: E731
        return F.jacfwd(F.jacfwd(f))(x), F.hessian(lambda v: f(v).sum())(x)
    same(body, rtol=1e-6, atol=1e-9, grad_fn=False)


_OF_INFERENCE = {
    "grad": lambda F, x: F.grad(lambda v: v.sin().sum())(x),
    "grad_and_value": lambda F, x: F.grad_and_value(lambda v: (v * v).sum())(x),
    "vjp": lambda F, x: F.vjp(lambda v: v.log1p().sum(), x)[1](F_ONE[0]),
    "jacrev": lambda F, x: F.jacrev(lambda v: v.exp())(x),
    "jvp": lambda F, x: F.jvp(lambda v: v.sin(), (x,), (x * 0 + 1,)),
    "jacfwd": lambda F, x: F.jacfwd(lambda v: v.tanh())(x),
    "hessian": lambda F, x: F.hessian(lambda v: v.sin().sum())(x),
}
F_ONE = [None]


@pytest.mark.parametrize("name", sorted(_OF_INFERENCE))
def test_transforms_of_an_inference_tensor(name):
    # a transform wraps its inputs: an inference tensor is differentiated as any other
    # (ember refused requires_grad on it, and forward AD gave its ops no tangent: zeros)
    def body(torch):
        with torch.inference_mode():
            x = torch.tensor([0.1, -0.95, 1.16], dtype=torch.float64)
        F_ONE[0] = torch.tensor(1.0, dtype=torch.float64)
        out = _OF_INFERENCE[name](torch.func, x)
        return out, [t.is_inference() for t in (out if isinstance(out, tuple) else (out,))]
    same(body, grad_fn=False, check_warnings=False)  # (torch's hessian warns internally)


def test_jvp_primal_is_an_alias_of_the_output():
    # torch's jvp returns each primal as an alias of the function's output: a view, and
    # AliasBackward0 over the output's node where it requires grad
    def body(torch):
        out = []
        for rg in (False, True):
            x = torch.tensor([0.1, -0.95, 1.16], requires_grad=rg)
            p, _ = torch.func.jvp(lambda v: torch.cos(v).sum(), (x,), (torch.ones(3),))
            out += [p, p._is_view(), p.grad_fn and p.grad_fn.name(),
                    p.grad_fn and p.grad_fn.next_functions[0][0].name()]
        return out
    same(body)


def _flags(r):
    if isinstance(r, (tuple, list)):
        return [_flags(v) for v in r]
    return (r, r.requires_grad, r._is_view(), r._version)


@pytest.mark.parametrize("mode", ["no_grad", "enable_grad"])
@pytest.mark.parametrize("requires_grad", [False, True])
def test_transform_results_flags_and_versions(mode, requires_grad):
    # under no_grad a transform's results require no grad; grad's results are unwrapped at
    # version 0 (the in-place sum of two gradients not shown); vjp_fn's keep their version
    # where torch differentiates without create_graph (under no_grad)
    def body(torch):
        x = torch.tensor([0.5, 1.5], requires_grad=requires_grad)
        f = lambda v: (v * torch.sinh(v)).sum()  # noqa: E731
        with getattr(torch, mode)():
            o, fn = torch.func.vjp(lambda v: v[0] * v, x)
            return _flags([torch.func.grad(f)(x), torch.func.grad_and_value(f)(x),
                           torch.func.vmap(torch.func.grad(f))(x.reshape(2, 1)), o,
                           fn(torch.ones(2)), torch.func.jacrev(lambda v: v.sin())(x)])
    same(body)


def test_jacfwd_of_an_empty_input_is_an_empty_jacobian():
    """An input with no elements has no columns: the Jacobian is empty, shaped (*out, 0), under
    grad mode and no_grad alike (it raised a reshape error; difftest program 22000189)."""
    def body(torch):
        f = torch.func.jacfwd(lambda v: torch.atan(v).sum())
        with torch.no_grad():
            quiet = f(torch.zeros(0, requires_grad=True))
        both = torch.func.jacfwd(lambda v, w: torch.atan(v).sum() * w, argnums=(0, 1))(
            torch.zeros(0), torch.ones(2))
        return quiet, quiet.shape, both
    same(body, check_warnings=False)  # (torch warns of jit.script on its first func call)


@pytest.mark.parametrize("fn", [
    "lambda v: torch.sinh(v) * 0.5", "lambda v: v + torch.tensor(1.)", "lambda v: v / 2",
    "lambda v: torch.atan2(v, torch.ones(3))", "lambda v: torch.fmod(v, 2.)",
    "lambda v: v * v", "lambda v: v.exp()", "lambda v: v.sum()", "lambda v: torch.pow(v, 2)"])
@pytest.mark.parametrize("shape", [(0,), (0, 3), (2,)])
def test_vmap_over_an_empty_batch_of_0_dim_examples_promotes_as_torch(fn, shape):
    """Where a 0-dim example meets an operand that is not one (an unbatched tensor, a wrapped
    Python number), torch finds the result dtype from the first example: over an empty batch
    of 0-dim examples that raises its IndexError (difftest 26000319); number overloads
    (fmod's), examples of more dimensions and batches with examples compute."""
    def body(torch):
        return torch.func.vmap(eval(fn))(torch.zeros(shape))
    same(body, check_warnings=False)  # (torch warns of jit.script on its first func call)


_NUMBER_OPERANDS = {
    "mul": lambda v: v * -1.42,
    "rmul": lambda v: 2.5 * v,
    "div": lambda v: v / 3.0,
    "rdiv": lambda v: 2.0 / v,
    "add": lambda v: v + 1.5,
    "sub_alpha": lambda v: v.sub(1.5, alpha=2),
    "rsub": lambda v: 2.0 - v,  # (a Scalar in torch's rsub: the tangent stays float32)
    "mul_int": lambda v: v * 2,
    "mul_complex": lambda v: v * 2j,
    "mul_bool": lambda v: v * True,
    "div_floor": lambda v: v.div(2.0, rounding_mode="floor"),
    "chained": lambda v: (torch_like_expm1(v) * -1.42).sin().sum(),
    "mul_then_view": lambda v: (v * 2.0).reshape(1),
    "mul_1d": lambda v: v.reshape(2) * 2.0,
}


def torch_like_expm1(v):
    return v.expm1()


@pytest.mark.parametrize("name", sorted(_NUMBER_OPERANDS))
@pytest.mark.parametrize("transform", ["jvp", "jacfwd"])
def test_tangent_dtype_of_a_number_operand(name, transform):
    # inside torch.func's jvp (and jacfwd), torch's formulas read a Python float operand of
    # add/sub/mul/div as a 0-dim float64 tensor, no longer a wrapped number: a 0-dim result's
    # tangent is float64 (complex128), its primal float32 (difftest 22000400)
    def body(t):
        x = t.tensor(float("nan")) if name == "chained" else t.tensor(0.3)
        if name == "mul_1d":
            x = t.tensor([0.3, 0.4])
        f = _NUMBER_OPERANDS[name]
        if transform == "jacfwd":
            return t.func.jacfwd(f)(x)
        with t.no_grad():
            return t.func.jvp(f, (x,), (t.full_like(x, 0.55),))
    same(body, check_warnings=False)


_COMPLEX_JACOBIANS = {
    "output": (lambda v: v * 2j, lambda t: (t.tensor(0.3),)),
    "input": (lambda v: v.abs(), lambda t: (t.tensor(0.3 + 1j),)),
    "other_argument": (lambda v, w: v * 2, lambda t: (t.tensor(0.3), t.tensor(1j))),
    "second_output": (lambda v: (v, v * 1j), lambda t: (t.tensor([0.3]),)),
}


@pytest.mark.parametrize("name", sorted(_COMPLEX_JACOBIANS))
@pytest.mark.parametrize("transform", ["jacfwd", "jacrev"])
def test_jacobian_of_complex_refused(name, transform):
    # torch.func computes no Jacobian of complex inputs or outputs (a silent one would be
    # of a function torch does not differentiate this way)
    f, args = _COMPLEX_JACOBIANS[name]
    same(lambda t: getattr(t.func, transform)(f)(*args(t)), check_warnings=False)


def test_nested_grad_of_a_view_made_under_no_grad():
    """A view made in no_grad mode of a tensor that requires grad has no gradient of its own:
    transforms of it differentiate a fresh copy, so grad(grad(f)) and vmap of it see their
    inner level (difftest 26000547, 26000225, 27000444: second derivatives came back zeros)."""
    def body(torch):
        G = torch.func.grad
        f = lambda v: torch.erf(v) * -1.88  # noqa: E731
        x = torch.tensor([[1.05], [-0.54], [0.0]], requires_grad=True)
        with torch.no_grad():
            flat = x.flatten()
            return (torch.func.vmap(G(G(f)))(flat), G(G(f))(flat[0]),
                    G(lambda v: (v * G(f)(v)))(flat[1]))
    same(body, check_warnings=False)  # (torch warns of jit.script on its first func call)
