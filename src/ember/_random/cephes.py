"""float32 Box-Muller as torch's AVX2 kernel computes it, for tensors of 16 elements or more.

torch turns each block of 16 uniforms into 16 normals with vector versions of Cephes' float32
``log`` and ``sincos`` (the polynomials of Julien Pommier's ``avx_mathfun``), compiled with
fused multiply-adds. Their results differ from accurate float32 functions in the last bit for a
few percent of inputs, so bit-identical normals need the same polynomials, evaluated step by step
with float32 rounding and single-rounding fused steps.

How that is made fast on NumPy:

* A fused step ``fl(y * x + c)`` is one complex64 multiply. NumPy's SIMD complex multiply
  computes the real part as ``fma(a.re, b.re, -(a.im * b.im))``; with ``b.im == 1`` and a
  constant ``-c`` in ``a.im`` the product ``a.im * b.im`` is exact, so the real part is the fused
  step, rounded once. ``fused_complex_multiply()`` checks this on first use; where it does not
  hold, each step is computed with doubles and a rational fallback (``exact_math.fma32``).
* Scaling by a power of two commutes with rounding, so the factors in torch's formulas
  (``-2 * log``, ``x * x / 2``, ``2 * pi * u``) are folded into the constants: the log runs on
  ``X = -x / 2`` with scaled polynomial coefficients and yields ``radius / 2``; the rotation to
  the right octant is a complex multiply by ``2 * i**-q``.
* Inputs are the raw words, not float uniforms: ``u = k / 2**24`` for the 24-bit integer ``k``,
  so ``1 - u`` and ``2 * pi * u`` come from ``k`` in one step each.
* The octant reduction ``theta - j * pi / 4`` in three Cody-Waite pieces: the first two pieces'
  products with ``j`` are exact in float32, so those fused steps are plain float32 sums, and the
  third is one fused step; the quadrant ``j / 2`` is ``(k + 2**21) >> 22``.
* Whole-item operations where NumPy's strided ones are slow: a Horner step's constant goes into
  the imaginary parts as two bit operations on the 8-byte items rather than a strided fill.

Every one of the 2**24 inputs of each half of a block gives torch's bits (checked against torch
by ``tests/test_random_kernels.py``, the full sweep opt-in).

The work is split in chunks that stay in cache, spread over ``ember.get_num_threads()`` threads
(NumPy releases the GIL inside each operation) while the calling thread draws the next words.
"""
from __future__ import annotations

import functools
import queue
import threading

import numpy as np

from .. import _threads
from .exact_math import complex_multiply_is_fused, f32, fma32

_MASK24 = 0xFFFFFF
# Cephes' single-precision constants (as torch's kernel has them)
_LOG_POLY = [f32(c) for c in (
    7.0376836292e-2, -1.1514610310e-1, 1.1676998740e-1, -1.2420140846e-1, 1.4249322787e-1,
    -1.6668057665e-1, 2.0000714765e-1, -2.4999993993e-1, 3.3333331174e-1)]
_LOG_Q1, _LOG_Q2 = f32(-2.12194440e-4), f32(0.693359375)
_SQRTHF_BITS = int(f32(0.707106781186547524).view(np.int32))
_DP = (f32(-0.78515625), f32(-2.4187564849853515625e-4), f32(-3.77489497744594108e-8))
_COS_POLY = [f32(c) for c in (2.443315711809948e-5, -1.388731625493765e-3, 4.166664568298827e-2)]
_SIN_POLY = [f32(c) for c in (-1.9515295891e-4, 8.3321608736e-3, -1.6666654611e-1)]
_TWO_PI = f32(2.0 * np.pi)

# -- the log, on X = -x / 2 ----------------------------------------------------------------------
# Horner's y_k = y_(k-1) * x + p_k carried as H_k = mu_k * y_k with mu_k = 4 * (-2)**(8 - k):
# H_k = H_(k-1) * X + mu_k * p_k, and H_8 = 4 * y_8.
_LOG_H0 = f32(1024) * _LOG_POLY[0]
_LOG_STEPS = [f32(4 * (-2) ** (8 - k)) * _LOG_POLY[k] for k in range(1, 9)]
_HALF_Q2 = -_LOG_Q2 / f32(2)  # e * this is exact
# u = k / 2**24 has the bits of float(2**24 - k) less 24 in the exponent field
_LOG_OFFSET = np.int32(_SQRTHF_BITS + (24 << 23))
_HALF_V_BITS = np.int32(_SQRTHF_BITS - (1 << 23))
# -- the angle -------------------------------------------------------------------------------------
_THETA_STEP = _TWO_PI * f32(2.0 ** -24)  # theta = fl(k * this), as fl(2 * pi * u)
# the reduction x = theta + j * DP1 + j * DP2 + j * DP3 for j = 2 * q: j * DP1 and j * DP2 are
# exact in float32, so the kernel's three fused steps are two float32 sums and one fused step
_REDUCE = [f32(2) * d for d in _DP]
# 2 * i**-q for the quadrant q: (S + iC) times it is 2 * (sin + i cos) of the whole angle
_ROTATE = np.array([2, -2j, -2, 2j, 2], np.complex64)
# the first steps of the cos and sin polynomials, as constants (c0 - i c1) of fused steps
_COS_FIRST = np.complex64(complex(_COS_POLY[0], -_COS_POLY[1]))
_SIN_FIRST = np.complex64(complex(_SIN_POLY[0], -_SIN_POLY[1]))
_SECOND = np.array([[-_COS_POLY[2]], [-_SIN_POLY[2]]], f32)


def _operand(value, dtype=f32):
    # NOTE: NumPy dispatches a 0-d array operand faster than a NumPy scalar; per-call costs
    # matter here, as a chunk makes some seventy calls
    return np.array(value, dtype)


def _high_bits(value):
    """The 8-byte item whose high half holds the float32 ``value`` (an imaginary part)."""
    return _operand(int(f32(value).view(np.uint32)) << 32, np.uint64)


_C = {  # the operands of the kernel's steps, made once
    "two24": _operand(1 << 24), "half": _operand(0.5), "one": _operand(1),
    "log_offset": _operand(_LOG_OFFSET, np.int32), "mantissa": _operand(0x7FFFFF, np.int32),
    "half_v_bits": _operand(_HALF_V_BITS, np.int32), "shift23": _operand(23, np.int32),
    "mask24": _operand(_MASK24, np.int32), "quarter_turn": _operand(1 << 21, np.int32),
    "shift22": _operand(22, np.int32), "low_half": _operand(0xFFFFFFFF, np.uint64),
    "log_first": np.complex64(complex(_LOG_H0, -_LOG_STEPS[0])),
    "log_steps": [_high_bits(-c) for c in _LOG_STEPS[1:]],
    "half_q1": _operand(_LOG_Q1 / f32(2)), "half_q2": _operand(_HALF_Q2),
    "theta_step": _operand(_THETA_STEP), "reduce": [_operand(d) for d in _REDUCE[:2]],
    "reduce_last": np.complex64(complex(_REDUCE[2], -1)), "one_bits": _high_bits(1),
    "zero": _operand(0),
}

# the smallest nonzero |normal| before the scaling is above 2**-38 (radius / 2 >= 2**-12.5, the
# rotation's smallest nonzero part 2**-25.3 over all 2**24 angles): times a std of at least
# this, no product underflows
_NO_UNDERFLOW = f32(2.0 ** -90)

_CHUNK_ROWS = 2048  # blocks of 16 per chunk on one thread: 16384 pairs, whose buffers stay in
# cache (and are kept by each thread for its next call)
# blocks of 16 per chunk on several threads: each NumPy call then holds the GIL for a small
# part of its time (with 2048 rows, two threads were hardly faster than one, four slower); one
# thread is about as fast on chunks of this size as on the smaller ones
_THREADED_ROWS = 8192


@functools.cache
def fused_complex_multiply() -> bool:
    """Whether NumPy's complex64 multiply rounds its real part once, ``fma(a.re, b.re,
    -(a.im * b.im))``, for arrays and for a scalar second operand (as its SIMD loops do on
    x86 with FMA), checked on values where a separate rounding of the product shows."""
    sizes = (8, 13, 64, 1000)
    if not complex_multiply_is_fused(np.complex64, sizes):
        return False
    rng = np.random.default_rng(12345)
    for size in sizes:
        y, c = (rng.standard_normal(size).astype(f32) for _ in range(2))
        z = np.empty(size, np.complex64)
        z.real, z.imag = y, 1
        s = np.complex64(complex(c[0], -1))  # (y + i) * (c0 - i): re = fma(y, c0, 1)
        if not np.array_equal((z * s).real, fma32(y, c[0], f32(1))):
            return False
    return True


def _portable_fused(z, w, out):
    """out.real = fl(z.real * w.real - z.imag * w.imag), one rounding (``w`` may be a scalar;
    ``z.imag * w.imag`` is exact wherever this is called), for NumPy builds whose complex
    multiply rounds more than once. ``out.imag`` is left undefined."""
    zr, zi = z.real, z.imag
    wr, wi = (w.real, w.imag) if np.ndim(w) else (np.full(z.shape, w.real, f32), w.imag)
    out.real = fma32(zr, wr, -(zi * wi))


class _Buffers:
    """Working arrays for one chunk of ``m`` pairs (one set per thread), and the views of them
    the steps use (made once: each view costs about as much as a small operation)."""

    def __init__(self, m):
        self.m = m
        # out.real = fl(z.real * w.real - z.imag * w.imag), one rounding, called as
        # fused(z, w, out) (``z.imag * w.imag`` is exact wherever it is called)
        self.fused = np.multiply if fused_complex_multiply() else _portable_fused
        self.k = np.empty((2, m), np.int32)  # the 24-bit integers of the two halves
        self.e = np.empty(m, np.int32)
        self.q = np.empty(m, np.int32)
        self.f1, self.f2 = np.empty(m, f32), np.empty(m, f32)
        self.normals = np.empty((2, m), f32)
        # complex arrays whose imaginary parts stay 1 (only their real parts are written)
        self.w1, self.w2 = (np.full(m, 1j, np.complex64) for _ in range(2))
        # (the angle's x, once the log is done with its z / 4; its imaginary parts are set to 1
        # again after each use)
        self.w3 = self.w2
        self.trig, self.rotate = np.empty(m, np.complex64), np.empty(m, np.complex64)
        self.reduce = self.rotate  # (the reduction's operand, done with before the rotation)
        self.z = np.empty((2, m), np.complex64)  # two Horner chains side by side
        re, im = self.re, self.im
        self.f1_bits = self.f1.view(np.int32)
        self.re_w1, self.re_w2, self.re_w3, self.im_w3 = (
            re(self.w1), re(self.w2), re(self.w3), im(self.w3))
        self.re_reduce, self.im_reduce = re(self.reduce), im(self.reduce)
        self.re_z, self.im_z = re(self.z), im(self.z)
        self.re_log, self.im_log = self.re_z[0], self.im_z[0]
        self.re_cos, self.im_cos, self.im_sin = self.re_z[0], self.im_z[0], self.im_z[1]
        self.re_trig, self.im_trig = re(self.trig), im(self.trig)
        self.log_bits = self.z[0].view(np.uint64)
        self.k_halves = self.k.view("V32")

    @staticmethod
    def re(c):
        return c.view(f32)[..., 0::2]

    @staticmethod
    def im(c):
        return c.view(f32)[..., 1::2]


def _halves(blocks):
    """(rows, 16) of 4-byte items as (2, rows) items of 32 bytes: the first and the second
    eight of each block (one copy moves them as whole runs)."""
    return blocks.view("V32").T


def _half_radius(b, ka, out):
    """radius / 2 = sqrt(-log(1 - u) / 2) for u = ka / 2**24, the log as Cephes' logf."""
    c = _C
    j = b.f1  # 1 - u = j / 2**24
    np.copyto(j, ka, casting="unsafe")  # exact
    np.subtract(c["two24"], j, out=j)  # exact
    # 1 - u = 2**e * v with v in [sqrt(1/2), sqrt(2)): bit arithmetic on the float's fields
    t = b.f1_bits
    np.subtract(t, c["log_offset"], out=t)
    np.right_shift(t, c["shift23"], out=b.e)
    np.bitwise_and(t, c["mantissa"], out=t)
    np.add(t, c["half_v_bits"], out=t)  # the bits of v / 2
    x, x2 = b.re_w1, b.re_w2
    np.subtract(c["half"], j, out=x)  # X = -x / 2 = 1/2 - v/2, exact
    np.multiply(x, x, out=x2)  # z / 4
    # H_8, then fl(H_8 * X) = -2 fl(y_8 * x)
    z, bits = b.z[0], b.log_bits
    b.fused(b.w1, c["log_first"], z)
    for constant in c["log_steps"]:
        # the step's constant into the imaginary parts: two operations on whole 8-byte items
        # cost less than a fill through the strided view
        np.bitwise_and(bits, c["low_half"], out=bits)
        np.bitwise_or(bits, constant, out=bits)
        b.fused(z, b.w1, z)
    np.multiply(b.re_log, x, out=b.re_log)  # the bare product fl(H_8 * X)
    # y = fl(fl(y_8 x) * z + fl(e * Q1)), here -y / 2
    e = b.f1
    np.copyto(e, b.e, casting="unsafe")
    np.multiply(e, c["half_q1"], out=b.im_log)
    b.fused(z, b.w2, z)
    # ((y - z / 2) + x) + e * Q2, each sum rounded, here times -1/2
    np.add(b.re_log, x2, out=out)
    np.add(out, x, out=out)
    np.multiply(e, c["half_q2"], out=e)
    np.add(out, e, out=out)
    np.sqrt(out, out=out)


def _rotation(b, kb):
    """2 * (sin + i cos) of theta = fl(2 * pi * kb / 2**24), as Cephes' sincosf, into
    ``b.trig`` (complex64)."""
    c, out = _C, b.trig
    theta = b.f1
    np.copyto(theta, kb, casting="unsafe")  # exact
    np.multiply(theta, c["theta_step"], out=theta)
    # the quadrant q = (trunc(fl(theta * 4/pi)) + 1) // 2, a monotonic step function of kb
    # with its steps where (kb + 2**21) >> 22 has them
    q = b.q
    np.add(kb, c["quarter_turn"], out=q)
    np.right_shift(q, c["shift22"], out=q)
    # x = fl(fl(fl(theta + j DP1) + j DP2) + j DP3), the last step fused
    j, s = b.f2, b.normals[1]  # (the normals are written after this)
    np.copyto(j, q, casting="unsafe")
    np.multiply(j, c["reduce"][0], out=s)
    np.add(s, theta, out=s)
    np.copyto(b.re_reduce, j)
    np.multiply(j, c["reduce"][1], out=j)
    np.add(s, j, out=b.im_reduce)
    b.fused(b.reduce, c["reduce_last"], b.w3)  # fl(q * 2 DP3 + s)
    x = b.re_w3
    w3_bits = b.w3.view(np.uint64)
    np.bitwise_and(w3_bits, c["low_half"], out=w3_bits)
    np.bitwise_or(w3_bits, c["one_bits"], out=w3_bits)
    z = b.re_w1
    np.multiply(x, x, out=z)
    # cos: ((c0 z + c1) z + c2) z z - z / 2 + 1; sin: ((s0 z + s1) z + s2) z x + x
    cos, sin = b.z
    b.fused(b.w1, _COS_FIRST, cos)
    b.fused(b.w1, _SIN_FIRST, sin)
    np.copyto(b.im_z, _SECOND)
    b.fused(b.z, b.w1, b.z)
    np.multiply(b.re_z, z, out=b.re_z)
    np.multiply(z, c["half"], out=b.im_cos)
    b.fused(cos, b.w1, cos)
    np.negative(x, out=b.im_sin)
    b.fused(sin, b.w3, out)
    np.add(b.re_cos, c["one"], out=b.im_trig)
    # the octant: a multiply by 2 * i**-q turns (S + iC) into 2 (sin + i cos), exactly
    np.take(_ROTATE, q, out=b.rotate, mode="clip")
    np.multiply(out, b.rotate, out=out)


def _chunk(b, words, mean, std, out):
    """torch's normals for whole blocks: raw words (rows, 16) -> ``out`` (rows, 16), with the
    working arrays ``b`` (made for ``rows * 8`` pairs)."""
    rows = words.shape[0]
    np.copyto(b.k_halves, _halves(words))
    np.bitwise_and(b.k, _C["mask24"], out=b.k)
    ka, kb = b.k
    n1, n2 = b.normals
    _half_radius(b, ka, n1)  # radius / 2
    _rotation(b, kb)
    if mean == 0 and std == 1:  # fma(n, 1, 0) == n but for the sign of zeros (below)
        np.multiply(n1, b.re_trig, out=n2)
        np.multiply(n1, b.im_trig, out=n1)
    elif mean == 0 and (std == 0 or std >= _NO_UNDERFLOW):
        # fma(n, std, 0) rounds n * std once, as the product does (it cannot fall below the
        # subnormals there); a +0.0 mean then turns -0.0 into 0.0, as the sum does
        np.multiply(n1, b.re_trig, out=n2)
        np.multiply(n1, b.im_trig, out=n1)
        np.multiply(b.normals, std, out=b.normals)
        if not np.signbit(mean):
            np.add(b.normals, _C["zero"], out=b.normals)
    else:  # the normals go straight into the fused step's operand: fma(n, std, mean)
        np.multiply(n1, b.re_trig, out=b.re_z[1])
        np.multiply(n1, b.im_trig, out=b.re_z[0])
        bits = b.z.view(np.uint64)
        np.bitwise_and(bits, _C["low_half"], out=bits)
        np.bitwise_or(bits, _high_bits(-mean), out=bits)
        b.fused(b.z, np.complex64(complex(std, 1)), b.z)
        np.copyto(b.normals, b.re_z)
    np.copyto(_halves(out), b.normals.view("V32"))
    if not ka.all():  # u == 0: torch's radius is -0.0 (sqrt(-2 * log(1)) = sqrt(-0.0))
        _zero_radius(ka.reshape(rows, 8) == 0, b, b.trig, mean, std, out)


def _zero_radius(where, b, trig, mean, std, out):
    """Rewrite the normals of the pairs whose radius is -0.0 (their sign comes from it)."""
    blocks = trig.view(f32).reshape(-1, 8, 2)
    cos, sin = blocks[:, :, 1][where], blocks[:, :, 0][where]
    zero = f32(-0.0)
    out[:, :8][where] = fma32(zero * cos, std, mean)
    out[:, 8:][where] = fma32(zero * sin, std, mean)


# -- threads ---------------------------------------------------------------------------------------
_local = threading.local()


_KEPT_SIZES = 8  # chunk sizes whose working arrays each thread keeps (a model's layers draw
# tensors of a few sizes in turn; making the arrays costs as much as a small draw)


def _buffers(m):
    """Working arrays for chunks of ``m`` pairs: the calling thread's own, kept for its next
    calls (for its last few sizes), up to the size of a one-thread chunk (larger ones are made
    for one call)."""
    if m > _CHUNK_ROWS * 8:
        return _Buffers(m)
    kept = getattr(_local, "buffers", None)
    if kept is None:
        kept = _local.buffers = {}
    b = kept.pop(m, None)
    if b is None or (b.fused is np.multiply) != fused_complex_multiply():
        b = _Buffers(m)
        if len(kept) >= _KEPT_SIZES:
            del kept[next(iter(kept))]  # the least recently used
    kept[m] = b
    return b


def _work_through(chunks, mean, std):
    """Make the normals of the (words, out) pairs taken from the queue ``chunks`` until it
    yields None."""
    made = {}  # this call's working arrays, by chunk size
    while (item := chunks.get()) is not None:
        words, out = item
        m = len(words) * 8
        b = made[m] if m in made else made.setdefault(m, _buffers(m))
        _chunk(b, words, mean, std, out)


def normals(draw, count, mean, std, out=None):
    """torch's float32 normals for the next ``count`` raw words (a multiple of 16), drawn with
    ``draw(k)`` (the next ``k`` words, in order); written into ``out`` when given (a contiguous
    float32 array of ``count`` elements), else into a new array.

    On ``n = get_num_threads()`` threads: ``n - 1`` of the pool's threads work through the
    chunks while the calling thread draws their words, then it joins them, so that ``n``
    threads are busy throughout (not ``n + 1`` while the words are drawn)."""
    mean, std = f32(mean), f32(std)
    out = np.empty((count // 16, 16), f32) if out is None else out.reshape(-1, 16)
    workers = _threads.get_num_threads()
    rows = _THREADED_ROWS
    if workers == 1 or count <= 16 * rows:
        rows = _CHUNK_ROWS
        words = draw(count).reshape(-1, 16)
        for start in range(0, len(words), rows):
            part = words[start:start + rows]
            _chunk(_buffers(len(part) * 8), part, mean, std, out[start:start + rows])
        return out.ravel()
    chunks = queue.SimpleQueue()
    lanes = [_threads.executor().submit(_work_through, chunks, mean, std)
             for _ in range(workers - 1)]
    try:
        for start in range(0, len(out), rows):
            words = draw(16 * min(rows, len(out) - start)).reshape(-1, 16)
            chunks.put((words, out[start:start + rows]))
    finally:  # an end for each lane and for this thread (the lanes stop also after an error)
        for _ in range(workers):
            chunks.put(None)
    _work_through(chunks, mean, std)
    for lane in lanes:
        lane.result()
    return out.ravel()
