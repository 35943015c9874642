"""``Parameter``: a Tensor that a Module registers as one of its parameters."""
from __future__ import annotations

from .._tensor import Tensor, _wrap


class Parameter(Tensor):
    """A leaf tensor that requires grad (by default) and is registered by Modules."""

    def __new__(cls, data=None, requires_grad=True):
        if data is None:
            from .._creation import empty
            data = empty(0)
        p = _wrap(data._data, cls)
        p._vc = data._version_counter()
        if requires_grad:
            p.requires_grad_(True)
        return p

    def __init__(self, data=None, requires_grad=True):
        pass

    def __repr__(self):
        return "Parameter containing:\n" + super().__repr__()

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        result = Parameter(_wrap(self._data.copy()), self._requires_grad)
        memo[id(self)] = result
        return result

    def __reduce_ex__(self, protocol):
        from .._backend import to_numpy
        return (_rebuild_parameter, (to_numpy(self._data), self._requires_grad))


def _rebuild_parameter(array, requires_grad):
    return Parameter(_wrap(array), requires_grad)
