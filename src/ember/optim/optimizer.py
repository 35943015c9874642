"""``Optimizer``: the base class of every optimizer, with torch's param groups, state and hooks.

Optimizers contain no derivative code: ``step()`` runs under ``no_grad`` and updates each
parameter's array in place (``p._data``), then bumps the parameter's version counter so that
autograd notices the change. The helpers at the bottom are the few array operations whose
rounding must follow torch's kernels (``lerp``) and the state conventions torch uses (``step``
counts are 0-dim float tensors on the host).
"""
from __future__ import annotations

import functools
import warnings
from collections import defaultdict
from collections.abc import Iterable
from copy import deepcopy
from itertools import chain

import numpy as np

from .. import _dtype as D
from .._backend import get_xp
from .._backend.fp_errors import restore, silence
from .._compile.hooks import grad_accessed
from .._ops.binary import _lerp
from .._ops.fused import lerp_
from .._state import profiler_hook, recording
from .._state import state as _mode
from .._tensor import Tensor, _wrap, typename
from ..autograd.graph import RemovableHandle, _HookDict

__all__ = [
    "Optimizer",
    "register_optimizer_step_post_hook",
    "register_optimizer_step_pre_hook",
    "required",
]

_global_optimizer_pre_hooks: _HookDict = _HookDict()
_global_optimizer_post_hooks: _HookDict = _HookDict()


class _RequiredParameter:
    """Singleton marking an optimizer argument that has no default."""

    def __repr__(self) -> str:
        return "<required parameter>"


required = _RequiredParameter()


def register_optimizer_step_pre_hook(hook) -> RemovableHandle:
    """Register ``hook(optimizer, args, kwargs) -> None or (args, kwargs)`` for every optimizer."""
    return RemovableHandle(_global_optimizer_pre_hooks, hook)


def register_optimizer_step_post_hook(hook) -> RemovableHandle:
    """Register ``hook(optimizer, args, kwargs) -> None`` run after every optimizer's step."""
    return RemovableHandle(_global_optimizer_post_hooks, hook)


def _profiled(name):
    """A ``record_function(name)`` range when a profiler runs, else nothing at all."""
    if profiler_hook[0] is None:
        return None
    from ..profiler import record_function
    return record_function(name)


def _use_grad_for_differentiable(func):
    """Run ``step`` with gradient recording on only for a ``differentiable=True`` optimizer."""
    @functools.wraps(func)
    def _use_grad(self, *args, **kwargs):
        prev = _mode.grad_enabled
        _mode.grad_enabled = bool(self.defaults.get("differentiable"))
        try:
            return func(self, *args, **kwargs)
        finally:
            _mode.grad_enabled = prev
    return _use_grad


class Optimizer:
    r"""Base class for all optimizers.

    Args:
        params (iterable): an iterable of Tensors, of ``(name, Tensor)`` pairs, or of dicts
            (parameter groups). Specifies what Tensors should be optimized.
        defaults (dict): default values of optimization options (used when a parameter
            group doesn't specify them).
    """

    # (torch's message for a sparse gradient, in optimizers that have no sparse update)
    _sparse_grads_refused: str | None = None

    def __init__(self, params, defaults: dict) -> None:
        self.defaults = defaults
        self._optimizer_step_pre_hooks = _HookDict()
        self._optimizer_step_post_hooks = _HookDict()
        self._optimizer_state_dict_pre_hooks = _HookDict()
        self._optimizer_state_dict_post_hooks = _HookDict()
        self._optimizer_load_state_dict_pre_hooks = _HookDict()
        self._optimizer_load_state_dict_post_hooks = _HookDict()
        self._patch_step_function()

        if isinstance(params, Tensor):
            raise TypeError("params argument given to the optimizer should be an iterable of "
                            "Tensors or dicts, but got " + typename(params))

        self.state: defaultdict = defaultdict(dict)
        self.param_groups: list[dict] = []

        param_groups = list(params)
        if len(param_groups) == 0:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(param_groups[0], dict):
            param_groups = [{"params": param_groups}]
        for param_group in param_groups:
            self.add_param_group(param_group)

    def _refuse_sparse_grads(self) -> None:
        """torch's RuntimeError when a parameter has a sparse gradient and this optimizer has
        no sparse update (checked after the closure, before any parameter changes)."""
        if self._sparse_grads_refused is None:
            return
        for group in self.param_groups:
            for p in group["params"]:
                if p._grad is not None and p._grad.is_sparse:
                    raise RuntimeError(self._sparse_grads_refused)

    # -- pickling and copying ------------------------------------------------------------------
    def __getstate__(self) -> dict:
        return {"defaults": self.defaults, "state": self.state,
                "param_groups": self.param_groups}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        for name in ("_optimizer_step_pre_hooks", "_optimizer_step_post_hooks",
                     "_optimizer_state_dict_pre_hooks", "_optimizer_state_dict_post_hooks",
                     "_optimizer_load_state_dict_pre_hooks",
                     "_optimizer_load_state_dict_post_hooks"):
            if name not in self.__dict__:
                setattr(self, name, _HookDict())
        self._patch_step_function()
        self.defaults.setdefault("differentiable", False)

    def __repr__(self) -> str:
        format_string = self.__class__.__name__ + " ("
        for i, group in enumerate(self.param_groups):
            format_string += "\n"
            format_string += f"Parameter Group {i}\n"
            for key in sorted(group.keys()):
                if key != "params":
                    format_string += f"    {key}: {group[key]}\n"
        format_string += ")"
        return format_string

    # -- step and its hooks ----------------------------------------------------------------------
    def _optimizer_step_code(self) -> None:
        """Entry point for profilers: called after every ``step()``."""

    @staticmethod
    def profile_hook_step(func):
        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            self, *_ = args
            grad_accessed("Optimizer.step()")
            # (the range's name and the hooks' loops only when there is one: every training
            # step passes here)
            rec = (None if profiler_hook[0] is None else
                   _profiled(f"Optimizer.step#{self.__class__.__name__}.step"))
            if rec is not None:
                rec.__enter__()
            try:
                if _global_optimizer_pre_hooks or self._optimizer_step_pre_hooks:
                    for pre_hook in chain(_global_optimizer_pre_hooks.values(),
                                          self._optimizer_step_pre_hooks.values()):
                        result = pre_hook(self, args, kwargs)
                        if result is not None:
                            if isinstance(result, tuple) and len(result) == 2:
                                args, kwargs = result
                            else:
                                raise RuntimeError(f"{func} must return None or a tuple of "
                                                   f"(new_args, new_kwargs), but got {result}.")
                # (the update's NumPy arithmetic without NumPy's floating point warnings, as
                # a backward pass: torch makes a NaN of 0/0, as Adam's float16 eps rounded to
                # 0 does, without a word)
                quiet = silence()
                try:
                    out = func(*args, **kwargs)
                finally:
                    restore(quiet)
                self._optimizer_step_code()
                if self._optimizer_step_post_hooks or _global_optimizer_post_hooks:
                    for post_hook in chain(self._optimizer_step_post_hooks.values(),
                                           _global_optimizer_post_hooks.values()):
                        post_hook(self, args, kwargs)
                return out
            finally:
                if rec is not None:
                    rec.__exit__(None, None, None)
        return wrapper

    def _patch_step_function(self) -> None:
        self._zero_grad_profile_name = f"Optimizer.zero_grad#{self.__class__.__name__}.zero_grad"
        hooked = getattr(self.__class__.step, "hooked", None)
        if not hooked:
            self.__class__.step = self.profile_hook_step(self.__class__.step)
            self.__class__.step.hooked = True

    def register_step_pre_hook(self, hook) -> RemovableHandle:
        """Register ``hook(optimizer, args, kwargs) -> None or (args, kwargs)`` run before step."""
        return RemovableHandle(self._optimizer_step_pre_hooks, hook)

    def register_step_post_hook(self, hook) -> RemovableHandle:
        """Register ``hook(optimizer, args, kwargs) -> None`` run after step."""
        return RemovableHandle(self._optimizer_step_post_hooks, hook)

    def step(self, closure=None):
        """Perform a single optimization step to update parameters."""
        raise NotImplementedError

    # -- state dicts -----------------------------------------------------------------------------
    @staticmethod
    def _register(hooks, hook, prepend):
        handle = RemovableHandle(hooks, hook)
        if prepend:
            hooks.move_to_end(handle.id, last=False)
        return handle

    def register_state_dict_pre_hook(self, hook, prepend: bool = False) -> RemovableHandle:
        """Register ``hook(optimizer) -> None`` run before ``state_dict()``."""
        return self._register(self._optimizer_state_dict_pre_hooks, hook, prepend)

    def register_state_dict_post_hook(self, hook, prepend: bool = False) -> RemovableHandle:
        """Register ``hook(optimizer, state_dict) -> state_dict or None`` run after it."""
        return self._register(self._optimizer_state_dict_post_hooks, hook, prepend)

    def register_load_state_dict_pre_hook(self, hook, prepend: bool = False) -> RemovableHandle:
        """Register ``hook(optimizer, state_dict) -> state_dict or None`` run before loading."""
        return self._register(self._optimizer_load_state_dict_pre_hooks, hook, prepend)

    def register_load_state_dict_post_hook(self, hook, prepend: bool = False) -> RemovableHandle:
        """Register ``hook(optimizer) -> None`` run after ``load_state_dict()``."""
        return self._register(self._optimizer_load_state_dict_post_hooks, hook, prepend)

    def state_dict(self) -> dict:
        """Return the state of the optimizer as a dict: ``{'state': ..., 'param_groups': ...}``.

        Parameters are replaced by their index (in order of appearance across groups); state
        tensors are not copied, as in torch.
        """
        for pre_hook in self._optimizer_state_dict_pre_hooks.values():
            pre_hook(self)
        param_mappings: dict[int, int] = {}
        start_index = 0

        def pack_group(group):
            nonlocal start_index
            packed = {k: v for k, v in group.items() if k != "params"}
            param_mappings.update({id(p): i for i, p in enumerate(group["params"], start_index)
                                   if id(p) not in param_mappings})
            packed["params"] = [param_mappings[id(p)] for p in group["params"]]
            start_index += len(packed["params"])
            return packed

        param_groups = [pack_group(g) for g in self.param_groups]
        packed_state = {(param_mappings[id(k)] if isinstance(k, Tensor) else k): v
                        for k, v in self.state.items()}
        state_dict = {"state": packed_state, "param_groups": param_groups}
        for post_hook in self._optimizer_state_dict_post_hooks.values():
            result = post_hook(self, state_dict)
            if result is not None:
                state_dict = result
        return state_dict

    @staticmethod
    def _process_value_according_to_param_policy(param, value, param_id, param_groups,
                                                 key=None):
        # NOTE: 'step' keeps its own dtype and device (torch issue 74424); other state goes
        # to the parameter's device, floating state to its dtype too.
        if key == "step":
            return value
        if param.is_floating_point():
            return value.to(dtype=param.dtype, device=param.device)
        return value.to(device=param.device)

    def load_state_dict(self, state_dict: dict) -> None:
        """Load the optimizer state (an object returned by :meth:`state_dict`)."""
        state_dict = state_dict.copy()
        for pre_hook in self._optimizer_load_state_dict_pre_hooks.values():
            result = pre_hook(self, state_dict)
            if result is not None:
                state_dict = result

        groups = self.param_groups
        saved_groups = deepcopy(state_dict["param_groups"])
        if len(groups) != len(saved_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        if any(len(g["params"]) != len(s["params"]) for g, s in zip(groups, saved_groups)):
            raise ValueError("loaded state dict contains a parameter group that doesn't match "
                             "the size of optimizer's group")

        id_map = dict(zip(chain.from_iterable(g["params"] for g in saved_groups),
                          chain.from_iterable(g["params"] for g in groups)))

        def _cast(param, value, param_id=None, param_groups=None, key=None):
            if isinstance(value, Tensor):
                return Optimizer._process_value_according_to_param_policy(
                    param, value, param_id, param_groups, key)
            if isinstance(value, dict):
                return {k: _cast(param, v, param_id=param_id, param_groups=param_groups, key=k)
                        for k, v in value.items()}
            if isinstance(value, Iterable) and not isinstance(value, (str, bytes)):
                return type(value)(_cast(param, v, param_id=param_id, param_groups=param_groups)
                                   for v in value)
            return value

        state: defaultdict = defaultdict(dict)
        for k, v in state_dict["state"].items():
            if k in id_map:
                param = id_map[k]
                state[param] = _cast(param, v, param_id=k,
                                     param_groups=state_dict["param_groups"])
            else:
                state[k] = v

        def update_group(group, new_group):
            new_group["params"] = group["params"]
            if "param_names" in group and "param_names" not in new_group:
                new_group["param_names"] = group["param_names"]
            return new_group

        param_groups = [update_group(g, ng) for g, ng in zip(groups, saved_groups)]
        self.__setstate__({"state": state, "param_groups": param_groups})
        for post_hook in self._optimizer_load_state_dict_post_hooks.values():
            post_hook(self)

    # -- gradients and groups --------------------------------------------------------------------
    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset the gradients of all optimized Tensors (to None by default)."""
        grad_accessed("Optimizer.zero_grad()")
        rec = _profiled(self._zero_grad_profile_name)
        if rec is not None:
            rec.__enter__()
        try:
            for group in self.param_groups:
                for p in group["params"]:
                    g = p._grad
                    if g is None:
                        continue
                    if set_to_none:
                        p.grad = None
                    else:
                        if g.grad_fn is not None:
                            g.detach_()
                        else:
                            g.requires_grad_(False)
                        g.zero_()
        finally:
            if rec is not None:
                rec.__exit__(None, None, None)

    def add_param_group(self, param_group: dict) -> None:
        """Add a param group to the optimizer's ``param_groups``."""
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group)}")

        params = param_group["params"]
        if isinstance(params, Tensor):
            param_group["params"] = [params]
        elif isinstance(params, set):
            raise TypeError("optimizer parameters need to be organized in ordered collections, "
                            "but the ordering of tensors in sets will change between runs. "
                            "Please use a list instead.")
        else:
            param_group["params"] = list(params)

        tensors, names = [], []
        for param in param_group["params"]:
            if isinstance(param, tuple):
                names.append(param[0])
                tensors.append(param[1])
            else:
                tensors.append(param)
        param_group["params"] = tensors
        if names:
            if len(names) == len(tensors):
                param_group["param_names"] = names
            else:
                raise ValueError("all optimizer params should be with/without names. Some param "
                                 "names are missing")

        for param in param_group["params"]:
            if not isinstance(param, Tensor):
                raise TypeError("optimizer can only optimize Tensors, but one of the params is "
                                + typename(param))
            if not self.defaults.get("differentiable", None) and not (
                    param.is_leaf or param.retains_grad):
                raise ValueError("can't optimize a non-leaf Tensor")

        for name, default in self.defaults.items():
            if default is required and name not in param_group:
                raise ValueError("parameter group didn't specify a value of required "
                                 f"optimization parameter {name}")
            param_group.setdefault(name, default)

        params = param_group["params"]
        if len(params) != len(set(params)):
            warnings.warn("optimizer contains a parameter group with duplicate parameters; in "
                          "future, this will cause an error; see "
                          "github.com/pytorch/pytorch/issues/40967 for more information",
                          stacklevel=3)

        param_set: set = set()
        for group in self.param_groups:
            param_set.update(set(group["params"]))
            if ("param_names" in param_group) != ("param_names" in group):
                current = "with names" if "param_names" in param_group else "without names"
                raise ValueError("all optimizer param groups should be with/without names. "
                                 f"cannot add param group {current} to the optimizer")
        if not param_set.isdisjoint(set(param_group["params"])):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(param_group)


# -- helpers shared by the algorithms ------------------------------------------------------------
def _to_scalar(x):
    """A hyperparameter as a Python number (a 1-element Tensor gives its value)."""
    if isinstance(x, Tensor):
        return x.item()
    return x


def _squeezed(x):
    """A hyperparameter as torch's differentiable updates read it: a Tensor stays a Tensor
    (0-dim, so that it stays in the graph), a number stays a number."""
    return x.squeeze() if isinstance(x, Tensor) and x.dim() != 0 else x


def _number(x, fn, arg, position=None):
    """``x`` where torch's op ``fn`` takes a Number, as its argument parser takes it: a 0-dim
    Tensor that requires no grad stands for its value; any other Tensor (a tensor ``lr``
    that requires grad reaching ``addcdiv_``'s value in a differentiable update) gets torch's
    TypeError."""
    if isinstance(x, Tensor):
        if x.dim() or x.requires_grad:
            where = "" if position is None else f" (position {position})"
            raise TypeError(f"{fn}(): argument '{arg}'{where} must be Number, not Tensor")
        return x.item()
    return x


def _real_views(*tensors):
    """torch.view_as_real of each tensor if the first (the parameter) is complex."""
    if not tensors[0].is_complex():
        return tensors
    from .._ops.strided import view_as_real
    return tuple(view_as_real(t) for t in tensors)


def _decayed_moments(p, group, state):
    """The start of torch's differentiable NAdam and RAdam updates, in Tensor ops: the
    gradient (negated to maximize), real views of a complex parameter, its gradient and
    moments, the step counted, and weight decay (decoupled: the parameter shrunk in place;
    else added to the gradient). Returns ``param, grad, exp_avg, exp_avg_sq, step``."""
    grad = -p.grad if group["maximize"] else p.grad
    param, grad, exp_avg, exp_avg_sq = _real_views(p, grad, state["exp_avg"],
                                                   state["exp_avg_sq"])
    state["step"] += 1
    weight_decay = group["weight_decay"]
    if weight_decay != 0:
        if group["decoupled_weight_decay"]:
            param.mul_(1 - _squeezed(group["lr"]) * weight_decay)
        else:
            grad = grad.add(param, alpha=weight_decay)
    return param, grad, exp_avg, exp_avg_sq, state["step"].item()


def _closure_loss(closure):
    """Evaluate ``closure`` with grad recording on (as torch's optimizers do)."""
    if closure is None:
        return None
    prev = _mode.grad_enabled
    _mode.grad_enabled = True
    try:
        return closure()
    finally:
        _mode.grad_enabled = prev


def _scalar_np_dtype():
    """torch keeps ``step`` in float32, or float64 when that is the default dtype."""
    return np.float64 if D.get_default_dtype().name == "float64" else np.float32


def _scalar_tensor(value=0.0) -> Tensor:
    """A 0-dim host tensor holding an optimizer counter (torch's ``state['step']``)."""
    return _wrap(np.array(value, dtype=_scalar_np_dtype()))


_CAPTURABLE_DEVICES = ["cuda", "xpu", "hpu", "privateuseone", "xla"]


def _check_capturable(group, p, what="params and state_steps", xla=True) -> None:
    """torch's capturable check: graph-capturable steps need the parameters on an accelerator."""
    if group.get("capturable") and p.device.type not in _CAPTURABLE_DEVICES[:4]:
        devices = _CAPTURABLE_DEVICES if xla else _CAPTURABLE_DEVICES[:4]
        raise AssertionError(f"If capturable=True, {what} must be on supported devices: "
                             f"{devices}.")


def _incr(t: Tensor) -> float:
    """``step_t += 1`` in place; returns the new value as a Python float (torch's _get_value)."""
    t._data += 1
    t._bump_version()
    return float(t._data)


def _bump_versions(t: Tensor, writes: int = 1) -> None:
    """``t._bump_version()`` once for each of torch's ``writes`` in-place writes of an
    update; in the usual case (no inference tensor, no compile recording) in a few lines:
    every parameter and state tensor of every step passes here."""
    if t._is_inference or recording[0] is not None:
        for _ in range(writes):
            t._bump_version()
        return
    vc = t._vc
    if vc is None:
        t._vc = [writes]
    else:
        vc[0] += writes


def _real_arrays(arrays):
    """``_real`` of each array (None entries kept) where the first, the parameter's, is
    complex; else the arrays as they are."""
    if arrays[0].dtype.kind != "c":
        return arrays
    return tuple(a if a is None else _real(a) for a in arrays)


def _zeros_like(p: Tensor) -> Tensor:
    return _wrap(get_xp(p._data).zeros_like(p._data))


def _full_like(p: Tensor, value) -> Tensor:
    return _wrap(get_xp(p._data).full_like(p._data, value))


def _real(a):
    """A real view of a complex array (torch.view_as_real); real arrays are returned as is."""
    if a.dtype.kind != "c":
        return a
    return a[..., None].view(a.real.dtype)


def _lerp_(a, b, w) -> None:
    """``a.lerp_(b, w)`` with torch's formula and rounding, in ``a``'s dtype (the lerp op's
    kernel: torch's two-sided formula, fused in float32), in place where it can be."""
    if not lerp_(a, b, w):
        a[...] = _lerp(a, b, float(w))


# elements a block of the updates run in by ``_blockwise``: the few arrays and temporaries
# of a block (512 KiB each in float32) stay in the cache, and a block's dozen NumPy calls
# cost little next to its arithmetic (a 2048x2048 + 4096x1024 Adam step on the AMD EPYC:
# 40 ms at once, 35 in blocks of 65536, 32 in blocks of 131072)
_UPDATE_BLOCK = 131072


def _blockwise(update, arrays, *args) -> None:
    """``update(*arrays, *args)``, an elementwise update of ``arrays`` in place (None
    entries allowed), a block of ``_UPDATE_BLOCK`` elements at a time where the arrays are
    C-contiguous NumPy arrays of one shape: each of its passes then runs in the cache rather
    than over the whole arrays in memory. Elsewhere at once. (No block is one element long:
    the fused updates take their slower exact route there. 0-dim arrays are updated through
    views of one element.)"""
    first = arrays[0]
    size = first.size
    if first.ndim == 0:  # (views of one element: NumPy's ufuncs give scalars for 0-dim)
        arrays = tuple(a if a is None else a.reshape(1) for a in arrays)
    if type(first) is not np.ndarray or size < 2 * _UPDATE_BLOCK or not all(
            a is None or (type(a) is np.ndarray and a.shape == first.shape
                          and a.flags.c_contiguous) for a in arrays):
        update(*arrays, *args)
        return
    flat = [None if a is None else a.reshape(-1) for a in arrays]
    start = 0
    while start < size:
        stop = start + _UPDATE_BLOCK
        if size - stop < 2:
            stop = size
        update(*(None if a is None else a[start:stop] for a in flat), *args)
        start = stop


def _unwrap(v):
    """Arrays inside ember Tensors (recursively through lists), for LBFGS's history."""
    if isinstance(v, Tensor):
        return v._data
    if isinstance(v, list):
        return [_unwrap(x) for x in v]
    return v


def _wrap_state(v):
    """Tensors around arrays and NumPy scalars (recursively through lists)."""
    if isinstance(v, np.generic) or (hasattr(v, "shape") and not isinstance(v, Tensor)):
        return _wrap(get_xp(v).asarray(v))
    if isinstance(v, list):
        return [_wrap_state(x) for x in v]
    return v


def _step_to_tensor(optimizer, *keys) -> None:
    """``__setstate__`` helper: counters saved as Python numbers become 0-dim tensors."""
    for group in optimizer.param_groups:
        for p in group["params"]:
            p_state = optimizer.state.get(p, [])
            if len(p_state) == 0:
                continue
            for key in keys:
                if key in p_state and not isinstance(p_state[key], Tensor):
                    p_state[key] = _scalar_tensor(float(p_state[key]))


def _check_common(lr, eps=None, weight_decay=None, betas=None):
    """The argument checks most optimizers share, with torch's messages."""
    if isinstance(lr, Tensor) and lr.numel() != 1:
        raise ValueError("Tensor lr must be 1-element")
    if not 0.0 <= lr:
        raise ValueError(f"Invalid learning rate: {lr}")
    if eps is not None and not 0.0 <= eps:
        raise ValueError(f"Invalid epsilon value: {eps}")
    if betas is not None:
        if not 0.0 <= betas[0] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
        if not 0.0 <= betas[1] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
    if weight_decay is not None and not 0.0 <= weight_decay:
        raise ValueError(f"Invalid weight_decay value: {weight_decay}")
