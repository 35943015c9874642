"""Operator schemas: inferred from a function's type hints, parsed from torch's schema strings,
and used to bind a call's arguments as torch's dispatcher does (same error texts).

A schema string reads ``(Tensor x, Tensor(a1!) out, *, SymInt n=3) -> (Tensor, Tensor)``:
types are torch's (``Tensor``, ``SymInt``, ``float``, ``bool``, ``str``, ``Scalar``,
``ScalarType``, ``Device``, with ``?`` for Optional and ``[]`` for lists), ``(a!)`` marks an
argument the operator writes.
"""
from __future__ import annotations

import collections.abc
import inspect
import numbers
import re
import types
import typing
from dataclasses import dataclass

from .. import _dtype as D
from .._tensor import Tensor, device
from ..types import Number

UNKNOWN_MUTATES = "unknown"
_NO_DEFAULT = inspect.Parameter.empty


def _derived(base, name, lists, optional_elements, optional_list):
    """The hints a base type stands for (Optional, Sequence, list...) and their schema types."""
    seqs = (typing.Sequence, typing.List, collections.abc.Sequence, list)  # noqa: UP006
    pairs = [(base, name), (typing.Optional[base], f"{name}?")]  # noqa: UP045
    if lists:
        pairs += [(s[base], f"{name}[]") for s in seqs]
    if optional_elements:
        pairs += [(s[typing.Optional[base]], f"{name}?[]") for s in seqs]  # noqa: UP045
    if optional_list:
        pairs += [(typing.Optional[s[base]], f"{name}[]?") for s in seqs]  # noqa: UP045
    return pairs


PARAM_TYPES = dict(
    _derived(Tensor, "Tensor", True, True, False) + _derived(int, "SymInt", True, False, True)
    + _derived(float, "float", True, False, True) + _derived(bool, "bool", True, False, True)
    + _derived(str, "str", False, False, False) + _derived(Number, "Scalar", True, False, False)
    + _derived(D.dtype, "ScalarType", False, False, False)
    + _derived(device, "Device", False, False, False))
RETURN_TYPES = {Tensor: "Tensor", typing.List[Tensor]: "Tensor[]",  # noqa: UP006
                list[Tensor]: "Tensor[]", int: "SymInt", float: "float", bool: "bool",
                Number: "Scalar"}


@dataclass
class Argument:
    name: str
    type: str  # the schema type without its alias annotation: "Tensor", "SymInt[]?", ...
    default: object = _NO_DEFAULT
    kwarg_only: bool = False
    is_write: bool = False
    alias: str | None = None  # "a", "a1", ... from "Tensor(a1!)"

    def __str__(self):
        text = self.type
        if self.alias is not None:
            mark = "!" if self.is_write else ""
            text = f"Tensor({self.alias}{mark}){self.type[len('Tensor'):]}"
        if self.default is not _NO_DEFAULT:
            return f"{text} {self.name}={_default_text(self.default)}"
        return f"{text} {self.name}" if self.name else text

    @property
    def is_tensor_like(self):
        return self.type.startswith("Tensor")


@dataclass
class FunctionSchema:
    name: str  # "mylib::op" once the operator is defined, "" for an inferred schema
    arguments: list
    returns: list
    returns_tuple: bool = False  # "-> (Tensor)": a one-element tuple, not a lone Tensor

    def __str__(self):
        params, star = [], False
        for a in self.arguments:
            if a.kwarg_only and not star:
                params.append("*")
                star = True
            params.append(str(a))
        return f"{self.name}({', '.join(params)}) -> {self.returns_text()}"

    @property
    def op_name(self):
        """The operator's name without its overload: what call errors name."""
        return self.name.split(".")[0]

    def returns_text(self):
        if len(self.returns) == 1 and not self.returns_tuple:
            return str(self.returns[0])
        return f"({', '.join(str(r) for r in self.returns)})"

    @property
    def is_mutable(self):
        return any(a.is_write for a in self.arguments)

    @property
    def is_view(self):
        """An output aliases an input (``-> Tensor(a)``): such outputs may share memory."""
        return any(r.alias is not None for r in self.returns)

    def mutated(self):
        return [a for a in self.arguments if a.is_write]


def _default_text(value):
    if value is None or isinstance(value, (bool, int, float)):
        return str(value)
    if isinstance(value, (str, device)):
        return f'"{value}"'
    if isinstance(value, D.dtype):
        return str(value).split(".")[-1]
    return repr(value)


# -- inferring a schema from type hints ---------------------------------------------------------
def infer_schema(prototype_function, /, *, mutates_args, op_name: str | None = None) -> str:
    """The schema string of ``prototype_function`` from its type hints (torch's rules)."""
    return str(_infer(prototype_function, mutates_args, op_name or ""))


def _infer(fn, mutates_args, op_name=""):
    sig = inspect.signature(fn)

    def error(what):
        raise ValueError(f"infer_schema(func): {what} Got func with signature {sig})")

    if type(mutates_args) is not str:
        mutates_args = tuple(mutates_args)
    elif mutates_args != UNKNOWN_MUTATES:
        raise ValueError("mutates_args must either be a sequence of the names of the arguments "
                         "that are mutated or the string 'unknown'. ")
    def resolve(hint):
        return _unstringified(hint, fn.__globals__, error)
    arguments = []
    for idx, (name, param) in enumerate(sig.parameters.items()):
        arguments.append(_infer_argument(idx, name, param, resolve, mutates_args, error))
    if mutates_args != UNKNOWN_MUTATES:
        missing = set(mutates_args) - set(sig.parameters)
        if missing:
            error(f"{missing} in mutates_args were not found in the custom op's signature. "
                  "mutates_args should contain the names of all args that the custom op "
                  "mutates, or just the string 'unknown' if you don't know.")
    returns, returns_tuple = _infer_returns(resolve(sig.return_annotation), error)
    return FunctionSchema(op_name, arguments, returns, returns_tuple)


def _unstringified(hint, namespace, error):
    """An annotation with its string parts (``from __future__ import annotations``, or
    ``list["Tensor"]``) evaluated in the function's module ``namespace``, as torch's
    infer_schema evaluates each when it reaches it (a ``typing.Optional["Tensor"]`` keeps its
    ForwardRef, unsupported as in torch)."""
    if isinstance(hint, str):
        try:
            return eval(hint, namespace)  # noqa: S307 - the user's own annotation
        except NameError as e:  # (a name that is not at module scope: torch's hint why)
            error(f"Unsupported type annotation {hint}. It is not a type. ({e}). If you are "
                  "using 'from __future__ import annotations', note that annotations are "
                  "evaluated lazily as strings; make sure all types referenced in annotations "
                  "are importable at module scope, not only inside a local function.")
        except Exception as e:  # noqa: BLE001 - reported as torch reports it
            error(f"Unsupported type annotation {hint}. It is not a type. "
                  f"({type(e).__name__}: {e})")
    origin = typing.get_origin(hint)
    if origin is not None:
        args = typing.get_args(hint)
        resolved = tuple(_unstringified(a, namespace, error) for a in args)
        if any(isinstance(a, str) for a in args):  # (torch rebuilds only what held a string)
            return types.GenericAlias(origin, resolved)
    return hint


def _infer_argument(idx, name, param, resolve, mutates_args, error):
    if param.kind not in (param.POSITIONAL_OR_KEYWORD, param.KEYWORD_ONLY):
        error("We do not support positional-only args, varargs, or varkwargs.")
    if param.annotation is _NO_DEFAULT:
        error(f"Parameter {name} must have a type annotation.")
    hint = resolve(param.annotation)
    schema_type = PARAM_TYPES.get(hint)
    if schema_type is None:
        if typing.get_origin(hint) is tuple:
            as_list = _tuple_to_list(hint)
            example = f"For example, {as_list}.\n\n" if as_list in PARAM_TYPES else "\n\n"
            error(f"Parameter {name} has unsupported type {param.annotation}. We do not support "
                  "Tuple inputs in schema. As a workaround, please try to use List instead. "
                  f"{example}The valid types are: {PARAM_TYPES.keys()}.")
        error(f"Parameter {name} has unsupported type {param.annotation}. "
              f"The valid types are: {PARAM_TYPES.keys()}.")
    mutated = mutates_args == UNKNOWN_MUTATES and schema_type.startswith("Tensor")
    if mutates_args != UNKNOWN_MUTATES and name in mutates_args:
        if not schema_type.startswith("Tensor"):
            error(f"Parameter {name} is in mutable_args but only Tensors or collections of "
                  "Tensors can be mutated")
        mutated = True
    default = param.default
    if not (default is _NO_DEFAULT or default is None
            or isinstance(default, (int, float, bool, str, device, D.dtype))):
        error(f"Parameter {name} has an unsupported default value type {type(default)}. "
              "Please file an issue on GitHub so we can prioritize this.")
    return Argument(name, schema_type, default, param.kind == param.KEYWORD_ONLY, mutated,
                    f"a{idx}" if mutated else None)


def _tuple_to_list(hint):
    items = typing.get_args(hint)
    if not items:
        return list
    if len(items) == 1 or (len(items) == 2 and items[1] is Ellipsis):
        return list[items[0]]
    return list[typing.Union[items]]  # noqa: UP007


def _infer_returns(annotation, error):
    if annotation is None:
        return [], True
    if annotation is _NO_DEFAULT:
        error("No return type annotation was provided. Please add one.")
    if typing.get_origin(annotation) is not tuple:
        if annotation not in RETURN_TYPES:
            error(f"Return has unsupported type {annotation}. "
                  f"The valid types are: {RETURN_TYPES}.")
        return [Argument("", RETURN_TYPES[annotation])], False
    items = typing.get_args(annotation)
    for item in items:
        if item not in RETURN_TYPES:
            error(f"Return has unsupported type {annotation}. "
                  f"The valid types are: {RETURN_TYPES}.")
    return [Argument("", RETURN_TYPES[t]) for t in items], True


# -- parsing a schema string --------------------------------------------------------------------
_ARG = re.compile(r"^(?P<type>Tensor(?:\((?P<alias>\w+)(?P<write>!)?\))?[\w\[\]?]*|[\w\[\]?]+)"
                  r"(?:\s+(?P<name>\w+)(?:\s*=\s*(?P<default>.+))?)?$")
_TYPE_ALIASES = {"int": "SymInt", "int[]": "SymInt[]", "int?": "SymInt?", "int[]?": "SymInt[]?"}


def parse_schema(text: str) -> FunctionSchema:
    """A schema string (``"name(Tensor x) -> Tensor"``, the name optional) as a schema."""
    match = re.fullmatch(r"\s*([\w:.]*)\s*\((.*)\)\s*->\s*(.+?)\s*", text)
    if match is None:
        raise RuntimeError(f"could not parse the schema {text!r}")
    name, params, returns = match.groups()
    arguments, kwarg_only = [], False
    for part in _split(params):
        if part == "*":
            kwarg_only = True
            continue
        arg = _parse_argument(part, text)
        arg.kwarg_only = kwarg_only
        arguments.append(arg)
    returns_tuple = returns.startswith("(")
    items = _split(returns[1:-1]) if returns_tuple else [returns]
    return FunctionSchema(name, arguments, [_parse_argument(r, text) for r in items],
                          returns_tuple)


def _split(text):
    """Comma-separated parts, commas inside brackets kept (``int[2] k=[1, 1]``)."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += ch in "([" and 1 or (ch in ")]" and -1 or 0)
        if ch == "," and depth == 0:
            parts.append(text[start:i].strip())
            start = i + 1
    last = text[start:].strip()
    return parts + [last] if last else parts


def _parse_argument(part, text):
    match = _ARG.match(part.strip())
    if match is None:
        raise RuntimeError(f"could not parse the argument {part!r} of the schema {text!r}")
    schema_type = re.sub(r"\(\w+!?\)", "", match["type"])
    schema_type = re.sub(r"\[\d+\]", "[]", _TYPE_ALIASES.get(schema_type, schema_type))
    default = match["default"]
    return Argument(match["name"] or "", schema_type,
                    _NO_DEFAULT if default is None else _parse_default(default, schema_type),
                    is_write=bool(match["write"]), alias=match["alias"])


def _parse_default(text, schema_type):
    text = text.strip()
    if text == "None":
        return None
    if text in ("True", "False"):
        return text == "True"
    if text.startswith('"') or text.startswith("'"):
        return text[1:-1]
    if text.startswith("["):
        return [_parse_default(t, schema_type.rstrip("[]?")) for t in _split(text[1:-1])]
    if schema_type.startswith("ScalarType"):
        return getattr(D, text)
    try:
        return int(text)
    except ValueError:
        return float(text)


# -- binding a call's arguments -----------------------------------------------------------------
_PYBIND_CAST = ("Unable to cast Python instance of type {} to C++ type '?' (#define "
                "PYBIND11_DETAILED_ERROR_MESSAGES or compile in debug mode for details)")


def bind(schema: FunctionSchema, args, kwargs):
    """The call's arguments as the kernel receives them: every positional parameter (defaults
    filled in) and the keyword-only ones by name; torch's errors for a call that does not fit."""
    positional = [a for a in schema.arguments if not a.kwarg_only]
    given = len(args) + len(kwargs)
    if given > len(schema.arguments):
        raise RuntimeError(f"{schema.op_name}() expected at most {len(schema.arguments)} "
                           f"argument(s) but received {given} argument(s). Declaration: {schema}")
    if len(args) > len(positional):
        raise RuntimeError(f"{schema.op_name}() takes {len(positional)} positional argument(s) but "
                           f"{len(args)} was/were given.  Declaration: {schema}")
    kwargs = dict(kwargs)
    values = list(args)
    for arg in positional[:len(args)]:
        if arg.name in kwargs:
            raise RuntimeError(f"Argument '{arg.name}' specified both as positional and keyword "
                               f"argument. Schema: {schema}")
    keyword = {}
    for arg in schema.arguments[len(args):]:
        if arg.name in kwargs:
            value = kwargs.pop(arg.name)
        elif arg.default is not _NO_DEFAULT:
            value = arg.default
        else:
            raise RuntimeError(f"{schema.op_name}() is missing value for argument '{arg.name}'. "
                               f"Declaration: {schema}")
        if arg.kwarg_only:
            keyword[arg.name] = value
        else:
            values.append(value)
    if kwargs:
        raise RuntimeError(f"Unknown keyword argument '{next(iter(kwargs))}' for operator "
                           f"'{schema.op_name}'. Schema: {schema}")
    for pos, (arg, value) in enumerate(zip(positional, values)):
        values[pos] = _checked(schema, arg, value, pos)
    for pos, arg in enumerate(schema.arguments):
        if arg.kwarg_only:
            keyword[arg.name] = _checked(schema, arg, keyword[arg.name], pos)
    return values, keyword


_SCALARS = {"SymInt": (numbers.Integral,), "float": (numbers.Real,), "bool": (bool,),
            "str": (str,), "Scalar": (numbers.Number,), "ScalarType": (D.dtype,),
            "Device": (device, str, int)}


def _checked(schema, arg, value, pos):
    """``value`` converted for ``arg`` (an int for a float argument becomes a float), or
    torch's error for a value of another type."""
    base = arg.type.rstrip("?")
    if value is None and arg.type.endswith("?"):
        return value
    if base.endswith("]"):
        element = base[:-2].rstrip("?")
        if isinstance(value, (list, tuple)) and all(
                _fits(element, v) or (v is None and base.endswith("?[]")) for v in value):
            return list(value) if arg.is_tensor_like else value
    elif _fits(base, value):
        if base == "float":
            return float(value)
        if base == "SymInt":  # (a NumPy integer or a bool arrives as an int)
            return int(value)
        return device(value) if base == "Device" and not isinstance(value, device) else value
    wanted = base.replace("SymInt", "int")
    details = (f"Unable to cast {value!r} to Tensor" if base == "Tensor"
               else _PYBIND_CAST.format(type(value)))
    raise RuntimeError(f"{schema.op_name}() Expected a value of type '{wanted}' for argument "
                       f"'{arg.name}' but instead found type '{type(value).__name__}'.\n"
                       f"Position: {pos}\nValue: {value!r}\nDeclaration: {schema}\n"
                       f"Cast error details: {details}")


def _fits(base, value):
    if base == "Tensor":
        return isinstance(value, Tensor)
    return isinstance(value, _SCALARS.get(base, object))
