"""LinearCrossEntropyLoss: a Linear layer and a cross entropy in one module."""
from __future__ import annotations

__all__ = ["LinearCrossEntropyLoss", "LinearCrossEntropyOptions"]

import math

from .._linear_cross_entropy import LinearCrossEntropyOptions, linear_cross_entropy
from .linear import Linear
from .loss import _WeightedLoss


class LinearCrossEntropyLoss(_WeightedLoss):
    """The cross entropy of a linear projection of the input (see ``linear_cross_entropy``)."""

    __constants__ = ["num_classes", "out_features", "reduction", "ignore_index",
                     "label_smoothing"]

    def __init__(self, in_features, num_classes, *, out_features=(), bias=False, device=None,
                 dtype=None, reduction="mean", weight=None, ignore_index=None,
                 label_smoothing=0.0, options=None):
        if weight is not None and weight.shape != (num_classes,):
            raise RuntimeError(f"expected weight shape to be {(num_classes,)}, got "
                               f"{tuple(weight.shape)}")
        if label_smoothing < 0 or label_smoothing > 1.0:
            raise RuntimeError("expected label_smoothing to be in range [0, 1], got "
                               f"{label_smoothing}")
        super().__init__(weight=weight, size_average=None, reduce=None, reduction=reduction)
        self.num_classes = num_classes
        self.out_features = out_features
        self.ignore_index = ignore_index
        self.label_smoothing = label_smoothing
        # Linear keeps a 2-D weight; forward reshapes it to (num_classes, *out_features, in).
        self.linear = Linear(in_features, math.prod(out_features, start=num_classes),
                             bias=bias, device=device, dtype=dtype)
        self.options = options

    def forward(self, input, target):  # noqa: A002
        classes = (self.num_classes, *self.out_features)
        bias = self.linear.bias
        return linear_cross_entropy(
            input, self.linear.weight.reshape((*classes, self.linear.in_features)), target,
            linear_bias=None if bias is None else bias.reshape(classes), weight=self.weight,
            reduction=self.reduction, ignore_index=self.ignore_index,
            label_smoothing=self.label_smoothing, options=self.options)

    def extra_repr(self):
        return (f"in_features={self.linear.in_features}, num_classes={self.num_classes}, "
                f"out_features={self.out_features}, bias={self.linear.bias is not None}, "
                f"reduction={self.reduction}, ignore_index={self.ignore_index}, "
                f"label_smoothing={self.label_smoothing}, options={self.options}")
