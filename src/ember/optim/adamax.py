"""Adamax: Adam with the infinity norm (torch's single-tensor update)."""
from __future__ import annotations

from .._backend import get_xp
from .._ops.fused import add_scaled
from .._ops.shape import cat
from .optimizer import (
    Optimizer,
    _check_capturable,
    _check_common,
    _closure_loss,
    _incr,
    _lerp_,
    _number,
    _real,
    _real_views,
    _scalar_tensor,
    _squeezed,
    _step_to_tensor,
    _to_scalar,
    _use_grad_for_differentiable,
    _zeros_like,
)

__all__ = ["Adamax"]


class Adamax(Optimizer):
    """Implements the Adamax algorithm (a variant of Adam based on the infinity norm)."""

    _sparse_grads_refused = "Adamax does not support sparse gradients"

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 foreach=None, *, maximize=False, differentiable=False,
                 capturable=False) -> None:
        _check_common(lr, eps=eps, betas=betas, weight_decay=weight_decay)
        defaults = {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay,
                    "foreach": foreach, "maximize": maximize, "differentiable": differentiable,
                    "capturable": capturable}
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("foreach", None)
            group.setdefault("maximize", False)
            group.setdefault("differentiable", False)
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
            for p in group["params"]:
                if p._grad is None:
                    continue
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = _scalar_tensor(0.0)
                    state["exp_avg"] = _zeros_like(p)
                    state["exp_inf"] = _zeros_like(p)
                grad = p._grad._data
                if maximize:
                    grad = -grad
                _check_capturable(group, p)
                if group["differentiable"]:
                    _differentiable_adamax(p, group, state)
                    continue
                step = _incr(state["step"])
                param = p._data
                if weight_decay != 0:
                    grad = add_scaled(grad, param, weight_decay)
                param, grad = _real(param), _real(grad)
                exp_avg, exp_inf = _real(state["exp_avg"]._data), _real(state["exp_inf"]._data)
                xp = get_xp(param)
                _lerp_(exp_avg, grad, 1 - beta1)
                exp_inf *= beta2
                norm = xp.abs(grad)
                norm += eps
                xp.maximum(exp_inf, norm, out=exp_inf)
                clr = lr / (1 - beta1 ** step)
                param += (-clr * exp_avg) / exp_inf
                p._bump_version()
        return loss


def _differentiable_adamax(p, group, state):
    """torch's single-tensor Adamax of ``p`` with differentiable=True, in recorded Tensor ops
    (grad mode is on): the infinity norm is the amax of the stacked candidates, as torch's."""
    beta1, beta2 = group["betas"]
    grad = -p.grad if group["maximize"] else p.grad
    state["step"] += 1
    if group["weight_decay"] != 0:
        grad = grad.add(p, alpha=group["weight_decay"])
    param, grad, exp_avg, exp_inf = _real_views(p, grad, state["exp_avg"], state["exp_inf"])
    exp_avg.lerp_(grad, 1 - beta1)
    norm_buf = cat([exp_inf.mul_(beta2).unsqueeze(0),
                    grad.abs().add_(group["eps"]).unsqueeze_(0)], 0)
    exp_inf.copy_(norm_buf.amax(0))
    clr = _squeezed(group["lr"]) / (1 - beta1 ** state["step"].item())
    param.addcdiv_(exp_avg, exp_inf, value=-_number(clr, "addcdiv_", "value"))
