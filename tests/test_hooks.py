"""Hooks: tensor hooks, post-accumulate-grad hooks, Node hooks and pre-hooks, RemovableHandle.

Expected values and messages are PyTorch 2.13's; ``same(...)`` also compares with torch.
"""
import numpy as np
import pytest
from oracle import same

import ember
from ember import autograd
from ember.autograd.graph import Node, RemovableHandle

ERR_NO_GRAD = "cannot register a hook on a tensor that doesn't require gradient"


def leaf(values):
    return ember.tensor(values, requires_grad=True)


def arr(t):
    return np.asarray(t.detach().numpy())


# -- Tensor.register_hook ---------------------------------------------------------------------
class TestTensorHooks:
    def test_observe_on_leaf(self):
        seen = []
        x = leaf([1., 2.])
        handle = x.register_hook(lambda g: seen.append(arr(g).copy()))
        assert isinstance(handle, RemovableHandle)
        (x * 3).sum().backward()
        assert len(seen) == 1
        np.testing.assert_allclose(seen[0], [3., 3.])
        np.testing.assert_allclose(arr(x.grad), [3., 3.])

    def test_observe_on_non_leaf(self):
        seen = []
        x = leaf([1., 2.])
        h = x * 2
        h.register_hook(lambda g: seen.append(arr(g).copy()))
        (h * h).sum().backward()
        np.testing.assert_allclose(seen[0], [4., 8.])
        np.testing.assert_allclose(arr(x.grad), [8., 16.])

    def test_replace_on_leaf_changes_what_is_accumulated(self):
        x = leaf([1., 2.])
        x.register_hook(lambda g: g * 10)
        (x * 3).sum().backward()
        np.testing.assert_allclose(arr(x.grad), [30., 30.])

    def test_replace_on_non_leaf_changes_upstream_grads(self):
        x = leaf([1., 2.])
        h = x * 2
        h.register_hook(lambda g: g + 1)
        (h * 3).sum().backward()
        np.testing.assert_allclose(arr(x.grad), [8., 8.])

    def test_returning_none_keeps_the_gradient(self):
        x = leaf([1., 2.])
        h = x * 2
        h.register_hook(lambda g: None)
        h.sum().backward()
        np.testing.assert_allclose(arr(x.grad), [2., 2.])

    def test_several_hooks_run_in_order_and_chain(self):
        log = []
        x = leaf([1., 2.])
        h = x * 1

        def make(k, f):
            def hook(g):
                log.append((k, arr(g).tolist()))
                return f(g)
            return hook
        h.register_hook(make(1, lambda g: g + 1))
        h.register_hook(make(2, lambda g: None))
        h.register_hook(make(3, lambda g: g * 2))
        h.sum().backward()
        assert log == [(1, [1., 1.]), (2, [2., 2.]), (3, [2., 2.])]
        np.testing.assert_allclose(arr(x.grad), [4., 4.])

    def test_remove(self):
        x = leaf([1., 2.])
        h = x * 2
        h.register_hook(lambda g: None)
        handle = h.register_hook(lambda g: g + 1)
        h.register_hook(lambda g: g * 2)
        handle.remove()
        handle.remove()  # removing twice is fine
        h.sum().backward()
        np.testing.assert_allclose(arr(x.grad), [4., 4.])

    def test_remove_leaf_hook(self):
        x = leaf([1., 2.])
        handle = x.register_hook(lambda g: g * 100)
        handle.remove()
        x.sum().backward()
        np.testing.assert_allclose(arr(x.grad), [1., 1.])

    def test_handle_as_context_manager(self):
        x = leaf([1., 2.])
        h = x * 2
        with h.register_hook(lambda g: g * 10) as handle:
            assert isinstance(handle, RemovableHandle)
            (h * 1).sum().backward(retain_graph=True)
            np.testing.assert_allclose(arr(x.grad), [20., 20.])
        x.grad = None
        (h * 1).sum().backward()
        np.testing.assert_allclose(arr(x.grad), [2., 2.])

    def test_hooks_persist_across_backward_calls(self):
        calls = []
        x = leaf([1.])
        x.register_hook(lambda g: calls.append(1))
        for _ in range(3):
            (x * 2).sum().backward()
        assert len(calls) == 3

    def test_hook_sees_the_summed_gradient_once(self):
        log = []
        x = leaf([1., 2.])
        x.register_hook(lambda g: log.append(("x", arr(g).tolist())))
        h = x * 2
        h.register_hook(lambda g: log.append(("h", arr(g).tolist())))
        (h + h + x).sum().backward()
        assert log == [("h", [2., 2.]), ("x", [5., 5.])]

    def test_hooks_run_during_autograd_grad(self):
        log = []
        x = leaf([1., 2.])
        x.register_hook(lambda g: log.append("x"))
        x.register_post_accumulate_grad_hook(lambda t: log.append("post"))
        h = x * 2
        h.register_hook(lambda g: log.append("h"))
        (g,) = autograd.grad((h * h).sum(), x)
        assert log == ["h", "x"]  # no accumulation, so no post-accumulate hook
        np.testing.assert_allclose(arr(g), [8., 16.])
        assert x.grad is None

    def test_hook_gets_differentiable_grad_under_create_graph(self):
        seen = []
        x = leaf([1., 2.])
        h = x * x
        h.register_hook(lambda g: seen.append(g.requires_grad))
        (g,) = autograd.grad((h ** 2).sum(), x, create_graph=True)
        assert seen == [True]
        np.testing.assert_allclose(arr(g), [4., 32.])

    def test_hook_on_tensor_not_requiring_grad(self):
        with pytest.raises(RuntimeError) as e:
            ember.tensor([1., 2.]).register_hook(lambda g: g)
        assert str(e.value) == ERR_NO_GRAD

    def test_hook_on_integer_tensor(self):
        with pytest.raises(RuntimeError) as e:
            ember.tensor([1, 2]).register_hook(lambda g: g)
        assert str(e.value) == ERR_NO_GRAD

    def test_hook_on_detached_tensor(self):
        x = leaf([1.])
        with pytest.raises(RuntimeError) as e:
            (x * 2).detach().register_hook(lambda g: g)
        assert str(e.value) == ERR_NO_GRAD

    def test_hook_changing_the_size(self):
        def myhook(g):
            return ember.ones(3)
        x = leaf([1., 2.])
        h = x * 2
        h.register_hook(myhook)
        with pytest.raises(RuntimeError) as e:
            h.sum().backward()
        assert str(e.value) == "hook 'myhook' has changed the size of value"

    def test_hook_changing_the_size_raises(self):
        x = leaf([1., 2.])
        x.register_hook(lambda g: ember.ones(3))
        with pytest.raises(RuntimeError, match="has changed the size of value"):
            (x * 2).sum().backward()

    def test_hook_returning_a_non_tensor(self):
        x = leaf([1., 2.])
        h = x * 2
        h.register_hook(lambda g: 1.0)
        with pytest.raises(TypeError) as e:
            h.sum().backward()
        assert str(e.value) == "expected Variable, but hook returned 'float'"

    def test_hook_changing_the_dtype(self):
        x = leaf([1., 2.])
        h = x * 2
        h.register_hook(lambda g: g.double())
        with pytest.raises(RuntimeError) as e:
            h.sum().backward()
        assert str(e.value) == ("hook '<lambda>' has changed the type of value (was "
                                "ember.FloatTensor got ember.DoubleTensor)")

    def test_oracle(self):
        def body(torch):
            log = []
            x = torch.tensor([1., -2., 3.], requires_grad=True)
            h = x.exp()
            k = h * x
            hs = [h.register_hook(lambda g: log.append(("h1", g.clone())) or g * 2),
                  h.register_hook(lambda g: log.append(("h2", g.clone()))),
                  k.register_hook(lambda g: log.append(("k", g.clone())) or g - 1),
                  x.register_hook(lambda g: log.append(("x", g.clone())) or g / 2)]
            (k.sum() + h.sum()).backward(retain_graph=True)
            first = x.grad.clone()
            hs[0].remove()
            hs[2].remove()
            (k.sum() + h.sum()).backward()
            return log, first, x.grad
        same(body, rtol=1e-5)


# -- register_post_accumulate_grad_hook --------------------------------------------------------
class TestPostAccumulateGradHook:
    def test_runs_after_accumulation_with_the_tensor(self):
        seen = []
        x = leaf([1., 2.])
        x.register_post_accumulate_grad_hook(lambda t: seen.append((t is x, arr(t.grad).copy())))
        (x * 3).sum().backward()
        (x * 3).sum().backward()
        assert [s[0] for s in seen] == [True, True]
        np.testing.assert_allclose(seen[0][1], [3., 3.])
        np.testing.assert_allclose(seen[1][1], [6., 6.])

    def test_runs_after_tensor_hooks(self):
        log = []
        x = leaf([1., 2.])
        x.register_post_accumulate_grad_hook(lambda t: log.append(("post", arr(t.grad).tolist())))
        x.register_hook(lambda g: log.append("pre") or g * 2)
        (x * 3).sum().backward()
        assert log == ["pre", ("post", [6., 6.])]

    def test_can_update_the_parameter(self):
        # An optimizer step inside backward: what register_post_accumulate_grad_hook is for.
        p = leaf([1., 2.])

        def step(t):
            with ember.no_grad():
                t.sub_(0.5 * t.grad)
            t.grad = None
        p.register_post_accumulate_grad_hook(step)
        (p * p).sum().backward()
        np.testing.assert_allclose(arr(p), [0., 0.])
        assert p.grad is None

    def test_remove(self):
        calls = []
        x = leaf([1.])
        handle = x.register_post_accumulate_grad_hook(lambda t: calls.append(1))
        x.sum().backward()
        handle.remove()
        x.sum().backward()
        assert calls == [1]

    def test_on_tensor_not_requiring_grad(self):
        with pytest.raises(RuntimeError) as e:
            ember.tensor([1.]).register_post_accumulate_grad_hook(lambda t: None)
        assert str(e.value) == ERR_NO_GRAD

    def test_on_non_leaf(self):
        x = leaf([1.])
        with pytest.raises(RuntimeError) as e:
            (x * 2).register_post_accumulate_grad_hook(lambda t: None)
        assert str(e.value) == "post accumulate grad hooks cannot be registered on non-leaf tensors"

    def test_must_return_none(self):
        x = leaf([1., 2.])
        x.register_post_accumulate_grad_hook(lambda t: t.grad * 0)
        with pytest.raises(RuntimeError) as e:
            (x * 2).sum().backward()
        assert str(e.value) == "Tensor post accumulate grad hooks should return None."


# -- Node hooks -------------------------------------------------------------------------------
class TestNodeHooks:
    def test_handles(self):
        x = leaf([1.])
        fn = (x * 2).grad_fn
        assert isinstance(fn, Node)
        for handle in (fn.register_hook(lambda gi, go: None),
                       fn.register_prehook(lambda go: None)):
            assert isinstance(handle, RemovableHandle)
            assert isinstance(handle.id, int)

    def test_hook_sees_grad_inputs_and_grad_outputs(self):
        log = []
        x = leaf([1., 2.])
        h = x * 2
        y = x * 3
        h.grad_fn.register_prehook(lambda go: log.append(("pre", go)))
        h.grad_fn.register_hook(lambda gi, go: log.append(("post", gi, go)))
        (h * y).sum().backward()
        (tag, go), (tag2, gi, go2) = log
        assert (tag, tag2) == ("pre", "post")
        assert isinstance(go, tuple) and isinstance(gi, tuple) and isinstance(go2, tuple)
        np.testing.assert_allclose(arr(go[0]), [3., 6.])
        np.testing.assert_allclose(arr(go2[0]), [3., 6.])
        assert len(gi) == 2 and gi[1] is None  # the Python scalar 2 has no gradient
        np.testing.assert_allclose(arr(gi[0]), [6., 12.])

    def test_prehook_replaces_grad_outputs(self):
        x = leaf([1., 2.])
        h = x * 2
        h.grad_fn.register_prehook(lambda go: (go[0] * 100,))
        h.sum().backward()
        np.testing.assert_allclose(arr(x.grad), [200., 200.])

    def test_hook_replaces_grad_inputs(self):
        x, w = leaf([1., 2.]), leaf([3., 4.])
        h = x * w
        h.grad_fn.register_hook(lambda gi, go: (None, gi[1] * 2))
        h.sum().backward()
        assert x.grad is None
        np.testing.assert_allclose(arr(w.grad), [2., 4.])

    def test_several_node_hooks_chain_in_order(self):
        log = []
        x = leaf([1.])
        h = x * 2
        h.grad_fn.register_prehook(lambda go: log.append("pre1") or (go[0] + 1,))
        h.grad_fn.register_prehook(lambda go: log.append(("pre2", go[0].item())))
        h.grad_fn.register_hook(lambda gi, go: log.append(("post1", gi[0].item())) or
                                (gi[0] * 10, None))
        h.grad_fn.register_hook(lambda gi, go: log.append(("post2", gi[0].item())))
        h.sum().backward()
        assert log == ["pre1", ("pre2", 2.0), ("post1", 4.0), ("post2", 40.0)]
        assert x.grad.item() == 40.0

    def test_remove_node_hooks(self):
        x = leaf([1.])
        h = x * 2
        a = h.grad_fn.register_prehook(lambda go: (go[0] * 100,))
        b = h.grad_fn.register_hook(lambda gi, go: (gi[0] * 100, None))
        a.remove()
        b.remove()
        h.sum().backward()
        assert x.grad.item() == 2.0

    def test_node_hook_handle_as_context_manager(self):
        x = leaf([1.])
        h = x * 2
        with h.grad_fn.register_prehook(lambda go: (go[0] * 100,)):
            h.sum().backward(retain_graph=True)
        assert x.grad.item() == 200.0
        h.sum().backward()
        assert x.grad.item() == 202.0

    def test_custom_function_node_hooks(self):
        log = []

        class Double(autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2

            @staticmethod
            def backward(ctx, g):
                log.append("backward")
                return g * 2
        x = leaf([1.])
        y = Double.apply(x)
        y.grad_fn.register_prehook(lambda go: log.append("pre"))
        y.grad_fn.register_hook(lambda gi, go: log.append("post"))
        y.sum().backward()
        assert log == ["pre", "backward", "post"]

    def test_hook_returning_wrong_count(self):
        x, w = leaf([1., 2.]), leaf([1., 2.])
        y = x * w
        y.grad_fn.register_hook(lambda gi, go: (gi[0],))
        with pytest.raises(RuntimeError) as e:
            y.sum().backward()
        assert str(e.value) == ("hook '<lambda>' has returned an incorrect number of values "
                                "(got 1, but expected 2)")

    def test_prehook_returning_wrong_count(self):
        x = leaf([1., 2.])
        y = x * 2
        y.grad_fn.register_prehook(lambda go: (go[0], go[0]))
        with pytest.raises(RuntimeError) as e:
            y.sum().backward()
        assert str(e.value) == ("hook '<lambda>' has returned an incorrect number of values "
                                "(got 2, but expected 1)")

    def test_hook_must_return_a_tuple(self):
        x, w = leaf([1., 2.]), leaf([1., 2.])
        y = x * w
        y.grad_fn.register_hook(lambda gi, go: [gi[0], gi[1]])
        with pytest.raises(TypeError) as e:
            y.sum().backward()
        assert str(e.value) == "expected tuple, but hook returned 'list'"

    def test_prehook_must_return_a_tuple(self):
        x = leaf([1., 2.])
        y = x * 2
        y.grad_fn.register_prehook(lambda go: 3)
        with pytest.raises(TypeError) as e:
            y.sum().backward()
        assert str(e.value) == "expected tuple, but hook returned 'int'"

    def test_prehook_changing_the_size(self):
        x = leaf([1., 2.])
        y = x * 2
        y.grad_fn.register_prehook(lambda go: (ember.ones(3),))
        with pytest.raises(RuntimeError) as e:
            y.sum().backward()
        assert str(e.value) == "hook '<lambda>' has changed the size of value"

    def test_oracle(self):
        def body(torch):
            log = []
            x = torch.tensor([1., 2.], requires_grad=True)
            w = torch.tensor([0.5, -1.], requires_grad=True)
            h = (x * w).exp()
            out = (h * x).sum()
            h.grad_fn.register_prehook(lambda go: log.append(("pre", go)) or (go[0] * 2,))
            mul = h.grad_fn.next_functions[0][0]
            mul.register_hook(lambda gi, go: log.append(("post", gi, go)) or (gi[0], gi[1] + 1))
            out.backward()
            return log, x.grad, w.grad, mul.name(), h.grad_fn.name()
        same(body, rtol=1e-5)


# -- what hooks may return: torch's checks and messages, case by case -------------------------
class _Ones:
    """A callable object: no __name__, so torch names it '<unknown>'."""

    def __init__(self, torch):
        self.torch = torch

    def __call__(self, g):
        return self.torch.ones(3)


HOOK_RESULT_CASES = {
    "tensor_size_obj": lambda torch, x, h: h.register_hook(_Ones(torch)),
    "tensor_size_leaf": lambda torch, x, h: x.register_hook(lambda g: torch.ones(3)),
    "tensor_dtype_leaf": lambda torch, x, h: x.register_hook(lambda g: g.double()),
    "tensor_int_leaf": lambda torch, x, h: x.register_hook(lambda g: 1),
    "post_int_item": lambda torch, x, h: h.grad_fn.register_hook(lambda gi, go: (gi[0], 3)),
    "post_none_item": lambda torch, x, h: h.grad_fn.register_hook(lambda gi, go: (gi[0], None)),
    "post_size": lambda torch, x, h: h.grad_fn.register_hook(
        lambda gi, go: (gi[0], torch.ones(3))),
    "post_dtype": lambda torch, x, h: h.grad_fn.register_hook(
        lambda gi, go: (gi[0], gi[1].double())),
    "post_scaled": lambda torch, x, h: h.grad_fn.register_hook(
        lambda gi, go: (gi[0] * 10, gi[1])),
    "pre_list": lambda torch, x, h: h.grad_fn.register_prehook(lambda go: [go[0]]),
    "pre_int_item": lambda torch, x, h: h.grad_fn.register_prehook(lambda go: (3,)),
    "pre_none_item": lambda torch, x, h: h.grad_fn.register_prehook(lambda go: (None,)),
    "pre_dtype": lambda torch, x, h: h.grad_fn.register_prehook(lambda go: (go[0].double(),)),
    "post_acc_int": lambda torch, x, h: x.register_post_accumulate_grad_hook(lambda t: 1),
}


@pytest.mark.parametrize("case", list(HOOK_RESULT_CASES))
def test_hook_results_oracle(case):
    def body(torch):
        x = torch.tensor([1., 2.], requires_grad=True)
        w = torch.tensor([3., 4.], requires_grad=True)
        h = x * w
        HOOK_RESULT_CASES[case](torch, x, h)
        (h * 2).sum().backward()
        return x.grad, w.grad
    same(body)


def test_accumulate_grad_node_hooks_oracle():
    def body(torch):
        log = []
        x = torch.tensor([1., 2.], requires_grad=True)
        y = x * 2
        acc = y.grad_fn.next_functions[0][0]
        x.register_hook(lambda g: log.append(("x hook", g.clone())))
        acc.register_prehook(lambda go: log.append(("acc prehook", go)) or (go[0] * 10,))
        acc.register_hook(lambda gi, go: log.append(("acc hook", gi, go)))
        x.register_post_accumulate_grad_hook(lambda t: log.append(("post acc", t.grad.clone())))
        y.sum().backward()
        acc.register_hook(lambda gi, go: go)
        try:
            y.sum().backward()
        except RuntimeError as e:
            log.append(str(e))
        return log, x.grad, acc.name(), acc.next_functions
    same(body)


def test_tensor_hook_of_output_without_gradient_gets_none():
    # the node runs (for a) but b, its other output, gets no gradient: torch calls b's hooks
    # with None (and refuses a value in its place)
    def body(lib):
        x = lib.tensor([1., 2., 3., 4.], requires_grad=True)
        a, b = x.split(2)
        seen = []
        b.register_hook(lambda g: seen.append(g))
        (a * 2).sum().backward(retain_graph=True)
        b.register_hook(lambda g: lib.ones(2))
        try:
            (a * 2).sum().backward()
        except RuntimeError as e:
            seen.append(str(e))
        return seen, x.grad
    same(body)
