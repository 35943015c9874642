"""Random sampling: bernoulli, multinomial, poisson, and the in-place ``Tensor.*_`` samplers.

The values are torch's, bit for bit (``ember._random``). Sampling is not differentiable; an
in-place sampler writes through ``copy_`` so that versions, views and the leaf checks behave as
for any in-place op.
"""
from __future__ import annotations

__all__ = ['bernoulli', 'multinomial', 'poisson']

import numpy as np

from .._backend import to_numpy
from .._backend.device import device_of, move
from .._compile.hooks import replayed
from .._random import cpu_generator, discrete
from .._random import fill as _fill
from .._tensor import Tensor, _wrap
from ..autograd.grad_mode import no_grad


def _like_input(values, input):
    """Draws (made on the host from the CPU generator's stream) on ``input``'s device."""
    array = input._data
    if type(array) is np.ndarray:
        return _wrap(values)
    return _wrap(move(np.asarray(values), device_of(array)))


def _write(self, values):
    """Overwrite ``self`` with sampled ``values`` (torch's in-place semantics via copy_)."""
    src = _wrap(np.asarray(values).astype(self._data.dtype, copy=False))
    if self.requires_grad or self._base is not None:
        return self.copy_(src)
    with no_grad():
        return self.copy_(src)


@replayed
def bernoulli(input, p=None, *, generator=None, out=None):
    """0/1 samples: 1 with probability ``input`` (or with probability ``p``), in ``input``'s
    dtype and shape."""
    array = np.empty(tuple(input.shape), input._data.dtype)
    if p is None:
        values = _fill.bernoulli_tensor(array, to_numpy(input._data), generator)
    else:
        values = _fill.bernoulli_scalar(array, p, generator)
    return _like_input(values, input)


@replayed
def bernoulli_(self, p=0.5, *, generator=None):
    """Fill with 0/1 samples, 1 with probability ``p`` (a number or a tensor)."""
    if isinstance(p, Tensor):
        return _write(self, _fill.bernoulli_tensor(self._data, to_numpy(p._data), generator))
    return _write(self, _fill.bernoulli_scalar(self._data, p, generator))


@replayed
def poisson(input, generator=None):
    """Samples from Poisson distributions with the rates in ``input``."""
    rates = to_numpy(input._data)
    if rates.dtype.kind != "f":
        raise _fill._not_implemented("poisson_cpu", rates.dtype)
    if np.any(rates < 0) or np.any(np.isnan(rates)):
        raise RuntimeError("invalid Poisson rate, expected rate to be non-negative")
    if rates.size == 0:
        return _like_input(np.empty(rates.shape, rates.dtype), input)
    values = discrete.poisson(cpu_generator(generator), np.ascontiguousarray(rates).ravel())
    return _like_input(values.astype(rates.dtype).reshape(rates.shape), input)


def _check_multinomial(probs, num_samples, replacement):
    if probs.ndim not in (1, 2):
        raise RuntimeError("prob_dist must be 1 or 2 dim")
    if probs.dtype.kind != "f":
        raise RuntimeError("multinomial only supports floating-point dtypes for input, got: "
                           f"{_fill.scalar_name(probs.dtype)}")
    if num_samples <= 0:
        raise RuntimeError("cannot sample n_sample <= 0 samples")
    n = probs.shape[-1]
    if not replacement and num_samples > n:
        raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without "
                           "replacement")
    if n > 1 << 24:
        raise RuntimeError("number of categories cannot exceed 2^24")
    if not replacement or num_samples == 1:
        if np.any(~np.isfinite(probs)) or np.any(probs < 0):
            raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
        if np.any(probs.sum(-1) == 0):
            raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
        return
    if np.any(probs < 0):
        raise RuntimeError("invalid multinomial distribution (encountering probability entry "
                           "< 0)")
    if np.any(~np.isfinite(probs)):
        raise RuntimeError("invalid multinomial distribution (encountering probability entry "
                           "= infinity or NaN)")
    if np.any(probs.sum(-1) <= 0):
        raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")


@replayed
def multinomial(input, num_samples, replacement=False, *, generator=None,
                out=None):
    """Indices sampled from the categorical distributions in the rows of ``input``."""
    probs = to_numpy(input._data)
    _check_multinomial(probs, num_samples, replacement)
    return _like_input(discrete.multinomial(cpu_generator(generator), probs, num_samples,
                                            replacement), input)


# -- in-place samplers --------------------------------------------------------------------------
@replayed
def normal_(self, mean=0.0, std=1.0, *, generator=None):
    """Fill with samples from N(mean, std^2)."""
    return _write(self, _fill.normal(self._data, mean, std, generator))


@replayed
def uniform_(self, from_=0.0, to=1.0, *, generator=None, **kwargs):
    """Fill with samples from the uniform distribution on [from, to)."""
    from_ = kwargs.pop("from", from_)
    return _write(self, _fill.uniform(self._data, from_, to, generator))


@replayed
def exponential_(self, lambd=1.0, *, generator=None):
    """Fill with samples from the exponential distribution of rate ``lambd``."""
    return _write(self, _fill.exponential(self._data, lambd, generator))


@replayed
def geometric_(self, p, *, generator=None):
    """Fill with samples from the geometric distribution (trials until the first success)."""
    return _write(self, _fill.geometric(self._data, p, generator))


@replayed
def log_normal_(self, mean=1.0, std=2.0, *, generator=None):
    """Fill with samples whose log is N(mean, std^2)."""
    return _write(self, _fill.log_normal(self._data, mean, std, generator))


@replayed
def cauchy_(self, median=0.0, sigma=1.0, *, generator=None):
    """Fill with samples from the Cauchy distribution."""
    return _write(self, _fill.cauchy(self._data, median, sigma, generator))


@replayed
def random_(self, *args, generator=None, **kwargs):
    """Fill with integers drawn uniformly from [from, to) (default: the dtype's range).

    ``random_(to)`` draws from [0, to), ``random_(from, to)`` from [from, to), ``random_(from,
    None)`` from [from, the dtype's largest value].
    """
    if len(args) == 1 and "to" not in kwargs and "from" not in kwargs:
        low, high = 0, args[0]
    else:
        named = dict(zip(("from", "to"), args))
        named.update(kwargs)
        if not named:
            return _write(self, _fill.random(self._data, None, None, generator))
        low, high = named.get("from", 0), named.get("to")
    return _write(self, _fill.random(self._data, low, high, generator))


for _f in (normal_, uniform_, exponential_, geometric_, log_normal_, cauchy_, random_,
           bernoulli_):
    setattr(Tensor, _f.__name__, _f)
Tensor.bernoulli = bernoulli
Tensor.multinomial = multinomial
