"""``autograd.graph.register_multi_grad_hook``: one hook over the gradients of several tensors,
as torch's (built, as torch builds it, on tensor hooks and two questions to the engine: which
backward pass is running, and whether it runs a given node)."""
from __future__ import annotations

import functools
import threading
from collections import defaultdict

from .graph import RemovableHandle, edge_of


class _MultiHandle(RemovableHandle):
    """The handle of a multi-grad hook: ``remove()`` removes the hook from every tensor."""

    __slots__ = ("handles",)

    def __init__(self, handles):
        self.handles = handles

    def remove(self):
        for handle in self.handles:
            handle.remove()

    def __getstate__(self):
        return self.handles

    def __setstate__(self, state):
        self.handles = state


def _grad_fn_or_grad_acc(t):
    """The node that receives ``t``'s gradient: its grad_fn, or for a leaf its accumulator."""
    node = edge_of(t)[0] if t.requires_grad else t.grad_fn
    if node is None:
        raise AssertionError("Expected gradient function to be set")
    return node


def register_multi_grad_hook(tensors, fn, *, mode="all"):
    """Call ``fn`` once per backward pass over the gradients of ``tensors``.

    ``mode="all"``: after every tensor's gradient that the pass computes, with the list of
    them (None for a tensor the pass does not reach or does not need). ``mode="any"``: with
    the first of them to be computed. Returns a handle whose ``remove()`` removes the hook."""
    from .engine import current_pass_id, will_execute
    supported_modes = ("all", "any")
    lock = threading.Lock()
    if mode not in supported_modes:
        raise ValueError(f"Expects mode to be one of {supported_modes} but got {mode}")

    if mode == "all":
        count, buffer = {}, {}
        nb_calls = None
        grad_fns = list(map(_grad_fn_or_grad_acc, tensors))
        len_tensors = len(tensors)

        def get_inner_hook(idx):
            def inner_hook(grad):
                nonlocal nb_calls
                pass_id = current_pass_id()
                if pass_id == -1:
                    raise AssertionError("expected this hook to be called inside a backward "
                                         "call")
                count[pass_id] = count.get(pass_id, 0)
                buffer[pass_id] = buffer.get(pass_id, [None] * len_tensors)
                with lock:
                    curr_count, count[pass_id] = count[pass_id], count[pass_id] + 1
                    if curr_count == 0:  # the first call of the pass: how many will come
                        nb_calls = sum(map(will_execute, grad_fns))
                buffer[pass_id][idx] = grad
                if curr_count == nb_calls - 1:
                    fn(buffer[pass_id])
                    del count[pass_id]
                    del buffer[pass_id]
            return inner_hook

        handles = tuple(t.register_hook(get_inner_hook(i)) for i, t in enumerate(tensors))
    else:
        ran_hook = defaultdict(bool)

        @functools.wraps(fn)
        def wrapped_fn(grad):
            pass_id = current_pass_id()
            if pass_id == -1:
                raise AssertionError("expected this hook to be called inside a backward call")
            with lock:
                prev, ran_hook[pass_id] = ran_hook[pass_id], True
            if not prev:
                fn(grad)

        handles = tuple(t.register_hook(wrapped_fn) for t in tensors if t.requires_grad)
    return _MultiHandle(handles)
