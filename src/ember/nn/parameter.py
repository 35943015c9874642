"""``Parameter`` and ``Buffer``: tensors that a Module registers as its state."""
from __future__ import annotations

__all__ = ["Buffer", "Parameter"]

from .._tensor import Tensor, _wrap
from ..overrides import _disabled_torch_function_impl


class Parameter(Tensor):
    """A kind of Tensor that is to be considered a module parameter."""

    # results of ops on parameters are plain tensors, as torch's
    __torch_function__ = _disabled_torch_function_impl

    def __new__(cls, data=None, requires_grad=True):
        if data is None:
            from .._creation import empty
            data = empty(0)
        if not isinstance(data, Tensor):
            raise TypeError(f"Creating a Parameter from an instance of type "
                            f"{type(data).__name__} requires that detach() returns an instance "
                            "of the same type, but return type Tensor was found instead. To use "
                            "the type as a Parameter, please correct the detach() semantics "
                            "defined by its __torch_dispatch__() implementation.")
        p = _wrap(data._data, cls)
        p._vc = data._version_counter()
        if requires_grad:
            p._set_requires_grad(True)
        return p

    def __init__(self, data=None, requires_grad=True):
        pass

    def __repr__(self):
        return "Parameter containing:\n" + super().__repr__()

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        result = Parameter(_wrap(self._data.copy()), self._requires_grad)
        if self._grad is not None:
            result._grad = _wrap(self._grad._data.copy())
        memo[id(self)] = result
        return result

    def __reduce_ex__(self, protocol):
        from .._backend import to_numpy
        return (_rebuild_parameter, (to_numpy(self._data), self._requires_grad))


def _rebuild_parameter(array, requires_grad):
    data = _wrap(array)
    data._vc = [1]  # unpickled as torch rebuilds it: storage set in place, version 1
    return Parameter(data, requires_grad)


class _BufferMeta(type):
    # A Buffer(...) call returns a plain tensor marked as a buffer; isinstance checks the mark.
    def __instancecheck__(cls, instance):
        if cls is Buffer:
            return isinstance(instance, Tensor) and getattr(instance, "_is_buffer", False)
        return super().__instancecheck__(instance)


class Buffer(Tensor, metaclass=_BufferMeta):
    """A kind of Tensor that a Module registers as a buffer when assigned as an attribute."""

    __torch_function__ = _disabled_torch_function_impl

    def __new__(cls, data=None, *, persistent=True):
        if data is None:
            from .._creation import empty
            data = empty(0)
        t = data.detach().requires_grad_(data.requires_grad)
        t.persistent = persistent
        t._is_buffer = True
        return t
