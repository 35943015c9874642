"""infer_schema and custom_op of functions whose annotations are strings (a module with
``from __future__ import annotations``, or strings inside a generic such as ``list["Tensor"]``):
evaluated in the function's module, as torch evaluates them, with torch's errors (the hint
about that import when a name is not at module scope), compared with torch 2.13."""
from __future__ import annotations

import pytest
from oracle import same

# Each source is a module of its own, run with its library's Tensor at module scope: what a
# user's module written with the future import is. ``Local`` is defined inside a function
# only, ``Tensr`` nowhere.
_MODULE = '''
from __future__ import annotations
import typing

def f(x: Tensor, n: int) -> Tensor:
    return x * n

def optional_ref(x: Tensor, y: typing.Optional["Tensor"]) -> Tensor:
    return x

def misspelt(x: Tensr) -> Tensor:
    return x

def attribute_of_nothing(x: Tensor, n: Undefined.attr) -> Tensor:
    return x

def unknown_return(x: Tensor) -> Tensr:
    return x

def unannotated_then_misspelt(x, y: Tensr) -> Tensor:
    return x

def local():
    class Local:
        pass

    def g(x: Local) -> Tensor:
        return x
    return g
'''

# Without the future import: strings inside a generic are evaluated (torch rebuilds the
# generic), one inside Optional is a ForwardRef (unsupported in both), a bad one is refused.
_PLAIN_MODULE = '''
import typing

def in_list(xs: list["Tensor"]) -> "Tensor":
    return xs[0]

def in_typing_list(xs: typing.List["Tensor"], n: "int") -> "Tensor":
    return xs[0] * n

def optional_ref_plain(x: "Tensor", y: typing.Optional["Tensor"]) -> "Tensor":
    return x

def bad_syntax(x: "Tensor[") -> "Tensor":
    return x

def misspelt_in_list(xs: list["Tensr"]) -> "Tensor":
    return xs[0]
'''


def _module(lib, source):
    namespace = {"Tensor": lib.Tensor, "__name__": "user_module"}
    exec(compile(source, "user_module.py", "exec"), namespace)  # noqa: S102 - the sources above
    return namespace


def _function(lib, name):
    module = _module(lib, _PLAIN_MODULE if name in _PLAIN_NAMES else _MODULE)
    return module["local"]() if name == "local" else module[name]


_FUTURE_NAMES = ["f", "optional_ref", "misspelt", "attribute_of_nothing", "unknown_return",
                 "unannotated_then_misspelt", "local"]
_PLAIN_NAMES = ["in_list", "in_typing_list", "optional_ref_plain", "bad_syntax",
                "misspelt_in_list"]


@pytest.mark.parametrize("name", _FUTURE_NAMES + _PLAIN_NAMES)
def test_infer_schema_of_string_annotations(name):
    def body(t):
        fn = _function(t, name)
        return _refusal_or(lambda: t.library.infer_schema(fn, mutates_args=()))
    same(body, check_warnings=False)  # (torch's opaque-type log line for a ForwardRef)


def _refusal_or(make):
    """What ``make()`` gives, or the message of its ValueError up to torch's list of valid
    types (which names torch.distributed's GroupName: ember's distributed package has none)."""
    try:
        return make()
    except ValueError as e:
        return str(e).split(" The valid types are")[0]


@pytest.mark.parametrize("name", ["f", "in_list", "in_typing_list", "misspelt", "local"])
def test_custom_op_of_string_annotations(name):
    def body(t):
        fn = _function(t, name)
        op = _refusal_or(lambda: t.library.custom_op(f"t39a_strings::{name}",
                                                     mutates_args=())(fn))
        if isinstance(op, str):
            return op
        x = t.ones(2)
        return (op(x, 3) if name == "f" else op([x, x]) if name == "in_list"
                else op([x, x], 3) if name == "in_typing_list" else op(x))
    same(body)
