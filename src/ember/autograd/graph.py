"""The backward graph: nodes, edges, saved tensors and hooks.

A node's ``next_functions`` are ``(node, input_nr)`` edges to the nodes that produced its
inputs; leaves that require grad are reached through their ``AccumulateGrad`` node. Built-in
op nodes are ``OpNode`` subclasses made by the op registry (one class per op, named as torch
names it); custom Functions make ``BackwardCFunction`` nodes.
"""
from __future__ import annotations

import re
import sys
import threading
import weakref
from collections import OrderedDict
from typing import NamedTuple

from .._state import state
from .._tensor import DetachedCounter, Tensor, _wrap
from .saved_tensors import (SavedTensor, disable_saved_tensors_hooks,  # noqa: F401 (public)
                            increment_version, save_on_cpu, saved_tensors_hooks)

ERR_FREED = (
    "Trying to backward through the graph a second time (or directly access saved tensors after "
    "they have already been freed). Saved intermediate values of the graph are freed when you "
    "call .backward() or autograd.grad(). Specify retain_graph=True if you need to backward "
    "through the graph a second time or if you need to access saved tensors after calling "
    "backward.")
ERR_INFERENCE_SAVE = (
    "Inference tensors cannot be saved for backward. Please do not use Tensors created in "
    "inference mode in computation tracked by autograd. To work around this, you can make a "
    "clone to get a normal tensor and use it in autograd, or use `ember.no_grad()` instead of "
    "`ember.inference_mode()`.")

# ember.func's test (set when it is imported) of whether a recorded call may save an
# inference tensor among its arguments: inside a torch.func transform whose levels alone
# record the call (see func/_outer_graph.py), as torch's functorch levels save the tensor.
inference_save_allowed = [lambda args: False]


def refuse_inference_save(args):
    """torch's refusal to save an inference tensor in a call recorded with ``args``, unless
    only a running torch.func transform records it."""
    if not inference_save_allowed[0](args):
        raise RuntimeError(ERR_INFERENCE_SAVE)


ERR_INFERENCE_INPLACE = (
    "Inplace update to inference tensor outside InferenceMode is not allowed.You can make a "
    "clone to get a normal tensor before doing inplace update.See "
    "https://github.com/pytorch/rfcs/pull/17 for more details.")
_HINT = ("Hint: enable anomaly detection to find the operation that failed to compute its "
         "gradient, with ember.autograd.set_detect_anomaly(True, check_nan=False).")
_HINT_ANOMALY = ("Hint: the backtrace further above shows the operation that failed to compute "
                 "its gradient. The variable in question was changed in there or anywhere "
                 "later. Good luck!")


class RemovableHandle:
    """Returned by ``register_hook``: ``remove()`` unregisters the hook."""

    __slots__ = ("hooks_dict_ref", "id", "__weakref__")
    next_id = 0

    def __init__(self, hooks_dict, hook=None):
        self.hooks_dict_ref = weakref.ref(hooks_dict)
        self.id = RemovableHandle.next_id
        RemovableHandle.next_id += 1
        if hook is not None:
            hooks_dict[self.id] = hook

    def remove(self):
        hooks = self.hooks_dict_ref()
        if hooks is not None:
            hooks.pop(self.id, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


# Hook registries are plain OrderedDicts, as torch's are (they print as such, and
# RemovableHandle can reference them weakly); the name stays for pickles that carry it.
_HookDict = OrderedDict


class Node:
    """Base class of every backward node (``ember.autograd.graph.Node``)."""

    # Defaults on the class so a node stores only what it uses.
    _next = ()
    _seq = 0
    _pre_hooks = None
    _post_hooks = None
    _tensor_hooks = None  # {output_nr: {id: hook}} for hooks registered on non-leaf tensors
    _retained = None  # {output_nr: weakref to a tensor that called retain_grad()}
    _metadata = None
    _trace = None  # forward traceback, recorded in anomaly mode
    _out_meta = None  # ((shape, dtype), ...) of the outputs of multi-output nodes
    # {output_nr: (shape, dtype)} of outputs whose .data was replaced by data of another
    # shape or dtype: what they were recorded with (see note_replaced_data)
    _replaced_outputs = None
    _meta = ()  # ((shape, dtype) or None, ...) of the inputs, one per next_functions edge
    # The engine may run it without its general path: not AccumulateGrad, and never given a
    # hook or a retained output (cleared for good by the first one, even if it is removed).
    _apply_plain = True
    # An AccumulateGrad the engine may run without its general path (cleared for good as
    # _apply_plain is; its leaf's own hooks are checked apart, as they live on the tensor).
    _leaf_plain = False
    _fresh_outputs = True  # its gradients are new arrays, never ones someone else holds
    # Run even when every gradient it receives is undefined (None), as torch's engine runs
    # every node it reaches: a custom Function's backward sees them (None, or zeros when it
    # materializes them). A built-in formula gives undefined gradients then: it is skipped.
    _runs_undefined = False
    # A list whose one item is ``(edges, leaves)``: the engine's _leaves_below for the last
    # ``_next`` it saw of the nodes sharing the list (nodes of one recording, whose edges stay
    # the same tuple from call to call), or None: told at each pass.
    _leaves_cache = None
    # _apply(grads, False, None) for the engine's one-node pass (its gradients go straight to
    # distinct leaves, summed with no other gradient), for a node that may then leave out
    # what only such sums read (None: _apply is called)
    _apply_into_leaves = None
    # Whether what _apply_into_leaves handed back is, by construction, one ndarray per edge of
    # the shape and dtype _meta gives it (the engine's one-node pass then takes it without a
    # look: after a compiled node's program, whose last large product has emptied the caches,
    # the look cost 1-2 us of a step)
    _usual_grads = False
    # What _release frees, read by the engine's usual path (a call per node saved there): 0
    # nothing, 1 _saved alone (the engine clears it), 2 what the class's _release does (the
    # registry gives an op's node class its case with its _release, see OpDef._saved_slot)
    _releases = 2

    def name(self) -> str:
        return type(self).__name__

    def __repr__(self):
        return f"<{type(self).__name__} object at {hex(id(self))}>"

    @property
    def next_functions(self):
        shown = self._edge_positions()
        return self._next if shown is None else tuple(self._next[k] for k in shown)

    def _edge_positions(self):
        """The positions of ``_next`` that torch's node has as edges (None: all of them).

        torch gives a node edges only for its differentiable tensor arguments: not for an
        index, a mask or a condition. ember's nodes keep a slot for every tensor parameter
        (formulas index their gradients by it); ``next_functions`` and node hooks show the
        slots torch has."""
        return None

    def _output_positions(self):
        """The positions of the node's outputs that torch's node has (None: all of them).

        torch's node takes gradients only for its differentiable outputs (not for the indices
        of ``sort`` or ``max_pool2d``); ember's keeps a slot for every output. A node hook's
        ``grad_outputs`` show the slots torch has."""
        return None

    @property
    def metadata(self) -> dict:
        if self._metadata is None:
            self._metadata = {}
        return self._metadata

    @property
    def requires_grad(self) -> bool:
        return True

    def _sequence_nr(self) -> int:
        return self._seq

    def register_hook(self, fn):
        """``fn(grad_inputs, grad_outputs)`` after the node runs; may return new grad_inputs."""
        if self._post_hooks is None:
            self._post_hooks = _HookDict()
            self._apply_plain = self._leaf_plain = False
        return RemovableHandle(self._post_hooks, fn)

    def register_prehook(self, fn):
        """``fn(grad_outputs)`` before the node runs; may return new grad_outputs."""
        if self._pre_hooks is None:
            self._pre_hooks = _HookDict()
            self._apply_plain = self._leaf_plain = False
        return RemovableHandle(self._pre_hooks, fn)

    def _add_tensor_hook(self, output_nr, fn):
        if self._tensor_hooks is None:
            self._tensor_hooks = {}
            self._apply_plain = self._leaf_plain = False
        hooks = self._tensor_hooks.get(output_nr)
        if hooks is None:
            hooks = self._tensor_hooks[output_nr] = _HookDict()
        return RemovableHandle(hooks, fn)

    def _retain(self, output_nr, tensor):
        if self._retained is None:
            self._retained = {}
            self._apply_plain = self._leaf_plain = False
        self._retained[output_nr] = weakref.ref(tensor)

    def _release(self):
        """Free saved values after a backward without retain_graph."""

    def __call__(self, *grads):
        outs = self._apply(list(grads), state.grad_enabled, None)
        return outs[0] if len(outs) == 1 else tuple(outs)


class AccumulateGrad(Node):
    """The node that sums incoming gradients into a leaf's ``.grad``."""

    _seq = sys.maxsize  # runs as soon as it is ready, like torch's
    _apply_plain = False
    _leaf_plain = True

    def __init__(self, variable):
        self.variable = variable
        # NOTE: held while accumulating: backward passes in several threads may reach the same
        # leaf, and ``grad is None`` then ``grad += g`` (NumPy releases the GIL) would lose
        # updates, as torch's AccumulateGrad mutex prevents.
        self.lock = threading.Lock()

    def name(self) -> str:
        return "torch::autograd::AccumulateGrad"

    def _leaf_hooks(self):
        return self.variable._hooks


def move_retained_grad(t, old_fn, old_nr):
    """``t`` got a new history (an in-place op, or a view regenerated after its base changed):
    its ``retain_grad()`` follows it to its new grad_fn, so ``.grad`` is the gradient of the
    latest value, as in torch. Hooks registered on ``t`` stay where they were: they see the
    gradient of the value they were registered on."""
    retained = old_fn._retained if old_fn is not None else None
    if retained:
        ref = retained.get(old_nr)
        if ref is not None and ref() is t:
            del retained[old_nr]
    new = t._grad_fn
    if new is not None:
        new._retain(t._output_nr, t)


def grad_accumulator(t):
    """The leaf's AccumulateGrad node, shared by every graph that uses the leaf."""
    ref = t._grad_acc
    if ref is not None:
        acc = ref()
        if acc is not None:
            return acc
    if (t._base is not None and t._grad_fn is None and t._base._requires_grad
            and not t._own_requires_grad):
        return None  # a view without history (made in no_grad mode, or before its base required
        # grad) requires grad through its base, but has no gradient of its own to accumulate
        # (torch: no grad accumulator, an edge to nothing)
    with _NEW_ACCUMULATOR:  # graphs built in two threads share the leaf's one node (and lock)
        ref = t._grad_acc
        acc = None if ref is None else ref()
        if acc is None:
            acc = AccumulateGrad(t)
            t._grad_acc = weakref.ref(acc)
    return acc


_NEW_ACCUMULATOR = threading.Lock()


# -- views whose requires_grad follows their base -------------------------------------------------
# torch: a view requires grad when its base does, whenever the base came to (requires_grad_(),
# an in-place op that records on it). A view made while its base did not require grad (or in
# no_grad mode) has no node of its own tying it to the base, so the base keeps weak references
# to such views and hands them its flag when it changes.
def register_following_view(root, view):
    views = root._following_views
    if views is None:
        root._following_views = views = []
    elif len(views) >= 64 and not len(views) & (len(views) - 1):  # at powers of two: drop the
        views[:] = [ref for ref in views if ref() is not None]     # dead (amortised O(1))
    views.append(weakref.ref(view))


def follow_base(root):
    """``root``'s requires_grad changed: its following views take it (one with a history of its
    own keeps requiring grad)."""
    flag = root._requires_grad
    for ref in root._following_views:
        view = ref()
        if view is not None:
            view._requires_grad = flag or view._grad_fn is not None or view._own_requires_grad


NO_EDGE = (None, 0)


def gradient_edge(t):
    """The edge a use of tensor ``t`` contributes to a new node's next_functions."""
    if t._base is not None:
        from .._ops.views import refresh
        refresh(t)
    fn = t._grad_fn
    if fn is not None:
        return (fn, t._output_nr)
    if t._requires_grad:
        return (grad_accumulator(t), 0)
    return NO_EDGE


def note_replaced_data(t, new_data):
    """Before non-leaf ``t``'s ``.data`` becomes ``new_data``: if that changes its shape or
    dtype, keep the shape and dtype its node recorded for it (torch's input metadata, which
    a root gradient given for ``t`` is validated against, as any node's gradient is), and
    send the node's backward by the engine's general path, where roots are validated."""
    fn, old = t._grad_fn, t._data
    if fn is None or t._base is not None or (
            new_data.shape == old.shape and new_data.dtype == old.dtype):
        return
    if fn._replaced_outputs is None:
        fn._replaced_outputs = {}
    fn._replaced_outputs.setdefault(t._output_nr, (old.shape, old.dtype))
    fn._apply_plain = False


class GradientEdge(NamedTuple):
    """An edge of the backward graph: the gradient flowing into input ``output_nr`` of
    ``node`` (the gradient of the node's forward output ``output_nr``), as torch's.

    ``autograd.grad`` and ``backward`` take edges as ``inputs`` (the gradient that flows into
    the edge) and as ``outputs`` (backpropagate from there). Get one with
    :func:`get_gradient_edge`. ``ownership_token``: torch keeps a custom Function's graph alive
    through it; an ember node is an ordinary Python object that holds its graph itself, so
    ember leaves it None."""

    node: Node
    output_nr: int
    ownership_token: Node | None = None


# (shape, dtype, device) of the outputs get_gradient_edge made edges for, by node, for
# _make_grads: an op node with one output does not keep its output's shape itself.
_EDGE_OUTPUTS = weakref.WeakKeyDictionary()


def get_gradient_edge(tensor) -> GradientEdge:
    """The edge where ``tensor``'s gradient is computed: ``autograd.grad(loss, input)`` and
    ``autograd.grad(loss, get_gradient_edge(input))`` give the same gradient."""
    if not tensor.requires_grad:
        raise RuntimeError("It is not possible to get the gradient edge for a Tensor that does "
                           "not require gradients")
    node, output_nr = gradient_edge(tensor)
    if node is None:  # (a view of a base that requires grad, made under no_grad)
        raise AssertionError("Expected gradient function to be set")
    shape, dtype = tensor.shape, tensor.dtype
    replaced = node._replaced_outputs
    if replaced is not None and output_nr in replaced:  # (its .data replaced: as recorded)
        from .._dtype import from_numpy_dtype
        shape, npdtype = replaced[output_nr]
        dtype = from_numpy_dtype(npdtype)
    _EDGE_OUTPUTS.setdefault(node, {})[output_nr] = (shape, dtype, tensor.device)
    return GradientEdge(node, output_nr)


def edge_of(x):
    """The ``(node, output_nr)`` of a tensor (its gradient_edge) or of a GradientEdge."""
    if type(x) is GradientEdge:
        return x.node, x.output_nr
    return gradient_edge(x)


def edge_output_like(edge):
    """An uninitialised tensor with the shape, dtype and device of the forward output that
    ``edge`` carries the gradient of: what ``_make_grads`` checks a given gradient against,
    or makes the implicit gradient from."""
    from .. import _creation
    node, nr = edge.node, edge.output_nr
    meta = _EDGE_OUTPUTS.get(node, {}).get(nr)
    if meta is None and isinstance(node, AccumulateGrad):
        v = node.variable
        meta = v.shape, v.dtype, v.device
    elif meta is None and node._out_meta is not None:
        from .._dtype import from_numpy_dtype
        shape, npdtype = node._out_meta[nr]
        meta = shape, from_numpy_dtype(npdtype), None
    if meta is None:
        raise RuntimeError(
            f"the shape of output {nr} of {node.name()} is not known: make the GradientEdge "
            "with ember.autograd.graph.get_gradient_edge(tensor)")
    shape, dtype, device = meta
    out = _creation.empty(shape, dtype=dtype, device=device)
    out._requires_grad = True
    return out


def short_node_name(node) -> str:
    """A node's name as torch's errors give it: without "Backward", and without the overload
    number 0 (``SplitBackward0``: "Split"; ``SqueezeBackward1``: "Squeeze1")."""
    return re.sub(r"Backward(0|(\d*))$", r"\2", node.name())


def version_error(data, current, expected, grad_fn, output_nr):
    shape = list(data.shape)
    from .. import _dtype as D
    # NOTE: torch names a bool, bfloat16 or complex tensor here by its old type object
    # (CPUBoolType, not torch.BoolTensor), the others by their legacy tensor type
    typename = D._BY_NP[data.dtype].type_string
    from .._sparse.coo import CooArray
    if type(data) is CooArray:  # (a sparse tensor: torch.sparse.FloatTensor)
        typename = typename.replace(".", ".sparse.", 1)
    msg = ("one of the variables needed for gradient computation has been modified by an "
           f"inplace operation: [{typename} {shape}]")
    if grad_fn is not None:
        msg += f", which is output {output_nr} of {short_node_name(grad_fn)},"
    msg += f" is at version {current}; expected version {expected} instead. "
    msg += _HINT_ANOMALY if state.anomaly else _HINT
    return RuntimeError(msg)


ERR_DETACHED = ("Trying to use a saved tensor that has been detached in-place, i.e. with "
                ".detach_().This is not supported, please use out-of-place `.detach()` instead")


def unpack_input(t, version, as_tensor):
    """A saved input tensor, after checking it was not modified in place since it was saved."""
    vc = t._vc
    if vc is not None and vc[0] != version:
        if type(vc) is DetachedCounter and version < vc.offset:
            raise RuntimeError(ERR_DETACHED)
        # NOTE: torch names the saved tensor's grad_fn as it is now: for a view whose base
        # was modified, the regenerated AsStridedBackward0.
        fn = t.grad_fn if t._base is not None else t._grad_fn
        if type(vc) is DetachedCounter:
            version -= vc.offset
        raise version_error(t._data, t._version, version, fn, t._output_nr)
    return t if as_tensor else t._data


def param_version(t):
    """The version of a tensor a node keeps as a plain argument (nll_loss's target: data, never
    differentiated); torch saves it as a tensor, so modifying it in place before backward
    raises there. For an index key (registry.IndexKey), the versions of the tensors it holds."""
    if not isinstance(t, Tensor):
        return tuple(param_version(k) for k in t.tensors)
    vc = t._vc
    if vc is None:
        vc = t._vc = [0]
    return vc[0]


def check_param(t, version):
    """Raise torch's error if the tensor kept as a plain argument changed since it was kept."""
    if not isinstance(t, Tensor):
        for k, v in zip(t.tensors, version):
            check_param(k, v)
        return
    if t._vc[0] != version:
        raise version_error(t._data, t._version, version, t._grad_fn, t._output_nr)


def unpack_output(node, output_nr, saved, version, as_tensor):
    """A saved output: rewrapped with ``node`` as its grad_fn when a graph is being built."""
    array, vc = saved
    if vc[0] != version:
        raise version_error(array, vc[0], version, _named_in_errors(node), output_nr)
    if not as_tensor:
        return array
    t = _wrap(array)
    t._grad_fn = node
    t._output_nr = output_nr
    t._requires_grad = True
    t._vc = vc
    if "_saved_tangents" in node.__dict__:  # forward AD over this backward (see forward_ad)
        from .forward_ad import restore_saved_tangent
        restore_saved_tangent(node, output_nr, t)
    return t


def _named_in_errors(node):
    """The node a version error names for ``node``'s saved output: the regenerated view node
    an in-place op on a view kept a weak reference to, while it lives (see inplace.py)."""
    ref = node.__dict__.get("_view_fn_ref")
    view_fn = None if ref is None else ref()
    return node if view_fn is None else view_fn


def unpack_data_output(saved, version, as_tensor):
    """A saved output that is not differentiable (the indices of ``max(dim)``): kept as that
    very tensor, as torch keeps it (it has no node, so holding it makes no reference cycle),
    checked for in-place changes like any saved tensor, but never part of the graph."""
    vc = saved._vc
    if vc[0] != version:
        raise version_error(saved._data, vc[0], version, None, 0)
    return saved if as_tensor else saved._data


def is_tensor(x) -> bool:
    return isinstance(x, Tensor)


# (at the end: it builds on the handles and edges above)
from .multi_grad_hook import register_multi_grad_hook  # noqa: E402,F401 (public)
from .saved_mutation import allow_mutation_on_saved_tensors  # noqa: E402,F401 (public)
