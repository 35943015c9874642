"""``assert_close``: compare tensors, numbers and nested containers of them, and fail with
torch's AssertionError text (the mismatch count and the greatest differences)."""
from __future__ import annotations

import cmath
import collections.abc
import contextlib

import numpy as np

import ember

# {dtype name: (rtol, atol)}: the tolerances torch.testing uses when none are given
_TOLERANCES = {
    "float16": (1e-3, 1e-5), "bfloat16": (1.6e-2, 1e-5), "float32": (1.3e-6, 1e-5),
    "float64": (1e-7, 1e-7), "complex32": (1e-3, 1e-5), "complex64": (1.3e-6, 1e-5),
    "complex128": (1e-7, 1e-7),
}
_WIDE_UNSIGNED = ("ember.uint16", "ember.uint32", "ember.uint64")
# the dtype whose tolerances a Python number is compared with
_NUMBER_DTYPES = {int: "int64", float: "float64", complex: "complex128"}


class _Failure(Exception):
    """A mismatch found while comparing: the exception type to raise, its message and the
    path (keys, indices) of the item it was found at."""

    def __init__(self, kind, message, path=()):
        super().__init__(message)
        self.kind, self.message, self.path = kind, message, path

    def error(self, msg=None):
        if isinstance(msg, str):
            return self.kind(msg)
        text = self.message
        if self.path:
            text += "\n\nThe failure occurred for item " + "".join(str([p]) for p in self.path)
        return self.kind(msg(text) if callable(msg) else text)


class _Unsupported(Exception):
    """This kind of pair cannot compare these two inputs; the next kind is tried."""


def _tolerances(dtype_names, rtol, atol, path):
    if (rtol is None) != (atol is None):
        missing = "rtol" if rtol is None else "atol"
        raise _Failure(ValueError, "Both 'rtol' and 'atol' must be either specified or "
                                   f"omitted, but got no {missing}.", path)
    if rtol is not None:
        return rtol, atol
    pairs = [_TOLERANCES.get(name, (0.0, 0.0)) for name in dtype_names]
    return max(p[0] for p in pairs), max(p[1] for p in pairs)


def _mismatch_message(identifier, extra, abs_diff, atol, rel_diff, rtol,
                      abs_index=None, rel_index=None):
    exact = rtol == 0 and atol == 0

    def line(kind, diff, index, tol):
        text = (f"{kind.title()} difference: {diff}" if index is None
                else f"Greatest {kind} difference: {diff} at index {index}")
        return text + ("" if exact else f" (up to {tol} allowed)") + "\n"

    text = f"{identifier} are not {'equal' if exact else 'close'}!\n\n{extra.strip()}\n"
    text += line("absolute", abs_diff, abs_index, atol)
    text += line("relative", rel_diff, rel_index, rtol)
    return text.strip()


def _scalar_message(actual, expected, rtol, atol, identifier="Scalars"):
    abs_diff = abs(actual - expected)
    rel_diff = float("inf") if expected == 0 else abs_diff / abs(expected)
    return _mismatch_message(identifier, f"Expected {expected} but got {actual}.",
                             abs_diff, atol, rel_diff, rtol)


def _pair_none(actual, expected, path, **_):
    if actual is not None and expected is not None:
        raise _Unsupported

    def check():
        if not (actual is None and expected is None):
            raise _Failure(AssertionError, f"None mismatch: {actual} is not {expected}", path)
    return check


def _pair_bools(actual, expected, path, **_):
    if not all(isinstance(x, (bool, np.bool_)) for x in (actual, expected)):
        raise _Unsupported
    actual, expected = bool(actual), bool(expected)

    def check():
        if actual is not expected:
            raise _Failure(AssertionError, f"Booleans mismatch: {actual} is not {expected}",
                           path)
    return check


def _pair_numbers(actual, expected, path, *, rtol, atol, equal_nan, check_dtype, **_):
    kinds = (int, float, complex, np.number)
    if not all(isinstance(x, kinds) for x in (actual, expected)):
        raise _Unsupported
    actual, expected = (x.item() if isinstance(x, np.number) else x for x in (actual, expected))
    rtol, atol = _tolerances([_NUMBER_DTYPES[type(x)] for x in (actual, expected)],
                             rtol, atol, path)
    return lambda: _compare_numbers(actual, expected, path, rtol, atol, equal_nan, check_dtype)


def _compare_numbers(actual, expected, path, rtol, atol, equal_nan, check_dtype):
    if check_dtype and type(actual) is not type(expected):
        raise _Failure(AssertionError, f"The (d)types do not match: {type(actual)} != "
                                       f"{type(expected)}.", path)
    if actual == expected or (equal_nan and cmath.isnan(actual) and cmath.isnan(expected)):
        return
    diff = abs(actual - expected)
    if cmath.isfinite(diff) and diff <= atol + rtol * abs(expected):
        return
    raise _Failure(AssertionError, _scalar_message(actual, expected, rtol, atol), path)


def _as_tensor(x):
    if isinstance(x, ember.Tensor):
        return x
    try:
        return ember.as_tensor(x)
    except Exception as error:  # noqa: BLE001 - whatever fails to convert is unsupported
        raise _Unsupported from error


def _pair_tensors(actual, expected, path, *, allow_subclasses, rtol, atol, equal_nan,
                  check_device, check_dtype, check_layout, check_stride, msg):
    related = isinstance(actual, type(expected)) or isinstance(expected, type(actual))
    if not related or (not allow_subclasses and type(actual) is not type(expected)):
        raise _Unsupported
    actual, expected = _as_tensor(actual), _as_tensor(expected)
    rtol, atol = _tolerances([str(t.dtype).split(".")[-1] for t in (actual, expected)],
                             rtol, atol, path)
    checks = dict(check_device=check_device, check_dtype=check_dtype,
                  check_layout=check_layout, check_stride=check_stride)
    return lambda: _compare_tensors(actual, expected, path, rtol, atol, equal_nan, **checks)


def _compare_tensors(actual, expected, path, rtol, atol, equal_nan, *, check_device,
                     check_dtype, check_layout, check_stride):
    def differ(name, a, b):
        raise _Failure(AssertionError,
                       f"The values for attribute '{name}' do not match: {a} != {b}.", path)

    if actual.shape != expected.shape:
        differ("shape", actual.shape, expected.shape)
    if actual.layout != expected.layout:
        if check_layout:
            differ("layout", actual.layout, expected.layout)
    elif (actual.layout == ember.strided and check_stride
          and actual.stride() != expected.stride()):
        differ("stride()", actual.stride(), expected.stride())
    if check_device and actual.device != expected.device:
        differ("device", actual.device, expected.device)
    if check_dtype and actual.dtype != expected.dtype:
        differ("dtype", actual.dtype, expected.dtype)
    if "meta" in (actual.device.type, expected.device.type):
        return
    _compare_values(*_equalized(actual, expected), rtol, atol, equal_nan, path)


def _equalized(actual, expected):
    """Both tensors dense, on the CPU and of one dtype, as torch compares their values."""
    if actual.device != expected.device:
        actual, expected = actual.cpu(), expected.cpu()
    if actual.dtype != expected.dtype:
        # (the unsigned types without promotion rules compare as int64)
        a, b = (ember.int64 if str(t.dtype) in _WIDE_UNSIGNED else t.dtype
                for t in (actual, expected))
        dtype = ember.promote_types(a, b)
        actual, expected = actual.to(dtype), expected.to(dtype)
    if actual.layout != expected.layout:
        actual, expected = (t.to_dense() if t.layout != ember.strided else t
                            for t in (actual, expected))
    return actual.detach(), expected.detach()


def _compare_values(actual, expected, rtol, atol, equal_nan, path):
    if actual.layout == ember.sparse_coo:
        return _compare_sparse_coo(actual, expected, rtol, atol, equal_nan, path)
    return _compare_dense(actual, expected, rtol, atol, equal_nan, path)


def _compare_sparse_coo(actual, expected, rtol, atol, equal_nan, path):
    """Sparse COO tensors: sparse dims and stored-value counts equal, indices equal, values
    close (as given, without coalescing, as torch compares them)."""
    for what, a, b in (("sparse dimensions", actual.sparse_dim(), expected.sparse_dim()),
                       ("specified values", actual._nnz(), expected._nnz())):
        if a != b:
            raise _Failure(AssertionError, f"The number of {what} in sparse COO tensors does "
                                           f"not match: {a} != {b}", path)
    _compare_dense(actual._indices(), expected._indices(), 0, 0, equal_nan, path,
                   "Sparse COO indices")
    _compare_dense(actual._values(), expected._values(), rtol, atol, equal_nan, path,
                   "Sparse COO values")


def _compare_dense(actual, expected, rtol, atol, equal_nan, path, identifier="Tensor-likes"):
    one_byte_float = actual.dtype.is_floating_point and actual.dtype.itemsize == 1
    if one_byte_float and (rtol != 0.0 or atol != 0.0):
        raise _Failure(AssertionError, f"Rtol={rtol} and atol={atol} are not supported for "
                       "bitwise comparison of low dimensional floats. Please use rtol=0.0 "
                       "and atol=0.0.", path)
    matches = ember.isclose(actual, expected, rtol=rtol, atol=atol, equal_nan=equal_nan)
    if bool(matches.all()):
        return
    if actual.dim() == 0:
        scalars = "Scalars" if identifier == "Tensor-likes" else identifier
        text = _scalar_message(actual.item(), expected.item(), rtol, atol, scalars)
    else:
        text = _tensor_message(actual, expected, matches, rtol, atol, identifier)
    raise _Failure(AssertionError, text, path)


def _tensor_message(actual, expected, matches, rtol, atol, identifier):
    total = matches.numel()
    mismatched = total - int(matches.sum())
    extra = f"Mismatched elements: {mismatched} / {total} ({mismatched / total:.1%})"
    shape = tuple(matches.shape)
    if actual.dtype.is_floating_point and actual.dtype.itemsize == 1:
        first = tuple(ember.nonzero(~matches)[0].tolist())
        return (f"{identifier} are not 'equal'!\n\n{extra}\n"
                f"The first mismatched element is at index {first}.")
    a, b, same = actual.flatten(), expected.flatten(), matches.flatten()
    if not (actual.dtype.is_floating_point or actual.dtype.is_complex):
        a, b = a.to(ember.int64), b.to(ember.int64)  # (no overflow in the difference)
    abs_diff = ember.abs(a - b)
    abs_diff[same] = 0  # the greatest differences are taken over mismatches only
    rel_diff = abs_diff / ember.abs(b)
    rel_diff[same] = 0
    abs_max, abs_at = ember.max(abs_diff, 0)
    rel_max, rel_at = ember.max(rel_diff, 0)
    return _mismatch_message(
        identifier, extra, abs_max.item(), atol, rel_max.item(), rtol,
        tuple(int(i) for i in np.unravel_index(int(abs_at), shape)),
        tuple(int(i) for i in np.unravel_index(int(rel_at), shape)))


_PAIRS = (_pair_none, _pair_bools, _pair_numbers, _pair_tensors)


def _comparisons(actual, expected, path, options):
    """The (pair function, actual, expected, path) leaves of two nested containers."""
    Sequence, Mapping = collections.abc.Sequence, collections.abc.Mapping
    if (isinstance(actual, Sequence) and isinstance(expected, Sequence)
            and not isinstance(actual, str) and not isinstance(expected, str)):
        if len(actual) != len(expected):
            raise _Failure(AssertionError, "The length of the sequences mismatch: "
                                           f"{len(actual)} != {len(expected)}", path)
        return [leaf for i in range(len(actual))
                for leaf in _comparisons(actual[i], expected[i], (*path, i), options)]
    if isinstance(actual, Mapping) and isinstance(expected, Mapping):
        keys, other = set(actual.keys()), set(expected.keys())
        if keys != other:
            raise _Failure(AssertionError, "The keys of the mappings do not match:\n"
                           f"Missing keys in the actual mapping: {sorted(other - keys)}\n"
                           f"Additional keys in the actual mapping: {sorted(keys - other)}",
                           path)
        with contextlib.suppress(Exception):  # (a deterministic order where keys sort)
            keys = sorted(keys)
        return [leaf for k in keys
                for leaf in _comparisons(actual[k], expected[k], (*path, k), options)]
    return [(actual, expected, path)]


def _pair(actual, expected, path, options):
    """The check comparing two leaves, from the first kind of pair that takes them (setting
    one up validates its inputs and tolerances)."""
    for pair in _PAIRS:
        try:
            return pair(actual, expected, path, **options)
        except _Unsupported:
            continue
    raise _Failure(TypeError, "No comparison pair was able to handle inputs of type "
                              f"{type(actual)} and {type(expected)}.", path)


def assert_close(actual, expected, *, allow_subclasses=True, rtol=None, atol=None,
                 equal_nan=False, check_device=True, check_dtype=True, check_layout=True,
                 check_stride=False, msg=None):
    """Assert that ``actual`` and ``expected`` are close: ``|actual - expected| <= atol +
    rtol * |expected|`` elementwise, with per-dtype default tolerances, after checking shape,
    layout, device, dtype (and, asked for, strides). Sequences and mappings are compared item
    by item. A mismatch raises AssertionError with torch.testing's message."""
    __tracebackhide__ = True
    options = dict(allow_subclasses=allow_subclasses, rtol=rtol, atol=atol,
                   equal_nan=equal_nan, check_device=check_device, check_dtype=check_dtype,
                   check_layout=check_layout, check_stride=check_stride, msg=msg)
    try:  # (errors in the inputs themselves are raised without ``msg``)
        checks = [_pair(a, b, path, options)
                  for a, b, path in _comparisons(actual, expected, (), options)]
    except _Failure as failure:
        raise failure.error() from None
    for check in checks:
        try:
            check()
        except _Failure as failure:
            raise failure.error(msg) from None


# assert_allclose's own default tolerances (looser than assert_close's for float32)
_ALLCLOSE_TOLERANCES = {"float16": (1e-3, 1e-3), "float32": (1e-4, 1e-5),
                        "float64": (1e-5, 1e-8)}


def assert_allclose(actual, expected, rtol=None, atol=None, equal_nan=True, msg=""):
    """Deprecated since torch 1.12 (a FutureWarning), as torch's: ``assert_close`` without
    the dtype check, NaNs equal by default, numbers and lists made tensors of ``actual``'s
    dtype, and its own default tolerances."""
    import warnings

    import ember
    warnings.warn("`ember.testing.assert_allclose()` is deprecated since 1.12 and will be "
                  "removed in a future release. Please use `ember.testing.assert_close()` "
                  "instead. You can find detailed upgrade instructions in "
                  "https://github.com/pytorch/pytorch/issues/61844.", FutureWarning,
                  stacklevel=2)
    __tracebackhide__ = True
    if not isinstance(actual, ember.Tensor):
        actual = ember.tensor(actual)
    if not isinstance(expected, ember.Tensor):
        expected = ember.tensor(expected, dtype=actual.dtype)
    if rtol is None and atol is None:
        pairs = [_ALLCLOSE_TOLERANCES.get(str(t.dtype).split(".")[-1], (0.0, 0.0))
                 for t in (actual, expected)]
        rtol, atol = max(p[0] for p in pairs), max(p[1] for p in pairs)
    assert_close(actual, expected, rtol=rtol, atol=atol, equal_nan=equal_nan,
                 check_device=True, check_dtype=False, check_stride=False, msg=msg or None)
