"""Stochastic Weight Averaging and exponential moving averages of a model's weights:
``AveragedModel``, the averaging functions, ``SWALR`` and ``update_bn``."""
from __future__ import annotations

import itertools
import math
import warnings
from copy import deepcopy

import ember

from .._tensor import Tensor
from ..autograd.grad_mode import no_grad
from .lr_scheduler import LRScheduler, _format_param

__all__ = ["AveragedModel", "update_bn", "SWALR", "get_ema_multi_avg_fn",
           "get_swa_multi_avg_fn", "get_ema_avg_fn", "get_swa_avg_fn"]


def _check_decay(decay):
    if decay < 0.0 or decay > 1.0:
        raise ValueError(f"Invalid decay value {decay} provided. Please provide a value in "
                         "[0,1] range.")


def get_ema_multi_avg_fn(decay=0.999):
    """An in-place update ``ema <- decay * ema + (1 - decay) * current`` of lists of tensors
    (for ``AveragedModel(multi_avg_fn=...)``)."""
    _check_decay(decay)

    @no_grad()
    def ema_update(ema_param_list, current_param_list, _):
        if ember.is_floating_point(ema_param_list[0]) or ember.is_complex(ema_param_list[0]):
            for p_ema, p_model in zip(ema_param_list, current_param_list):
                p_ema.lerp_(p_model, 1 - decay)
        else:
            for p_ema, p_model in zip(ema_param_list, current_param_list, strict=True):
                p_ema.copy_(p_ema * decay + p_model * (1 - decay))
    return ema_update


def get_swa_multi_avg_fn():
    """An in-place running mean ``avg <- avg + (current - avg) / (n + 1)`` of lists of
    tensors (for ``AveragedModel(multi_avg_fn=...)``)."""
    @no_grad()
    def swa_update(averaged_param_list, current_param_list, num_averaged):
        if ember.is_floating_point(averaged_param_list[0]) or ember.is_complex(
                averaged_param_list[0]):
            for p_avg, p_model in zip(averaged_param_list, current_param_list):
                p_avg.lerp_(p_model, float(1 / (num_averaged + 1)))
            return
        for p_avg, p_model in zip(averaged_param_list, current_param_list):
            diff = p_model - p_avg
            if isinstance(num_averaged, Tensor):
                p_avg.addcdiv_(diff, num_averaged + 1)
            else:
                p_avg.add_(diff, alpha=1.0 / (num_averaged + 1))
    return swa_update


def get_ema_avg_fn(decay=0.999):
    """``avg_fn(ema, current, n) = decay * ema + (1 - decay) * current``."""
    _check_decay(decay)

    @no_grad()
    def ema_update(ema_param, current_param, num_averaged):
        return decay * ema_param + (1 - decay) * current_param
    return ema_update


def get_swa_avg_fn():
    """``avg_fn(avg, current, n) = avg + (current - avg) / (n + 1)``: the running mean."""
    @no_grad()
    def swa_update(averaged_param, current_param, num_averaged):
        return averaged_param + (current_param - averaged_param) / (num_averaged + 1)
    return swa_update


class AveragedModel(ember.nn.Module):
    """A copy of ``model`` whose parameters (and buffers, with ``use_buffers=True``) hold an
    average of ``model``'s over the calls to :meth:`update_parameters`: the equal-weight
    running mean by default (SWA), or what ``avg_fn`` / ``multi_avg_fn`` compute (an EMA with
    ``get_ema_multi_avg_fn(decay)``). ``n_averaged`` counts the updates."""

    def __init__(self, model, device=None, avg_fn=None, multi_avg_fn=None, use_buffers=False):
        super().__init__()
        if avg_fn is not None and multi_avg_fn is not None:
            raise AssertionError("Only one of avg_fn and multi_avg_fn should be provided")
        self.module = deepcopy(model)
        if device is not None:
            self.module = self.module.to(device)
        self.register_buffer("n_averaged", ember.tensor(0, dtype=ember.long, device=device))
        self.avg_fn = avg_fn
        self.multi_avg_fn = multi_avg_fn
        self.use_buffers = use_buffers

    def forward(self, *args, **kwargs):
        return self.module(*args, **kwargs)

    def _tensors(self, module, own):
        if self.use_buffers:
            return itertools.chain(module.parameters(), module.buffers())
        return self.parameters() if own else module.parameters()

    def update_parameters(self, model):
        """Average ``model``'s current weights into this model's (the first call copies)."""
        averaged = [p.detach() for p in self._tensors(self.module, own=True)]
        current = [p.detach().to(a.device)
                   for a, p in zip(averaged, self._tensors(model, own=False))]
        if bool(self.n_averaged == 0):
            for a, p in zip(averaged, current):
                a.copy_(p)
        elif self.avg_fn is not None:
            for a, p in zip(averaged, current):
                a.copy_(self.avg_fn(a, p, self.n_averaged.to(a.device)))
        else:
            self._average_by_dtype(averaged, current)
        if not self.use_buffers:  # buffers (batch norm statistics) follow the model's
            for b_avg, b_model in zip(self.module.buffers(), model.buffers(), strict=True):
                b_avg.detach().copy_(b_model.detach().to(b_avg.device))
        self.n_averaged += 1

    def _average_by_dtype(self, averaged, current):
        """Average tensors grouped by dtype (multi_avg_fn, or the running mean)."""
        groups = {}
        for a, p in zip(averaged, current):
            groups.setdefault((a.device.type, a.dtype), ([], []))
            groups[a.device.type, a.dtype][0].append(a)
            groups[a.device.type, a.dtype][1].append(p)
        swa = get_swa_avg_fn()
        for averaged_list, current_list in groups.values():
            n = self.n_averaged.to(averaged_list[0].device)
            if self.multi_avg_fn is not None:
                self.multi_avg_fn(averaged_list, current_list, n)
                continue
            for a, p in zip(averaged_list, current_list, strict=True):
                a.copy_(swa(a, p, n))


@no_grad()
def update_bn(loader, model, device=None):
    """Recompute the running statistics of ``model``'s batch norm layers with one pass over
    ``loader`` (the weights of an averaged model were never used to compute them)."""
    from ..nn.modules.normalization import _BatchNorm
    momenta = {}
    for module in model.modules():
        if isinstance(module, _BatchNorm):
            module.reset_running_stats()
            momenta[module] = module.momentum
    if not momenta:
        return
    was_training = model.training
    model.train()
    for module in momenta:
        module.momentum = None  # a cumulative average over the whole pass
    for input in loader:  # noqa: A001 - torch's name
        if isinstance(input, (list, tuple)):
            input = input[0]  # noqa: A001
        if device is not None:
            input = input.to(device)  # noqa: A001
        model(input)
    for bn_module in momenta:
        bn_module.momentum = momenta[bn_module]
    model.train(was_training)


class SWALR(LRScheduler):
    """Anneal each param group's learning rate to ``swa_lr`` over ``anneal_epochs`` steps
    (cosine or linear), then hold it there: the schedule of Stochastic Weight Averaging."""

    def __init__(self, optimizer, swa_lr, anneal_epochs=10, anneal_strategy="cos",
                 last_epoch=-1):
        swa_lrs = _format_param("swa_lr", optimizer, swa_lr)
        for lr, group in zip(swa_lrs, optimizer.param_groups, strict=True):
            group["swa_lr"] = lr
        if anneal_strategy not in ["cos", "linear"]:
            raise ValueError("anneal_strategy must be one of 'cos' or 'linear', instead got "
                             f"{anneal_strategy}")
        self._set_anneal_func(anneal_strategy)
        if not isinstance(anneal_epochs, int) or anneal_epochs < 0:
            raise ValueError(f"anneal_epochs must be equal or greater than 0, got "
                             f"{anneal_epochs}")
        self.anneal_epochs = anneal_epochs
        super().__init__(optimizer, last_epoch)

    @staticmethod
    def _linear_anneal(t):
        return t

    @staticmethod
    def _cosine_anneal(t):
        return (1 - math.cos(math.pi * t)) / 2

    @staticmethod
    def _get_initial_lr(lr, swa_lr, alpha):
        """The learning rate the annealing started from, recovered from the current one."""
        if alpha == 1:
            return swa_lr
        return (lr - alpha * swa_lr) / (1 - alpha)

    def get_lr(self):
        if not self._get_lr_called_within_step:
            warnings.warn("To get the last learning rate computed by the scheduler, please use "
                          "`get_last_lr()`.", UserWarning, stacklevel=2)
        step = self._step_count - 1
        if self.anneal_epochs == 0:
            step = max(1, step)
        prev_t = max(0, min(1, (step - 1) / max(1, self.anneal_epochs)))
        prev_alpha = self.anneal_func(prev_t)
        prev_lrs = [self._get_initial_lr(group["lr"], group["swa_lr"], prev_alpha)
                    for group in self.optimizer.param_groups]
        t = max(0, min(1, step / max(1, self.anneal_epochs)))
        alpha = self.anneal_func(t)
        return [group["swa_lr"] * alpha + lr * (1 - alpha)
                for group, lr in zip(self.optimizer.param_groups, prev_lrs, strict=True)]

    def _set_anneal_func(self, anneal_strategy):
        self._anneal_strategy = anneal_strategy
        self.anneal_func = (self._cosine_anneal if anneal_strategy == "cos"
                            else self._linear_anneal)

    def state_dict(self):
        return {key: value for key, value in self.__dict__.items()
                if key not in ("optimizer", "anneal_func")}

    def load_state_dict(self, state_dict):
        self.__dict__.update(state_dict)
        self._set_anneal_func(self._anneal_strategy)
