"""Autograd semantics where a gradient could silently differ from torch's: saved integer
outputs, views, leaves that stop requiring grad, retain_grad and hooks across in-place ops,
hook gradients and ``.grad``, threads.

Each body runs on PyTorch 2.13 and on ember (``oracle.same``: values, dtypes, autograd flags,
grad_fn names, errors and warnings); the tests skip when torch is not installed.
"""
from __future__ import annotations

import pytest
from oracle import same

# -- integer outputs saved for backward are version-checked -------------------------------------
_SAVED_INDICES = {
    "topk": lambda t, x: x.topk(2),
    "sort": lambda t, x: x.sort(1),
    "max_dim": lambda t, x: x.max(1),
    "min_dim": lambda t, x: x.min(1),
    "kthvalue": lambda t, x: x.kthvalue(2),
    "median_dim": lambda t, x: x.median(1),
    "nanmedian_dim": lambda t, x: x.nanmedian(1),
    "mode": lambda t, x: x.mode(1),
    "cummax": lambda t, x: x.cummax(1),
    "cummin": lambda t, x: x.cummin(1),
    "max_pool1d": lambda t, x: t.nn.functional.max_pool1d(x[None], 2, return_indices=True),
    "max_pool2d": lambda t, x: t.nn.functional.max_pool2d(x[None, None], 2,
                                                          return_indices=True),
    "adaptive_max_pool1d": lambda t, x: t.nn.functional.adaptive_max_pool1d(
        x[None], 2, return_indices=True),
}


@pytest.mark.parametrize("name", sorted(_SAVED_INDICES))
def test_saved_indices_modified_in_place_raise(name):
    def body(t):
        x = t.tensor([[3., 1., 2., 5.], [0., 4., 4., 1.]], requires_grad=True)
        values, indices = _SAVED_INDICES[name](t, x)
        indices.zero_()
        values.sum().backward()
        return x.grad
    same(body)


def test_saved_indices_unmodified_still_work():
    def body(t):
        x = t.tensor([[3., 1., 2., 5.], [0., 4., 4., 1.]], requires_grad=True)
        v, i = x.max(1)
        i.clone().zero_()  # a copy changed: the saved indices are not
        v.sum().backward()
        return x.grad
    same(body)


_KEPT_AS_ARGUMENTS = {
    "nll_loss_target": lambda t, x, i, w: (t.nn.functional.nll_loss(x, i), i),
    "cross_entropy_target": lambda t, x, i, w: (t.nn.functional.cross_entropy(x, i), i),
    "nll_loss_weight": lambda t, x, i, w: (t.nn.functional.nll_loss(x, i, weight=w), w),
    "multi_margin_target": lambda t, x, i, w: (t.nn.functional.multi_margin_loss(x, i), i),
}


@pytest.mark.parametrize("name", sorted(_KEPT_AS_ARGUMENTS))
def test_targets_and_weights_modified_in_place_raise(name):
    def body(t):
        x = t.tensor([[3., 1., 2.], [0., 4., 4.]], requires_grad=True)
        target, weight = t.tensor([2, 0]), t.tensor([1., 2., 3.])
        loss, kept = _KEPT_AS_ARGUMENTS[name](t, x, target, weight)
        kept.zero_()
        loss.backward()
        return x.grad
    same(body)


# -- index tensors given to an op are version-checked too ----------------------------------------
_SAVED_INDEX_ARGUMENTS = {
    "getitem": lambda t, x, i, m: x[i],
    "getitem_mask": lambda t, x, i, m: x[m],
    "getitem_pair": lambda t, x, i, m: x.view(1, 5)[0, i],
    "setitem": lambda t, x, i, m: _written(x * 1, i, x[:2] * 3),
    "setitem_mask": lambda t, x, i, m: _written(x * 1, m, x[:2] * 3),
    "index_put": lambda t, x, i, m: t.zeros(5).index_put((i,), x[:2]),
    "index_put_accumulate": lambda t, x, i, m: t.zeros(5).index_put((i,), x[:2], True),
    "put": lambda t, x, i, m: x.put(i, t.ones(2)),
    "gather": lambda t, x, i, m: x.gather(0, i),
    "nll_loss": lambda t, x, i, m: t.nn.functional.nll_loss(x.view(1, 5).expand(2, 5), i),
    "cross_entropy": lambda t, x, i, m: t.nn.functional.cross_entropy(
        x.view(1, 5).expand(2, 5), i),
    "embedding": lambda t, x, i, m: t.nn.functional.embedding(i, x.view(5, 1)),
}


def _written(y, key, value):
    y[key] = value
    return y


@pytest.mark.parametrize("modified", ["index", "mask"])
@pytest.mark.parametrize("name", sorted(_SAVED_INDEX_ARGUMENTS))
def test_index_arguments_modified_in_place_raise(name, modified):
    def body(t):
        x = t.arange(5.).requires_grad_()
        i, m = t.tensor([0, 1]), t.tensor([True, False, True, False, False])
        y = _SAVED_INDEX_ARGUMENTS[name](t, x, i, m)
        if modified == "index":
            i.add_(2)
        else:
            m.logical_not_()
        (y * t.arange(1., y.numel() + 1).view(y.shape)).sum().backward()
        return x.grad
    same(body)


@pytest.mark.parametrize("name", sorted(_SAVED_INDEX_ARGUMENTS))
def test_index_arguments_free_with_the_graph(name):
    def body(t):
        x = t.arange(5.).requires_grad_()
        i, m = t.tensor([0, 1]), t.tensor([True, False, True, False, False])
        loss = _SAVED_INDEX_ARGUMENTS[name](t, x, i, m).sum()
        loss.backward(retain_graph=True)
        loss.backward()
        first = x.grad.clone()
        loss.backward()  # the graph was freed: torch's error
        return first
    same(body)


# -- views ----------------------------------------------------------------------------------------
def test_unbind_outputs_are_views():
    def body(t):
        x = t.arange(6.).reshape(3, 2)
        rows = x.unbind()
        rows[2].mul_(2)
        y = t.arange(4.)
        p = y.unbind()[1]
        p.add_(10)
        return x, y, p._is_view(), rows[0]._is_view()
    same(body)


def test_unbind_view_in_place_under_grad_refused():
    def body(t):
        x = t.arange(4., requires_grad=True) * 1
        p = x.unbind()[1]
        p.mul_(2)
        return x
    same(body)


# -- leaves that stop requiring grad after the graph was built ---------------------------------
@pytest.mark.parametrize("how", ["requires_grad_false", "detach_", "attribute"])
def test_leaf_that_stopped_requiring_grad_gets_no_grad(how):
    def body(t):
        x = t.ones(2, requires_grad=True)
        w = t.ones(2, requires_grad=True)
        y = (x * 2 + w).sum()
        if how == "requires_grad_false":
            x.requires_grad_(False)
        elif how == "detach_":
            x.detach_()
        else:
            x.requires_grad = False
        y.backward()
        return x.grad, w.grad
    same(body)


# -- retain_grad and hooks across in-place ops --------------------------------------------------
def test_hooks_before_and_after_in_place_and_retain_grad():
    def body(t):
        x = t.ones(2, requires_grad=True)
        y = x * 1
        y.retain_grad()
        seen = []
        y.register_hook(lambda g: seen.append(("before", g.clone())))
        y.mul_(3)
        y.register_hook(lambda g: seen.append(("after", g.clone())))
        (y * t.tensor([2., 5.])).sum().backward()
        return y.grad, seen, x.grad
    same(body)


def test_retain_grad_through_a_view_modified_in_place():
    def body(t):
        x = t.ones(3, requires_grad=True)
        y = x * 1
        y.retain_grad()
        y[1:].mul_(3)
        (y * t.tensor([2., 5., 7.])).sum().backward()
        return y.grad, x.grad
    same(body)


def test_retain_grad_of_a_view_whose_base_changed():
    def body(t):
        x = t.ones(3, requires_grad=True)
        y = x * 1
        v = y[1:]
        v.retain_grad()
        y.mul_(2)
        (v * t.tensor([3., 4.])).sum().backward()
        w = x * 1
        u = w[1:]
        u.retain_grad()
        u.mul_(2)
        (w * t.tensor([3., 4., 5.])).sum().backward()
        return v.grad, u.grad, x.grad
    same(body)


def test_retain_grad_follows_a_custom_function_marking_its_input_dirty():
    def body(t):
        class Triple(t.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.mark_dirty(x)
                return x.mul_(3)

            @staticmethod
            def backward(ctx, g):
                return g * 3

        x = t.ones(2, requires_grad=True)
        y = x * 1
        y.retain_grad()
        Triple.apply(y)
        (y * t.tensor([2., 5.])).sum().backward()
        return y.grad, x.grad
    same(body)


# -- gradients user code holds are never accumulated into -------------------------------------
def test_node_hook_gradient_is_not_the_grad_accumulated_later():
    def body(t):
        x = t.ones(2, requires_grad=True)
        kept_post, kept_pre = [], []
        y = x * 2
        y.grad_fn.register_hook(lambda gi, go: kept_post.append(gi[0]))
        z = x + 0
        z.grad_fn.register_prehook(lambda go: kept_pre.append(go[0]))
        (y.sum() + z.sum()).backward(retain_graph=True)
        (y.sum() + z.sum()).backward()
        return kept_post, kept_pre, x.grad
    same(body)


# -- std_mean / var_mean: the unused output's term is left out ----------------------------------
@pytest.mark.parametrize("fn", ["std_mean", "var_mean"])
def test_moments_mean_of_one_element(fn):
    def body(t):
        x = t.tensor([2.], requires_grad=True)
        _, m = getattr(t, fn)(x, dim=0)
        m.backward()
        y = t.tensor([[2.], [3.]], requires_grad=True)
        _, m2 = getattr(t, fn)(y, dim=1)
        (m2 * 2).sum().backward()
        return x.grad, y.grad
    same(body, check_warnings=False)


# -- zero derivatives times NaN / inf -----------------------------------------------------------
_PIECEWISE_CONSTANT = {
    "floor": lambda t, x: t.floor(x),
    "ceil": lambda t, x: t.ceil(x),
    "trunc": lambda t, x: t.trunc(x),
    "round": lambda t, x: t.round(x),
    "round_decimals": lambda t, x: t.round(x, decimals=1),
    "sign": lambda t, x: t.sign(x),
    "pow_0": lambda t, x: x ** 0,
    "div_floor": lambda t, x: t.div(x, 2., rounding_mode="floor"),
    "div_trunc_other": lambda t, x: t.div(t.full((3,), 3.), x + 5, rounding_mode="trunc"),
    "fill_": lambda t, x: (x * 1).fill_(2.),
    "fill_tensor": lambda t, x: (x * 1).fill_(t.tensor(2.)),
    "zero_": lambda t, x: (x * 1).zero_(),
    "copy_": lambda t, x: (x * 1).copy_(t.ones(3)),
    "copysign_other": lambda t, x: t.copysign(t.ones(3), x),
}


@pytest.mark.parametrize("name", sorted(_PIECEWISE_CONSTANT))
def test_zero_derivative_times_nan_is_zero(name):
    def body(t):
        x = t.tensor([-2., 0.5, 0.], requires_grad=True)
        y = _PIECEWISE_CONSTANT[name](t, x)
        y.backward(t.tensor([float("nan"), float("inf"), -float("inf")]))
        return x.grad
    same(body)


def test_hardswish_gradient_at_its_kinks():
    def body(t):
        x = t.tensor([-3., 3., -3., 3., -2.], requires_grad=True)
        t.nn.functional.hardswish(x).backward(t.tensor([1., 1., float("nan"), 2., 1.]))
        return x.grad
    same(body)


def test_asin_of_trunc_outside_its_domain():
    def body(t):
        x = t.tensor([-2., 0.25], requires_grad=True)
        t.asin(t.trunc(x)).sum().backward()
        return x.grad
    same(body)


def test_atan2_gradient_at_the_origin():
    def body(t):
        a = t.tensor([0., 0., -0., 0., 1.], requires_grad=True)
        b = t.tensor([0., -0., 0., 1e-30, 2.], requires_grad=True)
        t.atan2(a, b).backward(t.tensor([1., 3., 1., float("nan"), 1.]))
        c = t.zeros(2, dtype=t.float64, requires_grad=True)
        d = t.tensor([0., 1.], dtype=t.float64, requires_grad=True)
        g = t.autograd.grad(t.atan2(c, d).sum(), (c, d), create_graph=True)
        return a.grad, b.grad, g, t.autograd.grad(g[0].sum(), (c, d))
    same(body, grad_fn=False)


def test_square_root_powers_at_signed_zero():
    def body(t):
        x = t.tensor([-0.0, 0.0, -1., 4., float("inf"), -float("inf")], requires_grad=True)
        (x ** 0.5).sum().backward()
        y = t.tensor([-0.0, 0.0, -1., 4., float("inf"), -float("inf")])
        return x.grad, y ** -0.5, y ** 0.5, y ** -1.5
    same(body)


# -- second derivatives through piecewise-linear functions, pooling and convolution ------------
_SECOND_ORDER = {
    "relu": lambda t, x: t.relu(x),
    "relu6": lambda t, x: t.nn.functional.relu6(x),
    "hardtanh": lambda t, x: t.nn.functional.hardtanh(x),
    "hardsigmoid": lambda t, x: t.nn.functional.hardsigmoid(x),
    "hardshrink": lambda t, x: t.nn.functional.hardshrink(x),
    "softshrink": lambda t, x: t.nn.functional.softshrink(x),
    "threshold": lambda t, x: t.nn.functional.threshold(x, 0.5, 3.),
    "threshold_": lambda t, x: t.nn.functional.threshold(x * 1, 0.5, 3., inplace=True),
    "leaky_relu": lambda t, x: t.nn.functional.leaky_relu(x, 0.1),
    "leaky_relu_": lambda t, x: t.nn.functional.leaky_relu(x * 1, 0.1, inplace=True),
    "rrelu_eval": lambda t, x: t.nn.functional.rrelu(x, training=False),
    "max_pool1d": lambda t, x: t.nn.functional.max_pool1d(x[None, None], 2, 1),
    "max_pool2d": lambda t, x: t.nn.functional.max_pool2d(x[:6].reshape(1, 1, 2, 3), 2, 1),
    "avg_pool1d": lambda t, x: t.nn.functional.avg_pool1d(x[None, None], 2, 1),
    "avg_pool2d": lambda t, x: t.nn.functional.avg_pool2d(x[:6].reshape(1, 1, 2, 3), 2, 1),
    "adaptive_max_pool1d": lambda t, x: t.nn.functional.adaptive_max_pool1d(x[None, None], 3),
    "adaptive_avg_pool1d": lambda t, x: t.nn.functional.adaptive_avg_pool1d(x[None, None], 3),
    "conv1d_input": lambda t, x: t.nn.functional.conv1d(
        x[None, None], t.tensor([[[1., -2., 0.5]]], dtype=t.float64)),
    "conv1d_weight": lambda t, x: t.nn.functional.conv1d(
        t.ones(1, 1, 9, dtype=t.float64), x[:3].reshape(1, 1, 3)),
    "conv_transpose1d": lambda t, x: t.nn.functional.conv_transpose1d(
        x[None, None], t.tensor([[[1., -2., 0.5]]], dtype=t.float64)),
}


@pytest.mark.parametrize("name", sorted(_SECOND_ORDER))
def test_second_derivative_is_a_graph(name):
    def body(t):
        x = t.tensor([-2.5, -0.7, 0.3, 1.2, 2.7, 4.0, 7.0], dtype=t.float64, requires_grad=True)
        g, = t.autograd.grad(_SECOND_ORDER[name](t, x).sum(), x, create_graph=True)
        return g, t.autograd.grad((g * t.arange(7.)).sum(), x, allow_unused=True)
    same(body, grad_fn=False)


def test_hessian_vector_product_of_a_relu_network():
    def body(t):
        w1 = t.sin(t.arange(12., dtype=t.float64)).reshape(4, 3).requires_grad_()
        w2 = t.cos(t.arange(4., dtype=t.float64)).reshape(1, 4).requires_grad_()
        x = t.tensor([[0.5, -1.0, 2.0], [1.5, 0.3, -0.2]], dtype=t.float64)
        loss = t.relu(x @ w1.t()).matmul(w2.t()).pow(2).sum()
        g1, g2 = t.autograd.grad(loss, (w1, w2), create_graph=True)
        v1, v2 = t.ones_like(w1), t.full_like(w2, 0.5)
        hv = t.autograd.grad((g1 * v1).sum() + (g2 * v2).sum(), (w1, w2))
        net = t.nn.Sequential(t.nn.Linear(3, 4), t.nn.ReLU(), t.nn.Linear(4, 1)).double()
        params = tuple(net.parameters())
        for p in params:
            t.nn.init.constant_(p, 0.3)
        g = t.autograd.grad(net(x).sum(), params, create_graph=True)
        return hv, t.autograd.grad(sum(gi.sum() for gi in g), params, allow_unused=True)
    same(body, grad_fn=False)


# -- the engine ---------------------------------------------------------------------------------
def test_in_place_op_on_a_view_then_second_order_grad():
    def body(t):
        a = (t.arange(12., dtype=t.float64).reshape(3, 4) / 10).requires_grad_()
        b = t.arange(8., dtype=t.float64).reshape(4, 2) / 7
        y = t.tensordot(a, b, 1)
        y.unsqueeze(0).sigmoid_()
        g, = t.autograd.grad((y * y).sum(), a, create_graph=True)
        return g, t.autograd.grad(g.sum(), a)
    same(body, grad_fn=False)


def test_copy_slices_frees_its_node_after_backward():
    def body(t):
        x = t.ones(3, requires_grad=True)
        y = x * 1
        y[0:2].sigmoid_()
        y.sum().backward()
        y.sum().backward()
    same(body)


@pytest.mark.parametrize("fn", ["remainder", "fmod"])
def test_remainder_gradient_of_an_integer_dividend(fn):
    def body(t):
        y = t.tensor([0., 2.5, -3.], requires_grad=True)
        getattr(t, fn)(t.tensor([7, 7, 7]), y).sum().backward()
        z = t.tensor([2.5], dtype=t.float64, requires_grad=True)
        getattr(t, fn)(t.tensor([7.], dtype=t.float32), z).sum().backward()
        return y.grad, z.grad
    same(body)


# -- saved tensor hooks -------------------------------------------------------------------------
def test_pack_hooks_on_a_view_made_under_no_grad():
    def body(t):
        x = t.arange(1., 9.).reshape(1, 2, 4).clone().requires_grad_()  # a leaf, not a view
        w = (t.arange(12.).reshape(3, 2, 2) / 10).requires_grad_()
        with t.no_grad():
            v = x[:, :, 1:]
        with t.autograd.graph.saved_tensors_hooks(lambda p: p, lambda p: p):
            y = t.nn.functional.conv1d(v, w)
            z = (v * x[:, :, :3]).sum()
        y.sum().backward()
        g, = t.autograd.grad(z, x, create_graph=True)
        return w.grad, x.grad, g
    same(body)


# -- a view requires grad whenever its base does --------------------------------------------------
def test_view_follows_its_base_gaining_and_losing_requires_grad():
    def body(t):
        x = t.zeros(3)
        v = x[1:]
        with t.no_grad():
            n = x[:2]
        x.requires_grad_()
        first = (v.requires_grad, v.is_leaf, v.grad_fn, n.requires_grad)
        y = (v * 2).sum()
        y.backward()  # v has no accumulator of its own: nothing reaches x or v
        x.requires_grad_(False)
        return first, y, x.grad, v.grad, (v.requires_grad, n.requires_grad)
    same(body)


_BASE_GAINS_HISTORY = {
    "in_place_op_on_the_base": lambda t, x, y: x.add_(y),
    "same_dtype_fast_path": lambda t, x, y: x.mul_(y + 1),
    "through_another_view": lambda t, x, y: x[:2].copy_(y[:2] * 3),
    "setitem": lambda t, x, y: x.__setitem__(slice(0, 1), y[:1]),
}


@pytest.mark.parametrize("how", sorted(_BASE_GAINS_HISTORY))
def test_view_made_before_its_base_gained_history_records(how):
    def body(t):
        x = t.zeros(4)
        w = x[1:]  # made while x did not require grad
        y = t.arange(1., 5.).requires_grad_()
        _BASE_GAINS_HISTORY[how](t, x, y)
        z = (w * w).sum()  # w's grad_fn is not read before it is used
        z.backward()
        return w.requires_grad, z, y.grad
    same(body)


def test_view_of_a_base_whose_history_is_detached():
    def body(t):
        x = t.zeros(3)
        v = x[1:]
        x.add_(t.ones(3, requires_grad=True))
        x.detach_()
        return v.requires_grad, x.requires_grad
    same(body)


# -- inference mode -------------------------------------------------------------------------------
def test_views_made_in_inference_mode_of_normal_tensors():
    def body(t):
        x = t.ones(3, requires_grad=True)
        z = t.ones(3)
        with t.inference_mode():
            v, w, y, m = x[1:], x.view(3), x * 2, z.unbind()[0]
            vv = v[1:]
            inside = (v.is_inference(), v.requires_grad, v.grad_fn, v._version, w.is_inference(),
                      y.is_inference(), y.requires_grad, vv.is_inference())
            q = t.ones(3)
            made = (q.is_inference(), q[1:].is_inference())
            zv = z[1:]
            zv.mul_(3)  # a normal tensor's version counter is kept
            versions = (z._version, zv._version)
        (v * 2).sum().backward()
        m.add_(1)  # no grad involved: allowed outside
        zv.add_(1)
        return inside, made, versions, (v.requires_grad, v.is_leaf), x.grad, z
    same(body)


def _changed_in_no_grad_then_used(t, v):
    with t.no_grad():
        v.mul_(2)
    return v * 1


_INFERENCE_VIEW_REFUSALS = {
    "view": lambda t, v, u, m: v.mul_(2),
    "view_of_view_made_outside": lambda t, v, u, m: u.mul_(2),
    "multi_output_view": lambda t, v, u, m: m.mul_(2),
    "used_after_a_change_in_no_grad": lambda t, v, u, m: _changed_in_no_grad_then_used(t, v),
}


@pytest.mark.parametrize("how", sorted(_INFERENCE_VIEW_REFUSALS))
def test_views_made_in_inference_mode_refuse_in_place_ops_under_grad(how):
    def body(t):
        x = t.ones(3, requires_grad=True)
        with t.inference_mode():
            v, m = x[1:], x.unbind()[0]
        u = v[1:]
        return _INFERENCE_VIEW_REFUSALS[how](t, v, u, m)
    same(body)
