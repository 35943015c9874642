"""``ember.futures``: torch's Future, the handle of a result that arrives later.

A Future completes when ``set_result``/``set_exception`` is called. One made by a
communication (``Work.get_future()``) also knows how to drive its operation to completion, so
``wait()`` and ``done()`` on it (or on a Future chained to it with ``then``) progress the
communication instead of sleeping.
"""
from __future__ import annotations

import threading
from typing import Generic, TypeVar

__all__ = ["Future", "collect_all", "wait_all"]

T = TypeVar("T")


# (Generic, as torch's: annotations such as ``Future[Tensor]`` subscript the class)
class Future(Generic[T]):
    """The result of an asynchronous computation; callbacks run when it completes."""

    def __init__(self, *, devices=None):
        self._completed = False
        self._result = None
        self._exception = None
        self._callbacks = []
        self._cond = threading.Condition()
        self._drive = None  # completes the future (waits for what it depends on), if known
        self._poll = None  # completes the future if what it depends on is done

    def done(self) -> bool:
        """Whether the future has completed (a value or an exception is set)."""
        if not self._completed and self._poll is not None:
            self._poll()
        return self._completed

    def wait(self):
        """Block until the future completes; return its value (raise its exception)."""
        if not self._completed:
            if self._drive is not None:
                self._drive()
            with self._cond:
                self._cond.wait_for(lambda: self._completed)
        if self._exception is not None:
            raise self._exception
        return self._result

    def value(self):
        """The value of an already completed future (raise its exception)."""
        if not self.done():
            raise RuntimeError("value() called on a Future that has not completed; call "
                               "wait() first")
        if self._exception is not None:
            raise self._exception
        return self._result

    def then(self, callback) -> Future:
        """A new future completed with ``callback(self)`` once this one completes."""
        child = Future()
        child._drive = self._wait_quietly
        child._poll = self.done

        def run(fut):
            try:
                result = callback(fut)
            except Exception as e:  # noqa: BLE001 - the child future carries it
                child.set_exception(RuntimeError(
                    "Got the following error when running the callback: "
                    f"{type(e).__name__}: {e}"))
            else:
                child.set_result(result)

        self.add_done_callback(run)
        return child

    def add_done_callback(self, callback) -> None:
        """Run ``callback(self)`` when the future completes (now, if it has)."""
        with self._cond:
            if not self._completed:
                self._callbacks.append(callback)
                return
        callback(self)

    def set_result(self, result) -> None:
        self._complete(result, None)

    def set_exception(self, result) -> None:
        if not isinstance(result, BaseException):
            raise TypeError(f"set_exception expects an exception, got {type(result).__name__}")
        self._complete(None, result)

    def _complete(self, result, exception):
        with self._cond:
            if self._completed:
                raise RuntimeError(
                    "Attempting to mark a completed Future as complete again. Note that a "
                    "Future can only be marked completed once.")
            self._result, self._exception = result, exception
            self._completed = True
            callbacks, self._callbacks = self._callbacks, []
            self._cond.notify_all()
        for cb in callbacks:
            cb(self)

    def _wait_quietly(self):
        try:
            self.wait()
        except Exception:  # noqa: BLE001, S110 - a chained future reports it in its callback
            pass


def collect_all(futures) -> Future:
    """A future completed with the list of ``futures`` once all of them have completed."""
    out = Future()
    futures = list(futures)

    def drive():
        for f in futures:
            f._wait_quietly()

    out._drive = drive
    out._poll = lambda: all(f.done() for f in futures)
    remaining = [len(futures)]
    lock = threading.Lock()

    def one_done(_):
        with lock:
            remaining[0] -= 1
            last = remaining[0] == 0
        if last:
            out.set_result(futures)

    if not futures:
        out.set_result([])
    for f in futures:
        f.add_done_callback(one_done)
    return out


def wait_all(futures) -> list:
    """Wait for every future; return their values (raise the first exception)."""
    return [f.wait() for f in collect_all(futures).wait()]
