"""Which of torch's keyword argument names ember's functions and Tensor methods refuse.

torch's names come from its Python signature where the function is written in Python, and
otherwise from the ATen schemas of the operator (``torch._C._jit_get_schemas_for_operator``):
every overload's argument names, ``self`` read as ``input`` for functions, written outputs as
``out``. Overloads only TorchScript has (on Python numbers and lists, no tensor, no keyword-only
argument) and named-tensor overloads (Dimname) are left out.

ember's names: an op declared in the registry takes its kernel's parameter names and their
aliases (``OpDef.index``); a Python function its signature's names, following ``__wrapped__``
and ``__ember_forwards__`` (the dotted name of what a forwarding ``*args, **kwargs`` function
calls). A function left with ``**kwargs`` whose target is unknown is reported as such.

Run as a script (``python tests/signature_audit.py``) it prints every mismatch.
"""
from __future__ import annotations

import importlib
import inspect
import types

import ember
from ember._ops.registry import OpDef

NAMESPACES = ("", "nn.functional", "linalg", "special", "fft")
_ATEN = {"": "aten::{}", "nn.functional": "aten::{}", "linalg": "aten::linalg_{}",
         "special": "aten::special_{}", "fft": "aten::fft_{}"}
_BUILTIN = (types.BuiltinFunctionType, types.MethodDescriptorType,
            types.WrapperDescriptorType, types.ClassMethodDescriptorType)
UNKNOWN = "**kwargs"


def _module(root, namespace):
    return importlib.import_module(f"{root.__name__}.{namespace}") if namespace else root


def _op_of(fn):
    """The registry op ``fn`` is or calls as ``fn(*args, **kwargs)`` (its generated methods)."""
    if isinstance(fn, OpDef):
        return fn
    code = getattr(fn, "__code__", None)
    if code is None or code.co_argcount or code.co_kwonlyargcount:
        return None  # a function with named parameters: those are its names
    for cell in getattr(fn, "__closure__", None) or ():
        try:
            value = cell.cell_contents
        except ValueError:
            continue
        if isinstance(value, OpDef):
            return value
    return None


def _resolve(dotted):
    path, _, attr = dotted.rpartition(".")
    owner = importlib.import_module(path) if path != "ember.Tensor" else ember.Tensor
    return getattr(owner, attr)


def ember_names(fn, depth=0):
    """The keyword names ``fn`` takes (UNKNOWN among them when a ``**kwargs`` is unresolved)."""
    names = {"out"} if getattr(fn, "__wrapped_out__", None) is not None else set()
    op = _op_of(fn)
    if op is not None:
        return names | set(op.index) | ({"out"} if op.out_name is not None else set())
    target = getattr(fn, "__ember_forwards__", None)
    if target is not None and depth < 8:
        return names | ember_names(_resolve(target), depth + 1) | {"input"}
    wrapped = getattr(fn, "__wrapped__", None)
    if wrapped is not None and depth < 8:
        names |= ember_names(wrapped, depth + 1)
    try:
        params = inspect.signature(fn, follow_wrapped=False).parameters.values()
    except (TypeError, ValueError):
        return names | {UNKNOWN}
    for p in params:
        if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY):
            names.add(p.name)
        elif p.kind == p.VAR_KEYWORD and wrapped is None:
            names.add(UNKNOWN)
    return names


def _stub_names(torch):
    """``{(module name, function name): keyword names}`` from torch's binding stubs (.pyi):
    the Python signatures its argument parser accepts, every overload."""
    import ast
    import os
    found = {}
    stubs = {"torch._C._VariableFunctions": "_VariableFunctions.pyi",
             "torch._C._nn": "_nn.pyi", "torch._C.TensorBase": "__init__.pyi"}
    folder = os.path.join(os.path.dirname(torch._C.__file__ if hasattr(torch._C, "__file__")
                                          else torch.__file__), "_C")
    if not os.path.isdir(folder):
        folder = os.path.join(os.path.dirname(torch.__file__), "_C")
    for owner, stub in stubs.items():
        path = os.path.join(folder, stub)
        if not os.path.exists(path):
            continue
        with open(path, encoding="utf-8") as stub_file:
            tree = ast.parse(stub_file.read())
        body = tree.body
        if owner.endswith("TensorBase"):
            body = next(n.body for n in tree.body
                        if isinstance(n, ast.ClassDef) and n.name == "TensorBase")
        for node in body:
            if isinstance(node, ast.FunctionDef):
                a = node.args
                names = {x.arg for x in a.args + a.kwonlyargs} - {"self"}
                found.setdefault((owner, node.name), set()).update(names)
    return found


_STUBS = []


def torch_names(torch, fn, aten, method):
    """The keyword names torch's ``fn`` takes (over all its overloads)."""
    if not _STUBS:
        _STUBS.append(_stub_names(torch))
    owner = "torch._C.TensorBase" if method else getattr(fn, "__module__", None)
    if owner in (None, "torch"):
        owner = "torch._C._VariableFunctions"
    stub = _STUBS[0].get((owner, getattr(fn, "__name__", "")))
    if isinstance(fn, _BUILTIN) and stub is not None:
        return set(stub)
    if not isinstance(fn, _BUILTIN):
        try:
            params = inspect.signature(fn).parameters.values()
        except (TypeError, ValueError):
            params = None
        if params is not None:
            names = {p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD,
                                                          p.KEYWORD_ONLY)}
            return names - {"self"} if method else names
    names = set()
    for schema in torch._C._jit_get_schemas_for_operator(aten):
        args = schema.arguments
        if any("Dimname" in str(a.type) for a in args):
            continue
        if not any(str(a.type).startswith("Tensor") or a.kwarg_only for a in args):
            continue  # TorchScript's overloads on numbers and lists
        if args and args[0].name == "self" and str(args[0].type).endswith("[]"):
            continue  # TorchScript's list methods (sort(Tensor[] self, bool reverse))
        if method and (not args or args[0].name != "self"):
            continue
        for a in args:
            if a.kwarg_only and a.alias_info is not None and a.alias_info.is_write:
                if not method:
                    names.add("out")
            elif a.name == "self":
                if not method:
                    names.add("input")
            else:
                names.add(a.name)
    return names


def _callable(x):
    return callable(x) and not isinstance(x, (type, types.ModuleType))


def pairs(torch):
    """``(public name, torch's callable, ember's callable, aten name, is_method)``."""
    for ns in NAMESPACES:
        tm, em = _module(torch, ns), _module(ember, ns)
        prefix = f"{ns}." if ns else ""
        for name in sorted(dir(em)):
            if name.startswith("_") or not hasattr(tm, name):
                continue
            e, t = getattr(em, name), getattr(tm, name)
            if _callable(e) and _callable(t):
                yield prefix + name, t, e, _ATEN[ns].format(name), False
    for name in sorted(dir(ember.Tensor)):
        if name.startswith("_") or not hasattr(torch.Tensor, name):
            continue
        e, t = inspect.getattr_static(ember.Tensor, name), getattr(torch.Tensor, name)
        if isinstance(e, (property, staticmethod, classmethod)) or not _callable(t):
            continue
        yield "Tensor." + name, t, getattr(ember.Tensor, name), "aten::" + name, True


# Names torch's stubs or schemas list that its bindings refuse (checked by calling torch 2.13).
NOT_TAKEN_BY_TORCH = {"Tensor.requires_grad_": {"mode"}, "set_num_threads": {"num"},
                      "set_num_interop_threads": {"num"}, "argsort": {"out"},
                      "Tensor.true_divide": {"out"}, "linalg.matrix_exp": {"out"},
                      "full": {"names"}}


def mismatches(torch):
    """``{public name: sorted torch keyword names ember does not take}``."""
    found = {}
    for name, t, e, aten, method in pairs(torch):
        accepted = ember_names(e)
        if UNKNOWN in accepted:
            found[name] = [UNKNOWN]
            continue
        if method:
            accepted.discard("self")
        missing = sorted(torch_names(torch, t, aten, method) - accepted
                         - NOT_TAKEN_BY_TORCH.get(name, set()))
        if missing:
            found[name] = missing
    return found


if __name__ == "__main__":
    import torch as _torch
    result = mismatches(_torch)
    for key, value in sorted(result.items()):
        print(key, value)
    print(len(result), "mismatches")
