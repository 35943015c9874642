"""Calls on inference tensors only, outside inference mode: torch runs its kernel with no
autograd layer, so what its composite kernel does to the fresh result shows: stack is cat then
a view, repeat (and tile) return a view of a result written once, and scatter, index_copy,
index_fill, masked_fill and nan_to_num write theirs in place once or twice (``_version``).

Each body runs on PyTorch 2.13 and on ember (``oracle.same``); the tests skip when torch is
not installed.
"""
from __future__ import annotations

import math
import warnings

import pytest
from oracle import same

_CALLS = {
    "stack": lambda t, x, a: t.stack([x, x]),
    "stack_last": lambda t, x, a: t.stack([x, x], -1),
    "repeat": lambda t, x, a: x.repeat(2, *[1] * x.dim()),
    "tile": lambda t, x, a: x.tile((2,)),
    "scatter": lambda t, x, a: x.scatter(0, a["zeros"], 1.0),
    "scatter_add": lambda t, x, a: x.scatter_add(0, a["zeros"], x),
    "index_copy": lambda t, x, a: x.index_copy(0, a["first"], a["src"]),
    "index_fill": lambda t, x, a: x.index_fill(0, a["first"], -1.0),
    "masked_fill": lambda t, x, a: x.masked_fill(a["mask"], 1.0),
    "nan_to_num": lambda t, x, a: x.nan_to_num(),
}


@pytest.mark.parametrize("call", sorted(_CALLS))
@pytest.mark.parametrize("shape", [(3,), (2, 3), (0, 3)])
@pytest.mark.parametrize("operands", ["inference", "normal"])
def test_result_of_a_call_on_inference_tensors(call, shape, operands):
    # (with an operand that is not an inference tensor, torch's autograd layer runs, and
    # hides all this)
    def body(t):
        with t.inference_mode():
            x = t.arange(float(math.prod(shape))).reshape(shape) - 2
        with t.inference_mode(operands == "inference"):
            aux = {"zeros": t.zeros(shape, dtype=t.int64), "mask": t.ones(shape, dtype=t.bool),
                   "first": t.tensor([0]), "src": t.ones((1,) + shape[1:])}
        if call in ("index_copy", "index_fill") and shape[0] == 0:
            return None
        r = _CALLS[call](t, x, aux)
        base = r._base
        return (r, r._version, r.is_inference(),
                None if base is None else (tuple(base.shape), base._version))
    same(body)


_SELECTIONS = {  # kernels that fill a 0-d, empty or one-element case, or reshape in place
    "max_dim": lambda t, x: x.max(-1), "max_dim_keepdim": lambda t, x: x.max(0, True),
    "min_dim": lambda t, x: x.min(0), "min_dim_keepdim": lambda t, x: x.min(-1, keepdim=True),
    "mode": lambda t, x: x.mode(-1), "mode_keepdim": lambda t, x: x.mode(-1, True),
    "topk": lambda t, x: x.topk(1, -1), "topk_none": lambda t, x: x.topk(0, -1),
    "median": lambda t, x: x.median(), "nanmedian": lambda t, x: x.nanmedian(),
    "nanmedian_dim": lambda t, x: x.nanmedian(-1),
    "amax": lambda t, x: x.amax(-1), "amin": lambda t, x: x.amin(0),
    "argmax_dim": lambda t, x: x.argmax(-1), "argmin_dim_keepdim": lambda t, x: x.argmin(0, True),
    "cumsum": lambda t, x: x.cumsum(-1), "cumprod": lambda t, x: x.cumprod(0),
    "logcumsumexp": lambda t, x: x.logcumsumexp(0),
    "diag": lambda t, x: t.diag(x), "diag_offset": lambda t, x: t.diag(x, 1),
    "diag_embed": lambda t, x: t.diag_embed(x), "diagflat": lambda t, x: t.diagflat(x),
    "diagonal_copy": lambda t, x: t.diagonal_copy(x),
    "flip_last": lambda t, x: x.flip(-1), "flip_all": lambda t, x: x.flip(tuple(range(x.dim()))),
    "frexp": lambda t, x: t.frexp(x),
    "norm": lambda t, x: x.norm(), "norm_dim": lambda t, x: x.norm(dim=-1),
    "vector_norm_dims": lambda t, x: t.linalg.vector_norm(x, 1, dim=(0, -1)),
    "var_dim": lambda t, x: x.var(0), "std_dim": lambda t, x: x.std(-1, keepdim=True),
    "var_mean": lambda t, x: t.var_mean(x, -1), "std_mean": lambda t, x: t.std_mean(x),
    "pow_0": lambda t, x: x ** 0, "pow_1": lambda t, x: x.pow(1.0), "pow_2": lambda t, x: x ** 2,
    "int_pow_1": lambda t, x: x.long() ** 1,
}


@pytest.mark.parametrize("call", sorted(_SELECTIONS))
@pytest.mark.parametrize("shape", [(), (1,), (3,), (1, 1), (2, 3), (3, 1), (0, 3)])
def test_versions_of_selections_and_scans_on_inference_tensors(call, shape):
    def body(t):
        with t.inference_mode():
            x = (t.arange(float(math.prod(shape))) % 3).reshape(shape) - 1
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # (var of one element: its degrees of freedom)
            r = _SELECTIONS[call](t, x)
        rs = r if isinstance(r, tuple) else (r,)
        return [(v, v._version, v.is_inference()) for v in rs]
    same(body)


@pytest.mark.parametrize("dtype", ["int64", "int32", "uint8", "float32"])
@pytest.mark.parametrize("name", ["floor", "ceil", "round", "trunc", "fix"])
def test_versions_of_rounding_an_inference_tensor(name, dtype):
    # torch rounds an integer tensor by copying it (copy_ into the result): outside inference
    # mode, with no autograd layer for an inference input, that write shows as version 1
    def body(t):
        with t.inference_mode():
            x = t.tensor([-3, 1, 2]).abs().to(getattr(t, dtype)) - 1
        r = getattr(t, name)(x)
        return r, r._version, r.is_inference(), getattr(x, name)()._version
    same(body)


@pytest.mark.parametrize("name", ["linalg.slogdet", "slogdet", "linalg.det", "det", "logdet",
                                  "linalg.eigh", "linalg.eigvalsh"])
@pytest.mark.parametrize("where", ["inference_input", "inference_mode", "no_grad", "grad"])
def test_determinants_and_eigh_on_inference_tensors(name, where):
    # slogdet's and det's kernels write their results in place once, eigh its eigenvectors:
    # versions 1 (and 0 for the eigenvalues) on inference tensors outside inference mode;
    # under inference_mode inference results, and backward refused where nothing requires grad
    def body(torch):
        fn = torch
        for part in name.split("."):
            fn = getattr(fn, part)
        a = torch.tensor([[2.0, 1.0], [1.0, 3.0]], dtype=torch.float64)
        if where == "inference_input":
            with torch.inference_mode():
                a = a.clone()
        elif where == "grad":
            a.requires_grad_()
        mode = {"inference_mode": torch.inference_mode, "no_grad": torch.no_grad}.get(where)
        if mode is None:
            out = fn(a)
        else:
            with mode():
                out = fn(a)
        outs = out if isinstance(out, tuple) else (out,)
        seen = [(t.is_inference(), t.requires_grad, None if t.is_inference() else t._version)
                for t in outs]
        try:
            sum(t.sum() for t in outs).backward()
            grad = a.grad
        except RuntimeError as e:
            grad = str(e)
        return seen, grad, tuple(t.detach() for t in outs)
    same(body, rtol=1e-12, atol=1e-12)
