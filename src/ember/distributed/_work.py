"""Work: the handle of a communication that may still be running (``async_op=True``)."""
from __future__ import annotations

import time
from datetime import timedelta

from ..futures import Future

_SPIN_SECONDS = 1e-3  # how long a wait with a time limit polls before it sleeps


def wait_within(test, limit, name):
    """Poll ``test()`` until it is true, at most ``limit`` (a timedelta), then raise torch's
    error; MPI cannot wait for a request with a time limit, and no thread is needed.

    MPI progresses a request only inside MPI calls: it is polled without pause for the first
    moments (a small message completes in microseconds, sooner than a sleep returns), then
    between sleeps growing to 1 ms.
    """
    start = time.monotonic()
    deadline = start + limit.total_seconds()
    spin_until = start + _SPIN_SECONDS
    pause = 1e-5
    while not test():
        now = time.monotonic()
        if now > deadline:
            # NOTE: the operation stays pending (MPI cannot cancel a collective): a later
            # wait() may still complete it once the other processes take part.
            ms = int(limit.total_seconds() * 1000)
            raise RuntimeError(f"Timed out waiting {ms}ms for {name} operation to complete")
        if now > spin_until:
            time.sleep(pause)
            pause = min(pause * 2, 1e-3)


_UNFINISHED = []  # Works given up on by a wait that timed out


def keep_until_done(work):
    """Keep ``work`` (its MPI request and the buffers MPI may still write into) alive until
    it completes: a timed-out wait leaves the operation pending, and the caller of a blocking
    call that raised holds nothing of it."""
    _UNFINISHED[:] = [w for w in _UNFINISHED if not w.is_completed()]
    _UNFINISHED.append(work)


class Pending:
    """What a Work waits on: ``wait()`` blocks until done, ``test()`` says whether it is."""

    def wait(self):
        raise NotImplementedError

    def test(self) -> bool:
        raise NotImplementedError


class Work:
    """A communication started by a collective or point-to-point call.

    ``finish`` callables run once, in order, when it completes (copying a temporary buffer
    back into a strided tensor, dividing an average); ``outputs`` are the tensors that hold
    its result.
    """

    def __init__(self, pending=None, finish=(), outputs=(), name="", timeout=None):
        self._pending = pending
        self._finish = list(finish)
        self._outputs = list(outputs)
        self._name = name
        self._timeout = timeout
        self._completed = False
        self._exception = None
        self._future = None
        self._source = -1
        if pending is None:
            self._complete()

    def wait(self, timeout=None) -> bool:
        """Block until the operation completes (at most ``timeout``, a timedelta; the
        group's timeout if it has one)."""
        if not self._completed:
            limit = timeout if timeout and timeout != timedelta(0) else self._timeout
            if limit is None:
                self._pending.wait()
            else:
                try:
                    self._wait_until(limit)
                except RuntimeError:
                    keep_until_done(self)
                    raise
            self._complete()
        if self._exception is not None:
            raise self._exception
        return True

    def _wait_until(self, limit):
        wait_within(self._pending.test, limit, self._name)

    def is_completed(self) -> bool:
        """Whether the operation has completed (this also lets MPI make progress on it)."""
        if not self._completed and self._pending.test():
            self._complete()
        return self._completed

    def is_success(self) -> bool:
        return self.is_completed() and self._exception is None

    def exception(self):
        return self._exception

    def result(self) -> list:
        """The tensors holding the operation's result."""
        self.wait()
        return self._outputs

    def source_rank(self) -> int:
        """The rank a receive from any source got its message from."""
        if self._source < 0:
            raise RuntimeError("sourceRank() may only be called on a receive from any source")
        return self._source

    def synchronize(self) -> None:
        self.wait()

    def get_future(self) -> Future:
        """A Future completed with ``result()`` when the operation completes."""
        if self._future is None:
            fut = Future()
            fut._drive = self.wait
            fut._poll = self.is_completed
            self._future = fut
            if self._completed:
                fut.set_result(self._outputs)
        return self._future

    def _complete(self):
        if self._completed:
            return
        self._completed = True
        source = getattr(self._pending, "source", None)
        if source is not None:
            self._source = source()
        for step in self._finish:
            step()
        self._pending = None
        if self._future is not None and not self._future._completed:
            self._future.set_result(self._outputs)
