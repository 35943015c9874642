"""``Variable``: the legacy wrapper, which since torch 0.4 simply makes a Tensor."""
from __future__ import annotations

import warnings

from .._tensor import Tensor, _check_can_require_grad, _wrap


class _VariableMeta(type):
    def __instancecheck__(cls, other):
        return isinstance(other, Tensor)


class _ExecutionEngine:
    """``Variable._execution_engine``: the backward engine's public door."""

    @staticmethod
    def queue_callback(callback):
        from .engine import queue_callback
        queue_callback(callback)


class Variable(metaclass=_VariableMeta):
    """``Variable(tensor, requires_grad=False)`` returns a Tensor sharing ``tensor``'s data."""

    _execution_engine = _ExecutionEngine()

    def __new__(cls, data=None, requires_grad=False, volatile=False):
        if volatile:
            warnings.warn("volatile was removed and now has no effect. Use `with ember.no_grad():` "
                          "instead.", UserWarning, stacklevel=2)
            if requires_grad:
                raise ValueError("Variable can't be volatile and require_grad at the same time!")
        if data is None:
            from .._creation import empty
            data = empty(0)
        if not isinstance(data, Tensor):
            raise TypeError(f"Variable data has to be a tensor, but got {type(data).__name__}")
        t = _wrap(data._data)
        t._vc = data._version_counter()
        if requires_grad:
            _check_can_require_grad(t.dtype, factory=True)
            t._requires_grad = True
        return t
