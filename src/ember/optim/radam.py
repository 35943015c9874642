"""RAdam: rectified Adam (torch's single-tensor update)."""
from __future__ import annotations

from .._backend import get_xp
from .._ops.fused import add_product, add_scaled
from .optimizer import (
    Optimizer,
    _check_capturable,
    _check_common,
    _closure_loss,
    _decayed_moments,
    _incr,
    _lerp_,
    _real,
    _scalar_tensor,
    _squeezed,
    _step_to_tensor,
    _to_scalar,
    _use_grad_for_differentiable,
    _zeros_like,
)

__all__ = ["RAdam"]


class RAdam(Optimizer):
    """Implements the RAdam algorithm."""

    _sparse_grads_refused = "RAdam does not support sparse gradients"

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 decoupled_weight_decay=False, *, foreach=None, maximize=False,
                 capturable=False, differentiable=False) -> None:
        _check_common(lr, eps=eps, betas=betas, weight_decay=weight_decay)
        defaults = {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay,
                    "maximize": maximize, "foreach": foreach, "capturable": capturable,
                    "decoupled_weight_decay": decoupled_weight_decay,
                    "differentiable": differentiable}
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("foreach", None)
            group.setdefault("maximize", False)
            group.setdefault("differentiable", False)
            group.setdefault("decoupled_weight_decay", False)
            group.setdefault("capturable", False)
        _step_to_tensor(self, "step")

    @_use_grad_for_differentiable
    def step(self, closure=None):
        """Perform a single optimization step (``closure`` re-evaluates the model)."""
        loss = _closure_loss(closure)
        self._refuse_sparse_grads()
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            lr, eps = _to_scalar(group["lr"]), group["eps"]
            weight_decay, maximize = group["weight_decay"], group["maximize"]
            decoupled = group["decoupled_weight_decay"]
            for p in group["params"]:
                if p._grad is None:
                    continue
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = _scalar_tensor(0.0)
                    state["exp_avg"] = _zeros_like(p)
                    state["exp_avg_sq"] = _zeros_like(p)
                grad = p._grad._data
                if maximize:
                    grad = -grad
                param = p._data
                param_r, grad_r = _real(param), _real(grad)
                _check_capturable(group, p)
                if group["differentiable"]:
                    _differentiable_radam(p, group, state)
                    continue
                step = _incr(state["step"])
                if weight_decay != 0:
                    if decoupled:
                        param *= 1 - lr * weight_decay
                        p._bump_version()  # (torch's param.mul_: a write of its own)
                    else:
                        grad_r = _real(add_scaled(grad, param, weight_decay))
                exp_avg = _real(state["exp_avg"]._data)
                exp_avg_sq = _real(state["exp_avg_sq"]._data)
                _lerp_(exp_avg, grad_r, 1 - beta1)
                exp_avg_sq *= beta2
                exp_avg_sq[...] = add_product(exp_avg_sq, grad_r, grad_r, 1 - beta2)

                bias_correction1 = 1 - beta1 ** step
                bias_correction2 = 1 - beta2 ** step
                bias_corrected_exp_avg = exp_avg / bias_correction1
                rect = _rectification(beta2, step)
                if rect is not None:
                    sq = get_xp(param).sqrt(exp_avg_sq)
                    sq += eps
                    # NOTE: torch's ``float / tensor`` is ``tensor.reciprocal() * float``.
                    adaptive_lr = (1 / sq) * bias_correction2 ** 0.5
                    param_r -= bias_corrected_exp_avg * lr * adaptive_lr * rect
                else:
                    param_r -= bias_corrected_exp_avg * lr
                p._bump_version()
        return loss


def _rectification(beta2, step):
    """RAdam's variance rectification term at ``step``, or None while the variance of the
    adaptive learning rate is intractable (rho_t <= 5: the step is plain momentum)."""
    bias_correction2 = 1 - beta2 ** step
    rho_inf = 2 / (1 - beta2) - 1
    rho_t = rho_inf - 2 * step * (beta2 ** step) / bias_correction2
    if rho_t <= 5.0:
        return None
    return ((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t)) ** 0.5


def _differentiable_radam(p, group, state):
    """torch's single-tensor RAdam of ``p`` with differentiable=True, in recorded Tensor ops
    (grad mode is on)."""
    beta1, beta2 = group["betas"]
    lr = _squeezed(group["lr"])
    param, grad, exp_avg, exp_avg_sq, step = _decayed_moments(p, group, state)
    exp_avg.lerp_(grad, 1 - beta1)
    exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
    bias_correction2 = 1 - beta2 ** step
    bias_corrected_exp_avg = exp_avg / (1 - beta1 ** step)
    rect = _rectification(beta2, step)
    if rect is not None:
        adaptive_lr = (bias_correction2 ** 0.5) / exp_avg_sq.sqrt().add(group["eps"])
        param.add_(bias_corrected_exp_avg * lr * adaptive_lr * rect, alpha=-1.0)
    else:
        param.add_(bias_corrected_exp_avg * lr, alpha=-1.0)
