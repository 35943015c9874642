"""NumPy's names for torch's arguments.

torch's argument parser takes NumPy's keyword names in place of its own for the functions it
binds (``x.sum(axis=1, keepdims=True)``, ``torch.cat(ts, axis=0)``, ``torch.add(x1=a,
x2=b)``); programs written from NumPy habit use them. Python-level torch functions
(``Tensor.norm``, ``nn.functional.softmax``) do not, so neither do ember's.
"""
from __future__ import annotations

import functools
import inspect

NUMPY_KEYWORDS = {"axis": "dim", "keepdims": "keepdim", "x": "input", "a": "input",
                  "x1": "input", "x2": "other"}


def own_keywords(kwargs, params, name):
    """``kwargs`` with each NumPy name that ``params`` lack replaced by torch's own."""
    own = {}
    for k, v in kwargs.items():
        if k not in params and NUMPY_KEYWORDS.get(k) in params:
            k = NUMPY_KEYWORDS[k]
            if k in kwargs or k in own:
                raise TypeError(f"{name}() got multiple values for argument '{k}'")
        own[k] = v
    return own


def _parameters(fn):
    code = getattr(inspect.unwrap(fn), "__code__", None)
    if code is None:
        return frozenset()
    return frozenset(code.co_varnames[:code.co_argcount + code.co_kwonlyargcount])


def numpy_keywords(fn):
    """``fn`` taking NumPy's names for its arguments as well (``fn`` itself when it has none
    of the arguments NumPy names differently)."""
    params = _parameters(fn)
    if params.isdisjoint(NUMPY_KEYWORDS.values()):
        return fn

    @functools.wraps(fn)
    def call(*args, **kwargs):
        if kwargs and not params.issuperset(kwargs):
            kwargs = own_keywords(kwargs, params, fn.__name__)
        return fn(*args, **kwargs)
    return call


def accept_numpy_keywords(owner, names):
    """Replace ``owner``'s functions ``names`` (a module's or a class's) by ones that take
    NumPy's names too. Only the public names change: ember's own calls keep the direct
    function."""
    for name in names:
        fn = owner.__dict__.get(name) if isinstance(owner, type) else getattr(owner, name, None)
        if inspect.isfunction(fn):
            setattr(owner, name, numpy_keywords(fn))
