"""Adagrad (torch's single-tensor update; sparse COO gradients as torch's sparse path)."""
from __future__ import annotations

from .._backend import get_xp
from .._ops.fused import add_product_, add_scaled
from .._tensor import Tensor
from .optimizer import (
    Optimizer,
    _blockwise,
    _bump_versions,
    _closure_loss,
    _full_like,
    _incr,
    _number,
    _real_arrays,
    _real_views,
    _scalar_tensor,
    _squeezed,
    _to_scalar,
    _use_grad_for_differentiable,
)

__all__ = ["Adagrad"]


class Adagrad(Optimizer):
    """Implements the Adagrad algorithm."""


    def __init__(self, params, lr=1e-2, lr_decay=0, weight_decay=0, initial_accumulator_value=0,
                 eps=1e-10, foreach=None, *, maximize=False, differentiable=False,
                 fused=None) -> None:
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= lr_decay:
            raise ValueError(f"Invalid lr_decay value: {lr_decay}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not 0.0 <= initial_accumulator_value:
            raise ValueError("Invalid initial_accumulator_value value: "
                             f"{initial_accumulator_value}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        defaults = {"lr": lr, "lr_decay": lr_decay, "eps": eps, "weight_decay": weight_decay,
                    "initial_accumulator_value": initial_accumulator_value, "foreach": foreach,
                    "maximize": maximize, "differentiable": differentiable, "fused": fused}
        super().__init__(params, defaults)
        if fused and foreach:
            raise RuntimeError("`fused` and `foreach` cannot be `True` together.")
        # NOTE: unlike the other optimizers, Adagrad fills its state eagerly, as torch does.
        for group in self.param_groups:
            for p in group["params"]:
                self._init_state(p)

    def _init_state(self, p):
        state = self.state[p]
        state["step"] = _scalar_tensor(0.0)
        init = self.defaults["initial_accumulator_value"]
        if p.is_complex():
            init = complex(init, init)
        state["sum"] = _full_like(p, init)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("foreach", None)
            group.setdefault("maximize", False)
            group.setdefault("differentiable", False)
            group.setdefault("fused", None)
        for s in self.state.values():
            if "step" in s and not isinstance(s["step"], Tensor):
                s["step"] = _scalar_tensor(float(s["step"]))

    def share_memory(self) -> None:
        """Accepted for compatibility: ember's state lives in one process."""

    @_use_grad_for_differentiable
    def step(self, closure=None):
        """Perform a single optimization step (``closure`` re-evaluates the model)."""
        loss = _closure_loss(closure)
        for group in self.param_groups:
            lr, lr_decay = _to_scalar(group["lr"]), group["lr_decay"]
            weight_decay, eps, maximize = group["weight_decay"], group["eps"], group["maximize"]
            for p in group["params"]:
                if p._grad is None:
                    continue
                state = self.state[p]
                if len(state) == 0:
                    self._init_state(p)
                step = _incr(state["step"])
                if p._grad.is_sparse:
                    _sparse_adagrad_update(p, state["sum"], step, group)
                    continue
                if group["differentiable"]:
                    _differentiable_adagrad(p, state["sum"], step, group)
                    continue
                clr = lr / (1 + (step - 1) * lr_decay)
                _blockwise(_adagrad_update,
                           _real_arrays((p._data, p._grad._data, state["sum"]._data)),
                           maximize, weight_decay, eps, clr)
                _bump_versions(state["sum"])  # (torch's addcmul_)
                _bump_versions(p)
        return loss


def _adagrad_update(param, grad, state_sum, maximize, weight_decay, eps, clr):
    """torch's single-tensor Adagrad update of (a block of) the arrays, in place, with its
    roundings."""
    xp = get_xp(param)
    if maximize:
        grad = xp.negative(grad)
    if weight_decay != 0:
        grad = add_scaled(grad, param, weight_decay)
    add_product_(state_sum, state_sum, grad, grad, 1)
    std = xp.sqrt(state_sum)
    std += eps
    # (addcdiv_: -clr times grad, divided by std, added: three roundings)
    param += xp.divide(xp.multiply(grad, -clr), std, out=std)


def _sparse_adagrad_update(p, state_sum, step, group):
    """torch's Adagrad for a sparse COO gradient, in its Tensor ops: the squared values summed
    into ``state_sum`` and the parameter updated at the coalesced gradient's positions only
    (weight_decay is refused, as in torch)."""
    from .._ops.sparse import sparse_coo_tensor
    if group["weight_decay"] != 0:
        raise RuntimeError("weight_decay option is not compatible with sparse gradients")
    grad = -p.grad if group["maximize"] else p.grad
    grad = grad.coalesce()
    indices, values = grad._indices(), grad._values()
    size = grad.size()
    clr = _to_scalar(group["lr"]) / (1 + (step - 1) * group["lr_decay"])
    state_sum.add_(sparse_coo_tensor(indices, values.pow(2), size))
    std_values = state_sum.sparse_mask(grad)._values().sqrt_().add_(group["eps"])
    p.add_(sparse_coo_tensor(indices, values / std_values, size), alpha=-clr)


def _differentiable_adagrad(p, state_sum, step, group):
    """torch's single-tensor Adagrad of ``p`` with differentiable=True, in recorded Tensor ops
    (grad mode is on): the parameter becomes a function of its gradient and ``state_sum``."""
    grad = -p.grad if group["maximize"] else p.grad
    if group["weight_decay"] != 0:
        grad = grad.add(p, alpha=group["weight_decay"])
    clr = _squeezed(group["lr"]) / (1 + (step - 1) * group["lr_decay"])
    param, grad, state_sum = _real_views(p, grad, state_sum)
    state_sum.addcmul_(grad, grad, value=1)
    std = state_sum.sqrt() + group["eps"]
    param.addcdiv_(grad, std, value=-_number(clr, "addcdiv_", "value"))
