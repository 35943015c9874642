"""torch's Python autograd Functions behind some modules (their node names are torch's)."""
from __future__ import annotations

import numpy as np

from ..._creation import tensor
from ..._ops.scan import cumsum
from ..._ops.shape import cat
from ...autograd.function import Function


def _window_sums(values, lo, hi):
    """sum(values[:, lo[c]:hi[c] + 1]) for each channel c, from one cumulative sum."""
    csum = cumsum(values, 1)
    padded = cat([values.new_zeros((values.shape[0], 1, *values.shape[2:])), csum], 1)
    hi_idx = tensor(hi + 1, device=values.device)
    lo_idx = tensor(lo, device=values.device)
    return padded.index_select(1, hi_idx) - padded.index_select(1, lo_idx)


class CrossMapLRN2d(Function):
    """Local response normalisation across channels, with torch's legacy window rule."""

    @staticmethod
    def forward(ctx, input, size, alpha=1e-4, beta=0.75, k=1):  # noqa: A002
        ctx.size, ctx.alpha, ctx.beta, ctx.k = size, alpha, beta, k
        if input.dim() != 4:
            raise ValueError(f"CrossMapLRN2d: Expected input to be 4D, got {input.dim()}D "
                             "instead.")
        channels = input.shape[1]
        pre_pad = int((size - 1) / 2 + 1)
        c = np.arange(channels)
        # NOTE: torch's running window adds channel c + pre_pad - 1 and drops channel
        # c - pre_pad only once c > pre_pad, so channel 0 is never dropped: the window of c is
        # [c - pre_pad + 1, c + pre_pad - 1] plus channel 0, kept here for equal values.
        hi = np.minimum(c + pre_pad - 1, channels - 1)
        lo = np.where(c > pre_pad, c - pre_pad + 1, 0)
        squares = input * input
        scale = _window_sums(squares, lo, hi)
        if channels > 1:
            keeps_first = tensor((lo > 0).astype(np.float64), dtype=input.dtype,
                                 device=input.device).reshape(1, channels, 1, 1)
            scale = scale + keeps_first * squares[:, :1]
        ctx.scale = scale * (alpha / size) + k
        output = ctx.scale.pow(-beta) * input
        ctx.save_for_backward(input, output)
        return output

    @staticmethod
    def backward(ctx, grad_output):
        input, output = ctx.saved_tensors  # noqa: A001
        size, channels = ctx.size, input.shape[1]
        # torch's backward sums ratio = grad * output / scale over a symmetric window of
        # channels [c - inverse_pre_pad, c + size - 1 - inverse_pre_pad].
        inverse_pre_pad = int(size - (size - 1) / 2)
        if inverse_pre_pad > size - 1:  # torch's narrow of its padded buffer fails (size 1)
            raise RuntimeError(f"start ({inverse_pre_pad}) + length ({channels}) exceeds "
                               f"dimension size ({channels + size - 1}).")
        c = np.arange(channels)
        lo = np.clip(c - inverse_pre_pad, 0, channels)
        hi = np.clip(c + size - 1 - inverse_pre_pad, -1, channels - 1)
        hi = np.maximum(hi, lo - 1)
        ratio = grad_output * output / ctx.scale
        accum = _window_sums(ratio, lo, hi)
        cache_ratio = 2 * ctx.alpha * ctx.beta / size
        grad_input = ctx.scale.pow(-ctx.beta) * grad_output - cache_ratio * input * accum
        return grad_input, None, None, None, None
