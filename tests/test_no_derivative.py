"""Ops torch records a node for without a usable derivative, against torch 2.13: the node's
name, and what backward through it does (torch's error, or zeros for samplers, whose samples
are not reparameterised)."""
import numpy as np
import pytest
from oracle import error_of, torch_or_skip

import ember

X = np.array([[1.0, 2.0, -0.5], [1.0, 2.0, 0.0]])
W = np.array([0.25, 0.5, 0.75])
IDX = np.array([0, 2, 2])


def _x(lib):
    return lib.tensor(X, requires_grad=True)


def _w(lib):
    return lib.tensor(W, requires_grad=True)


# name: a function of the library giving (output, the inputs it should reach)
RAISING = {
    "heaviside": lambda lib: lib.heaviside(_x(lib), lib.tensor(0.5, dtype=lib.float64)),
    "heaviside_": lambda lib: (_x(lib) * 1).heaviside_(_x(lib)),
    "unique": lambda lib: lib.unique(_x(lib)),
    "unique_inverse": lambda lib: _x(lib).unique(sorted=False, return_inverse=True)[0],
    "unique_dim": lambda lib: lib.unique(_x(lib), dim=1),
    "unique_consecutive": lambda lib: lib.unique_consecutive(_x(lib)),
    "unique_consecutive_dim": lambda lib: lib.unique_consecutive(_x(lib), dim=0),
    "histogram": lambda lib: lib.histogram(_w(lib), 3).hist,
    "histogram_edges": lambda lib: lib.histogram(_w(lib), 3).bin_edges,
    "histogramdd": lambda lib: lib.histogramdd(_x(lib).reshape(3, 2), 2).hist,
    "histogramdd_edges": lambda lib: lib.histogramdd(_x(lib).reshape(3, 2), 2).bin_edges[1],
    "bincount": lambda lib: lib.bincount(lib.tensor(IDX), _w(lib)),
    "detach_copy": lambda lib: lib.detach_copy(_x(lib)),
    "bernoulli_p": lambda lib: lib.bernoulli(_w(lib), 0.5),
    "floor_divide": lambda lib: lib.floor_divide(_x(lib), 0.3),
    "floor_divide_": lambda lib: (_x(lib) * 1).floor_divide_(_x(lib) + 3),
}

ZERO = {
    "bernoulli": lambda lib: lib.bernoulli(_w(lib)),
    "bernoulli_float_": lambda lib: (_w(lib) * 1).bernoulli_(0.3),
    "bernoulli_tensor_": lambda lib: (_w(lib) * 1).bernoulli_(_w(lib)),
    "poisson": lambda lib: lib.poisson(_w(lib)),
    "normal_mean": lambda lib: lib.normal(_w(lib), 2.0),
    "normal_std": lambda lib: lib.normal(1.0, _w(lib)),
    "normal_both": lambda lib: lib.normal(_w(lib), _w(lib)),
    "normal_": lambda lib: (_w(lib) * 1).normal_(),
    "uniform_": lambda lib: (_w(lib) * 1).uniform_(),
    "exponential_": lambda lib: (_w(lib) * 1).exponential_(),
    "geometric_": lambda lib: (_w(lib) * 1).geometric_(0.5),
    "log_normal_": lambda lib: (_w(lib) * 1).log_normal_(),
    "cauchy_": lambda lib: (_w(lib) * 1).cauchy_(),
    "random_": lambda lib: (_w(lib) * 1).random_(),
    "random_to": lambda lib: (_w(lib) * 1).random_(4),
    "random_from_to": lambda lib: (_w(lib) * 1).random_(1, 4),
}


def _backward(lib, make):
    lib.manual_seed(0)
    out = make(lib)
    leaves = [t for t in _leaves(out.grad_fn)]
    node = type(out.grad_fn).__name__

    def backward():
        return lib.autograd.grad(out.sum(), leaves, allow_unused=True)
    return node, out.requires_grad, backward


def _leaves(node):
    """The leaf tensors a graph reaches (its AccumulateGrad nodes' variables)."""
    found, stack, seen = [], [node], set()
    while stack:
        n = stack.pop()
        if n is None or id(n) in seen:
            continue
        seen.add(id(n))
        if hasattr(n, "variable"):
            found.append(n.variable)
        stack.extend(f for f, _ in n.next_functions)
    return found


@pytest.mark.parametrize("name", list(RAISING))
def test_backward_raises_as_torch(name):
    torch = torch_or_skip()
    t_node, t_req, t_back = _backward(torch, RAISING[name])
    e_node, e_req, e_back = _backward(ember, RAISING[name])
    assert (e_node, e_req) == (t_node, t_req)
    want = error_of(t_back)
    assert want is not None
    assert error_of(e_back) == want


@pytest.mark.parametrize("name", list(ZERO))
def test_sampler_gradient_is_zero_as_torch(name):
    torch = torch_or_skip()
    t_node, t_req, t_back = _backward(torch, ZERO[name])
    e_node, e_req, e_back = _backward(ember, ZERO[name])
    assert (e_node, e_req) == (t_node, t_req)
    t_grads, e_grads = t_back(), e_back()
    assert len(t_grads) == len(e_grads) > 0
    for t, e in zip(t_grads, e_grads):
        assert e is not None and t is not None
        assert np.array_equal(e.numpy(), t.numpy()) and not e.numpy().any()


def test_frexp_and_nextafter_gradients_as_torch():
    torch = torch_or_skip()
    got = []
    for lib in (torch, ember):
        x = lib.tensor([0.3, -2.6, 5.0, 1.0], dtype=lib.float64, requires_grad=True)
        y = lib.tensor([1.0, 0.0, 5.0, 1.0], dtype=lib.float64, requires_grad=True)
        mantissa, _ = lib.frexp(x)
        step = lib.nextafter(x, y)
        g = lib.autograd.grad((mantissa * 3).sum() + step.sum(), (x, y))
        got.append([type(mantissa.grad_fn).__name__, type(step.grad_fn).__name__,
                    *(a.numpy().tolist() for a in g)])
    assert got[0] == got[1]
