"""Adafactor: Adam-like steps with a factored second moment (torch's single-tensor update)."""
from __future__ import annotations

import numpy as np

from .._backend import get_xp
from .._tensor import Tensor, _wrap
from .optimizer import (
    Optimizer,
    _closure_loss,
    _incr,
    _lerp_,
    _scalar_tensor,
    _step_to_tensor,
    _to_scalar,
    _use_grad_for_differentiable,
    _zeros_like,
)

__all__ = ["Adafactor"]


def _norm(a) -> float:
    """The 2-norm of an array, as a Python float."""
    return float(get_xp(a).sqrt((a * a).sum()))


def _mean_square_along(grad, axis):
    """norm(grad, dim=axis, keepdim=True) squared, over the size of ``axis`` (in grad's
    dtype, root then square as torch's formula)."""
    xp = get_xp(grad)
    return xp.square(xp.sqrt((grad * grad).sum(axis=axis, keepdims=True))) / grad.shape[axis]


class Adafactor(Optimizer):
    """Implements Adafactor (Shazeer and Stern, 2018) as torch does: for matrices the second
    moment is kept as row and column means (memory O(m + n), not O(m n)); the step is
    relative to the parameter's RMS and clipped by ``d``."""

    _sparse_grads_refused = "Adafactor does not support sparse gradients"

    def __init__(self, params, lr=1e-2, beta2_decay=-0.8, eps=(None, 1e-3), d=1.0,
                 weight_decay=0.0, *, foreach=None, maximize=False) -> None:
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not 0.0 >= beta2_decay:
            raise ValueError(f"beta2_decay should be <= 0 but is: {beta2_decay}")
        if eps[0] is not None and not 0.0 <= eps[0]:
            raise ValueError(f"epsilon1 should be >= 0 but is: {eps[0]}")
        if not 0.0 <= eps[1]:
            raise ValueError(f"epsilon2 should be >= 0 but is: {eps[1]}")
        if not 1.0 <= d:
            raise ValueError(f"Clipping threshold d should be >= 1 but is: {d}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"weight_decay should be >= 0 but is: {weight_decay}")
        defaults = {"lr": lr, "beta2_decay": beta2_decay, "eps": eps, "d": d,
                    "weight_decay": weight_decay, "foreach": foreach, "maximize": maximize}
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("foreach", None)
        _step_to_tensor(self, "step")

    def _init_state(self, p):
        state = self.state[p]
        if len(state) == 0:
            state["step"] = _scalar_tensor(0.0)
            grad = p._grad._data
            if grad.ndim > 1:  # a factored second moment: one value per row and per column
                xp = get_xp(grad)
                state["row_var"] = _wrap(xp.zeros(grad.shape[:-1] + (1,), grad.dtype))
                state["col_var"] = _wrap(xp.zeros(grad.shape[:-2] + (1,) + grad.shape[-1:],
                                                  grad.dtype))
            else:
                state["variance"] = _zeros_like(p._grad)
        return state

    @_use_grad_for_differentiable
    def step(self, closure=None):
        """Perform a single optimization step (``closure`` re-evaluates the model)."""
        loss = _closure_loss(closure)
        self._refuse_sparse_grads()
        for group in self.param_groups:
            lr = _to_scalar(group["lr"])
            eps1, eps2 = group["eps"]
            d, weight_decay = group["d"], group["weight_decay"]
            for p in group["params"]:
                if p._grad is None:
                    continue
                if p.is_complex():
                    raise RuntimeError("Adafactor does not support complex parameters")
                state = self._init_state(p)
                self._update(p, state, lr, eps1, eps2, d, weight_decay, group)
        return loss

    @staticmethod
    def _update(p, state, lr, eps1, eps2, d, weight_decay, group):
        grad, param = p._grad._data, p._data
        if group["maximize"]:
            grad = -grad
        if eps1 is None:
            eps1 = float(np.finfo(param.dtype).eps)
        step = _incr(state["step"])
        one_minus_beta2_t = step ** group["beta2_decay"]
        rho_t = min(lr, 1 / step ** 0.5)
        alpha = max(eps2, _norm(param) / param.size ** 0.5) * rho_t
        if weight_decay != 0:
            param *= 1 - lr * weight_decay
        xp = get_xp(param)
        if grad.ndim > 1:
            row_var, col_var = state["row_var"]._data, state["col_var"]._data
            _lerp_(row_var, _mean_square_along(grad, -1), one_minus_beta2_t)
            _lerp_(col_var, _mean_square_along(grad, -2), one_minus_beta2_t)
            var_estimate = row_var @ col_var
            var_estimate /= xp.maximum(row_var.mean(axis=-2, keepdims=True), eps1)
        else:
            variance = state["variance"]._data
            _lerp_(variance, grad * grad, one_minus_beta2_t)
            var_estimate = variance.copy()
        update = 1 / xp.sqrt(xp.maximum(var_estimate, eps1 * eps1))
        update *= grad
        denom = max(1.0, _norm(update) / (update.size ** 0.5 * d))
        param += (-alpha / denom) * update
        p._bump_version()
        for key in ("row_var", "col_var", "variance"):
            if key in state:
                state[key]._bump_version()


