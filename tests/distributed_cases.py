"""Collective cases, run in every process of a launch (see distributed_helpers.py).

Each case gets (rank, size); every process computes with NumPy what every other process
holds, so expectations need no communication.
"""
from __future__ import annotations

import time
import warnings
from datetime import timedelta

import numpy as np
import pytest

import ember as torch
import ember.distributed as dist

R = dist.ReduceOp
_NP = {torch.float32: np.float32, torch.float64: np.float64, torch.int32: np.int32,
       torch.int64: np.int64, torch.uint8: np.uint8, torch.int8: np.int8,
       torch.float16: np.float16, torch.bool: np.bool_, torch.complex64: np.complex64}


def _values(r, dtype):
    """Process r's contribution: distinct per process and element, small enough for uint8."""
    if dtype == torch.bool:
        return np.array([True, False, r % 2 == 1, r == 0, True, r > 0])
    base = np.array([1, 2, 3, 5, 7, 11]) + r
    if dtype == torch.complex64:
        return (base + 1j * (base % 3)).astype(np.complex64)
    return base.astype(_NP[dtype])


def _expected(op, dtype, size):
    vals = [_values(r, dtype) for r in range(size)]
    if dtype == torch.bool:
        logical = {R.SUM: np.logical_or, R.MAX: np.logical_or, R.BOR: np.logical_or,
                   R.PRODUCT: np.logical_and, R.MIN: np.logical_and, R.BAND: np.logical_and,
                   R.BXOR: np.logical_xor}[op]
        return logical.reduce(vals)
    ufunc = {R.SUM: np.add, R.AVG: np.add, R.PRODUCT: np.multiply, R.MIN: np.minimum,
             R.MAX: np.maximum, R.BAND: np.bitwise_and, R.BOR: np.bitwise_or,
             R.BXOR: np.bitwise_xor}[op]
    out = vals[0].copy()
    for v in vals[1:]:
        out = ufunc(out, v).astype(vals[0].dtype)
    if op is R.AVG:
        out = (out / size).astype(vals[0].dtype)
    return out


def _ops_for(dtype):
    if dtype == torch.complex64:
        return [R.SUM, R.AVG]
    ops = [R.SUM, R.PRODUCT, R.MIN, R.MAX]
    if dtype.is_floating_point:
        return ops + [R.AVG]
    return ops + [R.BAND, R.BOR, R.BXOR]


def all_reduce_every_op_and_dtype(rank, size):
    for dtype in _NP:
        for op in _ops_for(dtype):
            t = torch.tensor(_values(rank, dtype))
            buffer = t._data
            dist.all_reduce(t, op=op)
            assert t._data is buffer  # in place, on the tensor's own array
            want = _expected(op, dtype, size)
            np.testing.assert_array_equal(t.numpy(), want, err_msg=f"{dtype} {op}")
            assert t.dtype == dtype


def all_reduce_strided_views(rank, size):
    base = torch.zeros(4, 6, dtype=torch.float64)
    view = base[:, 1::2]  # strided: reduced through a copy written back
    view += rank + 1
    dist.all_reduce(view)
    total = sum(r + 1 for r in range(size))
    np.testing.assert_array_equal(base[:, 1::2].numpy(), np.full((4, 3), total))
    np.testing.assert_array_equal(base[:, ::2].numpy(), np.zeros((4, 3)))
    t = torch.arange(12, dtype=torch.int64).reshape(3, 4).t()  # transposed
    dist.all_reduce(t, op=R.MAX)
    np.testing.assert_array_equal(t.numpy(), np.arange(12).reshape(3, 4).T)


def all_reduce_repeated_calls(rank, size):
    """Calls after the first of a kind take a shorter path: the same results and errors."""
    total = sum(r + 1 for r in range(size))
    for op, want in ((R.SUM, total), (R.AVG, total / size), (R.MAX, size)):
        for _ in range(3):
            t = torch.full((2, 3), rank + 1.0)
            dist.all_reduce(t, op=op)
            np.testing.assert_array_equal(t.numpy(), np.full((2, 3), want), err_msg=str(op))
    base = torch.zeros(4, 6)
    view = base[:, ::2]  # the same dtype and op, but strided: reduced through a copy
    view += rank + 1
    dist.all_reduce(view)
    np.testing.assert_array_equal(base.numpy()[:, ::2], np.full((4, 3), total))
    np.testing.assert_array_equal(base.numpy()[:, 1::2], np.zeros((4, 3)))
    with pytest.raises(RuntimeError, match="^Cannot use ReduceOp.BAND with non-integral "
                                           "dtype$"):
        dist.all_reduce(torch.ones(2), op=R.BAND)
    with pytest.raises(TypeError, match="Expected parameter `tensor` of type torch.Tensor"):
        dist.all_reduce(np.ones(2, np.float32))
    t = torch.ones(2)
    dist.all_reduce(t, op=R.SUM, group=dist.group.WORLD)
    dist.all_reduce(t, op=R.SUM, group=dist.group.WORLD)
    assert t.tolist() == [size * size] * 2
    work = dist.all_reduce(t, async_op=True)  # still a Work
    assert work.wait() and t.tolist() == [size ** 3] * 2



def _mpich_algorithm():
    """The Iallreduce algorithm MPICH's variable holds (its name), or None where ember does
    not choose it (see ember.distributed._mpich_tuning)."""
    from ember.distributed import _mpich_tuning as tuning
    if tuning.algorithm_choice() is tuning._no_choice:
        return None
    cvar = tuning.ControlVariable.find(tuning._loaded_libmpi(), tuning.CVAR)
    names = {value: name for name, value in cvar.choices().items()}
    return names[cvar.read()]


def _late_group(rank):
    """A group whose timeout is 300 ms on rank 0 and a minute elsewhere (a process's own
    setting): the late processes of ``_late_all_reduce`` must not time out on a busy
    machine."""
    return dist.new_group(timeout=timedelta(milliseconds=300) if rank == 0
                          else timedelta(seconds=60))


def _late_all_reduce(t, group, rank):
    """A blocking all_reduce of ``t`` in a ``_late_group`` that times out on rank 0, whose
    pending part the others complete when they arrive late. Whether ``t`` holds the
    result."""
    if rank == 0:
        with pytest.raises(RuntimeError, match="^Timed out waiting 300ms for allreduce "
                                               "operation to complete$"):
            dist.all_reduce(t, group=group)
        # NOTE: MPI progresses rank 0's pending part only inside MPI calls: it waits in the
        # barrier while the others complete the all-reduce (within their own 300 ms)
        dist.barrier()
        return False
    time.sleep(0.8)
    dist.all_reduce(t, group=group)  # rank 0's pending part arrives
    dist.barrier()
    return True


def all_reduce_sizes_around_the_algorithm_switch(rank, size):
    """Small all-reduces run another MPICH algorithm than large ones: processes that mix
    blocking and async_op calls, sizes on both sides of the switch, groups with different
    histories and a timeout all match and give the sums (a mismatch would hang the launch)."""
    from ember.distributed._mpich_tuning import SMALL_BYTES
    counts = [256, SMALL_BYTES // 4, SMALL_BYTES // 4 + 1, 16384, 3, SMALL_BYTES // 4]
    total = sum(r + 1 for r in range(size))
    algorithm = _mpich_algorithm()
    for k, n in enumerate(counts):
        t = torch.full((n,), rank + 1.0)
        if (rank + k) % 2:  # the others make the same call with the other kind
            work = dist.all_reduce(t, async_op=True)
            assert isinstance(work, dist.Work) and work.wait()
        else:
            assert dist.all_reduce(t) is None
        np.testing.assert_array_equal(t.numpy(), np.full(n, float(total)), err_msg=str(n))
        if algorithm is not None:
            want = "sched_recursive_doubling" if 4 * n <= SMALL_BYTES else "auto"
            assert _mpich_algorithm() == want, (n, _mpich_algorithm())
    # each process's own group first: every process's last choice differs
    own = [dist.new_group([r]) for r in range(size)]
    mine = torch.ones(16384 if rank % 2 else 4)
    dist.all_reduce(mine, group=own[rank])
    timed = dist.new_group(timeout=timedelta(seconds=60))
    t = torch.full((1024,), rank + 1.0)
    work = dist.all_reduce(t, group=timed, async_op=rank == 0)
    if rank == 0:
        work.wait()
    np.testing.assert_array_equal(t.numpy(), np.full(1024, float(total)))
    late = _late_group(rank)
    small = torch.ones(256)  # contiguous and small: the recursive doubling algorithm
    if _late_all_reduce(small, late, rank):
        assert small.tolist() == [size] * 256
    for g in own + [timed, late]:
        dist.destroy_process_group(g)

def low_precision_reductions(rank, size):
    """bfloat16 (which MPI cannot reduce: an operation of ember's does, in place) and float16
    in every reduction; the values are small integers, so every order of steps is exact."""
    for dtype in (torch.bfloat16, torch.float16):
        for op in (R.SUM, R.AVG, R.PRODUCT, R.MIN, R.MAX):
            mine = torch.tensor([1.0, 2.0, -3.0, 0.5, 4.0, 1.0]) + (rank % 2)
            each = [np.array([1.0, 2.0, -3.0, 0.5, 4.0, 1.0]) + (r % 2) for r in range(size)]
            ufunc = {R.SUM: np.add, R.AVG: np.add, R.PRODUCT: np.multiply, R.MIN: np.minimum,
                     R.MAX: np.maximum}[op]
            want = ufunc.reduce(each) / (size if op is R.AVG else 1)
            t = mine.to(dtype)
            dist.all_reduce(t, op=op)
            assert t.dtype == dtype
            np.testing.assert_array_equal(t.float().numpy(), want, err_msg=f"{dtype} {op}")
            base = torch.zeros(6, 2, dtype=dtype)
            view = base[:, 0]  # strided
            view.copy_(mine)
            dist.all_reduce(view, op=op, async_op=True).wait()
            np.testing.assert_array_equal(base[:, 0].float().numpy(), want)
            np.testing.assert_array_equal(base[:, 1].float().numpy(), np.zeros(6))
            view.copy_(mine)
            dist.all_reduce(view, op=op)
            np.testing.assert_array_equal(base[:, 0].float().numpy(), want)
            t = mine.to(dtype)
            dist.reduce(t, dst=size - 1, op=op)
            if rank == size - 1:
                np.testing.assert_array_equal(t.float().numpy(), want)
            whole = torch.cat([mine] * size).to(dtype)
            out = torch.zeros(6, dtype=dtype)
            dist.reduce_scatter_tensor(out, whole, op=op)
            np.testing.assert_array_equal(out.float().numpy(), want)


def broadcast_from_each_root(rank, size):
    for src in range(size):
        t = torch.full((2, 3), float(rank))
        dist.broadcast(t, src=src)
        np.testing.assert_array_equal(t.numpy(), np.full((2, 3), float(src)))
        base = torch.zeros(3, 8, dtype=torch.int32)
        view = base[:, 2:6:2]  # moved in place through an MPI derived datatype
        view += rank * 10 + 1
        dist.broadcast(view, src=src)
        want = np.zeros((3, 8), np.int32)
        want[:, 2:6:2] = src * 10 + 1
        np.testing.assert_array_equal(base.numpy(), want)


def reduce_to_each_root(rank, size):
    for dst in range(size):
        t = torch.tensor(_values(rank, torch.float64))
        dist.reduce(t, dst=dst, op=R.SUM)
        if rank == dst:
            np.testing.assert_array_equal(t.numpy(), _expected(R.SUM, torch.float64, size))
        else:  # the other processes' tensors are left as they were
            np.testing.assert_array_equal(t.numpy(), _values(rank, torch.float64))
    t = torch.tensor(_values(rank, torch.float32))
    dist.reduce(t, dst=0, op=R.AVG)
    if rank == 0:
        np.testing.assert_allclose(t.numpy(), _expected(R.AVG, torch.float32, size))


def all_gather_variants(rank, size):
    outs = [torch.zeros(2, 3) for _ in range(size)]
    dist.all_gather(outs, torch.full((2, 3), float(rank)))
    for r, o in enumerate(outs):
        np.testing.assert_array_equal(o.numpy(), np.full((2, 3), float(r)))
    big = torch.zeros(size, 4, 6)
    strided = [big[r, :, ::3] for r in range(size)]  # strided outputs
    dist.all_gather(strided, torch.full((4, 2), rank + 0.5))
    for r in range(size):
        np.testing.assert_array_equal(big[r, :, ::3].numpy(), np.full((4, 2), r + 0.5))
        np.testing.assert_array_equal(big[r, :, 1::3].numpy(), np.zeros((4, 2)))
    flat = torch.zeros(size * 3, dtype=torch.int64)
    dist.all_gather_into_tensor(flat, torch.arange(3) + 10 * rank)
    np.testing.assert_array_equal(flat.numpy(), np.concatenate(
        [np.arange(3) + 10 * r for r in range(size)]))
    stacked = torch.zeros(size, 3, dtype=torch.int64)
    dist.all_gather_into_tensor(stacked, torch.arange(3) + 10 * rank)
    np.testing.assert_array_equal(stacked.numpy().reshape(-1), flat.numpy())
    src = torch.arange(8.).reshape(2, 4)[:, ::2] + rank  # strided input
    outs = [torch.zeros(2, 2) for _ in range(size)]
    dist.all_gather(outs, src)
    for r, o in enumerate(outs):
        np.testing.assert_array_equal(o.numpy(), np.arange(8.).reshape(2, 4)[:, ::2] + r)


def reduce_scatter_variants(rank, size):
    inputs = [torch.full((3,), float(rank * size + i)) for i in range(size)]
    out = torch.zeros(3)
    dist.reduce_scatter(out, inputs)
    np.testing.assert_array_equal(out.numpy(), np.full(3, float(
        sum(r * size + rank for r in range(size)))))
    whole = torch.arange(size * 4, dtype=torch.float64).reshape(size * 2, 2) * (rank + 1)
    out = torch.zeros(2, 2, dtype=torch.float64)
    for op in (R.SUM, R.MAX, R.AVG):
        dist.reduce_scatter_tensor(out, whole, op=op)
        block = np.arange(size * 4, dtype=np.float64).reshape(size * 2, 2)[2 * rank:2 * rank + 2]
        factors = np.arange(1, size + 1)
        want = {R.SUM: block * factors.sum(), R.MAX: block * size,
                R.AVG: block * factors.sum() / size}[op]
        np.testing.assert_allclose(out.numpy(), want)


def gather_and_scatter(rank, size):
    for root in range(size):
        t = torch.full((2,), float(rank), dtype=torch.float64)
        outs = [torch.zeros(2, dtype=torch.float64) for _ in range(size)] if rank == root \
            else None
        dist.gather(t, outs, dst=root)
        if rank == root:
            for r, o in enumerate(outs):
                np.testing.assert_array_equal(o.numpy(), [r, r])
        got = torch.zeros(2, 3)[:, ::2]  # strided output
        pieces = [torch.full((2, 2), float(10 * r + root)) for r in range(size)] \
            if rank == root else None
        dist.scatter(got, pieces, src=root)
        np.testing.assert_array_equal(got.numpy(), np.full((2, 2), float(10 * rank + root)))


def all_to_all_variants(rank, size):
    inp = torch.arange(size * 2, dtype=torch.float32) + 100 * rank
    out = torch.zeros(size * 2)
    dist.all_to_all_single(out, inp)
    want = np.concatenate([np.arange(2 * rank, 2 * rank + 2) + 100 * r for r in range(size)])
    np.testing.assert_array_equal(out.numpy(), want)
    # uneven splits: process r sends j+1 rows to process j
    in_splits = [j + 1 for j in range(size)]
    inp = torch.cat([torch.full((j + 1, 2), float(10 * rank + j)) for j in range(size)])
    out_splits = [rank + 1] * size
    out = torch.zeros(sum(out_splits), 2)
    dist.all_to_all_single(out, inp, out_splits, in_splits)
    want = np.concatenate([np.full((rank + 1, 2), float(10 * r + rank)) for r in range(size)])
    np.testing.assert_array_equal(out.numpy(), want)
    ins = [torch.full((r + 1,), float(rank * 10 + r), dtype=torch.float64) for r in range(size)]
    outs = [torch.zeros(rank + 1, dtype=torch.float64) for _ in range(size)]
    dist.all_to_all(outs, ins)
    for r, o in enumerate(outs):
        np.testing.assert_array_equal(o.numpy(), np.full(rank + 1, float(r * 10 + rank)))


def point_to_point(rank, size):
    right, left = (rank + 1) % size, (rank - 1) % size
    out, got = torch.full((3,), float(rank)), torch.zeros(3)
    works = dist.batch_isend_irecv([dist.P2POp(dist.isend, out, right),
                                    dist.P2POp(dist.irecv, got, left)])
    for w in works:
        w.wait()
    np.testing.assert_array_equal(got.numpy(), np.full(3, float(left)))
    if rank == 0:
        for r in range(1, size):
            dist.send(torch.full((2, 2), float(r)), dst=r, tag=7)
        senders = set()
        for _ in range(1, size):
            buf = torch.zeros(2)
            src = dist.recv(buf)  # from any source
            senders.add(src)
            assert buf.tolist() == [src, src]
        assert senders == set(range(1, size))
    else:
        base = torch.zeros(2, 4)
        dist.recv(base[:, ::2], src=0, tag=7)  # received in place into a strided view
        np.testing.assert_array_equal(base.numpy(), [[rank, 0, rank, 0], [rank, 0, rank, 0]])
        w = dist.isend(torch.full((2,), float(rank)), dst=0)
        w.wait()
    if rank == 1:
        w = dist.irecv(torch.zeros(1))  # from any source, pending until rank 0 sends
        dist.send(torch.zeros(1), dst=0, tag=3)
        w.wait()
        assert w.source_rank() == 0
    elif rank == 0:
        dist.recv(torch.zeros(1), src=1, tag=3)
        dist.send(torch.ones(1), dst=1)


def barriers_and_async_work(rank, size):
    dist.barrier()
    dist.monitored_barrier(timeout=timedelta(seconds=30))
    t = torch.full((4,), float(rank))
    work = dist.all_reduce(t, async_op=True)
    assert isinstance(work, dist.Work)
    fut = work.get_future().then(lambda f: f.value()[0] * 2)
    assert work.wait() is True and work.is_completed() and work.is_success()
    assert work.exception() is None
    assert work.result()[0] is t
    total = float(sum(range(size)))
    np.testing.assert_array_equal(fut.wait().numpy(), np.full(4, 2 * total))
    work = dist.barrier(async_op=True)
    while not work.is_completed():
        time.sleep(0.001)


def object_collectives(rank, size):
    objs = [None] * size
    dist.all_gather_object(objs, {"rank": rank, "x": [rank] * rank})
    assert objs == [{"rank": r, "x": [r] * r} for r in range(size)]
    items = ["a", rank, None] if rank == 1 else [None, None, None]
    dist.broadcast_object_list(items, src=1)
    assert items == ["a", 1, None]
    gathered = [None] * size if rank == 0 else None
    dist.gather_object(("g", rank), gathered, dst=0)
    if rank == 0:
        assert gathered == [("g", r) for r in range(size)]
    out = [None]
    dist.scatter_object_list(out, [f"s{r}" for r in range(size)] if rank == 0 else None, src=0)
    assert out == [f"s{rank}"]
    if rank == 0:
        dist.send_object_list([{"k": 1}, 2], dst=size - 1)
    elif rank == size - 1:
        got = [None, None]
        assert dist.recv_object_list(got, src=0) == 0
        assert got == [{"k": 1}, 2]


def subgroups(rank, size):
    evens = list(range(0, size, 2))
    g = dist.new_group(evens)
    t = torch.ones(2) * (rank + 1)
    if rank in evens:
        assert dist.get_rank(g) == evens.index(rank)
        assert dist.get_world_size(g) == len(evens)
        assert dist.get_process_group_ranks(g) == evens
        assert dist.get_global_rank(g, dist.get_group_rank(g, rank)) == rank
        dist.all_reduce(t, group=g)
        assert t.tolist() == [float(sum(r + 1 for r in evens))] * 2
        dist.broadcast(t, src=evens[-1], group=g)  # src is a global rank
        dist.broadcast(t, group=g, group_src=0)
    else:
        assert g == dist.GroupMember.NON_GROUP_MEMBER
        assert dist.get_rank(g) == -1 and dist.get_world_size(g) == -1
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            assert dist.all_reduce(t, group=g) is None
        assert str(caught[0].message) == (f"Running all_reduce on global rank {rank} which "
                                          "does not belong to the given group.")
        assert t.tolist() == [rank + 1.0] * 2
    everyone = dist.new_group()
    t = torch.ones(1)
    dist.all_reduce(t, group=everyone)
    assert t.item() == size
    dist.destroy_process_group(everyone)
    assert dist.is_initialized()


def timeouts(rank, size):
    t = torch.ones(2)
    if rank == 0:
        work = dist.all_reduce(t, async_op=True)
        with pytest.raises(RuntimeError, match="^Timed out waiting 300ms for allreduce "
                                               "operation to complete$"):
            work.wait(timeout=timedelta(milliseconds=300))
        work.wait()  # still pending: completes once the others take part
    else:
        time.sleep(1.0)
        dist.all_reduce(t)
    assert t.tolist() == [size, size]
    g = dist.new_group(timeout=timedelta(milliseconds=400))
    if rank == 0:
        with pytest.raises(RuntimeError, match="^Timed out waiting 400ms for barrier"):
            dist.barrier(group=g)
    else:  # (their own wait is long: on a loaded machine the others may be late to arrive)
        time.sleep(1.0)
        dist.barrier(group=g, async_op=True).wait(timeout=timedelta(seconds=60))
    if rank == 0:
        with pytest.raises(RuntimeError, match=r"^\[Rank 0\]: Rank 1 failed to pass "
                                               "monitoredBarrier in 300 ms$"):
            dist.monitored_barrier(timeout=timedelta(milliseconds=300))
    dist.barrier()
    if rank != 0:  # late arrivals: rank 0's pending receives complete, the job ends cleanly
        from ember.distributed._barrier import _TAG
        dist.group.WORLD._impls["cpu"].comm.Send(np.zeros(1, np.int8), dest=0, tag=_TAG)
    fast = _late_group(rank)
    base = torch.zeros(3, 2)
    view = base[:, 1]  # strided: reduced through a copy MPI still owns after the timeout
    view += rank + 1
    if _late_all_reduce(view, fast, rank):
        assert view.tolist() == [size * (size + 1) / 2] * 3


def torch_errors(rank, size):
    with pytest.raises(ValueError, match="trying to initialize the default process group "
                                         "twice!"):
        dist.init_process_group("gloo")
    with pytest.raises(RuntimeError, match="^Cannot use ReduceOp.BAND with non-integral "
                                           "dtype$"):
        dist.all_reduce(torch.ones(2), op=R.BAND)
    with pytest.raises(RuntimeError, match="^result type Float can't be cast to the desired "
                                           "output type Long$"):
        dist.all_reduce(torch.ones(2, dtype=torch.int64), op=R.AVG)
    with pytest.raises(ValueError, match=r"^all_reduce does not support RedOpType.MAX on "
                                         "complex tensors$"):
        dist.all_reduce(torch.ones(2, dtype=torch.complex64), op=R.MAX)
    with pytest.raises(RuntimeError, match=f"^ProcessGroupGloo::broadcast: invalid root rank: "
                                           f"{size + 3}$"):
        dist.broadcast(torch.ones(2), src=size + 3)
    with pytest.raises(ValueError, match="^Invalid destination rank: destination rank should "
                                         "not be the same as the rank of the current process."):
        dist.send(torch.ones(2), dst=rank)
    spec = "must be specified on destination rank." if rank == 0 else \
        "must NOT be specified on non-destination ranks."
    with pytest.raises(ValueError, match=f"^Argument ``gather_list`` {spec}"):
        dist.gather(torch.ones(2), None if rank == 0 else [torch.ones(2)] * size, dst=0)
    with pytest.raises(RuntimeError, match=r"^ProcessGroupGloo::allgather: invalid tensor size "
                                           r"at index 0 \(expected \(3\), got \(2\)\)$"):
        dist.all_gather([torch.zeros(2) for _ in range(size)], torch.ones(3))
    with pytest.raises(TypeError, match="Invalid function argument. Expected parameter "
                                        "`tensor` of type torch.Tensor"):
        dist.all_reduce([1, 2])
    with pytest.raises(ValueError, match="^Invalid ``op``. Expected ``op`` to be of type "):
        dist.P2POp(dist.send, torch.ones(1), 0)


def mismatch_detail_mode(rank, size):
    """TORCH_DISTRIBUTED_DEBUG=DETAIL: the processes compare collectives first."""
    dist.set_debug_level(dist.DebugLevel.DETAIL)
    try:
        other = 1 if rank == 0 else 0
        opts = ("TensorOptions(dtype=float (default), device=cpu, layout=Strided (default), "
                "requires_grad=false (default), pinned_memory=false (default), "
                "memory_format=(nullopt))")

        def fp(seq, op, shape, dtype):
            return (f"CollectiveFingerPrint(SequenceNumber={seq}, OpType={op}, "
                    f"TensorShape=[{shape}], TensorDtypes={dtype}, TensorDeviceTypes={opts})")
        with pytest.raises(RuntimeError) as info:
            dist.all_reduce(torch.ones(2, 3 + rank))
        mine, theirs = f"2, {3 + rank}", f"2, {3 + other}"
        assert str(info.value) == (
            f"Detected mismatch between collectives on ranks. Rank {rank} is running "
            f"collective: {fp(0, 'ALLREDUCE', mine, 'Float')}, but Rank {other} is running "
            f"collective: {fp(0, 'ALLREDUCE', theirs, 'Float')}.Collectives differ in the "
            f"following aspects:   Tensor Tensor shapes: {mine.replace(',', '')}vs "
            f"{theirs.replace(',', '')}")
        with pytest.raises(RuntimeError, match="Tensor Tensor dtypes: (Long|Float)vs "
                                               "(Float|Long)$"):
            dist.all_reduce(torch.ones(3, dtype=torch.int64 if rank else torch.float32))
        with pytest.raises(RuntimeError, match="Op type: (BROADCAST|ALLREDUCE)vs "
                                               "(ALLREDUCE|BROADCAST)$"):
            dist.all_reduce(torch.ones(3)) if rank == 0 else dist.broadcast(torch.ones(3), 0)
        dist.all_reduce(torch.ones(2))  # matching collectives pass
    finally:
        dist.set_debug_level(dist.DebugLevel.OFF)


CASES = ["all_reduce_every_op_and_dtype", "all_reduce_strided_views", "all_reduce_repeated_calls",
         "all_reduce_sizes_around_the_algorithm_switch",
         "low_precision_reductions", "broadcast_from_each_root", "reduce_to_each_root", "all_gather_variants", "reduce_scatter_variants",
         "gather_and_scatter", "all_to_all_variants", "point_to_point",
         "barriers_and_async_work", "object_collectives", "subgroups", "timeouts",
         "torch_errors", "mismatch_detail_mode"]
