"""Datasets: map-style and iterable, and the ways to combine and split them."""
from __future__ import annotations

import bisect
import math
import warnings

__all__ = ["Dataset", "IterableDataset", "TensorDataset", "Subset", "ConcatDataset",
           "ChainDataset", "StackDataset", "random_split"]


class Dataset:
    """A map-style dataset: ``dataset[i]`` returns the i-th sample; subclasses define it."""

    def __getitem__(self, index):
        raise NotImplementedError("Subclasses of Dataset should implement __getitem__.")

    def __add__(self, other):
        return ConcatDataset([self, other])


class IterableDataset(Dataset):
    """A dataset read as a stream: subclasses define ``__iter__``."""

    def __iter__(self):
        raise NotImplementedError("Subclasses of IterableDataset should implement __iter__.")

    def __add__(self, other):
        return ChainDataset([self, other])


class TensorDataset(Dataset):
    """Samples are the i-th rows of the given tensors (which share their first dimension)."""

    def __init__(self, *tensors):
        if any(t.size(0) != tensors[0].size(0) for t in tensors):
            raise AssertionError("Size mismatch between tensors")
        self.tensors = tensors

    def __getitem__(self, index):
        return tuple(t[index] for t in self.tensors)

    def __len__(self):
        return self.tensors[0].size(0)


class Subset(Dataset):
    """The samples of ``dataset`` at ``indices``, in that order."""

    def __init__(self, dataset, indices):
        self.dataset = dataset
        self.indices = indices

    def __getitem__(self, idx):
        if isinstance(idx, list):
            return self.dataset[[self.indices[i] for i in idx]]
        return self.dataset[self.indices[idx]]

    def __len__(self):
        return len(self.indices)


class ConcatDataset(Dataset):
    """The datasets one after the other."""

    def __init__(self, datasets):
        self.datasets = list(datasets)
        if not self.datasets:
            raise AssertionError("datasets should not be an empty iterable")
        for d in self.datasets:
            if isinstance(d, IterableDataset):
                raise AssertionError("ConcatDataset does not support IterableDataset")
        self.cumulative_sizes = []
        total = 0
        for d in self.datasets:
            total += len(d)
            self.cumulative_sizes.append(total)

    def __len__(self):
        return self.cumulative_sizes[-1]

    def __getitem__(self, idx):
        if idx < 0:
            if -idx > len(self):
                raise ValueError("absolute value of index should not exceed dataset length")
            idx = len(self) + idx
        which = bisect.bisect_right(self.cumulative_sizes, idx)
        start = self.cumulative_sizes[which - 1] if which else 0
        return self.datasets[which][idx - start]


class ChainDataset(IterableDataset):
    """Iterable datasets read one after the other, as they are iterated."""

    def __init__(self, datasets):
        super().__init__()
        self.datasets = datasets

    def __iter__(self):
        for d in self.datasets:
            _require_iterable(d)
            yield from d

    def __len__(self):
        total = 0
        for d in self.datasets:
            _require_iterable(d)
            total += len(d)
        return total


def _require_iterable(dataset):
    if not isinstance(dataset, IterableDataset):
        raise AssertionError("ChainDataset only supports IterableDataset")


class StackDataset(Dataset):
    """Datasets side by side: sample ``i`` is the tuple (``*args``) or dict (``**kwargs``) of
    their i-th samples."""

    def __init__(self, *args, **kwargs):
        if args and kwargs:
            raise ValueError("Supported either ``tuple``- (via ``args``) or``dict``- (via "
                             "``kwargs``) like input/output, but both types are given.")
        if not args and not kwargs:
            raise ValueError("At least one dataset should be passed")
        parts = args or list(kwargs.values())
        self._length = len(parts[0])
        if any(self._length != len(d) for d in parts):
            raise ValueError("Size mismatch between datasets")
        self.datasets = args or kwargs

    def __getitem__(self, index):
        if isinstance(self.datasets, dict):
            return {k: d[index] for k, d in self.datasets.items()}
        return tuple(d[index] for d in self.datasets)

    def __getitems__(self, indices):
        """A batch of samples, each part read in one call where its dataset can."""
        named = isinstance(self.datasets, dict)
        parts = self.datasets.items() if named else enumerate(self.datasets)
        columns = {k: _many(d, indices) for k, d in parts}
        if named:
            return [{k: col[i] for k, col in columns.items()} for i in range(len(indices))]
        return [tuple(col[i] for col in columns.values()) for i in range(len(indices))]

    def __len__(self):
        return self._length


def _many(dataset, indices):
    """``dataset``'s samples at ``indices``, through its ``__getitems__`` when it has one."""
    if callable(getattr(dataset, "__getitems__", None)):
        items = dataset.__getitems__(indices)
        if len(items) != len(indices):
            raise ValueError(f"Nested dataset's output size mismatch. Expected {len(indices)}, "
                             f"got {len(items)}")
        return items
    return [dataset[i] for i in indices]


def _lengths_from_fractions(fractions, n):
    """torch's rule: floor each share, then hand the remainder out round-robin."""
    lengths = [int(math.floor(n * f)) for f in fractions]
    for i in range((n - sum(lengths))):
        lengths[i % len(lengths)] += 1
    for i, length in enumerate(lengths):
        if length == 0:
            warnings.warn(f"Length of split at index {i} is 0. This might result in an empty "
                          "dataset.")
    return lengths


def random_split(dataset, lengths, generator=None):
    """Split ``dataset`` into non-overlapping random subsets of the given lengths (or fractions
    summing to 1)."""
    from ... import _creation
    n = len(dataset)
    if math.isclose(sum(lengths), 1) and sum(lengths) <= 1:
        lengths = _lengths_from_fractions(lengths, n)
    if sum(lengths) != n:
        raise ValueError("Sum of input lengths does not equal the length of the input dataset!")
    order = _creation.randperm(n, generator=generator).tolist()
    subsets, offset = [], 0
    for length in lengths:
        subsets.append(Subset(dataset, order[offset:offset + length]))
        offset += length
    return subsets
