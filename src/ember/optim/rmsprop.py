"""RMSprop (torch's single-tensor update: centered and momentum variants)."""
from __future__ import annotations

from .._backend import get_xp
from .._ops.fused import add_product_, add_scaled, add_scaled_
from .optimizer import (
    Optimizer,
    _check_capturable,
    _blockwise,
    _bump_versions,
    _check_common,
    _closure_loss,
    _incr,
    _lerp_,
    _number,
    _real_arrays,
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
                _incr(state["step"])
                buf, grad_avg = state.get("momentum_buffer"), state.get("grad_avg")
                arrays = (p._data, p._grad._data, state["square_avg"]._data,
                          grad_avg._data if centered else None,
                          buf._data if momentum > 0 else None)
                _blockwise(_rmsprop_update, _real_arrays(arrays), maximize, weight_decay, alpha,
                           eps, momentum, lr)
                # (torch's writes: mul_ and addcmul_; lerp_; mul_ and addcdiv_; the update)
                _bump_versions(state["square_avg"], 2)
                if centered:
                    _bump_versions(grad_avg)
                if momentum > 0:
                    _bump_versions(buf, 2)
                _bump_versions(p)
        return loss


def _rmsprop_update(param, grad, square_avg, grad_avg, buf, maximize, weight_decay, alpha,
                    eps, momentum, lr):
    """torch's single-tensor RMSprop update of (a block of) the arrays, in place, with its
    roundings (``grad_avg`` None unless centered, ``buf`` None without momentum)."""
    xp = get_xp(param)
    if maximize:
        grad = xp.negative(grad)
    if weight_decay != 0:
        grad = add_scaled(grad, param, weight_decay)
    square_avg *= alpha
    add_product_(square_avg, square_avg, grad, grad, 1 - alpha)
    if grad_avg is not None:
        _lerp_(grad_avg, grad, 1 - alpha)
        avg = xp.empty_like(square_avg)  # (torch's addcmul(value=-1): one rounding)
        add_product_(avg, square_avg, grad_avg, grad_avg, -1)
        xp.sqrt(avg, out=avg)
    else:
        avg = xp.sqrt(square_avg)
    avg += eps
    if buf is not None:
        buf *= momentum
        buf += xp.divide(grad, avg, out=avg)  # (addcdiv_ with value 1: grad / avg, added)
        add_scaled_(param, param, buf, -lr)
    else:
        # (addcdiv_: -lr times grad, divided by avg, added: three roundings)
        param += xp.divide(xp.multiply(grad, -lr), avg, out=avg)


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
