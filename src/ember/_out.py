"""The ``out=`` keyword of torch's functions: the result is written into a given tensor.

Every function of torch's namespaces that takes ``out=`` takes it in ember too (where ember
has the function): the function computes its result as usual, then, as torch does,

- refuses when grad is being recorded and the result is differentiable while an argument
  (``out`` included) requires grad ("functions with out=... arguments don't support automatic
  differentiation");
- refuses a result dtype that cannot be cast to ``out``'s ("result type Float can't be cast to
  the desired output type Long");
- resizes ``out`` to the result's shape (with torch's deprecation warning if ``out`` had
  elements), writes the result into it (its version is bumped) and returns ``out`` (a tuple of
  them for functions returning several tensors).

An op declared once (an ``OpDef``) handles ``out`` in its own call (``call_with_out``); other
public functions are wrapped by ``install``.
"""
from __future__ import annotations

import functools
import inspect
import warnings

from . import _dtype as D
from ._backend.layout import is_dense, iterator_strides
from ._state import state
from ._tensor import Tensor

# torch 2.13's functions that take out=, per namespace ("" is torch itself).
OUT_FUNCTIONS = {
    "": """
    abs absolute acos acosh add addbmm addcdiv addcmul addmm addmv addr all amax amin
    aminmax angle any arange argmax argmin arccos arccosh arcsin arcsinh arctan arctan2 arctanh asin
    asinh atan atan2 atanh baddbmm bernoulli bitwise_and bitwise_left_shift bitwise_not
    bitwise_or bitwise_right_shift bitwise_xor bmm bucketize cat ceil chain_matmul cholesky
    cholesky_inverse cholesky_solve clamp clamp_max clamp_min clip column_stack complex
    concat concatenate conj conj_physical copysign cos cosh cross cummax cummin cumprod
    cumsum deg2rad diag diff digamma div divide dot dsmm dstack empty eq erf erfc erfinv
    exp exp2 expm1 eye fix float_power floor floor_divide fmax fmin fmod frac frexp
    frobenius_norm full full_like gather gcd ge geqrf ger greater greater_equal gt
    hash_tensor heaviside histc histogram hsmm hspmm hstack hypot i0 igamma igammac
    index_add index_reduce index_select inner inverse isin isneginf isposinf kron
    kthvalue lcm ldexp le lerp less less_equal lgamma linspace log log10 log1p log2
    logaddexp logaddexp2 logcumsumexp
    logical_and logical_not logical_or logical_xor logit logspace logsumexp lstsq lt lu
    lu_solve lu_unpack masked_select matmul matrix_power matrix_rank max maximum mean min
    minimum mm mode msort mul multinomial multiply mv mvlgamma nan_to_num nanmean
    nanquantile narrow_copy ne neg negative nextafter nonzero norm normal not_equal
    nuclear_norm ones ormqr outer polar polygamma pow prod qr quantile rad2deg rand randint
    randn randperm range reciprocal remainder renorm resolve_conj resolve_neg round
    row_stack rsqrt saddmm scatter searchsorted sgn sigmoid sign signbit sin sinc sinh
    solve sort spmm sqrt square squeeze_copy sspaddmm stack std sub subtract sum svd symeig
    take_along_dim tan tanh tensordot topk triangular_solve tril triu true_divide trunc var
    vdot view_copy vstack where xlogy zeros
    alias_copy as_strided_copy detach_copy diagonal_copy expand_copy permute_copy select_copy
    slice_copy t_copy transpose_copy unfold_copy unsqueeze_copy view_as_complex_copy
    view_as_real_copy split_copy split_with_sizes_copy unbind_copy hardshrink threshold
    index_copy scatter_add slice_scatter take nansum log_softmax softmax slogdet orgqr
    nonzero_static native_batch_norm batch_norm_elemt
    """.split(),
    "linalg": """
    cholesky cholesky_ex cond cross det eig eigh eigvals eigvalsh householder_product inv
    inv_ex ldl_factor ldl_factor_ex ldl_solve lstsq lu lu_factor lu_factor_ex lu_solve matmul
    matrix_norm matrix_power matrix_rank multi_dot norm pinv qr slogdet solve solve_ex
    solve_triangular svd svdvals tensorinv tensorsolve vecdot vector_norm
    """.split(),
    "nn.functional": ["hardshrink", "normalize"],
}

# The name torch's error gives (the aten op that refuses), where it is not the function's own:
# aliases, and composites whose first out= op is another one.
_ATEN_NAMES = {
    "": {"absolute": "abs", "arccos": "acos", "arccosh": "acosh", "arcsin": "asin",
         "arcsinh": "asinh", "arctan": "atan", "arctan2": "atan2", "arctanh": "atanh",
         "chain_matmul": "mm", "clip": "clamp", "column_stack": "cat", "concat": "cat",
         "concatenate": "cat", "diff": "sub", "divide": "div", "dstack": "cat", "fix": "trunc",
         "frobenius_norm": "norm", "ger": "mul", "hstack": "cat", "inverse": "linalg_inv_ex",
         "kron": "mul", "lu_solve": "linalg_lu_solve", "msort": "sort", "multiply": "mul",
         "orgqr": "linalg_householder_product", "slogdet": "_linalg_slogdet",
         "nanmean": "nansum", "negative": "neg", "norm": "linalg_vector_norm", "outer": "mul",
         "qr": "linalg_qr", "row_stack": "cat", "square": "pow", "subtract": "sub",
         "svd": "_linalg_svd", "take_along_dim": "gather", "true_divide": "div",
         "vstack": "cat"},
    "linalg": {"cholesky": "linalg_cholesky_ex", "cholesky_ex": "linalg_cholesky_ex",
               "cross": "linalg_cross", "det": "_linalg_det", "eig": "linalg_eig",
               "eigh": "_linalg_eigh", "eigvalsh": "_linalg_eigh",
               "householder_product": "linalg_householder_product", "inv": "linalg_inv_ex",
               "lstsq": "linalg_lstsq",
               "inv_ex": "linalg_inv_ex", "lu": "linalg_lu", "lu_factor": "linalg_lu_factor_ex",
               "lu_factor_ex": "linalg_lu_factor_ex", "lu_solve": "linalg_lu_solve",
               "multi_dot": "mm", "pinv": "linalg_pinv", "qr": "linalg_qr",
               "slogdet": "_linalg_slogdet", "solve": "_linalg_solve_ex",
               "solve_ex": "_linalg_solve_ex", "svd": "_linalg_svd", "svdvals": "_linalg_svd",
               "vecdot": "sum", "vector_norm": "linalg_vector_norm",
               "matrix_norm": "linalg_matrix_norm", "norm": "linalg_norm",
               "matrix_rank": "linalg_matrix_rank", "cond": "linalg_cond"},
    "nn.functional": {"normalize": "div"},
}
# Factories and some other ops name themselves "aten::<name>" in the error.
_ATEN_PREFIXED = frozenset(
    "arange empty eye full full_like linspace logspace normal ones rand randint randn randperm "
    "range zeros alias_copy as_strided_copy diagonal_copy expand_copy permute_copy select_copy slice_copy "
    "t_copy transpose_copy unfold_copy unsqueeze_copy view_as_complex_copy view_as_real_copy "
    "detach_copy slice_scatter log_softmax softmax nonzero_static batch_norm_elemt".split())

# How ``out``'s dtype must relate to the result's, where torch is stricter than a cast (the
# default: "result type Float can't be cast to the desired output type Long"). ``exact``:
# equal, else the message; ``cast``: castable, else the message; ``compute``: the result is
# computed in out's dtype; ``factory``: the same, and out is resized without a word (or with
# the given message). Placeholders: {r}/{o} torch's scalar names (Float), {rc}/{oc} the
# C names (float) of the result's and out's dtypes.
_EXACT = "Expected out tensor to have dtype {rc}, but got {oc} instead"
_RANGE = ("The number of elements in the out tensor of shape {old} is {old_n} which does not "
          "match the computed number of elements {new_n}. Note that this may occur as a result "
          "of rounding error. The out tensor will be resized to a tensor of shape {new}.")
_CAT = "ember.cat(): input types can't be cast to the desired output type {o}"
_FOUND = "Found dtype {o} but expected {r}"
_DTYPE_RULES = {
    "": {**{n: ("exact", _EXACT) for n in (
        "addmm addmv argmax argmin baddbmm bmm cholesky_solve cross diag gather inverse matmul max min mm "
        "msort mv scatter sort take_along_dim topk tril triu chain_matmul "
        "alias_copy as_strided_copy detach_copy diagonal_copy expand_copy permute_copy "
        "select_copy slice_copy t_copy transpose_copy unfold_copy unsqueeze_copy "
        "view_as_complex_copy view_as_real_copy split_with_sizes_copy unbind_copy index_copy "
        "scatter_add slice_scatter log_softmax softmax slogdet").split()},
         **{n: ("cast", _CAT) for n in (
             "cat column_stack concat concatenate dstack hstack row_stack stack vstack").split()},
         **{n: ("compute", None) for n in "cumprod cumsum nansum prod sum".split()},
         **{n: ("factory", None) for n in (
             "empty eye full full_like linspace logspace ones rand randint randn randperm "
             "zeros").split()},
         **{n: ("factory", _RANGE) for n in ("arange", "range")},
         **{n: ("exact", _FOUND) for n in "clamp clip sgn round hardshrink".split()},
         # (split_copy copies each piece into its out as ``copy_`` does: cast, never resized)
         "split_copy": ("copy", None),
         "take": ("exact", "take(): self and out expected to have the same dtype, but got "
                           "self.dtype = {r} and out.dtype = {o}"),
         "nonzero_static": ("exact", "nonzero_static: Expected out tensor to have scalar type "
                                     "Long but got scalar type{o}"),
         "native_batch_norm": ("exact", "expected scalar type {r} but found {o}"),
         "orgqr": ("cast", "ember.linalg.householder_product: Expected result to be safely "
                           "castable from {r} dtype, but got result with dtype {o}"),
         **{n: ("exact", "{name}(): self and result must have the same scalar type")
            for n in ("index_select", "masked_select")},
         **{n: ("exact", "Expected the dtype for input and out to match, but got {r} for "
                         "input's dtype and {o} for out's dtype.") for n in ("amax", "amin")},
         **{n: ("exact", "result dtype {o} does not match input dtype {r}")
            for n in ("dot", "vdot")},
         **{n: ("exact", "expected scalar_type {r} but found {o}")
            for n in ("cummax", "cummin", "logcumsumexp")},
         **{n: ("exact", "tensordot: Expected the output tensor to have dtype {r}, but got an "
                         "output tensor with dtype {o}") for n in ("tensordot", "inner")},
         "where": ("exact", "Expected out type to be {r} but got {o}"),
         "kthvalue": ("exact", "output values must be of same type as input"),
         "mode": ("exact", "expected scalar type '{r}' but got '{o}' for values output"),
         "nan_to_num": ("exact", "nan_to_num: dtype of out: {o} should be same as input: {r}"),
         "all": ("exact", "all only supports bool tensor for result, got: {o}"),
         "any": ("exact", "any only supports bool tensor for result, got: {o}"),
         "cholesky_inverse": ("cast", "cholesky_inverse: Expected result to be safely "
                                      "castable from {r} dtype, but got result with dtype {o}")},
    "linalg": {**{n: ("exact", _EXACT) for n in (
        "cholesky cross det eigh eigvalsh inv qr slogdet solve solve_triangular svd svdvals "
        "vector_norm").split()},
               "matrix_norm": ("exact", "linalg.matrix_norm expected out tensor dtype {r} but "
                                        "got: {o}"),
               "norm": ("exact", "linalg.norm expected out tensor dtype {r} but got: {o}"),
               "multi_dot": ("exact", "multi_dot(): expected out tensor to have dtype {rc} but "
                                      "got {oc}"),
               "vecdot": ("exact", "linalg.vecdot: Expected out of dtype{r} but found {o}"),
               "pinv": ("cast", "linalg.pinv: Expected result to be safely castable from {r} "
                                "dtype, but got result with dtype {o}"),
               "lstsq": ("cast", "ember.linalg.lstsq: Expected {field} to be safely castable "
                                 "from {r} dtype, but got {field} with dtype {o}")},
    "nn.functional": {"hardshrink": ("exact", _FOUND)},
}
# The names torch's dtype errors give each out (None: any dtype is taken, as for lstsq's rank).
# (torch's check of the residuals' out names the solution)
_OUT_FIELDS = {"linalg_lstsq": ("solution", "solution", None, "singular_values")}
# How many leading outs torch refuses when they require grad, where it is not all of them
# (outputs without a derivative), and ops whose out= form does not look at grad at all.
_GRAD_CHECKED_OUTS = {"linalg_lstsq": 2, "native_batch_norm": 1}
_GRAD_UNCHECKED = frozenset(("split_copy", "split_with_sizes_copy"))
# Ops whose out= is resized before its dtype is checked.
_RESIZED_FIRST = frozenset(("aten::" + n for n in (
    "alias_copy as_strided_copy diagonal_copy expand_copy permute_copy select_copy slice_copy "
    "t_copy transpose_copy unfold_copy unsqueeze_copy view_as_complex_copy view_as_real_copy "
    "detach_copy slice_scatter").split())) | {"unbind_copy", "split_with_sizes_copy"}
# Ops whose resized out is contiguous where their result is not (LU factors, column-major as
# LAPACK's, in torch too).
_CONTIGUOUS_OUTS = frozenset(("lu", "linalg_lu"))
# Ops whose resized out takes TensorIterator's layout of their input where their result is
# laid out as the input (torch's functional form allocates it by empty_like, or clones).
_ITERATOR_OUTS = frozenset(("frexp", "nan_to_num", "conj_physical"))
# Ops whose out= refuses outs that require grad but takes inputs that do (out gets no history).
_OUT_GRAD_ONLY = frozenset(("unbind_copy",))
# Ops whose out= kernel exists for floating dtypes only: {op: torch's kernel name}.
_FLOAT_KERNELS = {"nansum": "nansum_cpu"}
# Functions writing a list of pieces into a list of outs (returning None); the name torch's
# error on a list of the wrong length gives.
_PIECES = {"split_copy": "split_copy_Tensor_out()", "split_with_sizes_copy":
           "split_with_sizes_copy_out", "unbind_copy": "unbind_copy_int_out"}
# out= forms torch's CPU build lacks (it raises once the grad check has passed).
_NOT_ON_CPU = frozenset(("aten::batch_norm_elemt",))
# out= forms torch generates from the functional op (named "aten::<name>" in its errors, not
# factories): inputs that require grad are allowed, and out gets a NotImplemented node on them
# (backward through it raises "derivative for aten::<name> is not implemented").
_GENERATED = frozenset(
    "aten::" + n for n in (
        "alias_copy as_strided_copy diagonal_copy expand_copy permute_copy select_copy "
        "slice_copy t_copy transpose_copy unfold_copy unsqueeze_copy view_as_complex_copy "
        "view_as_real_copy detach_copy slice_scatter log_softmax softmax nonzero_static "
        "batch_norm_elemt").split())

_RESIZED = ("An output with one or more elements was resized since it had shape {}, which does "
            "not match the required output shape {}. This behavior is deprecated, and in a "
            "future PyTorch release outputs will not be resized unless they have zero "
            "elements. You can explicitly reuse an out tensor t by resizing it, inplace, to "
            "zero elements with t.resize_(0). (Triggered internally at "
            "/__w/pytorch/pytorch/aten/src/ATen/native/Resize.cpp:30.)")


def aten_name(namespace, name):
    """The op name torch's out= refusal gives for ``namespace.name``."""
    if not namespace and name in _ATEN_PREFIXED:
        return f"aten::{name}"
    return _ATEN_NAMES.get(namespace, {}).get(name, name)


def call_with_out(fn, name, args, kwargs, rule=None, public=None):
    """``fn(*args, **kwargs)`` (without ``out``) written into ``kwargs["out"]``."""
    out = kwargs.pop("out")
    if out is None:
        return fn(*args, **kwargs)
    if rule is not None and rule[0] in ("compute", "factory") and isinstance(out, Tensor):
        kwargs.setdefault("dtype", out.dtype)
    if name in _GENERATED or name in _OUT_GRAD_ONLY:  # (out gets no history of the call)
        from .autograd.grad_mode import no_grad
        with no_grad():
            result = fn(*args, **kwargs)
    else:
        # NOTE: computed first, then refused if it is differentiable (torch knows that from
        # the op's declaration and refuses before computing: only the order of two errors
        # differs)
        result = fn(*args, **kwargs)
    return write_out(name, result, out, args, kwargs, rule, public)


def _requires_grad(values):
    for v in values:
        if isinstance(v, Tensor):
            if v._requires_grad:
                return True
        elif isinstance(v, (list, tuple)) and _requires_grad(v):
            return True
    return False


def write_out(name, result, out, args=(), kwargs=None, rule=None, public=None):
    """Write ``result`` (a tensor or a tuple of them) into ``out`` as torch's out= does;
    ``public``: the function's name in torch's argument errors."""
    several = isinstance(result, tuple)
    results = result if several else (result,)
    outs = tuple(out) if isinstance(out, (tuple, list)) else (out,)
    _check_out_argument(name, public or name, results, out, several)
    if name in _FLOAT_KERNELS and not outs[0].dtype.is_floating_point:
        raise NotImplementedError(f'"{_FLOAT_KERNELS[name]}" not implemented for '
                                  f"'{outs[0].dtype.scalar_name}'")
    if name in _GENERATED:
        return _write_generated(name, result, out, args, kwargs, rule)
    if state.grad_enabled and name in _OUT_GRAD_ONLY:
        _refuse_grad_out(name, outs)
    elif state.grad_enabled and name not in _GRAD_UNCHECKED:
        _refuse_grad(name, results, outs[:_GRAD_CHECKED_OUTS.get(name)], args, kwargs)
    _check_iterator_overlap(name, results, outs, args, kwargs)
    fields = _OUT_FIELDS.get(name, ("result",) * len(outs))
    for r, o, field in zip(results, outs, fields):
        _write_one(name, r, o, rule, field, inputs=args)
    if name in _PIECES:
        return None
    if not several:
        return out
    return type(result)(*outs) if hasattr(result, "_fields") else tuple(outs)


def _check_iterator_overlap(name, results, outs, args, kwargs):
    """torch's TensorIterator (the elementwise ops) refuses an ``out`` that partly overlaps an
    input (``torch.exp(x, out=x[0])``), as an in-place op, before resizing it: ember wrote the
    result through the resized view into the input's whole storage. An ``out`` that is an
    input is written in place, never resized (``torch.atan2(a, b, out=a)`` of a result larger
    than ``a``: torch's broadcast error, where ember resized ``a``)."""
    from ._ops.inplace import _PARTIAL_OVERLAP, _partial_overlap
    from ._ops.registry import REGISTRY
    op = REGISTRY.get(name)
    if op is None or not op.iterator_layout:
        return
    for r, o in zip(results, outs):
        for a in _tensors(args, (kwargs or {}).values()):
            if a is o and tuple(o.shape) != tuple(r.shape):
                raise RuntimeError(f"output with shape {list(o.shape)} doesn't match the "
                                   f"broadcast shape {list(r.shape)}")
            if (a is not o and type(a._data) is type(o._data)
                    and _partial_overlap(o._data, a._data)):
                raise RuntimeError(_PARTIAL_OVERLAP)


def _check_out_argument(name, public, results, out, several):
    """torch's refusals of an ``out`` of the wrong kind or length."""
    sequence = isinstance(out, (tuple, list))
    outs = tuple(out) if sequence else (out,)
    if sequence and len(outs) != len(results):
        if name in _PIECES:
            raise RuntimeError(f"{_PIECES[name]} expected an out= argument of size "
                               f"{len(results)}, got size {len(outs)}")
        if several:
            raise TypeError(f"expected tuple of {len(results)} elements but got {len(outs)}")
    if len(outs) != len(results) or not all(isinstance(o, Tensor) for o in outs):
        what = "tuple of Tensors" if several else "Tensor"
        raise TypeError(f"{public}(): argument 'out' must be {what}, not "
                        f"{type(out).__name__}")


def _refuse_grad(name, results, checked_outs, args, kwargs):
    """torch's refusal of out= while grad is recorded through a differentiable result."""
    # (bfloat16 and the float8 types are NumPy kind 'V': a kind test let their out= through)
    differentiable = any(D.is_differentiable_np(r._data.dtype) for r in results)
    inputs = _requires_grad(args) or _requires_grad((kwargs or {}).values())
    if differentiable and (inputs or _requires_grad(checked_outs)):
        _refuse_grad_out(name, ())


def _refuse_grad_out(name, outs):
    """torch's refusal of outs that require grad (none given: refused unconditionally)."""
    if not outs or _requires_grad(outs):
        raise RuntimeError(f"{name}(): functions with out=... arguments don't support "
                           "automatic differentiation, but one of the arguments requires "
                           "grad.")


def _write_generated(name, result, out, args, kwargs, rule):
    """out= of an op torch generates from its functional form (see ``_GENERATED``): inputs
    that require grad give out a node."""
    if state.grad_enabled:
        _refuse_grad_out(name, (out,))
    if name in _NOT_ON_CPU and out.device.type == "cpu":
        raise NotImplementedError(cpu_backend_error(f"{name}.out"))
    inputs = [a for a in _tensors(args, (kwargs or {}).values()) if a._requires_grad]
    if not (state.grad_enabled and inputs and D.is_differentiable_np(result._data.dtype)):
        _write_one(name, result, out, rule)
        return out
    _write_one(name, result, out, rule, copy=False)  # checks only
    from ._ops.inplace import dispatch_inplace
    dispatch_inplace(_generated_writer(name, len(inputs)), (out, result, *inputs))
    return out


def _tensors(*groups):
    for group in groups:
        for v in group:
            if isinstance(v, Tensor):
                yield v
            elif isinstance(v, (list, tuple)):
                yield from _tensors(v)


_WRITERS = {}


def _generated_writer(name, n_inputs):
    """The in-place op writing a result into out with a NotImplemented node on ``n_inputs``
    inputs (kept per op name: backward's error names the op)."""
    key = (name, n_inputs)
    writer = _WRITERS.get(key)
    if writer is None:
        from ._ops.pointwise import no_derivative
        from ._ops.registry import NONE, op
        params = ("self", "value") + ("input", "other", "third")[:n_inputs]

        def kernel(self, value, *inputs):
            return value
        kernel.__signature__ = inspect.Signature(
            [inspect.Parameter(p, inspect.Parameter.POSITIONAL_OR_KEYWORD) for p in params])
        writer = op(f"_{name[6:]}_out_written", node="NotImplemented", aten=name,
                    tensors=len(params), promote=NONE)(kernel)
        for p in params:
            writer.grad(p)(no_derivative(name[6:]))
        _WRITERS[key] = writer
    return writer


def cpu_backend_error(op):
    """torch's message for an operator its CPU build does not have (its first sentences)."""
    return (f"Could not run '{op}' with arguments from the 'CPU' backend. This could be because "
            "the operator doesn't exist for this backend, or was omitted during the "
            "selective/custom build process (if using custom build).")


def _write_one(name, result, out, rule, field="result", copy=True, inputs=()):
    from ._tensor import _c_type_name
    from .autograd.grad_mode import no_grad
    rdt, odt = D._BY_NP[result._data.dtype], D._BY_NP[out._data.dtype]
    kind, message = rule or ("cast", None)
    if kind == "copy":  # copy_'s rules: any dtype, out's shape kept (broadcast into)
        with no_grad():
            out.copy_(result)
        return
    if name in _RESIZED_FIRST:
        _resize_out(name, result, out, rule, inputs)
    mismatch = (rdt != odt) if kind == "exact" else not D.can_cast(rdt, odt)
    if mismatch and field is not None:  # (field None: an out torch takes in any dtype)
        if message is None or kind not in ("exact", "cast"):
            message = "result type {r} can't be cast to the desired output type {o}"
        raise RuntimeError(message.format(r=rdt.scalar_name, o=odt.scalar_name,
                                          rc=_c_type_name(rdt), oc=_c_type_name(odt),
                                          name=name, field=field))
    _resize_out(name, result, out, rule, inputs)
    if copy:
        with no_grad():
            out.copy_(result)


def _resize_out(name, result, out, rule, inputs=()):
    """torch's resize_output: ``out`` takes the result's shape (with torch's warning when it
    had elements), and the layout torch's out= kernel gives it (see _resized_strides)."""
    from ._ops.inplace_forms import resize_storage
    kind, message = rule or ("cast", None)
    if out._data.shape != result._data.shape:
        old, new = out._data.shape, result._data.shape
        if kind == "factory":
            text = None if message is None or not out._data.size else message.format(
                old=list(old), old_n=out._data.size, new_n=result._data.size, new=new)
        else:
            text = _RESIZED.format(list(old), list(new)) if out._data.size else None
        if text is not None:
            from ._ops.inplace import _user_stacklevel
            warnings.warn(text, UserWarning, stacklevel=_user_stacklevel())
        # torch's resize_output: also when out requires grad (which resize_ refuses), and
        # without a version bump of its own (the list outs of _PIECES are resized by resize_)
        resize_storage(out, tuple(result._data.shape), bump=name in _PIECES,
                       strides=_resized_strides(name, result._data, inputs))


def _resized_strides(name, data, inputs):
    """The element strides a resized ``out`` takes: torch's out= kernels that lay their
    result out themselves (TensorIterator's elementwise ops, sort) give a resized out that
    layout, which is ember's result's where it is dense (strides of dimensions of one element
    included); None for the contiguous strides (those of the ops torch writes by a copy into
    a resized out, and of results not dense)."""
    if (not hasattr(data, "flags") or name in _GENERATED or name in _CONTIGUOUS_OUTS
            or not is_dense(data)):  # (a sparse result has no flags)
        return None
    if name in _ITERATOR_OUTS and inputs and isinstance(inputs[0], Tensor):
        strides = iterator_strides(data.shape, 1, [inputs[0]._data])
    else:
        strides = tuple(s // data.itemsize for s in data.strides)
    return strides


def with_out(fn, name, rule=None, public=None):
    """``fn`` taking torch's ``out=`` (refused or written as torch's; see the module doc)."""
    @functools.wraps(fn)
    def call(*args, **kwargs):
        if "out" in kwargs:
            return call_with_out(fn, name, args, kwargs, rule, public)
        return fn(*args, **kwargs)
    call.__wrapped_out__ = fn
    return call


def install(namespace, module_globals):
    """Give the functions of ``namespace`` (a module's globals) that torch's take ``out=``
    their ``out=``: ops through their own call, other functions wrapped."""
    from ._ops.registry import OpDef
    for name in OUT_FUNCTIONS.get(namespace, ()):
        fn = module_globals.get(name)
        if fn is None or getattr(fn, "__wrapped_out__", None) is not None:
            continue
        aten = aten_name(namespace, name)
        rule = _DTYPE_RULES.get(namespace, {}).get(name)
        if isinstance(fn, OpDef) and fn.out_name in (None, aten) and fn.out_rule in (None, rule):
            fn.out_name, fn.out_rule = aten, rule
        else:
            public = f"{namespace}_{name}" if namespace in ("linalg", "fft", "special") else name
            wrapped = module_globals[name] = with_out(fn, aten, rule, public)
            # (named where it is found, as torch's functions: pickled by reference)
            wrapped.__module__, wrapped.__qualname__ = module_globals["__name__"], name
