"""Join: training with uneven inputs across processes.

A process that runs out of inputs leaves its loop and, in ``Join.__exit__``, keeps taking
part in the collectives the others still make (each Joinable's ``JoinHook.main_hook``
shadows one iteration) until every process has joined; then ``post_hook`` runs.

Each iteration starts with one all-gather of "still active" flags over the join group, made
by the first Joinable in its ``forward`` (``notify_join_context``) and by joined processes in
``__exit__``: every process learns which ones are still active (DDP takes its buffers from the
highest active rank and may average over the active processes only).
"""
from __future__ import annotations

from typing import NamedTuple

import ember

from .. import _collectives as C
from .._world import resolve


class JoinHook:
    """What a Joinable does while joined (``main_hook``, once per iteration of the others)
    and once every process has joined (``post_hook``)."""

    def main_hook(self) -> None:
        """Shadow the collectives of one iteration of the processes still active."""

    def post_hook(self, is_last_joiner: bool) -> None:
        """Run after every process has joined; ``is_last_joiner``: this process was among the
        last to join."""


class _JoinConfig(NamedTuple):
    enable: bool
    throw_on_early_termination: bool
    is_first_joinable: bool

    @staticmethod
    def construct_disabled_join_config():
        return _JoinConfig(enable=False, throw_on_early_termination=False,
                           is_first_joinable=False)


class Joinable:
    """Something whose collectives a joined process must shadow (DistributedDataParallel)."""

    def __init__(self):
        super().__init__()
        self._join_config = _JoinConfig.construct_disabled_join_config()

    def join_hook(self, **kwargs) -> JoinHook:
        raise NotImplementedError

    @property
    def join_device(self):
        raise NotImplementedError

    @property
    def join_process_group(self):
        raise NotImplementedError


class Join:
    """Context manager in which processes may run out of inputs at different iterations."""

    def __init__(self, joinables, enable=True, throw_on_early_termination=False, **kwargs):
        if len(joinables) == 0:
            raise ValueError("The join context manager requires at least one joinable")
        self._joinables = joinables
        self._join_hooks = [j.join_hook(**kwargs) for j in joinables]
        self._enable = enable
        self._throw = throw_on_early_termination
        groups = {id(j.join_process_group) for j in joinables}
        if len(groups) > 1:
            raise ValueError("Using join context manager with multiple process groups")
        self._group = joinables[0].join_process_group
        for i, j in enumerate(joinables):
            j._join_config = _JoinConfig(enable, throw_on_early_termination, i == 0)

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc_value, tb):
        if not self._enable or exc_type is not None:
            return
        is_last_joiner = True
        while True:
            active = _exchange_flags(self._group, active=False)
            for j in self._joinables:
                j._join_active = active
            if not any(active):
                break
            if self._throw:
                rank = resolve(self._group).rank()
                raise RuntimeError(f"Rank {rank} exhausted all inputs.")
            for hook in self._join_hooks:
                hook.main_hook()
            is_last_joiner = False
        for hook in self._join_hooks:
            hook.post_hook(is_last_joiner)
        for j in self._joinables:
            j._join_config = _JoinConfig.construct_disabled_join_config()

    @staticmethod
    def notify_join_context(joinable):
        """Called by an active process's Joinable at the start of an iteration: tell the
        joined processes one more iteration is coming. Returns the active flags."""
        config = joinable._join_config
        if not config.enable or not config.is_first_joinable:
            return None
        active = _exchange_flags(joinable.join_process_group, active=True)
        joinable._join_active = active
        if config.throw_on_early_termination and not all(active):
            raise RuntimeError("Detected at least one rank that exhausted inputs. Throwing "
                               "across all ranks.")
        return active


def _exchange_flags(group, active):
    pg = resolve(group)
    flags = ember.zeros(pg.size(), dtype=ember.int32)
    C.all_gather_into_tensor(flags, ember.tensor([int(active)], dtype=ember.int32), group=pg)
    return [bool(f) for f in flags.tolist()]
