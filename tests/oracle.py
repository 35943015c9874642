"""Run the same code on PyTorch and on ember and compare what comes out.

A test writes its body once as ``def body(torch): ...`` and runs it with the real ``torch``
module and with ``ember`` in its place. What the body returns (nested tuples, lists and dicts of
tensors, numbers and strings) is turned into plain data: tensors become their dtype, shape,
values and autograd flags; strings (reprs, messages) have ``torch.`` spelled ``ember.``.
Exceptions and warnings are captured the same way, so error texts are compared too.

Only the tests that call :func:`torch_or_skip` (or :func:`same`) need torch; they skip cleanly
when it is not installed.
"""
from __future__ import annotations

import re
import warnings
from dataclasses import dataclass, field

import numpy as np
import pytest

import ember

_TORCH_DOT = re.compile(r"\btorch\.(?=[A-Za-z_])")


def torch_or_skip():
    """The torch module, or skip the calling test when it is not installed."""
    return pytest.importorskip("torch")


def norm(text: str) -> str:
    """torch's text as ember writes it: ``torch.float64`` -> ``ember.float64``."""
    return _TORCH_DOT.sub("ember.", text)


@dataclass
class TensorInfo:
    dtype: str
    shape: tuple
    values: np.ndarray
    requires_grad: bool
    grad_fn: str | None
    is_leaf: bool


@dataclass
class Outcome:
    """What running a body gave: a value or an error, and the warnings it raised."""

    value: object = None
    error: tuple | None = None  # (exception type name, normalised message)
    warnings: list = field(default_factory=list)  # [(category name, normalised message)]


def plain(x, lib):
    """``x`` with every tensor (of ``lib``) replaced by a :class:`TensorInfo`.

    Text from torch is normalised (``torch.`` -> ``ember.``); ember's is kept as it is, so a
    message in which ember names torch is caught.
    """
    fix = norm if lib.__name__ == "torch" else str
    if isinstance(x, lib.Tensor):
        fn = x.grad_fn
        d = x.detach()
        name = str(x.dtype).split(".")[-1]
        # (bfloat16 and float8 values compare as the float32 numbers they are)
        narrow = name == "bfloat16" or name.startswith("float8")
        values = np.array(d.tolist(), dtype="float32" if narrow else name)
        return TensorInfo(fix(str(x.dtype)), tuple(x.shape), values, x.requires_grad,
                          None if fn is None else fn.name(), x.is_leaf)
    if isinstance(x, lib.Size):
        return ("Size", tuple(x))
    if isinstance(x, (tuple, list)):
        items = [plain(v, lib) for v in x]
        named = hasattr(x, "_fields") or hasattr(x, "n_fields")  # return_types.max, ...
        return tuple(items) if named else type(x)(items)
    if isinstance(x, dict):
        return {k: plain(v, lib) for k, v in x.items()}
    if isinstance(x, str):
        return fix(x)
    if isinstance(x, lib.dtype):
        return fix(repr(x))
    return x


def run(body, lib) -> Outcome:
    """Run ``body(lib)``, capturing its value (as plain data), exception and warnings."""
    out = Outcome()
    fix = norm if lib.__name__ == "torch" else str
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            out.value = plain(body(lib), lib)
        except Exception as e:  # noqa: BLE001
            out.error = (type(e).__name__, fix(str(e)))
    out.warnings = [(w.category.__name__, fix(str(w.message))) for w in caught
                    if not _torch_import_noise(lib, w)]
    return out


def _torch_import_noise(lib, w):
    """A warning torch's own modules raise once, when the body's first use imports them
    (torch 2.13's internals decorate functions with the deprecated ``torch.jit.script``):
    not the body's behaviour, and which test meets it first depends on the run's order."""
    return (lib.__name__ == "torch" and issubclass(w.category, DeprecationWarning)
            and "jit.script` is deprecated" in str(w.message))


def assert_close(a, b, rtol=1e-6, atol=1e-7, path="value", grad_fn=True):
    """Structural equality of two plain values; float arrays compare with a tolerance.

    ``grad_fn=False`` does not compare node names (the nodes of a graph built by
    ``create_graph=True`` are an implementation detail: torch's derivative formulas and
    ember's may use different ops).
    """
    if isinstance(a, TensorInfo):
        assert isinstance(b, TensorInfo), f"{path}: torch gave a tensor, ember gave {b!r}"
        assert (b.dtype, b.shape) == (a.dtype, a.shape), f"{path}: dtype/shape {b} vs {a}"
        assert (b.requires_grad, b.is_leaf) == (a.requires_grad, a.is_leaf), f"{path}: {b} vs {a}"
        if grad_fn:
            assert b.grad_fn == a.grad_fn, f"{path}: grad_fn {b.grad_fn} vs {a.grad_fn}"
        if a.values.dtype.kind in "fc":
            np.testing.assert_allclose(b.values, a.values, rtol=rtol, atol=atol,
                                       err_msg=path, equal_nan=True)
        else:
            np.testing.assert_array_equal(b.values, a.values, err_msg=path)
    elif isinstance(a, (tuple, list)):
        assert type(a) is type(b) and len(a) == len(b), f"{path}: {b!r} vs torch's {a!r}"
        for k, (x, y) in enumerate(zip(a, b)):
            assert_close(x, y, rtol, atol, f"{path}[{k}]", grad_fn)
    elif isinstance(a, dict):
        assert a.keys() == b.keys(), f"{path}: keys {list(b)} vs torch's {list(a)}"
        for k in a:
            assert_close(a[k], b[k], rtol, atol, f"{path}[{k!r}]", grad_fn)
    elif isinstance(a, float) and isinstance(b, float):
        assert b == pytest.approx(a, rel=rtol, abs=atol, nan_ok=True), f"{path}: {b} vs {a}"
    else:
        assert type(a) is type(b) and a == b, f"{path}: ember gave {b!r}, torch gave {a!r}"


def same(body, *, rtol=1e-6, atol=1e-7, check_warnings=True, grad_fn=True):
    """Run ``body`` on torch and on ember and assert the outcomes agree; returns ember's."""
    torch = torch_or_skip()
    t = run(body, torch)
    e = run(body, ember)
    assert e.error == t.error, f"error: ember {e.error!r}\n torch {t.error!r}"
    assert_close(t.value, e.value, rtol, atol, grad_fn=grad_fn)
    if check_warnings:
        assert e.warnings == t.warnings, f"warnings: ember {e.warnings}\n torch {t.warnings}"
    return e


def error_of(fn):
    """None if ``fn()`` runs, else the type name and message of what it raises (error tables
    compare these between torch and ember)."""
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - the type and text are what is compared
        return type(e).__name__, str(e)
    return None


def graph_tree(fn, depth=5):
    """The names of node ``fn`` and of the nodes under it, ``depth`` levels down (None for a
    missing edge): what graph-structure tests compare between torch and ember."""
    if fn is None:
        return None
    if depth == 0:
        return fn.name()
    return fn.name(), tuple(graph_tree(f, depth - 1) for f, _ in fn.next_functions)
