"""NumPy arrays given to tensor functions and methods of two operands: torch's TypeErrors.

torch's argument parser takes a tensor or a Python number (a NumPy scalar is one) for these
operands, never an ndarray. A function with a number overload (``eq``, ``pow``, ``remainder``,
``fmod``, ...) says so with its "invalid combination of arguments" message listing its
overloads; one without (``hypot``, ``atan2``, ...) names the argument and its position (from 1
after ``self`` in the method form). ember's functions would get there by other paths (a promotion
of the array, a kernel, or none), so :func:`install` wraps them to refuse first.
"""
from __future__ import annotations

import functools

import numpy as np

from ._tensor import Tensor, typename

_OUT = ", *, Tensor out = None"
_COMPARE = (f"Tensor input, Tensor other{_OUT}", f"Tensor input, Number other{_OUT}")
_NUMBER_FIRST = (f"Tensor input, Tensor other{_OUT}", "Number self, Tensor other",
                 f"Tensor input, Number other{_OUT}")
_POW = (f"Tensor input, Tensor exponent{_OUT}", f"Number self, Tensor exponent{_OUT}",
        f"Tensor input, Number exponent{_OUT}")
_DIVIDE = (f"Tensor input, Tensor other{_OUT}", "Tensor input, Number other")
_XLOGY = (f"Tensor input, Tensor other{_OUT}", f"Number self, Tensor other{_OUT}",
          f"Tensor input, Number other{_OUT}")

POLYNOMIALS = ("chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
               "chebyshev_polynomial_w", "shifted_chebyshev_polynomial_t",
               "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
               "shifted_chebyshev_polynomial_w", "hermite_polynomial_h", "hermite_polynomial_he",
               "laguerre_polynomial_l", "legendre_polynomial_p")
# torch's Python signatures of the functions with a number overload (the methods take the
# second operand of the ``Tensor input`` ones)
OVERLOADS = {
    **dict.fromkeys(("eq", "ne", "lt", "le", "gt", "ge", "greater", "less", "greater_equal",
                     "less_equal", "not_equal", "fmod", "copysign"), _COMPARE),
    **dict.fromkeys(("remainder", "bitwise_and", "bitwise_or", "bitwise_xor",
                     "bitwise_left_shift", "bitwise_right_shift"), _NUMBER_FIRST),
    **dict.fromkeys(("pow", "float_power"), _POW),
    **dict.fromkeys(("true_divide", "floor_divide", "multiply"), _DIVIDE),
    **dict.fromkeys(("clamp", "clip"), (
        f"Tensor input, Tensor min = None, Tensor max = None{_OUT}",
        f"Tensor input, Number min = None, Number max = None{_OUT}")),
    **dict.fromkeys(("xlogy", "special_xlogy", "special_xlog1py", "special_zeta"), _XLOGY),
    **{f"special_{name}": (f"Tensor x, Tensor n{_OUT}", f"Number x, Tensor n{_OUT}",
                           f"Tensor x, Number n{_OUT}") for name in POLYNOMIALS},
    "clamp_min": (f"Tensor input, Tensor min{_OUT}", f"Tensor input, Number min{_OUT}"),
    "clamp_max": (f"Tensor input, Tensor max{_OUT}", f"Tensor input, Number max{_OUT}"),
}
_ROUNDING = "*, str rounding_mode"
_ALPHA = "Number alpha = 1"
OVERLOADS.update({
    "divide": (f"Tensor input, Tensor other{_OUT}",
               f"Tensor input, Tensor other, {_ROUNDING}, Tensor out = None",
               "Tensor input, Number other", f"Tensor input, Number other, {_ROUNDING}"),
    "subtract": (f"Tensor input, Tensor other, *, {_ALPHA}, Tensor out = None",
                 f"Tensor input, Number other, {_ALPHA}"),
    "div": (f"Tensor input, Tensor other{_OUT}",
            f"Tensor input, Tensor other, {_ROUNDING}, Tensor out = None",
            f"Tensor input, Number other, {_ROUNDING}"),
})
# the functions whose parser names the refused argument (as TENSORS_ONLY's) unless given
# keywords: torch.div(x, array) refuses 'other', torch.div(x, array, rounding_mode='floor')
# lists the overloads
_PLAIN_WITHOUT_KEYWORDS = {"div": ("input", "other")}
# the methods whose signatures are not the second operand of the functions' alone
METHOD_OVERLOADS = {
    **dict.fromkeys(("clamp", "clip"), ("Tensor min = None, Tensor max = None",
                                        "Number min = None, Number max = None")),
    "divide": ("Tensor other", f"Tensor other, {_ROUNDING}", "Number other",
               f"Number other, {_ROUNDING}"),
    "subtract": (f"Tensor other, *, {_ALPHA}", f"Number other, {_ALPHA}"),
    "div": ("Tensor other", f"Tensor other, {_ROUNDING}", f"Number other, {_ROUNDING}"),
}
# the functions that take tensors only: their parameters' names
TENSORS_ONLY = {
    **dict.fromkeys(("hypot", "atan2", "arctan2", "fmax", "fmin", "logaddexp", "logaddexp2",
                     "nextafter", "ldexp", "igamma", "igammac", "gcd", "lcm", "logical_and",
                     "logical_or", "logical_xor", "dist", "isclose"), ("input", "other")),
    "heaviside": ("input", "values"),
    "polar": ("abs", "angle"),
    "complex": ("real", "imag"),
}
_NO_METHOD = ("polar", "complex")
# the in-place function forms torch's parser refuses as functions (of ``Tensor input``)
_INPLACE_FUNCTIONS = ("clamp", "clip")


class InvalidCombination(TypeError):
    """Raised by a function whose arguments fit none of its overloads (``clamp(x, x, -2)``):
    the wrapper :func:`refusing_arrays` put around it sees the call as it was made and raises
    torch's TypeError for it instead, its arguments listed as they were passed."""


def refusal(name, args, method=False, kwargs=None):
    """torch's TypeError for ``name`` called with ``args`` (after ``self`` for a method, whose
    name ends in ``_`` when in place) and ``kwargs``, one of which it refuses."""
    base = name.rstrip("_")
    plain = _PLAIN_WITHOUT_KEYWORDS.get(base) if not kwargs else None
    if base in OVERLOADS and plain is None:
        return TypeError(_invalid_combination(name, OVERLOADS[base], args, method, kwargs))
    k = next(k for k, a in enumerate(args[:2]) if isinstance(a, _REFUSED + _NUMBERS))
    param = (plain or TENSORS_ONLY[base])[k + 1 if method else k]
    return TypeError(f"{name}(): argument '{param}' (position {k + 1}) must be Tensor, not "
                     f"{typename(type(args[k]))}")


_REFUSED = (np.ndarray, np.generic)  # (where only a tensor goes; a NumPy scalar is a number)
_NUMBERS = (bool, int, float, complex)


def _invalid_combination(name, signatures, args, method, kwargs=None):
    """torch's format_invalid_args for a function of several overloads: what was given, each
    signature, and for one of as many parameters as arguments given why it did not match."""
    signatures = _forms(name, signatures, method)
    # torch collects the keywords into a std::unordered_map, whose order for a few keys
    # (each in a bucket of its own) is the reverse of the call's
    keys = list(reversed(kwargs or {}))
    lines = [f"{name}() received an invalid combination of arguments - got "
             f"{_given(args, kwargs, keys)}, but expected one of:"]
    for signature in signatures:
        lines.append(f" * ({signature})")
        # (torch splits a parameter at its last space: "Tensor min = None" is named "None"
        # and of no type it knows, so it matches no argument and no keyword; "*" counts)
        params = [p.rpartition(" ")[::2] for p in signature.split(", ")]
        if len(args) + len(keys) != len(params):
            continue  # (torch explains the signatures of as many parameters as given only)
        unmatched = _unmatched_keywords(params, keys)
        if unmatched:
            lines.append("      didn't match because some of the keywords were incorrect: "
                         + ", ".join(unmatched))
            continue
        marked = []
        for i, (kind, param) in enumerate(params):
            value = args[i] if i < len(args) else kwargs[param]
            shown = _kind(value) if i < len(args) else f"{param}={_kind(value)}"
            marked.append(shown if _fits(value, kind) else f"!{shown}!")
        lines.append("      didn't match because some of the arguments have invalid types: "
                     f"({', '.join(marked)})")
    return "\n".join(lines) + "\n"


def _forms(name, signatures, method):
    """The signatures torch's parser lists for ``name``'s function or method form."""
    if method:  # the second operand of each ``Tensor input, ...`` signature, alone
        return METHOD_OVERLOADS.get(name.rstrip("_")) or [
            s.split(", ")[1] for s in signatures if s.startswith("Tensor input")]
    if name.endswith("_"):  # an in-place function form (torch.clamp_) takes no out=
        return [s.replace(_OUT, "") for s in signatures]
    return signatures


def _most_positional(name, method):
    """How many arguments (after ``self``) some overload of ``name`` takes positionally."""
    return max(len(s.split(", *")[0].split(", "))
               for s in _forms(name, OVERLOADS[name.rstrip("_")], method))


def _given(args, kwargs, keys):
    """torch's list of the arguments given: their types, then the keywords' (each followed
    by ", ", which only positional arguments have it drop at the end)."""
    given = "".join(f"{_kind(a)}, " for a in args)
    given += "".join(f"{k}={_kind(kwargs[k])}, " for k in keys)
    return f"({given[:-2] if args else given})"


def _unmatched_keywords(params, keys):
    """The keywords that name none of the last ``len(keys)`` parameters (torch's
    _tryMatchKwargs)."""
    names = {param for _, param in params[max(0, len(params) - len(keys)):]}
    return [k for k in keys if k not in names]


def _kind(value):
    return "Tensor" if isinstance(value, Tensor) else typename(type(value))


def _fits(value, kind):
    if kind == "Tensor":
        return isinstance(value, Tensor)
    if kind == "Number":
        return isinstance(value, (bool, int, float, complex, np.generic))
    return False  # (a parameter with a default: torch's parse reads no type, see above)


def refusing_arrays(fn, name, method=False):
    """``fn`` raising torch's TypeError for an ndarray operand (a NumPy scalar or a Python
    number too where only a tensor goes) before it runs, and taking a NumPy scalar for a number as torch's parser
    reads it (a Python number: ``x.pow(np.float64(2))`` stays float32)."""
    start = 1 if method else 0
    numbers = name.rstrip("_") in OVERLOADS
    # (more positional arguments than any overload takes: torch's parser lists them all)
    most = start + _most_positional(name, method) if numbers else None

    def numpy_operand(args, kwargs):
        convert = False
        for k, value in enumerate(args[start:]):
            if not isinstance(value, _REFUSED + (() if numbers else _NUMBERS)):
                continue
            # (a function of tensors only refuses NumPy values as its two operands; beyond
            # them, as a number overload's, NumPy scalars are numbers)
            if isinstance(value, np.ndarray) if numbers else k < 2:
                raise refusal(name, args[start:], method, kwargs)
            convert = True
        if convert:
            args = tuple(python_number(a) if isinstance(a, np.generic) else a for a in args)
        if kwargs and numbers:
            kwargs = {k: python_number(v) if isinstance(v, np.generic) else v
                      for k, v in kwargs.items()}
        return fn(*args, **kwargs)

    @functools.wraps(fn)
    def call(*args, **kwargs):
        for value in args:  # (the common call pays for these checks only)
            if type(value) is not Tensor and isinstance(value, _REFUSED):
                return numpy_operand(args, kwargs)
        if not numbers and any(isinstance(v, _NUMBERS) for v in args[start:start + 2]):
            raise refusal(name, args[start:], method, kwargs)  # (torch has no number overload)
        if numbers and len(args) > most:
            raise TypeError(_invalid_combination(name, OVERLOADS[name.rstrip("_")],
                                                 args[start:], method, kwargs))
        if kwargs and numbers:
            kwargs = {k: python_number(v) if isinstance(v, np.generic) else v
                      for k, v in kwargs.items()}
        try:
            return fn(*args, **kwargs)
        except InvalidCombination:
            raise refusal(name, args[start:], method, kwargs) from None
    return call


def python_number(value):
    """The Python number torch's parser reads a NumPy scalar as (``np.bool_`` as a float)."""
    return float(value) if isinstance(value, np.bool_) else value.item()


def reading_numbers(operator):
    """Python operator ``operator`` taking a NumPy scalar operand as a Python number (its own
    kernel would compute in the scalar's dtype: ``x ** np.float64(2)`` stays float32)."""
    @functools.wraps(operator)
    def call(self, other):
        if type(other) is not Tensor and isinstance(other, np.generic):
            other = python_number(other)
        return operator(self, other)
    return call


# the operators whose kernels take their number operand as it comes (``__pow__`` reads a
# NumPy scalar itself, after its fast path for Python numbers: see pointwise._pow_operator)
_NUMBER_OPERATORS = ("__ipow__", "__rpow__", "__mod__", "__imod__", "__rmod__")


def refusing_conditions(where):
    """``ember.where`` taking only a tensor condition, as torch's (an ndarray, a Python or
    NumPy bool refused; ember's own formulas call ``where`` with array conditions)."""
    from ._ops.pointwise import _WHERE_OVERLOADS, _where_refusal

    @functools.wraps(where)
    def call(condition, *args, **kwargs):
        given = args + tuple(kwargs[k] for k in ("input", "other") if k in kwargs)
        if len(given) == 1:  # (one of input and other, by position or keyword: no overload)
            signatures = [signature for signature, _ in _WHERE_OVERLOADS]
            raise TypeError(_invalid_combination("where", signatures, (condition, *args), False,
                                                 kwargs))
        input, other = (list(args) + [None, None])[:2]  # noqa: A001 - torch's names
        input = kwargs.pop("input", input)  # noqa: A001
        other = kwargs.pop("other", other)
        if not isinstance(condition, Tensor):
            if input is None and other is None:
                raise TypeError("where(): argument 'condition' (position 1) must be Tensor, "
                                f"not {typename(type(condition))}")
            raise _where_refusal((condition, input, other), _WHERE_OVERLOADS)
        return where(condition, input, other, **kwargs)  # (out= among them)
    return call


def install(namespace):
    """Wrap the functions in ``namespace`` (ember's globals) and the Tensor methods of the
    names above."""
    from ._namespace import inplace_function
    for name in (*OVERLOADS, *TENSORS_ONLY):
        if name in namespace:
            namespace[name] = refusing_arrays(namespace[name], name)
        if name in _INPLACE_FUNCTIONS:  # torch.clamp_(x, ...): x.clamp_'s own function form
            inplace = name + "_"
            namespace[inplace] = refusing_arrays(
                inplace_function(inplace, getattr(Tensor, inplace)), inplace)
        if name in _NO_METHOD:
            continue
        for method in (name, name + "_"):
            fn = getattr(Tensor, method, None)
            if fn is not None:
                setattr(Tensor, method, refusing_arrays(fn, method, True))
    namespace["where"] = refusing_conditions(namespace["where"])
    for name in _NUMBER_OPERATORS:
        setattr(Tensor, name, reading_numbers(getattr(Tensor, name)))
