"""``ember.masked``: torch.masked's reductions and normalizations with a ``mask`` argument
(strided tensors): masked-out elements count as the operation's identity."""
from ._ops import (amax, amin, argmax, argmin, cumprod, cumsum, log_softmax, logsumexp, mean,
                   prod, softmax, softmin, sum)

__all__ = ["amax", "amin", "argmax", "argmin", "cumprod", "cumsum", "log_softmax", "logsumexp",
           "mean", "prod", "softmax", "softmin", "sum"]
