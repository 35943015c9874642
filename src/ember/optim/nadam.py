"""NAdam: Adam with Nesterov momentum (torch's single-tensor update)."""
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

__all__ = ["NAdam"]


class NAdam(Optimizer):
    """Implements the NAdam algorithm."""

    _sparse_grads_refused = "NAdam does not support sparse gradients"

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 momentum_decay=4e-3, decoupled_weight_decay=False, *, foreach=None,
                 maximize=False, capturable=False, differentiable=False) -> None:
        _check_common(lr, eps=eps, betas=betas, weight_decay=weight_decay)
        if not 0.0 <= momentum_decay:
            raise ValueError(f"Invalid momentum_decay value: {momentum_decay}")
        defaults = {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay,
                    "momentum_decay": momentum_decay,
                    "decoupled_weight_decay": decoupled_weight_decay, "maximize": maximize,
                    "foreach": foreach, "capturable": capturable,
                    "differentiable": differentiable}
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("maximize", False)
            group.setdefault("foreach", None)
            group.setdefault("capturable", False)
            group.setdefault("differentiable", False)
            group.setdefault("decoupled_weight_decay", False)
        _step_to_tensor(self, "step", "mu_product")

    @_use_grad_for_differentiable
    def step(self, closure=None):
        """Perform a single optimization step (``closure`` re-evaluates the model)."""
        loss = _closure_loss(closure)
        self._refuse_sparse_grads()
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            lr, eps = _to_scalar(group["lr"]), group["eps"]
            weight_decay, momentum_decay = group["weight_decay"], group["momentum_decay"]
            decoupled, maximize = group["decoupled_weight_decay"], group["maximize"]
            for p in group["params"]:
                if p._grad is None:
                    continue
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = _scalar_tensor(0.0)
                    state["mu_product"] = _scalar_tensor(1.0)
                    state["exp_avg"] = _zeros_like(p)
                    state["exp_avg_sq"] = _zeros_like(p)
                grad = p._grad._data
                if maximize:
                    grad = -grad
                _check_capturable(group, p, "params, mu_products and state_steps")
                if group["differentiable"]:
                    _differentiable_nadam(p, group, state)
                    continue
                step = _incr(state["step"])
                bias_correction2 = 1 - beta2 ** step
                param = p._data
                if weight_decay != 0:
                    if decoupled:
                        param *= 1 - lr * weight_decay
                        p._bump_version()  # (torch's param.mul_: a write of its own)
                    else:
                        grad = add_scaled(grad, param, weight_decay)
                param, grad = _real(param), _real(grad)
                exp_avg = _real(state["exp_avg"]._data)
                exp_avg_sq = _real(state["exp_avg_sq"]._data)
                # NOTE: the momentum cache is computed in Python floats; mu_product is kept in a
                # float32 (0-dim) tensor, as torch keeps it.
                mu = beta1 * (1.0 - 0.5 * (0.96 ** (step * momentum_decay)))
                mu_next = beta1 * (1.0 - 0.5 * (0.96 ** ((step + 1) * momentum_decay)))
                mu_t = state["mu_product"]
                mu_t._data *= mu
                mu_t._bump_version()
                mu_product = float(mu_t._data)
                _lerp_(exp_avg, grad, 1 - beta1)
                exp_avg_sq *= beta2
                exp_avg_sq[...] = add_product(exp_avg_sq, grad, grad, 1 - beta2)
                denom = get_xp(param).sqrt(exp_avg_sq / bias_correction2)
                mu_product_next = mu_product * mu_next
                denom += eps
                param += ((-lr * (1.0 - mu) / (1.0 - mu_product)) * grad) / denom
                p._bump_version()  # (torch's two addcdiv_: two writes)
                param += (((-lr * mu_next) / (1.0 - mu_product_next)) * exp_avg) / denom
                p._bump_version()
        return loss


def _differentiable_nadam(p, group, state):
    """torch's single-tensor NAdam of ``p`` with differentiable=True, in recorded Tensor ops
    (grad mode is on); the momentum product stays the 0-dim float32 state tensor, so the
    update's coefficients are tensors, as torch's."""
    beta1, beta2 = group["betas"]
    lr = _squeezed(group["lr"])
    param, grad, exp_avg, exp_avg_sq, step = _decayed_moments(p, group, state)
    bias_correction2 = 1 - beta2 ** step
    mu = beta1 * (1.0 - 0.5 * (0.96 ** (step * group["momentum_decay"])))
    mu_next = beta1 * (1.0 - 0.5 * (0.96 ** ((step + 1) * group["momentum_decay"])))
    mu_product = state["mu_product"]
    mu_product *= mu
    exp_avg.lerp_(grad, 1 - beta1)
    exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
    denom = exp_avg_sq.div(bias_correction2).sqrt().add(group["eps"])
    mu_product_next = mu_product * mu_next
    param.addcdiv_(grad * (-lr * (1.0 - mu) / (1.0 - mu_product)), denom)
    param.addcdiv_(exp_avg * (-lr * mu_next / (1.0 - mu_product_next)), denom)
