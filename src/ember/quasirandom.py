"""torch.quasirandom: the SobolEngine of low-discrepancy (Sobol) sequences, scrambled or not.

The points are torch's, bit for bit: the same direction numbers (Joe and Kuo's, up to 21201
dimensions), the same Gray-code order, and for a scrambled engine the same random matrices
and shift, drawn with ``randint`` from a generator seeded with ``seed`` (from the global
generator when there is no seed, as torch's). The integer kernels are in
``_random/sobol.py``.
"""
from __future__ import annotations

import numpy as np

from . import _dtype as D
from ._random import sobol as _sobol

__all__ = ["SobolEngine"]


class SobolEngine:
    r"""An engine drawing points of a (scrambled) Sobol sequence in ``[0, 1)^dimension``.

    Args:
        dimension (int): the dimension of the points, 1 to 21201.
        scramble (bool): scramble the sequence (Owen's linear matrix scrambling and a random
            digital shift). Default: ``False``.
        seed (int, optional): the seed of the scrambling's random numbers; without one they
            come from the global generator.
    """
    MAXBIT = _sobol.MAXBIT
    MAXDIM = _sobol.MAXDIM

    def __init__(self, dimension, scramble=False, seed=None):
        if dimension > self.MAXDIM or dimension < 1:
            raise ValueError("Supported range of dimensionality for SobolEngine is "
                             f"[1, {self.MAXDIM}]")
        import ember
        self.seed = seed
        self.scramble = scramble
        self.dimension = dimension
        self.sobolstate = ember.zeros(dimension, self.MAXBIT, dtype=ember.long)
        self.sobolstate.numpy()[...] = _sobol.initial_state(dimension)
        if self.scramble:
            self._scramble()
        else:
            self.shift = ember.zeros(self.dimension, dtype=ember.long)
        self.quasi = self.shift.clone()
        # (divided in the default dtype of this moment: draw converts it, so a float64 draw's
        # first point of a scrambled engine has the float32 value, as torch's)
        self._first_point = self.quasi.div(2 ** self.MAXBIT).reshape(1, -1)
        self.num_generated = 0

    def draw(self, n=1, out=None, dtype=None):
        """The next ``n`` points, ``(n, dimension)``, in ``dtype`` (default: the default
        dtype); with ``out``, written into it (resized)."""
        import ember
        dtype = D.get_default_dtype() if dtype is None else dtype
        fresh = self.num_generated == 0
        if fresh and n == 1:  # (the first point is kept: only converted, to any dtype)
            points = self._first_point.to(dtype)
        else:
            # a fresh engine's first point is kept, the kernel makes the others
            points = self._advance(n - 1 if fresh else n, dtype)
            if fresh:
                points = ember.cat((self._first_point.to(dtype), points), dim=-2)
        self.num_generated += n
        if out is None:
            return points
        out.resize_as_(points).copy_(points)
        return out

    def draw_base2(self, m, out=None, dtype=None):
        """The next ``2**m`` points; all points drawn must then number a power of 2 (the
        sequence's balance holds for those)."""
        n = 2 ** m
        total = self.num_generated + n
        if total & (total - 1):
            raise ValueError(
                "The balance properties of Sobol' points require n to be a power of 2. "
                f"{self.num_generated} points have been previously generated, then: "
                f"n={self.num_generated}+2**{m}={total}. If you still want to do this, please "
                "use 'SobolEngine.draw()' instead.")
        return self.draw(n=n, out=out, dtype=dtype)

    def reset(self):
        """Back to the first point."""
        self.quasi.copy_(self.shift)
        self.num_generated = 0
        return self

    def fast_forward(self, n):
        """Skip ``n`` points, as drawing them would."""
        steps = n - 1 if self.num_generated == 0 else n
        if steps > 0:
            moved = _sobol.advance(self.quasi.numpy(), self.sobolstate.numpy(),
                                   self._counter(), steps)
            self.quasi.numpy()[...] = moved[-1]
        self.num_generated += n
        return self

    def _counter(self):
        """The kernel's step counter: the points drawn after the kept first one."""
        return max(self.num_generated - 1, 0)

    def _advance(self, steps, dtype):
        """``steps`` points made by the kernel as ``dtype``; quasi becomes the last."""
        import ember
        if type(steps) is not int and not isinstance(steps, (bool, np.integer)):
            raise TypeError("_sobol_engine_draw(): argument 'n' (position 2) must be int, not "
                            f"{type(steps).__name__}")
        if dtype not in (D.float32, D.float64):
            raise NotImplementedError(f'"_sobol_engine_draw" not implemented for '
                                      f"'{dtype.scalar_name}'")
        if steps < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {steps}: "
                               f"[{steps}, {self.dimension}]")
        quasi = self.quasi.numpy()
        ints = _sobol.advance(quasi, self.sobolstate.numpy(), self._counter(), int(steps))
        self.quasi = ember.from_numpy(ints[-1].copy() if len(ints) else quasi.copy())
        # (the integers are cast to dtype and then scaled, as torch's kernel does)
        scale = dtype.np.type(2.0 ** -self.MAXBIT)
        return ember.from_numpy(ints.astype(dtype.np) * scale)

    def _scramble(self):
        import ember
        generator = None
        if self.seed is not None:
            generator = ember.Generator()
            generator.manual_seed(self.seed)
        bits = ember.randint(2, (self.dimension, self.MAXBIT), generator=generator)
        self.shift = ember.from_numpy(_sobol.shift_of(bits.numpy()))
        lower = ember.randint(2, (self.dimension, self.MAXBIT, self.MAXBIT),
                              generator=generator).tril()
        self.sobolstate.numpy()[...] = _sobol.scramble(self.sobolstate.numpy(), lower.numpy())

    def __repr__(self):
        parts = [f"dimension={self.dimension}"]
        if self.scramble:
            parts.append("scramble=True")
        if self.seed is not None:
            parts.append(f"seed={self.seed}")
        return f"{type(self).__name__}({', '.join(parts)})"
