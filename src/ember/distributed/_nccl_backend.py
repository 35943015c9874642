"""The NCCL backend for CUDA tensors, through CuPy's bindings (``cupy.cuda.nccl``).

The processes are still started by MPI, which also carries NCCL's unique id from rank 0 to
the others. Operations are queued on the current CuPy stream; their Work completes when a
CUDA event recorded after them has. NCCL needs contiguous buffers: a strided tensor goes
through a contiguous copy. NOTE: written against CuPy's documented API; ember's test machine
has no GPU, so this path is exercised only where one is (see docs/distributed.md).
"""
from __future__ import annotations

from ._types import RedOpType
from ._work import Pending, Work


def available() -> bool:
    """Whether CuPy with NCCL support is installed."""
    try:
        from cupy.cuda import nccl
    except Exception:  # noqa: BLE001 - no CuPy, no CUDA driver, or CuPy built without NCCL
        return False
    return bool(getattr(nccl, "available", False))


def _nccl():
    from cupy.cuda import nccl
    return nccl


_TYPES = {"int8": "NCCL_INT8", "uint8": "NCCL_UINT8", "bool": "NCCL_UINT8",
          "int32": "NCCL_INT32", "int64": "NCCL_INT64", "float16": "NCCL_FLOAT16",
          "float32": "NCCL_FLOAT32", "float64": "NCCL_FLOAT64", "complex64": "NCCL_FLOAT32",
          "complex128": "NCCL_FLOAT64", "bfloat16": "NCCL_BFLOAT16"}
# torch's bool reductions are logical: on 0/1 bytes, MAX is "or" and MIN is "and".
_BOOL_OPS = {RedOpType.SUM: "NCCL_MAX", RedOpType.MAX: "NCCL_MAX", RedOpType.BOR: "NCCL_MAX",
             RedOpType.PRODUCT: "NCCL_MIN", RedOpType.MIN: "NCCL_MIN",
             RedOpType.BAND: "NCCL_MIN"}
_OPS = {RedOpType.SUM: "NCCL_SUM", RedOpType.PRODUCT: "NCCL_PROD", RedOpType.MIN: "NCCL_MIN",
        RedOpType.MAX: "NCCL_MAX", RedOpType.AVG: "NCCL_AVG"}


def _dtype(a):
    return getattr(_nccl(), _TYPES[a.dtype.name])


def _count(a):
    """Elements as NCCL counts them (a complex number is two reals)."""
    return a.size * (2 if a.dtype.kind == "c" else 1)


def _op(op, a):
    names = _BOOL_OPS if a.dtype.name == "bool" else _OPS
    if op not in names:
        raise RuntimeError(f"Cannot use ReduceOp.{op.name} with NCCL")
    return getattr(_nccl(), names[op])


class _Event(Pending):
    def __init__(self, stream):
        import cupy
        self.event = cupy.cuda.Event(disable_timing=True)
        self.event.record(stream)

    def wait(self):
        self.event.synchronize()

    def test(self) -> bool:
        return self.event.done


class NcclBackend:
    """An NCCL communicator over the processes of an MPI communicator ``comm``."""

    name = "nccl"

    def __init__(self, comm):
        nccl = _nccl()
        self.comm = comm
        self.rank = comm.Get_rank()
        self.size = comm.Get_size()
        uid = nccl.get_unique_id() if self.rank == 0 else None
        self.nccl = nccl.NcclCommunicator(self.size, comm.bcast(uid, root=0), self.rank)

    def _stream(self):
        import cupy
        return cupy.cuda.get_current_stream()

    def _contiguous(self, a, finish, writes=True):
        if a.flags.c_contiguous:
            return a
        import cupy
        tmp = cupy.ascontiguousarray(a)
        if writes:
            finish.append(lambda: a.__setitem__(Ellipsis, tmp))
        return tmp

    def _work(self, stream, finish, outputs, name, blocking, timeout, keep=()):
        work = Work(_Event(stream), finish, outputs, name, timeout)
        work._keep = keep  # buffers that must live until the device is done with them
        if blocking:
            work.wait()
        return work

    def _grouped(self, calls):
        nccl = _nccl()
        nccl.groupStart()
        try:
            for call in calls:
                call()
        finally:
            nccl.groupEnd()

    # -- collectives -------------------------------------------------------------------------
    def allreduce(self, a, op, outputs, blocking, timeout):
        finish, s = [], self._stream()
        buf = self._contiguous(a, finish)
        self.nccl.allReduce(buf.data.ptr, buf.data.ptr, _count(buf), _dtype(buf), _op(op, buf),
                            s.ptr)
        return self._work(s, finish, outputs, "allreduce", blocking, timeout, (buf,))

    def broadcast(self, a, root, outputs, blocking, timeout):
        finish, s = [], self._stream()
        buf = self._contiguous(a, finish, writes=self.rank != root)
        self.nccl.bcast(buf.data.ptr, _count(buf), _dtype(buf), root, s.ptr)
        return self._work(s, finish, outputs, "broadcast", blocking, timeout, (buf,))

    def reduce(self, a, root, op, outputs, blocking, timeout):
        finish, s = [], self._stream()
        buf = self._contiguous(a, finish, writes=self.rank == root)
        self.nccl.reduce(buf.data.ptr, buf.data.ptr, _count(buf), _dtype(buf), _op(op, buf),
                         root, s.ptr)
        return self._work(s, finish, outputs, "reduce", blocking, timeout, (buf,))

    def allgather_into(self, out, a, outputs, blocking, timeout):
        finish, s = [], self._stream()
        send = self._contiguous(a, finish, writes=False)
        recv = self._contiguous(out, finish)
        self.nccl.allGather(send.data.ptr, recv.data.ptr, _count(send), _dtype(send), s.ptr)
        return self._work(s, finish, outputs, "allgather", blocking, timeout, (send, recv))

    def allgather(self, outs, a, outputs, blocking, timeout):
        import cupy
        flat = cupy.empty((self.size,) + a.shape, a.dtype)
        work = self.allgather_into(flat, a, [], False, timeout)
        work._finish.append(lambda: [o.__setitem__(Ellipsis, f) for o, f in zip(outs, flat)])
        work._outputs = outputs
        work._keep = work._keep + (flat,)
        if blocking:
            work.wait()
        return work

    def reduce_scatter_tensor(self, out, a, op, outputs, blocking, timeout):
        finish, s = [], self._stream()
        send = self._contiguous(a, finish, writes=False)
        recv = self._contiguous(out, finish)
        self.nccl.reduceScatter(send.data.ptr, recv.data.ptr, _count(recv), _dtype(recv),
                                _op(op, recv), s.ptr)
        return self._work(s, finish, outputs, "reduce_scatter", blocking, timeout,
                          (send, recv))

    def reduce_scatter(self, out, inputs, op, outputs, blocking, timeout):
        import cupy
        flat = cupy.concatenate([i.reshape(-1) for i in inputs])
        return self.reduce_scatter_tensor(out, flat, op, outputs, blocking, timeout)

    def _exchange(self, sends, recvs, finish, outputs, name, blocking, timeout):
        """Grouped point-to-point messages: ``sends``/``recvs`` are (array, peer) pairs."""
        s = self._stream()
        bufs = [(self._contiguous(a, finish, writes=False), p) for a, p in sends]
        outs = [(self._contiguous(a, finish), p) for a, p in recvs]
        self._grouped(
            [lambda b=b, p=p: self.nccl.send(b.data.ptr, _count(b), _dtype(b), p, s.ptr)
             for b, p in bufs]
            + [lambda b=b, p=p: self.nccl.recv(b.data.ptr, _count(b), _dtype(b), p, s.ptr)
               for b, p in outs])
        return self._work(s, finish, outputs, name, blocking, timeout,
                          tuple(b for b, _ in bufs + outs))

    def gather(self, a, outs, root, outputs, blocking, timeout):
        finish = []
        if self.rank != root:
            return self._exchange([(a, root)], [], finish, outputs, "gather", blocking, timeout)
        finish.append(lambda: outs[root].__setitem__(Ellipsis, a))
        recvs = [(o, r) for r, o in enumerate(outs) if r != root]
        return self._exchange([], recvs, finish, outputs, "gather", blocking, timeout)

    def scatter(self, out, inputs, root, outputs, blocking, timeout):
        finish = []
        if self.rank != root:
            return self._exchange([], [(out, root)], finish, outputs, "scatter", blocking,
                                  timeout)
        finish.append(lambda: out.__setitem__(Ellipsis, inputs[root]))
        sends = [(i, r) for r, i in enumerate(inputs) if r != root]
        return self._exchange(sends, [], finish, outputs, "scatter", blocking, timeout)

    def alltoall(self, outs, inputs, outputs, blocking, timeout):
        sends = list(zip(inputs, range(self.size)))
        recvs = list(zip(outs, range(self.size)))
        return self._exchange(sends, recvs, [], outputs, "alltoall", blocking, timeout)

    def alltoall_single(self, out, a, out_counts, in_counts, outputs, blocking, timeout):
        finish = []
        flat_in = self._contiguous(a, finish, writes=False).reshape(-1)
        flat_out = self._contiguous(out, finish).reshape(-1)
        sends, recvs, pos_in, pos_out = [], [], 0, 0
        for r in range(self.size):
            sends.append((flat_in[pos_in:pos_in + in_counts[r]], r))
            recvs.append((flat_out[pos_out:pos_out + out_counts[r]], r))
            pos_in += in_counts[r]
            pos_out += out_counts[r]
        return self._exchange(sends, recvs, finish, outputs, "alltoall", blocking, timeout)

    def barrier(self, blocking, timeout):
        import cupy
        self._stream().synchronize()
        token = cupy.zeros(1, cupy.float32)
        return self.allreduce(token, RedOpType.SUM, [], blocking, timeout)

    # -- point to point ----------------------------------------------------------------------
    def send(self, a, dst, tag, outputs, blocking, timeout):
        return self._exchange([(a, dst)], [], [], outputs, "send", blocking, timeout)

    def recv(self, a, src, tag, outputs, blocking, timeout):
        if src is None:
            raise RuntimeError("NCCL cannot receive from any source: give recv a src")
        return self._exchange([], [(a, src)], [], outputs, "recv", blocking, timeout)
