"""Forward-mode automatic differentiation, as ``torch.autograd.forward_ad``.

Inside ``with dual_level():``, ``make_dual(x, t)`` gives a tensor that carries the tangent ``t``;
every op then computes its outputs' tangents (Jacobian-vector products) beside its values, and
``unpack_dual(y)`` reads ``(primal, tangent)`` back.

One derivative formula per op: an op's JVP is derived from its reverse-mode formulas, which are
linear in the incoming gradient ``u``. For an op ``y = f(x)`` with ``vjp(u) = J^T u``,
``<vjp(u), t> = <u, J t>``, so ``J t`` is the gradient of ``<vjp(u), t>`` w.r.t. ``u`` (the
"double vjp" trick, done per op). Hot ops declare an explicit rule (``@op.jvp("self")``, right
below their ``@op.grad`` formulas) that overrides the derived one. View ops apply themselves to
the tangent, so a view's tangent is a view of its base's tangent and in-place ops (which update
tangents in place) stay visible through every alias, as in torch.
"""
from __future__ import annotations

import weakref
from typing import NamedTuple

import numpy as np

from .._backend import get_xp
from .._dtype import _BY_NP, is_differentiable_np
from .._state import forward_hook, set_hook, state, vmap_hook
from .._tensor import Tensor, _wrap
from .grad_mode import _DecoratorContextManager

__all__ = ["UnpackedDualTensor", "enter_dual_level", "exit_dual_level", "make_dual",
           "unpack_dual", "dual_level"]

_current_level = -1
_fwd_grad_enabled = [True]
# The active level's settings (saved into its _Level while another level is active):
_batch = [None]  # tangents' leading batch dimension, in a batched pass (see _batched_forward)
# Whether the active level is a torch.func transform's (jvp, jacfwd): see _transform_scalar_dtype
_in_transform = [False]


class _Level:
    """One dual level: the tensors holding a tangent at it (cleared when it exits), the
    attribute they hold it in, and the hook its ops go through.

    Levels nest only as torch.func's transforms nest (``jvp`` inside ``jvp``): an op at level
    ``k`` runs, and computes its tangent formulas, through level ``k - 1``'s hook (``below``),
    so a tangent at level ``k`` carries its own tangent at every level outside, as torch's
    functorch wrappers do."""

    def __init__(self, index, below):
        self.index = index
        self.attr = "_fw_grad" if index == 0 else f"_fw_grad{index}"
        self.tensors = weakref.WeakSet()
        self.below = below  # the hook the level's ops run through (None at the first level)
        self.hook = _ForwardHook(self)
        self.batch, self.in_transform = None, False  # (while another level is active)
        # the vmap levels a transform's level runs beneath (vmap(jvp(f)), see func/_lowering):
        # their batch dimensions are no dimensions to its formulas
        self.hides_vmap = ()

    def clear(self):
        for t in list(self.tensors):
            t.__dict__.pop(self.attr, None)
        self.tensors = weakref.WeakSet()


_level: _Level | None = None  # the active level (the innermost, but while a level's hook runs)
_levels: list = []  # the levels entered, outermost first


def _activate(level):
    """Make ``level`` the active one; returns what :func:`_restore` puts back."""
    global _level
    prev = _level
    if prev is not None:
        prev.batch, prev.in_transform = _batch[0], _in_transform[0]
    _level = level
    _show(level)
    return prev


def _restore(prev):
    global _level
    if _level is not None:
        _level.batch, _level.in_transform = _batch[0], _in_transform[0]
    _level = prev
    _show(prev)


def _show(level):
    """The flags of ``level`` (no batch, not a transform's where no level is active: a
    transform that has returned leaves no trace)."""
    if level is None:
        _batch[0], _in_transform[0] = None, False
    else:
        _batch[0], _in_transform[0] = level.batch, level.in_transform


class _at_level:
    """The ``with`` block runs with level number ``index`` active."""

    def __init__(self, index):
        self.level = _levels[index]

    def __enter__(self):
        self.prev = _activate(self.level) if _level is not self.level else False
        return self.level

    def __exit__(self, *exc):
        if self.prev is not False:
            _restore(self.prev)


# -- levels -------------------------------------------------------------------------------------
def enter_dual_level():
    """Enter a new forward grad level (only one may exist at a time, as in torch)."""
    if _levels:
        raise RuntimeError("Nested forward mode AD is not supported at the moment")
    return _enter_level()


def _enter_level():
    global _current_level
    below = _levels[-1].hook if _levels else None
    level = _Level(len(_levels), below)
    _activate(level)
    _batch[0], _in_transform[0] = None, False
    _levels.append(level)
    _current_level = level.index
    if _fwd_grad_enabled[0]:
        set_hook(forward_hook, level.hook)
    return _current_level


def exit_dual_level(*, level=None):
    """Exit a forward grad level, deleting every tangent associated with it."""
    global _current_level, _level
    if level is None:
        level = _current_level
    if level != _current_level:
        raise RuntimeError("Trying to exit a forward AD level that was not the last one that was "
                           "created. This is not supported.")
    if level < 0:
        raise RuntimeError("Dual level must be a positive number.")
    if _levels:
        _levels.pop().clear()
    _current_level = level - 1
    outer = _levels[-1] if _levels else None
    _level = None
    _activate(outer)
    # (an active vmap keeps the registry's slow path)
    set_hook(forward_hook,
             outer.hook if outer is not None and _fwd_grad_enabled[0] else vmap_hook[0])


class dual_level(_DecoratorContextManager):
    """Context manager for forward AD: all forward AD computation happens inside it."""

    def __enter__(self):
        return enter_dual_level()

    def __exit__(self, exc_type, exc_value, traceback):
        exit_dual_level()


class transform_level:
    """A dual level of a torch.func transform (``jvp``, ``jacfwd``), whose formulas read
    Python numbers as torch's functorch layer does. Inside another transform's level it
    nests (``jvp`` of ``jvp``); inside a level the user entered it is torch's error."""

    def __enter__(self):
        if _levels and not _in_transform[0]:
            raise RuntimeError("Nested forward mode AD is not supported at the moment")
        level = _enter_level()
        _in_transform[0] = True
        return level

    def __exit__(self, *exc):
        exit_dual_level()


def _is_fwd_grad_enabled() -> bool:
    return _fwd_grad_enabled[0]


class _set_fwd_grad_enabled(_DecoratorContextManager):
    """Switch forward gradient computation on or off (tangents then stop propagating)."""

    def __init__(self, mode: bool) -> None:
        self.prev = _fwd_grad_enabled[0]
        self.mode = bool(mode)
        _set_enabled(self.mode)

    def clone(self):
        return self.__class__(self.mode)

    def __enter__(self) -> None:
        pass

    def __exit__(self, *exc) -> None:
        _set_enabled(self.prev)


def _set_enabled(mode):
    _fwd_grad_enabled[0] = mode
    set_hook(forward_hook, _levels[-1].hook if (mode and _levels) else vmap_hook[0])


# -- dual tensors -------------------------------------------------------------------------------
class UnpackedDualTensor(NamedTuple):
    """Namedtuple returned by :func:`unpack_dual`: the primal and tangent of a dual tensor."""

    primal: Tensor
    tangent: Tensor | None


def make_dual(tensor, tangent, *, level=None):
    """A new tensor aliased to ``tensor`` that carries ``tangent`` (backward differentiable)."""
    if level is None:
        level = _current_level
    if level < 0 or level >= len(_levels):
        raise RuntimeError("Trying to create a dual Tensor for forward AD but no level exists, "
                           "make sure to enter_dual_level() first.")
    with _at_level(level):
        return _make_dual(tensor, tangent, level)


def _make_dual(tensor, tangent, level):
    if not (tensor.is_floating_point() or tensor.is_complex()):
        raise ValueError("Expected primal to be floating point or complex, but got: "
                         f"{tensor.dtype}")
    if not (tangent.is_floating_point() or tangent.is_complex()):
        raise ValueError("Expected tangent to be floating point or complex, but got: "
                         f"{tangent.dtype}")
    if _tangent_of(tensor) is not None:
        raise RuntimeError("Making a dual Tensor based on a Tensor that already has a forward "
                           f"gradient at the same level {level} is not supported.")
    batch = _batch[0]
    if tuple(tangent.shape) != (() if batch is None else (batch,)) + tuple(tensor.shape):
        raise RuntimeError("Trying to set a forward gradient that has a different size than "
                           "that of the original Tensor, this is not supported. Tensor is of "
                           f"size {list(tensor.shape)} while the given forward gradient is of "
                           f"size {list(tangent.shape)}.")
    _refuse_tangent_into_overlap(tensor, tangent)
    if batch is None and vmap_hook[0] is None:  # (under vmap the layouts are ember's own)
        tangent = _in_primal_layout(tensor, tangent)
    dual = _alias(tensor)
    # (torch's make_dual sets the tangent in its autograd layer, which does not run in
    # inference mode, nor for a call on inference tensors only: the alias then has none)
    if not (state.inference or (tensor._is_inference and tangent._is_inference)):
        _set_tangent(dual, tangent)
    return dual


def _refuse_tangent_into_overlap(tensor, tangent):
    """torch keeps a tangent laid out as its primal: one of another layout is copied into a
    tensor of the primal's strides, which an expanded primal (several elements in one
    location) refuses as any write into it."""
    from .._ops.inplace import _INTERNAL_OVERLAP, has_internal_overlap
    if vmap_hook[0] is not None or not has_internal_overlap(tensor._data):
        return  # (under vmap an unbatched primal is expanded over the batch: ember's own)
    strides = [(n, st) for n, st in zip(tensor._data.shape, tensor._data.strides) if n > 1]
    theirs = [(n, st) for n, st in zip(tangent._data.shape, tangent._data.strides) if n > 1]
    if strides != theirs:
        raise RuntimeError(_INTERNAL_OVERLAP)


def _same_layout(a, b):
    """torch's ``has_same_meta``: one storage offset, size, storage size, and strides wherever
    a dimension has more than one element."""
    return (a.storage_offset() == b.storage_offset() and a.shape == b.shape
            and all(n <= 1 or sa == sb for n, sa, sb in zip(a.shape, a.stride(), b.stride()))
            and a.untyped_storage().nbytes() == b.untyped_storage().nbytes())


def _in_primal_layout(primal, tangent):
    """``tangent`` as torch keeps it: as given when laid out as ``primal``, else copied
    (``copy_``, recorded) into a tensor of the primal's strides, for a view primal a view of
    a new tensor laid out as its base."""
    if _same_layout(primal, tangent):
        return tangent
    base = primal._base
    if base is None:
        laid_out = tangent.new_empty_strided(primal.shape, primal.stride())
    else:
        # (zeros around the view, as torch's new base tangent: an op that reads the storage
        # beyond the view, as as_strided does, reads zeros there)
        new_base = tangent.new_empty_strided(base.shape, base.stride())
        new_base._data.fill(0)  # (a new tensor: zeros without a write its version counts)
        laid_out = new_base.as_strided(primal.shape, primal.stride(), primal.storage_offset())
    return laid_out.copy_(tangent)


def unpack_dual(tensor, *, level=None):
    """``(primal, tangent)`` of ``tensor``: a view of its primal and its tangent as is (at
    ``level``, the innermost by default: the primal and the tangent keep their tangents at
    the levels outside)."""
    if level is None:
        level = _current_level
    if level < 0:
        return UnpackedDualTensor(tensor, None)
    if not isinstance(tensor, Tensor):
        raise TypeError("_unpack_dual(): argument 'dual' (position 1) must be Tensor, not "
                        f"{type(tensor).__name__}")
    if level >= len(_levels):  # (a level that does not exist holds no tangent)
        return UnpackedDualTensor(_alias(tensor, primal=True), None)
    with _at_level(level):
        tangent = _tangent_of(tensor) if _fwd_grad_enabled[0] else None  # none while disabled
        return UnpackedDualTensor(_alias(tensor, primal=True), tangent)


def _alias(t, primal=False):
    """A view of ``t`` sharing its data and history but none of its tangent: make_dual's
    (``view``), or ``primal``, unpack_dual's (torch's ``_fw_primal``, inside a dual level
    whether ``t`` has a tangent or not)."""
    from .._ops.shape import fw_primal, view
    prev = forward_hook[0]
    # (through the levels outside the active one: the alias keeps its tangents there)
    set_hook(forward_hook, None if _level is None else _level.below)
    try:
        return fw_primal(t) if primal else view(t, tuple(t.shape))
    finally:
        set_hook(forward_hook, prev)


def _set_tangent(t, tangent, level=None):
    """Give ``t`` ``tangent`` at ``level`` (the active one by default)."""
    if level is None:
        level = _level
    attr = "_fw_grad" if level is None else level.attr
    # NOTE: a tensor already holding a tangent is in the level's set: adding it again would
    # compare it with itself by value (WeakSet compares referents with ==)
    tracked = t.__dict__.get(attr) is not None
    t.__dict__[attr] = tangent
    if level is not None:
        if not tracked:
            level.tensors.add(t)
        fn = t._grad_fn
        if fn is not None:
            # NOTE: a node that saved this output hands backward a new tensor around the same
            # data (graph.unpack_output); under create_graph that tensor must carry the tangent
            # too, or forward-over-reverse (hessian, jacfwd(jacrev)) loses the term.
            saved = fn.__dict__.get("_saved_tangents")
            if saved is None or any(lv not in _levels for lv in saved):
                saved = fn._saved_tangents = {lv: tans for lv, tans in (saved or {}).items()
                                              if lv in _levels}
            saved.setdefault(level, {})[t._output_nr] = tangent


def restore_saved_tangent(node, output_nr, t):
    """Give ``t`` (a saved output unpacked as a tensor) the tangents its original had."""
    for level, tangents in node._saved_tangents.items():
        if level in _levels and output_nr in tangents:
            _set_tangent(t, tangents[output_nr], level)


def _tangent_of(t):
    """``t``'s tangent; a view that has none takes the matching view of its base's tangent."""
    level = _level
    if level is None:
        return None
    attr = level.attr
    tan = t.__dict__.get(attr)
    if tan is None and t._base is not None:
        base_tan = t._base.__dict__.get(attr)
        if base_tan is not None:
            from .._ops.views import replay
            tan = (replay(t._view_chain, base_tan) if _batch[0] is None
                   else _batched_forward.replay_view(t, base_tan))
            _set_tangent(t, tan)
    return tan


# -- the per-op hook ----------------------------------------------------------------------------
def _has_tangents(dt):
    """Whether a result of NumPy dtype ``dt`` gets a tangent: a float or complex one, bfloat16
    and the float8 types included."""
    return is_differentiable_np(dt)


def _unseen(op, args):
    """Whether torch's autograd layer, forward AD's formulas included, does not see this call,
    so that its result gets no tangent: in inference mode, or when every tensor it reads is an
    inference tensor (even a dual made of one). A Python number in a tensor's place (``d *
    0.5``, ``2 - d``) is torch's wrapped number, a normal tensor: such a call is seen."""
    if state.inference:
        return True
    if op.wraps_number:  # (a Scalar overload torch writes as its Tensor one, see wraps_number)
        return False
    operands = args[:op.n_tensors]
    if any(isinstance(a, (bool, int, float, complex)) for a in operands):
        return False
    tensors = [a for a in operands if isinstance(a, Tensor)]
    return bool(tensors) and all(a._is_inference for a in tensors)


def _copies_self(op, args):
    """Whether torch's kernel, run without its autograd layer (see _unseen) outside inference
    mode, copies ``self`` into its fresh result with ``copy_``, whose autograd layer does run
    and carries ``self``'s tangent into the result (op()'s ``copies``)."""
    if state.inference or not op.copies:
        return False
    return op.copies(*args) if callable(op.copies) else True


def _refuse_out_function(name):
    raise NotImplementedError(f"Trying to use forward AD with {name} that does not support it "
                              "because it is an out= function")


def _check_out_function(op, args, tangents):
    """torch's kernels that write their result with an out= function (nan_to_num's
    ``nan_to_num_out``, mean's ``sum_out``: an op's ``out_function``, a name or a function of
    the call's arguments giving one or None) meet that function's autograd layer. For a call
    torch's own autograd layer does not see (see _unseen) outside inference mode, the out=
    function's layer refuses a ``self`` that has a tangent: torch's NotImplementedError."""
    name = op.out_function
    if callable(name):
        name = name(*args)
    if name and tangents[0] is not None:
        _refuse_out_function(name)


def check_out_function(name, t):
    """What _check_out_function does for ops ember composes of others (deg2rad's
    ``deg2rad_out``): torch's refusal when ``t`` is an inference dual with a tangent."""
    if (isinstance(forward_hook[0], _ForwardHook) and not state.inference and t._is_inference
            and _tangent_of(t) is not None):
        _refuse_out_function(name)


def _copied_tangent(op, args, out, tangents):
    """The tangent copy_ carries into the result of a kernel that copies ``self`` (see
    _copies_self): into a part of it, the op's own for ``self``'s tangent alone; into the
    whole result, a copy of that tangent, in its own dtype (``d.to(float64)``'s is float32)."""
    if op.copies == "whole":
        from .._ops.shape import clone
        return clone(tangents[0])
    return _op_jvp(op, args, out, tangents[:1] + [None] * (len(tangents) - 1))


# The differentiable ops whose tangents at a nested level (jvp of jvp) agree with torch's: each
# ran under torch.func's nested jvp on op-table samples and matched it
# (tests/ops/test_nested_jvp.py). Every other differentiable op refuses a nested level rather
# than risk a tangent that misses second-order terms or differs from torch's where a formula
# meets a zero, an empty input or a NaN (native_layer_norm, native_batch_norm, cholesky_inverse,
# cumprod, scatter_reduce, linalg_det and linalg_slogdet gave other values;
# binary_cross_entropy a float64 second-order tangent for float32 inputs); first-order
# tangents are unaffected.
_NESTED_VERIFIED = frozenset({
    "_fft_c2c", "_fft_c2r", "_fft_r2c", "_fw_primal", "_index_put_impl", "_log_softmax",
    "_log_softmax_backward_data", "_prelu_kernel_backward", "_reshape_alias", "_safe_softmax",
    "_softmax", "_softmax_backward_data", "_to_copy", "_unsafe_view", "_view_of_base",
    "_view_of_base_backward", "abs", "acos", "acosh", "adaptive_avg_pool2d",
    "adaptive_avg_pool3d", "adaptive_max_pool2d", "adaptive_max_pool3d", "add", "addcdiv",
    "addcmul", "addmm", "affine_grid_generator", "alias", "amax", "amin", "angle", "as_strided",
    "asin", "asinh", "atan", "atan2", "atanh", "avg_pool2d", "avg_pool3d",
    "binary_cross_entropy_with_logits", "bmm", "cat", "ceil", "celu", "celu_",
    "channel_shuffle", "clamp", "clamp_max", "clamp_min", "clone", "col2im", "complex", "conj",
    "conj_physical", "constant_pad_nd", "convolution", "copy", "copysign", "cos", "cosh",
    "cummax", "cummin", "cumsum", "diag_embed", "diagonal", "diagonal_backward",
    "diagonal_copy", "digamma", "dist", "div", "dot", "elu", "elu_", "embedding", "erf", "erfc",
    "erfinv", "exp", "exp2", "expand", "expm1", "fill", "flip", "floor", "fmax", "fmin", "fmod",
    "frac", "fractional_max_pool2d", "fractional_max_pool3d", "frexp", "gather", "gelu",
    "hardshrink", "hardswish", "hardtanh", "hypot", "i0", "im2col", "index", "index_add",
    "index_fill", "index_select", "kthvalue", "leaky_relu", "leaky_relu_", "lerp", "lgamma",
    "linalg_cholesky", "linalg_cholesky_ex", "linalg_cross", "linalg_eig", "linalg_inv",
    "linalg_inv_ex", "linalg_lstsq", "linalg_lu", "linalg_lu_factor_ex", "linalg_lu_solve",
    "linalg_matrix_exp", "linalg_pinv", "linalg_qr", "linalg_solve", "linalg_solve_ex",
    "linalg_solve_triangular", "linalg_svd", "linalg_vector_norm", "log", "log10", "log1p",
    "log2", "log_sigmoid", "logaddexp", "logaddexp2", "logcumsumexp", "logit", "logsumexp",
    "lu_unpack", "masked_fill", "masked_scatter", "masked_select", "max",
    "max_pool2d_with_indices", "max_pool3d_with_indices", "max_unpool2d", "max_unpool3d",
    "maximum", "mean", "median", "min", "minimum", "mish", "mm", "mode", "mse_loss",
    "mse_loss_backward", "mul", "mv", "mvlgamma", "nan_to_num", "nanmedian", "narrow_copy",
    "native_dropout", "native_group_norm", "native_layer_norm_backward", "neg", "nextafter",
    "nll_loss", "nll_loss2d", "norm", "pad_backward", "permute", "pixel_shuffle",
    "pixel_unshuffle", "polar", "polygamma", "pow", "prod", "put", "reciprocal",
    "reflection_pad1d", "reflection_pad2d", "reflection_pad3d", "relu", "remainder", "repeat",
    "replication_pad1d", "replication_pad2d", "replication_pad3d", "roll", "rot90", "round",
    "rrelu_with_noise", "rsqrt", "rsub", "scatter", "scatter_add", "select", "select_backward",
    "sgn", "sigmoid", "sigmoid_backward", "sign", "silu", "sin", "sinc", "sinh", "slice",
    "slice_backward", "smooth_l1_loss", "smooth_l1_loss_backward", "softplus", "softshrink",
    "sort", "special_entr", "special_erfcx", "special_i0e", "special_i1", "special_i1e",
    "special_log_ndtr", "special_ndtr", "special_ndtri", "special_xlog1py", "split",
    "split_with_sizes", "sqrt", "squeeze", "stack", "std", "std_mean", "sub", "sum", "t",
    "take", "take_along_dim", "tan", "tanh", "tanh_backward", "threshold", "threshold_", "topk",
    "trace", "transpose", "tril", "triu", "trunc", "unbind", "unfold", "unsafe_split",
    "unsafe_split_with_sizes", "unsqueeze", "upsample_bilinear2d", "upsample_linear1d",
    "upsample_nearest1d", "upsample_nearest2d", "var", "var_mean", "vdot", "view",
    "view_as_complex", "view_as_real", "view_scatter", "where", "xlogy", "zero"})


def _check_nested(level, op):
    """Refuse ``op`` at a nested level (jvp of jvp) unless its nested tangents are verified
    (an op without derivatives, a comparison say, gives no tangent: nothing to get wrong)."""
    if level.index and op.differentiable and op.name not in _NESTED_VERIFIED:
        _refuse_nested(op)


def _refuse_nested(op):
    raise NotImplementedError(f"ember: forward-mode AD nested in another level (jvp of jvp) "
                              f"is not supported through {op.name}: its second-order tangent "
                              "terms are not computed. Use jvp of jacrev/vjp instead.")


class _ForwardHook:
    """Called by the op registry for every op while a dual level is active: ``level``'s.

    The op and its tangent formulas run through the levels outside (``level.below``; none
    for the first level), with this level active while its own formulas are computed."""

    def __init__(self, level):
        self.level = level

    def _enter(self):
        """Activate this hook's level, the ops running through the levels outside; returns
        what :meth:`_leave` puts back."""
        level = self.level
        set_hook(forward_hook, level.below)
        return _activate(level) if _level is not level else False

    def _leave(self, prev):
        set_hook(forward_hook, self)
        if prev is not False:
            _restore(prev)

    def dispatch(self, op, args):
        from .._ops.registry import dispatch
        level = self.level  # (_enter written out: this runs for every op)
        set_hook(forward_hook, level.below)
        prev = _activate(level) if _level is not level else False
        try:
            out = dispatch(op, args)
            tangents = _input_tangents(op, args)
            if tangents is not None:
                _check_nested(level, op)
                unseen = _unseen(op, args)
                if unseen and not state.inference:
                    _check_out_function(op, args, tangents)
                if op.differentiable and not unseen:
                    _attach(out, _op_jvp(op, args, out, tangents))
                elif op.differentiable and _copies_self(op, args) and tangents[0] is not None:
                    _attach(out, _copied_tangent(op, args, out, tangents))
        finally:
            set_hook(forward_hook, self)
            if prev is not False:
                _restore(prev)
        return out

    def dispatch_inplace(self, op, args):
        from .._ops.inplace import dispatch_inplace
        prev = self._enter()
        try:
            tangents = _input_tangents(op, args)
            if tangents is None or not op.differentiable or state.inference:
                return dispatch_inplace(op, args)  # (in inference mode its tangent stays)
            _check_nested(self.level, op)
            _refuse_inplace(op, tangents)
            self_ = args[0]
            old = _snapshot(self_)
            dispatch_inplace(op, args)
            if _has_tangents(self_._data.dtype):
                new_t = _op_jvp(op, (old,) + tuple(args[1:]), self_, tangents)
                _write_tangent_inplace(self_, new_t)
        finally:
            self._leave(prev)
        return self_

    def tangent(self, t):
        """``t``'s tangent (None when it has none)."""
        prev = self._enter()
        try:
            return _tangent_of(t)
        finally:
            self._leave(prev)

    def view_inplace(self, t, view_op, args, tangent):
        """An in-place view op (``t_``, ``squeeze_``, ...) gave ``t`` a new geometry: its
        tangent (``tangent`` before the change) takes the same view, as do its tangents at
        the levels outside (each nested level holds its own tangent of ``t``)."""
        below = self.level.below
        outer = None if below is None else below.tangent(t)
        if outer is not None:
            below.view_inplace(t, view_op, args, outer)
        prev = self._enter()
        try:
            rest = tuple(args[1:])
            if _batch[0] is None:
                new = view_op(tangent, *rest)
            else:
                new = _batched_forward.per_row(lambda row: view_op(row[0], *rest), [tangent])
            _set_tangent(t, new)
        finally:
            self._leave(prev)

    def function_jvp(self, cls, ctx, args, outputs):
        """Tangents of a custom Function's outputs, from its ``jvp`` staticmethod."""
        prev = self._enter()
        try:
            _function_jvp(cls, ctx, args, outputs)
        finally:
            self._leave(prev)


def _input_tangents(op, args):
    """The tangents of an op's tensor inputs, or None when none has one."""
    out = None
    n = op.n_tensors
    for k in range(n):
        a = args[k]
        if isinstance(a, Tensor):
            tan = _tangent_of(a)
            if tan is not None:
                if out is None:
                    out = [None] * n
                out[k] = tan
    return out


def _snapshot(t):
    """``t`` as it is now (before an in-place op), keeping its reverse-mode history and, at
    the levels outside the active one, a copy of its tangents (the op updates them too)."""
    snap = _wrap(t._data.copy())
    snap._grad_fn, snap._output_nr = t._grad_fn, t._output_nr
    snap._requires_grad = t._requires_grad
    if _level is not None and _level.index:
        for k in range(_level.index):
            with _at_level(k):
                tan = _tangent_of(t)
                if tan is not None:
                    _set_tangent(snap, _snapshot(tan))
    return snap


def _attach(out, tangents):
    if tangents is None:
        return
    if isinstance(out, Tensor):
        if tangents is not None:
            _set_tangent(out, tangents)
        return
    for o, t in zip(out, tangents):
        if t is not None and isinstance(o, Tensor):
            _set_tangent(o, t)


def _refuse_inplace(op, tangents):
    """torch's refusal of an in-place op without a forward-mode formula (its ``name_``),
    before the op writes."""
    rules = op.__dict__.get("jvp_rules")
    if rules is not None:
        for name, t in zip(op.params, tangents):
            refuse = getattr(rules.get(name), "refuse_inplace", None)
            if t is not None and refuse is not None:
                refuse()


def _write_tangent_inplace(t, new):
    """Update ``t``'s tangent in place, so that views of it (and of its base) see the change."""
    from .._ops.pointwise import copy
    if new is None:
        new = _zeros_tangent(t)
    tan = _tangent_of(t)
    if tan is None:
        base = t._base
        if base is None:
            # (torch's in-place formula on a tensor without a tangent gives it the formula's
            # result as it is: a new tensor, at version 0, of the formula's dtype)
            _set_tangent(t, new if _owned(new) else new.clone())
            return
        _set_tangent(base, _zeros_tangent(base))
        tan = _tangent_of(t)
    copy.inplace(tan, new)


def _owned(t):
    """Whether ``t`` is a tangent no other tensor holds: no view, and no tangent of a
    tensor of the level."""
    if t._base is not None:
        return False
    return _level is None or all(u.__dict__.get(_level.attr) is not t for u in _level.tensors)


def _zeros_tangent(t):
    batch = () if _batch[0] is None else (_batch[0],)
    return _wrap(get_xp(t._data).zeros(batch + t._data.shape, t._data.dtype))


def _op_jvp(op, args, out, tangents):
    if _batch[0] is not None:
        tan = _batched_forward.op_jvp(op, args, out, tangents)
    else:
        tan = _op_jvp_one(op, args, out, tangents)
    return _transform_scalar_dtype(op, args, out, tan) if _in_transform[0] else tan


def _op_jvp_one(op, args, out, tangents):
    """The output tangent(s) of one op call, by its explicit rule, as a view, or derived."""
    if op.view:
        return _view_jvp(op, args, tangents)
    rules = op.__dict__.get("jvp_rules")
    if rules is not None and not isinstance(out, Tensor):
        # an op of several outputs declares one joint rule for all its outputs (slogdet's), or
        # a rule only to refuse (torch's NotImplementedError)
        for name, t in zip(op.params, tangents):
            if t is not None and name in rules:
                fn = rules[name]
                if getattr(fn, "joint_inputs", None) is None:
                    fn()
                return _explicit_jvp_outputs(op, fn, args, out, tangents)
    if rules is not None and isinstance(out, Tensor):
        names = op.params
        if all(t is None or names[k] in rules for k, t in enumerate(tangents)):
            return _zero_term_dtype(op, args, out, tangents,
                                    _explicit_jvp(op, rules, args, out, tangents))
    if _batched_forward._elementwise(op, out, tangents):
        # (the formula with the tangent for grad, not derived at grad = 0, where a formula's
        # masks and wheres read the zero gradient: sinc's, logit's at their edges)
        return _zero_term_dtype(op, args, out, tangents,
                                _batched_forward._elementwise_jvp(op, args, out, tangents))
    return _zero_term_dtype(op, args, out, tangents, _derived_jvp(op, args, out, tangents))


# ember.func's count of the batch dimensions of the physical values the op now running reads
# that belong to vmap levels hidden from the active level (``_Level.hides_vmap``)
hidden_batch_dims = [lambda level: 0]


def _transform_scalar_dtype(op, args, out, tan):
    """Inside a torch.func transform, torch's formulas read a Python float operand of a
    tensor-tensor op (``x * 2.5``, ``x + 1.5``: ``op.number_operands``) as a plain 0-dim
    float64 (complex128) tensor, no longer a wrapped number: where the result is 0-dim, its
    tangent is float64 (complex128), while the primal keeps the tensor's dtype. Under
    ``vmap(jvp(f))`` a result is 0-dim when each example's is."""
    if not (_in_transform[0] and isinstance(tan, Tensor)):
        return tan
    hidden = _level.hides_vmap
    if (out._data.ndim and not hidden) or not getattr(op, "number_operands", False):
        return tan
    if hidden and out._data.ndim != hidden_batch_dims[0](_level):
        return tan
    numbers = [a for a in args[:2] if isinstance(a, (float, complex, np.floating,
                                                        np.complexfloating))]
    if not numbers:
        return tan
    from .._dtype import complex128, float64, promote_types
    wide = complex128 if any(isinstance(a, (complex, np.complexfloating)) for a in numbers) \
        else float64
    target = promote_types(_BY_NP[tan._data.dtype], wide)
    return tan if target.np == tan._data.dtype else tan.to(target)


def _zero_term_dtype(op, args, out, tangents, tan):
    """torch's formulas multiply some inputs' tangents by a Python number of the call
    (``maybe_multiply(other_t, alpha)`` in add's, ``value`` in addcmul's and addcdiv's), an
    input without a tangent standing there as a ZeroTensor; a ZeroTensor's product with a
    float reads the float as a float64 tensor rather than as a wrapped number. So where all
    is 0-dim, the tangent of such a call is float64 (complex128), whatever the result's
    dtype. ``op.zero_term_scalar``: (the number's name, the names of the inputs it scales)."""
    spec = getattr(op, "zero_term_scalar", None)
    if spec is None or not isinstance(tan, Tensor) or out._data.ndim != 0:
        return tan
    name, scaled = spec
    value = args[op.index[name]]
    if not isinstance(value, (float, np.floating)) or value == 1:
        return tan
    if all(op.index[n] < len(tangents) and tangents[op.index[n]] is not None for n in scaled):
        return tan
    from .._dtype import complex128, float64
    wide = complex128 if tan._data.dtype.kind == "c" else float64
    return tan.to(wide)


def _view_jvp(op, args, tangents):
    """A view op is linear in its input: its tangent is the same view of the input's tangent."""
    tan = tangents[0]
    if tan is None:
        return None
    if op.name == "alias":  # (x[...], movedim of a 0-dim tensor) torch's alias passes its
        return tan  # input's tangent on as it is: the same tensor, no new view of it
    return op(tan, *args[1:])


def _explicit_jvp(op, rules, args, out, tangents):
    """Sum of the op's declared per-input rules ``rule(input_t, <saved names>...)``."""
    total = None
    joint_done = set()
    for k, tan in enumerate(tangents):
        if tan is None:
            continue
        fn = rules[op.params[k]]
        names = getattr(fn, "joint_inputs", None)
        if names is not None:  # (one rule of several inputs' tangents, called once)
            if fn in joint_done:
                continue
            joint_done.add(fn)
            tan = tuple(_tangent_at(tangents, op.index[n]) for n in names)
        r = fn(tan, *_rule_args(fn, op, args, out))
        total = r if total is None else total + r
    if total is None:  # (a joint rule may give none: copysign with other's tangent alone)
        return None
    if any(total is tan for tan in tangents):  # (add's self_t: torch's sum with the other
        total = total.clone()  # input's zeros is a new tensor)
    # (an op whose torch formula gives its tangent a dtype of its own says so)
    return _fit(total, out, keep_dtype=getattr(op, "tangent_keeps_dtype", False),
                dtype=_tangent_dtype(op, args, out, tangents))


def _explicit_jvp_outputs(op, fn, args, out, tangents):
    """The tangents of an op of several outputs from its joint rule, one per output (None
    for an output without one), each of its output's shape and dtype."""
    tan = tuple(_tangent_at(tangents, op.index[n]) for n in fn.joint_inputs)
    results = fn(tan, *_rule_args(fn, op, args, out))
    return [None if r is None else _fit(r, o) for r, o in zip(results, out)]


def _tangent_at(tangents, k):
    return tangents[k] if k < len(tangents) else None


_RULE_PARAMS = {}


def _rule_args(fn, op, args, out):
    """What the parameters of a rule or formula (after its first) receive, from the call."""
    names = _RULE_PARAMS.get(fn)
    if names is None:
        import inspect
        names = _RULE_PARAMS[fn] = tuple(inspect.signature(fn).parameters)[1:]
    vals = []
    for name in names:
        if name == "result":
            vals.append(out)
        elif name.endswith("_shape") and name[:-6] in op.index:
            vals.append(_shape(args[op.index[name[:-6]]]))
        else:
            vals.append(args[op.index[name]])
    return vals


def _shape(a):
    return tuple(a._data.shape) if isinstance(a, Tensor) else np.shape(a)


def _tangent_dtype(op, args, out, tangents):
    """The dtype of ``out``'s tangent: ``out``'s, or wider where an input's tangent is of a
    wider precision (torch's formulas, linear in the tangents, promote them with the primals:
    a float64 tangent of a float32 tensor stays float64 through ``sin``, ``sum``, ...), except
    where the call names the dtype (``op.tangent_dtype_param``: ``x.half()``'s is float16)."""
    dt = out._data.dtype
    param = getattr(op, "tangent_dtype_param", None)
    if param is not None and args[op.index[param]] is not None:
        return dt
    lead = 0 if _batch[0] is None else 1
    for t in tangents:
        if t is None or t._data.dtype == dt or t._data.dtype.kind not in "fc":
            continue
        if out._data.ndim and t._data.ndim == lead:
            continue  # (a 0-dim one does not widen a result with dimensions: torch's promotion)
        td = t._data.dtype
        if dt.kind != "c" and td.kind == "c":  # (a complex input of a real result: abs)
            td = np.finfo(td).dtype
        dt = np.promote_types(dt, td)
    return dt


def _fit(t, out, keep_dtype=False, dtype=None):
    """A tangent with ``out``'s shape and dtype (explicit rules may broadcast or promote;
    ``keep_dtype``: the rule's dtype stays; ``dtype``: this one, a wider tangent's)."""
    if t is None:
        return None
    dtype = out._data.dtype if dtype is None else dtype
    if not isinstance(t, Tensor):
        t = _wrap(get_xp(out._data).asarray(t, dtype=dtype))
    if t._data.shape != out._data.shape:
        # (a new tensor, as torch's sum of the formula's terms: no view of the rule's result,
        # even where growing dimensions of one element leaves it contiguous)
        from .._ops.shape import expand
        t = expand(t, tuple(out._data.shape)).clone()
    if t._data.dtype != dtype and not keep_dtype:
        t = t.to(_BY_NP[dtype])
    return t


def _derived_jvp(op, args, out, tangents):
    """J t from the op's reverse formulas: the gradient of <vjp(u), t> w.r.t. u at u = 0."""
    from .._ops.reduction import sum_all, sum_to
    from .._ops.registry import record_all
    from . import grad as autograd_grad
    results = (out,) if isinstance(out, Tensor) else tuple(out)
    diff = op.diff_outputs
    wanted = [_has_tangents(r._data.dtype) and (diff is None or diff[k])
              for k, r in enumerate(results)]
    if not any(wanted):
        return None
    # (inside a nested level the formulas must run on tensors, whose tangents at the levels
    # outside they carry: jvp of jvp)
    create = (state.grad_enabled and (
        any(isinstance(a, Tensor) and a._requires_grad for a in args[:op.n_tensors])
        or any(t is not None and t._requires_grad for t in tangents))) or _level.index > 0
    # (an inference tensor read by the call, or an inference tangent, is only a value here:
    # torch's formulas save nothing, so the graph the derivation records must not refuse it)
    args = tuple(_wrap(a._data) if isinstance(a, Tensor) and a._is_inference else a
                 for a in args)
    tangents = [_wrap(t._data) if t is not None and t._is_inference else t for t in tangents]
    prev = state.grad_enabled
    state.grad_enabled = True
    try:
        dummies = tuple(_wrap(r._data) for r in results)
        node = record_all(op, args, dummies)
        _outer_tangents(results, dummies)  # (recorded: the node's saved results get them)
        env = node._unpack(True) if op.saved_spec else ()
        us = [_wrap(get_xp(r._data).zeros(r._data.shape, _tangent_dtype(op, args, r, tangents)))
              ._set_requires_grad(w) for r, w in zip(results, wanted)]
        g = us[0] if op.n_outputs == 1 else tuple(us)
        total = None
        for inputs, fn, env_idx in node._formulas():
            if all(tangents[i] is None for i in inputs):
                continue
            mask = tuple(tangents[i] is not None for i in inputs)  # (grad_input_mask)
            r = fn(g, *[mask if j is None else env[j] for j in env_idx])
            rs = (r,) if len(inputs) == 1 else r
            for i, ri in zip(inputs, rs):
                tan = tangents[i]
                if tan is None or not isinstance(ri, Tensor) or not ri._requires_grad:
                    continue  # a constant (e.g. zero) gradient contributes nothing
                shape = args[i]._data.shape
                if ri._data.shape != shape:
                    ri = sum_to(ri, shape)
                term = _inner(ri, tan)
                total = term if total is None else total + term
        if total is None or not total._requires_grad:
            jvps = [None] * len(us)
        else:
            live = [u for u, w in zip(us, wanted) if w]
            got = iter(autograd_grad(total, live, create_graph=create, allow_unused=True))
            jvps = [next(got) if w else None for w in wanted]
    finally:
        state.grad_enabled = prev
    jvps = [_zeros_tangent(r) if (j is None and w) else j if create else _fresh(j)
            for j, r, w in zip(jvps, results, wanted)]
    return jvps[0] if isinstance(out, Tensor) else jvps


def _outer_tangents(results, dummies):
    """Give ``dummies`` (new tensors around ``results``' data, which the derivation records)
    the results' tangents at the levels outside the active one, which the formulas reading a
    result need to carry (``exp``'s tangent at an inner level, ``t * result``)."""
    for k in range(_level.index):
        with _at_level(k):
            for r, d in zip(results, dummies):
                tan = _tangent_of(r)
                if tan is not None:
                    _set_tangent(d, tan)


def _fresh(t):
    """A derived tangent as torch's formula gives it: a new tensor, no view, at version 0 (the
    gradient the derivation took may be a view of another, or summed into in place)."""
    if t is None or (t._base is None and t._version == 0):
        return t
    return _wrap(t._data.copy())


def _inner(a, b):
    """The real inner product <a, b> = Re(sum(conj(a) * b)) of two tensors (a complex
    tensor being a pair of real ones), whose gradient w.r.t. ``a`` is ``b`` in torch's
    convention."""
    from .._ops.complex import conj_physical, real_part
    from .._ops.reduction import sum_all
    if a._data.dtype.kind != "c" and b._data.dtype.kind != "c":
        return sum_all(a * b)
    return real_part(sum_all(conj_physical(a) * b))


# -- custom Functions ---------------------------------------------------------------------------
def _function_jvp(cls, ctx, args, outputs):
    tangents = [(_tangent_of(a) if isinstance(a, Tensor) else None) for a in args]
    if all(t is None for t in tangents):
        return
    # Tensor inputs without a tangent get zeros (torch materializes them), others None.
    tangents = [(_zeros_tangent(a) if t is None and isinstance(a, Tensor) else t)
                for a, t in zip(args, tangents)]
    ctx._fw_saved = tuple(getattr(ctx, "_to_save_forward", ()) or ())
    try:
        if _batch[0] is None:
            result = cls.jvp(ctx, *tangents)
        else:  # a batch of tangents: the user's jvp sees one row at a time
            result = _batched_forward.per_row(lambda row: cls.jvp(ctx, *row), tangents)
    finally:
        del ctx._fw_saved
    if not isinstance(result, (tuple, list)):
        result = (result,)
    if len(result) != len(outputs):
        raise RuntimeError(f"{cls.__name__}.jvp returned an incorrect number of tangents "
                           f"(expected {len(outputs)}, got {len(result)})")
    for o, t in zip(outputs, result):
        if isinstance(o, Tensor) and t is not None and _has_tangents(o._data.dtype):
            old = o.__dict__.get(_level.attr)
            if old is not None:  # an input modified in place (mark_dirty)
                from .._ops.pointwise import copy
                if old is not t:
                    copy.inplace(old, t)
            else:
                _set_tangent(o, t)


from . import _batched_forward  # noqa: E402  (builds on this module)
