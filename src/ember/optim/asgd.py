"""ASGD: averaged stochastic gradient descent (torch's single-tensor update)."""
from __future__ import annotations

import numpy as np

from .._creation import as_tensor
from .._ops.fused import add_scaled
from .._tensor import Tensor, _wrap
from .optimizer import (
    Optimizer,
    _check_capturable,
    _closure_loss,
    _incr,
    _real,
    _real_views,
    _scalar_np_dtype,
    _scalar_tensor,
    _squeezed,
    _to_scalar,
    _use_grad_for_differentiable,
    _zeros_like,
)

__all__ = ["ASGD"]


def _set_scalar(t: Tensor, value) -> None:
    """Store ``value`` in a 0-dim state tensor (rounded to its dtype, as copy_ does)."""
    t._data[...] = value
    t._bump_version()


class ASGD(Optimizer):
    """Implements Averaged Stochastic Gradient Descent (Polyak and Juditsky, 1992): SGD with
    a decaying step size ``eta``, and in ``state['ax']`` the running average of the iterates
    from step ``t0`` on."""

    _sparse_grads_refused = "ASGD does not support sparse gradients"

    def __init__(self, params, lr=1e-2, lambd=1e-4, alpha=0.75, t0=1e6, weight_decay=0,
                 foreach=None, maximize=False, differentiable=False,
                 capturable=False) -> None:
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        defaults = {"lr": lr, "lambd": lambd, "alpha": alpha, "t0": t0,
                    "weight_decay": weight_decay, "foreach": foreach, "maximize": maximize,
                    "differentiable": differentiable, "capturable": capturable}
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            for key, default in (("foreach", None), ("maximize", False),
                                 ("differentiable", False), ("capturable", False)):
                group.setdefault(key, default)
            for p in group["params"]:
                p_state = self.state.get(p, [])
                for key in ("step", "eta", "mu") if len(p_state) else ():
                    if not isinstance(p_state[key], Tensor):
                        p_state[key] = _scalar_tensor(float(p_state[key]))

    @_use_grad_for_differentiable
    def step(self, closure=None):
        """Perform a single optimization step (``closure`` re-evaluates the model)."""
        loss = _closure_loss(closure)
        self._refuse_sparse_grads()
        for group in self.param_groups:
            lr = _to_scalar(group["lr"])
            lambd, alpha, t0 = group["lambd"], group["alpha"], group["t0"]
            weight_decay = group["weight_decay"]
            for p in group["params"]:
                if p._grad is None:
                    continue
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = _scalar_tensor(0.0)
                    state["eta"] = _wrap(np.array(lr, dtype=_scalar_np_dtype()))
                    state["mu"] = _scalar_tensor(1.0)
                    state["ax"] = _zeros_like(p)
                _check_capturable(group, p, "params, mus, etas, and state_steps")
                if group["differentiable"]:
                    _differentiable_asgd(p, group, state)
                    continue
                grad = p._grad._data
                if group["maximize"]:
                    grad = -grad
                step = _incr(state["step"])
                param, ax = _real(p._data), _real(state["ax"]._data)
                grad = _real(grad)
                if weight_decay != 0:
                    grad = add_scaled(grad, param, weight_decay)
                eta = float(state["eta"]._data)
                param *= 1 - lambd * eta
                p._bump_version()  # (torch's param.mul_, then its add_: two writes)
                param[...] = add_scaled(param, grad, -eta)
                mu = state["mu"]._data
                if float(mu) != 1:
                    ax += (param - ax) * mu
                else:
                    ax[...] = param
                state["ax"]._bump_version()
                # the next step's size and averaging weight, rounded to the state's dtype
                _set_scalar(state["eta"], lr / (1 + lambd * lr * step) ** alpha)
                _set_scalar(state["mu"], 1 / max(1, step - t0))
                p._bump_version()
        return loss


def _differentiable_asgd(p, group, state):
    """torch's single-tensor ASGD of ``p`` with differentiable=True, in recorded Tensor ops
    (grad mode is on): the average ``ax`` follows the recorded parameter."""
    lr, lambd = _squeezed(group["lr"]), group["lambd"]
    grad = -p.grad if group["maximize"] else p.grad
    mu, eta = state["mu"], state["eta"]
    param, grad, ax = _real_views(p, grad, state["ax"])
    state["step"] += 1
    if group["weight_decay"] != 0:
        grad = grad.add(param, alpha=group["weight_decay"])
    eta_value = eta.item()
    param.mul_(1 - lambd * eta_value)
    param.add_(grad, alpha=-eta_value)
    if mu.item() != 1:
        ax.add_(param.sub(ax).mul_(mu))
    else:
        ax.copy_(param)
    step = state["step"].item()
    eta.copy_(as_tensor(lr / ((1 + lambd * lr * step) ** group["alpha"])))
    mu.copy_(as_tensor(1 / max(1, step - group["t0"])))
