"""``nn.functional.linear_cross_entropy`` and its ``LinearCrossEntropyOptions``: the cross
entropy of ``linear(input, linear_weight, linear_bias)`` logits, optionally computed a chunk of
batch rows at a time.

The chunked path gives the reference path's values (up to rounding) chunk by chunk; ember keeps
each chunk's logits for the backward pass, so it does not lower peak memory as torch's fused
kernel does. The options are validated and resolved (``_adjust``) exactly as torch resolves
them, so the same settings raise the same errors.
"""
from __future__ import annotations

import dataclasses
import math
import warnings
from typing import NamedTuple

from .. import _dtype as D

__all__ = ["LinearCrossEntropyOptions", "linear_cross_entropy"]


class _AutoDefault(NamedTuple):
    acc_policy: str
    chunking_method: str


# torch's per-(device type, dtype) picks for "auto"; other pairs take the fallback.
_AUTO_DEFAULTS = {
    ("cuda", D.float16): _AutoDefault("compact", "aspect_ratio:2"),
    ("cpu", D.float16): _AutoDefault("accurate", "aspect_ratio"),
}
if hasattr(D, "bfloat16"):
    _AUTO_DEFAULTS[("cuda", D.bfloat16)] = _AutoDefault("compact", "aspect_ratio:2")
    _AUTO_DEFAULTS[("cpu", D.bfloat16)] = _AutoDefault("accurate", "aspect_ratio")
_AUTO_FALLBACK = _AutoDefault("compact", "aspect_ratio:2")
_POLICIES = {"auto", "accurate", "balanced", "compact"}


def _ceil_div(a, b):
    return -(-a // b)


@dataclasses.dataclass(slots=True, frozen=True)
class LinearCrossEntropyOptions:
    """Configuration for the chunked implementation of :func:`linear_cross_entropy`."""

    allow_retain_graph: bool = False
    batch_chunk_size: int | None = None
    chunking_method: str | None = "auto"
    acc_policy: str = "auto"
    acc_dtype: D.dtype | None = None

    def __post_init__(self):
        if self.acc_policy not in _POLICIES:
            raise ValueError(f"invalid acc_policy: {self.acc_policy!r}")
        if self.chunking_method is not None and self.chunking_method != "auto":
            name, sep, factor = self.chunking_method.partition(":")
            factor = factor if sep else "1"
            if not (name == "aspect_ratio" and factor.isdigit() and int(factor) > 0):
                raise ValueError(f"invalid chunking_method: {self.chunking_method!r}")
        size = self.batch_chunk_size
        if not (size is None or (isinstance(size, int) and size > 0)):
            raise ValueError(f"batch_chunk_size must be positive int or None, got {size!r}")
        supported = {D.float16, D.float32, D.float64, getattr(D, "bfloat16", D.float16)}
        if self.acc_dtype is not None and self.acc_dtype not in supported:
            raise ValueError(
                "acc_dtype must be one of {None, ember.float16, ember.bfloat16, ember.float32, "
                f"ember.float64}}, got {self.acc_dtype!r}. Pass acc_dtype=None to let the op "
                "pick automatically.")

    @staticmethod
    def _aspect_ratio_chunk(method, num_batches, in_features, num_classes):
        """``aspect_ratio[:N]``: chunks whose logits match the input in size, divided by N."""
        factor = int(method.split(":", 1)[1]) if ":" in method else 1
        target = _ceil_div(num_batches, _ceil_div(num_classes, in_features))
        return min((1 << (target - 1).bit_length()) // factor, num_batches)

    def _adjust(self, num_batches, in_features, num_classes, dtype, device=None):
        """The options with "auto" and None resolved for one call (torch's resolution)."""
        policy, method = self.acc_policy, self.chunking_method
        if method == "auto" and self.batch_chunk_size is not None:
            method = None  # an explicit chunk size wins over the heuristic
        if policy == "auto" or method == "auto":
            pick = (_AUTO_FALLBACK if device is None
                    else _AUTO_DEFAULTS.get((device.type, dtype), _AUTO_FALLBACK))
            policy = pick.acc_policy if policy == "auto" else policy
            method = pick.chunking_method if method == "auto" else method
        chunk = (num_batches if self.batch_chunk_size is None
                 else min(self.batch_chunk_size, num_batches))
        if method is not None:
            chunk = self._aspect_ratio_chunk(method, num_batches, in_features, num_classes)
            if self.batch_chunk_size is not None and self.batch_chunk_size != chunk:
                raise ValueError(
                    f"batch_chunk_size (={self.batch_chunk_size}) and chunking_method "
                    f"('{method}') give different chunk sizes ({self.batch_chunk_size} vs "
                    f"{chunk}); pass only one.")
        acc_dtype = self.acc_dtype
        if acc_dtype is None:
            low = dtype in (D.float16, getattr(D, "bfloat16", D.float16))
            auto = (D.float32 if self.acc_policy == "auto" and low and device is not None
                    and device.type == "cpu" else None)
            acc_dtype = auto if auto is not None else dtype
        return dataclasses.replace(self, acc_policy=policy, chunking_method=method,
                                   batch_chunk_size=max(1, chunk), acc_dtype=acc_dtype)


def _check_shapes(input, linear_weight, target, linear_bias):  # noqa: A002
    if input.ndim < 1 or input.ndim > 2:
        raise RuntimeError(f"expected input with dimensionality 1 or 2, got {input.ndim}")
    if linear_weight.ndim < 2:
        raise RuntimeError("expected linear_weight with dimensionality at least 2, got "
                           f"{linear_weight.ndim}")
    if input.shape[-1] != linear_weight.shape[-1]:
        raise RuntimeError(
            "expected equal input and linear_weight last dimensions (in_features), got "
            f"{input.shape[-1]} and {linear_weight.shape[-1]}, respectively")
    classes = (linear_weight.shape[0], *linear_weight.shape[1:-1])
    if linear_bias is not None and tuple(linear_bias.shape) != classes:
        raise RuntimeError(f"expected linear_bias shape {classes}, got "
                           f"{tuple(linear_bias.shape)}")
    if len(classes) > 1 and input.ndim == 1:
        raise RuntimeError(
            f"K-dimensional loss defined by linear_weight shape {tuple(linear_weight.shape)} "
            f"requires batched input, (N, {input.shape[-1]}), got unbatched input with shape "
            f"{tuple(input.shape)}")


def linear_cross_entropy(input, linear_weight, target, *, linear_bias=None,  # noqa: A002
                         weight=None, reduction="mean", ignore_index=None, label_smoothing=0.0,
                         options=None):
    """Compute the cross entropy loss between inputs, transformed linearly, and target."""
    from . import functional as F

    _check_shapes(input, linear_weight, target, linear_bias)
    num_classes, out_features = linear_weight.shape[0], tuple(linear_weight.shape[1:-1])
    logits_shape = (*input.shape[:-1], num_classes, *out_features)
    if tuple(target.shape) == logits_shape and ignore_index is not None:
        raise RuntimeError("ignore_index cannot be specified when target contains probabilities")
    ignore_index = -100 if ignore_index is None else ignore_index
    kwargs = dict(weight=weight, reduction=reduction, ignore_index=ignore_index,
                  label_smoothing=label_smoothing)
    if options is not None:
        chunkable = (not out_features and reduction in {"mean", "sum", "none"}
                     and label_smoothing == 0.0 and target.dtype == D.int64)
        if chunkable:
            return _chunked(input, linear_weight, target, linear_bias, options, kwargs)
        warnings.warn(
            "linear_cross_entropy: ``options`` ignored; chunked path needs reduction in "
            "{'mean','sum','none'}, label_smoothing == 0, target.dtype == int64, out_features "
            f"== (). Got reduction={reduction!r}, label_smoothing={label_smoothing}, "
            f"target.dtype={target.dtype}, out_features={out_features}, tracing=False, "
            "linear_bias.shape="
            f"{tuple(linear_bias.shape) if linear_bias is not None else None}.", stacklevel=2)
    if out_features:
        rows = math.prod(out_features, start=num_classes)
        linear_weight = linear_weight.reshape((rows, input.shape[-1]))
        linear_bias = None if linear_bias is None else linear_bias.reshape(rows)
    logits = F.linear(input, linear_weight, linear_bias).reshape(logits_shape)
    return F.cross_entropy(logits, target, **kwargs)


def _chunked(input, linear_weight, target, linear_bias, options, kwargs):  # noqa: A002
    """The loss computed ``options.batch_chunk_size`` rows at a time (class-index targets)."""
    from .._ops.shape import cat
    from . import functional as F

    batched = input.ndim == 2
    x, t = (input, target) if batched else (input.unsqueeze(0), target.unsqueeze(0))
    options = options._adjust(x.shape[0], x.shape[1], linear_weight.shape[0], x.dtype, x.device)
    size, reduction = options.batch_chunk_size, kwargs["reduction"]
    per_row = dict(kwargs, reduction="none")
    pieces = [F.cross_entropy(F.linear(x[s:s + size], linear_weight, linear_bias),
                              t[s:s + size], **per_row) for s in range(0, x.shape[0], size)]
    losses = cat(pieces) if len(pieces) > 1 else pieces[0]
    if reduction == "none":
        return losses if batched else losses.squeeze(0)
    total = losses.sum()
    if reduction == "sum":
        return total
    kept = t != kwargs["ignore_index"]
    weight = kwargs["weight"]
    if weight is None:
        return total / kept.sum().to(total.dtype)
    safe = t.masked_fill(~kept, 0)
    return total / (weight[safe] * kept.to(weight.dtype)).sum()
