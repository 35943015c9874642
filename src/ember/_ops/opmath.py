"""Kernels on the dtypes NumPy has no arithmetic of its own for.

bfloat16 (ml_dtypes' storage) is computed as torch computes it on the CPU: operands are widened
to float32 (torch's "opmath" type), the kernel runs there, and float results are rounded back
to bfloat16 once. A reduction thus accumulates in float32 and rounds its total, as torch's does.

The limited-support dtypes (uint16/32/64 and the float8 formats) have storage, conversion and a
handful of ops in torch; every other op refuses them with torch's NotImplementedError.
"""
from __future__ import annotations

import functools
import threading

import numpy as np

from .. import _dtype as D

# Ops torch runs on its limited-support dtypes (besides views, which only move data).
_COMMON_LIMITED = frozenset((
    "_to_copy", "clone", "cat", "stack", "copy", "fill", "eq", "ne", "contiguous", "index",
    "getitem", "setitem", "where", "zeros_like", "ones_like", "empty_like", "full_like",
    "index_select", "zero", "repeat", "roll", "diagonal_copy", "any", "all", "isnan"))
_ALLOWED = {
    "unsigned": _COMMON_LIMITED | {
        "mul", "bitwise_and", "bitwise_or", "bitwise_xor", "sort", "unique", "_unique2",
        "sum", "prod", "cumsum", "cumprod", "argsort", "true_divide", "div", "nan_to_num",
        "isinf", "isfinite",
        # (these refuse integer input with errors of their own, as torch's do)
        "mean", "std", "var"},
    "float8": _COMMON_LIMITED | {"abs", "masked_select", "index_put"},
}
# torch's kernel names in its refusals, where they are not "<op>_cpu".
_KERNEL_NAME = {
    "add": "add_stub", "sub": "add_stub", "mul": "mul_cpu_reduced_float", "sum": "sum_cpu",
    "mean": "sum_cpu", "amax": "max_values_cpu", "amin": "min_values_cpu",
    "clamp": "clamp_scalar_cpu", "clamp_min": "clamp_min_scalar_cpu",
    "clamp_max": "clamp_max_scalar_cpu", "floor_divide": "div_floor_cpu",
    "div": "div_cpu_reduced_float", "nonzero": "nonzero_count_cpu",
    "count_nonzero": "nonzero_count_cpu", "index_put_masked": "masked_fill", "bitwise_left_shift": "lshift_cpu",
    "bitwise_right_shift": "rshift_cpu", "gather": "scatter_gather_tensor_cpu",
    "scatter": "scatter_gather_tensor_cpu", "scatter_add": "scatter_gather_tensor_cpu",
    "prod": "prod_out_cpu", "argsort": "sorting_kernel_method_name",
    "sort": "sorting_kernel_method_name", "_unique2": "unique", "sqrt": "sqrt_vml_cpu",
    "exp": "exp_vml_cpu", "log": "log_vml_cpu"}
# ... and where torch names the op itself (no "_cpu")
_BARE = frozenset(("tril", "triu", "pow", "trace", "masked_fill", "index_put", "masked_select",
                   "nan_to_num", "isinf", "isfinite"))


def _kernel_name(op):
    name = op.name.rstrip("_")
    if name in ("max", "min"):  # the full reduction and the one over a dimension
        return f"{name}_all" if len(op.params) == 1 else f"{name}_cpu"
    if name in _BARE:
        return name
    return _KERNEL_NAME.get(name, f"{name}_cpu")


_F32 = np.dtype(np.float32)


def special_dtype(op, args):
    """The first tensor operand's dtype when it needs this module (bfloat16 or a
    limited-support dtype), else None."""
    from .._tensor import Tensor
    for a in args[:op.n_tensors]:
        if isinstance(a, Tensor) and a._data.dtype in D.SPECIAL_NP:
            return D._BY_NP[a._data.dtype]
    return None


def check_limited(op, dt, args):
    """torch's refusal of an op it has no kernel of for the limited-support dtype ``dt``."""
    if op.view or dt not in D._LIMITED:  # (promotion may have left the limited dtype)
        return
    family = "float8" if dt in D.FLOAT8 else "unsigned"
    name = op.name.rstrip("_")
    if name == "flip" and not _flips_last_dim(args):
        return  # (torch flips other dimensions by copying, for every dtype)
    if name in _ALLOWED[family]:
        return
    if family == "float8" and name == "mul" and _all_tensors(op, args):
        return  # (torch multiplies two float8 tensors, but not one by a number)
    if family == "float8" and name in ("std", "var"):
        raise RuntimeError(f"std_var_all: Unsupported dtype {dt.scalar_name}")
    raise NotImplementedError(f'"{_kernel_name(op)}" not implemented for \'{dt.scalar_name}\'')


def _flips_last_dim(args):
    self, dims = args[0], args[1]
    last = self.ndim - 1
    return any(d % max(self.ndim, 1) == last for d in ((dims,) if isinstance(dims, int)
                                                           else dims))


def _all_tensors(op, args):
    from .._tensor import Tensor
    return all(isinstance(a, Tensor) for a in args[:op.n_tensors])


def widened(arrays, n, numbers_in_opmath=False):
    """``arrays`` with its bfloat16 operands (among the first ``n``) in float32, and the
    reduced dtype met (None: none was). A Python number among them is rounded to that dtype
    first, as torch converts a number operand to the operation's dtype, unless
    ``numbers_in_opmath`` (mul and div: torch's kernels take the number in float32)."""
    met = None
    out = list(arrays)
    numbers = []
    for k in range(n):
        a = out[k]
        dtype = getattr(a, "dtype", None)
        if dtype is not None and dtype in D.REDUCED_NP:
            met = dtype
            out[k] = a.astype(np.float32)
        elif type(a) is float or type(a) is int:
            numbers.append(k)
    if met is not None and not numbers_in_opmath:
        for k in numbers:
            out[k] = number_in(out[k], met)
    return out, met


def number_in(value, reduced):
    """The Python number ``value`` rounded to the reduced dtype ``reduced``, as a Python float:
    torch converts a number operand to the operation's dtype (through float32, as its
    BFloat16 is built from a float)."""
    with np.errstate(over="ignore"):
        return float(np.float32(value).astype(reduced))


def number_now(value):
    """``value`` (a Python number operand that never reached ``widened``, as fmod's) rounded
    to the reduced dtype a kernel runs for now in float32; unchanged when none does."""
    reduced = _widening.reduced
    if reduced is None or not (type(value) is float or type(value) is int):
        return value
    return number_in(value, reduced)


def rounded(out, reduced):
    """The kernel's float32 results rounded back to ``reduced`` (a tuple stays a tuple)."""
    if isinstance(out, (tuple, list)):
        return type(out)(rounded(o, reduced) for o in out)
    if getattr(out, "dtype", None) == _F32:
        return np.asarray(out).astype(reduced)
    return out


class _Widening(threading.local):
    reduced = None  # the reduced dtype whose kernel runs in float32 now, in this thread


_widening = _Widening()


def reduced_now():
    """The reduced dtype (bfloat16) a kernel runs for in float32, else None: a kernel whose
    float32 edge values differ from torch's reduced ones asks."""
    return _widening.reduced


def call(op, arrays):
    """Run ``op``'s kernel on ``arrays`` in torch's opmath for their reduced dtypes."""
    if op.view:
        return op.kernel(*arrays)
    wide, reduced = widened(arrays, op.n_tensors, op.numbers_in_opmath)
    if reduced is None:
        return op.kernel(*arrays)
    _widening.reduced, before = reduced, _widening.reduced
    try:
        out = op.kernel(*wide)
    finally:
        _widening.reduced = before
    k = op.index.get("dtype")
    if k is not None and k < len(arrays) and arrays[k] is not None:
        return out  # an explicit result dtype (sum(dtype=...), to(...)) is kept
    return rounded(out, reduced)


def half_in_float32(n=1):
    """Kernel decorator: float16 arrays among the first ``n`` arguments go in as float32 and
    the float32 results come back rounded to float16 once, as torch's CPU kernels compute
    float16 (their opmath type is float32: a number argument meets the values in float32,
    where NumPy would round it to float16 first, and so does every step in between)."""
    def decorate(kernel):
        @functools.wraps(kernel)
        def run(*args, **kwargs):
            if not any(getattr(a, "dtype", None) == _F16 for a in args[:n]):
                return kernel(*args, **kwargs)
            wide = [a.astype(_F32) if getattr(a, "dtype", None) == _F16 else a
                    for a in args[:n]]
            return rounded(kernel(*wide, *args[n:], **kwargs), _F16)
        return run
    return decorate


_F16 = np.dtype(np.float16)
