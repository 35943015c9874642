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
