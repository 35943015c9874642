"""Calls with one argument of the wrong type, run on PyTorch and on ember: the same exception
type, and for torch's argument-parser TypeErrors the same message.

Each row of ``VALID`` is a call torch and ember both take; the sweep makes from it one call
per positional argument and wrong value (a number or None for a Tensor, a string or a float
for an int, a Tensor for a list of ints or a list of Tensors, a number for a string or a
dtype, None for anything) and compares what the two libraries do with it: both run, or both
raise the same type (and message, for a TypeError). Run as a script it prints the number of
cases and each mismatch.

    python tests/test_wrong_arguments.py
"""
from __future__ import annotations

import re
import sys
import warnings

import pytest

import ember

# X: a 3x3 float matrix; V: a float vector of 3; I: an int64 index vector; J: a 3x3 int64
# index matrix; M: a 3x3 boolean mask; B: a batch of 2 3x3 matrices. "f:" rows call
# ``lib.<name>(...)``, "m:" rows ``<first argument>.<name>(...)``.
VALID = {
    # functions of the parser-signature table
    "f:add": "X, X", "f:sub": "X, X", "f:mul": "X, X", "f:div": "X, X", "f:matmul": "X, X",
    "f:mm": "X, X", "f:bmm": "B, B", "f:cat": "(X, X), 0", "f:stack": "(X, X), 0",
    "f:sum": "X, 0", "f:mean": "X, 0", "f:exp": "X", "f:log": "X", "f:sqrt": "X",
    "f:relu": "X", "f:sigmoid": "X", "f:tanh": "X", "f:softmax": "X, 0",
    "f:log_softmax": "X, 0", "f:max": "X, 0", "f:min": "X, 0", "f:argmax": "X, 0",
    "f:argmin": "X, 0", "f:zeros_like": "X", "f:ones_like": "X", "f:where": "M, X, X",
    "f:clamp": "X, X, X", "f:abs": "X", "f:pow": "X, X", "f:transpose": "X, 0, 1",
    "f:reshape": "X, (9,)", "f:squeeze": "X, 0", "f:unsqueeze": "X, 0", "f:flatten": "X, 0",
    "f:gather": "X, 0, J", "f:cumsum": "X, 0", "f:cumprod": "X, 0", "f:cummax": "X, 0",
    "f:cummin": "X, 0", "f:logcumsumexp": "X, 0", "f:sort": "X, 0", "f:argsort": "X, 0",
    "f:topk": "X, 2", "f:dot": "V, V", "f:mv": "X, V", "f:outer": "V, V",
    "f:addmm": "X, X, X", "f:baddbmm": "B, B, B", "f:permute": "X, (1, 0)",
    "f:narrow": "X, 0, 0, 2", "f:index_select": "X, 0, I", "f:masked_fill": "X, M, 1.0",
    "f:split": "X, 1", "f:chunk": "X, 3", "f:clone": "X", "f:neg": "X", "f:sin": "X",
    "f:cos": "X", "f:maximum": "X, X", "f:minimum": "X, X", "f:eq": "X, X", "f:ne": "X, X",
    "f:lt": "X, X", "f:le": "X, X", "f:gt": "X, X", "f:ge": "X, X", "f:std": "X, 0",
    "f:var": "X, 0", "f:prod": "X, 0", "f:all": "X, 0", "f:any": "X, 0", "f:flip": "X, (0,)",
    "f:roll": "X, 1, 0", "f:tril": "X, 0", "f:triu": "X, 0", "f:diag": "X, 0",
    "f:einsum": "'ij->ji', X", "f:lerp": "X, X, 0.5", "f:scatter": "X, 0, J, X",
    "f:scatter_add": "X, 0, J, X", "f:scatter_reduce": "X, 0, J, X, 'sum'",
    "f:index_copy": "X, 0, I, X[:2]", "f:index_fill": "X, 0, I, 1.0",
    "f:masked_scatter": "X, M, X", "f:take_along_dim": "X, J, 0",
    # methods of the table
    "m:copy_": "X, X", "m:cumsum": "X, 0", "m:cumprod": "X, 0", "m:cummax": "X, 0",
    "m:cummin": "X, 0", "m:logcumsumexp": "X, 0", "m:mm": "X, X", "m:bmm": "B, B",
    "m:matmul": "X, X", "m:softmax": "X, 0", "m:log_softmax": "X, 0",
    "m:masked_fill": "X, M, 1.0", "m:masked_fill_": "X, M, 1.0", "m:index_select": "X, 0, I",
    "m:gather": "X, 0, J", "m:clamp": "X, X, X", "m:fill_": "X, 1.0", "m:type_as": "X, X",
    "m:view_as": "X, X", "m:expand_as": "X, X", "m:narrow": "X, 0, 0, 2",
    "m:flatten": "X, 0", "m:sort": "X, 0", "m:topk": "X, 2", "m:lerp": "X, X, 0.5",
    "m:lerp_": "X, X, 0.5", "m:scatter": "X, 0, J, X", "m:scatter_": "X, 0, J, X",
    "m:scatter_add": "X, 0, J, X", "m:scatter_add_": "X, 0, J, X",
    "m:scatter_reduce": "X, 0, J, X, 'sum'", "m:scatter_reduce_": "X, 0, J, X, 'sum'",
    "m:index_copy": "X, 0, I, X[:2]", "m:index_copy_": "X, 0, I, X[:2]",
    "m:index_fill": "X, 0, I, 1.0", "m:index_fill_": "X, 0, I, 1.0",
    "m:masked_scatter": "X, M, X", "m:masked_scatter_": "X, M, X",
    "m:take_along_dim": "X, J, 0",
    # methods and functions outside the table
    "m:index_put_": "X, (I,), V", "m:index_put": "X, (I,), V",
    "f:index_put": "X, (I,), V", "m:index_add_": "X, 0, I, X[:2]",
    "m:index_add": "X, 0, I, X[:2]", "f:index_add": "X, 0, I, X[:2]", "m:pow_": "X, 2.0",
    "m:pow": "X, 2.0", "m:unfold": "X, 0, 2, 1", "m:view": "X, (9,)",
    "m:expand": "V, (3, 3)", "m:diag_embed": "V, 0", "f:diag_embed": "V, 0",
    "m:addcmul_": "X, X, X", "m:addcmul": "X, X, X", "f:addcmul": "X, X, X",
    "m:addcdiv_": "X, X, X", "m:addcdiv": "X, X, X", "f:addcdiv": "X, X, X",
    "m:add": "X, X", "m:add_": "X, X", "m:sub_": "X, X", "m:mul_": "X, X", "m:div_": "X, X",
    "m:clamp_": "X, 0.0, 1.0", "m:reshape": "X, (9,)", "m:permute": "X, (1, 0)",
    "m:transpose": "X, 0, 1", "m:repeat": "X, (2, 1)", "m:flip": "X, (0,)",
    "m:roll": "X, 1, 0", "m:select": "X, 0, 1", "m:squeeze": "X, 0", "m:unsqueeze": "X, 0",
    "m:sum": "X, 0", "m:mean": "X, 0", "m:masked_select": "X, M",
    "f:masked_select": "X, M", "m:put_": "X, I, V[:2]", "m:take": "X, I", "f:take": "X, I",
    "m:tril": "X, 0", "m:triu": "X, 0", "m:diagonal": "X, 0, 0, 1", "m:movedim": "X, 0, 1",
    "m:split": "X, 1", "m:chunk": "X, 3", "m:tile": "X, (2,)", "m:new_zeros": "X, (2,)",
    "m:new_full": "X, (2,), 1.0", "m:to": "X, ember.float64", "m:type": "X, ember.float64",
    "m:argmax": "X, 0", "m:max": "X, 0", "m:prod": "X, 0", "m:std": "X, 0", "m:var": "X, 0",
    "m:norm": "X, 2", "m:renorm": "X, 2, 0, 1.0", "m:dist": "X, X", "m:cross": "X, X, 0",
    "f:cross": "X, X, 0", "f:trace": "X", "m:kthvalue": "X, 1", "f:kthvalue": "X, 1",
    "m:index_reduce_": "X, 0, I, X[:2], 'prod'", "f:bucketize": "X, V",
    "f:searchsorted": "V, X", "f:histc": "X", "f:bincount": "I", "f:repeat_interleave": "X, 2",
    "f:tensordot": "X, X, 1", "f:atan2": "X, X", "f:fmod": "X, 2.0", "f:remainder": "X, 2.0",
    "f:full_like": "X, 1.0", "f:rand_like": "X", "f:split_with_sizes": "X, (1, 2)",
    "f:unbind": "X, 0", "f:movedim": "X, 0, 1", "f:select": "X, 0, 1",
}


class _Other:
    """An object of no type any parameter takes."""


def _wrong_values(value, lib):
    """The wrong-typed stand-ins for one valid argument."""
    if isinstance(value, lib.Tensor):
        return [1.5, "a"]
    if isinstance(value, bool):
        return ["a"]
    if isinstance(value, int):
        return ["a", 1.5]
    if isinstance(value, float):
        return ["a"]
    if isinstance(value, str):
        return [1]
    if isinstance(value, tuple) and all(isinstance(v, int) for v in value):
        return [lib.ones(2), "a"]
    if isinstance(value, tuple):  # (of tensors)
        return [lib.ones(3, 3), 1.5]
    return ["a"]  # (a dtype)


class _Fresh(dict):
    """The names of VALID's rows, each read a new tensor (an in-place op's source is then no
    view of its self)."""

    def __init__(self, lib):
        super().__init__(ember=lib)
        self.makers = {"X": lambda: lib.ones(3, 3), "V": lambda: lib.ones(3),
                       "I": lambda: lib.tensor([0, 2]),
                       "J": lambda: lib.zeros(3, 3, dtype=lib.int64),
                       "M": lambda: lib.eye(3, dtype=lib.bool), "B": lambda: lib.ones(2, 3, 3)}

    def __missing__(self, name):
        return self.makers[name]()


def _arguments(lib, spec):
    return eval(f"({spec},)", {}, _Fresh(lib))  # noqa: S307 - the table's own text


def cases():
    """[(row, position, index of the wrong value)] of every call the sweep makes."""
    out = []
    for row, spec in VALID.items():
        args = _arguments(ember, spec)
        first = 1 if row.startswith("m:") else 0
        for k in range(first, len(args)):
            for j in range(len(_wrong_values(args[k], ember)) + 1):  # (+ None)
                out.append((row, k, j))
    return out


def _wrong(lib, row, k, j):
    args = list(_arguments(lib, VALID[row]))
    values = _wrong_values(args[k], lib) + [None]
    args[k] = values[j]
    return args


_TORCH_DOT = re.compile(r"\btorch\.(?=[A-Za-z_])")


def outcome(lib, row, k, j):
    """("ok", "") when the call runs, else (exception type name, message)."""
    args = _wrong(lib, row, k, j)
    kind, name = row.split(":")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if kind == "f":
                getattr(lib, name)(*args)
            else:
                getattr(args[0], name)(*args[1:])
    except Exception as e:  # noqa: BLE001 - what is raised is what is compared
        return type(e).__name__, _TORCH_DOT.sub("ember.", str(e))
    return "ok", ""


def compare(torch, row, k, j):
    """None when torch and ember agree on the call, else what each did."""
    theirs, ours = outcome(torch, row, k, j), outcome(ember, row, k, j)
    if theirs[0] != ours[0] or (theirs[0] == "TypeError" and theirs[1] != ours[1]):
        return theirs, ours
    return None


# the rows of which some call still raises another error than torch's: torch.split is a
# Python function calling ``tensor.split``, so that a non-tensor raises what its own split
# attribute gives (a float's AttributeError, a string's TypeError), where ember's names the
# argument as torch's parser would
DIFFERING = frozenset((
    'f:split',
))


def _rows_cases():
    by_row = {}
    for row, k, j in cases():
        by_row.setdefault(row, []).append((k, j))
    return by_row


_BY_ROW = _rows_cases()


@pytest.mark.parametrize("row", [
    pytest.param(row, marks=pytest.mark.xfail(strict=True, reason="differs from torch"))
    if row in DIFFERING else row for row in sorted(_BY_ROW)])
def test_wrong_argument_raises_as_torch(row):
    torch = pytest.importorskip("torch")
    for k, j in _BY_ROW[row]:
        differs = compare(torch, row, k, j)
        assert differs is None, (row, _wrong(ember, row, k, j)[k], differs)


def test_every_row_is_a_valid_call():
    torch = pytest.importorskip("torch")
    for row in VALID:
        kind, name = row.split(":")
        for lib in (torch, ember):
            args = _arguments(lib, VALID[row])
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # (index_reduce_'s "is in beta")
                (getattr(lib, name)(*args) if kind == "f"
                 else getattr(args[0], name)(*args[1:]))


def main():
    import torch
    everything = cases()
    mismatched = [(c, compare(torch, *c)) for c in everything]
    mismatched = [(c, d) for c, d in mismatched if d is not None]
    for (row, k, j), (theirs, ours) in mismatched:
        print(f"{row} arg {k} <- {_wrong(ember, row, k, j)[k]!r}\n  torch: {theirs}\n"
              f"  ember: {ours}")
    types = sum(t[0] != o[0] for _, (t, o) in mismatched)
    print(f"{len(everything)} cases, {len(mismatched)} mismatches ({types} of type, "
          f"{len(mismatched) - types} of message)")


if __name__ == "__main__":
    sys.exit(main())
