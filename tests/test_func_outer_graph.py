"""A transform's results keep the outer graph, as torch.func's levels do: autograd outside a
``grad``/``vjp``/``jvp``/``jacrev``/``jacfwd``/``hessian`` (nested, or under ``vmap``) records
through the tensors the function captures that require grad, through the transform's own inputs
that do, and through an outer transform's inputs (reverse and forward mode). Against torch 2.13:
the results' values, flags and nodes, and the first and second derivatives that reach the
captured tensors.
"""
import numpy as np
import pytest
from oracle import same

GEN = np.random.default_rng(7)
W = GEN.standard_normal(3)
X = GEN.standard_normal(3)
XB = GEN.standard_normal((4, 3))
T = GEN.standard_normal(3)


def _tensors(torch):
    w = torch.tensor(W, requires_grad=True)
    return w, torch.tensor(X), torch.tensor(XB), torch.tensor(T)


def _leaves(tree):
    if isinstance(tree, (tuple, list)):
        return [t for item in tree for t in _leaves(item)]
    if isinstance(tree, dict):
        return [t for item in tree.values() for t in _leaves(item)]
    return [tree]


def _derivatives(torch, results, wrt):
    """The first and second derivatives of a loss made of ``results`` w.r.t. ``wrt`` (a
    tuple): what a loss that adds a transform's results to other terms gets (None where
    nothing reaches)."""
    recorded = [t for t in _leaves(results) if t.requires_grad]
    if not recorded:
        return None
    loss = sum((t * (k + 1.5)).sin().sum() for k, t in enumerate(recorded))
    first = torch.autograd.grad(loss, wrt, create_graph=True, allow_unused=True)
    second = [None if g is None or not g.requires_grad else
              torch.autograd.grad((g ** 2).sum(), wrt, allow_unused=True) for g in first]
    # (values only: the nodes a create_graph backward records are ember's formulas' own)
    return _values(first), [_values(s) for s in second]


def _values(grads):
    return None if grads is None else [None if g is None else g.detach() for g in grads]


def _ones(torch):
    return torch.ones(3, dtype=torch.float64)


# Each case: (torch, w, x, xb, t) -> the transform's results. ``w`` requires grad and is
# captured by the transformed function; ``x`` and ``xb`` (a batch) do not; ``t`` is a tangent.
CASES = {
    "grad": lambda torch, w, x, xb, t: torch.func.grad(lambda v: (v * w).sin().sum())(x),
    "grad_and_value": lambda torch, w, x, xb, t: torch.func.grad_and_value(
        lambda v: (v * w).sin().sum())(x),
    "grad_has_aux": lambda torch, w, x, xb, t: torch.func.grad(
        lambda v: ((v * w).sum(), (v * w, v * 2)), has_aux=True)(x),
    "grad_argnums": lambda torch, w, x, xb, t: torch.func.grad(
        lambda a, b: (a * b * w).exp().sum(), argnums=(0, 1))(x, x * 2),
    "grad_partly_captured": lambda torch, w, x, xb, t: torch.func.grad_and_value(
        lambda v: (v ** 2).sum() + (v * w).sum())(x),
    "grad_not_captured": lambda torch, w, x, xb, t: torch.func.grad_and_value(
        lambda v: (v ** 2).sum() + (w * 3).sum())(x),
    "vjp": lambda torch, w, x, xb, t: (lambda out: (out[0], out[1](_ones(torch))))(
        torch.func.vjp(lambda v: (v * w).sin(), x)),
    "vjp_captured_cotangent": lambda torch, w, x, xb, t: torch.func.vjp(
        lambda v: v.sin(), x)[1](w * 2),
    "jvp": lambda torch, w, x, xb, t: torch.func.jvp(lambda v: (v * w).sin(), (x,), (t,)),
    "jvp_captured_tangent": lambda torch, w, x, xb, t: torch.func.jvp(
        lambda v: v.sin(), (x,), (w * 1,)),
    "jacrev": lambda torch, w, x, xb, t: torch.func.jacrev(lambda v: (v * w).sin())(x),
    "jacrev_has_aux": lambda torch, w, x, xb, t: torch.func.jacrev(
        lambda v: ((v * w).sin(), (v * w).sum()), has_aux=True)(x),
    "jacrev_outputs_apart": lambda torch, w, x, xb, t: torch.func.jacrev(
        lambda v: ((v * w).sin(), v * 2, torch.ones(2, dtype=torch.float64)))(x),
    "jacrev_argnums": lambda torch, w, x, xb, t: torch.func.jacrev(
        lambda a, b: (a * w).sum() + b.sum(), argnums=(0, 1))(x, x[0]),
    "jacfwd": lambda torch, w, x, xb, t: torch.func.jacfwd(lambda v: (v * w).sin())(x),
    "jacfwd_argnums": lambda torch, w, x, xb, t: torch.func.jacfwd(
        lambda a, b, c: (a * w).sin() + b + c, argnums=(0, 1, 2))(x, x * 2, x[0]),
    "jacfwd_outputs_apart": lambda torch, w, x, xb, t: torch.func.jacfwd(
        lambda v: ((v * w).sin(), v * 2, torch.ones(2, dtype=torch.float64)))(x),
    "hessian": lambda torch, w, x, xb, t: torch.func.hessian(lambda v: (v * w).sin().sum())(x),
    "grad_of_grad": lambda torch, w, x, xb, t: torch.func.grad(
        lambda a: torch.func.grad(lambda b: (b.sin() * w).sum())(a).pow(2).sum())(x),
    "grad_of_grad_capturing_the_outer_input": lambda torch, w, x, xb, t: torch.func.grad(
        lambda a: torch.func.grad(lambda b: (b * a * w).sin().sum())(a).sum())(x),
    "jacrev_of_jacfwd": lambda torch, w, x, xb, t: torch.func.jacrev(
        torch.func.jacfwd(lambda v: (v * w).sin()))(x),
    "jacfwd_of_jacrev": lambda torch, w, x, xb, t: torch.func.jacfwd(
        torch.func.jacrev(lambda v: (v * w).sin()))(x),
    "vmap_grad": lambda torch, w, x, xb, t: torch.func.vmap(
        torch.func.grad(lambda v: (v * w).sin().sum()))(xb),
    "vmap_grad_and_value": lambda torch, w, x, xb, t: torch.func.vmap(
        torch.func.grad_and_value(lambda v: (v * w).sin().sum()))(xb),
    "vmap_grad_has_aux": lambda torch, w, x, xb, t: torch.func.vmap(
        torch.func.grad(lambda v: ((v * w).sum(), (v * w, v * 2)), has_aux=True))(xb),
    "vmap_vjp": lambda torch, w, x, xb, t: torch.func.vmap(
        lambda v: torch.func.vjp(lambda u: (u * w).sin(), v)[1](_ones(torch)))(xb),
    "vmap_jvp": lambda torch, w, x, xb, t: torch.func.vmap(
        lambda v: torch.func.jvp(lambda u: (u * w).sin(), (v,), (_ones(torch),)))(xb),
    "vmap_jacrev": lambda torch, w, x, xb, t: torch.func.vmap(
        torch.func.jacrev(lambda v: (v * w).sin()))(xb),
    "vmap_jacfwd": lambda torch, w, x, xb, t: torch.func.vmap(
        torch.func.jacfwd(lambda v: (v * w).sin()))(xb),
    "vmap_of_vjp_fn": lambda torch, w, x, xb, t: torch.func.vmap(
        torch.func.vjp(lambda v: (v * w).sin(), x)[1])(xb),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_results_keep_the_graph_of_captured_tensors(name):
    def body(torch):
        w, x, xb, t = _tensors(torch)
        results = CASES[name](torch, w, x, xb, t)
        return results, _derivatives(torch, results, (w,))
    same(body, rtol=1e-9, atol=1e-12, check_warnings=False)


@pytest.mark.parametrize("name", sorted(CASES))
def test_inputs_that_require_grad_are_reached_too(name):
    def body(torch):
        w, x, xb, t = _tensors(torch)
        x, xb = x.requires_grad_(), xb.requires_grad_()
        results = CASES[name](torch, w, x, xb, t)
        return results, _derivatives(torch, results, (w, x, xb))
    same(body, rtol=1e-9, atol=1e-12, check_warnings=False)


@pytest.mark.parametrize("name", sorted(CASES))
def test_no_graph_under_no_grad(name):
    def body(torch):
        w, x, xb, t = _tensors(torch)
        with torch.no_grad():
            return CASES[name](torch, w, x, xb, t)
    same(body, rtol=1e-9, atol=1e-12, check_warnings=False)


# An outer transform's input captured by an inner transform: the derivatives of the inner
# results w.r.t. it (torch's levels; ember's inner transform used to give zeros).
NESTED = {
    "jvp_of_grad": lambda torch, w, x, t: torch.func.jvp(
        lambda u: torch.func.grad(lambda v: (v * u).sin().sum())(x), (w,), (t,)),
    "jacfwd_of_grad": lambda torch, w, x, t: torch.func.jacfwd(
        lambda u: torch.func.grad_and_value(lambda v: (v * u).sin().sum())(x))(w),
    "jacfwd_of_vjp": lambda torch, w, x, t: torch.func.jacfwd(
        lambda u: torch.func.vjp(lambda v: (v * u).sin(), x)[1](_ones(torch)))(w),
    "jacfwd_of_jacrev": lambda torch, w, x, t: torch.func.jacfwd(
        lambda u: torch.func.jacrev(lambda v: (v * u).sin())(x))(w),
    "jacrev_of_grad": lambda torch, w, x, t: torch.func.jacrev(
        lambda u: torch.func.grad(lambda v: (v * u).sin().sum())(x))(w),
    "jacrev_of_jvp": lambda torch, w, x, t: torch.func.jacrev(
        lambda u: torch.func.jvp(lambda v: (v * u).sin(), (x,), (t,))[1])(w),
    "jacrev_of_jacfwd": lambda torch, w, x, t: torch.func.jacrev(
        lambda u: torch.func.jacfwd(lambda v: (v * u).sin())(x))(w),
    "jvp_of_jacfwd": lambda torch, w, x, t: torch.func.jvp(
        lambda u: torch.func.jacfwd(lambda v: (v * u).sin())(x), (w,), (t,)),
    "grad_of_grad": lambda torch, w, x, t: torch.func.grad(
        lambda u: torch.func.grad(lambda v: (v * u).sin().sum())(x).pow(2).sum())(w),
    "jvp_of_hessian": lambda torch, w, x, t: torch.func.jvp(
        lambda u: torch.func.hessian(lambda v: (v * u).sin().sum())(x), (w,), (t,)),
    "jacfwd_of_vmap_grad": lambda torch, w, x, t: torch.func.jacfwd(
        lambda u: torch.func.vmap(torch.func.grad(lambda v: (v * u).sin().sum()))(
            torch.stack([x, 2 * x])))(w),
    "grad_of_vmap_grad": lambda torch, w, x, t: torch.func.grad(
        lambda u: torch.func.vmap(torch.func.grad(lambda v: (v * u).sin().sum()))(
            torch.stack([x, 2 * x])).pow(2).sum())(w),
}


@pytest.mark.parametrize("name", sorted(NESTED))
@pytest.mark.parametrize("outer_requires_grad", [False, True])
def test_inner_transforms_see_an_outer_transforms_input(name, outer_requires_grad):
    def body(torch):
        w, x, _, t = _tensors(torch)
        w.requires_grad_(outer_requires_grad)
        results = NESTED[name](torch, w, x, t)
        return results, _derivatives(torch, results, (w,))
    same(body, rtol=1e-9, atol=1e-12, check_warnings=False)


def _model(torch):
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 2))
    model = model.double()
    with torch.no_grad():
        for k, p in enumerate(model.parameters()):
            p.copy_(torch.tensor(GEN_PARAMS[k]))
    return model


GEN_PARAMS = [np.random.default_rng(k).standard_normal(shape)
              for k, shape in enumerate([(4, 3), (4,), (2, 4), (2,)])]


def _loss(torch, model):
    def loss(params, x, y):
        out = torch.func.functional_call(model, params, (x.unsqueeze(0),))
        return torch.nn.functional.cross_entropy(out, y.unsqueeze(0))
    return loss


@pytest.mark.parametrize("wrt", ["params", "data"])
def test_per_sample_gradients_of_parameters_that_require_grad(wrt):
    """vmap(grad(loss)) of a functional_call with the module's own parameters (which require
    grad): the per-example gradients stay attached to them, as torch's do."""
    def body(torch):
        model = _model(torch)
        params = dict(model.named_parameters())
        _, x, xb, _ = _tensors(torch)
        targets = torch.tensor([0, 1, 1, 0])
        argnums = 0 if wrt == "params" else 1
        per_example = torch.func.vmap(torch.func.grad(_loss(torch, model), argnums=argnums),
                                      in_dims=(None, 0, 0))(params, xb, targets)
        return per_example, _derivatives(torch, per_example, tuple(params.values()))
    same(body, rtol=1e-9, atol=1e-12, check_warnings=False)


def test_model_ensembling_keeps_the_stacked_parameters_graph():
    def body(torch):
        models = [_model(torch) for _ in range(3)]
        params, buffers = torch.func.stack_module_state(models)
        _, _, xb, _ = _tensors(torch)
        out = torch.func.vmap(lambda p, b, x: torch.func.functional_call(models[0], (p, b), (x,)),
                              in_dims=(0, 0, None))(params, buffers, xb)
        grads = torch.func.vmap(torch.func.grad(
            lambda p, x: torch.func.functional_call(models[0], p, (x,)).sin().sum()),
            in_dims=(0, None))(params, xb)
        return out, grads, _derivatives(torch, (out, grads), tuple(params.values()))
    same(body, rtol=1e-9, atol=1e-12, check_warnings=False)


def test_hessian_of_a_model_w_r_t_its_input_reaches_the_parameters():
    def body(torch):
        model = _model(torch)
        params = dict(model.named_parameters())
        _, x, _, _ = _tensors(torch)
        h = torch.func.hessian(lambda v: _loss(torch, model)(params, v, torch.tensor(1)))(x)
        return h, _derivatives(torch, h, tuple(params.values()))
    same(body, rtol=1e-9, atol=1e-12, check_warnings=False)


# ``m`` (3, 2) requires grad; the functions capture a row of it (a view), or are vmapped over
# its rows, or take a non-leaf input computed from it.
OF_A_MATRIX = {
    "vmap_over_captured_rows": lambda torch, m, x: torch.func.vmap(
        lambda r: torch.func.grad(lambda v: (v * r).sin().sum())(x))(m),
    "vmap_of_vmap_grad_over_captured_rows": lambda torch, m, x: torch.func.vmap(
        lambda r: torch.func.vmap(torch.func.grad(lambda v: (v * r).sin().sum()))(
            torch.stack([x, 2 * x])))(m),
    "grad_capturing_a_view": lambda torch, m, x: torch.func.grad(
        lambda v: (v * m[0]).sin().sum())(x),
    "grad_of_a_non_leaf_input": lambda torch, m, x: torch.func.grad(
        lambda v: (v * m[0]).sin().sum())(m[1] * 1),
    "vjp_of_a_non_leaf_input": lambda torch, m, x: torch.func.vjp(
        lambda v: (v * m[0]).sin(), m[1] * 1)[1](torch.ones(2, dtype=torch.float64)),
    "jacrev_of_jacrev": lambda torch, m, x: torch.func.jacrev(
        torch.func.jacrev(lambda v: (v * m[0]).sin()))(x),
    "jacfwd_of_jacfwd": lambda torch, m, x: torch.func.jacfwd(
        torch.func.jacfwd(lambda v: (v * m[0]).sin()))(x),
    "hessian_of_a_non_leaf_input": lambda torch, m, x: torch.func.hessian(
        lambda v: (v * m[0]).sin().sum())(m[1] * 1),
}


@pytest.mark.parametrize("name", sorted(OF_A_MATRIX))
def test_views_rows_and_non_leaf_inputs_of_a_tensor_that_requires_grad(name):
    def body(torch):
        m = torch.tensor(W.reshape(3, 1) * X[:2], requires_grad=True)
        results = OF_A_MATRIX[name](torch, m, torch.tensor(X[:2]))
        return results, _derivatives(torch, results, (m,))
    same(body, rtol=1e-9, atol=1e-12, check_warnings=False)


@pytest.mark.parametrize("requires_grad", [False, True])
@pytest.mark.parametrize("mode", ["no_grad", "enable_grad"])
def test_an_input_returned_as_it_is_comes_back_itself(requires_grad, mode):
    # torch unwraps the transform's wrapper of an input to the input itself
    def body(torch):
        F = torch.func
        x = torch.tensor(X, requires_grad=requires_grad)
        with getattr(torch, mode)():
            results = [F.vjp(lambda v: v, x)[0], F.vjp(lambda v: (v, v * 1), x)[0][0],
                       F.grad(lambda v: (v.sum(), v), has_aux=True)(x)[1],
                       F.grad_and_value(lambda v: (v.sum(), v), has_aux=True)(x)[1][1],
                       F.jacrev(lambda v: (v, {"x": v}), has_aux=True)(x)[1]["x"]]
        return results, [r is x for r in results]
    same(body, check_warnings=False)
