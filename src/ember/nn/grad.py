"""``ember.nn.grad``: a convolution's input and weight gradients for a given output gradient,
computed by ember's convolution_backward (the op convolution's backward runs, so they are
differentiable again as in torch)."""
from __future__ import annotations

from .._ops.conv import convolution_backward

__all__ = ["conv1d_input", "conv1d_weight", "conv2d_input", "conv2d_weight", "conv3d_input",
           "conv3d_weight"]


def _tuple(value, n):
    return tuple(value) if isinstance(value, (tuple, list)) else (value,) * n


def _gradient(which, n, grad_output, input, weight, stride, padding, dilation,  # noqa: A002
              groups):
    """Output ``which`` (0: input, 1: weight) of the n-d convolution's backward."""
    mask = (which == 0, which == 1, False)
    pads = tuple((p, p) for p in _tuple(padding, n))  # (the op takes (before, after) pairs)
    return convolution_backward(grad_output, input, weight, _tuple(stride, n), pads,
                                _tuple(dilation, n), False, (0,) * n, groups, mask)[which]


def _input_fn(n):
    def conv_input(input_size, weight, grad_output, stride=1, padding=0, dilation=1,
                   groups=1):
        # (only the input's shape matters: a broadcast placeholder of that shape stands in)
        placeholder = grad_output.new_empty(1).expand(input_size)
        return _gradient(0, n, grad_output, placeholder, weight, stride, padding, dilation,
                         groups)
    conv_input.__name__ = conv_input.__qualname__ = f"conv{n}d_input"
    conv_input.__doc__ = (f"The gradient of conv{n}d in its input (of shape ``input_size``) "
                          "for the output gradient ``grad_output``.")
    return conv_input


def _weight_fn(n):
    def conv_weight(input, weight_size, grad_output, stride=1, padding=0,  # noqa: A002
                    dilation=1, groups=1):
        placeholder = grad_output.new_empty(1).expand(weight_size)
        return _gradient(1, n, grad_output, input, placeholder, stride, padding, dilation,
                         groups)
    conv_weight.__name__ = conv_weight.__qualname__ = f"conv{n}d_weight"
    conv_weight.__doc__ = (f"The gradient of conv{n}d in its weight (of shape ``weight_size``) "
                           "for the output gradient ``grad_output``.")
    return conv_weight


conv1d_input, conv2d_input, conv3d_input = (_input_fn(n) for n in (1, 2, 3))
conv1d_weight, conv2d_weight, conv3d_weight = (_weight_fn(n) for n in (1, 2, 3))
