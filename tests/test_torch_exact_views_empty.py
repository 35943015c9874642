"""Tensors with no elements have torch's strides and storage offsets: a fresh one is laid out
contiguously (a dimension of size 0 counting as 1), and an empty view sits where torch's
arithmetic puts it (``t[5:]`` starts at the end of ``t``), so what reads that geometry
(``stride()``, ``storage_offset()``, ``as_strided``, gradients of views of it) agrees."""
from __future__ import annotations

import numpy
import pytest
from oracle import same

# Each expression gives a tensor or a tuple of tensors, all with no elements.
_EMPTY = [
    # fresh tensors
    "torch.zeros(3, 0)", "torch.zeros(0, 3)", "torch.empty(2, 0, 4)", "torch.ones(2, 3, 0)",
    "torch.tensor([])", "torch.tensor([[], []])", "torch.zeros(2, 3).new_empty(2, 0)",
    "torch.zeros(2, 3).new_zeros(0, 2)", "torch.empty_strided((3, 0), (5, 7))",
    "torch.cat([torch.zeros(0, 3), torch.zeros(0, 3)])", "torch.zeros(3, 0) + 1",
    "torch.zeros(3, 0).sum(0)",
    # slices, narrow, select and the ops built on them
    "torch.arange(3.0)[5:]", "torch.zeros(0, 3)[1:3, 1:3:2]", "x[0::3, -2:2:3, 1:-1:2]",
    "torch.zeros(4, 3)[:, 5:]", "torch.zeros(4, 6)[:, 4:4:2]", "torch.zeros(3, 4)[2:2, None, 1:]",
    "torch.zeros(3, 0)[1]", "torch.zeros(3, 0, 2)[..., 1]", "torch.zeros(4, 3, 2)[1:3, 7:][1]",
    "torch.zeros(4, 3).narrow(0, 2, 0)", "torch.zeros(4, 3).narrow(1, 3, 0)",
    "torch.zeros(3, 0).select(0, 2)", "torch.zeros(3, 0, 2).select(0, -1)",
    "torch.zeros(3, 0).unbind(0)", "torch.zeros(0, 3, 2).unbind(1)",
    "torch.zeros(4, 3).split([2, 0, 2], 0)", "torch.zeros(0, 3).split(2, 1)",
    "torch.zeros(0, 3).chunk(2, 0)", "torch.zeros(3, 0).chunk(3, 1)",
    "torch.zeros(5, 2).tensor_split([1, 1, 4, 9], 0)",
    "torch.zeros(3, 3).diagonal(5)", "torch.zeros(3, 3).diagonal(-4)",
    "torch.zeros(0, 3).diagonal(1)", "torch.zeros(3, 0, 2).diagonal(0, 1, 2)",
    "torch.zeros(4, 3).unfold(0, 2, 3)[5:]", "torch.zeros(0, 3).unfold(1, 2, 1)",
    # views that move strides around
    "torch.zeros(3, 0).t()", "torch.zeros(0, 3).t()", "torch.zeros(2, 0, 4).permute(2, 0, 1)",
    "torch.zeros(2, 0, 4).transpose(0, 2)", "torch.zeros(2, 0, 4).mT",
    "torch.zeros(2, 0, 4).movedim(0, 2)", "torch.zeros(1, 0).expand(3, 0)",
    "torch.zeros(0, 3).expand(2, 0, 3)", "torch.zeros(1, 3).expand(0, 3)",
    "torch.zeros(()).expand(2, 0)", "torch.zeros(3, 0).unsqueeze(1)",
    "torch.zeros(3, 0).unsqueeze(2)", "torch.zeros(0, 3).unsqueeze(0)",
    "torch.zeros(1, 0, 1).squeeze()", "torch.zeros(1, 0, 1).squeeze(0)",
    "torch.zeros(1, 0, 1).squeeze((0, 2))", "torch.zeros(2, 0, 4).view(0, 8)",
    "torch.zeros(4, 3)[:, 5:].view(4, 0)", "torch.zeros(2, 0, 4).reshape(8, 0)",
    "torch.zeros(2, 0, 4).flatten()", "torch.zeros(2, 0).unflatten(0, (1, 2))",
    "torch.zeros(2, 0).view(-1)", "torch.zeros(0, 3).t().reshape(-1)",
    "torch.zeros(4, 3)[:, 5:].unflatten(0, (2, 2))", "torch.zeros(4, 3)[:, 5:].vsplit([1, 3])",
    "torch.zeros(3, 4)[:, 7:2]", "torch.zeros(3, 4)[:, -10:0]",
    "torch.zeros(5, 1)[3:3].squeeze_(1)", "torch.zeros(3, 0).transpose_(0, 1)",
    "torch.zeros(6)[2:2].as_strided((2,), (1,), 1)", "torch.zeros(4, 3)[torch.tensor(5):]",
    "torch.zeros(3, 0).select(0, numpy.int64(2))", "torch.zeros(4, 3)[:, 1:1:numpy.int64(2)]",
    "torch.zeros(2, 0, 4).permute(2, 0, 1).contiguous()", "torch.zeros(4, 3)[:, 5:].detach()",
    "torch.zeros(0, 3).t_()", "torch.zeros(4, 3)[:, 5:].unsqueeze_(0)",
    "torch.zeros(3, 0, dtype=torch.complex64).real",
    "torch.zeros(3, 4, dtype=torch.complex64)[:, 5:].imag",
    "torch.view_as_real(torch.zeros(3, 4, dtype=torch.complex64)[1:1])",
    # as_strided of an empty view starts at its offset
    "torch.zeros(4, 3).as_strided((0, 2), (7, 5), 2)",
    "torch.zeros(4, 4)[:, 6:].view(torch.int16)", "torch.zeros(4, 4)[2:2].view(torch.float64)",
    "torch.zeros(4, 4).t()[2:2].view(torch.int32)",
]


def _geometry(t):
    if isinstance(t, (tuple, list)):
        return tuple(_geometry(p) for p in t)
    return tuple(t.shape), t.stride(), t.storage_offset(), t.is_contiguous()


@pytest.mark.parametrize("expr", _EMPTY)
def test_empty_geometry_as_torch(expr):
    def body(torch):
        x = torch.arange(8.0).reshape(1, 4, 2)  # (read by some expressions)
        return _geometry(eval(expr, {"torch": torch, "numpy": numpy, "x": x}))
    same(body)


def test_empty_views_in_inference_mode():
    def body(torch):
        x = torch.zeros(4, 3)
        with torch.inference_mode():
            inside = torch.zeros(4, 3)
            a, b = inside[:, 5:], x[2:2]
            c = inside.split([3, 0, 1])
        return _geometry((a, b, c))
    same(body)


def test_as_strided_of_empty_slice_starts_at_its_offset():
    def body(torch):
        t1 = torch.tensor([[[-0.49, 0.58], [-1.98, -0.29], [-1.0, 1.24], [-0.76, -1.18]]])
        t2 = t1[0::3, -2:2:3, 1:-1:2]
        t2.as_strided((2,), (1,)).pow_(-1.23)
        return t1, t2.storage_offset(), t2.stride()
    same(body)


def test_inplace_through_empty_slice_gradient():
    def body(torch):
        x = torch.arange(12.0, requires_grad=True)
        y = x * 1
        w = y.view(4, 3)[:, 5:].as_strided((2,), (1,))
        w.mul_(3)
        y.sum().backward()
        return x.grad, y, w
    same(body)


def test_regenerated_view_of_empty_slice_gradient():
    # u's history is rebuilt from its base after the base's in-place op: the rebuilt view
    # must start where the empty slice does
    def body(torch):
        x = torch.arange(12.0, requires_grad=True)
        y = x * 1
        u = y[7:7].as_strided((3,), (2,))
        y.mul_(2)
        (u * torch.arange(3.0)).sum().backward()
        return x.grad, u
    same(body)


def test_empty_data_ptr_is_zero():
    def body(torch):
        return [t.data_ptr() for t in (torch.zeros(0), torch.zeros(4, 3)[:, 5:],
                                       torch.zeros(3, 0).t())]
    same(body)


def test_save_and_load_keep_empty_geometry():
    def body(torch):
        import io
        t = torch.arange(12.0).reshape(4, 3)
        saved = {"t": t, "v": t[:, 5:], "w": torch.zeros(0, 3).t(), "z": torch.zeros(2, 0, 3)}
        buffer = io.BytesIO()
        torch.save(saved, buffer)
        buffer.seek(0)
        loaded = torch.load(buffer)
        return {k: _geometry(v) for k, v in loaded.items()}
    same(body)


def test_empty_views_on_the_meta_device():
    def body(torch):
        m = torch.zeros(4, 3, device="meta")
        return _geometry((m[:, 5:], m[2:2], m[:, 5:].t(), torch.zeros(0, 3, device="meta").t(),
                          m[:, 5:].as_strided((2,), (1,)), m.split([4, 0])))
    same(body)


# index_fill_ views self (out of place, its new copy) with the dim as long as the index and of
# stride 0 before filling: an empty dim reaches past the storage unless self is a view with
# memory after it; a fill of no element reads no index
_FILL_EMPTY = [
    "torch.zeros(0).index_fill_(0, torch.tensor([0]), 1.0)",
    "torch.zeros(0).index_fill_(0, torch.tensor([1, 2]), 1.0)",
    "torch.zeros(0).index_fill_(0, torch.tensor([-1]), torch.tensor(2.0))",
    "torch.zeros(0).index_fill(0, torch.tensor([0]), 1.0)",
    "torch.zeros(0).index_fill_(0, torch.tensor([], dtype=torch.int64), 1.0)",
    "torch.zeros(0, 3).index_fill_(0, torch.tensor([0]), 1.0)",
    "torch.zeros(2, 0, 3).index_fill_(1, torch.tensor([1]), 1.0)",
    "torch.zeros(2, 0, 3).index_fill_(2, torch.tensor([1]), 1.0)",
    "torch.zeros(3, 0).index_fill_(0, torch.tensor([5]), 1.0)",
    "torch.zeros(5)[5:].index_fill_(0, torch.tensor([0]), 1.0)",
    "torch.zeros(5)[5:].index_fill(0, torch.tensor([0]), 1.0)",
    "torch.zeros(5)[2:2].index_fill_(0, torch.tensor([0]), 1.0)",
    "torch.zeros(5)[:0].index_fill_(0, torch.tensor([0]), 1.0)",
]


@pytest.mark.parametrize("expr", _FILL_EMPTY)
def test_index_fill_of_an_empty_dim(expr):
    same(lambda torch: eval(expr, {"torch": torch}))  # noqa: S307 - the table's text
