"""Padding (``nn.functional.pad``): constant, reflect, replicate and circular modes.

Reflect and replicate pads read the input through one index vector per padded dim, so their
gradient adds each output element back to the input element it came from (repeats add up).
Circular padding is torch's composite: copies of slices into a new tensor (CopySlices).
indexing.py lists ``pad`` in its ``FUNCTIONAL``.
"""
from __future__ import annotations

__all__: list[str] = []

from .._backend import get_xp, scatter_add
from .registry import NONE, op


def _check_pad(input, pad):
    pad = tuple(int(p) for p in pad)
    if len(pad) % 2:
        raise RuntimeError("Padding length must be divisible by 2")
    if len(pad) // 2 > input.ndim:
        raise RuntimeError(f"Padding length should be less than or equal to two times the "
                           f"input dimension but got padding length {len(pad)} and input of "
                           f"dimension {input.ndim}")
    return pad


def _pairs(pad, ndim):
    """(dim, left, right) for each padded dim; pad lists the last dim first, as torch."""
    return [(ndim - 1 - i, pad[2 * i], pad[2 * i + 1]) for i in range(len(pad) // 2)]


# -- constant --------------------------------------------------------------------------------------
def _widens(self, pad, value=0):
    """Whether torch's constant_pad_nd makes a wider result (empty, fill_, then copy_ of the
    kept part), not a clone of a narrowed (or the very) input."""
    return any(p > 0 for p in pad)


def _copies_input(self, pad, value=0):
    # (a negative pad narrows the input first: a view made without autograd, whose copy
    # carries no tangent)
    return not any(p < 0 for p in pad)


@op("constant_pad_nd", promote=NONE, writes=lambda *args: 2 if _widens(*args) else 1,
    copies=_copies_input)
def constant_pad_nd(self, pad, value=0):
    xp = get_xp(self)
    key = [slice(None)] * self.ndim
    widths = [(0, 0)] * self.ndim
    for d, left, right in _pairs(pad, self.ndim):
        n = self.shape[d]
        if n + min(left, 0) < 0 or n + min(left, 0) + min(right, 0) < 0:
            raise RuntimeError("narrow(): length must be non-negative.")
        key[d] = slice(max(-left, 0), n - max(-right, 0))
        widths[d] = (max(left, 0), max(right, 0))
    return xp.pad(self[tuple(key)], widths, constant_values=value)


@constant_pad_nd.grad("self")
def _(grad, pad):
    return constant_pad_nd(grad, tuple(-p for p in pad), 0)


# -- reflect and replicate: gathers along index vectors ---------------------------------------------
def _pad_gather(self, indices):
    xp = get_xp(self)
    for d, idx in indices:
        self = xp.take(self, xp.asarray(idx), axis=d)
    return self


def _pad_gather_backward(grad, input_sizes, indices):
    xp = get_xp(grad)
    sizes = list(grad.shape)
    for d, idx in reversed(indices):
        sizes[d] = input_sizes[d]
        out = xp.zeros(tuple(sizes), grad.dtype)
        grad = scatter_add(out, (slice(None),) * d + (xp.asarray(idx),), grad)
    return grad


_PAD_OPS = {}


def _declare_pad(mode, nd):
    node = f"{'Reflection' if mode == 'reflect' else 'Replication'}Pad{nd}DBackward0"
    name = f"{'reflection' if mode == 'reflect' else 'replication'}_pad{nd}d"

    @op(name, promote=NONE, node=node)
    def padded(self, indices):
        return _pad_gather(self, indices)

    @padded.grad("self")
    def _(grad, self_shape, indices):
        return pad_backward(grad, self_shape, indices, name)
    _PAD_OPS[name] = padded
    return padded


reflection_pad1d, reflection_pad2d, reflection_pad3d = (
    _declare_pad("reflect", n) for n in (1, 2, 3))
replication_pad1d, replication_pad2d, replication_pad3d = (
    _declare_pad("replicate", n) for n in (1, 2, 3))


@op("pad_backward", promote=NONE, node="PadBackwardBackward0")
def pad_backward(grad, input_sizes, indices, name):
    """The gradient of a reflect or replicate pad: sums back onto the elements read."""
    return _pad_gather_backward(grad, input_sizes, indices)


@pad_backward.grad("grad")
def _(grad, indices, name):
    return _PAD_OPS[name](grad, indices)


def _source_indices(mode, n, left, right):
    """For each output position along a dim, the input position it reads."""
    out = []
    for j in range(-left, n + right):
        if mode == "replicate":
            out.append(min(max(j, 0), n - 1))
        else:  # reflect, without repeating the edge
            j = abs(j)
            out.append(2 * (n - 1) - j if j >= n else j)
    return tuple(out)


_SUPPORTED = ("\nSupported combinations for non-constant padding:\n"
              "  - 2D or 3D input: padding size = 2 (pads last dimension)\n"
              "  - 3D or 4D input: padding size = 4 (pads last 2 dimensions)\n"
              "  - 4D or 5D input: padding size = 6 (pads last 3 dimensions)")


def _check_dims(input, pad):
    nd = len(pad) // 2
    if nd == 0 or input.ndim not in (nd + 1, nd + 2):
        raise NotImplementedError(f"Padding size {len(pad)} is not supported for "
                                  f"{input.ndim}D input tensor.{_SUPPORTED}")
    return nd


def _index_pad(input, pad, mode):
    nd = _check_dims(input, pad)
    pairs = _pairs(pad, input.ndim)
    batched = input.ndim == nd + 2  # (only a batch dimension may be empty, channels may not)
    for d, left, right in pairs:
        n = input.shape[d]
        if n == 0 or any(input.shape[i] == 0 for i in range(int(batched), input.ndim)):
            raise RuntimeError(f"Expected {nd + 1}D or {nd + 2}D (batch mode) tensor with "
                               f"possibly 0 batch size and other non-zero dimensions for input,"
                               f" but got: {list(input.shape)}")
        if mode == "reflect" and (left >= n or right >= n):
            arg = 2 * nd + 2
            raise RuntimeError(f"Argument #{arg}: Padding size should be less than the "
                               f"corresponding input dimension, but got: padding ({left}, "
                               f"{right}) at dimension {d} of input {list(input.shape)}")
    indices = tuple((d, _source_indices(mode, input.shape[d], left, right))
                    for d, left, right in pairs)
    prefix = "reflection" if mode == "reflect" else "replication"
    return _PAD_OPS[f"{prefix}_pad{nd}d"](input, indices)


# -- circular: torch's composite of slice copies ---------------------------------------------------
def _circular_pad(input, pad):
    from .._creation import empty
    _check_dims(input, pad)
    pairs = _pairs(pad, input.ndim)
    shape = list(input.shape)
    for d, left, right in pairs:
        n = input.shape[d]
        if left > n or right > n:
            raise RuntimeError("Padding value causes wrapping around more than once.")
        shape[d] = n + left + right
        if shape[d] < 0:
            raise RuntimeError(f"Negative padding value is resulting in an empty dimension, "
                               f"got {shape[d]}")
    out = empty(tuple(shape), dtype=input.dtype, device=input.device)
    out_part, in_part = out, input
    for d, left, right in pairs:
        out_part = out_part.narrow(d, max(left, 0), shape[d] - max(left, 0) - max(right, 0))
        in_part = in_part.narrow(d, max(-left, 0),
                                 input.shape[d] - max(-left, 0) - max(-right, 0))
    out_part.copy_(in_part)
    for d, left, right in pairs:  # corners are written more than once, as in torch
        if left > 0:
            out.narrow(d, 0, left).copy_(out.narrow(d, shape[d] - left - max(right, 0), left))
        if right > 0:
            out.narrow(d, shape[d] - right, right).copy_(out.narrow(d, max(left, 0), right))
    return out


def pad(input, pad, mode="constant", value=None):
    """Pad ``input``: ``pad`` gives (left, right) widths, last dim first."""
    pad = _check_pad(input, pad)
    if mode == "constant":
        return constant_pad_nd(input, pad, 0 if value is None else value)
    if mode not in ("reflect", "replicate", "circular"):
        raise NotImplementedError(f"Unrecognised padding mode {mode}")
    if value is not None and value != 0:
        raise RuntimeError(f'Padding mode "{mode}" doesn\'t take in value argument')
    if mode == "circular":
        return _circular_pad(input, pad)
    return _index_pad(input, pad, mode)

