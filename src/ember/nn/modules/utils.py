"""torch.nn.modules.utils: the helpers custom layers import from it (``_pair`` for a kernel
size given as one number or two, ``consume_prefix_in_state_dict_if_present`` to load a
DataParallel/DistributedDataParallel checkpoint into the bare module)."""
from __future__ import annotations

import collections.abc
import itertools

__all__ = ["consume_prefix_in_state_dict_if_present"]


def _ntuple(n, name="parse"):
    """A function making ``n``-tuples: an iterable becomes the tuple of its items, anything
    else is repeated ``n`` times."""
    def parse(x):
        if isinstance(x, collections.abc.Iterable):
            return tuple(x)
        return tuple(itertools.repeat(x, n))
    parse.__name__ = name
    return parse


_single = _ntuple(1, "_single")
_pair = _ntuple(2, "_pair")
_triple = _ntuple(3, "_triple")
_quadruple = _ntuple(4, "_quadruple")


def _reverse_repeat_tuple(t, n):
    """``t`` reversed, each item repeated ``n`` times: ``(1, 2), 2 -> (2, 2, 1, 1)`` (a
    convolution's padding per dimension as ``F.pad`` takes it, last dimension first)."""
    return tuple(x for x in reversed(t) for _ in range(n))


def _list_with_default(out_size, defaults):
    """An adaptive pooling's output size with each ``None`` taken from the input's size
    (``defaults``, whose last ``len(out_size)`` dimensions are the pooled ones)."""
    if isinstance(out_size, int):
        return out_size
    if len(defaults) <= len(out_size):
        raise ValueError(f"Input dimension should be at least {len(out_size) + 1}")
    tail = defaults[len(defaults) - len(out_size):]
    return [d if v is None else v for v, d in zip(out_size, tail)]


def consume_prefix_in_state_dict_if_present(state_dict, prefix):
    """Strip ``prefix`` (``"module."``) from the keys of ``state_dict`` that have it, and from
    its ``_metadata`` keys, in place."""
    for key in sorted(state_dict):
        if key.startswith(prefix):
            state_dict[key[len(prefix):]] = state_dict.pop(key)
    metadata = getattr(state_dict, "_metadata", None)
    if metadata is None:
        return
    for key in list(metadata):
        # (the metadata of the wrapped module itself is keyed by the prefix without its dot)
        if key and (key == prefix.replace(".", "") or key.startswith(prefix)):
            metadata[key[len(prefix):]] = metadata.pop(key)
