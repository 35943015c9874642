"""Process groups: the default group made by ``init_process_group``, ``new_group``, queries.

ember's processes are MPI processes: they are started together by ``mpiexec`` (directly, or
through ``python -m ember.distributed.run`` or ``ember.multiprocessing.spawn``), and the
default group is MPI's world. ``init_process_group`` checks that the rank and world size it
is given (as arguments or through RANK / WORLD_SIZE) are MPI's.
"""
from __future__ import annotations

import os
import sys
import time
from datetime import timedelta

from . import _mpi, _mpich_tuning
from ._types import Backend, set_debug_level_from_env

_OUTPUT_GRACE_SECONDS = 0.3  # for mpiexec to pass on the last output before an abort


class ProcessGroup:
    """A set of processes that communicate together; ``rank()`` and ``size()`` are this
    process's place in it."""

    def __init__(self, backend, impls, ranks, timeout, group_name, group_desc):
        self._backend_name = backend
        self._impls = impls  # device type ("cpu", "cuda") -> MpiBackend / NcclBackend
        self._ranks = ranks  # global ranks, in group rank order
        self._timeout = timeout
        self.group_name = group_name
        self.group_desc = group_desc
        self._rank = impls["cpu"].rank if "cpu" in impls else next(iter(impls.values())).rank

    def rank(self) -> int:
        return self._rank

    def size(self) -> int:
        return len(self._ranks)

    def name(self) -> str:
        return self._backend_name

    def _impl_for(self, device_type):
        impl = self._impls.get(device_type)
        if impl is None:
            raise RuntimeError(f"No backend type associated with device type {device_type}")
        return impl

    def __repr__(self):
        return f"<ember.distributed.ProcessGroup {self.group_name} ranks={self._ranks}>"


class _World:
    def __init__(self):
        self.default_pg = None
        self.pg_map = {}  # pg -> backend name
        self.pg_group_ranks = {}  # pg -> {global rank: group rank}
        self.pg_names = {}  # pg -> name
        self.group_count = 0
        self.excepthook = None
        # (group argument, array type, dtype, op) -> the backend's blocking all-reduce, for
        # the calls whose checks passed once (see _collectives.all_reduce)
        self.allreduce_plans = {}


_world = _World()


class _WorldMeta(type):
    @property
    def WORLD(cls):
        return _world.default_pg


class group(metaclass=_WorldMeta):
    """``group.WORLD``: the default process group."""


class GroupMember(metaclass=_WorldMeta):
    """``GroupMember.WORLD`` and ``GroupMember.NON_GROUP_MEMBER``."""

    NON_GROUP_MEMBER = -100


def is_initialized() -> bool:
    """Whether the default process group has been initialized."""
    return _world.default_pg is not None


def default_group():
    if _world.default_pg is None:
        raise ValueError("Default process group has not been initialized, please make sure to "
                         "call init_process_group.")
    return _world.default_pg


def resolve(group):
    """The ProcessGroup a collective runs on (the default one for None / WORLD)."""
    if group is None:
        return default_group()
    return group


def not_member(group) -> bool:
    return group is not None and not isinstance(group, ProcessGroup) \
        and group == GroupMember.NON_GROUP_MEMBER


def _check_timeout(timeout):
    if not isinstance(timeout, timedelta):
        raise TypeError("Expected timeout argument to be of type datetime.timedelta, got "
                        f"{timeout}")


def _backend_names(backend):
    """{device type: backend name} for the ``backend`` argument of init_process_group."""
    if backend is None or str(backend).lower() == "undefined":
        return {"cpu": Backend.GLOO, **({"cuda": Backend.NCCL} if _nccl_usable() else {})}
    backend = str(backend).lower()
    if ":" in backend:
        pairs = {}
        for part in backend.split(","):
            device, _, name = part.partition(":")
            pairs[device.strip()] = Backend(name.strip())
        return pairs
    name = Backend(backend)
    if name == Backend.NCCL:
        return {"cuda": name}
    return {"cpu": name}


def _nccl_usable() -> bool:
    from ._nccl_backend import available
    return available()


def _make_impls(names, comm):
    impls = {}
    for device, name in names.items():
        if name in (Backend.GLOO, Backend.MPI):
            from ._mpi_backend import MpiBackend
            impls[device] = MpiBackend(comm)
        elif name == Backend.NCCL:
            from ._nccl_backend import NcclBackend, available
            if not available():
                raise RuntimeError("Distributed package doesn't have NCCL built in")
            impls[device] = NcclBackend(comm)
        elif name in (Backend.UCC, Backend.XCCL):
            raise RuntimeError(f"Distributed package doesn't have {name.upper()} built in")
        else:
            raise ValueError(f"Invalid backend: '{name}'")
    return impls


def _env_int(name):
    value = os.environ.get(name)
    return None if value in (None, "") else int(value)


def _launch_hint(n):
    return (f"start the processes with `mpiexec -n {n} python script.py`, "
            f"`python -m ember.distributed.run --nproc-per-node {n} script.py` or "
            "ember.multiprocessing.spawn")


def _check_against_mpi(rank, world_size, comm):
    """The rank and world size asked for must be MPI's own."""
    mpi_rank, mpi_size = comm.Get_rank(), comm.Get_size()
    if world_size is not None and world_size != mpi_size:
        raise RuntimeError(
            f"init_process_group was given world_size={world_size}, but this process belongs "
            f"to an MPI world of {mpi_size} process{'es' if mpi_size != 1 else ''} (ember's "
            f"processes communicate through MPI): {_launch_hint(world_size)}")
    if rank is not None and rank != mpi_rank:
        raise RuntimeError(
            f"init_process_group was given rank={rank}, but this process is rank {mpi_rank} "
            f"of its MPI world of {mpi_size} (ember's processes communicate through MPI); "
            "pass the rank the launcher gives (RANK, or the spawned function's argument)")


def init_process_group(backend=None, init_method=None, timeout=None, world_size=-1, rank=-1,
                       store=None, group_name="", pg_options=None, device_id=None) -> None:
    """Initialize the default process group: MPI's world of processes."""
    if _world.default_pg is not None:
        raise ValueError("trying to initialize the default process group twice!")
    if store is not None and init_method is not None:
        raise AssertionError("Cannot specify both init_method and store.")
    if store is not None:
        if not world_size > 0:
            raise AssertionError("world_size must be positive if using store")
        if not rank >= 0:
            raise AssertionError("rank must be non-negative if using store")
    if timeout is not None:
        _check_timeout(timeout)
    names = _backend_names(backend)
    if "cuda" in names and names["cuda"] == Backend.NCCL and not _nccl_usable():
        raise RuntimeError("Distributed package doesn't have NCCL built in")
    want_rank = rank if rank is not None and rank >= 0 else _env_int("RANK")
    want_size = world_size if world_size is not None and world_size > 0 else \
        _env_int("WORLD_SIZE")
    MPI = _mpi.mpi()
    _check_against_mpi(want_rank, want_size, MPI.COMM_WORLD)
    set_debug_level_from_env()
    comm = MPI.COMM_WORLD.Dup()
    pg = ProcessGroup(str(backend).lower() if backend else "cpu:gloo", _make_impls(names, comm),
                      list(range(comm.Get_size())), timeout, group_name or "0", "default_pg")
    _register(pg, {r: r for r in range(comm.Get_size())})
    _world.default_pg = pg
    install_abort_on_error(comm.Get_size())


def _register(pg, group_ranks):
    _world.pg_map[pg] = pg._backend_name
    _world.pg_group_ranks[pg] = group_ranks
    _world.pg_names[pg] = pg.group_name
    _world.group_count += 1


def size_from_mpiexec() -> int:
    """The number of processes mpiexec started with this one (1 when not started by it)."""
    return int(os.environ.get("PMI_SIZE", "1"))


def install_abort_on_error(size):
    """An exception that ends this process's main thread ends every process of the job, as
    MPI cannot tell the others (they would wait forever in their next collective)."""
    if size <= 1 or _world.excepthook is not None:
        return
    previous = sys.excepthook
    pid = os.getpid()

    def abort_job(kind, value, tb):
        previous(kind, value, tb)
        if kind is KeyboardInterrupt or os.getpid() != pid or (
                _world.default_pg is None and size_from_mpiexec() < 2):
            return  # (a process this one forked is not part of the MPI job)
        sys.stderr.flush()
        sys.stdout.flush()
        # NOTE: mpiexec's proxy forwards a process's output on its own time, and Abort ends the
        # job at once: without a moment's pause the traceback just written can be lost.
        time.sleep(_OUTPUT_GRACE_SECONDS)
        _mpi.mpi().COMM_WORLD.Abort(1)

    _world.excepthook = (previous, abort_job)
    sys.excepthook = abort_job


def destroy_process_group(group=None) -> None:
    """Destroy ``group`` (every group, and the default one, when None or WORLD)."""
    if not_member(group):
        return
    pg = _world.default_pg if group is None else group
    if pg is None:
        raise AssertionError("Process group cannot be None")
    if pg not in _world.pg_map:
        raise ValueError("Invalid process group specified")
    _world.allreduce_plans.clear()
    if group is None or pg is _world.default_pg:
        for each in list(_world.pg_map):
            _free(each)
        _world.pg_map.clear()
        _world.pg_group_ranks.clear()
        _world.pg_names.clear()
        _world.group_count = 0
        _world.default_pg = None
        _mpich_tuning.reset()
        if _world.excepthook is not None and sys.excepthook is _world.excepthook[1]:
            sys.excepthook = _world.excepthook[0]
        _world.excepthook = None
    else:
        _free(pg)
        del _world.pg_map[pg], _world.pg_group_ranks[pg], _world.pg_names[pg]


def _free(pg):
    freed = set()
    for impl in pg._impls.values():
        comm = getattr(impl, "comm", None)
        if comm is not None and id(comm) not in freed and _mpi.initialized():
            freed.add(id(comm))
            comm.Free()


def new_group(ranks=None, timeout=None, backend=None, pg_options=None,
              use_local_synchronization=False, group_desc=None, device_id=None):
    """A group of the processes ``ranks`` (all of them when None). Every process of the
    default group calls it; those outside ``ranks`` get ``GroupMember.NON_GROUP_MEMBER``."""
    world = default_group()
    size = world.size()
    if timeout is not None:
        _check_timeout(timeout)
    if use_local_synchronization and backend is not None and Backend(backend) == Backend.MPI:
        raise ValueError("MPI backend doesn't support use_local_synchronization=True")
    if ranks is None:
        ranks = list(range(size))
    else:
        ranks = sorted(ranks)
        if len(set(ranks)) != len(ranks):
            raise ValueError(f"ranks list must not contain duplicate entries, got {ranks}")
        if len(ranks) > size:
            raise ValueError("the new group's world size should be less or equal to the world "
                             "size set by init_process_group")
        for r in ranks:
            if r < 0 or r >= size:
                raise ValueError(f"Rank {r} is out of range. Valid ranks are 0 to {size - 1} "
                                 f"(world_size={size})")
    world_comm = _world_comm(world)
    MPI = _mpi.mpi()
    sub = world_comm.Get_group().Incl(ranks)
    try:
        comm = world_comm.Create_group(sub, tag=_world.group_count) \
            if world.rank() in ranks else None
    finally:
        sub.Free()
    if comm is None or comm == MPI.COMM_NULL:
        _world.group_count += 1
        return GroupMember.NON_GROUP_MEMBER
    names = _backend_names(backend) if backend is not None else \
        {d: Backend(n) for d, n in _world_names(world).items()}
    pg = ProcessGroup(str(backend).lower() if backend else world._backend_name,
                      _make_impls(names, comm), ranks, timeout if timeout is not None else
                      world._timeout, str(_world.group_count), group_desc or "undefined")
    _register(pg, {g: i for i, g in enumerate(ranks)})
    return pg


def _world_comm(pg):
    for impl in pg._impls.values():
        return impl.comm


def _world_names(pg):
    return {d: impl.name if impl.name != "mpi" else "gloo" for d, impl in pg._impls.items()}


def get_rank(group=None) -> int:
    """This process's rank in ``group`` (-1 if it is not a member)."""
    if not_member(group):
        return -1
    world = default_group()
    if group is None or group is world:
        return world.rank()
    return get_group_rank(group, world.rank())


def get_world_size(group=None) -> int:
    """The number of processes in ``group`` (-1 if this process is not a member)."""
    if not_member(group):
        return -1
    return resolve(group).size()


def get_group_rank(group, global_rank: int) -> int:
    """Translate a global rank into ``group``'s rank."""
    if group is _world.default_pg:
        return global_rank
    if group not in _world.pg_group_ranks:
        raise ValueError(f"Group {group} is not registered, please create group with "
                         "torch.distributed.new_group API")
    ranks = _world.pg_group_ranks[group]
    if global_rank not in ranks:
        raise ValueError(f"Global rank {global_rank} is not part of group {group}")
    return ranks[global_rank]


def get_global_rank(group, group_rank: int) -> int:
    """Translate ``group``'s rank into a global rank."""
    if group is _world.default_pg:
        return group_rank
    if group not in _world.pg_group_ranks:
        raise ValueError(f"Group {group} is not registered, please create group with "
                         "torch.distributed.new_group API")
    for rank, grp_rank in _world.pg_group_ranks[group].items():
        if grp_rank == group_rank:
            return rank
    raise ValueError(f"Group rank {group_rank} is not part of group {group}")


def get_process_group_ranks(group) -> list:
    """The global ranks of ``group``'s members."""
    return list(resolve(group)._ranks)


def get_backend(group=None) -> str:
    """The backend of ``group`` as a lower case string."""
    pg = group or default_group()
    if not_member(pg):
        raise ValueError("Invalid process group specified")
    if pg not in _world.pg_map:
        raise ValueError(f"Process group {pg} is not initialized in the world group map. "
                         "Please initialize the group first.")
    return Backend(_world.pg_map[pg])


def get_pg_count() -> int:
    return _world.group_count


def get_node_local_rank(fallback_rank=None) -> int:
    """LOCAL_RANK, as the launcher sets it."""
    if "LOCAL_RANK" in os.environ:
        return int(os.environ["LOCAL_RANK"])
    if fallback_rank is not None:
        return int(fallback_rank)
    raise RuntimeError("LOCAL_RANK is not in the environment. Consider passing fallback_rank "
                       "to allow `get_node_local_rank` to work, assuming you are not running "
                       "in a multi-device context and want the code to run locally instead.")


def is_torchelastic_launched() -> bool:
    return os.getenv("TORCHELASTIC_RUN_ID") is not None

