"""Op table rows for ember.fft and the short-time transforms (stft, istft).

The transforms run on real and complex samples (``m.complex``), so the gradients through
``_fft_r2c`` / ``_fft_c2r`` / ``_fft_c2c``, the padding and trimming of ``n=`` / ``s=``
and the conjugations of hfft / ihfft are checked against torch's, first and second order,
and in forward mode. Shapes stay small: every element is a gradcheck column.
"""
from __future__ import annotations

import numpy as np

import ember
import ember.fft
from ember._ops import complex as CX
from ember._ops import fft as FF
from ember._ops import pad as PD
from ember._ops import pointwise as PW
from ember._ops import rearrange as RA
from ember._ops import shape as SH
from ember._ops import spectral as SP
from ember._ops import strided as ST

from .op_db import S, row

_C2C, _R2C, _C2R = FF.fft_c2c, FF.fft_r2c, FF.fft_c2r
_RESIZE = [SH.slice_, PD.constant_pad_nd]


def _fn(name):
    return getattr(ember.fft, name)


def _ref(name):
    return f"fft.{name}"


def _np_fft(name):
    """numpy.fft's ``name`` with torch's keyword names (dim: axis or axes)."""
    def call(x, *args, dim=None, **kwargs):
        if dim is not None:
            kwargs["axis" if isinstance(dim, int) else "axes"] = dim
        return getattr(np.fft, name)(x, *args, **kwargs)
    return call


# -- one-dimensional transforms --------------------------------------------------------------
def _real_1d(m):
    return [S("vector", m(6)), S("n_short", m(2, 5), n=3), S("n_long", m(5), n=7, norm="ortho"),
            S("dim0", m(4, 3), dim=0, norm="forward")]


def _complex_1d(m):
    return [S("vector", m.complex(5)), S("n_long", m.complex(2, 4), n=6, norm="ortho"),
            S("n_short", m.complex(5), n=3, norm="forward")]


def _half_1d(m):  # Hermitian halves (irfft, hfft): n picks the output length
    return [S("default", m.complex(4)), S("odd_n", m.complex(2, 4), n=7, norm="ortho"),
            S("short", m.complex(5), n=4, dim=0, norm="forward")]


row("fft_real", _fn("fft"), _ref("fft"), [_R2C] + _RESIZE, _real_1d, np_ref=_np_fft("fft"))
row("fft_complex", _fn("fft"), _ref("fft"), [_C2C] + _RESIZE, _complex_1d,
    np_ref=_np_fft("fft"))
row("ifft_real", _fn("ifft"), _ref("ifft"), [_R2C, CX._conj], _real_1d,
    np_ref=_np_fft("ifft"))
row("ifft_complex", _fn("ifft"), _ref("ifft"), [_C2C], _complex_1d, np_ref=_np_fft("ifft"))
row("rfft", _fn("rfft"), _ref("rfft"), [_R2C, ST._view_as_real, SH.select], _real_1d,
    np_ref=_np_fft("rfft"))
row("irfft", _fn("irfft"), _ref("irfft"), [_C2R, _R2C, PW.mul], _half_1d,
    np_ref=_np_fft("irfft"))
row("hfft", _fn("hfft"), _ref("hfft"), [_C2R, _R2C, CX._conj], _half_1d,
    np_ref=_np_fft("hfft"))
row("ihfft", _fn("ihfft"), _ref("ihfft"), [_R2C, CX._conj], _real_1d,
    np_ref=_np_fft("ihfft"))
row("irfft_of_real", _fn("irfft"), _ref("irfft"), [_C2R, SH.to_copy],
    lambda m: [S("promoted", m(4))], np_ref=_np_fft("irfft"))


# -- n-dimensional transforms ------------------------------------------------------------------
def _real_nd(m):
    return [S("all", m(3, 4)), S("s", m(2, 3, 4), s=(2, 5), norm="ortho"),
            S("dims", m(3, 4), dim=(1, 0), norm="forward")]


def _complex_nd(m):
    return [S("all", m.complex(3, 4)), S("s_dim", m.complex(3, 2, 3), s=(4, 2), dim=(0, 2),
                                          norm="ortho")]


def _half_nd(m):
    return [S("all", m.complex(3, 3)), S("s", m.complex(2, 3, 3), s=(2, 8), norm="ortho"),
            S("one_dim", m.complex(3, 4), dim=(0,), norm="forward")]


_ND = {"fftn": ([_C2C], _complex_nd), "ifftn": ([_C2C], _complex_nd),
       "rfftn": ([_R2C], _real_nd), "irfftn": ([_C2R, _R2C, PW.mul], _half_nd),
       "hfftn": ([_C2R, _C2C, CX._conj], _half_nd),
       "ihfftn": ([_R2C, _C2C, CX._conj_physical], _real_nd)}
for _name, (_defs, _samples) in _ND.items():
    row(_name, _fn(_name), _ref(_name), _defs + _RESIZE, _samples, np_ref=_np_fft(_name)
        if _name not in ("hfftn", "ihfftn") else None)
for _name in ("fft2", "ifft2", "rfft2", "irfft2", "hfft2", "ihfft2"):
    _defs, _samples = _ND[_name[:-1] + "n"]
    row(_name, _fn(_name), _ref(_name), _defs,
        lambda m, f=_samples: [s for s in f(m) if s.name != "one_dim"][:1])
row("fftn_of_real", _fn("fftn"), _ref("fftn"), [_C2C, SH.to_copy],
    lambda m: [S("promoted", m(2, 3), s=(3,))], np_ref=_np_fft("fftn"))

row("fftshift", _fn("fftshift"), _ref("fftshift"), [RA._roll],
    lambda m: [S("all", m(4, 5)), S("dim", m(3, 4), dim=1)],
    np_ref=lambda x, dim=None: np.fft.fftshift(x, dim))
row("ifftshift", _fn("ifftshift"), _ref("ifftshift"), [RA._roll],
    lambda m: [S("all", m(5, 2)), S("dims", m(3, 4), dim=(0,))],
    np_ref=lambda x, dim=None: np.fft.ifftshift(x, dim))


# -- stft, istft ------------------------------------------------------------------------------
_WINDOW = np.hanning(8) + 0.25  # (a window without zeros: istft divides by its envelope)


def _stft_samples(m):
    w = m.arr(_WINDOW)
    return [S("center", m(20), 8, hop_length=3, window=w, return_complex=True),
            S("batch", m(2, 16), 8, hop_length=4, win_length=6, window=m.arr(_WINDOW[:6]),
              center=False, normalized=True, return_complex=True),
            S("real_out", m(12), 8, hop_length=2, window=w, pad_mode="constant",
              return_complex=False)]


row("stft", ember.stft, "stft",
    [SP._transposed, SP._squeezed, _R2C, ST.as_strided_backward, PW.mul], _stft_samples)


def _istft_samples(m):
    w = m.arr(_WINDOW)
    return [S("center", m.complex(5, 6), 8, hop_length=2, window=w),
            S("length", m.complex(2, 5, 4), 8, hop_length=3, window=w, length=15,
              center=False),
            S("complex", m.complex(8, 3), 8, hop_length=4, window=w, onesided=False,
              return_complex=True)]


row("istft", ember.istft, "istft",
    [SP.unfold_backward, SP.unfold, _C2R, _C2C, _R2C, ST.view_as_complex, PW.div],
    _istft_samples)
row("tensor_unfold", lambda x: SP.unfold(x, 1, 3, 2), lambda torch: lambda x: x.unfold(1, 3, 2),
    [SP.unfold, SP.unfold_backward], lambda m: [S("frames", m(2, 7))],
    np_ref=lambda x: np.lib.stride_tricks.sliding_window_view(x, 3, axis=1)[:, ::2])
