"""Higher-level functional autograd API, as ``torch.autograd.functional``.

``vjp``, ``jvp``, ``jacobian``, ``hessian``, ``vhp`` and ``hvp`` take a function and its inputs
(a Tensor or a tuple of Tensors) and return results shaped exactly as torch's, with torch's
``create_graph`` and ``strict`` semantics and error texts. ``jvp`` and ``hvp`` use the double
backward trick (as torch does); ``jacobian(strategy="forward-mode")`` uses forward-mode AD.
"""
from __future__ import annotations

from .._backend import get_xp
from .._creation import zeros_like
from .._tensor import Tensor, _wrap
from . import forward_ad as fwAD
from .grad_mode import enable_grad, is_grad_enabled, set_grad_enabled

__all__ = ["vjp", "jvp", "jacobian", "hessian", "hvp", "vhp"]


# -- argument handling ----------------------------------------------------------------------------
def _as_tuple_nocheck(x):
    if isinstance(x, tuple):
        return x
    if isinstance(x, list):
        return tuple(x)
    return (x,)


def _as_tuple(inp, arg_name=None, fn_name=None):
    """``(was_tuple, tuple_of_tensors)``, with torch's TypeError for anything else."""
    if arg_name is None and fn_name is None:
        return _as_tuple_nocheck(inp)
    is_inp_tuple = True
    if not isinstance(inp, tuple):
        inp = (inp,)
        is_inp_tuple = False
    for i, el in enumerate(inp):
        if not isinstance(el, Tensor):
            if is_inp_tuple:
                raise TypeError(f"The {arg_name} given to {fn_name} must be either a Tensor or a "
                                f"tuple of Tensors but the value at index {i} has type "
                                f"{type(el)}.")
            raise TypeError(f"The {arg_name} given to {fn_name} must be either a Tensor or a "
                            f"tuple of Tensors but the given {arg_name} has type {type(el)}.")
    return is_inp_tuple, inp


def _tuple_postprocess(res, to_unpack):
    """Undo the tuple wrapping of inputs (and outputs) that the user did not pass as tuples."""
    if isinstance(to_unpack, tuple):
        if not to_unpack[1]:
            res = tuple(el[0] for el in res)
        if not to_unpack[0]:
            res = res[0]
    elif not to_unpack:
        res = res[0]
    return res


def _grad_preprocess(inputs, create_graph, need_graph):
    """Fresh inputs to differentiate against: views keep the user's graph under create_graph."""
    res = []
    for inp in inputs:
        if create_graph and inp.requires_grad:
            res.append(inp.view_as(inp))
        else:
            res.append(inp.detach().requires_grad_(need_graph))
    return tuple(res)


def _grad_postprocess(inputs, create_graph):
    if isinstance(inputs[0], Tensor):
        if not create_graph:
            return tuple(inp.detach() for inp in inputs)
        return inputs
    return tuple(_grad_postprocess(inp, create_graph) for inp in inputs)


def _validate_v(v, other, is_other_tuple):
    if len(other) != len(v):
        if is_other_tuple:
            raise RuntimeError(f"v is a tuple of invalid length: should be {len(other)} but got "
                               f"{len(v)}.")
        raise RuntimeError("The given v should contain a single Tensor.")
    for idx, (el_v, el_other) in enumerate(zip(v, other)):
        if el_v.size() != el_other.size():
            prepend = f"Entry {idx} in " if is_other_tuple else ""
            raise RuntimeError(f"{prepend}v has invalid size: should be {el_other.size()} but "
                               f"got {el_v.size()}.")


_INDEPENDENT = {
    "hessian": ("The hessian of the user-provided function with respect to input {i} is "
                "independent of the input. This is not allowed in strict mode. You should "
                "ensure that your function is thrice differentiable and that the hessian "
                "depends on the inputs."),
    "jacobian": ("While computing the hessian, found that the jacobian of the user-provided "
                 "function with respect to input {i} is independent of the input. This is not "
                 "allowed in strict mode. You should ensure that your function is twice "
                 "differentiable and that the jacobian depends on the inputs (this would be "
                 "violated by a linear function for example)."),
    "grad_inputs": ("The gradient with respect to input {i} is independent of the inputs of "
                    "the user-provided function. This is not allowed in strict mode."),
    "outputs": ("Output {i} of the user-provided function does not require gradients. The "
                "outputs must be computed in a differentiable manner from the input when "
                "running in strict mode."),
}


def _check_requires_grad(inputs, input_type, strict):
    """In strict mode, refuse values that do not depend on the inputs (torch's texts)."""
    if not strict:
        return
    for i, inp in enumerate(inputs):
        if inp is None:
            raise RuntimeError(f"The output of the user-provided function is independent of "
                               f"input {i}. This is not allowed in strict mode.")
        if not inp.requires_grad:
            raise RuntimeError(_INDEPENDENT[input_type].format(i=i))


def _autograd_grad(outputs, inputs, grad_outputs=None, create_graph=False, retain_graph=None,
                   is_grads_batched=False):
    """autograd.grad over the outputs that require grad; None for every input if none does."""
    from . import grad
    if grad_outputs is None:
        grad_outputs = (None,) * len(outputs)
    new_outputs, new_grad_outputs = (), ()
    for out, grad_out in zip(outputs, grad_outputs):
        if out is not None and out.requires_grad:
            new_outputs += (out,)
            new_grad_outputs += (grad_out,)
    if len(new_outputs) == 0:
        return (None,) * len(inputs)
    return grad(new_outputs, inputs, new_grad_outputs, allow_unused=True,
                create_graph=create_graph, retain_graph=retain_graph,
                is_grads_batched=is_grads_batched)


_FILL_ERRORS = {
    "back": ("The output of the user-provided function is independent of input {i}. This is "
             "not allowed in strict mode."),
    "back_trick": ("The gradient with respect to the input is independent of entry {i} in the "
                   "grad_outputs when using the double backward trick to compute forward mode "
                   "gradients. This is not allowed in strict mode."),
    "double_back": ("The jacobian of the user-provided function is independent of input {i}. "
                    "This is not allowed in strict mode."),
    "double_back_trick": ("The hessian of the user-provided function is independent of entry "
                          "{i} in the grad_jacobian. This is not allowed in strict mode as it "
                          "prevents from using the double backward trick to replace forward "
                          "mode AD."),
}


def _fill_in_zeros(grads, refs, strict, create_graph, stage):
    """Zeros where a gradient is None (or torch's strict-mode errors)."""
    res = ()
    for i, grads_i in enumerate(grads):
        if grads_i is None:
            if strict:
                raise RuntimeError(_FILL_ERRORS[stage].format(i=i))
            grads_i = zeros_like(refs[i])
        elif strict and create_graph and not grads_i.requires_grad:
            what = "hessian" if "double" in stage else "jacobian"
            raise RuntimeError(f"The {what} of the user-provided function is independent of "
                               f"input {i}. This is not allowed in strict mode when "
                               "create_graph=True.")
        res += (grads_i,)
    return res


def _prepare_v(v, ref, is_ref_tuple, create_graph, fn_name, none_msg):
    if v is not None:
        _, v = _as_tuple(v, "v", fn_name)
        v = _grad_preprocess(v, create_graph=create_graph, need_graph=False)
        _validate_v(v, ref, is_ref_tuple)
    elif len(ref) != 1 or ref[0].nelement() != 1:
        raise RuntimeError(none_msg)
    return v


_V_NONE_INPUT = ("The vector v can only be None if the input to the user-provided function is "
                 "a single Tensor with a single element.")


# -- vjp and jvp --------------------------------------------------------------------------------
def vjp(func, inputs, v=None, create_graph=False, strict=False):
    """Compute the dot product between a vector ``v`` and the Jacobian of ``func`` at ``inputs``.

    Returns ``(func_output, vjp)``.
    """
    with enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "vjp")
        inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
        outputs = func(*inputs)
        is_outputs_tuple, outputs = _as_tuple(
            outputs, "outputs of the user-provided function", "vjp")
        _check_requires_grad(outputs, "outputs", strict=strict)
        v = _prepare_v(v, outputs, is_outputs_tuple, create_graph, "vjp",
                       "The vector v can only be None if the user-provided function returns a "
                       "single Tensor with a single element.")
    with set_grad_enabled(True if create_graph else is_grad_enabled()):
        grad_res = _autograd_grad(outputs, inputs, v, create_graph=create_graph)
        result = _fill_in_zeros(grad_res, inputs, strict, create_graph, "back")
    outputs = _grad_postprocess(outputs, create_graph)
    result = _grad_postprocess(result, create_graph)
    return (_tuple_postprocess(outputs, is_outputs_tuple),
            _tuple_postprocess(result, is_inputs_tuple))


def jvp(func, inputs, v=None, create_graph=False, strict=False):
    """Compute the dot product between the Jacobian of ``func`` at ``inputs`` and a vector ``v``.

    Returns ``(func_output, jvp)``; computed with the double backward trick, as torch does.
    """
    with enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jvp")
        inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
        v = _prepare_v(v, inputs, is_inputs_tuple, create_graph, "jvp",
                       "The vector v can only be None if the input to the user-provided "
                       "function is a single Tensor with a single element.")
        outputs = func(*inputs)
        is_outputs_tuple, outputs = _as_tuple(
            outputs, "outputs of the user-provided function", "jvp")
        _check_requires_grad(outputs, "outputs", strict=strict)
        grad_outputs = tuple(zeros_like(out, requires_grad=True) for out in outputs)
        grad_inputs = _autograd_grad(outputs, inputs, grad_outputs, create_graph=True)
        _check_requires_grad(grad_inputs, "grad_inputs", strict=strict)
    with set_grad_enabled(True if create_graph else is_grad_enabled()):
        grad_res = _autograd_grad(grad_inputs, grad_outputs, v, create_graph=create_graph)
        result = _fill_in_zeros(grad_res, outputs, strict, create_graph, "back_trick")
    outputs = _grad_postprocess(outputs, create_graph)
    result = _grad_postprocess(result, create_graph)
    return (_tuple_postprocess(outputs, is_outputs_tuple),
            _tuple_postprocess(result, is_outputs_tuple))


# -- jacobian -----------------------------------------------------------------------------------
def _construct_standard_basis_for(tensors, tensor_numels):
    """One chunk per tensor of the identity matrix of size sum(numels), split by columns."""
    total = sum(tensor_numels)
    chunks = []
    start = 0
    for tensor, numel in zip(tensors, tensor_numels):
        xp = get_xp(tensor._data)
        eye = xp.zeros((total, numel), tensor._data.dtype)
        eye[start + xp.arange(numel), xp.arange(numel)] = 1
        chunks.append(_wrap(eye))
        start += numel
    return tuple(chunks)


def _jacfwd(func, inputs, strict=False, vectorize=False):
    """The Jacobian by forward-mode AD: the JVPs of every input element (the columns of J),
    pushed through ``func`` together as one batch of tangents."""
    from .._creation import zeros
    from ._batched_forward import batched_tangents
    if strict:
        raise RuntimeError('ember.autograd.functional.jacobian: `strict=True` and '
                           '`strategy="forward-mode"` are not supported together (yet). Please '
                           'either set `strict=False` or `strategy="reverse-mode"`.')
    is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jacobian")
    if not vectorize:
        raise NotImplementedError("Computing Jacobian using forward-AD or forward-over-reverse "
                                  "Hessian isonly implemented for `vectorize=True`.")
    input_numels = tuple(inp.numel() for inp in inputs)
    total = sum(input_numels)
    basis = _construct_standard_basis_for(inputs, input_numels)
    # One forward pass carrying every basis tangent at once (a leading batch dimension).
    with fwAD.dual_level(), batched_tangents(total):
        duals = tuple(fwAD.make_dual(inp, b.view((total,) + tuple(inp.shape)))
                      for inp, b in zip(inputs, basis))
        is_outputs_tuple, dual_outputs = _as_tuple(func(*duals), "outputs")
        outputs, tangents = [], []
        for out in dual_outputs:
            primal, tangent = fwAD.unpack_dual(out)
            outputs.append(primal.detach())
            tangents.append(zeros((total,) + tuple(primal.shape), dtype=primal.dtype,
                                  device=primal.device)
                            if tangent is None else tangent)
    jac = []
    for k, out in enumerate(outputs):
        stacked = tangents[k]  # (sum numels, *out.shape)
        row = []
        for part, inp in zip(stacked.split(input_numels, dim=0), inputs):
            row.append(part.permute(*range(1, part.ndim), 0).reshape(
                tuple(out.shape) + tuple(inp.shape)))
        jac.append(row)
    return _tuple_postprocess(jac, (is_outputs_tuple, is_inputs_tuple))


def jacobian(func, inputs, create_graph=False, strict=False, vectorize=False,
             strategy="reverse-mode"):
    """Compute the Jacobian of a given function.

    Returns a Tensor, or nested tuples ``J[i][j]`` (output i, input j) of shape
    ``outputs[i].shape + inputs[j].shape``, as torch does.
    """
    if strategy not in ("forward-mode", "reverse-mode"):
        raise AssertionError('Expected strategy to be either "forward-mode" or "reverse-mode". '
                             'Hint: If your function has more outputs than inputs, '
                             '"forward-mode" tends to be more performant. Otherwise, prefer to '
                             'use "reverse-mode".')
    if strategy == "forward-mode":
        if create_graph:
            raise NotImplementedError('ember.autograd.functional.jacobian: `create_graph=True` '
                                      'and `strategy="forward-mode"` are not supported '
                                      'together (yet). Please either set `create_graph=False` '
                                      'or `strategy="reverse-mode"`.')
        return _jacfwd(func, inputs, strict, vectorize)
    with enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jacobian")
        inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
        outputs = func(*inputs)
        is_outputs_tuple, outputs = _as_tuple(
            outputs, "outputs of the user-provided function", "jacobian")
        _check_requires_grad(outputs, "outputs", strict=strict)
        if vectorize:
            if strict:
                raise RuntimeError("ember.autograd.functional.jacobian: `strict=True` and "
                                   "`vectorized=True` are not supported together. Please "
                                   "either set `strict=False` or `vectorize=False`.")
            jac = _jacrev_batched(outputs, inputs, create_graph)
        else:
            jac = _jacrev_rows(outputs, inputs, create_graph, strict)
        jac = _grad_postprocess(jac, create_graph)
        return _tuple_postprocess(jac, (is_outputs_tuple, is_inputs_tuple))


def _jacrev_batched(outputs, inputs, create_graph):
    """All rows at once: batched grad_outputs holding the identity (torch's vectorize=True)."""
    output_numels = tuple(out.numel() for out in outputs)
    grad_outputs = _construct_standard_basis_for(outputs, output_numels)
    flat_outputs = tuple(out.reshape(-1) for out in outputs)
    vj = list(_autograd_grad(flat_outputs, inputs, grad_outputs, create_graph=create_graph,
                             is_grads_batched=True))
    for k, g in enumerate(vj):
        if g is None:
            vj[k] = zeros_like(inputs[k]).expand((sum(output_numels),) + tuple(inputs[k].shape))
    per_input = []
    for g, inp in zip(vj, inputs):
        per_input.append([part.reshape(tuple(out.shape) + tuple(inp.shape))
                          for part, out in zip(g.split(output_numels, dim=0), outputs)])
    return tuple(zip(*per_input))


def _jacrev_rows(outputs, inputs, create_graph, strict):
    """One vector-Jacobian product per output element (torch's vectorize=False)."""
    from .._ops.shape import stack
    jacobian = ()
    for i, out in enumerate(outputs):
        jac_i = tuple([] for _ in inputs)
        flat = out.reshape(-1)
        for j in range(out.nelement()):
            vj = _autograd_grad((flat[j],), inputs, retain_graph=True, create_graph=create_graph)
            for k, (jac_k, vj_k, inp) in enumerate(zip(jac_i, vj, inputs)):
                if vj_k is not None:
                    if strict and create_graph and not vj_k.requires_grad:
                        raise RuntimeError("The jacobian of the user-provided function is "
                                           f"independent of input {i}. This is not allowed in "
                                           "strict mode when create_graph=True.")
                    jac_k.append(vj_k)
                else:
                    if strict:
                        raise RuntimeError(f"Output {i} of the user-provided function is "
                                           f"independent of input {k}. This is not allowed in "
                                           "strict mode.")
                    jac_k.append(zeros_like(inp))
        jacobian += (tuple(_stack_rows(stack, jac_k, out, inputs[k])
                           for k, jac_k in enumerate(jac_i)),)
    return jacobian


def _stack_rows(stack, rows, out, inp):
    return stack(rows, dim=0).view(tuple(out.shape) + tuple(inp.shape))


# -- hessian, vhp, hvp --------------------------------------------------------------------------
def hessian(func, inputs, create_graph=False, strict=False, vectorize=False,
            outer_jacobian_strategy="reverse-mode"):
    """Compute the Hessian of a given scalar function.

    Returns a Tensor, or nested tuples ``H[i][j]`` of shape ``inputs[i].shape + inputs[j].shape``.
    """
    is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "hessian")
    if outer_jacobian_strategy not in ("forward-mode", "reverse-mode"):
        raise AssertionError('Expected strategy to be either "forward-mode" or "reverse-mode".')

    def ensure_single_output_function(*inp):
        out = func(*inp)
        is_out_tuple, t_out = _as_tuple(out, "outputs of the user-provided function", "hessian")
        _check_requires_grad(t_out, "outputs", strict=strict)
        if is_out_tuple or not isinstance(out, Tensor):
            raise RuntimeError("The function given to hessian should return a single Tensor")
        if out.nelement() != 1:
            raise RuntimeError("The Tensor returned by the function given to hessian should "
                               "contain a single element")
        return out.squeeze()

    def jac_func(*inp):
        if outer_jacobian_strategy == "forward-mode":
            inp = tuple(t.requires_grad_(True) for t in inp)
        jac = jacobian(ensure_single_output_function, inp, create_graph=True)
        _check_requires_grad(jac, "jacobian", strict=strict)
        return jac

    res = jacobian(jac_func, inputs, create_graph=create_graph, strict=strict,
                   vectorize=vectorize, strategy=outer_jacobian_strategy)
    return _tuple_postprocess(res, (is_inputs_tuple, is_inputs_tuple))


def _scalar_function_setup(func, inputs, v, create_graph, strict, fn_name):
    """Inputs, v, outputs and first derivatives for vhp and hvp (run under enable_grad)."""
    is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", fn_name)
    inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
    v = _prepare_v(v, inputs, is_inputs_tuple, create_graph, fn_name, _V_NONE_INPUT)
    outputs = func(*inputs)
    is_outputs_tuple, outputs = _as_tuple(outputs, "outputs of the user-provided function",
                                          fn_name)
    _check_requires_grad(outputs, "outputs", strict=strict)
    if is_outputs_tuple or not isinstance(outputs[0], Tensor):
        raise RuntimeError(f"The function given to {fn_name} should return a single Tensor")
    if outputs[0].nelement() != 1:
        raise RuntimeError(f"The Tensor returned by the function given to {fn_name} should "
                           "contain a single element")
    jac = _autograd_grad(outputs, inputs, create_graph=True)
    _check_requires_grad(jac, "jacobian", strict=strict)
    return is_inputs_tuple, inputs, v, is_outputs_tuple, outputs, jac


def vhp(func, inputs, v=None, create_graph=False, strict=False):
    """Compute the dot product between vector ``v`` and the Hessian of a scalar function.

    Returns ``(func_output, vhp)``.
    """
    with enable_grad():
        is_inputs_tuple, inputs, v, is_outputs_tuple, outputs, jac = _scalar_function_setup(
            func, inputs, v, create_graph, strict, "vhp")
    with set_grad_enabled(True if create_graph else is_grad_enabled()):
        grad_res = _autograd_grad(jac, inputs, v, create_graph=create_graph)
        result = _fill_in_zeros(grad_res, inputs, strict, create_graph, "double_back")
    outputs = _grad_postprocess(outputs, create_graph)
    result = _grad_postprocess(result, create_graph)
    return (_tuple_postprocess(outputs, is_outputs_tuple),
            _tuple_postprocess(result, is_inputs_tuple))


def hvp(func, inputs, v=None, create_graph=False, strict=False):
    """Compute the dot product between the Hessian of a scalar function and a vector ``v``.

    Returns ``(func_output, hvp)``; computed with the double backward trick, as torch does.
    """
    with enable_grad():
        is_inputs_tuple, inputs, v, is_outputs_tuple, outputs, jac = _scalar_function_setup(
            func, inputs, v, create_graph, strict, "hvp")
        grad_jac = tuple(zeros_like(inp, requires_grad=True) for inp in inputs)
        double_back = _autograd_grad(jac, inputs, grad_jac, create_graph=True)
        _check_requires_grad(jac, "hessian", strict=strict)
    with set_grad_enabled(True if create_graph else is_grad_enabled()):
        grad_res = _autograd_grad(double_back, grad_jac, v, create_graph=create_graph)
        result = _fill_in_zeros(grad_res, inputs, strict, create_graph, "double_back_trick")
    outputs = _grad_postprocess(outputs, create_graph)
    result = _grad_postprocess(result, create_graph)
    return (_tuple_postprocess(outputs, is_outputs_tuple),
            _tuple_postprocess(result, is_inputs_tuple))
