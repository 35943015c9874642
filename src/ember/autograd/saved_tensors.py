"""Saved tensor hooks: ``saved_tensors_hooks``, ``save_on_cpu``, ``disable_saved_tensors_hooks``,
``grad_fn._raw_saved_<name>.register_hooks`` and ``increment_version``, as torch.autograd.graph.

Under ``saved_tensors_hooks(pack, unpack)`` every tensor a node saves for backward (built-in ops
and ``ctx.save_for_backward``) is handed to ``pack`` and the node keeps only what ``pack``
returned, in a :class:`_Packed`; each access (backward, ``grad_fn._saved_self``) calls
``unpack`` on it and uses the tensor it returns. As in torch, a packed tensor's version is not
checked (the hooks may have copied it), and the unpacked tensor gets the autograd identity of the
tensor that was saved (its grad_fn, or for a leaf its gradient accumulator).

NOTE: nothing here runs unless hooks are active: the op registry takes this path only when
``state.saved_hooks`` is non-empty (one attribute check per recorded op).
"""
from __future__ import annotations

import contextlib
import weakref
from collections.abc import Callable, Iterable
from typing import Any

from .._state import count_record_extras, state
from .._tensor import Tensor, _wrap
from .grad_mode import no_grad

__all__ = ["saved_tensors_hooks", "save_on_cpu", "disable_saved_tensors_hooks",
           "increment_version", "SavedTensor"]

ERR_PACK_INPLACE = (
    "A saved tensor pack hook is modifying its input in place. Tensors provided as input to "
    "pack hook cannot be modified by in-place operations as this can lead to unexpected "
    "side-effects. Please open an issue if you need to perform in-place operations on the input "
    "to a pack hook.")
ERR_HOOKS_SET = ("Calling register_hooks on a saved tensor whose hooks have already been set. "
                 "Hint: only one pair of hooks is allowed at a time.")
ERR_HOOKS_FREED = (
    "Calling register_hooks on a saved tensor after it has been freed. Saved intermediate "
    "values of the graph are freed when you call .backward() or autograd.grad(). Specify "
    "retain_graph=True if you need to backward through the graph a second time or if you need "
    "to access saved variables after calling backward.")
ERR_HOOKS_NONE = "Calling register_hooks on a saved tensor with value None is forbidden"


class _Packed:
    """A saved tensor that went through a pack hook.

    torch keeps the packed value and the saved tensor's autograd metadata, never the tensor:
    ``grad_fn``/``output_nr`` for a non-leaf input, a weak reference to the gradient accumulator
    for a leaf that requires grad, and for an output of the saving node only its number (the
    node itself is passed at unpack time, so node and packed value form no cycle).
    """

    __slots__ = ("packed", "unpack_hook", "grad_fn", "output_nr", "is_output", "acc",
                 "requires_grad")


def pack_saved(t, hooks, output_nr=None, hook_input=None) -> _Packed:
    """Pack tensor ``t`` with ``hooks = (pack, unpack)``; ``output_nr``: ``t`` is that output
    of the saving node. The pack hook receives ``hook_input`` (default ``t``)."""
    from .graph import grad_accumulator
    pack_hook, unpack_hook = hooks
    p = _Packed()
    p.unpack_hook = unpack_hook
    p.is_output = output_nr is not None
    p.output_nr = t._output_nr if output_nr is None else output_nr
    p.grad_fn = None if p.is_output else t._grad_fn
    p.requires_grad = t._requires_grad
    acc = (grad_accumulator(t) if p.grad_fn is None and t._requires_grad and not p.is_output
           else None)  # (None too for a view made under no_grad: it has no accumulator)
    p.acc = None if acc is None else weakref.ref(acc)
    p.packed = _call_pack(pack_hook, t if hook_input is None else hook_input)
    return p


def _call_pack(pack_hook, t):
    """``pack_hook(t)`` under no_grad, refusing a hook that modifies ``t`` in place."""
    vc = t._vc
    before = 0 if vc is None else vc[0]
    with no_grad():
        packed = pack_hook(t)
    vc = t._vc
    if (0 if vc is None else vc[0]) != before:
        raise RuntimeError(ERR_PACK_INPLACE)
    return packed


def unpack_saved(p: _Packed, node, as_tensor: bool):
    """The tensor ``p``'s unpack hook returns, with the saved tensor's autograd identity (an
    array when ``as_tensor`` is false: a first-order backward formula's operand)."""
    t = p.unpack_hook(p.packed)
    if not isinstance(t, Tensor):
        raise TypeError("Output of saved tensor unpack_hook expected to be a Tensor but got "
                        f"result of type {type(t).__name__}")
    if not as_tensor:
        return t._data
    out = _wrap(t._data)
    if p.is_output:
        out._grad_fn, out._output_nr, out._requires_grad = node, p.output_nr, p.requires_grad
    elif p.grad_fn is not None:
        out._grad_fn, out._output_nr, out._requires_grad = p.grad_fn, p.output_nr, True
    elif p.requires_grad:
        out._requires_grad = True
        if p.acc is not None and p.acc() is not None:
            out._grad_acc = p.acc  # gradients reach the saved leaf, not this new tensor
    return out


def check_register(value, freed):
    """torch's refusals for ``register_hooks`` on a saved slot holding ``value``."""
    if freed:
        raise RuntimeError(ERR_HOOKS_FREED)
    if isinstance(value, _Packed):
        raise RuntimeError(ERR_HOOKS_SET)
    if value is None:
        raise RuntimeError(ERR_HOOKS_NONE)


class SavedTensor:
    """One tensor a node saved (``grad_fn._raw_saved_<name>``, ``ctx._raw_saved_tensors``).

    ``store``: the list of saved entries it refers to, when that list must outlive the node's
    release (a custom Function's, as torch's); None: the node's current one.
    """

    __slots__ = ("_node", "_slot", "_store")

    def __init__(self, node, slot, store=None):
        self._node = node
        self._slot = slot
        self._store = store

    def register_hooks(self, pack_hook: Callable[[Tensor], Any],
                       unpack_hook: Callable[[Any], Tensor]) -> None:
        """Pack this saved tensor now with ``pack_hook``; unpack it with ``unpack_hook``."""
        self._node._register_saved_hooks(self._slot, (pack_hook, unpack_hook), self._store)


def raw_saved_property(slot):
    return property(lambda node: SavedTensor(node, slot))


# -- the context managers ----------------------------------------------------------------------
class saved_tensors_hooks:
    """Context-manager that sets a pair of pack / unpack hooks for saved tensors.

    ``pack_hook(tensor) -> Any`` runs whenever an operation saves a tensor for backward;
    ``unpack_hook(packed) -> Tensor`` whenever the saved tensor is accessed. Only the innermost
    pair applies when nested.
    """

    def __init__(self, pack_hook: Callable[[Tensor], Any],
                 unpack_hook: Callable[[Any], Tensor]) -> None:
        self.pack_hook = pack_hook
        self.unpack_hook = unpack_hook

    def __enter__(self) -> None:
        message = state.saved_hooks_disabled
        if message is not None:
            raise RuntimeError(message)
        state.saved_hooks = state.saved_hooks + ((self.pack_hook, self.unpack_hook),)
        count_record_extras(1)

    def __exit__(self, *args: object) -> None:
        state.saved_hooks = state.saved_hooks[:-1]
        count_record_extras(-1)


class save_on_cpu(saved_tensors_hooks):
    """Context manager under which tensors saved by the forward pass are stored on cpu, then
    retrieved for backward.

    NOTE: as in torch, a tensor already on the CPU is packed as itself (``tensor.cpu()`` is the
    tensor), unless ``pin_memory=True``, which packs a copy; ember has no pinned memory, so
    that copy is an ordinary one.
    """

    def __init__(self, pin_memory: bool = False, device_type: str = "cuda") -> None:
        import ember

        device_module = getattr(ember, device_type, ember.cuda)

        def pack_to_cpu(tensor):
            if not pin_memory:
                return (tensor.device, tensor.cpu())
            packed = ember.empty(tuple(tensor.size()), dtype=tensor.dtype, layout=tensor.layout)
            packed.copy_(tensor, non_blocking=device_module.is_available())
            return (tensor.device, packed)

        def unpack_from_cpu(packed):
            device, tensor = packed
            return tensor.to(device, non_blocking=pin_memory)

        super().__init__(pack_to_cpu, unpack_from_cpu)


@contextlib.contextmanager
def disable_saved_tensors_hooks(error_message: str):
    """Context-manager that disables the saved tensors default hooks feature: registering
    hooks inside it raises ``RuntimeError(error_message)``."""
    prev = state.saved_hooks_disabled
    try:
        state.saved_hooks_disabled = error_message
        if state.saved_hooks:  # torch refuses to disable hooks that are in use
            raise RuntimeError(error_message)
        yield
    finally:
        state.saved_hooks_disabled = prev


def increment_version(tensor: Tensor | Iterable[Tensor]) -> None:
    """Mark tensors as modified in place (for changes autograd cannot see, like a custom kernel
    writing through data_ptr), so that saved uses of them raise on backward."""
    if isinstance(tensor, Tensor):
        tensor = (tensor,)
    try:
        items = iter(tensor)
    except TypeError:
        raise RuntimeError("increment_version expect a Iterable[Tensor] as input") from None
    for t in items:
        if not isinstance(t, Tensor):
            raise RuntimeError("increment_version expects each element of the iterable to be a "
                               "tensor")
        if not t._is_inference:  # inference tensors have no version counter
            t._bump_version()
