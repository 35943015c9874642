"""torch's deprecated scalar-first method overloads: ``x.add_(alpha, other)``,
``x.sub(alpha, other)``, ``x.addcmul_(value, tensor1, tensor2)``, ``x.addcdiv(value, ...)``.

Programs written for old torch versions still call them (``p.data.add_(-lr, p.grad.data)``),
and torch still runs them, warning once per process (one warning for all of these
overloads) with its message naming the overload and the signature to use instead. The
current signatures take ``alpha`` and ``value`` as keywords only, so two positional operands
that are not ``(Number, Tensor)`` (``x.add(y, 2)``) raise torch's TypeError.

NOTE: these methods bind their arguments here (see registry._as_method's ``bind``), and only
a call with more positional arguments than the current signature takes looks further: the
usual call (``x.add(y)``, ``p.add_(g, alpha=-lr)``) costs no check and no call more than
any op's method.
"""
import numbers
import warnings

import numpy as np

from .._tensor import Tensor
from .binary import addcmul, addcdiv
from .inplace import _user_stacklevel, inplace_method
from .pointwise import add, sub
from .registry import _as_method

# op -> (its tensor operands besides self in the current signature, the scalar's name)
_OVERLOADS = {add: (("other",), "alpha"), sub: (("other",), "alpha"),
              addcmul: (("tensor1", "tensor2"), "value"),
              addcdiv: (("tensor1", "tensor2"), "value")}
_warned = [False]  # torch's warning is one TORCH_WARN_ONCE for every deprecated overload


def _is_scalar(x):
    """What torch's parser reads as a Number: a Python or NumPy number, or a 0-d tensor."""
    if isinstance(x, Tensor):
        return x.dim() == 0
    return isinstance(x, (numbers.Number, np.generic))


def _warn_once(name, operands, scalar):
    if _warned[0]:
        return
    _warned[0] = True
    names = ", ".join(f"Tensor {n}" for n in operands)
    warnings.warn(f"This overload of {name} is deprecated:\n\t{name}(Number {scalar}, {names})\n"
                  "Consider using one of the following signatures instead:\n"
                  f"\t{name}({names}, *, Number {scalar} = 1)", UserWarning,
                  stacklevel=_user_stacklevel())


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

    def bind_method(args, kwargs):
        if len(args) == positional:  # (the usual calls: x.add(y), p.add_(g, alpha=-lr))
            if not kwargs:
                return args + tail
            if len(kwargs) == 1 and scalar in kwargs:
                return args + (kwargs[scalar],)
        if len(args) <= positional:
            return bind(args, kwargs)
        # (args[0] is self)
        if (len(args) == positional + 1 and _is_scalar(args[1])
                and all(isinstance(a, Tensor) for a in args[2:])):
            if kwargs:
                raise TypeError(f"{name}() received an invalid combination of arguments - got "
                                f"unrecognized keyword arguments: {', '.join(kwargs)}")
            _warn_once(name, operands, scalar)
            value = args[1].item() if isinstance(args[1], Tensor) else args[1]
            return bind(args[:1] + args[2:], {scalar: value})
        raise TypeError(f"{name}() takes {n} positional argument{'s' if n > 1 else ''} but "
                        f"{len(args) - 1} were given")
    return bind_method


for _op in _OVERLOADS:
    setattr(Tensor, _op.name, _as_method(_op, _op.name, _binder(_op, _op.name)))
    setattr(Tensor, _op.name + "_", inplace_method(_op, _op.name + "_",
                                                   _binder(_op, _op.name + "_")))
