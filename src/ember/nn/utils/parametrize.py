"""``nn.utils.parametrize``: a module's tensor computed from other parameters on every access.

``register_parametrization(module, "weight", P)`` moves ``module.weight`` to
``module.parametrizations.weight.original`` and makes ``module.weight`` a property that
returns ``P(original)`` (a chain when several are registered), so autograd differentiates
through ``P`` to the original. As torch does, the module's class is swapped for a generated
subclass ``Parametrized<Class>`` that holds the properties.
"""
from __future__ import annotations

import collections.abc
import contextlib

from ... import __future__ as _future
from ..._tensor import Tensor
from ..modules.container import ModuleDict, ModuleList
from ..modules.module import Module  # noqa: F401 - torch's parametrize has it too
from ..parameter import Parameter

get_swap_module_params_on_conversion = _future.get_swap_module_params_on_conversion  # as torch's

__all__ = ["ParametrizationList", "cached", "is_parametrized", "register_parametrization",
           "remove_parametrizations", "transfer_parametrizations_and_params",
           "type_before_parametrizations"]



def is_traceable_wrapper_subclass(t) -> bool:
    """Whether ``t`` is a Tensor subclass with the flatten/unflatten protocol
    (``__tensor_flatten__`` and ``__tensor_unflatten__``)."""
    is_subclass = isinstance(t, Tensor) and type(t) is not Tensor
    return is_subclass and hasattr(t, "__tensor_flatten__") and hasattr(
        t, "__tensor_unflatten__")


_cache_enabled = 0
_cache: dict = {}


@contextlib.contextmanager
def cached():
    """Compute each parametrized tensor once inside the block (reused on every access)."""
    global _cache_enabled
    _cache_enabled += 1
    try:
        yield
    finally:
        _cache_enabled -= 1
        if not _cache_enabled:
            _cache.clear()


class ParametrizationList(ModuleList):
    """The parametrizations of one tensor, applied in order, and its ``original``
    (``original0``, ``original1``, ... when ``right_inverse`` returns several tensors)."""

    def __init__(self, modules, original, unsafe=False):
        if len(modules) == 0:
            raise ValueError("ParametrizationList requires one or more modules.")
        super().__init__(modules)
        self.unsafe = unsafe
        original_dtype, original_shape = original.dtype, original.shape
        new = original
        with _no_grad():
            for module in reversed(self):
                if hasattr(module, "right_inverse"):
                    try:
                        new = module.right_inverse(new)
                    except NotImplementedError:  # torch: then it is the identity here
                        pass
        if not isinstance(new, (Tensor, collections.abc.Sequence)):
            raise ValueError("'right_inverse' must return a Tensor or a Sequence of tensors "
                             f"(list, tuple...). Got {type(new).__name__}")
        self.is_tensor = isinstance(new, Tensor)
        self.ntensors = 1 if self.is_tensor else len(new)
        if self.is_tensor:
            if original.dtype != new.dtype:
                raise ValueError("When `right_inverse` outputs one tensor, it may not change "
                                 f"the dtype.\noriginal.dtype: {original.dtype}\n"
                                 f"right_inverse(original).dtype: {new.dtype}")
            with _no_grad():
                _assign(original, new)
            _register(self, "original", original)
        else:
            for i, t in enumerate(new):
                if not isinstance(t, Tensor):
                    raise ValueError("'right_inverse' must return a Tensor or a Sequence of "
                                     f"tensors (list, tuple...). Got element {i} of type "
                                     f"{type(t).__name__}")
                param = Parameter(t.detach(), original.requires_grad) if isinstance(
                    original, Parameter) else t.detach()
                _register(self, f"original{i}", param)
        if not unsafe:
            self._check_forward(original_dtype, original_shape)

    def _check_forward(self, original_dtype, original_shape):
        """torch's consistency check: the parametrized tensor keeps the original's dtype and
        shape (computed once here, so a parametrization runs at registration)."""
        z = self()
        if not isinstance(z, Tensor):
            raise ValueError(f"A parametrization must return a tensor. Got {type(z).__name__}.")
        for attr, before in (("dtype", original_dtype), ("shape", original_shape)):
            if getattr(z, attr) != before:
                raise ValueError(f"Registering a parametrization may not change the {attr} of "
                                 f"the tensor, unless `unsafe` flag is enabled.\n"
                                 f"unparametrized {attr}: {before}\n"
                                 f"parametrized {attr}: {getattr(z, attr)}")

    def right_inverse(self, value):
        """Set the originals so that the parametrized tensor becomes ``value``."""
        with _no_grad():
            for module in reversed(self):
                if not hasattr(module, "right_inverse"):
                    # (registering skips a missing inverse; assigning cannot)
                    raise RuntimeError(f"parametrization {type(module).__name__} does not "
                                       "implement right_inverse.")
                value = module.right_inverse(value)
            if self.is_tensor:
                _check_inverse_tensor(value, self.original)
                _assign(self.original, value)
            else:
                _check_inverse_sequence(value, self.ntensors)
                for i, t in enumerate(value):
                    original = getattr(self, f"original{i}")
                    _check_inverse_element(t, i, original)
                    _assign(original, t)

    def forward(self):
        if self.is_tensor:
            x = self[0](self.original)
        else:
            x = self[0](*(getattr(self, f"original{i}") for i in range(self.ntensors)))
        for module in list(self)[1:]:
            x = module(x)
        return x


def _check_inverse_tensor(value, original):
    """torch's checks of what the ``right_inverse`` of an assignment gives ``original``."""
    if not isinstance(value, Tensor):
        raise ValueError(f"`right_inverse` should return a tensor. Got {type(value).__name__}")
    if value.dtype != original.dtype:
        raise ValueError(f"The tensor returned by `right_inverse` has dtype {value.dtype} "
                         f"while `original` has dtype {original.dtype}")


def _check_inverse_sequence(value, ntensors):
    if not isinstance(value, collections.abc.Sequence):
        raise ValueError("'right_inverse' must return a sequence of tensors. "
                         f"Got {type(value).__name__}.")
    if len(value) != ntensors:
        raise ValueError("'right_inverse' must return a sequence of tensors of length "
                         f"{ntensors}. Got a sequence of length {len(value)}.")


def _check_inverse_element(tensor, i, original):
    if not isinstance(tensor, Tensor):
        raise ValueError("'right_inverse' must return a sequence of tensors or reference-type "
                         f"opaques. Got element {i} of type {type(tensor).__name__}.")
    if tensor.dtype != original.dtype:
        raise ValueError(f"Tensor {i} returned by `right_inverse` has dtype {tensor.dtype} "
                         f"while `original{i}` has dtype {original.dtype}")


def _no_grad():
    from ...autograd.grad_mode import no_grad
    return no_grad()


def _assign(original, new):
    """torch's ``original.set_(new)``: ``original`` takes ``new``'s memory (a tensor taken from
    the old ``original`` before, e.g. by ``detach()``, keeps the old values)."""
    original.data = new.detach()


def _register(plist, name, tensor):
    if isinstance(tensor, Parameter):
        plist.register_parameter(name, tensor)
    else:
        plist.register_buffer(name, tensor)


def _parametrized_class(module):
    cls = module.__class__
    return type(f"Parametrized{cls.__name__}", (cls,), {"__getstate__": _no_pickle})


def _no_pickle(self):
    raise RuntimeError("Serialization of parametrized modules is only supported through "
                       "state_dict(). See:\nhttps://pytorch.org/tutorials/beginner/"
                       "saving_loading_models.html#saving-loading-a-general-checkpoint-for-"
                       "inference-and-or-resuming-training")


def _property(tensor_name):
    def get(self):
        plist = self.parametrizations[tensor_name]
        if _cache_enabled:
            key = (id(self), tensor_name)
            if key not in _cache:
                _cache[key] = plist()
            return _cache[key]
        return plist()

    def set_(self, value):
        self.parametrizations[tensor_name].right_inverse(value)
    return property(get, set_)


def is_parametrized(module, tensor_name=None):
    """Whether ``module`` has parametrizations (on ``tensor_name``)."""
    plists = getattr(module, "parametrizations", None)
    if plists is None or not isinstance(plists, ModuleDict):
        return False
    return len(plists) > 0 if tensor_name is None else tensor_name in plists


def type_before_parametrizations(module):
    """The module's class before its parametrizations swapped it."""
    return module.__class__.__bases__[0] if is_parametrized(module) else type(module)


def _check_same_kind(what, tensor_name, y, x, returned):
    """torch's refusal of a tensor of another dtype or shape than ``module.<tensor_name>``."""
    for attr in ("dtype", "shape"):
        if getattr(x, attr) != getattr(y, attr):
            raise ValueError(f"{what} may not change the {attr} of the tensor, unless the "
                             f"`unsafe` flag is enabled.\nmodule.{tensor_name}.{attr}: "
                             f"{getattr(y, attr)}\n{returned}{attr}: {getattr(x, attr)}"
                             if what.startswith("Registering") else
                             f"{what} must have the same {attr} as module.{tensor_name}, unless "
                             f"the `unsafe` flag is enabled.\nmodule.{tensor_name}.{attr}: "
                             f"{getattr(y, attr)}\nreturned {attr}: {getattr(x, attr)}")


def _check_appended(module, tensor_name, parametrization):
    """torch's checks of a parametrization added to a parametrized tensor: its forward and its
    right_inverse map tensors of the tensor's dtype and shape to such tensors."""
    y = getattr(module, tensor_name)
    x = parametrization(y)
    if not isinstance(x, Tensor):
        raise ValueError(f"A parametrization must return a tensor. Got {type(x).__name__}.")
    _check_same_kind("Registering a parametrization", tensor_name, y, x,
                     f"parametrization(module.{tensor_name}).")
    if not hasattr(parametrization, "right_inverse"):
        return
    try:
        z = parametrization.right_inverse(x)
    except NotImplementedError:
        return
    if not isinstance(z, Tensor):
        raise ValueError("parametrization.right_inverse must return a tensor. Got: "
                         f"{type(z).__name__}")
    _check_same_kind("The tensor returned by parametrization.right_inverse", tensor_name, y, z,
                     "")


def register_parametrization(module, tensor_name, parametrization, *, unsafe=False):
    """Make ``module.<tensor_name>`` the output of ``parametrization`` on its original."""
    parametrization.train(module.training)
    if is_parametrized(module, tensor_name):
        plist = module.parametrizations[tensor_name]
        if not unsafe:
            _check_appended(module, tensor_name, parametrization)
        plist.append(parametrization)
        plist.unsafe |= unsafe
        return module
    if tensor_name not in module._buffers and tensor_name not in module._parameters:
        raise ValueError(f"Module '{module}' does not have a parameter, a buffer, or a "
                         f"parametrized element with name '{tensor_name}'")
    original = getattr(module, tensor_name)
    plist = ParametrizationList([parametrization], original, unsafe=unsafe)
    delattr(module, tensor_name)
    if not is_parametrized(module):
        module.__class__ = _parametrized_class(module)
        module.parametrizations = ModuleDict()
    setattr(module.__class__, tensor_name, _property(tensor_name))
    module.parametrizations[tensor_name] = plist
    return module


def remove_parametrizations(module, tensor_name, leave_parametrized=True):
    """Undo the parametrizations of ``tensor_name``: its current value (or its original when
    ``leave_parametrized=False``) becomes a plain parameter again."""
    if not is_parametrized(module, tensor_name):
        raise ValueError(f"Module {module} does not have a parametrization on {tensor_name}")
    plist = module.parametrizations[tensor_name]
    if plist.is_tensor:
        original = plist.original
        if leave_parametrized:
            with _no_grad():
                t = getattr(module, tensor_name)
            with _no_grad():
                if tuple(t.shape) == tuple(original.shape):
                    original.copy_(t)
                else:
                    original.data = t.detach()
    else:
        if not leave_parametrized:
            raise ValueError("Cannot leave unparametrized (`leave_parametrized=False`) a tensor "
                             "that is parametrized in terms of a sequence of tensors.")
        with _no_grad():
            t = getattr(module, tensor_name)
        original = Parameter(t.detach(), t.requires_grad) if isinstance(
            plist.original0, Parameter) else t.detach()
    delattr(module.__class__, tensor_name)
    del module.parametrizations[tensor_name]
    if isinstance(original, Parameter):
        module.register_parameter(tensor_name, original)
    else:
        module.register_buffer(tensor_name, original)
    if not is_parametrized(module):
        delattr(module, "parametrizations")
        module.__class__ = type_before_parametrizations_class(module)
    return module


def type_before_parametrizations_class(module):
    return module.__class__.__bases__[0]


def transfer_parametrizations_and_params(from_module, to_module, tensor_name=None):
    """Copy the parametrizations (and their originals) of ``from_module`` to ``to_module``."""
    if not is_parametrized(from_module):
        return to_module
    names = list(from_module.parametrizations) if tensor_name is None else [tensor_name]
    for name in names:
        plist = from_module.parametrizations[name]
        if not is_parametrized(to_module, name):
            for p in plist:
                register_parametrization(to_module, name, p)
        target = to_module.parametrizations[name]
        with _no_grad():
            if plist.is_tensor:
                target.original.data = plist.original.detach().clone()
            else:
                for i in range(plist.ntensors):
                    getattr(target, f"original{i}").data = getattr(
                        plist, f"original{i}").detach().clone()
    return to_module


