"""TORCH_DISTRIBUTED_DEBUG=DETAIL: every collective first checks, across the group, that all
processes run the same collective on tensors of the same shapes and dtypes, and raises
torch's error naming the first process that differs (a mismatch would otherwise hang or be
reported by MPI in its own words)."""
from __future__ import annotations

from ._types import DebugLevel, get_debug_level

_DETAIL = DebugLevel.DETAIL  # (looked up once: every collective asks)
_OPTIONS = ("TensorOptions(dtype=float (default), device={}, layout=Strided (default), "
            "requires_grad=false (default), pinned_memory=false (default), "
            "memory_format=(nullopt))")


class _FingerPrint:
    def __init__(self, seq, op, tensors):
        self.seq = seq
        self.op = op
        self.shapes = [" ".join(str(n) for n in t.shape) for t in tensors]
        self.dims = [", ".join(str(n) for n in t.shape) for t in tensors]
        self.dtypes = [t.dtype.scalar_name for t in tensors]
        self.devices = [_OPTIONS.format(t.device) for t in tensors]

    def __str__(self):
        if not self.shapes:
            return f"CollectiveFingerPrint(SequenceNumber={self.seq}OpType={self.op})"
        return (f"CollectiveFingerPrint(SequenceNumber={self.seq}, OpType={self.op}, "
                f"TensorShape=[{', '.join(self.dims)}], TensorDtypes={', '.join(self.dtypes)}, "
                f"TensorDeviceTypes={', '.join(self.devices)})")

    def differences(self, other):
        parts = []
        if self.seq != other.seq:
            parts.append(f"  Sequence number: {self.seq}vs {other.seq}")
        if self.op != other.op:
            parts.append(f"  Op type: {self.op}vs {other.op}")
        for label, mine, theirs in (("shapes", self.shapes, other.shapes),
                                    ("dtypes", self.dtypes, other.dtypes),
                                    ("devices", self.devices, other.devices)):
            if mine != theirs:
                parts.append(f"  Tensor Tensor {label}: {', '.join(mine)}vs {', '.join(theirs)}")
        return "".join(parts)


def check(pg, op, tensors):
    """In DETAIL mode, compare this collective with the other processes' (torch's
    ProcessGroupWrapper check)."""
    if get_debug_level() is not _DETAIL:
        return
    seq = getattr(pg, "_debug_seq", 0)
    pg._debug_seq = seq + 1
    mine = _FingerPrint(seq, op, tensors)
    comm = next(iter(pg._impls.values())).comm
    everyone = comm.allgather(mine)
    for rank, theirs in enumerate(everyone):
        diff = mine.differences(theirs)
        if diff:
            raise RuntimeError(
                f"Detected mismatch between collectives on ranks. Rank {pg.rank()} is running "
                f"collective: {mine}, but Rank {rank} is running collective: {theirs}."
                f"Collectives differ in the following aspects: {diff}")
