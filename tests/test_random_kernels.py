"""torch's random kernels fed chosen raw words, ember's fast paths checked value by value.

A generator state whose position lies before its next twist yields its stored words, tempered,
as the next outputs; storing ``untemper(w)`` makes torch (and ember) draw the words ``w``. So
these tests give both libraries the same hand-picked uniforms: the edges of every range of
torch's float32 normal kernel (a zero radius, the binades and the sqrt(1/2) split of its log,
the quadrant boundaries of its sincos), and, opt-in, every one of its 2**24 inputs.
"""
import os
import threading

import numpy as np
import pytest
from oracle import torch_or_skip

import ember
from ember import _threads
from ember._random import cephes

N = 624
PER_STATE = 608  # whole blocks of 16 among the 623 words a state yields before its twist


def untemper(y):
    """The state word that mt19937's tempering turns into ``y``."""
    y = np.asarray(y, np.uint32).copy()
    y ^= y >> np.uint32(18)
    y ^= (y << np.uint32(15)) & np.uint32(0xEFC60000)
    x = y.copy()
    for _ in range(5):  # y ^= (y << 7) & mask, seven more bits known each round
        x = y ^ ((x << np.uint32(7)) & np.uint32(0x9D2C5680))
    y = x.copy()
    for _ in range(3):
        x = y ^ (x >> np.uint32(11))
    return x


def state_yielding(words):
    """torch's state bytes (uint8) whose next raw words are ``words`` (at most 623)."""
    state = np.zeros(5056, np.uint8)  # torch's CPU generator state layout
    key = np.zeros(N, np.uint64)
    key[1:1 + len(words)] = untemper(words)
    state[0:8] = np.array([5], np.uint64).view(np.uint8)  # seed
    state[8:12] = np.array([N], np.int32).view(np.uint8)  # left: N - 1 draws before a twist
    state[12:16] = np.array([1], np.int32).view(np.uint8)  # seeded
    state[16:24] = np.array([1], np.uint64).view(np.uint8)  # next: word 1
    state[24:24 + 8 * N] = key.view(np.uint8)
    return state


def normals(lib, words, mean=None, std=None, dtype="float32"):
    """lib's normals (as numpy) for the raw words, PER_STATE at a time."""
    out = []
    for start in range(0, len(words), PER_STATE):
        lib.set_rng_state(lib.tensor(state_yielding(words[start:start + PER_STATE])))
        if mean is None:
            t = lib.randn(PER_STATE, dtype=getattr(lib, dtype))
        else:
            t = lib.empty(PER_STATE, dtype=getattr(lib, dtype)).normal_(mean, std)
        out.append(t.numpy())
    return np.concatenate(out)


def blocks(first, second, seed=0):
    """Raw words for blocks of 16 whose first eight carry the 24-bit integers ``first`` and
    the last eight ``second`` (padded with random ones; random high bytes, which the kernel
    ignores)."""
    rng = np.random.default_rng(seed)
    pairs = -(-max(len(first), len(second)) // (PER_STATE // 2)) * (PER_STATE // 2)
    halves = []
    for given in (first, second):
        fill = rng.integers(0, 1 << 24, pairs - len(given))
        halves.append(np.concatenate([np.asarray(given, np.int64), fill]).reshape(-1, 8))
    words = np.concatenate(halves, axis=1).astype(np.uint32)
    return (words | (rng.integers(0, 256, words.shape, dtype=np.uint32) << 24)).ravel()


def same_bits(a, b):
    assert a.dtype == b.dtype and a.shape == b.shape
    bad = np.flatnonzero(a.view(f"u{a.itemsize}") != b.view(f"u{b.itemsize}"))
    assert bad.size == 0, f"{bad.size} differ, first at {bad[:5]}: {a[bad[:5]]} != {b[bad[:5]]}"


def edge_uniforms():
    """24-bit integers k (u = k / 2**24) at the edges of the kernel's ranges."""
    k = [0, 1, 2, 3, (1 << 24) - 1, (1 << 24) - 2]
    for e in range(1, 24):  # 1 - u crossing a power of two, and sqrt(1/2) of each binade
        for p in (1 << e, round((1 << e) * 0.7071067811865476)):
            k += [(1 << 24) - p + d for d in (-2, -1, 0, 1, 2)]
    for q in range(5):  # the quadrant boundaries of 2 * pi * u
        k += [(2 * q - 1) * (1 << 21) + d for d in range(-3, 4)]
    k += [q << 21 for q in range(8)]
    return sorted({v for v in k if 0 <= v < 1 << 24})


@pytest.mark.parametrize("mean,std", [(None, None), (0.5, 2.0), (-0.0, 1.0), (0.0, 0.0),
                                      (-3.0, 0.02), (0.0, 0.02), (-0.0, 0.5), (0.0, 1e-30)])
def test_float32_normals_at_edge_uniforms(mean, std):
    torch = torch_or_skip()
    edges = edge_uniforms()
    shuffled = np.random.default_rng(1).permutation(edges)
    words = np.concatenate([blocks(edges, shuffled), blocks(shuffled, edges, seed=2)])
    same_bits(normals(ember, words, mean, std), normals(torch, words, mean, std))


def test_half_normals_at_edge_uniforms():
    torch = torch_or_skip()
    edges = edge_uniforms()
    words = blocks(edges, edges[::-1])
    same_bits(normals(ember, words, dtype="float16"), normals(torch, words, dtype="float16"))


def test_quadrant_shortcut_matches_the_kernels_arithmetic():
    # the kernel's quadrant, (trunc(fl(fl(2 pi u) * 4/pi)) + 1) // 2, is a non-decreasing step
    # function of k (each rounding is monotonic), as is ember's (k + 2**21) >> 22: they agree
    # everywhere when they agree on both sides of each of ember's steps and at the ends
    k = np.array([0, (1 << 24) - 1] + [(2 * q - 1) * (1 << 21) + d for q in range(1, 5)
                                       for d in (-1, 0)], np.int32)
    theta = k.astype(np.float32) * (np.float32(2 * np.pi) * np.float32(2 ** -24))
    octant = (theta * np.float32(1.27323954473516)).astype(np.int32)
    assert np.array_equal((octant + 1) >> 1, (k + (1 << 21)) >> 22)


def test_fused_complex_steps_agree_with_the_portable_ones(monkeypatch):
    edges = edge_uniforms()
    words = blocks(edges, edges[::-1])
    words = np.concatenate([words, np.random.default_rng(3).integers(0, 1 << 32, 16 * 500,
                                                                      dtype=np.uint32)])

    def run(mean, std):
        stream = iter([words])
        return cephes.normals(lambda k: next(stream)[:k], len(words), mean, std)

    fast = [run(0.0, 1.0), run(0.5, 2.0)]
    monkeypatch.setattr(cephes, "fused_complex_multiply", lambda: False)
    for got, want in zip([run(0.0, 1.0), run(0.5, 2.0)], fast):
        same_bits(got, want)


def test_large_normals_are_the_same_on_any_number_of_threads():
    prior = ember.get_num_threads()
    try:
        drawn = []
        for threads in (1, 3):
            ember.set_num_threads(threads)
            ember.manual_seed(11)
            drawn.append(ember.randn(200_003).numpy())
        same_bits(*drawn)
    finally:
        ember.set_num_threads(prior)


@pytest.mark.parametrize("threads", [2, 3])
def test_large_normals_as_torch_when_threads_share_the_chunks(threads):
    # above 16 * 8192 elements the chunks go to several threads while the words are drawn;
    # the size leaves a short last chunk and a tail of 16 redrawn words
    torch = torch_or_skip()
    prior = ember.get_num_threads()
    try:
        ember.set_num_threads(threads)
        for mean, std in ((0.0, 1.0), (0.25, 0.02)):
            torch.manual_seed(21)
            ember.manual_seed(21)
            want = torch.empty(16 * 9000 + 5).normal_(mean, std).numpy()
            got = ember.empty(16 * 9000 + 5).normal_(mean, std).numpy()
            same_bits(got, want)
            same_bits(ember.rand(7).numpy(), torch.rand(7).numpy())  # the stream goes on alike
    finally:
        ember.set_num_threads(prior)


def test_threads_stop_when_drawing_fails():
    # the pool's threads wait for chunks while the words are drawn: an error in the drawing
    # must still end them (else the next large draw would find no free thread)
    prior = ember.get_num_threads()
    words = np.random.default_rng(4).integers(0, 1 << 32, 16 * 8192 * 5, dtype=np.uint32)
    calls = []

    def failing(k):
        calls.append(k)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return words[:k]

    try:
        ember.set_num_threads(3)
        with pytest.raises(KeyboardInterrupt):
            cephes.normals(failing, len(words), 0.0, 1.0)
        # every one of the pool's three threads is free again
        barrier = threading.Barrier(3, timeout=10)
        for job in [_threads.executor().submit(barrier.wait) for _ in range(3)]:
            job.result()
        drawn = [0]

        def draw(k):
            drawn[0] += k
            return words[drawn[0] - k:drawn[0]]

        threaded = cephes.normals(draw, len(words), 0.0, 1.0)
        ember.set_num_threads(1)
        drawn[0] = 0
        same_bits(threaded, cephes.normals(draw, len(words), 0.0, 1.0))
    finally:
        ember.set_num_threads(prior)


def test_num_threads_as_torch():
    torch = torch_or_skip()
    prior_t, prior_e = torch.get_num_threads(), ember.get_num_threads()
    try:
        for value in (3, np.int64(2), 0, -1, 2.5, "2", True, None, 2 ** 40):
            outcomes = []
            for lib in (torch, ember):
                try:
                    lib.set_num_threads(value)
                    outcomes.append(lib.get_num_threads())
                except Exception as error:  # noqa: BLE001 - compared below
                    outcomes.append((type(error), str(error)))
            assert outcomes[0] == outcomes[1], value
    finally:
        torch.set_num_threads(prior_t)
        ember.set_num_threads(prior_e)


@pytest.mark.skipif(not os.environ.get("EMBER_SLOW_TESTS"),
                    reason="opt-in (EMBER_SLOW_TESTS=1): 2**25 normals through 55000 states")
def test_float32_normals_for_every_uniform():
    torch = torch_or_skip()
    rng = np.random.default_rng(0)
    words = blocks(rng.permutation(1 << 24), rng.permutation(1 << 24))
    want = normals(torch, words)
    drawn = [0]

    def draw(k):  # the words in order, in as many pieces as the kernel asks for
        drawn[0] += k
        return words[drawn[0] - k:drawn[0]]

    got = cephes.normals(draw, len(words), 0.0, 1.0)
    same_bits(got, want)


def test_large_double_normals_as_torch_on_any_number_of_threads():
    # the C library's log is computed in pieces on the intra-op threads for large tensors
    torch = torch_or_skip()
    prior = ember.get_num_threads()
    try:
        torch.manual_seed(12)
        want = torch.randn(300_001, dtype=torch.float64).numpy()
        for threads in (1, 2, 3):
            ember.set_num_threads(threads)
            ember.manual_seed(12)
            same_bits(ember.randn(300_001, dtype=ember.float64).numpy(), want)
    finally:
        ember.set_num_threads(prior)


def test_table_log_gives_the_c_librarys_bits():
    # the double-double estimate decides the C library's rounding of log everywhere it is not
    # within 1/32 unit of a halfway point (and asks the C library there)
    import math

    from ember._random import libm, table_log
    if not table_log.fused_complex_multiply():
        pytest.skip("NumPy's complex multiply is not fused here: the logl route is used")
    rng = np.random.default_rng(3)
    x = np.concatenate([
        1 - rng.integers(0, 1 << 53, 40_000) * 2.0 ** -53,  # randn's 1 - u
        1 - rng.integers(1, 1 << 20, 10_000) * 2.0 ** -53,  # next to 1, where log(x) ~ x - 1
        1 + rng.integers(1, 1 << 20, 10_000) * 2.0 ** -52,
        np.exp2(rng.uniform(-1074, 1024, 10_000)),  # every binade, subnormals too
        [5e-324, 2.2250738585072014e-308, 0.5, 1.0, 2.0, 1.7976931348623157e308]])
    want = np.array([math.log(v) for v in x.tolist()])
    for size in (1, 2, 3, len(x)):  # pieces of one element are avoided (not fused)
        assert np.array_equal(libm._log_from_table(x[:size]).view(np.int64),
                              want[:size].view(np.int64))
    special = np.array([0.0, -0.0, -1.0, np.inf, -np.inf, np.nan])
    got = libm._log_from_table(special)
    assert got[0] == got[1] == -np.inf and got[3] == np.inf and np.isnan(got[[2, 4, 5]]).all()


@pytest.mark.parametrize("size", [16, 17, 31, 1000, 65_537])
def test_double_normals_as_torch_for_many_seeds(size):
    torch = torch_or_skip()
    for seed in range(6):
        torch.manual_seed(seed)
        ember.manual_seed(seed)
        same_bits(ember.randn(size, dtype=ember.float64).numpy(),
                  torch.randn(size, dtype=torch.float64).numpy())


@pytest.mark.parametrize("mean,std", [(-0.0, 1.0), (0.0, 1.0), (-0.0, 2.0), (0.0, 0.5),
                                      (-0.0, 0.0)])
def test_signed_zero_normals_as_torch(mean, std):
    # a zero radius (u2 == 0) makes the one-at-a-time normals +-0.0; fma(z, std, mean) keeps
    # or drops the sign as the IEEE sum does
    torch = torch_or_skip()
    theta_words = [int(0.4 * 2 ** 21), 0]  # u1 = 0.4: cos(2 pi u1) < 0, so z = -0.0
    words = np.array(theta_words + [0, 0] + theta_words + [0, 0], np.uint32)
    got, want = [], []
    for lib, out in ((ember, got), (torch, want)):
        for dtype in ("float64", "float32"):
            lib.set_rng_state(lib.tensor(state_yielding(words)))
            out.append(lib.empty(3, dtype=getattr(lib, dtype)).normal_(mean, std).numpy())
    for a, b in zip(got, want):
        same_bits(a, b)
