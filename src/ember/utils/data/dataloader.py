"""DataLoader: batches from a dataset, in the calling process or in worker processes."""
from __future__ import annotations

import multiprocessing
import os
import warnings

from . import _fetch
from ._worker import get_worker_info
from .collate import default_collate, default_convert
from .dataset import IterableDataset
from .sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler

__all__ = ["DataLoader", "get_worker_info"]


class _InfiniteConstantSampler(Sampler):
    """The sampler of an iterable dataset: ``None`` forever (the dataset decides what comes
    next; a batch sampler over it only counts out batch sizes)."""

    def __iter__(self):
        while True:
            yield None


def _resolve_context(context, num_workers):
    if context is None:
        return None
    if num_workers <= 0:
        raise ValueError("multiprocessing_context can only be used with multi-process loading "
                         f"(num_workers > 0), but got num_workers={num_workers}")
    if isinstance(context, str):
        methods = multiprocessing.get_all_start_methods()
        if context not in methods:
            raise ValueError("multiprocessing_context option should specify a valid start "
                             f"method in {methods!r}, but got "
                             f"multiprocessing_context={context!r}")
        context = multiprocessing.get_context(context)
    if not isinstance(context, multiprocessing.context.BaseContext):
        raise TypeError("multiprocessing_context option should be a valid context object or a "
                        "string specifying the start method, but got "
                        f"multiprocessing_context={context}")
    return context


def _check_options(num_workers, timeout, prefetch_factor, persistent_workers):
    if num_workers < 0:
        raise ValueError("num_workers option should be non-negative; use num_workers=0 "
                         "to disable multiprocessing.")
    if timeout < 0:
        raise ValueError("timeout option should be non-negative")
    if num_workers == 0 and prefetch_factor is not None:
        raise ValueError("prefetch_factor option could only be specified in multiprocessing."
                         "let num_workers > 0 to enable multiprocessing, otherwise set "
                         "prefetch_factor to None.")
    if prefetch_factor is not None and prefetch_factor < 0:
        raise ValueError("prefetch_factor option should be non-negative")
    if persistent_workers and num_workers == 0:
        raise ValueError("persistent_workers option needs num_workers > 0")


class DataLoader:
    """Iterates over ``dataset`` in batches of ``batch_size``, loading them in the calling
    process (``num_workers=0``) or in ``num_workers`` worker processes."""

    _FROZEN = ("batch_size", "batch_sampler", "sampler", "drop_last", "dataset",
               "persistent_workers")

    def __init__(self, dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None,
                 num_workers=0, collate_fn=None, pin_memory=False, drop_last=False, timeout=0,
                 worker_init_fn=None, multiprocessing_context=None, generator=None, *,
                 prefetch_factor=None, persistent_workers=False, pin_memory_device="",
                 in_order=True):
        _check_options(num_workers, timeout, prefetch_factor, persistent_workers)
        if num_workers > 0 and prefetch_factor is None:
            prefetch_factor = 2
        self.dataset = dataset
        self.num_workers = num_workers
        self.prefetch_factor = prefetch_factor
        self.pin_memory = pin_memory
        self.pin_memory_device = pin_memory_device
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = _resolve_context(multiprocessing_context, num_workers)
        self.in_order = in_order
        self._dataset_kind = _fetch.ITERABLE if isinstance(dataset, IterableDataset) \
            else _fetch.MAP
        sampler, batch_sampler, batch_size, drop_last = self._samplers(
            dataset, batch_size, shuffle, sampler, batch_sampler, drop_last, generator)
        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.generator = generator
        if collate_fn is None:
            collate_fn = default_collate if batch_sampler is not None else default_convert
        self.collate_fn = collate_fn
        self.persistent_workers = persistent_workers
        self._iterator = None
        self._IterableDataset_len_called = None
        self._initialized = True
        self.check_worker_number_rationality()  # (torch warns here and again at each iter())

    def _samplers(self, dataset, batch_size, shuffle, sampler, batch_sampler, drop_last,
                  generator):
        if self._dataset_kind == _fetch.ITERABLE:
            if shuffle not in (None, False):
                raise ValueError("DataLoader with IterableDataset: expected unspecified shuffle "
                                 f"option, but got shuffle={shuffle}")
            if sampler is not None:
                raise ValueError("DataLoader with IterableDataset: expected unspecified sampler "
                                 f"option, but got sampler={sampler}")
            if batch_sampler is not None:
                raise ValueError("DataLoader with IterableDataset: expected unspecified "
                                 f"batch_sampler option, but got batch_sampler={batch_sampler}")
        else:
            shuffle = bool(shuffle)
        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("batch_sampler option is mutually exclusive with batch_size, "
                                 "shuffle, sampler, and drop_last")
            batch_size, drop_last = None, False
        elif batch_size is None and drop_last:
            raise ValueError("batch_size=None option disables auto-batching and is mutually "
                             "exclusive with drop_last")
        if sampler is None:
            if self._dataset_kind == _fetch.ITERABLE:
                sampler = _InfiniteConstantSampler()
            elif shuffle:
                sampler = RandomSampler(dataset, generator=generator)
            else:
                sampler = SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)
        return sampler, batch_sampler, batch_size, drop_last

    def __setattr__(self, name, value):
        if name in self._FROZEN and self.__dict__.get("_initialized"):
            raise ValueError(f"{name} attribute should not be set after "
                             f"{type(self).__name__} is initialized")
        super().__setattr__(name, value)

    @property
    def _auto_collation(self):
        return self.batch_sampler is not None

    @property
    def _index_sampler(self):
        return self.batch_sampler if self._auto_collation else self.sampler

    def __iter__(self):
        if self.persistent_workers and self.num_workers > 0:
            if self._iterator is None:
                self._iterator = self._get_iterator()
            else:
                self._iterator._reset(self)
            return self._iterator
        return self._get_iterator()

    def _get_iterator(self):
        if self.num_workers == 0:
            return _SingleProcessIter(self)
        self.check_worker_number_rationality()
        from ._multiprocess_iter import MultiProcessIter
        return MultiProcessIter(self)

    def __len__(self):
        if self._dataset_kind == _fetch.ITERABLE:
            n = self._IterableDataset_len_called = len(self.dataset)
            if self.batch_size is None:
                return n
            return n // self.batch_size if self.drop_last else -(-n // self.batch_size)
        return len(self._index_sampler)

    def check_worker_number_rationality(self):
        """Warn, as torch does, when more workers are asked for than this process may use."""
        if not self.num_workers:
            return
        affinity = getattr(os, "sched_getaffinity", None)
        suggested = len(affinity(0)) if affinity else os.cpu_count()
        if suggested is not None and self.num_workers <= suggested:
            return
        if suggested is None:
            advice = ("DataLoader is not able to compute a suggested max number of worker in "
                      "current system.")
        else:
            cpuset = "" if affinity else " (`cpuset` is not taken into account)"
            advice = (f"Our suggested max number of worker in current system is "
                      f"{suggested}{cpuset}, which is smaller than what this DataLoader is "
                      "going to create.")
        warnings.warn(f"This DataLoader will create {self.num_workers} worker processes in "
                      f"total. {advice} Please be aware that excessive worker creation might "
                      "get DataLoader running slow or even freeze, lower the worker number to "
                      "avoid potential slowness/freeze if necessary.", stacklevel=2)


def _base_seed(generator):
    from ... import _creation, _dtype
    draw = _creation.empty((), dtype=_dtype.int64).random_(generator=generator)
    return int(draw.item())


def _pin_memory_available(loader):
    """Whether batches can be pinned; warns as torch does when they cannot."""
    from ... import cuda
    if not loader.pin_memory:
        return False
    if loader.pin_memory_device:
        warnings.warn("pin_memory_device is deprecated, the current accelerator will be used as "
                      f"the device,ignore pin_memory_device='{loader.pin_memory_device}'.",
                      stacklevel=4)
    if not cuda.is_available():
        warnings.warn("'pin_memory' argument is set as true but no accelerator is found, then "
                      "device pinned memory won't be used.", stacklevel=4)
        return False
    return True


def pin_batch(data):
    """Page-locked copies of a batch's tensors (for faster host-to-device copies)."""
    pin = getattr(data, "pin_memory", None)
    if callable(pin):
        return pin()
    if isinstance(data, dict):
        return type(data)({k: pin_batch(v) for k, v in data.items()})
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(pin_batch(v) for v in data))
    if isinstance(data, (list, tuple)):
        return type(data)(pin_batch(v) for v in data)
    return data


class _BaseIter:
    """What both iterators share: the sampler, the worker seed drawn per epoch, counting."""

    def __init__(self, loader):
        self._dataset = loader.dataset
        self._dataset_kind = loader._dataset_kind
        self._IterableDataset_len_called = loader._IterableDataset_len_called
        self._auto_collation = loader._auto_collation
        self._drop_last = loader.drop_last
        self._index_sampler = loader._index_sampler
        self._num_workers = loader.num_workers
        self._pin_memory = _pin_memory_available(loader)
        self._timeout = loader.timeout
        self._collate_fn = loader.collate_fn
        self._sampler_iter = iter(self._index_sampler)
        self._base_seed = _base_seed(loader.generator)
        self._persistent_workers = loader.persistent_workers
        self._num_yielded = 0

    def __iter__(self):
        return self

    def _reset(self, loader, first_iter=False):
        self._sampler_iter = iter(self._index_sampler)
        self._num_yielded = 0
        self._IterableDataset_len_called = loader._IterableDataset_len_called

    def _next_index(self):
        return next(self._sampler_iter)

    def __next__(self):
        data = self._next_data()
        self._num_yielded += 1
        told = self._IterableDataset_len_called
        if (self._dataset_kind == _fetch.ITERABLE and told is not None
                and self._num_yielded > told):
            message = (f"Length of IterableDataset {self._dataset} was reported to be {told}"
                       f"(when accessing len(dataloader)), but {self._num_yielded} samples have "
                       "been fetched. ")
            if self._num_workers > 0:
                message += ("For multiprocessing data-loading, this could be caused by not "
                            "properly configuring the IterableDataset replica at each worker. "
                            "Please see https://pytorch.org/docs/stable/data.html#torch.utils."
                            "data.IterableDataset for examples.")
            warnings.warn(message, stacklevel=2)
        return data

    def __len__(self):
        return len(self._index_sampler)

    def __getstate__(self):
        raise NotImplementedError("{} cannot be pickled", type(self).__name__)


class _SingleProcessIter(_BaseIter):
    """Loads each batch in the calling process."""

    def __init__(self, loader):
        super().__init__(loader)
        if self._timeout != 0:
            raise AssertionError("_SingleProcessDataLoaderIter requires timeout == 0")
        self._fetcher = _fetch.create_fetcher(self._dataset_kind, self._dataset,
                                              self._auto_collation, self._collate_fn,
                                              self._drop_last)

    def _next_data(self):
        data = self._fetcher.fetch(self._next_index())
        return pin_batch(data) if self._pin_memory else data
