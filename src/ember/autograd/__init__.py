"""``ember.autograd``: reverse-mode automatic differentiation, as ``torch.autograd``.

``backward`` accumulates gradients into leaves' ``.grad``; ``grad`` returns them instead.
"""
from __future__ import annotations

import operator
import warnings
from collections.abc import Mapping

from numpy import ndarray as _ndarray

from .._backend import get_xp
from .._compile.hooks import backward_pass
from .._size import Size
from .._state import recording, vmap_hook
from .._tensor import Tensor, _object_new as _new
from . import graph
from .engine import backward_from, implicit_backward, run_backward
from .function import Function, FunctionCtx, NestedIOFunction, InplaceFunction, \
    once_differentiable
from .grad_mode import (enforce_grad_layout_policy, is_multithreading_enabled,
                        is_view_replay_enabled, set_multithreading_enabled)
from .saved_tensors import SavedTensor
from .grad_mode import (enable_grad, inference_mode, is_grad_enabled,
                        is_inference_mode_enabled, no_grad, set_grad_enabled)
from .variable import Variable

__all__ = ["backward", "grad", "Function", "FunctionCtx", "once_differentiable", "Variable",
           "no_grad", "enable_grad", "set_grad_enabled", "inference_mode", "is_grad_enabled",
           "is_inference_mode_enabled", "graph", "gradcheck", "gradgradcheck",
           "detect_anomaly", "set_detect_anomaly", "profiler", "InplaceFunction",
           "NestedIOFunction", "SavedTensor", "is_multithreading_enabled",
           "is_view_replay_enabled", "set_multithreading_enabled",
           "enforce_grad_layout_policy"]


def _as_tuple(x):
    if x is None:
        return ()
    if isinstance(x, (Tensor, graph.GradientEdge)):  # (an edge is a tuple, but one item)
        return (x,)
    return tuple(x)


def _inputs_tuple(inputs, fn):
    """``inputs`` as a tuple: a tensor, a sequence of them, or a dict (its values)."""
    kind = type(inputs)
    if kind is list or kind is tuple:  # (the usual call: no Mapping ABC check, a microsecond)
        return tuple(inputs)
    if kind is dict:
        return tuple(inputs.values())
    if isinstance(inputs, Mapping):
        raise TypeError(f"`inputs` argument to `{fn}()` must be a dict, not "
                        f"{type(inputs).__name__}. Other Mapping types are not supported.")
    return _as_tuple(inputs)


def _check_counts(outputs, grads):
    if len(grads) != len(outputs):
        raise RuntimeError(f"got {len(outputs)} tensors and {len(grads)} gradients")


def _grads_tuple(grads, n):
    if grads is None:
        return (None,) * n
    if isinstance(grads, Tensor):
        return (grads,)
    return tuple(grads)


def _mismatch_positions(outputs, grads, o, g):
    """The positions torch's mismatch messages give: ``grads.index(g)`` and
    ``outputs.index(o)``, which compare with ``==`` each element before the match, so two
    tensors that do not broadcast raise torch's size error there, and ``==`` of several
    elements its "Boolean value of Tensor ... is ambiguous"."""
    return grads.index(g), outputs.index(o)


def _make_grads(outputs, grads):
    """Check user-given output gradients; make the implicit ones for scalar outputs."""
    out = []
    for given, g in zip(outputs, grads):
        o = given
        if type(o) is graph.GradientEdge:
            o = graph.edge_output_like(o)
        elif not isinstance(o, Tensor):
            raise AssertionError("Expected output to be a ember.Tensor")
        if isinstance(g, Tensor):
            if tuple(o.shape) != tuple(g.shape):
                i, j = _mismatch_positions(outputs, grads, given, g)
                raise RuntimeError(f"Mismatch in shape: grad_output[{i}] has a shape of "
                                   f"{g.shape!r} and output[{j}] has a shape of {o.shape!r}.")
            if (o._data.dtype.kind == "c") != (g._data.dtype.kind == "c"):
                i, j = _mismatch_positions(outputs, grads, given, g)
                raise RuntimeError(
                    "For complex Tensors, both grad_output and output are required to have the "
                    f"same dtype. Mismatch in dtype: grad_output[{i}] has a dtype of {g.dtype} "
                    f"and output[{j}] has a dtype of {o.dtype}.")
            out.append(g)
        elif g is None:
            out.append(_implicit_grad(o))
        else:
            raise TypeError(f"gradients can be either Tensors or None, but got "
                            f"{type(g).__name__}")
    return out


def _implicit_grad(o):
    """The gradient ``backward()`` gives output ``o`` when none is given: ones, for a real
    scalar that requires grad (None when it does not: the engine's error follows)."""
    if not o._requires_grad:
        return None
    data = o._data
    if data.size != 1:
        raise RuntimeError("grad can be implicitly created only for scalar outputs")
    if data.dtype.kind != "f" and o.dtype.category != 2:  # (NumPy floats: no dtype lookup)
        raise RuntimeError("grad can be implicitly created only for real scalar "
                           f"outputs but got {o.dtype!r}")
    # (a copy of the one element filled: two C calls, no shape or dtype to read; np.ones is
    # a Python function around empty and fill)
    one = data.copy() if type(data) is _ndarray else get_xp(data).empty(data.shape, data.dtype)
    one.fill(1)
    grad = _new(Tensor)  # (_wrap's two lines: no call)
    grad._data = one
    return grad


_TRANSFORM_RUNNING = [None]  # ember.func's transform_running (imported at the first call)


def _transform_is_running():
    """Whether a torch.func transform runs its function now (its functorch levels are
    active)."""
    running = _TRANSFORM_RUNNING[0]
    if running is None:
        from ..func._outer_graph import transform_running as running
        _TRANSFORM_RUNNING[0] = running
    return running()


def _refuse_inside_transform():
    """torch's refusal of backward() while a torch.func transform runs its function (its
    functorch levels): autograd.grad is what differentiates there."""
    if _transform_is_running():
        raise RuntimeError("backward() called inside a functorch transform. This is not "
                           "supported, please use functorch.grad or functorch.vjp instead or "
                           "call backward() outside of functorch transforms.")


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False,
             grad_variables=None, inputs=None):
    """Accumulate the gradients of ``tensors`` w.r.t. graph leaves into their ``.grad``."""
    # (_refuse_inside_transform's and backward_pass's tests written out: no call in the usual
    # case, at every training step)
    running = _TRANSFORM_RUNNING[0]
    if running is None or running():
        _refuse_inside_transform()
    if recording[0] is not None:
        backward_pass("backward()")
    if (grad_tensors is None and inputs is None and create_graph is False
            and grad_variables is None and isinstance(tensors, Tensor)):
        # the usual call, ``loss.backward()``: what the general path below does for it,
        # without its argument normalising (a fixed cost of every training step)
        retain = False if retain_graph is None else bool(retain_graph)
        implicit_backward(tensors, retain, _implicit_grad)
        return
    if grad_variables is not None:
        warnings.warn("`grad_variables` is deprecated. Use `grad_tensors` instead.",
                      FutureWarning, stacklevel=2)
        if grad_tensors is None:
            grad_tensors = grad_variables
        else:
            raise RuntimeError("`grad_tensors` and `grad_variables` (deprecated) arguments both "
                               "passed to `backward()`. Please only use `grad_tensors`.")
    inputs_t = _inputs_tuple(inputs, "backward")
    if inputs is not None and len(inputs_t) == 0:
        raise RuntimeError("`inputs` argument to `backward()` cannot be empty.")
    create_graph = bool(operator.index(create_graph))
    tensors = _as_tuple(tensors)
    grad_tensors = _grads_tuple(grad_tensors, len(tensors))
    grads = _make_grads(tensors, grad_tensors)
    _check_counts(tensors, grad_tensors)
    retain = create_graph if retain_graph is None else bool(retain_graph)
    if inputs is None and not create_graph and len(tensors) == 1:
        backward_from(tensors[0], grads[0], retain)
    else:
        run_backward(tensors, grads, retain, create_graph, inputs=inputs_t)


def _batch_size(outputs, grad_outputs):
    """The batch size of ``grad(..., is_grads_batched=True)``: the first dimension of every
    grad_output, the rest being its output's shape (torch's errors otherwise)."""
    for o, g in zip(outputs, grad_outputs):
        if not isinstance(g, Tensor):
            raise TypeError(f"gradients can be either Tensors or None, but got "
                            f"{type(g).__name__}")
        edge = type(o) is graph.GradientEdge
        if edge:
            o = graph.edge_output_like(o)
        if g.dim() == 0:
            g[0]  # noqa: B018 - torch reads the first example: its IndexError for a 0-d one
        if tuple(g.shape[1:]) != tuple(o.shape):
            if edge:
                raise RuntimeError("Batched grads are not supported with GradientEdge")
            i, j = _mismatch_positions(outputs, grad_outputs, o, g)
            raise RuntimeError(
                "If `is_grads_batched=True`, we interpret the first dimension of each "
                "grad_output as the batch dimension. The sizes of the remaining dimensions are "
                "expected to match the shape of corresponding output, but a mismatch was "
                f"detected: grad_output[{i}] has a shape of {Size(tuple(g.shape)[2:])!r} and "
                f"output[{j}] has a shape of {o.shape!r}. If you only want some tensors in "
                "`grad_output` to be considered batched, consider using vmap.")
    sizes = [g.shape[0] for g in grad_outputs]
    if len(set(sizes)) > 1:
        raise ValueError(f"vmap: Expected all tensors to have the same size in the mapped "
                         f"dimension, got sizes {sizes} for the mapped dimension")
    return sizes[0]


def _under_vmap(outputs, inputs, grad_outputs, retain, create_graph, allow_unused,
                is_grads_batched=False):
    """grad's result where its grad_outputs are batched by the vmap running it (None: an
    ordinary pass serves)."""
    from ..func._lowering import grad_of_batched_outputs_grads
    return grad_of_batched_outputs_grads(outputs, inputs, grad_outputs, retain, create_graph,
                                         allow_unused, is_grads_batched)


def _grad_rows(outputs, inputs, grad_outputs, retain_graph, create_graph, allow_unused,
               materialize_grads):
    """A batched ``grad`` as one backward pass per row: for graphs whose hooks must see each
    example's gradient on its own (and for torch's errors when a grad_output is None)."""
    from .._creation import zeros_like
    from .._ops.shape import stack
    n = grad_outputs[0].shape[0] if grad_outputs[0] is not None else 1
    rows = []
    for b in range(n):
        retain = True if b < n - 1 else retain_graph
        rows.append(grad(outputs, inputs, tuple(None if g is None else g[b]
                                                for g in grad_outputs), retain, create_graph,
                         allow_unused=allow_unused, materialize_grads=materialize_grads))
    return tuple(None if all(r[k] is None for r in rows) else
                 stack([zeros_like(inputs[k]) if r[k] is None else r[k] for r in rows])
                 for k in range(len(inputs)))


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False,
         only_inputs=True, allow_unused=None, is_grads_batched=False, materialize_grads=False):
    """The gradients of ``outputs`` w.r.t. ``inputs``, returned as a tuple (no ``.grad``).

    ``is_grads_batched=True``: the first dimension of every grad_output indexes a batch of
    vector-Jacobian products, computed in one backward pass (see _batched.py) and stacked."""
    backward_pass("autograd.grad")
    if (grad_outputs is None and allow_unused is None and is_grads_batched is False
            and materialize_grads is False and only_inputs is True
            and (create_graph is False or create_graph is True) and isinstance(outputs, Tensor)
            and (type(inputs) is list or type(inputs) is tuple) and inputs):
        # the usual call, ``grad(loss, [x])`` (create_graph or not): what the general path
        # below does for it, without its argument normalising (twice per Hessian-vector product)
        retain = create_graph if retain_graph is None else bool(retain_graph)
        return run_backward((outputs,), (_implicit_grad(outputs),), retain, create_graph,
                            inputs=tuple(inputs), capture=True, allow_unused=False)
    if materialize_grads and allow_unused is False:
        raise ValueError("Expected allow_unused to be True or not passed when materialize_grads="
                         "True, but got: allow_unused=False.")
    if allow_unused is None:
        allow_unused = materialize_grads
    if not only_inputs:
        warnings.warn("only_inputs argument is deprecated and is ignored now (defaults to True). "
                      "To accumulate gradient for other parts of the graph, please use "
                      "ember.autograd.backward.", FutureWarning, stacklevel=2)
    create_graph = bool(operator.index(create_graph))
    outputs = _as_tuple(outputs)
    inputs_t = _inputs_tuple(inputs, "grad")
    if len(inputs_t) == 0:
        raise RuntimeError("`inputs` argument to `grad()` cannot be empty.")
    grad_outputs = _grads_tuple(grad_outputs, len(outputs))
    retain = create_graph if retain_graph is None else bool(retain_graph)
    lead = ()
    if is_grads_batched:
        _check_counts(outputs, grad_outputs)

        def rows():
            return _grad_rows(outputs, inputs_t, grad_outputs, retain_graph, create_graph,
                              allow_unused, materialize_grads)
        if any(g is None for g in grad_outputs):
            result = rows()
        else:
            lead = (_batch_size(outputs, grad_outputs),)
            result = None if vmap_hook[0] is None else _under_vmap(
                outputs, inputs_t, grad_outputs, retain, create_graph, allow_unused, True)
            if result is None:
                result = run_backward(outputs, grad_outputs, retain, create_graph,
                                      inputs=inputs_t, capture=True, allow_unused=allow_unused,
                                      batch=lead[0], unbatched=rows)
    else:
        grads = _make_grads(outputs, grad_outputs)
        _check_counts(outputs, grad_outputs)
        result = None if vmap_hook[0] is None else _under_vmap(
            outputs, inputs_t, grads, retain, create_graph, allow_unused)
        if result is None:
            result = run_backward(outputs, grads, retain, create_graph, inputs=inputs_t,
                                  capture=True, allow_unused=allow_unused)
    if materialize_grads:
        from .._creation import zeros
        if any(g is None and type(i) is graph.GradientEdge for g, i in zip(result, inputs_t)):
            raise RuntimeError("materialize_grads cannot be used when the given input is a "
                               "GradientEdge")
        result = tuple(zeros(lead + tuple(i.shape), dtype=i.dtype, device=i.device,
                             requires_grad=create_graph)
                       if g is None else g for g, i in zip(result, inputs_t))
    if type(inputs) is dict:
        return dict(zip(inputs.keys(), result))
    return result


_LAZY = {
    "detect_anomaly": ("anomaly_mode", "detect_anomaly"),
    "set_detect_anomaly": ("anomaly_mode", "set_detect_anomaly"),
    "gradcheck": ("gradcheck", "gradcheck"),
    "gradgradcheck": ("gradcheck", "gradgradcheck"),
    "profiler": ("profiler", None),
    "functional": ("functional", None),
    "forward_ad": ("forward_ad", None),
    "to_dot": ("graphviz", "to_dot"),
}


def __getattr__(name):
    """Load the profiler, anomaly mode and gradcheck on first use (keeps import fast)."""
    if name not in _LAZY:
        raise AttributeError(f"module 'ember.autograd' has no attribute '{name}'")
    import importlib
    module_name, attr = _LAZY[name]
    module = importlib.import_module(f"{__name__}.{module_name}")
    # every name the module serves (importing ember.autograd.gradcheck for gradgradcheck
    # would otherwise leave the name gradcheck bound to the module, not the function)
    for lazy, (source, source_attr) in _LAZY.items():
        if source == module_name:
            globals()[lazy] = module if source_attr is None else getattr(module, source_attr)
    return globals()[name]
