"""Exception classes and messages where torch has them: sizes, dtypes, overflow, indices,
loading, dtypes a kernel does not take (integers, bool, complex), foreign operands."""
from __future__ import annotations

import json
import zipfile

import numpy as np
import pytest

import ember

from oracle import norm, same, torch_or_skip


def _outcome(lib, source):
    env = {"torch": lib, "F": lib.nn.functional}
    try:
        value = eval(source, env)  # noqa: S307 - the source is the test case
    except Exception as e:  # noqa: BLE001 - the exception is what is compared
        return type(e).__name__, norm(str(e))
    return "ok", norm(str(value.dtype)) if hasattr(value, "dtype") else repr(value)


def _same(source):
    torch = torch_or_skip()
    assert _outcome(ember, source) == _outcome(torch, source)


SIZES = ["torch.ones(-1)", "torch.zeros(2, -3)", "torch.empty((-2, 3))", "torch.rand(-1)",
         "torch.full((-1,), 2.0)", "torch.eye(-1)", "torch.eye(2, -1)",
         "torch.linspace(0, 1, -1)", "torch.logspace(0, 1, -1)", "torch.nn.Linear(-1, 3)",
         "torch.nn.Linear(3, -1)", "torch.randint(5, 2, (3,))", "torch.randint(-1, (3,))",
         "torch.ones(2 ** 62, 4)", "torch.zeros(2 ** 40, 2 ** 40)", "torch.ones(2 ** 40)"]


@pytest.mark.parametrize("source", SIZES)
def test_sizes(source):
    _same(source)


DATA = ["torch.ones(2, dtype='float32')", "torch.zeros(2, dtype='float32')",
        "torch.tensor([1.0], dtype='float32')", "torch.full((2,), 1.0, dtype='float32')",
        "torch.tensor([1, 2 ** 64])", "torch.tensor(2 ** 63)", "torch.tensor([[-2 ** 63 - 1]])",
        "torch.tensor([1.0, 2 ** 64])", "torch.tensor([2 ** 63 - 1])"]


@pytest.mark.parametrize("source", DATA)
def test_dtypes_and_overflow(source):
    _same(source)


INDICES = ["torch.zeros(3).index_add_(0, torch.tensor([5]), torch.ones(1))",
           "torch.zeros(3).index_add(0, torch.tensor([-1]), torch.ones(1))",
           "torch.zeros(3, 2).index_add_(0, torch.tensor([3]), torch.ones(1, 2))",
           "torch.zeros(3).index_copy_(0, torch.tensor([5]), torch.ones(1))"]


@pytest.mark.parametrize("source", INDICES)
def test_index_out_of_range(source):
    _same(source)


OPERANDS = ["torch.ones(2) + None", "None + torch.ones(2)", "torch.ones(2) == None",
            "torch.ones(2) < None", "torch.ones(2) @ None", "torch.ones(2) - 'a'",
            "torch.ones(2).sum(dim='a')", "torch.ones(2).sum('a')", "torch.sum(torch.ones(2), 'a')",
            "torch.mean(torch.ones(2), dim='a')", "torch.ones(2).mean(dim='a', keepdim=True)"]


@pytest.mark.parametrize("source", OPERANDS)
def test_foreign_operands_and_dims(source):
    _same(source)


_ACTIVATIONS = ["elu", "selu", "celu", "softplus", "gelu", "silu", "mish", "logsigmoid",
                "hardswish", "hardsigmoid", "leaky_relu", "softshrink", "hardshrink", "relu6",
                "hardtanh", "glu", "rrelu"]


@pytest.mark.parametrize("dtype", ["int64", "bool", "uint8", "complex64"])
@pytest.mark.parametrize("name", _ACTIVATIONS)
def test_float_only_activations(name, dtype):
    _same(f"F.{name}(torch.ones(2, dtype=torch.{dtype}))")


_COMPLEX = ["torch.floor(z)", "torch.ceil(z)", "torch.trunc(z)", "torch.round(z)",
            "torch.sign(z)", "torch.relu(z)", "torch.clamp(z, 0, 1)", "torch.argmax(z)",
            "torch.softmax(z, 0)", "torch.log_softmax(z, 0)", "torch.sigmoid(z)",
            "torch.minimum(z, z)", "torch.maximum(z, z)", "torch.remainder(z, z)",
            "torch.fmod(z, z)", "torch.atan2(z, z)", "torch.copysign(z, z)", "torch.xlogy(z, z)",
            "torch.amax(z)", "torch.max(z)", "torch.sort(z)", "torch.topk(z, 1)", "z < z",
            "torch.erf(z)", "torch.median(z)", "z // z", "torch.softmax(torch.ones(2, 2, "
            "dtype=torch.int64), 0)"]


@pytest.mark.parametrize("source", _COMPLEX)
def test_ops_torch_does_not_define_for_complex(source):
    _same(source.replace("z", "torch.tensor([1 + 2j, -0.5 + 0.25j])"))


@pytest.mark.parametrize("source", ["b @ b", "torch.mm(b, b)", "b[0] @ b[0]", "b @ b[0]",
                                    "torch.bmm(b[None], b[None])"])
def test_bool_matmul(source):
    _same(source.replace("b", "torch.ones(2, 2, dtype=torch.bool)"))


def test_load_errors(tmp_path):
    torch = torch_or_skip()
    path = str(tmp_path / "t.pt")
    missing = str(tmp_path / "missing.pt")
    for lib in (torch, ember):
        lib.save({"a": lib.ones(2)}, path + lib.__name__)
    outcomes = []
    for lib in (torch, ember):
        got = []
        for call in (lambda: lib.load(missing),
                     lambda: lib.load(path + lib.__name__, map_location="cuda")):
            try:
                call()
                got.append(None)
            except Exception as e:  # noqa: BLE001 - the exception is what is compared
                got.append((type(e).__name__, norm(str(e))))
        outcomes.append(got)
    assert outcomes[0] == outcomes[1]


def test_malformed_archive_is_a_clear_error(tmp_path):
    path = tmp_path / "bad.pt"
    manifest = {"format": "ember.save/1", "object": {"t": "tensor", "key": "missing"}}
    with zipfile.ZipFile(path, "w") as z:
        with z.open("__ember_manifest__.npy", "w") as f:
            np.save(f, np.frombuffer(json.dumps(manifest).encode(), dtype=np.uint8))
    with pytest.raises(RuntimeError, match="is not an archive written by ember.save"):
        ember.load(str(path))
    path.write_bytes(b"PK\x03\x04 garbage")  # (a damaged zip: torch's words)
    with pytest.raises(RuntimeError, match="failed reading zip archive"):
        ember.load(str(path))


_SORT_CALLS = [
    "t.sort(d, 1, stable=True)", "t.sort(d, 1, True, stable=True)", "t.sort(d, 1, False, True)",
    "d.sort(1, stable=True)", "d.sort(1, stable=False)", "d.sort(1, False, True)",
    "d.sort(1, True, stable=True)", "t.sort(d, 1, stable=None)", "t.sort(d, stable=1)",
    "t.sort(d, 1, descending=True, stable=True)", "t.sort(d, 1, True, dim=1)",
    "t.sort(d, 1, True, True, True)", "t.argsort(d, 1, stable=True)",
    "t.argsort(d, 1, stable=False)", "t.argsort(d, 1, True, True)",
    "t.argsort(d, 1, True, stable=True)", "t.argsort(d, stable=None)", "t.argsort(d, 1, dim=1)",
    "d.argsort(1, stable=True)", "d.argsort(1, True, stable=True)", "d.argsort(1, True, True)",
    "t.msort(d, stable=True)", "t.msort(d, 0)", "d.msort(stable=True)", "d.msort(0)",
    # the calls torch takes
    "t.sort(d, stable=None)", "t.sort(d, dim=1, stable=False)", "t.sort(d, 1, True)",
    "t.sort(d, descending=True, stable=True, dim=0)", "d.sort(stable=True, descending=True)",
    "t.argsort(d, stable=True)", "t.argsort(d, dim=1, stable=False)", "d.argsort(1, True)",
    "d.argsort(stable=True, dim=0)", "t.msort(d)", "d.msort()"]


@pytest.mark.parametrize("call", _SORT_CALLS)
def test_sort_overloads_take_stable_with_keywords_only(call):
    # torch's sort/argsort overloads: (input, dim=-1, descending=False) and
    # (input, *, stable, dim=-1, descending=False); ember took a positional dim with stable
    def body(t):
        d = t.tensor([[3.0, 1.0, 2.0], [1.0, 1.0, 0.0]])
        return eval(call)  # noqa: S307 - the call is the test case
    outcome = same(body)
    assert outcome.error is None or outcome.error[0] == "TypeError"


# -- torch's argument parser: missing, mistyped and unknown arguments --------------------------
_MOST_USED = ["add", "mul", "sub", "div", "matmul", "mm", "bmm", "cat", "stack", "sum", "mean",
              "exp", "log", "sqrt", "relu", "sigmoid", "tanh", "softmax", "log_softmax", "max",
              "min", "argmax", "zeros_like", "ones_like", "where", "clamp", "abs", "pow",
              "transpose", "reshape", "squeeze", "unsqueeze", "flatten", "gather", "cumsum",
              "sort", "topk", "dot", "maximum", "prod"]


@pytest.mark.parametrize("name", _MOST_USED)
@pytest.mark.parametrize("arguments", ["", "'a'", "T, foo=1", "None, T", "T, T, T, T, T, T"])
def test_parser_errors_of_the_most_used_functions(name, arguments):
    _same(f"torch.{name}({arguments})".replace("T", "torch.ones(2, 3)"))


PRODUCTS = ["torch.bmm(B)", "torch.mm(M)", "torch.matmul(M)", "torch.bmm()", "torch.mm()",
            "torch.bmm(B, B, foo=1)", "torch.mm(M, M, foo=1)", "torch.matmul(M, M, foo=1)",
            "torch.bmm(B, 1)", "torch.mm(M, None)", "torch.mm(M, other=M)",
            "torch.matmul(M, mat2=M)", "torch.bmm(B, B, out=1)", "torch.mm(M, M, torch.int64, 1)",
            "torch.bmm(B, B, out_dtype=1)", "B.bmm()", "M.mm()", "M.matmul()", "B.bmm(1)",
            "M.mm(None)", "M.matmul('a')", "M.mm(M, M)", "M.matmul(M, foo=M)"]


@pytest.mark.parametrize("source", PRODUCTS)
def test_matrix_product_parser_errors(source):
    _same(source.replace("B", "torch.ones(2, 3, 3)").replace("M", "torch.ones(3, 3)"))


SCANS_AND_COPIES = [
    "torch.cumsum(X)", "X.cumsum()", "torch.cumsum()", "torch.cumsum(X, 'a')", "X.cumsum(None)",
    "torch.cumsum(X, 1.5)", "X.cumsum(0, dtype=1)", "torch.cumsum(X, dim=0, foo=1)",
    "torch.cumprod(X)", "X.cumprod()", "torch.cummax(X)", "X.cummin()", "torch.logcumsumexp(X)",
    "X.logcumsumexp()", "torch.cumsum(X, axis=0)",
    "X.copy_(None)", "X.copy_()", "X.copy_([1.0, 2.0, 3.0])", "X.copy_('a')", "X.copy_(())",
    "X.copy_(X, 1)", "X.copy_(X, non_blocking=1)", "X.copy_(X, X)", "X.copy_(X, False, 1)",
    "X.copy_(X, foo=1)", "X.copy_(src=X)", "X.copy_(other=X)", "X.copy_(2.5)", "X.copy_(True)",
    "X.copy_(X, non_blocking=True)"]


@pytest.mark.parametrize("source", SCANS_AND_COPIES)
def test_scan_and_copy_parser_errors(source):
    _same(source.replace("X", "torch.ones(2, 3)"))


# -- F.ctc_loss: each invalid combination, torch's exception and text ---------------------------
_CTC = {"LP": "torch.arange(40.).reshape(5, 2, 4).sin().log_softmax(2)",
        "T2": "torch.tensor([[1, 2], [1, 1]])", "IL": "torch.tensor([5, 5])",
        "TL": "torch.tensor([2, 1])"}
CTC_LOSS = [
    # lengths longer than the input or the targets, of the wrong size, negative
    "F.ctc_loss(LP, T2, torch.tensor([6, 5]), TL)", "F.ctc_loss(LP, T2, torch.tensor([5, 5, 5]), TL)",
    "F.ctc_loss(LP, T2, IL, torch.tensor([3, 1]))", "F.ctc_loss(LP, T2, IL, torch.tensor([2, 1, 1]))",
    "F.ctc_loss(LP, T2, torch.tensor([-1, 5]), TL)", "F.ctc_loss(LP, T2, IL, torch.tensor([-1, 1]))",
    "F.ctc_loss(LP, T2, (6, 5), (2, 1))", "F.ctc_loss(LP, T2, (5,), (2, 1))",
    "F.ctc_loss(LP, T2, (-1, 5), (2, 1))", "F.ctc_loss(LP, T2, (5, 5), (-2, 1))",
    "F.ctc_loss(LP, T2, IL.float(), TL)", "F.ctc_loss(LP, T2, IL[None], TL)",
    # targets: 1-D (concatenated) and 2-D (padded) forms, wrong dimensions
    "F.ctc_loss(LP, torch.tensor([1, 2, 1]), IL, torch.tensor([2, 2]))",
    "F.ctc_loss(LP, T2[None], IL, TL)", "F.ctc_loss(LP, torch.tensor(1), IL, TL)",
    "F.ctc_loss(LP[:, 0], T2, torch.tensor(5), torch.tensor(2))", "F.ctc_loss(LP[0], T2, IL, TL)",
    "F.ctc_loss(LP[None], T2, IL, TL)", "F.ctc_loss(torch.zeros(0, 2, 4), T2, IL * 0, TL)",
    # the blank index, the reduction, the argument types torch.ctc_loss's parser refuses
    "F.ctc_loss(LP, T2, IL, TL, blank=4)", "F.ctc_loss(LP, T2, IL, TL, blank=-1)",
    "F.ctc_loss(LP, T2, IL, TL, blank=1.5)", "F.ctc_loss(LP, T2, IL, TL, blank=True)",
    "F.ctc_loss(LP, T2, IL, TL, zero_infinity=1)", "F.ctc_loss(LP, T2, IL, TL, reduction='bad')",
    "F.ctc_loss(LP, T2, 5, 2)", "F.ctc_loss(LP[:, 0], T2[0], 5, 2)",
    "F.ctc_loss(LP, T2, (5.0, 5), (2, 1))", "F.ctc_loss(LP, T2, [5, 5], 2)",
    "F.ctc_loss(LP.half(), T2, IL, TL)", "F.ctc_loss(LP.int(), T2, IL, TL)",
    "torch.ctc_loss(LP, T2, IL, TL, 0, 'mean')", "torch.ctc_loss(LP, T2, 5, 2)",
    "torch.ctc_loss(LP, T2)", "torch.ctc_loss(LP, T2, IL, TL, blank=0.5)"]


@pytest.mark.parametrize("source", CTC_LOSS)
def test_ctc_loss_refusals(source):
    for name, value in _CTC.items():
        source = source.replace(name, value)
    _same(source)


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("zero_infinity", [False, True])
@pytest.mark.parametrize("targets,lengths", [
    ("[[1, 1], [1, 1]]", "[2, 2]"),  # (input too short for a repeated label: infinite loss)
    ("[[1, 2], [1, 1]]", "[0, 1]"),  # (an empty target)
    ("[1, 2, 1]", "[2, 1]")])  # (the 1-D form)
def test_ctc_loss_zero_infinity(reduction, zero_infinity, targets, lengths):
    def body(torch):
        lp = torch.arange(18.0, dtype=torch.float64).reshape(3, 2, 3).sin().log_softmax(2)
        lp.requires_grad_()
        loss = torch.nn.functional.ctc_loss(
            lp, torch.tensor(targets), torch.tensor([2, 3]), torch.tensor(lengths),
            reduction=reduction, zero_infinity=zero_infinity)
        (grad,) = torch.autograd.grad(loss.sum(), lp)
        return loss, grad
    targets, lengths = eval(targets), eval(lengths)  # noqa: S307 - the parameters above
    same(body)


# -- torch.ops.aten's losses: their schemas' errors, aten's int reduction -----------------------
_ATEN = {"A": "torch.tensor([[0.2, 0.3], [0.4, 0.6]])", "K": "torch.tensor([0, 1])",
         "aten.": "torch.ops.aten."}
ATEN_LOSSES = [
    "aten.mse_loss(A, A, 'mean')", "aten.mse_loss(A)", "aten.mse_loss()", "aten.mse_loss(A, 1)",
    "aten.mse_loss(A, A, None)", "aten.mse_loss(A, A, 1.0)", "aten.mse_loss(A, A, 1, 2)",
    "aten.mse_loss(A, A, foo=1)", "aten.mse_loss(A, A, 1, out=3)",
    "aten.mse_loss(A, A, reduction='sum')", "aten.mse_loss.default(A, A, 'mean')",
    "aten.mse_loss.default(A)", "aten.mse_loss(A, A * 2, 1)", "aten.mse_loss(A, A * 2)",
    "aten.mse_loss(A, A * 2, reduction=2)", "aten.mse_loss(A, A * 2, 0)",
    "aten.mse_loss(A, A * 2, True)", "aten.mse_loss.default(A, A * 2, 2)",
    "aten.nll_loss(A, K, None, 'mean', -100)", "aten.nll_loss(A)", "aten.nll_loss(A, K, None, 1, 1.5)",
    "aten.nll_loss(A, K, None, 2)", "aten.nll_loss(A, K, None, 5)", "aten.nll_loss(A, K)",
    "aten.binary_cross_entropy(A, A, None, 'mean')", "aten.binary_cross_entropy(A, A, None, 2)",
    "aten.binary_cross_entropy_with_logits(A, A, None, None, 'mean')",
    "aten.smooth_l1_loss(A, A, 'mean')", "aten.smooth_l1_loss(A, A * 2)",
    "aten.smooth_l1_loss(A, A * 2, 2, 0.5)", "aten.huber_loss(A, A, 'mean')", "aten.huber_loss(A)",
    "aten.huber_loss(A, A * 3, 0, delta=0.5)", "aten.soft_margin_loss(A, A, 'mean')",
    "aten.soft_margin_loss(A, A, 2)", "aten.multilabel_margin_loss(A, A.long(), 'mean')",
    "aten.multi_margin_loss(A, K, 1, 1.0, None, 'mean')", "aten.multi_margin_loss(A, K, 1, 1.0, None, 2)",
    "aten.multi_margin_loss(A, K, 2, 0.5, torch.tensor([1.0, 2.0]), 0)",
    "aten.hinge_embedding_loss(A, A, 1.0, 'mean')", "aten.margin_ranking_loss(A, A, A, 0.0, 'mean')",
    "aten.poisson_nll_loss(A, A, True, False, 1e-8, 'mean')",
    "aten.binary_cross_entropy_with_logits(A, A, None, None, 2)", "aten.kl_div(A, A, 'mean')",
    "aten.kl_div(A)", "aten.kl_div(A, A, reduction='mean')", "aten.kl_div(A, A, 1, 1)",
    "aten.cosine_embedding_loss(A, A, A[0], 0.0, 'mean')",
    "aten.triplet_margin_loss(A, A, A, 1.0, 2.0, 1e-6, False, 'mean')", "aten.ctc_loss(A, A)"]


@pytest.mark.parametrize("source", ATEN_LOSSES)
def test_aten_loss_schemas(source):
    for name, value in _ATEN.items():
        source = source.replace(name, value)
    torch = torch_or_skip()
    got = _outcome(ember, source)
    want = _outcome(torch, source)
    if want[0] == "ok":  # (the loss's value too: aten's int reduction)
        env = {"torch": torch}
        want = want + (eval(source, env).tolist(),)  # noqa: S307 - the source is the test case
        got = got + (eval(source, {"torch": ember}).tolist(),)  # noqa: S307
    assert got == want
