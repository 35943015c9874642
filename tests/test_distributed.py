"""ember.distributed's collectives, run in 2 and 4 MPI processes (distributed_cases.py), and
what a single process can check: errors before init, the small public types, futures."""
from __future__ import annotations

import pytest
from distributed_cases import CASES
from distributed_helpers import Launch, env_with_src, requires_mpi, run_command

import ember as torch
import ember.distributed as dist
from ember.futures import Future, collect_all, wait_all

_LAUNCHES = {}


def _launch(size):
    if size not in _LAUNCHES:
        _LAUNCHES[size] = Launch(size, "distributed_cases", CASES, timeout=120)
    return _LAUNCHES[size]


@requires_mpi
@pytest.mark.parametrize("size", [2, 4])
@pytest.mark.parametrize("case", CASES)
def test_collective_cases(size, case):
    _launch(size).check(case)


_READ_CHOICE = """
from ember.distributed import _mpi, _mpich_tuning as tuning
if not _mpi.mpi().Get_library_version().startswith("MPICH"):
    print("CHOICES not-MPICH")
else:
    cvar = tuning.ControlVariable.find(tuning._loaded_libmpi(), tuning.CVAR)
    choice = tuning.algorithm_choice()
    choice(1 << 20)  # a large message: ember's choice would be MPICH's auto
    print("CHOICES", cvar.choices()[tuning.SMALL_ALGORITHM], cvar.read(),
          choice is tuning._no_choice)
"""


@requires_mpi
def test_mpich_algorithm_set_by_the_user_is_kept():
    """ember reads MPICH's numbering of its Iallreduce algorithms from the variable's
    description: it agrees with MPICH's own reading of the environment, which ember then leaves
    alone (in a process of its own: importing mpi4py initialises MPI)."""
    import sys

    from ember.distributed._mpich_tuning import CVAR, SMALL_ALGORITHM
    code, out = run_command([sys.executable, "-c", _READ_CHOICE], timeout=60,
                            env=env_with_src({CVAR: SMALL_ALGORITHM}))
    line = next((x for x in out.splitlines() if x.startswith("CHOICES")), "CHOICES ?")
    if line == "CHOICES not-MPICH":
        pytest.skip("MPICH's algorithm variable")
    assert code == 0 and len(line.split()) == 4, out
    value, held, kept = line.split()[1:]
    assert value == held and kept == "True", out


def test_errors_before_init():
    msg = ("Default process group has not been initialized, please make sure to call "
           "init_process_group.")
    for call in (lambda: dist.all_reduce(torch.ones(2)), dist.get_rank, dist.get_world_size,
                 dist.barrier, lambda: dist.broadcast(torch.ones(1), 0)):
        with pytest.raises(ValueError, match=f"^{msg}$"):
            call()
    assert not dist.is_initialized()
    with pytest.raises(AssertionError, match="^Process group cannot be None$"):
        dist.destroy_process_group()
    with pytest.raises(AssertionError, match="^Cannot specify both init_method and store.$"):
        dist.init_process_group("gloo", init_method="env://", store=object())


def test_public_types():
    assert repr(dist.ReduceOp.SUM) == "<RedOpType.SUM: 0>"
    assert str(dist.ReduceOp.BXOR) == "RedOpType.BXOR"
    assert int(dist.ReduceOp.MAX) == 4
    assert dist.ReduceOp(dist.ReduceOp.MIN) == dist.ReduceOp.MIN
    assert dist.Backend("GLOO") == "gloo" and dist.Backend.NCCL == "nccl"
    assert repr(dist.DebugLevel.DETAIL) == "<DebugLevel.DETAIL: 2>"
    assert str(dist.default_pg_timeout) == "0:30:00"
    assert dist.GroupMember.NON_GROUP_MEMBER == -100
    assert dist.group.WORLD is None
    assert issubclass(dist.DistBackendError, RuntimeError)


@pytest.mark.skipif(dist.is_nccl_available(), reason="CuPy with NCCL is installed")
def test_nccl_without_cupy_is_torchs_error():
    with pytest.raises(RuntimeError, match="^Distributed package doesn't have NCCL built in$"):
        dist.init_process_group("nccl")
    assert not dist.is_initialized()


def test_futures():
    f = Future()
    assert not f.done()
    chained = f.then(lambda fut: fut.value() + 1)
    seen = []
    f.add_done_callback(lambda fut: seen.append(fut.value()))
    f.set_result(3)
    assert f.done() and f.wait() == 3 and seen == [3] and chained.wait() == 4
    with pytest.raises(RuntimeError, match="^Attempting to mark a completed Future as complete "
                                           "again. Note that a Future can only be marked "
                                           "completed once.$"):
        f.set_result(4)
    bad = f.then(lambda fut: 1 / 0)
    with pytest.raises(RuntimeError, match="^Got the following error when running the "
                                           "callback: ZeroDivisionError: division by zero"):
        bad.wait()
    g = Future()
    g.set_exception(ValueError("x"))
    with pytest.raises(ValueError, match="^x$"):
        g.wait()
    assert wait_all([f, chained]) == [3, 4]
    assert collect_all([f]).wait() == [f]
