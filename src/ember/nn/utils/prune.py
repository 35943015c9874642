"""``ember.nn.utils.prune``: pruning a module's parameter by a mask.

Pruning parameter ``name`` moves it to ``name + "_orig"``, registers the mask as the buffer
``name + "_mask"`` and makes ``name`` the plain tensor ``mask * orig``, recomputed before each
forward by the pruning method itself (a forward pre-hook). Pruning the same parameter again
composes the methods in a :class:`PruningContainer`: the new method sees only the entries (or,
for structured methods, the channels) the earlier masks kept. ``remove`` makes the pruning
permanent: the parameter holds the pruned values again and the mask and hook go.
"""
from __future__ import annotations

import numbers
from abc import ABC, abstractmethod
from collections.abc import Iterable

from ... import _creation as C
from ..._ops.sorting import kthvalue, topk
from ..._ops.statistics import norm as _norm
from .convert_parameters import parameters_to_vector

__all__ = [
    "BasePruningMethod",
    "CustomFromMask",
    "Identity",
    "L1Unstructured",
    "LnStructured",
    "PruningContainer",
    "RandomStructured",
    "RandomUnstructured",
    "custom_from_mask",
    "global_unstructured",
    "identity",
    "is_pruned",
    "l1_unstructured",
    "ln_structured",
    "random_structured",
    "random_unstructured",
    "remove",
]


class BasePruningMethod(ABC):
    """The base of pruning methods: ``compute_mask`` gives the mask of a tensor, ``apply``
    prunes a module's parameter with it, ``remove`` makes the pruning permanent."""

    _tensor_name: str

    def __call__(self, module, inputs):
        setattr(module, self._tensor_name, self.apply_mask(module))

    @abstractmethod
    def compute_mask(self, t, default_mask):
        """The mask of ``t``, given the mask ``default_mask`` of earlier pruning."""

    def apply_mask(self, module):
        """The pruned parameter: its ``_orig`` tensor times its ``_mask``."""
        assert self._tensor_name is not None, f"Module {module} has to be pruned"
        orig = getattr(module, self._tensor_name + "_orig")
        mask = getattr(module, self._tensor_name + "_mask")
        return mask.to(dtype=orig.dtype) * orig

    @classmethod
    def apply(cls, module, name, *args, importance_scores=None, **kwargs):
        """Prune ``module``'s parameter ``name`` with ``cls(*args, **kwargs)``, composed with
        any pruning it already has; ``importance_scores`` (default: the parameter) are what
        the mask is computed from."""
        method = _composite_method(cls, module, name, *args, **kwargs)
        orig = getattr(module, name)
        if importance_scores is not None:
            assert importance_scores.shape == orig.shape, (
                f"importance_scores should have the same shape as parameter {name} of {module}")
        else:
            importance_scores = orig
        first = not isinstance(method, PruningContainer)
        if first:
            module.register_parameter(name + "_orig", orig)
            del module._parameters[name]
            default_mask = C.ones_like(orig)
        else:
            default_mask = getattr(module, name + "_mask").detach().clone()
        try:
            mask = method.compute_mask(importance_scores, default_mask=default_mask)
            module.register_buffer(name + "_mask", mask)
            setattr(module, name, method.apply_mask(module))
            module.register_forward_pre_hook(method)
        except Exception:
            if first:  # put the parameter back as it was
                module.register_parameter(name, getattr(module, name + "_orig"))
                del module._parameters[name + "_orig"]
            raise
        return method

    def prune(self, t, default_mask=None, importance_scores=None):
        """``t`` times its mask (computed from ``importance_scores``, default ``t``)."""
        if importance_scores is not None:
            assert importance_scores.shape == t.shape, \
                "importance_scores should have the same shape as tensor t"
        else:
            importance_scores = t
        default_mask = default_mask if default_mask is not None else C.ones_like(t)
        return t * self.compute_mask(importance_scores, default_mask=default_mask)

    def remove(self, module):
        """Make the pruning permanent: the parameter ``name`` holds the pruned values."""
        assert self._tensor_name is not None, \
            f"Module {module} has to be pruned before pruning can be removed"
        weight = self.apply_mask(module)
        if hasattr(module, self._tensor_name):
            delattr(module, self._tensor_name)
        orig = module._parameters[self._tensor_name + "_orig"]
        orig.data = weight.data
        del module._parameters[self._tensor_name + "_orig"]
        del module._buffers[self._tensor_name + "_mask"]
        setattr(module, self._tensor_name, orig)


def _composite_method(cls, module, name, *args, **kwargs):
    """``cls(*args, **kwargs)`` for ``module.name``, joined with the pruning method the
    parameter already has (whose hook is taken off: the composite replaces it)."""
    old = [(k, hook) for k, hook in module._forward_pre_hooks.items()
           if isinstance(hook, BasePruningMethod) and hook._tensor_name == name]
    assert len(old) <= 1, (f"Avoid adding multiple pruning hooks to the same tensor {name} of "
                           f"module {module}. Use a PruningContainer.")
    for k, _ in old:
        del module._forward_pre_hooks[k]
    method = cls(*args, **kwargs)
    method._tensor_name = name
    if old:
        old_method = old[0][1]
        if not isinstance(old_method, PruningContainer):
            old_method = PruningContainer(old_method)
        old_method.add_pruning_method(method)
        method = old_method
    return method


class PruningContainer(BasePruningMethod):
    """Pruning methods applied one after another to the same parameter."""

    def __init__(self, *args):
        self._pruning_methods = ()
        if not isinstance(args, Iterable):  # a single method
            self._tensor_name = args._tensor_name
            self.add_pruning_method(args)
        elif len(args) == 1:
            self._tensor_name = args[0]._tensor_name
            self.add_pruning_method(args[0])
        else:
            for method in args:
                self.add_pruning_method(method)

    def add_pruning_method(self, method):
        """Append ``method`` (one acting on this container's parameter)."""
        if not isinstance(method, BasePruningMethod) and method is not None:
            raise TypeError(f"{type(method)} is not a BasePruningMethod subclass")
        if method is not None and self._tensor_name != method._tensor_name:
            raise ValueError("Can only add pruning methods acting on the parameter named "
                             f"'{self._tensor_name}' to PruningContainer {self}. Found "
                             f"'{method._tensor_name}'")
        self._pruning_methods += (method,)

    def __len__(self):
        return len(self._pruning_methods)

    def __iter__(self):
        return iter(self._pruning_methods)

    def __getitem__(self, idx):
        return self._pruning_methods[idx]

    def compute_mask(self, t, default_mask):
        """The last method's mask of the part of ``t`` the earlier masks kept, written into
        ``default_mask``."""
        method = self._pruning_methods[-1]
        new_mask = default_mask.to(dtype=t.dtype)
        kept = _kept_part(method, t, default_mask)
        partial = method.compute_mask(t[kept], default_mask=default_mask[kept])
        new_mask[kept] = partial.to(dtype=new_mask.dtype)
        return new_mask


def _kept_part(method, t, mask):
    """The index of what ``method`` (by its PRUNING_TYPE) still acts on."""
    kind = method.PRUNING_TYPE
    if kind == "unstructured":
        return mask == 1
    if kind == "structured":
        if not hasattr(method, "dim"):
            raise AttributeError('Pruning methods of PRUNING_TYPE "structured" need to have '
                                 "the attribute `dim` defined.")
        n_dims, dim = t.dim(), method.dim
        if dim < 0:
            dim += n_dims
        if dim < 0:
            raise IndexError(f"Index is out of bounds for tensor with dimensions {n_dims}")
        keep_channel = mask.sum(dim=[d for d in range(n_dims) if d != dim]) != 0
        index = [slice(None)] * n_dims
        index[dim] = keep_channel
        return tuple(index)
    if kind == "global":
        return (slice(None),) * len(t.shape)
    raise ValueError(f"Unrecognized PRUNING_TYPE {kind}")


class Identity(BasePruningMethod):
    """Prunes nothing: the mask is all ones."""

    PRUNING_TYPE = "unstructured"

    def compute_mask(self, t, default_mask):
        return default_mask

    @classmethod
    def apply(cls, module, name):
        return super().apply(module, name)


class _Unstructured(BasePruningMethod):
    """Prunes the ``amount`` entries (a count, or a fraction) that come first by the scores
    ``_ranking`` gives."""

    PRUNING_TYPE = "unstructured"

    def __init__(self, amount):
        _validate_pruning_amount_init(amount)
        self.amount = amount

    def compute_mask(self, t, default_mask):
        k = _count_to_prune(self.amount, t.nelement())
        mask = default_mask.clone()
        if k != 0:
            scores, largest = self._ranking(t)
            mask.view(-1)[topk(scores.view(-1), k=k, largest=largest).indices] = 0
        return mask


class RandomUnstructured(_Unstructured):
    """Prunes ``amount`` entries (a count, or a fraction) chosen at random."""

    def _ranking(self, t):
        return C.rand_like(t), True

    @classmethod
    def apply(cls, module, name, amount):
        return super().apply(module, name, amount=amount)


class L1Unstructured(_Unstructured):
    """Prunes the ``amount`` entries (a count, or a fraction) of smallest absolute value."""

    def _ranking(self, t):
        return t.abs(), False

    @classmethod
    def apply(cls, module, name, amount, importance_scores=None):
        return super().apply(module, name, amount=amount, importance_scores=importance_scores)


class RandomStructured(BasePruningMethod):
    """Prunes ``amount`` channels (a count, or a fraction) along ``dim``, chosen at random."""

    PRUNING_TYPE = "structured"

    def __init__(self, amount, dim=-1):
        _validate_pruning_amount_init(amount)
        self.amount = amount
        self.dim = dim

    def compute_mask(self, t, default_mask):
        _validate_structured_pruning(t)
        _validate_pruning_dim(t, self.dim)
        n = t.shape[self.dim]
        k = _count_to_prune(self.amount, n)
        if k == 0:
            return default_mask
        prob = C.rand(n)
        keep = prob > kthvalue(prob, k=k).values
        return _channel_mask(t, self.dim, keep) * default_mask.to(dtype=t.dtype)

    @classmethod
    def apply(cls, module, name, amount, dim=-1):
        return super().apply(module, name, amount=amount, dim=dim)


class LnStructured(BasePruningMethod):
    """Prunes the ``amount`` channels (a count, or a fraction) along ``dim`` of smallest
    L``n`` norm."""

    PRUNING_TYPE = "structured"

    def __init__(self, amount, n, dim=-1):
        _validate_pruning_amount_init(amount)
        self.amount = amount
        self.n = n
        self.dim = dim

    def compute_mask(self, t, default_mask):
        _validate_structured_pruning(t)
        _validate_pruning_dim(t, self.dim)
        size = t.shape[self.dim]
        k = _count_to_prune(self.amount, size)
        dims = list(range(t.dim()))
        dims.remove(dims[self.dim])
        norms = _norm(t, p=self.n, dim=dims)
        kept = topk(norms, k=size - k, largest=True).indices
        if k == 0:
            return default_mask
        return _channel_mask(t, self.dim, kept) * default_mask.to(dtype=t.dtype)

    @classmethod
    def apply(cls, module, name, amount, n, dim, importance_scores=None):
        return super().apply(module, name, amount=amount, n=n, dim=dim,
                             importance_scores=importance_scores)


class CustomFromMask(BasePruningMethod):
    """Prunes by the given ``mask``."""

    PRUNING_TYPE = "global"

    def __init__(self, mask):
        self.mask = mask

    def compute_mask(self, t, default_mask):
        assert default_mask.shape == self.mask.shape
        return default_mask * self.mask.to(dtype=default_mask.dtype)

    @classmethod
    def apply(cls, module, name, mask):
        return super().apply(module, name, mask=mask)


def _channel_mask(t, dim, channels):
    """Ones in the ``channels`` (a boolean mask or indices) of ``t`` along ``dim``."""
    mask = C.zeros_like(t)
    index = [slice(None)] * len(t.shape)
    index[dim] = channels
    mask[tuple(index)] = 1
    return mask


def _validate_pruning_amount_init(amount):
    if not isinstance(amount, numbers.Real):
        raise TypeError(f"Invalid type for amount: {amount}. Must be int or float.")
    if (isinstance(amount, numbers.Integral) and amount < 0) or (
            not isinstance(amount, numbers.Integral)
            and (float(amount) > 1.0 or float(amount) < 0.0)):
        raise ValueError(f"amount={amount} should either be a float in the range [0, 1] or a "
                         "non-negative integer")


def _count_to_prune(amount, size):
    """How many of ``size`` to prune: ``amount`` itself, or the rounded fraction."""
    if isinstance(amount, numbers.Integral):
        if amount > size:
            raise ValueError(f"amount={amount} should be smaller than the number of parameters "
                             f"to prune={size}")
        return amount
    return round(amount * size)


def _validate_structured_pruning(t):
    if len(t.shape) <= 1:
        raise ValueError("Structured pruning can only be applied to multidimensional tensors. "
                         f"Found tensor of shape {t.shape} with {len(t.shape)} dims")


def _validate_pruning_dim(t, dim):
    if dim >= t.dim():
        raise IndexError(f"Invalid index {dim} for tensor of size {t.shape}")


# -- the functional forms -------------------------------------------------------------------------
def identity(module, name):
    """Prune nothing of ``module.name`` (it gets a mask of ones)."""
    Identity.apply(module, name)
    return module


def random_unstructured(module, name, amount):
    """Prune ``amount`` random entries of ``module.name``."""
    RandomUnstructured.apply(module, name, amount)
    return module


def l1_unstructured(module, name, amount, importance_scores=None):
    """Prune the ``amount`` entries of ``module.name`` of smallest absolute value (of
    ``importance_scores`` if given)."""
    L1Unstructured.apply(module, name, amount=amount, importance_scores=importance_scores)
    return module


def random_structured(module, name, amount, dim):
    """Prune ``amount`` random channels of ``module.name`` along ``dim``."""
    RandomStructured.apply(module, name, amount, dim)
    return module


def ln_structured(module, name, amount, n, dim, importance_scores=None):
    """Prune the ``amount`` channels of ``module.name`` along ``dim`` of smallest L``n``
    norm."""
    LnStructured.apply(module, name, amount, n, dim, importance_scores=importance_scores)
    return module


def custom_from_mask(module, name, mask):
    """Prune ``module.name`` by ``mask``."""
    CustomFromMask.apply(module, name, mask)
    return module


def global_unstructured(parameters, pruning_method, importance_scores=None, **kwargs):
    """Prune the ``(module, name)`` pairs of ``parameters`` together, as one vector, with the
    unstructured ``pruning_method(**kwargs)``."""
    if not isinstance(parameters, Iterable):
        raise TypeError("global_unstructured(): parameters is not an Iterable")
    importance_scores = importance_scores if importance_scores is not None else {}
    if not isinstance(importance_scores, dict):
        raise TypeError("global_unstructured(): importance_scores must be of type dict")
    parameters = list(parameters)
    scores = parameters_to_vector([importance_scores.get((m, n), getattr(m, n))
                                   for m, n in parameters])
    default_mask = parameters_to_vector([getattr(m, n + "_mask", C.ones_like(getattr(m, n)))
                                         for m, n in parameters])
    container = PruningContainer()
    container._tensor_name = "temp"
    method = pruning_method(**kwargs)
    method._tensor_name = "temp"
    if method.PRUNING_TYPE != "unstructured":
        raise TypeError('Only "unstructured" PRUNING_TYPE supported for the `pruning_method`. '
                        f"Found method {pruning_method} of type {method.PRUNING_TYPE}")
    container.add_pruning_method(method)
    final_mask = container.compute_mask(scores, default_mask)
    start = 0
    for module, name in parameters:
        param = getattr(module, name)
        custom_from_mask(module, name, mask=final_mask[start:start + param.numel()].view_as(param))
        start += param.numel()


def remove(module, name):
    """Make the pruning of ``module.name`` permanent (its mask and hook go)."""
    for k, hook in module._forward_pre_hooks.items():
        if isinstance(hook, BasePruningMethod) and hook._tensor_name == name:
            hook.remove(module)
            del module._forward_pre_hooks[k]
            return module
    raise ValueError(f"Parameter '{name}' of module {module} has to be pruned before pruning "
                     "can be removed")


def is_pruned(module):
    """Whether any submodule of ``module`` has a pruning hook."""
    return any(isinstance(hook, BasePruningMethod)
               for _, sub in module.named_modules() for hook in sub._forward_pre_hooks.values())

