"""Lazy modules: ``LazyLinear``, ``LazyConv*``, ``LazyConvTranspose*``, ``LazyBatchNorm*``,
``LazyInstanceNorm*``. Their input size (in_features, in_channels, num_features) is read from
the first input; until then their parameters are ``UninitializedParameter``s. On the first call
the module is built as the ordinary module it stands for (its hooks and mode kept) and becomes
an instance of it, as torch's ``cls_to_become``."""
from __future__ import annotations

import inspect

from ..._tensor import Tensor, _wrap
from ...overrides import _disabled_torch_function_impl
from ..parameter import Parameter
from .conv import (Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d, ConvTranspose3d)
from .linear import Linear
from .module import Module
from .normalization import (BatchNorm1d, BatchNorm2d, BatchNorm3d, InstanceNorm1d,
                            InstanceNorm2d, InstanceNorm3d)

__all__ = ["LazyBatchNorm1d", "LazyBatchNorm2d", "LazyBatchNorm3d", "LazyConv1d", "LazyConv2d",
           "LazyConv3d", "LazyConvTranspose1d", "LazyConvTranspose2d", "LazyConvTranspose3d",
           "LazyInstanceNorm1d", "LazyInstanceNorm2d", "LazyInstanceNorm3d", "LazyLinear",
           "UninitializedBuffer", "UninitializedParameter"]

_NO_SHAPE = ("Can't access the shape of an uninitialized parameter or buffer. This error "
             "usually happens in `load_state_dict` when trying to load an uninitialized "
             "parameter into an initialized one. Call `forward` to initialize the parameters "
             "before accessing their attributes.")


class _Uninitialized:
    """What an uninitialized parameter or buffer refuses: its shape and data."""

    # (torch's refuses most functions in its __torch_function__; ember's refuses by the
    # methods below, and defining one a subclass dispatches through would make every op pay)
    __torch_function__ = _disabled_torch_function_impl

    @property
    def shape(self):
        raise RuntimeError(_NO_SHAPE)

    def size(self, dim=None):
        raise RuntimeError(_NO_SHAPE)

    def dim(self):
        raise RuntimeError(_NO_SHAPE)

    def numel(self):
        raise RuntimeError(_NO_SHAPE)

    def __repr__(self):
        return f"<{type(self).__name__}>"


class UninitializedParameter(_Uninitialized, Parameter):
    """A parameter whose shape is not known yet (a lazy module's, before its first call)."""

    def __new__(cls, requires_grad=True, device=None, dtype=None):
        from ..._creation import empty
        return Parameter.__new__(cls, empty(0, dtype=dtype), requires_grad)

    def __init__(self, requires_grad=True, device=None, dtype=None):
        pass


class UninitializedBuffer(_Uninitialized, Tensor):
    """A buffer whose shape is not known yet."""

    def __new__(cls, requires_grad=False, device=None, dtype=None):
        from ..._creation import empty
        return _wrap(empty(0, dtype=dtype)._data, cls)

    def __init__(self, requires_grad=False, device=None, dtype=None):
        pass


_HOOK_DICTS = ("_forward_hooks", "_forward_hooks_with_kwargs", "_forward_hooks_always_called",
               "_forward_pre_hooks", "_forward_pre_hooks_with_kwargs", "_backward_hooks",
               "_backward_pre_hooks", "_state_dict_hooks", "_state_dict_pre_hooks",
               "_load_state_dict_pre_hooks", "_load_state_dict_post_hooks")


class _LazyModule(Module):
    """Builds ``cls_to_become(size_from(input), *args, **kwargs)`` in place on the first call."""

    cls_to_become = None

    def __init__(self, *args, **kwargs):
        super().__init__()
        self._lazy_args, self._lazy_kwargs = args, kwargs
        self._declare()
        given = self._given_options()
        if given:  # (the placeholders are where, and of what dtype, the module will be)
            self.to(**given)

    def _given_options(self):
        """The ``device`` and ``dtype`` the constructor was given."""
        bound = inspect.signature(self.cls_to_become.__init__).bind_partial(
            None, 0, *self._lazy_args, **self._lazy_kwargs).arguments
        return {k: bound[k] for k in ("device", "dtype") if bound.get(k) is not None}

    def _declare(self):
        """The uninitialized parameters and buffers the module will have."""
        raise NotImplementedError

    def _size_from(self, input):
        raise NotImplementedError

    def has_uninitialized_params(self):
        return True

    def initialize_parameters(self, input, *args, **kwargs):
        size = self._size_from(input)
        # the placeholders' device and dtype, as given or as .to()/.cuda()/.double() left them
        placeholder = next(iter([*self.parameters(), *self.buffers()]), None)
        kept = {k: self.__dict__[k] for k in _HOOK_DICTS if k in self.__dict__}
        training = self.training
        args, kwargs = self._lazy_args, self._lazy_kwargs
        cls = self.cls_to_become
        self.__dict__.clear()
        self.__class__ = cls
        cls.__init__(self, size, *args, **kwargs)
        self.__dict__.update(kept)
        self.train(training)
        if placeholder is not None:
            self.to(device=placeholder.device, dtype=placeholder.dtype)

    def forward(self, input, *args, **kwargs):
        self.initialize_parameters(input)
        return self.forward(input, *args, **kwargs)


def _maybe(flag, value):
    return value if flag else None


class LazyLinear(_LazyModule):
    """``Linear`` with ``in_features`` read from the first input's last dimension."""

    cls_to_become = Linear

    def __init__(self, out_features, bias=True, device=None, dtype=None):
        self.out_features, self._bias = out_features, bias
        super().__init__(out_features, bias, device, dtype)

    def _declare(self):
        self.in_features = 0
        self.weight = UninitializedParameter()
        self.bias = _maybe(self._bias, UninitializedParameter())

    def _size_from(self, input):
        return input.shape[-1]

    def extra_repr(self):
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"bias={self.bias is not None}")


def _lazy_conv(name, real, spatial):
    def __init__(self, out_channels, kernel_size, stride=1, padding=0, *rest, **kwargs):
        self.out_channels = out_channels
        self._bias = kwargs.get("bias", rest[3] if len(rest) > 3 else True)
        _LazyModule.__init__(self, out_channels, kernel_size, stride, padding, *rest, **kwargs)

    def _declare(self):
        self.in_channels = 0
        self.weight = UninitializedParameter()
        self.bias = _maybe(self._bias, UninitializedParameter())

    def _size_from(self, input):
        return input.shape[1] if input.dim() == spatial + 2 else input.shape[0]

    return type(name, (_LazyModule,), {"cls_to_become": real, "__init__": __init__,
                                       "_declare": _declare, "_size_from": _size_from,
                                       "__doc__": f"``{real.__name__}`` with ``in_channels`` "
                                                  "read from the first input."})


LazyConv1d = _lazy_conv("LazyConv1d", Conv1d, 1)
LazyConv2d = _lazy_conv("LazyConv2d", Conv2d, 2)
LazyConv3d = _lazy_conv("LazyConv3d", Conv3d, 3)
LazyConvTranspose1d = _lazy_conv("LazyConvTranspose1d", ConvTranspose1d, 1)
LazyConvTranspose2d = _lazy_conv("LazyConvTranspose2d", ConvTranspose2d, 2)
LazyConvTranspose3d = _lazy_conv("LazyConvTranspose3d", ConvTranspose3d, 3)


def _lazy_norm(name, real, batched_dim, affine_default, stats_default):
    def __init__(self, eps=1e-5, momentum=0.1, affine=affine_default,
                 track_running_stats=stats_default, device=None, dtype=None, **kwargs):
        self.eps, self.momentum = eps, momentum
        self.affine, self.track_running_stats = affine, track_running_stats
        self._bias = kwargs.get("bias", True)
        _LazyModule.__init__(self, eps, momentum, affine, track_running_stats, device, dtype,
                             **kwargs)

    def _declare(self):
        self.num_features = 0
        self.weight = _maybe(self.affine, UninitializedParameter())
        self.bias = _maybe(self.affine and self._bias, UninitializedParameter())
        for buf in ("running_mean", "running_var", "num_batches_tracked"):
            self.register_buffer(buf, _maybe(self.track_running_stats, UninitializedBuffer()))

    def _size_from(self, input):
        # batch norm's input always has its channels second; instance norm's may be unbatched
        if batched_dim is None or input.dim() == batched_dim:
            return input.shape[1]
        return input.shape[0]

    def extra_repr(self):
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
                f"affine={self.affine}, bias={self.bias is not None}, "
                f"track_running_stats={self.track_running_stats}")

    return type(name, (_LazyModule,), {"cls_to_become": real, "__init__": __init__,
                                       "_declare": _declare, "_size_from": _size_from,
                                       "extra_repr": extra_repr,
                                       "__doc__": f"``{real.__name__}`` with ``num_features`` "
                                                  "read from the first input."})


LazyBatchNorm1d = _lazy_norm("LazyBatchNorm1d", BatchNorm1d, None, True, True)
LazyBatchNorm2d = _lazy_norm("LazyBatchNorm2d", BatchNorm2d, None, True, True)
LazyBatchNorm3d = _lazy_norm("LazyBatchNorm3d", BatchNorm3d, None, True, True)
LazyInstanceNorm1d = _lazy_norm("LazyInstanceNorm1d", InstanceNorm1d, 3, False, False)
LazyInstanceNorm2d = _lazy_norm("LazyInstanceNorm2d", InstanceNorm2d, 4, False, False)
LazyInstanceNorm3d = _lazy_norm("LazyInstanceNorm3d", InstanceNorm3d, 5, False, False)
