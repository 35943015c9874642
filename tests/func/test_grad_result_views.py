"""Which gradients torch returns as views (an expansion's: sum's, mean's), from
autograd.grad, torch.func.grad and vmap(grad): ``_is_view()`` and the view's base shape
against torch 2.13 (the base's shape outside vmap: under vmap torch's batched gradient of
the summed examples is a (batch,) tensor, ember's one number)."""
import pytest
from oracle import torch_or_skip

import ember

_FUNCTIONS = {
    "sum": lambda v: v.sum(),
    "sum_of_sum_dims": lambda v: v.sum((1, 2)).sum(),  # (an expansion of an expansion)
    "sum_of_sum_dim": lambda v: v.sum(1).sum(),
    "exp_of_sum": lambda v: v.sum((1, 2)).exp().sum(),
    "square": lambda v: (v * v).sum(),
    "mean": lambda v: v.mean(),  # (a fresh gradient: no view under vmap either)
    "sum_unsqueezed": lambda v: v.unsqueeze(0).sum(),
    "matmul": lambda v: (v @ v.mT).sum(),
}


def _view_facts(g):
    return g._is_view(), None if g._base is None else tuple(g._base.shape), tuple(g.shape)


def _facts(lib, f):
    x = lib.arange(24., dtype=lib.float64).reshape(2, 3, 4) / 10
    leaf = x.clone().requires_grad_()
    return (_view_facts(lib.autograd.grad(f(leaf), leaf)[0]),
            _view_facts(lib.func.grad(f)(x)),
            lib.func.vmap(lib.func.grad(lambda v: f(v[None])))(x)._is_view(),
            lib.func.vmap(lib.func.grad(f))(lib.stack([x, x * 2]))._is_view())


@pytest.mark.parametrize("name", list(_FUNCTIONS))
def test_gradient_views_match_torch(name):
    torch = torch_or_skip()
    assert _facts(ember, _FUNCTIONS[name]) == _facts(torch, _FUNCTIONS[name])
