"""torch.library's registration API: ``Library``/``define``/``impl`` (operators from a schema
string, kernels by dispatch key) and ``register_autograd``/``register_fake``/``register_kernel``
/``register_vmap`` by operator name."""
from __future__ import annotations

import warnings

from .. import ops
from ._custom_op import OPDEFS, CustomOpDef
from ._schema import parse_schema

_KINDS = ("IMPL", "DEF", "FRAGMENT")
_DEF_NAMESPACES: dict = {}  # namespace -> its live "DEF" Library
_KEEP_ALIVE: list = []  # the libraries define() and impl() make when given none
# dispatch keys and device types -> the device type whose kernel they set (None: all devices)
_KERNEL_KEYS = {"cpu": "cpu", "CPU": "cpu", "cuda": "cuda", "CUDA": "cuda", "meta": "meta",
                "Meta": "meta", "CompositeExplicitAutograd": None, "default": None,
                "CompositeImplicitAutograd": None}


class _DefinedOp(CustomOpDef):
    """An operator of ``Library.define``: a schema whose kernels ``impl`` registers."""

    _kernel_records = True
    _composite_implicit = False

    def __init__(self, namespace, name, schema, lib, overload):
        self._lib = lib
        super().__init__(namespace, name, schema, None, overload)

    def __repr__(self):
        return str(self._opoverload)

    def _register_key(self, key, fn):
        if key not in _KERNEL_KEYS:
            raise NotImplementedError(f"ember.library: dispatch key {key!r} is not supported "
                                      f"(supported: {', '.join(sorted(_KERNEL_KEYS))})")
        kind = _KERNEL_KEYS[key]
        if key == "CompositeImplicitAutograd":  # (autograd differentiates its ops: opcheck)
            self._composite_implicit = True
        if kind == "meta":
            self.register_fake(fn)
        else:
            self.register_kernel(kind, fn)


class Library:
    """A set of operators of namespace ``ns``: ``"DEF"`` (the one library that defines the
    namespace), ``"FRAGMENT"`` (defines more of it) or ``"IMPL"`` (kernels only)."""

    def __init__(self, ns: str, kind: str, dispatch_key: str = ""):
        if kind not in _KINDS:
            raise ValueError(f"Unsupported kind: {kind}")
        if kind == "DEF" and ns in _DEF_NAMESPACES:
            raise RuntimeError(
                f"Only a single TORCH_LIBRARY can be used to register the namespace {ns}; please "
                "put all of your definitions in a single TORCH_LIBRARY block.  If you were "
                "trying to specify implementations, consider using TORCH_LIBRARY_IMPL (which can "
                "be duplicated).  If you really intended to define operators for a single "
                "namespace in a distributed way, you can use TORCH_LIBRARY_FRAGMENT to "
                "explicitly indicate this.")
        if kind == "DEF":
            _DEF_NAMESPACES[ns] = self
        self.ns, self.kind, self.dispatch_key = ns, kind, dispatch_key
        self._op_defs: set = set()

    def __repr__(self):
        return f"Library(kind={self.kind}, ns={self.ns}, dispatch_key={self.dispatch_key})>"

    def define(self, schema: str, alias_analysis: str = "", *, tags=()) -> str:
        """Define the operator ``schema`` names (``"foo(Tensor x) -> Tensor"``); returns
        its name."""
        parsed = parse_schema(schema)
        name = parsed.name  # "op" or "op.overload"
        qualname = f"{self.ns}::{name}"
        if qualname in OPDEFS:
            raise RuntimeError(f"Tried to register an operator ({qualname}"
                               f"{str(parsed)[len(name):]}) with the same name and overload "
                               "name multiple times. Each overload's schema should only be "
                               "registered with a single call to def().")
        op_name, _, overload = name.partition(".")
        _DefinedOp(self.ns, op_name, parsed, self, overload or "default")
        self._op_defs.add(qualname)
        return name

    def impl(self, op_name, fn, dispatch_key: str = "", *, with_keyset: bool = False):
        """Register ``fn`` as ``op_name``'s kernel for ``dispatch_key`` ("CPU", "CUDA",
        "Meta", "CompositeExplicitAutograd", "CompositeImplicitAutograd")."""
        if with_keyset:
            raise NotImplementedError("ember.library: kernels with_keyset=True take torch's "
                                      "dispatch key sets, which ember has no use for")
        name = op_name if isinstance(op_name, str) else op_name.overloadpacket.__name__
        qualname = name if "::" in name else f"{self.ns}::{name}"
        opdef = _existing(qualname)
        opdef._register_key(dispatch_key or self.dispatch_key or "CompositeImplicitAutograd",
                            fn)

    def _destroy(self):
        """Remove the operators this library defined."""
        for qualname in self._op_defs:
            OPDEFS.pop(qualname, None)
            namespace, name = qualname.split("::")
            getattr(ops, namespace)._remove(name.split(".")[0])
        self._op_defs.clear()
        if _DEF_NAMESPACES.get(self.ns) is self:
            del _DEF_NAMESPACES[self.ns]


def _existing(qualname):
    opdef = OPDEFS.get(qualname)
    if opdef is None:
        raise RuntimeError(f"operator {qualname} does not exist")
    return opdef


def _opdef(op):
    """The operator ``op`` names: a CustomOpDef, an OpOverload or ``"namespace::name"``."""
    if isinstance(op, CustomOpDef):
        return op
    if isinstance(op, ops.OpOverload):
        op = op._name
    return _existing(op)


def _library_for(lib, qualname):
    if lib is not None:
        return lib
    lib = Library(qualname.split("::")[0], "FRAGMENT")
    _KEEP_ALIVE.append(lib)
    return lib


def define(qualname: str, schema: str, *, lib=None, tags=()) -> None:
    """Define operator ``qualname`` (``"mylib::foo"``) with ``schema`` (``"(Tensor x) ->
    Tensor"``)."""
    namespace, name = qualname.split("::")
    _library_for(lib, qualname).define(name + schema, tags=tags)


def impl(qualname, types, func=None, *, lib=None):
    """Register ``func`` as ``qualname``'s kernel for ``types`` (device types or dispatch
    keys). Usable as a decorator."""
    keys = [types] if isinstance(types, str) else list(types)

    def register(func):
        target = _library_for(lib, qualname if isinstance(qualname, str) else qualname._name)
        for key in keys:
            target.impl(qualname, func, key)
        return func

    return register if func is None else register(func)


def register_autograd(op, backward, /, *, setup_context=None, lib=None) -> None:
    """``op``'s derivative (see CustomOpDef.register_autograd); ``op`` may be a name."""
    if isinstance(op, str) and op not in OPDEFS:  # (looked up in ember.ops, as torch does)
        namespace, name = op.split("::")
        name, _, overload = name.partition(".")
        getattr(getattr(getattr(ops, namespace), name), overload or "default")
    _opdef(op).register_autograd(backward, setup_context=setup_context)


def register_fake(op, func=None, /, *, lib=None, _stacklevel=1):
    """``op``'s fake (meta) kernel. Usable as a decorator."""
    def register(func):
        _opdef(op).register_fake(func)
        return func

    return register if func is None else register(func)


def register_kernel(op, device_types, func=None, /, *, lib=None):
    """``op``'s kernel for ``device_types``. Usable as a decorator."""
    def register(func):
        _opdef(op).register_kernel(device_types, func)
        return func

    return register if func is None else register(func)


def register_vmap(op, func=None, /, *, lib=None):
    """``op``'s vmap rule. Usable as a decorator."""
    def register(func):
        _opdef(op).register_vmap(func)
        return func

    return register if func is None else register(func)


def register_autocast(op, device_type: str, cast_inputs, /, *, lib=None):
    """``op``'s autocast rule: under autocast for ``device_type`` its floating-point inputs
    are cast to ``cast_inputs`` (see CustomOpDef.register_autocast)."""
    if not isinstance(device_type, str):  # (torch's availability check comes first here)
        raise TypeError("_is_autocast_available(): argument 'device_type' (position 1) must be "
                        f"str, not {type(device_type).__name__}")
    _opdef(op).register_autocast(device_type, cast_inputs)


def impl_abstract(qualname, func=None, *, lib=None, _stacklevel=1):
    """The former name of :func:`register_fake`."""
    warnings.warn("`ember.library.impl_abstract` was renamed to `ember.library.register_fake`. "
                  "Please use that instead; we will remove `ember.library.impl_abstract` in a "
                  "future version of PyTorch.", FutureWarning, stacklevel=2)
    return register_fake(qualname, func, lib=lib, _stacklevel=_stacklevel + 1)
