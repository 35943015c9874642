"""torch's deprecated scalar-first method overloads: ``x.add_(alpha, other)``,
``x.sub(alpha, other)``, ``x.addcmul_(value, tensor1, tensor2)``, ``x.addcdiv(value, ...)``.

Programs written for old torch versions still call them (``p.data.add_(-lr, p.grad.data)``),
and torch still runs them, warning once per process (one warning for all of these
overloads) with its message naming the overload and the signature to use instead. The
current signatures take ``alpha`` and ``value`` as keywords only, so two positional operands
that are not ``(Number, Tensor)`` (``x.add(y, 2)``) raise torch's TypeError.

NOTE: each method here checks its positional arguments before calling the op's own method;
the keyword form (``x.add_(y, alpha=2)``) and the one-operand form pass straight through.
"""
import functools
import numbers
import warnings

import numpy as np

from .._tensor import Tensor

# name -> (how many tensor operands the current signature takes, the scalar's name)
_OVERLOADS = {"add": (1, "alpha"), "sub": (1, "alpha"),
              "addcmul": (2, "value"), "addcdiv": (2, "value")}
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
                  f"\t{name}({names}, *, Number {scalar} = 1)", UserWarning, stacklevel=3)


def _method(name, current):
    n, scalar = _OVERLOADS[name.rstrip("_")]
    operands = ("other",) if n == 1 else ("tensor1", "tensor2")

    @functools.wraps(current)  # (its signature and keywords are the op's)
    def method(self, *args, **kwargs):
        if len(args) <= n:
            return current(self, *args, **kwargs)
        if (len(args) == n + 1 and _is_scalar(args[0])
                and all(isinstance(a, Tensor) for a in args[1:])):
            if kwargs:
                raise TypeError(f"{name}() received an invalid combination of arguments - got "
                                f"unrecognized keyword arguments: {', '.join(kwargs)}")
            _warn_once(name, operands, scalar)
            value = args[0].item() if isinstance(args[0], Tensor) else args[0]
            return current(self, *args[1:], **{scalar: value})
        raise TypeError(f"{name}() takes {n} positional argument{'s' if n > 1 else ''} but "
                        f"{len(args)} were given")
    return method


for _name in _OVERLOADS:
    for _form in (_name, _name + "_"):
        setattr(Tensor, _form, _method(_form, getattr(Tensor, _form)))
