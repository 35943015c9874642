"""Collectives and point-to-point messages of one process group on an MPI communicator.

Each method takes NumPy arrays (the tensors' own buffers) and returns a Work around MPI's
nonblocking routine (``I...``); a blocking call waits for it before returning. Results are written into the given arrays in
place: contiguous arrays and strided ones MPI can describe (``_mpi.message``) are used as
they are; reductions, which MPI defines on contiguous buffers only, run on a contiguous copy
of a strided array that is written back (bfloat16 is reduced by a user-defined operation,
see ``_mpi.reduction``).
"""
from __future__ import annotations

import numpy as np

from . import _mpi, _mpich_tuning
from ._types import RedOpType
from ._work import Pending, Work, keep_until_done, wait_within


class _Requests(Pending):
    def __init__(self, requests, status=None):
        self.requests = requests
        self.status = status

    def wait(self):
        MPI = _mpi.mpi()
        if self.status is not None:
            self.requests[0].Wait(self.status)
        else:
            MPI.Request.Waitall(self.requests)

    def test(self) -> bool:
        MPI = _mpi.mpi()
        if self.status is not None:
            return self.requests[0].Test(self.status)
        return MPI.Request.Testall(self.requests)

    def source(self):
        return self.status.Get_source() if self.status is not None else None


def _check(call, *args):
    """Run an MPI call; MPI's errors become torch's DistBackendError."""
    MPI = _mpi.mpi()
    try:
        return call(*args)
    except MPI.Exception as e:
        from ._types import DistBackendError
        raise DistBackendError(e.Get_error_string()) from None


def _writable_contiguous(a):
    return a.flags.c_contiguous and a.flags.writeable


class _Buffers:
    """Temporaries of one operation: the arrays MPI writes and how to write them back."""

    def __init__(self):
        self.finish = []
        self.types = []

    def message(self, a, writes):
        """A buffer spec for ``a`` in place if MPI can describe it, else a contiguous copy
        (written back afterwards if the operation ``writes`` it)."""
        spec = _mpi.message(a) if (a.flags.writeable or not writes) else None
        if spec is not None:
            if spec[0] is not a:
                self.types.append(spec[2])
            return spec
        tmp = np.ascontiguousarray(a)
        if writes:
            self.finish.append(lambda: np.copyto(a, tmp))
        return [tmp, tmp.size, _mpi.basic_type(tmp.dtype)]

    def reducible(self, a, op, writes=True):
        """``[array, count, datatype], operation``: how MPI reduces ``a`` by ``op``, on ``a``
        itself when it is contiguous, else on a contiguous copy (a float64 one for a dtype
        MPI cannot reduce)."""
        found = _mpi.reduction(a.dtype, op)
        if found is not None and (_writable_contiguous(a) or (
                not writes and a.flags.c_contiguous)):
            return [a, a.size, found[0]], found[1]
        tmp = np.ascontiguousarray(a) if found is not None else a.astype(np.float64)
        if writes:
            self.finish.append(lambda: np.copyto(a, tmp, casting="unsafe"))
        datatype, mpi_op = found or _mpi.reduction(tmp.dtype, op)
        return [tmp, tmp.size, datatype], mpi_op

    def contiguous_out(self, a):
        if _writable_contiguous(a):
            return a
        tmp = np.empty(a.shape, a.dtype)
        self.finish.append(lambda: np.copyto(a, tmp))
        return tmp

    def free(self):
        for t in self.types:
            t.Free()
        self.types = []


def _same_aligned(arrays, dtype):
    """Contiguous arrays of ``dtype`` at element-aligned addresses: MPI can address them all
    from MPI_BOTTOM, with no staging copy."""
    return bool(arrays) and all(
        a.dtype == dtype and _writable_contiguous(a) and _mpi.address(a) % a.itemsize == 0
        for a in arrays)


def _bottom(arrays):
    """``[MPI_BOTTOM, (counts, displacements), type]`` addressing ``arrays`` where they are."""
    MPI = _mpi.mpi()
    dt = arrays[0].dtype
    counts = [a.size for a in arrays]
    displs = [_mpi.address(a) // dt.itemsize for a in arrays]
    return [MPI.BOTTOM, (counts, displs), _mpi.basic_type(dt)]


class MpiBackend:
    """The MPI side of a process group: ``comm`` holds exactly the group's processes."""

    name = "mpi"

    def __init__(self, comm):
        self.comm = comm
        self.rank = comm.Get_rank()
        self.size = comm.Get_size()
        self._plans = {}  # (dtype, op) -> allreduce_plan's function
        self._algorithm = _mpich_tuning.algorithm_choice()  # by message size, before Iallreduce

    # -- plumbing --------------------------------------------------------------------------
    def _run(self, name, blocking, args, bufs, outputs, timeout, after=()):
        """Start MPI's nonblocking ``I<name>``; wrap it in a Work (waited for if
        ``blocking``).

        NOTE: always the nonblocking routine, even for a blocking call: MPI does not match
        a blocking collective with a nonblocking one, and another process may well make the
        same call with ``async_op=True``.
        """
        finish = bufs.finish + list(after) + [bufs.free]
        req = _check(getattr(self.comm, "I" + name[0].lower() + name[1:]), *args)
        work = Work(_Requests([req]), finish, outputs, name.lower(), timeout)
        if blocking:
            work.wait()
        return work

    def _average(self, a, op):
        if op is RedOpType.AVG:
            size = self.size
            return [lambda: np.divide(a, size, out=a, casting="unsafe")]
        return []

    # -- collectives -------------------------------------------------------------------------
    def allreduce(self, a, op, outputs, blocking, timeout):
        if blocking and a.flags.writeable:
            run = self.allreduce_plan(a.dtype, op)
            if run is not None and a.flags.carray:
                return run(a, timeout)
            if run is not None:  # strided: MPI reduces contiguous buffers only
                tmp = np.ascontiguousarray(a)
                run(tmp, timeout)
                np.copyto(a, tmp)
                return None
        bufs = _Buffers()
        spec, mpi_op = bufs.reducible(a, op)
        args = (_mpi.mpi().IN_PLACE, spec, mpi_op)
        self._algorithm(spec[0].nbytes)
        return self._run("Allreduce", blocking, args, bufs, outputs, timeout,
                         self._average(a, op))

    def allreduce_plan(self, dtype, op):
        """A function ``run(a, timeout=None)`` that all-reduces an aligned, writable,
        contiguous array of ``dtype`` by ``op`` in place and returns None once done (no Work,
        no temporaries), or None when MPI cannot reduce ``dtype`` (see ``_mpi.reduction``).

        Made once per dtype and op: a small all-reduce's time is mostly its Python path's, so
        the datatype, the operation and the bound MPI routine are looked up beforehand.
        """
        key = (dtype, op)
        try:
            return self._plans[key]
        except KeyError:
            pass
        found = _mpi.reduction(dtype, op)
        run = None if found is None else _blocking_allreduce(self.comm, self.size, op,
                                                             self._algorithm, *found)
        self._plans[key] = run
        return run

    def broadcast(self, a, root, outputs, blocking, timeout):
        bufs = _Buffers()
        spec = bufs.message(a, writes=self.rank != root)
        return self._run("Bcast", blocking, (spec, root), bufs, outputs, timeout)

    def reduce(self, a, root, op, outputs, blocking, timeout):
        bufs = _Buffers()
        is_root = self.rank == root
        spec, mpi_op = bufs.reducible(a, op, writes=is_root)
        MPI = _mpi.mpi()
        args = ((MPI.IN_PLACE, spec) if is_root else (spec, None)) + (mpi_op, root)
        after = self._average(a, op) if is_root else []
        return self._run("Reduce", blocking, args, bufs, outputs, timeout, after)

    def allgather_into(self, out, a, outputs, blocking, timeout):
        """``out`` holds every rank's ``a`` one after the other."""
        bufs = _Buffers()
        send = bufs.message(a, writes=False)
        recv = bufs.contiguous_out(out)
        args = (send, [recv, a.size, _mpi.basic_type(a.dtype)])
        return self._run("Allgather", blocking, args, bufs, outputs, timeout)

    def allgather(self, outs, a, outputs, blocking, timeout):
        """``outs[i]`` gets rank i's ``a``."""
        if _same_aligned(outs, a.dtype):
            bufs = _Buffers()
            args = (bufs.message(a, writes=False), _bottom(outs))
            return self._run("Allgatherv", blocking, args, bufs, outputs, timeout)
        flat = np.empty((self.size,) + a.shape, a.dtype)
        copy = [lambda: [np.copyto(o, f) for o, f in zip(outs, flat)]]
        bufs = _Buffers()
        args = (bufs.message(a, writes=False), [flat, a.size, _mpi.basic_type(a.dtype)])
        return self._run("Allgather", blocking, args, bufs, outputs, timeout, copy)

    def reduce_scatter_tensor(self, out, a, op, outputs, blocking, timeout):
        """``out`` gets this rank's block of the reduction of the ranks' ``a``."""
        bufs = _Buffers()
        send, _ = bufs.reducible(a, op, writes=False)
        recv, mpi_op = bufs.reducible(out, op)
        send[1] = recv[1]  # NOTE: mpi4py counts a Reduce_scatter_block send buffer per block
        args = (send, recv, mpi_op)
        return self._run("Reduce_scatter_block", blocking, args, bufs, outputs, timeout,
                         self._average(out, op))

    def reduce_scatter(self, out, inputs, op, outputs, blocking, timeout):
        flat = np.concatenate([i.reshape(-1) for i in inputs])
        return self.reduce_scatter_tensor(out, flat, op, outputs, blocking, timeout)

    def gather(self, a, outs, root, outputs, blocking, timeout):
        bufs = _Buffers()
        send = bufs.message(a, writes=False)
        after = []
        if self.rank != root:
            recv = None
        elif _same_aligned(outs, a.dtype):
            recv = _bottom(outs)
        else:
            flat = np.empty((self.size,) + a.shape, a.dtype)
            after = [lambda: [np.copyto(o, f) for o, f in zip(outs, flat)]]
            recv = [flat, ([a.size] * self.size, [i * a.size for i in range(self.size)]),
                    _mpi.basic_type(a.dtype)]
        return self._run("Gatherv", blocking, (send, recv, root), bufs, outputs, timeout,
                         after)

    def scatter(self, out, inputs, root, outputs, blocking, timeout):
        bufs = _Buffers()
        recv = bufs.message(out, writes=True)
        send = None
        if self.rank == root:
            if _same_aligned(inputs, out.dtype):
                send = _bottom(inputs)
            else:
                flat = np.concatenate([i.reshape(-1) for i in inputs])
                send = [flat, ([out.size] * self.size,
                               [i * out.size for i in range(self.size)]),
                        _mpi.basic_type(out.dtype)]
        return self._run("Scatterv", blocking, (send, recv, root), bufs, outputs, timeout)

    def alltoall_single(self, out, a, out_counts, in_counts, outputs, blocking, timeout):
        """Counts are in elements; blocks are consecutive in ``a`` and ``out``."""
        bufs = _Buffers()
        send = np.ascontiguousarray(a)
        recv = bufs.contiguous_out(out)
        t = _mpi.basic_type(a.dtype)
        args = ([send, (in_counts, _offsets(in_counts)), t],
                [recv, (out_counts, _offsets(out_counts)), t])
        return self._run("Alltoallv", blocking, args, bufs, outputs, timeout)

    def alltoall(self, outs, inputs, outputs, blocking, timeout):
        bufs = _Buffers()
        if _same_aligned(outs, inputs[0].dtype):
            recv = _bottom(outs)
            after = []
        else:
            flat_out = np.empty(sum(o.size for o in outs), outs[0].dtype)
            recv = [flat_out, ([o.size for o in outs], _offsets([o.size for o in outs])),
                    _mpi.basic_type(flat_out.dtype)]
            after = [lambda: _unflatten(flat_out, outs)]
        if _same_aligned(inputs, inputs[0].dtype):
            send = _bottom(inputs)
        else:
            flat_in = np.concatenate([i.reshape(-1) for i in inputs])
            send = [flat_in, ([i.size for i in inputs], _offsets([i.size for i in inputs])),
                    _mpi.basic_type(flat_in.dtype)]
        return self._run("Alltoallv", blocking, (send, recv), bufs, outputs, timeout, after)

    def barrier(self, blocking, timeout):
        return self._run("Barrier", blocking, (), _Buffers(), [], timeout)

    # -- point to point ----------------------------------------------------------------------
    def send(self, a, dst, tag, outputs, blocking, timeout):
        bufs = _Buffers()
        spec = bufs.message(a, writes=False)
        finish = bufs.finish + [bufs.free]
        if blocking and timeout is None:  # MPI matches any kind of send with any receive
            _check(self.comm.Send, spec, dst, tag)
            return Work(None, finish, outputs, "send", timeout)
        work = Work(_Requests([_check(self.comm.Isend, spec, dst, tag)]), finish, outputs,
                    "send", timeout)
        if blocking:
            work.wait()
        return work

    def recv(self, a, src, tag, outputs, blocking, timeout):
        """``src`` None: from any source (the Work's ``source_rank()`` tells which)."""
        MPI = _mpi.mpi()
        bufs = _Buffers()
        spec = bufs.message(a, writes=True)
        source = MPI.ANY_SOURCE if src is None else src
        status = MPI.Status()
        if blocking and timeout is None:
            _check(self.comm.Recv, spec, source, tag, status)
            work = Work(None, bufs.finish + [bufs.free], outputs, "recv", timeout)
            work._source = status.Get_source()
            return work
        req = _check(self.comm.Irecv, spec, source, tag)
        work = Work(_Requests([req], status), bufs.finish + [bufs.free], outputs, "recv",
                    timeout)
        if blocking:
            work.wait()
        return work


def _wait_within(request, timeout):
    try:
        wait_within(request.Test, timeout, "allreduce")
    except RuntimeError:  # MPI still owns the request, and may still write the buffer
        keep_until_done(Work(_Requests([request]), name="allreduce"))
        raise


def _blocking_allreduce(comm, size, op, algorithm, datatype, mpi_op):
    MPI = _mpi.mpi()
    start, in_place, mpi_error = comm.Iallreduce, MPI.IN_PLACE, MPI.Exception
    average = op is RedOpType.AVG

    def run(a, timeout=None):
        algorithm(a.nbytes)
        try:
            request = start(in_place, [a, datatype], mpi_op)
            if timeout is None:
                request.Wait()
            else:
                _wait_within(request, timeout)
        except mpi_error as e:
            from ._types import DistBackendError
            raise DistBackendError(e.Get_error_string()) from None
        if average:
            np.divide(a, size, out=a, casting="unsafe")

    return run


def _offsets(counts):
    out, total = [], 0
    for c in counts:
        out.append(total)
        total += c
    return out


def _unflatten(flat, outs):
    pos = 0
    for o in outs:
        np.copyto(o, flat[pos:pos + o.size].reshape(o.shape))
        pos += o.size
