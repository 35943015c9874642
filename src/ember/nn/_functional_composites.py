"""``nn.functional`` functions that torch writes in Python on top of other functionals: the same
composition here (power-average pooling, Gumbel-softmax, deprecated upsampling aliases and the
``*_with_indices`` forms of max pooling)."""
from __future__ import annotations

import math
import warnings

from .._ops import pooling, upsample
from .._ops.activation import softmax
from .._ops.nn_ops import channel_shuffle as native_channel_shuffle
from .._ops.pointwise import relu, sign
from .._tensor import Tensor  # (torch.nn.functional names it too)

__all__ = ["Tensor", "adaptive_max_pool1d_with_indices", "adaptive_max_pool2d_with_indices",
           "adaptive_max_pool3d_with_indices",
           "assert_int_or_pair", "gumbel_softmax", "lp_pool3d", "max_pool3d_with_indices",
           "native_channel_shuffle", "lp_pool1d", "lp_pool2d", "max_pool1d_with_indices",
           "max_pool2d_with_indices", "upsample_bilinear", "upsample_nearest"]


def assert_int_or_pair(arg, arg_name, message):
    """torch's check of a size argument: an int or a pair (AssertionError with ``message``)."""
    if not (isinstance(arg, int) or len(arg) == 2):
        raise AssertionError(message.format(arg_name))


def _lp_pool(dims, input, norm_type, kernel_size, stride, ceil_mode):  # noqa: A002
    """Power-average pooling over ``dims`` dimensions: (sum over the window of x^p)^(1/p),
    torch's composite (max pooling of |x| for p = +-inf, else average pooling times the window's
    size)."""
    max_pool = getattr(pooling, f"max_pool{dims}d")
    avg_pool = getattr(pooling, f"avg_pool{dims}d")
    if isinstance(norm_type, (int, float)):
        if norm_type == float("inf"):
            return max_pool(input.abs(), kernel_size, stride, 0, 1, ceil_mode)
        if norm_type == -float("inf"):
            return -max_pool(-input.abs(), kernel_size, stride, 0, 1, ceil_mode)
    if stride is not None:
        out = avg_pool(input.pow(norm_type), kernel_size, stride, 0, ceil_mode)
    else:
        out = avg_pool(input.pow(norm_type), kernel_size, padding=0, ceil_mode=ceil_mode)
    sizes = tuple(kernel_size) if isinstance(kernel_size, (tuple, list)) else (kernel_size,) * dims
    return (sign(out) * relu(out.abs())).mul(math.prod(sizes)).pow(1.0 / norm_type)


def lp_pool1d(input, norm_type, kernel_size, stride=None, ceil_mode=False):  # noqa: A002
    """Power-average pooling: (sum over the window of x^p)^(1/p)."""
    return _lp_pool(1, input, norm_type, kernel_size, stride, ceil_mode)


def lp_pool2d(input, norm_type, kernel_size, stride=None, ceil_mode=False):  # noqa: A002
    """2-D power-average pooling: (sum over the window of x^p)^(1/p)."""
    return _lp_pool(2, input, norm_type, kernel_size, stride, ceil_mode)


def lp_pool3d(input, norm_type, kernel_size, stride=None, ceil_mode=False):  # noqa: A002
    """3-D power-average pooling: (sum over the window of x^p)^(1/p)."""
    return _lp_pool(3, input, norm_type, kernel_size, stride, ceil_mode)


def gumbel_softmax(logits, tau=1, hard=False, eps=1e-10, dim=-1):
    """Samples from the Gumbel-Softmax distribution (straight-through one-hot when ``hard``)."""
    from .._creation import empty_like, zeros_like
    if eps != 1e-10:
        warnings.warn("`eps` parameter is deprecated and has no effect.", UserWarning,
                      stacklevel=2)
    gumbels = -empty_like(logits).exponential_().log()  # ~Gumbel(0, 1)
    gumbels = (logits + gumbels) / tau
    y_soft = softmax(gumbels, dim)
    if not hard:
        return y_soft
    index = y_soft.max(dim, keepdim=True)[1]
    y_hard = zeros_like(logits).scatter_(dim, index, 1.0)
    return y_hard - y_soft.detach() + y_soft


def upsample_nearest(input, size=None, scale_factor=None):  # noqa: A002
    """Deprecated: ``interpolate(..., mode="nearest")``."""
    warnings.warn("`nn.functional.upsample_nearest` is deprecated. Use "
                  "`nn.functional.interpolate` instead.", UserWarning, stacklevel=2)
    return upsample.interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input, size=None, scale_factor=None):  # noqa: A002
    """Deprecated: ``interpolate(..., mode="bilinear", align_corners=True)``."""
    warnings.warn("`nn.functional.upsample_bilinear` is deprecated. Use "
                  "`nn.functional.interpolate` instead.", UserWarning, stacklevel=2)
    return upsample.interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


def max_pool1d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1,  # noqa: A002
                            ceil_mode=False, return_indices=False):
    """1-D max pooling and the flat indices of the maxima."""
    return pooling.max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def max_pool2d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1,  # noqa: A002
                            ceil_mode=False, return_indices=False):
    """2-D max pooling and the flat indices of the maxima."""
    return pooling.max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def max_pool3d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1,  # noqa: A002
                            ceil_mode=False, return_indices=False):
    """3-D max pooling and the flat indices of the maxima."""
    return pooling.max_pool3d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def adaptive_max_pool3d_with_indices(input, output_size, return_indices=False):  # noqa: A002
    """Adaptive 3-D max pooling and the indices of the maxima."""
    return pooling.adaptive_max_pool3d(input, output_size, True)


def adaptive_max_pool1d_with_indices(input, output_size, return_indices=False):  # noqa: A002
    """Adaptive 1-D max pooling and the indices of the maxima."""
    return pooling.adaptive_max_pool1d(input, output_size, True)


def adaptive_max_pool2d_with_indices(input, output_size, return_indices=False):  # noqa: A002
    """Adaptive 2-D max pooling and the indices of the maxima."""
    return pooling.adaptive_max_pool2d(input, output_size, True)
