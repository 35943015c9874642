"""What runs inside a DataLoader worker process: its seeding, ``get_worker_info()``, and the
loop that turns index batches into collated batches."""
from __future__ import annotations

import os
import queue
import random
import sys
import traceback
from dataclasses import dataclass

from . import _fetch, _shared_memory

__all__ = ["WorkerInfo", "get_worker_info"]

# How long (seconds) the loader waits on a worker before it looks again (whether it died) or
# gives up (joining it at shutdown).
STATUS_CHECK_INTERVAL = 5.0
# How often an idle worker looks whether its parent died or the loader is shutting down.
WORKER_POLL_INTERVAL = 1.0


@dataclass(frozen=True, slots=True)
class WorkerInfo:
    """What a worker knows about itself: ``id`` (0 to ``num_workers - 1``), ``num_workers``,
    the ``seed`` its generators were seeded with, and its own copy of the ``dataset``."""

    id: int
    num_workers: int
    seed: int
    dataset: object
    rng: object = None
    worker_method: str | None = "multiprocessing"


_worker_info: WorkerInfo | None = None


def get_worker_info() -> WorkerInfo | None:
    """The current worker's :class:`WorkerInfo`; ``None`` in the main process."""
    return _worker_info


@dataclass(frozen=True)
class IterableEnded:
    """A worker's iterable dataset is exhausted: the loader sends it no more work this epoch."""

    worker_id: int


@dataclass(frozen=True)
class ResumeIteration:
    """A persistent worker starts a new epoch (it answers with the same object)."""

    seed: int | None = None


class _KeyErrorMessage(str):
    # NOTE: KeyError's str() is the repr of its argument, which would quote the traceback and
    # turn its newlines into "\n"; a str whose repr is itself keeps it readable, as torch does.
    def __repr__(self):
        return self


class ExceptionWrapper:
    """An exception raised in a worker, carried to the main process as its type and
    traceback text (tracebacks do not cross processes)."""

    def __init__(self, where: str, exc_info=None):
        exc_type, exc, tb = exc_info if exc_info is not None else sys.exc_info()
        self.exc_type = exc_type
        self.exc_msg = "".join(traceback.format_exception(exc_type, exc, tb))
        self.where = where

    def reraise(self):
        """Raise the worker's exception in this process, with its original traceback in the
        message."""
        message = f"Caught {self.exc_type.__name__} {self.where}.\nOriginal {self.exc_msg}"
        if self.exc_type is KeyError:
            message = _KeyErrorMessage(message)
        elif getattr(self.exc_type, "message", None):
            raise self.exc_type(message=message)
        try:
            exception = self.exc_type(message)
        except Exception:
            # the exception type needs other constructor arguments: say it in a RuntimeError
            raise RuntimeError(message) from None
        try:
            raise exception
        finally:
            # NOTE: a local naming the exception its own traceback holds is a reference cycle
            # that would keep the loader's iterator (and its workers) alive until gc runs.
            del exception


def seed_worker(base_seed: int, worker_id: int) -> int:
    """Seed ``random``, ember's default generator and NumPy's global generator as torch seeds
    them in its workers; returns the worker's seed (``base_seed + worker_id``)."""
    import numpy

    from ... import _creation
    seed = base_seed + worker_id
    random.seed(seed)
    _creation.manual_seed(seed)
    # NOTE: torch hashes (worker_id, base_seed's two 32-bit halves, 0) with NumPy's
    # SeedSequence algorithm into 4 words: NumPy's own SeedSequence gives the same words.
    words = [worker_id, base_seed & 0xFFFFFFFF, base_seed >> 32, 0]
    numpy.random.seed(numpy.random.SeedSequence(words).generate_state(4))
    return seed


class _ParentWatchdog:
    """Tells whether the process that started this worker is still alive."""

    def __init__(self):
        self._parent = os.getppid()

    def is_alive(self) -> bool:
        return os.getppid() == self._parent


def worker_loop(kind, dataset, index_queue, data_queue, done_event, auto_collation, collate_fn,
                drop_last, base_seed, init_fn, worker_id, num_workers):
    """A worker's life: seed, run ``init_fn``, then answer ``(task, indices)`` requests with
    ``(task, batch)`` until it receives ``None``."""
    global _worker_info
    try:
        _shared_memory.register_reductions()
        seed = seed_worker(base_seed, worker_id)
        _worker_info = WorkerInfo(id=worker_id, num_workers=num_workers, seed=seed,
                                  dataset=dataset)
        where = f"in DataLoader worker process {worker_id}"
        init_error = None
        fetcher = None
        try:
            if init_fn is not None:
                init_fn(worker_id)
            fetcher = _fetch.create_fetcher(kind, dataset, auto_collation, collate_fn, drop_last)
        except Exception:
            init_error = ExceptionWrapper(where)

        exhausted = False  # this epoch's iterable ended here: skip work until told otherwise
        watchdog = _ParentWatchdog()
        while watchdog.is_alive():
            try:
                request = index_queue.get(timeout=WORKER_POLL_INTERVAL)
            except queue.Empty:
                if done_event.is_set():
                    break  # shutting down and the final None never came: leave anyway
                continue
            if isinstance(request, ResumeIteration):
                data_queue.put((request, None))
                exhausted = False
                fetcher = _fetch.create_fetcher(kind, dataset, auto_collation, collate_fn,
                                                drop_last)
                continue
            if request is None:  # the loader's final word
                break
            if done_event.is_set() or exhausted:
                continue  # shutting down or nothing left: wait for None
            task, indices = request
            if init_error is not None:
                data, init_error = init_error, None
            else:
                try:
                    data = fetcher.fetch(indices)
                except StopIteration:
                    if kind != _fetch.ITERABLE:
                        data = ExceptionWrapper(where)
                    else:
                        data, exhausted = IterableEnded(worker_id), True
                except Exception:
                    data = ExceptionWrapper(where)
            data_queue.put((task, data))
            del data, request, indices  # let the batch's memory go before blocking again
    except KeyboardInterrupt:
        pass  # the main process gets the interrupt too and shuts the workers down
    if done_event.is_set():
        data_queue.cancel_join_thread()
        data_queue.close()
