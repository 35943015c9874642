"""The DataLoader's iterator over worker processes.

Each worker has its own index queue; all answer on one result queue. Task numbers are handed
out in sampler order, ``prefetch_factor`` per worker ahead of what was consumed, and answers
are delivered in task order (``in_order=True``) whatever order they arrive in. The loader
waits on the result queue and on the workers' process sentinels together, so a worker that
dies is noticed at once, not at the next poll.
"""
from __future__ import annotations

import atexit
import itertools
import multiprocessing
import queue
import weakref
from multiprocessing.connection import wait

from . import _shared_memory, _worker
from .dataloader import _BaseIter, pin_batch

_live = weakref.WeakSet()  # iterators whose workers must be stopped before the interpreter
_exiting = False


@atexit.register
def _stop_all_workers():
    global _exiting
    for iterator in list(_live):
        iterator._shutdown_workers()
    _exiting = True


class MultiProcessIter(_BaseIter):
    """Loads batches in ``loader.num_workers`` worker processes."""

    _shutdown = True  # nothing to stop until the workers exist

    def __init__(self, loader):
        super().__init__(loader)
        self._prefetch_factor = loader.prefetch_factor
        self._in_order = loader.in_order
        if self._prefetch_factor <= 0:
            raise AssertionError(
                "prefetch_factor must be greater than 0 for MultiProcessingDataLoaderIter")
        context = loader.multiprocessing_context or multiprocessing.get_context()
        _shared_memory.register_reductions()
        self._result_queue = context.Queue()
        self._done_event = context.Event()
        self._index_queues, self._workers = [], []
        self._shutdown = False
        _live.add(self)
        for worker_id in range(self._num_workers):
            index_queue = context.Queue()
            index_queue.cancel_join_thread()  # never block exit on indices nobody will read
            process = context.Process(
                target=_worker.worker_loop, daemon=True,
                args=(self._dataset_kind, self._dataset, index_queue, self._result_queue,
                      self._done_event, self._auto_collation, self._collate_fn,
                      self._drop_last, self._base_seed, loader.worker_init_fn, worker_id,
                      self._num_workers))
            process.start()
            self._index_queues.append(index_queue)
            self._workers.append(process)
        self._reset(loader, first_iter=True)

    # --- epochs -----------------------------------------------------------------------------

    def _reset(self, loader, first_iter=False):
        super()._reset(loader, first_iter)
        self._send_idx = 0  # the next task number to hand out
        self._rcvd_idx = 0  # the next task number to deliver
        # task number -> (worker,) while outstanding, (worker, data) once it arrived early
        self._task_info = {}
        self._tasks_outstanding = 0
        self._workers_status = [True] * self._num_workers  # still has work this epoch
        self._workers_num_tasks = [0] * self._num_workers
        self._worker_cycle = itertools.cycle(range(self._num_workers))
        if not first_iter:  # persistent workers: start a new epoch and wait for every answer
            for index_queue in self._index_queues:
                index_queue.put(_worker.ResumeIteration())
            pending = self._num_workers
            while pending:
                task, _ = self._get_data()
                if isinstance(task, _worker.ResumeIteration):
                    pending -= 1
        for _ in range(self._prefetch_factor * self._num_workers):
            self._try_put_index()

    # --- handing out work -------------------------------------------------------------------

    def _try_put_index(self):
        limit = self._prefetch_factor * self._num_workers
        try:
            index = self._next_index()
        except StopIteration:
            return
        for _ in range(self._num_workers):  # the next worker that still has work to do
            worker_id = next(self._worker_cycle)
            if not self._workers_status[worker_id]:
                continue
            if self._in_order or \
                    self._workers_num_tasks[worker_id] < limit // sum(self._workers_status):
                break
        else:
            return
        self._index_queues[worker_id].put((self._send_idx, index))
        self._task_info[self._send_idx] = (worker_id,)
        self._workers_num_tasks[worker_id] += 1
        self._tasks_outstanding += 1
        self._send_idx += 1

    # --- receiving --------------------------------------------------------------------------

    def _try_get_data(self, timeout):
        """``(True, answer)``, or ``(False, None)`` when nothing came within ``timeout``;
        raises when a worker that still had work died."""
        reader = self._result_queue._reader
        sentinels = [w.sentinel for w, busy in zip(self._workers, self._workers_status) if busy]
        ready = wait([reader, *sentinels], timeout)
        if reader in ready:
            try:
                return True, self._result_queue.get(timeout=timeout)
            except queue.Empty:  # another reader took it, or a partial message: look again
                return False, None
        dead = [w for w, busy in zip(self._workers, self._workers_status)
                if busy and not w.is_alive()]
        if dead:
            for w in dead:
                self._mark_worker_as_unavailable(self._workers.index(w))
            pids = ", ".join(str(w.pid) for w in dead)
            raise RuntimeError(f"DataLoader worker (pid(s) {pids}) exited unexpectedly")
        return False, None

    def _get_data(self):
        if self._timeout > 0:
            received, data = self._try_get_data(self._timeout)
            if not received:
                raise RuntimeError(f"DataLoader timed out after {self._timeout} seconds")
            return data
        while True:
            received, data = self._try_get_data(_worker.STATUS_CHECK_INTERVAL)
            if received:
                return data

    def _next_data(self):
        while True:
            # skip the task numbers whose worker ended its iterable before answering them
            while self._rcvd_idx < self._send_idx:
                info = self._task_info.get(self._rcvd_idx)
                if info and (len(info) == 2 or self._workers_status[info[0]]):
                    break
                self._task_info.pop(self._rcvd_idx, None)
                self._rcvd_idx += 1
            else:
                if not self._persistent_workers:
                    self._shutdown_workers()
                raise StopIteration
            if len(self._task_info[self._rcvd_idx]) == 2:  # it arrived early
                worker_id, data = self._task_info.pop(self._rcvd_idx)
                self._rcvd_idx += 1
                return self._process_data(data, worker_id)
            task, data = self._get_data()
            self._tasks_outstanding -= 1
            if isinstance(data, _worker.IterableEnded):
                if self._persistent_workers:
                    self._workers_status[data.worker_id] = False
                else:
                    self._mark_worker_as_unavailable(data.worker_id)
                self._try_put_index()
                continue
            if task == self._rcvd_idx or not self._in_order:
                worker_id = self._task_info.pop(task)[0]
                if task == self._rcvd_idx:
                    self._rcvd_idx += 1
                return self._process_data(data, worker_id)
            self._task_info[task] += (data,)

    def _process_data(self, data, worker_id):
        self._workers_num_tasks[worker_id] -= 1
        self._try_put_index()
        if isinstance(data, _worker.ExceptionWrapper):
            data.reraise()
        return pin_batch(data) if self._pin_memory else data

    # --- stopping ---------------------------------------------------------------------------

    def _mark_worker_as_unavailable(self, worker_id):
        """No more work for this worker (its iterable ended, it died, or we shut down)."""
        self._index_queues[worker_id].put(None)
        self._workers_status[worker_id] = False

    def _shutdown_workers(self):
        if _exiting or self._shutdown:
            return
        self._shutdown = True
        try:
            self._done_event.set()
            for worker_id in range(len(self._workers)):
                if self._persistent_workers or self._workers_status[worker_id]:
                    self._mark_worker_as_unavailable(worker_id)
            for process in self._workers:
                process.join(timeout=_worker.STATUS_CHECK_INTERVAL)
            for index_queue in self._index_queues:
                index_queue.cancel_join_thread()
                index_queue.close()
        finally:
            for process in self._workers:
                if process.is_alive():
                    process.terminate()
                    process.join(timeout=_worker.STATUS_CHECK_INTERVAL)
            self._result_queue.cancel_join_thread()
            self._result_queue.close()
            _live.discard(self)

    def __del__(self):
        self._shutdown_workers()
