"""Random sampling: bernoulli, multinomial, poisson, and the in-place ``Tensor.*_`` samplers.

On the CPU the values are torch's, bit for bit (``ember._random``); a GPU tensor's values are
drawn on its GPU from its CUDA generator (``ember.cuda.random``). Samples are not
reparameterised: as torch does, a sampler of tensors that require grad records a node
(``NormalBackward3``, ``PoissonBackward0``, ``UniformBackward0`` for ``uniform_``...) whose
derivative is zero in each parameter (``bernoulli(x, p)``: torch's ``NotImplemented`` node,
whose backward raises). Each such node is an op below that hands the drawn values on;
in-place samplers write through the in-place path, so versions, views and the leaf checks behave as for any in-place op.
"""
from __future__ import annotations

__all__ = ['bernoulli', 'multinomial', 'poisson']

import numpy as np

from .._backend import get_xp, to_numpy
from .._backend.device import device_of, move
from .._compile.hooks import replayed
from .._random import cpu_generator, discrete
from .._random import fill as _fill
from .._random.generator import DeviceDraw, draw_for, kernel_name
from .._tensor import Tensor, _wrap
from .pointwise import no_derivative, zero_gradient
from .registry import NONE, op


# -- the nodes of samplers: the drawn values, of zero derivative in the parameters ---------------
def _given_one(self, values):
    return values


def _given_two(self, other, values):
    return values


def _zero(grad):
    return zero_gradient(grad)


def _zeros(grad):
    return zero_gradient(grad), zero_gradient(grad)


def _sample_op(name, node, n_params=1, formula=None):
    """The op whose output is a sampler's ``values``, recorded as torch's ``node`` over the
    sampler's ``n_params`` tensor parameters."""
    d = op(name, node=node, tensors=n_params, promote=NONE)(
        _given_one if n_params == 1 else _given_two)
    d.grad(*("self", "other")[:n_params])(formula or (_zero if n_params == 1 else _zeros))
    return d


_bernoulli_node = _sample_op("bernoulli", "BernoulliBackward0")
_bernoulli_p_node = _sample_op("bernoulli.p", "NotImplemented", formula=no_derivative("bernoulli"))
_bernoulli_tensor_ = _sample_op("bernoulli_.Tensor", "BernoulliBackward1", 2)
_bernoulli_float_ = _sample_op("bernoulli_.float", "BernoulliBackward2")
_poisson_node = _sample_op("poisson", "PoissonBackward0")
_normal_mean = _sample_op("normal.Tensor_float", "NormalBackward1")
_normal_std = _sample_op("normal.float_Tensor", "NormalBackward2")
_normal_both = _sample_op("normal.Tensor_Tensor", "NormalBackward3", 2)
_normal_ = _sample_op("normal_", "NormalBackward0")
_uniform_ = _sample_op("uniform_", "UniformBackward0")
_exponential_ = _sample_op("exponential_", "ExponentialBackward0")
_geometric_ = _sample_op("geometric_", "GeometricBackward0")
_log_normal_ = _sample_op("log_normal_", "LogNormalBackward0")
_cauchy_ = _sample_op("cauchy_", "CauchyBackward0")
_random_from_ = _sample_op("random_.from", "RandomBackward0")
_random_to_ = _sample_op("random_.to", "RandomBackward1")
_random_ = _sample_op("random_", "RandomBackward2")


def _on_device_of(values, tensor):
    """Draws (an array made where ``tensor`` is, or on the host for an empty result) on
    ``tensor``'s device."""
    array = tensor._data
    if type(array) is np.ndarray:
        return np.asarray(values)
    return move(values, device_of(array))


def sampled(node, *params, values):
    """``values`` (an array) as the output of a sampler of ``params`` (tensors) with torch's
    ``node`` op, on the first parameter's device: a plain tensor unless a parameter requires
    grad."""
    return node(*params, _on_device_of(values, params[0]))


def _write(self, values, node, *params):
    """Overwrite ``self`` with sampled ``values`` through the in-place path of ``node`` (over
    ``self`` and the sampler's tensor ``params``)."""
    values = values.astype(self._data.dtype, copy=False)
    return node.inplace(self, *params, _on_device_of(values, self))


def _probabilities(p, draw, like):
    """A probability tensor's array where ``like``'s values are drawn (torch moves it)."""
    return move(p._data, device_of(like)) if isinstance(draw, DeviceDraw) else to_numpy(p._data)


@replayed
def bernoulli(input, p=None, *, generator=None, out=None):
    """0/1 samples: 1 with probability ``input`` (or with probability ``p``), in ``input``'s
    dtype and shape."""
    array = np.empty(tuple(input.shape), input._data.dtype)  # (describes the draw)
    draw = draw_for(generator, input.device)
    if p is None:
        probs = _probabilities(input, draw, input._data)
        return sampled(_bernoulli_node, input, values=_fill.bernoulli_tensor(array, probs, draw))
    return sampled(_bernoulli_p_node, input, values=_fill.bernoulli_scalar(array, p, draw))


@replayed
def bernoulli_(self, p=0.5, *, generator=None):
    """Fill with 0/1 samples, 1 with probability ``p`` (a number or a tensor)."""
    draw = draw_for(generator, self.device)
    if isinstance(p, Tensor):
        values = _fill.bernoulli_tensor(self._data, _probabilities(p, draw, self._data), draw)
        return _write(self, values, _bernoulli_tensor_, p)
    return _write(self, _fill.bernoulli_scalar(self._data, p, draw), _bernoulli_float_)


@replayed
def poisson(input, generator=None):
    """Samples from Poisson distributions with the rates in ``input``."""
    rates = input._data
    draw = draw_for(generator, input.device)
    if rates.dtype.kind != "f":
        raise _fill._not_implemented(kernel_name("poisson_cpu", draw), rates.dtype)
    xp = get_xp(rates)  # (checked where the rates are)
    if bool(xp.any(rates < 0)) or bool(xp.any(xp.isnan(rates))):
        raise RuntimeError("invalid Poisson rate, expected rate to be non-negative")
    if rates.size == 0:
        return sampled(_poisson_node, input, values=np.empty(rates.shape, rates.dtype))
    flat = xp.ascontiguousarray(rates).ravel()
    if isinstance(draw, DeviceDraw):
        values = draw.sample("poisson", flat)
    else:
        values = discrete.poisson(cpu_generator(generator), flat)
    return sampled(_poisson_node, input, values=values.astype(rates.dtype).reshape(rates.shape))


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
    xp = get_xp(probs)  # (checked where the probabilities are)
    if not replacement or num_samples == 1:
        if bool(xp.any(~xp.isfinite(probs)) or xp.any(probs < 0)):
            raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
        if bool(xp.any(probs.sum(-1) == 0)):
            raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
        return
    if bool(xp.any(probs < 0)):
        raise RuntimeError("invalid multinomial distribution (encountering probability entry "
                           "< 0)")
    if bool(xp.any(~xp.isfinite(probs))):
        raise RuntimeError("invalid multinomial distribution (encountering probability entry "
                           "= infinity or NaN)")
    if bool(xp.any(probs.sum(-1) <= 0)):
        raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")


@replayed
def multinomial(input, num_samples, replacement=False, *, generator=None,
                out=None):
    """Indices sampled from the categorical distributions in the rows of ``input``."""
    probs = input._data
    _check_multinomial(probs, num_samples, replacement)
    draw = draw_for(generator, input.device)
    if isinstance(draw, DeviceDraw):
        values = draw.sample("multinomial", probs, num_samples, replacement)
    else:
        values = discrete.multinomial(cpu_generator(generator), probs, num_samples, replacement)
    return _wrap(_on_device_of(values, input))


# -- in-place samplers --------------------------------------------------------------------------
@replayed
def normal_(self, mean=0.0, std=1.0, *, generator=None):
    """Fill with samples from N(mean, std^2)."""
    draw = draw_for(generator, self.device)
    return _write(self, _fill.normal(self._data, mean, std, draw), _normal_)


@replayed
def uniform_(self, from_=0.0, to=1.0, *, generator=None, **kwargs):
    """Fill with samples from the uniform distribution on [from, to)."""
    from_ = kwargs.pop("from", from_)  # (torch's name, a Python keyword)
    for k in kwargs:
        raise TypeError(f"uniform_() got an unexpected keyword argument '{k}'")
    draw = draw_for(generator, self.device)
    return _write(self, _fill.uniform(self._data, from_, to, draw), _uniform_)


@replayed
def exponential_(self, lambd=1.0, *, generator=None):
    """Fill with samples from the exponential distribution of rate ``lambd``."""
    draw = draw_for(generator, self.device)
    return _write(self, _fill.exponential(self._data, lambd, draw), _exponential_)


@replayed
def geometric_(self, p, *, generator=None):
    """Fill with samples from the geometric distribution (trials until the first success)."""
    draw = draw_for(generator, self.device)
    return _write(self, _fill.geometric(self._data, p, draw), _geometric_)


@replayed
def log_normal_(self, mean=1.0, std=2.0, *, generator=None):
    """Fill with samples whose log is N(mean, std^2)."""
    draw = draw_for(generator, self.device)
    values = _fill.log_normal(self._data, mean, std, draw)
    return _write(self, values, _log_normal_)


@replayed
def cauchy_(self, median=0.0, sigma=1.0, *, generator=None):
    """Fill with samples from the Cauchy distribution."""
    draw = draw_for(generator, self.device)
    return _write(self, _fill.cauchy(self._data, median, sigma, draw), _cauchy_)


@replayed
def random_(self, *args, generator=None, **kwargs):
    """Fill with integers drawn uniformly from [from, to) (default: the dtype's range).

    ``random_(to)`` draws from [0, to), ``random_(from, to)`` from [from, to), ``random_(from,
    None)`` from [from, the dtype's largest value].
    """
    if len(args) == 1 and "to" not in kwargs and "from" not in kwargs:
        low, high, node = 0, args[0], _random_to_
    else:
        named = dict(zip(("from", "to"), args))
        for k in kwargs:
            if k not in ("from", "to"):
                raise TypeError(f"random_() got an unexpected keyword argument '{k}'")
        named.update(kwargs)
        if not named:
            draw = draw_for(generator, self.device)
            return _write(self, _fill.random(self._data, None, None, draw), _random_)
        low, high, node = named.get("from", 0), named.get("to"), _random_from_
    return _write(self, _fill.random(self._data, low, high, draw_for(generator, self.device)),
                  node)


for _f in (normal_, uniform_, exponential_, geometric_, log_normal_, cauchy_, random_,
           bernoulli_):
    setattr(Tensor, _f.__name__, _f)
Tensor.bernoulli = bernoulli
Tensor.multinomial = multinomial
