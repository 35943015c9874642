"""``torch.ops``: operators by namespace, as ``ember.ops.<namespace>.<name>.<overload>``.

A namespace appears on first access (``ember.ops.mylib``), empty until something registers an
operator in it: ``ember.library.custom_op`` and ``Library.define`` do. Each operator is an
:class:`OpOverloadPacket` whose overloads (``.default``, ...) are :class:`OpOverload` objects,
the same object on every access, so they compare by identity as torch's do.
"""
from __future__ import annotations

import types


class OpOverload:
    """One overload of an operator (``ember.ops.mylib.mysin.default``); calling it runs it."""

    def __init__(self, packet: OpOverloadPacket, overload_name: str, schema, fn):
        self.overloadpacket = packet
        self._overloadname = overload_name
        self._schema = schema
        self._op = fn
        self._name = packet._qualified_op_name + ("" if overload_name == "default"
                                                  else f".{overload_name}")
        self.namespace, self._opname = packet._namespace, packet.__name__
        self.__name__ = f"{self._opname}.{overload_name}"

    def name(self) -> str:
        return self._name

    def __deepcopy__(self, memo):  # (an operator is one object, as torch's: policies compare
        return self               # overloads by identity)

    def __call__(self, *args, **kwargs):
        return self._op(*args, **kwargs)

    def __repr__(self):
        return (f"<OpOverload(op='{self.namespace}.{self._opname}', "
                f"overload='{self._overloadname}')>")

    def __str__(self):
        return f"{self.namespace}.{self._opname}.{self._overloadname}"


class OpOverloadPacket:
    """An operator with all its overloads (``ember.ops.mylib.mysin``); calling it calls the
    ``default`` overload."""

    def __init__(self, namespace: str, name: str):
        self._namespace = namespace
        self.__name__ = name
        self._qualified_op_name = f"{namespace}::{name}"
        self._overloads: dict[str, OpOverload] = {}

    def _add_overload(self, overload_name: str, schema, fn) -> OpOverload:
        overload = OpOverload(self, overload_name, schema, fn)
        self._overloads[overload_name] = overload
        return overload

    def overloads(self) -> list[str]:
        return list(self._overloads)

    def __deepcopy__(self, memo):
        return self

    def __getattr__(self, key):
        if key.startswith("__"):  # (copy, pickle and inspect probe dunders: not overloads)
            raise AttributeError(key)
        try:
            return self.__dict__["_overloads"][key]
        except KeyError:
            raise AttributeError(f"The underlying op of '{self}' has no overload name "
                                 f"'{key}'") from None

    def __call__(self, *args, **kwargs):
        overloads = self._overloads.values()
        if len(overloads) == 1 or any(o._schema is None for o in overloads):
            # (an operator without schemas, as ember.ops.aten's, runs its default overload)
            return self.default(*args, **kwargs)
        return self._overload_for(args, kwargs)(*args, **kwargs)

    def _overload_for(self, args, kwargs) -> OpOverload:
        """The first overload whose schema takes these arguments (torch's error lists why
        none does)."""
        from .library._schema import bind
        why = []
        for overload in self._overloads.values():
            try:
                bind(overload._schema, args, kwargs)
            except RuntimeError as e:
                why.append(f"{e}\n\n")
                continue
            return overload
        raise RuntimeError("Overloaded torch operator invoked from Python failed to match any "
                           "schema:\n" + "".join(why))

    def __repr__(self):
        return f"<OpOverloadPacket(op='{self}')>"

    def __str__(self):
        return f"{self._namespace}.{self.__name__}"


class _OpNamespace(types.ModuleType):
    """``ember.ops.<name>``: the operators registered under one namespace."""

    def __init__(self, name: str):
        super().__init__(f"{__name__}.{name}")
        self.name = name
        self._dir: list[str] = []

    def _packet(self, op_name: str) -> OpOverloadPacket:
        """The operator ``op_name`` of this namespace, created empty if it is new."""
        packet = self.__dict__.get(op_name)
        if not isinstance(packet, OpOverloadPacket):
            packet = OpOverloadPacket(self.name, op_name)
            setattr(self, op_name, packet)
            self._dir.append(op_name)
        return packet

    def _remove(self, op_name: str) -> None:
        if isinstance(self.__dict__.get(op_name), OpOverloadPacket):
            delattr(self, op_name)
            self._dir.remove(op_name)

    def __getattr__(self, op_name):
        if op_name.startswith("__"):
            raise AttributeError(op_name)
        raise AttributeError(f"'_OpNamespace' '{self.name}' object has no attribute "
                             f"'{op_name}'")

    def __repr__(self):
        return f"<module '{__name__}.{self.name}' from '{__name__}'>"


def __getattr__(name: str) -> _OpNamespace:
    """``ember.ops.<name>``: the namespace, created on first access as torch's are."""
    if name.startswith("__"):
        raise AttributeError(f"module '{__name__}' has no attribute '{name}'")
    if name == "aten":  # (ember's own operators, by torch's names)
        from ._ops.aten_namespace import AtenNamespace
        namespace = globals()[name] = AtenNamespace(name)
        return namespace
    namespace = globals()[name] = _OpNamespace(name)
    return namespace
