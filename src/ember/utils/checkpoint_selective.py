"""Selective activation checkpointing, as torch.utils.checkpoint's: a policy says, op by op,
which results of a checkpointed function to keep from the forward pass rather than recompute.

``checkpoint(fn, x, use_reentrant=False, context_fn=partial(create_selective_checkpoint_contexts,
policy))`` runs ``fn`` under a caching mode and its recomputation under a cached mode. Both
see every op ``fn`` runs (as ``ember.ops.aten`` overloads, see _ops/aten_namespace.py):

- forward: the op runs; ``policy(ctx, op, *args)`` decides. A result to save is kept (detached)
  and the op's node keeps what it saved for backward, so the recomputation need not rebuild it.
- recomputation: an op whose result was kept does not run: its kept result is handed on, on a
  stand-in node (``_CachedResult``) with the op's edges, so that the nodes before it are found
  as in the forward pass; any other op runs again.

torch caches by (op, call number) in its dispatcher; ember intercepts its op registry's calls
through the ``forward_hook`` slot that forward AD and ember.compile's recorder also use (an
active one is called in turn).
"""
from __future__ import annotations

import enum
import threading
from collections import defaultdict

from .._state import forward_hook, set_hook
from .._tensor import Tensor
from ..autograd.graph import Node, gradient_edge

__all__ = ["CheckpointPolicy", "SelectiveCheckpointContext",
           "create_selective_checkpoint_contexts"]


class CheckpointPolicy(enum.Enum):
    """What selective checkpointing does with an op's result: ``{MUST,PREFER}_SAVE`` keep it
    from the forward pass, ``{MUST,PREFER}_RECOMPUTE`` recompute it during backward. The
    ``*_CPU_OFFLOAD`` policies keep it too (ember's values live where they were computed).
    ``MUST_*`` and ``PREFER_*`` differ only to torch.compile."""

    MUST_SAVE = 0
    PREFER_SAVE = 1
    MUST_RECOMPUTE = 2
    PREFER_RECOMPUTE = 3
    MUST_CPU_OFFLOAD = 4
    PREFER_CPU_OFFLOAD = 5


_KEEP = (CheckpointPolicy.MUST_SAVE, CheckpointPolicy.PREFER_SAVE,
         CheckpointPolicy.MUST_CPU_OFFLOAD, CheckpointPolicy.PREFER_CPU_OFFLOAD)


def _policy_from_bool(b):
    return CheckpointPolicy.MUST_SAVE if b else CheckpointPolicy.PREFER_RECOMPUTE


class SelectiveCheckpointContext:
    """What a policy function gets first: ``op_output``, the op's result. The policy is called
    in the forward pass only, so ``is_recompute`` (deprecated in torch) is always False."""

    def __init__(self, *, is_recompute, op_output=None):
        self.is_recompute = is_recompute
        self.op_output = op_output


_RECOMPUTE = object()
_CONSUMED = object()
_SAC_MISMATCH_MSG = (
    "This can happen if the operations in the checkpointed region are nondeterministic or "
    "depend on global state that changed between forward and backward.")
ERR_EXTRA_BACKWARD = ("Trying to backward an extra time. You are only allowed to backward once "
                      "on any region computed under selective activation checkpoint.")


class _Kept:
    """An op's result kept by the forward pass: detached (sharing its version counter, so a
    later in-place write shows) with whether it required grad."""

    def __init__(self, t):
        self.val = t.detach()
        self.version = t._version
        self.requires_grad = t.requires_grad

    def get_val(self, allow_cache_entry_mutation):
        if not allow_cache_entry_mutation and self.val._version != self.version:
            raise RuntimeError("Tensor cached during selective activation checkpoint has been "
                               "mutated")
        return self.val


class _CachedResult(Node):
    """The stand-in node of a kept result in the recomputation: the op's edges, nothing saved
    (never run: the recomputed graph only gives its saved values to the forward's nodes)."""

    def __init__(self, edges):
        from .._ops.registry import peek_sequence
        self._next = edges
        self._seq = peek_sequence()  # (within the recomputation's range: walked through)


def _map_results(out, fn, kind=Tensor):
    """``out`` with ``fn`` applied to each of its ``kind`` items (an op's result or its kept
    form: a tensor, or a tuple or list of them)."""
    if isinstance(out, kind):
        return fn(out)
    if isinstance(out, (tuple, list)):
        return type(out)(_map_results(o, fn, kind) for o in out)
    return out


class _Interceptor:
    """Installed as ``forward_hook`` while the checkpointed function (or its recomputation)
    runs; the op runs with the hook that was there before (forward AD's, or none)."""

    def __enter__(self):
        self.prev = forward_hook[0]
        set_hook(forward_hook, self)
        self.counter = defaultdict(int)
        # NOTE: the hook slot is the process's: ops other threads run meanwhile are not the
        # checkpointed function's, and counting them would hand one call's kept result to
        # another
        self.thread = threading.get_ident()
        return self

    def __exit__(self, *exc):
        set_hook(forward_hook, self.prev)

    def _run(self, op, args, inplace):
        from .._ops.inplace import dispatch_inplace
        from .._ops.registry import dispatch
        set_hook(forward_hook, self.prev)
        try:
            return (dispatch_inplace if inplace else dispatch)(op, args)
        finally:
            set_hook(forward_hook, self)

    def _key(self, op, inplace):
        from .._ops.aten_namespace import overload_of
        key = overload_of(op, inplace)
        idx = self.counter[key]
        self.counter[key] += 1
        return key, idx

    def dispatch_inplace(self, op, args):
        return self.dispatch(op, args, inplace=True)

    def _elsewhere(self):
        """Whether the op being dispatched runs in another thread than the function."""
        return threading.get_ident() != self.thread

    def tangent(self, t):
        return None if self.prev is None else self.prev.tangent(t)

    def view_inplace(self, *args):
        return self.prev.view_inplace(*args)

    def function_jvp(self, *args):
        if self.prev is not None:
            self.prev.function_jvp(*args)


class _CachingMode(_Interceptor):
    """The forward pass: runs each op, asks the policy, keeps the results it says to save."""

    def __init__(self, policy_fn, storage):
        self.policy_fn = policy_fn
        self.storage = storage
        self.kept_nodes = set()  # the nodes of kept results: they keep their saved values

    def dispatch(self, op, args, inplace=False):
        from .._ops.registry import peek_sequence
        if self._elsewhere():
            return self._run(op, args, inplace)
        first = peek_sequence()
        out = self._run(op, args, inplace)
        key, idx = self._key(op, inplace)
        policy = self.policy_fn(SelectiveCheckpointContext(is_recompute=False, op_output=out),
                                key, *args)
        if isinstance(policy, bool):
            policy = _policy_from_bool(policy)
        # NOTE: an in-place op is always run again (its result is its first argument, which
        # the recomputation must write into itself)
        if policy in _KEEP and not inplace:
            self.storage[key][idx] = _map_results(out, _Kept)
            self.kept_nodes.update(t._grad_fn for t in _tensors(out)
                                   if t._grad_fn is not None and t._grad_fn._seq >= first)
        else:
            self.storage[key][idx] = _RECOMPUTE
        return out


class _CachedMode(_Interceptor):
    """The recomputation: hands on the kept results, runs every other op."""

    def __init__(self, storage, allow_cache_entry_mutation):
        self.storage = storage
        self.allow_cache_entry_mutation = allow_cache_entry_mutation

    def dispatch(self, op, args, inplace=False):
        if self._elsewhere():
            return self._run(op, args, inplace)
        key, idx = self._key(op, inplace)
        func_storage = self.storage.get(key)
        if func_storage is None:
            raise RuntimeError(f"{key} encountered during backward but not found in storage. "
                               f"{_SAC_MISMATCH_MSG}")
        entry = func_storage.get(idx)
        if entry is None:
            raise RuntimeError(f"{key} invocation index {idx} encountered during backward but "
                               f"not found in storage. {_SAC_MISMATCH_MSG}")
        if entry is _CONSUMED:
            raise RuntimeError(ERR_EXTRA_BACKWARD)
        if entry is _RECOMPUTE:
            return self._run(op, args, inplace)
        func_storage[idx] = _CONSUMED
        edges = tuple(gradient_edge(a) for a in args[:op.n_tensors] if isinstance(a, Tensor))
        node = _CachedResult(edges)
        return _map_results(entry, lambda kept: self._handed_on(kept, node), _Kept)

    def _handed_on(self, kept, node):
        t = kept.get_val(self.allow_cache_entry_mutation).detach()
        if kept.requires_grad:
            t._requires_grad = True
            t._grad_fn = node
        return t


def _tensors(out):
    if isinstance(out, Tensor):
        return [out]
    if isinstance(out, (tuple, list)):
        return [t for o in out for t in _tensors(o)]
    return []


def create_selective_checkpoint_contexts(policy_fn_or_list, allow_cache_entry_mutation=False):
    """The two contexts of selective checkpointing, for ``checkpoint``'s ``context_fn``.

    ``policy_fn_or_list``: ``policy(ctx, op, *args, **kwargs) -> CheckpointPolicy`` (or a
    bool: True to save), or a list of ``ember.ops.aten`` overloads to save (every other op is
    recomputed). ``allow_cache_entry_mutation``: no error when a kept result was modified in
    place before the recomputation."""
    from ..ops import OpOverload, OpOverloadPacket
    if isinstance(policy_fn_or_list, list):
        for op in policy_fn_or_list:
            if not isinstance(op, OpOverload):
                _extra_msg = (
                    "Please update the OpOverloadPacket to a specific OpOverload.For example, "
                    "if you have `ember.ops.aten.mm`, change it to `ember.ops.aten.mm.default`."
                ) if isinstance(op, OpOverloadPacket) else ""
                raise ValueError(f"Expected op in `op_list` to be an OpOverload but got: {op} "
                                 f"of type {type(op)}. {_extra_msg}")

        def policy_fn(ctx, op, *args, **kwargs):
            if op in policy_fn_or_list:
                return CheckpointPolicy.MUST_SAVE
            return CheckpointPolicy.PREFER_RECOMPUTE
    elif callable(policy_fn_or_list):
        policy_fn = policy_fn_or_list
    else:
        raise TypeError("policy_fn_or_list must be either a function or a list of ops.")
    storage = defaultdict(dict)
    return (_CachingMode(policy_fn, storage),
            _CachedMode(storage, allow_cache_entry_mutation))
