"""Fuzzer: random benchmark inputs (parameters and tensors of random shapes and layouts)."""
from __future__ import annotations

import functools
import itertools as it

import numpy as np

import ember

__all__ = ["Fuzzer", "FuzzedParameter", "ParameterAlias", "FuzzedTensor"]

_DISTRIBUTIONS = ("loguniform", "uniform")


class FuzzedParameter:
    """A named parameter drawn from ``distribution``: "uniform" or "loguniform" between
    ``minval`` and ``maxval`` (integers when both bounds are ints; loguniform always), or a
    dict {value: probability}. A ``strict`` parameter keeps its first value while a
    Fuzzer retries a rejected draw."""

    def __init__(self, name, minval=None, maxval=None, distribution=None, strict=False):
        self._name = name
        self._minval = minval
        self._maxval = maxval
        self._distribution = self._check_distribution(distribution)
        self.strict = strict

    @property
    def name(self):
        return self._name

    def sample(self, state):
        if self._distribution == "loguniform":
            return self._loguniform(state)
        if self._distribution == "uniform":
            return self._uniform(state)
        if isinstance(self._distribution, dict):
            return self._custom_distribution(state)
        return None

    def _check_distribution(self, distribution):
        if not isinstance(distribution, dict):
            if distribution not in _DISTRIBUTIONS:
                raise AssertionError(f"Unknown distribution: {distribution}")
            return distribution
        if any(i < 0 for i in distribution.values()):
            raise AssertionError("Probabilities cannot be negative")
        # NOTE: torch's check, reproduced as written: it refuses normalised distributions
        if not abs(sum(distribution.values()) - 1) > 1e-5:
            raise AssertionError("Distribution is not normalized")
        if self._minval is not None:
            raise AssertionError("When passing a custom distribution, 'minval' must be None")
        if self._maxval is not None:
            raise AssertionError("When passing a custom distribution, 'maxval' must be None")
        return distribution

    def _loguniform(self, state):
        low = np.log2(self._minval) if self._minval is not None else None
        high = np.log2(self._maxval) if self._maxval is not None else None
        output = int(2 ** state.uniform(low=low, high=high))
        if self._minval is not None and output < self._minval:
            return self._minval
        if self._maxval is not None and output > self._maxval:
            return self._maxval
        return output

    def _uniform(self, state):
        if isinstance(self._minval, int) and isinstance(self._maxval, int):
            return int(state.randint(low=self._minval, high=self._maxval + 1))
        return state.uniform(low=self._minval, high=self._maxval)

    def _custom_distribution(self, state):
        index = state.choice(np.arange(len(self._distribution)),
                             p=tuple(self._distribution.values()))
        return list(self._distribution.keys())[index]


class ParameterAlias:
    """A parameter that takes the value of another (``alias_to``): for square matrices,
    ``FuzzedParameter("n", ...)`` and ``{"m": ParameterAlias("n")}``."""

    def __init__(self, alias_to):
        self.alias_to = alias_to

    def __repr__(self):
        return f"ParameterAlias[alias_to: {self.alias_to}]"


def dtype_size(dtype):
    """Bytes per element of ``dtype``."""
    return dtype.itemsize


def prod(values, base=1):
    """The product of ``values`` (as Python ints) times ``base``."""
    return functools.reduce(lambda x, y: int(x) * int(y), values, base)


class FuzzedTensor:
    """A tensor whose ``size`` (and ``steps``: strides of the view taken from a larger
    allocation) are given by numbers or parameter names; with probability
    ``1 - probability_contiguous`` its memory is laid out in a random dimension order.
    Draws whose element count or allocation falls outside the bounds are rejected."""

    def __init__(self, name, size, steps=None, probability_contiguous=0.5, min_elements=None,
                 max_elements=None, max_allocation_bytes=None, dim_parameter=None,
                 roll_parameter=None, dtype=ember.float32, cuda=False,
                 tensor_constructor=None):
        self._name = name
        self._size = size
        self._steps = steps
        self._probability_contiguous = probability_contiguous
        self._min_elements = min_elements
        self._max_elements = max_elements
        self._max_allocation_bytes = max_allocation_bytes
        self._dim_parameter = dim_parameter
        self._dtype = dtype
        self._cuda = cuda
        self._tensor_constructor = tensor_constructor

    @property
    def name(self):
        return self._name

    @staticmethod
    def default_tensor_constructor(size, dtype, **kwargs):
        if dtype.is_floating_point or dtype.is_complex:
            return ember.rand(size=size, dtype=dtype, device="cpu")
        return ember.randint(1, 127, size=size, dtype=dtype, device="cpu")

    def _make_tensor(self, params, state):
        size, steps, allocation_size = self._get_size_and_steps(params)
        constructor = self._tensor_constructor or self.default_tensor_constructor
        raw_tensor = constructor(size=allocation_size, dtype=self._dtype, **params)
        if self._cuda:
            raw_tensor = raw_tensor.cuda()
        dim = len(size)
        order = np.arange(dim)
        if state.rand() > self._probability_contiguous:
            while dim > 1 and np.all(order == np.arange(dim)):
                order = state.permutation(raw_tensor.dim())
            raw_tensor = raw_tensor.permute(tuple(order)).contiguous()
            raw_tensor = raw_tensor.permute(tuple(np.argsort(order)))
        slices = [slice(0, s * step, step) for s, step in zip(size, steps, strict=True)]
        tensor = raw_tensor[tuple(slices)]
        properties = {"numel": int(tensor.numel()), "order": order, "steps": steps,
                      "is_contiguous": tensor.is_contiguous(), "dtype": str(self._dtype)}
        return tensor, properties

    def _get_size_and_steps(self, params):
        dim = params[self._dim_parameter] if self._dim_parameter is not None else len(self._size)

        def resolve(values, dim):
            values = tuple(params.get(i, i) for i in values)
            values = values[:dim]
            return values + (1,) * (dim - len(values))
        size = resolve(self._size, dim)
        steps = resolve(self._steps or (), dim)
        allocation_size = tuple(s * step for s, step in zip(size, steps, strict=True))
        return size, steps, allocation_size

    def satisfies_constraints(self, params):
        size, _, allocation_size = self._get_size_and_steps(params)
        num_elements = prod(size)
        if num_elements < 0:
            raise AssertionError("Computed number of elements is negative")
        allocation_bytes = prod(allocation_size, base=dtype_size(self._dtype))

        def nullable_greater(left, right):
            return left is not None and right is not None and left > right
        return not any((nullable_greater(num_elements, self._max_elements),
                        nullable_greater(self._min_elements, num_elements),
                        nullable_greater(allocation_bytes, self._max_allocation_bytes)))


class Fuzzer:
    """Draw parameter sets (FuzzedParameters, subject to ``constraints``) and the
    FuzzedTensors they describe; ``take(n)`` yields ``(tensors, tensor_properties, params)``.
    A ``seed`` repeats the parameters (NumPy's RandomState draws them)."""

    def __init__(self, parameters, tensors, constraints=None, seed=None):
        if seed is None:
            seed = int(np.random.RandomState().randint(0, 2 ** 32 - 1, dtype=np.int64))
        self._seed = seed
        self._parameters = Fuzzer._unpack(parameters, FuzzedParameter)
        self._tensors = Fuzzer._unpack(tensors, FuzzedTensor)
        self._constraints = constraints or ()
        overlap = {p.name for p in self._parameters} & {t.name for t in self._tensors}
        if overlap:
            raise ValueError(f"Duplicate names in parameters and tensors: {overlap}")
        self._rejections = 0
        self._total_generated = 0

    @staticmethod
    def _unpack(values, cls):
        return tuple(it.chain.from_iterable([[i] if isinstance(i, cls) else i for i in values]))

    def take(self, n):
        state = np.random.RandomState(self._seed)
        ember.manual_seed(state.randint(low=0, high=2 ** 63, dtype=np.int64))
        for _ in range(n):
            params = self._generate(state)
            tensors, tensor_properties = {}, {}
            for t in self._tensors:
                tensors[t.name], tensor_properties[t.name] = t._make_tensor(params, state)
            yield tensors, tensor_properties, params

    @property
    def rejection_rate(self):
        if not self._total_generated:
            return 0.0
        return self._rejections / self._total_generated

    def _generate(self, state):
        strict_params = {}
        for _ in range(1000):
            candidate = {}
            for p in self._parameters:
                if p.strict and p.name in strict_params:
                    candidate[p.name] = strict_params[p.name]
                else:
                    candidate[p.name] = p.sample(state)
                    if p.strict:
                        strict_params[p.name] = candidate[p.name]
            candidate = self._resolve_aliases(candidate)
            self._total_generated += 1
            if not all(f(candidate) for f in self._constraints) or not all(
                    t.satisfies_constraints(candidate) for t in self._tensors):
                self._rejections += 1
                continue
            return candidate
        raise ValueError("Failed to generate a set of valid parameters.")

    @staticmethod
    def _resolve_aliases(params):
        params = dict(params)
        alias_count = sum(isinstance(v, ParameterAlias) for v in params.values())
        keys = list(params.keys())
        while alias_count:
            for k in keys:
                v = params[k]
                if isinstance(v, ParameterAlias):
                    params[k] = params[v.alias_to]
            new_count = sum(isinstance(v, ParameterAlias) for v in params.values())
            if alias_count == new_count:
                raise ValueError(f"ParameterAlias cycle detected\n{params}")
            alias_count = new_count
        return params
