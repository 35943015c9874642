"""Activation checkpointing, as ``torch.utils.checkpoint``: trade compute for memory.

``checkpoint(fn, *args)`` keeps none of ``fn``'s intermediate values for backward; they are
recomputed (with the RNG state of the forward pass, so dropout draws the same mask) when the
backward pass needs them. Gradients equal those of the uncheckpointed run.

- ``use_reentrant=True``: ``fn`` runs under ``no_grad`` inside a custom Function; its backward
  reruns ``fn`` with grad enabled and backpropagates through the fresh graph.
- ``use_reentrant=False``: ``fn`` is recorded as usual (its nodes are the ordinary ones, e.g.
  ``SinBackward0``), but the values its nodes saved are dropped right away. The first node
  that needs them reruns ``fn`` and takes, node by node in creation order, the values saved by
  the rerun. This variant also works with ``autograd.grad``.
"""
from __future__ import annotations

import contextlib
import warnings

from .._tensor import Tensor
from ..autograd import backward as _backward
from ..autograd.function import Function
from ..autograd.grad_mode import enable_grad, is_grad_enabled, no_grad
from ..autograd.engine import current_pass_id
from ..autograd.graph import AccumulateGrad
from ..random import _restore, _snapshot, _snapshot_for

from .checkpoint_selective import (ERR_EXTRA_BACKWARD, CheckpointPolicy,  # noqa: F401
                                   SelectiveCheckpointContext, _CachedMode,
                                   create_selective_checkpoint_contexts)

__all__ = ["CheckpointError", "CheckpointPolicy", "SelectiveCheckpointContext",
           "check_backward_validity", "checkpoint", "checkpoint_sequential",
           "create_selective_checkpoint_contexts", "detach_variable", "get_device_states",
           "noop_context_fn", "set_checkpoint_debug_enabled", "set_checkpoint_early_stop",
           "set_device_states"]

_WARN_REENTRANT = (
    "ember.utils.checkpoint: the use_reentrant parameter should be passed explicitly. Starting "
    "in PyTorch 2.9, calling checkpoint without use_reentrant will raise an exception. "
    "use_reentrant=False is recommended, but if you need to preserve the current default "
    "behavior, you can pass use_reentrant=True. Refer to docs for more details on the "
    "differences between the two variants.")
_WARN_SEQUENTIAL = (
    "ember.utils.checkpoint.checkpoint_sequential: the use_reentrant parameter should be passed "
    "explicitly. In version 2.9 we will raise an exception if use_reentrant is not passed. "
    "use_reentrant=False is recommended, but if you need to preserve the current default "
    "behavior, you can pass use_reentrant=True. Refer to docs for more details on the "
    "differences between the two variants.")


def noop_context_fn():
    """The default ``context_fn`` of ``checkpoint``: no context around either pass."""
    return contextlib.nullcontext(), contextlib.nullcontext()


# Set by set_checkpoint_early_stop and set_checkpoint_debug_enabled (None: each call's own).
_enable_checkpoint_early_stop = None
_checkpoint_debug_enabled = None
_DETERMINISM_CHECKS = ("default", "none")


def checkpoint(function, *args, use_reentrant=None, context_fn=noop_context_fn,
               determinism_check="default", debug=False, early_stop=True,
               preserve_rng_state=True, **kwargs):
    """Checkpoint a model or part of the model: recompute its activations during backward.

    ``use_reentrant=False`` runs ``function`` under the first context ``context_fn()`` returns
    and its recomputation under the second (``create_selective_checkpoint_contexts`` makes a
    pair that keeps some ops' results). ``early_stop`` is accepted for torch's signature:
    ember's recomputation always runs the whole function."""
    if use_reentrant is None:
        warnings.warn(_WARN_REENTRANT, stacklevel=2)
        use_reentrant = True
    if use_reentrant:
        if context_fn is not noop_context_fn or debug is not False:
            raise ValueError("Passing `context_fn` or `debug` is only supported when "
                             "use_reentrant=False.")
        if kwargs:
            raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
        if is_grad_enabled():
            check_backward_validity(args, stacklevel=3)
        return CheckpointFunction.apply(function, preserve_rng_state, *args)
    if _checkpoint_debug_enabled if _checkpoint_debug_enabled is not None else debug:
        if context_fn is not noop_context_fn:
            raise ValueError("debug=True is incompatible with non-default context_fn")
    if determinism_check not in _DETERMINISM_CHECKS:
        raise ValueError(f"determinism_check should be one of {list(_DETERMINISM_CHECKS)}, but "
                         f"got {determinism_check}")
    return _checkpoint_without_reentrant(function, preserve_rng_state, args, kwargs,
                                         context_fn)


@contextlib.contextmanager
def set_checkpoint_early_stop(enable):
    """Whether non-reentrant checkpoints made inside stop their recomputation once every
    needed tensor is computed (torch's switch; ember's recomputation always runs the whole
    function, which gives the same values)."""
    global _enable_checkpoint_early_stop
    try:
        prev = _enable_checkpoint_early_stop
        _enable_checkpoint_early_stop = enable
        yield
    finally:
        _enable_checkpoint_early_stop = prev


@contextlib.contextmanager
def set_checkpoint_debug_enabled(enabled):
    """Overrides ``checkpoint``'s ``debug`` inside the block (None: each call's own)."""
    global _checkpoint_debug_enabled
    try:
        prev = _checkpoint_debug_enabled
        _checkpoint_debug_enabled = enabled
        yield
    finally:
        _checkpoint_debug_enabled = prev


def get_device_states(*args):
    """The ids of the GPU devices of the tensors in ``args`` (in order, repeats kept, as
    torch's) and their generators' states."""
    ids = [a.get_device() for a in _roots(args) if a.device.type not in ("cpu", "meta")]
    if not ids:
        return [], []
    from .. import cuda
    return ids, [cuda.get_rng_state(i) for i in ids]


def set_device_states(devices, states, *, device_type=None):
    """Set the generator states of GPU ``devices`` (as ``get_device_states`` gave them)."""
    if device_type == "meta":
        return
    from .. import cuda
    for device, state in zip(devices, states):
        cuda.set_rng_state(state, device)


def checkpoint_sequential(functions, segments, input, use_reentrant=None, **kwargs):
    """Checkpoint a sequential model in ``segments`` chunks (the last one is not checkpointed)."""
    if use_reentrant is None:
        warnings.warn(_WARN_SEQUENTIAL, stacklevel=2)
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(arg for arg in kwargs))

    def run_function(start, end, functions):
        def forward(input):
            for j in range(start, end + 1):
                input = functions[j](input)
            return input
        return forward

    from .. import nn
    sequential = getattr(nn, "Sequential", None)
    if sequential is not None and isinstance(functions, sequential):
        functions = list(functions.children())
    segment_size = len(functions) // segments
    end = -1
    for start in range(0, segment_size * (segments - 1), segment_size):
        end = start + segment_size - 1
        input = checkpoint(run_function(start, end, functions), input,
                           use_reentrant=use_reentrant, preserve_rng_state=preserve)
    return run_function(end + 1, len(functions) - 1, functions)(input)


# -- use_reentrant=True -------------------------------------------------------------------------
def detach_variable(inputs):
    """The tensors of the tuple ``inputs`` detached, each keeping its ``requires_grad`` (other
    items as they are): the leaves a reentrant checkpoint's recomputation starts from."""
    if not isinstance(inputs, tuple):
        raise RuntimeError("Only tuple of tensors is supported. Got Unsupported input type: "
                           f"{type(inputs).__name__}")
    out = []
    for inp in inputs:
        if isinstance(inp, Tensor):
            x = inp.detach()
            x.requires_grad = inp.requires_grad
            out.append(x)
        else:
            out.append(inp)
    return tuple(out)


def check_backward_validity(inputs, stacklevel=2):
    """torch's warning when no tensor among ``inputs`` requires grad."""
    if not any(inp.requires_grad for inp in inputs if isinstance(inp, Tensor)):
        warnings.warn("None of the inputs have requires_grad=True. Gradients will be None",
                      stacklevel=stacklevel)


class CheckpointError(RuntimeError):
    """torch's error for a recomputation that does not match the forward pass."""


class _RngFork:
    """Run a block with the forward pass's RNG state, then put the current state back."""

    def __init__(self, state):
        self.state = state

    def __enter__(self):
        if self.state is not None:
            self.saved = _snapshot([i for i, _ in self.state[1]])
            _restore(self.state)

    def __exit__(self, *exc):
        if self.state is not None:
            _restore(self.saved)


class CheckpointFunction(Function):
    """Runs ``run_function`` without a graph; its backward reruns it and backpropagates."""

    @staticmethod
    def forward(ctx, run_function, preserve_rng_state, *args):
        ctx.run_function = run_function
        ctx.fwd_rng_state = _snapshot_for(args) if preserve_rng_state else None
        ctx.inputs = [None if isinstance(a, Tensor) else a for a in args]
        ctx.tensor_indices = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
        ctx.save_for_backward(*[a for a in args if isinstance(a, Tensor)])
        with no_grad():
            return run_function(*args)

    @staticmethod
    def backward(ctx, *grads):
        inputs = list(ctx.inputs)
        for i, t in zip(ctx.tensor_indices, ctx.saved_tensors):
            inputs[i] = t
        detached = detach_variable(tuple(inputs))
        with _RngFork(ctx.fwd_rng_state), enable_grad():
            outputs = ctx.run_function(*detached)
        if isinstance(outputs, Tensor):
            outputs = (outputs,)
        pairs = [(o, g) for o, g in zip(outputs, grads)
                 if isinstance(o, Tensor) and o.requires_grad and g is not None]
        if not pairs:
            raise RuntimeError("none of output has requires_grad=True, this checkpoint() is not "
                               "necessary")
        _backward([o for o, _ in pairs], [g for _, g in pairs])
        return (None, None) + tuple(x.grad if isinstance(x, Tensor) else None for x in detached)


# -- use_reentrant=False ------------------------------------------------------------------------
def _checkpoint_without_reentrant(function, preserve_rng_state, args, kwargs, context_fn):
    from .._ops.registry import peek_sequence
    from .._state import state
    forward_context, recompute_context = context_fn()
    if not state.grad_enabled:
        with forward_context:
            return function(*args, **kwargs)
    rng = _snapshot_for(args) if preserve_rng_state else None
    start = peek_sequence()
    with _own_saved_hooks(), forward_context:
        outputs = function(*args, **kwargs)
    end = peek_sequence()
    # (the nodes of results a selective checkpoint keeps keep their saved values)
    kept = getattr(forward_context, "kept_nodes", ())
    nodes = [n for n in _nodes_between(outputs, start, end) if n not in kept]
    if nodes:
        frame = _Recompute(function, args, kwargs, rng, nodes, recompute_context)
        for k, node in enumerate(nodes):
            node._saved = _LazySaved(frame, k, "saved")
            node._vers = _LazySaved(frame, k, "vers")
    return outputs


@contextlib.contextmanager
def _own_saved_hooks():
    """No outer saved tensor hooks see the checkpointed values: in torch the checkpoint's own
    hooks are the innermost pair, so the outer ones are never called (and, like any pair of
    hooks, they cannot be pushed under disable_saved_tensors_hooks)."""
    from .._state import state
    if state.saved_hooks_disabled is not None:
        raise RuntimeError(state.saved_hooks_disabled)
    prev = state.saved_hooks
    state.saved_hooks = ()
    try:
        yield
    finally:
        state.saved_hooks = prev


def _roots(outputs):
    if isinstance(outputs, Tensor):
        return [outputs]
    if isinstance(outputs, (tuple, list)):
        return [r for o in outputs for r in _roots(o)]
    if isinstance(outputs, dict):
        return [r for o in outputs.values() for r in _roots(o)]
    return []


def _nodes_between(outputs, start, end):
    """The nodes with saved values recorded by the checkpointed call, in creation order."""
    from .._ops.registry import OpNode
    seen, found = set(), []
    stack = [t.grad_fn for t in _roots(outputs) if t.grad_fn is not None]
    while stack:
        node = stack.pop()
        if node in seen or isinstance(node, AccumulateGrad) or node._seq < start:
            continue
        seen.add(node)
        if isinstance(node, OpNode) and start <= node._seq < end and node._op.saved_spec:
            found.append(node)
        stack.extend(n for n, _ in node._next if n is not None)
    return sorted(found, key=lambda n: n._seq)


class _Recompute:
    """Reruns the checkpointed function once, when a node first needs its saved values."""

    def __init__(self, function, args, kwargs, rng, nodes, context):
        self.function, self.args, self.kwargs, self.rng = function, args, kwargs, rng
        self.n = len(nodes)
        self.values = None
        self.context = context

    def get(self, k):
        if self.values is None:
            self.values = self._rerun()
            self.pass_id = current_pass_id()
        elif isinstance(self.context, _CachedMode) and current_pass_id() not in (
                -1, self.pass_id) and self.context.storage:
            # torch recomputes in each backward pass, and a selective checkpoint's kept results
            # are handed on once
            raise RuntimeError(ERR_EXTRA_BACKWARD)
        return self.values[k]

    def _rerun(self):
        from .._ops.registry import peek_sequence
        # Inputs keep their identity (saved inputs are checked against their versions), but
        # the rerun must not add to the graph of anything outside: detach the tensors.
        args = detach_variable(self.args)
        with _RngFork(self.rng), enable_grad(), _own_saved_hooks(), self.context:
            start = peek_sequence()
            outputs = self.function(*args, **self.kwargs)
            end = peek_sequence()
        nodes = _nodes_between(outputs, start, end)
        if len(nodes) != self.n:
            raise RuntimeError("ember.utils.checkpoint: A different number of tensors was saved "
                               "during the original forward and recomputation.\nNumber of "
                               f"tensors saved during forward: {self.n}\nNumber of tensors "
                               f"saved during recomputation: {len(nodes)}.")
        # Keep the rerun's outputs alive with its nodes (saved results refer to them).
        self.outputs = outputs
        return [(node._saved, node._vers) for node in nodes]


class _LazySaved:
    """A node's saved values (or their versions), produced by the recomputation on first use."""

    def __init__(self, frame, k, what):
        self.frame, self.k, self.what = frame, k, what

    def _values(self):
        saved, vers = self.frame.get(self.k)
        return saved if self.what == "saved" else vers

    def __getitem__(self, j):
        return self._values()[j]

    def __iter__(self):
        return iter(self._values())

    def __len__(self):
        return len(self._values())
