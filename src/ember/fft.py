"""``ember.fft``: torch.fft's discrete Fourier transforms, frequencies and shifts.

Each transform is torch's composition (``aten/src/ATen/native/SpectralOps.cpp``): promote the
input (integers to the default float dtype, to complex where the transform needs it), pad or
trim the transformed dims to the requested sizes, then one of the primitives in
``ember._ops.fft``. Results, dtypes (complex64 from float32, complex128 from float64), errors
and gradients (through padding, slicing, conjugation and the primitives) are torch's.

``norm`` is NumPy's: "backward" (the default: the inverse transforms divide by n), "ortho"
(both divide by sqrt(n)) or "forward" (the forward transforms divide by n).
"""
from __future__ import annotations

import numpy as np

from . import _dtype as D
from ._creation import check_pin_memory
from ._ops import fft as _prim
from ._ops.complex import conj, conj_physical
from ._ops.pad import constant_pad_nd
from ._ops.rearrange import roll
from ._ops.shape import slice_
from ._tensor import Tensor

__all__ = ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "fft2", "ifft2", "rfft2", "irfft2",
           "hfft2", "ihfft2", "fftn", "ifftn", "rfftn", "irfftn", "hfftn", "ihfftn", "fftfreq",
           "rfftfreq", "fftshift", "ifftshift", "Tensor"]

_NONE, _BY_ROOT_N, _BY_N = 0, 1, 2


# -- argument handling ----------------------------------------------------------------------------
def _no_out(out):
    if out is not None:
        raise NotImplementedError("ember.fft: out= is not supported")


def _norm_mode(norm, forward):
    """torch's normalization code of NumPy's ``norm`` for a transform in one direction."""
    if norm is None or norm == "backward":
        return _NONE if forward else _BY_N
    if norm == "forward":
        return _BY_N if forward else _NONE
    if norm == "ortho":
        return _BY_ROOT_N
    raise RuntimeError(f'Invalid normalization mode: "{norm}"')


def _promote(x, require_complex=False):
    """Integers (and bool) to the default float dtype, then to complex if required."""
    dt = x.dtype
    if dt.is_complex:
        return x
    if not dt.is_floating_point:
        dt = D.get_default_dtype()
    if dt not in (D.float32, D.float64):
        raise RuntimeError(f"Unsupported dtype {dt.scalar_name}")
    if require_complex:
        dt = dt.to_complex()
    return x if dt == x.dtype else x.to(dt)


def _wrap_dim(dim, ndim):
    if ndim == 0:
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
    if not -ndim <= dim < ndim:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-ndim}, "
                         f"{ndim - 1}], but got {dim})")
    return dim % ndim


def _check_points(n):
    if n < 1:
        raise RuntimeError(f"Invalid number of data points ({n}) specified")


def _resize(x, dims, sizes):
    """``x`` with each ``dims[i]`` trimmed (a slice) or zero-padded to ``sizes[i]``."""
    pad = [0] * (2 * x.ndim)
    padded = False
    for d, n in zip(dims, sizes):
        have = x.shape[d]
        if have > n:
            x = slice_(x, d, 0, n, 1)
        elif have < n:
            pad[2 * (x.ndim - 1 - d) + 1] = n - have
            padded = True
    return constant_pad_nd(x, tuple(pad)) if padded else x


def _shape_and_dims(x, s, dim):
    """torch's canonical (sizes, dims) of an n-dimensional transform's ``s`` and ``dim``."""
    ndim = x.ndim
    dims = None
    if dim is not None:
        dim = (dim,) if isinstance(dim, int) else tuple(dim)
        dims = [_wrap_dim(d, ndim) for d in dim]
        if len(set(dims)) != len(dims):
            raise RuntimeError("FFT dims must be unique")
    if s is not None:
        s = tuple(s)
        if dims is not None and len(dims) != len(s):
            raise RuntimeError("When given, dim and shape arguments must have the same length")
        if len(s) > ndim:
            raise RuntimeError(f"Got shape with {len(s)} values but input tensor only has "
                               f"{ndim} dimensions.")
        if dims is None:
            dims = list(range(ndim - len(s), ndim))
        sizes = [x.shape[d] if n == -1 else int(n) for d, n in zip(dims, s)]
    elif dims is None:
        dims, sizes = list(range(ndim)), list(x.shape)
    else:
        sizes = [x.shape[d] for d in dims]
    for n in sizes:
        _check_points(n)
    return sizes, dims


def _c2r_shape_and_dims(name, x, s, dim):
    """(sizes of the Hermitian input, dims, the real output's last size) of a c2r transform."""
    sizes, dims = _shape_and_dims(x, s, dim)
    if not sizes:
        raise RuntimeError(f"{name} must transform at least one axis")
    last = (2 * (x.shape[dims[-1]] - 1) if s is None or tuple(s)[-1] == -1
            else sizes[-1])
    _check_points(last)
    return sizes[:-1] + [last // 2 + 1], dims, last


# -- one-dimensional transforms -------------------------------------------------------------
def _c2c(name, x, n, dim, norm, forward):
    d = _wrap_dim(dim, x.ndim)
    size = x.shape[d] if n is None else n
    _check_points(size)
    if n is not None:
        x = _resize(x, [d], [n])
    return _prim.fft_c2c(x, (d,), _norm_mode(norm, forward), forward)


def _r2c(name, x, n, dim, norm, forward, onesided):
    if x.dtype.is_complex:
        raise RuntimeError(f"{name} expects a real input tensor, but got "
                           f"{x.dtype.scalar_name}")
    x = _promote(x)
    d = _wrap_dim(dim, x.ndim)
    size = x.shape[d] if n is None else n
    _check_points(size)
    if n is not None:
        x = _resize(x, [d], [n])
    out = _prim.fft_r2c(x, (d,), _norm_mode(norm, forward), onesided)
    return out if forward else conj(out)


def _c2r(name, x, n, dim, norm, forward):
    x = _promote(x, require_complex=True)
    d = _wrap_dim(dim, x.ndim)
    size = 2 * (x.shape[d] - 1) if n is None else n
    _check_points(size)
    if n is not None:
        x = _resize(x, [d], [size // 2 + 1])
    if forward:
        x = conj(x)
    return _prim.fft_c2r(x, (d,), _norm_mode(norm, forward), size)


def fft(input, n=None, dim=-1, norm=None, *, out=None):  # noqa: A002 - torch's names
    """One-dimensional discrete Fourier transform."""
    _no_out(out)
    if input.dtype.is_complex:
        return _c2c("fft", input, n, dim, norm, True)
    return _r2c("fft", input, n, dim, norm, True, False)


def ifft(input, n=None, dim=-1, norm=None, *, out=None):  # noqa: A002
    """One-dimensional inverse discrete Fourier transform."""
    _no_out(out)
    if input.dtype.is_complex:
        return _c2c("ifft", input, n, dim, norm, False)
    return _r2c("ifft", input, n, dim, norm, False, False)


def rfft(input, n=None, dim=-1, norm=None, *, out=None):  # noqa: A002
    """Fourier transform of a real signal: the ``n // 2 + 1`` non-negative frequencies."""
    _no_out(out)
    return _r2c("rfft", input, n, dim, norm, True, True)


def irfft(input, n=None, dim=-1, norm=None, *, out=None):  # noqa: A002
    """Inverse of ``rfft``: a real signal of length ``n`` (default ``2 * (m - 1)``)."""
    _no_out(out)
    return _c2r("irfft", input, n, dim, norm, False)


def hfft(input, n=None, dim=-1, norm=None, *, out=None):  # noqa: A002
    """Fourier transform of a Hermitian-symmetric signal given by its first half: real."""
    _no_out(out)
    return _c2r("hfft", input, n, dim, norm, True)


def ihfft(input, n=None, dim=-1, norm=None, *, out=None):  # noqa: A002
    """Inverse of ``hfft``: the first half of a Hermitian-symmetric spectrum."""
    _no_out(out)
    return _r2c("ihfft", input, n, dim, norm, False, True)


# -- n-dimensional transforms ---------------------------------------------------------------
def fftn(input, s=None, dim=None, norm=None, *, out=None):  # noqa: A002
    """N-dimensional discrete Fourier transform (over all dims by default)."""
    _no_out(out)
    return _c2c_n(input, s, dim, norm, True)


def ifftn(input, s=None, dim=None, norm=None, *, out=None):  # noqa: A002
    """N-dimensional inverse discrete Fourier transform."""
    _no_out(out)
    return _c2c_n(input, s, dim, norm, False)


def _c2c_n(x, s, dim, norm, forward):
    sizes, dims = _shape_and_dims(x, s, dim)
    x = _resize(_promote(x, require_complex=True), dims, sizes)
    return _prim.fft_c2c(x, tuple(dims), _norm_mode(norm, forward), forward)


def rfftn(input, s=None, dim=None, norm=None, *, out=None):  # noqa: A002
    """N-dimensional Fourier transform of a real signal (the last dim halved)."""
    _no_out(out)
    if input.dtype.is_complex:
        raise RuntimeError("rfftn expects a real-valued input tensor, but got "
                        f"{input.dtype.scalar_name}")
    sizes, dims = _shape_and_dims(input, s, dim)
    if not sizes:
        raise RuntimeError("rfftn must transform at least one axis")
    x = _resize(_promote(input), dims, sizes)
    return _prim.fft_r2c(x, tuple(dims), _norm_mode(norm, True), True)


def irfftn(input, s=None, dim=None, norm=None, *, out=None):  # noqa: A002
    """Inverse of ``rfftn``."""
    _no_out(out)
    sizes, dims, last = _c2r_shape_and_dims("irfftn", input, s, dim)
    x = _resize(_promote(input, require_complex=True), dims, sizes)
    return _prim.fft_c2r(x, tuple(dims), _norm_mode(norm, False), last)


def hfftn(input, s=None, dim=None, norm=None, *, out=None):  # noqa: A002
    """N-dimensional Fourier transform of a Hermitian-symmetric signal's first half."""
    _no_out(out)
    sizes, dims, last = _c2r_shape_and_dims("hfftn", input, s, dim)
    x = _resize(_promote(input, require_complex=True), dims, sizes)
    mode = _norm_mode(norm, True)
    if len(dims) > 1:
        x = _prim.fft_c2c(x, tuple(dims[:-1]), mode, True)
    return _prim.fft_c2r(conj(x), (dims[-1],), mode, last)


def ihfftn(input, s=None, dim=None, norm=None, *, out=None):  # noqa: A002
    """Inverse of ``hfftn``."""
    _no_out(out)
    sizes, dims = _shape_and_dims(input, s, dim)
    if not sizes:
        raise RuntimeError("ihfftn must transform at least one axis")
    x = _resize(_promote(input), dims, sizes)
    mode = _norm_mode(norm, False)
    half = _prim.fft_r2c(x, (dims[-1],), mode, True)
    if len(dims) == 1:
        return conj(half)
    return _prim.fft_c2c(conj_physical(half), tuple(dims[:-1]), mode, False)


def fft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):  # noqa: A002
    """Two-dimensional discrete Fourier transform."""
    return fftn(input, s, dim, norm, out=out)


def ifft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):  # noqa: A002
    return ifftn(input, s, dim, norm, out=out)


def rfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):  # noqa: A002
    return rfftn(input, s, dim, norm, out=out)


def irfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):  # noqa: A002
    return irfftn(input, s, dim, norm, out=out)


def hfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):  # noqa: A002
    return hfftn(input, s, dim, norm, out=out)


def ihfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):  # noqa: A002
    return ihfftn(input, s, dim, norm, out=out)


for _f in (ifft2, rfft2, irfft2, hfft2, ihfft2):
    _f.__doc__ = f"Two-dimensional ``{_f.__name__[:-1]}n``."


# -- frequencies and shifts ----------------------------------------------------------------------
def _frequencies(values, n, d, dtype, requires_grad, name):
    from ._creation import tensor
    dt = D.get_default_dtype() if dtype is None else dtype
    if not (dt.is_floating_point or dt.is_complex):
        raise RuntimeError(f"{name} requires a floating point or complex dtype")
    if dt.is_complex:  # (torch's arange has no complex kernel)
        raise NotImplementedError(f'"arange_cpu" not implemented for \'{dt.scalar_name}\'')
    # NOTE: torch multiplies the integer ramp by 1 / (n * d) rounded to the dtype.
    step = np.asarray(1.0 / (n * d)).astype(dt.np)
    out = tensor(np.asarray(values).astype(dt.np) * step, dtype=dt)
    return out._set_requires_grad(requires_grad)


def fftfreq(n, d=1.0, *, dtype=None, layout=None, device=None, requires_grad=False,
            out=None, pin_memory=False):
    """The sample frequencies of an ``n``-point FFT with spacing ``d``."""
    check_pin_memory(pin_memory)
    _no_out(out)
    ramp = list(range((n + 1) // 2)) + list(range(-(n // 2), 0))
    return _frequencies(ramp, n, d, dtype, requires_grad, "fftfreq")


def rfftfreq(n, d=1.0, *, dtype=None, layout=None, device=None, requires_grad=False,
             out=None, pin_memory=False):
    """The sample frequencies of an ``n``-point ``rfft``."""
    check_pin_memory(pin_memory)
    _no_out(out)
    return _frequencies(list(range(n // 2 + 1)), n, d, dtype, requires_grad, "rfftfreq")


def _shift(x, dim, offset):
    dims = range(x.ndim) if dim is None else ([dim] if isinstance(dim, int) else dim)
    dims = [_wrap_dim(d, x.ndim) for d in dims]
    return roll(x, tuple((x.shape[d] + offset) // 2 for d in dims), tuple(dims))


def fftshift(input, dim=None):  # noqa: A002
    """Move the zero frequency to the middle of each dim of ``dim`` (all by default)."""
    return _shift(input, dim, 0)


def ifftshift(input, dim=None):  # noqa: A002
    """Inverse of ``fftshift``."""
    return _shift(input, dim, 1)
