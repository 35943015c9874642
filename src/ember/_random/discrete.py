"""torch's CPU permutations and discrete samplers: randperm, multinomial, poisson."""
from __future__ import annotations

import ctypes
import ctypes.util
import functools
import math

import numpy as np

from .exact_math import f64
from .order import lay_out
from .rejection import _serial
from .sampling import doubles, exponential

# randperm switches algorithm at 2**32 // 20 (where ``word % n`` would skew visibly)
SMALL_PERMUTATION = 0xFFFFFFFF // 20


# up to this n, the swaps themselves in a Python loop (about 0.15 us each) cost less than the
# loop-free reconstruction's fixed cost (about 100 us)
LOOPED_PERMUTATION = 512


def randperm(gen, n):
    """torch's permutation of range(n) (int64)."""
    if n < SMALL_PERMUTATION:
        words = gen.random(n - 1) if n > 1 else np.zeros(0, np.uint32)
        return _swap_loop(words, n) if n <= LOOPED_PERMUTATION else _fisher_yates(words, n)
    return _inside_out(gen.random64(n), n)


def _swap_loop(words, n):
    """torch's loop itself: ``for i < n - 1: swap(r[i], r[i + words[i] % (n - i)])``."""
    r = list(range(n))
    for i, w in enumerate(words.tolist()):
        z = i + w % (n - i)
        r[i], r[z] = r[z], r[i]
    return np.array(r, np.int64)


def _chase(ptr):
    """Follow ``ptr`` (``ptr[i] < i``, -1 ends a chain) to each chain's last node: pointer
    jumping, each round halving the distance left, on the nodes not yet settled."""
    root = ptr.copy()
    busy = np.flatnonzero(ptr >= 0)
    while busy.size:
        up = np.take(root, busy)
        further = np.take(root, up)
        going = further >= 0
        busy = busy[going]
        root[busy] = further[going]
    return root


def _by_key(keys):
    """The indices of ``keys`` (in range(n)) grouped by key, in index order within a group:
    (key, index, before, same) for each position of that order, ``before`` being the index of
    the previous occurrence of the same key (or -1), ``same`` whether each position's key is
    the one before's. One sort of (key, index) pairs; int32 keys give int32 results."""
    n = len(keys)
    if keys.dtype == np.int32:
        # key in the high half, index in the low half: the sorted halves are read back as
        # the int32 items of the sorted 64-bit ones
        order = keys.astype(np.int64)
        np.left_shift(order, 32, out=order)
        np.bitwise_or(order, np.arange(n, dtype=np.int64), out=order)
        order.sort()
        pairs = order.view(np.int32).reshape(n, 2)
        low, high = (0, 1) if np.little_endian else (1, 0)
        key, index = pairs[:, high].copy(), pairs[:, low].copy()
    else:
        bits = max(1, (n - 1).bit_length())
        order = np.sort((keys << bits) | np.arange(n, dtype=np.int64))
        key, index = order >> bits, order & ((1 << bits) - 1)
    same = key[1:] == key[:-1]
    before = np.empty(n, key.dtype)
    before[:1] = -1
    np.copyto(before[1:], np.where(same, index[:-1], -1))
    return key, index, before, same


def _group_ends(same):
    """The positions of ``_by_key``'s order where a group ends."""
    return np.flatnonzero(np.append(~same, True))


def _groups(keys):
    """For keys in range(n): for each i, the largest i' < i with keys[i'] == keys[i] (or -1);
    and for each value v, the largest i with keys[i] == v (or -1)."""
    key, index, before, same = _by_key(keys)
    prev = np.empty(len(keys), np.int64)
    prev[index] = before
    ends = _group_ends(same)
    last = np.full(len(keys), -1, np.int64)
    last[key[ends]] = index[ends]
    return prev, last


def _fisher_yates(words, n):
    """The result of ``for i < n - 1: swap(r[i], r[i + words[i] % (n - i)])`` without the loop.

    Step i fixes position i for good, to what position ``j[i]`` held just before it. A
    position t > i is only ever changed by earlier steps k with ``j[k] == t``, each leaving there
    what position k held just before step k; so what a position holds before a step is found by
    following such steps back to an untouched position. (int32 throughout: n < 2**31.)
    """
    idx = np.arange(n, dtype=np.int32)
    j = idx.copy()
    draws = words % np.arange(n, 1, -1, dtype=np.uint32)  # below n - i: the same as int32
    np.add(j[:n - 1], draws.view(np.int32), out=j[:n - 1])
    # the steps grouped by the position they draw; ``before``: the previous step that drew it
    target, step, before, same = _by_key(j)
    # into[t]: the last step before t that wrote position t (t's own step, if it drew t, is
    # the last of its group)
    ends = _group_ends(same)
    into = np.full(n, -1, np.int32)
    last, drawn = step[ends], target[ends]
    into[drawn] = np.where(last == drawn, before[ends], last)
    # held[t]: the value position t holds just before step t
    held = _chase(into)
    np.copyto(held, idx, where=held < 0)
    out = np.empty(n, np.int32)
    out[step] = np.where(before < 0, target, np.take(held, before))
    return out.astype(np.int64)


def _inside_out(words, n):
    """torch's permutation for huge n: ``for i < n: z = words[i] % (i + 1); r[i] = r[z];
    r[z] = i`` without the loop (the same following-back idea as ``_fisher_yates``)."""
    idx = np.arange(n, dtype=np.int64)
    z = (words % (idx + 1).astype(np.uint64)).astype(np.int64)
    prev, last = _groups(z)
    # after[q]: what position q holds right after step q: q itself, or what z[q] held then,
    # which is the last step i' in (z[q], q) that wrote z[q], or else after[z[q]]
    direct = np.where(z == idx, idx, np.where(prev > z, prev, -1))
    link = np.where(direct >= 0, -1, z)
    after = direct[np.where(link < 0, idx, _chase(link))]
    # a position is last written by the last step that drew it, or else by its own step
    return np.where(last > idx, last, after)


# -- multinomial --------------------------------------------------------------------------------
def multinomial(gen, probs, num_samples, replacement):
    """torch's multinomial of a 1-D or 2-D array (int64 indices, shape (rows..., num_samples))."""
    rows = probs.reshape(-1, probs.shape[-1])
    if not replacement or num_samples == 1:
        # p / q with q ~ Exp(1) is ranked like p's Gumbel-perturbed log: argmax or top k; q is
        # drawn into a tensor laid out like p (torch's empty_like)
        q = lay_out(exponential(gen, probs.size, probs.dtype, 1.0), probs)
        with np.errstate(divide="ignore", invalid="ignore"):
            keys = rows / q.reshape(rows.shape)
        if num_samples == 1:
            drawn = np.argmax(keys, axis=-1)[:, None]
        else:
            drawn = np.argsort(-keys, axis=-1, kind="stable")[:, :num_samples]
    else:
        drawn = _with_replacement(gen, rows, num_samples)
    return drawn.reshape(probs.shape[:-1] + (num_samples,))


def _with_replacement(gen, probs, num_samples):
    """Binary search of uniform doubles in each row's normalised running sum (the sum kept in
    the row's dtype, float32 for float16)."""
    acc = f64 if probs.dtype == f64 else np.float32
    # each row draws its num_samples doubles in turn: one draw of them all, row after row
    u = doubles(gen, probs.shape[0] * num_samples).reshape(-1, num_samples)
    cum = np.cumsum(probs.astype(acc), axis=1, dtype=acc)  # each row summed in order
    cum /= cum[:, -1:]
    cum[:, -1] = 1
    cum = cum.astype(f64, copy=False)
    out = np.empty((probs.shape[0], num_samples), np.int64)
    for i in range(len(out)):
        out[i] = np.searchsorted(cum[i], u[i], side="left")
    return out


# -- poisson -------------------------------------------------------------------------------------
@functools.cache
def _lgamma():
    """The C library's lgamma (torch calls it; Python's math.lgamma is CPython's own)."""
    name = ctypes.util.find_library("m")
    try:
        fn = ctypes.CDLL(name).lgamma
    except (OSError, AttributeError, TypeError):
        return math.lgamma
    fn.restype, fn.argtypes = ctypes.c_double, [ctypes.c_double]
    return fn


def poisson(gen, rates):
    """One sample per rate (doubles): Hoermann's transformed rejection from 10 on, products
    of uniforms below (torch's ``sample_poisson``), element after element, the uniforms taken
    from a block drawn ahead."""
    rates = rates.tolist()
    # uniforms per rate, about: rate + 1 below 10, two or three from 10 on
    per_rate = 3 + int(max((r for r in rates if 0 <= r < 10), default=0.0))
    return np.array(_serial(rates, per_rate, gen, _poisson_one), f64)


def _poisson_one(draws, lam):
    if lam >= 10:
        return _poisson_rejection(draws, lam)
    if lam == 0:
        return 0
    enlam = math.exp(-lam)
    count, prod = 0, 1.0
    while True:
        prod *= draws.uniform()
        if prod <= enlam:
            return count
        count += 1


def _poisson_rejection(draws, lam):
    slam, loglam = math.sqrt(lam), math.log(lam)
    b = 0.931 + 2.53 * slam
    a = -0.059 + 0.02483 * b
    invalpha = 1.1239 + 1.1328 / (b - 3.4)
    vr = 0.9277 - 3.6224 / (b - 2)
    lgamma = _lgamma()
    while True:
        u, v = draws.uniform(), draws.uniform()
        u -= 0.5
        us = 0.5 - abs(u)
        k = math.floor((2 * a / us + b) * u + lam + 0.43)
        if us >= 0.07 and v <= vr:
            return k
        if k < 0 or (us < 0.013 and v > us):
            continue
        if (math.log(v) + math.log(invalpha) - math.log(a / (us * us) + b)
                <= -lam + k * loglam - lgamma(k + 1.0)):
            return k
