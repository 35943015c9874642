"""Custom ``autograd.Function``: both styles, ctx features, error texts, node names, and double
backward. PyTorch 2.13's behaviour, compared with torch where installed.
"""
import importlib

import numpy as np
import pytest
from oracle import error_of, same

import ember
from ember import autograd
from ember.autograd import Function
from ember.autograd.function import once_differentiable

ERR_SECOND = (
    "Trying to backward through the graph a second time (or directly access saved tensors after "
    "they have already been freed). Saved intermediate values of the graph are freed when you "
    "call .backward() or autograd.grad(). Specify retain_graph=True if you need to backward "
    "through the graph a second time or if you need to access saved tensors after calling "
    "backward.")
HINT = ("Hint: enable anomaly detection to find the operation that failed to compute its "
        "gradient, with ember.autograd.set_detect_anomaly(True, check_nan=False).")


def leaf(values):
    return ember.tensor(values, requires_grad=True)


def arr(t):
    return np.asarray(t.detach().numpy())


def functions(torch):
    """The same custom Functions, written against ``torch`` (the real one or ember)."""
    class Exp(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            r = x.exp()
            ctx.save_for_backward(r)
            return r

        @staticmethod
        def backward(ctx, g):
            (r,) = ctx.saved_tensors
            return g * r

    class Scale(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, k):
            ctx.k = k
            return x * k

        @staticmethod
        def backward(ctx, g):
            return g * ctx.k, None

    class Mul(torch.autograd.Function):  # the forward + setup_context style
        @staticmethod
        def forward(x, y):
            return x * y

        @staticmethod
        def setup_context(ctx, inputs, output):
            x, y = inputs
            ctx.save_for_backward(x, y)

        @staticmethod
        def backward(ctx, g):
            x, y = ctx.saved_tensors
            return g * y, g * x

    class Cube(torch.autograd.Function):  # backward written with differentiable ops
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x ** 3

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * 3 * x ** 2

    return Exp, Scale, Mul, Cube


Exp, Scale, Mul, Cube = functions(ember)



def _dirty_function(torch, write, backward):
    """A Function that writes its input in place with ``write`` (``lambda x: x.mul_(2)``),
    marks it dirty and returns it; its gradient is ``backward(g)``."""
    class InPlace(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            write(x)
            ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx, g):
            return backward(g)
    return InPlace

class TestBasics:
    def test_static_forward_backward(self):
        x = leaf([0., 1.])
        y = Exp.apply(x)
        np.testing.assert_allclose(arr(y), np.exp([0., 1.]), rtol=1e-6)
        assert y.requires_grad and not y.is_leaf
        y.sum().backward()
        np.testing.assert_allclose(arr(x.grad), np.exp([0., 1.]), rtol=1e-6)

    def test_setup_context_style(self):
        x, w = leaf([1., 2.]), leaf([3., 4.])
        m = Mul.apply(x, w)
        assert m.tolist() == [3., 8.]
        m.sum().backward()
        assert x.grad.tolist() == [3., 4.] and w.grad.tolist() == [1., 2.]

    def test_node_name(self):
        x = leaf([1.])
        y = Exp.apply(x)
        assert type(y.grad_fn).__name__ == "ExpBackward" and y.grad_fn.name() == "ExpBackward"
        assert repr(y) == "tensor([2.7183], grad_fn=<ExpBackward>)"
        assert Mul.apply(x, x).grad_fn.name() == "MulBackward"
        assert Scale.apply(x, 2.).grad_fn.name() == "ScaleBackward"

    def test_next_functions(self):
        x = leaf([1., 2.])
        s = Scale.apply(x * 1, 3.)
        ((fn, nr),) = s.grad_fn.next_functions
        assert fn.name() == "MulBackward0" and nr == 0
        m = Mul.apply(x, ember.ones(2))
        (acc, nr0), (none, nr1) = m.grad_fn.next_functions
        assert type(acc).__name__ == "AccumulateGrad" and acc.variable is x
        assert none is None and (nr0, nr1) == (0, 0)

    def test_non_tensor_arguments(self):
        x = leaf([1., 2.])
        y = Scale.apply(x, 3.0)
        assert y.tolist() == [3., 6.]
        y.sum().backward()
        assert x.grad.tolist() == [3., 3.]

    def test_keyword_arguments(self):
        x = leaf([1., 2.])
        y = Scale.apply(x, k=2.0)
        assert y.tolist() == [2., 4.] and y.grad_fn.name() == "ScaleBackward"

    def test_no_input_requires_grad(self):
        y = Exp.apply(ember.tensor([1., 2.]))
        assert not y.requires_grad and y.grad_fn is None

    def test_under_no_grad(self):
        with ember.no_grad():
            y = Exp.apply(leaf([1.]))
        assert not y.requires_grad and y.grad_fn is None

    def test_multiple_outputs_and_integer_output(self):
        class Split(Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2, (x > 0).long()

            @staticmethod
            def backward(ctx, g, gi):
                return g * 2

        x = leaf([-1., 1.])
        a, i = Split.apply(x)
        assert a.requires_grad and a.grad_fn.name() == "SplitBackward"
        assert i.dtype is ember.int64 and not i.requires_grad and i.grad_fn is None
        a.sum().backward()
        assert x.grad.tolist() == [2., 2.]

    def test_output_index_and_gradients_of_two_outputs(self):
        class Two(Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2, x * 3

            @staticmethod
            def backward(ctx, ga, gb):
                return ga * 2 + gb * 3

        x = leaf([1., 2.])
        a, b = Two.apply(x)
        assert (a.output_nr, b.output_nr) == (0, 1) and a.grad_fn is b.grad_fn
        (a.sum() + 10 * b.sum()).backward()
        assert x.grad.tolist() == [32., 32.]

    def test_saving_an_intermediate(self):
        class F(Function):
            @staticmethod
            def forward(ctx, x):
                e = x.exp()
                ctx.save_for_backward(e)
                return e * 2

            @staticmethod
            def backward(ctx, g):
                (e,) = ctx.saved_tensors
                return g * 2 * e

        x = leaf([0., 1.])
        F.apply(x).sum().backward()
        np.testing.assert_allclose(arr(x.grad), 2 * np.exp([0., 1.]), rtol=1e-6)

    def test_save_none(self):
        class F(Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(None, x)
                return x * 2

            @staticmethod
            def backward(ctx, g):
                a, b = ctx.saved_tensors
                assert a is None
                return g * b

        x = leaf([0., 1.])
        F.apply(x).sum().backward()
        assert x.grad.tolist() == [0., 1.]

    def test_missing_backward(self):
        class F(Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2

        with pytest.raises(NotImplementedError) as e:
            F.apply(leaf([1.])).sum().backward()
        assert str(e.value) == ("You must implement either the backward or vjp method for your "
                                "custom autograd.Function to use it with backward mode AD.")

    def test_oracle(self):
        def body(torch):
            Exp, Scale, Mul, _ = functions(torch)
            x = torch.tensor([1., 2.], requires_grad=True)
            w = torch.tensor([3., 4.], requires_grad=True)
            y, s, m = Exp.apply(x), Scale.apply(x, 3.0), Mul.apply(x, w)
            out = [y, s, m, y.grad_fn.name(), s.grad_fn.name(), m.grad_fn.name(), repr(m)]
            (y.sum() + s.sum() + m.sum()).backward()
            return out + [x.grad, w.grad]
        same(body, rtol=1e-6)


class TestSavedTensors:
    def test_freed_after_backward(self):
        x = leaf([1., 2.])
        y = Exp.apply(x)
        np.testing.assert_allclose(arr(y.grad_fn.saved_tensors[0]), arr(y))
        y.sum().backward()
        with pytest.raises(RuntimeError) as e:
            _ = y.grad_fn.saved_tensors
        assert str(e.value) == ERR_SECOND
        with pytest.raises(RuntimeError) as e:
            y.sum().backward()
        assert str(e.value) == ERR_SECOND

    def test_retain_graph(self):
        x = leaf([1., 2.])
        y = Exp.apply(x)
        y.sum().backward(retain_graph=True)
        y.sum().backward()
        np.testing.assert_allclose(arr(x.grad), 2 * np.exp([1., 2.]), rtol=1e-6)

    def test_saved_output_is_the_output(self):
        x = leaf([1., 2.])
        y = Exp.apply(x)
        (r,) = y.grad_fn.saved_tensors
        assert r.grad_fn is y.grad_fn and r.requires_grad
        np.testing.assert_allclose(arr(r), arr(y))

    def test_modified_saved_input(self):
        x, w = leaf([1., 2.]), leaf([3., 4.])
        m = Mul.apply(x, w)
        with ember.no_grad():
            w.add_(1)
        with pytest.raises(RuntimeError) as e:
            m.sum().backward()
        assert str(e.value) == (
            "one of the variables needed for gradient computation has been modified by an "
            "inplace operation: [ember.FloatTensor [2]] is at version 1; expected version 0 "
            "instead. " + HINT)

    def test_modified_saved_output(self):
        y = Exp.apply(leaf([1., 2.]))
        y.add_(1)
        with pytest.raises(RuntimeError) as e:
            y.sum().backward()
        assert str(e.value) == (
            "one of the variables needed for gradient computation has been modified by an "
            "inplace operation: [ember.FloatTensor [2]], which is output 0 of Exp, is at version "
            "1; expected version 0 instead. " + HINT)

    def test_modified_saved_non_leaf(self):
        x, w = leaf([1., 2.]), leaf([3., 4.])
        h = x * 2
        m = Mul.apply(h, w)
        h.mul_(2)
        with pytest.raises(RuntimeError) as e:
            m.sum().backward()
        assert str(e.value) == (
            "one of the variables needed for gradient computation has been modified by an "
            "inplace operation: [ember.FloatTensor [2]], which is output 0 of Mul, is at version "
            "1; expected version 0 instead. " + HINT)

    def test_saved_variables_is_deprecated(self):
        y = Exp.apply(leaf([1., 2.]))
        with pytest.warns(DeprecationWarning) as rec:
            saved = y.grad_fn.saved_variables
        assert [str(w.message) for w in rec] == [
            "'saved_variables' is deprecated; use 'saved_tensors'"]
        assert isinstance(saved, tuple) and len(saved) == 1
        np.testing.assert_allclose(arr(saved[0]), arr(y))

    def test_only_tensors_can_be_saved(self):
        class F(Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(3)
                return x * 2

            @staticmethod
            def backward(ctx, g):
                return g

        with pytest.raises(TypeError) as e:
            F.apply(leaf([1.]))
        assert str(e.value) == "save_for_backward can only save variables, but argument 0 is of " \
                               "type int"

    def test_only_tensors_can_be_saved_position(self):
        class F(Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x, 3)
                return x * 2

            @staticmethod
            def backward(ctx, g):
                return g

        with pytest.raises(TypeError) as e:
            F.apply(leaf([1.]))
        assert str(e.value) == "save_for_backward can only save variables, but argument 1 is of " \
                               "type int"

    def test_oracle(self):
        def body(torch):
            def catch(f):
                try:
                    return f()
                except Exception as e:  # noqa: BLE001
                    return (type(e).__name__, str(e))
            Exp, _, Mul, _ = functions(torch)
            out = []
            x = torch.tensor([1., 2.], requires_grad=True)
            w = torch.tensor([3., 4.], requires_grad=True)
            m = Mul.apply(x, w)
            with torch.no_grad():
                w.add_(1)
            out.append(catch(lambda: m.sum().backward()))
            y = Exp.apply(x)
            y.add_(1)
            out.append(catch(lambda: y.sum().backward()))
            y = Exp.apply(x)
            out.append(y.grad_fn.saved_variables)
            y.sum().backward()
            out.append(catch(lambda: y.grad_fn.saved_tensors))
            return out
        same(body, rtol=1e-6)


class TestCtxFeatures:
    def test_needs_input_grad(self):
        seen = []

        class F(Function):
            @staticmethod
            def forward(ctx, a, b, k, c):
                seen.append(ctx.needs_input_grad)
                return a * b * k + c

            @staticmethod
            def backward(ctx, g):
                seen.append(ctx.needs_input_grad)
                return g, g, None, g

        a, b, c = leaf([1.]), ember.tensor([2.]), leaf([3.])
        F.apply(a, b, 2, c).sum().backward()
        F.apply(b, b, 2, b)
        assert seen == [(True, False, False, True), (True, False, False, True),
                        (False, False, False, False)]
        assert a.grad.tolist() == [1.] and c.grad.tolist() == [1.] and b.grad is None

    def test_mark_dirty(self):
        class AddOne(Function):
            @staticmethod
            def forward(ctx, x):
                x.add_(1)
                ctx.mark_dirty(x)
                return x

            @staticmethod
            def backward(ctx, g):
                return g

        x = leaf([1., 2.])
        h = x * 2
        r = AddOne.apply(h)
        assert r is h and h.tolist() == [3., 5.]
        assert h._version == 2 and h.grad_fn.name() == "AddOneBackward"
        (h * 3).sum().backward()
        assert x.grad.tolist() == [6., 6.]

    def test_mark_dirty_on_a_leaf(self):
        class AddOne(Function):
            @staticmethod
            def forward(ctx, x):
                x.add_(1)
                ctx.mark_dirty(x)
                return x

            @staticmethod
            def backward(ctx, g):
                return g

        with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
            AddOne.apply(leaf([1., 2.]))

    def test_mark_dirty_on_a_leaf_message(self):
        class AddOne(Function):
            @staticmethod
            def forward(ctx, x):
                x.add_(1)
                ctx.mark_dirty(x)
                return x

            @staticmethod
            def backward(ctx, g):
                return g

        with pytest.raises(RuntimeError) as e:
            AddOne.apply(leaf([1., 2.]))
        assert str(e.value) == ("a leaf Variable that requires grad has been used in an in-place "
                                "operation.")

    def test_mark_dirty_bumps_the_version_before_refusing_a_leaf(self):
        # torch's _mark_dirty bumps every dirty tensor's version, then the leaf check refuses
        def body(torch):
            Twice = _dirty_function(torch, lambda x: x.mul_(2), lambda g: g * 2)
            x = torch.tensor([1.0, 2.0], requires_grad=True)
            try:
                Twice.apply(x)
            except RuntimeError as e:
                return str(e), x._version, x
        same(body)

    def test_returning_an_input_makes_a_new_tensor(self):
        class Id(Function):
            @staticmethod
            def forward(ctx, x):
                return x

            @staticmethod
            def backward(ctx, g):
                return g * 2

        x = leaf([1., 2.])
        y = Id.apply(x)
        assert y is not x and x.is_leaf and not y.is_leaf
        assert y.grad_fn.name() == "IdBackward"
        y.sum().backward()
        assert x.grad.tolist() == [2., 2.]

    def test_mark_non_differentiable(self):
        class Two(Function):
            @staticmethod
            def forward(ctx, x):
                a, b = x * 2, x * 3
                ctx.mark_non_differentiable(b)
                return a, b

            @staticmethod
            def backward(ctx, ga, gb):
                assert gb is not None and not arr(gb).any()  # materialized zeros
                return ga * 2

        x = leaf([3., 1., 2.])
        a, b = Two.apply(x)
        assert a.requires_grad and not b.requires_grad and b.grad_fn is None and b.is_leaf
        a.sum().backward()
        assert x.grad.tolist() == [2., 2., 2.]

    def test_set_materialize_grads(self):
        seen = []

        class Two(Function):
            @staticmethod
            def forward(ctx, x, materialize):
                ctx.set_materialize_grads(materialize)
                return x * 2, x * 3

            @staticmethod
            def backward(ctx, ga, gb):
                seen.append(gb if gb is None else arr(gb).tolist())
                r = ga * 2
                return (r if gb is None else r + gb * 3), None

        x = leaf([1., 2.])
        Two.apply(x, True)[0].sum().backward()
        Two.apply(x, False)[0].sum().backward()
        assert seen == [[0., 0.], None]
        assert x.grad.tolist() == [4., 4.]

    def test_grads_of_non_tensor_outputs_oracle(self):
        # a non-tensor output (a number, None) gets None, materialize_grads or not; a tensor
        # output that requires no grad gets zeros unless materialize_grads is off
        def body(torch):
            seen = []

            class Mixed(torch.autograd.Function):
                @staticmethod
                def forward(ctx, x, mat):
                    ctx.set_materialize_grads(mat)
                    kept = x.detach() * 3
                    ctx.mark_non_differentiable(kept)
                    return x * 2, 7, None, kept, torch.ones(2), x * 5

                @staticmethod
                def backward(ctx, *grads):
                    seen.append(grads)
                    return grads[0], None

            x = torch.tensor([1., 2.], requires_grad=True)
            for mat in (True, False):
                Mixed.apply(x, mat)[0].sum().backward()
            return seen, x.grad

        same(body)

    @pytest.mark.parametrize("materialize", [True, False])
    @pytest.mark.parametrize("between", ["none", "exp"])
    def test_backward_called_with_undefined_gradients_oracle(self, materialize, between):
        # torch's engine calls every node it reaches: a Function below one whose backward
        # returns None (through a built-in node or not) has its backward called, with None
        # or with zeros as it materializes them, and its leaf gets that zero gradient
        def body(torch):
            seen = []

            class Below(torch.autograd.Function):
                @staticmethod
                def forward(ctx, x):
                    ctx.set_materialize_grads(materialize)
                    return x * 2

                @staticmethod
                def backward(ctx, g):
                    seen.append(g)
                    return g

            class DropsGradient(torch.autograd.Function):
                @staticmethod
                def forward(ctx, x):
                    return x * 2

                @staticmethod
                def backward(ctx, g):
                    return None

            x = torch.tensor([1., 2.], requires_grad=True)
            y = Below.apply(x)
            DropsGradient.apply(y.exp() if between == "exp" else y).sum().backward()
            return seen, x.grad

        same(body)

    def test_ctx_features_oracle(self):
        def body(torch):
            seen = []

            class Two(torch.autograd.Function):
                @staticmethod
                def forward(ctx, x, mat):
                    ctx.set_materialize_grads(mat)
                    a, b = x * 2, x * 3
                    ctx.mark_non_differentiable(b)
                    return a, b

                @staticmethod
                def backward(ctx, ga, gb):
                    seen.append((ga, gb))
                    return ga * 2, None

            class AddOne(torch.autograd.Function):
                @staticmethod
                def forward(ctx, x):
                    x.add_(1)
                    ctx.mark_dirty(x)
                    return x

                @staticmethod
                def backward(ctx, g):
                    return g

            x = torch.tensor([1., 2.], requires_grad=True)
            a, b = Two.apply(x, True)
            a.sum().backward()
            a, b = Two.apply(x, False)
            a.sum().backward()
            h = x * 2
            v0 = h._version
            AddOne.apply(h)
            (h * 3).sum().backward()
            return seen, x.grad, b.requires_grad, v0, h._version, h.grad_fn.name()
        same(body)


class TestOnceDifferentiable:
    def test_error_node_oracle(self):
        def body(torch):
            once = torch.autograd.function.once_differentiable

            class MulCube(torch.autograd.Function):
                @staticmethod
                def forward(ctx, x, w):
                    ctx.save_for_backward(x, w)
                    return x ** 3 * w

                @staticmethod
                @once
                def backward(ctx, g):
                    x, w = ctx.saved_tensors
                    return g * 3 * x ** 2 * w, g * x ** 3

            x = torch.tensor([1., 2.], requires_grad=True)
            w = torch.tensor([0.5, -1.], requires_grad=True)
            v = torch.ones(2, requires_grad=True)
            gx, gw = torch.autograd.grad(MulCube.apply(x, w), (x, w), v, create_graph=True)
            out = [gx, gw, gx.grad_fn.name(), repr(gx)[-16:], gw.grad_fn is gx.grad_fn,
                   gw.output_nr, len(gx.grad_fn.next_functions)]
            try:
                (gx.sum() + gw.sum()).backward()
            except RuntimeError as e:
                out.append(str(e))
            plain = torch.autograd.grad(MulCube.apply(x, w), (x, w), torch.ones(2),
                                        create_graph=True)
            return out, plain
        same(body)

    def test_backward_runs_without_grad(self):
        seen = []

        class Sq(Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x ** 2

            @staticmethod
            @once_differentiable
            def backward(ctx, g):
                seen.append(ember.is_grad_enabled())
                (x,) = ctx.saved_tensors
                return g * 2 * x

        x = leaf([1., 2.])
        (g,) = autograd.grad(Sq.apply(x).sum(), x, create_graph=True)
        assert seen == [False]
        assert g.tolist() == [2., 4.] and not g.requires_grad and g.grad_fn is None
        (g2,) = autograd.grad(Sq.apply(x).sum(), x)
        assert g2.tolist() == [2., 4.]

    def test_result_is_marked_when_grad_output_requires_grad(self):
        class Cube1(Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x ** 3

            @staticmethod
            @once_differentiable
            def backward(ctx, g):
                (x,) = ctx.saved_tensors
                return g * 3 * x ** 2

        x = leaf([1., 2.])
        v = ember.ones(2, requires_grad=True)
        (g,) = autograd.grad(Cube1.apply(x), x, v, create_graph=True)
        assert g.requires_grad

    def test_oracle(self):
        def body(torch):
            once = importlib.import_module(torch.__name__ + ".autograd.function") \
                .once_differentiable

            class Sq(torch.autograd.Function):
                @staticmethod
                def forward(ctx, x):
                    ctx.save_for_backward(x)
                    return x ** 2

                @staticmethod
                @once
                def backward(ctx, g):
                    (x,) = ctx.saved_tensors
                    return g * 2 * x, torch.is_grad_enabled()

            class Sq2(Sq):
                @staticmethod
                @once
                def backward(ctx, g):
                    (x,) = ctx.saved_tensors
                    return g * 2 * x

            x = torch.tensor([1., 2.], requires_grad=True)
            (g,) = torch.autograd.grad(Sq2.apply(x).sum(), x, create_graph=True)
            return g, Sq.__name__
        same(body)


class TestBackwardResultChecks:
    def test_too_few_gradients(self):
        class F(Function):
            @staticmethod
            def forward(ctx, x, y):
                return x * y

            @staticmethod
            def backward(ctx, g):
                return g

        x = leaf([1., 2.])
        with pytest.raises(RuntimeError) as e:
            F.apply(x, x).sum().backward()
        assert str(e.value) == ("function FBackward returned an incorrect number of gradients "
                                "(expected 2, got 1)")

    def test_too_many_gradients(self):
        class F(Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2

            @staticmethod
            def backward(ctx, g):
                return g, g

        with pytest.raises(RuntimeError) as e:
            F.apply(leaf([1., 2.])).sum().backward()
        assert str(e.value) == ("function FBackward returned an incorrect number of gradients "
                                "(expected 1, got 2)")

    def test_extra_nones_are_allowed(self):
        class G(Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2

            @staticmethod
            def backward(ctx, g):
                return g, None, None

        x = leaf([1., 2.])
        G.apply(x).sum().backward()
        assert x.grad.tolist() == [1., 1.]

    def test_wrong_shape(self):
        class F(Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2

            @staticmethod
            def backward(ctx, g):
                return ember.ones(3)

        with pytest.raises(RuntimeError) as e:
            F.apply(leaf([1., 2.])).sum().backward()
        assert str(e.value) == ("Function FBackward returned an invalid gradient at index 0 - got "
                                "[3] but expected shape compatible with [2]")

    def test_broadcastable_shape_is_summed(self):
        class F(Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2

            @staticmethod
            def backward(ctx, g):
                return ember.ones(3, 2)

        x = leaf([1., 2.])
        F.apply(x).sum().backward()
        assert x.grad.tolist() == [3., 3.]

    def test_gradient_for_a_non_tensor_input(self):
        class F(Function):
            @staticmethod
            def forward(ctx, x, k):
                return x * k

            @staticmethod
            def backward(ctx, g):
                return g, g

        with pytest.raises(RuntimeError) as e:
            F.apply(leaf([1., 2.]), 2.).sum().backward()
        assert str(e.value) == ("function FBackward returned a gradient different than None at "
                                "position 2, but the corresponding forward input was not a "
                                "Variable")

    def test_gradient_that_is_not_a_tensor(self):
        class F(Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2

            @staticmethod
            def backward(ctx, g):
                return 1.0

        with pytest.raises(RuntimeError) as e:
            F.apply(leaf([1., 2.])).sum().backward()
        assert str(e.value) == "expected Variable or None (got float)"

    def test_oracle(self):
        def body(torch):
            def catch(f):
                try:
                    return f()
                except Exception as e:  # noqa: BLE001
                    return (type(e).__name__, str(e))

            class F(torch.autograd.Function):
                @staticmethod
                def forward(ctx, x, y):
                    return x * y

                @staticmethod
                def backward(ctx, g):
                    return g

            class Shape(torch.autograd.Function):
                @staticmethod
                def forward(ctx, x):
                    return x * 2

                @staticmethod
                def backward(ctx, g):
                    return torch.ones(3)

            class NonTensor(torch.autograd.Function):
                @staticmethod
                def forward(ctx, x, k):
                    return x * k

                @staticmethod
                def backward(ctx, g):
                    return g, g

            x = torch.tensor([1., 2.], requires_grad=True)
            return [catch(lambda: F.apply(x, x).sum().backward()),
                    catch(lambda: Shape.apply(x).sum().backward()),
                    catch(lambda: NonTensor.apply(x, 2.).sum().backward())]
        same(body)


class TestDoubleBackward:
    def test_cube_derivatives(self):
        x = ember.tensor(np.array([1., 2.]), requires_grad=True)
        (g,) = autograd.grad(Cube.apply(x).sum(), x, create_graph=True)
        assert g.requires_grad
        (g2,) = autograd.grad(g.sum(), x, create_graph=True)
        (g3,) = autograd.grad(g2.sum(), x)
        assert g.tolist() == [3., 12.] and g2.tolist() == [6., 12.] and g3.tolist() == [6., 6.]

    def test_hessian_vector_product_through_function(self):
        x, w = ember.tensor(np.array([1., 2.]), requires_grad=True), \
            ember.tensor(np.array([3., -1.]), requires_grad=True)
        f = (Mul.apply(x, w) * x).sum()  # sum(w x^2)
        gx, gw = autograd.grad(f, [x, w], create_graph=True)
        assert gx.tolist() == [6., -4.] and gw.tolist() == [1., 4.]
        v = ember.tensor(np.array([1., 1.]))
        hx, hw = autograd.grad((gx * v).sum(), [x, w])
        assert hx.tolist() == [6., -2.] and hw.tolist() == [2., 4.]

    def test_gradcheck(self):
        x = ember.tensor(np.array([0.5, -1.5, 2.0]), requires_grad=True)
        assert autograd.gradcheck(Cube.apply, (x,))
        assert autograd.gradcheck(Exp.apply, (x,))
        y = ember.tensor(np.array([1.0, 2.0, -0.5]), requires_grad=True)
        assert autograd.gradcheck(Mul.apply, (x, y))

    def test_gradgradcheck(self):
        x = ember.tensor(np.array([0.5, -1.5, 2.0]), requires_grad=True)
        assert autograd.gradgradcheck(Cube.apply, (x,))

    def test_oracle(self):
        def body(torch):
            Exp, _, Mul, Cube = functions(torch)
            x = torch.tensor([1., 2.], dtype=torch.float64, requires_grad=True)
            w = torch.tensor([3., -1.], dtype=torch.float64, requires_grad=True)
            (g,) = torch.autograd.grad(Cube.apply(x).sum(), x, create_graph=True)
            (g2,) = torch.autograd.grad(g.sum(), x, create_graph=True)
            (g3,) = torch.autograd.grad(g2.sum(), x)
            f = (Mul.apply(x, w) * Exp.apply(x)).sum()
            gx, gw = torch.autograd.grad(f, [x, w], create_graph=True)
            h = torch.autograd.grad((gx * gw).sum(), [x, w])
            return g, g2, g3, gx, gw, h
        same(body, rtol=1e-10, grad_fn=False)


def test_a_dirty_view_of_a_multi_output_op_is_refused_as_being_modified():
    """The inputs' edges are collected before forward runs, as torch's: a split output that
    forward writes in place and marks dirty is refused with torch's direct message ('is being
    modified inplace'), not the one for a view whose base changed (difftest 22000673)."""
    def body(torch):
        Tanh = _dirty_function(torch, lambda x: x.tanh_(), lambda g: g)
        base = torch.ones(4, 2, requires_grad=True) * 2
        Tanh.apply(base.split(2, 0)[0])
    same(body)


def test_edges_are_the_inputs_history_before_forward():
    """A view that forward writes in place (marked dirty) is connected through the history it
    came with, as torch's Function collects its edges before forward."""
    def body(torch):
        Double = _dirty_function(torch, lambda x: x.mul_(2), lambda g: g * 2)
        x = torch.ones(3, requires_grad=True)
        base = x * 1
        view = base[:2]
        out = Double.apply(view)
        names = [type(f).__name__ if f is not None else None
                 for f, _ in out.grad_fn.next_functions]
        base.sum().backward()
        return names, out, x.grad, base.grad_fn.name()
    same(body)


def test_a_bfloat16_or_float8_output_takes_the_function_node():
    """A Function's result of a reduced float dtype requires grad and is differentiated through
    its backward, as any float result (difftest 26000574, 27000444: a bfloat16 result of an
    autocast region gave an output that silently required no grad)."""
    def body(torch):
        class Double(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2

            @staticmethod
            def backward(ctx, g):
                return g * 2

        class ToFloat8(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x.to(torch.float8_e4m3fn)

            @staticmethod
            def backward(ctx, g):
                return g.float()

        x = torch.tensor([1.5, -2.0], dtype=torch.bfloat16, requires_grad=True)
        y = Double.apply(x)
        y.sum().backward()
        w = torch.tensor([0.5, 1.0], requires_grad=True)
        with torch.autocast("cpu", dtype=torch.bfloat16):
            z = torch.mm(w[None], torch.ones(2, 2))
        u = Double.apply(z)
        f8 = ToFloat8.apply(w)
        return y, x.grad, u, u.grad_fn.name(), f8.requires_grad
    same(body)


def test_a_dirty_input_loses_its_grad_when_the_function_is_recorded():
    """A tensor a recorded Function marks dirty has its ``.grad`` reset, as torch's: a
    retained gradient then accumulates from None on the next backward (difftest 26000269:
    ember kept the old one, and the next backward added to it). Outside recording the
    ``.grad`` stays."""
    def body(torch):
        Double = _dirty_function(torch, lambda x: x.mul_(2), lambda g: g * 2)
        a = torch.tensor([0.32, -1.63, 1.7], requires_grad=True)
        t = a * 2
        t.retain_grad()
        t.sum().backward(retain_graph=True)
        before = t.grad.clone()
        Double.apply(t)
        reset = t.grad
        t.sum().backward()
        plain = torch.ones(3)
        plain.grad = torch.ones(3)
        Double.apply(plain)
        return before, reset, t.grad, t.retains_grad, a.grad, plain.grad
    same(body)


class TestUnderVmap:
    """A Function called under vmap runs its batching rule: its own ``vmap`` staticmethod or
    the one ``generate_vmap_rule=True`` makes from forward, setup_context and backward."""

    @staticmethod
    def rules(torch):
        class Twice(torch.autograd.Function):  # its own rule: ops on the physical values
            @staticmethod
            def forward(x):
                return x * 2

            @staticmethod
            def setup_context(ctx, inputs, output):
                pass

            @staticmethod
            def backward(ctx, g):
                return g * 2

            @staticmethod
            def vmap(info, in_dims, x):
                return x * 2, in_dims[0]

        class MulAdd(torch.autograd.Function):  # generated rule: saved tensors, two outputs
            generate_vmap_rule = True

            @staticmethod
            def forward(x, w, k):
                return x * w * k, (x + w).exp()

            @staticmethod
            def setup_context(ctx, inputs, output):
                x, w, k = inputs
                ctx.k = k
                ctx.save_for_backward(x, w, output[1])

            @staticmethod
            def backward(ctx, ga, gb):
                x, w, e = ctx.saved_tensors
                return ga * w * ctx.k + gb * e, ga * x * ctx.k + gb * e, None

        return Twice, MulAdd

    def test_own_rule_oracle(self):
        def body(torch):
            Twice, _ = self.rules(torch)
            x = torch.arange(6.).reshape(2, 3).requires_grad_()
            y = torch.vmap(Twice.apply, in_dims=1)(x)
            (y * torch.arange(6.).reshape(3, 2)).sum().backward()
            return y, x.grad

        # (not the node names: ember's batched tensors hold the batch dimension first, so the
        # rule gets in_dims (0,) and no permute follows its mul)
        same(body, grad_fn=False)

    def test_generated_rule_oracle(self):
        def body(torch):
            _, MulAdd = self.rules(torch)
            x = torch.arange(6.).reshape(3, 2).div(5).requires_grad_()
            w = torch.tensor([0.5, -1.], requires_grad=True)  # not batched: summed gradient
            a, b = torch.vmap(MulAdd.apply, in_dims=(1, None, None))(x, w, 3.)
            (a * 2 + b).sum().backward()
            return a, b, type(a.grad_fn).__name__, x.grad, w.grad

        same(body)

    def test_errors_oracle(self):
        def body(torch):
            class NoRule(torch.autograd.Function):  # (neither a vmap nor generate_vmap_rule)
                @staticmethod
                def forward(x):
                    return x.sin()

                @staticmethod
                def setup_context(ctx, inputs, output):
                    ctx.unused = inputs

            class OldStyle(torch.autograd.Function):
                generate_vmap_rule = True

                @staticmethod
                def forward(ctx, x):
                    return x * 2

            x = torch.ones(2, 3)
            return (error_of(lambda: torch.vmap(NoRule.apply)(x)),
                    error_of(lambda: torch.vmap(OldStyle.apply)(x)))

        same(body)


def _threads_applying_a_function(torch):
    """Two Functions applied in two threads, their forwards overlapping (the first ends while
    the second runs), then a dual level in the main thread: its tangent is there."""
    import threading

    second_in_forward, first_done = threading.Event(), threading.Event()

    class Waits(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, first):
            if first:
                second_in_forward.wait(5)
            else:
                second_in_forward.set()
                first_done.wait(5)
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2, None

    def apply(first):
        Waits.apply(torch.ones(3, requires_grad=True), first).sum().backward()
        if first:
            first_done.set()

    threads = [threading.Thread(target=apply, args=(True,))]
    threads[0].start()
    threads.append(threading.Thread(target=apply, args=(False,)))
    threads[1].start()
    for t in threads:
        t.join()
    fwAD = torch.autograd.forward_ad
    with fwAD.dual_level():
        dual = fwAD.make_dual(torch.tensor([1.0, 2.0]), torch.tensor([1.0, 1.0]))
        return fwAD.unpack_dual(dual.sin()).tangent


def test_functions_applied_in_threads_leave_forward_ad_on():
    """Function.apply switched forward AD off for its forward in a process-wide flag and put
    back what it had read: overlapping threads left it off for good (every later jvp gave no
    tangent). Without a dual level it now touches nothing."""
    same(_threads_applying_a_function)
