"""Views of storage and writes through views, against PyTorch 2.13 (see ``oracle.py``; these
tests skip without torch): ``as_strided``, ``view_as_real`` / ``view_as_complex``, the
``real`` / ``imag`` views, ``x[key] = value`` (which torch writes through the view ``x[key]``),
and views made in no_grad mode. Values, grad_fn names, bases, versions and errors are compared.
"""
from __future__ import annotations

import pytest
from oracle import same


def _complex_leaf(lib):
    return lib.tensor([1 + 2j, 3 - 1j], requires_grad=True)


# -- real / imag / view_as_real / view_as_complex ----------------------------------------------
def test_real_and_imag_are_views_with_gradients():
    def body(lib):
        x = _complex_leaf(lib)
        im, re = x.imag, x.real
        facts = (im, re, im._base is x, re._base is x, re.stride(), im._version)
        im.sum().backward()
        g_imag = x.grad.clone()
        x.grad = None
        (x.real * lib.tensor([2.0, 3.0])).sum().backward()
        return facts, g_imag, x.grad
    same(body)


def test_view_as_real_and_view_as_complex():
    def body(lib):
        x = _complex_leaf(lib)
        r = lib.view_as_real(x)
        xr = lib.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
        c = lib.view_as_complex(xr)
        facts = (r, r._base is x, r.stride(), c, c._base is xr)
        (lib.view_as_real(c * 2) * lib.tensor([[1.0, 2.0], [3.0, 4.0]])).sum().backward()
        return facts, xr.grad, lib.view_as_real(lib.tensor(1 + 1j)).shape
    same(body)


def test_complex_views_share_memory_and_version():
    def body(lib):
        x = lib.tensor([1 + 2j, 3 - 1j])
        r = lib.view_as_real(x)
        r[0, 0] = 9.0
        seen = (x.clone(), x._version, r._version)
        x.imag.mul_(2)
        z = lib.tensor([1 + 2j, 3 - 1j])
        z.real = lib.tensor([5.0, 6.0])
        z.imag = lib.tensor([7.0, 8.0])
        return seen, x, x._version, z, z._version
    same(body)


def test_inplace_through_imag_rebases_the_base():
    def body(lib):
        a = _complex_leaf(lib)
        b = a * 1
        b.imag.mul_(3)
        lib.view_as_real(b).sum().backward()
        return b, b.grad_fn.name(), a.grad
    same(body)


def test_real_of_a_real_tensor_is_itself():
    def body(lib):
        t = lib.ones(3)
        return t.real is t, lib.real(t) is t, t.real._base is None
    same(body)


@pytest.mark.parametrize("case", [
    "real_of_real", "complex_of_1d", "complex_last_dim_3", "complex_last_stride",
    "complex_odd_offset", "complex_0dim", "complex_odd_stride", "complex_long", "imag_of_real",
    "set_imag_of_real"])
def test_complex_view_errors(case):
    def body(lib):
        calls = {
            "real_of_real": lambda: lib.view_as_real(lib.ones(3)),
            "complex_of_1d": lambda: lib.view_as_complex(lib.ones(3)),
            "complex_last_dim_3": lambda: lib.view_as_complex(lib.ones(3, 3)),
            "complex_last_stride": lambda: lib.view_as_complex(
                lib.ones(4, 2).t().contiguous().t()),
            "complex_odd_offset": lambda: lib.view_as_complex(lib.ones(1, 4)[:, 1:3]),
            "complex_0dim": lambda: lib.view_as_complex(lib.tensor(1.0)),
            "complex_odd_stride": lambda: lib.view_as_complex(
                lib.ones(3, 6)[:, 1:].reshape(3, 5)[:, :2]),
            "complex_long": lambda: lib.view_as_complex(lib.ones(3, 2, dtype=lib.int64)),
            "imag_of_real": lambda: lib.ones(3).imag,
            "set_imag_of_real": lambda: setattr(lib.ones(2), "imag", lib.ones(2)),
        }
        calls[case]()
    same(body)


def test_view_as_complex_of_an_empty_tensor():
    def body(lib):
        return lib.view_as_complex(lib.zeros(0, 2)).shape, lib.view_as_complex(
            lib.tensor([1.0, 2.0]))
    same(body)


# -- as_strided ------------------------------------------------------------------------------------
def test_as_strided_view_and_gradients():
    def body(lib):
        x = lib.arange(12.0).requires_grad_()
        y = x.as_strided((3, 3), (2, 1), 1)
        fn = y.grad_fn
        facts = (y, y._base is x, y.stride(), fn._saved_size, fn._saved_stride,
                 fn._saved_storage_offset)
        g, = lib.autograd.grad((y * y).sum(), x, create_graph=True)
        g2, = lib.autograd.grad((g * lib.arange(12.0)).sum(), x)
        return facts, g.detach(), g2
    same(body)


def test_as_strided_layouts():
    def body(lib):
        t = lib.arange(6.0)
        return (t.as_strided((2,), (1,), 4), t[2:].as_strided((2, 2), (1, 1)),
                t[2:].as_strided((2, 2), (1, 1), 0), t.as_strided((2, 3), (0, 1)).stride(),
                t.as_strided((0, 3), (1, 1), 100).shape, t.as_strided((), (), 3),
                t[2:].as_strided((2,), (2,))._base is t,
                lib.as_strided(t, (2,), (1,), storage_offset=1),
                t.view(2, 3).t().as_strided((3,), (1,), 2))
    same(body)


def test_as_strided_gradient_of_an_overlapping_input():
    """An input whose elements share memory shares each position's gradient among them."""
    def body(lib):
        x = lib.arange(3.0).requires_grad_()
        x.expand(2, 3).as_strided((2,), (1,), 1).sum().backward()
        return x.grad
    same(body)


def test_inplace_on_an_as_strided_view():
    def body(lib):
        x = lib.ones(4, requires_grad=True)
        xx = x * 1
        y = xx.as_strided((2,), (2,))
        y.mul_(3)
        names = (xx.grad_fn.name(), y.grad_fn.name())
        xx.sum().backward()
        return xx, names, x.grad
    same(body)


@pytest.mark.parametrize("case", [
    "out_of_bounds", "length_mismatch", "negative_stride", "negative_offset", "negative_size",
    "offset_out_of_bounds", "float_size", "float_size_function", "float_stride", "int_size",
    "float_offset", "complex_out_of_bounds", "view_of_leaf_inplace"])
def test_as_strided_errors(case):
    def body(lib):
        t = lib.arange(6.0)
        calls = {
            "out_of_bounds": lambda: t.as_strided((3, 3), (2, 1)),
            "length_mismatch": lambda: t.as_strided((3,), (1, 2)),
            "negative_stride": lambda: t.as_strided((3,), (-1,)),
            "negative_offset": lambda: t.as_strided((2,), (1,), -1),
            "negative_size": lambda: t.as_strided((-2,), (1,)),
            "offset_out_of_bounds": lambda: t.as_strided((2,), (1,), 5),
            "float_size": lambda: t.as_strided((2.5,), (1,)),
            "float_size_function": lambda: lib.as_strided(t, (2.5,), (1,)),
            "float_stride": lambda: lib.as_strided(t, (2,), (1.5,)),
            "int_size": lambda: lib.as_strided(t, 2, (1,)),
            "float_offset": lambda: t.as_strided([2], [1], 0.5),
            "complex_out_of_bounds": lambda: lib.tensor([1 + 2j]).as_strided((2,), (1,)),
            "view_of_leaf_inplace": lambda: lib.ones(4, requires_grad=True).as_strided(
                (2, 2), (1, 1)).mul_(2),
        }
        calls[case]()
    same(body)


# -- x[key] = value writes through the view x[key] -------------------------------------------------
SETITEM_KEYS = {
    "full_slice_number": (slice(None), 1.0),
    "full_slice_tensor": (slice(None), "row"),
    "ellipsis_number": (Ellipsis, 1.0),
    "ellipsis_0dim": (Ellipsis, "0dim"),
    "int_number": (0, 1.0),
    "int_tensor": (0, "row"),
    "column": ((slice(None), 1), 2.0),
    "none": (None, 1.0),
    "empty_tuple": ((), 1.0),
    "true": (True, 1.0),
    "false": (False, 1.0),
    "element": ((0, 1), 3.0),
    "element_0dim": ((0, 1), "0dim"),
    "broadcast_value": (1, "row_1x4"),
    "block": ((slice(None), slice(1, 3)), "pair"),
    "rows_from_leaf": (slice(1, None), "leaf_2x4"),
    "clamped_full_slice": (slice(0, 10), 5.0),
}


def _value(lib, spec):
    if not isinstance(spec, str):
        return spec
    return {"row": lambda: lib.ones(4, dtype=lib.float64),
            "0dim": lambda: lib.tensor(2.0, dtype=lib.float64),
            "row_1x4": lambda: lib.ones(1, 4),
            "pair": lambda: lib.ones(2),
            "leaf_2x4": lambda: lib.ones(2, 4, dtype=lib.float64, requires_grad=True)}[spec]()


@pytest.mark.parametrize("case", list(SETITEM_KEYS))
def test_setitem_history_and_gradient(case):
    def body(lib):
        key, spec = SETITEM_KEYS[case]
        a = lib.ones(3, 4, dtype=lib.float64, requires_grad=True)
        x = a * 1
        value = _value(lib, spec)
        x[key] = value
        facts = (x.grad_fn.name(), x._version, x)
        (x * lib.arange(12.0, dtype=lib.float64).view(3, 4)).sum().backward()
        return facts, a.grad, value.grad if isinstance(value, lib.Tensor) else None
    same(body)


def test_setitem_without_autograd():
    def body(lib):
        t = lib.zeros(2, 3)
        t[0] = 1.0
        v1 = t._version
        t[...] = 2.0
        t[False] = 3.0
        t[1, 1:] = lib.tensor([7, 8])
        t[0] = lib.tensor(5, dtype=lib.int64)
        i = lib.zeros(3, dtype=lib.int64)
        i[1] = 2.7
        f = lib.zeros(2, 3, dtype=lib.float64)
        f[1] = lib.ones(3, dtype=lib.float32) * 0.1
        v = lib.zeros(4)
        v[2] = 1.5  # a 1-d tensor's element is a 0-dim view
        return t, v1, t._version, i, f, v
    same(body)


@pytest.mark.parametrize("case", ["value_too_long", "value_too_many_dims", "value_1x3",
                                  "index_out_of_range", "too_many_indices", "slice_too_many",
                                  "str_value", "list_value"])
def test_setitem_errors(case):
    def body(lib):
        x = lib.zeros(2, 3)
        key, value = {"value_too_long": (0, lib.ones(4)),
                      "value_too_many_dims": (0, lib.ones(2, 3)),
                      "value_1x3": (0, lib.ones(1, 3)),
                      "index_out_of_range": (5, 1.0),
                      "too_many_indices": ((0, 0, 0), 1.0),
                      "slice_too_many": (slice(None), lib.ones(3, 3)),
                      "str_value": (0, "a"),
                      "list_value": (0, [1.0, 2.0, 3.0])}[case]
        x[key] = value
        return x
    same(body)


# -- views made in no_grad mode --------------------------------------------------------------
def test_no_grad_view_of_a_requires_grad_base():
    """It requires grad (through its base) with no grad_fn; ops on it record an edge to
    nothing; a view of it made with grad enabled gets a grad_fn."""
    def body(lib):
        base = lib.ones(3, 4, requires_grad=True) * 2
        with lib.no_grad():
            v = base[0]
            w_inside = v.t() if v.dim() == 2 else v.unsqueeze(0)
        y = v * 2
        w = v[1:]
        return (v.requires_grad, v.is_leaf, v.grad_fn, w_inside.requires_grad,
                y.requires_grad, [fn for fn, _ in y.grad_fn.next_functions],
                w.grad_fn.name(), w.requires_grad)
    same(body)


@pytest.mark.parametrize("case", ["view_of_no_grad_view", "unbind_base_modified",
                                  "unbind_base_modified_in_no_grad", "multi_output_plain_base"])
def test_views_that_may_not_be_rebased(case):
    def body(lib):
        a = lib.ones(3, 4, requires_grad=True)
        if case == "view_of_no_grad_view":
            base = a * 2
            with lib.no_grad():
                v = base.t()
            v[0].mul_(2)
        elif case == "unbind_base_modified":
            base = a * 2
            u = base.unbind()[0]
            base.mul_(2)
            u * 2
        elif case == "unbind_base_modified_in_no_grad":
            base = a * 2
            u = base.unbind()[0]
            with lib.no_grad():
                base.mul_(2)
            u.grad_fn
        else:
            p = lib.zeros(3, 4)
            u = p.unbind()[0]
            u.add_(1)  # nothing recorded: allowed
            u.add_(lib.ones(4, requires_grad=True))
    same(body)


def test_storage_offset_and_untyped_storage():
    def body(torch):
        x = torch.arange(12.).reshape(3, 4)
        views = [x, x[1:, 2:], x.t()[2], x.view(-1)[5:], x.diagonal(), x[2, 3]]
        shared = [v.untyped_storage().data_ptr() == x.untyped_storage().data_ptr()
                  for v in views]
        fresh = x.clone().untyped_storage().data_ptr() != x.untyped_storage().data_ptr()
        return ([v.storage_offset() for v in views], shared, fresh,
                [(len(v.untyped_storage()), v.untyped_storage().nbytes()) for v in views],
                x.untyped_storage().element_size())
    same(body)
