"""The ``autograd.Function`` behind a custom operator's ``register_autograd``.

torch builds one Function per operator, named ``GeneratedBackwardFor_<ns>_<name>_<overload>``
(its node prints as ``...Backward``), whose forward runs the operator below autograd and calls
``setup_context``, and whose backward calls the registered ``backward``. An argument or return
of type ``Tensor[]`` is flattened into the Function's tensor arguments and outputs and rebuilt
around the user's functions, so gradients flow to each tensor of a list. The call's
bookkeeping travels as the Function's last argument (a non-tensor: its gradient is None).
"""
from __future__ import annotations

from .._tensor import Tensor
from ..autograd.function import Function


class _OpCall:
    """One call's keyword-only arguments and the list structure of its inputs and outputs."""

    def __init__(self, values, keyword):
        self.keyword = keyword
        # per positional argument: the length of a list argument, None for anything else
        self.input_spec = _list_lengths(values)
        self.output_spec = None
        self.output_is_tensor = ()  # per flat output (the others get None as gradient)
        self.output_is_tuple = False


def _flatten(values, spec):
    flat = []
    for v, n in zip(values, spec):
        flat.extend(v if n is not None else (v,))
    return flat


def _unflatten(flat, spec):
    values, k = [], 0
    for n in spec:
        values.append(list(flat[k:k + n]) if n is not None else flat[k])
        k += 1 if n is None else n
    return values


def make_autograd_function(opdef):
    """The Function class whose ``apply_op(values, keyword)`` runs a call of ``opdef``
    recording its node."""
    has_lists = any(a.type.startswith("Tensor") and "[]" in a.type
                    for a in opdef._op_schema.arguments + opdef._op_schema.returns)
    has_kwarg_only = any(a.kwarg_only for a in opdef._op_schema.arguments)

    def forward(ctx, *args):
        call = args[-1]
        values = _unflatten(args[:-1], call.input_spec)
        result = opdef._run(values, call.keyword)
        if opdef._setup_context_fn is not None:
            if has_kwarg_only:
                opdef._setup_context_fn(ctx=ctx, inputs=tuple(values),
                                        keyword_only_inputs=call.keyword, output=result)
            else:
                opdef._setup_context_fn(ctx=ctx, inputs=tuple(values), output=result)
        call.output_is_tuple = isinstance(result, tuple)
        outputs = result if call.output_is_tuple else (result,)
        call.output_spec = _list_lengths(outputs)
        ctx._pt_metadata = call
        flat = tuple(_flatten(outputs, call.output_spec))
        call.output_is_tensor = tuple(isinstance(o, Tensor) for o in flat)
        return flat

    def backward(ctx, *grads):
        if opdef._backward_fn is None:
            raise RuntimeError(f"Trying to backward through {opdef._opoverload} but no autograd "
                               "formula was registered. Please use register_autograd to add one.")
        call = ctx._pt_metadata
        # a non-Tensor output (an int...) has no gradient: None, as torch passes it
        grads = [g if is_tensor else None for g, is_tensor in zip(grads, call.output_is_tensor)]
        grads = _unflatten(grads, call.output_spec)
        needs = ctx.needs_input_grad
        ctx.needs_input_grad = tuple(_unflatten(needs[:-1], call.input_spec))
        try:
            result = opdef._backward_fn(ctx, *grads)
        finally:
            ctx.needs_input_grad = needs
        if not has_lists:
            return (*result, None) if isinstance(result, tuple) else (result, None)
        return (*_flatten_like_inputs(result, call.input_spec), None)

    name = f"GeneratedBackwardFor_{opdef._namespace}_{opdef._name}_{opdef._overload}"
    cls = type(name, (Function,),
               {"forward": staticmethod(forward), "backward": staticmethod(backward)})

    def apply_op(values, keyword):
        call = _OpCall(values, keyword)
        flat = cls.apply(*_flatten(values, call.input_spec), call)
        outputs = _unflatten(list(flat), call.output_spec)
        return tuple(outputs) if call.output_is_tuple else outputs[0]

    cls.apply_op = staticmethod(apply_op)
    return cls


def _flatten_like_inputs(result, spec):
    """The gradients ``backward`` returned, lists expanded; torch's error when their structure
    is not the inputs'."""
    result = result if isinstance(result, tuple) else (result,)
    fits = len(result) == len(spec) and all(
        (isinstance(r, list) and len(r) == n) if n is not None else not isinstance(r, list)
        for r, n in zip(result, spec))
    if not fits:
        raise RuntimeError(f"Expected the return from backward to be of the same structure as "
                           f"the inputs. Got: {_structure(_list_lengths(result))} (return from "
                           f"backward), {_structure(spec)} (inputs)")
    return _flatten(result, spec)


def _list_lengths(values):
    return [len(v) if isinstance(v, list) else None for v in values]


def _structure(counts):
    """A structure as pytree leaves: ``*`` per value, ``[*, *]`` per list (and one for the
    call's bookkeeping argument, as torch counts it)."""
    parts = ["*" if n is None else "[" + ", ".join(["*"] * n) + "]" for n in counts]
    return f"({', '.join(parts + ['*'])})"
