"""conv_tbc: a 1-D convolution over time-batch-channel input (T, B, C_in) with a (K, C_in,
C_out) weight and a bias, as a sum over kernel taps of (time-shifted input) @ weight[k].

The forward kernel and the derivative formulas are written with ember ops (padding, slices,
matmul), so the same code runs on arrays and, under create_graph, records the graph of the
second derivative.
"""
from __future__ import annotations

from .linalg import matmul
from .pad import constant_pad_nd
from .reduction import sum_dim
from .pointwise import no_forward_ad
from .registry import NONE, op
from .shape import reshape, stack, transpose

__all__ = ["conv_tbc"]
FUNCTIONAL = ["conv_tbc"]


def _time_pad(x, before, after):
    """``x`` padded (or, for negative amounts, cropped) along time, its first dim."""
    return constant_pad_nd(x, (0, 0, 0, 0, before, after))


def _check(self, weight, bias, pad=0):
    if self.ndim != 3:
        raise RuntimeError("Input must have 3 dims: time, batch, in_channel")
    if weight.ndim != 3:
        raise RuntimeError("Weight tensor must have 3 dims: kernel_width, in_channels, "
                           "out_channels.")
    if bias.ndim != 1:
        raise RuntimeError("Bias must be 1-D")
    if self.shape[2] != weight.shape[1]:
        raise RuntimeError("Input dim 2 (input channels) is not == dim 1 in the weight tensor")
    if weight.shape[2] != bias.shape[0]:
        raise RuntimeError("Bias size must equal dim 2 in the weight tensor (output channels).")
    length = self.shape[0] + 2 * pad - weight.shape[0] + 1
    if length < 0:
        raise RuntimeError(f"Trying to create tensor with negative dimension {length}: "
                           f"[{length}, {self.shape[1]}, {weight.shape[2]}]")
    if self._data.dtype != weight._data.dtype:
        names = {"float32": "Float", "float64": "Double", "float16": "Half", "int64": "Long",
                 "int32": "Int"}
        raise RuntimeError("self and mat2 must have the same dtype, but got "
                           f"{names.get(self._data.dtype.name, self._data.dtype.name)} and "
                           f"{names.get(weight._data.dtype.name, weight._data.dtype.name)}")


@op("conv_tbc", tensors=3, promote=NONE, node="ConvTbcBackward0", check=_check)
def conv_tbc(self, weight, bias, pad=0):
    """1-D convolution of time-batch-channel input: out[t] = bias + sum_k
    in[t + k - pad] @ weight[k]."""
    taps, length = weight.shape[0], self.shape[0] + 2 * pad - weight.shape[0] + 1
    padded = _time_pad(self, pad, pad)
    out = bias
    for k in range(taps):
        out = out + matmul(padded[k:k + length], weight[k])
    return out


conv_tbc.jvp("self", "weight", "bias")(no_forward_ad("conv_tbc"))


@conv_tbc.grad("self")
def _(grad, weight, pad):
    taps = weight.shape[0]
    spread = _time_pad(grad, taps - 1, taps - 1)  # each output row feeds K input rows
    length = grad.shape[0] + taps - 1  # = time + 2 * pad
    full = 0
    for k in range(taps):
        full = full + matmul(spread[taps - 1 - k:taps - 1 - k + length],
                             transpose(weight[k], 0, 1))
    return _time_pad(full, -pad, -pad)


@conv_tbc.grad("weight")
def _(grad, self, weight_shape, pad):
    taps, length = weight_shape[0], grad.shape[0]
    padded = _time_pad(self, pad, pad)
    rows = reshape(grad, (-1, grad.shape[2]))
    return stack([matmul(transpose(reshape(padded[k:k + length], (-1, self.shape[2])), 0, 1),
                         rows) for k in range(taps)], 0)


@conv_tbc.grad("bias")
def _(grad):
    return sum_dim(grad, (0, 1))
