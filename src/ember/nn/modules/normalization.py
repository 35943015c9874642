"""Normalization layers: BatchNorm, InstanceNorm, LayerNorm, RMSNorm, GroupNorm,
LocalResponseNorm, CrossMapLRN2d."""
from __future__ import annotations

__all__ = ["BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "CrossMapLRN2d", "InstanceNorm1d",
           "InstanceNorm2d", "InstanceNorm3d", "LayerNorm", "GroupNorm", "LocalResponseNorm", "RMSNorm"]

import numbers
import warnings

from ... import _dtype as D
from ..._creation import empty, ones, tensor, zeros
from .. import functional as F
from .. import init
from ..parameter import Parameter
from ._functions import CrossMapLRN2d as _cross_map_lrn2d
from .module import Module


def _affine_params(module, affine, bias, n, dtype, device=None):
    if affine:
        module.weight = Parameter(empty(n, dtype=dtype, device=device))
        if bias:
            module.bias = Parameter(empty(n, dtype=dtype, device=device))
        else:
            module.register_parameter("bias", None)
    else:
        module.register_parameter("weight", None)
        module.register_parameter("bias", None)


def _reset_affine(module):
    """torch's initial affine parameters of a norm layer: weight 1, bias 0."""
    if module.weight is not None:
        init.ones_(module.weight)
    if getattr(module, "bias", None) is not None:
        init.zeros_(module.bias)


class _NormBase(Module):
    """Common base of batch and instance norm: affine parameters and running statistics."""

    _version = 2  # torch's: the state_dict's metadata (and so its saved files) carry it

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True,
                 track_running_stats=True, device=None, dtype=None, *, bias=True):
        super().__init__()
        self.num_features = num_features
        self.eps = eps
        self.momentum = momentum
        self.affine = affine
        self.track_running_stats = track_running_stats
        _affine_params(self, affine, bias, num_features, dtype, device)
        if track_running_stats:
            self.register_buffer("running_mean", zeros(num_features, dtype=dtype, device=device))
            self.register_buffer("running_var", ones(num_features, dtype=dtype, device=device))
            self.register_buffer("num_batches_tracked", tensor(0, dtype=D.int64, device=device))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)
        self.reset_parameters()

    def reset_running_stats(self):
        if self.track_running_stats:
            init.zeros_(self.running_mean)
            init.ones_(self.running_var)
            init.zeros_(self.num_batches_tracked)

    def reset_parameters(self):
        self.reset_running_stats()
        _reset_affine(self)

    def extra_repr(self):
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
                f"affine={self.affine}, bias={self.bias is not None}, "
                f"track_running_stats={self.track_running_stats}")


class _BatchNorm(_NormBase):
    _dims = (2, 3)

    def _check_input_dim(self, input):  # noqa: A002
        if input.ndim not in self._dims:
            want = " or ".join(f"{d}D" for d in self._dims)
            raise ValueError(f"expected {want} input (got {input.ndim}D input)")

    def forward(self, input):  # noqa: A002
        self._check_input_dim(input)
        factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats and self.num_batches_tracked is not None:
            self.num_batches_tracked.add_(1)
            # NOTE: momentum=None means a cumulative moving average.
            factor = (1.0 / float(self.num_batches_tracked) if self.momentum is None
                      else self.momentum)
        training = self.training or (self.running_mean is None and self.running_var is None)
        use_stats = not self.training or self.track_running_stats
        return F.batch_norm(input, self.running_mean if use_stats else None,
                            self.running_var if use_stats else None, self.weight, self.bias,
                            training, factor, self.eps)


class BatchNorm1d(_BatchNorm):
    """Applies Batch Normalization over a 2D or 3D input."""

    _dims = (2, 3)


class BatchNorm2d(_BatchNorm):
    """Applies Batch Normalization over a 4D input."""

    _dims = (4,)


class BatchNorm3d(_BatchNorm):
    """Applies Batch Normalization over a 5D input."""

    _dims = (5,)


class _InstanceNorm(_NormBase):
    _no_batch_dim = 2

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=False,
                 track_running_stats=False, device=None, dtype=None, *, bias=True):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device,
                         dtype, bias=bias)

    def _check_input_dim(self, input):  # noqa: A002
        n = self._no_batch_dim
        if input.ndim not in (n, n + 1):
            raise ValueError(f"expected {n}D or {n + 1}D input (got {input.ndim}D input)")

    def forward(self, input):  # noqa: A002
        self._check_input_dim(input)
        feature_dim = input.ndim - self._no_batch_dim
        if input.shape[feature_dim] != self.num_features:
            if self.affine:
                raise ValueError(f"expected input's size at dim={feature_dim} to match "
                                 f"num_features ({self.num_features}), but got: "
                                 f"{input.shape[feature_dim]}.")
            warnings.warn(f"input's size at dim={feature_dim} does not match num_features. "
                          "You can silence this warning by not passing in num_features, which "
                          "is not used because affine=False", UserWarning, stacklevel=2)
        if input.ndim == self._no_batch_dim:
            return self._normalize(input.unsqueeze(0)).squeeze(0)
        return self._normalize(input)

    def _normalize(self, input):  # noqa: A002 - (not _apply: Module._apply moves the module)
        return F.instance_norm(input, self.running_mean, self.running_var, self.weight,
                               self.bias, self.training or not self.track_running_stats,
                               self.momentum if self.momentum is not None else 0.0, self.eps)


class InstanceNorm1d(_InstanceNorm):
    """Applies Instance Normalization over a 2D (unbatched) or 3D (batched) input."""

    _no_batch_dim = 2


class InstanceNorm2d(_InstanceNorm):
    """Applies Instance Normalization over a 3D (unbatched) or 4D (batched) input."""

    _no_batch_dim = 3


class InstanceNorm3d(_InstanceNorm):
    """Applies Instance Normalization over a 4D (unbatched) or 5D (batched) input."""

    _no_batch_dim = 4


class LayerNorm(Module):
    """Applies Layer Normalization over a mini-batch of inputs."""

    def __init__(self, normalized_shape, eps=1e-5, elementwise_affine=True, bias=True,
                 device=None, dtype=None):
        super().__init__()
        if isinstance(normalized_shape, numbers.Integral):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        _affine_params(self, elementwise_affine, bias, self.normalized_shape, dtype,
                       device)
        self.reset_parameters()

    def reset_parameters(self):
        _reset_affine(self)

    def forward(self, input):  # noqa: A002
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return (f"{self.normalized_shape}, eps={self.eps}, "
                f"elementwise_affine={self.elementwise_affine}, bias={self.bias is not None}")


class RMSNorm(Module):
    """Applies Root Mean Square Layer Normalization over a mini-batch of inputs."""

    def __init__(self, normalized_shape, eps=None, elementwise_affine=True, device=None,
                 dtype=None):
        super().__init__()
        if isinstance(normalized_shape, numbers.Integral):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(empty(self.normalized_shape, dtype=dtype, device=device))
        else:
            self.register_parameter("weight", None)
        self.reset_parameters()

    def reset_parameters(self):
        _reset_affine(self)

    def forward(self, x):
        return F.rms_norm(x, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self):
        return (f"{self.normalized_shape}, eps={self.eps}, "
                f"elementwise_affine={self.elementwise_affine}")


class GroupNorm(Module):
    """Applies Group Normalization over a mini-batch of inputs."""

    def __init__(self, num_groups, num_channels, eps=1e-5, affine=True, device=None,
                 dtype=None, *, bias=True):
        super().__init__()
        if num_channels % num_groups != 0:
            raise ValueError(f"num_channels ({num_channels}) must be divisible by num_groups "
                             f"({num_groups})")
        self.num_groups = num_groups
        self.num_channels = num_channels
        self.eps = eps
        self.affine = affine
        _affine_params(self, affine, bias, num_channels, dtype, device)
        self.reset_parameters()

    def reset_parameters(self):
        _reset_affine(self)

    def forward(self, input):  # noqa: A002
        return F.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return (f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}, "
                f"bias={self.bias is not None}")


class _AcrossChannels(Module):
    """The settings of a normalisation across neighbouring channels (size, alpha, beta, k)."""

    def __init__(self, size, alpha, beta, k):
        super().__init__()
        self.size = size
        self.alpha = alpha
        self.beta = beta
        self.k = k

    def extra_repr(self):
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"


class LocalResponseNorm(_AcrossChannels):
    """Applies local response normalization over an input signal (across channels)."""

    def __init__(self, size, alpha=1e-4, beta=0.75, k=1.0):
        super().__init__(size, alpha, beta, k)

    def forward(self, input):  # noqa: A002
        return F.local_response_norm(input, self.size, self.alpha, self.beta, self.k)


class CrossMapLRN2d(_AcrossChannels):
    """Local response normalisation across the channels of a 4-D input (torch's legacy
    form: its own window rule and hand-written gradient)."""

    def __init__(self, size, alpha=1e-4, beta=0.75, k=1):
        super().__init__(size, alpha, beta, k)

    def forward(self, input):  # noqa: A002
        return _cross_map_lrn2d.apply(input, self.size, self.alpha, self.beta, self.k)
