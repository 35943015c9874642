"""The backward engine: ``Tensor.backward``, ``autograd.backward``, ``autograd.grad``.

Expected values and messages are PyTorch 2.13's (hard-coded, so these run without torch);
the ``same(...)`` tests also run the body on torch and compare everything that comes out.
"""
import gc
import math
import sys
import threading
import warnings

import numpy as np
import pytest
from oracle import same

import ember
from ember import autograd

ERR_SECOND = (
    "Trying to backward through the graph a second time (or directly access saved tensors after "
    "they have already been freed). Saved intermediate values of the graph are freed when you "
    "call .backward() or autograd.grad(). Specify retain_graph=True if you need to backward "
    "through the graph a second time or if you need to access saved tensors after calling "
    "backward.")
ERR_SCALAR = "grad can be implicitly created only for scalar outputs"
ERR_NO_GRAD_FN = "element 0 of tensors does not require grad and does not have a grad_fn"
ERR_UNUSED = ("The differentiated Tensor at index {} appears to not have been used in the graph. "
              "Set allow_unused=True if this is the desired behavior.")
ERR_INPUT_NO_GRAD = "One of the differentiated Tensors does not require grad"
WARN_ONLY_INPUTS = (
    "only_inputs argument is deprecated and is ignored now (defaults to True). To accumulate "
    "gradient for other parts of the graph, please use ember.autograd.backward.")
WARN_GRAD_VARIABLES = "`grad_variables` is deprecated. Use `grad_tensors` instead."


def leaf(values, dtype=None):
    return ember.tensor(values, dtype=dtype, requires_grad=True)


def leaf64(values):
    # NOTE: from a float64 ndarray, so the values are exact doubles whatever tensor() does with
    # Python floats and dtype= (see test_tensor.py for that).
    return ember.tensor(np.asarray(values, dtype=np.float64), requires_grad=True)


def arr(t):
    return np.asarray(t.detach().numpy())


def shares(a, b):
    return np.shares_memory(arr(a), arr(b))


# -- Tensor.backward ---------------------------------------------------------------------------
class TestTensorBackward:
    def test_scalar_implicit_gradient(self):
        x = leaf([1., 2., 3.])
        (x * x).sum().backward()
        np.testing.assert_allclose(arr(x.grad), [2., 4., 6.])
        assert x.grad.dtype is ember.float32
        assert x.grad.requires_grad is False and x.grad.grad_fn is None

    def test_one_element_non_scalar_is_implicit_too(self):
        x = leaf([3.])
        (x * 2).backward()
        np.testing.assert_allclose(arr(x.grad), [2.])

    def test_implicit_gradient_only_for_scalars(self):
        x = leaf([1., 2., 3.])
        with pytest.raises(RuntimeError) as e:
            (x * 2).backward()
        assert str(e.value) == ERR_SCALAR
        assert x.grad is None

    def test_implicit_gradient_only_for_real_scalars(self):
        z = ember.tensor(1 + 2j, requires_grad=True)
        with pytest.raises(RuntimeError) as e:
            (z * 2).backward()
        assert str(e.value) == ("grad can be implicitly created only for real scalar outputs "
                                "but got ember.complex64")

    def test_gradient_is_a_vector_jacobian_product(self):
        x = leaf([1., 2., 3.])
        y = x * x
        y.backward(ember.tensor([1., 0.5, 2.]))
        np.testing.assert_allclose(arr(x.grad), [2., 2., 12.])

    def test_positional_gradient_and_retain_graph(self):
        a = leaf([1., 2.])
        y = a * a
        y.backward(ember.tensor([1., 1.]), True)
        y.backward(ember.tensor([1., 1.]), False)
        np.testing.assert_allclose(arr(a.grad), [4., 8.])
        with pytest.raises(RuntimeError) as e:
            y.backward(ember.tensor([1., 1.]))
        assert str(e.value) == ERR_SECOND

    def test_gradient_shape_mismatch(self):
        x = leaf([1., 2., 3.])
        with pytest.raises(RuntimeError) as e:
            (x * 2).backward(ember.ones(2))
        assert str(e.value) == ("Mismatch in shape: grad_output[0] has a shape of "
                                "ember.Size([2]) and output[0] has a shape of ember.Size([3]).")

    def test_gradient_for_zero_dim_output_must_be_zero_dim(self):
        x = leaf([1., 2., 3.])
        with pytest.raises(RuntimeError) as e:
            x.sum().backward(ember.tensor([1.]))
        assert str(e.value) == ("Mismatch in shape: grad_output[0] has a shape of "
                                "ember.Size([1]) and output[0] has a shape of ember.Size([]).")

    def test_gradient_must_be_a_tensor(self):
        x = leaf([1., 2.])
        with pytest.raises(TypeError) as e:
            x.sum().backward(1.0)
        assert str(e.value) == "'float' object is not iterable"

    def test_gradient_of_another_dtype_is_accepted(self):
        x = leaf([1., 2.])
        (x * 3).sum().backward(ember.tensor(2., dtype=ember.float64))
        assert x.grad.dtype is ember.float32
        np.testing.assert_allclose(arr(x.grad), [6., 6.])

    def test_tensor_not_requiring_grad(self):
        with pytest.raises(RuntimeError) as e:
            ember.ones(2).sum().backward()
        assert str(e.value) == ERR_NO_GRAD_FN

    def test_backward_on_a_leaf(self):
        x = leaf([1., 2.])
        g = ember.tensor([3., 4.])
        x.backward(g)
        np.testing.assert_allclose(arr(x.grad), [3., 4.])
        assert not shares(x.grad, g)

    def test_second_backward_raises_torchs_message(self):
        x = leaf([1., 2.])
        y = (x * x).sum()
        y.backward()
        with pytest.raises(RuntimeError) as e:
            y.backward()
        assert str(e.value) == ERR_SECOND
        np.testing.assert_allclose(arr(x.grad), [2., 4.])

    def test_saved_tensors_are_freed(self):
        x = leaf([1., 2.])
        y = x.exp()
        z = x * x
        (y.sum() + z.sum()).backward()
        for access in (lambda: y.grad_fn._saved_result, lambda: z.grad_fn._saved_self):
            with pytest.raises(RuntimeError) as e:
                access()
            assert str(e.value) == ERR_SECOND

    def test_retain_graph_allows_a_second_backward(self):
        x = leaf([1., 2.])
        y = (x * x).sum()
        y.backward(retain_graph=True)
        np.testing.assert_allclose(arr(y.grad_fn.next_functions[0][0]._saved_self), [1., 2.])
        y.backward()
        np.testing.assert_allclose(arr(x.grad), [4., 8.])

    @pytest.mark.parametrize("expr, expected", [
        ("x.sum()", [2., 2.]), ("(x + x).sum()", [4., 4.]), ("x.mean()", [1., 1.]),
        ("x.view(2, 1).sum()", [2., 2.]), ("(x - 1).sum()", [2., 2.]),
        ("x.clone().sum()", [2., 2.])])
    def test_second_backward_without_saved_tensors_works(self, expr, expected):
        # torch frees only saved *tensors*; a graph that saved none can be replayed.
        x = leaf([1., 2.])
        z = eval(expr)
        z.backward()
        z.backward()
        np.testing.assert_allclose(arr(x.grad), expected)

    def test_freed_node_keeps_its_non_tensor_values(self):
        def body(torch):
            x = torch.tensor([1., 2.], requires_grad=True)
            y = (x ** 3).sum()
            y.backward()
            pow_node = y.grad_fn.next_functions[0][0]
            out = [pow_node._saved_exponent]
            for f in (lambda: pow_node._saved_self, y.backward):
                try:
                    f()
                except RuntimeError as e:
                    out.append(str(e))
            return out
        same(body)

    def test_second_backward_through_nodes_that_save_nothing(self):
        x = leaf([1., 2.])
        z = -x
        z.backward(ember.ones(2))
        z.backward(ember.ones(2))
        np.testing.assert_allclose(arr(x.grad), [-2., -2.])

    def test_create_graph_implies_retain_graph(self):
        x = leaf([1., 2.])
        y = (x ** 3).sum()
        (g,) = autograd.grad(y, x, create_graph=True)
        y.backward()  # the graph was retained
        np.testing.assert_allclose(arr(x.grad), [3., 12.])
        np.testing.assert_allclose(arr(g), [3., 12.])

    def test_create_graph_with_retain_graph_false_frees(self):
        x = leaf([1., 2.])
        y = (x * x).sum()
        (g,) = autograd.grad(y, x, create_graph=True, retain_graph=False)
        (gg,) = autograd.grad(g.sum(), x)  # the new graph is usable
        np.testing.assert_allclose(arr(gg), [2., 2.])
        with pytest.raises(RuntimeError) as e:
            y.backward()
        assert str(e.value) == ERR_SECOND

    def test_backward_create_graph_makes_grad_differentiable(self):
        x = leaf([1., 2.])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # torch warns about the param <-> grad cycle
            (x ** 3).sum().backward(create_graph=True)
        g = x.grad
        assert g.requires_grad and g.grad_fn is not None
        np.testing.assert_allclose(arr(g), [3., 12.])
        (gg,) = autograd.grad(g.sum(), x)
        np.testing.assert_allclose(arr(gg), [6., 12.])

    def test_backward_returns_none(self):
        x = leaf([1.])
        assert x.sum().backward() is None

    def test_retain_variables_is_rejected(self):
        x = leaf([1.])
        with pytest.raises(TypeError) as e:
            x.sum().backward(retain_variables=True)
        assert str(e.value) == "Tensor.backward() got an unexpected keyword argument " \
                               "'retain_variables'"


# -- inputs= ------------------------------------------------------------------------------------
class TestBackwardInputs:
    def test_restricts_accumulation_to_the_given_leaves(self):
        x, w = leaf([1., 2.]), leaf([3., 4.])
        (x * w).sum().backward(inputs=[x])
        np.testing.assert_allclose(arr(x.grad), [3., 4.])
        assert w.grad is None

    def test_single_tensor_and_tuple(self):
        x, w = leaf([1., 2.]), leaf([3., 4.])
        y = (x * w).sum()
        y.backward(inputs=w, retain_graph=True)
        assert x.grad is None
        np.testing.assert_allclose(arr(w.grad), [1., 2.])
        y.backward(inputs=(x, w))
        np.testing.assert_allclose(arr(x.grad), [3., 4.])
        np.testing.assert_allclose(arr(w.grad), [2., 4.])

    def test_leaf_used_twice(self):
        x, w = leaf([1., 2.]), leaf([3., 4.])
        autograd.backward((x * w + x * x).sum(), inputs=[x])
        np.testing.assert_allclose(arr(x.grad), [5., 8.])
        assert w.grad is None

    def test_non_leaf_input_gets_grad_and_leaves_do_not(self):
        x = leaf([1., 2.])
        h = x * 2
        out = (h * h).sum()
        out.backward(inputs=[h])
        assert x.grad is None
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            np.testing.assert_allclose(arr(h.grad), [4., 8.])

    def test_non_leaf_input_is_retained_afterwards(self):
        x = leaf([1., 2.])
        h = x * 2
        out = (h * h).sum()
        out.backward(inputs=[h], retain_graph=True)
        assert h.retains_grad
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # torch does not warn: h retains its grad now
            np.testing.assert_allclose(arr(h.grad), [4., 8.])
            out.backward()
            np.testing.assert_allclose(arr(h.grad), [8., 16.])
            np.testing.assert_allclose(arr(x.grad), [8., 16.])

    def test_non_leaf_input_oracle(self):
        def body(torch):
            x = torch.tensor([1., 2.], requires_grad=True)
            h = x * 2
            out = (h * h).sum()
            out.backward(inputs=[h, x], retain_graph=True)
            first = (h.grad.clone(), x.grad.clone())
            out.backward(inputs=[x])
            return first, x.grad
        same(body)

    def test_empty_inputs(self):
        x = leaf([1.])
        with pytest.raises(RuntimeError) as e:
            x.sum().backward(inputs=[])
        assert str(e.value) == "`inputs` argument to `backward()` cannot be empty."

    def test_input_not_requiring_grad(self):
        x = leaf([1., 2.])
        with pytest.raises(RuntimeError) as e:
            (x * 2).sum().backward(inputs=[ember.ones(2)])
        assert str(e.value) == "can't retain_grad on Tensor that has requires_grad=False"


# -- autograd.backward --------------------------------------------------------------------------
class TestAutogradBackward:
    def test_several_tensors_with_grad_tensors(self):
        x = leaf([1., 2.])
        y1, y2 = x * 2, (x * x).sum()
        autograd.backward([y1, y2], [ember.tensor([1., 10.]), None])
        np.testing.assert_allclose(arr(x.grad), [4., 24.])

    def test_single_tensor_and_tuple_forms(self):
        x = leaf([1., 2.])
        autograd.backward(x.sum())
        autograd.backward((x * 3,), (ember.ones(2),))
        np.testing.assert_allclose(arr(x.grad), [4., 4.])

    def test_grad_tensors_as_a_single_tensor(self):
        x = leaf([1., 2.])
        autograd.backward(x * 3, ember.tensor([1., 2.]))
        np.testing.assert_allclose(arr(x.grad), [3., 6.])

    def test_grad_tensors_of_the_wrong_type(self):
        x = leaf([1., 2.])
        with pytest.raises(TypeError) as e:
            autograd.backward(x.sum(), [1.0])
        assert str(e.value) == "gradients can be either Tensors or None, but got float"

    def test_count_mismatch(self):
        x = leaf([1., 2.])
        with pytest.raises(RuntimeError) as e:
            autograd.backward([(x * 2).sum(), (x * 3).sum()], [None])
        assert str(e.value) == "got 2 tensors and 1 gradients"

    def test_grad_variables_warns_and_works(self):
        x = leaf([1., 2.])
        with pytest.warns(FutureWarning) as rec:
            autograd.backward((x * x).sum(), grad_variables=ember.tensor(2.))
        assert [str(w.message) for w in rec] == [WARN_GRAD_VARIABLES]
        np.testing.assert_allclose(arr(x.grad), [4., 8.])

    def test_grad_tensors_and_grad_variables_together(self):
        x = leaf([1., 2.])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with pytest.raises(RuntimeError) as e:
                autograd.backward(x.sum(), grad_tensors=ember.tensor(1.),
                                  grad_variables=ember.tensor(1.))
        assert str(e.value) == ("`grad_tensors` and `grad_variables` (deprecated) arguments both "
                                "passed to `backward()`. Please only use `grad_tensors`.")

    def test_legacy_keywords_are_rejected(self):
        x = leaf([1., 2.])
        y = x.sum()
        with pytest.raises(TypeError) as e:
            autograd.backward(variables=y)
        assert str(e.value) == "backward() got an unexpected keyword argument 'variables'"
        with pytest.raises(TypeError) as e:
            autograd.backward(y, retain_variables=True)
        assert str(e.value) == "backward() got an unexpected keyword argument 'retain_variables'"

    def test_retain_graph_and_create_graph(self):
        x = leaf([2.])
        y = (x ** 2).sum()
        autograd.backward(y, retain_graph=True)
        autograd.backward(y, create_graph=False)
        np.testing.assert_allclose(arr(x.grad), [8.])

    def test_inputs(self):
        x, w = leaf([1., 2.]), leaf([3., 4.])
        autograd.backward([(x * w).sum()], inputs=[w])
        assert x.grad is None
        np.testing.assert_allclose(arr(w.grad), [1., 2.])

    def test_oracle(self):
        def body(torch):
            x = torch.tensor([[1., 2.], [3., 4.]], requires_grad=True)
            w = torch.tensor([0.5, -1.], requires_grad=True)
            y1 = (x @ w).exp()
            y2 = (x * w).sum()
            torch.autograd.backward([y1, y2], [torch.tensor([1., 2.]), None], retain_graph=True)
            g1 = (x.grad.clone(), w.grad.clone())
            torch.autograd.backward(y1.sum(), inputs=[w])
            return g1, x.grad, w.grad
        same(body, rtol=1e-5)


# -- autograd.grad ------------------------------------------------------------------------------
class TestAutogradGrad:
    def test_returns_a_tuple_and_leaves_grad_alone(self):
        x = leaf([1., 2.])
        r = autograd.grad((x * x).sum(), x)
        assert isinstance(r, tuple) and len(r) == 1
        np.testing.assert_allclose(arr(r[0]), [2., 4.])
        assert x.grad is None
        assert not r[0].requires_grad

    def test_several_outputs_and_inputs(self):
        x, w = leaf([1., 2.]), leaf([3., 4.])
        y = x * w
        gx, gw = autograd.grad([y, (x * x).sum()], [x, w], [ember.tensor([1., 2.]), None])
        np.testing.assert_allclose(arr(gx), [5., 12.])
        np.testing.assert_allclose(arr(gw), [1., 4.])

    def test_grad_wrt_a_non_leaf(self):
        x = leaf([1., 2.])
        h = x * 2
        gh, gx = autograd.grad((h * h).sum(), [h, x])
        np.testing.assert_allclose(arr(gh), [4., 8.])
        np.testing.assert_allclose(arr(gx), [8., 16.])
        assert x.grad is None

    def test_grad_of_a_tensor_wrt_itself(self):
        x = leaf([1., 2.])
        (g,) = autograd.grad(x, x, ember.tensor([3., 4.]))
        np.testing.assert_allclose(arr(g), [3., 4.])

    def test_grad_outputs_shape_mismatch(self):
        x = leaf([1., 2., 3.])
        with pytest.raises(RuntimeError) as e:
            autograd.grad(x * 2, x, ember.ones(2))
        assert str(e.value) == ("Mismatch in shape: grad_output[0] has a shape of "
                                "ember.Size([2]) and output[0] has a shape of ember.Size([3]).")

    def test_implicit_only_for_scalars(self):
        x = leaf([1., 2.])
        with pytest.raises(RuntimeError) as e:
            autograd.grad(x * 2, x)
        assert str(e.value) == ERR_SCALAR

    def test_grad_outputs_wrong_type(self):
        x = leaf([1., 2.])
        with pytest.raises(TypeError) as e:
            autograd.grad(x.sum(), [x], [1.0])
        assert str(e.value) == "gradients can be either Tensors or None, but got float"

    def test_unused_input(self):
        x, u = leaf([1., 2.]), leaf([1.])
        with pytest.raises(RuntimeError) as e:
            autograd.grad((x * 2).sum(), [x, u])
        assert str(e.value) == ERR_UNUSED.format(1)

    def test_allow_unused(self):
        x, u = leaf([1., 2.]), leaf([1.])
        gx, gu = autograd.grad((x * 2).sum(), [x, u], allow_unused=True)
        np.testing.assert_allclose(arr(gx), [2., 2.])
        assert gu is None

    def test_materialize_grads(self):
        x, u = leaf([1., 2.]), leaf([[1.], [2.]], dtype=ember.float64)
        gx, gu = autograd.grad((x * 2).sum(), [x, u], materialize_grads=True)
        np.testing.assert_allclose(arr(gx), [2., 2.])
        assert gu.shape == (2, 1) and gu.dtype is ember.float64
        np.testing.assert_array_equal(arr(gu), [[0.], [0.]])

    def test_materialize_grads_with_allow_unused_false(self):
        x = leaf([1., 2.])
        with pytest.raises(ValueError) as e:
            autograd.grad(x.sum(), x, materialize_grads=True, allow_unused=False)
        assert str(e.value) == ("Expected allow_unused to be True or not passed when "
                                "materialize_grads=True, but got: allow_unused=False.")

    def test_input_not_requiring_grad(self):
        x = leaf([1., 2.])
        with pytest.raises(RuntimeError) as e:
            autograd.grad((x * 2).sum(), [ember.ones(2)])
        assert str(e.value) == ERR_INPUT_NO_GRAD

    def test_output_not_requiring_grad(self):
        x = leaf([1., 2.])
        with pytest.raises(RuntimeError) as e:
            autograd.grad(ember.ones(2).sum(), [x])
        assert str(e.value) == ERR_NO_GRAD_FN

    def test_empty_inputs(self):
        x = leaf([1., 2.])
        with pytest.raises(RuntimeError) as e:
            autograd.grad((x * 2).sum(), [])
        assert str(e.value) == "`inputs` argument to `grad()` cannot be empty."
        assert x.grad is None

    def test_only_inputs_false_warns(self):
        x = leaf([1., 2.])
        with pytest.warns(FutureWarning) as rec:
            (g,) = autograd.grad((x * 2).sum(), [x], only_inputs=False)
        assert [str(w.message) for w in rec] == [WARN_ONLY_INPUTS]
        np.testing.assert_allclose(arr(g), [2., 2.])
        assert x.grad is None

    def test_only_inputs_true_is_silent(self):
        x = leaf([1., 2.])
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            autograd.grad((x * 2).sum(), [x], only_inputs=True)

    def test_retain_graph(self):
        x = leaf([1., 2.])
        y = (x * x).sum()
        autograd.grad(y, x, retain_graph=True)
        (g,) = autograd.grad(y, x)
        np.testing.assert_allclose(arr(g), [2., 4.])
        with pytest.raises(RuntimeError) as e:
            autograd.grad(y, x)
        assert str(e.value) == ERR_SECOND

    def test_create_graph(self):
        x = leaf([1., 2.])
        (g,) = autograd.grad((x ** 3).sum(), x, create_graph=True)
        assert g.requires_grad and g.grad_fn is not None and not g.is_leaf
        (gg,) = autograd.grad(g.sum(), x)
        np.testing.assert_allclose(arr(gg), [6., 12.])

    def test_linear_function_second_derivative_does_not_require_grad(self):
        x = leaf([1., 2.])
        (g,) = autograd.grad((x * 3).sum(), x, create_graph=True)
        assert not g.requires_grad
        with pytest.raises(RuntimeError) as e:
            autograd.grad(g.sum(), x)
        assert str(e.value) == ERR_NO_GRAD_FN

    def test_grad_output_dtype_may_differ(self):
        x = leaf([1., 2.])
        (g,) = autograd.grad((x * 2).sum(), x, ember.tensor(2., dtype=ember.float64))
        assert g.dtype is ember.float32
        np.testing.assert_allclose(arr(g), [4., 4.])

    def test_gradient_through_a_dtype_cast(self):
        x = leaf([1., 2.])
        (g,) = autograd.grad((x.double() * 3).sum(), x)
        assert g.dtype is ember.float32
        np.testing.assert_allclose(arr(g), [3., 3.])

    def test_legacy_positional_signature_oracle(self):
        def body(torch):
            x = torch.tensor([1., 2.], requires_grad=True)
            y = x * x
            # grad(outputs, inputs, grad_outputs, retain_graph, create_graph)
            r1 = torch.autograd.grad(y, [x], [torch.ones(2)], True, False)
            r2 = torch.autograd.grad(y, x, torch.ones(2), None, True)
            return r1, r2
        same(body)

    def test_oracle_mixture(self):
        def body(torch):
            x = torch.tensor([0.5, -1.5, 2.0], requires_grad=True)
            w = torch.tensor([[1., 2., 3.], [-1., 0., 1.]], requires_grad=True)
            u = torch.tensor(3., requires_grad=True)
            h = (w @ x).tanh()
            out = (h * u).sum() + (x.sin() * x).sum()
            r = torch.autograd.grad(out, [x, w, u, h], retain_graph=True)
            r2 = torch.autograd.grad([out, h], [u, w], [None, torch.tensor([1., -1.])],
                                     allow_unused=True)
            return r, r2
        same(body, rtol=1e-5, atol=1e-6)


# -- .grad accumulation and aliasing -------------------------------------------------------------
class TestAccumulation:
    def test_gradients_accumulate(self):
        x = leaf([1., 2.])
        (x * x).sum().backward()
        (x * 3).sum().backward()
        np.testing.assert_allclose(arr(x.grad), [5., 7.])

    def test_accumulation_is_in_place(self):
        # torch adds into the existing .grad tensor (same object) when not building a graph.
        x = leaf([1., 2.])
        x.sum().backward()
        g = x.grad
        (x * 2).sum().backward()
        assert x.grad is g
        np.testing.assert_allclose(arr(g), [3., 3.])

    def test_grad_reset_to_none_starts_over(self):
        x = leaf([1., 2.])
        x.sum().backward()
        x.grad = None
        (x * 2).sum().backward()
        np.testing.assert_allclose(arr(x.grad), [2., 2.])

    def test_zeroed_grad_accumulates_again(self):
        x = leaf([1., 2.])
        x.sum().backward()
        x.grad.zero_()
        (x * 2).sum().backward()
        np.testing.assert_allclose(arr(x.grad), [2., 2.])

    def test_add_gives_independent_grads(self):
        a, b = leaf([1., 2.]), leaf([3., 4.])
        g = ember.tensor([1., 1.])
        c = a + b
        c.backward(g)
        assert not shares(a.grad, b.grad)
        assert not shares(a.grad, g) and not shares(b.grad, g)
        a.grad.zero_()
        np.testing.assert_allclose(arr(b.grad), [1., 1.])
        np.testing.assert_allclose(arr(g), [1., 1.])
        b.grad.mul_(5)
        np.testing.assert_allclose(arr(g), [1., 1.])
        np.testing.assert_allclose(arr(a.grad), [0., 0.])
        g.fill_(7.)
        np.testing.assert_allclose(arr(b.grad), [5., 5.])

    def test_accumulating_into_grads_leaves_user_gradient_alone(self):
        a, b = leaf([1., 2.]), leaf([3., 4.])
        g = ember.tensor([1., 1.])
        (a + b).backward(g)
        (a + b).backward(g)  # in-place accumulation must not write into g
        np.testing.assert_allclose(arr(g), [1., 1.])
        np.testing.assert_allclose(arr(a.grad), [2., 2.])
        np.testing.assert_allclose(arr(b.grad), [2., 2.])

    # NOTE: only graphs whose pass-through gradients torch copies too; through view/reshape
    # torch lets a leaf's .grad alias the caller's gradient, so neither answer is asserted there.
    @pytest.mark.parametrize("make", [lambda a, b: a - b, lambda a, b: (a + b) * 1,
                                      lambda a, b: a + b + 0])
    def test_pass_through_gradients_never_alias(self, make):
        a, b = leaf([1., 2.]), leaf([3., 4.])
        g = ember.tensor([1., 1.])
        make(a, b).backward(g)
        grads = [a.grad, b.grad, g]
        for i in range(3):
            for j in range(i + 1, 3):
                assert not shares(grads[i], grads[j]), (i, j)

    def test_leaf_used_twice_gets_the_sum(self):
        a = leaf([1., 2.])
        g = ember.tensor([1., 1.])
        (a + a).backward(g)
        np.testing.assert_allclose(arr(a.grad), [2., 2.])
        np.testing.assert_allclose(arr(g), [1., 1.])

    def test_broadcast_gradient_is_writable_and_owned(self):
        x = leaf([1., 2., 3.])
        x.sum().backward()
        g = x.grad
        assert g.is_contiguous()
        g.zero_()
        np.testing.assert_allclose(arr(x.grad), [0., 0., 0.])
        x2 = leaf([[1., 2.], [3., 4.]])
        b = leaf([1., 1.])
        (x2 + b).sum().backward()
        x2.grad[0, 0] = 5.
        np.testing.assert_allclose(arr(x2.grad), [[5., 1.], [1., 1.]])
        np.testing.assert_allclose(arr(b.grad), [2., 2.])

    def test_grad_of_autograd_grad_is_owned(self):
        a, b = leaf([1., 2.]), leaf([3., 4.])
        g = ember.tensor([1., 1.])
        ga, gb = autograd.grad(a + b, [a, b], g)
        np.testing.assert_allclose(arr(ga), [1., 1.])
        ga.zero_()  # torch returns g itself here; either way gb must still be right
        np.testing.assert_allclose(arr(gb), arr(g))

    def test_retain_grad_does_not_alias(self):
        x = leaf([1., 2.])
        h = x.clone()
        h.retain_grad()
        g = ember.tensor([1., 1.])
        h.backward(g)
        for p, q in ((h.grad, x.grad), (h.grad, g), (x.grad, g)):
            assert not shares(p, q)
        h.grad.zero_()
        np.testing.assert_allclose(arr(x.grad), [1., 1.])

    def test_hook_returned_tensor_is_copied_into_grad(self):
        x = leaf([1., 2.])
        keep = ember.tensor([5., 5.])
        x.register_hook(lambda grad: keep)
        (x * 1).sum().backward()
        np.testing.assert_allclose(arr(x.grad), [5., 5.])
        keep.zero_()
        np.testing.assert_allclose(arr(x.grad), [5., 5.])
        x.grad.fill_(2.)
        np.testing.assert_allclose(arr(keep), [0., 0.])

    def test_user_assigned_grad_is_accumulated_into(self):
        # torch adds in place into whatever tensor .grad holds, a user's one included
        x = leaf([1., 2.])
        mine = ember.tensor([10., 10.])
        x.grad = mine
        (x * 2).sum().backward()
        assert x.grad is mine
        np.testing.assert_allclose(arr(mine), [12., 12.])

    def test_hook_argument_is_not_the_stored_grad(self):
        x = leaf([1., 2.])
        seen = []
        x.register_hook(lambda g: seen.append(g))
        (x * 1).sum().backward()
        x.grad.add_(100)
        np.testing.assert_allclose(arr(seen[0]), [1., 1.])
        (x * 1).sum().backward()  # accumulating must not write into the first hook argument
        np.testing.assert_allclose(arr(seen[0]), [1., 1.])
        np.testing.assert_allclose(arr(x.grad), [102., 102.])

    def test_create_graph_accumulation_is_out_of_place(self):
        x = leaf([1., 2.])
        x.grad = ember.zeros(2)
        old = x.grad
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            (x * x).sum().backward(create_graph=True)
        assert x.grad is not old
        np.testing.assert_allclose(arr(old), [0., 0.])
        np.testing.assert_allclose(arr(x.grad), [2., 4.])
        assert x.grad.requires_grad

    def test_retain_grad_accumulates(self):
        x = leaf([1., 2.])
        h = x * 3
        h.retain_grad()
        (h * h).sum().backward(retain_graph=True)
        np.testing.assert_allclose(arr(h.grad), [6., 12.])
        (h * h).sum().backward()
        np.testing.assert_allclose(arr(h.grad), [12., 24.])
        np.testing.assert_allclose(arr(x.grad), [36., 72.])

    def test_accumulation_oracle(self):
        def body(torch):
            a = torch.tensor([1., 2.], requires_grad=True)
            b = torch.tensor([3., 4.], requires_grad=True)
            g = torch.tensor([1., 1.])
            c = a + b
            c.backward(g, retain_graph=True)
            a.grad.zero_()
            first = (a.grad.clone(), b.grad.clone(), g.clone())
            c.backward(g)
            b.grad.mul_(3)
            return first, a.grad, b.grad, g
        same(body)


# -- higher order ---------------------------------------------------------------------------------
def derivatives(f, x, n):
    """f(x) and its first n derivatives at x (elementwise, via create_graph)."""
    out = [f(x)]
    y = out[0]
    for _ in range(n):
        (y,) = autograd.grad(y.sum(), x, create_graph=True)
        out.append(y)
    return out


class TestHigherOrder:
    X = (0.3, 1.0, 1.7)

    @pytest.mark.parametrize("name, f, closed", [
        ("x**3", lambda x: x ** 3,
         [lambda x: x ** 3, lambda x: 3 * x ** 2, lambda x: 6 * x, lambda x: 6 + 0 * x]),
        ("sin", lambda x: x.sin(),
         [np.sin, np.cos, lambda x: -np.sin(x), lambda x: -np.cos(x)]),
        ("exp*x", lambda x: x.exp() * x,
         [lambda x: np.exp(x) * x, lambda x: (x + 1) * np.exp(x), lambda x: (x + 2) * np.exp(x),
          lambda x: (x + 3) * np.exp(x)]),
        ("log", lambda x: x.log(),
         [np.log, lambda x: 1 / x, lambda x: -1 / x ** 2, lambda x: 2 / x ** 3]),
        ("tanh", lambda x: x.tanh(),
         [np.tanh, lambda x: 1 - np.tanh(x) ** 2,
          lambda x: -2 * np.tanh(x) * (1 - np.tanh(x) ** 2),
          lambda x: (1 - np.tanh(x) ** 2) * (6 * np.tanh(x) ** 2 - 2)]),
        ("sigmoid", lambda x: x.sigmoid(),
         [lambda x: 1 / (1 + np.exp(-x)),
          lambda x: (s := 1 / (1 + np.exp(-x))) * (1 - s),
          lambda x: (s := 1 / (1 + np.exp(-x))) * (1 - s) * (1 - 2 * s),
          lambda x: (s := 1 / (1 + np.exp(-x))) * (1 - s) * (1 - 6 * s + 6 * s * s)]),
        ("1/x", lambda x: 1 / x,
         [lambda x: 1 / x, lambda x: -1 / x ** 2, lambda x: 2 / x ** 3, lambda x: -6 / x ** 4]),
        ("sqrt", lambda x: x.sqrt(),
         [np.sqrt, lambda x: 0.5 * x ** -0.5, lambda x: -0.25 * x ** -1.5,
          lambda x: 0.375 * x ** -2.5]),
    ])
    def test_up_to_third_derivative(self, name, f, closed):
        x = leaf64(self.X)
        values = derivatives(f, x, 3)
        xs = np.array(self.X)
        for k, (v, c) in enumerate(zip(values, closed)):
            np.testing.assert_allclose(arr(v), c(xs), rtol=1e-10, atol=1e-12,
                                       err_msg=f"{name} derivative {k}")

    def test_fourth_derivative_of_cube_is_zero(self):
        x = leaf64(2.0)
        values = derivatives(lambda t: t ** 3, x, 4)
        assert values[3].requires_grad
        assert values[4].item() == 0.0

    def test_third_derivative_oracle(self):
        def body(torch):
            x = torch.tensor([0.5, 1.5], dtype=torch.float64, requires_grad=True)
            y = (x.exp() * x.sin()).sum()
            (g1,) = torch.autograd.grad(y, x, create_graph=True)
            (g2,) = torch.autograd.grad(g1.sum(), x, create_graph=True)
            (g3,) = torch.autograd.grad(g2.sum(), x)
            return g1, g2, g3
        same(body, rtol=1e-10, grad_fn=False)

    def test_mixed_partials(self):
        x, y = leaf64(1.5), leaf64(-0.5)
        f = x * y ** 2 + x.sin() * y
        gx, gy = autograd.grad(f, [x, y], create_graph=True)
        (gxy,) = autograd.grad(gx, y, retain_graph=True)
        (gyx,) = autograd.grad(gy, x)
        expected = 2 * -0.5 + math.cos(1.5)
        assert gxy.item() == pytest.approx(expected)
        assert gyx.item() == pytest.approx(expected)

    def test_hessian_vector_product(self):
        rng = np.random.default_rng(0)
        a = rng.standard_normal((4, 4))
        v = rng.standard_normal(4)
        x0 = rng.standard_normal(4)
        A, x = ember.tensor(a), leaf(x0)
        f = x @ (A @ x) + (x ** 3).sum()  # H = A + A^T + diag(6 x)
        (g,) = autograd.grad(f, x, create_graph=True)
        np.testing.assert_allclose(arr(g), (a + a.T) @ x0 + 3 * x0 ** 2, rtol=1e-10)
        (hv,) = autograd.grad(g, x, ember.tensor(v), retain_graph=True)
        np.testing.assert_allclose(arr(hv), (a + a.T + np.diag(6 * x0)) @ v, rtol=1e-10)
        (hv2,) = autograd.grad((g * ember.tensor(v)).sum(), x)
        np.testing.assert_allclose(arr(hv2), arr(hv), rtol=1e-12)

    def test_hessian_vector_product_oracle(self):
        def body(torch):
            w = torch.tensor([[1., 2.], [3., -1.]], requires_grad=True)
            x = torch.tensor([0.5, -0.25], requires_grad=True)
            loss = ((w @ x).tanh() ** 2).sum()
            gw, gx = torch.autograd.grad(loss, [w, x], create_graph=True)
            vw, vx = torch.ones(2, 2), torch.tensor([1., -1.])
            dot = (gw * vw).sum() + (gx * vx).sum()
            return gw, gx, torch.autograd.grad(dot, [w, x])
        same(body, rtol=1e-5, atol=1e-6, grad_fn=False)

    def test_double_backward_into_grad(self):
        x = leaf64([1., 2.])
        (g,) = autograd.grad((x ** 3).sum(), x, create_graph=True)
        g.sum().backward()
        np.testing.assert_allclose(arr(x.grad), [6., 12.])


# -- deep graphs and threads --------------------------------------------------------------------
def test_200k_op_chain_backward_and_free():
    # Build, backward (twice) and free a 200,000-op chain: nothing may recurse.
    limit = sys.getrecursionlimit()
    x = leaf([1., 2.])
    y = x
    for i in range(200_000):
        y = y * 1.0 if i % 2 else y + 1.0
    y.sum().backward(retain_graph=True)
    np.testing.assert_allclose(arr(x.grad), [1., 1.])
    y.sum().backward()
    np.testing.assert_allclose(arr(x.grad), [2., 2.])
    np.testing.assert_allclose(arr(y), [100_001., 100_002.])
    del y
    gc.collect()
    z = x
    for _ in range(200_000):
        z = z + 1.0
    del z  # freeing an un-backwarded chain
    gc.collect()
    assert sys.getrecursionlimit() == limit


def test_threads_run_independent_backward_passes():
    n = 8
    barrier = threading.Barrier(n)
    results, errors = {}, []

    def work(k):
        try:
            x = leaf64([float(k), k + 1.0])
            barrier.wait()
            for _ in range(30):
                y = (x ** 3 + x.sin() * k).sum()
                y.backward()
            (g,) = autograd.grad((x * x * k).sum(), x, create_graph=True)
            (gg,) = autograd.grad(g.sum(), x)
            results[k] = (arr(x.grad).copy(), arr(gg).copy())
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    for k in range(n):
        xs = np.array([k, k + 1.0])
        np.testing.assert_allclose(results[k][0], 30 * (3 * xs ** 2 + k * np.cos(xs)))
        np.testing.assert_allclose(results[k][1], [2. * k, 2. * k])


def test_grad_mode_is_thread_local_during_backward():
    n = 8
    barrier = threading.Barrier(n)
    out, errors = {}, []

    def work(k):
        try:
            x = leaf([1., 2.])
            if k % 2:
                with ember.no_grad():
                    barrier.wait()
                    y = x * 2
                    barrier.wait()
                out[k] = (ember.is_grad_enabled(), y.requires_grad, None)
            else:
                barrier.wait()
                y = x * 2
                barrier.wait()
                y.sum().backward()
                out[k] = (ember.is_grad_enabled(), y.requires_grad, arr(x.grad).tolist())
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    for k in range(n):
        if k % 2:
            assert out[k] == (True, False, None)
        else:
            assert out[k] == (True, True, [2., 2.])
    assert ember.is_grad_enabled()


# -- engine ordering ------------------------------------------------------------------------------
def _ordering_body(torch):
    log = []
    x = torch.tensor([1., 2.], requires_grad=True)
    w = torch.tensor([3., 4.], requires_grad=True)
    h = x * w
    y = h.exp()
    out = (y * h).sum()
    h.register_hook(lambda g: log.append("h hook1"))
    h.retain_grad()
    h.register_hook(lambda g: log.append(("h hook2", h.grad)))
    h.grad_fn.register_prehook(lambda go: log.append("h.grad_fn prehook"))
    h.grad_fn.register_hook(lambda gi, go: log.append("h.grad_fn hook"))
    y.grad_fn.register_prehook(lambda go: log.append("y.grad_fn prehook"))
    y.grad_fn.register_hook(lambda gi, go: log.append(("y.grad_fn hook", h.grad)))
    y.register_hook(lambda g: log.append("y hook"))
    out.grad_fn.register_prehook(lambda go: log.append("out prehook"))
    x.register_hook(lambda g: log.append("x hook"))
    x.register_post_accumulate_grad_hook(lambda t: log.append(("x post acc", t.grad)))
    out.backward()
    return log


def test_hook_order_matches_torch():
    same(_ordering_body, rtol=1e-5)


def test_hook_order_hardcoded():
    log = _ordering_body(ember)
    names = [e if isinstance(e, str) else e[0] for e in log]
    assert names == ["out prehook", "y hook", "y.grad_fn prehook", "y.grad_fn hook", "h hook1",
                     "h hook2", "h.grad_fn prehook", "h.grad_fn hook", "x hook", "x post acc"]
    assert log[3][1] is None  # h's grad is not complete (so not retained) before h's node
    assert log[5][1] is None  # retain_grad runs after every tensor hook, in torch 2.x


def test_accumulate_grad_node_hooks_run():
    log = []
    x = leaf([1., 2.])
    y = x * 2
    acc = y.grad_fn.next_functions[0][0]
    x.register_hook(lambda g: log.append("x hook"))
    acc.register_prehook(lambda go: log.append("acc prehook"))
    acc.register_hook(lambda gi, go: log.append("acc hook"))
    x.register_post_accumulate_grad_hook(lambda t: log.append("post acc"))
    y.sum().backward()
    assert log == ["x hook", "acc prehook", "post acc", "acc hook"]


def test_node_execution_order_matches_torch():
    def body(torch):
        log = []
        a = torch.tensor([1., 2.], requires_grad=True)
        b = a * 2
        c = b.exp()
        d = b.sin()
        e = c * d
        f = e + b
        for name, t in (("b", b), ("c", c), ("d", d), ("e", e), ("f", f)):
            t.grad_fn.register_prehook(lambda go, name=name: log.append(name))
        f.sum().backward()
        return log
    same(body)


def test_simultaneously_ready_leaves_order_matches_torch():
    log = []

    class Gather(ember.autograd.Function):
        @staticmethod
        def forward(ctx, *xs):
            return sum(x * 1 for x in xs)

        @staticmethod
        def backward(ctx, g):
            return (g,) * 6

    xs = [leaf([1.]) for _ in range(6)]
    for i, x in enumerate(xs):
        x.register_hook(lambda g, i=i: log.append(i))
    Gather.apply(*xs).sum().backward()
    assert log == [0, 2, 5, 4, 1, 3]


def test_ready_queue_order_with_ties_matches_torch():
    # Leaves become ready in several batches while other nodes wait in the queue, and custom
    # Function nodes interleave with op nodes: every hook fires in torch's order.
    def body(torch):
        log = []

        class Twice(torch.autograd.Function):
            @staticmethod
            def forward(ctx, a, b):
                return a * 2 + b

            @staticmethod
            def backward(ctx, g):
                log.append("Twice")
                return g * 2, g

        xs = [torch.tensor([float(i + 1)], requires_grad=True) for i in range(7)]
        for i, x in enumerate(xs):
            x.register_hook(lambda g, i=i: log.append(i))
        u = xs[0] * xs[1] + xs[2].exp()
        v = Twice.apply(xs[3], u) * xs[4]
        w = (xs[5] * xs[6]).sin() + u
        for name, t in (("u", u), ("v", v), ("w", w)):
            t.grad_fn.register_prehook(lambda go, name=name: log.append(name))
        torch.autograd.backward([v.sum(), w.sum(), (u * xs[6]).sum()])
        return log, [x.grad for x in xs]
    same(body)


def test_zero_dim_gradients_summed_stay_arrays():
    x = leaf(2.)
    (x * 2 + x * 3).backward()
    assert type(x.grad._data) is np.ndarray
    assert x.grad.item() == 5.0 and repr(x.grad) == "tensor(5.)"
    y = x.exp() * x.sin()
    (y * y + y).backward()
    assert type(x.grad._data) is np.ndarray


def test_broadcast_leaf_gradients_oracle():
    """Leaves broadcast into a larger result (biases): their gradients are summed back to
    their shapes, accumulate over passes and are written in place as torch's are, and each
    leaf's .grad owns its memory (taken as the engine's sum made it, not a view of it)."""
    shapes = [(4,), (1, 4), (3, 1), (), (1, 1, 4), (2, 1, 4)]

    def body(torch):
        x = torch.arange(24.).reshape(2, 3, 4)
        leaves = [torch.full(s, 0.5, requires_grad=True) for s in shapes]
        for _ in range(2):  # the second pass adds into the first one's .grad
            out = x
            for w in leaves:
                out = out * w + w
            out.sum().backward()
        grads = [w.grad.clone() for w in leaves]
        leaves[0].grad.mul_(2)
        return grads, leaves[0].grad, [w.grad.is_contiguous() for w in leaves]
    same(body, rtol=1e-5)
    for w in run_leaves(shapes):
        assert w.grad._data.base is None and tuple(w.grad.shape) == tuple(w.shape)


def run_leaves(shapes):
    x = ember.arange(24.).reshape(2, 3, 4)
    leaves = [ember.full(s, 0.5, requires_grad=True) for s in shapes]
    out = x
    for w in leaves:
        out = out * w + w
    out.sum().backward()
    return leaves


def test_create_graph_pass_reads_saved_inputs_and_results_oracle():
    """A create_graph pass unpacks what nodes saved as Tensors (inputs: mul, pow, mv; results:
    tanh, exp) and checks their versions: gradients, their graph, the double backward, and the
    error for a saved result modified in place agree with torch."""
    def body(torch):
        x = torch.tensor([0.5, -1.0, 2.0], dtype=torch.float64, requires_grad=True)
        W = torch.tensor([[1.0, 0.5, -0.25], [0.0, 2.0, 1.0], [-1.0, 0.0, 0.5]],
                         dtype=torch.float64)
        f = ((torch.tanh(W @ x) ** 2) * x.exp()).sum()
        (g,) = torch.autograd.grad(f, [x], create_graph=True)
        (h,) = torch.autograd.grad((g * torch.tensor([1.0, 2.0, 3.0],
                                                     dtype=torch.float64)).sum(), [x])
        y = x.exp()
        z = (y * y).sum()
        with torch.no_grad():
            y.mul_(2)
        try:
            torch.autograd.grad(z, [x], create_graph=True)
        except RuntimeError as e:
            err = str(e)
        return g, g.grad_fn.name(), h, err
    same(body, rtol=1e-10)


def test_inputs_as_a_dict_oracle():
    def body(torch):
        x = torch.tensor([1., 2.], requires_grad=True)
        w = torch.tensor([3., 4.], requires_grad=True)
        out = (x * w).sum()
        g = torch.autograd.grad(out, {"x": x, "w": w}, retain_graph=True)
        z = torch.autograd.grad(out, [x, torch.ones(2, requires_grad=True)],
                                materialize_grads=True, create_graph=True)
        out.backward(inputs={"w": w})
        return g, z, x.grad, w.grad
    same(body)


def test_grad_count_mismatch():
    x = leaf([1., 2.])
    with pytest.raises(RuntimeError) as e:
        autograd.grad([(x * 2).sum(), (x * 3).sum()], x, [None])
    assert str(e.value) == "got 2 tensors and 1 gradients"


@pytest.mark.parametrize("create_graph", [False, True])
def test_grad_with_batched_grad_outputs(create_graph):
    """is_grads_batched: one vector-Jacobian product per row of the grad_outputs."""
    def body(torch):
        x = torch.tensor([1., 2., 3.], requires_grad=True)
        w = torch.tensor([0.5, -1.], requires_grad=True)
        y = torch.stack([(x ** 2).sum() * w[0], (x * w[1]).sum()])
        v = torch.tensor([[1., 0.], [0., 1.], [2., -1.]])
        gx, gw = torch.autograd.grad(y, (x, w), v, is_grads_batched=True,
                                     create_graph=create_graph)
        return gx, gw, gx.requires_grad
    # NOTE: the graph under the batched gradients differs (torch's vmap, ember's stack).
    same(body, grad_fn=False)


def test_threads_accumulate_into_shared_leaves_by_both_leaf_paths():
    """Passes in several threads into the same leaves, some by the one-node path (a custom
    Function of the leaves: each leaf taken over or summed under its lock in the pass's own
    loop) and some by the general loop (_run_plain_leaf): no gradient is lost, as torch's
    AccumulateGrad mutex keeps them."""
    class Spread(ember.autograd.Function):
        @staticmethod
        def forward(ctx, a, b):
            return a * 2 + b * 3

        @staticmethod
        def backward(ctx, g):
            return g * 2, g * 3

    size = 200_000  # (NumPy releases the GIL in its loops over this many elements)
    a, b = leaf64(np.ones(size)), leaf64(np.ones(size))
    n, rounds = 4, 25
    barrier = threading.Barrier(n)
    errors = []

    def work(k):
        try:
            barrier.wait()
            for _ in range(rounds):
                out = Spread.apply(a, b) if k % 2 else a * 2 + b * 3
                out.backward(ember.ones(size, dtype=ember.float64))
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # (threads switch as often as they can)
    try:
        threads = [threading.Thread(target=work, args=(k,)) for k in range(n)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(interval)
    assert not errors, errors
    np.testing.assert_array_equal(arr(a.grad), np.full(size, 2.0 * n * rounds))
    np.testing.assert_array_equal(arr(b.grad), np.full(size, 3.0 * n * rounds))
