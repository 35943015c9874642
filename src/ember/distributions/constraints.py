"""Constraints: the sets a distribution's parameters and samples live in.

Each constraint has ``check(value)`` (a boolean tensor, one entry per event), ``event_dim``
(how many rightmost dimensions make one event) and ``is_discrete``. Their reprs, and those of
the instances below, are torch's (``GreaterThan(lower_bound=0.0)``).
"""
from __future__ import annotations

import ember

from .utils import finfo

__all__ = ['Constraint', 'boolean', 'cat', 'corr_cholesky', 'dependent', 'dependent_property',
           'greater_than', 'greater_than_eq', 'independent', 'integer_interval', 'interval',
           'half_open_interval', 'is_dependent', 'less_than', 'lower_cholesky',
           'lower_triangular', 'MixtureSameFamilyConstraint', 'multinomial', 'nonnegative',
           'nonnegative_integer', 'one_hot', 'positive', 'positive_semidefinite',
           'positive_definite', 'positive_integer', 'real', 'real_vector', 'simplex', 'square',
           'stack', 'symmetric', 'unit_interval']


class Constraint:
    """The abstract base class of constraints: a region over which a variable is valid."""

    is_discrete = False  # whether the constrained space is discrete
    event_dim = 0  # how many rightmost dimensions together form one event

    def check(self, value):
        """A byte tensor of ``sample_shape + batch_shape``: whether each event is valid."""
        raise NotImplementedError

    def __repr__(self):
        return self.__class__.__name__[1:] + "()"


class _Dependent(Constraint):
    """A placeholder for a support that depends on other variables (unknown statically)."""

    def __init__(self, *, is_discrete=NotImplemented, event_dim=NotImplemented):
        self._is_discrete = is_discrete
        self._event_dim = event_dim
        super().__init__()

    @property
    def is_discrete(self):
        if self._is_discrete is NotImplemented:
            raise NotImplementedError(".is_discrete cannot be determined statically")
        return self._is_discrete

    @property
    def event_dim(self):
        if self._event_dim is NotImplemented:
            raise NotImplementedError(".event_dim cannot be determined statically")
        return self._event_dim

    def __call__(self, *, is_discrete=NotImplemented, event_dim=NotImplemented):
        """A dependent constraint with ``is_discrete`` / ``event_dim`` known."""
        if is_discrete is NotImplemented:
            is_discrete = self._is_discrete
        if event_dim is NotImplemented:
            event_dim = self._event_dim
        return _Dependent(is_discrete=is_discrete, event_dim=event_dim)

    def check(self, x):
        raise ValueError("Cannot determine validity of dependent constraint")


def is_dependent(constraint):
    """Whether ``constraint`` is a dependent (statically unknown) constraint."""
    return isinstance(constraint, _Dependent)


class _DependentProperty(property, _Dependent):
    """A property that is a dependent constraint on the class (``Uniform.support``) and
    computes the actual constraint on an instance."""

    def __init__(self, fn=None, *, is_discrete=NotImplemented, event_dim=NotImplemented):
        property.__init__(self, fn)
        self._is_discrete = is_discrete
        self._event_dim = event_dim

    def __call__(self, fn):
        return _DependentProperty(fn, is_discrete=self._is_discrete, event_dim=self._event_dim)


def _check_is_constraint(value, what):
    if not isinstance(value, Constraint):
        raise AssertionError(f"{what} must be a Constraint, got {type(value).__name__}")


def _all_over_rightmost(result, keep):
    """``result`` reduced with all() over every dimension after the first ``keep``."""
    return result.reshape(result.shape[:keep] + (-1,)).all(-1)


class _IndependentConstraint(Constraint):
    """``base_constraint`` with its ``reinterpreted_batch_ndims`` rightmost batch dims
    reinterpreted as event dims (checked together)."""

    def __init__(self, base_constraint, reinterpreted_batch_ndims):
        _check_is_constraint(base_constraint, "base_constraint")
        if not isinstance(reinterpreted_batch_ndims, int):
            raise AssertionError("reinterpreted_batch_ndims must be an int, got "
                                 f"{type(reinterpreted_batch_ndims).__name__}")
        if reinterpreted_batch_ndims < 0:
            raise AssertionError("reinterpreted_batch_ndims must be >= 0, got "
                                 f"{reinterpreted_batch_ndims}")
        self.base_constraint = base_constraint
        self.reinterpreted_batch_ndims = reinterpreted_batch_ndims
        super().__init__()

    @property
    def is_discrete(self):
        return self.base_constraint.is_discrete

    @property
    def event_dim(self):
        return self.base_constraint.event_dim + self.reinterpreted_batch_ndims

    def check(self, value):
        result = self.base_constraint.check(value)
        n = self.reinterpreted_batch_ndims
        if result.dim() < n:
            raise ValueError(f"Expected value.dim() >= {self.base_constraint.event_dim + n} "
                             f"but got {value.dim()}")
        return _all_over_rightmost(result, result.dim() - n)

    def __repr__(self):
        return (f"{self.__class__.__name__[1:]}({self.base_constraint!r}, "
                f"{self.reinterpreted_batch_ndims})")


class MixtureSameFamilyConstraint(Constraint):
    """The support of a MixtureSameFamily: its components' support, checked per component."""

    def __init__(self, base_constraint):
        _check_is_constraint(base_constraint, "base_constraint")
        self.base_constraint = base_constraint
        super().__init__()

    @property
    def is_discrete(self):
        return self.base_constraint.is_discrete

    @property
    def event_dim(self):
        return self.base_constraint.event_dim

    def check(self, value):
        result = self.base_constraint.check(value.unsqueeze(-1 - self.event_dim))
        if value.dim() < self.event_dim:
            raise ValueError(f"Expected value.dim() >= {self.event_dim} but got {value.dim()}")
        return _all_over_rightmost(result, value.dim() - self.event_dim)

    def __repr__(self):
        return f"{self.__class__.__name__}({self.base_constraint!r})"


class _Boolean(Constraint):
    """{0, 1}."""

    is_discrete = True

    def check(self, value):
        return (value == 0) | (value == 1)


class _OneHot(Constraint):
    """One-hot vectors."""

    is_discrete = True
    event_dim = 1

    def check(self, value):
        is_boolean = (value == 0) | (value == 1)
        return is_boolean.all(-1) & value.sum(-1).eq(1)


class _LowerBounded(Constraint):
    """A constraint with a ``lower_bound`` (shown in its repr)."""

    def __init__(self, lower_bound):
        self.lower_bound = lower_bound
        super().__init__()

    def __repr__(self):
        return f"{self.__class__.__name__[1:]}(lower_bound={self.lower_bound})"


class _UpperBounded(Constraint):
    """A constraint with an ``upper_bound`` (shown in its repr)."""

    def __init__(self, upper_bound):
        self.upper_bound = upper_bound
        super().__init__()

    def __repr__(self):
        return f"{self.__class__.__name__[1:]}(upper_bound={self.upper_bound})"


class _Bounded(Constraint):
    """A constraint with a ``lower_bound`` and an ``upper_bound`` (shown in its repr)."""

    def __init__(self, lower_bound, upper_bound):
        self.lower_bound, self.upper_bound = lower_bound, upper_bound
        super().__init__()

    def __repr__(self):
        return (f"{self.__class__.__name__[1:]}(lower_bound={self.lower_bound}, "
                f"upper_bound={self.upper_bound})")


class _IntegerInterval(_Bounded):
    """Integers in [lower_bound, upper_bound]."""

    is_discrete = True

    def check(self, value):
        return (value % 1 == 0) & (self.lower_bound <= value) & (value <= self.upper_bound)


class _IntegerLessThan(_UpperBounded):
    """Integers <= upper_bound."""

    is_discrete = True

    def check(self, value):
        return (value % 1 == 0) & (value <= self.upper_bound)


class _IntegerGreaterThan(_LowerBounded):
    """Integers >= lower_bound."""

    is_discrete = True

    def check(self, value):
        return (value % 1 == 0) & (value >= self.lower_bound)


class _Real(Constraint):
    """The extended real line [-inf, inf] (everything but NaN)."""

    def check(self, value):
        return value == value  # noqa: PLR0124 - False exactly at NaN


class _GreaterThan(_LowerBounded):
    """(lower_bound, inf]."""

    def check(self, value):
        return self.lower_bound < value


class _GreaterThanEq(_LowerBounded):
    """[lower_bound, inf)."""

    def check(self, value):
        return self.lower_bound <= value


class _LessThan(_UpperBounded):
    """[-inf, upper_bound)."""

    def check(self, value):
        return value < self.upper_bound


class _Interval(_Bounded):
    """[lower_bound, upper_bound]."""

    def check(self, value):
        return (self.lower_bound <= value) & (value <= self.upper_bound)


class _HalfOpenInterval(_Bounded):
    """[lower_bound, upper_bound)."""

    def check(self, value):
        return (self.lower_bound <= value) & (value < self.upper_bound)


class _Simplex(Constraint):
    """Nonnegative vectors summing to 1 (to within 1e-6)."""

    event_dim = 1

    def check(self, value):
        return ember.all(value >= 0, dim=-1) & ((value.sum(-1) - 1).abs() < 1e-6)


class _Multinomial(Constraint):
    """Nonnegative integer vectors summing to at most ``upper_bound`` (integrality is not
    checked, as in torch)."""

    is_discrete = True
    event_dim = 1

    def __init__(self, upper_bound):
        self.upper_bound = upper_bound

    def check(self, x):
        return (x >= 0).all(dim=-1) & (x.sum(dim=-1) <= self.upper_bound)


def _is_lower_triangular(value):
    return (value.tril() == value).view(value.shape[:-2] + (-1,)).min(-1)[0]


class _LowerTriangular(Constraint):
    """Lower triangular square matrices."""

    event_dim = 2

    def check(self, value):
        return _is_lower_triangular(value)


class _LowerCholesky(Constraint):
    """Lower triangular square matrices with positive diagonals."""

    event_dim = 2

    def check(self, value):
        positive_diagonal = (value.diagonal(dim1=-2, dim2=-1) > 0).min(-1)[0]
        return _is_lower_triangular(value) & positive_diagonal


class _CorrCholesky(Constraint):
    """Lower Cholesky factors of correlation matrices (rows of unit length)."""

    event_dim = 2

    def check(self, value):
        tol = finfo(value.dtype).eps * value.size(-1) * 10  # 10 is an adjustable fudge factor
        row_norm = ember.linalg.norm(value.detach(), dim=-1)
        unit_row_norm = (row_norm - 1.0).abs().le(tol).all(dim=-1)
        return _LowerCholesky().check(value) & unit_row_norm


class _Square(Constraint):
    """Square matrices."""

    event_dim = 2

    def check(self, value):
        return ember.full(value.shape[:-2], value.shape[-2] == value.shape[-1],
                          dtype=ember.bool, device=value.device)


class _Symmetric(_Square):
    """Symmetric square matrices (to within 1e-6)."""

    def check(self, value):
        square_check = super().check(value)
        if not square_check.all():
            return square_check
        return ember.isclose(value, value.mT, atol=1e-6).all(-2).all(-1)


class _PositiveSemidefinite(_Symmetric):
    """Positive semidefinite matrices."""

    def check(self, value):
        sym_check = super().check(value)
        if not sym_check.all():
            return sym_check
        return ember.linalg.eigvalsh(value).ge(0).all(-1)


class _PositiveDefinite(_Symmetric):
    """Positive definite matrices."""

    def check(self, value):
        sym_check = super().check(value)
        if not sym_check.all():
            return sym_check
        # NOTE: torch asks whether a Cholesky factorisation succeeds; for a symmetric matrix
        # that is whether its eigenvalues are all positive.
        return ember.linalg.eigvalsh(value).gt(0).all(-1)


class _Cat(Constraint):
    """``cseq`` applied to consecutive pieces (of ``lengths``) along ``dim``, as cat does."""

    def __init__(self, cseq, dim=0, lengths=None):
        if not all(isinstance(c, Constraint) for c in cseq):
            raise AssertionError("All elements of cseq must be Constraint instances")
        self.cseq = list(cseq)
        self.lengths = list([1] * len(self.cseq) if lengths is None else lengths)
        if len(self.lengths) != len(self.cseq):
            raise AssertionError(f"lengths ({len(self.lengths)}) must match cseq "
                                 f"({len(self.cseq)})")
        self.dim = dim
        super().__init__()

    @property
    def is_discrete(self):
        return any(c.is_discrete for c in self.cseq)

    @property
    def event_dim(self):
        return max(c.event_dim for c in self.cseq)

    def check(self, value):
        _check_dim(self.dim, value, "value")
        checks, start = [], 0
        for constraint, length in zip(self.cseq, self.lengths):
            checks.append(constraint.check(value.narrow(self.dim, start, length)))
            start += length
        return ember.cat(checks, self.dim)


def _check_dim(dim, value, what):
    if not -value.dim() <= dim < value.dim():
        raise AssertionError(f"dim {dim} out of range for {what} with {value.dim()} dimensions")


class _Stack(Constraint):
    """``cseq`` applied to the slices of ``dim``, as stack does."""

    def __init__(self, cseq, dim=0):
        if not all(isinstance(c, Constraint) for c in cseq):
            raise AssertionError("All elements of cseq must be Constraint instances")
        self.cseq = list(cseq)
        self.dim = dim
        super().__init__()

    @property
    def is_discrete(self):
        return any(c.is_discrete for c in self.cseq)

    @property
    def event_dim(self):
        dim = max(c.event_dim for c in self.cseq)
        return dim + 1 if self.dim + dim < 0 else dim

    def check(self, value):
        _check_dim(self.dim, value, "value")
        slices = [value.select(self.dim, i) for i in range(value.size(self.dim))]
        return ember.stack([c.check(v) for v, c in zip(slices, self.cseq)], self.dim)


# Public interface.
dependent = _Dependent()
dependent_property = _DependentProperty
independent = _IndependentConstraint
boolean = _Boolean()
one_hot = _OneHot()
nonnegative_integer = _IntegerGreaterThan(0)
positive_integer = _IntegerGreaterThan(1)
integer_interval = _IntegerInterval
real = _Real()
real_vector = independent(real, 1)
positive = _GreaterThan(0.0)
nonnegative = _GreaterThanEq(0.0)
greater_than = _GreaterThan
greater_than_eq = _GreaterThanEq
less_than = _LessThan
multinomial = _Multinomial
unit_interval = _Interval(0.0, 1.0)
interval = _Interval
half_open_interval = _HalfOpenInterval
simplex = _Simplex()
lower_triangular = _LowerTriangular()
lower_cholesky = _LowerCholesky()
corr_cholesky = _CorrCholesky()
square = _Square()
symmetric = _Symmetric()
positive_semidefinite = _PositiveSemidefinite()
positive_definite = _PositiveDefinite()
cat = _Cat
stack = _Stack
