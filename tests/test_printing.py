"""Tests for ember._printing: tensor reprs must match PyTorch 2.13 character for character.

The module is loaded by file path so these tests do not depend on the rest of ember being
importable.  Hard-coded expectations (taken from torch's real output) run without torch;
the oracle comparisons use ``pytest.importorskip("torch")``.
"""

import importlib.util
import math
import sys
from pathlib import Path

import numpy as np
import pytest

_PATH = Path(__file__).resolve().parents[1] / "src" / "ember" / "_printing.py"
_SPEC = importlib.util.spec_from_file_location("ember_printing_under_test", _PATH)
P = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(P)

ALL_DTYPES = ["float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8",
              "bool", "complex64", "complex128"]


@pytest.fixture(autouse=True)
def _reset_options():
    """Leave both ember's and torch's print options (and default dtype) at their defaults."""
    yield
    P.set_printoptions(profile="default")
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.set_printoptions(profile="default")
        torch.set_default_dtype(torch.float32)


@pytest.fixture
def torch():
    return pytest.importorskip("torch")


def show(array, suffixes=(), default="float32", **kwargs):
    array = np.asarray(array)
    return P.tensor_str(array, dtype_name=str(array.dtype), default_float_name=default,
                        suffixes=list(suffixes), **kwargs)


def set_both(torch, **options):
    torch.set_printoptions(**options)
    P.set_printoptions(**options)


def check(torch, array, requires_grad=False):
    """Compare against torch's repr of the same data."""
    array = np.asarray(array)
    tensor = torch.from_numpy(array.copy())
    suffixes = []
    if requires_grad:
        tensor.requires_grad_()
        suffixes = ["requires_grad=True"]
    expected = repr(tensor).replace("torch.", "ember.")
    default = str(torch.get_default_dtype()).replace("torch.", "")
    assert show(array, suffixes, default=default) == expected


def sample(dtype, shape, seed=0, scale=100.0):
    rng = np.random.default_rng(seed)
    values = rng.standard_normal(shape) * scale
    if dtype.startswith("complex"):
        values = values + 1j * rng.standard_normal(shape)
    return np.asarray(values).astype(dtype)


# --- hard-coded expectations: run without torch -------------------------------------------

HARD_CODED = [
    (np.array(27.0, np.float32), "tensor(27.)"),
    (np.array(1.2304e10, np.float32), "tensor(1.2304e+10)"),
    (np.array([1.0, 2.0], np.float32), "tensor([1., 2.])"),
    (np.array([1.5, -0.0, 2.25], np.float32), "tensor([1.5000, -0.0000, 2.2500])"),
    (np.array([np.nan, np.inf, -np.inf, 1.0], np.float32), "tensor([nan, inf, -inf, 1.])"),
    (np.array([1e-5, 1.0, 100.0], np.float32),
     "tensor([1.0000e-05, 1.0000e+00, 1.0000e+02])"),
    (np.array([True, False]), "tensor([ True, False])"),
    (np.array([[1, -20], [300, 4]]), "tensor([[  1, -20],\n        [300,   4]])"),
    (np.array([1, 2], np.int32), "tensor([1, 2], dtype=ember.int32)"),
    (np.array([1 + 2j, -3.5 - 0.5j], np.complex64), "tensor([ 1.0000+2.0000j, -3.5000-0.5000j])"),
    (np.array([0.1, 0.2], np.float16), "tensor([0.1000, 0.2000], dtype=ember.float16)"),
    (np.zeros(0, np.float32), "tensor([])"),
    (np.zeros((2, 0), np.float32), "tensor([], size=(2, 0))"),
    (np.zeros((0, 3), np.int64), "tensor([], size=(0, 3), dtype=ember.int64)"),
    (np.arange(2000), "tensor([   0,    1,    2,  ..., 1997, 1998, 1999])"),
    (np.arange(24.0, dtype=np.float32).reshape(2, 3, 4),
     "tensor([[[ 0.,  1.,  2.,  3.],\n         [ 4.,  5.,  6.,  7.],\n"
     "         [ 8.,  9., 10., 11.]],\n\n        [[12., 13., 14., 15.],\n"
     "         [16., 17., 18., 19.],\n         [20., 21., 22., 23.]]])"),
    (np.arange(30) * 1000003,
     "tensor([       0,  1000003,  2000006,  3000009,  4000012,  5000015,  6000018,\n"
     "         7000021,  8000024,  9000027, 10000030, 11000033, 12000036, 13000039,\n"
     "        14000042, 15000045, 16000048, 17000051, 18000054, 19000057, 20000060,\n"
     "        21000063, 22000066, 23000069, 24000072, 25000075, 26000078, 27000081,\n"
     "        28000084, 29000087])"),
]


@pytest.mark.parametrize("array, expected", HARD_CODED)
def test_hard_coded(array, expected):
    assert show(array) == expected


def test_hard_coded_summarized_matrix():
    array = np.arange(10000.0, dtype=np.float32).reshape(100, 100) / np.float32(7)
    rows = ["0.0000e+00, 1.4286e-01, 2.8571e-01,  ..., 1.3857e+01, 1.4000e+01,\n"
            "         1.4143e+01",
            "1.4286e+01, 1.4429e+01, 1.4571e+01,  ..., 2.8143e+01, 2.8286e+01,\n"
            "         2.8429e+01",
            "2.8571e+01, 2.8714e+01, 2.8857e+01,  ..., 4.2429e+01, 4.2571e+01,\n"
            "         4.2714e+01"]
    tail = ["1.3857e+03, 1.3859e+03, 1.3860e+03,  ..., 1.3996e+03, 1.3997e+03,\n"
            "         1.3999e+03",
            "1.4000e+03, 1.4001e+03, 1.4003e+03,  ..., 1.4139e+03, 1.4140e+03,\n"
            "         1.4141e+03",
            "1.4143e+03, 1.4144e+03, 1.4146e+03,  ..., 1.4281e+03, 1.4283e+03,\n"
            "         1.4284e+03"]
    blocks = [f"[{row}]" for row in rows] + ["..."] + [f"[{row}]" for row in tail]
    assert show(array) == "tensor([" + ",\n        ".join(blocks) + "])"


def test_hard_coded_suffixes_and_options():
    array = np.array([1.0, 2.0])
    expected = "tensor([1., 2.], dtype=ember.float64, requires_grad=True)"
    assert show(array, ["requires_grad=True"]) == expected
    assert show(array, ["requires_grad=True"], default="float64") == \
        "tensor([1., 2.], requires_grad=True)"
    values = np.array([1.12345, 2.5, 3.75, 4.0, 5.125, 6.0], np.float32)
    with P.printoptions(precision=2, linewidth=30):
        assert show(values) == "tensor([1.12, 2.50, 3.75,\n        4.00, 5.12, 6.00])"
    with P.printoptions(edgeitems=0):
        assert show(np.array([1, 2])) == "tensor([1, 2], size=(2,))"
    assert show(np.array([1.0, 2.0], np.float32), dtype_prefix="torch.", prefix="tensor(") == \
        "tensor([1., 2.])"


def test_printoptions_api():
    defaults = {"precision": 4, "threshold": 1000, "edgeitems": 3, "linewidth": 80,
                "sci_mode": None}
    assert P.get_printoptions() == defaults
    with P.printoptions(precision=2, sci_mode=True):
        assert P.get_printoptions()["precision"] == 2
        assert P.get_printoptions()["sci_mode"] is True
    assert P.get_printoptions() == defaults
    P.set_printoptions(profile="full")
    assert P.get_printoptions()["threshold"] == math.inf
    P.set_printoptions(profile="short", precision=3)
    assert P.get_printoptions() == {"precision": 3, "threshold": 1000, "edgeitems": 2,
                                    "linewidth": 80, "sci_mode": None}


def test_printoptions_restores_after_error():
    with pytest.raises(RuntimeError):
        with P.printoptions(linewidth=5):
            raise RuntimeError
    assert P.get_printoptions()["linewidth"] == 80


# --- comparisons against torch ------------------------------------------------------------

SHAPES = [(), (1,), (5,), (3, 4), (2, 3, 4), (2, 2, 2, 2), (30,), (12, 13), (1000,), (1001,),
          (100, 100), (0,), (2, 0), (0, 3)]


@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_random_data(torch, dtype, shape):
    check(torch, sample(dtype, shape))


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_small_magnitudes(torch, dtype):
    check(torch, sample(dtype, (4, 5), seed=1, scale=3.0))


SPECIAL_FLOATS = [
    [1.0, 2.0], [0.0, 0.0], [-0.0], [-0.0, 1.0], [0.1, 123456.7], [1e8, 1.0], [1.5e8],
    [1e-5, 1.0], [1e-300, 1e300], [-1e-300, 5.0], [9.99996, -0.00001], [1.0, 1001.0],
    [np.nan], [np.nan, np.inf, -np.inf], [np.nan, 1.5, -np.inf], [np.inf, 1e10, 0.0],
    [65504.0, -65504.0], [123456789.0, 2.0], [0.5, np.nan, 1e-7],
]


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
@pytest.mark.parametrize("values", SPECIAL_FLOATS, ids=str)
def test_special_floats(torch, dtype, values):
    with np.errstate(over="ignore", under="ignore"):
        array = np.array(values).astype(dtype)
    check(torch, array)
    check(torch, array[0])


@pytest.mark.parametrize("values", [
    [1 + 2j, -3.5 - 0.5j], [1e-9 + 1j, 2 + 0j], [0j, 0j], [complex(-0.0, -0.0), 1j],
    [complex(np.nan, 1), complex(1, -np.inf)], [1e10 + 1e10j], [1 + 1e-9j],
], ids=str)
@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_complex(torch, dtype, values):
    array = np.array(values, dtype=dtype)
    check(torch, array)
    check(torch, array[-1])


@pytest.mark.parametrize("values", [
    [0, -1, 127], [10**12, -(10**12)], [np.iinfo(np.int64).min, np.iinfo(np.int64).max],
], ids=str)
def test_integers(torch, values):
    for dtype in ["int8", "int16", "int32", "int64", "uint8"]:
        info = np.iinfo(dtype)
        check(torch, np.clip(np.array(values, dtype=object), info.min, info.max).astype(dtype))


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "int64", "bool", "complex64"])
def test_empty_shapes(torch, dtype):
    for shape in [(0,), (2, 0), (0, 3), (1, 0, 2)]:
        check(torch, np.zeros(shape, dtype=dtype))


def test_wide_rows_wrap(torch):
    check(torch, np.arange(200) * 123457)
    check(torch, sample("float64", (3, 40), seed=2))
    check(torch, sample("complex128", (2, 2, 15), seed=3))


OPTIONS = [
    {"precision": 0}, {"precision": 2}, {"precision": 8}, {"threshold": 5},
    {"threshold": 0}, {"edgeitems": 1, "threshold": 10}, {"edgeitems": 0},
    {"edgeitems": 0, "threshold": 10}, {"linewidth": 40}, {"linewidth": 10},
    {"linewidth": 200}, {"profile": "default"}, {"profile": "short"}, {"profile": "full"},
    {"profile": "short", "precision": 5}, {"sci_mode": True}, {"sci_mode": False},
]


@pytest.mark.parametrize("options", OPTIONS, ids=str)
@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_options(torch, options, dtype):
    set_both(torch, **options)
    assert P.get_printoptions() == torch._tensor_str.get_printoptions()
    for shape in [(), (7,), (4, 5), (2, 3, 4), (1200,), (40, 40)]:
        check(torch, sample(dtype, shape, seed=4))
    if dtype.startswith("float"):
        with np.errstate(over="ignore"):  # 1e9 becomes inf in float16, which is fine
            check(torch, np.array([1.0, 1e-6, np.nan, -0.0, 1e9], dtype=dtype))


def test_summary_formatter_ignores_hidden_elements(torch):
    # The huge middle element is summarized away, so it must not force scientific notation.
    array = np.ones(2000, dtype=np.float32)
    array[1000] = 1e20
    check(torch, array)
    check(torch, array.reshape(40, 50))


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "complex64", "complex128"])
def test_requires_grad_suffix(torch, dtype):
    for shape in [(), (2,), (3, 3), (0,), (2, 0)]:
        check(torch, sample(dtype, shape, seed=5), requires_grad=True)


def test_suffix_wrapping(torch):
    # Last lines of every length around linewidth exercise torch's suffix line breaking.
    for n in range(1, 30):
        for dtype in ["float32", "float64"]:
            array = (np.arange(n) + 0.5).astype(dtype)
            check(torch, array, requires_grad=True)
            check(torch, array.reshape(1, n), requires_grad=True)


def test_grad_fn_suffix(torch):
    base = torch.tensor([1.5, 2.25, 3.0], dtype=torch.float64, requires_grad=True)
    result = base * 2
    expected = repr(result).replace("torch.", "ember.")
    got = show(result.detach().numpy(), ["grad_fn=<MulBackward0>"])
    assert got == expected


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_default_dtype_float64(torch, dtype):
    torch.set_default_dtype(torch.float64)
    for shape in [(), (3,), (0,), (2, 0)]:
        check(torch, sample(dtype, shape, seed=6))
    if dtype.startswith(("float", "complex")):
        check(torch, sample(dtype, (3,), seed=6), requires_grad=True)
