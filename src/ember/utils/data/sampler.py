"""Samplers: the order in which a DataLoader visits a dataset's indices."""
from __future__ import annotations

__all__ = [
    "BatchSampler",
    "RandomSampler",
    "Sampler",
    "SequentialSampler",
    "SubsetRandomSampler",
    "WeightedRandomSampler",
]


class Sampler:
    """Iterates over dataset indices."""

    def __iter__(self):
        raise NotImplementedError


class SequentialSampler(Sampler):
    """0, 1, ..., len(data_source) - 1."""

    def __init__(self, data_source):
        self.data_source = data_source

    def __iter__(self):
        return iter(range(len(self.data_source)))

    def __len__(self):
        return len(self.data_source)


def _fresh_generator():
    """A generator seeded with one draw from the default one (torch's way: ``manual_seed``
    makes shuffles repeatable, and shuffles advance the default generator)."""
    from ... import _creation
    seed = int(_creation.empty((), dtype=_creation.D.int64).random_().item())
    return _creation.Generator().manual_seed(seed)


class RandomSampler(Sampler):
    """A random permutation (or, with ``replacement``, ``num_samples`` random draws)."""

    def __init__(self, data_source, replacement=False, num_samples=None, generator=None):
        if not isinstance(replacement, bool):
            raise TypeError("replacement should be a boolean value, but got replacement="
                            f"{replacement}")
        self.data_source = data_source
        self.replacement = replacement
        self._num_samples = num_samples
        self.generator = generator
        if not isinstance(self.num_samples, int) or self.num_samples <= 0:
            raise ValueError("num_samples should be a positive integer value, but got "
                             f"num_samples={self.num_samples}")

    @property
    def num_samples(self):
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self):
        # NOTE: a generator function, as torch's: nothing is drawn until the first index is
        # asked for, and draws come in chunks (32 indices, or one permutation) as needed.
        from ... import _creation
        n = len(self.data_source)
        generator = self.generator if self.generator is not None else _fresh_generator()
        if self.replacement:
            for _ in range(self.num_samples // 32):
                yield from _creation.randint(high=n, size=(32,), dtype=_creation.D.int64,
                                             generator=generator).tolist()
            yield from _creation.randint(high=n, size=(self.num_samples % 32,),
                                         dtype=_creation.D.int64, generator=generator).tolist()
        else:
            for _ in range(self.num_samples // n):
                yield from _creation.randperm(n, generator=generator).tolist()
            yield from _creation.randperm(n, generator=generator).tolist()[
                :self.num_samples % n]

    def __len__(self):
        return self.num_samples


class SubsetRandomSampler(Sampler):
    """The given indices in a random order."""

    def __init__(self, indices, generator=None):
        self.indices = indices
        self.generator = generator

    def __iter__(self):
        from ... import _creation
        for i in _creation.randperm(len(self.indices), generator=self.generator).tolist():
            yield self.indices[i]

    def __len__(self):
        return len(self.indices)


class WeightedRandomSampler(Sampler):
    """``num_samples`` indices drawn with probabilities proportional to ``weights``."""

    def __init__(self, weights, num_samples, replacement=True, generator=None):
        if not isinstance(num_samples, int) or isinstance(num_samples, bool) or num_samples <= 0:
            raise ValueError("num_samples should be a positive integer value, but got "
                             f"num_samples={num_samples}")
        if not isinstance(replacement, bool):
            raise ValueError("replacement should be a boolean value, but got replacement="
                             f"{replacement}")
        from ... import _creation
        self.weights = _creation.as_tensor(weights, dtype=_creation.D.float64)
        if self.weights.dim() != 1:
            raise ValueError("weights should be a 1d sequence but given weights have shape "
                             f"{tuple(self.weights.shape)}")
        self.num_samples = num_samples
        self.replacement = replacement
        self.generator = generator

    def __iter__(self):
        from ..._ops.random import multinomial
        drawn = multinomial(self.weights, self.num_samples, self.replacement,
                            generator=self.generator)
        yield from iter(drawn.tolist())

    def __len__(self):
        return self.num_samples


class BatchSampler(Sampler):
    """Groups the indices of ``sampler`` into lists of ``batch_size``."""

    def __init__(self, sampler, batch_size, drop_last):
        if (not isinstance(batch_size, int) or isinstance(batch_size, bool)
                or batch_size <= 0):
            raise ValueError("batch_size should be a positive integer value, but got "
                             f"batch_size={batch_size}")
        if not isinstance(drop_last, bool):
            raise ValueError("drop_last should be a boolean value, but got "
                             f"drop_last={drop_last}")
        self.sampler = sampler
        self.batch_size = batch_size
        self.drop_last = drop_last

    def __iter__(self):
        batch = []
        for index in self.sampler:
            batch.append(index)
            if len(batch) == self.batch_size:
                yield batch
                batch = []
        if batch and not self.drop_last:
            yield batch

    def __len__(self):
        n = len(self.sampler)
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)
