"""Tensor methods torch keeps for old code: the removed linear-algebra methods (torch's error),
``reinforce`` (removed, torch's error), the out-of-place ``resize``/``resize_as`` (a reshape
that keeps the element count, with a warning) and ``module_load`` (how
``Module.load_state_dict`` turns a state-dict value into a parameter when it swaps tensors).
"""
from __future__ import annotations

import math
import warnings

from . import _legacy_linalg as legacy
from ._tensor import Tensor
from .autograd.function import Function

_REINFORCE_REMOVED = """reinforce() was removed.
Use ember.distributions instead.
See https://pytorch.org/docs/main/distributions.html

Instead of:

probs = policy_network(state)
action = probs.multinomial()
next_state, reward = env.step(action)
action.reinforce(reward)
action.backward()

Use:

probs = policy_network(state)
# NOTE: categorical is equivalent to what used to be called multinomial
m = ember.distributions.Categorical(probs)
action = m.sample()
next_state, reward = env.step(action)
loss = -m.log_prob(action) * reward
loss.backward()
"""


class Resize(Function):
    """A new tensor of the same elements in another shape (the element count is kept)."""

    @staticmethod
    def forward(ctx, tensor, sizes):
        ctx.numel = math.prod(sizes)
        if tensor.numel() != ctx.numel:
            raise RuntimeError(
                f"requested resize to {'x'.join(map(str, sizes))} ({ctx.numel} elements in "
                f"total), but the given tensor has a size of "
                f"{'x'.join(map(str, tensor.size()))} ({tensor.numel()} elements). autograd's "
                "resize can only change the shape of a given tensor, while preserving the "
                "number of elements. ")
        ctx.input_sizes = tensor.size()
        return tensor.contiguous().clone().view(*sizes)

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output.contiguous().view(ctx.input_sizes), None


def _resize(self, *sizes):
    warnings.warn("non-inplace resize is deprecated", stacklevel=2)
    return Resize.apply(self, sizes)


def _resize_as(self, tensor):
    warnings.warn("non-inplace resize_as is deprecated", stacklevel=2)
    return Resize.apply(self, tensor.size())


def _module_load(self, other, assign=False):
    """``other`` as it goes into a module in place of ``self`` (a new tensor, never ``self``
    or ``other``): ``self.copy_(other).detach()``, or ``other.detach()`` with ``assign``."""
    if assign:
        return other.detach()
    return self.copy_(other).detach()


def _reinforce(self, reward):
    raise RuntimeError(_REINFORCE_REMOVED)


def _lstsq(self, other):
    """torch's removed method (its binding calls the argument ``other``): torch's error."""
    return legacy.lstsq(self, other)


def _solve(self, other):
    """torch's removed method (its binding calls the argument ``other``): torch's error."""
    return legacy.solve(self, other)


def install():
    from ._ops.linalg_geqrf import geqrf, ormqr
    Tensor.geqrf = geqrf
    Tensor.ormqr = ormqr
    Tensor.eig = legacy.eig
    Tensor.symeig = legacy.symeig
    Tensor.lstsq = _lstsq
    Tensor.solve = _solve
    Tensor.triangular_solve = legacy.triangular_solve
    Tensor.resize = _resize
    Tensor.resize_as = _resize_as
    Tensor.module_load = _module_load
    Tensor.reinforce = _reinforce
    Tensor.slice_inverse = legacy.slice_inverse
