"""KL divergences: ``kl_divergence(p, q)`` dispatches on the pair of types to the most
specific function registered with ``register_kl``."""
from __future__ import annotations

import math
import warnings
from functools import total_ordering

import ember

from .distribution import Distribution

_KL_REGISTRY = {}  # (type_p, type_q): function, as registered
_KL_MEMOIZE = {}  # (type_p, type_q): the function dispatch chose

__all__ = ['register_kl', 'kl_divergence']


def register_kl(type_p, type_q):
    """Decorator registering ``fn(p, q)`` as KL(p || q) for the classes ``type_p`` and
    ``type_q`` (and their subclasses, unless a more specific pair is registered)."""
    if not isinstance(type_p, type) and issubclass(type_p, Distribution):
        raise TypeError(f"Expected type_p to be a Distribution subclass but got {type_p}")
    if not isinstance(type_q, type) and issubclass(type_q, Distribution):
        raise TypeError(f"Expected type_q to be a Distribution subclass but got {type_q}")

    def decorator(fun):
        _KL_REGISTRY[type_p, type_q] = fun
        _KL_MEMOIZE.clear()  # a new registration may change what dispatch picks
        return fun
    return decorator


@total_ordering
class _Match:
    """A registered pair, ordered by specificity (lexicographically by subclassing)."""

    __slots__ = ["types"]

    def __init__(self, *types):
        self.types = types

    def __eq__(self, other):
        return self.types == other.types

    def __le__(self, other):
        for x, y in zip(self.types, other.types):
            if not issubclass(x, y):
                return False
            if x is not y:
                break
        return True


def _dispatch_kl(type_p, type_q):
    """The most specific registered function for (type_p, type_q); warns when the best
    match on p first and on q first disagree."""
    matches = [(super_p, super_q) for super_p, super_q in _KL_REGISTRY
               if issubclass(type_p, super_p) and issubclass(type_q, super_q)]
    if not matches:
        return NotImplemented
    left_p, left_q = min(_Match(*m) for m in matches).types
    right_q, right_p = min(_Match(*reversed(m)) for m in matches).types
    left_fun = _KL_REGISTRY[left_p, left_q]
    right_fun = _KL_REGISTRY[right_p, right_q]
    if left_fun is not right_fun:
        warnings.warn(f"Ambiguous kl_divergence({type_p.__name__}, {type_q.__name__}). "
                      f"Please register_kl({left_p.__name__}, {right_q.__name__})",
                      RuntimeWarning, stacklevel=2)
    return left_fun


def _infinite_like(tensor):
    return ember.full_like(tensor, math.inf)


def _x_log_x(tensor):
    return ember.xlogy(tensor, tensor)


def _batch_trace_XXT(bmat):
    """trace(X X^T) over a batch of matrices: the sum of their squared entries."""
    n, m = bmat.size(-1), bmat.size(-2)
    return bmat.reshape(-1, m * n).pow(2).sum(-1).reshape(bmat.shape[:-2])


def kl_divergence(p, q):
    """KL(p || q) = E_p[log p(x) - log q(x)], batched over the distributions' batch shape.
    Raises NotImplementedError for a pair of types with nothing registered."""
    try:
        fun = _KL_MEMOIZE[type(p), type(q)]
    except KeyError:
        fun = _KL_MEMOIZE[type(p), type(q)] = _dispatch_kl(type(p), type(q))
    if fun is NotImplemented:
        raise NotImplementedError(f"No KL(p || q) is implemented for p type "
                                  f"{p.__class__.__name__} and q type "
                                  f"{q.__class__.__name__}")
    return fun(p, q)


from . import _kl_pairs  # noqa: E402,F401  (registers the pairs torch registers)
