"""The transforms of ``ember.func``, on top of ember's reverse mode and forward-mode AD.

Each transform differentiates w.r.t. fresh copies of its inputs. Where an input already takes
part in a differentiation (it requires grad, or carries a forward-mode tangent because an outer
``jacfwd``/``jvp`` is running), the copy stays connected to it. Where the function's outputs
reach a differentiation outside the transform (through such an input, or a tensor the function
captures), the derivatives are computed with ``create_graph=True`` and the results keep that
graph (see _outer_graph.py), which is what makes the transforms compose.
"""
from __future__ import annotations

import functools

from .._backend import get_xp
from .._creation import zeros, zeros_like
from .._ops.shape import alias
from .._ops.views import history_refused
from .._state import state
from .._tensor import Tensor, _wrap
from ..autograd import forward_ad as fwAD
from ..autograd import grad as _autograd_grad
from ..autograd.grad_mode import enable_grad
from ..autograd.graph import grad_accumulator
from ..utils._pytree import _treespec_text
from . import _lowering
from ._captures import capturing
from ._outer_graph import OuterGraph, plain_autograd_records, refuse_missing_forward_formulas

__all__ = ["grad", "grad_and_value", "vjp", "jvp", "jacrev", "jacfwd", "hessian"]


# -- pytrees (tuples, lists and dicts of tensors) -----------------------------------------------
class _Spec:
    """The structure of a nested tuple/list/dict, with leaves removed."""

    def __init__(self, kind, keys=None, children=()):
        self.kind, self.keys, self.children = kind, keys, tuple(children)

    def __eq__(self, other):
        return (isinstance(other, _Spec) and (self.kind, self.keys, self.children)
                == (other.kind, other.keys, other.children))

    def __repr__(self, indent=0):
        # NOTE: torch's pytree TreeSpec text, line breaks and indentation included.
        return "*" if self.kind is None else _treespec_text(self.kind, self.keys, self.children,
                                                           indent)


_LEAF = _Spec(None)


class _DummyLeaf:
    def __repr__(self):
        return "*"


def _pprint(spec):
    """torch's treespec_pprint: the structure written as Python, with ``*`` for leaves."""
    return repr(_unflatten([_DummyLeaf()] * _count(spec), spec))


def _count(spec):
    return 1 if spec.kind is None else sum(_count(c) for c in spec.children)


def _flatten(tree):
    if isinstance(tree, (tuple, list)):
        leaves, children = [], []
        for item in tree:
            sub, spec = _flatten(item)
            leaves += sub
            children.append(spec)
        return leaves, _Spec(type(tree), None, children)
    if isinstance(tree, dict):
        leaves, children = [], []
        keys = list(tree)
        for k in keys:
            sub, spec = _flatten(tree[k])
            leaves += sub
            children.append(spec)
        return leaves, _Spec(dict, keys, children)
    return [tree], _LEAF


def _unflatten(leaves, spec):
    it = iter(leaves)
    return _build(it, spec)


def _build(it, spec):
    if spec.kind is None:
        return next(it)
    items = [_build(it, c) for c in spec.children]
    if spec.kind is dict:
        return dict(zip(spec.keys, items))
    if hasattr(spec.kind, "_fields"):  # a named tuple (ember.return_types.max, ...)
        return spec.kind(*items)
    return spec.kind(items)


def _check_tensors(leaves):
    for leaf in leaves:
        if not isinstance(leaf, Tensor):
            raise ValueError(f"Thing passed to transform API must be Tensor, got {type(leaf)}")


_VJP, _JVP = "vjp(f, *primals)", "jvp(f, primals, tangents)"


def _check_outputs(leaves, api):
    """torch.func's check of what ``f`` returned (``api``: the transform that calls it)."""
    if not leaves:
        raise RuntimeError(f"{api}: Expected f to be a function that has non-empty output "
                           "(got output = [])")
    for leaf in leaves:
        if not isinstance(leaf, Tensor):
            raise RuntimeError(  # noqa: TRY004 - torch's type
                f"{api}: expected f(*primals) to return only tensors, got unsupported type "
                f"{type(leaf)}")


def _check_jvp_inputs(leaves, what):
    for leaf in leaves:
        if not isinstance(leaf, Tensor):
            raise RuntimeError(  # noqa: TRY004 - torch's type
                f"{_JVP}: Expected {what} to only contain Tensors, got {type(leaf)}")


# -- argnums ------------------------------------------------------------------------------------
def _safe_argnum(argnum, total):
    if not isinstance(argnum, int):
        raise RuntimeError(f"argnum must be int, got: {type(argnum)}")
    if not -total <= argnum < total:
        raise RuntimeError(f"Got argnum={argnum}, but only {total} positional inputs")
    return argnum % total


def _argnums(args, argnums):
    """The normalised argnums (an int or a tuple of ints), with torch.func's errors."""
    if not isinstance(argnums, (int, tuple)):
        raise RuntimeError(f"argnums must be int or Tuple[int, ...], got: {type(argnums)}")
    if isinstance(argnums, int):
        return _safe_argnum(argnums, len(args))
    if len(argnums) == 0:
        raise RuntimeError("argnums must be non-empty")
    if len(set(argnums)) != len(argnums):
        raise RuntimeError(f"argnums elements must be unique, got {argnums}")
    return tuple(_safe_argnum(a, len(args)) for a in argnums)


def _select(args, argnums):
    if isinstance(argnums, int):
        return args[argnums]
    return tuple(args[a] for a in argnums)


def _replace(args, argnums, new):
    args = list(args)
    if isinstance(argnums, int):
        args[argnums] = new
    else:
        for a, v in zip(argnums, new):
            args[a] = v
    return tuple(args)


# -- inference mode ----------------------------------------------------------------------------
def _without_inference_mode(fn):
    """``fn`` run with inference mode off (grad mode as it is), as torch.func's transforms
    run the function they transform and its derivatives: under ``inference_mode`` a
    gradient is still the function's, not zeros."""
    @functools.wraps(fn)
    def run(*args, **kwargs):
        if not state.inference:
            return fn(*args, **kwargs)
        state.inference = False
        try:
            return fn(*args, **kwargs)
        finally:
            state.inference = True
    return run


# -- inputs that can be differentiated --------------------------------------------------------
def _not_inference(t):
    """``t``, or for an inference tensor a plain tensor around its data: a transform wraps its
    inputs (torch's functorch wrappers), so their ops are differentiated as any other's."""
    return _wrap(t._data) if isinstance(t, Tensor) and t._is_inference else t


def _has_gradient_edge(t):
    """Whether ``t`` requires grad with a gradient of its own to pass on: a view made in
    no_grad mode of a base that requires grad has none (an alias of it would differentiate
    into nothing, and a transform nested inside would see no outer level). Nor has a view
    whose history may not be read (a split output written in place): under no_grad torch's
    wrapper differentiates it as a fresh copy (elsewhere the outer graph's record refuses
    it, as reading its grad_fn here does)."""
    if not t.requires_grad or (t._base is not None and not plain_autograd_records()
                               and history_refused(t)):
        return False
    return t.grad_fn is not None or grad_accumulator(t) is not None


def _fresh(t):
    """A copy of ``t`` to differentiate against, connected to ``t``'s own differentiation."""
    if _has_gradient_edge(t):  # (an alias: its derivative passes the gradient on as it is)
        return alias(t)
    new = _not_inference(t.detach())._set_requires_grad()
    tangent = fwAD._tangent_of(t)
    if tangent is not None:  # an outer jacfwd/jvp: keep pushing its tangent through
        fwAD._set_tangent(new, tangent)
    return new


def _grads(outputs, inputs, grad_outputs, create):
    outs = [(o, g) for o, g in zip(outputs, grad_outputs) if o.requires_grad]
    if not outs:
        return [zeros_like(i) for i in inputs]
    gs = _autograd_grad([o for o, _ in outs], inputs, [g for _, g in outs], retain_graph=True,
                        create_graph=create, allow_unused=True)
    return [zeros_like(i) if g is None else g for g, i in zip(gs, inputs)]


def _finish_tree(tree, outer):
    """``tree`` (an aux output) with its tensors detached where the outer graph (an
    :class:`OuterGraph`) does not record through them."""
    if tree is None:
        return tree
    leaves, spec = _flatten(tree)
    return _unflatten([outer.finish_aux(t) if isinstance(t, Tensor) else t for t in leaves],
                      spec)


def _checked_as_jvp(func, has_aux):
    """``func``, whose outputs are checked as jacfwd's jvp checks them (a jacfwd computed in
    reverse mode refuses what torch's refuses, with its jvp and jacfwd messages, not vjp's
    and jacrev's, and the ops torch's forward mode refuses)."""
    @functools.wraps(func)
    def checked(*args, **kwargs):
        result = func(*args, **kwargs)
        leaves = _flatten(_split_aux(result, has_aux, _JVP)[0])[0]
        refuse_missing_forward_formulas(leaves)  # (torch's, as the op ran)
        _check_outputs(leaves, _JVP)
        _refuse_complex("jacfwd", leaves, inputs=False)
        return result
    return checked


def _split_aux(output, has_aux, api, check_aux=True):
    """``(output, aux)``; ``check_aux``: refuse an aux that is not all tensors now (grad
    checks its output first, then its aux, as torch's)."""
    if not has_aux:
        return output, None
    if not (isinstance(output, tuple) and len(output) == 2):
        raise RuntimeError(f"{api}: output of function f should be a tuple: (output, aux) if "
                           "has_aux is True")
    if check_aux:
        _check_aux(output[1])
    return output


def _check_aux(aux):
    """torch.func's refusal of an aux output with a leaf that is not a tensor (a number, a
    string, None): each transform unwraps every leaf of it from its level."""
    for leaf in _flatten(aux)[0]:
        if not isinstance(leaf, Tensor):
            raise RuntimeError(f"Expected tensors, got unsupported type {type(leaf)}")


def _output_leaves(output, has_aux, api, check_aux=True):
    """``(output tensors, their structure, aux)`` of what a transformed function returned."""
    output, aux = _split_aux(output, has_aux, api, check_aux)
    out_leaves, out_spec = _flatten(output)
    _check_outputs(out_leaves, api)
    return out_leaves, out_spec, aux


# -- grad ---------------------------------------------------------------------------------------
def grad_and_value(func, argnums=0, has_aux=False):
    """Return a function computing the gradient of ``func`` w.r.t. ``argnums`` and its value."""
    return _grad_and_value(_guarded(func), argnums, has_aux, check_aux=True)


def _guarded(func):
    """``func``, run refusing in-place writes to the tensors it captures (torch's grad and
    jvp levels: see _captures.py)."""
    @functools.wraps(func)
    def run(*args, **kwargs):
        # (every tensor argument is the transform's own, as torch wraps them all at its
        # level: a module's buffer passed to functional_call may be written)
        with capturing(func, _flatten((args, kwargs))[0]):
            return func(*args, **kwargs)
    return run


def _grad_and_value(func, argnums, has_aux, check_aux):
    """grad_and_value; ``check_aux=False`` for an aux of ember's own making (what a transform
    under vmap carries through the transform it runs on the batch: the user's aux in it was
    checked there)."""
    @functools.wraps(func)
    @_without_inference_mode
    def wrapper(*args, **kwargs):
        level = _lowering.active_level()
        if level:  # under vmap: per-example gradients from the batch's
            return _lowering.grad_and_value(func, argnums, has_aux, args, kwargs, level,
                                            check_aux)
        nums = _argnums(args, argnums)
        leaves, spec = _flatten(_select(args, nums))
        _check_tensors(leaves)
        outer = OuterGraph()
        with enable_grad(), outer.running():
            fresh = outer.own([_fresh(t) for t in leaves], leaves)
            output = func(*_replace(args, nums, _unflatten(fresh, spec)), **kwargs)
            output, aux = _split_aux(output, has_aux, "grad_and_value(f)(*args)", False)
            if not isinstance(output, Tensor):
                raise RuntimeError("grad_and_value(f)(*args): Expected f(*args) to return a "
                                   f"Tensor, got {type(output)}")
            if output.dim() != 0:
                raise RuntimeError("grad_and_value(f)(*args): Expected f(*args) to return a "
                                   f"scalar Tensor, got tensor with {output.dim()} dims. Maybe "
                                   "you wanted to use the vjp or jacrev APIs instead?")
            grads = _grads([output], fresh, [None], outer.needs_graph([output]))
            if has_aux and check_aux:
                _check_aux(aux)
        grads = _unflatten([outer.finish(g) for g in grads], spec)
        value = outer.finish(output)
        if has_aux:
            return grads, (value, _finish_tree(aux, outer))
        return grads, value
    return wrapper


def grad(func, argnums=0, has_aux=False):
    """Return a function computing the gradient of scalar ``func`` w.r.t. ``argnums``."""
    inner = grad_and_value(func, argnums, has_aux)

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        grads, value = inner(*args, **kwargs)
        if has_aux:
            return grads, value[1]
        return grads
    return wrapper


# -- vjp and jvp --------------------------------------------------------------------------------
@_without_inference_mode
def vjp(func, *primals, has_aux=False):
    """``(func(*primals), vjp_fn)``: ``vjp_fn(cotangents)`` gives the vector-Jacobian product."""
    func = _guarded(func)
    level = _lowering.active_level()
    if level:
        return _lowering.vjp(func, primals, has_aux, level)
    leaves, spec = _flatten(primals)
    _check_tensors(leaves)
    outer = OuterGraph()
    with enable_grad(), outer.running():
        fresh = outer.own([_fresh(t) for t in leaves], leaves)
        out_leaves, out_spec, aux = _output_leaves(func(*_unflatten(fresh, spec)), has_aux,
                                                   _VJP)

    @_without_inference_mode
    def vjp_fn(cotangents, *, retain_graph=True, create_graph=None):
        ct_leaves, ct_spec = _flatten(cotangents)
        if ct_spec != out_spec:
            raise RuntimeError("Expected pytree structure of cotangents to be the same as pytree "
                               f"structure of outputs to the function. cotangents: "
                               f"{_pprint(ct_spec)}, primal output: {_pprint(out_spec)}")
        # (the levels outside as they are now: the outputs and the cotangents are
        # differentiated at the grad mode of this call, as torch's vjp_fn does)
        call_outer = OuterGraph()
        call_outer.own(fresh, leaves)
        level = _lowering.active_level()
        if level and _lowering.any_batched(ct_leaves, level):  # vmap(vjp_fn): one pass
            return _lowering.batched_cotangents(out_leaves, fresh, ct_leaves, spec,
                                                create_graph, call_outer, level)
        make_graph = create_graph
        if make_graph is None:
            make_graph = call_outer.needs_graph(out_leaves + ct_leaves)
        with enable_grad():
            gs = _grads(out_leaves, fresh, ct_leaves, make_graph)
        # (under no_grad a gradient keeps the version its formulas and buffers left, else none)
        gs = [call_outer.finish(g) if state.grad_enabled else g.detach() for g in gs]
        return _unflatten(gs, spec)

    value = _unflatten([outer.finish(o) for o in out_leaves], out_spec)
    if has_aux:
        return value, vjp_fn, _finish_tree(aux, outer)
    return value, vjp_fn


@_without_inference_mode
def jvp(func, primals, tangents, *, strict=False, has_aux=False):
    """``(func(*primals), J @ tangents)`` by forward-mode AD."""
    func = _guarded(func)
    if not isinstance(primals, tuple):
        raise RuntimeError("jvp(f, primals, tangents): Expected primals to be a tuple. E.g. it "
                           "should be valid to call f(*primals).")
    if not isinstance(tangents, tuple):
        raise RuntimeError("jvp(f, primals, tangents): Expected tangents to be a tuple. E.g. it "
                           "should be valid to call f(*primals).")
    flat_p, spec_p = _flatten(primals)
    flat_t, spec_t = _flatten(tangents)
    if spec_p != spec_t:
        raise RuntimeError("jvp(f, primals, tangents): Expected primals and tangents to have the "
                           "same python structure. For example, if primals is a tuple of 3 "
                           "tensors, tangents also must be. Got primals with structure "
                           f"{spec_p} and tangents with structure {spec_t}")
    _check_jvp_inputs(flat_p, "primals")
    _check_jvp_inputs(flat_t, "tangents")
    level = _lowering.active_level()
    if level:
        return _lowering.jvp(func, primals, tangents, has_aux, level)
    outer = OuterGraph()  # (no fresh leaves: everything that requires grad is outer)
    with fwAD.transform_level():
        duals = outer.mark_inputs([fwAD.make_dual(_not_inference(p), t)
                                   for p, t in zip(flat_p, flat_t)])
        out_leaves, out_spec, aux = _output_leaves(func(*_unflatten(duals, spec_p)), has_aux,
                                                   _JVP)
        jvps = []
        for o in out_leaves:
            primal, tangent = fwAD.unpack_dual(o)
            jvps.append(zeros_like(primal) if tangent is None else tangent)
    # (torch returns each primal as an alias of the output: a view, AliasBackward0 where it
    # requires grad, with its tangent at an outer jvp's level)
    values = [outer.keep_tangent(o, alias(o if outer.reaches(o) else o.detach()))
              for o in out_leaves]
    result = (_unflatten(values, out_spec),
              _unflatten([outer.finish(j) for j in jvps], out_spec))
    return result + (_finish_tree(aux, outer),) if has_aux else result


# -- Jacobians ----------------------------------------------------------------------------------
def _assemble(blocks, out_spec, in_spec):
    """Nest ``blocks[o][i]``, shaped ``(*out.shape, *inp.shape)``, as torch.func does: the
    outputs' structure around the inputs'."""
    return _unflatten([_unflatten(row, in_spec) for row in blocks], out_spec)


def jacrev(func, argnums=0, *, has_aux=False, chunk_size=None, _preallocate_and_copy=False):
    """Return a function computing the Jacobian of ``func`` by reverse-mode AD: every row of
    each output's block in one batched backward pass."""
    return _jacrev(_guarded(func), argnums, has_aux, check_aux=True)


def _jacrev(func, argnums, has_aux, check_aux):
    """jacrev; ``check_aux`` as _grad_and_value's."""
    @functools.wraps(func)
    @_without_inference_mode
    def wrapper(*args, **kwargs):
        _refuse_complex("jacrev", _flatten(args)[0], inputs=True)
        level = _lowering.active_level()
        if level:
            return _lowering.jacobian(func, argnums, has_aux, args, kwargs, level, check_aux)
        nums = _argnums(args, argnums)
        in_leaves, in_spec = _flatten(_select(args, nums))
        _check_tensors(in_leaves)
        outer = OuterGraph()
        with enable_grad(), outer.running():
            fresh = outer.own([_fresh(t) for t in in_leaves], in_leaves)
            output = func(*_replace(args, nums, _unflatten(fresh, in_spec)), **kwargs)
            out_leaves, out_spec, aux = _output_leaves(output, has_aux, _VJP, check_aux)
            _refuse_complex("jacrev", out_leaves, inputs=False)
            create = outer.needs_graph(out_leaves)
            # one batched backward per output; torch computes each input's rows for all the
            # outputs as one tensor
            rows = [_rows_of_jacobian(out, fresh, create) for out in out_leaves]
            by_input = [outer.finish_parts(parts, 0) for parts in zip(*rows)]
        # (torch views each block in its final shape: ViewBackward0 where recorded)
        blocks = [[by_input[i][o].reshape(tuple(out.shape) + tuple(inp.shape))
                   for i, inp in enumerate(fresh)] for o, out in enumerate(out_leaves)]
        jac = _assemble(blocks, out_spec, in_spec)
        return (jac, _finish_tree(aux, outer)) if has_aux else jac
    return wrapper


def _refuse_complex(api, leaves, inputs):
    """torch.func's refusal of a Jacobian of complex inputs or outputs (``leaves``: the
    arguments' or the outputs' flattened leaves, whose index the message names)."""
    for idx, leaf in enumerate(leaves):
        if isinstance(leaf, Tensor) and leaf.is_complex():
            raise RuntimeError(f"{api}: Expected all {'inputs' if inputs else 'outputs'} to "
                               f"be real but received complex tensor at flattened input idx: "
                               f"{idx}")


def _rows_of_jacobian(out, inputs, create):
    """d out / d input for each input, shaped ``(out.numel(), *input.shape)``: every row in
    one batched backward pass (``grad(..., is_grads_batched=True)`` with the identity)."""
    n = out.numel()
    if n == 0 or not out.requires_grad:
        return [zeros((n,) + tuple(inp.shape), dtype=inp.dtype, device=inp.device)
                for inp in inputs]
    eye = _wrap(get_xp(out._data).eye(n, dtype=out._data.dtype).reshape((n,) + tuple(out.shape)))
    gs = _autograd_grad([out], inputs, [eye], retain_graph=True, create_graph=create,
                        allow_unused=True, is_grads_batched=True)
    return [zeros((n,) + tuple(inp.shape), dtype=inp.dtype, device=inp.device) if g is None
            else g for g, inp in zip(gs, inputs)]


def _columns_of_jacobian(func, args, kwargs, nums, in_leaves, in_spec, i, has_aux):
    """The output tangents along every basis direction of input ``i``, in one forward pass
    (a batch of tangents): ``(outputs' tangents (numel, *out.shape), outputs, aux)``."""
    from ..autograd._batched_forward import batched_tangents
    inp = in_leaves[i]
    n = inp.numel()
    basis = _wrap(get_xp(inp._data).eye(n, dtype=inp._data.dtype).reshape(
        (n,) + tuple(inp.shape)))
    with fwAD.transform_level(), batched_tangents(n):
        leaves = list(in_leaves)
        leaves[i] = fwAD.make_dual(_not_inference(inp), basis)
        output = func(*_replace(args, nums, _unflatten(leaves, in_spec)), **kwargs)
        out_leaves, out_spec, aux = _output_leaves(output, has_aux, _JVP)
        tans = []
        for o in out_leaves:
            primal, tangent = fwAD.unpack_dual(o)
            tans.append(zeros((n,) + tuple(primal.shape), dtype=primal.dtype,
                              device=primal.device)
                        if tangent is None else tangent)
    return tans, out_leaves, out_spec, aux


def jacfwd(func, argnums=0, has_aux=False, *, randomness="error"):
    """Return a function computing the Jacobian of ``func`` by forward-mode AD: for each
    input, every column at once (one forward pass carrying a batch of tangents)."""
    func = _guarded(func)

    @functools.wraps(func)
    @_without_inference_mode
    def wrapper(*args, **kwargs):
        _refuse_complex("jacfwd", _flatten(args)[0], inputs=True)
        level = _lowering.active_level()
        if level:  # NOTE: under vmap the Jacobian is computed in reverse mode
            return _lowering.jacobian(_checked_as_jvp(func, has_aux), argnums, has_aux, args,
                                      kwargs, level, reverse=False)
        if fwAD._level is not None and not fwAD._in_transform[0]:
            # (a dual level the user entered: torch's jacfwd enters one of its own)
            raise RuntimeError("Nested forward mode AD is not supported at the moment")
        if fwAD._level is not None:
            # NOTE: inside an outer jacfwd/jvp (one dual level at a time in ember), the inner
            # Jacobian is computed in reverse mode, which the outer forward mode goes through
            return jacrev(_checked_as_jvp(func, has_aux), argnums, has_aux=has_aux)(
                *args, **kwargs)
        nums = _argnums(args, argnums)
        in_leaves, in_spec = _flatten(_select(args, nums))
        _check_tensors(in_leaves)
        outer = OuterGraph()  # (no fresh leaves: everything that requires grad is outer)
        columns = []  # columns[i][o]: tangents of output o along input i's basis, batched
        aux = out_leaves = out_spec = None
        for i, inp in enumerate(in_leaves):
            if inp.numel() == 0:
                columns.append(None)
                continue
            tans, out_leaves, out_spec, aux = _columns_of_jacobian(
                func, args, kwargs, nums, in_leaves, in_spec, i, has_aux)
            columns.append(tans)
        if out_leaves is None:  # no input elements: evaluate once for the output structure
            output, aux = _split_aux(func(*args, **kwargs), has_aux, "jvp(f, primals, tangents)")
            out_leaves, out_spec = _flatten(output)
        _refuse_complex("jacfwd", out_leaves, inputs=False)
        blocks = []
        for o, out in enumerate(out_leaves):
            # (numel, *out.shape) -> (*out.shape, numel): torch computes an output's columns
            # for all the inputs as one tensor
            row = outer.finish_parts(
                [columns[i][o].movedim(0, -1) if columns[i] is not None
                 else out.new_zeros(tuple(out.shape) + (0,)) for i in range(len(in_leaves))],
                -1)
            blocks.append([_unflatten_last(c, inp.shape) for c, inp in zip(row, in_leaves)])
        jac = _assemble(blocks, out_spec, in_spec)
        return (jac, _finish_tree(aux, outer)) if has_aux else jac
    return wrapper


def _unflatten_last(t, shape):
    """``t``'s last dimension unflattened to ``shape``, as torch's jacfwd does it (a squeeze
    for a 0-dim input: SqueezeBackward1 or ViewBackward0 where recorded)."""
    return t.squeeze(-1) if len(shape) == 0 else t.unflatten(-1, tuple(shape))


def hessian(func, argnums=0):
    """Return a function computing the Hessian of ``func`` (``jacfwd(jacrev(func))``)."""
    return jacfwd(jacrev(func, argnums), argnums)


@_without_inference_mode
def linearize(func, *primals):
    """``(func(*primals), jvp_fn)``: ``jvp_fn(*tangents)`` is the Jacobian-vector product of
    ``func`` at ``primals``.

    NOTE: torch traces ``func`` once and replays the trace; ember has no tracer, so ``jvp_fn``
    evaluates ``func`` again under forward-mode AD at the stored primals (the same values for
    a deterministic ``func``). As in torch's trace, the primals and the tensors ``func``
    captures are constants there: a result records its graph (it requires grad where they
    do) but passes no gradient to them, only to tangents that require grad.
    """
    output = func(*primals)
    out_leaves, out_spec = _flatten(output)
    flat_p, spec_p = _flatten(primals)
    shapes = [tuple(p.shape) for p in flat_p]
    dtypes = [p.dtype for p in flat_p]
    captured = _nodes_of([o for o in out_leaves if isinstance(o, Tensor)])

    @_without_inference_mode
    def jvp_fn(*tangents):
        flat_t, spec_t = _flatten(tangents)
        if spec_t != spec_p:
            raise RuntimeError(f"Expected the tangents {spec_t} to have the same argspec as the "
                               f"primals {spec_p}")
        for idx, t in enumerate(flat_t):
            if tuple(t.shape) != shapes[idx]:
                raise RuntimeError(f"tangent:{idx} with shape {t.shape} in flattened pytree "
                                   f"doesn't match the shape {_size(shapes[idx])} of the "
                                   "corresponding primal.")
            if t.dtype != dtypes[idx]:
                raise RuntimeError(f"tangent:{idx} with dtype {t.dtype} in flattened pytree "
                                   f"doesn't match the dtype {dtypes[idx]} of the "
                                   "corresponding primal.")
        with fwAD.dual_level():
            duals = [fwAD.make_dual(_constant(p), t) for p, t in zip(flat_p, flat_t)]
            out = func(*_unflatten(duals, spec_p))
            leaves, _ = _flatten(out)
            tans = []
            for o in leaves:
                primal, tangent = fwAD.unpack_dual(o)
                tans.append(zeros_like(primal) if tangent is None else
                            _traced_output(tangent, flat_t))
        through_tangents = _nodes_of([t for t in flat_t if isinstance(t, Tensor)])
        _as_constants(tans, {k: n for k, n in captured.items() if k not in through_tangents})
        return _unflatten(tans, out_spec)
    return output, jvp_fn


def _constant(p):
    """A primal as torch's trace holds it: a constant, requiring grad where ``p`` does."""
    c = _not_inference(p.detach())
    return c.detach()._set_requires_grad() if p.requires_grad else c


def _nodes_of(tensors):
    """Every node of the graph of ``tensors`` (a leaf's accumulator included), by id."""
    nodes = {}
    todo = [t.grad_fn if t.grad_fn is not None else grad_accumulator(t)
            for t in tensors if t.requires_grad]
    while todo:
        node = todo.pop()
        if node is None or id(node) in nodes:
            continue
        nodes[id(node)] = node
        todo.extend(nxt for nxt, _ in node._next if nxt is not None)
    return nodes


def _as_constants(results, captured):
    """Cut the edges from ``results``' graph into ``captured`` (the graph ``func`` reached at
    ``linearize``, but for the tangents' own), each to a constant leaf of its own (a new
    tensor that requires grad), as torch's trace lifts the tensors ``func`` captures: the
    gradient reaches none of them."""
    tensors = [r for r in results if isinstance(r, Tensor)]
    if not captured or not tensors:
        return
    xp = get_xp(tensors[0]._data)
    seen = set()
    todo = [r.grad_fn for r in tensors if r.grad_fn is not None]
    while todo:
        node = todo.pop()
        if id(node) in seen or id(node) in captured:
            continue
        seen.add(id(node))
        edges = list(node._next)
        metas = getattr(node, "_meta", None) or ()
        for k, (nxt, _) in enumerate(edges):
            if nxt is None:
                continue
            if id(nxt) not in captured:
                todo.append(nxt)
                continue
            meta = metas[k] if k < len(metas) else None
            if isinstance(meta, tuple) and len(meta) == 2:  # (the input's shape, dtype)
                constant = _wrap(xp.zeros(meta[0], meta[1]))._set_requires_grad()
                edges[k] = (grad_accumulator(constant), 0)
        if edges != list(node._next):
            node._next = tuple(edges)


def _traced_output(tangent, inputs):
    """A tangent as torch's traced program returns it: one that is an input tangent or a view
    of one comes back as a copy (or that view of a copy), torch's graph output copied out."""
    for t in inputs:
        if tangent is t:
            return _copied(t)
        base = tangent._base
        if base is not None and (base is t or base is t._base):
            from .._ops.views import replay
            return replay(tangent._view_chain, _copied(base))
    return tangent


def _copied(t):
    """A new tensor laid out as ``t``, ``t`` copied into it (``copy_``: version 1)."""
    return t.new_empty_strided(tuple(t.shape), t.stride()).copy_(t)


def _size(shape):
    from .._size import Size
    return Size(shape)
