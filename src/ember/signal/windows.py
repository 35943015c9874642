"""``ember.signal.windows``: torch.signal.windows's window functions.

Each is torch's composition of ember ops on a ``linspace`` ramp, so values, dtypes, errors and
(with ``requires_grad=True``) the results' graphs are torch's. ``sym=False`` gives the periodic
window (the first M points of an M + 1-point symmetric one).
"""
from __future__ import annotations

import math
from collections.abc import Iterable

import ember

__all__ = ["bartlett", "blackman", "cosine", "exponential", "gaussian", "general_cosine",
           "general_hamming", "hamming", "hann", "kaiser", "nuttall"]


def _checks(name, M, dtype, layout):
    if M < 0:
        raise ValueError(f"{name} requires non-negative window length, got M={M}")
    if layout is not None and layout is not ember.strided:
        raise ValueError(f"{name} is implemented for strided tensors only, got: {layout}")
    if dtype not in (ember.float32, ember.float64):
        raise ValueError(f"{name} expects float32 or float64 dtypes, got: {dtype}")


def _start(name, M, dtype, layout, requires_grad):
    """(dtype, early result): the checks, and the empty window of M = 0 (None otherwise)."""
    dtype = ember.get_default_dtype() if dtype is None else dtype
    _checks(name, M, dtype, layout)
    if M == 0:
        return dtype, ember.empty((0,), dtype=dtype, requires_grad=requires_grad)
    return dtype, None


def _ramp(start, end, M, dtype, requires_grad):
    return ember.linspace(start, end, M, dtype=dtype, requires_grad=requires_grad)


def exponential(M, *, center=None, tau=1.0, sym=True, dtype=None, layout=None, device=None,
                requires_grad=False):
    """``exp(-|n - center| / tau)``."""
    dtype, early = _start("exponential", M, dtype, layout, requires_grad)
    if tau <= 0:
        raise ValueError(f"Tau must be positive, got: {tau} instead.")
    if sym and center is not None:
        raise ValueError("Center must be None for symmetric windows")
    if early is not None:
        return early
    if center is None:
        center = (M if not sym and M > 1 else M - 1) / 2.0
    constant = 1 / tau
    k = _ramp(-center * constant, (-center + (M - 1)) * constant, M, dtype, requires_grad)
    return ember.exp(-ember.abs(k))


def cosine(M, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    """``sin(pi (n + 1/2) / M)``."""
    dtype, early = _start("cosine", M, dtype, layout, requires_grad)
    if early is not None:
        return early
    constant = math.pi / (M + 1 if not sym and M > 1 else M)
    k = _ramp(0.5 * constant, (0.5 + (M - 1)) * constant, M, dtype, requires_grad)
    return ember.sin(k)


def gaussian(M, *, std=1.0, sym=True, dtype=None, layout=None, device=None,
             requires_grad=False):
    """``exp(-(n - (M - 1) / 2)^2 / (2 std^2))``."""
    dtype, early = _start("gaussian", M, dtype, layout, requires_grad)
    if std <= 0:
        raise ValueError(f"Standard deviation must be positive, got: {std} instead.")
    if early is not None:
        return early
    start = -(M if not sym and M > 1 else M - 1) / 2.0
    constant = 1 / (std * math.sqrt(2))
    k = _ramp(start * constant, (start + (M - 1)) * constant, M, dtype, requires_grad)
    return ember.exp(-(k ** 2))


def kaiser(M, *, beta=12.0, sym=True, dtype=None, layout=None, device=None,
           requires_grad=False):
    """``I0(beta sqrt(1 - (2n / (M - 1) - 1)^2)) / I0(beta)``."""
    dtype, early = _start("kaiser", M, dtype, layout, requires_grad)
    if beta < 0:
        raise ValueError(f"beta must be non-negative, got: {beta} instead.")
    if early is not None:
        return early
    if M == 1:
        return ember.ones((1,), dtype=dtype, requires_grad=requires_grad)
    beta = ember.tensor(beta, dtype=dtype)
    start = -beta
    constant = 2.0 * beta / (M if not sym else M - 1)
    end = ember.minimum(beta, start + (M - 1) * constant)
    k = _ramp(start.item(), end.item(), M, dtype, requires_grad)
    return ember.i0(ember.sqrt(beta * beta - ember.pow(k, 2))) / ember.i0(beta)


def general_cosine(M, *, a, sym=True, dtype=None, layout=None, device=None,
                   requires_grad=False):
    """``sum_i (-1)^i a_i cos(2 pi i n / (M - 1))``."""
    dtype, early = _start("general_cosine", M, dtype, layout, requires_grad)
    if early is not None:
        return early
    if M == 1:
        return ember.ones((1,), dtype=dtype, requires_grad=requires_grad)
    if not isinstance(a, Iterable):
        raise TypeError("Coefficients must be a list/tuple")
    if not a:
        raise ValueError("Coefficients cannot be empty")
    constant = 2 * math.pi / (M if not sym else M - 1)
    k = _ramp(0, (M - 1) * constant, M, dtype, requires_grad)
    a_i = ember.tensor([(-1) ** i * w for i, w in enumerate(a)], dtype=dtype,
                       requires_grad=requires_grad)
    i = ember.arange(a_i.shape[0], dtype=a_i.dtype, requires_grad=a_i.requires_grad)
    return (a_i.unsqueeze(-1) * ember.cos(i.unsqueeze(-1) * k)).sum(0)


def general_hamming(M, *, alpha=0.54, sym=True, dtype=None, layout=None, device=None,
                    requires_grad=False):
    """``alpha - (1 - alpha) cos(2 pi n / (M - 1))``."""
    return general_cosine(M, a=[alpha, 1.0 - alpha], sym=sym, dtype=dtype, layout=layout,
                          requires_grad=requires_grad)


def hamming(M, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    """The Hamming window (general_hamming with alpha = 0.54)."""
    return general_hamming(M, sym=sym, dtype=dtype, layout=layout, requires_grad=requires_grad)


def hann(M, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    """The Hann window (general_hamming with alpha = 0.5)."""
    return general_hamming(M, alpha=0.5, sym=sym, dtype=dtype, layout=layout,
                           requires_grad=requires_grad)


def blackman(M, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    """The Blackman window (general_cosine with a = [0.42, 0.5, 0.08])."""
    dtype = ember.get_default_dtype() if dtype is None else dtype
    _checks("blackman", M, dtype, layout)
    return general_cosine(M, a=[0.42, 0.5, 0.08], sym=sym, dtype=dtype, layout=layout,
                          requires_grad=requires_grad)


def bartlett(M, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    """A triangle: ``1 - |2n / (M - 1) - 1|``."""
    dtype, early = _start("bartlett", M, dtype, layout, requires_grad)
    if early is not None:
        return early
    if M == 1:
        return ember.ones((1,), dtype=dtype, requires_grad=requires_grad)
    constant = 2 / (M if not sym else M - 1)
    k = _ramp(-1, -1 + (M - 1) * constant, M, dtype, requires_grad)
    return 1 - ember.abs(k)


def nuttall(M, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    """Nuttall's minimum 4-term Blackman-Harris window."""
    return general_cosine(M, a=[0.3635819, 0.4891775, 0.1365995, 0.0106411], sym=sym,
                          dtype=dtype, layout=layout, requires_grad=requires_grad)
