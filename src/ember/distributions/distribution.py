"""Distribution: the base class of every probability distribution."""
from __future__ import annotations

import warnings
from numbers import Number

import ember

from .._size import Size
from . import constraints
from .utils import broadcast_all, lazy_property

__all__ = ['Distribution']


class Distribution:
    """The abstract base class for probability distributions.

    ``batch_shape``: the shape over which parameters are batched; ``event_shape``: the shape
    of one sample; ``validate_args``: whether to check parameters and values (default: on,
    unless Python runs with -O; see :meth:`set_default_validate_args`).
    """

    has_rsample = False
    has_enumerate_support = False
    _validate_args = __debug__

    @staticmethod
    def set_default_validate_args(value):
        """Turn argument validation on or off for distributions that do not choose."""
        if value not in [True, False]:
            raise ValueError
        Distribution._validate_args = value

    def __init__(self, batch_shape=Size(), event_shape=Size(), validate_args=None):
        self._batch_shape = batch_shape
        self._event_shape = event_shape
        if validate_args is not None:
            self._validate_args = validate_args
        if self._validate_args:
            self._check_parameters()
        super().__init__()

    def _check_parameters(self):
        try:
            arg_constraints = self.arg_constraints
        except NotImplementedError:
            arg_constraints = {}
            warnings.warn(f"{self.__class__} does not define `arg_constraints`. Please set "
                          "`arg_constraints = {}` or initialize the distribution with "
                          "`validate_args=False` to turn off validation.", stacklevel=3)
        for param, constraint in arg_constraints.items():
            if constraints.is_dependent(constraint):
                continue  # its validity cannot be checked
            if param not in self.__dict__ and isinstance(getattr(type(self), param),
                                                         lazy_property):
                continue  # not given: it will be computed from a valid parameter
            value = getattr(self, param)
            if not bool(constraint.check(value).all()):
                raise ValueError(
                    f"Expected parameter {param} ({type(value).__name__} of shape "
                    f"{tuple(value.shape)}) of distribution {self!r} to satisfy the "
                    f"constraint {constraint!r}, but found invalid values:\n{value}")

    def expand(self, batch_shape, _instance=None):
        """A new distribution with its batch dimensions expanded to ``batch_shape`` (the
        parameters are expanded views; arguments are not checked again)."""
        raise NotImplementedError

    @property
    def batch_shape(self):
        """The shape over which parameters are batched."""
        return self._batch_shape

    @property
    def event_shape(self):
        """The shape of a single sample (without batching)."""
        return self._event_shape

    @property
    def arg_constraints(self):
        """A dict from parameter names to the Constraint each must satisfy."""
        raise NotImplementedError

    @property
    def support(self):
        """The Constraint describing this distribution's support."""
        raise NotImplementedError

    @property
    def mean(self):
        raise NotImplementedError

    @property
    def mode(self):
        raise NotImplementedError(f"{self.__class__} does not implement mode")

    @property
    def variance(self):
        raise NotImplementedError

    @property
    def stddev(self):
        return self.variance.sqrt()

    def sample(self, sample_shape=Size()):
        """A ``sample_shape`` shaped sample (or batch of samples), without gradient."""
        with ember.no_grad():
            return self.rsample(sample_shape)

    def rsample(self, sample_shape=Size()):
        """A reparameterised sample: differentiable with respect to the parameters."""
        raise NotImplementedError

    def sample_n(self, n):
        """``n`` samples (deprecated: use ``sample((n,))``)."""
        warnings.warn("`sample_n(n)` will be deprecated. Use `sample((n,))` instead.",
                      FutureWarning, stacklevel=2)
        return self.sample(Size((n,)))

    def log_prob(self, value):
        """The log of the probability density or mass function at ``value``."""
        raise NotImplementedError

    def cdf(self, value):
        """The cumulative distribution function at ``value``."""
        raise NotImplementedError

    def icdf(self, value):
        """The inverse cumulative distribution function at ``value``."""
        raise NotImplementedError

    def enumerate_support(self, expand=True):
        """Every value of a discrete distribution's support, along dimension 0."""
        raise NotImplementedError

    def entropy(self):
        """The entropy, batched over batch_shape."""
        raise NotImplementedError

    def perplexity(self):
        """exp(entropy), batched over batch_shape."""
        return ember.exp(self.entropy())

    def _extended_shape(self, sample_shape=Size()):
        """``sample_shape + batch_shape + event_shape``."""
        if not isinstance(sample_shape, Size):
            sample_shape = Size(sample_shape)
        return Size(sample_shape + self._batch_shape + self._event_shape)

    def _validate_sample(self, value):
        """Check that ``value`` has a shape compatible with the distribution's and lies in
        its support (torch's errors)."""
        if not isinstance(value, ember.Tensor):
            raise ValueError("The value argument to log_prob must be a Tensor")
        event_dim_start = len(value.size()) - len(self._event_shape)
        if value.size()[event_dim_start:] != self._event_shape:
            raise ValueError("The right-most size of value must match event_shape: "
                             f"{value.size()} vs {self._event_shape}.")
        actual_shape = value.size()
        expected_shape = self._batch_shape + self._event_shape
        for i, j in zip(reversed(actual_shape), reversed(expected_shape)):
            if i != 1 and j != 1 and i != j:
                raise ValueError("Value is not broadcastable with batch_shape+event_shape: "
                                 f"{actual_shape} vs {expected_shape}.")
        try:
            support = self.support
        except NotImplementedError:
            warnings.warn(f"{self.__class__} does not define `support` to enable sample "
                          "validation. Please initialize the distribution with "
                          "`validate_args=False` to turn off validation.", stacklevel=2)
            return
        if not bool(support.check(value).all()):
            raise ValueError(
                f"Expected value argument ({type(value).__name__} of shape "
                f"{tuple(value.shape)}) to be within the support ({support!r}) of the "
                f"distribution {self!r}, but found invalid values:\n{value}")

    def _get_checked_instance(self, cls, _instance=None):
        if _instance is None and type(self).__init__ != cls.__init__:
            raise NotImplementedError(
                f"Subclass {self.__class__.__name__} of {cls.__name__} that defines a custom "
                "__init__ method must also define a custom .expand() method.")
        return self.__new__(type(self)) if _instance is None else _instance

    def __repr__(self):
        # a one-element parameter shows its value, a larger one its size
        values = [(k, self.__dict__[k]) for k in self.arg_constraints if k in self.__dict__]
        args = ", ".join(f"{k}: {v if v.numel() == 1 else v.size()}" for k, v in values)
        return self.__class__.__name__ + "(" + args + ")"

    # -- shared by the subclasses --------------------------------------------------------
    def _set_params(self, **params):
        """Broadcast ``params`` (numbers or tensors) to one shape and store them; the batch
        shape they give (empty when all are numbers)."""
        values = broadcast_all(*params.values())
        for name, value in zip(params, values):
            setattr(self, name, value)
        if all(isinstance(v, Number) for v in params.values()):
            return Size()
        return values[0].size()

    def _expanded(self, cls, batch_shape, _instance, event_shape=None, **expanded):
        """``expand``'s common path: a ``cls`` instance whose attributes are ``expanded``
        and whose batch shape is ``batch_shape``, validating as ``self`` does."""
        new = self._get_checked_instance(cls, _instance)
        for name, value in expanded.items():
            setattr(new, name, value)
        event_shape = self._event_shape if event_shape is None else event_shape
        super(cls, new).__init__(Size(batch_shape), event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def _expand_params(self, cls, batch_shape, _instance, names):
        """``_expanded`` with each parameter in ``names`` expanded to ``batch_shape``."""
        shape = Size(batch_shape)
        return self._expanded(cls, shape, _instance,
                              **{n: getattr(self, n).expand(shape) for n in names})

    def _expand_probs_or_logits(self, cls, batch_shape, _instance, event_shape=Size(),
                                **expanded):
        """``_expanded`` for distributions given probs or logits: whichever of the two is
        stored is expanded (and becomes ``_param``)."""
        shape = Size(batch_shape) + event_shape
        for name in ("probs", "logits"):
            if name in self.__dict__:
                expanded[name] = expanded["_param"] = self.__dict__[name].expand(shape)
        return self._expanded(cls, batch_shape, _instance, **expanded)
