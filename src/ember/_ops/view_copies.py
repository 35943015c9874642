"""torch's ``*_copy`` functions: a view op's result copied into a fresh contiguous tensor.

torch generates each from its view op's derivatives.yaml entry: one node named after the
view's with ``_copy`` (``ViewBackward0_copy``), the view's derivative and saved values, an
output that is no view. Here each is its view op's twin, made from the view op's declaration
(its kernel, then a copy; its formulas as they are), so nothing is declared twice.
"""
from __future__ import annotations

from .. import _dtype as D
from .._tensor import Tensor, _wrap_dim
from .registry import _parameters, op
from .shape import (_expand, _permute, _permute_dims, _shape_arg, _split, _squeeze_all,
                    _squeeze_dim, _squeeze_dims, _view_dtype, alias, infer_shape, select,
                    slice_, split_with_sizes, t, transpose, unbind, unsqueeze, view)
from .composite import unfold_dimension
from .diagonal import _diagonal_copy
from .spectral import unfold as _unfold
from .strided import _as_strided, _as_strided_call, _view_as_real, view_as_complex

__all__ = ["alias_copy", "as_strided_copy", "diagonal_copy", "expand_copy", "permute_copy", "select_copy",
           "slice_copy", "split_copy", "split_with_sizes_copy", "squeeze_copy", "t_copy",
           "transpose_copy", "unbind_copy", "unfold_copy", "unsqueeze_copy",
           "view_as_complex_copy", "view_as_real_copy", "view_copy"]


def _copied(kernel):
    """``kernel`` (of a view op) with its result, or each of its results, copied in the C
    order: torch's ``*_copy`` results are contiguous and share no memory."""
    def copying(*args):
        out = kernel(*args)
        if isinstance(out, tuple):
            return tuple(o.copy() for o in out)
        return out.copy()
    copying._ember_parameters = _parameters(kernel)
    return copying


def copy_of_view(d, kernel=None):
    """The ``*_copy`` op of view op ``d``: its node ``<d's node>_copy``, its formulas ``d``'s.
    ``kernel``: where torch's copy computes otherwise than the view (view_copy reshapes any
    layout), that kernel (it returns a new array or a view: it is copied)."""
    bare = d.bare_kernel
    twin = op(d.name + "_copy", node=d.node_name + "_copy", tensors=d.n_tensors,
              promote=d.promote, outputs=d.n_outputs, diff_outputs=d.diff_outputs,
              check=d.check, quiet=d.quiet, complex_grad=d.complex_grad,
              conj_saved=d.conj_saved, writes=1)(_copied(kernel or bare))  # (writes: copy_)
    keys = d.__dict__.get("_formula_keys", {})
    for idx, formula, _ in d.formulas:
        twin.grad(*(d.params[i] for i in idx), key=keys.get(idx))(formula)
    for idx, formula, _ in d.batched_formulas:
        twin.batched_grad(*(d.params[i] for i in idx))(formula)
    if "jvp_rules" in d.__dict__:
        twin.jvp_rules = dict(d.jvp_rules)
    return twin


def _reshaped(self, shape):
    # NOTE: torch's view_copy reshapes: a layout the view would refuse is copied all the same
    return self.reshape(infer_shape(shape, self.size))


_view_copy = copy_of_view(view, kernel=_reshaped)
_expand_copy = copy_of_view(_expand)
_permute_copy = copy_of_view(_permute)
_t_copy = copy_of_view(t)
_transpose_copy = copy_of_view(transpose)
_squeeze_all_copy = copy_of_view(_squeeze_all)
_squeeze_dim_copy = copy_of_view(_squeeze_dim)
_squeeze_dims_copy = copy_of_view(_squeeze_dims)
_unsqueeze_copy = copy_of_view(unsqueeze)
_select_copy = copy_of_view(select)
_slice_copy = copy_of_view(slice_)
_unfold_copy = copy_of_view(_unfold)
_as_strided_copy = copy_of_view(_as_strided)
_alias_copy = copy_of_view(alias)
_split_copy = copy_of_view(_split)
_split_with_sizes_copy = copy_of_view(split_with_sizes)
_unbind_copy = copy_of_view(unbind)
_view_as_real_copy = copy_of_view(_view_as_real)
_view_as_complex_copy = copy_of_view(view_as_complex)


def diagonal_copy(input, offset=0, dim1=0, dim2=1):  # noqa: A002
    """``input.diagonal(offset, dim1, dim2)`` as a new tensor (not a view)."""
    return _diagonal_copy(input, offset, dim1, dim2)


def view_copy(input, size=None, *, dtype=None):  # noqa: A002 - torch's names
    """``input.view(size)`` or ``input.view(dtype)`` as a new tensor (not a view)."""
    if size is None:  # (torch's two overloads: a size, or a dtype, also given by keyword)
        size = dtype
    if size is None:
        raise TypeError("view_copy() received an invalid combination of arguments - got "
                        "(Tensor), but expected one of:\n * (Tensor input, ember.dtype dtype, "
                        "*, Tensor out = None)\n * (Tensor input, tuple of ints size, *, "
                        "Tensor out = None)\n")
    if isinstance(size, D.dtype):  # (outside autograd, as the view is)
        return _view_dtype(input, size).clone()
    return _view_copy(input, _shape_arg((size,)))


def expand_copy(input, size, *, implicit=False):  # noqa: A002
    """``input.expand(size)`` as a new tensor (not a view)."""
    return _expand_copy(input, _shape_arg((size,)))


def permute_copy(input, dims):  # noqa: A002
    """``input.permute(dims)`` as a new tensor (not a view)."""
    return _permute_copy(input, _permute_dims((dims,), 2))


def t_copy(input):  # noqa: A002
    """``input.t()`` as a new tensor (not a view)."""
    return _t_copy(input)


def transpose_copy(input, dim0, dim1):  # noqa: A002
    """``input.transpose(dim0, dim1)`` as a new tensor (not a view)."""
    return _transpose_copy(input, dim0, dim1)


def squeeze_copy(input, dim=None):  # noqa: A002
    """``input.squeeze(dim)`` as a new tensor (not a view)."""
    if dim is None:
        return _squeeze_all_copy(input)
    if isinstance(dim, (tuple, list)):
        return _squeeze_dims_copy(input, tuple(dim))
    return _squeeze_dim_copy(input, dim)


def unsqueeze_copy(input, dim):  # noqa: A002
    """``input.unsqueeze(dim)`` as a new tensor (not a view)."""
    return _unsqueeze_copy(input, dim)


def select_copy(input, dim, index):  # noqa: A002
    """``input.select(dim, index)`` as a new tensor (not a view)."""
    return _select_copy(input, dim, index)


def slice_copy(input, dim=0, start=None, end=None, step=1):  # noqa: A002
    """``input`` sliced along ``dim`` as a new tensor (not a view)."""
    return _slice_copy(input, _wrap_dim(dim, input.dim()), start, end, step)


def unfold_copy(input, dimension, size, step):  # noqa: A002
    """``input.unfold(dimension, size, step)`` as a new tensor (not a view)."""
    return _unfold_copy(input, unfold_dimension(input, dimension, size, step), size, step)


def as_strided_copy(input, size, stride, storage_offset=None):  # noqa: A002
    """``input.as_strided(...)`` as a new tensor (not a view)."""
    return _as_strided_call(input, size, stride, storage_offset, 2, _as_strided_copy)


def alias_copy(input):  # noqa: A002
    """``input``'s data as a new tensor."""
    # torch copies an alias of ``input``: of an inference tensor outside inference mode, an
    # alias made without autograd, whose copy carries no tangent (as a detached one)
    return _alias_copy(input.detach() if input._is_inference else input)


def split_copy(input, split_size, dim=0):  # noqa: A002
    """``input.split(split_size, dim)`` as new tensors (not views)."""
    if isinstance(split_size, (list, tuple)):
        raise TypeError("split_copy(): argument 'split_size' (position 2) must be int, not "
                        f"{type(split_size).__name__}")
    return _split_copy(input, split_size, dim)


def split_with_sizes_copy(input, split_sizes, dim=0):  # noqa: A002
    """``input.split(split_sizes, dim)`` as new tensors (not views)."""
    return _split_with_sizes_copy(input, list(split_sizes), dim)


def unbind_copy(input, dim=0):  # noqa: A002
    """``input.unbind(dim)`` as new tensors (not views)."""
    return _unbind_copy(input, dim)


def view_as_real_copy(input):  # noqa: A002
    """``view_as_real(input)`` as a new tensor (not a view)."""
    return _view_as_real_copy(input)


def view_as_complex_copy(input):  # noqa: A002
    """``view_as_complex(input)`` as a new tensor (not a view)."""
    if isinstance(input, Tensor) and input.requires_grad:
        from ..autograd.grad_mode import is_grad_enabled
        if is_grad_enabled():  # (torch's generated copy has no complex derivative)
            raise RuntimeError("view_as_complex_copy does not support automatic "
                               "differentiation for outputs with complex dtype.")
    return _view_as_complex_copy(input)
