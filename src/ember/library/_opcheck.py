"""``torch.library.opcheck``: the checks of a custom operator's registrations that mean
something in ember, under torch's names and with torch's messages.

- test_schema: arguments the schema does not declare mutable keep their values.
- test_autograd_registration: an operator whose outputs require grad has a derivative (a
  registered autograd formula or a CompositeImplicitAutograd kernel).
- test_faketensor: the fake kernel, run on meta copies of the inputs, gives the outputs'
  shapes, dtypes and strides.
- test_aot_dispatch_static/dynamic: the operator needs a fake kernel for compilation (as in
  torch), and a function calling it gives the same outputs and gradients under ember.compile.
"""
from __future__ import annotations

import warnings

import numpy as np

from .. import ops
from .._tensor import Tensor
from ..autograd.grad_mode import no_grad
from ._custom_op import CHECK_FAKE_LAYOUTS, OPDEFS, CustomOpDef, _tensors_of

DEFAULT_TEST_UTILS = ("test_schema", "test_autograd_registration", "test_faketensor",
                      "test_aot_dispatch_dynamic")
ALL_TEST_UTILS = ("test_schema", "test_autograd_registration", "test_faketensor",
                  "test_aot_dispatch_static", "test_aot_dispatch_dynamic")


class OpCheckError(Exception):
    pass


class MetadataMismatchError(Exception):
    pass


def opcheck(op, args, kwargs=None, *, test_utils=DEFAULT_TEST_UTILS, raise_exception=True,
            rtol=None, atol=None) -> dict:
    """Check ``op``'s registrations on the example ``args``; returns ``{test: "SUCCESS" or the
    exception}`` (``raise_exception``: raise OpCheckError at the first failure)."""
    if (rtol is None) ^ (atol is None):
        raise ValueError("opcheck(op, ...): if you specify one of rtol/atol, you must specify "
                         "both")
    kwargs = {} if kwargs is None else kwargs
    opdef, overload = _resolve(op)
    if test_utils == "ALL":
        test_utils = ALL_TEST_UTILS
    if isinstance(test_utils, str):
        test_utils = (test_utils,)
    if not isinstance(test_utils, (tuple, list)) or not set(test_utils) <= set(ALL_TEST_UTILS):
        raise ValueError(f"opcheck(op, ..., test_utils={test_utils}), expected test_utils to be "
                         f"subset of {ALL_TEST_UTILS} but it was not")
    results = {}
    for name in test_utils:
        check = _CHECKS[name.replace("_static", "_dynamic")]
        try:
            check(opdef, overload, *_copied(args, kwargs), rtol=rtol, atol=atol)
            results[name] = "SUCCESS"
        except Exception as ex:  # noqa: BLE001 - reported as the test's result
            if raise_exception:
                raise OpCheckError(f"opcheck(op, ...): {name} failed with {ex} (scroll up for "
                                   "stack trace)") from ex
            results[name] = ex
    return results


def _resolve(op):
    if isinstance(op, CustomOpDef):
        op = op._opoverload
    if isinstance(op, ops.OpOverloadPacket) and op.overloads() == ["default"]:
        op = op.default
    if not isinstance(op, ops.OpOverload) or op._name not in OPDEFS:
        raise ValueError("opcheck(op, ...): op must be instance of ember.ops.OpOverload, e.g. "
                         f"ember.ops.mylib.foo.default, got {type(op)}")
    return OPDEFS[op._name], op


def _copied(args, kwargs):
    """Fresh copies of the tensors among the arguments (a check may write them)."""
    def copy(v):
        if isinstance(v, Tensor):
            return v.detach().clone().requires_grad_(v.requires_grad)
        if isinstance(v, (list, tuple)):
            return type(v)(copy(x) for x in v)
        return v
    return copy(tuple(args)), {k: copy(v) for k, v in kwargs.items()}


def _schema_check(opdef, overload, args, kwargs, **_):
    from ._schema import bind
    values, keyword = bind(opdef._op_schema, args, kwargs)
    named = list(zip(opdef._op_schema.arguments, values + list(keyword.values())))
    before = [(arg, [(t, t.detach().numpy().copy()) for t in _tensors_of(v)])
              for arg, v in named if not arg.is_write]
    overload(*args, **kwargs)
    for arg, snapshots in before:
        for t, old in snapshots:
            if not np.array_equal(t.detach().numpy(), old, equal_nan=True):
                raise RuntimeError(f"Argument {arg.name} is not defined as mutable but was "
                                   "mutated")


def _autograd_registration_check(opdef, overload, args, kwargs, **_):
    inputs = _tensors_of(list(args) + list(kwargs.values()))
    if not any(t.requires_grad for t in inputs):
        return
    if not opdef._kernel_records or opdef._backward_fn is not None \
            or opdef._composite_implicit:
        return
    ids = {id(t) for t in inputs}
    outs = _tensors_of(overload(*args, **kwargs))
    if any(t.requires_grad and id(t) not in ids for t in outs):
        raise AssertionError(
            f"{opdef._qualname}: at least one output of this operator has requires_grad=True but "
            "the operator does not have an autograd kernel defined at an autograd key (e.g. "
            "DispatchKey::Autograd). This could mean that you have incorrectly registered an "
            "autograd kernel to a non-Autograd DispatchKey, which may lead to silently incorrect "
            "results. If your operator consists of regular PyTorch operations, consider not "
            "using an operator at all or registering your operator as "
            "CompositeImplicitAutograd. If you have an autograd.Function registered to a "
            "backend (CPU/CUDA/XPU) key, the correct location for it is the Autograd key.")


def _fake_check(opdef, overload, args, kwargs, **_):
    with no_grad():
        real = _tensors_of(overload(*args, **kwargs))
        fake = _tensors_of(overload(*_on_meta(args), **_on_meta(kwargs)))
    for r, f in zip(real, fake):
        detail = _mismatch(r, f)
        if detail:
            raise MetadataMismatchError(f"When comparing the output of {overload} on "
                                        "FakeTensor and concrete Tensors, found mismatched "
                                        f"tensor metadata: {detail}")


def _on_meta(v):
    if isinstance(v, Tensor):
        return v.detach().to("meta")
    if isinstance(v, (list, tuple)):
        return type(v)(_on_meta(x) for x in v)
    if isinstance(v, dict):
        return {k: _on_meta(x) for k, x in v.items()}
    return v


def _mismatch(real, fake):
    if real.shape != fake.shape:
        return f"Shapes {real.shape} and {fake.shape} are not equal!"
    if real.dtype != fake.dtype:
        return f"Dtypes {real.dtype} and {fake.dtype} are not equal!"
    for k, (a, b) in enumerate(zip(real.stride(), fake.stride())):
        if a != b and real.shape[k] > 1:
            return (f"Stride mismatch! Strides are {real.stride()} and {fake.stride()} "
                    f"(mismatched at {k})!")
    return None


def _compile_check(opdef, overload, args, kwargs, *, rtol=None, atol=None):
    from .. import compile as compile_
    from ..autograd import grad as autograd_grad
    # torch compiles with fake tensors: a missing fake kernel fails (a wrong one does not)
    fake_args, fake_kwargs = _copied(args, kwargs)
    with no_grad():
        overload(*_on_meta(fake_args), **_on_meta(fake_kwargs))
    eager = _outputs_and_grads(overload, *_copied(args, kwargs), autograd_grad)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (a graph break's notice: the check is the values)
        # (as torch's aot_eager: the fake kernel's layouts are not checked against the kernel's)
        checks, CHECK_FAKE_LAYOUTS[0] = CHECK_FAKE_LAYOUTS[0], False
        try:
            compiled = compile_(lambda *a, **k: overload(*a, **k))
            again = _outputs_and_grads(compiled, *_copied(args, kwargs), autograd_grad)
        finally:
            CHECK_FAKE_LAYOUTS[0] = checks
    for e, c in zip(eager, again):
        np.testing.assert_allclose(c, e, rtol=rtol or 1e-5, atol=atol or 1e-8, equal_nan=True)


def _outputs_and_grads(fn, args, kwargs, autograd_grad):
    inputs = [t for t in _tensors_of(list(args) + list(kwargs.values())) if t.requires_grad]
    outs = _tensors_of(fn(*args, **kwargs))
    arrays = [o.detach().numpy() for o in outs]
    differentiable = [o for o in outs if o.requires_grad]
    if inputs and differentiable:
        total = sum(o.sum() for o in differentiable)
        grads = autograd_grad(total, inputs, allow_unused=True)
        arrays += [g.numpy() for g in grads if g is not None]
    return arrays


_CHECKS = {"test_schema": _schema_check,
           "test_autograd_registration": _autograd_registration_check,
           "test_faketensor": _fake_check, "test_aot_dispatch_dynamic": _compile_check}
