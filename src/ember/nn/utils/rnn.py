"""Packed and padded sequences for the recurrent layers, as ``torch.nn.utils.rnn``."""
from __future__ import annotations

import itertools
from collections.abc import Iterable
from typing import NamedTuple

from ... import _dtype as D
from ..._tensor import Tensor

__all__ = ["PackedSequence", "invert_permutation", "pack_padded_sequence", "pack_sequence",
           "pad_packed_sequence", "pad_sequence", "unpack_sequence", "unpad_sequence"]


class PackedSequence_(NamedTuple):  # noqa: N801 - torch's name
    data: Tensor
    batch_sizes: Tensor
    sorted_indices: Tensor | None
    unsorted_indices: Tensor | None


def copy_method_params(source_method):
    """A decorator that gives the decorated method ``source_method``'s call signature for type
    checkers; at run time the method is returned as it is."""
    def return_func(func):
        return func
    return return_func


def bind(optional, fn):
    """``fn(optional)``, or None when ``optional`` is None."""
    if optional is None:
        return None
    return fn(optional)


class PackedSequence(PackedSequence_):
    """Holds the data and list of :attr:`batch_sizes` of a packed sequence.

    ``data`` holds the steps of every sequence, step by step; ``batch_sizes[t]`` is how many
    sequences are still running at step ``t``. Made by :func:`pack_padded_sequence` and
    :func:`pack_sequence`; every recurrent layer accepts one.
    """

    def __new__(cls, data, batch_sizes=None, sorted_indices=None, unsorted_indices=None):
        return super().__new__(cls, *_packed_sequence_init_args(data, batch_sizes,
                                                                sorted_indices,
                                                                unsorted_indices))

    def pin_memory(self):
        return type(self)(self.data.pin_memory(), self.batch_sizes,
                          bind(self.sorted_indices, lambda t: t.pin_memory()),
                          bind(self.unsorted_indices, lambda t: t.pin_memory()))

    def to(self, *args, **kwargs):
        """Perform dtype and/or device conversion on ``self.data`` (self when nothing
        changes)."""
        data = self.data.to(*args, **kwargs)
        if data is self.data:
            return self

        def call_to(t):
            return t.to(data.device)
        return type(self)(data, self.batch_sizes, bind(self.sorted_indices, call_to),
                          bind(self.unsorted_indices, call_to))

    def cuda(self, *args, **kwargs):
        kwargs["device"] = "cuda"
        return self.to(*args, **kwargs)

    def cpu(self, *args, **kwargs):
        kwargs["device"] = "cpu"
        return self.to(*args, **kwargs)

    def double(self):
        return self.to(dtype=D.float64)

    def float(self):
        return self.to(dtype=D.float32)

    def half(self):
        return self.to(dtype=D.float16)

    def long(self):
        return self.to(dtype=D.int64)

    def int(self):
        return self.to(dtype=D.int32)

    def short(self):
        return self.to(dtype=D.int16)

    def char(self):
        return self.to(dtype=D.int8)

    def byte(self):
        return self.to(dtype=D.uint8)

    @property
    def is_cuda(self):
        """Whether ``self.data`` is stored on a GPU."""
        return self.data.is_cuda

    def is_pinned(self):
        return self.data.is_pinned()


def _packed_sequence_init_args(data, batch_sizes=None, sorted_indices=None,
                               unsorted_indices=None):
    if unsorted_indices is None:
        unsorted_indices = invert_permutation(sorted_indices)
    if batch_sizes is not None:
        if batch_sizes.device.type != "cpu":
            raise ValueError(
                "batch_sizes should always be on CPU. Instances of PackedSequence should never "
                "be created manually. They should be instantiated by functions like "
                "pack_sequence and pack_padded_sequences in nn.utils.rnn. "
                "https://pytorch.org/docs/stable/nn.html#torch.nn.utils.rnn.pack_sequence")
        return data, batch_sizes, sorted_indices, unsorted_indices
    if not (isinstance(data, (list, tuple)) and len(data) == 2):
        raise AssertionError("Expected data to be a list or tuple of length 2")
    return data[0], data[1], sorted_indices, unsorted_indices


def invert_permutation(permutation):
    """The inverse of a permutation of ``0..n-1`` (None for None)."""
    if permutation is None:
        return None
    from ..._creation import arange, empty_like
    output = empty_like(permutation)
    output.scatter_(0, permutation, arange(0, permutation.numel(), device=permutation.device))
    return output


def _batch_sizes(input, lengths, steps, batch):  # noqa: A002
    """torch's _pack_padded_sequence checks, and the batch size at every time step."""
    if lengths.ndim != 1:
        raise RuntimeError("'lengths' argument should be a 1D CPU int64 tensor, but got "
                           f"{lengths.ndim}D cpu Long tensor")
    if input.numel() == 0:
        raise RuntimeError("Cannot pack empty tensors.")
    values = [int(v) for v in lengths.tolist()]
    if len(values) != batch:
        raise RuntimeError(f"Expected `len(lengths)` to be equal to batch_size, but got "
                           f"{len(values)} (batch_size={batch})")
    if values and values[-1] <= 0:
        raise RuntimeError("Length of all samples has to be greater than 0, but found an "
                           "element in 'lengths' that is <= 0")
    for a, b in itertools.pairwise(values):
        if a < b:
            raise RuntimeError(
                "`lengths` array must be sorted in decreasing order when `enforce_sorted` is "
                "True. You can pass `enforce_sorted=False` to pack_padded_sequence and/or "
                "pack_sequence to sidestep this requirement if you do not need ONNX "
                "exportability.")
    if values and values[0] > steps:
        # NOTE: torch reads past the end of the padded input here (its batch_sizes then count
        # rows its data lacks); ember refuses.
        raise RuntimeError(f"Expected the longest length ({values[0]}) to be at most the "
                           f"sequence length of the input ({steps})")
    return tuple(sum(1 for v in values if v > t) for t in range(values[0] if values else 0))


def pack_padded_sequence(input, lengths, batch_first=False, enforce_sorted=True):  # noqa: A002
    """Pack a Tensor containing padded sequences of variable length."""
    from ... import as_tensor, sort
    from ..._ops.nn_ops import _pack_padded_sequence
    if not isinstance(lengths, Tensor):
        lengths = as_tensor(lengths, dtype=D.int64, device="cpu")
    else:
        lengths = lengths.to(dtype=D.int64)
    if enforce_sorted:
        sorted_indices = None
    else:
        lengths, sorted_indices = sort(lengths, descending=True)
        sorted_indices = sorted_indices.to(input.device)
        batch_dim = 0 if batch_first else 1
        input = input.index_select(batch_dim, sorted_indices)
    steps, batch = (input.shape[1], input.shape[0]) if batch_first else input.shape[:2]
    sizes = _batch_sizes(input, lengths, steps, batch)
    data = _pack_padded_sequence(input, sizes, batch_first)
    batch_sizes = as_tensor(list(sizes), dtype=D.int64)
    return PackedSequence(data, batch_sizes, sorted_indices, None)


def pad_packed_sequence(sequence, batch_first=False, padding_value=0.0, total_length=None):
    """Pad a packed batch of variable length sequences; returns (padded, lengths)."""
    max_seq_length = sequence.batch_sizes.shape[0]
    if total_length is not None:
        if total_length < max_seq_length:
            raise ValueError("Expected total_length to be at least the length of the longest "
                             f"sequence in input, but got total_length={total_length} and max "
                             f"sequence length being {max_seq_length}")
        max_seq_length = total_length
    padded_output, lengths = _pad_packed(sequence.data, sequence.batch_sizes, batch_first,
                                         padding_value, max_seq_length)
    unsorted_indices = sequence.unsorted_indices
    if unsorted_indices is not None:
        batch_dim = 0 if batch_first else 1
        return (padded_output.index_select(batch_dim, unsorted_indices),
                lengths[unsorted_indices.cpu()])
    return padded_output, lengths


def _pad_packed(data, batch_sizes, batch_first, padding_value, max_seq_length):
    """torch's _pad_packed_sequence: copy each run of equal batch sizes into a padded tensor
    (so the graph is torch's CopySlices chain)."""
    from ... import as_tensor, full
    sizes = [int(b) for b in batch_sizes.tolist()]
    max_batch = sizes[0]
    real_steps = len(sizes)
    output = full((max_seq_length, max_batch) + tuple(data.shape[1:]), padding_value,
                  dtype=data.dtype, device=data.device)
    lengths = [0] * max_batch
    offset, prev_batch, prev_i = 0, max_batch, 0
    for i in range(real_steps + 1):
        batch = sizes[i] if i != real_steps else 0
        if batch != prev_batch:
            n = prev_batch * (i - prev_i)
            block = data[offset:offset + n].view((i - prev_i, prev_batch) + tuple(data.shape[1:]))
            output[prev_i:i, :prev_batch].copy_(block)
            offset += n
            prev_i = i
        for j in range(batch, prev_batch):
            lengths[j] = i
        prev_batch = batch
    if batch_first:
        output = output.transpose(0, 1)
    return output, as_tensor(lengths, dtype=D.int64)


def pad_sequence(sequences, batch_first=False, padding_value=0.0, padding_side="right"):
    """Pad a list of variable length Tensors with ``padding_value``."""
    from ... import full
    if not isinstance(sequences, Iterable):
        raise RuntimeError(  # noqa: TRY004 - torch's type
            f"pad_sequence: Expected iterable for input sequences, but got arg of type: "
            f"{type(sequences)}")
    sequences = tuple(sequences)
    if not sequences:
        raise RuntimeError("received an empty list of sequences")
    if padding_side not in ("left", "right"):
        raise RuntimeError(f"Expected padding_side to be one of left or right, but got "
                           f"{padding_side}.")
    first = sequences[0]
    trailing = tuple(first.shape[1:])
    max_len = max(s.shape[0] for s in sequences)
    n = len(sequences)
    dims = ((n, max_len) if batch_first else (max_len, n)) + trailing
    out = full(dims, padding_value, dtype=first.dtype, device=first.device)
    for i, seq in enumerate(sequences):
        length = seq.shape[0]
        start = max_len - length if padding_side == "left" else 0
        if batch_first:
            out.select(0, i).narrow(0, start, length).copy_(seq)
        else:
            out.narrow(0, start, length).select(1, i).copy_(seq)
    return out


def unpad_sequence(padded_sequences, lengths, batch_first=False):
    """Unpad a padded Tensor into a list of variable length Tensors."""
    from ... import arange
    unpadded = []
    if not batch_first:
        # NOTE: torch transposes the caller's tensor in place here (transpose_); ember leaves
        # it alone and works on a transposed view.
        padded_sequences = padded_sequences.transpose(0, 1)
    max_length = padded_sequences.shape[1]
    idx = arange(max_length, device=lengths.device)
    for seq, length in zip(padded_sequences, lengths, strict=True):
        mask = idx < length
        unpadded.append(seq[mask])
    return unpadded


def pack_sequence(sequences, enforce_sorted=True):
    """Pack a list of variable length Tensors (longest first unless ``enforce_sorted=False``)."""
    from ... import as_tensor
    lengths = as_tensor([v.shape[0] for v in sequences], dtype=D.int64)
    return pack_padded_sequence(pad_sequence(sequences), lengths,
                                enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences):
    """Unpack a PackedSequence into a list of variable length Tensors."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)
