"""SyncBatchNorm: batch normalization whose batch statistics span every process of a group.

In training each process computes its shard's per-channel count, mean and biased variance;
one all-gather gives every process everyone's, from which it forms the statistics of the
whole (concatenated) batch. Backward all-reduces the two per-channel sums the input gradient
needs; the weight and bias gradients stay local (DistributedDataParallel averages them).
"""
from __future__ import annotations

__all__ = ["SyncBatchNorm"]

from ... import _creation as C
from ..._ops.shape import cat
from ..._tensor import Tensor
from ...autograd.function import Function
from ...autograd.grad_mode import no_grad
from .. import functional as F
from .normalization import _BatchNorm


def _channel_shape(x):
    return (1, -1) + (1,) * (x.ndim - 2)


def _reduced_dims(x):
    return [0] + list(range(2, x.ndim))


class _SyncBatchNormFunction(Function):
    @staticmethod
    def forward(ctx, input, weight, bias, running_mean, running_var, eps, momentum,
                group, world_size):
        from ... import distributed as dist
        input = input.contiguous()
        channels = input.shape[1]
        local = input.numel() // channels
        if local == 1 and world_size < 2:
            raise ValueError("Expected more than 1 value per channel when training, got input "
                             f"size {local}")
        if input.numel() > 0:
            dims = _reduced_dims(input)
            mean = input.mean(dims)
            var = input.var(dims, correction=0)
            stats = cat([mean, var, C.full((1,), local, dtype=input.dtype,
                                              device=input.device)])
        else:  # an empty shard still takes part in the all-gather, with a count of 0
            stats = C.zeros(2 * channels + 1, dtype=input.dtype, device=input.device)
        everyone = C.empty(world_size, 2 * channels + 1, dtype=input.dtype, device=input.device)
        dist.all_gather_into_tensor(everyone, stats, group=group)
        means, variances, counts = everyone.split(channels, dim=1)
        total = counts.sum()
        mean = (means * counts).sum(0) / total
        # Chan's combination: each shard's spread around its own mean, plus its mean's offset.
        var = ((variances + (means - mean) ** 2) * counts).sum(0) / total
        invstd = (var + eps).rsqrt()
        if running_mean is not None:
            running_mean.mul_(1 - momentum).add_(mean * momentum)
        if running_var is not None:
            n = float(total)
            running_var.mul_(1 - momentum).add_(var * (momentum * n / max(n - 1, 1)))
        ctx.save_for_backward(input, weight, mean, invstd)
        ctx.total = total
        ctx.group = group
        shape = _channel_shape(input)
        out = (input - mean.view(shape)) * invstd.view(shape)
        if weight is not None:
            out = out * weight.view(shape)
        if bias is not None:
            out = out + bias.view(shape)
        return out

    @staticmethod
    def backward(ctx, grad_output):
        from ... import distributed as dist
        input, weight, mean, invstd = ctx.saved_tensors
        needs_input, needs_weight, needs_bias = ctx.needs_input_grad[:3]
        channels = input.shape[1]
        grad_input = grad_weight = grad_bias = None
        if input.numel() == 0:  # nothing here, but the others wait for this all-reduce
            if needs_input:
                dist.all_reduce(C.zeros(2 * channels, dtype=input.dtype, device=input.device),
                                group=ctx.group)
            return (None,) * 9
        shape = _channel_shape(input)
        dims = _reduced_dims(input)
        grad_output = grad_output.contiguous()
        xmu = input - mean.view(shape)
        sum_dy = grad_output.sum(dims)
        sum_dy_xmu = (grad_output * xmu).sum(dims)
        if needs_weight and weight is not None:
            grad_weight = sum_dy_xmu * invstd
        if needs_bias:
            grad_bias = sum_dy
        if needs_input:
            sums = cat([sum_dy, sum_dy_xmu])
            dist.all_reduce(sums, group=ctx.group)
            mean_dy, mean_dy_xmu = (sums / ctx.total).split(channels)
            scale = invstd if weight is None else invstd * weight
            grad_input = (grad_output - mean_dy.view(shape)
                          - xmu * (invstd ** 2 * mean_dy_xmu).view(shape)) * scale.view(shape)
        return grad_input, grad_weight, grad_bias, None, None, None, None, None, None


class SyncBatchNorm(_BatchNorm):
    """Batch normalization over the batch of every process of ``process_group`` together
    (in training, once a process group is initialized); any input of at least 2 dimensions."""

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True,
                 track_running_stats=True, process_group=None, device=None, dtype=None, *,
                 bias=True):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device,
                         dtype, bias=bias)
        self.process_group = process_group

    def _check_input_dim(self, input):
        if input.dim() < 2:
            raise ValueError(f"expected at least 2D input (got {input.dim()}D input)")

    def forward(self, input: Tensor) -> Tensor:
        self._check_input_dim(input)
        if input.size(1) == 0:
            raise ValueError("SyncBatchNorm number of input channels should be non-zero")
        factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats:
            self.num_batches_tracked.add_(1)
            factor = (1.0 / self.num_batches_tracked.item() if self.momentum is None
                      else self.momentum)
        bn_training = self.training or (self.running_mean is None and self.running_var is None)
        use_stats = not self.training or self.track_running_stats
        running_mean = self.running_mean if use_stats else None
        running_var = self.running_var if use_stats else None
        group, world_size = self._sync_group() if bn_training and self.training else (None, 1)
        if world_size < 2:
            return F.batch_norm(input, running_mean, running_var, self.weight, self.bias,
                                bn_training, factor, self.eps)
        return _SyncBatchNormFunction.apply(input, self.weight, self.bias, running_mean,
                                            running_var, self.eps, factor, group, world_size)

    def _sync_group(self):
        from ... import distributed as dist
        if not (dist.is_available() and dist.is_initialized()):
            return None, 1
        group = self.process_group or dist.group.WORLD
        return group, dist.get_world_size(group)

    @classmethod
    def convert_sync_batchnorm(cls, module, process_group=None):
        """``module`` with every BatchNorm*D layer replaced by a SyncBatchNorm that shares
        its parameters and buffers (a BatchNorm*D itself is returned converted)."""
        out = module
        if isinstance(module, _BatchNorm):
            out = SyncBatchNorm(module.num_features, module.eps, module.momentum, module.affine,
                                module.track_running_stats, process_group,
                                bias=module.bias is not None)
            if module.affine:
                with no_grad():
                    out.weight = module.weight
                    out.bias = module.bias
            out.running_mean = module.running_mean
            out.running_var = module.running_var
            out.num_batches_tracked = module.num_batches_tracked
            out.training = module.training
            if hasattr(module, "qconfig"):
                out.qconfig = module.qconfig
        for name, child in module.named_children():
            out.add_module(name, cls.convert_sync_batchnorm(child, process_group))
        del module
        return out
