"""torch's Python argument parser, for its error messages: which TypeError torch raises for a
call that none of a function's signatures takes.

A function's signatures are written as torch prints them (``(Tensor input, int dim, *,
ember.dtype dtype = None)``; see _parser_signatures.py). ember's functions bind their
arguments themselves; when a call fails there, :func:`parser_error` says what torch's parser
would have said: a missing or unexpected argument, one of the wrong type, or, for a function
of several signatures, the listing "received an invalid combination of arguments".

The rules are those of torch's ``FunctionSignature::parse`` (the first failing parameter, in
order), ``PythonArgParser::print_error`` (the one plausible signature's error, else the
listing) and ``format_invalid_args`` (the listing's notes, from torch's own reading of the
printed signatures: a parameter with a default never matches there, so it is marked ``!..!``).
"""
from __future__ import annotations

import functools
import sys
from dataclasses import dataclass

import numpy as np

from . import _dtype as D
from ._numpy_keywords import NUMPY_KEYWORDS
from ._tensor import Tensor
from .overrides import foreign_overloaded, handle_foreign

_NUMPY_NAMES = {}
for _numpy, _own in NUMPY_KEYWORDS.items():
    _NUMPY_NAMES.setdefault(_own, []).append(_numpy)


@dataclass(frozen=True)
class Param:
    name: str
    type: str
    optional: bool
    allow_none: bool
    keyword_only: bool


@dataclass(frozen=True)
class Signature:
    name: str
    text: str  # as torch prints it
    params: tuple

    @property
    def min_args(self):
        return sum(not p.optional for p in self.params)

    @property
    def max_pos_args(self):
        return sum(not p.keyword_only for p in self.params)


def signature(name, text):
    """A :class:`Signature` from torch's printed form; a parameter written ``type name``
    without a default is required (``optional`` marks one torch leaves out of its text)."""
    params, keyword_only = [], False
    body = text[1:-1]
    for part in body.split(", ") if body else ():
        if part == "*":
            keyword_only = True
            continue
        optional = part.endswith("?")
        part = part.rstrip("?")
        declared, _, default = part.partition(" = ")
        kind, _, pname = declared.rpartition(" ")
        params.append(Param(pname, kind, optional or bool(default), default == "None",
                            keyword_only))
    shown = text.replace("?", "")
    return Signature(name, shown, tuple(params))


def _typename(value):
    kind = type(value)
    if kind.__module__.startswith("numpy"):
        return f"numpy.{kind.__name__}"
    return kind.__name__


def _is_int(v):
    if isinstance(v, Tensor):
        return v.ndim == 0 and v.dtype.category < D.FLOATING and v.dtype is not D.bool
    return isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))


def _is_float(v):
    if isinstance(v, Tensor):
        return v.ndim == 0 and not v.requires_grad
    return isinstance(v, (int, float, np.number)) and not isinstance(v, complex)


def _is_number(v):
    if isinstance(v, Tensor):
        return v.ndim == 0 and not v.requires_grad
    return isinstance(v, (int, float, complex, np.number, np.bool_))


# the int lists of a fixed size (``int[1] dim``), which take one int as well: torch prints
# them as any "tuple of ints" (flip's dims, reshape's shape and ctc_loss's lengths take no int)
_SIZED_INT_LISTS = frozenset(("dim", "shifts", "roll.dims"))


def _int_list_failure(v, sized=False):
    """-1 if ``v`` is a tuple or list of ints (or one int, for a list of a fixed size), the
    position of the first element that is not, or None for anything else."""
    if _is_int(v):
        return -1 if sized else None
    if not isinstance(v, (tuple, list)):
        return None
    for k, item in enumerate(v):
        if not _is_int(item):
            return k
    return -1


_CHECKS = {
    "Tensor": lambda v: isinstance(v, Tensor),
    "Number": _is_number,
    "int": _is_int,
    "float": _is_float,
    "bool": lambda v: isinstance(v, (bool, np.bool_)),
    "str": lambda v: isinstance(v, str),
    "ember.dtype": lambda v: isinstance(v, D.dtype),
    # (a sequence: its items are checked as it is read, "expected Tensor as element 1 in
    # argument 0", which ember's functions raise)
    "tuple of Tensors": lambda v: isinstance(v, (tuple, list)),
}


def _sized(sig, param):
    return param.name in _SIZED_INT_LISTS or f"{sig.name}.{param.name}" in _SIZED_INT_LISTS


def _fits(sig, param, value, numbers_as_tensors):
    """Whether torch's parser takes ``value`` for ``param`` (a kind this module does not know
    takes anything: only what it knows is refused)."""
    if param.type == "tuple of ints":
        return _int_list_failure(value, _sized(sig, param)) == -1
    check = _CHECKS.get(param.type)
    if check is None:
        return True
    if param.type == "Tensor" and numbers_as_tensors and _is_number(value):
        return True
    return check(value)


_NO_MATCH = object()


def _parse(sig, args, kwargs, numbers_as_tensors, raising):
    """torch's ``FunctionSignature::parse``: None when ``sig`` takes the call; otherwise its
    TypeError (``raising``) or a mark that it does not."""
    def fail(message):
        return TypeError(message) if raising else _NO_MATCH

    nargs = len(args)
    varargs = (sig.max_pos_args == 1 and sig.params
               and sig.params[0].type == "tuple of ints")
    if nargs > sig.max_pos_args and not varargs:
        return fail(_extra_args(sig, nargs))
    remaining = len(kwargs)
    pos = 0
    for i, param in enumerate(sig.params):
        given, keyword = False, False
        if pos < nargs:
            if param.keyword_only:
                return fail(_extra_args(sig, nargs))
            value, given = args[pos], True
        else:
            keyword = True
            for key in [param.name] + _NUMPY_NAMES.get(param.name, []):
                if key in kwargs:
                    value, given = kwargs[key], True
                    break
        if (not given and param.optional) or (given and value is None and param.allow_none):
            pass
        elif not given:
            return fail(_missing_args(sig, i))
        elif _fits(sig, param, value, numbers_as_tensors):
            pass
        elif varargs and pos == 0 and not keyword and all(_is_int(a) for a in args):
            pos = nargs
            continue
        else:
            return fail(_wrong_type(sig, param, value, None if keyword else pos + 1))
        if not keyword:
            pos += 1
        elif given:
            remaining -= 1
    if remaining > 0:
        return fail(_extra_kwargs(sig, kwargs, nargs))
    return None


def _extra_args(sig, nargs):
    low, high = sig.min_args, sig.max_pos_args
    if low != high:
        return (f"{sig.name}() takes from {low} to {high} positional arguments but {nargs} "
                f"were given")
    return (f"{sig.name}() takes {high} positional argument{'' if high == 1 else 's'} but "
            f"{nargs} {'was' if nargs == 1 else 'were'} given")


def _missing_args(sig, index):
    # (torch's plural: "arguments" for one, "argument" for several)
    names = [f'"{p.name}"' for p in sig.params[index:] if not p.optional]
    return (f"{sig.name}() missing {len(names)} required positional argument"
            f"{'s' if len(names) == 1 else ''}: {', '.join(names)}")


def _wrong_type(sig, param, value, position):
    if position is None:
        return (f"{sig.name}(): argument '{param.name}' must be {param.type}, not "
                f"{_typename(value)}")
    failed = (_int_list_failure(value, _sized(sig, param)) if param.type == "tuple of ints"
              else None)
    if failed is not None and failed >= 0:
        return (f"{sig.name}(): argument '{param.name}' (position {position}) must be "
                f"{param.type}, but found element of type {_typename(value[failed])} at pos "
                f"{failed}")
    return (f"{sig.name}(): argument '{param.name}' (position {position}) must be "
            f"{param.type}, not {_typename(value)}")


def _extra_kwargs(sig, kwargs, nargs):
    names = [p.name for p in sig.params]
    for key in kwargs:
        if key not in names:
            return f"{sig.name}() got an unexpected keyword argument '{key}'"
        if names.index(key) < nargs:
            return f"{sig.name}() got multiple values for argument '{key}'"
    return "invalid keyword arguments"


def parser_error(name, texts, args, kwargs, *, hidden=(), numbers_as_tensors=False):
    """torch's TypeError for ``name(*args, **kwargs)`` given its signatures ``texts`` (as
    torch prints them), or None when one of them takes the call. ``hidden``: the signatures
    torch's parser takes but does not print (deprecated forms, tried last)."""
    sigs = [signature(name, t) for t in texts]
    every = sigs + [signature(name, t) for t in hidden]
    if len(every) == 1:
        return _parse(sigs[0], args, kwargs, numbers_as_tensors, True)
    if any(_parse(sig, args, kwargs, numbers_as_tensors, False) is None for sig in every):
        return None
    n = len(args) + len(kwargs)
    plausible = [s for s in sigs if s.min_args <= n <= len(s.params)]
    if len(plausible) == 1:
        error = _parse(plausible[0], args, kwargs, numbers_as_tensors, True)
        if error is not None:
            return error
    return TypeError(_listing(name, [s.text for s in sigs], args, kwargs))


# -- format_invalid_args: the listing, read back from the printed signatures as torch does ---
def _option(text, kwargs):
    """(arguments as [(name, type)], variadic, has_out, printable) of a printed signature,
    split on ", " as torch's reader splits it ("*" and "int dim = 0" become arguments whose
    names are "*" and "0")."""
    body = text[1:-1]
    arguments = []
    for arg in body.split(", "):
        if arg.startswith("#"):
            arg = arg[1:]
        nullable = arg.startswith("[")
        if nullable:
            arg = arg[1:-len(" or None]")]
        kind, _, pname = arg.rpartition(" ")
        if "..." in arg:
            kind = kind[:-4]
        arguments.append((pname, kind, nullable))
    return arguments, "..." in body, False, text


def _matches_type(kind, nullable, value):
    if nullable and value is None:
        return True
    name = _typename(value) if not isinstance(value, Tensor) else "Tensor"
    if kind == "float":
        return name in ("float", "int", "long")
    if kind == "int":
        return name in ("int", "long")
    return name == kind


def _described(value):
    if isinstance(value, Tensor):
        return "Tensor"
    if isinstance(value, (tuple, list)):
        items = ", ".join("Tensor" if isinstance(v, Tensor) else _typename(v) for v in value)
        if isinstance(value, tuple):
            return f"tuple of ({items}{',' if len(value) == 1 else ''})"
        return f"list of [{items}]"
    return _typename(value)


def _short(value):
    return "Tensor" if isinstance(value, Tensor) else _typename(value)


def _listing(name, texts, args, kwargs):
    # NOTE: torch keeps the keywords in a C++ unordered_map, which lists them last given
    # first
    keywords = list(reversed(kwargs.items()))
    head = f"{name}() received an invalid combination of arguments - "
    if len(texts) == 1:
        arguments, variadic, _, printable = _option(texts[0], kwargs)
        unmatched = _unmatched(arguments, keywords) if kwargs else []
        if unmatched:
            return head + "got unrecognized keyword arguments: " + ", ".join(unmatched)
        got = (_marked(arguments, args, kwargs) if _count_matches(arguments, variadic, args,
                                                                  kwargs)
               else _plain(args, keywords))
        return head + f"got {got}, but expected {printable}"
    lines = [head + f"got {_plain(args, keywords)}, but expected one of:"]
    for text in texts:
        arguments, variadic, _, printable = _option(text, kwargs)
        lines.append(f" * {printable}")
        if not _count_matches(arguments, variadic, args, kwargs):
            continue
        unmatched = _unmatched(arguments, keywords) if kwargs else []
        if unmatched:
            lines.append("      didn't match because some of the keywords were incorrect: "
                         + ", ".join(unmatched))
        else:
            lines.append("      didn't match because some of the arguments have invalid "
                         f"types: {_marked(arguments, args, kwargs)}")
    return "\n".join(lines) + "\n"


def _count_matches(arguments, variadic, args, kwargs):
    n_got = len(args) + len(kwargs)
    return n_got == len(arguments) or (variadic and n_got > len(arguments))


def _unmatched(arguments, keywords):
    names = [a[0] for a in arguments]
    start = max(len(arguments) - len(keywords), 0)
    return [k for k, _ in keywords if k not in names[start:]]


def _joined(words, n_args):
    # (torch drops the last ", " only when there are positional arguments)
    text = "".join(f"{w}, " for w in words)
    return f"({text[:-2] if n_args else text})"


def _plain(args, keywords):
    return _joined([_short(a) for a in args] + [f"{k}={_short(v)}" for k, v in keywords],
                   len(args))


def _marked(arguments, args, kwargs):
    words = []
    for i in range(len(args) + len(kwargs)):
        keyword = i >= len(args)
        value = kwargs[arguments[i][0]] if keyword else args[i]
        kind, nullable = arguments[i][1:] if i < len(arguments) else arguments[-1][1:]
        word = (f"{arguments[i][0]}=" if keyword else "") + _described(value)
        words.append(word if _matches_type(kind, nullable, value) else f"!{word}!")
    return _joined(words, len(args))


# the functions whose Tensor parameters take Python numbers too (torch wraps them; torch's
# should_allow_numbers_as_tensors: not the comparisons, whose "Number other" signatures take a
# number second, and nothing first)
_NUMBERS_AS_TENSORS = frozenset((
    "add", "add_", "sub", "sub_", "mul", "mul_", "div", "div_", "copy_"))


_NOT_TENSORS = frozenset((bool, int, float, complex, str, type(None)))
_NONE = frozenset((type(None),))
# the functions and methods that take more than torch's parser does, so that a call of them
# is parsed before it runs when it has what they take too widely: {name: ((position, the
# types there that have it parsed, None for any), ...)}. A position counts a method's self.
# (copy_'s non_blocking of any type; a number or None for a tensor, the comparisons' number
# first, scatter's None for src; None for a dim, ember's default for "no dim"; a float for an
# int; a tensor for a list of ints)
_PARSED_FIRST = {
    "copy_": ((2, None),),
    **dict.fromkeys(("eq", "ne"), ((0, _NOT_TENSORS), (1, _NONE))),
    **dict.fromkeys(("lt", "le", "gt", "ge", "maximum", "minimum", "bucketize"),
                    ((0, _NOT_TENSORS),)),
    "searchsorted": ((1, _NOT_TENSORS),),
    **dict.fromkeys(("scatter", "scatter_", "index_copy", "index_copy_"), ((3, _NONE),)),
    **dict.fromkeys(("softmax", "log_softmax", "max", "min", "prod"), ((1, _NONE),)),
    "squeeze": ((1, _NONE | {float}),),
    **dict.fromkeys(("tril", "triu", "repeat_interleave"), ((1, {float}),)),
    **dict.fromkeys(("narrow", "renorm"), ((2, {float}),)),
    **dict.fromkeys(("repeat", "tile"), ((1, {Tensor}),)),
}


def refusal(name, args, kwargs, method):
    """torch's parser error for ``name(*args, **kwargs)`` (a Tensor method's, with ``self``
    first in ``args``, when ``method``), or None when its signatures take the call or
    _parser_signatures.py has none for ``name``."""
    from ._parser_signatures import FUNCTIONS, METHODS
    entry = (METHODS if method else FUNCTIONS).get(name)
    if entry is None:
        return None
    texts, hidden = entry
    return parser_error(name, texts, args[1:] if method else args, kwargs, hidden=hidden,
                        numbers_as_tensors=name in _NUMBERS_AS_TENSORS)


def raise_refusal(name, args, kwargs, method):
    """Raise torch's parser error for a call its parser refuses (see refusal); return
    otherwise."""
    error = refusal(name, args, kwargs, method)
    if error is not None:
        try:
            raise error from None
        finally:
            del error  # (see failed_call)


def failed_call(fn, name, args, kwargs, method):
    """In the ``except`` of a failed call of ``fn`` (function or method ``name``): the call
    handed to an argument's ``__torch_function__`` (torch's parser hands the call to it
    first; ember's failed call, having changed nothing, shows it here), else torch's parser
    error where its parser refuses the call, else the error being handled, raised again (a
    method's refused argument counted from 1 after ``self``: see registry.as_method)."""
    foreign = foreign_overloaded(args, kwargs)
    if foreign:
        return handle_foreign(fn, foreign, args, kwargs)
    error = refusal(name, args, kwargs, method)
    if error is None and method:
        from ._ops.registry import as_method
        error = as_method(sys.exc_info()[1], name)
        if error is sys.exc_info()[1]:
            error = None
    if error is None:
        raise  # noqa: PLE0704 - called in an except clause: the error it handles
    try:
        raise error from None
    finally:
        # (this frame is in the error's traceback: holding the error, it would keep the
        # arguments alive until a collection, where a gradient's refcount matters)
        del error


def _parsed(fn, name, method):
    """``fn`` raising torch's parser error, where torch's parser refuses the call, in place of
    whatever ember's own binding or checks raise for it (a successful call pays one frame and
    no parsing: only a failed call is read against the signatures, but for the functions of
    _PARSED_FIRST)."""
    if name in _PARSED_FIRST:
        return _parsed_first(fn, name, method)

    @functools.wraps(fn)
    def call(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except Exception:
            return failed_call(call, name, args, kwargs, method)
    return call


def _parsed_first(fn, name, method):
    """_parsed's ``fn``, parsed first when a call has, at a position _PARSED_FIRST names, a
    value of a type that ``fn`` takes too widely (or, for copy_, any keyword)."""
    places = _PARSED_FIRST[name]
    keywords = any(suspects is None for _, suspects in places)

    @functools.wraps(fn)
    def call(*args, **kwargs):
        for position, suspects in places:
            if (len(args) > position and (suspects is None or type(args[position]) in suspects)
                    or kwargs and keywords):
                error = refusal(name, args, kwargs, method)
                if error is not None:
                    raise error
                break
        try:
            return fn(*args, **kwargs)
        except Exception:
            return failed_call(call, name, args, kwargs, method)
    return call


def install(module_globals):
    """The torch-namespace functions of _parser_signatures.py, raising torch's parser errors."""
    from ._parser_signatures import FUNCTIONS
    for name in FUNCTIONS:
        fn = module_globals.get(name)
        if callable(fn):
            module_globals[name] = _parsed(fn, name, method=False)


def install_methods(cls):
    """The Tensor methods of _parser_signatures.py, raising torch's parser errors (the methods
    the registry makes, marked ``parses_on_failure``, read the table in their own failure
    path: they are left as they are, at no cost to a call that succeeds, but for those of
    _PARSED_FIRST)."""
    from ._parser_signatures import METHODS
    for name in METHODS:
        fn = cls.__dict__.get(name)
        if callable(fn) and (name in _PARSED_FIRST
                             or not getattr(fn, "parses_on_failure", False)):
            setattr(cls, name, _parsed(fn, name, method=True))


# -- torch.ops: an operator's schema matched as torch's JIT matches Python arguments ------------
def _schema_arguments(schema):
    """[(name, type, default or None, keyword_only)] of a schema string."""
    inside = schema[schema.index("(") + 1:schema.rindex(") ->")]
    out, keyword_only = [], False
    for part in (p.strip() for p in inside.split(", ")) if inside else ():
        if part == "*":
            keyword_only = True
            continue
        declared, _, default = part.partition("=")
        kind, _, name = declared.rpartition(" ")
        out.append((name, kind.split("(")[0], default or None, keyword_only))
    return out


def _schema_type_fits(kind, value):
    if kind.endswith("?"):
        return value is None or _schema_type_fits(kind[:-1], value)
    if kind == "Tensor":
        return isinstance(value, Tensor)
    if kind in ("int", "SymInt"):
        return isinstance(value, (int, np.integer))
    if kind == "float":
        return isinstance(value, (int, float, np.integer, np.floating))
    if kind == "bool":
        return isinstance(value, (bool, np.bool_))
    if kind == "Scalar":
        return isinstance(value, (int, float, complex, np.number)) or (
            isinstance(value, Tensor) and value.ndim == 0)
    if kind in ("int[]", "SymInt[]") or kind.startswith(("int[", "SymInt[")):
        return isinstance(value, (tuple, list)) and all(_is_int(v) for v in value)
    return True  # (a kind not checked here)


def _cast_details(kind, value):
    if kind.rstrip("?") == "Tensor":
        return f"Unable to cast {value!r} to Tensor"
    return (f"Unable to cast Python instance of type {type(value)!r} to C++ type '?' (#define "
            "PYBIND11_DETAILED_ERROR_MESSAGES or compile in debug mode for details)")


def schema_error(schema, args, kwargs):
    """The error torch's JIT gives matching ``args``/``kwargs`` to one operator ``schema``
    (``aten::mse_loss(Tensor self, Tensor target, int reduction=1) -> Tensor``), or None
    when they match."""
    name = schema[:schema.index("(")].split(".")[0]
    arguments = _schema_arguments(schema)
    n_given = len(args) + len(kwargs)
    if n_given > len(arguments):
        return (f"{name}() expected at most {len(arguments)} argument(s) but received "
                f"{n_given} argument(s). Declaration: {schema}")
    positional = sum(not kw for *_, kw in arguments)
    if len(args) > positional:
        return (f"{name}() takes {positional} positional argument(s) but {len(args)} "
                f"was/were given.  Declaration: {schema}")
    used = 0
    for position, (pname, kind, default, _) in enumerate(arguments):
        if position < len(args):
            value = args[position]
        elif pname in kwargs:
            value = kwargs[pname]
            used += 1
        elif default is not None:
            continue
        else:
            return f"{name}() is missing value for argument '{pname}'. Declaration: {schema}"
        if not _schema_type_fits(kind, value):
            shown = "int" if kind.rstrip("?") == "SymInt" else kind
            return (f"{name}() Expected a value of type '{shown}' for argument '{pname}' but "
                    f"instead found type '{type(value).__name__}'.\nPosition: {position}\n"
                    f"Value: {value!r}\nDeclaration: {schema}\nCast error details: "
                    f"{_cast_details(kind, value)}")
    if used < len(kwargs):
        names = [a[0] for a in arguments]
        unknown = next(k for k in kwargs if k not in names)
        return (f"Unknown keyword argument '{unknown}' for operator '{name}'. Schema: "
                f"{schema}")
    return None


def overloads_error(schemas, args, kwargs):
    """torch's RuntimeError for a call of an operator packet (every overload tried) that no
    overload's schema takes, or None."""
    errors = [schema_error(s, args, kwargs) for s in schemas]
    if any(e is None for e in errors):
        return None
    if len(errors) == 1:
        return RuntimeError(errors[0])
    return RuntimeError("Overloaded torch operator invoked from Python failed to match any "
                        "schema:\n" + "".join(e + "\n\n" for e in errors))
