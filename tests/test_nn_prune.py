"""nn.utils.prune against torch 2.13: masks, the reparameterised parameter and its gradient,
composition of methods (PruningContainer), global pruning, remove, and the errors."""
import importlib
import re

import numpy as np
import pytest
from oracle import same

W = np.random.default_rng(0).standard_normal((4, 6))
CONV = np.random.default_rng(1).standard_normal((3, 2, 3, 3))
X = np.random.default_rng(2).standard_normal((5, 6))


def _prune(torch):
    """``torch.nn.utils.prune`` (torch does not import it with ``torch.nn.utils``)."""
    return importlib.import_module(f"{torch.__name__}.nn.utils.prune")


def _linear(torch, w=W):
    m = torch.nn.Linear(w.shape[1], w.shape[0])
    with torch.no_grad():
        m.weight.copy_(torch.tensor(w))
        m.bias.zero_()
    return m


def _state(torch, m):
    """What pruning leaves on a module: its parameters, buffers, hooks, and a gradient."""
    out = m(torch.tensor(X, dtype=torch.float32)).sum()
    out.backward()
    hooks = [type(h).__name__ for h in m._forward_pre_hooks.values()]
    return (sorted(n for n, _ in m.named_parameters()), dict(m.named_buffers()), m.weight,
            m.weight_orig.grad, hooks, _prune(torch).is_pruned(m))


@pytest.mark.parametrize("how", ["l1_fraction", "l1_count", "random", "ln_structured",
                                 "random_structured", "identity", "custom", "l1_scores"])
def test_one_method(how):
    def body(torch):
        prune = _prune(torch)
        torch.manual_seed(0)
        m = _linear(torch)
        {"l1_fraction": lambda: prune.l1_unstructured(m, "weight", amount=0.3),
         "l1_count": lambda: prune.l1_unstructured(m, "weight", amount=5),
         "random": lambda: prune.random_unstructured(m, "weight", amount=0.5),
         "ln_structured": lambda: prune.ln_structured(m, "weight", amount=0.5, n=1, dim=0),
         "random_structured": lambda: prune.random_structured(m, "weight", amount=2, dim=1),
         "identity": lambda: prune.identity(m, "weight"),
         "custom": lambda: prune.custom_from_mask(m, "weight", torch.tensor(W > 0)),
         "l1_scores": lambda: prune.l1_unstructured(
             m, "weight", amount=0.5, importance_scores=torch.tensor(-W))}[how]()
        return _state(torch, m)
    same(body)


def test_methods_compose_and_remove():
    def body(torch):
        prune = _prune(torch)
        torch.manual_seed(0)
        m = _linear(torch)
        prune.l1_unstructured(m, "weight", amount=0.25)
        prune.ln_structured(m, "weight", amount=1, n=2, dim=0)
        prune.random_unstructured(m, "weight", amount=3)
        hook = next(iter(m._forward_pre_hooks.values()))
        kinds = [type(h).__name__ for h in hook]
        state = _state(torch, m)
        prune.remove(m, "weight")
        return (kinds, len(hook), state, m.weight, sorted(m.state_dict()),
                prune.is_pruned(m), len(m._forward_pre_hooks))
    same(body)


def test_conv_structured_and_forward_recomputes():
    def body(torch):
        prune = _prune(torch)
        m = torch.nn.Conv2d(2, 3, 3)
        with torch.no_grad():
            m.weight.copy_(torch.tensor(CONV))
        prune.ln_structured(m, "weight", amount=1, n=float("inf"), dim=0)
        prune.l1_unstructured(m, "bias", amount=1)
        with torch.no_grad():
            m.weight_orig.mul_(2)  # the next forward sees it through the hook
        m(torch.ones(1, 2, 4, 4))
        return m.weight, m.bias, m.weight_mask, m.bias_mask
    same(body)


def test_global_unstructured():
    def body(torch):
        prune = _prune(torch)
        a, b = _linear(torch), _linear(torch, W[:, :3].T.copy() * 2)
        prune.l1_unstructured(a, "weight", amount=2)
        prune.global_unstructured([(a, "weight"), (b, "weight"), (b, "bias")],
                                  pruning_method=prune.L1Unstructured, amount=0.4)
        return a.weight_mask, b.weight_mask, b.bias_mask, a.weight, b.weight
    same(body)


def test_method_objects():
    def body(torch):
        prune = _prune(torch)
        t = torch.tensor(W, dtype=torch.float32)
        pruned = prune.L1Unstructured(amount=0.5).prune(t)
        masked = prune.CustomFromMask(torch.tensor(W > 1)).compute_mask(t, torch.ones_like(t))
        return pruned, masked, hasattr(prune.PruningContainer, "PRUNING_TYPE")
    same(body)


ERRORS = {
    "negative": lambda torch, m: _prune(torch).l1_unstructured(m, "weight", -1),
    "above_one": lambda torch, m: _prune(torch).l1_unstructured(m, "weight", 1.5),
    "type": lambda torch, m: _prune(torch).l1_unstructured(m, "weight", "a"),
    "too_many": lambda torch, m: _prune(torch).random_unstructured(m, "weight", 99),
    "structured_1d": lambda torch, m: _prune(torch).ln_structured(m, "bias", 1, 2, 0),
    "bad_dim": lambda torch, m: _prune(torch).random_structured(m, "weight", 1, 2),
    "remove_unpruned": lambda torch, m: _prune(torch).remove(m, "weight"),
    "global_structured": lambda torch, m: _prune(torch).global_unstructured(
        [(m, "weight")], _prune(torch).RandomStructured, amount=1),
    "global_not_iterable": lambda torch, m: _prune(torch).global_unstructured(
        3, _prune(torch).L1Unstructured, amount=1),
    "global_scores_type": lambda torch, m: _prune(torch).global_unstructured(
        [(m, "weight")], _prune(torch).L1Unstructured, importance_scores=[], amount=1),
    "container_not_method": lambda torch, m: _prune(torch).PruningContainer(
        _named(torch, "w")).add_pruning_method(3),
}


def _named(torch, name):
    method = _prune(torch).Identity()
    method._tensor_name = name
    return method


@pytest.mark.parametrize("name", list(ERRORS))
def test_errors(name):
    def body(torch):
        m = _linear(torch)
        ERRORS[name](torch, m)
        # a failed pruning leaves the parameter as it was
        return sorted(n for n, _ in m.named_parameters()), sorted(m.state_dict())
    same(body)


def test_container_refuses_another_parameter():
    def body(torch):
        container = _prune(torch).PruningContainer(_named(torch, "weight"))
        try:
            container.add_pruning_method(_named(torch, "bias"))
        except ValueError as e:
            return re.sub(r" at 0x[0-9a-f]+", "", str(e))
    same(body)
