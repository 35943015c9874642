"""Adam and AdamW (torch's single-tensor update, amsgrad and decoupled weight decay included)."""
from __future__ import annotations

from .._backend import get_xp
from .._ops.strided import view_as_real
from .._ops.fused import add_product_, add_scaled
from .._tensor import Tensor
from .optimizer import (
    Optimizer,
    _check_capturable,
    _blockwise,
    _bump_versions,
    _check_common,
    _closure_loss,
    _incr,
    _lerp_,
    _real_arrays,
    _scalar_tensor,
    _step_to_tensor,
    _to_scalar,
    _use_grad_for_differentiable,
    _squeezed,
    _zeros_like,
)

__all__ = ["Adam", "AdamW"]

# torch's foreach kernels take only Python-number hyperparameters unless capturable
_FOREACH_TENSOR = "{} as a Tensor is not supported for capturable=False and foreach=True"


class Adam(Optimizer):
    """Implements the Adam algorithm (AdamW when ``decoupled_weight_decay=True``)."""

    _sparse_grads_refused = ("Adam does not support sparse gradients, please consider "
                             "SparseAdam instead")

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 amsgrad=False, *, foreach=None, maximize=False, capturable=False,
                 differentiable=False, fused=None, decoupled_weight_decay=False) -> None:
        if isinstance(lr, Tensor) and foreach and not capturable:
            raise ValueError(_FOREACH_TENSOR.format("lr"))
        _check_common(lr, eps=eps, betas=betas, weight_decay=weight_decay)
        if not ((isinstance(betas[0], float) and isinstance(betas[1], float))
                or (isinstance(betas[0], Tensor) and isinstance(betas[1], Tensor))):
            raise ValueError("betas must be either both floats or both Tensors")  # noqa: TRY004 - torch's type
        for i, b in enumerate(betas):
            if isinstance(b, Tensor) and foreach and not capturable:
                raise ValueError(_FOREACH_TENSOR.format(f"betas[{i}]"))
            if isinstance(b, Tensor) and b.numel() != 1:
                raise ValueError(f"Tensor betas[{i}] must be 1-element")
        betas = tuple(b.squeeze() if isinstance(b, Tensor) and b.dim() != 0 else b
                      for b in betas)
        defaults = {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay,
                    "amsgrad": amsgrad, "maximize": maximize, "foreach": foreach,
                    "capturable": capturable, "differentiable": differentiable, "fused": fused,
                    "decoupled_weight_decay": decoupled_weight_decay}
        super().__init__(params, defaults)
        if fused and foreach:
            raise RuntimeError("`fused` and `foreach` cannot be `True` together.")

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("amsgrad", False)
            group.setdefault("maximize", False)
            group.setdefault("foreach", None)
            group.setdefault("capturable", False)
            group.setdefault("differentiable", False)
            group.setdefault("decoupled_weight_decay", False)
            group.setdefault("fused", None)
        _step_to_tensor(self, "step")

    @_use_grad_for_differentiable
    def step(self, closure=None):
        """Perform a single optimization step (``closure`` re-evaluates the model)."""
        loss = _closure_loss(closure)
        self._refuse_sparse_grads()
        for group in self.param_groups:
            beta1, beta2 = (_to_scalar(b) for b in group["betas"])
            lr = _to_scalar(group["lr"])
            weight_decay, eps = _to_scalar(group["weight_decay"]), group["eps"]
            amsgrad, maximize = group["amsgrad"], group["maximize"]
            decoupled = group["decoupled_weight_decay"]
            for p in group["params"]:
                if p._grad is None:
                    continue
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = _scalar_tensor(0.0)
                    state["exp_avg"] = _zeros_like(p)
                    state["exp_avg_sq"] = _zeros_like(p)
                    if amsgrad:
                        state["max_exp_avg_sq"] = _zeros_like(p)
                if group["differentiable"] and state["step"].requires_grad:
                    raise RuntimeError("`requires_grad` is not supported for `step` in "
                                       "differentiable mode")
                _check_capturable(group, p)
                if isinstance(group["lr"], Tensor) and group["foreach"] and not group["capturable"]:
                    raise RuntimeError(_FOREACH_TENSOR.format("lr"))
                if group["differentiable"]:
                    _differentiable_adam(p, group, state)
                    continue
                step = _incr(state["step"])
                if weight_decay != 0 and decoupled:
                    p._data *= 1 - lr * weight_decay
                    p._bump_version()  # (torch's param.mul_: a write of its own)
                bias_correction1 = 1 - beta1 ** step
                bias_correction2 = 1 - beta2 ** step
                max_sq = state["max_exp_avg_sq"] if amsgrad else None
                arrays = (p._data, p._grad._data, state["exp_avg"]._data,
                          state["exp_avg_sq"]._data, max_sq if max_sq is None else max_sq._data)
                _blockwise(_adam_update, _real_arrays(arrays), maximize,
                           0 if decoupled else weight_decay, beta1, beta2, eps,
                           lr / bias_correction1, bias_correction2 ** 0.5)
                # (torch's writes: lerp_; mul_ and addcmul_; maximum(out=); addcdiv_)
                _bump_versions(state["exp_avg"])
                _bump_versions(state["exp_avg_sq"], 2)
                if amsgrad:
                    _bump_versions(max_sq)
                _bump_versions(p)
        return loss


def _adam_update(param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, maximize, weight_decay,
                 beta1, beta2, eps, step_size, bias_correction2_sqrt):
    """torch's single-tensor Adam update of (a block of) the arrays, in place, with its
    roundings: ``weight_decay`` is the one added to the gradient (0 if decoupled)."""
    xp = get_xp(param)
    if maximize:
        grad = xp.negative(grad)
    if weight_decay != 0:
        grad = add_scaled(grad, param, weight_decay)
    _lerp_(exp_avg, grad, 1 - beta1)
    exp_avg_sq *= beta2
    add_product_(exp_avg_sq, exp_avg_sq, grad, grad, 1 - beta2)
    if max_exp_avg_sq is not None:
        xp.maximum(max_exp_avg_sq, exp_avg_sq, out=max_exp_avg_sq)
        exp_avg_sq = max_exp_avg_sq
    denom = xp.sqrt(exp_avg_sq)
    denom /= bias_correction2_sqrt
    denom += eps
    # (addcdiv_: the value times exp_avg, divided by denom, added: three roundings)
    xp.divide(xp.multiply(exp_avg, -step_size), denom, out=denom)
    param += denom


def _differentiable_adam(p, group, state):
    """torch's single-tensor Adam of ``p`` with differentiable=True, in recorded Tensor ops
    (grad mode is on): the parameter becomes a function of its gradient, the moments, and a
    tensor ``lr``, ``betas`` or ``weight_decay`` that requires grad; the bias corrections are
    0-dim tensors of the float32 step, as torch's."""
    beta1, beta2 = (_squeezed(b) for b in group["betas"])
    lr, weight_decay, eps = _squeezed(group["lr"]), group["weight_decay"], group["eps"]
    grad = -p.grad if group["maximize"] else p.grad
    exp_avg, exp_avg_sq, step = state["exp_avg"], state["exp_avg_sq"], state["step"]
    step += 1
    param = p
    if weight_decay != 0:
        if group["decoupled_weight_decay"]:
            param.mul_(1 - lr * weight_decay)
        elif isinstance(weight_decay, Tensor) and weight_decay.requires_grad:
            grad = grad.addcmul_(param.clone(), weight_decay)
        else:
            grad = grad.add(param, alpha=_to_scalar(weight_decay))
    if p.is_complex():
        grad, exp_avg, exp_avg_sq, param = (view_as_real(t)
                                            for t in (grad, exp_avg, exp_avg_sq, param))
    exp_avg.lerp_(grad, 1 - beta1)
    if isinstance(beta2, Tensor) and beta2.requires_grad:
        exp_avg_sq.lerp_(grad.square(), weight=1 - beta2)  # (addcmul_ takes no Tensor value)
    else:
        exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - _to_scalar(beta2))
    bias_correction1 = 1 - beta1 ** (step.clone() if isinstance(beta1, Tensor) else step)
    bias_correction2 = 1 - beta2 ** (step.clone() if isinstance(beta2, Tensor) else step)
    step_size_neg = (lr / bias_correction1).neg()
    bias_correction2_sqrt = bias_correction2.sqrt()
    if group["amsgrad"]:
        max_exp_avg_sq = state["max_exp_avg_sq"]
        if p.is_complex():
            max_exp_avg_sq = view_as_real(max_exp_avg_sq)
        max_exp_avg_sq.copy_(max_exp_avg_sq.clone().maximum(exp_avg_sq))
        exp_avg_sq = max_exp_avg_sq
    denom = (exp_avg_sq.sqrt() / (bias_correction2_sqrt * step_size_neg)).add_(
        eps / step_size_neg)
    param.addcdiv_(exp_avg.clone(), denom)


class AdamW(Adam):
    """Implements AdamW: Adam whose weight decay does not accumulate in the moments."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2,
                 amsgrad=False, *, maximize=False, foreach=None, capturable=False,
                 differentiable=False, fused=None) -> None:
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, foreach=foreach,
                         maximize=maximize, capturable=capturable,
                         differentiable=differentiable, fused=fused,
                         decoupled_weight_decay=True)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group["decoupled_weight_decay"] = True
