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
import warnings

from . import _dtype as D
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
    """.split(),
    "linalg": """
    cholesky cholesky_ex cond cross det eig eigh eigvals eigvalsh householder_product inv
    inv_ex ldl_factor ldl_factor_ex ldl_solve lu lu_factor lu_factor_ex lu_solve matmul
    matrix_norm matrix_power matrix_rank multi_dot norm pinv qr slogdet solve solve_ex
    solve_triangular svd svdvals tensorinv tensorsolve vecdot vector_norm
    """.split(),
    "nn.functional": ["normalize"],
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
         "nanmean": "nansum", "negative": "neg", "norm": "linalg_vector_norm", "outer": "mul",
         "qr": "linalg_qr", "row_stack": "cat", "square": "pow", "subtract": "sub",
         "svd": "_linalg_svd", "take_along_dim": "gather", "true_divide": "div",
         "vstack": "cat"},
    "linalg": {"cholesky": "linalg_cholesky_ex", "cholesky_ex": "linalg_cholesky_ex",
               "cross": "linalg_cross", "det": "_linalg_det", "eig": "linalg_eig",
               "eigh": "_linalg_eigh", "eigvalsh": "_linalg_eigh",
               "householder_product": "linalg_householder_product", "inv": "linalg_inv_ex",
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
# Factories name themselves "aten::<name>" in the error.
_FACTORIES = frozenset("arange empty eye full full_like linspace logspace normal ones rand "
                       "randint randn randperm range zeros".split())

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
_DTYPE_RULES = {
    "": {**{n: ("exact", _EXACT) for n in (
        "addmm addmv argmax argmin baddbmm bmm cholesky_solve cross diag gather inverse matmul max min mm "
        "msort mv scatter sort take_along_dim topk tril triu chain_matmul").split()},
         **{n: ("cast", _CAT) for n in (
             "cat column_stack concat concatenate dstack hstack row_stack stack vstack").split()},
         **{n: ("compute", None) for n in "cumprod cumsum nansum prod sum".split()},
         **{n: ("factory", None) for n in (
             "empty eye full full_like linspace logspace ones rand randint randn randperm "
             "zeros").split()},
         **{n: ("factory", _RANGE) for n in ("arange", "range")},
         **{n: ("exact", "Found dtype {o} but expected {r}") for n in "clamp clip sgn round".split()},
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
                                "dtype, but got result with dtype {o}")},
}

_RESIZED = ("An output with one or more elements was resized since it had shape {}, which does "
            "not match the required output shape {}. This behavior is deprecated, and in a "
            "future PyTorch release outputs will not be resized unless they have zero "
            "elements. You can explicitly reuse an out tensor t by resizing it, inplace, to "
            "zero elements with t.resize_(0).")


def aten_name(namespace, name):
    """The op name torch's out= refusal gives for ``namespace.name``."""
    if not namespace and name in _FACTORIES:
        return f"aten::{name}"
    return _ATEN_NAMES.get(namespace, {}).get(name, name)


def call_with_out(fn, name, args, kwargs, rule=None):
    """``fn(*args, **kwargs)`` (without ``out``) written into ``kwargs["out"]``."""
    out = kwargs.pop("out")
    if out is None:
        return fn(*args, **kwargs)
    if rule is not None and rule[0] in ("compute", "factory") and isinstance(out, Tensor):
        kwargs.setdefault("dtype", out.dtype)
    # NOTE: computed first, then refused if it is differentiable (torch knows that from the
    # op's declaration and refuses before computing: only the order of two errors differs)
    return write_out(name, fn(*args, **kwargs), out, args, kwargs, rule)


def _requires_grad(values):
    for v in values:
        if isinstance(v, Tensor):
            if v._requires_grad:
                return True
        elif isinstance(v, (list, tuple)) and _requires_grad(v):
            return True
    return False


def write_out(name, result, out, args=(), kwargs=None, rule=None):
    """Write ``result`` (a tensor or a tuple of them) into ``out`` as torch's out= does."""
    several = isinstance(result, tuple)
    results = result if several else (result,)
    outs = tuple(out) if isinstance(out, (tuple, list)) else (out,)
    if len(outs) != len(results) or not all(isinstance(o, Tensor) for o in outs):
        what = "tuple of Tensors" if several else "Tensor"
        raise TypeError(f"{name}(): argument 'out' must be {what}")
    if state.grad_enabled:
        differentiable = any(r._data.dtype.kind in "fc" for r in results)
        inputs = _requires_grad(args) or _requires_grad((kwargs or {}).values())
        if differentiable and (inputs or _requires_grad(outs)):
            raise RuntimeError(f"{name}(): functions with out=... arguments don't support "
                               "automatic differentiation, but one of the arguments requires "
                               "grad.")
    for r, o in zip(results, outs):
        _write_one(name, r, o, rule)
    if not several:
        return out
    return type(result)(*outs) if hasattr(result, "_fields") else tuple(outs)


def _write_one(name, result, out, rule):
    from ._ops.inplace_forms import resize_storage
    from ._tensor import _c_type_name
    from .autograd.grad_mode import no_grad
    rdt, odt = D._BY_NP[result._data.dtype], D._BY_NP[out._data.dtype]
    kind, message = rule or ("cast", None)
    if (rdt != odt) if kind == "exact" else not D.can_cast(rdt, odt):
        if message is None or kind not in ("exact", "cast"):
            message = "result type {r} can't be cast to the desired output type {o}"
        raise RuntimeError(message.format(r=rdt.scalar_name, o=odt.scalar_name,
                                          rc=_c_type_name(rdt), oc=_c_type_name(odt),
                                          name=name))
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
        resize_storage(out, tuple(result._data.shape))  # (torch's resize_output: also when
        # out requires grad, which resize_ refuses)
    with no_grad():
        out.copy_(result)


def with_out(fn, name, rule=None):
    """``fn`` taking torch's ``out=`` (refused or written as torch's; see the module doc)."""
    @functools.wraps(fn)
    def call(*args, **kwargs):
        if "out" in kwargs:
            return call_with_out(fn, name, args, kwargs, rule)
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
            module_globals[name] = with_out(fn, aten, rule)
