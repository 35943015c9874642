"""torch.distributed's small public types: ReduceOp, Backend, DebugLevel, the error classes."""
from __future__ import annotations

import enum
import os
from datetime import timedelta

default_pg_timeout = timedelta(minutes=30)


class DistError(RuntimeError):
    """Raised when an error occurs in the distributed library."""


class DistBackendError(DistError):
    """Raised when a backend error occurs in distributed."""


class DistNetworkError(DistError):
    """Raised when a network error occurs in distributed."""


class DistStoreError(DistError):
    """Raised when an error occurs in the distributed store."""


class QueueEmptyError(DistStoreError):
    """Raised when a queue in the distributed store is empty."""


class _NamedEnum(enum.Enum):
    """An enum printed as torch's pybind enums print (``RedOpType.SUM``)."""

    def __str__(self):
        return f"{type(self).__name__}.{self.name}"

    def __int__(self):
        return self.value

    def __index__(self):
        return self.value

    # members are singletons compared by identity: the C hash spares the per-call cost of
    # Enum's Python one where a collective looks an op up
    __hash__ = object.__hash__


class RedOpType(_NamedEnum):
    SUM = 0
    AVG = 1
    PRODUCT = 2
    MIN = 3
    MAX = 4
    BAND = 5
    BOR = 6
    BXOR = 7
    PREMUL_SUM = 8


class ReduceOp:
    """An enum-like class of reduction operations: ``SUM``, ``AVG``, ``PRODUCT``, ``MIN``,
    ``MAX``, ``BAND``, ``BOR``, ``BXOR`` and ``PREMUL_SUM``."""

    RedOpType = RedOpType
    SUM = RedOpType.SUM
    AVG = RedOpType.AVG
    PRODUCT = RedOpType.PRODUCT
    MIN = RedOpType.MIN
    MAX = RedOpType.MAX
    BAND = RedOpType.BAND
    BOR = RedOpType.BOR
    BXOR = RedOpType.BXOR
    PREMUL_SUM = RedOpType.PREMUL_SUM

    def __init__(self, op):
        self.op = as_red_op(op)

    def __eq__(self, other):
        try:
            return self.op is as_red_op(other)
        except TypeError:
            return NotImplemented

    def __hash__(self):
        return hash(self.op)


def as_red_op(op) -> RedOpType:
    """The RedOpType of a ReduceOp, a RedOpType or an int."""
    if isinstance(op, RedOpType):
        return op
    if isinstance(op, ReduceOp):
        return op.op
    if isinstance(op, int) and not isinstance(op, bool):
        return RedOpType(op)
    raise TypeError(f"Expected a ReduceOp, got {type(op).__name__}")


class reduce_op:
    """Deprecated enum-like class for reduction operations (use ReduceOp)."""

    SUM = RedOpType.SUM
    PRODUCT = RedOpType.PRODUCT
    MIN = RedOpType.MIN
    MAX = RedOpType.MAX


class Backend(str):
    """The available backends: ``mpi`` (and ``gloo``, which ember runs on MPI) for CPU
    tensors, ``nccl`` for CUDA tensors. ``Backend("GLOO")`` returns ``"gloo"``."""

    UNDEFINED = "undefined"
    GLOO = "gloo"
    NCCL = "nccl"
    UCC = "ucc"
    MPI = "mpi"
    XCCL = "xccl"
    FAKE = "fake"
    backend_list = [UNDEFINED, GLOO, NCCL, XCCL, UCC, MPI, FAKE]  # noqa: RUF012 - torch's
    default_device_backend_map = {"cpu": GLOO, "cuda": NCCL}  # noqa: RUF012

    def __new__(cls, name: str):
        if not isinstance(name, str):
            raise ValueError("Backend constructor parameter must be string-ish")  # noqa: TRY004
        value = getattr(Backend, name.upper(), Backend.UNDEFINED)
        return name.lower() if value == Backend.UNDEFINED else value


class DebugLevel(_NamedEnum):
    OFF = 0
    INFO = 1
    DETAIL = 2


_debug_level = [DebugLevel.OFF]


def get_debug_level() -> DebugLevel:
    """The debug level (set from TORCH_DISTRIBUTED_DEBUG, as in torch)."""
    return _debug_level[0]


def set_debug_level(level: DebugLevel) -> None:
    _debug_level[0] = DebugLevel(level)


def set_debug_level_from_env() -> None:
    """Read TORCH_DISTRIBUTED_DEBUG (OFF, INFO or DETAIL)."""
    name = os.environ.get("TORCH_DISTRIBUTED_DEBUG", "OFF").upper()
    if name not in DebugLevel.__members__:
        raise ValueError("The value of TORCH_DISTRIBUTED_DEBUG must be OFF, INFO, or DETAIL.")
    _debug_level[0] = DebugLevel[name]
