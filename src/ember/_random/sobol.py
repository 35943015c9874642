"""The integer kernels of ``ember.quasirandom.SobolEngine``, on NumPy arrays (the engine, as
torch's, lives on the CPU).

A Sobol sequence in ``dimension`` dimensions is kept as 30-bit integers: point ``g`` of
dimension ``d`` is the XOR of the direction numbers ``state[d, b]`` over the bits ``b`` of the
Gray code of ``g`` (consecutive points differ in one direction number), divided by ``2**30``.
The direction numbers come from Joe and Kuo's primitive polynomials and initial integers
(``sobol_directions.npz``, written by ``tools/sobol_directions.py``); scrambling multiplies
them by random lower-triangular bit matrices and XORs the points with a random shift, as
Owen's scrambling in torch's engine does.
"""
from __future__ import annotations

import functools
from pathlib import Path

import numpy as np

MAXBIT = 30  # bits of each coordinate
MAXDIM = 21201  # dimensions of the table
_SCRAMBLE_CHUNK = 1024  # dimensions scrambled at once (bounds the bit arrays' memory)


@functools.cache
def _table():
    """Each dimension's primitive polynomial, and its initial direction integers (as many as
    the polynomial's degree, then zeros)."""
    with np.load(Path(__file__).with_name("sobol_directions.npz")) as table:
        initial = np.concatenate([table[f"initial_{bits}"] for bits in (8, 16, 32)])
        return table["poly"].astype(np.int64), initial.T.astype(np.int64)


def initial_state(dimension: int) -> np.ndarray:
    """The ``(dimension, MAXBIT)`` int64 direction numbers, each bit ``b`` of dimension ``d``'s
    ``b``-th number at ``MAXBIT - 1 - b`` (so that the first number is one half)."""
    poly, initial = _table()
    poly = poly[:dimension]
    degree = np.array([int(p).bit_length() - 1 for p in poly])
    m = np.zeros((dimension, MAXBIT), dtype=np.int64)
    m[:, :initial.shape[1]] = initial[:dimension]
    m[0] = 1  # (dimension 0, polynomial 1: the van der Corput sequence)
    for j in range(1, MAXBIT):
        # Bratley and Fox's recurrence for the polynomial x^s + a_1 x^(s-1) + ... + 1:
        # m_j = m_(j-s) ^ 2^s m_(j-s) ^ XOR_i a_i 2^i m_(j-i), for j past the degree s
        rows = np.nonzero((degree > 0) & (degree <= j))[0]
        s, p = degree[rows], poly[rows]
        older = m[rows, j - s]
        value = older ^ (older << s)
        for i in range(1, int(s.max(initial=1))):
            coefficient = (p >> np.maximum(s - i, 0)) & 1 & (i < s)
            value ^= coefficient * (m[rows, max(j - i, 0)] << i)
        m[rows, j] = value
    return m << (MAXBIT - 1 - np.arange(MAXBIT))


def scramble(state: np.ndarray, lower: np.ndarray) -> np.ndarray:
    """The direction numbers of ``state`` multiplied (over GF(2)) by the random bit matrices
    ``lower`` (one ``(MAXBIT, MAXBIT)`` lower triangle per dimension, its diagonal made one):
    bit ``MAXBIT - 1 - p`` of a new number is the parity of row ``p`` of the matrix and the
    number's bits, read from the highest."""
    lower = lower.copy()
    lower[:, np.arange(MAXBIT), np.arange(MAXBIT)] = 1
    high_first = MAXBIT - 1 - np.arange(MAXBIT)
    out = np.empty_like(state)
    for start in range(0, len(state), _SCRAMBLE_CHUNK):
        part = slice(start, start + _SCRAMBLE_CHUNK)
        bits = ((state[part, :, None] >> high_first) & 1).astype(np.float32)  # (d, j, k)
        # (float32 sums of at most 30 products of 0 and 1 are exact)
        parity = np.matmul(bits, lower[part].transpose(0, 2, 1).astype(np.float32))
        out[part] = ((parity.astype(np.int64) & 1) << high_first).sum(-1)
    return out


def shift_of(bits: np.ndarray) -> np.ndarray:
    """The random shift of each dimension: its ``MAXBIT`` random bits, the first the lowest."""
    return (bits.astype(np.int64) << np.arange(MAXBIT)).sum(-1)


def _xor_of_directions(state, codes):
    """For each Gray code in ``codes``, the XOR of the direction numbers of its bits:
    ``(len(codes), dimension)``."""
    out = np.zeros((len(codes), len(state)), dtype=np.int64)
    for b in range(MAXBIT):
        chosen = ((codes >> b) & 1).astype(bool)
        out[chosen] ^= state[:, b]
    return out


def _gray(g):
    return g ^ (g >> 1)


def advance(quasi: np.ndarray, state: np.ndarray, counter: int, steps: int) -> np.ndarray:
    """The ``steps`` integer points after ``quasi``, whose counter is ``counter``: step ``g``
    XORs in the direction number of the lowest zero bit of ``g``, so after the steps from
    ``counter`` to ``g`` the point has moved by the directions of ``gray(counter) ^
    gray(g + 1)``."""
    counters = np.arange(counter + 1, counter + steps + 1, dtype=np.int64)
    moved = _xor_of_directions(state, _gray(counters) ^ _gray(np.int64(counter)))
    return quasi ^ moved
