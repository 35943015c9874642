"""Edge results the differential test found, each compared with PyTorch 2.13 (``oracle.same``;
skipped without torch): indexing a 0-dim tensor with a lone slice or integer, an in-place op
on an expanded gradient (a view made by the backward pass, in no_grad mode), the sign of
layer_norm's zeros, and the mean var_mean / std_mean give when the input holds infinities.
"""
from __future__ import annotations

import numpy as np
import pytest
from oracle import same

_ZERO_DIM_KEYS = ["[:]", "[::2]", "[(slice(None),)]", "[..., :]", "[0]", "[np.int64(0)]",
                  "[(0,)]", "[[0]]", "[[True]]", "[t.new_zeros(1).long()]",
                  "[t.new_zeros(()).long()]", "[None, [0]]"]


@pytest.mark.parametrize("key", _ZERO_DIM_KEYS)
@pytest.mark.parametrize("write", [False, True])
def test_zero_dim_lone_index(key, write):
    def body(torch):
        t = torch.tensor(0.5)
        if write:
            exec("t" + key + " = 1.0", {"t": t, "np": np})
            return t
        return eval("t" + key, {"t": t, "np": np})
    same(body)


@pytest.mark.parametrize("key", ["[[0], [0]]", "[0, [0]]", "[:, [0]]", "[..., [0], [1]]",
                                 "[torch.ones(2, 2, dtype=torch.bool)]", "[None, [0], None]"])
def test_too_many_tensor_indices(key):
    def body(torch):
        x = torch.ones(2)
        return eval("x" + key, {"x": x, "torch": torch})
    same(body)


@pytest.mark.parametrize("how", ["autograd_grad", "hook"])
def test_inplace_on_expanded_gradient(how):
    # sum's gradient is an expanded view made during backward (in no_grad mode): once it
    # requires grad, an in-place op on it with grad enabled is torch's no_grad-view error
    def body(torch):
        x = torch.tensor([[2.0, 1.5], [-0.5, 2.0]], requires_grad=True)
        if how == "autograd_grad":
            g, = torch.autograd.grad(x.sum(), [x])
        else:
            seen = []
            x.register_hook(lambda grad: seen.append(grad))
            x.sum().backward()
            g = seen[0]
        g.requires_grad_(True)
        flags = (g._is_view(), g.is_leaf)
        g.floor_()
        return flags
    same(body)


@pytest.mark.parametrize("weight", [None, -1.97, 2.0])
@pytest.mark.parametrize("bias", [None, 0.0, -0.0])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_layer_norm_sign_of_zero(weight, bias, dtype):
    # a row equal to its mean normalises to zero: torch's kernel adds a bias of +0 when there
    # is none, so a negative weight still gives +0
    def body(torch):
        dt = getattr(torch, dtype)
        x = torch.tensor([[-0.42], [1.42], [0.0], [-0.35]], dtype=dt)
        w = None if weight is None else torch.tensor([weight], dtype=dt)
        b = None if bias is None else torch.tensor([bias], dtype=dt)
        y = torch.nn.functional.layer_norm(x, (1,), w, b)
        rows = torch.nn.functional.layer_norm(torch.full((2, 3), 2.0, dtype=dt), (3,),
                                              None if w is None else w.expand(3).clone())
        return y, torch.signbit(y), torch.signbit(rows)
    same(body)


_WITH_INFINITIES = {
    "inf_in_the_middle": [1.0, float("inf"), 2.0],
    "inf_last": [1.0, 2.0, float("inf")],
    "inf_first": [float("inf"), 1.0, 2.0],
    "two_infs": [float("inf"), float("inf")],
    "minus_inf_last": [1.0, float("-inf")],
    "opposite_infs": [float("inf"), float("-inf")],
    "nan_and_inf": [1.0, float("nan"), float("inf")],
    "long_inf_last": [1.0] * 40 + [float("inf")],
    "long_inf_early": [1.0] * 4 + [float("inf")] + [1.0] * 30,
}


@pytest.mark.parametrize("values", sorted(_WITH_INFINITIES))
@pytest.mark.parametrize("fn", ["var_mean", "std_mean"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_welford_mean_with_infinities(values, fn, dtype):
    def body(torch):
        x = torch.tensor(_WITH_INFINITIES[values], dtype=getattr(torch, dtype))
        return getattr(torch, fn)(x), x.mean(), x.var()
    same(body)


@pytest.mark.parametrize("layout", ["rows", "columns", "transposed_rows", "transposed_all",
                                    "keepdim", "expanded"])
def test_welford_mean_with_infinities_by_dim(layout):
    def body(torch):
        inf = float("inf")
        x = torch.tensor([[1.0, inf, 2.0], [3.0, 4.0, inf]], requires_grad=True)
        if layout == "rows":
            return torch.var_mean(x, 1)
        if layout == "columns":
            return torch.var_mean(x, 0)
        if layout == "transposed_rows":
            return torch.std_mean(x.t(), 1)
        if layout == "transposed_all":
            return torch.var_mean(x.t())
        if layout == "keepdim":
            return torch.var_mean(x, 1, keepdim=True, correction=0)
        return torch.var_mean(torch.tensor([inf, 1.0])[:1].expand(3))
    same(body)


_FILL_DTYPES = ["int8", "uint8", "int16", "int32", "int64", "bool", "float16", "float32",
                "float64", "complex64"]
_LIMITED_DTYPES = ["uint16", "uint32", "uint64"]  # (fill_ and full only, in torch)
_FILL_VALUES = [300, -1, 2 ** 40, 1e300, float("nan"), float("inf"), 2.5, -0.5, 70000.0,
                2 ** 63, -2 ** 63 - 1, complex(1, 2)]
_FILLS = {
    "fill_": lambda torch, t, v: t.fill_(v),
    "masked_fill_": lambda torch, t, v: t.masked_fill_(torch.tensor([True, False]), v),
    "masked_fill_tensor": lambda torch, t, v: t.masked_fill_(torch.tensor([True, False]),
                                                             torch.tensor(v)),
    "index_fill_": lambda torch, t, v: t.index_fill_(0, torch.tensor([1]), v),
    "setitem_number": lambda torch, t, v: t.__setitem__(0, v),
    "setitem_mask_tensor": lambda torch, t, v: t.__setitem__(torch.tensor([False, True]),
                                                             torch.tensor(v)),
    "full": lambda torch, t, v: torch.full((2,), v, dtype=t.dtype),
}


@pytest.mark.parametrize("how", sorted(_FILLS))
def test_number_written_into_a_dtype_that_cannot_hold_it(how):
    # torch converts the number with a check (c10's overflows): out of range raises, NaN and
    # inf only into float dtypes, negative integers wrap into unsigned ones
    def body(torch):
        out = []
        for name in _FILL_DTYPES + (_LIMITED_DTYPES if how in ("fill_", "full") else []):
            for v in _FILL_VALUES:
                t = torch.zeros(2, dtype=getattr(torch, name))
                try:
                    r = _FILLS[how](torch, t, v)
                    out.append(str((r if r is not None else t).tolist()))
                except Exception as e:  # noqa: BLE001 - the error is what is compared
                    out.append(f"{name} {v!r}: {type(e).__name__}: {e}")
        return out
    same(body, check_warnings=False)


def test_limited_dtype_written_at_a_mask():
    def body(torch):
        t = torch.zeros(2, dtype=torch.uint16)
        t[torch.tensor([False, True])] = torch.tensor(3)
    same(body)


@pytest.mark.parametrize("code", ["s.pow_(t)", "s.mul_(t)", "s.add_(t)", "s.div_(t)",
                                  "s.atan2_(t)", "v.mul_(t)", "v.add_(t)", "v.pow_(t)",
                                  "v.addcmul_(t, t)", "v.mul_(t[:2])", "w.mul_(t[:2])"])
def test_inplace_saving_an_inference_tensor(code):
    # a recorded in-place op saves what its gradient needs before its kernel runs: an inference
    # operand it saves is refused before the kernel's shape check (add_ saves nothing)
    def body(torch):
        a = torch.tensor([1.0, 2.0], requires_grad=True)
        with torch.inference_mode():
            t = torch.ones(1, 3, 3)[0, 0]
        s, v, w = (a * 2).sum(), a * 2, torch.ones(2)
        exec(code, {"s": s, "v": v, "w": w, "t": t})
        return v
    same(body)
