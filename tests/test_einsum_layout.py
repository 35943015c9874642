"""einsum's results laid out as torch lays them out.

torch computes a contraction as a batched matrix product whose result it views and permutes
into the output's subscript order, swapping the two operands when every dimension of the
right one alone comes before every dimension of the left one alone (``'ij,jk->ki'`` is then
contiguous, ``'ijm,klm->kijl'`` is not). The strides decide whether a later ``flatten`` or
``reshape`` is a view or a copy, and so whether an in-place write through it changes the
einsum's result: each body here compares strides, contiguity, view-ness, the copy-or-view of
``flatten``/``view``/``reshape`` (through an in-place ``relu_``), values, gradients and graphs
with PyTorch 2.13 (``oracle.same``; skipped without torch).
"""
from __future__ import annotations

import math

import pytest
from oracle import graph_tree, same

# (equation, operand shapes): matrix products with every output order, batches, outer
# products, reductions, diagonals, broadcasting ``...``, size-one dimensions, three operands
_CASES = [
    ("ij,jk->ik", [(3, 4), (4, 2)]),
    ("ij,jk->ki", [(3, 4), (4, 2)]),
    ("ij,jk->ki", [(2, 4), (4, 3)]),
    ("ij,jk", [(3, 4), (4, 5)]),
    ("jk,ij", [(3, 4), (4, 5)]),
    ("ij,kj->ik", [(3, 4), (5, 4)]),
    ("ij,kj->ki", [(3, 4), (5, 4)]),
    ("ij,jk->ki", [(1, 4), (4, 3)]),
    ("ij,jk->ki", [(3, 4), (4, 1)]),
    ("ij,jk->ki", [(1, 4), (4, 1)]),
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
    ("bij,bjk->bki", [(2, 3, 4), (2, 4, 5)]),
    ("bij,bjk->kbi", [(2, 3, 4), (2, 4, 5)]),
    ("bij,bjk->ibk", [(2, 3, 4), (2, 4, 5)]),
    ("bij,bjk->kib", [(2, 3, 4), (2, 4, 5)]),
    ("bij,bjk->kib", [(1, 3, 4), (1, 4, 5)]),
    ("bij,bjk->bki", [(1, 3, 4), (1, 4, 5)]),
    ("bij,bjk->bki", [(2, 1, 4), (2, 4, 5)]),
    ("bij,jk->kbi", [(2, 3, 4), (4, 5)]),
    ("ij,bjk->kbi", [(3, 4), (2, 4, 5)]),
    ("ij,bjk->bik", [(3, 4), (2, 4, 5)]),
    ("ijm,klm->kijl", [(2, 3, 4), (5, 6, 4)]),
    ("ijm,klm->klij", [(2, 3, 4), (5, 6, 4)]),
    ("ijm,klm->lkji", [(2, 3, 4), (5, 6, 4)]),
    ("ijkm,lm->lkij", [(2, 3, 5, 4), (6, 4)]),
    ("ijkm,lm->klij", [(2, 3, 5, 4), (6, 4)]),
    ("i,j->ij", [(3,), (4,)]),
    ("i,j->ji", [(3,), (4,)]),
    ("ij,ij->ji", [(3, 4), (3, 4)]),
    ("ij,j->i", [(3, 4), (4,)]),
    ("ij,ij->", [(3, 4), (3, 4)]),
    ("ij->ji", [(3, 4)]),
    ("ij->j", [(3, 4)]),
    ("ijk->kji", [(2, 3, 4)]),
    ("ii->i", [(3, 3)]),
    ("iij->ji", [(3, 3, 4)]),
    ("...ij,...jk->...ki", [(2, 3, 4), (4, 5)]),
    ("...ij,...jk->...ik", [(2, 3, 4), (2, 4, 5)]),
    ("i...j,jk->k...i", [(3, 2, 4), (4, 5)]),
    ("ij,jk,kl->li", [(3, 4), (4, 5), (5, 2)]),
    ("ij,jk,kl->il", [(3, 4), (4, 5), (5, 2)]),
    ("bi,bj,bk->kjb", [(2, 3), (2, 4), (2, 5)]),
]

_IDS = [f"{eq}-{'x'.join(''.join(map(str, s)) for s in shapes)}" for eq, shapes in _CASES]


def _operands(t, shapes, requires_grad=False):
    """Operands with positive and negative values (so ``relu_`` changes some of them)."""
    out = []
    for k, shape in enumerate(shapes):
        n = math.prod(shape)
        x = ((t.arange(float(n)) * (k + 2)) % 7 - 3).reshape(shape)
        out.append(x.requires_grad_(requires_grad))
    return out


def _strides(r):
    """The strides of the dimensions of more than one element: those decide contiguity and
    which views are possible. (A dimension of one element takes NumPy's stride in ember's
    ``view``, not always torch's: a difference of ``view``, not einsum's.)"""
    return tuple(s if n > 1 else None for n, s in zip(r.shape, r.stride()))


def _view_or_error(r):
    try:
        return r.view(-1)
    except RuntimeError as e:
        return str(e)


@pytest.mark.parametrize("eq,shapes", _CASES, ids=_IDS)
def test_layout_as_torch(eq, shapes):
    def body(t):
        r = t.einsum(eq, *_operands(t, shapes))
        return r, _strides(r), r.is_contiguous(), r._is_view(), _view_or_error(r)
    same(body)


@pytest.mark.parametrize("eq,shapes", _CASES, ids=_IDS)
@pytest.mark.parametrize("how", ["flatten", "reshape"])
def test_in_place_write_through_a_flattened_result(eq, shapes, how):
    """A ``relu_`` of ``flatten()``/``reshape(-1)`` changes the einsum result exactly where
    that is a view in torch (the random-program tester's program 58000254)."""
    def body(t):
        r = t.einsum(eq, *_operands(t, shapes))
        flat = r.flatten() if how == "flatten" else r.reshape(-1)
        flat.relu_()
        return r, flat, flat._is_view()
    same(body)


@pytest.mark.parametrize("eq,shapes", _CASES, ids=_IDS)
def test_values_gradients_and_graph_as_torch(eq, shapes):
    def body(t):
        ops = _operands(t, shapes, requires_grad=True)
        r = t.einsum(eq, *ops)
        weights = t.arange(float(r.numel())).reshape(r.shape) - 1.5
        grads = t.autograd.grad((r * weights).sum(), ops)
        return r, grads, graph_tree(r.grad_fn, depth=8)
    same(body)


@pytest.mark.parametrize("eq,shapes", [("ij,jk->ki", [(2, 1), (1, 3)]),
                                       ("ij,jk->ik", [(2, 1), (1, 3)]),
                                       ("ij,jk->ki", [(3, 1), (1, 2)]),
                                       ("bij,bjk->kbi", [(2, 3, 1), (2, 1, 4)])])
def test_product_when_the_summed_label_has_one_element(eq, shapes):
    """Nothing is summed when the summed label has one element: the product of the aligned
    (broadcast) operands is the result, laid out as torch's elementwise product lays it out,
    the dimension of one element ordering the others (the random-program tester's program
    58000254: 'ij,jk->ki' of a (2, 1) and a (1, 3) has strides (1, 3))."""
    def body(t):
        ops = _operands(t, shapes, requires_grad=True)
        r = t.einsum(eq, *ops)
        with t.no_grad():
            plain = t.einsum(eq, *ops)
        flat = plain.flatten()
        flat.relu_()
        return r, _strides(r), _strides(plain), plain, flat._is_view()
    same(body)


@pytest.mark.parametrize("fn", ["mul", "add", "operator"])
def test_broadcast_product_ordered_by_a_dimension_of_one_element(fn):
    """Two C-ordered inputs, broadcast, whose dimension of one element (in both) has a stride
    that orders the result's dimensions as torch's TensorIterator sorts them."""
    def body(t):
        a = t.arange(2.).reshape(2, 1).unsqueeze(2).permute(2, 0, 1)  # (1, 2, 1)
        b = t.arange(3.).reshape(1, 3).unsqueeze(2).permute(1, 2, 0)  # (3, 1, 1), stride 3 last
        out = {"mul": lambda: t.mul(a, b), "add": lambda: t.add(a, b),
               "operator": lambda: a * b}[fn]()
        grad_out = {"mul": lambda: t.mul(a.requires_grad_(), b),
                    "add": lambda: t.add(a.requires_grad_(), b),
                    "operator": lambda: a.requires_grad_() * b}[fn]()
        return out, _strides(out), _strides(grad_out), out.is_contiguous()
    same(body)


_PRODUCTS = {
    "tensordot_two_dims": lambda t, o: t.tensordot(o(3, 4, 5), o(5, 4, 2), dims=([1, 2], [1, 0])),
    "tensordot_one_dim": lambda t, o: t.tensordot(o(3, 4, 5), o(5, 4, 2), dims=([2], [0])),
    "tensordot_permuted": lambda t, o: t.tensordot(o(5, 3, 4).permute(1, 2, 0), o(5, 2),
                                                   dims=([2], [0])),
    "tensordot_one_element": lambda t, o: t.tensordot(o(3, 1), o(1, 2), dims=([1], [0])),
    "tensordot_outer": lambda t, o: t.tensordot(o(3), o(2), dims=0),
    "bilinear": lambda t, o: t.nn.functional.bilinear(o(4, 3), o(4, 5), o(6, 3, 5), o(6)),
    "bilinear_batch": lambda t, o: t.nn.functional.bilinear(o(2, 4, 3), o(2, 4, 5), o(6, 3, 5)),
    "bilinear_transposed": lambda t, o: t.nn.functional.bilinear(o(3, 4).t(), o(4, 5),
                                                                 o(6, 3, 5)),
}


@pytest.mark.parametrize("name", sorted(_PRODUCTS))
def test_tensordot_and_bilinear_layout_as_torch(name):
    def body(t):
        def operand(*shape):
            (x,) = _operands(t, [shape], requires_grad=True)
            return x
        r = _PRODUCTS[name](t, operand)
        flat = r.detach().flatten()
        return r, _strides(r), r.is_contiguous(), flat._is_view()
    same(body)
