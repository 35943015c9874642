"""torch's CPU engine: a 32-bit Mersenne Twister (mt19937) over NumPy's C implementation.

torch seeds its engine the way ``std::mt19937`` does (``init_genrand`` with the low 32 bits of
the seed) and draws its raw words in the same order, so NumPy's ``MT19937`` bit generator, given
that 624-word key, yields torch's raw stream at C speed. What differs is the bookkeeping: torch
keeps ``left`` (words until the next twist) and ``next`` (the index of the next word) where NumPy
keeps ``pos``; this class translates between the two so that states round-trip byte for byte.
"""
from __future__ import annotations

import numpy as np

N = 624  # words in the state
# up to this many words, ``random_raw`` (uint64 items, then cast) beats ``Generator.integers``,
# whose call costs some 15 us more; past about 10**5 words, integers' uint32 loop is faster
_FEW_WORDS = 1 << 16
_HALF = np.uint64(32)


def _seed_key(bit_generator, seed32):
    """Load the key ``init_genrand`` makes from a 32-bit seed (NumPy's C seeding if it has
    one, else the recurrence in Python)."""
    legacy = getattr(bit_generator, "_legacy_seeding", None)
    if legacy is not None:
        legacy(seed32)
        return
    key = np.empty(N, np.uint32)
    s = key[0] = seed32
    for j in range(1, N):
        s = (1812433253 * (s ^ (s >> 30)) + j) & 0xFFFFFFFF
        key[j] = s
    _load(bit_generator, key, N)


def _load(bit_generator, key, pos):
    bit_generator.state = {"bit_generator": "MT19937", "state": {"key": key, "pos": pos}}


class MT19937:
    """A seeded stream of 32-bit words, torch's ``at::mt19937``.

    NOTE: the NumPy bit generator is made, and seeded, on the first draw after a seed (importing
    numpy.random costs a tenth of ember's import time, and most seeds are set again before any
    number is drawn).
    """

    __slots__ = ("_bits", "_dirty", "_draw", "_pending", "_stale_next", "seed")

    def __init__(self, seed=5489):
        self._bits = self._draw = None
        self.reseed(seed)

    def reseed(self, seed):
        self.seed = seed
        self._dirty = True
        self._pending = None  # a (key, pos) state to load instead of seeding
        # torch's ``next`` while a twist is due: 0 right after seeding, N after N draws.
        self._stale_next = 0

    def _stream(self):
        if self._dirty:
            if self._bits is None:
                import numpy.random as npr
                self._bits = npr.MT19937()
                # Generator.integers over the whole uint32 range takes one raw word per value.
                self._draw = npr.Generator(self._bits).integers
            if self._pending is None:
                _seed_key(self._bits, self.seed & 0xFFFFFFFF)
            else:
                _load(self._bits, *self._pending)
            self._dirty = False
        return self._draw

    def words(self, n):
        """The next ``n`` raw 32-bit words (uint32)."""
        draw = self._stream()
        if n <= _FEW_WORDS:
            out = self._bits.random_raw(n).astype(np.uint32)
        else:
            out = draw(0, 1 << 32, size=n, dtype=np.uint32)
        self._stale_next = N
        return out

    def words64(self, n):
        """``n`` 64-bit values, each made of two words, the first one high (torch's random64)."""
        pairs = self.words(2 * n).view(np.uint64)
        if not np.little_endian:
            return pairs
        # read as one little-endian 64-bit item, each pair has its first word low: swap them
        high = np.left_shift(pairs, _HALF)
        np.right_shift(pairs, _HALF, out=pairs)
        return np.bitwise_or(high, pairs, out=high)

    # -- torch's state fields ------------------------------------------------------------------
    def torch_fields(self):
        """(state words, left, next) as torch's engine keeps them."""
        self._stream()
        st = self._bits.state["state"]
        key, pos = st["key"], st["pos"]
        nxt = self._stale_next if pos == N else pos
        return np.asarray(key, np.uint32), N + 1 - pos, nxt

    def load_torch_fields(self, seed, key, left, nxt):
        """Take torch's (seed, state words, left, next).

        NOTE: torch's states always have ``next == N + 1 - left`` once a twist has happened;
        ``left`` (when the next twist falls) is what the future stream depends on.
        """
        self.reseed(seed)
        pos = N + 1 - left
        self._pending = (np.array(key, np.uint32), pos)
        self._stale_next = nxt if pos == N else 0

    def copy_from(self, other):
        """Take ``other``'s seed and position (torch's ``clone_state``)."""
        key, left, nxt = other.torch_fields()
        self.load_torch_fields(other.seed, key, left, nxt)
