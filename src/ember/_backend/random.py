"""Random draws on a GPU, spelled as NumPy's ``Generator`` spells them.

ember's samplers call ``rng.random(shape)``, ``rng.standard_normal(shape)``, ``rng.integers``
and a few more on a NumPy ``Generator``. On a GPU the same calls go to ``DeviceRandom``, which
draws with CuPy's ``RandomState`` (cuRAND) on that device: the values differ from the CPU's,
as torch's CUDA generator's differ from its CPU generator's.
"""
from __future__ import annotations

import numpy

_GOLDEN = 0x9E3779B97F4A7C15
_MASK = (1 << 64) - 1


def draw_seed(seed, offset) -> int:
    """The cuRAND seed of draw number ``offset`` of a generator seeded with ``seed``."""
    return ((seed * _GOLDEN) ^ (offset * 0xBF58476D1CE4E5B9) ^ offset) & _MASK >> 1


class DeviceRandom:
    """NumPy Generator's sampling methods on one GPU, backed by a CuPy RandomState."""

    def __init__(self, backend, index):
        self._backend = backend
        self._index = index
        xp = backend.xp
        curand = getattr(xp.cuda, "curand", None)
        # NOTE: Philox re-seeds in O(1); cuRAND's default (XORWOW) rebuilds its states on
        # every seed, and a generator is re-seeded before each draw (see ember.cuda).
        method = {} if curand is None else {"method": curand.CURAND_RNG_PSEUDO_PHILOX4_32_10}
        with backend.on(index):
            self._rs = xp.random.RandomState(0, **method)

    def reseed(self, seed):
        self._rs.seed(seed)

    def _on(self):
        return self._backend.on(self._index)

    def random(self, size=None, dtype=numpy.float64):
        with self._on():
            return self._rs.random_sample(size, dtype=dtype)

    def standard_normal(self, size=None, dtype=numpy.float64):
        with self._on():
            return self._rs.standard_normal(size, dtype=dtype)

    def uniform(self, low=0.0, high=1.0, size=None):
        with self._on():
            return self._rs.uniform(low, high, size)

    def integers(self, low, high=None, size=None, dtype=numpy.int64):
        with self._on():
            return self._rs.randint(low, high, size, dtype=dtype)

    def exponential(self, scale=1.0, size=None):
        with self._on():
            return self._rs.exponential(scale, size)

    def geometric(self, p, size=None):
        with self._on():
            return self._rs.geometric(p, size)

    def lognormal(self, mean=0.0, sigma=1.0, size=None):
        with self._on():
            return self._rs.lognormal(mean, sigma, size)

    def standard_cauchy(self, size=None):
        with self._on():
            return self._rs.standard_cauchy(size)

    def poisson(self, lam=1.0, size=None):
        with self._on():
            return self._rs.poisson(lam, size)

    def permutation(self, n):
        with self._on():
            return self._rs.permutation(n)

    def choice(self, a, size=None, replace=True, p=None):
        if replace or p is None:
            with self._on():
                return self._rs.choice(a, size, replace, p)
        # NOTE: CuPy samples without replacement only uniformly. Weighted: the ``size``
        # largest keys log(u) / p (Efraimidis and Spirakis), which draws as sequential
        # sampling proportional to the remaining weights does.
        xp = self._backend.xp
        n = a if isinstance(a, int) else len(a)
        with self._on(), numpy.errstate(divide="ignore"):
            keys = xp.log(self._rs.random_sample(n)) / xp.asarray(p, numpy.float64)
            picked = xp.argsort(-keys)[:size]
        return picked if isinstance(a, int) else xp.asarray(a)[picked]
