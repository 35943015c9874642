"""torch's deprecated scalar-first overloads: the methods ``x.add_(alpha, other)``,
``x.sub(alpha, other)``, ``x.addcmul_(value, tensor1, tensor2)``, ``x.addcdiv(value, ...)``,
``x.addmm(beta, mat1, mat2)`` and ``x.addmm(beta, alpha, mat1, mat2)`` (and so ``addmv``,
``addr``, ``addbmm``, ``baddbmm``), and the functions ``torch.add(x, alpha, other)``,
``torch.sub``, ``torch.addcmul(x, value, tensor1, tensor2)``, ``torch.addcdiv``.

Programs written for old torch versions still call them (``p.data.add_(-lr, p.grad.data)``),
and torch still runs them, warning once per process (one warning for all of these
overloads) with its message naming the overload and the signature to use instead. The
current signatures take the scalars as keywords only, so more positional arguments than the
operands, not in a deprecated form (``x.add(y, 2)``, ``torch.add(x, y, 2)``), raise torch's
TypeError.

NOTE: the methods of add, sub, addcmul and addcdiv bind their arguments here (see
registry._as_method's ``bind``), and only a call with more positional arguments than the
current signature takes looks further: the usual call (``x.add(y)``, ``p.add_(g,
alpha=-lr)``) costs no check and no call more than any op's method. The matrix products'
methods and the public functions check their positional arguments, then call the op
(ember's own code calls the op itself).
"""
import functools
import numbers
import warnings

import numpy as np

from .._tensor import Tensor
from .binary import addcmul, addcdiv
from .inplace import _user_stacklevel, inplace_method
from .pointwise import add, sub
from .registry import _as_method, _parser_typename

# op -> (its tensor operands besides self in the current signature, the scalar's name)
_OVERLOADS = {add: (("other",), "alpha"), sub: (("other",), "alpha"),
              addcmul: (("tensor1", "tensor2"), "value"),
              addcdiv: (("tensor1", "tensor2"), "value")}
# the matrix products' methods: beta first, or beta and alpha (a Tensor method of each)
_BETA_ALPHA = ("beta", "alpha")
_PRODUCTS = {"addmm": ("mat1", "mat2"), "addmv": ("mat", "vec"), "addr": ("vec1", "vec2"),
             "addbmm": ("batch1", "batch2"), "baddbmm": ("batch1", "batch2")}
# the functions: those torch keeps a deprecated form of, and those that only refuse extra
# positional arguments
_FUNCTION_FORMS = {"add": (("other",), ("alpha",)), "sub": (("other",), ("alpha",)),
                   "addcmul": (("tensor1", "tensor2"), ("value",)),
                   "addcdiv": (("tensor1", "tensor2"), ("value",)),
                   "addmv": (("mat", "vec"), ()), "addr": (("vec1", "vec2"), ()),
                   "addbmm": (("batch1", "batch2"), ())}
_warned = [False]  # torch's warning is one TORCH_WARN_ONCE for every deprecated overload


def _is_scalar(x):
    """What torch's parser reads as a Number: a Python or NumPy number, or a 0-d tensor."""
    if isinstance(x, Tensor):
        return x.dim() == 0
    return isinstance(x, (numbers.Number, np.generic))


def _scalar_value(x):
    return x.item() if isinstance(x, Tensor) else x


def _signatures(name, operands, scalars, used, function=False):
    """torch's deprecated signature of ``name`` with the scalars ``used`` first, and the
    current one (a function's with its input and ``out``)."""
    tensors = ", ".join(f"Tensor {o}" for o in operands)
    keywords = ", ".join(f"Number {s} = 1" for s in scalars)
    head, out = ("Tensor input, ", ", Tensor out = None") if function else ("", "")
    old = ", ".join([f"Number {s}" for s in used] + [tensors])
    return (f"{name}({head}{old}{', *' + out if out else ''})",
            f"{name}({head}{tensors}, *, {keywords}{out})")


def _warn_once(old, new):
    if _warned[0]:
        return
    _warned[0] = True
    warnings.warn(f"This overload of {old.partition('(')[0]} is deprecated:\n\t{old}\n"
                  f"Consider using one of the following signatures instead:\n\t{new}",
                  UserWarning, stacklevel=_user_stacklevel())


def _too_many(name, n, given):
    return TypeError(f"{name}() takes {n} positional argument{'s' if n > 1 else ''} but "
                     f"{given} were given")


def _invalid_combination(name, operands, scalars, args):
    """torch's message for more positional arguments than any form takes: those that do not
    fit the current signature marked."""
    got = ", ".join(
        f"!{type(a).__name__}!" if i >= len(operands) or not isinstance(a, Tensor)
        else "Tensor" for i, a in enumerate(args))
    expected = _signatures(name, operands, scalars, ())[1].partition("(")[2][:-1]
    return TypeError(f"{name}() received an invalid combination of arguments - got ({got}), "
                     f"but expected ({expected})")


def _leading_scalars(args, n, most, numbers_as_operands=False):
    """How many leading scalars ``args`` (past self) has in a deprecated form taking up to
    ``most`` of them before ``n`` operands; 0 when it is none of those forms."""
    k = len(args) - n
    if not 1 <= k <= most or not all(_is_scalar(a) for a in args[:k]):
        return 0
    fits = all(isinstance(a, Tensor) or (numbers_as_operands and _is_scalar(a))
               for a in args[k:])
    return k if fits else 0


def _binder(op, name):
    """``bind(args, kwargs)`` of method ``name`` of ``op``: ``self`` and the operands by
    position, the scalar by keyword; one positional argument more is the deprecated
    scalar-first overload when it fits it, torch's TypeError when not."""
    operands, scalar = _OVERLOADS[op]
    n = len(operands)
    positional = n + 1  # (self, the operands)
    tail = op.tails[positional]  # (the scalar's default: the one parameter after them)
    assert list(op.params[positional:]) == [scalar], op.params
    bind = op.bind
    numbers_as_other = scalar == "alpha"  # (add's Tensor other takes a Number: x.add(2, 3))

    def bind_method(args, kwargs):
        if len(args) == positional:  # (the usual calls: x.add(y), p.add_(g, alpha=-lr))
            if not kwargs:
                return args + tail
            if len(kwargs) == 1 and scalar in kwargs:
                value = kwargs[scalar]
                if type(value) is not float and type(value) is not int and not _is_scalar(value):
                    raise TypeError(f"{name}(): argument '{scalar}' must be Number, not "
                                    f"{_parser_typename(value)}")
                return args + (value,)
        if len(args) <= positional:
            return bind(args, kwargs)
        if len(args) > positional + 1:
            raise _invalid_combination(name, operands, (scalar,), args[1:])
        # (args[0] is self)
        if _leading_scalars(args[1:], n, 1, numbers_as_other):
            if kwargs:
                raise TypeError(f"{name}() received an invalid combination of arguments - got "
                                f"unrecognized keyword arguments: {', '.join(kwargs)}")
            _warn_once(*_signatures(name, operands, (scalar,), (scalar,)))
            return bind(args[:1] + args[2:], {scalar: _scalar_value(args[1])})
        raise _too_many(name, n, len(args) - 1)
    return bind_method


for _op in _OVERLOADS:
    setattr(Tensor, _op.name, _as_method(_op, _op.name, _binder(_op, _op.name)))
    setattr(Tensor, _op.name + "_", inplace_method(_op, _op.name + "_",
                                                   _binder(_op, _op.name + "_")))


def _product_method(name, current):
    """Method ``name`` of a matrix product taking ``beta``, or ``beta`` and ``alpha``, first."""
    operands = _PRODUCTS[name.rstrip("_")]
    n = len(operands)

    @functools.wraps(current)  # (its signature and keywords are the op's)
    def method(self, *args, **kwargs):
        if len(args) <= n:
            for i, a in enumerate(args):  # (the op's own check comes late)
                if not isinstance(a, Tensor):
                    raise TypeError(f"{name}(): argument '{operands[i]}' (position {i + 1}) "
                                    f"must be Tensor, not {type(a).__name__}")
            return current(self, *args, **kwargs)
        if len(args) > n + 2:
            raise _invalid_combination(name, operands, _BETA_ALPHA, args)
        k = _leading_scalars(args, n, 2)
        if not k or kwargs:
            raise _too_many(name, n, len(args))
        _warn_once(*_signatures(name, operands, _BETA_ALPHA, _BETA_ALPHA[:k]))
        scalars = dict(zip(_BETA_ALPHA, map(_scalar_value, args[:k])))
        return current(self, *args[k:], **scalars)
    return method


def _function(name, current):
    """Function ``name``: its deprecated form (``torch.add(x, 2, y)``, ``out=`` allowed) and
    torch's refusal of other extra positional arguments."""
    operands, scalars = _FUNCTION_FORMS[name]
    n = len(operands)

    @functools.wraps(current, updated=())
    def function(input, *args, **kwargs):  # noqa: A002 - torch's name
        if len(args) <= n:
            return current(input, *args, **kwargs)
        k = _leading_scalars(args, n, len(scalars), scalars == ("alpha",))
        if not k or not set(kwargs) <= {"out"}:
            raise _too_many(name, n + 1, len(args) + 1)
        _warn_once(*_signatures(name, operands, scalars, scalars, function=True))
        return current(input, *args[k:], **{scalars[0]: _scalar_value(args[0])}, **kwargs)
    return function


def install(namespace):
    """The matrix products' methods and the functions of ``namespace`` (ember's globals, once
    complete) with torch's positional rules."""
    for name in _PRODUCTS:
        for form in (name, name + "_"):
            setattr(Tensor, form, _product_method(form, getattr(Tensor, form)))
    for name in _FUNCTION_FORMS:
        namespace[name] = _function(name, namespace[name])
