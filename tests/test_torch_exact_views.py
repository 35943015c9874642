"""View and version flags as torch keeps them: views of multi-output ops and of views made in
no_grad mode after an in-place change of their base, inference tensors (what view ops, detach,
``.data`` and in-place ops make of them in and out of inference mode), and views requiring
grad only through their base.

Each body runs on PyTorch 2.13 and on ember (``oracle.same``); the tests skip when torch is
not installed.
"""
from __future__ import annotations

import pytest
from oracle import error_of, same


def flags(t):
    """What a user can see of a tensor's autograd bookkeeping (a read that raises gives its
    error)."""
    def read(fn):
        err = error_of(fn)
        return fn() if err is None else err
    fn = read(lambda: t.grad_fn)
    return {"is_view": t._is_view(), "base": t._base is not None,
            "is_inference": t.is_inference(), "_version": read(lambda: t._version),
            "requires_grad": t.requires_grad, "is_leaf": read(lambda: t.is_leaf),
            "grad_fn": fn if fn is None or isinstance(fn, tuple) else fn.name()}


# -- views of a multi-output op, and views made in no_grad mode, after their base changed -----
_REBASED = {
    "split_base": lambda t, y: (y.split(2)[0], lambda: y.mul_(2)),
    "chunk_base": lambda t, y: (y.chunk(2)[1], lambda: y.reciprocal_()),
    "unbind_through_detach": lambda t, y: (y.unbind()[2], lambda: y.detach().mul_(0.5)),
    "split_with_sizes": lambda t, y: (y.split_with_sizes([1, 3])[0], lambda: y.add_(1)),
    "view_of_split": lambda t, y: (y.split(2)[0][0:1], lambda: y.mul_(2)),
    "split_in_no_grad": lambda t, y: (_in_no_grad(t, lambda: y.split(2)[0]),
                                      lambda: y.mul_(2)),
    "slice_in_no_grad": lambda t, y: (_in_no_grad(t, lambda: y[:-1]),
                                      lambda: y.scatter_add_(0, t.tensor([1]), t.ones(1))),
    "tensor_split": lambda t, y: (y.tensor_split(2)[0], lambda: y.mul_(2)),
    "squeezed_chunk": lambda t, y: (y[None].chunk(1)[0].squeeze(0), lambda: y.mul_(2)),
}


def _in_no_grad(t, make):
    with t.no_grad():
        return make()


@pytest.mark.parametrize("name", sorted(_REBASED))
def test_view_flags_after_base_changed_in_place(name):
    def body(t):
        x = t.tensor([1.26, 0.32, 0.83, -0.5], requires_grad=True)
        y = x * 1
        view, change = _REBASED[name](t, y)
        before = flags(view)
        change()
        return before, flags(view), flags(y), error_of(lambda: view.exp())
    same(body)


def test_multi_output_view_made_before_its_base_required_grad():
    def body(t):
        y = t.tensor([1., 2., 3., 4.]) * 1
        a = y.split(2)[0]
        y.requires_grad_()
        return flags(a), error_of(lambda: a.mul_(2)), flags(y)
    same(body)


# -- inference tensors ------------------------------------------------------------------------
_OF_INFERENCE = {
    "view": lambda t, a: a.view(4),
    "unsqueeze": lambda t, a: a.unsqueeze(-1),
    "select": lambda t, a: a.select(-1, 0),
    "slice": lambda t, a: a[0:1, 1:],
    "split": lambda t, a: a.split(1)[0],
    "unbind": lambda t, a: a.unbind(1)[0],
    "transpose": lambda t, a: a.T,
    "reshape_view": lambda t, a: a.reshape(4),
    "reshape_copy": lambda t, a: a.t().reshape(4),
    "detach": lambda t, a: a.detach(),
    "data": lambda t, a: a.data,
    "exp": lambda t, a: a.exp(),
    "mixed": lambda t, a: a * t.ones(2),
}


@pytest.mark.parametrize("inside", [True, False], ids=["in_inference_mode", "outside"])
@pytest.mark.parametrize("name", sorted(_OF_INFERENCE))
def test_what_ops_make_of_an_inference_tensor(name, inside):
    """A view op on an inference tensor makes another inference tensor, never a view; detach
    and .data outside inference mode make one with a version counter of its own."""
    def body(t):
        x = t.tensor([[1., 2.], [3., 4.]], requires_grad=True)
        with t.inference_mode():
            a = x * 2
            if inside:
                r = _OF_INFERENCE[name](t, a)
        if not inside:
            r = _OF_INFERENCE[name](t, a)
        return flags(r)
    same(body)


_INFERENCE_RESULTS = {
    "conv1d": lambda t, x: t.nn.functional.conv1d(x[None], t.ones(1, 2, 1)),
    "avg_pool1d": lambda t, x: t.nn.functional.avg_pool1d(x[None], 2),
    "tensordot": lambda t, x: t.tensordot(x, t.ones(2, 3), dims=1),
    "pairwise_distance": lambda t, x: t.nn.functional.pairwise_distance(x, x),
    "view_of_normal": lambda t, x: x.view(4),
    "one_hot": lambda t, x: t.nn.functional.one_hot(t.tensor([0, 2])),
}


@pytest.mark.parametrize("name", sorted(_INFERENCE_RESULTS))
def test_results_made_in_inference_mode(name):
    def body(t):
        x = t.tensor([[1., 2.], [3., 4.]], requires_grad=True)
        with t.inference_mode():
            r = _INFERENCE_RESULTS[name](t, x)
        return flags(r)
    same(body)


def test_inference_tensor_written_outside_inference_mode():
    """torch writes, then refuses (the version bump is what fails); the kernel's own errors
    come first, and a detached alias with its own counter may be written."""
    def body(t):
        with t.inference_mode():
            a = t.tensor([1., 2.]) * 1
        d = a.detach()
        return (error_of(lambda: a.add_(t.ones(3, 2))), error_of(lambda: a.add_(1)),
                a.tolist(), error_of(lambda: a[0].mul_(3)), a.tolist(),
                error_of(lambda: d.add_(1)), flags(d), a.tolist(),
                error_of(lambda: d.requires_grad_()))
    same(body)


def test_counted_inference_alias_written_in_inference_mode():
    def body(t):
        with t.inference_mode():
            a = t.tensor([1., 2.]) * 1
        d = a.data
        with t.inference_mode():
            d.add_(1)
        return flags(d), a.tolist()
    same(body)


# -- views that require grad only through their base ------------------------------------------
def test_gradient_for_a_view_made_in_no_grad_mode():
    """It requires grad (its base does) but has no edge: unreachable, as in torch."""
    def body(t):
        x = t.tensor([1., 2., 3.], requires_grad=True)
        y = x * 2
        with t.no_grad():
            v = y[1:]
        z = v.pow(2).sum()
        return (flags(v), error_of(lambda: t.autograd.grad(z, [v], retain_graph=True)),
                t.autograd.grad(y.sum(), [v], allow_unused=True, retain_graph=True),
                error_of(lambda: y.sum().backward(inputs=[v])), v.grad, x.grad)
    same(body)


def test_node_names_in_version_errors():
    """torch names a node in its errors without "Backward" and without overload number 0."""
    def body(t):
        x = t.tensor([[-1.16, 0.5]], requires_grad=True)
        y = x.mean(1)
        y.clamp_min_(y)
        z = x.max()
        z2 = z.exp()
        z.add_(1)
        return (error_of(lambda: t.autograd.grad(y.exp().sum(), [x])),
                error_of(lambda: z2.backward()))
    same(body)


# -- versions torch's kernels leave on their results when no autograd layer runs ---------------
_ON_INFERENCE_INPUTS = {
    "sum": lambda t, x: x.sum(), "sum_dim": lambda t, x: x.sum(0, keepdim=True),
    "mean": lambda t, x: x.mean(), "mean_dim": lambda t, x: x.mean(0),
    "nansum": lambda t, x: x.nansum(), "prod_dim": lambda t, x: x.prod(1),
    "amax": lambda t, x: x.amax(0), "all": lambda t, x: x.all(), "any": lambda t, x: x.any(0),
    "max": lambda t, x: x.max(), "max_dim": lambda t, x: x.max(0),
    "min_dim_keepdim": lambda t, x: x.min(0, keepdim=True),
    "std": lambda t, x: x.std(), "std_dim": lambda t, x: x.std(0),
    "var_every_dim": lambda t, x: x.var((0, 1)), "var_mean": lambda t, x: t.var_mean(x),
    "median": lambda t, x: x.median(), "median_dim": lambda t, x: x.median(0),
    "sort": lambda t, x: x.sort(0), "argsort": lambda t, x: x.argsort(),
    "kthvalue": lambda t, x: x.kthvalue(1, 0), "cummax": lambda t, x: x.cummax(1),
    "logsumexp": lambda t, x: x.logsumexp(0), "clone": lambda t, x: x.clone(),
    "double": lambda t, x: x.double(), "long": lambda t, x: x.long(),
    "mv": lambda t, x: t.mv(x, x[0]), "dot": lambda t, x: t.dot(x[0], x[0]),
    "addmm": lambda t, x: t.addmm(x, x, x), "mm": lambda t, x: x @ x,
    "mse_loss": lambda t, x: t.nn.functional.mse_loss(x, x),
    "mse_loss_none": lambda t, x: t.nn.functional.mse_loss(x, x, reduction="none"),
    "smooth_l1_loss": lambda t, x: t.nn.functional.smooth_l1_loss(x, x),
    "l1_loss_sum": lambda t, x: t.nn.functional.l1_loss(x, x, reduction="sum"),
    "pad": lambda t, x: t.nn.functional.pad(x, (1, 1)),
    "pad_zero": lambda t, x: t.nn.functional.pad(x, (0, 0)),
    "exp": lambda t, x: x.exp(), "norm": lambda t, x: x.norm(), "abs": lambda t, x: x.abs(),
    "logical_not": lambda t, x: t.logical_not(x), "logical_and": lambda t, x: t.logical_and(x, x),
    "relu6": lambda t, x: t.nn.functional.relu6(x),
    "hardtanh": lambda t, x: t.nn.functional.hardtanh(x),
    "einsum_trace": lambda t, x: t.einsum("ii", x),
}


@pytest.mark.parametrize("name", sorted(_ON_INFERENCE_INPUTS))
def test_versions_of_results_computed_from_inference_tensors(name):
    """torch's autograd layer hides the in-place writes its kernels make into their results,
    except when it does not run: for inference tensors used outside inference mode."""
    def body(t):
        with t.inference_mode():
            x = t.tensor([[1., 4.], [3., 2.]]) * 1
        r = _ON_INFERENCE_INPUTS[name](t, x)
        normal = _ON_INFERENCE_INPUTS[name](t, t.tensor([[1., 4.], [3., 2.]]))
        rs = r if isinstance(r, tuple) else (r,)
        return [flags(o) for o in rs], [o._version for o in (
            normal if isinstance(normal, tuple) else (normal,))]
    same(body)


def test_broadcast_tensors_returns_a_tensor_of_the_common_shape_itself():
    def body(t):
        x = t.tensor([[1., 2.], [3., 4.]], requires_grad=True)
        y = t.tensor([1., 2.], requires_grad=True)
        z = x * 1
        a, b = t.broadcast_tensors(z, y)
        return a is z, flags(a), flags(b), flags(t.broadcast_tensors(y)[0])
    same(body)


def test_numpy_of_a_tensor_requiring_grad_without_grad_mode():
    def body(t):
        x = t.tensor([1., 2.], requires_grad=True)
        with t.no_grad():
            a = x.numpy().tolist()
        with t.inference_mode():
            b = x.numpy().tolist()
        return a, b, error_of(lambda: x.numpy())
    same(body)


def test_requires_grad_of_its_own_on_a_view_made_in_no_grad_mode():
    """requires_grad_() on such a view gives it a gradient of its own (torch's requires_grad_
    field), and requires_grad_(False) leaves it requiring grad through its base."""
    def body(t):
        x = t.tensor([-1.19, -0.25], requires_grad=True)
        with t.no_grad():
            v = x[1]
            w = x[0]
        v.requires_grad_(True)
        v.backward()
        (v * 2).backward()
        w.requires_grad_(False)
        return (flags(v), v.grad, x.grad, t.autograd.grad(v * 3, [v]), w.requires_grad,
                error_of(lambda: t.autograd.grad(w * 3, [w])))
    same(body)


# (a view made in no_grad mode holds no node: torch's retain_grad takes it for a leaf and does
# nothing, without regenerating its history, so only a later read of grad_fn raises)
_NO_GRAD_VIEWS = {
    "of_a_leaf_that_requires_grad_after": lambda t, x: _written_after(t, x, False),
    "of_a_leaf_that_requires_grad_before": lambda t, x: _written_after(t, x, True),
    "of_an_interior_tensor_written_after": lambda t, x: _interior(t, x, True),
    "of_an_interior_tensor": lambda t, x: _interior(t, x, False),
}


def _written_after(t, x, required_first):
    if required_first:
        x.requires_grad_(True)
    with t.no_grad():
        v = x[:]
    x.requires_grad_(True)
    with t.no_grad():
        x.clamp_min_(x.log1p())
    return v


def _interior(t, x, written):
    y = x.requires_grad_(True) * 1
    with t.no_grad():
        v = y[1:]
    if written:
        y.mul_(2)
    return v


@pytest.mark.parametrize("name", sorted(_NO_GRAD_VIEWS))
def test_retain_grad_on_a_view_made_in_no_grad_mode(name):
    def body(t):
        v = _NO_GRAD_VIEWS[name](t, t.tensor([0.47, 1.5, -0.25]))
        return error_of(v.retain_grad), v.retains_grad, flags(v), error_of(v.retain_grad)
    same(body)
