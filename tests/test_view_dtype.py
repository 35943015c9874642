"""``x.view(dtype)`` as torch does it: the same memory read as another dtype (the last dim
scaled when the element sizes differ), torch's errors otherwise, outside autograd (no grad_fn,
never requires grad) and sharing the version counter of its source."""
from __future__ import annotations

import pytest
from oracle import same

_VIEWS = [
    "x.view(torch.int32)", "x.view(torch.float16)", "x.view(torch.bfloat16)",
    "x[:, :2].view(torch.float64)", "x.view(dtype=torch.complex64)", "x.t().view(torch.int32)",
    "x[:, :1].view(torch.float16).stride()", "x.reshape(-1)[2:].view(torch.float64)",
    "x.to(torch.complex64).view(torch.float32)", "x.to(torch.complex64).view(torch.complex128)",
    "torch.tensor([True, False]).view(torch.uint8)", "torch.tensor([1, 2]).view(torch.float64)",
    "torch.tensor(1.0).view(torch.int32)", "torch.zeros(0, 2).view(torch.float64).shape",
    "torch.arange(4).view(torch.int8).shape",
    # torch's errors
    "x[:, :3].view(torch.float64)", "x.t().view(torch.float16)",
    "torch.tensor(1.0).view(torch.float16)",
    "x.reshape(-1)[1:7].view(torch.float64)", "x[:, ::2].view(torch.float64)",
    "torch.arange(12.0).reshape(3, 4)[:, :2].t().view(torch.float64)",
    "torch.arange(64.0).as_strided((3, 2), (3, 2)).view(torch.float64)",
    "torch.arange(64.0).as_strided((3, 2), (3, 1)).view(torch.float64)",
    "torch.arange(64.0).as_strided((3, 2), (3, 1), 1).view(torch.float64)",
]


@pytest.mark.parametrize("call", _VIEWS)
def test_view_dtype_as_torch(call):
    def body(torch):
        x = torch.arange(8.0).reshape(2, 4)
        return eval(call)
    same(body)


def test_view_dtype_shares_memory_and_version():
    def body(torch):
        x = torch.arange(4.0)
        y = x.view(torch.int32)
        y[0] = 1065353216  # the bits of 1.0
        return x, x._version, y._version, y._base is None, y._is_view()
    same(body)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "complex64", "float16"])
def test_view_dtype_is_outside_autograd(dtype):
    def body(torch):
        a = torch.randn(2, 4, requires_grad=True)
        b = a.view(getattr(torch, dtype))
        c = (a * 2).view(getattr(torch, dtype))
        return b.requires_grad, b.grad_fn is None, b.is_leaf, c.requires_grad, c.grad_fn is None
    same(body)


def test_writing_through_a_dtype_view_fails_backward():
    def body(torch):
        a = torch.randn(3, requires_grad=True)
        b = a * a
        a.view(torch.int32).zero_()
        b.sum().backward()
    same(body)
