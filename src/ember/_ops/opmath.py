"""Kernels on the dtypes NumPy has no arithmetic of its own for.

bfloat16 (ml_dtypes' storage) is computed as torch computes it on the CPU: operands are widened
to float32 (torch's "opmath" type), the kernel runs there, and float results are rounded back
to bfloat16 once. A reduction thus accumulates in float32 and rounds its total, as torch's does.

The limited-support dtypes (uint16/32/64 and the float8 formats) have storage, conversion and a
handful of ops in torch; every other op refuses them with torch's NotImplementedError.
"""
from __future__ import annotations

import numpy as np

from .. import _dtype as D

# Ops torch runs on its limited-support dtypes (besides views, which only move data).
_COMMON_LIMITED = frozenset((
    "_to_copy", "clone", "cat", "stack", "copy_", "fill", "fill_", "eq", "ne", "contiguous",
    "index", "getitem", "setitem", "index_put", "masked_fill", "where_self", "zeros_like",
    "ones_like", "empty_like", "full_like"))
_ALLOWED = {
    "unsigned": _COMMON_LIMITED | {"mul", "bitwise_and", "bitwise_or", "bitwise_xor", "sort",
                                   "unique", "sum", "prod", "cumsum", "cumprod", "argsort",
                                   "true_divide", "div"},
    "float8": _COMMON_LIMITED | {"abs"},
}
# torch's kernel names in its refusals, where ember's op name differs from the kernel's.
_KERNEL_NAME = {"add": "add_stub", "sub": "add_stub", "max": "max_all", "min": "min_all",
                "mul": "mul_cpu_reduced_float", "sum": "sum_cpu", "neg": "neg_cpu",
                "abs": "abs_cpu", "clamp": "clamp_scalar_cpu", "argmax": "argmax_cpu", "argmin": "argmin_cpu",
                "floor_divide": "div_floor_cpu", "remainder": "remainder_cpu",
                "lt": "lt_cpu", "le": "le_cpu", "gt": "gt_cpu", "ge": "ge_cpu",
                "flip": "flip_cpu", "nonzero": "nonzero_count_cpu",
                "bitwise_left_shift": "lshift_cpu", "bitwise_right_shift": "rshift_cpu"}

_F32 = np.dtype(np.float32)


def special_dtype(op, args):
    """The first tensor operand's dtype when it needs this module (bfloat16 or a
    limited-support dtype), else None."""
    from .._tensor import Tensor
    for a in args[:op.n_tensors]:
        if isinstance(a, Tensor) and a._data.dtype in D.SPECIAL_NP:
            return D._BY_NP[a._data.dtype]
    return None


def check_limited(op, dt):
    """torch's refusal of an op it has no kernel of for the limited-support dtype ``dt``."""
    if op.view or dt not in D._LIMITED:  # (promotion may have left the limited dtype)
        return
    family = "float8" if dt in D.FLOAT8 else "unsigned"
    if op.name.rstrip("_") in _ALLOWED[family] or op.name in _ALLOWED[family]:
        return
    name = _KERNEL_NAME.get(op.name.rstrip("_"), f"{op.name.rstrip('_')}_cpu")
    raise NotImplementedError(f'"{name}" not implemented for \'{dt.scalar_name}\'')


def widened(arrays, n):
    """``arrays`` with its bfloat16 operands (among the first ``n``) in float32, and the
    reduced dtype met (None: none was)."""
    met = None
    out = list(arrays)
    for k in range(n):
        a = out[k]
        dtype = getattr(a, "dtype", None)
        if dtype is not None and dtype in D.REDUCED_NP:
            met = dtype
            out[k] = a.astype(np.float32)
    return out, met


def rounded(out, reduced):
    """The kernel's float32 results rounded back to ``reduced`` (a tuple stays a tuple)."""
    if isinstance(out, (tuple, list)):
        return type(out)(rounded(o, reduced) for o in out)
    if getattr(out, "dtype", None) == _F32:
        return np.asarray(out).astype(reduced)
    return out


def call(op, arrays):
    """Run ``op``'s kernel on ``arrays`` in torch's opmath for their reduced dtypes."""
    if op.view:
        return op.kernel(*arrays)
    wide, reduced = widened(arrays, op.n_tensors)
    if reduced is None:
        return op.kernel(*arrays)
    out = op.kernel(*wide)
    k = op.index.get("dtype")
    if k is not None and k < len(arrays) and arrays[k] is not None:
        return out  # an explicit result dtype (sum(dtype=...), to(...)) is kept
    return rounded(out, reduced)
