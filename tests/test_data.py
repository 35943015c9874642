"""ember.utils.data against torch.utils.data: batching, collation, shuffling, splitting."""
from __future__ import annotations

from collections import namedtuple

import numpy as np
import pytest

import ember
from ember.utils.data import (BatchSampler, ConcatDataset, DataLoader, Dataset,
                              IterableDataset, RandomSampler, SequentialSampler, Subset,
                              SubsetRandomSampler, TensorDataset, WeightedRandomSampler,
                              default_collate, random_split)


def _structure(x):
    """A comparable picture of a collated batch: containers, dtypes names, shapes, values."""
    if hasattr(x, "numpy") and hasattr(x, "dtype"):
        return ("T", str(x.dtype).split(".")[-1], tuple(x.shape), x.detach().numpy().tolist())
    if isinstance(x, dict):
        return {k: _structure(v) for k, v in x.items()}
    if isinstance(x, tuple) and hasattr(x, "_fields"):
        return (type(x).__name__,) + tuple(_structure(v) for v in x)
    if isinstance(x, (list, tuple)):
        return (type(x).__name__, [_structure(v) for v in x])
    return x


Point = namedtuple("Point", "x y")
BATCHES = {
    "tensors": lambda T: [T.tensor([1.0, 2.0]), T.tensor([3.0, 4.0])],
    "tuples": lambda T: [(T.tensor([1.0]), 0), (T.tensor([2.0]), 1)],
    "lists": lambda T: [[1, 2.5], [3, 4.5]],
    "dicts": lambda T: [{"a": T.tensor(1), "b": 1.5, "s": "u"},
                        {"a": T.tensor(2), "b": 2.5, "s": "v"}],
    "namedtuples": lambda T: [Point(1, 2.0), Point(3, 4.0)],
    "numpy": lambda T: [np.ones((2,), np.float32), np.zeros((2,), np.float32)],
    "bools": lambda T: [True, False],
}


@pytest.mark.parametrize("kind", sorted(BATCHES))
def test_default_collate_matches_torch(kind):
    torch = pytest.importorskip("torch")
    from torch.utils.data import default_collate as torch_collate
    assert _structure(default_collate(BATCHES[kind](ember))) == \
        _structure(torch_collate(BATCHES[kind](torch)))


def test_collate_unequal_lists_raises_torch_error():
    with pytest.raises(RuntimeError, match="each element in list of batch should be of equal"):
        default_collate([[1, 2], [3]])


def _dataset(T):
    return T.utils.data.TensorDataset(T.arange(10.0).reshape(5, 2), T.arange(5))


@pytest.mark.parametrize("batch_size,drop_last", [(1, False), (2, False), (2, True), (5, True),
                                                  (7, False), (None, False)])
def test_sequential_batches_match_torch(batch_size, drop_last):
    torch = pytest.importorskip("torch")
    import torch.utils.data  # noqa: F401
    import ember.utils.data  # noqa: F401
    ours = DataLoader(_dataset(ember), batch_size=batch_size, drop_last=drop_last)
    theirs = torch.utils.data.DataLoader(_dataset(torch), batch_size=batch_size,
                                         drop_last=drop_last)
    assert len(ours) == len(theirs)
    assert [_structure(b) for b in ours] == [_structure(b) for b in theirs]


def test_shuffle_is_a_permutation_and_repeatable_with_a_generator():
    data = TensorDataset(ember.arange(100))

    def epoch(seed):
        g = ember.Generator().manual_seed(seed)
        return [int(v) for (batch,) in DataLoader(data, batch_size=8, shuffle=True, generator=g)
                for v in batch]

    first = epoch(3)
    assert sorted(first) == list(range(100)) and first != list(range(100))
    assert epoch(3) == first and epoch(4) != first


def test_shuffle_follows_manual_seed_without_a_generator():
    data = TensorDataset(ember.arange(50))

    def epoch():
        return [int(v) for (b,) in DataLoader(data, batch_size=5, shuffle=True) for v in b]

    ember.manual_seed(11)
    first = epoch()
    second = epoch()
    ember.manual_seed(11)
    assert epoch() == first and second != first


def test_random_split_lengths_fractions_and_disjointness():
    data = TensorDataset(ember.arange(10))
    a, b, c = random_split(data, [0.5, 0.3, 0.2], generator=ember.Generator().manual_seed(0))
    assert (len(a), len(b), len(c)) == (5, 3, 2)
    seen = sorted(int(s[0]) for part in (a, b, c) for s in (part[i] for i in range(len(part))))
    assert seen == list(range(10))
    assert [len(s) for s in random_split(range(7), [0.5, 0.5])] == [4, 3]  # torch's rounding
    with pytest.raises(ValueError, match="Sum of input lengths does not equal"):
        random_split(data, [3, 3])


def test_tensor_dataset_size_mismatch():
    with pytest.raises(AssertionError, match="Size mismatch between tensors"):
        TensorDataset(ember.zeros(3), ember.zeros(4))


def test_subset_concat_and_add():
    data = TensorDataset(ember.arange(6))
    sub = Subset(data, [4, 0])
    assert [int(sub[i][0]) for i in range(2)] == [4, 0]
    both = data + sub
    assert isinstance(both, ConcatDataset) and len(both) == 8
    assert int(both[6][0]) == 4 and int(both[-1][0]) == 0


class Squares(Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, i):
        return {"x": ember.tensor([float(i)]), "y": i * i}


class Stream(IterableDataset):
    def __iter__(self):
        return iter(range(7))


def test_custom_dataset_of_dicts():
    batches = list(DataLoader(Squares(), batch_size=3))
    assert batches[0]["x"].shape == (3, 1) and batches[0]["y"].tolist() == [0, 1, 4]
    assert batches[1]["y"].tolist() == [9]


def test_iterable_dataset_batches_and_rejects_shuffle():
    assert [b.tolist() for b in DataLoader(Stream(), batch_size=3)] == \
        [[0, 1, 2], [3, 4, 5], [6]]
    assert [b.tolist() for b in DataLoader(Stream(), batch_size=3, drop_last=True)] == \
        [[0, 1, 2], [3, 4, 5]]
    with pytest.raises(ValueError, match="expected unspecified shuffle option"):
        DataLoader(Stream(), shuffle=True)


def test_samplers():
    assert list(SequentialSampler(range(3))) == [0, 1, 2]
    g = ember.Generator().manual_seed(1)
    assert sorted(RandomSampler(range(5), generator=g)) == [0, 1, 2, 3, 4]
    draws = list(RandomSampler(range(3), replacement=True, num_samples=20, generator=g))
    assert len(draws) == 20 and set(draws) <= {0, 1, 2}
    assert sorted(SubsetRandomSampler([5, 7, 9], generator=g)) == [5, 7, 9]
    weighted = list(WeightedRandomSampler([0.0, 1.0, 0.0], 10, generator=g))
    assert weighted == [1] * 10
    assert list(BatchSampler(range(5), 2, drop_last=False)) == [[0, 1], [2, 3], [4]]
    assert len(BatchSampler(range(5), 2, drop_last=True)) == 2


@pytest.mark.parametrize("kwargs,message", [
    (dict(batch_size=0), "batch_size should be a positive integer value, but got batch_size=0"),
    (dict(sampler=[0], shuffle=True), "sampler option is mutually exclusive with shuffle"),
    (dict(batch_sampler=[[0]], batch_size=2),
     "batch_sampler option is mutually exclusive with batch_size"),
    (dict(num_workers=-1), "num_workers option should be non-negative"),
])
def test_loader_argument_errors_match_torch(kwargs, message):
    with pytest.raises(ValueError, match=message):
        DataLoader(range(3), **kwargs)
    torch = pytest.importorskip("torch")
    import torch.utils.data  # noqa: F401
    with pytest.raises(ValueError, match=message):
        torch.utils.data.DataLoader(range(3), **kwargs)
