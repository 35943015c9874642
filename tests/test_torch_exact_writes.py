"""``x[key] = v`` and index_put_ as torch 2.13 runs them: a tensor index writes through
index_put_ on the view the key's basic indices make, which wants the value's dtype to be the
tensor's, except for a one-element value at one boolean mask (a masked_fill_ with the value as a
number); the shape is checked before the dtype, both before any index is read; a basic index
writes with copy_to (view the value without its leading ones, expand it, then copy), so a
shape error comes before an overlap error.

Each body runs on PyTorch and on ember (``oracle.same``); the tests skip without torch.
"""
from __future__ import annotations

import pytest
from oracle import same


def _ints(t):
    return t.tensor([[1, 2, 3], [4, 5, 6]])


def _floats(t):
    return t.tensor([[1., 2, 3], [4, 5, 6]], requires_grad=True).clone()


def _expanded(t):
    return t.ones(3).expand(2, 3)


def _vector(values, dtype=None):
    return lambda t: t.tensor(values, dtype=dtype and getattr(t, dtype))


def _value(*args, **kwargs):
    return lambda t, a: t.tensor(*args, **kwargs)


def _itself(t, a):
    return a


# name: (the tensor written into, its key, the value as a function of (torch, that tensor))
_WRITES = {
    # dtypes: index_put_ wants the tensor's, a masked fill of one value takes a number
    "int_from_float_list": (_ints, lambda t: [0], _value(2.5)),
    "int_from_float_grad": (_ints, lambda t: t.tensor([1]), _value(1.5, requires_grad=True)),
    "float_from_double": (lambda t: _ints(t).float(), lambda t: [0, 1],
                          lambda t, a: t.tensor([2.], dtype=t.float64)),
    "float_from_long_expanded": (_expanded, lambda t: [0], _value(2)),
    "bool_from_float": (_vector([True, False]), lambda t: [0], _value(1.5)),
    "bool_tensor_index": (_ints, lambda t: t.tensor(True), _value(2.5)),
    "python_bool_index": (_ints, lambda t: True, _value(2.5)),
    "empty_list_index": (_ints, lambda t: [], _value(2.5)),
    "mask_one_value": (_ints, lambda t: t.tensor([True, False]), _value(2.5)),
    "mask_one_value_1d": (_ints, lambda t: t.tensor([[True, False, True], [True, True, True]]),
                          _value([2.5])),
    "mask_after_int": (_ints, lambda t: (0, t.tensor([True, False, True])), _value([[2.5]])),
    "mask_list_after_slice": (_ints, lambda t: ([True, False], slice(1, None)),
                              _value([[2.5]])),
    "mask_many_values": (_ints, lambda t: t.tensor([[True, False, True], [True, True, True]]),
                         _value([2.5, 3.5, 1, 1, 1])),
    "mask_many_ints": (_ints, lambda t: t.tensor([[True, False, True], [True, True, True]]),
                       _value([2, 3, 1, 1, 1])),
    "mask_and_index": (_ints, lambda t: (t.tensor([True, False]), [0]), _value(2.5)),
    "uint8_mask": (_ints, lambda t: t.tensor([[1, 0, 1], [1, 1, 1]], dtype=t.uint8),
                   _value(2.5)),
    "expanded_mask_one_value": (_expanded, lambda t: t.tensor([True, False]), _value(2.5)),
    "expanded_mask_row": (_expanded, lambda t: t.tensor([True, False]), _value([2.5, 1, 1])),
    "expanded_index_row": (_expanded, lambda t: [0], _value([2.5, 1, 1])),
    # a basic index writes with copy_ or fill_ of a tensor: both refuse an expanded tensor
    "expanded_fill_all": (lambda t: t.zeros(()).expand(2, 3), lambda t: Ellipsis,
                          lambda t, a: 3.5),
    "expanded_fill_rows": (lambda t: t.zeros(()).expand(2, 3), lambda t: slice(0, 1),
                           lambda t, a: 4.5),
    "expanded_copy_row": (lambda t: t.zeros(()).expand(2, 3), lambda t: 0, _value([1., 2, 3])),
    # shape before dtype before the indices' range
    "shape_before_range": (_ints, lambda t: ([0, 1], [5, 0]), _value([2., 3, 4])),
    "dtype_before_range": (_ints, lambda t: ([0, 1], [5, 0]), _value([2., 3])),
    "indices_not_broadcastable": (_ints, lambda t: ([0, 1], [0, 1, 2]), _value(1)),
    "range_of_int_in_tuple": (_ints, lambda t: (0, 5), lambda t, a: 1),
    "range_of_index_after_int": (_ints, lambda t: (0, [5]), lambda t, a: 1),
    "empty_rows_empty_list": (lambda t: t.zeros(0, 3), lambda t: [], lambda t, a: -1.45),
    # overlap: a basic write's shape error first; a masked fill reads its value first
    "shape_before_overlap": (_vector([-0.25, 0.29, -1.71, 1.99]), lambda t: slice(None, 2),
                             _itself),
    "expand_before_overlap": (_vector([-0.08, -0.7, -0.4, -1.62], "float64"), lambda t: 3,
                              _itself),
    "itself_through_select": (_vector([0.0], "float64"), lambda t: -1, _itself),
    "masked_itself": (_vector([0.91], "float64"), lambda t: t.tensor([False]), _itself),
    "masked_part_of_itself": (lambda t: t.ones(3), lambda t: t.tensor([True, False, True]),
                              lambda t, a: a[:1]),
    "empty_mask_itself": (lambda t: t.ones(0, dtype=t.float64),
                          lambda t: t.zeros(0, dtype=t.bool), _itself),
    "empty_index_itself": (lambda t: t.ones(0), lambda t: t.tensor([], dtype=t.int64),
                           _itself),
}


@pytest.mark.parametrize("name", sorted(_WRITES))
def test_setitem(name):
    """The error, or the values, version and warnings after the write."""
    make, key, value = _WRITES[name]

    def body(t):
        a = make(t)
        a[key(t)] = value(t, a)
        return a, a._version
    same(body)


def test_setitem_graph():
    """A tensor index after an integer writes into the view the integer selects (CopySlices);
    a value that is a same-shape view after dropping its leading ones is not expanded."""
    def body(t):
        a = _floats(t)
        a[0, [0, 1]] = t.tensor([2., 3])
        b = _floats(t)
        b[0, t.tensor([True, False, True])] = t.tensor(2.5, requires_grad=True)
        c = _floats(t)
        c[t.tensor([True, False])] = t.tensor(2.5)
        x = t.tensor([0.16], requires_grad=True)
        y = t.xlogy(x, x)
        y[-1] = y
        (a.sum() + b.sum() + c.sum() + y.sum()).backward()
        return (a, b, c, y, x.grad, [f[0].name() if f[0] else None
                                     for f in y.grad_fn.next_functions])
    same(body)


def test_index_put():
    """Tensor.index_put_ and torch.index_put: the same dtype rule and masked fill; indices
    must all be tensors."""
    def body(t):
        out = []
        for fn in (lambda: _ints(t).index_put_((t.tensor([1]),), t.tensor(1.5)),
                   lambda: _ints(t).index_put_((t.tensor([1]),), t.tensor(1.5), accumulate=True),
                   lambda: _ints(t).index_put_((t.tensor([True, False]),), t.tensor(1.5)),
                   lambda: t.index_put(_ints(t), (t.tensor([True, False]),), t.tensor(1.5)),
                   lambda: t.index_put(_ints(t), (t.tensor([1]),), t.tensor(1.5)),
                   lambda: _ints(t).index_put_((None, t.tensor([2, 0])), t.tensor([7, 8])),
                   lambda: t.index_put(_ints(t), (t.tensor([1]), 0), t.tensor(7))):
            try:
                out.append(fn())
            except (RuntimeError, TypeError) as e:
                out.append(str(e))
        return out
    same(body)
