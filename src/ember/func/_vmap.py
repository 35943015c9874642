"""``vmap``: a function of one example, run on a whole batch at once.

The mapped dimension of each input is moved to the front and the input is handed to the
function as a BatchedTensor (see _batched_tensor.py); the function's ops run once on the whole
batch through their batching rules (_batching_rules.py), and the outputs' batch dimensions are
moved to ``out_dims``.
"""
from __future__ import annotations

import functools

from .._tensor import Tensor
from ._batched_tensor import BatchedTensor, held_as_torch, input_batch_dim
from ._batching import _levels, level_scope
from ._transforms import _flatten, _unflatten

__all__ = ["vmap"]


def _name(func):
    if isinstance(func, functools.partial):
        return f"functools.partial({_name(func.func)}, ...)"
    return getattr(func, "__name__", repr(func))


def _broadcast(tree, spec):
    """The leaves of ``tree`` (in_dims or out_dims) broadcast to structure ``spec``: an int
    or None applies to a whole subtree. None when the structures do not fit."""
    if tree is None or isinstance(tree, int):
        return [tree] * _count(spec)
    if spec.kind is None:
        return None
    if isinstance(tree, (tuple, list)) and spec.kind in (tuple, list):
        if len(tree) != len(spec.children) or type(tree) is not spec.kind:
            return None
        out = []
        for t, child in zip(tree, spec.children):
            sub = _broadcast(t, child)
            if sub is None:
                return None
            out += sub
        return out
    if isinstance(tree, dict) and spec.kind is dict:
        if set(tree) != set(spec.keys):
            return None
        out = []
        for key, child in zip(spec.keys, spec.children):
            sub = _broadcast(tree[key], child)
            if sub is None:
                return None
            out += sub
        return out
    return None


def _count(spec):
    return 1 if spec.kind is None else sum(_count(c) for c in spec.children)


def _check_in_dims(func, in_dims, flat_args, args, args_spec):
    if not isinstance(in_dims, (int, tuple)):
        raise ValueError(f"vmap({_name(func)}, in_dims={in_dims}, ...)(<inputs>): expected "
                         f"`in_dims` to be int or a (potentially nested) tuple matching the "
                         f"structure of inputs, got: {type(in_dims)}.")
    if len(args) == 0:
        raise ValueError(f"vmap({_name(func)})(<inputs>): got no inputs. Maybe you forgot to "
                         "add inputs, or you are trying to vmap over a function with no inputs. "
                         "The latter is unsupported.")
    flat_in_dims = _broadcast(in_dims, args_spec)
    if flat_in_dims is None:
        raise ValueError(f"vmap({_name(func)}, in_dims={in_dims}, ...)(<inputs>): in_dims is "
                         "not compatible with the structure of `inputs`. in_dims has structure "
                         f"{_flatten(in_dims)[1]} but inputs has structure {args_spec}.")
    for arg, in_dim in zip(flat_args, flat_in_dims):
        if not isinstance(in_dim, int) and in_dim is not None:
            raise ValueError(f"vmap({_name(func)}, in_dims={in_dims}, ...)(<inputs>): Got "
                             f"in_dim={in_dim} for an input but in_dim must be either an "
                             "integer dimension or None.")
        if isinstance(in_dim, int) and not isinstance(arg, Tensor):
            raise ValueError(f"vmap({_name(func)}, in_dims={in_dims}, ...)(<inputs>): Got "
                             f"in_dim={in_dim} for an input but the input is of type "
                             f"{type(arg)}. We cannot vmap over non-Tensor arguments, please "
                             "use None as the respective in_dim")
        if in_dim is not None and not -arg.dim() <= in_dim < arg.dim():
            raise ValueError(f"vmap({_name(func)}, in_dims={in_dims}, ...)(<inputs>): Got "
                             f"in_dim={in_dim} for some input, but that input is a Tensor of "
                             f"dimensionality {arg.dim()} so expected in_dim to satisfy "
                             f"-{arg.dim()} <= in_dim < {arg.dim()}.")
    return flat_in_dims


def _batch_size(flat_in_dims, flat_args):
    sizes = [arg.size(d) for d, arg in zip(flat_in_dims, flat_args) if d is not None]
    if not sizes:
        raise ValueError("vmap: Expected at least one Tensor to vmap over")
    if any(s != sizes[0] for s in sizes):
        raise ValueError("vmap: Expected all tensors to have the same size in the mapped "
                         f"dimension, got sizes {sizes} for the mapped dimension")
    return sizes[0]


def _check_out_dims(func, out_dims):
    leaves = [out_dims] if isinstance(out_dims, int) else _flatten(out_dims)[0]
    for leaf in leaves:
        if leaf is not None and not isinstance(leaf, int):
            raise ValueError(f"vmap({_name(func)}, ..., out_dims={out_dims}): `out_dims` must "
                             "be an int, None or a python collection of ints representing "
                             "where in the outputs the vmapped dimension should appear.")


def vmap(func, in_dims=0, out_dims=0, randomness="error", *, chunk_size=None):
    """Vectorize ``func`` over the dimension ``in_dims`` of its inputs (see torch.func.vmap)."""
    if randomness not in ("error", "different", "same"):
        raise RuntimeError("Only allowed values for randomness are 'error', 'different', or "
                           f"'same'. Got {randomness}")
    if not (chunk_size is None or chunk_size > 0):
        raise ValueError(f"vmap: chunk_size should be None or greater than 0. (got {chunk_size})")
    _check_out_dims(func, out_dims)

    @functools.wraps(func)
    def wrapped(*args, **kwargs):
        flat_args, args_spec = _flatten(args)
        flat_in_dims = _check_in_dims(func, in_dims, flat_args, args, args_spec)
        size = _batch_size(flat_in_dims, flat_args)
        if randomness == "different":
            # NOTE: each example draws its own random numbers by running on its own.
            return _chunked(func, flat_args, flat_in_dims, args_spec, size, 1, out_dims,
                            randomness, kwargs)
        if chunk_size is not None and chunk_size < size:
            return _chunked(func, flat_args, flat_in_dims, args_spec, size, chunk_size,
                            out_dims, randomness, kwargs)
        return _flat_vmap(func, flat_args, flat_in_dims, args_spec, size, out_dims,
                          randomness, kwargs)
    return wrapped


def _flat_vmap(func, flat_args, flat_in_dims, args_spec, size, out_dims, randomness, kwargs):
    with level_scope(size, randomness) as level:
        batched = [arg if d is None else input_batch_dim(
            BatchedTensor(_batch_first(arg, d), level), d % arg.dim(), arg)
                   for arg, d in zip(flat_args, flat_in_dims)]
        output = func(*_unflatten(batched, args_spec), **kwargs)
        return _unwrap_outputs(func, output, out_dims, level, size)


def _batch_first(arg, dim):
    """``arg`` with dimension ``dim`` first: ``arg`` itself where it already is (torch's
    batched tensor holds the input, so an input returned as it is comes back itself)."""
    return arg if dim in (0, -arg.dim()) else arg.movedim(dim, 0)


def _unwrap_outputs(func, output, out_dims, level, size):
    flat_out, out_spec = _flatten(output)
    if isinstance(output, Tensor):
        if isinstance(out_dims, int) or out_dims is None:
            flat_dims = [out_dims]
        elif isinstance(out_dims, tuple) and len(out_dims) == 1:
            flat_dims = list(out_dims)
        else:
            flat_dims = None
    else:
        flat_dims = _broadcast(out_dims, out_spec)
    if flat_dims is None:
        raise ValueError(f"vmap({_name(func)}, ..., out_dims={out_dims})(<inputs>): out_dims "
                         "is not compatible with the structure of `outputs`. out_dims has "
                         f"structure {_flatten(out_dims)[1]} but outputs has structure "
                         f"{out_spec}.")
    outs = [_remove_batch_dim(func, o, d, level, size) for o, d in zip(flat_out, flat_dims)]
    return _unflatten(outs, out_spec)


def _remove_batch_dim(func, out, out_dim, level, size):
    name = _name(func)
    batched_here = type(out) is BatchedTensor and out._level == level
    if out_dim is None:
        if batched_here:
            raise ValueError(f"vmap({name}, ...): `{name}` can not return a BatchedTensor when "
                             "out_dim is None")
        return out
    if not isinstance(out, Tensor):
        raise ValueError(f"vmap({name}, ...): `{name}` must only return Tensors, got type "
                         f"{type(out)}. Did you mean to set out_dims= to None for output?")
    if batched_here:
        held = held_as_torch(out)
        if held is not None:  # the batch where torch's batched tensor holds it
            value, bdim = held
            at_bdim = -value.dim() <= out_dim < value.dim() and out_dim % value.dim() == bdim
            return value if at_bdim else value.movedim(bdim, out_dim)
        value = out._value
        # (a batch dimension already where out_dims puts it stays: no view, as torch's)
        at_front = -value.dim() <= out_dim < value.dim() and out_dim % value.dim() == 0
        return value if at_front else value.movedim(0, out_dim)
    # the same value for every example: expanded over the batch, as torch does
    nd = out.dim() + 1
    d = out_dim + nd if out_dim < 0 else out_dim
    if not 0 <= d < nd:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-nd}, {nd - 1}]"
                         f", but got {out_dim})")
    shape = list(out.shape)
    shape.insert(d, size)
    return out.unsqueeze(d).expand(tuple(shape))


def _chunked(func, flat_args, flat_in_dims, args_spec, size, chunk, out_dims, randomness,
             kwargs):
    from .._ops.shape import cat
    from ..random import _restore, _snapshot_for
    bounds = list(range(chunk, size, chunk))
    pieces = [arg.tensor_split(bounds, d) if d is not None else None
              for arg, d in zip(flat_args, flat_in_dims)]
    rng = _snapshot_for(flat_args) if randomness == "same" else None
    results = []
    for c in range(len(bounds) + 1):
        args_c = [arg if p is None else p[c] for arg, p in zip(flat_args, pieces)]
        if rng is not None:
            _restore(rng)
        if randomness == "different":
            results.append(_one_example(func, args_c, flat_in_dims, args_spec, out_dims,
                                        kwargs))
        else:
            n = _batch_size(flat_in_dims, args_c)
            results.append(_flat_vmap(func, args_c, flat_in_dims, args_spec, n, out_dims,
                                      randomness, kwargs))
    flat_results = [_flatten(r) for r in results]
    out_spec = flat_results[0][1]
    dims = _broadcast(out_dims, out_spec) if not isinstance(results[0], Tensor) else (
        [out_dims] if not isinstance(out_dims, tuple) else list(out_dims))
    joined = []
    for i, d in enumerate(dims):
        parts = [fr[0][i] for fr in flat_results]
        joined.append(parts[0] if d is None else cat(parts, d))
    return _unflatten(joined, out_spec)


def _one_example(func, args_c, flat_in_dims, args_spec, out_dims, kwargs):
    """``func`` on one example (a chunk of one), with its outputs given a batch of one."""
    ex = [arg if d is None else arg.select(d, 0) for arg, d in zip(args_c, flat_in_dims)]
    output = func(*_unflatten(ex, args_spec), **kwargs)
    return _unwrap_outputs(func, output, out_dims, 0, 1)


def in_vmap():
    """Whether a vmap level is active (used by the transforms to batch their own work)."""
    return bool(_levels)
