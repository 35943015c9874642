"""Fetchers: from a sampler's index (or batch of indices) to a collated sample or batch, the
same in the main process and in worker processes."""
from __future__ import annotations

MAP, ITERABLE = 0, 1  # torch's _DatasetKind values (code compares loader._dataset_kind)


class MapFetcher:
    """``dataset[i]`` for each index (or one ``__getitems__`` call for a batch)."""

    def __init__(self, dataset, auto_collation, collate_fn, drop_last):
        self.dataset = dataset
        self.auto_collation = auto_collation
        self.collate_fn = collate_fn
        getitems = getattr(dataset, "__getitems__", None)
        self._getitems = getitems if auto_collation and getitems else None

    def fetch(self, index):
        if not self.auto_collation:
            return self.collate_fn(self.dataset[index])
        if self._getitems is not None:
            return self.collate_fn(self._getitems(index))
        dataset = self.dataset
        return self.collate_fn([dataset[i] for i in index])


class IterableFetcher:
    """The next sample (or the next ``len(index)`` samples) of the dataset's iterator; the
    batch sampler's indices only say how many."""

    def __init__(self, dataset, auto_collation, collate_fn, drop_last):
        self.iterator = iter(dataset)
        self.auto_collation = auto_collation
        self.collate_fn = collate_fn
        self.drop_last = drop_last
        self.ended = False

    def fetch(self, index):
        if self.ended:
            raise StopIteration
        if not self.auto_collation:
            return self.collate_fn(next(self.iterator))
        batch = []
        for _ in index:
            try:
                batch.append(next(self.iterator))
            except StopIteration:
                self.ended = True
                break
        if not batch or (self.drop_last and len(batch) < len(index)):
            raise StopIteration
        return self.collate_fn(batch)


def create_fetcher(kind, dataset, auto_collation, collate_fn, drop_last):
    fetcher = MapFetcher if kind == MAP else IterableFetcher
    return fetcher(dataset, auto_collation, collate_fn, drop_last)


class _DatasetKind:
    """The two kinds of dataset a DataLoader reads: by index (Map) or by iteration."""

    Map = MAP
    Iterable = ITERABLE

    @staticmethod
    def create_fetcher(kind, dataset, auto_collation, collate_fn, drop_last):
        return create_fetcher(kind, dataset, auto_collation, collate_fn, drop_last)
