"""AdaptiveLogSoftmaxWithLoss: the efficient softmax approximation of Grave et al. (a head
over the frequent classes and one cluster per tail of rarer classes)."""
from __future__ import annotations

__all__ = ["AdaptiveLogSoftmaxWithLoss"]

import itertools
from collections import namedtuple

from ..._ops.reduction import argmax
from .. import functional as F
from .container import ModuleList, Sequential
from .linear import Linear
from .module import Module

_ASMoutput = namedtuple("_ASMoutput", ["output", "loss"])


def _check_cutoffs(cutoffs, n_classes):
    if len(cutoffs) == 0:
        raise ValueError("cutoffs should be a sequence of length larger than 0")
    if (cutoffs != sorted(cutoffs) or min(cutoffs) <= 0 or max(cutoffs) > n_classes - 1
            or len(set(cutoffs)) != len(cutoffs) or any(int(c) != c for c in cutoffs)):
        raise ValueError("cutoffs should be a sequence of unique, positive integers sorted in "
                         "an increasing order, where each value is between 1 and n_classes-1")


def _check_batch(input, target):  # noqa: A002
    if target.ndim == 1:
        if input.shape[0] != target.shape[0]:
            raise RuntimeError("Input and target should have the same size in the batch "
                               "dimension.")
        if input.ndim != 2:
            raise RuntimeError("1D target tensor expects 2D input tensors, but found inputs "
                               f"with size {input.size()}")
    elif target.ndim == 0:
        if input.ndim != 1:
            raise RuntimeError("0D target tensor expects 1D input tensors, but found inputs "
                               f"with size {input.size()}")
    else:
        raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")


class AdaptiveLogSoftmaxWithLoss(Module):
    """Efficient softmax approximation: returns (target log-probabilities, mean NLL)."""

    def __init__(self, in_features, n_classes, cutoffs, div_value=4.0, head_bias=False,
                 device=None, dtype=None):
        super().__init__()
        cutoffs = list(cutoffs)
        _check_cutoffs(cutoffs, n_classes)
        factory = {"device": device, "dtype": dtype}
        self.in_features = in_features
        self.n_classes = n_classes
        self.cutoffs = cutoffs + [n_classes]
        self.div_value = div_value
        self.head_bias = head_bias
        self.shortlist_size = self.cutoffs[0]
        self.n_clusters = len(self.cutoffs) - 1
        self.head_size = self.shortlist_size + self.n_clusters
        self.head = Linear(in_features, self.head_size, bias=head_bias, **factory)
        self.tail = ModuleList()
        for i in range(self.n_clusters):
            hidden = int(in_features // (div_value ** (i + 1)))
            size = self.cutoffs[i + 1] - self.cutoffs[i]
            self.tail.append(Sequential(Linear(in_features, hidden, bias=False, **factory),
                                        Linear(hidden, size, bias=False, **factory)))

    def reset_parameters(self):
        self.head.reset_parameters()
        for to_hidden, to_out in self.tail:
            to_hidden.reset_parameters()
            to_out.reset_parameters()

    def forward(self, input_, target_):
        _check_batch(input_, target_)
        batched = target_.ndim > 0
        input = input_ if batched else input_.unsqueeze(0)  # noqa: A001
        target = target_ if batched else target_.unsqueeze(0)
        batch = target.shape[0]
        output = input.new_zeros(batch)
        # the head's column each row reads: its class (shortlist) or its cluster's column
        head_column = target.new_empty(batch)
        used_rows = 0
        bounds = [0] + self.cutoffs
        for i, (low, high) in enumerate(itertools.pairwise(bounds)):
            in_cluster = (target >= low) & (target < high)
            rows = in_cluster.nonzero().squeeze()
            if rows.numel() == 0:
                continue
            if i == 0:
                head_column.index_copy_(0, rows, target[in_cluster])
            else:
                relative = target[in_cluster] - low
                cluster_logprob = F.log_softmax(self.tail[i - 1](input.index_select(0, rows)),
                                                dim=1)
                head_column.index_fill_(0, rows, self.shortlist_size + i - 1)
                output.index_copy_(0, rows,
                                   cluster_logprob.gather(1, relative.unsqueeze(1)).squeeze(1))
            used_rows += rows.numel()
        if used_rows != batch:
            raise RuntimeError(
                f"Target values should be in [0, {self.n_classes - 1}], but values in range "
                f"[{target.min().item()}, {target.max().item()}] were found. ")
        head_logprob = F.log_softmax(self.head(input), dim=1)
        output += head_logprob.gather(1, head_column.unsqueeze(1)).squeeze()
        loss = (-output).mean()
        if not batched:
            output = output.squeeze(0)
        return _ASMoutput(output, loss)

    def _get_full_log_prob(self, input, head_output):  # noqa: A002
        """The log-probabilities of all n_classes from the input and the head's output."""
        out = input.new_empty((head_output.shape[0], self.n_classes))
        head_logprob = F.log_softmax(head_output, dim=1)
        out[:, :self.shortlist_size] = head_logprob[:, :self.shortlist_size]
        for i, (start, stop) in enumerate(itertools.pairwise(self.cutoffs)):
            cluster_logprob = F.log_softmax(self.tail[i](input), dim=1)
            out[:, start:stop] = (cluster_logprob
                                  + head_logprob[:, self.shortlist_size + i].unsqueeze(1))
        return out

    def log_prob(self, input):  # noqa: A002
        """Log-probabilities of every class, (N, n_classes)."""
        return self._get_full_log_prob(input, self.head(input))

    def predict(self, input):  # noqa: A002
        """The most probable class of each row (``log_prob(input).argmax(1)``, cheaper)."""
        head_output = self.head(input)
        output = argmax(head_output, dim=1)
        not_in_shortlist = output >= self.shortlist_size
        if not not_in_shortlist.any():
            return output
        if not_in_shortlist.all():
            return argmax(self._get_full_log_prob(input, head_output), dim=1)
        log_prob = self._get_full_log_prob(input[not_in_shortlist],
                                           head_output[not_in_shortlist])
        output[not_in_shortlist] = argmax(log_prob, dim=1)
        return output
