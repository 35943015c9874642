"""Random draws on a GPU: cuRAND's Philox generator through CuPy's ``RandomState``.

A CUDA generator (``ember.cuda.random``) holds torch's state, a seed and an offset. Each draw
re-seeds a Philox ``RandomState`` on the drawing GPU from that pair (``draw_seed``) and the
offset then advances, so a state read with ``get_state`` and loaded again repeats the draws
that followed it. The values are cuRAND's, not torch's (torch's CUDA kernels use their own
Philox streams), as torch's CUDA values differ from its CPU values.
"""
from __future__ import annotations

import numpy

_MASK = (1 << 64) - 1


def _mix(x):
    """splitmix64's finaliser: a 64-bit value whose every bit depends on every bit of ``x``."""
    x = (x + 0x9E3779B97F4A7C15) & _MASK
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _MASK
    return x ^ (x >> 31)


def draw_seed(seed, offset) -> int:
    """The cuRAND seed of the draw at ``offset`` of a generator seeded with ``seed``."""
    return _mix(seed ^ _mix(offset))


class DeviceRandom:
    """The draws the device samplers use, on one GPU, from a CuPy ``RandomState``."""

    def __init__(self, backend, index):
        self._backend = backend
        self._index = index
        self.xp = xp = backend.xp
        # NOTE: Philox re-seeds in O(1); cuRAND's default (XORWOW) sets up its states again
        # after every seed, and this generator is re-seeded before each draw.
        with backend.on(index):
            self._rs = xp.random.RandomState(
                numpy.uint64(0), method=xp.cuda.curand.CURAND_RNG_PSEUDO_PHILOX4_32_10)

    def reseed(self, seed):
        with self._on():  # (CuPy takes a seed that converts to uint64 under "safe" casting)
            self._rs.seed(numpy.uint64(seed))
        return self

    def _on(self):
        return self._backend.on(self._index)

    def uniform(self, n, dtype):
        """``n`` uniforms in [0, 1) of ``dtype`` (float32 or float64)."""
        with self._on():
            return self._rs.random_sample(n, dtype=dtype)

    def normal(self, n, dtype):
        """``n`` standard normals of ``dtype`` (float32 or float64)."""
        with self._on():
            return self._rs.standard_normal(n, dtype=dtype)

    def integers(self, low, high, n):
        """``n`` int64 integers drawn uniformly from [low, high)."""
        with self._on():
            return self._rs.randint(low, high, n, dtype=numpy.int64)

    def permutation(self, n):
        with self._on():
            return self._rs.permutation(n)

    def poisson(self, rates):
        """One int64 Poisson sample per rate (an array on this GPU)."""
        with self._on():
            return self._rs.poisson(rates, dtype=numpy.int64)

    def standard_gamma(self, alphas):
        """One float64 Gamma(alpha) sample per (positive) alpha."""
        with self._on():
            return self._rs.standard_gamma(alphas, dtype=numpy.float64)

    def binomial(self, counts, probs):
        """One int64 Binomial(count, prob) sample per pair (counts: int64, probs in (0, 1))."""
        with self._on():
            return self._rs.binomial(counts, probs, dtype=numpy.int64)
