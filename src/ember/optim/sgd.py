"""SGD: stochastic gradient descent, optionally with momentum (torch's single-tensor update)."""
from __future__ import annotations

import numpy as np
from numpy import ndarray

from .._backend import get_xp
from .._ops.fused import add_scaled, add_scaled_
from .._tensor import Tensor, _wrap
from .optimizer import (
    Optimizer,
    _blockwise,
    _bump_versions,
    _closure_loss,
    _to_scalar,
    _use_grad_for_differentiable,
)

__all__ = ["SGD"]


class SGD(Optimizer):
    """Implements stochastic gradient descent (optionally with momentum)."""


    def __init__(self, params, lr=1e-3, momentum=0, dampening=0, weight_decay=0,
                 nesterov=False, *, maximize=False, foreach=None, differentiable=False,
                 fused=None) -> None:
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if lr < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if momentum < 0.0:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        defaults = {"lr": lr, "momentum": momentum, "dampening": dampening,
                    "weight_decay": weight_decay, "nesterov": nesterov, "maximize": maximize,
                    "foreach": foreach, "differentiable": differentiable, "fused": fused}
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, defaults)
        if fused and foreach:
            raise RuntimeError("`fused` and `foreach` cannot be `True` together.")

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("nesterov", False)
            group.setdefault("maximize", False)
            group.setdefault("foreach", None)
            group.setdefault("differentiable", False)
            group.setdefault("fused", False)

    @_use_grad_for_differentiable
    def step(self, closure=None):
        """Perform a single optimization step (``closure`` re-evaluates the model)."""
        loss = _closure_loss(closure)
        for group in self.param_groups:
            lr = _to_scalar(group["lr"])
            weight_decay = _to_scalar(group["weight_decay"])
            momentum, dampening = group["momentum"], group["dampening"]
            nesterov, maximize = group["nesterov"], group["maximize"]
            differentiable = group["differentiable"]
            params = group["params"]
            if weight_decay == 0 and momentum == 0 and not differentiable:
                params = _add_small_in_one(params, lr if maximize else -lr)
            for p in params:
                g = p._grad
                if g is None:
                    continue
                grad = g._data
                if differentiable or (type(grad) is not ndarray and g.is_sparse):
                    _sgd_with_tensor_ops(p, group, self.state[p])
                    continue
                if weight_decay == 0 and momentum == 0 and grad.dtype.kind == "f":
                    # (-grad times -lr is grad times lr, exactly: no negated copy)
                    add_scaled_(p._data, p._data, grad, lr if maximize else -lr)
                else:
                    state = self.state[p]
                    buf = state.get("momentum_buffer") if momentum != 0 else None
                    if momentum != 0 and buf is None:
                        _first_momentum_step(p, grad, state, weight_decay, momentum, nesterov,
                                             maximize, lr)
                    else:
                        _blockwise(_sgd_update, (p._data, grad, buf if buf is None else buf._data),
                                   weight_decay, momentum, dampening, nesterov, maximize, lr)
                        if buf is not None:
                            _bump_versions(buf, 2)  # (torch's mul_ and add_)
                _bump_versions(p)
        return loss


# parameters of at most this many elements are updated together by ``_add_small_in_one``
_SMALL = 16384
# (and only when there are at least this many of them: fewer gain too little)
_SMALL_COUNT = 8


def _add_small_in_one(params, alpha):
    """``p.add_(grad, alpha=alpha)`` for the small parameters of ``params`` at once: their
    arrays and gradients concatenated, the fused update made once, the results copied back
    (bit for bit each parameter's own update, with one NumPy call per parameter instead of
    a dozen). Only float32/float64 NumPy arrays and gradients of their shape and dtype, all
    C-contiguous, grouped by dtype; and only where no two parameters, nor a parameter and a
    gradient, are arrays of one memory owner (so that nothing overlaps: each update may read
    the others' arrays as they were). Returns the parameters left to update one by one."""
    groups, rest = {}, []
    for p in params:
        g = p._grad
        data = p._data
        grad = None if g is None else g._data
        if (g is not None and not p._is_inference and type(data) is ndarray
                and type(grad) is ndarray and 1 < data.size <= _SMALL
                and grad.dtype == data.dtype and data.dtype.kind == "f"
                and grad.shape == data.shape and data.flags.c_contiguous
                and grad.flags.c_contiguous):
            groups.setdefault(data.dtype, []).append(p)
        else:
            rest.append(p)
    for same in groups.values():
        datas = [p._data for p in same]
        grads = [p._grad._data for p in same]
        owners = [_owner(d) for d in datas]
        owner_ids = {id(o) for o in owners}
        if (len(same) < _SMALL_COUNT or any(o is None for o in owners)
                or len(owner_ids) != len(same)
                or not owner_ids.isdisjoint(id(_owner(g)) for g in grads)):
            rest.extend(same)
            continue
        flat = np.concatenate([d.reshape(-1) for d in datas])
        add_scaled_(flat, flat, np.concatenate([g.reshape(-1) for g in grads]), alpha)
        start = 0
        for p, d in zip(same, datas):
            stop = start + d.size
            d.reshape(-1)[...] = flat[start:stop]
            start = stop
            _bump_versions(p)
    return rest


def _owner(a):
    """The NumPy array that owns ``a``'s memory (``a`` itself, or the base its views lead
    to), or None where memory is not an array's own (a buffer of another object's)."""
    while isinstance(a.base, ndarray):
        a = a.base
    return a if a.base is None else None


def _sgd_update(param, grad, buf, weight_decay, momentum, dampening, nesterov, maximize, lr):
    """torch's single-tensor SGD update of (a block of) the arrays, in place: the gradient
    (negated to maximize), plus ``weight_decay * param``, through the momentum buffer ``buf``
    (None without momentum), times ``-lr`` added to ``param``. Temporaries only where torch
    makes them, and reused."""
    xp = get_xp(grad)
    own = None  # (a temporary of this step's, free to be written)
    if maximize:
        grad = own = xp.negative(grad)
    if weight_decay != 0:
        if own is None:
            own = xp.empty_like(grad)
        add_scaled_(own, grad, param, weight_decay)
        grad = own
    if buf is not None:
        buf *= momentum
        add_scaled_(buf, buf, grad, 1 - dampening)
        if nesterov:
            if own is None:
                own = xp.empty_like(grad)
            add_scaled_(own, grad, buf, momentum)
            grad = own
        else:
            grad = buf
    add_scaled_(param, param, grad, -lr)


def _first_momentum_step(p, grad, state, weight_decay, momentum, nesterov, maximize, lr):
    """SGD's first step with momentum: the buffer made, a copy of the gradient (negated to
    maximize, plus ``weight_decay * p``), as torch's ``clone``."""
    xp = get_xp(grad)
    if maximize:
        grad = xp.negative(grad, out=xp.empty_like(grad))  # (an array even 0-dim)
    if weight_decay != 0:
        grad = add_scaled(grad, p._data, weight_decay)
    buf = state["momentum_buffer"] = _wrap(grad.copy())
    if nesterov:
        grad = add_scaled(grad, buf._data, momentum)
    add_scaled_(p._data, p._data, grad, -lr)


def _sgd_with_tensor_ops(p, group, state):
    """torch's single-tensor SGD of ``p`` written in Tensor ops. With differentiable=True (grad
    mode on) they are recorded: the parameters (non-leaf tensors, or a leaf's in-place error)
    become functions of the gradients, the momentum buffers and a tensor ``lr`` that requires
    grad. A sparse gradient takes this path too, as torch's ops on it: a sparse momentum
    buffer, the update summed into the dense parameter, and torch's refusal of weight_decay
    (``add(sparse, dense)``)."""
    lr, weight_decay = group["lr"], group["weight_decay"]
    momentum, dampening = group["momentum"], group["dampening"]
    grad = -p.grad if group["maximize"] else p.grad
    if weight_decay != 0:
        grad = grad.add(p, alpha=_to_scalar(weight_decay))
    if momentum != 0:
        buf = state.get("momentum_buffer")
        if buf is None:
            buf = state["momentum_buffer"] = grad.detach().clone()
        else:
            buf.mul_(momentum).add_(grad, alpha=1 - dampening)
        grad = grad.add(buf, alpha=momentum) if group["nesterov"] else buf
    if isinstance(lr, Tensor) and lr.requires_grad and group["differentiable"]:
        p.addcmul_(grad, lr, value=-1)
    else:
        p.add_(grad, alpha=-_to_scalar(lr))
