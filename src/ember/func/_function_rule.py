"""How a custom ``autograd.Function`` runs under vmap, as torch.func runs it.

``Function.apply`` with an argument batched at some vmap level does not run ``forward`` on
BatchedTensors (its node could not hang off them); it runs the Function's batching rule on the
physical values, one level lower:

- its own ``vmap`` staticmethod, ``vmap(info, in_dims, *args) -> (outputs, out_dims)``, whose
  ops on the physical values autograd records as usual;
- with ``generate_vmap_rule = True``, a Function ``Vmapped<Name>`` made for the call, whose
  forward, setup_context and backward are the original ones run under a vmap level of their
  own (torch's ``vmapify_autograd_function``): the node of the call is ``Vmapped<Name>Backward``
  and the user's backward sees one example's gradients.
"""
from __future__ import annotations

import collections

from .._tensor import Tensor
from ._batched_tensor import BatchedTensor, batched_at, physical, torch_layout
from ._batching import _levels, level_scope, rules_running

VmapInfo = collections.namedtuple("VmapInfo", ["batch_size", "randomness"])

_DOCS = "For more details, please see https://pytorch.org/docs/main/notes/extending.func.html"
ERR_SETUP_CONTEXT = ("In order to use an autograd.Function with functorch transforms (vmap, "
                     "grad, jvp, jacrev, ...), it must override the setup_context staticmethod. "
                     + _DOCS)


def batched_level(args):
    """The innermost vmap level among ``args`` (0: none is batched)."""
    return max((a._level for a in args if type(a) is BatchedTensor), default=0)


def apply_batched(cls, args, kwargs, level):
    """``cls.apply(*args, **kwargs)`` where some argument is batched at ``level``."""
    from ..autograd.function import Function, _uses_setup_context
    if not _uses_setup_context(cls):
        raise RuntimeError(ERR_SETUP_CONTEXT)
    own_rule = cls.vmap is not Function.vmap
    generate = getattr(cls, "generate_vmap_rule", False)
    if own_rule and generate:
        raise RuntimeError(
            f"You tried to vmap over {cls.__name__}, but it has both generate_vmap_rule=True "
            "and an overriden vmap staticmethod. Please set generate_vmap_rule=False or delete "
            "the overriden vmap staticmethod to avoid ambiguity. " + _DOCS)
    if not own_rule and not generate:
        raise RuntimeError(
            f"You tried to vmap over {cls.__name__}, but it does not have vmap support. Please "
            "override and implement the vmap staticmethod or set generate_vmap_rule=True. "
            + _DOCS)
    info = VmapInfo(_levels[level - 1].size, _levels[level - 1].randomness)
    if generate:  # (the operands as torch's batched tensors hold them, as its rule's are)
        values, in_dims = _unwrap(args, level, torch_layout)
        vmapped, out_dims = _vmapify(cls, in_dims, info)
        outputs = vmapped.apply(*values, **kwargs)
        out_dims = out_dims[0]
    else:
        values, in_dims = _unwrap(args, level, torch_layout)
        rules_running.append(level)  # (the rule's ops run on physical values, as a rule's do)
        try:
            outputs, out_dims = cls.vmap(info, in_dims, *values, **kwargs)
        finally:
            rules_running.pop()
    return _wrap(outputs, out_dims, level)


def _batch_first(value, level):
    tensor = physical(value, level)
    return (None, None) if tensor is None else (tensor, 0)


def _unwrap(values, level, layout=_batch_first):
    """``values`` (a tensor, or a tuple or list of values) unbatched at ``level``, and their
    batch dimensions (None where not batched), of the same structure: each tensor batch
    first (0), or as ``layout`` lays it out (the Function's own vmap rule gets torch's
    layout: see torch_layout)."""
    if isinstance(values, (tuple, list)):
        pairs = [_unwrap(v, level, layout) for v in values]
        return tuple(v for v, _ in pairs), tuple(d for _, d in pairs)
    value, dim = layout(values, level)
    return (values, None) if value is None else (value, dim)


def _wrap(values, dims, level):
    """``values`` batched at ``level`` along ``dims`` (an int or None stands for every value
    of a tuple)."""
    if isinstance(values, (tuple, list)):
        if not isinstance(dims, (tuple, list)):
            dims = (dims,) * len(values)
        return tuple(_wrap(v, d, level) for v, d in zip(values, dims))
    if dims is None or not isinstance(values, Tensor):
        return values
    return BatchedTensor(values, level) if dims == 0 else batched_at(values, dims, level)


def _run_at_new_level(fn, values, dims, info):
    """``fn(*values)`` with ``values`` batched along ``dims`` at a vmap level of its own:
    what it returns unbatched, and its batch dimensions."""
    with level_scope(info.batch_size, info.randomness) as level:
        output = fn(*_wrap(values, dims, level))
        return _unwrap(output, level, torch_layout)


class _SavingCtx:
    """The ctx that the original setup_context sees under the generated rule: tensors it saves
    or marks are stored unbatched, and the batch dimensions of the saved ones kept."""

    def __init__(self, ctx, level):
        object.__setattr__(self, "_ctx", ctx)
        object.__setattr__(self, "_level", level)
        object.__setattr__(self, "saved_dims", ())

    def __getattr__(self, name):
        return getattr(self._ctx, name)

    def __setattr__(self, name, value):
        setattr(self._ctx, name, value)

    def save_for_backward(self, *tensors):
        values, dims = _unwrap(tensors, self._level)
        object.__setattr__(self, "saved_dims", dims)
        self._ctx.save_for_backward(*values)

    def mark_dirty(self, *tensors):
        self._ctx.mark_dirty(*_unwrap(tensors, self._level)[0])

    def mark_non_differentiable(self, *tensors):
        self._ctx.mark_non_differentiable(*_unwrap(tensors, self._level)[0])


class _SavedCtx:
    """The ctx that the original backward sees under the generated rule: one example's saved
    tensors."""

    def __init__(self, ctx, saved):
        object.__setattr__(self, "_ctx", ctx)
        object.__setattr__(self, "saved_tensors", saved)

    def __getattr__(self, name):
        return getattr(self._ctx, name)

    def __setattr__(self, name, value):
        setattr(self._ctx, name, value)


def _vmapify(cls, in_dims, info):
    """The Function ``Vmapped<Name>`` that runs ``cls`` on a batch, and a one-item list that
    holds its outputs' batch dimensions once it has run."""
    from ..autograd.function import Function
    out_dims = [None]
    saved_dims = [()]
    input_shapes = [()]

    def forward(*operands):
        input_shapes[0] = tuple(o.shape if isinstance(o, Tensor) else None for o in operands)
        outputs, out_dims[0] = _run_at_new_level(cls.forward, operands, in_dims, info)
        return outputs

    def setup_context(ctx, inputs, output):
        def setup(inputs, output):
            saving = _SavingCtx(ctx, _levels[-1].index)
            cls.setup_context(saving, inputs, output)
            saved_dims[0] = saving.saved_dims
        _run_at_new_level(setup, (inputs, output), (in_dims, out_dims[0]), info)

    def backward(ctx, *grads):
        def run(saved, grads):
            return cls.backward(_SavedCtx(ctx, saved), *grads)
        dims = out_dims[0] if isinstance(out_dims[0], tuple) else (out_dims[0],)
        # (a gradient that is None or not batched has no batch dimension)
        dims = tuple(None if g is None else d for g, d in zip(grads, dims))
        result, result_dims = _run_at_new_level(
            run, (ctx.saved_tensors, grads), (saved_dims[0], dims), info)
        single = not isinstance(result, tuple)
        if single:
            result, result_dims = (result,), (result_dims,)
        return tuple(_reduce(g, d, i, shape, info.batch_size)
                     for g, d, i, shape in zip(result, result_dims, in_dims, input_shapes[0]))

    name = "Vmapped" + cls.__name__
    vmapped = type(name, (Function,), {
        "forward": staticmethod(forward), "setup_context": staticmethod(setup_context),
        "backward": staticmethod(backward), "generate_vmap_rule": True})
    return vmapped, out_dims


def _reduce(grad, grad_dim, in_dim, shape, size):
    """One example's gradient (batched along ``grad_dim``) as the gradient of an operand of
    ``shape`` batched along ``in_dim`` (torch's reductify): summed over the batch where the
    operand is not batched, expanded where it is and the gradient is not."""
    if grad is None or shape is None:
        return grad
    if in_dim is None:
        if grad_dim is not None:
            grad = grad.sum(grad_dim)
    elif grad_dim is None:
        grad = grad.unsqueeze(in_dim)
        grad = grad.expand(tuple(size if k == in_dim else n for k, n in enumerate(grad.shape)))
    elif grad_dim != in_dim:
        grad = grad.movedim(grad_dim, in_dim)
    if tuple(grad.shape) != tuple(shape):  # (a backward that returned a broadcast gradient)
        grad = grad.sum_to_size(shape)
    return grad
