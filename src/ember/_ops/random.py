"""Random sampling: bernoulli, multinomial, poisson, and the in-place ``Tensor.*_`` samplers.

Samples come from ``ember.Generator`` streams (NumPy PCG64): distributions are torch's and
seeded runs repeat, but the values differ from torch's own generator. Sampling is not
differentiable; an in-place sampler writes through ``copy_`` so that versions, views and the
leaf checks behave as for any in-place op.
"""
from __future__ import annotations

__all__ = ['bernoulli', 'multinomial', 'poisson']

import numpy as np

from .. import _dtype as D
from .._backend import asarray_like, get_xp
from .._creation import _rng
from .._tensor import Tensor, _wrap
from ..autograd.grad_mode import no_grad

_BAD_P = ("Expected p_in >= 0 && p_in <= 1 to be true, but got false.  (Could this error "
          "message be improved?  If so, please report an enhancement request to PyTorch.)")


def _data(x, like):
    return x._data if isinstance(x, Tensor) else asarray_like(x, like)


def _check_p(p):
    if np.any((p < 0) | (p > 1)) or np.any(np.isnan(p)):
        raise RuntimeError(_BAD_P)


def _result(array, like):
    return _wrap(get_xp(array).ascontiguousarray(array).astype(like.dtype, copy=False))


def bernoulli(input, p=None, *, generator=None, out=None):  # noqa: A002 - torch's name
    """0/1 samples: 1 with probability ``input`` (or ``p``), in ``input``'s dtype and shape."""
    probs = input._data if p is None else np.broadcast_to(_data(p, input._data), input.shape)
    _check_p(probs)
    draws = _rng(generator, input.device).random(input.shape) < probs
    return _result(draws, input._data)


def poisson(input, generator=None):  # noqa: A002
    """Samples from Poisson distributions with the rates in ``input``."""
    rates = input._data
    if np.any(rates < 0) or np.any(np.isnan(rates)):
        raise RuntimeError("invalid Poisson rate, expected rate to be non-negative")
    return _result(_rng(generator, input.device).poisson(rates), rates)


def _check_multinomial(probs, num_samples, replacement):
    if probs.ndim not in (1, 2):
        raise RuntimeError("prob_dist must be 1 or 2 dim")
    if probs.dtype.kind != "f":
        raise RuntimeError("multinomial only supports floating-point dtypes for input, got: "
                           f"{D._BY_NP[probs.dtype].scalar_name}")
    if num_samples <= 0:
        raise RuntimeError("cannot sample n_sample <= 0 samples")
    n = probs.shape[-1]
    if not replacement and num_samples > n:
        raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without "
                           "replacement")
    if np.any(~np.isfinite(probs)) or np.any(probs < 0):
        raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
    if np.any(probs.sum(-1) <= 0):
        raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")


def _draw_row(rng, p, k, replacement):
    p = p.astype(np.float64) / p.sum(dtype=np.float64)
    if replacement:
        return rng.choice(p.size, size=k, replace=True, p=p)
    # Without replacement: sequential draws proportional to the remaining weights (what
    # rng.choice does); categories of weight zero come last, in random order.
    nonzero = int(np.count_nonzero(p))
    first = rng.choice(p.size, size=min(k, nonzero), replace=False, p=p)
    if k <= nonzero:
        return first
    rest = rng.permutation(np.flatnonzero(p == 0))[:k - nonzero]
    return np.concatenate([first, rest])


def multinomial(input, num_samples, replacement=False, *, generator=None,  # noqa: A002
                out=None):
    """Indices sampled from the categorical distributions in the rows of ``input``."""
    probs = input._data
    _check_multinomial(probs, num_samples, replacement)
    rng = _rng(generator, input.device)
    rows = probs.reshape(-1, probs.shape[-1])
    out = np.stack([_draw_row(rng, r, num_samples, replacement) for r in rows])
    return _wrap(out.reshape(probs.shape[:-1] + (num_samples,)).astype(np.int64))


# -- in-place samplers --------------------------------------------------------------------------
def _write(self, values):
    """Overwrite ``self`` with sampled ``values`` (torch's in-place semantics via copy_)."""
    src = _wrap(asarray_like(values, self._data).astype(self._data.dtype, copy=False))
    if self.requires_grad or self._base is not None:
        return self.copy_(src)
    with no_grad():
        return self.copy_(src)


def _floating(self, name):
    if self._data.dtype.kind != "f":
        raise NotImplementedError(f'"{name}" not implemented for '
                                  f"'{D._BY_NP[self._data.dtype].scalar_name}'")


def normal_(self, mean=0.0, std=1.0, *, generator=None):
    """Fill with samples from N(mean, std^2)."""
    _floating(self, "normal_kernel_cpu")
    if std < 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {std}")
    return _write(self, mean + std * _rng(generator, self.device).standard_normal(self.shape))


def uniform_(self, from_=0.0, to=1.0, *, generator=None, **kwargs):
    """Fill with samples from the uniform distribution on [from, to)."""
    from_ = kwargs.pop("from", from_)
    if from_ > to:
        raise RuntimeError(f"uniform_ expects to return a [from, to) range, but found "
                           f"from={from_:g} > to={to:g}")
    return _write(self, from_ + (to - from_) * _rng(generator, self.device).random(self.shape))


def exponential_(self, lambd=1.0, *, generator=None):
    """Fill with samples from the exponential distribution of rate ``lambd``."""
    if lambd <= 0:
        raise RuntimeError(f"exponential_ expects lambda > 0.0, but found lambda={lambd:g}")
    return _write(self, _rng(generator, self.device).exponential(1.0 / lambd, self.shape))


def geometric_(self, p, *, generator=None):
    """Fill with samples from the geometric distribution (trials until the first success)."""
    if not 0 < p < 1:
        raise RuntimeError(f"geometric_ expects p to be in (0, 1), but got p={p:g}")
    return _write(self, _rng(generator, self.device).geometric(p, self.shape))


def log_normal_(self, mean=1.0, std=2.0, *, generator=None):
    """Fill with samples whose log is N(mean, std^2)."""
    if std <= 0:
        raise RuntimeError(f"log_normal_ expects std > 0.0, but found std={std:g}")
    return _write(self, _rng(generator, self.device).lognormal(mean, std, self.shape))


def cauchy_(self, median=0.0, sigma=1.0, *, generator=None):
    """Fill with samples from the Cauchy distribution."""
    return _write(self, median + sigma * _rng(generator, self.device).standard_cauchy(
        self.shape))


def _random_bounds(dtype, from_, to):
    if to is None:
        if dtype.kind == "f":
            to = 2 ** (np.finfo(dtype).nmant + 1) + 1
        elif dtype.kind == "b":
            to = 2
        else:
            to = int(np.iinfo(dtype).max) + 1
    return from_, to


def random_(self, *args, generator=None, **kwargs):
    """Fill with integers drawn uniformly from [from, to) (default: the dtype's range).

    ``random_(to)`` draws from [0, to), ``random_(from, to)`` from [from, to).
    """
    if len(args) == 1 and "to" not in kwargs:
        lo, hi = kwargs.pop("from", 0), args[0]
    else:
        named = dict(zip(("from", "to"), args))
        named.update(kwargs)
        lo, hi = named.get("from", 0), named.get("to")
    lo, hi = _random_bounds(self._data.dtype, lo, hi)
    if lo >= hi:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={lo} >= "
                           f"to={hi}")
    return _write(self, _rng(generator, self.device).integers(lo, hi, size=self.shape,
                                                              dtype=np.int64))


def bernoulli_(self, p=0.5, *, generator=None):
    """Fill with 0/1 samples, 1 with probability ``p`` (a number or a tensor)."""
    probs = np.broadcast_to(_data(p, self._data), self.shape)
    _check_p(probs)
    return _write(self, _rng(generator, self.device).random(self.shape) < probs)


for _f in (normal_, uniform_, exponential_, geometric_, log_normal_, cauchy_, random_,
           bernoulli_):
    setattr(Tensor, _f.__name__, _f)
Tensor.bernoulli = bernoulli
Tensor.multinomial = multinomial

