"""einsum: Einstein summation, contracted pairwise like torch, each pair one primitive.

An equation is first made canonical (ellipses become letters, the implicit output is spelled
out); then operands are contracted left to right, keeping only the letters still needed. The
derivative of a contraction with respect to one operand is itself an einsum of the upstream
gradient with the other operand, so gradients of every order come from the same two ops.
"""
from __future__ import annotations

__all__ = ['einsum']

import string

import numpy as np

from .._backend import asarray_like
from .._tensor import Tensor, _wrap
from .registry import op

_LETTERS = string.ascii_uppercase + string.ascii_lowercase  # torch's sublist numbering


def _shape(x):
    return tuple(x.shape)


def _dtype(x):
    return x._data.dtype if isinstance(x, Tensor) else x.dtype


def const(array, like):
    """A constant operand for a formula: a Tensor when ``like`` is one, else the array."""
    data = like._data if isinstance(like, Tensor) else like
    array = asarray_like(array, data, data.dtype)  # (made on the host, copied to like's device)
    return _wrap(array) if isinstance(like, Tensor) else array


# -- the two primitives ---------------------------------------------------------------------
@op("einsum", node="EinsumBackward0")
def einsum_one(self, equation):
    out = np.einsum(equation, self)
    # NOTE: NumPy returns a view for permutations and diagonals; ember's result owns its data.
    return out.copy() if np.may_share_memory(out, self) else out


@einsum_one.grad("self")
def _(grad, equation, self_shape):
    sub, out = equation.split("->")
    return _operand_grad(grad, out, [], sub, self_shape)


@op("einsum", tensors=2, node="EinsumBackward1")
def einsum_two(self, other, equation):
    return np.einsum(equation, self, other)


@einsum_two.grad("self")
def _(grad, other, equation, self_shape):
    subs, out = equation.split("->")
    sa, sb = subs.split(",")
    return _operand_grad(grad, out, [(other, sb)], sa, self_shape)


@einsum_two.grad("other")
def _(grad, self, equation, other_shape):
    subs, out = equation.split("->")
    sa, sb = subs.split(",")
    return _operand_grad(grad, out, [(self, sa)], sb, other_shape)


def _operand_grad(grad, out, others, target, shape):
    """The gradient for an operand with subscripts ``target``: one einsum.

    Letters of ``target`` found nowhere else are summed in the forward pass, so their
    gradient is broadcast (a ones operand); a repeated letter (a diagonal) gets a delta
    (an identity operand) linking its copies.
    """
    ops, subs = [grad], [out]
    for x, s in others:
        ops.append(x)
        subs.append(s)
    known = set(out).union(*(s for _, s in others))
    fresh = iter(c for c in _LETTERS if c not in known and c not in target)
    result = []
    for pos, letter in enumerate(target):
        n = shape[pos]
        if letter in result:
            new = next(fresh)
            ops.append(const(np.eye(n), grad))
            subs.append(letter + new)
            result.append(new)
            continue
        if letter not in known:
            ops.append(const(np.ones(n), grad))
            subs.append(letter)
            known.add(letter)
        result.append(letter)
    return _contract(ops, subs, "".join(result))


def _contract(operands, subs, out):
    """Contract canonical operands left to right, keeping the letters still needed."""
    if len(operands) == 1:
        return einsum_one(operands[0], f"{subs[0]}->{out}")
    cur, cur_sub = operands[0], subs[0]
    for k in range(1, len(operands)):
        if k == len(operands) - 1:
            keep = out
        else:
            later = set(out).union(*subs[k + 1:])
            keep = "".join(dict.fromkeys(c for c in cur_sub + subs[k] if c in later))
        if set(cur_sub) & set(subs[k]) - set(keep):
            _check_same_dtype(cur, operands[k])
        cur = einsum_two(cur, operands[k], f"{cur_sub},{subs[k]}->{keep}")
        cur_sub = keep
    return cur


def _check_same_dtype(a, b):
    """torch contracts a pair over shared letters with bmm, which takes one dtype (a pair with
    no letter summed is a product, which promotes)."""
    if a.dtype != b.dtype:
        raise RuntimeError(f"expected scalar type {a.dtype.scalar_name} but found "
                           f"{b.dtype.scalar_name}")


# -- parsing ----------------------------------------------------------------------------------
def _sublist(sub):
    out = []
    for s in sub:
        if s is Ellipsis:
            out.append("...")
        elif isinstance(s, int) and 0 <= s < 52:
            out.append(_LETTERS[s])
        else:
            raise RuntimeError("einsum(): expected subscript to be within the range [0, 52), "
                               f"but got {s}")
    return "".join(out)


def _parse_args(args):
    if not args:
        raise TypeError("einsum(): must specify the equation string and at least one operand, "
                        "or at least one operand and its subscripts list")
    if isinstance(args[0], str):
        eq, ops = args[0], args[1:]
        if len(ops) == 1 and isinstance(ops[0], (list, tuple)):
            ops = tuple(ops[0])
        return eq, list(ops)
    ops, subs = list(args[0::2]), list(args[1::2])
    out = None
    if len(ops) > len(subs):
        out = ops.pop() if not isinstance(ops[-1], Tensor) else None
    eq = ",".join(_sublist(s) for s in subs)
    if out is not None:
        eq += "->" + _sublist(out)
    return eq, ops


def _split_ellipsis(sub, ndim, k):
    if "..." in sub:
        head, tail = sub.split("...")
        n_ell = ndim - len(head) - len(tail)
        if n_ell < 0:
            raise RuntimeError(f"einsum(): the number of subscripts in the equation "
                               f"({len(head) + len(tail)}) is more than the number of "
                               f"dimensions ({ndim}) for operand {k}")
        return head, n_ell, tail
    if len(sub) != ndim:
        raise RuntimeError(f"einsum(): the number of subscripts in the equation ({len(sub)}) "
                           f"does not match the number of dimensions ({ndim}) for operand {k} "
                           "and no ellipsis was given")
    return sub, None, ""


def canonical(eq, ops):
    """(input subscripts, output subscripts) with ellipses replaced by fresh letters."""
    eq = eq.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    subs = lhs.split(",")
    if len(subs) > len(ops):
        raise RuntimeError("einsum(): fewer operands were provided than specified in the "
                           "equation")
    if len(subs) < len(ops):
        raise RuntimeError("einsum(): more operands were provided than specified in the "
                           "equation")
    for c in eq:
        if c not in _LETTERS and c not in ",.->":
            raise RuntimeError(f"einsum(): invalid subscript given at index {eq.index(c)} in "
                               f"the equation string, subscripts must be in [a-zA-Z]")
    parts = [_split_ellipsis(s, len(_shape(x)), k) for k, (s, x) in enumerate(zip(subs, ops))]
    n_ell = max((p[1] for p in parts if p[1] is not None), default=0)
    used = set(lhs) | set(rhs)
    ell = "".join([c for c in _LETTERS if c not in used][:n_ell])
    subs = [h + ("" if e is None else ell[n_ell - e:]) + t for h, e, t in parts]
    if arrow:
        head, dots, tail = rhs.partition("...")
        out = head + (ell if dots else "") + tail
        letters = set("".join(subs))
        for c in out:
            if c not in letters:
                raise RuntimeError(f"einsum(): output subscript {c} does not appear in the "
                                   "equation for any input operand")
            if out.count(c) > 1:
                raise RuntimeError(f"einsum(): output subscript {c} appears more than once in "
                                   "the output")
    else:
        counts = "".join(s for s in subs)
        once = sorted(c for c in set(counts) if counts.count(c) == 1 and c not in ell)
        out = ell + "".join(once)
    _check_sizes(subs, ops)
    return subs, out


def _check_sizes(subs, ops):
    sizes = {}
    for k, (s, x) in enumerate(zip(subs, ops)):
        for c, n in zip(s, _shape(x)):
            seen = sizes.get(c, 1)
            if n != 1 and seen != 1 and n != seen:
                raise RuntimeError(f"einsum(): subscript {c} has size {n} for operand {k} "
                                   f"which does not broadcast with previously seen size {seen}")
            sizes[c] = max(seen, n) if n != 1 else seen


def einsum(*args):
    """Sum of products of the operands' elements over the indices the equation names."""
    eq, ops = _parse_args(args)
    subs, out = canonical(eq, ops)
    return _contract(ops, subs, out)
