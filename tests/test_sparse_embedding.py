"""Sparse gradients of embeddings against torch: ``F.embedding``/``nn.Embedding`` with
``sparse=True`` give a sparse COO ``.grad``; how the engine sums it with other gradients; the
optimizers that step with it (SGD, Adagrad, SparseAdam, LBFGS) and those that refuse it; the
gradient utilities that refuse it (clip_grad_norm_, clip_grad_value_)."""
from __future__ import annotations

import warnings

import pytest

import ember
from tests.oracle import same, torch_or_skip

pytest.importorskip("scipy")


def _quiet(body):
    """``body`` with the sparse-invariants warning (torch gives it once per process) off."""
    def run(torch):
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="Sparse invariant checks")
            warnings.filterwarnings("ignore", message="Using backward\\(\\) with create_graph")
            return body(torch)
    return run


def check(body, **kw):
    return same(_quiet(body), check_warnings=False, **kw)


def _weight(torch, dtype=None):
    return torch.arange(15.0, dtype=dtype).reshape(5, 3).requires_grad_()


def _grad_of(torch, indices, **kw):
    """The gradient ``F.embedding(indices, w, sparse=True, **kw)`` gives a (5, 3) weight."""
    w = _weight(torch, kw.pop("dtype", None))
    out = torch.nn.functional.embedding(indices, w, sparse=True, **kw)
    (out * torch.arange(1.0, 1.0 + out.shape[-1], dtype=out.dtype)).sum().backward()
    g = w.grad
    return repr(g), g.is_coalesced(), g._version, g.to_dense(), type(out.grad_fn).__name__


@pytest.mark.parametrize("case", ["matrix", "repeats", "padding", "negative_padding", "all_padding",
                                  "empty", "int32", "float64", "max_norm"])
def test_embedding_gradient_is_sparse(case):
    def body(torch):
        t = torch.tensor
        return {
            "matrix": lambda: _grad_of(torch, t([[3, 1], [1, 0]])),
            "repeats": lambda: _grad_of(torch, t([4, 4, 4])),
            "padding": lambda: _grad_of(torch, t([0, 2, 2, 1]), padding_idx=2),
            "negative_padding": lambda: _grad_of(torch, t([0, 4, 1]), padding_idx=-1),
            "all_padding": lambda: _grad_of(torch, t([2, 2]), padding_idx=2),
            "empty": lambda: _grad_of(torch, t([], dtype=torch.int64)),
            "int32": lambda: _grad_of(torch, t([0, 4], dtype=torch.int32)),
            "float64": lambda: _grad_of(torch, t([0, 4]), dtype=torch.float64),
            "max_norm": lambda: _grad_of(torch, t([0, 4]), max_norm=1.0),
        }[case]()
    check(body)


def test_module_and_torch_embedding():
    def body(torch):
        torch.manual_seed(0)
        m = torch.nn.Embedding(4, 2, sparse=True)
        m(torch.tensor([1, 1, 3])).sum().backward()
        w = _weight(torch)
        (g,) = torch.autograd.grad(torch.embedding(w, torch.tensor([2, 0]), -1, False, True)
                                   .sum(), w)
        return repr(m.weight.grad), repr(g)
    check(body)


def test_scale_grad_by_freq_is_refused():
    check(lambda torch: _grad_of(torch, torch.tensor([0, 2, 2]), scale_grad_by_freq=True))


@pytest.mark.parametrize("order", ["sparse_sparse", "dense_sparse", "sparse_dense"])
def test_accumulated_across_backward_calls(order):
    def body(torch):
        w = _weight(torch)

        def sparse(indices):
            return torch.nn.functional.embedding(torch.tensor(indices), w, sparse=True)
        first, second = {"sparse_sparse": (lambda: sparse([3, 1, 1]), lambda: sparse([4, 1])),
                         "dense_sparse": (lambda: w * 2, lambda: sparse([4, 4])),
                         "sparse_dense": (lambda: sparse([4, 4]), lambda: w * 2)}[order]
        first().sum().backward()
        before = w.grad
        (second() * 3).sum().backward()
        return repr(w.grad), w.grad._version, w.grad is before
    check(body)


def test_sparse_and_dense_gradients_of_one_pass():
    def body(torch):
        w = _weight(torch)
        emb = torch.nn.functional.embedding(torch.tensor([4, 0]), w, sparse=True)
        (emb.sum() + (w * 2).sum()).backward()
        return repr(w.grad)
    check(body)


def test_a_sparse_leaf_accumulates_across_backward_calls():
    def body(torch):
        s = torch.sparse_coo_tensor(torch.tensor([[0, 1]]), torch.tensor([1.0, 2.0]), (3,))
        s.requires_grad_()
        (s * 2).to_dense().sum().backward()
        (s * 3).to_dense().sum().backward()
        return repr(s.grad), s.grad._version
    check(body)


def test_create_graph_keeps_the_values_graph():
    def body(torch):
        w = _weight(torch)
        out = torch.nn.functional.embedding(torch.tensor([1, 3, 1]), w, padding_idx=3,
                                            sparse=True)
        (g,) = torch.autograd.grad(out.pow(2).sum(), w, create_graph=True)
        (gg,) = torch.autograd.grad(g.to_dense().pow(2).sum(), w)
        w2 = _weight(torch)
        torch.nn.functional.embedding(torch.tensor([2]), w2, sparse=True).pow(2).sum().backward(
            create_graph=True)
        return repr(g), repr(gg), repr(w2.grad), w2.grad.grad_fn.name()
    check(body)


# -- optimizers ---------------------------------------------------------------------------------
def _train(torch, make_opt, steps=3, clip=None):
    """Three steps of an embedding table (sparse gradients) under ``make_opt``."""
    torch.manual_seed(0)
    m = torch.nn.Embedding(6, 3, sparse=True)
    with torch.no_grad():
        m.weight.copy_(torch.arange(18.0).reshape(6, 3) / 7)
    opt = make_opt(m.parameters())
    for i in range(steps):
        opt.zero_grad()
        out = m(torch.tensor([[1, 4, 1], [i % 6, 2, 2]]))
        (out ** 2 * torch.arange(3.0)).sum().backward()
        opt.step()
    buf = opt.state[m.weight].get("momentum_buffer")
    return m.weight, None if buf is None else (buf.to_dense(), buf._nnz())


_STEPPING = {
    "sgd": lambda o: lambda p: o.SGD(p, lr=0.1),
    "sgd_momentum": lambda o: lambda p: o.SGD(p, lr=0.1, momentum=0.9, dampening=0.1),
    "sgd_nesterov": lambda o: lambda p: o.SGD(p, lr=0.1, momentum=0.9, nesterov=True),
    "sgd_maximize": lambda o: lambda p: o.SGD(p, lr=0.1, maximize=True, foreach=True),
    "sgd_weight_decay": lambda o: lambda p: o.SGD(p, lr=0.1, weight_decay=0.1),
    "adagrad": lambda o: lambda p: o.Adagrad(p, lr=0.1),
    "adagrad_lr_decay": lambda o: lambda p: o.Adagrad(p, lr=0.1, lr_decay=0.1, eps=1e-3),
    "adagrad_maximize": lambda o: lambda p: o.Adagrad(p, lr=0.1, maximize=True,
                                                      initial_accumulator_value=0.5),
    "adagrad_weight_decay": lambda o: lambda p: o.Adagrad(p, lr=0.1, weight_decay=0.1),
    "sparse_adam": lambda o: lambda p: o.SparseAdam(list(p), lr=0.1),
}


@pytest.mark.parametrize("name", sorted(_STEPPING))
def test_optimizers_step_with_sparse_gradients(name):
    check(lambda torch: _train(torch, _STEPPING[name](torch.optim)), atol=1e-6, rtol=1e-5)


@pytest.mark.parametrize("name", ["Adam", "AdamW", "Adamax", "RMSprop", "Adadelta", "ASGD",
                                  "NAdam", "RAdam", "Rprop", "Adafactor", "Muon"])
def test_optimizers_without_a_sparse_update_refuse(name):
    def body(torch):
        w = torch.nn.Parameter(torch.ones(4, 2))
        opt = getattr(torch.optim, name)([w])
        w.grad = torch.sparse_coo_tensor(torch.tensor([[0, 2]]), torch.ones(2, 2), (4, 2))
        opt.step()
    check(body)


def test_lbfgs_reads_a_sparse_gradient_as_dense():
    def body(torch):
        w = torch.nn.Parameter(torch.ones(5, 3))

        def closure():
            opt.zero_grad()
            loss = torch.nn.functional.embedding(torch.tensor([0, 2, 2]), w, sparse=True)
            loss = loss.pow(2).sum()
            loss.backward()
            return loss
        opt = torch.optim.LBFGS([w], lr=0.1, max_iter=3)
        return opt.step(closure), w
    check(body, atol=1e-6)


@pytest.mark.parametrize("set_to_none", [True, False])
def test_zero_grad(set_to_none):
    def body(torch):
        m = torch.nn.Embedding(6, 3, sparse=True)
        opt = torch.optim.SGD(m.parameters(), lr=0.1)
        m(torch.tensor([1, 1, 3])).sum().backward()
        opt.zero_grad(set_to_none=set_to_none)
        g = m.weight.grad
        after = None if g is None else (repr(g), g._version)
        m(torch.tensor([2])).sum().backward()
        return after, repr(m.weight.grad)
    check(body)


@pytest.mark.parametrize("call", ["clip_grad_norm_", "clip_grad_norm_inf", "get_total_norm",
                                  "clip_grad_value_", "clip_grad_value_loop"])
def test_gradient_utilities_refuse_sparse_gradients(call):
    torch = torch_or_skip()

    def first_sentence(lib):
        m = lib.nn.Embedding(6, 3, sparse=True)
        m(lib.tensor([1, 1, 3])).sum().backward()
        u = lib.nn.utils
        fn = {"clip_grad_norm_": lambda: u.clip_grad_norm_(m.parameters(), 0.5),
              "clip_grad_norm_inf": lambda: u.clip_grad_norm_(m.parameters(), 0.5, "inf"),
              "get_total_norm": lambda: u.get_total_norm([m.weight.grad]),
              "clip_grad_value_": lambda: u.clip_grad_value_(m.parameters(), 0.5),
              "clip_grad_value_loop": lambda: u.clip_grad_value_(m.parameters(), 0.5,
                                                                 foreach=False)}[call]
        try:
            fn()
        except Exception as e:  # noqa: BLE001 - its type and text are compared
            return type(e).__name__, str(e).split(". ")[0]
        return None
    assert first_sentence(ember) == first_sentence(torch) is not None


@pytest.mark.parametrize("case", ["weight_1d", "weight_3d", "float_indices_1d_weight",
                                  "float_indices", "padding_first", "sparse_1d"])
def test_embedding_argument_errors(case):
    def body(torch):
        f = torch.nn.functional.embedding
        return {"weight_1d": lambda: f(torch.tensor([0, 1]), torch.ones(5)),
                "weight_3d": lambda: f(torch.tensor([0, 1]), torch.ones(5, 2, 2)),
                "float_indices_1d_weight": lambda: f(torch.tensor([0.0]), torch.ones(5)),
                "float_indices": lambda: f(torch.tensor([0.0]), torch.ones(5, 2)),
                "padding_first": lambda: f(torch.tensor([0.0]), torch.ones(5), padding_idx=9),
                "sparse_1d": lambda: f(torch.tensor([0]), torch.ones(5, requires_grad=True),
                                       sparse=True)}[case]()
    check(body)


_WEIGHTS = {
    "times a number": lambda t, b: b * 2.5,
    "a number times": lambda t, b: 2.5 * b,
    "times a tensor": lambda t, b: b * t.full((4, 3), 2.0),
    "times a broadcast row": lambda t, b: b * t.tensor([1.0, 2.0, 3.0]),
    "divided by a number": lambda t, b: b / 4,
    "negated": lambda t, b: -b,
    "twice scaled": lambda t, b: (b * 2) * 3,
}


@pytest.mark.parametrize("weight", sorted(_WEIGHTS))
@pytest.mark.parametrize("how", ["backward", "grad"])
def test_sparse_gradient_into_a_computed_weight(weight, how):
    """An embedding whose weight is an op's result: that op's node receives the sparse
    gradient, and its formula keeps it sparse (mul by a number or a dense tensor, division by
    a number, neg), as torch's does; the leaf's .grad is sparse."""
    def body(t):
        b = t.tensor([[1.0, 2, 3], [4, 5, 6], [7, 8, 9], [1, 1, 1]], requires_grad=True)
        out = t.nn.functional.embedding(t.tensor([0, 2, 0]), _WEIGHTS[weight](t, b),
                                        sparse=True)
        loss = (out * t.tensor([1.0, 2.0, 3.0])).sum()
        if how == "grad":
            g, = t.autograd.grad(loss, b)
        else:
            loss.backward()
            g = b.grad
        return g.layout == t.sparse_coo, g.to_dense()
    check(body, rtol=0, atol=0)


def test_sparse_gradient_divided_by_a_tensor_is_refused():
    def body(t):
        b = t.ones(4, 3, requires_grad=True)
        out = t.nn.functional.embedding(t.tensor([0, 2]), b / t.full((4, 3), 2.0), sparse=True)
        out.sum().backward()
    check(body)
