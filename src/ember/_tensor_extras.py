"""Tensor methods and torch functions that are other ops under another name or in another
form: in-place variants written as ``self.copy_(out-of-place result)`` (so versions, views and
autograd behave as for any in-place op), the ``*_copy`` functions, the
functional forms torch keeps at its top level (``torch.batch_norm``, ``torch.embedding``,
...), splitting helpers, and the memory and device queries that have one answer on NumPy.
"""
from __future__ import annotations

import warnings

import numpy as np

from . import _dtype as D
from ._tensor import Tensor, _wrap, strided

layout = type(strided)  # the class of ember.strided

__all__ = ['layout', 'adaptive_max_pool1d', 'alias_copy', 'as_strided_copy', 'avg_pool1d',
           'batch_norm', 'celu_', 'channel_shuffle', 'constant_pad_nd', 'detach',
           'diagonal_copy', 'dsplit', 'dropout_', 'embedding', 'embedding_bag',
           'empty_permuted', 'empty_strided', 'expand_copy', 'feature_dropout', 'frobenius_norm',
           'from_dlpack',
           'gradient', 'hardshrink', 'hsplit', 'instance_norm', 'is_inference', 'max_pool1d',
           'max_pool1d_with_indices', 'max_pool2d', 'max_pool3d', 'native_channel_shuffle',
           'nuclear_norm', 'permute_copy', 'ravel', 'rms_norm', 'rrelu', 'rrelu_',
           'select_copy', 'selu_', 'slice_copy', 'split_copy', 'split_with_sizes',
           'split_with_sizes_copy', 'squeeze_copy', 't_copy', 'threshold', 'threshold_',
           'to_dlpack', 'transpose_copy', 'unbind_copy', 'unfold_copy', 'unsafe_chunk',
           'unsafe_split', 'unsafe_split_with_sizes', 'unsqueeze_copy', 'view_copy', 'vsplit',
           'alpha_dropout_', 'feature_alpha_dropout_', 'feature_dropout_', 'get_device',
           'layer_norm', 'group_norm']
__all__ += ['dropout', 'alpha_dropout', 'feature_alpha_dropout']


# -- in-place variants from out-of-place ops ----------------------------------------------------
def _inplace_from(name, target):
    def method(self, *args, **kwargs):
        result = getattr(self, target)(*args, **kwargs)
        if result.dtype is not self.dtype and result.dtype is not D.bool and (
                not D.can_cast(result.dtype, self.dtype)):
            raise RuntimeError(f"result type {result.dtype.scalar_name} can't be cast to the "
                               f"desired output type {self.dtype.scalar_name}")
        return self.copy_(result)
    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"In place: ``self.copy_(self.{target}(...))``."
    method.__ember_forwards__ = f"ember.Tensor.{target}"  # (whose keywords it takes)
    return method


_INPLACE = {"multiply_": "mul", "subtract_": "sub", "negative_": "neg",
            "eq_": "eq", "ne_": "ne", "lt_": "lt", "le_": "le", "gt_": "gt", "ge_": "ge",
            "greater_": "gt", "greater_equal_": "ge", "less_": "lt", "less_equal_": "le",
            "not_equal_": "ne", "logical_not_": "logical_not", "cumsum_": "cumsum",
            "cumprod_": "cumprod", "gcd_": "gcd",
            "lcm_": "lcm", "nextafter_": "nextafter",
            "heaviside_": "heaviside",
            "conj_physical_": "conj_physical"}
for _name, _target in _INPLACE.items():
    if not hasattr(Tensor, _name):
        setattr(Tensor, _name, _inplace_from(_name, _target))
Tensor.absolute_ = Tensor.abs_  # (torch's alias: abs_'s node, and its refusal of complex)


# -- a view, then a copy: ops of their own (see _ops/view_copies.py) ---------------------------
from ._ops.view_copies import (alias_copy, as_strided_copy, diagonal_copy,  # noqa: E402,F401
                               expand_copy, permute_copy, select_copy, slice_copy, split_copy,
                               split_with_sizes_copy, squeeze_copy, t_copy, transpose_copy,
                               unbind_copy, unfold_copy, unsqueeze_copy, view_copy)


def split_with_sizes(input, split_sizes, dim=0):  # noqa: A002
    return input.split(list(split_sizes), dim)


from ._ops.shape import unsafe_chunk, unsafe_split, unsafe_split_with_sizes  # noqa: E402,F401


def detach(input):  # noqa: A002
    return input.detach()


def is_inference(input):  # noqa: A002
    return input.is_inference()


def _split_helper(name, dim, min_dim):
    def fn(input, indices_or_sections=None, *, sections=None, indices=None):  # noqa: A002
        from ._ops.rearrange import split_points
        indices_or_sections = split_points(name, indices_or_sections,
                                           {"sections": sections, "indices": indices})
        if input.dim() < min_dim:
            raise RuntimeError(f"torch.{name} requires a tensor with at least {min_dim} "
                               f"dimension, but got a tensor with {input.dim()} dimensions!")
        d = 0 if name == "hsplit" and input.dim() == 1 else dim
        if isinstance(indices_or_sections, int) and input.shape[d] % indices_or_sections:
            raise RuntimeError(f"torch.{name} attempted to split along dimension {d}, but the "
                               f"size of the dimension {input.shape[d]} is not divisible by "
                               f"the split_size {indices_or_sections}!")
        return input.tensor_split(indices_or_sections, d)
    fn.__name__ = fn.__qualname__ = name
    return fn


hsplit = _split_helper("hsplit", 1, 1)
vsplit = _split_helper("vsplit", 0, 2)
dsplit = _split_helper("dsplit", 2, 3)


def ravel(input):  # noqa: A002
    return input.reshape(-1)


def get_device(input):  # noqa: A002
    """-1 for a CPU tensor (its CUDA device index otherwise)."""
    return input.get_device()


def gradient(input, *, spacing=1, dim=None, edge_order=1):  # noqa: A002
    """Central differences inside, one-sided at the edges, per dimension.

    Built, as torch builds it, from slices of ``input`` combined by sub/mul/div and joined
    by cat: autograd differentiates it, with torch's grad_fns and rounding.
    """
    dims, steps = _gradient_arguments(input, spacing, dim, edge_order)
    from ._ops.shape import cat
    return tuple(cat(_gradient_pieces(input, d, step, edge_order), d)
                 for d, step in zip(dims, steps))


def _gradient_arguments(input, spacing, dim, edge_order):  # noqa: A002
    """The wrapped dims and one spacing (a number or a coordinates tensor) for each, with
    torch's checks in torch's order."""
    from ._ops.shape import _unique_dims
    if input.dtype == D.uint8:
        raise RuntimeError("ember.gradient does not support uint8 input.")
    listed = isinstance(spacing, (list, tuple))
    dims = range(input.dim()) if dim is None else [dim] if isinstance(dim, int) else list(dim)
    if listed and dim is None and len(spacing) != input.dim():
        raise RuntimeError("ember.gradient expected spacing to be unspecified, a scalar, or a "
                           "list of length equal to 'self.dim() = {}', since dim argument was "
                           "not given, but got a list of length {}".format(input.dim(),
                                                                           len(spacing)))
    if listed and dim is not None and len(spacing) != len(dims):
        raise RuntimeError("ember.gradient expected spacing to be unspecified, a scalar or it's "
                           "spacing and dim arguments to have the same length, but got a "
                           f"spacing argument of length {len(spacing)} and a dim argument of "
                           f"length {len(dims)}.")
    if edge_order not in (1, 2):
        raise RuntimeError("ember.gradient only supports edge_order=1 and edge_order=2.")
    dims = _unique_dims(dims, input.dim())
    if any(input.shape[d] < edge_order + 1 for d in dims):
        raise RuntimeError("ember.gradient expected each dimension size to be at least "
                           "edge_order+1")
    if not listed:  # one number (or a 0-dim tensor holding one) for every dim
        spacing = [spacing.item() if isinstance(spacing, Tensor) else spacing] * len(dims)
    for step in spacing:
        if isinstance(step, Tensor) and step.dim() != 1:
            raise RuntimeError("ember.gradient expected each element of spacing to have one "
                               f"dimension, but got an element with {step.dim()} dimensions!")
    return dims, list(spacing)


def _gradient_pieces(input, d, step, edge_order):  # noqa: A002
    """(first edge, interior, last edge) of the gradient along ``d``."""
    from ._ops.shape import slice_

    def part(start, end=None):
        return slice_(input, d, start, end, 1)
    div_scalar, mul_scalar = _number_ops(input)
    if isinstance(step, Tensor):
        return _gradient_on_coordinates(input, part, d, step, edge_order)
    # (torch's C++ divides and multiplies by the number itself: div.Scalar, mul.Scalar)
    center = div_scalar(div_scalar(part(2) - part(0, -2), step), 2)
    if edge_order == 1:
        first = div_scalar(part(1, 2) - part(0, 1), step)
        last = div_scalar(part(-1) - part(-2, -1), step)
    else:
        first = div_scalar(mul_scalar(part(0, 1), -1.5) + mul_scalar(part(1, 2), 2)
                           - mul_scalar(part(2, 3), 0.5), step)
        last = div_scalar(mul_scalar(part(-3, -2), 0.5) - mul_scalar(part(-2, -1), 2)
                          + mul_scalar(part(-1), 1.5), step)
    return first, center, last


def _number_ops(input):  # noqa: A002
    """Division and multiplication by a Python number as torch's C++ does them: div.Scalar
    and mul.Scalar (DivBackward1, MulBackward1) for a tensor that can require grad; for an
    integral one, the operators, which promote it to the default float dtype as torch does."""
    if input.is_floating_point() or input.is_complex():
        from ._ops.pointwise import div_scalar, mul_scalar
        return div_scalar, mul_scalar
    return (lambda t, n: t / n), (lambda t, n: t * n)


def _gradient_on_coordinates(input, part, d, coords, edge_order):  # noqa: A002
    """The pieces for samples at ``coords`` along ``d``: second-order weights of the
    uneven neighbours inside, one- or two-step differences at the edges."""
    h = coords.diff(1, 0)
    h1, h2 = h[:-1], h[1:]
    along = [1] * input.dim()
    along[d] = -1
    a = (-h2 / (h1 * (h1 + h2))).reshape(along)
    b = ((h2 - h1) / (h1 * h2)).reshape(along)
    c = (h1 / (h2 * (h1 + h2))).reshape(along)
    center = a * part(0, -2) + b * part(1, -1) + c * part(2)
    if edge_order == 1:
        return (part(1, 2) - part(0, 1)) / h[0], center, (part(-1) - part(-2, -1)) / h[-1]
    _, mul_scalar = _number_ops(h)
    a = -(mul_scalar(h[0], 2.0) + h[1]) / (h[0] * (h[0] + h[1]))
    b = (h[0] + h[1]) / (h[0] * h[1])
    c = -h[0] / (h[1] * (h[0] + h[1]))
    first = a * part(0, 1) + b * part(1, 2) + c * part(2, 3)
    a = h[-1] / (h[-2] * (h[-1] + h[-2]))
    b = -(h[-1] + h[-2]) / (h[-1] * h[-2])
    c = (mul_scalar(h[-1], 2) + h[-2]) / (h[-1] * (h[-1] + h[-2]))
    last = a * part(-3, -2) + b * part(-2, -1) + c * part(-1)
    return first, center, last


def empty_strided(size, stride, *, dtype=None, layout=None, device=None, requires_grad=False,
                  pin_memory=False):
    """A tensor of ``size`` laid out with ``stride`` (zeros: ember never hands out garbage)."""
    from ._creation import zeros
    dt = dtype or D.get_default_dtype()
    span = 1 + sum((s - 1) * st for s, st in zip(size, stride)) if all(size) else 0
    base = zeros(max(span, 0), dtype=dt, device=device)
    out = base.as_strided(tuple(size), tuple(stride)).detach()
    if requires_grad:
        out._set_requires_grad()
    return out


def from_dlpack(ext_tensor, *, device=None, copy=None):
    """A tensor sharing the memory of an object that speaks DLPack (a NumPy array, ...) or of
    a DLPack capsule; ``copy=True``: a copy of it, ``device``: where the tensor goes."""
    if not hasattr(ext_tensor, "__dlpack__"):  # a capsule (what __dlpack__() returned)
        if device is not None or copy is not None:
            raise AssertionError("device and copy kwargs not supported when ext_tensor is "
                                 "already a DLPack capsule.")
        ext_tensor = _Capsule(ext_tensor)
    target = None
    if device is not None:
        from ._tensor import device as device_
        if not isinstance(device, (str, device_)):
            raise AssertionError(f"from_dlpack: unsupported device type: {type(device)}")
        target = device_(device)
        if target.type == "meta":
            raise BufferError("Cannot pack tensors on meta")
    result = _wrap(np.from_dlpack(ext_tensor, copy=copy))
    return result if target is None or target.type == "cpu" else result.to(target)


class _Capsule:
    """A DLPack capsule as the object NumPy's from_dlpack reads (its memory is on the CPU)."""

    def __init__(self, capsule):
        self.capsule = capsule

    def __dlpack__(self, **_):
        return self.capsule

    def __dlpack_device__(self):
        return (1, 0)  # (kDLCPU, device 0)


def _tensor_dlpack(self, *, stream=-1, max_version=None, dl_device=None, copy=None):
    """The DLPack capsule of the tensor's memory (what ``from_dlpack`` of NumPy, CuPy, torch
    or ember reads)."""
    if self._requires_grad:
        raise BufferError("Can't export tensors that require gradient, use tensor.detach()")
    stream = None if stream == -1 else stream
    return self._data.__dlpack__(stream=stream, max_version=max_version, dl_device=dl_device,
                                 copy=copy)


def _tensor_dlpack_device(self):
    return self._data.__dlpack_device__()


Tensor.__dlpack__ = _tensor_dlpack
Tensor.__dlpack_device__ = _tensor_dlpack_device


def to_dlpack(tensor):
    """The DLPack capsule of the tensor's memory (``from_dlpack`` reads it back). It is a
    versioned (DLPack 1.0) capsule, where torch's is a legacy one: NumPy imports a legacy
    capsule read-only, so the tensor read back would refuse the writes torch's takes."""
    return tensor.detach().__dlpack__(max_version=(1, 0))


_FROBENIUS_WARNED = []


def frobenius_norm(input, dim=None, keepdim=False):  # noqa: A002
    """torch's deprecated ``at::frobenius_norm``: ``at::norm(input, 2, dim, keepdim)`` (its
    node is NormBackward1), over at most two dimensions."""
    from ._ops.statistics import norm_dim
    if dim is None:  # (torch's parser: dim has no default)
        raise TypeError('frobenius_norm() missing 1 required positional arguments: "dim"')
    if not _FROBENIUS_WARNED:  # (torch warns once a process)
        _FROBENIUS_WARNED.append(True)
        warnings.warn("at::frobenius_norm is deprecated and it is just left for JIT "
                      "compatibility. It will be removed in a future PyTorch release. Please "
                      "use `linalg.vector_norm(A, 2., dim, keepdim)` instead", UserWarning,
                      stacklevel=2)
    dims = [dim] if isinstance(dim, int) else list(dim)
    if len(dims) > 2:
        raise RuntimeError(f"Expected at most 2 dimensions, but got {len(dims)} dimensions "
                           "instead.")
    if not (input.is_floating_point() or input.is_complex()):
        raise RuntimeError("norm(): input dtype should be either floating point or complex. "
                           f"Got {input.dtype.scalar_name} instead.")
    return norm_dim(input, 2, dims, keepdim)


def nuclear_norm(input, dim=(-2, -1), keepdim=False):  # noqa: A002
    from . import linalg
    return linalg.matrix_norm(input, "nuc", dim, keepdim)


# -- torch's top-level forms of nn.functional ops -----------------------------------------------
def empty_permuted(size, physical_layout, *, dtype=None, layout=None, device=None,
                   requires_grad=False, pin_memory=False):
    """A tensor of ``size`` whose memory holds its dims in the order ``physical_layout``
    (zeros: ember never hands out garbage)."""
    size, order = tuple(size), tuple(physical_layout)
    if len(size) != len(order):
        raise RuntimeError("Number of dimensions in size does not match the length of the "
                           f"physical_layout; i.e. len(size) = {len(size)} is not equal to "
                           f"len(physical_layout) = {len(order)}")
    seen = set()
    for i, d in enumerate(order):
        if not 0 <= d < len(size):
            raise RuntimeError(f"Dimension out of range (expected to be between 0 and "
                               f"{len(size) - 1}, but got {d} at index {i}).  NB: negative dims "
                               "not currently supported; file an issue if you want it.")
        if d in seen:
            raise RuntimeError("Duplicate dim not allowed")
        seen.add(d)
    from ._creation import zeros
    physical = zeros(tuple(size[d] for d in order), dtype=dtype, device=device)
    out = physical.permute(tuple(order.index(d) for d in range(len(size)))).detach()
    return out._set_requires_grad() if requires_grad else out


def _functional(name, positional=None):
    def fn(*args, **kwargs):
        from .nn import functional as F
        return getattr(F, positional or name)(*args, **kwargs)
    fn.__name__ = fn.__qualname__ = name
    fn.__ember_forwards__ = f"ember.nn.functional.{positional or name}"
    return fn


adaptive_max_pool1d = _functional("adaptive_max_pool1d")
avg_pool1d = _functional("avg_pool1d")
max_pool1d = _functional("max_pool1d")
max_pool1d_with_indices = _functional("max_pool1d_with_indices")
max_pool2d = _functional("max_pool2d")
max_pool3d = _functional("max_pool3d")
channel_shuffle = native_channel_shuffle = _functional("channel_shuffle")
hardshrink = _functional("hardshrink")
def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, generator=None):  # noqa: A002
    """``torch.rrelu``: ``F.rrelu`` with torch's ``generator=`` for the slopes."""
    from ._ops.activation import rrelu_drawn
    return rrelu_drawn(input, lower, upper, training, False, generator)


def rrelu_(input, lower=1.0 / 8, upper=1.0 / 3, training=False, generator=None):  # noqa: A002
    from ._ops.activation import rrelu_drawn
    return rrelu_drawn(input, lower, upper, training, True, generator)
selu_ = _functional("selu_")
celu_ = _functional("celu_")
threshold = _functional("threshold")
threshold_ = _functional("threshold_")
rms_norm = _functional("rms_norm")


def constant_pad_nd(input, pad, value=0):  # noqa: A002
    from .nn import functional as F
    return F.pad(input, pad, "constant", value)


def embedding(weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False):
    """torch.embedding (weight first, as aten's): ``F.embedding(indices, weight)``."""
    from .nn import functional as F
    return F.embedding(indices, weight, None if padding_idx == -1 else padding_idx,
                       scale_grad_by_freq=scale_grad_by_freq, sparse=sparse)


def embedding_bag(weight, indices, offsets, scale_grad_by_freq=False, mode=0, sparse=False,
                  per_sample_weights=None, include_last_offset=False, padding_idx=None):
    """torch.embedding_bag (weight first, as aten's): ``(output, offset2bag, bag_size,
    max_indices)``."""
    from ._ops.embedding_bag import _embedding_bag_call
    return _embedding_bag_call(weight, indices, offsets, scale_grad_by_freq, mode,
                               per_sample_weights, include_last_offset, padding_idx, sparse)


def batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps,  # noqa: A002
               cudnn_enabled=True):
    from .nn import functional as F
    return F.batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)


def instance_norm(input, weight, bias, running_mean, running_var, use_input_stats, momentum,  # noqa: A002
                  eps, cudnn_enabled=True):
    from .nn import functional as F
    return F.instance_norm(input, running_mean, running_var, weight, bias, use_input_stats,
                           momentum, eps)


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5,  # noqa: A002
               cudnn_enable=True):
    from .nn import functional as F
    return F.layer_norm(input, normalized_shape, weight, bias, eps)


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5, cudnn_enabled=True):  # noqa: A002
    from ._ops.normalization import checked_group_norm
    return checked_group_norm(input, num_groups, weight, bias, eps)


def _dropout(name, functional, inplace):
    """torch's top-level dropout functions: ``(input, p, train)``, all required."""
    def fn(input, p, train):  # noqa: A002
        from .nn import functional as F
        return getattr(F, functional)(input, p, train, inplace=inplace)
    fn.__name__ = fn.__qualname__ = name
    return fn


dropout = _dropout("dropout", "dropout", False)
alpha_dropout = _dropout("alpha_dropout", "alpha_dropout", False)
feature_alpha_dropout = _dropout("feature_alpha_dropout", "feature_alpha_dropout", False)
feature_dropout = _dropout("feature_dropout", "dropout2d", False)
dropout_ = _dropout("dropout_", "dropout", True)
alpha_dropout_ = _dropout("alpha_dropout_", "alpha_dropout", True)
feature_alpha_dropout_ = _dropout("feature_alpha_dropout_", "feature_alpha_dropout", True)
feature_dropout_ = _dropout("feature_dropout_", "dropout2d", True)


# -- Tensor methods ---------------------------------------------------------------------------
def _tensor_new(self, *args, **kwargs):
    """The legacy ``x.new(...)``: a tensor of self's dtype (from data, or of a size)."""
    from ._legacy import LEGACY
    for k in kwargs:  # (device= only, where torch's legacy constructor takes it)
        if k != "device":
            raise TypeError(f"new() got an unexpected keyword argument '{k}'")
    made = LEGACY[D._LEGACY_TYPE[self.dtype.name]](*args)
    return made if kwargs.get("device") is None else made.to(kwargs["device"])


def _sum_to_size(self, *size, **keyword):
    """Sum self down to ``size`` (a shape it can be broadcast from), as torch's SumBackward1."""
    from ._size import args_or_keyword
    for k in keyword:
        if k != "size":
            raise TypeError(f"sum_to_size() got an unexpected keyword argument '{k}'")
    size = args_or_keyword(size, keyword.get("size"), "sum_to_size", "size")
    shape = tuple(size[0]) if len(size) == 1 and isinstance(size[0], (tuple, list)) else size
    own = tuple(self.shape)
    lead = len(own) - len(shape)
    if lead < 0 or any(s not in (1, o) for s, o in zip(shape, own[lead:])):
        raise RuntimeError(f"size {{{', '.join(map(str, shape))}}} is not expandable to size "
                           f"{{{', '.join(map(str, own))}}}.")
    from ._ops.reduction import sum_to
    return sum_to(self, shape)  # torch's composite: a view only to drop leading dimensions


def _check_python_map(self, name):
    """torch's refusals of ``apply_``/``map_``: a tensor that requires grad, a GPU tensor."""
    if self.requires_grad:
        raise RuntimeError(f"Can't call {name}() on Variable that requires grad. Use "
                           f"var.detach().{name}() instead.")
    if self.device.type != "cpu":
        raise TypeError(f"{name} is only implemented on CPU tensors")


def _apply_(self, callable):  # noqa: A002
    """In place, each element replaced by ``callable(element)`` (CPU tensors, no grad)."""
    _check_python_map(self, "apply_")
    fn = np.vectorize(callable, otypes=[self._data.dtype])
    self._data[...] = fn(self._data) if self._data.size else self._data
    self._bump_version()
    return self


def _map_(self, other, callable):  # noqa: A002
    _check_python_map(self, "map_")
    other = np.broadcast_to(other._data, self._data.shape)
    fn = np.vectorize(callable, otypes=[self._data.dtype])
    if self._data.size:
        self._data[...] = fn(self._data, other)
    self._bump_version()
    return self


def _map2_(self, x, y, callable):  # noqa: A002
    """In place, ``callable(self_i, x_i, y_i)`` elementwise, ``x`` and ``y`` broadcast to
    ``self`` (CPU tensors, no grad)."""
    _check_python_map(self, "map2_")
    for name, other in (("x", x), ("y", y)):
        if other.dtype != self.dtype:
            raise TypeError(f"map2_: expected {self.type()} for argument '{name}' (got "
                            f"{other.type()})")
    args = [x.expand_as(self)._data, y.expand_as(self)._data]
    fn = np.vectorize(callable, otypes=[self._data.dtype])
    if self._data.size:
        self._data[...] = fn(self._data, *args)
    self._bump_version()
    return self


def _new_empty_strided(self, size, stride, dtype=None, device=None, requires_grad=False,
                       layout=None, pin_memory=False):
    """``empty_strided`` with this tensor's dtype and device unless given."""
    return empty_strided(size, stride, dtype=dtype or self.dtype,
                         device=device if device is not None else self.device,
                         requires_grad=requires_grad)


_METHODS = {
    "diff": "diff", "dist": "dist", "cov": "cov", "corrcoef": "corrcoef", "angle": "angle",
    "hsplit": "hsplit", "vsplit": "vsplit", "dsplit": "dsplit", "ravel": "ravel",
    "unsafe_chunk": "unsafe_chunk", "unsafe_split": "unsafe_split",
    "unsafe_split_with_sizes": "unsafe_split_with_sizes", "hardshrink": "hardshrink",
}


def install():
    from . import _ops
    namespace = {**vars(_ops.composite), **globals()}
    for method, fn in _METHODS.items():
        if not hasattr(Tensor, method):
            setattr(Tensor, method, namespace[fn])
    Tensor.new = _tensor_new
    Tensor.sum_to_size = _sum_to_size
    Tensor.put = _ops.indexing._put_method
    Tensor.apply_ = _apply_
    Tensor.map_ = _map_
    Tensor.map2_ = _map2_
    Tensor.new_empty_strided = _new_empty_strided
    Tensor.nonzero_static = nonzero_static
    Tensor.prelu = _ops.activation.prelu
    Tensor.itemsize = property(lambda self: self.element_size())
    Tensor.nbytes = property(lambda self: self.element_size() * self.numel())
    Tensor.is_meta = property(lambda self: type(self._data) is not np.ndarray
                              and self.device.type == "meta")
    # devices and layouts ember has no tensors of (programs test them to pick a code path)
    for flag in ("is_xpu", "is_mps", "is_ipu", "is_maia", "is_mtia", "is_xla",
                 "is_vulkan", "is_mkldnn", "is_quantized", "is_nested", "is_sparse",
                 "is_sparse_csr"):
        if not hasattr(Tensor, flag):
            setattr(Tensor, flag, property(lambda self: False))
    Tensor.is_shared = _is_shared
    Tensor.share_memory_ = _share_memory_
    Tensor.const_data_ptr = lambda self: self.data_ptr()
    Tensor.dim_order = lambda self, *, ambiguity_check=False: tuple(
        sorted(range(self.dim()), key=lambda d: -self.stride()[d]))
    Tensor.name = None  # named tensors: ember's tensors have no names


def _is_shared(self):
    """Whether the tensor's values are in memory that other processes can map."""
    from .utils.data._shared_memory import in_shared_memory
    return isinstance(self._data, np.ndarray) and in_shared_memory(self._data)


def _share_memory_(self):
    """Move the values to shared memory, so that processes the tensor is sent to (Hogwild
    workers) write the same pages; a no-op when they are there already. (Views and ``.data``
    aliases taken before keep the old memory; torch moves the storage under them.)"""
    if isinstance(self._data, np.ndarray) and not self.is_shared():
        from .utils.data._shared_memory import shared_copy
        self._data = shared_copy(self._data)
    return self


# -- memory formats, layout, and a few more top-level forms --------------------------------------
class memory_format:
    """How a copy's elements are laid out: ``preserve_format`` (a dense input's strides),
    ``contiguous_format`` (row-major), ``channels_last`` / ``channels_last_3d`` (NHWC /
    NDHWC)."""

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return "ember." + self.name


contiguous_format = memory_format("contiguous_format")
channels_last = memory_format("channels_last")
channels_last_3d = memory_format("channels_last_3d")
preserve_format = memory_format("preserve_format")
legacy_contiguous_format = memory_format("legacy_contiguous_format")


from ._ops.indexing import put  # noqa: E402,F401  (torch.put)


def nonzero_static(input, *, size, fill_value=-1):  # noqa: A002
    """``nonzero`` cut or padded (with ``fill_value``) to ``size`` rows."""
    from ._ops.counting import nonzero
    from ._state import vmap_hook
    vm = vmap_hook[0]
    if vm is not None:  # (torch has no rule for it: its fallback, not nonzero's refusal)
        out = vm.per_example_call("aten::nonzero_static", nonzero_static, input, size=size,
                                  fill_value=fill_value)
        if out is not None:
            return out
    found = nonzero(input)._data
    out = np.full((size, found.shape[1]), fill_value, dtype=np.int64)
    k = min(size, found.shape[0])
    out[:k] = found[:k]
    return _wrap(out)


def set_default_tensor_type(t):
    """Deprecated: the default float dtype from a legacy type (or its name)."""
    from ._legacy import LEGACY
    cls = LEGACY[t.rsplit(".", 1)[-1]] if isinstance(t, str) else t
    D.set_default_dtype(cls.dtype)


for _name in ("put", "nonzero_static"):
    __all__.append(_name)
__all__ += ["memory_format", "contiguous_format", "channels_last", "channels_last_3d",
            "preserve_format", "legacy_contiguous_format",
            "set_default_tensor_type"]


# -- a leaf's gradient dtype ----------------------------------------------------------------------
def _get_grad_dtype(self):
    """The dtype the engine casts this leaf's gradients to (its own unless set; None: any)."""
    from ._tensor import GRAD_DTYPE_OWN
    if self._grad_fn is not None:
        raise RuntimeError("grad_dtype can only be accessed on leaf tensors.")
    return self.dtype if self._grad_dtype is GRAD_DTYPE_OWN else self._grad_dtype


def _set_grad_dtype(self, value):
    from ._tensor import _c_type_name
    from .autograd import engine
    if self._grad_fn is not None:
        self.grad  # noqa: B018 - (torch's setter reads .grad first: its warning for a non-leaf)
        raise RuntimeError("grad_dtype can only be set on leaf tensors.")
    if value is not None and not isinstance(value, D.dtype):
        raise RuntimeError("grad_dtype must be a ember.dtype or None, but got "
                           f"{type(value).__name__}")
    grad = self._grad
    if grad is not None and value is not None and grad.dtype is not value:
        raise RuntimeError(
            f"Cannot set grad_dtype to '{value.scalar_name}' because there is already a "
            f"gradient with dtype '{_c_type_name(grad.dtype)}'. Please clear the gradient "
            "(.grad = None) before changing grad_dtype, or ensure the new grad_dtype matches "
            "the existing gradient's dtype.")
    self._grad_dtype = value
    engine.GRAD_DTYPES_SET[0] = True


Tensor.grad_dtype = property(_get_grad_dtype, _set_grad_dtype)
