"""einsum: Einstein summation, computed as torch computes it (so its graph is torch's).

Each operand's dimensions are aligned to one order (output labels, then the summed ones):
repeated labels become diagonals, missing labels new dimensions of size one, then one
permute. Operands are then contracted left to right, each pair by a batched matrix product
of permuted and reshaped operands (or a product when nothing is summed). Being made of ember
ops, einsum needs no derivative of its own; its nodes are torch's (``ViewBackward0`` on top of
a matrix product, ``SumBackward1`` for a reduction, ...).
"""
from __future__ import annotations

__all__ = ['einsum']

import string

import numpy as np

from .._backend import asarray_like
from .._tensor import Tensor, _wrap, typename

_LETTERS = string.ascii_uppercase + string.ascii_lowercase  # torch's sublist numbering
_ELLIPSIS = "..."


def _shape(x):
    return tuple(x.shape)


def _dtype(x):
    return x._data.dtype if isinstance(x, Tensor) else x.dtype


def const(array, like):
    """A constant operand for a formula: a Tensor when ``like`` is one, else the array."""
    data = like._data if isinstance(like, Tensor) else like
    array = asarray_like(array, data, data.dtype)  # (made on the host, copied to like's device)
    return _wrap(array) if isinstance(like, Tensor) else array


# -- contraction ------------------------------------------------------------------------------
def _sum_product(left, right, sum_dims):
    """``(left * right).sum(sum_dims, keepdim=True)`` for aligned operands, as one batched
    matrix product: dimensions are grouped into those of both operands and the output (lro),
    of left and the output (lo), of right and the output (ro) and summed ones."""
    if not sum_dims:
        return left * right
    lro, lo, ro = [], [], []
    lro_size = lo_size = ro_size = sum_size = 1
    for i in range(left.dim()):
        in_left, in_right = left.shape[i] != 1, right.shape[i] != 1
        if i in sum_dims:
            if in_left and in_right:
                sum_size *= left.shape[i]
            elif in_left:
                left = left.sum(i, True)
            elif in_right:
                right = right.sum(i, True)
        elif in_left and in_right:
            lro.append(i)
            lro_size *= left.shape[i]
        elif in_left:
            lo.append(i)
            lo_size *= left.shape[i]
        else:
            ro.append(i)
            ro_size *= right.shape[i]
    if lo and ro and ro[-1] < lo[0]:
        # torch swaps the operands when every right-only dimension comes before every
        # left-only one, so the product's rows are the output's leading dimensions: its
        # result's strides (contiguous for 'ij,jk->ki'), and so which later views are copies
        left, right, lo, ro, lo_size, ro_size = right, left, ro, lo, ro_size, lo_size
    out_size = ([left.shape[d] for d in lro] + [left.shape[d] for d in lo]
                + [1] * len(sum_dims) + [right.shape[d] for d in ro])
    order = lro + lo + list(sum_dims) + ro
    back = [0] * len(order)
    for k, d in enumerate(order):
        back[d] = k
    left = left.permute(order).reshape(lro_size, lo_size, sum_size)
    right = right.permute(lro + list(sum_dims) + ro + lo).reshape(lro_size, sum_size, ro_size)
    return left.bmm(right).view(out_size).permute(back)


def _aligned(x, k, labels, where, n_aligned, ell_at, n_ell, counts):
    """Operand ``k``, ``x`` (its labels, the ellipsis as ``...``) with one dimension per aligned
    position (``where[label]``): diagonals for repeated labels, size-one dimensions for
    missing ones. Counts, per position, the operands not of size one there."""
    perm = [-1] * n_aligned
    dim = 0
    for label in labels:
        if label == _ELLIPSIS:
            covered = x.dim() - (len(labels) - 1)
            for j in range(n_ell - covered, n_ell):
                if x.shape[dim] != 1:
                    counts[ell_at + j] += 1
                perm[ell_at + j] = dim
                dim += 1
        elif perm[where[label]] == -1:
            if x.shape[dim] != 1:
                counts[where[label]] += 1
            perm[where[label]] = dim
            dim += 1
        else:  # a repeated label: its diagonal, where the label first was
            first = perm[where[label]]
            if x.shape[dim] != x.shape[first]:
                raise RuntimeError(f"einsum(): subscript {label} is repeated for operand {k} but "
                                   f"the sizes don't match, {x.shape[dim]} != {x.shape[first]}")
            x = x.diagonal(0, first, dim).movedim(-1, first)
    for k, d in enumerate(perm):
        if d == -1:
            x = x.unsqueeze(dim)
            perm[k] = dim
            dim += 1
    return x.permute(perm)


def _contract(ops, n_out, n_aligned, counts):
    """Contract aligned operands left to right, summing each dimension as soon as no later
    operand has it."""
    n_ops = len(ops)
    while len(ops) > 1:
        a, b = ops.pop(0), ops.pop(0)
        sum_dims, a_sum, b_sum = [], [], []
        for d in range(n_out, n_aligned):
            if a.shape[d] != 1 and b.shape[d] != 1:
                counts[d] -= 1
                if counts[d] == 1:
                    sum_dims.append(d)
                    counts[d] = 0
            elif counts[d] == 1:
                if a.shape[d] != 1:
                    a_sum.append(d)
                    counts[d] = 0
                elif b.shape[d] != 1:
                    b_sum.append(d)
                    counts[d] = 0
        if a_sum:
            a = a.sum(a_sum, True)
        if b_sum:
            b = b.sum(b_sum, True)
        ops.insert(0, _sum_product(a, b, sum_dims))
    result = ops[0]
    if n_aligned > n_out:
        if n_ops > 1:  # the summed dimensions are all of size one by now
            return result.view(list(result.shape)[:n_out])
        return result.sum(list(range(n_out, n_aligned)))
    return result


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
    """(equation, operands) of einsum's two forms, refused as torch's Python einsum refuses
    them and then its parser (the equation, then each operand, where it takes tensors)."""
    if len(args) < 2:
        raise ValueError("einsum(): must specify the equation string and at least one operand, "
                         "or at least one operand and its subscripts list")
    if not isinstance(args[0], Tensor):  # (torch's: anything else is an equation)
        eq, ops = args[0], args[1:]
        if not isinstance(eq, str):
            raise TypeError(f"einsum(): argument 'equation' (position 1) must be str, not "
                            f"{typename(eq)}")
        if len(ops) == 1 and isinstance(ops[0], (list, tuple)):
            ops = tuple(ops[0])
        for k, x in enumerate(ops):
            if not isinstance(x, Tensor):
                raise TypeError(f"expected Tensor as element {k} in argument 1, but got "
                                f"{typename(x)}")
        return eq, list(ops)
    ops, subs = list(args[0::2]), list(args[1::2])
    out = None
    if len(ops) > len(subs):
        out = ops.pop() if not isinstance(ops[-1], Tensor) else None
    eq = ",".join(_sublist(s) for s in subs)
    if out is not None:
        eq += "->" + _sublist(out)
    return eq, ops


def _labels(sub):
    """The labels of one operand's subscripts, ``...`` counting as one."""
    out, k = [], 0
    while k < len(sub):
        if sub.startswith(_ELLIPSIS, k):
            out.append(_ELLIPSIS)
            k += 3
        else:
            out.append(sub[k])
            k += 1
    return out


def _check_counts(labels, ndim, k):
    n = len([c for c in labels if c != _ELLIPSIS])
    if _ELLIPSIS in labels:
        if n > ndim:
            raise RuntimeError(f"einsum(): the number of subscripts in the equation ({n}) is "
                               f"more than the number of dimensions ({ndim}) for operand {k}")
        return ndim - n
    if n != ndim:
        raise RuntimeError(f"einsum(): the number of subscripts in the equation ({n}) does not "
                           f"match the number of dimensions ({ndim}) for operand {k} and no "
                           "ellipsis was given")
    return 0


def _parse(eq, ops):
    """Per operand its labels; each label's aligned position (output labels first, in output
    order, then summed ones in torch's label order); where the ellipsis dimensions start and
    how many there are; the number of output dimensions and of aligned ones."""
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
    labels = [_labels(sub) for sub in subs]
    n_ell = max([_check_counts(lab, x.dim(), k) for k, (lab, x) in enumerate(zip(labels, ops))],
                default=0)
    counts = {}
    for lab in labels:
        for c in lab:
            if c != _ELLIPSIS:
                counts[c] = counts.get(c, 0) + 1
    where, ell_at, pos = {}, None, 0
    if arrow:
        for c in _labels(rhs):
            if c == _ELLIPSIS:
                ell_at, pos = pos, pos + n_ell
                continue
            if c not in counts:
                raise RuntimeError(f"einsum(): output subscript {c} does not appear in the "
                                   "equation for any input operand")
            if c in where:
                raise RuntimeError(f"einsum(): output subscript {c} appears more than once in "
                                   "the output")
            where[c] = pos
            pos += 1
    else:  # the implicit output: the ellipsis, then the labels seen once, in label order
        ell_at, pos = 0, n_ell
        for c in _LETTERS:
            if counts.get(c) == 1:
                where[c] = pos
                pos += 1
    n_out = pos
    if ell_at is None:
        ell_at, pos = pos, pos + n_ell
    for c in _LETTERS:
        if c in counts and c not in where:
            where[c] = pos
            pos += 1
    _check_sizes(labels, ops)
    return labels, where, ell_at, n_ell, n_out, pos


def _check_sizes(labels, ops):
    sizes = {}
    for k, (lab, x) in enumerate(zip(labels, ops)):
        named = [c for c in lab if c != _ELLIPSIS]
        head = lab.index(_ELLIPSIS) if _ELLIPSIS in lab else len(lab)
        dims = list(range(head)) + list(range(x.dim() - (len(named) - head), x.dim()))
        first = {}  # label -> its size where it first is in this operand
        for c, d in zip(named, dims):
            n, seen = x.shape[d], sizes.get(c, 1)
            if c in first:  # a repeated label (a diagonal): checked as torch, before the rest
                if n != first[c]:
                    raise RuntimeError(f"einsum(): subscript {c} is repeated for operand {k} "
                                       f"but the sizes don't match, {n} != {first[c]}")
                continue
            first[c] = n
            if n != 1 and seen != 1 and n != seen:
                raise RuntimeError(f"einsum(): subscript {c} has size {n} for operand {k} "
                                   f"which does not broadcast with previously seen size {seen}")
            if n != 1:
                sizes[c] = n


def einsum(*args):
    """Sum of products of the operands' elements over the indices the equation names."""
    eq, ops = _parse_args(args)
    if not ops:
        raise RuntimeError("einsum(): must provide at least one operand")
    labels, where, ell_at, n_ell, n_out, n_aligned = _parse(eq, ops)
    counts = [0] * n_aligned
    aligned = [_aligned(x, k, lab, where, n_aligned, ell_at, n_ell, counts)
               for k, (x, lab) in enumerate(zip(ops, labels))]
    return _contract(aligned, n_out, n_aligned, counts)
