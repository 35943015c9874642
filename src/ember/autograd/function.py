"""Custom autograd Functions: the public extension door (built-in ops don't use it).

``class Exp(Function)`` with static ``forward(ctx, ...)`` and ``backward(ctx, *grads)`` (or
``forward(...)`` plus ``setup_context(ctx, inputs, output)``); ``Exp.apply(x)`` runs forward
without recording and makes an ``ExpBackward`` node that is also the ``ctx``.
"""
from __future__ import annotations

import functools
import sys
import warnings

import numpy as np

from .._dtype import is_differentiable_np
from .._state import forward_hook, set_hook, state, vmap_hook
from .._tensor import Tensor, _wrap
from .graph import (ERR_FREED, Node, follow_base, gradient_edge, move_retained_grad,
                    refuse_inference_save, unpack_input, unpack_output)
from .grad_mode import no_grad
from .saved_tensors import SavedTensor, check_register, pack_saved, unpack_saved
from . import forward_ad as fwAD

__all__ = ["Function", "FunctionCtx", "once_differentiable", "InplaceFunction",
           "NestedIOFunction"]



class FunctionCtx:
    """What ``forward`` and ``setup_context`` use to hand values to ``backward``."""

    _to_save = None
    _saved = None
    _released = False
    _dirty = ()
    _non_differentiable = ()
    materialize_grads = True

    def save_for_backward(self, *tensors):
        for i, t in enumerate(tensors):
            if t is not None and not isinstance(t, Tensor):
                raise TypeError(f"save_for_backward can only save variables, but argument {i} "
                                f"is of type {type(t).__name__}")
        self._to_save = tensors

    def save_for_forward(self, *tensors):
        self._to_save_forward = tensors

    def mark_dirty(self, *args):
        self._dirty = args

    def mark_non_differentiable(self, *args):
        self._non_differentiable = args

    def set_materialize_grads(self, value: bool):
        self.materialize_grads = bool(value)

    @property
    def saved_tensors(self):
        fw_saved = self.__dict__.get("_fw_saved")
        if fw_saved is not None:  # inside jvp: what save_for_forward saved
            return fw_saved
        if self._released:
            raise RuntimeError(ERR_FREED)
        saved = self._saved
        if saved is None:  # inside forward, or a call that recorded no graph
            return tuple(self._to_save or ())
        return tuple(self._unpack_saved(entry) for entry in saved)

    def _unpack_saved(self, entry):
        kind, value, version = entry
        if kind == _NONE:
            return None
        if kind == _INPUT:
            return unpack_input(value, version, True)
        if kind == _PACKED:
            return unpack_saved(value, self, True)
        nr, data = value
        return unpack_output(self, nr, data, version, True)

    @property
    def saved_variables(self):
        warnings.warn("'saved_variables' is deprecated; use 'saved_tensors'", DeprecationWarning,
                      stacklevel=2)
        return self.saved_tensors


# What an entry of ctx._saved holds: (kind, value, version).
_NONE, _INPUT, _OUTPUT, _PACKED = range(4)


def _unshared_gradients(result, alone):
    """The gradients in ``result`` (a backward's) that nothing else holds, by their arrays'
    ids: returned once, the tensor held by ``result`` alone and its array by the tensor
    alone. torch's AccumulateGrad takes such a gradient over (its use count is 1), and the
    ``.grad`` it becomes shares the tensor's version counter: each id maps to the tensor when
    it has a counter (a view of a tensor the user holds, or one written in place), else None.
    ``alone``: the backward returned one tensor, not a tuple (its caller holds it too)."""
    ids = {}
    for r in result:
        # (the references: result's one, r and getrefcount's argument, and the caller's for
        # a lone tensor; the array's: the tensor and getrefcount's argument)
        if (isinstance(r, Tensor) and sys.getrefcount(r) == 3 + alone
                and type(r._data) is np.ndarray and sys.getrefcount(r._data) == 2):
            ids[id(r._data)] = r if r._vc is not None else None
    return ids


class BackwardCFunction(Node, FunctionCtx):
    """The node of one custom Function call; it is also that call's ``ctx``."""

    _forward_cls = None
    _fresh_outputs = False  # user code may return tensors it keeps: never steal them
    _runs_undefined = True
    _arg_pos = ()  # positions of the forward's tensor arguments
    _n_args = 0
    _out_meta = None
    _non_tensor_outs = frozenset()  # positions of outputs that are not tensors

    def __repr__(self):  # (a Python class in torch too: named with its module)
        cls = type(self)
        return f"<{cls.__module__}.{cls.__qualname__} object at {hex(id(self))}>"

    def _apply(self, grads, graph, needed):
        cls = self._forward_cls
        gs = []
        non_tensor = self._non_tensor_outs
        for k, (g, (shape, dt)) in enumerate(zip(grads, self._out_meta)):
            if k in non_tensor:  # (torch passes None for these, materialize_grads or not)
                gs.append(None)
                continue
            if g is None and self.materialize_grads:
                g = np.zeros(shape, dt)
                g = _wrap(g) if graph else g
            gs.append(g if graph or g is None else _wrap(g))
        result = cls.backward(self, *gs)
        if not graph:
            self._unshared = _unshared_gradients(
                result if isinstance(result, tuple) else (result,), type(result) is not tuple)
        return self._check_result(result, graph)

    def _check_result(self, result, graph):
        name = type(self).__name__
        if not isinstance(result, tuple):
            result = (result,)
        n = self._n_args
        if len(result) != n:
            if len(result) > n and all(r is None for r in result[n:]):
                result = result[:n]
            else:
                raise RuntimeError(f"function {name} returned an incorrect number of gradients "
                                   f"(expected {n}, got {len(result)})")
        outs = []
        tensor_pos = set(self._arg_pos)
        for pos, r in enumerate(result):  # checked in position order, as torch does
            if pos not in tensor_pos:
                if r is not None:
                    raise RuntimeError(
                        f"function {name} returned a gradient different than None at position "
                        f"{pos + 1}, but the corresponding forward input was not a Variable")
                continue
            if r is not None and not isinstance(r, Tensor):
                raise RuntimeError(f"expected Variable or None (got {type(r).__name__})")
            outs.append(r if graph or r is None else r._data)
        return outs

    def _release(self):
        if self._saved is not None:
            self._saved = None
            self._released = True

    @property
    def next_functions(self):
        return self._next

    @property
    def _raw_saved_tensors(self):
        if self._released:
            raise RuntimeError(ERR_FREED)
        # NOTE: each refers to the entry list itself: as in torch, releasing the node after
        # this call does not free what these already refer to.
        saved = self._saved or []
        return tuple(SavedTensor(self, i, saved) for i in range(len(saved)))

    def _register_saved_hooks(self, i, hooks, saved):
        """``ctx._raw_saved_tensors[i].register_hooks(pack, unpack)``: pack entry ``i`` now."""
        kind, value, _ = saved[i]
        check_register(value, False)
        if kind == _INPUT:
            packed = pack_saved(value, hooks, hook_input=value.detach())
        else:  # an output: its data, without the grad_fn the unpacked tensor gets again
            nr, (data, vc) = value
            t = _wrap(data)
            t._vc = vc
            packed = pack_saved(t, hooks, output_nr=nr)
            packed.requires_grad = True
        saved[i] = (_PACKED, packed, None)


class FunctionMeta(type):
    """Gives each Function subclass its node class, named ``<Name>Backward``."""

    def __init__(cls, name, bases, attrs):
        backward_cls = type(name + "Backward", (BackwardCFunction,), {"_forward_cls": cls})
        cls._backward_cls = backward_cls
        super().__init__(name, bases, attrs)


class Function(FunctionCtx, metaclass=FunctionMeta):
    """Base class for custom autograd operations (use ``apply``, never instantiate)."""

    def __init__(self, *args, **kwargs):
        # old programs instantiate their Function and call the instance (the style of
        # non-static forward methods); torch warns here and refuses the call below
        warnings.warn(
            f"{self.__class__} should not be instantiated. Methods on autograd functions "
            "are all static, so you should invoke them on the class itself. "
            "Instantiating an autograd function will raise an "
            "error in a future version of PyTorch.",
            DeprecationWarning,
            stacklevel=2,
        )

    def __call__(self, *args, **kwargs):
        raise RuntimeError(
            "Legacy autograd function with non-static forward method is deprecated. "
            "Please use new-style autograd function with static forward method. "
            "(Example: https://pytorch.org/docs/stable/autograd.html#torch.autograd.Function)"
        )

    @staticmethod
    def forward(ctx, *args, **kwargs):
        raise NotImplementedError("You must implement the forward function for custom "
                                  "autograd.Function.")

    @staticmethod
    def setup_context(ctx, inputs, output):
        raise NotImplementedError("setup_context is not implemented.")

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError("You must implement either the backward or vjp method for "
                                  "your custom autograd.Function to use it with backward "
                                  "mode AD.")

    vjp = backward

    @staticmethod
    def jvp(ctx, *grad_inputs):
        raise NotImplementedError("You must implement the jvp function for custom "
                                  "autograd.Function to use it with forward mode AD.")

    # under vmap (see ember/func/_function_rule.py): the Function's batching rule, or one made
    # from forward and backward
    generate_vmap_rule = False

    @staticmethod
    def vmap(info, in_dims, *args):
        raise NotImplementedError("To use autograd.Function with vmap, you must either "
                                  "override the vmap staticmethod or set "
                                  "generate_vmap_rule=True.")

    @classmethod
    def apply(cls, *args, **kwargs):
        if vmap_hook[0] is not None:
            from ..func._function_rule import apply_batched, batched_level
            level = batched_level(args)
            if level:
                return apply_batched(cls, args, kwargs, level)
        return _apply_function(cls, args, kwargs)


def _uses_setup_context(cls):
    return cls.setup_context is not Function.setup_context


def _run_forward(ctx, cls, args, kwargs):
    with no_grad():
        if _uses_setup_context(cls):
            output = cls.forward(*args, **kwargs)
            cls.setup_context(ctx, args, output)
            return output
        return cls.forward(ctx, *args, **kwargs)


def _run_forward_without_tangents(ctx, cls, args, kwargs):
    """forward with forward AD off: jvp gives the outputs' tangents, and unpack_dual sees
    none inside forward, as in torch."""
    fw = forward_hook[0]
    set_hook(forward_hook, None)
    fw_enabled = fwAD._fwd_grad_enabled[0]
    fwAD._fwd_grad_enabled[0] = False
    try:
        return _run_forward(ctx, cls, args, kwargs)
    finally:
        # (a graph break inside forward uninstalls an ember.compile recorder, putting back
        # what it replaced: that stays)
        if forward_hook[0] is None and getattr(fw, "active", True):
            set_hook(forward_hook, fw)
        fwAD._fwd_grad_enabled[0] = fw_enabled


def _apply_function(cls, args, kwargs):
    ctx = cls._backward_cls()
    arg_pos = tuple(i for i, a in enumerate(args) if isinstance(a, Tensor))
    ctx.needs_input_grad = tuple(isinstance(a, Tensor) and a._requires_grad for a in args)
    recording = state.grad_enabled and any(ctx.needs_input_grad)
    # the inputs' edges as they are before forward runs (torch collects them first: a view
    # that forward writes in place keeps the history it came with)
    edges = tuple(gradient_edge(args[i]) for i in arg_pos) if recording else None
    fw = forward_hook[0]  # (forward AD's hook gives the outputs' tangents after forward)
    if fw is None and not fwAD._levels:
        # No dual level and no hook: nothing to turn off. The process-wide switches below
        # are left alone, so that Functions applied in several threads at once cannot
        # leave them off for good (one thread saving what another had switched off).
        output = _run_forward(ctx, cls, args, kwargs)
    else:
        output = _run_forward_without_tangents(ctx, cls, args, kwargs)
    single = not isinstance(output, tuple)
    outputs = (output,) if single else output
    outputs = _prepare_outputs(ctx, args, outputs, recording)
    if recording:
        _connect(ctx, cls, args, arg_pos, outputs, edges)
    else:
        _save_without_graph(ctx)
    if fw is not None:
        fw.function_jvp(cls, ctx, args, outputs)
    return outputs[0] if single else outputs


def _prepare_outputs(ctx, args, outputs, recording):
    """Outputs that are unmodified inputs are returned as torch's ``_wrap_outputs`` returns
    them: a view of the input made without grad (which the Function's node is given where it
    records), or, where it does not record and the input requires grad, a detached alias."""
    dirty = {id(t) for t in ctx._dirty}
    inputs = {id(a) for a in args if isinstance(a, Tensor)}
    out = []
    for o in outputs:
        if isinstance(o, Tensor) and id(o) in inputs and id(o) not in dirty:
            if o._requires_grad and not recording:
                o = o.detach()
            else:
                with no_grad():
                    o = o.view_as(o)
        out.append(o)
    return tuple(out)


def _connect(ctx, cls, args, arg_pos, outputs, edges):
    # NOTE: one sequence for op nodes and Function nodes, as torch's sequence_nr: the engine
    # runs ready nodes latest-created first.
    from .._ops.inplace import check_inplace
    from .._ops.registry import _sequence
    ctx._next = edges
    ctx._meta = tuple((args[i]._data.shape, args[i]._data.dtype) for i in arg_pos)
    ctx._arg_pos = arg_pos
    ctx._n_args = len(args)
    ctx._seq = next(_sequence)
    for t in ctx._dirty:  # (torch's _mark_dirty bumps every dirty tensor before the checks)
        t._bump_version()
    for t in ctx._dirty:
        # (torch's set_history checks a leaf first: a view without a node of its own too,
        # made in no_grad mode or of a base that requires no grad)
        if t._requires_grad and t._grad_fn is None and (
                t._base is None or t._view_no_grad or not t._base._requires_grad):
            raise RuntimeError("a leaf Variable that requires grad has been used in an in-place "
                               "operation.")
        check_inplace(t, True)
    non_diff = {id(t) for t in ctx._non_differentiable}
    dirty = {id(t) for t in ctx._dirty}
    meta = []
    for k, o in enumerate(outputs):
        if not isinstance(o, Tensor):
            meta.append(((), np.float32))
            ctx._non_tensor_outs |= {k}
            continue
        meta.append((o._data.shape, o._data.dtype))
        if id(o) in non_diff or not is_differentiable_np(o._data.dtype):  # (bfloat16 too)
            o._requires_grad = False
            continue
        if o._base is not None and id(o) not in dirty:  # (torch's IN_CUSTOM_FUNCTION view:
            # an in-place op on it would bypass the Function's backward, and is refused)
            o._view_custom, o._view_no_grad = True, False
        old_fn, old_nr = o._grad_fn, o._output_nr
        gained = not o._requires_grad
        o._grad_fn = ctx
        o._output_nr = k
        o._requires_grad = True
        if gained and o._following_views is not None:
            follow_base(o)
        if id(o) in dirty:  # (torch resets a dirty input's .grad: the value it was for is gone)
            o._grad = None
        if o._retains_grad:  # a dirty input's retain_grad follows its new history
            move_retained_grad(o, old_fn, old_nr)
    ctx._out_meta = tuple(meta)
    _rebase_dirty_views(ctx, args, arg_pos)
    if state.anomaly:
        import traceback
        ctx._trace = traceback.format_stack()[:-3]
    _save(ctx, args, outputs)


def _rebase_dirty_views(ctx, args, arg_pos):
    """A view the Function modified in place (mark_dirty) rewrites its base's history, as a
    built-in in-place op does (CopySlices on the base, a regenerated view).

    NOTE: CopySlices hands the node the gradient of its one output and takes the gradient of
    its first input as the view's: like torch's, it covers a single-output Function whose
    first tensor input is the dirty view (other shapes keep the view's own history).
    """
    from .._ops import views
    if len(ctx._out_meta) != 1 or not arg_pos:
        return
    first = args[arg_pos[0]]
    for t in ctx._dirty:
        if t is first and t._base is not None and t._grad_fn is ctx:
            views.rebase_view(t, ctx)


def _save(ctx, args, outputs):
    """Saved outputs keep only their data and version, so ctx and outputs form no cycle."""
    to_save = ctx._to_save
    if to_save is None:
        return
    out_index = {id(o): k for k, o in enumerate(outputs) if isinstance(o, Tensor)}
    hooks = state.saved_hooks[-1] if state.saved_hooks else None
    saved = []
    for t in to_save:
        if t is None:
            saved.append((_NONE, None, None))
            continue
        if t._is_inference:
            refuse_inference_save(args)
        vc = t._version_counter()
        k = out_index.get(id(t))
        if k is None or t._grad_fn is not ctx:
            k = None
        if hooks is not None:  # saved tensor hooks: the pack hook's value replaces t
            saved.append((_PACKED, pack_saved(t, hooks, output_nr=k), None))
        elif k is not None:
            saved.append((_OUTPUT, (k, (t._data, vc)), vc[0]))
        else:
            saved.append((_INPUT, t, vc[0]))
    ctx._saved = saved
    ctx._to_save = None


def _save_without_graph(ctx):
    for t in ctx._dirty:
        t._bump_version()


_ERR_TWICE = ("trying to differentiate twice a function that was marked with "
              "@once_differentiable")


def once_differentiable(fn):
    """Mark a backward as not differentiable itself: it runs with grad mode off.

    When a graph is being built (create_graph with a grad_output that requires grad), its
    results hang off an ``Error`` node, so that differentiating them again raises instead of
    silently treating them as constants (torch's DelayedError).
    """
    @functools.wraps(fn)
    def wrapper(ctx, *args):
        with no_grad():
            outputs = fn(ctx, *args)
        if not state.grad_enabled or not any(isinstance(a, Tensor) and a._requires_grad
                                             for a in args):
            return outputs
        single = not isinstance(outputs, tuple)
        outs = _delayed_error((outputs,) if single else outputs)
        return outs[0] if single else outs
    return wrapper


class Error(Node):
    """A node that raises when backpropagated through (torch::autograd::Error)."""

    def __init__(self, msg):
        self._msg = msg

    def name(self) -> str:
        return "torch::autograd::Error"

    def _apply(self, grads, graph, needed):
        raise RuntimeError(self._msg)


def _delayed_error(values):
    from .._ops.registry import _sequence
    node = Error(_ERR_TWICE)
    leaves = []
    for v in values:
        if isinstance(v, Tensor) and is_differentiable_np(v._data.dtype):
            v = v.detach()
            v._requires_grad = True
        leaves.append(v)
    tensors = [v for v in leaves if isinstance(v, Tensor)]
    node._next = tuple(gradient_edge(v) for v in tensors)
    node._meta = tuple((v._data.shape, v._data.dtype) for v in tensors)
    node._seq = next(_sequence)
    if len(tensors) != 1:
        node._out_meta = node._meta
    out = []
    nr = 0
    for v in leaves:
        if isinstance(v, Tensor):
            if v._requires_grad:
                v = _wrap(v._data)
                v._grad_fn, v._output_nr, v._requires_grad = node, nr, True
            nr += 1
        out.append(v)
    return tuple(out)


class InplaceFunction(Function):
    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace


class NestedIOFunction(Function):
    pass

