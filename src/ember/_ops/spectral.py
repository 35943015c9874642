"""Short-time Fourier transforms: ``stft`` and ``istft``, as torch composes them.

``stft`` pads the signal (``center``), cuts it into overlapping frames (an ``as_strided``
view), multiplies each by the window and transforms it (``_fft_r2c`` or ``_fft_c2c``);
``istft`` transforms each frame back, windows it again and overlap-adds the frames
(``unfold_backward``), dividing by the overlap-added squared window. Gradients flow through
those ops, so they are torch's, as are the node names of the results.
"""
from __future__ import annotations

__all__ = ["stft", "istft"]

import warnings

from .. import _dtype as D
from .._backend import get_xp
from .._tensor import Tensor
from .registry import NONE, op

_WARNED: set = set()


def _warn_once(key, message):
    """torch's TORCH_WARN_ONCE: the first time in the process only."""
    if key not in _WARNED:
        _WARNED.add(key)
        warnings.warn(message, UserWarning, stacklevel=3)


# -- overlapping frames: unfold and its adjoint, overlap-add ----------------------------------
@op("unfold", view=True, promote=NONE)
def unfold(self, dimension, size, step):
    """Frames of ``size`` elements every ``step`` along ``dimension`` (a new last dim)."""
    if self.ndim == 0:  # (torch: a 0-dim tensor is one frame of its one element)
        return self.reshape(1)
    xp = get_xp(self)
    d = dimension % self.ndim
    # (writeable: in-place ops write through unfold's views, as through torch's)
    frames = xp.lib.stride_tricks.sliding_window_view(self, size, axis=d, writeable=True)
    return frames[(slice(None),) * d + (slice(None, None, step),)]


@unfold.grad("self")
def _(grad, self_shape, dimension, size, step):
    return unfold_backward(grad, self_shape, dimension, size, step)


@op("unfold_backward", promote=NONE, node="UnfoldBackwardBackward0")
def unfold_backward(grad_in, input_sizes, dim, size, step):
    """Overlap-add: the sum of the frames of ``grad_in`` back into a tensor of
    ``input_sizes`` (``unfold``'s adjoint)."""
    if not input_sizes:  # (a 0-dim input's one frame)
        return grad_in.reshape(())
    xp = get_xp(grad_in)
    d = dim % len(input_sizes)
    frames = xp.moveaxis(grad_in, d, -2)  # (..., n_frames, size)
    n_frames, length = frames.shape[-2], input_sizes[d]
    # NOTE: part k (elements k*step .. (k+1)*step) of frame i lands on block i + k of the
    # output, so each part is one vectorised add over all frames.
    parts = -(-size // step)
    lead = frames.shape[:-2]
    blocks = xp.zeros(lead + (n_frames + parts, step), grad_in.dtype)
    for k in range(parts):
        width = min(step, size - k * step)
        blocks[..., k:k + n_frames, :width] += frames[..., k * step:k * step + width]
    flat = blocks.reshape(lead + (-1,))
    total = flat.shape[-1]
    if total < length:
        flat = xp.concatenate([flat, xp.zeros(lead + (length - total,), flat.dtype)], -1)
    # (contiguous, as torch's zero tensor written in place: a leaf takes it over as .grad)
    return xp.ascontiguousarray(xp.moveaxis(flat[..., :length], -1, d))


@unfold_backward.grad("grad_in")
def _(grad, dim, size, step):
    return unfold(grad, dim, size, step)


# NOTE: torch's stft transposes and squeezes its result in place (transpose_, squeeze_), so
# its nodes are the in-place ones' (TransposeBackward1, SqueezeBackward4).
@op("transpose_", view=True, promote=NONE, node="TransposeBackward1")
def _transposed(self, dim0, dim1):
    return get_xp(self).swapaxes(self, dim0, dim1)


@_transposed.grad("self")
def _(grad, dim0, dim1):
    return transpose(grad, dim0, dim1)


@op("squeeze_", view=True, promote=NONE, node="SqueezeBackward4")
def _squeezed(self, dim):
    return get_xp(self).squeeze(self, dim)


@_squeezed.grad("self")
def _(grad, dim):
    return unsqueeze(grad, dim)


# -- stft ---------------------------------------------------------------------------------------
def _opt(value):
    return "None" if value is None else str(int(value) if isinstance(value, bool) else value)


def _window_repr(window):
    if window is None:
        return "None"
    return f"{window.dtype.legacy_type_name}{{{list(window.shape)}}}"


def _stft_repr(x, n_fft, hop, win, window, normalized, onesided, return_complex, align):
    return (f"stft({x.dtype.legacy_type_name}{list(x.shape)}, n_fft={n_fft}, hop_length={hop}, "
            f"win_length={win}, window={_window_repr(window)}, normalized={int(normalized)}, "
            f"onesided={_opt(onesided)}, return_complex={_opt(return_complex)}, "
            f"align_to_window={_opt(align)}) ")


def stft(input, n_fft, hop_length=None, win_length=None, window=None, center=True,  # noqa: A002
         pad_mode="reflect", normalized=False, onesided=None, return_complex=None,
         align_to_window=None):
    """Short-time Fourier transform: (freq, frames) spectra of overlapping windowed frames."""
    if center and align_to_window is not None:
        raise RuntimeError("stft align_to_window should only be set when center = false")
    if center:  # reflect-pad by n_fft // 2 on both sides (torch pads a 3-d view)
        nd = input.ndim
        pad = n_fft // 2
        x = input.view(*([1] * (3 - nd) + list(input.shape)))
        x = _functional_pad(x, (pad, pad), pad_mode)
        input = x.view(*x.shape[x.ndim - nd:])
    return _stft(input, n_fft, hop_length, win_length, window, normalized, onesided,
                 return_complex, align_to_window)


def _stft(x, n_fft, hop_length, win_length, window, normalized, onesided, return_complex,
          align):
    if window is None:
        _warn_once("stft_window", (
            "A window was not provided. A rectangular window will be applied,which is known to "
            "cause spectral leakage. Other windows such as torch.hann_window or "
            "torch.hamming_window are recommended to reduce spectral leakage.To suppress this "
            "warning and use a rectangular window, explicitly set `window=torch.ones(n_fft, "
            "device=<device>)`."))
    hop = n_fft >> 2 if hop_length is None else hop_length
    win = n_fft if win_length is None else win_length
    if return_complex is None:
        return_complex = x.dtype.is_complex or (window is not None and window.dtype.is_complex)
        if not return_complex:
            raise RuntimeError("stft requires the return_complex parameter be given for real "
                               "inputs, and will further require that return_complex=True in a "
                               "future PyTorch release.")
    elif not return_complex:
        _warn_once("stft_real", (
            "stft with return_complex=False is deprecated. In a future pytorch release, stft "
            "will return complex tensors for all inputs, and return_complex=False will raise an "
            "error.\nNote: you can still call torch.view_as_real on the complex output to "
            "recover the old return format."))

    def fail(what, exc=RuntimeError):
        return exc(_stft_repr(x, n_fft, hop, win, window, normalized, onesided,
                              return_complex, align) + what)
    if not (x.dtype.is_floating_point or x.dtype.is_complex):
        raise fail(": expected a tensor of floating point or complex values")
    if x.ndim not in (1, 2):
        raise fail(": expected a 1D or 2D tensor")
    frames_of = x if x.ndim == 2 else unsqueeze(x, 0)
    batch, length = frames_of.shape
    if n_fft <= 0 or n_fft > length:
        raise fail(f": expected 0 < n_fft < {length}, but got n_fft={win}")
    if hop <= 0:
        raise fail(f": expected hop_length > 0, but got hop_length={hop}")
    if win <= 0 or win > n_fft:
        raise fail(f": expected 0 < win_length <= n_fft, but got win_length={win}")
    if window is not None and (window.ndim != 1 or window.shape[0] != win):
        raise fail(f": expected a 1D window tensor of size equal to win_length={win}, but got "
                   f"window with size {list(window.shape)}")
    left = (n_fft - win) // 2
    if win < n_fft:  # the window sits in the middle of the frame
        if window is None:
            window = ones(win, dtype=x.dtype)
        window = _centred_window(window, n_fft, left)
    if align:  # the first window starts at the first sample
        n_frames = 1 + (length - win) // hop
        frames_of = _functional_pad(frames_of, (left, left), "constant")
    else:
        n_frames = 1 + (length - n_fft) // hop
    s0, s1 = frames_of.stride()
    frames = as_strided(frames_of, (batch, n_frames, n_fft), (s0, hop * s1, s1),
                        frames_of.storage_offset())
    if window is not None:
        frames = frames * window
    complex_fft = frames.dtype.is_complex
    onesided = (not complex_fft) if onesided is None else onesided
    norm = 1 if normalized else 0
    if complex_fft:
        if onesided:
            raise RuntimeError("Cannot have onesided output if window or input is complex")
        out = fft_c2c(frames, (frames.ndim - 1,), norm, True)
    else:
        out = fft_r2c(frames, (frames.ndim - 1,), norm, onesided)
    out = _transposed(out, 1, 2)
    if x.ndim == 1:
        out = _squeezed(out, 0)
    return out if return_complex else view_as_real(out)


# -- istft --------------------------------------------------------------------------------------
def _istft_repr(x, n_fft, hop, win, window, center, normalized, onesided, length,
                return_complex):
    kind = f"CPU{x.dtype.scalar_name}Type" if not x.dtype.is_complex else (
        f"CPUComplex{D._TO_REAL[x.dtype.name].scalar_name}Type")
    return (f"istft({kind}{list(x.shape)}, n_fft={n_fft}, hop_length={hop}, win_length={win}, "
            f"window={_window_repr(window)}, center={int(center)}, "
            f"normalized={int(normalized)}, onesided={_opt(onesided)}, length={_opt(length)}, "
            f"return_complex={int(return_complex)}) ")


def istft(input, n_fft, hop_length=None, win_length=None, window=None, center=True,  # noqa: A002
          normalized=False, onesided=None, length=None, return_complex=False):
    """Inverse short-time Fourier transform (overlap-add of the inverse-transformed frames)."""
    if window is None:
        _warn_once("istft_window", (
            "A window was not provided. A rectangular window will be applied.Please provide the "
            "same window used by stft to make the inversion lossless.To suppress this warning "
            "and use a rectangular window, explicitly set `window=torch.ones(n_fft, "
            "device=<device>)`."))
    hop = n_fft >> 2 if hop_length is None else hop_length
    win = n_fft if win_length is None else win_length
    if not input.dtype.is_complex:
        raise RuntimeError("istft requires a complex-valued input tensor matching the output "
                           "from stft with return_complex=True.")

    def fail(what):
        return RuntimeError(_istft_repr(input, n_fft, hop, win, window, center, normalized,
                                        onesided, length, return_complex) + what)
    x = view_as_real(resolve_conj(input))
    nd = x.ndim
    if x.numel() == 0:
        raise fail(": input tensor cannot be empty.")
    if nd not in (3, 4):
        raise fail(f": expected a tensor with 3 or 4 dimensions, but got {nd}")
    n_frames, fft_size = x.shape[-2], x.shape[-3]
    expected_len = n_fft + hop * (n_frames - 1)
    one = (fft_size != n_fft) if onesided is None else onesided
    if one and n_fft // 2 + 1 != fft_size:
        raise fail(": expected the frequency dimension (3rd to the last) of the input tensor "
                   f"to match n_fft / 2 + 1 when onesided=True, but got {fft_size}")
    if not one and n_fft != fft_size:
        raise fail(": expected the frequency dimension (3rd to the last) of the input tensor "
                   f"to match n_fft when onesided=False, but got {fft_size}")
    if not 0 < hop <= win:
        raise fail(": expected 0 < hop_length <= win_length")
    if not 0 < win <= n_fft:
        raise fail(": expected 0 < win_length <= n_fft")
    if window is not None and (window.ndim != 1 or window.shape[0] != win):
        raise fail(": Invalid window shape. window has to be 1D and length of `win_length`")
    w = window if window is not None else ones(win, dtype=x.dtype)
    if win != n_fft:
        left = (n_fft - win) // 2
        w = constant_pad_nd(w, (left, n_fft - win - left), 0)
    if nd == 3:
        x = unsqueeze(x, 0)
    x = _as_complex(transpose(x, 1, 2))  # (channel, n_frames, fft_size)
    norm = 1 if normalized else 2
    if return_complex:
        if one:
            raise RuntimeError("Cannot have onesided output if window or input is complex")
        x = fft_c2c(x, (x.ndim - 1,), norm, False)
    else:
        if window is not None and window.dtype.is_complex:
            raise RuntimeError("Complex windows are incompatible with return_complex=False")
        if not one:
            x = slice_(x, -1, 0, n_fft // 2 + 1, 1)
        x = fft_c2r(x, (x.ndim - 1,), norm, n_fft)
    y = unfold_backward(x * w.view(1, 1, n_fft), (x.shape[0], expected_len), 1, n_fft, hop)
    envelope = unfold_backward(expand(pow_scalar(w, 2), (1, n_frames, n_fft)),
                               (1, expected_len), 1, n_fft, hop)
    start = n_fft // 2 if center else 0
    end = start + length if length is not None else (-(n_fft // 2) if center else expected_len)
    y = slice_(y, 1, start, end, 1)
    envelope = slice_(envelope, 1, start, end, 1)
    if bool((abs_(envelope).min() < 1e-11).item()):
        raise fail("window overlap add min: 1\n[ CPUBoolType{} ]")
    y = y / envelope
    if nd == 3:
        y = squeeze(y, 0)
    if end > expected_len:
        _warn_once("istft_length", (
            "The length of signal is shorter than the length parameter. Result is being padded "
            "with zeros in the tail. Please check your center and hop_length settings."))
        y = constant_pad_nd(y, (0, end - expected_len), 0)
    return y


def _as_complex(x):
    """``view_as_complex``, through a contiguous copy when the layout allows no view."""
    try:
        return view_as_complex(x)
    except RuntimeError:
        return view_as_complex(clone(x))  # (a C-ordered copy)


def _centred_window(window, n_fft, left):
    """``window`` in the middle of n_fft zeros, written into them as torch's stft does (its
    graph: CopySlices, where a pad would record ConstantPadNdBackward0)."""
    padded = zeros(n_fft, dtype=window.dtype, device=window.device)
    padded.narrow(0, left, window.shape[0]).copy_(window)
    return padded


def _functional_pad(x, pad, mode):
    from ..nn.functional import pad as functional_pad
    return functional_pad(x, pad, mode)


Tensor.stft = stft
Tensor.istft = istft

from .._creation import ones, zeros  # noqa: E402
from .complex import resolve_conj  # noqa: E402
from .fft import fft_c2c, fft_c2r, fft_r2c  # noqa: E402
from .pad import constant_pad_nd  # noqa: E402
from .pointwise import abs as abs_  # noqa: E402
from .pointwise import pow_scalar  # noqa: E402
from .shape import clone, expand, slice_, squeeze, transpose, unsqueeze  # noqa: E402
from .strided import as_strided, view_as_complex, view_as_real  # noqa: E402
