"""Sparse COO tensors against torch: construction, printing, conversion, products, sums,
arithmetic, gradients (of the dense operand and of the sparse values) and the errors of ops
torch has no sparse kernel for."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import ember
from tests.oracle import error_of, same, torch_or_skip

pytest.importorskip("scipy")


def _quiet(body):
    """``body`` with the sparse-invariants warning (torch gives it once per process) off."""
    def run(torch):
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="Sparse invariant checks")
            return body(torch)
    return run


def check(body, **kw):
    return same(_quiet(body), check_warnings=False, **kw)


def _s(torch, coalesced=False, requires_grad=False):
    i = torch.tensor([[0, 1, 1, 2], [2, 0, 2, 1]] if coalesced else [[1, 0, 1, 2], [2, 2, 0, 1]])
    v = torch.tensor([3.0, 4.0, 5.0, -1.5], requires_grad=requires_grad)
    return torch.sparse_coo_tensor(i, v, (3, 4)), v


def _describe(s):
    """What torch shows of a sparse tensor: its repr and every query, its dense values."""
    return (repr(s), str(s.layout), s.is_sparse, s.is_coalesced(), s._nnz(), s.sparse_dim(),
            s.dense_dim(), tuple(s.shape), s.dim(), str(s.dtype), s.to_dense())


@pytest.mark.parametrize("coalesced", [False, True])
def test_construction_and_queries(coalesced):
    check(lambda torch: _describe(_s(torch, coalesced)[0]))


def test_reprs():
    def body(torch):
        out = [repr(_s(torch, requires_grad=True)[0])]
        out.append(repr(torch.sparse_coo_tensor(torch.tensor([[0, 1], [1, 2]]), torch.ones(2),
                                                (3, 3), dtype=torch.int64)))
        out.append(repr(torch.sparse_coo_tensor(torch.zeros(2, 0, dtype=torch.int64),
                                                torch.zeros(0), (2, 2))))
        torch.manual_seed(0)
        out.append(repr(torch.randn(3, 3, dtype=torch.float64).to_sparse()))
        out.append(repr(torch.tensor([[0, 1.5], [2, 0]]).to_sparse().coalesce()))
        x = torch.tensor([[0.0, 1.0, 0.0], [2.0, 0.0, 3.0]], requires_grad=True)
        out.append(repr(x.to_sparse()))
        out.append(repr(torch.tensor([[0, 1.0], [0, 0]]).to_sparse(1)))
        return out
    check(body)


def test_inferred_size_numpy_indices_and_dtype():
    def body(torch):
        edges = np.array([[0, 1], [1, 2], [3, 0]], dtype=np.int32)
        a = torch.sparse_coo_tensor(edges.T, torch.ones(3), (4, 4), dtype=torch.int64)
        b = torch.sparse_coo_tensor(torch.tensor([[0, 4], [1, 1]]), torch.tensor([1.0, 2.0]))
        return repr(a), repr(b), torch.eye(4) + a
    check(body)
    check(lambda torch: _s(torch)[0] + torch.ones(3, 4))


def test_coalesce_indices_values():
    def body(torch):
        i = torch.tensor([[1, 0, 1, 1], [2, 2, 0, 2]])
        s = torch.sparse_coo_tensor(i, torch.tensor([1.0, 2.0, 3.0, 4.0]), (2, 3))
        c = s.coalesce()
        return (repr(c), c.indices(), c.values(), s._indices(), s._values(), c.is_coalesced(),
                c.coalesce() is c)
    check(body)


def test_uncoalesced_indices_values_refused():
    check(lambda torch: _s(torch)[0].indices())
    check(lambda torch: _s(torch)[0].values())


@pytest.mark.parametrize("method", ["indices", "values", "coalesce", "is_coalesced"])
def test_dense_refused_by_sparse_queries(method):
    check(lambda torch: getattr(torch.ones(2), method)())


def test_dense_conversions_pass_through():
    check(lambda torch: (torch.ones(2).to_dense(), torch.ones(2).sparse_dim(),
                         torch.ones(2, 3).dense_dim(), torch.ones(2).is_sparse,
                         str(torch.ones(2).layout)))


@pytest.mark.parametrize("form", ["sparse.mm", "spmm", "mm", "matmul", "@", "method"])
def test_sparse_dense_product_and_gradients(form):
    def body(torch):
        s, v = _s(torch, requires_grad=True)
        d = torch.arange(8.0).reshape(4, 2).requires_grad_()
        fn = {"sparse.mm": torch.sparse.mm, "spmm": torch.spmm, "mm": torch.mm,
              "matmul": torch.matmul, "@": lambda a, b: a @ b, "method": lambda a, b: a.mm(b)}
        out = fn[form](s, d)
        (out * torch.tensor([1.0, -2.0])).sum().backward()
        return out, v.grad, d.grad, out.grad_fn.name(), [
            type(f).__name__ for f, _ in out.grad_fn.next_functions if f is not None]
    check(body)


def test_dense_sparse_product_gradients():
    def body(torch):
        s, v = _s(torch, requires_grad=True)
        d = torch.arange(6.0).reshape(2, 3).requires_grad_()
        out = d @ s
        out.pow(2).sum().backward()
        return out, v.grad, d.grad
    check(body)


def test_gradient_of_a_sparse_leaf_is_sparse_with_its_pattern():
    def body(torch):
        s = _s(torch)[0].requires_grad_()
        d = torch.arange(8.0).reshape(4, 2)
        torch.sparse.mm(s, d).sum().backward()
        g1 = repr(s.grad)
        s.grad = None
        (s * 3).to_dense().sum().backward()
        g2 = repr(s.grad)
        s.grad = None
        torch.mm(torch.ones(2, 3), s).sum().backward()  # torch: a dense gradient here
        return g1, g2, s.grad, s.is_leaf
    check(body)


def test_two_sparse_gradients_are_summed():
    def body(torch):
        s = _s(torch, coalesced=True)[0].requires_grad_()
        d = torch.arange(8.0).reshape(4, 2)
        (torch.sparse.mm(s, d).sum() + s.to_dense().pow(2).sum()).backward()
        return repr(s.grad)
    check(body)


def test_to_dense_values_coalesce_gradients():
    def body(torch):
        s, v = _s(torch, requires_grad=True)
        c = s.coalesce()
        out = (c.values() * torch.tensor([1.0, 2.0, 3.0, 4.0])).sum() + s.to_dense()[1].sum()
        out.backward()
        names = (c.grad_fn.name(), c.values().grad_fn.name(), s.to_dense().grad_fn.name())
        return v.grad, names
    check(body)


def test_to_sparse_gradient():
    def body(torch):
        x = torch.tensor([[0.0, 1.5, 0.0], [2.0, 0.0, -3.0]], requires_grad=True)
        y = x.to_sparse()
        (y.to_dense() * torch.arange(6.0).reshape(2, 3)).sum().backward()
        return x.grad, y.grad_fn.name(), x.to_sparse(1).grad_fn.name()
    check(body)


def test_duplicate_indices_each_get_the_gradient():
    def body(torch):
        v = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
        s = torch.sparse_coo_tensor(torch.tensor([[0, 1, 0], [1, 1, 1]]), v, (2, 2))
        (s.to_dense() * torch.tensor([[1.0, 5.0], [7.0, 11.0]])).sum().backward()
        return s.to_dense(), v.grad
    check(body)


def test_sums():
    def body(torch):
        s, v = _s(torch, requires_grad=True)
        a = torch.sparse.sum(s)
        b = torch.sparse.sum(s, dim=1)
        c = torch.sparse.sum(s, dim=(0, 1))
        (a + (b.to_dense() * torch.tensor([1.0, 2.0, 3.0])).sum() + c).backward()
        return a, repr(b), c, v.grad
    check(body)


def test_arithmetic():
    def body(torch):
        s, v = _s(torch, requires_grad=True)
        s2 = torch.sparse_coo_tensor(torch.tensor([[1, 0], [0, 0]]), torch.tensor([1.0, 2.0]),
                                     (3, 4))
        c = s.coalesce()
        out = [repr(s * 2), repr(2 * s), repr(s + s2), repr(c + c), repr(s2 + s2)]
        dense = torch.ones(3, 4) + s
        out += [dense, dense.grad_fn.name(), repr(s.t()), s.t().grad_fn.name()]
        (s * 2 + s2).to_dense().sum().backward()
        return out, v.grad
    check(body)


def test_sparse_plus_dense_gradient():
    def body(torch):
        s, v = _s(torch, requires_grad=True)
        d = torch.zeros(3, 4, requires_grad=True)
        out = d + s
        (out * torch.arange(12.0).reshape(3, 4)).sum().backward()
        return out, v.grad, d.grad
    check(body)


@pytest.mark.parametrize("call", ["exp", "cos_method", "view", "sigmoid_", "softmax"])
def test_ops_without_a_sparse_kernel(call):
    torch = torch_or_skip()

    def first_sentence(lib):
        s = _quiet(lambda t: t.randn(2, 2).to_sparse())(lib)
        fn = {"exp": lambda: lib.exp(s), "cos_method": lambda: s.cos(),
              "view": lambda: s.view(4), "sigmoid_": lambda: s.sigmoid_(),
              "softmax": lambda: lib.softmax(s, 0)}[call]
        try:
            fn()
        except Exception as e:  # noqa: BLE001 - its type and text are compared
            return type(e).__name__, str(e).split(". ")[0]
        return None
    assert first_sentence(ember) == first_sentence(torch)


def test_product_errors():
    check(lambda torch: torch.sparse.mm(_s(torch)[0], torch.ones(3, 2)))
    check(lambda torch: torch.mm(_s(torch)[0], torch.ones(5, 2)))
    check(lambda torch: torch.sparse.mm(_s(torch)[0].double(), torch.ones(4, 2)))


def test_gradcheck_through_sparse_values():
    def body(torch):
        i = torch.tensor([[0, 1, 1, 2], [2, 0, 2, 1]])
        v = torch.tensor([3.0, 4.0, 5.0, -1.5], dtype=torch.float64, requires_grad=True)
        d = torch.arange(8.0, dtype=torch.float64).reshape(4, 2).requires_grad_()

        def f(v, d):
            return torch.sparse.mm(torch.sparse_coo_tensor(i, v, (3, 4)), d)
        return torch.autograd.gradcheck(f, (v, d))
    check(body)


def test_without_scipy_the_product_says_so(monkeypatch):
    import sys
    monkeypatch.setitem(sys.modules, "scipy", None)
    monkeypatch.setitem(sys.modules, "scipy.sparse", None)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        s = ember.randn(2, 2).to_sparse()
    with pytest.raises(ModuleNotFoundError, match="pip install scipy"):
        ember.sparse.mm(s, ember.ones(2, 2))


def test_to_numpy_refused():
    check(lambda torch: _s(torch)[0].numpy())


def test_scalar_and_mixed_dtypes_promote():
    def body(torch):
        s = torch.sparse_coo_tensor(torch.tensor([[0, 1], [1, 0]]), torch.tensor([1, 2]), (2, 2))
        return (repr(s * 2.5), repr(2 * s), repr(s * True), repr(s.float() * 2),
                repr(s + s.double()), repr(s / 2), repr(s.double() / 4))
    check(body)


@pytest.mark.parametrize("form", ["neg", "torch.neg", "sub", "sub_alpha", "sub_self", "transpose",
                                  "transpose_negative_dims", "div"])
def test_neg_sub_transpose(form):
    def body(torch):
        s, v = _s(torch, requires_grad=True)
        s2 = torch.sparse_coo_tensor(torch.tensor([[1, 0], [0, 0]]), torch.tensor([1.0, 2.0]),
                                     (3, 4))
        fn = {"neg": lambda: -s, "torch.neg": lambda: torch.neg(s), "sub": lambda: s - s2,
              "sub_alpha": lambda: torch.sub(s2, s, alpha=2), "sub_self": lambda: s - s,
              "transpose": lambda: s.transpose(0, 1), "div": lambda: s / 4,
              "transpose_negative_dims": lambda: torch.transpose(s, -1, 0)}
        r = fn[form]()
        (r.to_dense() * torch.arange(12.0).reshape(r.shape)).sum().backward()
        return repr(r), v.grad
    check(body)


@pytest.mark.parametrize("method", ["_indices", "_values", "_nnz", "_coalesced_"])
def test_dense_refused_by_sparse_internals(method):
    torch = torch_or_skip()

    def first_sentence(lib):
        args = (True,) if method == "_coalesced_" else ()
        try:
            getattr(lib.ones(2), method)(*args)
        except Exception as e:  # noqa: BLE001 - its type and text are compared
            return type(e).__name__, str(e).split(". ")[0]
        return None
    assert first_sentence(ember) == first_sentence(torch)


def test_hybrid_one_dim_empty_bool_and_float64():
    def body(torch):
        h = torch.sparse_coo_tensor(torch.tensor([[1, 0, 1]]),
                                    torch.tensor([[1., 2.], [3., 4.], [5., 6.]]), (3, 2))
        one = torch.sparse_coo_tensor(torch.tensor([[2, 0]]), torch.tensor([1., 2.]), (4,))
        e = torch.sparse_coo_tensor(torch.zeros(2, 0, dtype=torch.long), torch.zeros(0), (2, 3))
        b = torch.sparse_coo_tensor(torch.tensor([[0, 1], [1, 0]]), torch.tensor([True, False]),
                                    (2, 2))
        d = torch.sparse_coo_tensor(torch.tensor([[0, 1], [1, 0]]),
                                    torch.tensor([1., 2.], dtype=torch.float64), (2, 2))
        return (repr(h), repr(h.coalesce()), h.to_dense(), h.sparse_dim(), h.dense_dim(),
                repr(torch.tensor([[0., 1.], [0., 0.], [2., 3.]]).to_sparse(1)),
                repr(one), one.to_dense(), repr(one * 2), repr(e.coalesce()),
                torch.sparse.mm(e, torch.ones(3, 1)), repr(torch.zeros(2, 2).to_sparse()),
                repr(b), repr(d))
    check(body)


@pytest.mark.parametrize("case", ["nnz", "bounds", "ndim", "hybrid_mm"])
def test_construction_errors(case):
    def body(torch):
        if case == "nnz":
            return torch.sparse_coo_tensor(torch.tensor([[0, 1]]), torch.tensor([1., 2., 3.]), (2,))
        if case == "bounds":
            return torch.sparse_coo_tensor(torch.tensor([[0, 5]]), torch.tensor([1., 2.]), (2,),
                                           check_invariants=True)
        if case == "ndim":
            return torch.sparse_coo_tensor(torch.tensor([[0, 1]]), torch.tensor([1., 2.]), (2, 3))
        h = torch.sparse_coo_tensor(torch.tensor([[1, 0]]), torch.ones(2, 2), (3, 2))
        return torch.sparse.mm(h, torch.ones(2, 2))
    check(body)


def test_graph_convolution_training_matches_torch():
    """A two-layer graph convolution on a sparse normalised adjacency, trained for a few
    steps: the pattern of pytorch/examples' gcn (built here from scratch)."""
    def body(torch):
        torch.manual_seed(0)
        rng = np.random.default_rng(0)
        n, feats, classes = 30, 12, 3
        edges = rng.integers(0, n, (60, 2)).astype(np.int32)
        adj = torch.sparse_coo_tensor(edges.T, torch.ones(len(edges)), (n, n), dtype=torch.int64)
        adj = torch.eye(n) + adj
        deg = torch.sqrt(1 / torch.sum(adj, dim=1))
        norm = torch.diag(deg).to_sparse()
        adj = (norm @ adj @ norm).to_sparse()
        x = torch.tensor((rng.random((n, feats)) < 0.3).astype(np.float32)).to_sparse()
        y = torch.tensor(rng.integers(0, classes, n))
        w1 = torch.nn.Parameter(torch.randn(feats, 8) * 0.3)
        w2 = torch.nn.Parameter(torch.randn(8, classes) * 0.3)
        opt = torch.optim.Adam([w1, w2], lr=0.05)
        losses = []
        for _ in range(5):
            opt.zero_grad()
            h = torch.relu(torch.spmm(adj, torch.mm(x, w1)))
            out = torch.nn.functional.log_softmax(torch.sparse.mm(adj, h @ w2), dim=1)
            loss = torch.nn.functional.nll_loss(out, y)
            loss.backward()
            opt.step()
            losses.append(loss.item())
        return losses, w1.grad, w2.grad
    check(body, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("dim", [0, 1, -1, (0, 1), (1, 0)])
def test_sum_over_dims(dim):
    def body(torch):
        s, v = _s(torch, requires_grad=True)
        r = s.sum(dim)
        out = [repr(r), repr(torch.sum(s, dim, dtype=torch.float64))]
        try:  # torch: an error unless every dim is summed
            (r.to_dense() if r.is_sparse else r).sum().backward()
        except RuntimeError as e:
            return out, str(e)
        return out, v.grad
    check(body)


@pytest.mark.parametrize("order", ["sparse_dense", "dense_sparse", "int_float"])
def test_times_dense(order):
    def body(torch):
        s, v = _s(torch, requires_grad=True)
        d = torch.arange(12.0).reshape(3, 4).requires_grad_()
        if order == "int_float":
            si = torch.sparse_coo_tensor(torch.tensor([[0, 1], [1, 0]]), torch.tensor([1, 2]),
                                         (2, 2))
            return repr(si * torch.full((2, 2), 1.5))
        r = s * d if order == "sparse_dense" else d * s
        (r.to_dense() * torch.arange(12.0).reshape(3, 4)).sum().backward()
        return repr(r), d.grad.to_dense(), v.grad  # (torch's d.grad is sparse, ember's dense)
    check(body)


def test_times_dense_computed_operand():
    def body(torch):
        v = torch.tensor([1.5, -2.0, 3.0], requires_grad=True)
        s = torch.sparse_coo_tensor(torch.tensor([[0, 1, 0], [1, 0, 1]]), v, (2, 2))
        d = torch.full((2, 2), 0.3, requires_grad=True)
        (s * (d * 2 + 1).exp()).to_dense().sum().backward()
        return d.grad.to_dense(), v.grad
    check(body)


@pytest.mark.parametrize("form", ["mv", "@", "method"])
def test_matrix_vector_product(form):
    def body(torch):
        s, v = _s(torch, requires_grad=True)
        x = torch.tensor([1.0, 2.0, -1.0, 0.5], requires_grad=True)
        fn = {"mv": torch.mv, "@": lambda a, b: a @ b, "method": lambda a, b: a.mv(b)}[form]
        r = fn(s, x)
        (r * torch.tensor([1.0, -2.0, 3.0])).sum().backward()
        return r, v.grad, x.grad
    check(body)


@pytest.mark.parametrize("fn", ["abs", "torch.abs", "relu", "F.relu"])
def test_abs_relu(fn):
    def body(torch):
        v = torch.tensor([1.5, -2.0, 3.0, -1.0], requires_grad=True)
        s = torch.sparse_coo_tensor(torch.tensor([[0, 1, 0, 1], [1, 0, 1, 1]]), v, (2, 2))
        f = {"abs": lambda: s.abs(), "torch.abs": lambda: torch.abs(s),
             "relu": lambda: s.relu(), "F.relu": lambda: torch.nn.functional.relu(s)}[fn]
        r = f()
        (r.to_dense() * torch.tensor([[1.0, 2.0], [3.0, 4.0]])).sum().backward()
        return repr(r), v.grad
    check(body)


IN_PLACE = {
    "s += s": lambda s, u: s.__iadd__(s),
    "s.add_(u)": lambda s, u: s.add_(u),
    "s.add_(s, alpha=2)": lambda s, u: s.add_(s, alpha=2),
    "s *= 2": lambda s, u: s.__imul__(2),
    "s.mul_(2.5)": lambda s, u: s.mul_(2.5),
    "s -= u": lambda s, u: s.__isub__(u),
    "s /= 2": lambda s, u: s.__itruediv__(2),
    "s.add_(float64)": lambda s, u: s.add_(u.double()),
    "long.mul_(2.5)": lambda s, u: s.long().mul_(2.5),
    "s.add_(dense)": lambda s, u: s.add_(u.to_dense()),
    "coalesced add_": lambda s, u: s.coalesce().add_(u.coalesce()),
}


@pytest.mark.parametrize("form", IN_PLACE)
def test_in_place_arithmetic(form):
    def body(torch):
        s = torch.sparse_coo_tensor(torch.tensor([[0, 1, 1], [2, 0, 2]]),
                                    torch.tensor([3.0, 4.0, 5.0]), (2, 3))
        u = torch.sparse_coo_tensor(torch.tensor([[0, 0], [1, 1]]), torch.tensor([1.0, 2.0]),
                                    (2, 3))
        before = s._version
        r = IN_PLACE[form](s, u)
        return (r is s, r._version - before if r is s else None, r.is_coalesced(),
                r._indices(), r._values(), repr(r))
    check(body)


IN_PLACE_GRAD = {
    "leaf.add_(u)": lambda s, u, x: s.add_(u),
    "leaf.mul_(2)": lambda s, u, x: s.mul_(2),
    "leaf.zero_()": lambda s, u, x: s.zero_(),
    "leaf.sub_(u)": lambda s, u, x: s.sub_(u),
    "nonleaf.add_(u)": lambda s, u, x: x.add_(u),
    "nonleaf.sub_(u)": lambda s, u, x: x.sub_(u),
    "nonleaf.mul_(2)": lambda s, u, x: x.mul_(2),
    "nonleaf.div_(2)": lambda s, u, x: x.div_(2),
    "nonleaf.neg_()": lambda s, u, x: x.neg_(),
    "nonleaf.zero_()": lambda s, u, x: x.zero_(),
    "nonleaf += nonleaf": lambda s, u, x: x.__iadd__(x * 3),
    "plain.add_(grad)": lambda s, u, x: u.add_(x),
    "nonleaf.abs_()": lambda s, u, x: x.abs_(),
    "coalesced nonleaf.abs_()": lambda s, u, x: x.coalesce().abs_(),
    "coalesced nonleaf.relu_()": lambda s, u, x: (-x).coalesce().relu_(),
    "coalesced plain.relu_()": lambda s, u, x: u.coalesce().relu_() + x,
}


@pytest.mark.parametrize("form", IN_PLACE_GRAD)
def test_in_place_with_grad(form):
    """As torch's: a leaf requiring grad refuses; otherwise the in-place op is recorded (the
    tensor takes the node of its result) and gradients flow through it."""
    def body(torch):
        s = torch.sparse_coo_tensor(torch.tensor([[0, 1, 1], [2, 0, 2]]),
                                    torch.tensor([3.0, 4.0, 5.0]), (2, 3), requires_grad=True)
        u = torch.sparse_coo_tensor(torch.tensor([[0, 0], [1, 1]]), torch.tensor([1.0, 2.0]),
                                    (2, 3))
        x = s * 2
        r = IN_PLACE_GRAD[form](s, u, x)
        (r.to_dense() * torch.tensor([1.0, 2.0, 3.0])).sum().backward()
        return (r.grad_fn.name(), r.requires_grad, r.is_leaf, r._nnz(), r.to_dense(),
                s.grad.to_dense())
    check(body)


@pytest.mark.parametrize("form", ["mul_(2)", "zero_()", "add_(s)"])
def test_in_place_on_the_constructors_result_refuses_backward(form):
    """torch's constructor node saves the sparse tensor it made: written in place, its
    backward refuses (naming a torch.sparse.FloatTensor)."""
    def body(torch):
        v = torch.tensor([3.0, 4.0, 5.0], requires_grad=True)
        s = torch.sparse_coo_tensor(torch.tensor([[0, 1, 1], [2, 0, 2]]), v, (2, 3))
        eval(f"s.{form}", {"s": s, "torch": torch})
        s.to_dense().sum().backward()
        return v.grad, s.type()
    check(body)


def test_zero_without_grad():
    def body(torch):
        s = torch.sparse_coo_tensor(torch.tensor([[0, 1, 1], [2, 0, 2]]),
                                    torch.tensor([3.0, 4.0, 5.0]), (2, 3))
        before = s._version
        r = s.zero_()
        return r is s, s._version - before, s._nnz(), s.is_coalesced(), repr(s)
    check(body)


def test_clone_records_and_copies():
    def body(torch):
        s = torch.sparse_coo_tensor(torch.tensor([[0, 1, 1], [2, 0, 2]]),
                                    torch.tensor([3.0, 4.0, 5.0]), (2, 3), requires_grad=True)
        c = s.clone()
        same_values = c._values().data_ptr() == s._values().data_ptr()
        (c.to_dense() * torch.tensor([1.0, 2.0, 3.0])).sum().backward()
        return c.grad_fn.name(), c.is_coalesced(), same_values, repr(c), repr(s.grad)
    check(body)


_COPY_SQRT_ADD = {
    "copy_ dense into sparse": lambda t, s, d: s.copy_(d),
    "copy_ sparse into dense": lambda t, s, d: d.copy_(s),
    "copy_ sparse into dense of another shape": lambda t, s, d: t.zeros(4, 4).copy_(s),
    "copy_ sparse into sparse": lambda t, s, d: s.copy_(
        t.sparse_coo_tensor(t.tensor([[0], [3]]), t.tensor([9.0], dtype=t.float64), (3, 4))),
    "copy_ sparse into sparse, growing": lambda t, s, d: s.copy_(
        t.sparse_coo_tensor(t.tensor([[4], [3]]), t.tensor([9.0]), (5, 4))),
    "copy_ sparse into sparse, shrinking": lambda t, s, d: s.copy_(
        t.sparse_coo_tensor(t.tensor([[0], [0]]), t.tensor([9.0]), (1, 1))),
    "copy_ sparse into sparse, more dims": lambda t, s, d: s.copy_(
        t.sparse_coo_tensor(t.tensor([[0], [0], [1]]), t.tensor([9.0]), (3, 4, 2))),
    "sqrt": lambda t, s, d: s.sqrt(),
    "sqrt of integers": lambda t, s, d: s.to(t.int64).abs().sqrt(),
    "sqrt_ uncoalesced": lambda t, s, d: s.sqrt_(),
    "sqrt_": lambda t, s, d: s.coalesce().abs().sqrt_(),
    "sqrt_ of integers": lambda t, s, d: s.to(t.int64).coalesce().sqrt_(),
    "dense.add_(sparse)": lambda t, s, d: d.add_(s),
    "dense.add_(sparse, alpha)": lambda t, s, d: d.add_(s, alpha=-2),
    "dense.sub_(sparse)": lambda t, s, d: d.double().sub_(s),
    "dense - sparse": lambda t, s, d: d - s,
    "dense.add_(sparse) of another size": lambda t, s, d: t.zeros(4, 4).add_(s),
    "dense + sparse of another size": lambda t, s, d: t.zeros(4, 4) + s,
    "sparse / dense": lambda t, s, d: s / d,
    "dense / sparse": lambda t, s, d: d / s,
    "integer dense.add_(sparse)": lambda t, s, d: d.long().add_(s),
    "integer dense.sub_(sparse)": lambda t, s, d: d.long().sub_(s, alpha=2),
    "dense.mul_(sparse)": lambda t, s, d: d.mul_(s),
    "dense *= coalesced sparse": lambda t, s, d: d.__imul__(s.coalesce()),
    "float64 dense.mul_(sparse)": lambda t, s, d: d.double().mul_(s),
    "integer dense.mul_(sparse)": lambda t, s, d: d.long().mul_(s),
    "dense.mul_(sparse) of another size": lambda t, s, d: t.ones(4, 4).mul_(s),
    "dense.div_(sparse)": lambda t, s, d: d.div_(s),
}


@pytest.mark.parametrize("name", _COPY_SQRT_ADD)
def test_copy_sqrt_and_dense_in_place_add(name):
    """copy_ between layouts refused, sparse into sparse copied (resized as torch resizes);
    sqrt (coalesced, floating) and sqrt_ (of coalesced input only); dense.add_/sub_(sparse)
    dense, with torch's size refusal; a division by a tensor refused."""
    def body(torch):
        s, _ = _s(torch)
        d = torch.arange(12.0).reshape(3, 4)
        out = _COPY_SQRT_ADD[name](torch, s, d)
        return out.to_dense() if out.is_sparse else out, out.is_sparse, out._version
    check(body)


def test_gradients_through_dense_mul_():
    """dense.mul_(sparse): MulBackward0 on the product; the dense operand's gradient has
    torch's numbers (dense here, sparse in torch), the sparse operand's is dense as torch's."""
    def body(torch):
        s, v = _s(torch, requires_grad=True)
        x = torch.ones(3, 4, requires_grad=True)
        y = x * 2
        y.mul_(s)
        w = torch.arange(12.0).reshape(3, 4)
        (y * w).sum().backward()
        return y.grad_fn.name(), x.grad.to_dense(), v.grad, y
    check(body)


def _mask(torch, coalesced):
    """A sparse (3, 4) pattern; uncoalesced, position (1, 2) is stored twice."""
    return _s(torch, coalesced)[0] * 7


@pytest.mark.parametrize("coalesced", [False, True])
@pytest.mark.parametrize("dtype", ["float32", "float64", "int64"])
def test_sparse_mask_values(coalesced, dtype):
    """dense.sparse_mask(sparse): self's values of self's dtype at mask's entries, in mask's
    order (a repeated position repeated), coalesced when the mask is."""
    def body(torch):
        x = torch.arange(-5, 7).reshape(3, 4).to(getattr(torch, dtype))
        r = x.sparse_mask(_mask(torch, coalesced))
        return repr(r), r.is_coalesced(), r._indices(), r._values(), r.to_dense()
    check(body)


def test_sparse_mask_of_sparse_hybrid_and_empty():
    def body(torch):
        x = torch.arange(12.0).reshape(3, 4)
        sparse_self = x.to_sparse().sparse_mask(_mask(torch, False))
        h = torch.arange(24.0).reshape(3, 4, 2)
        hybrid = h.sparse_mask((h % 5 == 0).double().to_sparse(2))
        empty = x.sparse_mask(torch.sparse_coo_tensor(torch.zeros(2, 0, dtype=torch.int64),
                                                      torch.zeros(0), (3, 4)))
        return repr(sparse_self), repr(hybrid), repr(empty)
    check(body)


@pytest.mark.parametrize("coalesced", [False, True])
def test_sparse_mask_gradients(coalesced):
    """SparseMaskBackward0: self's gradient sums a repeated position's gradients; the mask
    gets none (its values are never read); a sparse self gets a sparse gradient."""
    def body(torch):
        mask = _mask(torch, coalesced).requires_grad_()
        x = torch.arange(12.0).reshape(3, 4).requires_grad_()
        r = x.sparse_mask(mask)
        w = torch.arange(12.0).reshape(3, 4) - 3
        (r.to_dense() * w).sum().backward()
        xs = torch.arange(12.0).reshape(3, 4).to_sparse().requires_grad_()
        rs = xs.sparse_mask(mask)
        torch.sparse.sum(rs).backward()
        g, = torch.autograd.grad(torch.sparse.sum(x.sparse_mask(mask.detach())) * 2, x,
                                 create_graph=True)  # (linear in x: no graph)
        return (r.grad_fn.name(), len(r.grad_fn.next_functions), x.grad, mask.grad,
                repr(xs.grad), g, g.requires_grad)
    check(body)


def _opening(error):
    """An error's type and first sentences: torch's "Could not run" message goes on to list
    its dispatch keys, which ember does not."""
    return error[0], error[1].split(" If you are a Facebook employee")[0]


@pytest.mark.parametrize("sparse_self", [False, True])
def test_sparse_mask_has_no_second_derivative(sparse_self):
    """torch's backward of sparse_mask projects with _sparse_mask_projection, which it gives
    no derivative: a second backward through it is refused, in ember too."""
    def body(torch):
        x = torch.arange(12.0).reshape(3, 4).requires_grad_()
        self = x.to_sparse() if sparse_self else x
        w = torch.ones(3, 4, requires_grad=True)
        r = self.sparse_mask(_mask(torch, False))
        g, = torch.autograd.grad((r.to_dense() * w).sum(), x, create_graph=True)
        return g, g.grad_fn.name(), error_of(lambda: g.sum().backward())
    check(body)


def test_sparse_mask_errors():
    def body(torch):
        x = torch.ones(3, 4)
        return [_opening(error_of(lambda: x.sparse_mask(torch.ones(3, 4)))),
                _opening(error_of(lambda: x.to_sparse().sparse_mask(x))),
                error_of(lambda: x.sparse_mask(torch.ones(4, 3).to_sparse()))]
    check(body)


def test_gradients_through_dense_add_and_sqrt():
    """dense.add_(sparse)/sub_ take torch's nodes and gradients; sqrt's backward is torch's
    refusal (its formula divides by a sparse tensor)."""
    def body(torch):
        s, v = _s(torch, requires_grad=True)
        x = torch.ones(3, 4, requires_grad=True)
        y = x * 2
        y.add_(s, alpha=3)
        y.sub_(s)
        (y * y).sum().backward()
        with pytest.raises(RuntimeError) as err:
            s.sqrt().to_dense().sum().backward()
        return y.grad_fn.name(), x.grad, v.grad, str(err.value)
    check(body)


def _softmax_input(torch, requires_grad=False):
    i = torch.tensor([[0, 0, 1, 2, 2, 0], [0, 2, 1, 0, 2, 0]])  # ((0, 0) twice: uncoalesced)
    v = torch.tensor([1.0, 2.0, 3.0, 4.0, -1.0, 0.5], requires_grad=requires_grad)
    return torch.sparse_coo_tensor(i, v, (3, 3)), v


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
@pytest.mark.parametrize("dim", [0, 1])
def test_sparse_softmax(name, dim):
    """torch.sparse.softmax/log_softmax: over each line's specified entries only (the others
    count as -inf), on the coalesced entries; SparseSoftmaxBackward0's gradient."""
    def body(torch):
        s, v = _softmax_input(torch, requires_grad=True)
        r = getattr(torch.sparse, name)(s, dim)
        (r.to_dense() * torch.arange(9.0).reshape(3, 3)).sum().backward()
        h = torch.sparse_coo_tensor(torch.tensor([[0, 2]]), torch.tensor([[1.0, 2.0], [3.0, -4.0]]),
                                    (3, 2), requires_grad=True)
        rh = getattr(torch.sparse, name)(h, dim)
        gh, = torch.autograd.grad((rh.to_dense() * torch.tensor([[1.0, 2], [3, 4], [5, 6]])).sum(),
                                  h)
        return repr(r), v.grad, repr(rh), repr(gh), repr(getattr(torch.sparse, name)(
            s.detach(), dim, dtype=torch.float64))
    check(body)


def test_sparse_softmax_3d_negative_dim_and_errors():
    def body(torch):
        e3 = torch.sparse_coo_tensor(torch.tensor([[0, 1, 1], [0, 0, 2], [1, 1, 0]]),
                                     torch.tensor([1.0, -2.0, 3.0]), (2, 3, 2))
        s, _ = _softmax_input(torch)
        return (repr(torch.sparse.softmax(e3, 1)), repr(torch.sparse.log_softmax(e3, 2)),
                repr(torch.sparse.softmax(s, -1)), repr(torch.sparse.softmax(s, -2)),
                _opening(error_of(lambda: torch.sparse.softmax(torch.ones(2, 2), 0))),
                error_of(lambda: torch.sparse.softmax(s.long(), 0)))
    check(body)


def test_sparse_softmax_gradient_of_a_negative_dim_is_the_mathematical_one():
    """torch's backward of dim=-1 is not the gradient of what its forward computes (its lines'
    gradients do not sum to zero); ember's is the gradient of dim=1, which torch gets right."""
    torch = torch_or_skip()

    def grad(lib, dim):
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="Sparse invariant checks")
            s, v = _softmax_input(lib, requires_grad=True)
            (lib.sparse.softmax(s, dim).to_dense() * lib.arange(9.0).reshape(3, 3)).sum().backward()
            return np.asarray(v.grad.tolist())
    np.testing.assert_allclose(grad(ember, -1), grad(torch, 1), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(grad(ember, -1), grad(ember, 1), rtol=0, atol=0)


@pytest.mark.parametrize("mshape, beta, alpha", [((2, 4), 1, 1), ((4,), 2, 0.5), ((2, 1), 0, 3),
                                                 ((2, 4), -1, 1)])
def test_sparse_addmm(mshape, beta, alpha):
    """torch.sparse.addmm: beta * mat + alpha * sparse @ dense, mat broadcast; one
    SparseAddmmBackward0 node with torch's three edges and gradients."""
    def body(torch):
        torch.manual_seed(0)
        i = torch.tensor([[0, 1, 1, 0], [2, 0, 2, 2]])  # (uncoalesced)
        v = torch.tensor([3.0, 4.0, 5.0, 1.0], requires_grad=True)
        x = torch.randn(3, 4, requires_grad=True)
        m = torch.randn(*mshape, requires_grad=True)
        r = torch.sparse.addmm(m, torch.sparse_coo_tensor(i, v, (2, 3)), x, beta=beta,
                               alpha=alpha)
        (r * torch.arange(8.0).reshape(2, 4)).sum().backward()
        return r, [None if f is None else f.name() for f, _ in r.grad_fn.next_functions], \
            v.grad, x.grad, m.grad
    check(body)


def test_sparse_addmm_beta_zero_dense_operand_and_errors():
    def body(torch):
        a = torch.sparse_coo_tensor(torch.tensor([[0, 1], [2, 0]]), torch.tensor([3.0, 4.0]),
                                    (2, 3))
        x = torch.ones(3, 4)
        return (torch.sparse.addmm(torch.full((2, 4), float("nan")), a, x, beta=0),
                torch.sparse.addmm(torch.ones(2, 4), a.to_dense(), x, alpha=2),
                error_of(lambda: torch.sparse.addmm(torch.ones(3, 4), a, x)),
                error_of(lambda: torch.sparse.addmm(torch.ones(2, 4), a, torch.ones(4, 4))))
    check(body)


def _repeats(torch, n, size, seed, width=None):
    """A sparse COO tensor of ``n`` entries at random positions below ``size`` (many repeat),
    values of mixed magnitudes (the order of their additions shows in the last bits)."""
    rs = np.random.RandomState(seed)
    shape = (n,) if width is None else (n, width)
    values = (rs.randn(*shape) * 10.0 ** rs.uniform(-3, 3, shape)).astype(np.float32)
    return torch.sparse_coo_tensor(torch.tensor(rs.randint(0, size, (1, n))),
                                   torch.tensor(values), (size,) + shape[1:])


@pytest.mark.parametrize("n, size", [(5, 2), (40, 7), (300, 20), (3000, 150), (40000, 900)])
def test_coalesce_adds_repeats_in_torchs_order(n, size):
    """torch sorts the positions with std::sort (a radix sort from 32768 entries on) and adds
    a repeated position's values one by one in that order."""
    def body(torch):
        c = _repeats(torch, n, size, seed=n, width=2).coalesce()
        return c.indices(), c.values()
    check(body, rtol=0, atol=0)


@pytest.mark.parametrize("form", ["sum", "sum coalesced", "sparse.sum", "sparse.sum coalesced",
                                  "sum of a dense dim"])
def test_sum_of_all_entries_in_torchs_order(form):
    """``s.sum()`` adds the values as stored with the dense kernel's order; torch.sparse.sum
    adds the coalesced values (its graph: SumBackward0, ValuesBackward0, CoalesceBackward0)."""
    def body(torch):
        out = []
        for seed in range(30):
            s = _repeats(torch, 3 + seed * 2, 9, seed, width=3 if "dense" in form else None)
            s = s.coalesce() if "coalesced" in form else s
            out.append((torch.sparse.sum(s) if "sparse.sum" in form else s.sum()).item())
        return out
    check(body, rtol=0, atol=0)


def _assigned_grads(torch):
    """``p.grad = g`` for each pairing of layouts, and the checks torch runs in order (dtype,
    layout, size): a dense gradient for a sparse tensor has data of a different type, a
    sparse one goes to a tensor of either layout."""
    def sparse(shape=(3, 4), dtype=torch.float32):
        i = torch.tensor([[1, 0, 1, 2], [2, 2, 0, 1]])
        return torch.sparse_coo_tensor(i, torch.tensor([3.0, 4.0, 5.0, -1.5], dtype=dtype),
                                       shape)

    def assign(p, g):
        p.grad = g
        return str(p.grad.layout), p.grad.to_dense()

    def untyped(p):  # (grad_dtype None: any dtype, the layout still checked)
        p.grad_dtype = None
        return p

    cases = [
        lambda: assign(sparse().requires_grad_(), torch.ones(3, 4)),
        lambda: assign(sparse(), torch.ones(3, 4)),
        lambda: assign(sparse().requires_grad_(), torch.ones(4, 3).t()),
        lambda: assign(sparse().requires_grad_(), torch.ones(5)),
        lambda: assign(sparse().requires_grad_(), torch.ones(3, 4, dtype=torch.float64)),
        lambda: assign(untyped(sparse().requires_grad_()),
                       torch.ones(3, 4, dtype=torch.float64)),
        lambda: assign(sparse().requires_grad_(), sparse()),
        lambda: assign(sparse().requires_grad_(), sparse((3, 5))),
        lambda: assign(sparse().requires_grad_(), sparse(dtype=torch.float64)),
        lambda: assign(torch.ones(3, 4, requires_grad=True), sparse()),
        lambda: assign(torch.ones(3, 4), sparse().coalesce()),
        lambda: assign(torch.ones(3, 4, requires_grad=True), sparse((3, 5))),
        lambda: assign(untyped(torch.ones(3, 4, requires_grad=True)),
                       sparse(dtype=torch.float64)),
    ]
    out = []
    for case in cases:
        try:
            out.append(case())
        except Exception as e:  # noqa: BLE001 - the type and text are what is compared
            out.append((type(e).__name__, str(e)))
    return out


def test_grad_assigned_across_layouts():
    check(_assigned_grads)
