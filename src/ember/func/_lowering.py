"""The transforms under vmap: ``vmap(grad(f))``, ``vmap(jacrev(f))``, ...

A transform called inside a vmapped function works on the physical values of the innermost
vmap level instead: the differentiated inputs become batch-first tensors (an unbatched input is
expanded over the batch, so that each example gets its own derivative), ``f`` runs on them
wrapped as BatchedTensors, and the transform differentiates the physical outputs. Examples do
not interact under vmap, so the derivative of the batch's sum w.r.t. one example's input is
that example's derivative: ``grad`` differentiates the sum of the outputs, ``jacrev`` and
``jacfwd`` the sum over the batch of each output (one batched backward pass), ``vjp`` and
``jvp`` pass batch-first cotangents and tangents through. The transform itself runs one level
down (``_ceiling``), where the physical values are ordinary (or outer-level batched) tensors.
"""
from __future__ import annotations

from .._tensor import Tensor
from ..autograd import forward_ad as fwAD
from ._batched_tensor import BatchedTensor, autograd_scopes
from ._batching import _levels, materialize, rules_running

_ceiling = [None]  # the innermost vmap level a transform may see (None: all of them)


def _hidden_batch_dims(level):
    """How many of the batch dimensions of the physical values the op now running reads
    belong to the vmap levels dual level ``level`` runs beneath."""
    return sum(1 for v in rules_running if v in level.hides_vmap)


fwAD.hidden_batch_dims[0] = _hidden_batch_dims


def active_level():
    """The vmap level a transform called now must batch over (0: none)."""
    return len(_levels) if _ceiling[0] is None else _ceiling[0]


class _below:
    """Run the transform itself at the levels below ``level``."""

    def __init__(self, level):
        self.level = level

    def __enter__(self):
        self.prev = _ceiling[0]
        _ceiling[0] = self.level - 1
        autograd_scopes.append((self.level, True))

    def __exit__(self, *exc):
        _ceiling[0] = self.prev
        autograd_scopes.pop()


class _at:
    """Run the user's function with ``level`` visible again; ``recorded``: under a
    reverse-mode transform, whose tensors report their autograd flags (see
    BatchedTensor.requires_grad)."""

    def __init__(self, level, recorded=False):
        self.level, self.recorded = level, recorded

    def __enter__(self):
        self.prev = _ceiling[0]
        _ceiling[0] = self.level
        autograd_scopes.append((self.level, self.recorded))

    def __exit__(self, *exc):
        _ceiling[0] = self.prev
        autograd_scopes.pop()


def _wrap_tree(tree, level):
    from ._transforms import _flatten, _unflatten
    leaves, spec = _flatten(tree)
    return _unflatten([BatchedTensor(t, level) if isinstance(t, Tensor) else t
                       for t in leaves], spec)


def _phys_tree(tree, level):
    from ._transforms import _flatten, _unflatten
    leaves, spec = _flatten(tree)
    return _unflatten([materialize(t, level) if isinstance(t, Tensor) else t
                       for t in leaves], spec)


def _phys_leaves(args, nums, level):
    from ._transforms import _check_tensors, _flatten, _select
    leaves, spec = _flatten(_select(args, nums))
    _check_tensors(leaves)
    return [materialize(t, level) for t in leaves], spec


def grad_and_value(func, argnums, has_aux, args, kwargs, level, check_aux=True):
    from ._transforms import _argnums, _check_aux, _replace, _split_aux, _unflatten
    from ._transforms import _grad_and_value
    nums = _argnums(args, argnums)
    phys, spec = _phys_leaves(args, nums, level)

    def summed(*p):
        with _at(level, recorded=True):
            wrapped = _unflatten([BatchedTensor(t, level) for t in p], spec)
            out = func(*_replace(args, nums, wrapped), **kwargs)
            out, aux = _split_aux(out, has_aux, "grad_and_value(f)(*args)", False)
            if not isinstance(out, Tensor):
                raise RuntimeError("grad_and_value(f)(*args): Expected f(*args) to return a "
                                   f"Tensor, got {type(out)}")
            if out.dim() != 0:
                raise RuntimeError("grad_and_value(f)(*args): Expected f(*args) to return a "
                                   f"scalar Tensor, got tensor with {out.dim()} dims. Maybe you "
                                   "wanted to use the vjp or jacrev APIs instead?")
            if has_aux and check_aux:
                _check_aux(aux)
            values = materialize(out, level)
        return values.sum(), (values, aux)

    with _below(level):
        grads, (_, (values, aux)) = _grad_and_value(summed, tuple(range(len(phys))), True,
                                                    check_aux=False)(*phys)
    grads = _unflatten([BatchedTensor(g, level) for g in grads], spec)
    value = BatchedTensor(values, level)
    return grads, ((value, aux) if has_aux else value)


def vjp(func, primals, has_aux, level):
    from ._transforms import _output_leaves, _unflatten, _VJP
    from ._transforms import vjp as plain
    phys, spec = _phys_leaves(primals, tuple(range(len(primals))), level)

    def physical(*p):
        with _at(level, recorded=True):
            out = func(*_unflatten([BatchedTensor(t, level) for t in p], spec))
            leaves, out_spec, aux = _output_leaves(out, has_aux, _VJP)
            outs = _unflatten([materialize(o, level) for o in leaves], out_spec)
        return (outs, aux) if has_aux else outs

    with _below(level):
        result = plain(physical, *phys, has_aux=has_aux)
    value, fn = result[0], result[1]

    def vjp_fn(cotangents, **kw):
        inner = _inner_level(cotangents, level)
        if inner:  # vmap(vjp_fn) inside the vmap the vjp was made in
            gs = _vjp_of_inner_batch(fn, cotangents, level, inner, kw)
        else:
            with _below(level):
                gs = _wrap_tree(fn(_phys_tree(cotangents, level), **kw), level)
        return _unflatten(list(gs), spec)  # (the primals' structure: a dict of parameters...)

    out = (_wrap_tree(value, level), vjp_fn)
    return out + (result[2],) if has_aux else out


def _inner_level(tree, level):
    """The vmap level above ``level`` that ``tree``'s tensors are batched at (0: none)."""
    from ._transforms import _flatten
    levels = {t._level for t in _flatten(tree)[0] if type(t) is BatchedTensor}
    above = [lv for lv in levels if lv > level]
    return max(above) if above else 0


def _vjp_of_inner_batch(fn, cotangents, level, inner, kw):
    """``vjp_fn`` of a vjp made at vmap ``level``, called under an ``inner`` vmap with
    cotangents batched there (a vmap over basis vectors inside a vmap over examples): one
    backward pass carrying both batches, the inner batch as ``is_grads_batched``'s."""
    from ._batching import level_size
    from ._transforms import _flatten, _unflatten
    leaves, spec = _flatten(cotangents)
    n_outer, n_inner = level_size(level), level_size(inner)
    both = []
    for t in leaves:
        if type(t) is BatchedTensor and t._level == inner:
            value = t._value
            if isinstance(value, BatchedTensor):
                raise NotImplementedError(
                    "vmap(vjp_fn) inside vmap: cotangents batched at both levels are not "
                    "supported yet")
        else:
            value = t.unsqueeze(0).expand((n_inner,) + tuple(t.shape))
        # (inner batch, outer batch, example): the outer batch as the vjp's outputs have it
        both.append(BatchedTensor(value.unsqueeze(1).expand(
            (n_inner, n_outer) + tuple(value.shape[1:])), inner))
    with _at(inner):
        gs = fn(_unflatten(both, spec), **kw)
    # each gradient (inner, outer, ...): batched at ``level`` inside the ``inner`` batch
    return [BatchedTensor(BatchedTensor(g._value.movedim(0, 1), level), inner)
            for g in _flatten(gs)[0]]


def jvp(func, primals, tangents, has_aux, level):
    from ._transforms import _flatten, _output_leaves, _unflatten, _JVP
    from ._transforms import jvp as plain
    leaves_p, spec = _flatten(primals)
    leaves_t, _ = _flatten(tangents)
    phys_p = tuple(materialize(t, level) for t in leaves_p)
    phys_t = tuple(materialize(t, level) for t in leaves_t)

    def physical(*p):
        # (the batch dimension of ``level`` is none of the examples' to jvp's formulas)
        fwAD._level.hides_vmap += (level,)
        with _at(level):
            out = func(*_unflatten([BatchedTensor(t, level) for t in p], spec))
            leaves, out_spec, aux = _output_leaves(out, has_aux, _JVP)
            outs = _unflatten([materialize(o, level) for o in leaves], out_spec)
        return (outs, aux) if has_aux else outs

    with _below(level):
        result = plain(physical, phys_p, phys_t, has_aux=has_aux)
    out = (_wrap_tree(result[0], level), _wrap_tree(result[1], level))
    return out + (result[2],) if has_aux else out


def jacobian(func, argnums, has_aux, args, kwargs, level, check_aux=True, reverse=True):
    """``jacrev``/``jacfwd`` under vmap: the Jacobian of each output's sum over the batch, by
    one batched backward pass per output, its batch dimension moved back to the front.
    ``reverse``: jacrev's (jacfwd's function sees no recording tensors, as in torch)."""
    from ._transforms import _argnums, _output_leaves, _replace, _unflatten, _VJP
    from ._transforms import _jacrev
    nums = _argnums(args, argnums)
    phys, spec = _phys_leaves(args, nums, level)
    shapes = []

    def summed(*p):
        with _at(level, recorded=reverse):
            wrapped = _unflatten([BatchedTensor(t, level) for t in p], spec)
            out = func(*_replace(args, nums, wrapped), **kwargs)
            leaves, out_spec, aux = _output_leaves(out, has_aux, _VJP, check_aux)
            shapes[:] = [(out_spec, [o.dim() for o in leaves])]
            sums = tuple(materialize(o, level).sum(0) for o in leaves)
        return sums, aux

    with _below(level):
        jac, aux = _jacrev(summed, tuple(range(len(phys))), True, check_aux=False)(*phys)
    out_spec, ranks = shapes[0]
    rows = [_unflatten([BatchedTensor(_batch_first(block, rank), level) for block in row], spec)
            for row, rank in zip(jac, ranks)]
    result = _unflatten(rows, out_spec)
    return (result, aux) if has_aux else result


def _batch_first(block, dim):
    """``block`` with its batch dimension ``dim`` moved to the front. (Viewed in its own shape
    at the end: torch's batched Jacobian is a view of its rows, ViewBackward0 where the graph
    outside records it.)"""
    moved = block.movedim(dim, 0)
    return moved.view(moved.shape)


def any_batched(leaves, level):
    return any(type(t) is BatchedTensor and t._level == level for t in leaves)


def batched_cotangents(out_leaves, inputs, cotangents, spec, create, outer, level):
    """``vmap(vjp_fn)(cotangents)`` for a ``vjp_fn`` made outside the vmap: one backward pass
    carrying the whole batch of cotangents (``is_grads_batched``). ``create``: the
    ``create_graph`` asked for (None: where the levels outside, ``outer``, need it)."""
    from .._creation import zeros
    from ..autograd import grad
    from ..autograd.grad_mode import enable_grad
    from ._batching import level_size
    from ._transforms import _unflatten
    pairs = [(o, materialize(c, level)) for o, c in zip(out_leaves, cotangents)
             if o.requires_grad]
    if create is None:
        create = outer.needs_graph(out_leaves + [c for _, c in pairs])
    size = level_size(level)
    grads = [None] * len(inputs)
    if pairs:
        with _below(level), enable_grad():
            grads = grad([o for o, _ in pairs], inputs, [g for _, g in pairs],
                         retain_graph=True, create_graph=create, allow_unused=True,
                         is_grads_batched=True)
    out = []
    for g, inp in zip(grads, inputs):
        if g is None:
            g = zeros((size,) + tuple(inp.shape), dtype=inp.dtype)
        out.append(BatchedTensor(outer.finish(g) if create else g.detach(), level))
    return _unflatten(out, spec)



def grad_of_batched_outputs_grads(outputs, inputs, grad_outputs, retain, create, allow_unused,
                                  is_grads_batched):
    """``autograd.grad`` called under vmap with grad_outputs batched there, of a graph made
    outside it (None when that is not the call): one backward pass carrying the whole batch
    (``is_grads_batched``; where the call asked for it too, its batch and vmap's make one),
    its gradients batched at that level. (A BatchedTensor holds no array, so the engine's
    array formulas cannot take it as a gradient.)"""
    from ..autograd import grad
    from ._batched_tensor import batch_level
    level = max((batch_level(g) for g in grad_outputs if g is not None), default=0)
    if not level or level != len(_levels) or any(
            batch_level(t) for t in outputs + inputs if isinstance(t, Tensor)):
        return None
    size = _levels[level - 1].size
    phys = [None if g is None else materialize(g, level) for g in grad_outputs]
    rows = grad_outputs[0].shape[0] if is_grads_batched else 0
    if is_grads_batched:  # (vmap's batch, the call's batch, ...): one batch of both
        phys = [g.reshape((size * rows,) + tuple(g.shape[2:])) for g in phys]
    with _below(level):
        grads = grad(outputs, inputs, tuple(phys), retain_graph=retain, create_graph=create,
                     allow_unused=allow_unused, is_grads_batched=True)
    if is_grads_batched:
        grads = [None if g is None else g.reshape((size, rows) + tuple(g.shape[1:]))
                 for g in grads]
    return tuple(None if g is None else BatchedTensor(g, level) for g in grads)
