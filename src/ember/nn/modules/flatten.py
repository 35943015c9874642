"""Flatten and Unflatten."""
from __future__ import annotations

__all__ = ['Flatten', 'Unflatten']

import math

from .module import Module


class Flatten(Module):
    """Flattens a contiguous range of dims into one."""

    def __init__(self, start_dim=1, end_dim=-1):
        super().__init__()
        self.start_dim = start_dim
        self.end_dim = end_dim

    def forward(self, input):
        return input.flatten(self.start_dim, self.end_dim)

    def extra_repr(self):
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Unflatten(Module):
    """Expands one dim of the input into the shape ``unflattened_size``."""

    def __init__(self, dim, unflattened_size):
        super().__init__()
        if isinstance(dim, int):
            self._require_tuple_int(unflattened_size)
        else:
            raise TypeError("invalid argument type for dim parameter")
        self.dim = dim
        self.unflattened_size = unflattened_size

    def _require_tuple_int(self, input):
        if isinstance(input, (tuple, list)):
            for idx, elem in enumerate(input):
                if not isinstance(elem, int):
                    raise TypeError("unflattened_size must be tuple of ints, but found element "
                                    f"of type {type(elem).__name__} at pos {idx}")
            return
        raise TypeError("unflattened_size must be a tuple of ints, but found type "
                        f"{type(input).__name__}")

    def forward(self, input):
        shape = list(input.shape)
        dim = self.dim + len(shape) if self.dim < 0 else self.dim
        sizes = list(self.unflattened_size)
        if -1 in sizes:
            known = math.prod(s for s in sizes if s != -1)
            sizes[sizes.index(-1)] = shape[dim] // known if known else 0
        if math.prod(sizes) != shape[dim]:
            raise RuntimeError(f"unflatten: Provided sizes {list(self.unflattened_size)} don't "
                               f"multiply up to the size of dim {self.dim} ({shape[dim]}) in the "
                               "input tensor")
        return input.reshape(shape[:dim] + sizes + shape[dim + 1:])

    def extra_repr(self):
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"
