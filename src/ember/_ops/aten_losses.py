"""The losses of the ``torch`` namespace (``torch.kl_div``, ``torch.margin_ranking_loss``...):
torch binds its aten operators there, not ``torch.nn.functional``'s functions, so they take
aten's signatures: ``reduction`` is an int (0 none, 1 mean, 2 sum; any other value keeps the
unreduced loss, as aten's ``apply_loss_reduction``), there are no ``size_average``/``reduce``
flags, and a missing or mistyped argument (a string reduction) is the TypeError of torch's
argument parser.

NOTE: aten declares ``reduction=at::Reduction::Mean`` but torch's Python binding reads that
default as 0, so ``torch.kl_div(a, b)`` is unreduced: the defaults here are 0 to match.
Each wrapper runs ``nn.functional``'s loss of loss.py (whose graph, node names and values
are aten's) or, where ``F`` adds checks of its own before calling aten (margin_ranking_loss's equal
dimensions, triplet_margin_loss's positive margin, binary_cross_entropy_with_logits's equal
shapes), the aten part that ``F`` calls.
"""
from __future__ import annotations

import functools
import inspect
import warnings

import numpy as np

from .. import _dtype as D
from .._tensor import Tensor
from . import loss as functional
from .loss import margin_ranking, triplet_margin
from .nn_ops import checked_bce_with_logits

__all__ = ['binary_cross_entropy_with_logits', 'cosine_embedding_loss', 'ctc_loss',
           'hinge_embedding_loss', 'kl_div', 'margin_ranking_loss', 'poisson_nll_loss',
           'triplet_margin_loss']

_REDUCTION_NAMES = {0: "none", 1: "mean", 2: "sum"}


def _type_name(value):
    """The type as torch's parser names it (a C type's name carries its module: numpy's)."""
    kind = type(value)
    return f"numpy.{kind.__name__}" if kind.__module__.startswith("numpy") else kind.__name__


def _is_tensor(value):
    return isinstance(value, Tensor)


def _is_scalar_tensor(value, integral):
    return (isinstance(value, Tensor) and value.ndim == 0
            and (not integral or value.dtype.category < D.FLOATING and value.dtype is not D.bool))


# what torch's parser accepts for each kind of parameter (an annotation of the wrappers below)
_ACCEPTS = {
    "int": lambda v: (isinstance(v, (int, np.integer)) and not isinstance(v, bool)
                      or _is_scalar_tensor(v, True)),
    "float": lambda v: isinstance(v, (int, float, np.number)) or _is_scalar_tensor(v, False),
    "bool": lambda v: isinstance(v, bool),
    "Tensor": lambda v: _is_tensor(v),
    "Tensor | None": lambda v: v is None or _is_tensor(v),
}


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
    def argument(function, name, kind, value, position, args, kwargs):
        where = "" if position is None else f" (position {position})"
        return TypeError(f"{function}(): argument '{name}'{where} must be "
                         f"{kind.split(' | ')[0]}, not {_type_name(value)}")


def _int_reduction(errors=_ParserErrors):
    """The wrapped loss as torch's parser calls it: its arguments checked against their
    annotations (a missing or mistyped one raises ``errors``' TypeError), aten's int
    reduction (0 when left out) given to it as F's name.

    The wrapper's ``schema_form`` is the operator as its schema declares it, mean by default:
    what ``ember.ops.aten.<name>`` runs (``torch.ops.aten.kl_div(a, b)`` is a mean)."""
    def decorate(loss):
        wrapper = _parsing(loss, errors, _REDUCTION_NAMES[0])
        wrapper.schema_form = _parsing(loss, errors, _REDUCTION_NAMES[1])
        return wrapper
    return decorate


def _reduction_name(reduction, default=None):
    """F's name for aten's int (any int but 0, 1, 2 keeps the loss unreduced)."""
    return default if reduction is None else _REDUCTION_NAMES.get(int(reduction), "none")


def _parsing(loss, errors, default):
    """``loss`` called through torch's parser (see _int_reduction), ``default`` if no
    reduction is given."""
    parameters = inspect.signature(loss).parameters
    names = list(parameters)
    kinds = {name: p.annotation for name, p in parameters.items()
             if p.annotation is not p.empty}
    required = [name for name, p in parameters.items()
                if p.default is p.empty and p.kind is p.POSITIONAL_OR_KEYWORD]

    position_of_reduction = names.index("reduction")

    def checked(name, value, position, args, kwargs):
        kind = kinds.get(name)
        if kind is not None and not _ACCEPTS[kind](value):
            raise errors.argument(loss.__name__, name, kind, value, position, args, kwargs)

    @functools.wraps(loss)
    def wrapper(*args, **kwargs):
        missing = [name for name in required[len(args):] if name not in kwargs]
        if missing:
            raise errors.missing(loss.__name__, required, missing[0], args, kwargs)
        bound = dict(zip(names, args))
        for position, (name, value) in enumerate(bound.items(), 1):
            checked(name, value, position, args, kwargs)
        for name, value in kwargs.items():
            checked(name, value, None, args, kwargs)
        if "reduction" in bound:
            args = list(args)
            args[position_of_reduction] = _reduction_name(args[position_of_reduction])
        else:
            kwargs["reduction"] = _reduction_name(kwargs.get("reduction"), default)
        return loss(*args, **kwargs)  # (Python's error for an extra argument, as torch's)
    return wrapper


@_int_reduction()
def kl_div(input: Tensor, target: Tensor, reduction: int = 0, *,  # noqa: A002
           log_target: bool = False):
    with warnings.catch_warnings():  # (F's warning about 'mean' is F's, not aten's)
        warnings.simplefilter("ignore")
        return functional.kl_div(input, target, reduction=reduction, log_target=log_target)


@_int_reduction()
def margin_ranking_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0.0,
                        reduction: int = 0):
    return margin_ranking(input1, input2, target, margin, reduction)


@_int_reduction()
def hinge_embedding_loss(input: Tensor, target: Tensor, margin: float = 1.0,  # noqa: A002
                         reduction: int = 0):
    return functional.hinge_embedding_loss(input, target, margin=margin, reduction=reduction)


@_int_reduction()
def binary_cross_entropy_with_logits(input: Tensor, target: Tensor,  # noqa: A002
                                     weight: Tensor | None = None,
                                     pos_weight: Tensor | None = None, reduction: int = 0):
    return checked_bce_with_logits(input, target, weight, pos_weight, reduction)


@_int_reduction()
def triplet_margin_loss(anchor: Tensor, positive: Tensor, negative: Tensor, margin: float = 1.0,
                        p: float = 2.0, eps: float = 1e-6, swap: bool = False,
                        reduction: int = 0):
    return triplet_margin(anchor, positive, negative, margin, p, eps, swap, reduction)


@_int_reduction()
def cosine_embedding_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0.0,
                          reduction: int = 0):
    return functional.cosine_embedding_loss(input1, input2, target, margin=margin,
                                               reduction=reduction)


@_int_reduction()
def poisson_nll_loss(input: Tensor, target: Tensor, log_input: bool, full: bool,  # noqa: A002
                     eps: float, reduction: int):
    return functional.poisson_nll_loss(input, target, log_input=log_input, full=full,
                                          eps=eps, reduction=reduction)


class _CtcParserErrors:
    """torch's parser error for ctc_loss's two signatures (see _arg_parser.py)."""

    @staticmethod
    def argument(function, name, kind, value, position, args, kwargs):
        from .._arg_parser import parser_error
        from .._parser_signatures import FUNCTIONS
        return parser_error(function, FUNCTIONS[function][0], args, kwargs)

    @staticmethod
    def missing(function, required, first, args, kwargs):
        return _CtcParserErrors.argument(function, None, None, None, None, args, kwargs)


@_int_reduction(errors=_CtcParserErrors)
def ctc_loss(log_probs: Tensor, targets: Tensor, input_lengths, target_lengths, blank: int = 0,
             reduction: int = 0, zero_infinity: bool = False):
    return functional.ctc_loss(log_probs, targets, input_lengths, target_lengths, blank,
                                  reduction, zero_infinity)


# -- the operators ember.ops.aten alone has (torch.ops.aten.l1_loss...) ----------------------
# Their arguments are checked against torch's schema first (aten_namespace.py), so these take
# the schema's: an int reduction, defaults as declared (mean).
def _aten_reduction(name, reduction, other):
    """F's name for aten's int ``reduction``; ``other``: what the kernel does with another
    int (None: it refuses it)."""
    reduction = int(reduction)
    named = _REDUCTION_NAMES.get(reduction, other)
    if named is None:
        raise RuntimeError(f"aten::{name}: reduction {reduction} is not 0 (none), 1 (mean) or "
                           "2 (sum)")
    return named


def _quietly(loss, *args, **kwargs):
    """F's loss without F's own warnings (a target size that broadcasts: aten warns not)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return loss(*args, **kwargs)


def aten_l1_loss(self, target, reduction=1):
    return _quietly(functional.l1_loss, self, target,
                    reduction=_aten_reduction("l1_loss", reduction, "none"))


def aten_smooth_l1_loss(self, target, reduction=1, beta=1.0):
    return functional.smooth_l1_of(self, target,
                                   _aten_reduction("smooth_l1_loss", reduction, None), beta,
                                   l1_at_zero=False)


def aten_huber_loss(self, target, reduction=1, delta=1.0):
    return _quietly(functional.huber_loss, self, target, delta=delta,
                    reduction=_aten_reduction("huber_loss", reduction, "none"))


def aten_nll_loss_nd(self, target, weight=None, reduction=1, ignore_index=-100):
    return functional.nll_loss(self, target, weight, ignore_index=ignore_index,
                               reduction=_aten_reduction("nll_loss_nd", reduction, "sum"))


def aten_nll_loss2d(self, target, weight=None, reduction=1, ignore_index=-100):
    """nll_loss2d itself: a 3-D target and a 4-D input only (nll_loss_nd views the other
    ranks as those)."""
    if target.ndim != 3:
        raise RuntimeError("only batches of spatial targets supported (3D tensors) but got "
                           f"targets of dimension: {target.ndim}")
    if self.ndim != 4:
        raise RuntimeError("only batches of spatial inputs supported (4D tensors), but got "
                           f"input of dimension: {self.ndim}")
    return functional.nll_loss(self, target, weight, ignore_index=ignore_index,
                               reduction=_aten_reduction("nll_loss2d", reduction, "sum"))


def aten_cross_entropy_loss(self, target, weight=None, reduction=1, ignore_index=-100,
                            label_smoothing=0.0):
    """cross_entropy_loss: another int reduction is a sum where the loss is nll_loss's (class
    indices, no smoothing), refused where cross_entropy reduces it itself."""
    reduction = int(reduction)
    if reduction not in _REDUCTION_NAMES and (label_smoothing > 0
                                              or target.dtype.is_floating_point):
        raise RuntimeError(f"Invalid reduction type encountered in cross_entropy: {reduction}")
    return functional.cross_entropy(
        self, target, weight, ignore_index=ignore_index, label_smoothing=label_smoothing,
        reduction=_aten_reduction("cross_entropy_loss", reduction, "sum"))


# {aten name: the operator as ember.ops.aten runs it}
ATEN_FORMS = {"l1_loss": aten_l1_loss, "smooth_l1_loss": aten_smooth_l1_loss,
              "huber_loss": aten_huber_loss, "nll_loss_nd": aten_nll_loss_nd,
              "nll_loss2d": aten_nll_loss2d, "cross_entropy_loss": aten_cross_entropy_loss}
