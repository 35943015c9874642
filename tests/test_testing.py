"""ember.testing (assert_close, make_tensor) against torch.testing: same passes, same
AssertionError texts, same random values for one seed."""
import numpy as np
import pytest

from oracle import same


def _check(torch, actual, expected, **kwargs):
    """None when assert_close passes, else the error it raises (type and text)."""
    try:
        torch.testing.assert_close(actual, expected, **kwargs)
    except Exception as error:  # noqa: BLE001 - the type and text are what is compared
        return type(error).__name__, str(error)
    return None


CASES = {
    "float_close": lambda t: (t.tensor([1., 2., 3.]), t.tensor([1., 2. + 1e-7, 3.])),
    "float_far": lambda t: (t.tensor([1., 2., 3.]), t.tensor([1., 2.5, 3.1])),
    "int_2d": lambda t: (t.tensor([[1, 2], [3, 4]]), t.tensor([[1, 2], [3, 5]])),
    "zero_dim": lambda t: (t.tensor(1.), t.tensor(2.)),
    "dtype": lambda t: (t.tensor([1.]), t.tensor([1.], dtype=t.float64)),
    "shape": lambda t: (t.tensor([1.]), t.tensor([1., 2.])),
    "floats": lambda t: (1.0, 1.1),
    "ints": lambda t: (1, 2),
    "int_float": lambda t: (1, 1.0),
    "bools": lambda t: (True, False),
    "none": lambda t: (None, 1),
    "list": lambda t: ([t.tensor(1.), t.tensor(2.)], [t.tensor(1.), t.tensor(2.5)]),
    "dict": lambda t: ({"a": t.tensor(1.)}, {"a": t.tensor(2.)}),
    "dict_keys": lambda t: ({"a": 1, "b": 2}, {"a": 1, "c": 2}),
    "nested": lambda t: ({"x": [1, (2.0, t.ones(2))]}, {"x": [1, (2.0, t.zeros(2))]}),
    "lengths": lambda t: ([1, 2], [1]),
    "tensor_number": lambda t: (t.tensor([1.]), 1.0),
    "tensor_numpy": lambda t: (t.tensor([1., 2.]), np.array([1., 2.])),
    "strings": lambda t: ("a", "b"),
    "nan": lambda t: (t.tensor([float("nan"), 1.]), t.tensor([float("nan"), 1.])),
    "bool_tensor": lambda t: (t.tensor([True, True]), t.tensor([False, True])),
    "complex": lambda t: (t.tensor([1 + 1j]), t.tensor([1 + 2j])),
    "half": lambda t: (t.tensor([1., 2.], dtype=t.float16), t.tensor([1., 2.01], dtype=t.float16)),
    "numpy": lambda t: (np.array([1., 2.]), np.array([1., 3.])),
    "numpy_scalars": lambda t: (np.float32(1.0), np.float64(1.5)),
    "inf": lambda t: (t.tensor([float("inf")]), t.tensor([float("-inf")])),
    "stride": lambda t: (t.ones(2, 2), t.ones(2, 2).t()),
    "layout": lambda t: (t.tensor([1., 2.]), t.tensor([1., 2.]).to_sparse()),
    "sparse_values": lambda t: (t.tensor([[1., 2.], [3., 4.]]).to_sparse(),
                                t.tensor([[1., 2.], [3., 5.]]).to_sparse()),
    "sparse_nnz": lambda t: (t.tensor([[1., 0.], [3., 4.]]).to_sparse(),
                             t.tensor([[1., 2.], [3., 5.]]).to_sparse()),
    "sparse_indices": lambda t: (t.tensor([[1., 0.], [3., 4.]]).to_sparse(),
                                 t.tensor([[0., 1.], [3., 4.]]).to_sparse()),
    "sparse_equal": lambda t: (t.tensor([[1., 0.], [3., 4.]]).to_sparse(),
                               t.tensor([[1., 0.], [3., 4.]]).to_sparse()),
    "uint16_int8": lambda t: (t.tensor([1, 2], dtype=t.uint16), t.tensor([1, 3], dtype=t.int8)),
    "zero_expected": lambda t: (t.tensor([1., 0.]), t.tensor([0., 0.])),
    "uint8": lambda t: (t.tensor([0, 250], dtype=t.uint8), t.tensor([255, 0], dtype=t.uint8)),
    "grad": lambda t: (t.ones(2, requires_grad=True) * 2, t.tensor([2., 2.5])),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_assert_close_defaults(case):
    same(lambda torch: _check(torch, *CASES[case](torch)))


@pytest.mark.parametrize("kwargs", [
    dict(equal_nan=True), dict(rtol=0, atol=0), dict(rtol=1e-3), dict(atol=1e-3),
    dict(check_dtype=False), dict(check_stride=True), dict(check_layout=False),
    dict(msg="custom"), dict(rtol=0.1, atol=0.5), dict(allow_subclasses=False),
])
@pytest.mark.parametrize("case", ["float_far", "nan", "dtype", "stride", "layout", "list",
                                  "sparse_values", "uint16_int8",
                                  "int_2d", "tensor_number", "numpy_scalars", "int_float"])
def test_assert_close_options(case, kwargs):
    same(lambda torch: _check(torch, *CASES[case](torch), **kwargs))


def test_assert_close_callable_msg():
    same(lambda torch: _check(torch, torch.tensor([1., 2.]), torch.tensor([1., 3.]),
                              msg=lambda m: f"Header\n\n{m}\n\nFooter"))
    same(lambda torch: _check(torch, [torch.tensor(1.)], [torch.tensor(3.)],
                              msg=lambda m: m.upper()))


def test_assert_close_dtype_mixed_tolerances():
    # compared in the promoted dtype with the looser of the two dtypes' tolerances
    same(lambda torch: _check(torch, torch.tensor([1.0001], dtype=torch.float16),
                              torch.tensor([1.0], dtype=torch.float64), check_dtype=False))


def _draws(torch, *shape, **kwargs):
    torch.manual_seed(0)
    out = torch.testing.make_tensor(*shape, device="cpu", **kwargs)
    return out, out.is_contiguous(), out.stride()


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16", "complex64",
                                   "int64", "int32", "uint8", "int8", "bool"])
def test_make_tensor_values(dtype):
    same(lambda torch: _draws(torch, 3, 4, dtype=getattr(torch, dtype)), rtol=0, atol=0)
    same(lambda torch: _draws(torch, (2, 5), dtype=getattr(torch, dtype), low=-2, high=3),
         rtol=0, atol=0)


@pytest.mark.parametrize("kwargs", [
    dict(noncontiguous=True), dict(exclude_zero=True, dtype_name="int64", low=-1, high=2),
    dict(exclude_zero=True), dict(requires_grad=True), dict(memory_format="channels_last"),
    dict(low=5, high=5), dict(low=5, high=2), dict(low=float("nan")),
    dict(requires_grad=True, dtype_name="int64"), dict(noncontiguous=True,
                                                       memory_format="channels_last"),
    dict(low=-1e300, high=1e300), dict(dtype_name="uint8", low=-100, high=300),
    dict(dtype_name="uint8", low=300, high=400), dict(dtype_name="int64", low=2.5, high=4.5),
    dict(dtype_name="float8_e4m3fn"),
])
def test_make_tensor_options(kwargs):
    def body(torch):
        options = dict(kwargs)
        options["dtype"] = getattr(torch, options.pop("dtype_name", "float32"))
        if "memory_format" in options:
            options["memory_format"] = getattr(torch, options["memory_format"])
        out, contiguous, stride = _draws(torch, 2, 3, 2, 2, **options)
        return out.float(), contiguous, stride, out.dtype, out.requires_grad
    same(body, rtol=0, atol=0)


def test_make_tensor_unsupported_dtype():
    same(lambda torch: _draws(torch, 2, dtype=torch.float8_e8m0fnu))
