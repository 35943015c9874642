"""The ``out_dtype`` overloads of ``mm``, ``bmm``, ``addmm`` and ``baddbmm`` (after their
tensors, positionally or by keyword): a float32 product of float16/bfloat16 matrices.

torch's CPU build has no kernel for them: on the CPU they raise torch's NotImplementedError
("Could not run 'aten::mm.dtype' ..."), after torch's refusal of an ``out`` that requires
grad. On a GPU they compute as torch's CUDA kernels: ``out_dtype`` equal to the inputs'
dtype is the plain product; float32 for float16/bfloat16 inputs is the product of the inputs
in float32 (accumulated in float32, as torch's cuBLAS call does); anything else is torch's
RuntimeError.
"""
from __future__ import annotations

import functools

from . import _dtype as D
from ._tensor import Tensor

_NOT_GIVEN = object()
# {function: how many tensors come before out_dtype}
OUT_DTYPE_FUNCTIONS = {"mm": 2, "bmm": 2, "addmm": 3, "baddbmm": 3}
_SIGNATURES = {
    "mm": ("Tensor input, Tensor mat2", ""),
    "bmm": ("Tensor input, Tensor mat2", ""),
    "addmm": ("Tensor input, Tensor mat1, Tensor mat2", ", Number beta = 1, Number alpha = 1"),
    "baddbmm": ("Tensor input, Tensor batch1, Tensor batch2",
                ", Number beta = 1, Number alpha = 1"),
}


def with_out_dtype(fn, name):
    """``fn`` (the op) also taking torch's ``out_dtype`` overload."""
    n_tensors = OUT_DTYPE_FUNCTIONS[name]

    @functools.wraps(fn)
    def call(*args, out_dtype=_NOT_GIVEN, **kwargs):
        if len(args) > n_tensors:  # (beta and alpha are keyword-only)
            if not isinstance(args[n_tensors], D.dtype) or out_dtype is not _NOT_GIVEN:
                raise TypeError(_refusal(name, args, kwargs, out_dtype))
            out_dtype, args = args[n_tensors], args[:n_tensors] + args[n_tensors + 1:]
        if out_dtype is _NOT_GIVEN:
            return fn(*args, **kwargs)
        if not isinstance(out_dtype, D.dtype):
            raise TypeError(_refusal(name, args, kwargs, out_dtype))
        return _with_dtype(fn, name, out_dtype, args, kwargs)
    return call


def _with_dtype(fn, name, out_dtype, args, kwargs):
    from ._out import _refuse_grad_out, cpu_backend_error
    from ._state import state
    out = kwargs.get("out")
    if out is not None and state.grad_enabled:
        _refuse_grad_out(f"aten::{name}", (out,))
    first = args[0] if args else kwargs.get("input")
    if not isinstance(first, Tensor) or first.device.type == "cpu":
        overload = "dtype_out" if out is not None else "dtype"
        raise NotImplementedError(cpu_backend_error(f"aten::{name}.{overload}"))
    inputs = args[1:] if name in ("mm", "bmm") else args[1:3]
    source = inputs[0].dtype if inputs else first.dtype
    if out_dtype is source:
        return fn(*args, **kwargs)
    if out_dtype is not D.float32 or source not in (D.float16, D.bfloat16):
        raise RuntimeError("out_dtype must be the same as input dtype or fp32 for fp16/bf16 "
                           "inputs")
    wide = [a.float() if isinstance(a, Tensor) else a for a in args]
    return fn(*wide, **kwargs)


def _refusal(name, args, kwargs, out_dtype):
    """torch's TypeError for arguments neither overload takes."""
    def kind(v):
        return "Tensor" if isinstance(v, Tensor) else type(v).__name__
    got = [kind(a) for a in args] + [f"{k}={kind(v)}" for k, v in kwargs.items()]
    if out_dtype is not _NOT_GIVEN:
        got.append(f"out_dtype={kind(out_dtype)}")
    tensors, keywords = _SIGNATURES[name]
    return (f"{name}() received an invalid combination of arguments - got ({', '.join(got)}), "
            f"but expected one of:\n * ({tensors}, *{keywords}, Tensor out = None)\n"
            f" * ({tensors}, ember.dtype out_dtype, *{keywords}, Tensor out = None)\n")


def install(module_globals):
    for name in OUT_DTYPE_FUNCTIONS:
        module_globals[name] = with_out_dtype(module_globals[name], name)
