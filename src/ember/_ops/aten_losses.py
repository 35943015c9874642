"""The losses of the ``torch`` namespace (``torch.kl_div``, ``torch.margin_ranking_loss``...):
torch binds its aten operators there, not ``torch.nn.functional``'s functions, so they take
aten's signatures: ``reduction`` is an int (0 none, 1 mean, 2 sum; any other value keeps the
unreduced loss, as aten's ``apply_loss_reduction``), there are no ``size_average``/``reduce``
flags, and a string reduction is a TypeError from torch's argument parser.

NOTE: aten declares ``reduction=at::Reduction::Mean`` but torch's Python binding reads that
default as 0, so ``torch.kl_div(a, b)`` is unreduced: the defaults here are 0 to match.
Each wrapper runs ``nn.functional``'s loss (whose graph, node names and values are aten's)
or, where ``F`` adds checks of its own before calling aten (margin_ranking_loss's equal
dimensions, triplet_margin_loss's positive margin, binary_cross_entropy_with_logits's equal
shapes), the aten part that ``F`` calls.
"""
from __future__ import annotations

import functools
import inspect
import warnings

from .loss import margin_ranking, triplet_margin
from .nn_ops import checked_bce_with_logits

__all__ = ['binary_cross_entropy_with_logits', 'cosine_embedding_loss', 'ctc_loss',
           'hinge_embedding_loss', 'kl_div', 'margin_ranking_loss', 'poisson_nll_loss',
           'triplet_margin_loss']

_REDUCTION_NAMES = {0: "none", 1: "mean", 2: "sum"}


class _ParserErrors:
    """torch's argument parser's TypeErrors for a function of one signature."""

    @staticmethod
    def missing(function, required, first, args, kwargs):
        # (torch names every required parameter from the first missing one on, given or not,
        # and writes "arguments" for one and "argument" for several)
        names = required[required.index(first):]
        return TypeError(f"{function}() missing {len(names)} required positional argument"
                         f"{'s' if len(names) == 1 else ''}: "
                         + ", ".join(f'"{name}"' for name in names))

    @staticmethod
    def reduction(function, reduction, position, args, kwargs):
        where = "" if position is None else f" (position {position})"
        return TypeError(f"{function}(): argument 'reduction'{where} must be int, not "
                         f"{type(reduction).__name__}")


def _required(loss):
    return [name for name, parameter in inspect.signature(loss).parameters.items()
            if parameter.default is parameter.empty
            and parameter.kind is parameter.POSITIONAL_OR_KEYWORD]


def _int_reduction(position, errors=_ParserErrors):
    """Give the wrapped loss F's reduction name for aten's int (its default 0 included), read
    at ``position`` (1-based, as torch's parser counts) or by keyword; a missing argument or a
    reduction that is not an int raises ``errors``' TypeError, as torch's parser.

    The wrapper's ``schema_form`` is the operator as its schema declares it, mean by default:
    what ``ember.ops.aten.<name>`` runs (``torch.ops.aten.kl_div(a, b)`` is a mean)."""
    def decorate(loss):
        wrapper = _reading_int_reduction(loss, position, errors, _REDUCTION_NAMES[0])
        wrapper.schema_form = _reading_int_reduction(loss, position, errors, _REDUCTION_NAMES[1])
        return wrapper
    return decorate


def _reading_int_reduction(loss, position, errors, default):
    """``loss`` called with an int reduction (see _int_reduction), ``default`` if none."""
    required = _required(loss)

    def name_of(reduction, where, args, kwargs):
        if type(reduction) is not int:
            raise errors.reduction(loss.__name__, reduction, where, args, kwargs)
        return _REDUCTION_NAMES.get(reduction, "none")

    @functools.wraps(loss)
    def wrapper(*args, **kwargs):
        missing = [name for name in required[len(args):] if name not in kwargs]
        if missing:
            raise errors.missing(loss.__name__, required, missing[0], args, kwargs)
        if len(args) >= position:
            named = list(args)
            named[position - 1] = name_of(args[position - 1], position, args, kwargs)
            args = named
        elif "reduction" in kwargs:
            kwargs["reduction"] = name_of(kwargs["reduction"], None, args, kwargs)
        else:
            kwargs["reduction"] = default
        return loss(*args, **kwargs)
    return wrapper


def _functional():
    from ..nn import functional as F  # (imported late: nn imports the ember namespace)
    return F


@_int_reduction(3)
def kl_div(input, target, reduction=0, *, log_target=False):  # noqa: A002
    with warnings.catch_warnings():  # (F's warning about 'mean' is F's, not aten's)
        warnings.simplefilter("ignore")
        return _functional().kl_div(input, target, reduction=reduction, log_target=log_target)


@_int_reduction(5)
def margin_ranking_loss(input1, input2, target, margin=0.0, reduction=0):
    return margin_ranking(input1, input2, target, margin, reduction)


@_int_reduction(4)
def hinge_embedding_loss(input, target, margin=1.0, reduction=0):  # noqa: A002
    return _functional().hinge_embedding_loss(input, target, margin=margin, reduction=reduction)


@_int_reduction(5)
def binary_cross_entropy_with_logits(input, target, weight=None, pos_weight=None,  # noqa: A002
                                     reduction=0):
    return checked_bce_with_logits(input, target, weight, pos_weight, reduction)


@_int_reduction(8)
def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2.0, eps=1e-6, swap=False,
                        reduction=0):
    return triplet_margin(anchor, positive, negative, margin, p, eps, swap, reduction)


@_int_reduction(5)
def cosine_embedding_loss(input1, input2, target, margin=0.0, reduction=0):
    return _functional().cosine_embedding_loss(input1, input2, target, margin=margin,
                                               reduction=reduction)


@_int_reduction(6)
def poisson_nll_loss(input, target, log_input, full, eps, reduction):  # noqa: A002
    return _functional().poisson_nll_loss(input, target, log_input=log_input, full=full,
                                          eps=eps, reduction=reduction)


_CTC_OVERLOADS = "".join(
    f" * (Tensor log_probs, Tensor targets, {lengths} input_lengths, {lengths} target_lengths, "
    "int blank = 0, int reduction = at::Reduction::Mean, bool zero_infinity = False)\n"
    for lengths in ("tuple of ints", "Tensor"))


class _CtcParserErrors:
    """torch's parser error for ctc_loss's two overloads, whatever the mistake: its header,
    naming the types given, and the overloads (the notes it adds on which arguments mismatched
    are not repeated)."""

    @staticmethod
    def reduction(function, reduction, position, args, kwargs):
        from .._tensor import Tensor

        def name(value):
            return "Tensor" if isinstance(value, Tensor) else type(value).__name__
        got = [name(a) for a in args] + [f"{k}={name(v)}" for k, v in kwargs.items()]
        return TypeError(f"{function}() received an invalid combination of arguments - got "
                         f"({', '.join(got)}), but expected one of:\n{_CTC_OVERLOADS}")

    @staticmethod
    def missing(function, required, first, args, kwargs):
        return _CtcParserErrors.reduction(function, None, None, args, kwargs)


@_int_reduction(6, errors=_CtcParserErrors)
def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction=0,
             zero_infinity=False):
    return _functional().ctc_loss(log_probs, targets, input_lengths, target_lengths, blank,
                                  reduction, zero_infinity)
