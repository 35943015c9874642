"""Choosing among torch's overloads of a function of two arguments by their types (a tensor or
a Python number on each side, each overload with its own argument names), with torch's
TypeError when none takes the call.

``NO_VALUE`` marks a parameter that was not given: such functions take their two arguments
positionally (``/``) or by the names of any overload (keyword-only), so a call can be told
apart by what was given where, as torch's argument parser does.
"""
from __future__ import annotations

from ._tensor import Tensor

NO_VALUE = object()
_NUMBERS = (int, float, complex, bool)


def _fits(value, kind):
    return isinstance(value, Tensor) if kind == "Tensor" else (
        isinstance(value, _NUMBERS) and not isinstance(value, Tensor))


def choose(fname, overloads, positional, named, extra=""):
    """``(index of the overload, (first, second))`` for a call with ``positional`` values and
    ``named`` keywords (only those given); ``overloads``: ``((type, name), (type, name))``
    pairs, type "Tensor" or "Number"; ``extra``: what each overload's signature adds after
    its two arguments in torch's message (its keyword-only arguments)."""
    positional = [v for v in positional if v is not NO_VALUE]
    for index, pair in enumerate(overloads):
        names = [name for _, name in pair]
        if not set(named) <= set(names[len(positional):]):
            continue
        values = list(positional) + [named.get(n, NO_VALUE) for n in names[len(positional):]]
        if len(values) == 2 and all(_fits(v, kind) for v, (kind, _) in zip(values, pair)):
            return index, tuple(values)
    raise TypeError(_refusal(fname, overloads, positional, named, extra))


def _refusal(fname, overloads, positional, named, extra):
    """torch's message: its listing of the overloads (see _arg_parser.py)."""
    from ._arg_parser import _listing
    texts = ["(" + ", ".join(f"{k} {n}" for k, n in pair) + extra + ")" for pair in overloads]
    return _listing(fname, texts, positional, named)
