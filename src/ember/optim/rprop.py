"""Rprop: resilient backpropagation (torch's single-tensor update)."""
from __future__ import annotations

from .._backend import get_xp
from .._ops.pointwise import sign_of
from .._tensor import Tensor
from .optimizer import (
    Optimizer,
    _check_capturable,
    _closure_loss,
    _full_like,
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

__all__ = ["Rprop"]


class Rprop(Optimizer):
    """Implements the resilient backpropagation algorithm (Riedmiller and Braun, 1993): each
    weight moves by its own step size against the sign of its gradient; the step grows by
    ``etaplus`` while the sign holds and shrinks by ``etaminus`` when it flips (within
    ``step_sizes``)."""

    _sparse_grads_refused = "Rprop does not support sparse gradients"

    def __init__(self, params, lr=1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50), *,
                 capturable=False, foreach=None, maximize=False, differentiable=False) -> None:
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 < etas[0] < 1.0 < etas[1]:
            raise ValueError(f"Invalid eta values: {etas[0]}, {etas[1]}")
        defaults = {"lr": lr, "etas": etas, "step_sizes": step_sizes, "foreach": foreach,
                    "maximize": maximize, "differentiable": differentiable,
                    "capturable": capturable}
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            for key, default in (("foreach", None), ("maximize", False),
                                 ("differentiable", False), ("capturable", False)):
                group.setdefault(key, default)
        _step_to_tensor(self, "step")

    @_use_grad_for_differentiable
    def step(self, closure=None):
        """Perform a single optimization step (``closure`` re-evaluates the model)."""
        loss = _closure_loss(closure)
        self._refuse_sparse_grads()
        for group in self.param_groups:
            etaminus, etaplus = group["etas"]
            step_size_min, step_size_max = group["step_sizes"]
            for p in group["params"]:
                if p._grad is None:
                    continue
                state = self.state[p]
                if len(state) == 0:
                    lr = group["lr"]
                    state["step"] = _scalar_tensor(0.0)
                    state["prev"] = _zeros_like(p)
                    state["step_size"] = _full_like(
                        p, complex(_to_scalar(lr), _to_scalar(lr)) if p.is_complex()
                        else _number(_squeezed(lr), "full_like", "fill_value", 2))
                _check_capturable(group, p, "params and state_steps")
                if group["differentiable"]:
                    _differentiable_rprop(p, group, state)
                    continue
                grad = p._grad._data
                if group["maximize"]:
                    grad = -grad
                _incr(state["step"])
                grad = _real(grad)
                prev, step_size = _real(state["prev"]._data), _real(state["step_size"]._data)
                param = _real(p._data)
                xp = get_xp(param)
                # (torch's sign: 0 for NaN, so a NaN gradient leaves the step size and the
                # parameter as they are; 0-d arrays stay arrays for the masked writes)
                factor = xp.asarray(sign_of(grad * prev))
                flipped = factor < 0
                factor[factor > 0] = etaplus
                factor[flipped] = etaminus
                factor[factor == 0] = 1
                step_size *= factor
                xp.clip(step_size, step_size_min, step_size_max, out=step_size)
                grad = xp.array(grad)
                grad[factor == etaminus] = 0  # no move (and no memory) after a sign flip
                param += -1 * (sign_of(grad) * step_size)
                prev[...] = grad
                for t in (p, state["prev"], state["step_size"]):
                    t._bump_version()
        return loss


def _differentiable_rprop(p, group, state):
    """torch's single-tensor Rprop of ``p`` with differentiable=True, in recorded Tensor ops
    (grad mode is on)."""
    etaminus, etaplus = group["etas"]
    step_size_min, step_size_max = group["step_sizes"]
    grad = -p.grad if group["maximize"] else p.grad
    state["step"] += 1
    param, grad, prev, step_size = _real_views(p, grad, state["prev"], state["step_size"])
    sign = grad.mul(prev.clone()).sign()
    sign[sign.gt(0)] = etaplus
    sign[sign.lt(0)] = etaminus
    sign[sign.eq(0)] = 1
    step_size.mul_(sign).clamp_(step_size_min, step_size_max)
    grad = grad.clone()
    grad[sign.eq(etaminus)] = 0  # no move (and no memory) after a sign flip
    param.addcmul_(grad.sign(), step_size, value=-1)
    prev.copy_(grad)
