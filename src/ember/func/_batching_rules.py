"""Batching rules: each op under vmap as one call on the physical (batch-first) values.

A rule ``rule(op, args, level)`` gets the op's bound arguments, where the tensors batched at
``level`` are BatchedTensors, and returns BatchedTensors. Most rules only move the op out of
the batch dimension's way: shift a ``dim`` argument by one, prepend the batch to a shape, fold
the batch into the rows of a matrix product or the samples of a convolution. A few ops are
written as other ops on the logical tensors (``addmm`` as ``beta * self + alpha * (m1 @ m2)``),
which are batched in turn.
"""
from __future__ import annotations

import math

import numpy as np

from .. import _dtype as D
from .._tensor import Tensor, _wrap, _wrap_dim
from ._batched_tensor import BatchedTensor, batched_at, forget_held, held_as_torch
from ._batching import (level_size, materialize, no_fallback, no_view_fallback, per_example,
                        per_example_inplace, torch_level, warn_fallback, wrap)

RULES = {}


def rule(*names):
    def register(fn):
        for name in names:
            RULES[name] = fn
        return fn
    return register


def rule_for(op):
    r = RULES.get(op.name)
    if r is None and op.elementwise:
        return elementwise
    return r


def _phys(x, level):
    return x._value if type(x) is BatchedTensor and x._level == level else None


def _batched(x, level):
    return type(x) is BatchedTensor and x._level == level


def _logical_ndim(x):
    return x.dim() if isinstance(x, Tensor) else np.ndim(x)


# -- elementwise ops ----------------------------------------------------------------------------
_ELEMENTWISE = ("eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_xor",
                "logical_not", "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not",
                "bitwise_left_shift", "bitwise_right_shift", "isclose", "asinh", "acosh",
                "atanh", "floor", "ceil", "trunc", "isnan", "isinf", "isposinf", "isneginf",
                "isfinite", "isreal", "masked_fill", "same_mask", "notnan_mask", "_to_copy",
                "linalg_vector_norm_inf_mask", "frexp", "nextafter")


def _aligned(op, args, level):
    """The arguments with every batched tensor's physical value viewed as (batch, 1.., *x) so
    that it broadcasts against the others as its example does."""
    n = op.n_tensors
    rank = max(_logical_ndim(a) for a in args[:n] if isinstance(a, Tensor))
    out = list(args)
    zero_dim_batched = False
    for k in range(n):
        a = args[k]
        p = _phys(a, level)
        if p is None:
            continue
        r = a.dim()
        zero_dim_batched |= r == 0
        if r < rank:
            shape = tuple(p.shape)
            p = p.reshape(shape[:1] + (1,) * (rank - r) + shape[1:])
        out[k] = p
    if zero_dim_batched and op.promote != "none":
        _refuse_empty_promotion(op, args, out, level)
        _promote_as_logical(op, args, out, n)
    return out


# the ops whose Python number operand torch wraps into a tensor (their Tensor overload)
_WRAPS_NUMBERS = frozenset(("add", "sub", "mul", "div", "true_divide", "floor_divide"))


def _refuse_empty_promotion(op, args, phys, level):
    """torch's handleScalarTypePromotion: where a batched 0-dim example meets an operand that
    is not one (an unbatched tensor, an example of other rank, a wrapped number), the result
    dtype is found from the batch's first example: an empty batch has none."""
    examples = [k for k in range(op.n_tensors) if _batched(args[k], level)
                and args[k].dim() == 0]
    if phys[examples[0]].shape[0] != 0:
        return
    others = [a for k, a in enumerate(args[:op.n_tensors]) if k not in examples
              and (isinstance(a, Tensor) or op.name in _WRAPS_NUMBERS and a is not None)]
    if others:
        raise IndexError("select(): index 0 out of range for tensor of size [0] at "
                         "dimension 0")


def _promote_as_logical(op, args, out, n):
    """A 0-dim example is a 1-dim physical value, which would promote differently: cast the
    tensors to the dtype the op computes in for the examples."""
    from .._ops.registry import compute_dtype
    stand_ins = list(args)
    for k in range(n):
        a = args[k]
        if isinstance(a, Tensor):
            stand_ins[k] = _wrap(np.zeros((1,) * min(a.dim(), 1), a.dtype.np))
    dt = compute_dtype(op, stand_ins)
    if dt is None:
        return
    for k in range(op.promote_from, n):  # (where's condition takes no part in promotion)
        if isinstance(out[k], Tensor) and out[k].dtype != dt:
            out[k] = out[k].to(dt)


def elementwise(op, args, level):
    held = _only_held_operand(op, args)
    if held is not None:  # torch's unary pointwise rule: the batch stays where it is
        value, bdim = held
        out = op(value, *args[1:])
        if isinstance(out, Tensor):
            return batched_at(out, bdim, level)
        return type(out)(*(batched_at(o, bdim, level) for o in out))
    return wrap(op(*_aligned(op, args, level)), level)


# elementwise ops whose torch rules move the batch first all the same: isfinite is a
# composition of comparisons there, log_sigmoid_forward's rule moves it, and the arithmetic
# ops wrap a number operand into a tensor (their binary rule)
_BATCH_FIRST_IN_TORCH = frozenset(("isfinite", "log_sigmoid", "add", "sub", "mul", "div",
                                   "true_divide", "floor_divide"))


def _only_held_operand(op, args):
    """``(held, bdim)`` where ``self`` is the op's one tensor and torch holds its batch in
    another dimension than the first (see batched_tensor.batched_at), else None."""
    self_ = args[0]
    held = held_as_torch(self_) if type(self_) is BatchedTensor else None
    if held is None or op.name in _BATCH_FIRST_IN_TORCH or any(
            isinstance(a, Tensor) for a in args[1:op.n_tensors]):
        return None
    if op.name == "clone" and getattr(args[1], "name", None) == "contiguous_format":
        return None  # (torch's clone rule: a contiguous copy is laid out batch first)
    return held


for _name in _ELEMENTWISE:
    RULES[_name] = elementwise


# In-place ops that torch runs straight on the physical values: an unbatched self is the
# output of a broadcast with the batched arguments, which TensorIterator refuses
_INPLACE_ON_PHYSICAL_IN_TORCH = frozenset(("add", "atan2", "copysign", "bitwise_and",
                                           "bitwise_or", "bitwise_xor", "gcd", "lcm",
                                           "bitwise_left_shift", "bitwise_right_shift"))


# The in-place ops whose torch batching rules refuse an unbatched self with torch's
# "inplace arithmetic" text (mask: masked_fill_'s batched mask; its batched value falls
# back), and those whose rules name the op; any other op falls back per example in torch,
# which names the aten op and the level
_INPLACE_ARITHMETIC = frozenset(("sub", "mul", "div", "clamp_min", "clamp_max", "copy",
                                 "logical_and", "logical_or", "logical_xor"))
_INPLACE_RULE_NAMED = frozenset(("index_add", "index_fill", "index_put", "scatter_add",
                                 "scatter_reduce", "fill"))


def _inplace_name(op, args, level):
    """How torch's refusal of ``op``'s in-place form names it (see unbatched_write_refusal)."""
    if op.name in _INPLACE_ARITHMETIC or op.name == "masked_fill" and _batched(args[1], level):
        return "inplace arithmetic"
    if op.name in _INPLACE_RULE_NAMED:
        return op.name + "_"
    return op.aten.rstrip("_") + "_"


# the in-place ops whose torch overload taking a tensor operand is named ``.Tensor``
_TENSOR_OVERLOADS = frozenset(("pow", "floor_divide", "float_power", "clamp", "fmod",
                               "remainder", "xlogy", "masked_fill"))


def _overload(op, args):
    """The overload of ``op``'s in-place form that these arguments call, as torch names it."""
    if op.name.rstrip("_") in _TENSOR_OVERLOADS:
        return ".Tensor"
    if op.name == "lerp":
        return ".Tensor" if isinstance(args[op.index["weight"]], Tensor) else ".Scalar"
    if op.name == "scatter" and "reduce" not in op.index:
        return ".src" if op.n_tensors == 3 else ".value"
    return ""


def unbatched_write_refusal(name, level):
    """torch's text for an in-place op ``name`` writing an unbatched self with a batched
    argument: its batching rules' (``inplace arithmetic``, ``index_add_``) or, for an aten
    name, its per-example fallback's (which says at which level)."""
    where = f"at level {torch_level(level)}" if name.startswith("aten::") else "in a vmap"
    return (f"vmap: {name}(self, *extra_args) is not possible because there exists a Tensor "
            "`other` in extra_args that has more elements than `self`. This happened due to "
            f"`other` being vmapped over but `self` not being vmapped over {where}. Please try "
            f"to use out-of-place operators instead of {name}. If said operator is being "
            "called inside the PyTorch framework, please file a bug report instead.")


def _unbatched_output_error(op, args, level):
    """torch's error for ``self.op_(batched)`` with an unbatched ``self``: the batched
    arguments' physical shapes (batch first, examples aligned to the widest) do not fit in
    ``self``'s."""
    n = op.n_tensors
    rank = max(_logical_ndim(a) for a in args[:n] if isinstance(a, Tensor))
    shapes = [tuple(args[0].shape)]
    for a in args[1:n]:
        if _batched(a, level):
            example, batch = tuple(a.shape), ()
            while type(a) is BatchedTensor:  # (the batches of every level, as torch's)
                batch, a = batch + (level_size(a._level),), a._value
            shapes.append(batch + (1,) * (rank - len(example)) + example)
        elif isinstance(a, Tensor):
            shapes.append(tuple(a.shape))
    broadcast = list(np.broadcast_shapes(*shapes))
    return RuntimeError(f"output with shape {list(shapes[0])} doesn't match the broadcast "
                        f"shape {broadcast}")


def inplace_rule(op, args, level):
    """``self.op_(...)`` under vmap: on self's physical value when self is batched; torch's
    error when only another argument is."""
    self_ = args[0]
    if not _batched(self_, level) and op.name in _INPLACE_ON_PHYSICAL_IN_TORCH:
        raise _unbatched_output_error(op, args, level)
    if not _batched(self_, level):
        name = _inplace_name(op, args, level)
        if name.startswith("aten::"):  # (torch's fallback warns before it refuses)
            warn_fallback(name + _overload(op, args))
        raise RuntimeError(unbatched_write_refusal(name, level))
    if op.elementwise or RULES.get(op.name) is elementwise:
        forget_held(self_)
        new = _aligned(op, args, level)
        op.inplace(*new)
        return self_
    forget_held(self_)
    return per_example_inplace(op, args, level)


# -- dimension arguments ------------------------------------------------------------------------
def _shift(dim, ndim):
    """A logical dim of an ``ndim``-dim example as a physical dim."""
    return _wrap_dim(dim, ndim) + 1


def _dims(dims, ndim):
    return tuple(_shift(d, ndim) for d in dims)


def _self_phys(op, args, level):
    args = list(args)
    args[0] = args[0]._value
    return args


def over_0dim_examples(op, args, level):
    """``op`` over dim 0 or -1 (or a list of them) of 0-dim examples, which torch takes as the
    example's one element: the physical ``(B,)`` tensor has no dim for it, so the examples
    become ``(B, 1)``, the op runs over dim 1, and a result that kept that dim drops it (a
    0-dim example gives 0-dim results, keepdim or not, as in torch)."""
    i = op.index["dim"]
    dim = args[i]
    a = _self_phys(op, args, level)
    a[0] = a[0].unsqueeze(1)
    a[i] = _dims(dim, 0) if isinstance(dim, (tuple, list)) else _shift(dim, 0)
    if "keepdim" in op.index:
        a[op.index["keepdim"]] = False
    out = op(*a)
    if isinstance(out, tuple):
        return wrap(tuple(o.squeeze(1) if o.dim() == 2 else o for o in out), level)
    return wrap(out.squeeze(1) if out.dim() == 2 else out, level)


# the ops of dim_rule that torch runs on a 0-dim tensor (dim 0 or -1: its one element)
_SCALAR_DIM_OPS = frozenset(("_softmax", "_log_softmax", "cumsum", "cumprod", "logcumsumexp",
                             "cummax", "cummin", "sort", "argsort", "topk", "kthvalue", "mode"))


# ops whose ``dim`` is one int dimension of self
@rule("_softmax", "_log_softmax", "glu", "cumsum", "cumprod", "logcumsumexp", "cummax",
      "cummin", "sort", "argsort", "topk", "kthvalue", "mode", "narrow_copy", "unbind",
      "split", "split_with_sizes", "unsafe_split", "unsafe_split_with_sizes", "select",
      "slice")
def dim_rule(op, args, level):
    x = args[0]
    if x.dim() == 0 and op.name in _SCALAR_DIM_OPS:
        return over_0dim_examples(op, args, level)
    a = _self_phys(op, args, level)
    a[op.index["dim"]] = _shift(args[op.index["dim"]], x.dim())
    return wrap(op(*a), level)


# reductions: dim None (all of the example), an int, or a tuple of ints
@rule("sum", "mean", "nansum", "amax", "amin", "aminmax", "var", "std", "var_mean", "std_mean",
      "logsumexp", "all", "any", "count_nonzero", "linalg_vector_norm")
def reduce_rule(op, args, level):
    if "dim" not in op.index:
        return full_reduce(op, args, level)
    x = args[0]
    nd = x.dim()
    i = op.index["dim"]
    dim = args[i]
    if nd == 0 and dim is not None and dim != () and dim != []:
        return over_0dim_examples(op, args, level)
    a = _self_phys(op, args, level)
    if dim is None or (isinstance(dim, (tuple, list)) and len(dim) == 0 and op.name not in (
            "sum", "mean", "nansum")):
        dims = tuple(range(1, nd + 1))
    elif isinstance(dim, (tuple, list)):
        dims = _dims(dim, nd)
    else:
        dims = _shift(dim, nd)
    if dims == ():  # a 0-dim example reduces to itself
        a[0] = a[0].unsqueeze(1)
        dims = (1,)
        if "keepdim" in op.index:
            a[op.index["keepdim"]] = False
    a[i] = dims
    return wrap(op(*a), level)


# reductions with one int dim, or None for the whole (flattened) example
@rule("prod", "max", "min", "argmax", "argmin", "median", "nanmedian")
def flat_reduce_rule(op, args, level):
    if "dim" not in op.index:
        return full_reduce(op, args, level)
    x = args[0]
    nd = x.dim()
    i = op.index["dim"]
    if nd == 0 and args[i] is not None:
        return over_0dim_examples(op, args, level)
    a = _self_phys(op, args, level)
    if args[i] is not None:
        a[i] = _shift(args[i], nd)
        return wrap(op(*a), level)
    p = a[0]
    keep = "keepdim" in op.index and args[op.index["keepdim"]]
    a[0] = p.reshape((p.shape[0], -1))
    a[i] = 1
    if "keepdim" in op.index:
        a[op.index["keepdim"]] = False
    if op.name in ("max", "min", "median", "nanmedian"):  # the value only, as without dim
        out = _value_only(op, a)
    else:
        out = op(*a)
    if keep:
        out = out.reshape((out.shape[0],) + (1,) * nd)
    return wrap(out, level)


@rule("trace")
def trace_rule(op, args, level):
    """torch's decomposition under vmap: the sum of the diagonal (SumBackward1 where
    recorded)."""
    x = args[0]
    if x.dim() != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {x.dim()}")
    return x.diagonal().sum()


@rule("dist")
def dist_rule(op, args, level):
    """torch's decomposition under vmap: the p-norm of the difference, by ``at::norm`` over
    each example (NormBackward1 where recorded)."""
    from .._ops.registry import REGISTRY
    diff = args[0] - args[1]
    if not (diff.is_floating_point() or diff.is_complex()):  # dist's own error
        zero = _wrap(np.zeros((), diff.dtype.np))
        op(zero, zero, args[2])
    p = materialize(diff, level)
    if diff.dim() == 0:  # (a 0-dim example: its one element as a dimension)
        p = p.unsqueeze(-1)
    return wrap(REGISTRY["norm"](p, args[2], tuple(range(1, p.dim())), False), level)


def full_reduce(op, args, level):
    """The variant of a reduction without ``dim`` (``x.sum()``): over each flattened example."""
    p = args[0]._value
    name = op.name
    if name in ("sum", "mean", "nansum") and p.dim() > 1:
        # torch's rule reduces the example's dims themselves (SumBackward1 over the input,
        # no view: a gradient that ends in one where torch's does not)
        dtype = args[op.index["dtype"]] if "dtype" in op.index else None
        return wrap(getattr(p, name)(tuple(range(1, p.dim())), dtype=dtype), level)
    # (the example's size written out: -1 is ambiguous in an empty batch)
    flat = p.reshape((p.shape[0], math.prod(p.shape[1:])))
    if name in ("max", "min"):
        return wrap(getattr(flat, "a" + name)(1), level)
    if name in ("median", "nanmedian"):
        return wrap(getattr(flat, name)(1)[0], level)
    dtype = args[op.index["dtype"]] if "dtype" in op.index else None
    return wrap(getattr(flat, name)(1, dtype=dtype), level)


def _value_only(op, a):
    from .._ops.registry import REGISTRY
    if op.name in ("max", "min"):
        return REGISTRY["a" + op.name](a[0], 1, False)
    return op(*a)[0]


@rule("squeeze", "squeeze_")  # (squeeze_: the in-place squeeze torch gives a fresh product)
def squeeze_rule(op, args, level):
    x = args[0]
    shape = tuple(x.shape)
    dim = args[1] if len(args) > 1 else None
    if not shape:
        return _squeeze_0dim_examples(x, dim, level)
    if dim is None:
        dims = tuple(i for i, s in enumerate(shape) if s == 1)
    elif isinstance(dim, (tuple, list)):
        dims = tuple(_wrap_dim(d, len(shape)) for d in dim)
    else:
        dims = (_wrap_dim(dim, len(shape)),)
    p = x._value
    # (as torch's batching rules: squeeze() views the batch without the size-1 dimensions,
    # a squeeze of given dimensions is one squeeze of those dimensions shifted past the batch;
    # SqueezeBackward2 or ViewBackward0 where recorded)
    if dim is None:
        return wrap(p.view((p.shape[0],) + tuple(s for s in shape if s != 1)), level)
    return wrap(p.squeeze(tuple(d + 1 for d in dims)), level)


def _squeeze_0dim_examples(x, dim, level):
    """torch's rule for 0-dim examples: dim 0 (or none) squeezes nothing and aliases the
    examples (AliasBackward0); any other dim is out of range, in its words."""
    from .._ops.registry import REGISTRY
    dims = [] if dim is None else list(dim) if isinstance(dim, (tuple, list)) else [dim]
    if dims not in ([], [0]):
        raise RuntimeError("Dimension is out of range (expected to be in range of [-1, 0], but "
                           f"got {dims}")
    return wrap(REGISTRY["alias"](x._value), level)


@rule("unfold")
def unfold_rule(op, args, level):
    """unfold of the example's ``dimension``, one past the batch. A 0-dim example's one frame:
    torch unfolds the examples as (B, 1) over dim 1 and squeezes that dim away."""
    x, dimension, size, step = args
    if x.dim() == 0:
        return wrap(op(x._value.unsqueeze(1), 1, size, step).squeeze(1), level)
    return wrap(op(x._value, _shift(dimension, x.dim()), size, step), level)


@rule("unsqueeze")
def unsqueeze_rule(op, args, level):
    x = args[0]
    return wrap(op(x._value, _wrap_dim(args[1], x.dim() + 1) + 1), level)


@rule("transpose")
def transpose_rule(op, args, level):
    x = args[0]
    nd = max(x.dim(), 1)
    if x.dim() == 0:
        _wrap_dim(args[1], 1), _wrap_dim(args[2], 1)
        return x
    return wrap(op(x._value, _shift(args[1], nd), _shift(args[2], nd)), level)


@rule("t")
def t_rule(op, args, level):
    x = args[0]
    if x.dim() > 2:
        op(_wrap(np.zeros((1,) * x.dim())))  # torch's error for a >2-D tensor
    if x.dim() < 2:
        return x
    return wrap(x._value.transpose(1, 2), level)


@rule("permute")
def permute_rule(op, args, level):
    x = args[0]
    dims = args[1]
    if len(dims) != x.dim():
        op(_wrap(np.zeros((1,) * x.dim())), dims)  # torch's error
    return wrap(op(x._value, (0,) + _dims(dims, x.dim())), level)


@rule("flip")
def flip_rule(op, args, level):
    x = args[0]
    return wrap(op(x._value, _dims(args[1], x.dim())), level)


@rule("roll")
def roll_rule(op, args, level):
    x, shifts, dims = args[0], args[1], args[2]
    p = x._value
    if dims is None or (isinstance(dims, (tuple, list)) and len(dims) == 0):
        flat = p.reshape((p.shape[0], -1))
        return wrap(op(flat, shifts, (1,)).reshape(tuple(p.shape)), level)
    dims = dims if isinstance(dims, (tuple, list)) else (dims,)
    return wrap(op(p, shifts, _dims(dims, x.dim())), level)


@rule("rot90")
def rot90_rule(op, args, level):
    x = args[0]
    return wrap(op(x._value, args[1], _dims(args[2], x.dim())), level)


@rule("diagonal", "diagonal_copy")
def diagonal_rule(op, args, level):
    x = args[0]
    nd = x.dim()
    return wrap(op(x._value, args[1], _shift(args[2], nd), _shift(args[3], nd)), level)


@rule("diag_embed")
def diag_embed_rule(op, args, level):
    x = args[0]
    nd = x.dim() + 1
    return wrap(op(x._value, args[1], _shift(args[2], nd), _shift(args[3], nd)), level)


# -- shapes -------------------------------------------------------------------------------------
def _batch_shape(x, shape):
    """``shape`` (an example's, maybe with one -1) resolved against ``x``'s example size."""
    shape = tuple(shape)
    if -1 in shape:
        known = 1
        for s in shape:
            if s != -1:
                known *= s
        n = x.numel()
        shape = tuple(n // known if known and s == -1 else s for s in shape)
    return shape


@rule("view", "_unsafe_view", "view_copy")
def view_rule(op, args, level):
    x = args[0]
    p = x._value
    shape = _batch_shape(x, args[1])
    return wrap(op(p, (p.shape[0],) + shape), level)


@rule("_neg_view")
def no_view_rule(op, args, level):
    """torch has no batching rule for ``_neg_view`` and its fallback refuses views: its error."""
    raise no_view_fallback(op.aten)


no_view_rule.batched_refusal = no_view_fallback  # (jacfwd's batched tangents refuse it too)


@rule("unsafe_split_with_sizes", "split_copy")
def no_fallback_rule(op, args, level):
    """torch has no batching rule for these and its fallback does not take their list of
    results: its error (split_with_sizes_copy, unsafe_split have rules)."""
    raise no_fallback("aten::split_copy.Tensor" if op.name == "split_copy" else op.aten)


# torch's *_copy ops under vmap (view_copy is the view's rule with the copy as its op):
@rule("permute_copy", "unsqueeze_copy")
def viewed_copy_rule(op, args, level):
    """torch runs these once per example (its fallback's warning) and views the stacked
    results; here the view's rule with the copy as its op, ended by the same view
    (ViewBackward0 where recorded), so that the examples' gradients are views, as torch's
    batched backward makes them."""
    warn_fallback(op.aten)
    out = RULES[op.name[:-len("_copy")]](op, args, level)._value
    return wrap(out.view(tuple(out.shape)), level)


@rule("alias_copy", "unfold_copy")
def cloned_view_rule(op, args, level):
    """The view, then a clone: torch's decomposition (CloneBackward0 where recorded)."""
    from .._ops.registry import REGISTRY
    view = REGISTRY[op.name[:-len("_copy")]]
    return wrap(RULES[view.name](view, args, level)._value.clone(), level)


@rule("expand")
def expand_rule(op, args, level):
    x = args[0]
    size = tuple(args[1])
    p = x._value
    nd = x.dim()
    if len(size) < nd:
        op(_wrap(np.zeros(tuple(x.shape))), size)  # torch's error
    lead = len(size) - nd
    shape = tuple(p.shape)
    if lead:
        p = p.reshape(shape[:1] + (1,) * lead + shape[1:])
    logical = tuple(p.shape)[1:]
    size = tuple(logical[k] if s == -1 else s for k, s in enumerate(size))
    return wrap(op(p, (shape[0],) + size), level)


@rule("repeat")
def repeat_rule(op, args, level):
    x = args[0]
    repeats = tuple(args[1])
    p = x._value
    lead = len(repeats) - x.dim()
    if lead < 0:
        op(_wrap(np.zeros(tuple(x.shape))), repeats)  # torch's error
    shape = tuple(p.shape)
    if lead:
        p = p.reshape(shape[:1] + (1,) * lead + shape[1:])
    return wrap(op(p, (1,) + repeats), level)


@rule("alias", "tril", "triu", "linalg_inv", "linalg_det", "linalg_slogdet", "linalg_cholesky",
      "cholesky", "linalg_qr", "linalg_eigh", "linalg_svd", "pixel_shuffle", "pixel_unshuffle",
      "view_as_real", "view_as_complex", "fill")
def trailing_rule(op, args, level):
    """Ops on an example's trailing dimensions that take any leading ones: the batch is one
    more leading dimension."""
    if any(_batched(a, level) for a in args[1:op.n_tensors]):
        return per_example(op, args, level)
    return wrap(op(*_self_phys(op, args, level)), level)


@rule("constant_pad_nd")
def pad_rule(op, args, level):
    if len(args[1]) // 2 > args[0].dim():
        return per_example(op, args, level)
    return trailing_rule(op, args, level)


@rule("cat")
def cat_rule(op, args, level):
    n = op.n_tensors
    tensors = args[:n]
    nd = max(t.dim() for t in tensors)
    phys = [materialize(t, level) if t.dim() or nd == 0 else t for t in tensors]
    dim = args[n]
    if nd == 0:
        return wrap(op(*phys, dim), level)  # torch's error for 0-dim tensors
    return wrap(op(*phys, _shift(dim, nd)), level)


@rule("stack")
def stack_rule(op, args, level):
    n = op.n_tensors
    tensors = args[:n]
    phys = [materialize(t, level) for t in tensors]
    return wrap(op(*phys, _shift(args[n], tensors[0].dim() + 1)), level)


# ops whose tensors all have the example's rank: the unbatched ones are expanded
@rule("gather", "scatter_add", "scatter", "scatter_reduce", "take_along_dim", "linalg_cross")
# (and index_add, index_copy, index_fill, index_select: see _indexing_rules.py)
def same_rank_dim_rule(op, args, level):
    x = args[0]
    nd = x.dim()
    if op.name.startswith("index_") and any(_batched(a, level) for a in args[1:2]):
        return per_example(op, args, level)
    if op.name not in ("index_select", "index_add", "index_copy", "index_fill") and any(
            isinstance(t, Tensor) and t.dim() != nd for t in args[1:op.n_tensors]):
        return per_example(op, args, level, warn=False)  # each example gives torch's error
    a = list(args)
    for k in range(op.n_tensors):
        t = args[k]
        if isinstance(t, Tensor) and (op.name not in ("index_select", "index_add",
                                                      "index_copy", "index_fill") or k != 1):
            if t.dim() == nd or _batched(t, level):
                a[k] = materialize(t, level)
    i = op.index["dim"]
    if args[i] is None:  # take_along_dim without dim: over the flattened example
        return per_example(op, args, level)
    a[i] = _shift(args[i], nd)
    return wrap(op(*a), level)


@rule("linalg_solve", "linalg_solve_triangular", "linalg_lstsq", "linalg_pinv")
def materialized_rule(op, args, level):
    """Ops whose batch dimensions broadcast: every tensor expanded to the batch."""
    a = list(args)
    for k in range(op.n_tensors):
        if isinstance(args[k], Tensor):
            a[k] = materialize(args[k], level)
    return wrap(op(*a), level)


# -- indexing -----------------------------------------------------------------------------------
@rule("index")
def index_rule(op, args, level):
    x, key = args[0], args[1]
    key = tuple(key)
    if any(k is Ellipsis for k in key):
        used = sum(1 for k in key if k is not None and k is not Ellipsis)
        i = next(j for j, k in enumerate(key) if k is Ellipsis)
        key = key[:i] + (slice(None),) * (x.dim() - used) + key[i + 1:]
    advanced = [i for i, k in enumerate(key) if isinstance(k, np.ndarray) or (
        isinstance(k, int) and not isinstance(k, bool))]
    arrays = [k for k in key if isinstance(k, np.ndarray)]
    out = op(x._value, (slice(None),) + key)
    if arrays and advanced != list(range(advanced[0], advanced[-1] + 1)):
        # advanced indices apart: NumPy puts their broadcast dims first, before the batch
        nd = len(np.broadcast_shapes(*[np.nonzero(k)[0].shape if k.dtype == bool else k.shape
                                       for k in arrays]))
        out = out.movedim(nd, 0)
    return wrap(out, level)


# -- matrix products ----------------------------------------------------------------------------
@rule("mm")
def mm_rule(op, args, level):
    a, b = args[0], args[1]
    pa, pb = _phys(a, level), _phys(b, level)
    if pa is not None and pb is not None:
        from .._ops.registry import REGISTRY
        return wrap(REGISTRY["bmm"](pa, pb), level)
    if pa is not None:  # (B, n, k) @ (k, m): the batch folded into the rows
        bsz, n, k = tuple(pa.shape)
        if a.shape[1] != b.shape[0]:
            op(_wrap(np.zeros(tuple(a.shape))), _wrap(np.zeros(tuple(b.shape))))
        return wrap(op(pa.reshape((bsz * n, k)), b).reshape((bsz, n, -1)), level)
    bsz, k, m = tuple(pb.shape)  # (n, k) @ (B, k, m): the batch folded into the columns
    if a.shape[1] != k:
        op(_wrap(np.zeros(tuple(a.shape))), _wrap(np.zeros(tuple(b.shape))))
    cols = pb.permute((1, 0, 2)).reshape((k, bsz * m))
    return wrap(op(a, cols).reshape((-1, bsz, m)).permute((1, 0, 2)), level)


@rule("mv")
def mv_rule(op, args, level):
    a, v = args[0], args[1]
    return (a @ v.unsqueeze(-1)).squeeze(-1)


@rule("dot", "vdot")
def dot_rule(op, args, level):
    a, b = args[0], args[1]
    if a.dim() != 1 or b.dim() != 1:
        op(_wrap(np.zeros(tuple(a.shape))), _wrap(np.zeros(tuple(b.shape))))
    if op.name == "vdot":
        a = a.conj()
    return (a * b).sum(-1)


@rule("bmm")
def bmm_rule(op, args, level):
    a, b = args[0], args[1]
    pa, pb = materialize(a, level), materialize(b, level)
    bsz = level_size(level)
    n = tuple(pa.shape)[1]
    out = op(pa.reshape((bsz * n,) + tuple(pa.shape)[2:]),
             pb.reshape((bsz * n,) + tuple(pb.shape)[2:]))
    return wrap(out.reshape((bsz, n) + tuple(out.shape)[1:]), level)


@rule("addmm", "addmv", "baddbmm", "addbmm")
def addmm_rule(op, args, level):
    self_, m1, m2, beta, alpha = args
    prod = m1 @ m2
    if op.name == "addbmm":
        prod = prod.sum(0)
    if alpha != 1:
        prod = prod * alpha
    if beta == 0:  # self is ignored, nan and inf included
        return prod
    return prod + (self_ if beta == 1 else self_ * beta)


@rule("addr")
def addr_rule(op, args, level):
    self_, v1, v2, beta, alpha = args
    if v1.dim() != 1 or v2.dim() != 1:  # torch's errors, from the op itself
        op(*(_wrap(np.zeros(tuple(t.shape))) for t in (self_, v1, v2)))
    prod = (v1 if alpha == 1 else v1 * alpha).unsqueeze(-1) * v2  # (addr's kernel order)
    if beta == 0:  # self is ignored, nan and inf included
        return prod  # (self expands to prod's shape: nothing to broadcast)
    return prod + (self_ if beta == 1 else self_ * beta)


@rule("einsum")
def einsum_rule(op, args, level):
    n = op.n_tensors
    tensors, equation = args[:n], args[n]
    letters = set(equation)
    free = next(c for c in "zyxwvutsrqponmlkjihgfedcbaZYXWVUTSRQPONMLKJIHGFEDCBA"
                if c not in letters)
    inputs, _, output = equation.replace(" ", "").partition("->")
    ins = inputs.split(",")
    if not _:  # the implicit output, made explicit
        output = "".join(sorted(c for c in set(inputs) if c.isalpha() and inputs.count(c) == 1))
        if "..." in inputs:
            output = "..." + output
    operands = []
    for k, (t, sub) in enumerate(zip(tensors, ins)):
        if _batched(t, level):
            sub = free + sub
            t = t._value
        ins[k] = sub
        operands.append(t)
    new = ",".join(ins) + "->" + free + output
    return wrap(op(*operands, new), level)


# -- nn -----------------------------------------------------------------------------------------
def _fold(p, keep):
    """``p`` with its leading dims folded into one, the last ``keep`` dims kept."""
    shape = tuple(p.shape)
    return p.reshape((-1,) + shape[len(shape) - keep:]), shape[:len(shape) - keep]


@rule("convolution")
def convolution_rule(op, args, level):
    x, w, bias = args[0], args[1], args[2]
    spatial = w.dim() - 2
    if _batched(w, level) or _batched(bias, level):
        return _convolution_batched_weight(op, args, level, spatial)
    p = x._value
    folded, lead = _fold(p, spatial + 1)
    out = op(folded, *args[1:])
    return wrap(out.reshape(lead + tuple(out.shape)[1:]), level)


def _convolution_batched_weight(op, args, level, spatial):
    """A batch of weights (an ensemble of models): one grouped convolution, each example's
    input channels convolved with its own weight."""
    x, w, bias = args[0], args[1], args[2]
    stride, padding, dilation, transposed, output_padding, groups = args[3:]
    bsz = level_size(level)
    px = materialize(x, level)
    unbatched = x.dim() == spatial + 1
    if unbatched:
        px = px.unsqueeze(1)
    shape = tuple(px.shape)  # (B, N, C, *spatial)
    px = px.movedim(0, 1).reshape((shape[1], bsz * shape[2]) + shape[3:])
    pw = materialize(w, level)
    wshape = tuple(pw.shape)
    pw = pw.reshape((bsz * wshape[1],) + wshape[2:])
    pb = None if bias is None else materialize(bias, level).reshape((-1,))
    out = op(px, pw, pb, stride, padding, dilation, transposed, output_padding, groups * bsz)
    oshape = tuple(out.shape)
    out = out.reshape((oshape[0], bsz, oshape[1] // bsz) + oshape[2:]).movedim(1, 0)
    if unbatched:
        out = out.squeeze(1)
    return wrap(out, level)


@rule("reflection_pad1d", "reflection_pad2d", "reflection_pad3d", "replication_pad1d",
      "replication_pad2d", "replication_pad3d", "pad_backward")
def gather_pad_rule(op, args, level):
    """Reflect and replicate pads (and their backward) gather along the example's dims,
    which their ``indices`` name: one past the batch in the physical value (and the batch
    prepended to pad_backward's input sizes)."""
    a = list(args)
    i = op.index["indices"]
    p = materialize(args[0], level)
    a[0] = p.view(tuple(p.shape))  # (torch's rules view the input to their own shape)
    a[i] = [(d + 1, idx) for d, idx in args[i]]
    if "input_sizes" in op.index:
        k = op.index["input_sizes"]
        a[k] = (level_size(level),) + tuple(args[k])
    out = op(*a)
    return wrap(out.view(tuple(out.shape)), level)  # (and their result back)


@rule("max_pool2d_with_indices", "avg_pool2d", "adaptive_avg_pool2d", "adaptive_max_pool2d",
      "upsample_nearest1d", "upsample_nearest2d", "upsample_linear1d", "upsample_bilinear2d")
def planes_rule(op, args, level):
    """Ops on each (C, *spatial) plane stack: the batch and the samples folded together."""
    x = args[0]
    if any(_batched(a, level) for a in args[1:op.n_tensors]):
        return per_example(op, args, level)
    spatial = 1 if op.name.endswith("1d") else 3 if op.name.endswith("3d") else 2
    p = x._value
    folded, lead = _fold(p, spatial + 1)
    out = op(folded, *args[1:])
    if isinstance(out, tuple):
        return wrap(tuple(o.reshape(lead + tuple(o.shape)[1:]) for o in out), level)
    return wrap(out.reshape(lead + tuple(out.shape)[1:]), level)


@rule("native_layer_norm")
def layer_norm_rule(op, args, level):
    if any(_batched(a, level) for a in args[1:3]):
        x, w, b, shape, eps = args
        # per-example affine parameters: normalise without them, then scale and shift (the
        # op gives the normalised values only: its statistics are its backward's own)
        out = op(x, None, None, shape, eps)
        if w is not None:
            out = out * w
        if b is not None:
            out = out + b
        return out
    return wrap(op(*_self_phys(op, args, level)), level)


_BATCH_NORM_STATS = (
    "Batch norm got a batched tensor as input while the running_mean or running_var, which "
    "will be updated in place, were not batched.\nIf you are using a module and do not need "
    "eval mode, please set `track_running_stats` to be False.If you are using a prebuilt "
    "module and do not need eval mode, please see the functorch website for resources on how "
    "to patch your module to work with vmap")


@rule("native_batch_norm")
def batch_norm_rule(op, args, level):
    """Training with running statistics shared by the examples: each example would update
    them in turn, so torch refuses (as ember does; per-example statistics run per example)."""
    stats = (args[op.index["running_mean"]], args[op.index["running_var"]])
    if args[op.index["training"]] and _batched(args[0], level) and any(
            s is not None and not _batched(s, level) for s in stats):
        raise RuntimeError(_BATCH_NORM_STATS)
    return per_example(op, args, level)


@rule("native_group_norm")
def group_norm_rule(op, args, level):
    x = args[0]
    if any(_batched(a, level) for a in args[1:3]):
        return per_example(op, args, level)
    p = x._value
    shape = tuple(p.shape)
    out = op(p.reshape((shape[0] * shape[1],) + shape[2:]), *args[1:])
    return wrap(tuple(o.reshape(shape[:2] + tuple(o.shape)[1:]) for o in out), level)


@rule("embedding")
def embedding_rule(op, args, level):
    weight, indices = args[0], args[1]
    if _batched(weight, level):
        return per_example(op, args, level)
    return wrap(op(weight, indices._value, *args[2:]), level)


_REDUCTION = {0: "none", 1: "mean", 2: "sum"}


@rule("mse_loss", "smooth_l1_loss", "huber_loss", "soft_margin_loss",
      "binary_cross_entropy", "binary_cross_entropy_with_logits")
def pointwise_loss_rule(op, args, level):
    """Elementwise losses: 'none' per element, then each example's mean or sum."""
    i = op.index["reduction"]
    reduction = args[i]
    a = list(args)
    a[i] = 0 if isinstance(reduction, int) else "none"
    out = elementwise(op, a, level)
    kind = _REDUCTION.get(reduction, reduction)
    if kind == "mean":
        return out.mean()
    if kind == "sum":
        return out.sum()
    return out


@rule("nll_loss", "nll_loss2d")
def nll_loss_rule(op, args, level):
    x, target, weight, reduction, ignore_index = args
    if _batched(weight, level):
        return per_example(op, args, level)
    px, pt = materialize(x, level), materialize(target, level)
    bsz = level_size(level)
    if x.dim() == 1:  # one sample: a batch of one per example
        px, pt = px.unsqueeze(1), pt.unsqueeze(1)
    folded_x = px.reshape((-1,) + tuple(px.shape)[2:])
    folded_t = pt.reshape((-1,) + tuple(pt.shape)[2:])
    none = 0 if isinstance(reduction, int) else "none"
    losses = op(folded_x, folded_t, weight, none, ignore_index).reshape((bsz, -1))
    kind = _REDUCTION.get(reduction, reduction)
    if kind == "none":
        out = losses.reshape(tuple(pt.shape)) if x.dim() != 1 else losses.reshape((bsz,))
        return wrap(out, level)
    total = losses.sum(1)
    if kind == "sum":
        return wrap(total, level)
    flat_t = folded_t.reshape((bsz, -1))
    valid = flat_t != ignore_index
    if weight is None:
        count = valid.sum(1).to(total.dtype)
    else:
        w = weight[flat_t.clamp(0, weight.shape[0] - 1)]
        count = (w * valid.to(w.dtype)).sum(1)
    return wrap(total / count, level)


# the rules kept in files of their own register themselves on import
from . import _distance_rules, _indexing_rules  # noqa: E402, F401


# -- in-place view ops (t_, transpose_, unsqueeze_, squeeze_) -----------------------------------
def inplace_view(d, args):
    """An in-place view op of an example: the physical value takes the example's new geometry
    in place, its dims one past the batch (None: as_strided_, which keeps its usual path)."""
    self_, rest = args[0], args[1:]
    name, nd, phys = d.view_op.name, self_.dim(), self_._value
    shape = tuple(self_.shape)
    forget_held(self_)
    if name == "t":
        if nd == 2:
            phys.transpose_(1, 2)
        elif nd > 2:
            from .._ops.shape import transposed_2d
            transposed_2d(self_, "t_()")  # (its error for more than two dims)
    elif name == "transpose":
        phys.transpose_(_shift(rest[0], max(nd, 1)), _shift(rest[1], max(nd, 1)))
    elif name == "unsqueeze":
        phys.unsqueeze_(_shift(rest[0], nd + 1))
    elif name == "squeeze":  # (all dims, one, or several)
        dims = range(nd) if not rest else (
            rest[0] if isinstance(rest[0], tuple) else (rest[0],))
        dims = tuple(_shift(k, max(nd, 1)) for k in dims if nd and shape[_wrap_dim(k, nd)] == 1)
        if dims:
            phys.squeeze_(dims)
    else:
        return None
    return self_
