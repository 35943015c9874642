"""DistributedSampler against torch's: the same index stream for every rank and epoch."""
from __future__ import annotations

import pytest
from oracle import torch_or_skip

import ember
from ember.utils.data import DistributedSampler

CONFIGS = [(10, 3, True, False), (10, 3, True, True), (10, 4, False, False),
           (7, 4, False, True), (2, 5, True, False), (101, 8, True, False), (0, 2, True, True)]


@pytest.mark.parametrize("n,replicas,shuffle,drop_last", CONFIGS)
def test_index_stream_is_torchs(n, replicas, shuffle, drop_last):
    torch = torch_or_skip()
    data = list(range(n))
    for seed in (0, 11):
        ours = [DistributedSampler(data, replicas, r, shuffle, seed, drop_last)
                for r in range(replicas)]
        theirs = [torch.utils.data.DistributedSampler(data, replicas, r, shuffle, seed,
                                                      drop_last) for r in range(replicas)]
        for epoch in range(3):
            for a, b in zip(ours, theirs):
                a.set_epoch(epoch)
                b.set_epoch(epoch)
                assert list(a) == list(b) and len(a) == len(b)


@pytest.mark.parametrize("n,replicas,drop_last", [(10, 3, False), (10, 3, True), (12, 4, True)])
def test_shards_are_disjoint_and_cover(n, replicas, drop_last):
    shards = [list(DistributedSampler(range(n), replicas, r, seed=5, drop_last=drop_last))
              for r in range(replicas)]
    assert len({len(s) for s in shards}) == 1
    flat = [i for s in shards for i in s]
    if drop_last:  # disjoint; only the last n % replicas indices of the permutation are left out
        assert len(set(flat)) == len(flat) == n - n % replicas
    else:  # covering; the padding repeats the first indices of the permutation
        assert set(flat) == set(range(n))
        assert len(flat) - n == (-n) % replicas


def test_errors():
    with pytest.raises(ValueError, match=r"^Invalid rank 3, rank should be in the interval "
                                         r"\[0, 2\]$"):
        DistributedSampler(range(4), num_replicas=3, rank=3)
    with pytest.raises(ValueError, match="^Default process group has not been initialized"):
        DistributedSampler(range(4))
    assert ember.utils.data.DistributedSampler is DistributedSampler
