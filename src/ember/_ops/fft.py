"""The discrete Fourier transforms behind ``ember.fft`` and ``stft``: torch's three primitives.

``_fft_c2c`` (complex to complex, either direction), ``_fft_r2c`` (real input, forward, the
full or the one-sided half spectrum) and ``_fft_c2r`` (one-sided Hermitian half to a real
signal, inverse direction) run on the array module of their input (``xp.fft``). Every public
transform in ``ember.fft`` is a composition of these with padding, slicing and conjugation, as
in torch, so graphs carry torch's node names (``FftR2CBackward0``, ...).

``normalization`` is torch's: 0 leaves the sum unscaled, 1 divides it by sqrt(n), 2 by n
(n: the product of the transformed sizes), whatever the direction.

Gradients are torch's. The transforms are linear, so each backward is the adjoint transform:
the inverse-direction c2c for c2c; for r2c the adjoint of "full spectrum, then keep the first
half" (zero-pad the gradient back to full length, inverse c2c, real part); for c2r an r2c of
the gradient whose bins that stand for two (a bin and its mirror image) count twice.
"""
from __future__ import annotations

__all__: list[str] = []

from .. import _dtype as D
from .._backend import get_xp
from .._tensor import Tensor, _wrap
from .registry import NONE, op

# torch's normalization codes -> NumPy's norm= for a forward / an inverse transform
_FORWARD_NORM = ("backward", "ortho", "forward")
_INVERSE_NORM = ("forward", "ortho", "backward")


@op("_fft_c2c", node="FftC2CBackward0", promote=NONE, complex_grad=True)
def fft_c2c(self, dim, normalization, forward):
    xp = get_xp(self)
    if forward:
        return xp.fft.fftn(self, axes=dim, norm=_FORWARD_NORM[normalization])
    return xp.fft.ifftn(self, axes=dim, norm=_INVERSE_NORM[normalization])


@fft_c2c.grad("self")
def _(grad, dim, normalization, forward):
    return fft_c2c(grad, dim, normalization, not forward)


@fft_c2c.jvp("self")
def _(self_t, dim, normalization, forward):
    return fft_c2c(self_t, dim, normalization, forward)


@op("_fft_r2c", node="FftR2CBackward0", promote=NONE, complex_grad=True)
def fft_r2c(self, dim, normalization, onesided):
    if self.dtype.kind != "f":
        raise RuntimeError("Only supports floating-point dtypes, but found: "
                           f"{D._BY_NP[self.dtype].scalar_name}")
    xp = get_xp(self)
    norm = _FORWARD_NORM[normalization]
    if onesided:
        return xp.fft.rfftn(self, axes=dim, norm=norm)
    return xp.fft.fftn(self, axes=dim, norm=norm)


@fft_r2c.grad("self")
def _(grad, self_shape, dim, normalization, onesided):
    last = dim[-1] % len(self_shape)
    missing = self_shape[last] - _size(grad, last)
    if missing > 0:  # the half spectrum's adjoint: the dropped bins get zero gradient
        grad = constant_pad_nd(grad, (0, 0) * (len(self_shape) - 1 - last) + (0, missing))
    return real_part(fft_c2c(grad, dim, normalization, False))


@fft_r2c.jvp("self")
def _(self_t, dim, normalization, onesided):
    return fft_r2c(self_t, dim, normalization, onesided)


@op("_fft_c2r", node="FftC2RBackward0", promote=NONE, complex_grad=True)
def fft_c2r(self, dim, normalization, last_dim_size):
    xp = get_xp(self)
    sizes = [self.shape[d] for d in dim[:-1]] + [last_dim_size]
    return xp.fft.irfftn(self, s=sizes, axes=dim, norm=_INVERSE_NORM[normalization])


@fft_c2r.grad("self")
def _(grad, dim, normalization):
    half = fft_r2c(grad, dim, normalization, True)
    last = dim[-1] % _ndim(grad)
    doubled = _size(grad, last) - _size(half, last)
    if doubled <= 0:
        return half
    # Bins 1 .. doubled stand for themselves and their mirror images.
    weights = [1.0] * _size(half, last)
    weights[1:1 + doubled] = [2.0] * doubled
    shape = [1] * _ndim(half)
    shape[last] = len(weights)
    return half * _constant(weights, shape, half)


@fft_c2r.jvp("self")
def _(self_t, dim, normalization, last_dim_size):
    return fft_c2r(self_t, dim, normalization, last_dim_size)


# -- helpers (formulas get arrays or Tensors) ---------------------------------------------------
def _data(x):
    return x._data if isinstance(x, Tensor) else x


def _size(x, d):
    return _data(x).shape[d]


def _ndim(x):
    return _data(x).ndim


def _constant(values, shape, like):
    """A constant array of ``like``'s real dtype and array module (a Tensor if ``like`` is)."""
    data = _data(like)
    xp = get_xp(data)
    arr = xp.asarray(values, dtype=data.real.dtype).reshape(shape)
    return _wrap(arr) if isinstance(like, Tensor) else arr


from .complex import real_part  # noqa: E402
from .pad import constant_pad_nd  # noqa: E402
