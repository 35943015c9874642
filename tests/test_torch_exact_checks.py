"""torch's checks where ember used to check otherwise: the shapes take_along_dim broadcasts
(infer_size's error), the degrees-of-freedom warning of var and std on empty tensors, the
strides of expand (what decides whether ``x[None, :] = x`` copies a tensor onto itself), and
the order of the checks of an in-place write.

Each body runs on PyTorch and on ember (``oracle.same``); the tests skip without torch.
"""
from __future__ import annotations

import pytest
from oracle import same


@pytest.mark.parametrize("shapes", [((4, 2), (2, 3), -1), ((1, 4, 4), (1, 3, 2), -2),
                                    ((2, 3), (5, 3), 1), ((2, 3), (2, 1), 0)])
def test_take_along_dim_broadcast_error(shapes):
    size, index_size, dim = shapes
    same(lambda t: t.take_along_dim(t.ones(size, requires_grad=True),
                                    t.zeros(index_size, dtype=t.long), dim))


_MOMENTS = {
    "var_rows_of_none": lambda t: t.zeros(0, 3).var(1),
    "var_rows_of_none_c0": lambda t: t.zeros(0, 3).var(1, correction=0),
    "var_none_of_rows": lambda t: t.zeros(3, 0).var(0),
    "var_columns_of_none": lambda t: t.zeros(0, 3).var(0),
    "var_keepdim": lambda t: t.zeros(0, 3).var(1, keepdim=True),
    "var_negative_correction": lambda t: t.zeros(0, 3).var(1, correction=-1),
    "var_half_correction": lambda t: t.zeros(0, 3).var(1, correction=0.5),
    "std": lambda t: t.zeros(0, 3, requires_grad=True).std(1),
    "std_mean": lambda t: t.std_mean(t.zeros(0, 3), 1),
    "var_mean": lambda t: t.var_mean(t.zeros(0, 3), 1, correction=0),
    "var_all": lambda t: t.zeros(0, 3).var(),
    "var_too_much_correction": lambda t: t.ones(2, 3).var(1, correction=3),
    "var_fractional_dof": lambda t: t.ones(2, 3).var(1, correction=2.5),
}


@pytest.mark.parametrize("name", sorted(_MOMENTS))
def test_degrees_of_freedom_warning(name):
    same(_MOMENTS[name])


_EXPANDED = {"0-dim": lambda t: t.tensor(1.), "one": lambda t: t.ones(1),
             "one_by_one": lambda t: t.ones(1, 1), "row": lambda t: t.ones(2),
             "strided": lambda t: t.ones(3)[::2], "empty": lambda t: t.ones(0),
             "transposed": lambda t: t.ones(2, 3).t()}


@pytest.mark.parametrize("name", sorted(_EXPANDED))
def test_expand_strides(name):
    """A new dimension of size 1 gets the stride that continues the next one (NumPy's 0 is
    not torch's); a 0-dim tensor's new dimensions all get 0."""
    def body(t):
        x = _EXPANDED[name](t)
        lead = [(0,), (1,), (2,), (1, 1), (1, 2), (0, 1)]
        return [x.expand(s + tuple(x.shape)).stride() for s in lead]
    same(body)


_SELF_COPIES = {  # torch's copy_ returns at once when the source is the very same elements
    "unsqueezed": lambda t, a: a.__setitem__((None, slice(None)), a),
    "none": lambda t, a: a.__setitem__(None, a),
    "ellipsis": lambda t, a: a.__setitem__(Ellipsis, a),
    "row_view": lambda t, a: a.__setitem__((None, slice(None)), a.view(1, 6)),
    "diagonal": lambda t, a: a.view(2, 3)[:, :2].diagonal().__setitem__(
        (None, slice(None)), a.view(2, 3)[:, :2].diagonal()),
    # these overlap in part: torch refuses them
    "shifted": lambda t, a: a.__setitem__(slice(0, 3), a[1:4]),
    "transposed": lambda t, a: a.view(2, 3).copy_(a.view(3, 2).t()),
}


@pytest.mark.parametrize("name", sorted(_SELF_COPIES))
def test_setitem_onto_itself(name):
    def body(t):
        a = t.arange(6.)
        _SELF_COPIES[name](t, a)
        return a, a._version
    same(body)


def test_setitem_onto_itself_recorded():
    def body(t):
        b = t.ones(3, requires_grad=True).exp()
        b[None, :] = b
        return b, b._version, b.grad_fn.next_functions[0][0].name()
    same(body)


def _sum_gradient(t):
    x = t.ones(2, 4, requires_grad=True)
    return x, t.autograd.grad(x.sum(), [x])[0]


_GRADIENT_WRITES = {  # sum's gradient is an expanded view the backward pass made (no_grad)
    "copy_tracked": lambda t, x, g: g.copy_(x * 0.7),
    "mul_tracked": lambda t, x, g: g.mul_(x),
    "fill_tracked": lambda t, x, g: g.fill_(x[0, 0]),
    "row_copy_tracked": lambda t, x, g: g[0].copy_(x[0] * 2),
    "copy_plain": lambda t, x, g: g.copy_(x.detach() * 0.7),
    "copy_no_grad": lambda t, x, g: t.no_grad()(g.copy_)(x * 2),
    "fill_number": lambda t, x, g: g.fill_(2.),
    "zero": lambda t, x, g: g.zero_(),
    "add_number": lambda t, x, g: g.add_(1.),
}


@pytest.mark.parametrize("name", sorted(_GRADIENT_WRITES))
def test_write_into_expanded_gradient(name):
    """Autograd's refusal of a view made in no_grad mode comes before the kernel's of a
    written-to tensor whose elements overlap."""
    def body(t):
        x, g = _sum_gradient(t)
        _GRADIENT_WRITES[name](t, x, g)
        return g, g._is_view()
    same(body)
