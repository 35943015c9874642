"""``swap_in_optimizer_params_and_state``: run an optimizer on other parameters and state."""
from __future__ import annotations

import contextlib
from collections import defaultdict

from .._tensor import Tensor

__all__ = ["swap_in_optimizer_params_and_state"]

_NAME = "swap_in_optimizer_params_and_state"


def _check_state(state):
    if not isinstance(state, dict):
        raise RuntimeError(f"{_NAME} requires swapin_optim_state['state'] to be a dict mapping "
                           "packed parameter ids to per-param state dicts, got "
                           f"{type(state).__name__}.")
    if any(isinstance(k, Tensor) for k in state):
        raise RuntimeError(f"{_NAME} requires optimizer.state_dict()-style state keyed by "
                           "packed parameter ids.")
    if any(isinstance(k, int) and not isinstance(v, dict) for k, v in state.items()):
        raise RuntimeError(f"{_NAME} requires per-parameter optimizer state entries to be "
                           "dictionaries.")
    return state


def _check_groups(optimizer, groups):
    if not isinstance(groups, list):
        raise RuntimeError(f"{_NAME} requires swapin_optim_state['param_groups'] to be a list "
                           f"of param-group dicts, got {type(groups).__name__}.")
    if len(optimizer.param_groups) != len(groups):
        raise RuntimeError("swapin_optim_state has a different number of parameter groups "
                           "than the live optimizer.")
    return groups


def _check_group(idx, group, swapin_group):
    if not isinstance(swapin_group, dict):
        raise RuntimeError(f"{_NAME} requires each optimizer param group to be a dictionary.")
    ids = swapin_group.get("params")
    if not isinstance(ids, list) or not all(isinstance(i, int) for i in ids):
        raise RuntimeError(f"{_NAME} requires optimizer.state_dict()-style "
                           "param_groups[*]['params'] entries keyed by packed parameter ids.")
    if len(group["params"]) != len(ids):
        raise RuntimeError(f"swapin_optim_state param group {idx} has a different number of "
                           "params than the live optimizer param group.")
    swapin_only = [k for k in swapin_group if k not in group]
    live_only = [k for k in group if k not in swapin_group]
    if swapin_only or live_only:
        raise RuntimeError(f"{_NAME} requires optimizer.state_dict()-style param group keys to "
                           "exactly match the live optimizer group keys for group "
                           f"{idx}. Keys only in swap-in: {swapin_only}. Keys only in live: "
                           f"{live_only}.")
    return ids


def _swap_plan(optimizer, swapin_parameters, swapin_optim_state):
    """(the packed state, [(live group, swap-in group, swap-in parameters)]), checked."""
    if not optimizer.state:
        raise RuntimeError(f"{_NAME} requires initialized optimizer state.")
    if not isinstance(swapin_optim_state, dict):
        raise RuntimeError(f"{_NAME} requires a DCP-style optimizer state_dict.")
    state = _check_state(swapin_optim_state.get("state"))
    groups = _check_groups(optimizer, swapin_optim_state.get("param_groups"))
    flat = list(swapin_parameters.values())
    offset, seen, plan = 0, set(), []
    for idx, (group, swapin_group) in enumerate(zip(optimizer.param_groups, groups)):
        ids = _check_group(idx, group, swapin_group)
        seen.update(ids)
        if offset + len(ids) > len(flat):
            raise RuntimeError(f"{_NAME} requires the explicit parameter state to match "
                               "optimizer.param_groups ordering.")
        plan.append((group, swapin_group, flat[offset:offset + len(ids)]))
        offset += len(ids)
    extra = [k for k in state if k not in seen]
    if extra:
        raise RuntimeError(f"{_NAME} requires swapin_optim_state['state'] to be keyed only by "
                           f"packed parameter ids from param_groups[*]['params']; got extra "
                           f"keys {extra!r}.")
    return state, plan


@contextlib.contextmanager
def swap_in_optimizer_params_and_state(optimizer, swapin_parameters, swapin_optim_state):
    """Within the context, ``optimizer`` works on ``swapin_parameters`` (a dict, in the
    optimizer's parameter order) with the state and hyperparameters of
    ``swapin_optim_state`` (a ``state_dict()``-shaped dict); its own are restored on exit.
    In-place changes to the swapped-in state tensors are kept."""
    state, plan = _swap_plan(optimizer, swapin_parameters, swapin_optim_state)
    original_state = optimizer.state
    snapshots = [dict(g) for g in optimizer.param_groups]
    try:
        swapped = defaultdict(dict)
        for live, swapin_group, params in plan:
            live["params"] = params
            live.update({k: v for k, v in swapin_group.items() if k != "params"})
            for p, pid in zip(params, swapin_group["params"], strict=True):
                swapped[p] = dict(state.get(pid, {}))
        optimizer.state = swapped
        yield
    finally:
        for group, snapshot in zip(optimizer.param_groups, snapshots, strict=True):
            group.clear()
            group.update(snapshot)
        optimizer.state = original_state
