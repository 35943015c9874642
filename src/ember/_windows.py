"""Window functions for spectral analysis: ``hann_window``, ``hamming_window``,
``blackman_window``, ``bartlett_window``, ``kaiser_window``.

Each computes as torch does, step by step in the requested dtype (so float32 windows round as
torch's do). ``periodic=True`` (the default) gives the first ``N`` points of an ``N + 1``-point
symmetric window, which is what ``stft`` wants.
"""
from __future__ import annotations

import math

import numpy as np

from . import _dtype as D
from ._creation import check_pin_memory

__all__ = ["bartlett_window", "blackman_window", "hamming_window", "hann_window",
           "kaiser_window"]


def _options_text(dt):
    return (f"TensorOptions(dtype={_C_NAMES.get(dt.name, dt.name)}, device=cpu, layout=Strided "
            "(default), requires_grad=false (default), pinned_memory=false, "
            "memory_format=(nullopt))")


_C_NAMES = {"int64": "long int", "int32": "int", "int16": "short int", "int8": "signed char",
            "uint8": "unsigned char", "bool": "bool", "complex64": "c10::complex<float>",
            "complex128": "c10::complex<double>"}


def _window(name, window_length, periodic, dtype, device, requires_grad, fill):
    """The shared checks and edge cases; ``fill(n, dt)`` makes an n-point symmetric window."""
    from ._creation import _finish
    dt = D.get_default_dtype() if dtype is None else dtype
    if not dt.is_floating_point:
        raise RuntimeError(f"{name} expects floating point dtypes, got: {_options_text(dt)}")
    if window_length < 0:
        raise RuntimeError(f"{name} requires non-negative window_length, got "
                           f"window_length={window_length}")
    if window_length <= 1:
        values = np.ones(window_length, dt.np)
    else:
        n = window_length + 1 if periodic else window_length
        values = fill(n, dt.np)[:window_length]
    return _finish(np.asarray(values, dt.np), None, requires_grad, device)


def _ramp(n, dt):
    return np.arange(n, dtype=dt)


def hamming_window(window_length, periodic=True, alpha=0.54, beta=0.46, *, dtype=None,
                   layout=None, device=None, pin_memory=False, requires_grad=False):
    """``alpha - beta * cos(2 pi k / (N - 1))``."""
    check_pin_memory(pin_memory)
    def fill(n, dt):
        return np.cos(_ramp(n, dt) * dt.type(2 * math.pi / (n - 1))) * dt.type(-beta) + \
            dt.type(alpha)
    return _window("hamming_window", window_length, periodic, dtype, device, requires_grad, fill)


def hann_window(window_length, periodic=True, *, dtype=None, layout=None, device=None,
                pin_memory=False, requires_grad=False):
    """``0.5 - 0.5 * cos(2 pi k / (N - 1))`` (torch's Hamming window with alpha = beta = 0.5)."""
    check_pin_memory(pin_memory)
    def fill(n, dt):
        return np.cos(_ramp(n, dt) * dt.type(2 * math.pi / (n - 1))) * dt.type(-0.5) + \
            dt.type(0.5)
    return _window("hann_window", window_length, periodic, dtype, device, requires_grad, fill)


def blackman_window(window_length, periodic=True, *, dtype=None, layout=None, device=None,
                    pin_memory=False, requires_grad=False):
    """``0.42 - 0.5 cos(2 pi k / (N - 1)) + 0.08 cos(4 pi k / (N - 1))``."""
    check_pin_memory(pin_memory)
    def fill(n, dt):
        w = _ramp(n, dt) * dt.type(math.pi / (n - 1))
        return np.cos(w * dt.type(4)) * dt.type(0.08) - np.cos(w * dt.type(2)) * dt.type(0.5) \
            + dt.type(0.42)
    return _window("blackman_window", window_length, periodic, dtype, device, requires_grad, fill)


def bartlett_window(window_length, periodic=True, *, dtype=None, layout=None, device=None,
                    pin_memory=False, requires_grad=False):
    """A triangle: ``1 - |2k / (N - 1) - 1|``."""
    check_pin_memory(pin_memory)
    def fill(n, dt):
        w = _ramp(n, dt) * dt.type(2.0 / (n - 1))
        half = ((n - 1) >> 1) + 1
        w[half:] = w[half:] * dt.type(-1) + dt.type(2)
        return w
    return _window("bartlett_window", window_length, periodic, dtype, device, requires_grad, fill)


def kaiser_window(window_length, periodic=True, beta=12.0, *, dtype=None, layout=None,
                  device=None, pin_memory=False, requires_grad=False):
    """``I0(beta sqrt(1 - ((k - a) / a)^2)) / I0(beta)`` with ``a = (N - 1) / 2``."""
    check_pin_memory(pin_memory)
    def fill(n, dt):
        # NOTE: torch evaluates in the dtype's "opmath" type: float32 in float32.
        alpha = (n - 1) / 2.0
        k = _ramp(n, dt)
        arg = np.maximum(0, 1 - ((k - dt.type(alpha)) / dt.type(alpha)) ** 2)
        return (_i0(dt.type(beta) * np.sqrt(arg)) / _i0(np.asarray(beta, dt))).astype(dt)
    return _window("kaiser_window", window_length, periodic, dtype, device, requires_grad, fill)


def _i0(x):
    from ._ops.bessel import i0
    return i0.kernel(np.asarray(x))
