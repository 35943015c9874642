"""``ember.func.rearrange``: einops-style element reordering (``"b (h w) c -> b c h w"``).

A pattern names every input dimension on its left side (a parenthesized group is one input
dimension split into several axes; ``...`` stands for the dimensions not named; ``1`` or
``()`` is a dimension of size 1) and lists the same axes, in any order and grouping, on the
right. The result is one reshape that splits the groups, one permute and one reshape that
joins the output groups: views where the memory allows, as torch's.
"""
from __future__ import annotations

import functools
import keyword
import math
import warnings

_ELLIPSIS = "\u2026"


class _Side:
    """One side of a pattern: ``groups``, a list whose items are a list of axis names (one
    dimension; an empty list is a dimension of size 1) or the ellipsis marker."""

    def __init__(self, text):
        self.names = set()
        self.groups = []
        self.has_ellipsis = False
        self.ellipsis_in_group = False
        self.numbered = False  # an unnamed axis of a size other than 1
        if "." in text:
            if "..." not in text:
                raise ValueError("Expression may contain dots only inside ellipsis (...)")
            if text.count("...") != 1 or text.count(".") != 3:
                raise ValueError("Expression may contain dots only inside ellipsis (...); "
                                 "only one ellipsis for tensor ")
            text = text.replace("...", _ELLIPSIS)
            self.has_ellipsis = True
        self._parse(text)

    def _parse(self, text):
        group = None
        word = ""
        for char in text + " ":
            if char.isalnum() or char in ("_", _ELLIPSIS):
                word += char
                continue
            if char not in "() ":
                raise ValueError(f"Unknown character '{char}'")
            if word:
                self._add(word, group)
                word = ""
            if char == "(":
                if group is not None:
                    raise ValueError("Axis composition is one-level (brackets inside brackets "
                                     "not allowed)")
                group = []
            elif char == ")":
                if group is None:
                    raise ValueError("Brackets are not balanced")
                self.groups.append(group)
                group = None
        if group is not None:
            raise ValueError(f"Imbalanced parentheses in expression: '{text}'")

    def _add(self, word, group):
        if word in self.names:
            raise ValueError(f"Indexing expression contains duplicate dimension '{word}'")
        if word == _ELLIPSIS:
            self.names.add(word)
            self.ellipsis_in_group = group is not None
            (group if group is not None else self.groups).append(word)
            return
        if word.isdecimal():
            if int(word) == 1:  # a size-1 dimension; inside a group it changes nothing
                if group is None:
                    self.groups.append([])
                return
            if int(word) < 1:
                raise ValueError(f"Anonymous axis should have positive length, not {int(word)}")
            self.numbered = True
            return
        _check_name(word)
        self.names.add(word)
        if group is None:
            self.groups.append([word])
        else:
            group.append(word)


def _check_name(name):
    if not name.isidentifier():
        reason = "not a valid python identifier"
    elif name[0] == "_" or name[-1] == "_":
        reason = "axis name should should not start or end with underscore"
    else:
        if keyword.iskeyword(name):
            warnings.warn(f"It is discouraged to use axes names that are keywords: {name}",
                          RuntimeWarning)
        if name == "axis":
            warnings.warn("It is discouraged to use 'axis' as an axis name and will raise an "
                          "error in future", FutureWarning)
        return
    raise ValueError(f"Invalid axis identifier: {name}\n{reason}")


@functools.lru_cache(256)
def _parse(pattern, lengths):
    try:
        left_text, right_text = pattern.split("->")
    except ValueError:
        raise ValueError("Pattern must contain a single '->' separator") from None
    lengths = dict(lengths)
    if _ELLIPSIS in lengths:
        raise ValueError(f"'{_ELLIPSIS}' is not an allowed axis identifier")
    left, right = _Side(left_text), _Side(right_text)
    if not left.has_ellipsis and right.has_ellipsis:
        raise ValueError(f"Ellipsis found in right side, but not left side of a pattern "
                         f"{pattern}")
    if left.has_ellipsis and left.ellipsis_in_group:
        raise ValueError(f"Ellipsis is parenthesis in the left side is not allowed: {pattern}")
    for length in lengths.values():
        if type(length) is not int:
            raise TypeError(f"rearrange axis lengths must be integers, got: {type(length)}")
    if left.numbered or right.numbered:
        raise ValueError("rearrange only supports unnamed axes of size 1")
    difference = left.names ^ right.names
    if difference:
        raise ValueError("Identifiers only on one side of rearrange expression (should be on "
                         f"both): {difference}")
    unmatched = lengths.keys() - left.names
    if unmatched:
        raise ValueError(f"Identifiers not found in rearrange expression: {unmatched}")
    return left, right


class DimensionBindError(Exception):
    """The input's sizes do not fit the pattern's axes and the given lengths."""


def _pack(names):
    return "(" + ", ".join(names) + ("," if len(names) == 1 else "") + ")"


def _axis_sizes(left, shape, lengths):
    """The size of every left-side axis (the ellipsis: a tuple of sizes; a ``1`` axis: a
    ``("1", i)`` key), from the input's shape and the given lengths (one unknown axis per
    group is inferred). Errors name axis ``i`` (counting from the left) ``d<i>``."""
    n_named = len(left.groups) - (1 if left.has_ellipsis else 0)
    if left.has_ellipsis:
        if n_named > len(shape):
            raise ValueError(f"Number of dimensions in pattern ({n_named}) must be less than or "
                             f"equal to the number of dimensions in the tensor ({len(shape)})")
    elif n_named != len(shape):
        raise ValueError(f"Number of dimensions in pattern ({n_named}) must be equal to the "
                         f"number of dimensions in the tensor ({len(shape)})")
    sizes = {}
    dims = iter(shape)
    n_axes = 0  # axes numbered so far
    for i, group in enumerate(left.groups):
        if group == _ELLIPSIS:
            sizes[_ELLIPSIS] = tuple(next(dims) for _ in range(len(shape) - n_named))
            n_axes += len(sizes[_ELLIPSIS])
            continue
        size = next(dims)
        if not group:  # a '1' axis takes any size: rearrange sums over it
            sizes[("1", i)] = size
            n_axes += 1
            continue
        labels = [f"d{n_axes + k}" for k in range(len(group))]
        n_axes += len(group)
        unknown = [k for k, a in enumerate(group) if a not in lengths]
        known = math.prod(lengths[a] for a in group if a in lengths)
        if len(unknown) > 1:
            raise DimensionBindError(f"cannot infer the sizes of two dimensions at once "
                                     f"{labels[unknown[0]]} and {labels[unknown[1]]}")
        if unknown:
            if known == 0 or size % known:
                shown = tuple(lengths.get(a, "?") for a in group)
                raise DimensionBindError("inferred dimension does not evenly fit into larger "
                                         f"dimension: {size} vs {shown!r}")
            sizes[group[unknown[0]]] = size // known
        elif known != size:
            raise DimensionBindError(f"Dimension sizes to do not match ({size} != {known}) "
                                     f"when matching dimension pack {_pack(labels)}")
        sizes.update((a, lengths[a]) for a in group if a in lengths)
    return sizes


def _left_axes(left):
    """The left side's axes in order: names, the ellipsis marker, ``("1", i)`` for a 1."""
    return [a for i, g in enumerate(left.groups)
            for a in ([_ELLIPSIS] if g == _ELLIPSIS else g if g else [("1", i)])]


def _flat(groups):
    """The axis names of ``groups`` in order (the ellipsis marker as one name)."""
    return [a for g in groups for a in ([_ELLIPSIS] if g == _ELLIPSIS else g)]


def rearrange(tensor, pattern: str, **axes_lengths: int):
    """Reorder, split and join the dimensions of ``tensor`` (or of the stack of a sequence of
    tensors) as the einops ``pattern`` says, e.g. ``rearrange(x, "b (h w) c -> b c h w",
    h=4)``; ``axes_lengths`` give the sizes of split axes."""
    from .. import stack
    from .._tensor import Tensor
    if not isinstance(tensor, Tensor):
        tensor = stack(tensor)
    left, right = _parse(pattern, tuple(sorted(axes_lengths.items())))
    sizes = _axis_sizes(left, tuple(tensor.shape), axes_lengths)
    left_axes = _left_axes(left)
    # the input with every left axis a dimension of its own (the ellipsis: its dimensions)
    split_shape, position = [], {}
    for axis in left_axes:
        if axis == _ELLIPSIS:
            position[axis] = list(range(len(split_shape), len(split_shape)
                                        + len(sizes[_ELLIPSIS])))
            split_shape.extend(sizes[_ELLIPSIS])
        else:
            position[axis] = [len(split_shape)]
            split_shape.append(sizes[axis])
    order = [d for axis in _flat(right.groups) for d in position[axis]]
    out_shape = []
    for group in right.groups:
        if group == _ELLIPSIS:
            out_shape.extend(sizes[_ELLIPSIS])
        else:
            out_shape.append(math.prod(
                math.prod(sizes[_ELLIPSIS]) if a == _ELLIPSIS else sizes[a] for a in group))
    if not split_shape and not out_shape:
        return tensor
    out = tensor.reshape(split_shape) if tuple(split_shape) != tuple(tensor.shape) else tensor
    ones = [position[a][0] for a in left_axes if isinstance(a, tuple)]
    if ones:  # the '1' axes: summed away, as torch's rearrange does
        out = out.sum(ones)
        kept = [d for d in range(len(split_shape)) if d not in ones]
        order = [kept.index(d) for d in order]
    if order != sorted(order):
        out = out.permute(order)
    if tuple(out_shape) != tuple(out.shape):
        out = out.reshape(out_shape)
    if out is tensor and left.names - {_ELLIPSIS}:  # torch's result is a view even so
        out = tensor.view(tensor.shape)
    return out
