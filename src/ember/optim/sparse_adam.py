"""SparseAdam: Adam masked to the entries of sparse COO gradients (dense ones are refused)."""
from __future__ import annotations

import math

from .._backend import get_xp
from .._sparse.coo import coalesce
from .._tensor import Tensor
from .optimizer import (
    Optimizer,
    _closure_loss,
    _to_scalar,
    _use_grad_for_differentiable,
    _zeros_like,
)

__all__ = ["SparseAdam"]


class SparseAdam(Optimizer):
    """SparseAdam: a masked Adam for parameters whose gradients have a sparse layout
    (``nn.Embedding(sparse=True)``'s); a dense gradient gets torch's error."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, maximize=False):
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 < lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 < eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= betas[0] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
        if not 0.0 <= betas[1] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
        defaults = {"lr": lr, "betas": betas, "eps": eps, "maximize": maximize}
        super().__init__(params, defaults)
        complex_params = [[i, j] for i, group in enumerate(self.param_groups)
                          for j, p in enumerate(group["params"]) if p.is_complex()]
        if complex_params:
            raise ValueError(f"Complex params at indices {complex_params}: SparseAdam does not "
                             "support complex parameters")

    @_use_grad_for_differentiable
    def step(self, closure=None):
        """Perform a single optimization step (``closure`` re-evaluates the model)."""
        loss = _closure_loss(closure)
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            lr, eps = _to_scalar(group["lr"]), group["eps"]
            maximize = group.get("maximize", False)
            for p in group["params"]:
                if p._grad is None:
                    continue
                if not p._grad.is_sparse:
                    raise RuntimeError("SparseAdam does not support dense gradients, please "
                                       "consider Adam instead")
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = 0  # (a Python int in torch's SparseAdam)
                    state["exp_avg"] = _zeros_like(p)
                    state["exp_avg_sq"] = _zeros_like(p)
                state["step"] += 1
                _sparse_adam_update(p, state, beta1, beta2, lr, eps, maximize)
        return loss


def _sparse_adam_update(p, state, beta1, beta2, lr, eps, maximize):
    """torch's single-tensor sparse Adam: the moments and the parameter change only at the
    gradient's (coalesced) positions, each with Adam's update there."""
    grad = coalesce(p._grad._data)
    values = -grad.values if maximize else grad.values
    if values.size == 0:
        return
    at = tuple(grad.indices)
    exp_avg, exp_avg_sq = state["exp_avg"]._data, state["exp_avg_sq"]._data
    old_exp_avg, old_exp_avg_sq = exp_avg[at], exp_avg_sq[at]
    exp_avg_update = (values - old_exp_avg) * (1 - beta1)
    exp_avg[at] += exp_avg_update
    exp_avg_sq_update = (values ** 2 - old_exp_avg_sq) * (1 - beta2)
    exp_avg_sq[at] += exp_avg_sq_update
    numer = exp_avg_update + old_exp_avg
    denom = get_xp(values).sqrt(exp_avg_sq_update + old_exp_avg_sq) + eps
    step = state["step"]
    step_size = lr * math.sqrt(1 - beta2 ** step) / (1 - beta1 ** step)
    p._data[at] += -step_size * (numer / denom)
    for t in (state["exp_avg"], state["exp_avg_sq"], p):
        t._bump_version()
