"""``ember.autograd.gradcheck`` and ``gradgradcheck``: pass for correct gradients, fail (raise or
return False) for wrong ones, with torch's messages.
"""
import numpy as np
import pytest
from oracle import same

import ember
from ember import autograd
from ember.autograd import Function


def d(*values):
    """A float64 leaf (from a float64 ndarray, so the values are exact doubles)."""
    return ember.tensor(np.array(values, dtype=np.float64), requires_grad=True)


def rng_leaf(shape, seed, low=None):
    a = np.random.default_rng(seed).standard_normal(shape)
    if low is not None:
        a = np.abs(a) + low
    return ember.tensor(a, requires_grad=True)


def catch(f):
    """What ``f()`` returns, or the type name and message of what it raises."""
    try:
        return f()
    except Exception as e:  # noqa: BLE001 - the type and text are what is compared
        return (type(e).__name__, str(e))


class Square(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 2

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * 2 * x


class WrongSquare(Function):
    """x**2 with a backward that is off by a factor 1.5."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 2

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * 3 * x


class FirstOrderOnlySquare(Function):
    """Right first derivative, wrong second one (its backward is constant in x)."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 2

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * 2 * x.detach()


CASES = [
    ("add", lambda a, b: a + b, lambda: (rng_leaf((3,), 0), rng_leaf((3,), 1))),
    ("sub_broadcast", lambda a, b: a - b, lambda: (rng_leaf((2, 3), 0), rng_leaf((3,), 1))),
    ("mul", lambda a, b: a * b, lambda: (rng_leaf((2, 3), 2), rng_leaf((2, 3), 3))),
    ("div", lambda a, b: a / b, lambda: (rng_leaf((3,), 4), rng_leaf((3,), 5, low=0.5))),
    ("pow_scalar", lambda a: a ** 3, lambda: (rng_leaf((3,), 6),)),
    ("pow_tensor", lambda a, b: a ** b, lambda: (rng_leaf((3,), 7, low=0.5), rng_leaf((3,), 8))),
    ("neg_rsub", lambda a: 2 - (-a), lambda: (rng_leaf((3,), 9),)),
    ("exp_log", lambda a: a.exp() + a.log(), lambda: (rng_leaf((3,), 10, low=0.5),)),
    ("sin_cos", lambda a: a.sin() * a.cos(), lambda: (rng_leaf((4,), 11),)),
    ("tanh_sigmoid", lambda a: a.tanh() + a.sigmoid(), lambda: (rng_leaf((4,), 12),)),
    ("sqrt", lambda a: a.sqrt(), lambda: (rng_leaf((3,), 13, low=0.5),)),
    ("matmul", lambda a, b: a @ b, lambda: (rng_leaf((2, 3), 14), rng_leaf((3, 2), 15))),
    ("mv", lambda a, b: a.mv(b), lambda: (rng_leaf((2, 3), 16), rng_leaf((3,), 17))),
    ("sum_mean", lambda a: a.sum(0) + a.mean(1, keepdim=True).sum(),
     lambda: (rng_leaf((2, 3), 18),)),
    ("reshape_t", lambda a: a.reshape(3, 2).t() * 2, lambda: (rng_leaf((2, 3), 19),)),
    ("custom_function", Square.apply, lambda: (rng_leaf((3,), 20),)),
]


class TestGradcheck:
    @pytest.mark.parametrize("name, f, make", CASES, ids=[c[0] for c in CASES])
    def test_correct_functions_pass(self, name, f, make):
        assert autograd.gradcheck(f, make()) is True

    @pytest.mark.parametrize("name, f, make", CASES, ids=[c[0] for c in CASES])
    def test_correct_functions_pass_fast_mode(self, name, f, make):
        assert autograd.gradcheck(f, make(), fast_mode=True) is True

    def test_wrong_backward_raises(self):
        from ember.autograd.gradcheck import GradcheckError
        with pytest.raises(GradcheckError) as e:
            autograd.gradcheck(WrongSquare.apply, (d(1., 2.),))
        assert isinstance(e.value, RuntimeError)
        assert str(e.value) == (
            "Jacobian mismatch for output 0 with respect to input 0,\n"
            "numerical:tensor([[2.0000, 0.0000],\n        [0.0000, 4.0000]], dtype=ember.float64)\n"
            "analytical:tensor([[3., 0.],\n        [0., 6.]], dtype=ember.float64)\n")

    def test_wrong_backward_returns_false(self):
        assert autograd.gradcheck(WrongSquare.apply, (d(1., 2.),), raise_exception=False) is False
        assert autograd.gradcheck(WrongSquare.apply, (d(1., 2.),), raise_exception=False,
                                  fast_mode=True) is False

    def test_wrong_gradient_for_one_of_several_inputs(self):
        class HalfWrong(Function):
            @staticmethod
            def forward(ctx, a, b):
                ctx.save_for_backward(a, b)
                return a * b

            @staticmethod
            def backward(ctx, g):
                a, b = ctx.saved_tensors
                return g * b, g * a * 2

        a, b = d(1., 2.), d(3., 4.)
        with pytest.raises(RuntimeError, match="Jacobian mismatch for output 0 with respect to "
                                               "input 1,"):
            autograd.gradcheck(HalfWrong.apply, (a, b))

    def test_several_outputs_and_non_tensor_arguments(self):
        class Two(Function):
            @staticmethod
            def forward(ctx, x, k):
                ctx.save_for_backward(x)
                ctx.k = k
                return x * k, x.exp()

            @staticmethod
            def backward(ctx, ga, gb):
                (x,) = ctx.saved_tensors
                return ga * ctx.k + gb * x.exp(), None

        assert autograd.gradcheck(Two.apply, (d(0.5, -1.), 3.0))

    def test_only_some_inputs_require_grad(self):
        c = ember.tensor(np.array([2., 3.]))
        assert autograd.gradcheck(lambda x, y: x * y, (d(1., 2.), c))

    def test_tolerances(self):
        # a backward off by 1e-4 (relative) passes the default rtol=1e-3, fails rtol=1e-6
        class Close(Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2

            @staticmethod
            def backward(ctx, g):
                return g * 2.0002

        assert autograd.gradcheck(Close.apply, (d(1., 2.),))
        assert not autograd.gradcheck(Close.apply, (d(1., 2.),), rtol=1e-6, atol=1e-8,
                                      raise_exception=False)

    def test_single_tensor_input(self):
        assert autograd.gradcheck(lambda t: t.exp(), d(0.5, 1.5))

    def test_inputs_left_unchanged(self):
        x = d(0.25, -0.5)
        autograd.gradcheck(lambda t: t.sin(), (x,))
        assert x.tolist() == [0.25, -0.5]
        assert x.grad is None

    def test_float32_input_warns(self):
        with pytest.warns(UserWarning) as rec:
            autograd.gradcheck(lambda t: t * 2, (ember.tensor([1., 2.], requires_grad=True),),
                               raise_exception=False)
        assert str(rec[0].message) == (
            "Input #0 requires gradient and is not a double precision floating point or complex. "
            "This check will likely fail if all the inputs are not of double precision floating "
            "point or complex. ")

    def test_no_input_requires_grad(self):
        with pytest.raises(ValueError, match="gradcheck expects at least one input tensor to "
                                             "require gradient"):
            autograd.gradcheck(lambda t: t * 2, (ember.tensor(np.array([1., 2.])),))

    def test_no_input_requires_grad_message(self):
        with pytest.raises(ValueError) as e:
            autograd.gradcheck(lambda t: t * 2, (ember.tensor(np.array([1., 2.])),))
        assert str(e.value) == ("gradcheck expects at least one input tensor to require gradient, "
                                "but none of them have requires_grad=True.")

    def test_oracle(self):
        def body(torch):
            class Bad(torch.autograd.Function):
                @staticmethod
                def forward(ctx, x):
                    ctx.save_for_backward(x)
                    return x ** 2

                @staticmethod
                def backward(ctx, g):
                    (x,) = ctx.saved_tensors
                    return g * 3 * x

            x = torch.tensor(np.array([1., 2.]), requires_grad=True)
            y = torch.tensor(np.array([[0.5, -1.], [2., 3.]]), requires_grad=True)
            return [catch(lambda: torch.autograd.gradcheck(Bad.apply, (x,))),
                    torch.autograd.gradcheck(Bad.apply, (x,), raise_exception=False),
                    torch.autograd.gradcheck(lambda a, b: (a @ b).tanh(), (y, y)),
                    torch.autograd.gradcheck(lambda a: (a * a).sum(), (x,), fast_mode=True)]
        same(body)


class TestGradgradcheck:
    @pytest.mark.parametrize("name, f, make", CASES, ids=[c[0] for c in CASES])
    def test_correct_functions_pass(self, name, f, make):
        assert autograd.gradgradcheck(f, make()) is True

    def test_with_grad_outputs(self):
        x = d(0.5, 1.5)
        assert autograd.gradgradcheck(lambda t: t.exp() * t, (x,), (d(1., -2.),))

    def test_wrong_second_derivative_fails(self):
        # the first derivative is right, so gradcheck passes ...
        assert autograd.gradcheck(FirstOrderOnlySquare.apply, (d(1., 2.),))
        # ... and gradgradcheck must see that the second one is wrong
        assert autograd.gradgradcheck(FirstOrderOnlySquare.apply, (d(1., 2.),),
                                      raise_exception=False) is False
        with pytest.raises(RuntimeError, match="Jacobian mismatch"):
            autograd.gradgradcheck(FirstOrderOnlySquare.apply, (d(1., 2.),))

    def test_wrong_second_derivative_never_passes(self):
        # Whatever else gradgradcheck does, it must not report success here.
        try:
            ok = autograd.gradgradcheck(FirstOrderOnlySquare.apply, (d(1., 2.),),
                                        raise_exception=False)
        except Exception:  # noqa: BLE001 - raising is a failure report too
            ok = False
        assert ok is False

    def test_oracle(self):
        def body(torch):
            class FirstOrderOnly(torch.autograd.Function):
                @staticmethod
                def forward(ctx, x):
                    ctx.save_for_backward(x)
                    return x ** 2

                @staticmethod
                def backward(ctx, g):
                    (x,) = ctx.saved_tensors
                    return g * 2 * x.detach()

            x = torch.tensor(np.array([1., 2.]), requires_grad=True)
            return [torch.autograd.gradgradcheck(lambda t: t.sin() * t, (x,)),
                    torch.autograd.gradgradcheck(FirstOrderOnly.apply, (x,),
                                                 raise_exception=False)]
        same(body)


class TestComplex:
    """Complex inputs and outputs: torch checks dL/dx + i dL/dy for each complex input, and
    the real and imaginary parts of each complex output apart."""

    def test_oracle(self):
        def body(torch):
            class WrongConj(torch.autograd.Function):
                """z * z with the holomorphic (unconjugated) derivative: wrong for torch."""

                @staticmethod
                def forward(ctx, z):
                    ctx.save_for_backward(z)
                    return z * z

                @staticmethod
                def backward(ctx, g):
                    (z,) = ctx.saved_tensors
                    return g * 2 * z

            z = torch.tensor(np.array([1 + 2j, -0.5 + 0.25j]), requires_grad=True)
            r = torch.tensor(np.array([0.5, -1.5]), requires_grad=True)
            return [torch.autograd.gradcheck(lambda a: (a * a).exp(), (z,)),
                    torch.autograd.gradcheck(lambda a, b: (a * b).abs(), (z, r),
                                             check_forward_ad=True),
                    torch.autograd.gradcheck(lambda b: torch.complex(b, b * b), (r,),
                                             check_forward_ad=True),
                    torch.autograd.gradgradcheck(lambda a: (a * a.conj()).angle() + a.abs(),
                                                 (z,)),
                    catch(lambda: torch.autograd.gradcheck(WrongConj.apply, (z,))),
                    torch.autograd.gradcheck(WrongConj.apply, (z,), raise_exception=False)]
        # (torch warns about torch.jit the first time its complex checks import their helpers)
        same(body, check_warnings=False)


def test_outputs_that_do_not_require_grad_are_not_checked():
    """As torch's: only the outputs autograd tracks are compared with finite differences
    (native_batch_norm's statistics change with the input but have no gradient)."""
    def body(torch):
        x = torch.tensor([[0.5, -1.0, 2.0], [1.5, 0.25, -0.5]], dtype=torch.float64,
                         requires_grad=True)
        return torch.autograd.gradcheck(
            lambda x: torch.native_batch_norm(x, None, None, None, None, True, 0.1, 1e-5), (x,))
    same(body)


class TestStridedInputs:
    """A transposed, sliced or empty input is perturbed in place through its own strides (a
    flattened copy would leave the function unchanged and the numerical Jacobian zero); an
    expanded input, whose elements share memory, is refused as torch refuses it."""

    def test_oracle(self):
        def body(torch):
            def leaf(t):
                return t.detach().requires_grad_()

            grid = torch.tensor(np.arange(12.0).reshape(3, 4) / 7 - 0.5)
            t = leaf(grid.t())
            sliced = leaf(grid[:, ::2])
            z = leaf(torch.tensor(np.arange(6.0).reshape(2, 3) / 5 + 1j).t())
            empty = leaf(torch.zeros(0, 3, dtype=torch.float64).t())
            size_one = leaf(torch.ones(1, 3, dtype=torch.float64).expand(4, 3)[:1])
            expanded = leaf(torch.ones(3, 1, dtype=torch.float64).expand(3, 4))
            before = t.detach().clone()
            return [torch.autograd.gradcheck(lambda a: a.contiguous().sum(1), (t,)),
                    torch.autograd.gradcheck(lambda a: (a * a).exp(), (t,), fast_mode=True),
                    torch.autograd.gradcheck(lambda a, b: a @ b, (t, sliced)),
                    torch.autograd.gradcheck(lambda a: a.sin() * a, (t,), check_forward_ad=True),
                    torch.autograd.gradcheck(lambda a: (a * a.conj()).real, (z,),
                                             check_forward_ad=True),
                    torch.autograd.gradcheck(Square.apply, (sliced,), fast_mode=True),
                    torch.autograd.gradcheck(WrongSquare.apply, (t,), raise_exception=False),
                    torch.autograd.gradcheck(WrongSquare.apply, (t,), raise_exception=False,
                                             fast_mode=True),
                    torch.autograd.gradgradcheck(lambda a: (a * a).sin(), (t,)),
                    torch.autograd.gradgradcheck(lambda a: a.tanh() * a, (sliced,),
                                                 fast_mode=True),
                    torch.autograd.gradcheck(lambda a: (a * a).exp(), (z,)),
                    torch.autograd.gradcheck(lambda a: (a * a).abs(), (z,), fast_mode=True),
                    torch.autograd.gradgradcheck(lambda a: a * a.conj() * a, (z,)),
                    torch.autograd.gradcheck(lambda a: a * 2, (empty,)),
                    torch.autograd.gradcheck(lambda a: a * 2, (size_one,)),
                    catch(lambda: torch.autograd.gradcheck(lambda a: a * 2, (expanded,))),
                    catch(lambda: torch.autograd.gradcheck(
                        lambda a, b: a + b, (t, expanded.t()), fast_mode=True)),
                    catch(lambda: torch.autograd.gradgradcheck(lambda a: a * a, (expanded,))),
                    torch.equal(t, before), t.stride()]
        # (torch warns about torch.jit the first time its complex checks import their helpers)
        same(body, check_warnings=False)

    def test_a_wrong_gradient_of_a_transposed_input_is_caught(self):
        from ember.autograd.gradcheck import GradcheckError
        x = rng_leaf((3, 2), 4).detach().t().requires_grad_()
        with pytest.raises(GradcheckError, match="Jacobian mismatch"):
            autograd.gradcheck(WrongSquare.apply, (x,))


# -- the options torch's gradcheck takes: each changes the outcome as in torch ------------------
def _functions(torch):
    """Functions whose backward is wrong in one way only some option notices."""
    class Nondeterministic(torch.autograd.Function):
        # (a backward whose result drifts by 1e-9 a call: the Jacobian matches, reentrancy not)
        calls = 0

        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            Nondeterministic.calls += 1
            return g * (2 + Nondeterministic.calls * 1e-9)

    class NotMultiplied(torch.autograd.Function):
        # (a gradient of 1e-12 where grad_output is zero: within the Jacobian's tolerance)
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2 + (g == 0).to(g.dtype) * 1e-12

    class RefusesZeroGradient(torch.autograd.Function):
        # (a backward that cannot take output gradients that are all zero)
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            if not g.any():
                raise RuntimeError("no gradient")
            return g * 2

    class MishandlesNone(torch.autograd.Function):
        # (does arithmetic on the None an undefined output gradient arrives as)
        @staticmethod
        def forward(ctx, x):
            ctx.set_materialize_grads(False)
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    class NonzeroForNone(torch.autograd.Function):
        # (gives a gradient where its output's gradient is undefined)
        @staticmethod
        def forward(ctx, x):
            ctx.set_materialize_grads(False)
            ctx.save_for_backward(x)
            return x * 2

        @staticmethod
        def backward(ctx, g):
            x, = ctx.saved_tensors
            return torch.ones_like(x) if g is None else g * 2

    class RefusesNone(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.set_materialize_grads(False)
            return x * 2

        @staticmethod
        def backward(ctx, g):
            if g is None:
                raise RuntimeError("no gradient")
            return g * 2

    return {"nondet": Nondeterministic, "not_multiplied": NotMultiplied,
            "refuses_zero": RefusesZeroGradient, "mishandles_none": MishandlesNone,
            "nonzero_for_none": NonzeroForNone, "refuses_none": RefusesNone}


_OPTION_CASES = [
    ("nondet", {}), ("nondet", {"nondet_tol": 1e-6}), ("nondet", {"fast_mode": True}),
    ("nondet", {"nondet_tol": 1e-6, "fast_mode": True}), ("nondet", {"raise_exception": False}),
    ("not_multiplied", {}), ("not_multiplied", {"masked": True}),
    ("not_multiplied", {"masked": True, "check_undefined_grad": False}),
    ("not_multiplied", {"raise_exception": False}),
    ("refuses_zero", {}), ("refuses_zero", {"check_undefined_grad": False}),
    ("sin", {"check_batched_grad": True}), ("sin", {"check_backward_ad": False}),
    ("sin", {"check_batched_grad": True, "check_backward_ad": False,
             "check_forward_ad": True}),
    ("sin", {"check_batched_forward_grad": True}), ("sin", {"check_grad_dtypes": True}),
    ("sin", {"check_grad_dtypes": True, "check_forward_ad": True}),
    ("not_multiplied", {"fast_mode": True}), ("refuses_zero", {"fast_mode": True}),
    ("nondet", {"check_batched_grad": True, "nondet_tol": 1e-6}),
    ("mishandles_none", {}), ("mishandles_none", {"raise_exception": False}),
    ("mishandles_none", {"check_undefined_grad": False}),
    ("nonzero_for_none", {}), ("nonzero_for_none", {"raise_exception": False}),
    ("nonzero_for_none", {"check_undefined_grad": False}),
    ("refuses_none", {}), ("refuses_none", {"raise_exception": False}),
    ("refuses_none", {"check_undefined_grad": False}),
]


def test_check_undefined_grad_undefines_each_output_in_turn():
    # with several outputs, torch's check leaves all their gradients undefined, then each
    # one's alone (the others' zero): the backward sees each of those patterns
    def body(torch):
        seen = set()

        class Two(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.set_materialize_grads(False)
                return x * 2, x * 3

            @staticmethod
            def backward(ctx, ga, gb):
                seen.add((ga is None, gb is None))
                if ga is None and gb is None:
                    return None
                return (0 if ga is None else ga * 2) + (0 if gb is None else gb * 3)

        x = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
        ok = torch.autograd.gradcheck(Two.apply, (x,))
        return ok, sorted(seen)
    same(body)


@pytest.mark.parametrize("name,options", _OPTION_CASES)
def test_gradcheck_options_change_the_outcome_as_in_torch(name, options):
    def body(torch):
        x = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64, requires_grad=True)
        fn = torch.sin if name == "sin" else _functions(torch)[name].apply
        return _linked(lambda: torch.autograd.gradcheck(fn, (x,), **options))
    same(body)


def _linked(check):
    """What ``check()`` returns or raises, the link in torch's note on nondeterminism (a
    page of torch's documentation, which ember's text keeps) left out."""
    try:
        return check()
    except Exception as e:  # noqa: BLE001 - the type and text are what is compared
        return type(e).__name__, str(e).replace("generated/torch.", "generated/")


@pytest.mark.parametrize("options", [{}, {"check_batched_grad": True}, {"nondet_tol": 1e-6},
                                     {"check_undefined_grad": False},
                                     {"check_rev_over_rev": False},
                                     {"check_rev_over_rev": False, "check_fwd_over_rev": True,
                                      "check_undefined_grad": False}])
def test_gradgradcheck_takes_gradchecks_options(options):
    def body(torch):
        x = torch.tensor([0.5, -1.0, 2.0], dtype=torch.float64, requires_grad=True)
        go = torch.tensor([1.0, 0.5, -2.0], dtype=torch.float64, requires_grad=True)
        return torch.autograd.gradgradcheck(lambda t: t.sin() * t, (x,), (go,), **options)
    same(body)


def test_a_wrong_batched_formula_fails_check_batched_grad(monkeypatch):
    # the batched backward (one pass for a batch of grad_outputs) is what check_batched_grad
    # compares with one backward per grad_output: a batched formula that is wrong fails it
    from ember.autograd import _batched
    x = ember.tensor(np.array([[1.0, 2.0], [3.0, 4.0]]), requires_grad=True)
    fn = lambda t: t.sum(0)  # noqa: E731
    assert autograd.gradcheck(fn, (x,), check_batched_grad=True)
    per_row = _batched.per_row

    def wrong(task, node, grads, needed):
        return [None if g is None else g * 2 for g in per_row(task, node, grads, needed)]
    monkeypatch.setattr(_batched, "apply", wrong)
    error = catch(lambda: autograd.gradcheck(fn, (x,), check_batched_grad=True))
    assert error[0] == "GradcheckError"
    assert error[1].startswith("For output 0 and input 0:\n\ngradcheck or gradgradcheck failed "
                               "while testing batched gradient computation.")
    assert "\n\nGot:\ntensor(" in error[1] and "\n\nExpected:\ntensor(" in error[1]
    assert autograd.gradcheck(fn, (x,), check_batched_grad=False)
