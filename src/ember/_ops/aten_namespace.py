"""``ember.ops.aten``: an ``OpOverloadPacket`` per operator of ember's registry, by the aten
name torch gives it (``ember.ops.aten.mm``, ``ember.ops.aten.relu_`` for its in-place form),
so that code written for ``torch.ops.aten`` finds ember's operators: selective checkpointing's
policies compare the op they are given with ``torch.ops.aten.mm.default`` and the like.

NOTE: torch tells an operator's overloads apart (``aten.mul.Tensor``, ``aten.mul.Scalar``);
ember's registry has one op where torch has several overloads, so every overload name of an
operator is the same :class:`OpOverload` object (``ember.ops.aten.mul.Tensor is
ember.ops.aten.mul.default``), the one ember's dispatch reports: a policy written with any of
torch's overload names matches. An overload that ember's registry names itself (the ``p`` of
``aten::bernoulli.p``) is an object of its own.
"""
from __future__ import annotations

from .._tensor import Tensor
from ..ops import OpOverloadPacket, _OpNamespace
from .registry import REGISTRY, dispatch


class _AtenPacket(OpOverloadPacket):
    """An aten operator: an overload name ember does not register is its ``default``."""

    # (shown as the class it extends: torch's errors print the type of the packet)
    __module__, __qualname__ = OpOverloadPacket.__module__, OpOverloadPacket.__qualname__

    def __getattr__(self, key):
        if key.startswith("_"):
            raise AttributeError(key)
        overloads = self.__dict__["_overloads"]
        found = overloads.get(key, overloads.get("default"))
        if found is None:  # (only overloads of ember's own naming: none stands for the rest)
            return super().__getattr__(key)
        return found


class AtenNamespace(_OpNamespace):
    """``ember.ops.aten``: filled from the op registry, again when a name is missing (ops
    declared by a module imported since)."""

    def __init__(self, name):
        super().__init__(name)
        self._known = 0
        self._refresh()

    def _refresh(self):
        if len(REGISTRY) == self._known:
            return False
        self._known = len(REGISTRY)
        for op in list(REGISTRY.values()):
            name, _, overload = op.aten.partition("::")[2].partition(".")
            self._overload(name, overload or "default", op, False)
            if not overload and hasattr(Tensor, name + "_"):  # (its in-place form)
                self._overload(name + "_", "default", op, True)
        return True

    def _overload(self, name, overload, op, inplace):
        packet = self.__dict__.get(name)
        if not isinstance(packet, _AtenPacket):
            packet = _AtenPacket(self.name, name)
            setattr(self, name, packet)
            self._dir.append(name)
        if overload not in packet._overloads:
            packet._add_overload(overload, None, _runner(op, inplace))

    def __getattr__(self, op_name):
        if not op_name.startswith("__") and self._refresh():
            return getattr(self, op_name)
        return super().__getattr__(op_name)


def _runner(op, inplace):
    """What calling the overload runs: the public function of the op's name (``ember.<name>``,
    else the ``Tensor.<name>`` method), which binds its arguments as torch's schema does; the
    registry's op, bound by its own parameters, for an op with no public function (its
    parameters are internal where a public function builds them: bernoulli's draws)."""
    import ember
    name = op.aten.partition("::")[2].partition(".")[0]
    name = name + "_" if inplace else name
    public = getattr(ember, name, None) if not inplace else None
    if public is None or isinstance(public, type) or not callable(public):
        public = getattr(Tensor, name, None)
    if callable(public):
        return public
    return op.inplace if inplace else op


def overload_of(op, inplace=False):
    """The ``ember.ops.aten`` overload that a call of registry op ``op`` is."""
    from .. import ops
    name, _, overload = op.aten.partition("::")[2].partition(".")
    packet = getattr(ops.aten, name + "_" if inplace and not overload else name)
    return getattr(packet, overload or "default")
