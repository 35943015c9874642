"""Adadelta (torch's single-tensor update)."""
from __future__ import annotations

from .._backend import get_xp
from .._ops.fused import add_product, add_scaled
from .._ops.strided import view_as_complex
from .._tensor import Tensor
from .optimizer import (
    Optimizer,
    _check_capturable,
    _closure_loss,
    _incr,
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

__all__ = ["Adadelta"]


class Adadelta(Optimizer):
    """Implements the Adadelta algorithm."""

    _sparse_grads_refused = "Adadelta does not support sparse gradients"

    def __init__(self, params, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0, foreach=None, *,
                 capturable=False, maximize=False, differentiable=False) -> None:
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Invalid rho value: {rho}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        defaults = {"lr": lr, "rho": rho, "eps": eps, "weight_decay": weight_decay,
                    "maximize": maximize, "capturable": capturable, "foreach": foreach,
                    "differentiable": differentiable}
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
            lr, rho, eps = _to_scalar(group["lr"]), group["rho"], group["eps"]
            weight_decay, maximize = group["weight_decay"], group["maximize"]
            for p in group["params"]:
                if p._grad is None:
                    continue
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = _scalar_tensor(0.0)
                    state["square_avg"] = _zeros_like(p)
                    state["acc_delta"] = _zeros_like(p)
                _check_capturable(group, p, xla=False)
                if group["differentiable"]:
                    _differentiable_adadelta(p, group, state)
                    continue
                _incr(state["step"])
                grad = p._grad._data
                if maximize:
                    grad = -grad
                param = p._data
                if weight_decay != 0:
                    grad = add_scaled(grad, param, weight_decay)
                param, grad = _real(param), _real(grad)
                square_avg = _real(state["square_avg"]._data)
                acc_delta = _real(state["acc_delta"]._data)
                xp = get_xp(param)
                square_avg *= rho
                square_avg[...] = add_product(square_avg, grad, grad, 1 - rho)
                std = xp.sqrt(square_avg + eps)
                delta = xp.sqrt(acc_delta + eps)
                delta /= std
                delta *= grad
                acc_delta *= rho
                acc_delta[...] = add_product(acc_delta, delta, delta, 1 - rho)
                param[...] = add_scaled(param, delta, -lr)
                p._bump_version()
        return loss


def _differentiable_adadelta(p, group, state):
    """torch's single-tensor Adadelta of ``p`` with differentiable=True, in recorded Tensor
    ops (grad mode is on)."""
    rho, eps = group["rho"], group["eps"]
    state["step"] += 1
    grad = -p.grad if group["maximize"] else p.grad
    if group["weight_decay"] != 0:
        grad = grad.add(p, alpha=group["weight_decay"])
    grad, square_avg, acc_delta = _real_views(p, grad, state["square_avg"],
                                              state["acc_delta"])[1:]
    square_avg.mul_(rho).addcmul_(grad, grad, value=1 - rho)
    std = square_avg.add(eps).sqrt_()
    delta = acc_delta.add(eps).sqrt_().clone()  # (a copy: the sqrt is saved by the graph)
    delta.div_(std).mul_(grad)
    acc_delta.mul_(rho).addcmul_(delta, delta, value=1 - rho)
    if p.is_complex():
        delta = view_as_complex(delta)
    p.add_(delta, alpha=-_number(_squeezed(group["lr"]), "add_", "alpha"))
