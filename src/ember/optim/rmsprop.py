"""RMSprop (torch's single-tensor update: centered and momentum variants)."""
from __future__ import annotations

from .._backend import get_xp
from .._ops.fused import add_product, add_scaled
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

__all__ = ["RMSprop"]


class RMSprop(Optimizer):
    """Implements the RMSprop algorithm."""

    _sparse_grads_refused = "RMSprop does not support sparse gradients"

    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0,
                 centered=False, capturable=False, foreach=None, maximize=False,
                 differentiable=False) -> None:
        _check_common(lr, eps=eps)
        if not 0.0 <= momentum:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not 0.0 <= alpha:
            raise ValueError(f"Invalid alpha value: {alpha}")
        defaults = {"lr": lr, "momentum": momentum, "alpha": alpha, "eps": eps,
                    "centered": centered, "weight_decay": weight_decay, "capturable": capturable,
                    "foreach": foreach, "maximize": maximize, "differentiable": differentiable}
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("momentum", 0)
            group.setdefault("centered", False)
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
            lr, alpha, eps = _to_scalar(group["lr"]), group["alpha"], group["eps"]
            weight_decay, momentum = group["weight_decay"], group["momentum"]
            centered, maximize = group["centered"], group["maximize"]
            for p in group["params"]:
                if p._grad is None:
                    continue
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = _scalar_tensor(0.0)
                    state["square_avg"] = _zeros_like(p)
                    if momentum > 0:
                        state["momentum_buffer"] = _zeros_like(p)
                    if centered:
                        state["grad_avg"] = _zeros_like(p)
                _check_capturable(group, p)
                if group["differentiable"]:
                    _differentiable_rmsprop(p, group, state)
                    continue
                grad = p._grad._data
                if maximize:
                    grad = -grad
                _incr(state["step"])
                param = p._data
                if weight_decay != 0:
                    grad = add_scaled(grad, param, weight_decay)
                param, grad = _real(param), _real(grad)
                square_avg = _real(state["square_avg"]._data)
                xp = get_xp(param)
                square_avg *= alpha
                square_avg[...] = add_product(square_avg, grad, grad, 1 - alpha)
                if centered:
                    grad_avg = _real(state["grad_avg"]._data)
                    _lerp_(grad_avg, grad, 1 - alpha)
                    avg = xp.sqrt(square_avg + (-1 * grad_avg) * grad_avg)
                else:
                    avg = xp.sqrt(square_avg)
                avg += eps
                if momentum > 0:
                    buf = _real(state["momentum_buffer"]._data)
                    buf *= momentum
                    buf += grad / avg
                    param[...] = add_scaled(param, buf, -lr)
                else:
                    param += (-lr * grad) / avg
                p._bump_version()
        return loss


def _differentiable_rmsprop(p, group, state):
    """torch's single-tensor RMSprop of ``p`` with differentiable=True, in recorded Tensor ops
    (grad mode is on): the parameter becomes a function of its gradient and the averages."""
    alpha, eps, momentum = group["alpha"], group["eps"], group["momentum"]
    lr = _squeezed(group["lr"])
    grad = -p.grad if group["maximize"] else p.grad
    state["step"] += 1
    if group["weight_decay"] != 0:
        grad = grad.add(p, alpha=group["weight_decay"])
    param, grad, square_avg = _real_views(p, grad, state["square_avg"])
    square_avg.mul_(alpha).addcmul_(grad, grad, value=1 - alpha)
    if group["centered"]:
        (grad_avg,) = _real_views(p, state["grad_avg"])[1:]
        grad_avg.lerp_(grad, 1 - alpha)
        avg = square_avg.addcmul(grad_avg, grad_avg, value=-1).sqrt_()
    else:
        avg = square_avg.sqrt()
    avg = avg.add(eps)  # (out of place: the sqrt is saved by the graph)
    if momentum > 0:
        (buf,) = _real_views(p, state["momentum_buffer"])[1:]
        buf.mul_(momentum).addcdiv_(grad, avg)
        param.add_(buf, alpha=-_number(lr, "add_", "alpha"))
    else:
        param.addcdiv_(grad, avg, value=-_number(lr, "addcdiv_", "value"))
