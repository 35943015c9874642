"""``ember.gradient`` (torch.gradient): its values, its graph (torch builds it from slices,
sub, mul, div and cat, so it is differentiable) and its errors, against torch."""
import numpy as np
import pytest
from oracle import error_of, graph_tree, same

import ember

SAMPLES = np.array([[1.0, 2.0, 4.0, 7.0, 3.0], [0.5, -1.0, 2.5, 2.0, -3.0],
                    [2.0, 0.0, 1.0, 5.0, 4.5]])
COORDS = {0: np.array([0.0, 1.0, 3.5]), 1: np.array([0.0, 1.0, 3.0, 4.0, 6.5])}

# (name, keyword arguments, with a coordinates array spelled as ("coords", dim))
CALLS = [("default", {}), ("edge2", {"edge_order": 2}), ("number", {"spacing": 2.0}),
         ("int_number", {"spacing": 3, "edge_order": 2}),
         ("numbers", {"spacing": [0.5, 2.0]}), ("dim", {"dim": 1}),
         ("dim_list", {"dim": [-1, 0], "spacing": [2.0, 0.25], "edge_order": 2}),
         ("coords", {"spacing": [("coords", 0), ("coords", 1)]}),
         ("coords_edge2", {"spacing": [("coords", 0), ("coords", 1)], "edge_order": 2}),
         ("coords_dim", {"spacing": [("coords", 1)], "dim": 1, "edge_order": 2})]


def _arguments(torch, kwargs):
    def resolve(v):
        if isinstance(v, tuple):
            return torch.tensor(COORDS[v[1]])
        return [resolve(s) for s in v] if isinstance(v, list) else v
    return {k: resolve(v) for k, v in kwargs.items()}


@pytest.mark.parametrize("kwargs", [c[1] for c in CALLS], ids=[c[0] for c in CALLS])
def test_values_graph_and_grads_match_torch(kwargs):
    def body(torch):
        x = torch.tensor(SAMPLES, requires_grad=True)
        outs = torch.gradient(x, **_arguments(torch, kwargs))
        weights = torch.tensor(np.arange(15.0).reshape(3, 5) / 4 - 1)
        (grad,) = torch.autograd.grad(sum((o * weights).sum() for o in outs), x)
        return outs, [graph_tree(o.grad_fn, 4) for o in outs], grad
    same(body)


@pytest.mark.parametrize("kwargs", [c[1] for c in CALLS], ids=[c[0] for c in CALLS])
def test_gradcheck_and_gradgradcheck(kwargs):
    x = ember.tensor(SAMPLES, requires_grad=True)
    args = _arguments(ember, kwargs)
    assert ember.autograd.gradcheck(lambda t: ember.gradient(t, **args), (x,))
    assert ember.autograd.gradgradcheck(lambda t: ember.gradient(t, **args), (x,))


def test_integral_complex_and_scalar_inputs_match_torch():
    def body(torch):
        n = torch.tensor([1, 4, 9, 16, 25])
        z = torch.tensor(SAMPLES[0] + 1j * SAMPLES[1], requires_grad=True)
        return (torch.gradient(n), torch.gradient(n, spacing=2, edge_order=2),
                torch.gradient(n, spacing=[n]), torch.gradient(n.float(), spacing=[n]),
                torch.gradient(z, edge_order=2), torch.gradient(torch.tensor(3.0)),
                torch.gradient(torch.tensor(SAMPLES), spacing=torch.tensor(2.0)))
    same(body)


def test_errors_match_torch():
    def body(torch):
        x = torch.tensor(SAMPLES)
        c = torch.tensor(COORDS[1])
        return [error_of(f) for f in (
            lambda: torch.gradient(x, edge_order=3),
            lambda: torch.gradient(x[:2], edge_order=2),
            lambda: torch.gradient(x, spacing=[1.0, 2.0, 3.0]),
            lambda: torch.gradient(x, spacing=[1.0], dim=[0, 1]),
            lambda: torch.gradient(x, dim=[0, -2]),
            lambda: torch.gradient(x, dim=2),
            lambda: torch.gradient(x, spacing=[c, torch.ones(2, 5)]),
            lambda: torch.gradient(x, spacing=[c, c]),
            lambda: torch.gradient(x.to(torch.uint8)))]
    same(body)


@pytest.mark.parametrize("edge_order", [1, 2])
def test_coordinates_that_require_grad_match_torch(edge_order):
    """Coordinates are differentiated too: their graph (down to the mul.Scalar of the
    second-order edge weights) and gradients are torch's, and gradcheck passes for them."""
    def body(torch):
        x = torch.tensor(SAMPLES[0], requires_grad=True)
        c = torch.tensor(COORDS[1], requires_grad=True)
        (g,) = torch.gradient(x, spacing=[c], edge_order=edge_order)
        return g, graph_tree(g.grad_fn, 12), torch.autograd.grad((g * g).sum(), (x, c))
    same(body)
    x = ember.tensor(SAMPLES[0], requires_grad=True)
    c = ember.tensor(COORDS[1], requires_grad=True)
    assert ember.autograd.gradcheck(
        lambda x, c: ember.gradient(x, spacing=[c], edge_order=edge_order), (x, c))
