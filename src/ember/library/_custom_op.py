"""``torch.library.custom_op``: a Python function turned into an operator of ``ember.ops``.

Calling the operator takes the path torch's dispatcher takes, in its order: the arguments are
bound to the schema; under vmap the operator's vmap rule (or a loop over the examples) runs;
with grad mode on and an input that requires grad, the call goes through the operator's
generated ``autograd.Function`` (``_autograd.py``); then the mutated arguments' versions are
bumped and the kernel registered for the inputs' device runs (the fake kernel on the meta
device), its outputs checked for aliasing as torch checks them.
"""
from __future__ import annotations

import contextlib
import inspect
import logging

from .. import _dtype as D
from .. import ops
from .._backend import get_xp
from .._state import recording, set_hook
from .._tensor import Tensor
from ..autograd.grad_mode import is_grad_enabled
from ..autograd.saved_tensors import increment_version
from ._autograd import make_autograd_function
from ._schema import _NO_DEFAULT, _infer, bind, parse_schema
from ._vmap import batched_level, call_under_vmap

log = logging.getLogger(__name__)
OPDEFS: dict = {}  # "namespace::name" -> its CustomOpDef

_ALIASING = ("The output of this custom operator (1) must not also be an input to this custom "
             "operator and (2) may not alias any inputs to this custom operator or other "
             "returns. The most common way to trigger this error is if we have y = custom_op(x) "
             "and y and x are the same Tensor. Please instead return a clone of the offending "
             "output tensor(s) (e.g. return x.clone()) or refactor the custom operator to not "
             "return y.")

# torch's generated Function has no setup_context staticmethod, which its functorch
# transforms require
_TRANSFORMS = ("In order to use an autograd.Function with functorch transforms (vmap, grad, "
               "jvp, jacrev, ...), it must override the setup_context staticmethod. For more "
               "details, please see https://pytorch.org/docs/main/notes/extending.func.html")


def in_reverse_transform():
    """Whether a ``grad``/``vjp``/``jacrev`` of ember.func is running."""
    from ..func._outer_graph import _running
    return bool(_running.calls)


def custom_op(name: str, fn=None, /, *, mutates_args, device_types=None, schema=None,
              tags=None):
    """Wraps a function into a custom operator (usable as a decorator)."""
    def inner(fn):
        if schema is None:
            parsed = _infer(fn, mutates_args)
        else:
            parsed = parse_schema(schema)
            _check_schema_mutations(parsed, mutates_args, schema)
        namespace, opname = name.split("::")
        result = CustomOpDef(namespace, opname, parsed, fn)
        result.register_kernel(device_types)(fn)
        return result

    return inner if fn is None else inner(fn)


def _check_schema_mutations(parsed, mutates_args, schema):
    expected = {a.name for a in parsed.mutated()}
    if expected != set(mutates_args):
        raise ValueError(f"Attempted to create a custom op with `mutates_args={mutates_args}` "
                         f"and `schema={schema}. The schema suggests that the op mutates "
                         f"{expected}which is different from what was provided to us in "
                         "`mutates_args`. Please make these consistent.")


class CustomOpDef:
    """A custom operator made by :func:`custom_op`: call it, or register its autograd
    formula, fake (meta) kernel, device kernels and vmap rule."""

    # An operator of Library.define without a derivative runs its kernel with autograd on, so
    # the kernel's own ops are recorded (torch's deprecated fallback); a custom_op's goes
    # through its generated Function, whose backward refuses without register_autograd.
    _kernel_records = False

    def __init__(self, namespace: str, name: str, schema, fn, overload: str = "default"):
        self._namespace, self._name, self._overload = namespace, name, overload
        self._schema = str(schema)  # (unnamed, as torch keeps it: "(Tensor x) -> Tensor")
        self._init_fn = fn
        self._backend_fns: dict = {}
        self._abstract_fn = None
        self._setup_context_fn = None
        self._backward_fn = None
        self._vmap_fn = None
        self._autocast_dtype: dict = {}  # device type -> the dtype autocast casts inputs to
        self._device_arg_index = None  # a factory's device argument, once it picks kernels
        self._disabled_kernel: set = set()
        _check_list_defaults(name, schema)
        if any(a.kwarg_only and a.is_tensor_like for a in schema.arguments):
            raise NotImplementedError("custom_op with kwarg-only Tensor args. Please make your "
                                      f"tensors not kwarg-only. Got: {name}{schema}")
        schema.name = self._qualname if overload == "default" else f"{self._qualname}.{overload}"
        self._op_schema = schema
        self._autograd_function = make_autograd_function(self)
        self._opoverload = define_overload(schema, self._dispatch, overload)
        OPDEFS[schema.name] = self  # (the overload's name(): "ns::op" or "ns::op.overload")

    @property
    def _qualname(self) -> str:
        return f"{self._namespace}::{self._name}"

    def __repr__(self):
        return f"<CustomOpDef({self._qualname})>"

    def __call__(self, *args, **kwargs):
        return self._opoverload(*args, **kwargs)

    # -- registrations -------------------------------------------------------------------------
    def register_kernel(self, device_types, fn=None, /):
        """Register ``fn`` as the operator's kernel for ``device_types`` ("cpu", "cuda"...;
        None: every device). Usable as a decorator."""
        def inner(fn):
            kinds = [device_types] if device_types is None or isinstance(device_types, str) \
                else list(device_types)
            for kind in kinds:
                self._backend_fns[kind] = fn
            return fn

        if device_types is not None and not any(
                a.is_tensor_like for a in self._op_schema.arguments):
            # a factory: its device argument picks the kernel (torch's BackendSelect)
            index = next((k for k, a in enumerate(self._op_schema.arguments)
                          if a.type == "Device"), None)
            if index is None:
                raise ValueError("Functions without tensor inputs are required to have a "
                                 "`device: ember.device` argument")
            self._device_arg_index = index
        return inner if fn is None else inner(fn)

    def register_fake(self, fn, /):
        """Register the kernel that runs on meta tensors: it says what the outputs' shapes,
        dtypes and devices are without computing their values."""
        self._abstract_fn = fn
        return fn

    def register_autograd(self, backward, /, *, setup_context=None):
        """Register ``backward(ctx, *grads)`` and ``setup_context(ctx, inputs, output)`` (with
        ``keyword_only_inputs`` before ``output`` when the operator has keyword-only
        arguments): the operator's derivative, as a custom ``autograd.Function``'s."""
        if self._op_schema.is_mutable:
            raise RuntimeError(f"Cannot register autograd formula for non-functional operator "
                               f"{self} with schema {self._op_schema}. Please create a "
                               "functional operator and register an autograd formula for that.")
        self._backward_fn = backward
        self._setup_context_fn = setup_context

    def register_vmap(self, func=None):
        """Register ``func(info, in_dims, *args, **kwargs) -> (output, out_dims)``: how the
        operator runs on a batch under vmap. Usable as a decorator."""
        def register(func):
            self._vmap_fn = func
            return func

        return register if func is None else register(func)

    def register_autocast(self, device_type: str, cast_inputs):
        """Under autocast for ``device_type``, cast the floating-point tensor inputs on that
        device (float64 ones excepted) to ``cast_inputs`` and run the operator with autocast
        off, as torch's autocast rule for the operator does."""
        from ..amp.autocast_mode import is_autocast_available
        if not isinstance(device_type, str):
            raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
        if not is_autocast_available(device_type):
            raise ValueError(f"Device type '{device_type}' does not support autocast.")
        self._autocast_dtype.setdefault(device_type, cast_inputs)  # (the first one stays)

    def _autocast_call(self, values, keyword):
        """The call run by the autocast rule of an autocast-enabled device, or None."""
        from ..amp.autocast_mode import autocast, is_autocast_enabled
        for device_type, dtype in self._autocast_dtype.items():
            if not is_autocast_enabled(device_type):
                continue
            if keyword:
                raise AssertionError(f"Custom ops do not support kwargs yet, got "
                                     f"{list(keyword)}")
            with autocast(device_type, enabled=False):
                return (self._dispatch(*_autocast_cast(values, device_type, dtype)),)
        return None

    @contextlib.contextmanager
    def set_kernel_enabled(self, device_type: str, enabled: bool = True):
        """Disable (or enable again) the kernel registered for ``device_type`` within the
        block: the function the operator was made from runs in its place."""
        action = "enable" if enabled else "disable"
        originally_disabled = device_type in self._disabled_kernel
        if device_type not in self._backend_fns:
            log.warning("Attempted to %s kernel for %s but no kernel was registered for this "
                        "device type.", action, device_type)
        if not enabled:
            if originally_disabled:
                log.warning("Attempted to disable kernel for %s but it was already disabled.",
                            device_type)
            self._disabled_kernel.add(device_type)
        else:
            if not originally_disabled:
                log.warning("Attempted to enable kernel for  %s but it was already enabled.",
                            device_type)
            self._disabled_kernel.discard(device_type)
        try:
            yield
        finally:
            if originally_disabled:
                self._disabled_kernel.add(device_type)
            else:
                self._disabled_kernel.discard(device_type)

    # -- calling -------------------------------------------------------------------------------
    def _dispatch(self, *args, **kwargs):
        values, keyword = bind(self._op_schema, args, kwargs)
        if self._autocast_dtype:
            ran = self._autocast_call(values, keyword)
            if ran is not None:
                return ran[0]
        level = batched_level(values)
        if level:
            return call_under_vmap(self, values, keyword, level)
        rec = recording[0]
        if self._backward_fn is None and self._kernel_records:
            return self._run(values, keyword)  # (no derivative: autograd sees the kernel's ops)
        if is_grad_enabled() and _any_requires_grad(values):
            if in_reverse_transform():
                raise RuntimeError(_TRANSFORMS)
            if rec is not None:  # (a replay could not rebuild the Function's node)
                rec.graph_break(f"it calls the custom operator {self._qualname} on tensors "
                                "that require grad")
            return self._autograd_function.apply_op(values, keyword)
        if rec is not None:  # recorded whole, as one call that runs again at every replay
            # (the values passed one by one: the recorder sees the tensors it writes, a list's
            # too)
            return rec.replayed_call(self._checked_run(), tuple(values), keyword)
        # (grad mode stays as it is in the kernel, as in torch's kernels below autograd)
        return self._run(values, keyword)

    def _run(self, values, keyword):
        """Below autograd: bump the mutated arguments' versions, then run the kernel."""
        for arg, value in zip(self._op_schema.arguments, values):
            if arg.is_write:
                increment_version(_tensors_of(value))
        for name, value in keyword.items():
            if any(a.name == name and a.is_write for a in self._op_schema.arguments):
                increment_version(_tensors_of(value))
        kind = _device_type(values, keyword)
        if self._device_arg_index is not None:
            kind = self._selected_device(values)
        args, kwargs = _without_defaults(self._op_schema, values, keyword)
        if kind == "meta":
            return self._run_fake(args, kwargs)
        kernel = self._kernel_for(kind)
        result = kernel(*args, **kwargs)
        self._check_result(result, values, keyword)
        return result

    def _run_values(self, *values, **keyword):
        return self._run_unrecorded(list(values), keyword)

    def _checked_run(self):
        """_run_values for a compiled function's call of the op (at the recording and at
        every replay), the sizes and strides of the tensors it returns checked against those
        its fake kernel gives for the recorded call's arguments, as torch.compile's generated
        code checks a custom op's outputs (inductor's assert_size_stride): a fake kernel that
        disagrees with the real one raises its AssertionError. Without a fake kernel, or with
        one that fails on meta tensors, nothing is checked."""
        if self._abstract_fn is None or not CHECK_FAKE_LAYOUTS[0]:
            return self._run_values
        run_values = self._run_values
        name = f"ember.ops.{self._namespace}.{self._name}.{self._overload}"
        expected = []  # (the fake's layouts, made at the first call: the recording's, which
        # the recorder makes with its interceptor off)

        def _run_values(*values, **keyword):
            if not expected:
                expected.append(self._fake_layouts(values, keyword))
            result = run_values(*values, **keyword)
            if expected[0] is not None:
                _check_layouts(result, expected[0], name)
            return result
        return _run_values

    def _fake_layouts(self, values, keyword):
        """``(sizes, strides)`` of each tensor the fake kernel returns for meta tensors laid
        out as the call's (None for what is not a tensor), or None."""
        rec = recording[0]
        set_hook(recording, None)  # (the meta tensors and the fake's ops are not the function's)
        try:
            args, kwargs = _without_defaults(self._op_schema, [_as_meta(v) for v in values],
                                             {k: _as_meta(v) for k, v in keyword.items()})
            fake = self._abstract_fn(*args, **kwargs)
        except Exception:  # noqa: BLE001 - a fake kernel meta tensors fail: no check
            return None
        finally:
            set_hook(recording, rec)
        fakes = fake if isinstance(fake, (tuple, list)) else (fake,)
        return [(tuple(f.shape), f.stride()) if isinstance(f, Tensor) else None for f in fakes]

    def _run_unrecorded(self, values, keyword):
        """``_run`` with the recorder out of sight: a replay runs the whole kernel again, so
        what it does inside (reading values into NumPy...) is no graph break."""
        rec = recording[0]
        set_hook(recording, None)
        try:
            return self._run(values, keyword)
        finally:
            set_hook(recording, rec)

    def _selected_device(self, values):
        kind = values[self._device_arg_index].type
        if kind not in self._backend_fns:
            raise RuntimeError(f"{self._name} does not have a kernel registered for {kind}. "
                               "Please use register_kernel to do so.")
        return kind

    def _kernel_for(self, kind):
        for key in (kind, None):
            if key in self._backend_fns:
                return self._init_fn if key in self._disabled_kernel \
                    else self._backend_fns[key]
        raise NotImplementedError(
            f"Could not run '{self._qualname}' with arguments from the '{kind.upper()}' "
            "backend. This could be because the operator doesn't exist for this backend, or was "
            "omitted during the selective/custom build process (if using custom build).")

    def _run_fake(self, values, keyword):
        if self._abstract_fn is not None:
            return self._abstract_fn(*values, **keyword)
        if self._op_schema.is_mutable and not self._op_schema.returns:
            return None
        if self._init_fn is None:  # (an operator of Library.define)
            return self._kernel_for("meta")(*values, **keyword)
        raise RuntimeError(f"There was no fake impl registered for {self}. This is necessary "
                           "for ember.compile/export/fx tracing to work. Please use "
                           f"`{self._init_fn.__name__}.register_fake` to add an fake impl.")

    def _check_result(self, result, values, keyword):
        schema = self._op_schema
        if not schema.returns:
            if result is not None:
                raise RuntimeError(f"Expected PythonKernelHolder for {self._qualname} to return "
                                   "None but it returned something else instead.")
            return
        if not schema.returns_tuple:
            _check_return(schema.returns[0], result)
        elif not isinstance(result, (tuple, list)):
            raise TypeError(f"Object of type '{type(result).__name__}' is not an instance of "
                            "'sequence'")
        else:
            for ret, r in zip(schema.returns, result):
                _check_return(ret, r)
        if not schema.is_view and _aliases(_tensors_of(result),
                                           _tensors_of(values) + _tensors_of(keyword)):
            module = inspect.getmodule(CustomOpDef)
            raise RuntimeError(f"{self._name} (with implementation in {module}): {_ALIASING}")


def _check_list_defaults(name, schema):
    """A list argument that is not Optional cannot default to None: torch's schema parser
    refuses it, pointing at the None."""
    for arg in schema.arguments:
        if arg.default is None and arg.type.endswith("]"):
            text = f"{name}{schema}"
            column = text.index(f" {arg.name}=None") + len(arg.name) + 2
            raise RuntimeError(f"expected [ but found 'None' here:\n{text}\n"
                               f"{' ' * column}~~~~ <--- HERE\n")


def define_overload(schema, fn, overload="default"):
    """Put ``schema``'s operator in ``ember.ops`` (replacing one of the same name) with ``fn``
    as its overload ``overload``."""
    namespace, name = schema.op_name.split("::")
    packet = getattr(ops, namespace)._packet(name)
    return packet._add_overload(overload, schema, fn)


def _without_defaults(schema, values, keyword):
    """The arguments as torch's dispatcher hands them to a Python kernel: trailing positional
    ones and keyword-only ones that equal their defaults left out."""
    positional = [a for a in schema.arguments if not a.kwarg_only]
    n = len(values)
    while n and _is_default(positional[n - 1], values[n - 1]):
        n -= 1
    kwargs = {k: v for k, v in keyword.items()
              if not any(a.name == k and _is_default(a, v) for a in schema.arguments)}
    return values[:n], kwargs


def _is_default(arg, value):
    default = arg.default
    if default is _NO_DEFAULT or isinstance(value, Tensor):
        return False
    return value is default or (type(value) is type(default) and value == default)


def _autocast_cast(value, device_type, dtype):
    if isinstance(value, Tensor):
        eligible = (value.is_floating_point() and value.device.type == device_type
                    and value.dtype is not D.float64)
        return value.to(dtype) if eligible else value
    if isinstance(value, (list, tuple)):
        return type(value)(_autocast_cast(v, device_type, dtype) for v in value)
    return value


def _check_return(ret, value):
    if ret.type == "Tensor" and not isinstance(value, Tensor):
        raise RuntimeError(f"Unable to cast {value!r} to Tensor")


def _as_meta(value):
    """``value`` with each tensor replaced by a meta tensor of its sizes, strides and dtype
    (as torch.compile's fake tensors: ``to("meta")`` would make a strided view contiguous)."""
    if isinstance(value, Tensor):
        from .. import empty_strided
        return empty_strided(tuple(value.shape), value.stride(), dtype=value.dtype,
                             device="meta")
    if isinstance(value, (list, tuple)):
        return type(value)(_as_meta(v) for v in value)
    return value


# whether a compiled function's calls check the fake kernel's layouts (torch.compile's default
# backend does; opcheck's test_aot_dispatch_* compile as torch's aot_eager, which does not)
CHECK_FAKE_LAYOUTS = [True]
_FAKE_ADVICE = ("This error most often comes from a incorrect fake (aka meta) kernel for a "
                "custom op.\nUse ember.library.opcheck to test your custom op.\nSee "
                "https://pytorch.org/docs/stable/library.html#ember.library.opcheck")


def _check_layouts(result, expected, name):
    """inductor's assert_size_stride for each tensor of ``result`` against its ``(sizes,
    strides)`` in ``expected``: the number of dimensions, then (for a tensor with elements)
    each dimension's size, and its stride where the size is above 1."""
    results = result if isinstance(result, (tuple, list)) else (result,)
    for r, e in zip(results, expected):
        if e is None or not isinstance(r, Tensor):
            continue
        sizes, strides = tuple(r.shape), r.stride()
        if len(sizes) != len(e[0]):
            raise AssertionError(f"wrong number of dimensions{len(sizes)} for op: {name}")
        if 0 in sizes:
            continue
        wrong = [f"expected size {n}=={m}, stride {s}=={z} at dim={i}"
                 for i, (n, m, s, z) in enumerate(zip(sizes, e[0], strides, e[1]))
                 if n != m or (n > 1 and s != z)]
        if wrong:
            raise AssertionError("; ".join(wrong) + f"\nError in op: {name}\n" + _FAKE_ADVICE)


def _tensors_of(value):
    """The tensors in a value, a list/tuple of values or a dict of them."""
    if isinstance(value, Tensor):
        return [value]
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in _tensors_of(v)]
    return []


def _any_requires_grad(values):
    return any(t.requires_grad for t in _tensors_of(values))


def _device_type(values, keyword):
    """The device type whose kernel runs: the meta device's if any tensor is on it, else the
    first tensor's, else the operator's device argument's."""
    tensors = _tensors_of(values) + _tensors_of(keyword)
    kinds = [t.device.type for t in tensors]
    if "meta" in kinds:
        return "meta"
    if kinds:
        return kinds[0]
    from .._tensor import device
    for v in list(values) + list(keyword.values()):
        if isinstance(v, device):
            return v.type
    return "cpu"


def _aliases(outputs, inputs):
    """Whether an output is an input, or shares memory with an input or another output."""
    for i, out in enumerate(outputs):
        for other in inputs + outputs[:i]:
            if out is other or _share_memory(out, other):
                return True
    return False


def _share_memory(a, b):
    x, y = a._data, b._data
    return type(x) is type(y) and bool(get_xp(x).may_share_memory(x, y))
