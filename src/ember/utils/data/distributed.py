"""DistributedSampler: each process of a data-parallel job reads its own share of a dataset."""
from __future__ import annotations

import math

from ..._creation import randperm
from ..._random.generator import Generator
from .sampler import Sampler

__all__ = ["DistributedSampler"]


def _default(value, ask):
    if value is not None:
        return value
    from ... import distributed as dist
    if not dist.is_available():
        raise RuntimeError("Requires distributed package to be available")
    return ask(dist)


class DistributedSampler(Sampler):
    """Indices of ``dataset`` for process ``rank`` of ``num_replicas``: every ``num_replicas``-th
    index of one permutation (seeded ``seed + epoch``, the same in every process), padded by
    repeating its start (or, with ``drop_last``, cut) to a multiple of ``num_replicas``."""

    def __init__(self, dataset, num_replicas=None, rank=None, shuffle=True, seed=0,
                 drop_last=False):
        num_replicas = _default(num_replicas, lambda dist: dist.get_world_size())
        rank = _default(rank, lambda dist: dist.get_rank())
        if rank >= num_replicas or rank < 0:
            raise ValueError(f"Invalid rank {rank}, rank should be in the interval "
                             f"[0, {num_replicas - 1}]")
        self.dataset = dataset
        self.num_replicas = num_replicas
        self.rank = rank
        self.epoch = 0
        self.drop_last = drop_last
        if drop_last and len(dataset) % num_replicas != 0:
            self.num_samples = math.ceil((len(dataset) - num_replicas) / num_replicas)
        else:
            self.num_samples = math.ceil(len(dataset) / num_replicas)
        self.total_size = self.num_samples * num_replicas
        self.shuffle = shuffle
        self.seed = seed

    def __iter__(self):
        n = len(self.dataset)
        if self.shuffle:
            g = Generator()
            g.manual_seed(self.seed + self.epoch)
            indices = randperm(n, generator=g).tolist()
        else:
            indices = list(range(n))
        if not self.drop_last:
            padding = self.total_size - len(indices)
            if padding <= len(indices):
                indices += indices[:padding]
            else:
                indices += (indices * math.ceil(padding / len(indices)))[:padding]
        else:
            indices = indices[:self.total_size]
        return iter(indices[self.rank:self.total_size:self.num_replicas])

    def __len__(self) -> int:
        return self.num_samples

    def set_epoch(self, epoch: int) -> None:
        """Shuffle differently in the next iteration (call it at the start of each epoch)."""
        self.epoch = epoch
