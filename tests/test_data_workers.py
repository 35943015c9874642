"""DataLoader with worker processes (real processes, every wait bounded): delivery order,
seeding, get_worker_info, errors, timeouts, dead workers, shutdown, shared memory."""
from __future__ import annotations

import gc
import multiprocessing
import os
import random
import time
import warnings

import numpy as np
import pytest

import ember
from ember.utils.data import DataLoader, Dataset, IterableDataset, get_worker_info
from ember.utils.data import _shared_memory
from ember.utils.data._worker import seed_worker


class Squares(Dataset):
    """i -> (i*i as float32 array of shape (3,), i)."""

    def __init__(self, n=24):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return np.full(3, i * i, np.float32), i


class WhoLoads(Dataset):
    """Each item says which worker (and seed) produced it."""

    def __len__(self):
        return 8

    def __getitem__(self, i):
        info = get_worker_info()
        return i, info.id, info.seed, info.num_workers, os.getpid()


class Sharded(IterableDataset):
    """range(n), split between workers with get_worker_info (torch's documented pattern)."""

    def __init__(self, n):
        self.n = n

    def __iter__(self):
        info = get_worker_info()
        if info is None:
            return iter(range(self.n))
        return iter(range(info.id, self.n, info.num_workers))


class Failing(Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, i):
        if i == 3:
            raise ValueError("bad index 3")
        return i


class MissingKey(Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, i):
        raise KeyError("k")


class Dying(Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, i):
        if i == 3:
            os._exit(3)
        return i


class Slow(Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, i):
        time.sleep(1.5)
        return i


class RandomDraws(Dataset):
    """What each worker's generators give: ember, NumPy's global one, Python's random."""

    def __len__(self):
        return 4

    def __getitem__(self, i):
        return (float(ember.rand(()).item()), float(np.random.rand()), random.random(),
                get_worker_info().seed)


def _values(batches):
    return [(b[0].numpy().tolist(), b[1].tolist()) for b in batches]


def _children():
    return [p for p in multiprocessing.active_children() if p.daemon]


@pytest.mark.filterwarnings("ignore:This DataLoader will create")
def test_batches_come_in_sampler_order_as_without_workers():
    for shuffle in (False, True):
        runs = []
        for workers in (0, 2, 3):
            loader = DataLoader(Squares(), batch_size=5, shuffle=shuffle, num_workers=workers,
                                generator=ember.Generator().manual_seed(7))
            runs.append(_values(loader))
        assert runs[0] == runs[1] == runs[2]
        assert len(runs[0]) == 5


def test_unbatched_and_batch_sampler_forms():
    plain = list(DataLoader(Squares(6), batch_size=None, num_workers=2))
    assert [int(i) for _, i in plain] == list(range(6))
    sampler = [[5, 0], [2], [1, 3, 4]]
    batches = list(DataLoader(Squares(6), batch_sampler=sampler, num_workers=2))
    assert [b[1].tolist() for b in batches] == sampler


def test_get_worker_info_and_seeds():
    assert get_worker_info() is None
    generator = ember.Generator().manual_seed(3)
    expected_base = int(ember.empty((), dtype=ember.int64)
                        .random_(generator=ember.Generator().manual_seed(3)).item())
    rows = [tuple(int(v) for v in row)
            for row in DataLoader(WhoLoads(), batch_size=None, num_workers=2,
                                  generator=generator)]
    assert [r[0] for r in rows] == list(range(8))
    assert [r[1] for r in rows] == [0, 1] * 4  # round robin, one task per worker in turn
    assert {r[1]: r[2] for r in rows} == {0: expected_base, 1: expected_base + 1}
    assert {r[3] for r in rows} == {2}
    assert len({r[4] for r in rows}) == 2 and os.getpid() not in {r[4] for r in rows}


@pytest.fixture
def restore_generators():
    """seed_worker reseeds this process's generators: put them back afterwards."""
    states = ember.get_rng_state(), np.random.get_state(), random.getstate()
    yield
    ember.set_rng_state(states[0])
    np.random.set_state(states[1])
    random.setstate(states[2])


def test_worker_generators_are_seeded_as_torch_seeds_them(restore_generators):
    draws = list(DataLoader(RandomDraws(), batch_size=None, num_workers=2))
    for worker_id in (0, 1):  # items 0 and 1 are each worker's first
        ours, seed = draws[worker_id][:3], int(draws[worker_id][3])
        # the same seeding done here gives the same three draws
        assert seed_worker(seed - worker_id, worker_id) == seed
        assert (float(ember.rand(()).item()), float(np.random.rand()), random.random()) == \
            tuple(float(v) for v in ours)
    pytest.importorskip("torch")
    from torch.utils.data._utils.worker import _generate_state
    base = 123456789012345
    for worker_id in (0, 1, 5):
        seed_worker(base, worker_id)
        ours = np.random.get_state()[1].tolist()
        np.random.seed(_generate_state(base, worker_id))
        assert np.random.get_state()[1].tolist() == ours


def test_worker_init_fn_runs_once_in_each_worker():
    def init(worker_id):
        info = get_worker_info()
        assert info.id == worker_id
        info.dataset.offset = 100 * (worker_id + 1)

    class Offset(Dataset):
        offset = 0

        def __len__(self):
            return 4

        def __getitem__(self, i):
            return i + self.offset

    out = [int(x) for x in DataLoader(Offset(), batch_size=None, num_workers=2,
                                      worker_init_fn=init)]
    assert out == [100, 201, 102, 203]


def test_iterable_dataset_sharding_and_length_warning():
    loader = DataLoader(Sharded(10), batch_size=2, num_workers=2)
    assert [b.tolist() for b in loader] == [[0, 2], [1, 3], [4, 6], [5, 7], [8], [9]]
    dropped = DataLoader(Sharded(10), batch_size=2, num_workers=2, drop_last=True)
    assert [b.tolist() for b in dropped] == [[0, 2], [1, 3], [4, 6], [5, 7]]

    class Told(Sharded):
        def __len__(self):
            return 3

    told = DataLoader(Told(10), batch_size=None, num_workers=2)
    assert len(told) == 3
    with pytest.warns(UserWarning, match="was reported to be 3"):
        assert sorted(int(x) for x in told) == list(range(10))


def test_worker_exception_is_reraised_with_its_traceback():
    with pytest.raises(ValueError) as caught:
        list(DataLoader(Failing(), batch_size=2, num_workers=2))
    message = str(caught.value)
    assert message.startswith("Caught ValueError in DataLoader worker process 1.\n"
                              "Original Traceback (most recent call last):\n")
    assert 'raise ValueError("bad index 3")' in message and message.endswith(
        "ValueError: bad index 3\n")
    with pytest.raises(KeyError) as caught:
        list(DataLoader(MissingKey(), batch_size=2, num_workers=1))
    # KeyError's message reads as text, not as a quoted repr
    assert str(caught.value).startswith("Caught KeyError in DataLoader worker process 0.\n")


def test_a_dead_worker_is_reported_at_once():
    start = time.monotonic()
    with pytest.raises(RuntimeError, match=r"^DataLoader worker \(pid\(s\) \d+\) exited "
                                           r"unexpectedly$"):
        list(DataLoader(Dying(), batch_size=2, num_workers=2))
    assert time.monotonic() - start < 30
    gc.collect()  # the failed iterator (held by the traceback's frames) shuts its workers down
    assert not _children()


def test_timeout():
    with pytest.raises(RuntimeError, match=r"^DataLoader timed out after 0.5 seconds$"):
        next(iter(DataLoader(Slow(), num_workers=1, timeout=0.5)))
    with pytest.raises(AssertionError, match="requires timeout == 0"):
        iter(DataLoader(Slow(), timeout=0.5))


def test_shutdown_when_dropped_half_way_or_interrupted():
    iterator = iter(DataLoader(Squares(), batch_size=2, num_workers=2))
    next(iterator)
    workers = list(iterator._workers)
    assert all(w.is_alive() for w in workers)
    del iterator
    assert all(w.exitcode is not None for w in workers) and not _children()

    with pytest.raises(KeyboardInterrupt):
        for _ in DataLoader(Squares(), batch_size=2, num_workers=2):
            raise KeyboardInterrupt
    assert not _children()


def test_persistent_workers_serve_every_epoch():
    calls = multiprocessing.get_context().Value("i", 0)

    def init(_):
        with calls.get_lock():
            calls.value += 1

    loader = DataLoader(Squares(10), batch_size=3, num_workers=2, persistent_workers=True,
                        worker_init_fn=init)
    first = _values(loader)
    pids = [w.pid for w in loader._iterator._workers]
    second = _values(loader)
    assert first == second == _values(DataLoader(Squares(10), batch_size=3))
    assert [w.pid for w in loader._iterator._workers] == pids
    assert calls.value == 2  # once per worker, not once per epoch
    loader._iterator._shutdown_workers()
    assert not _children()


def test_prefetch_bounds_the_work_handed_out():
    iterator = iter(DataLoader(Squares(40), batch_size=2, num_workers=2, prefetch_factor=3))
    assert iterator._send_idx == 6
    for _ in range(4):
        next(iterator)
        assert iterator._tasks_outstanding <= 6
    del iterator


def test_out_of_order_delivery_gives_every_batch():
    loader = DataLoader(Squares(20), batch_size=2, num_workers=2, in_order=False)
    assert sorted(b[1].tolist() for b in loader) == [[i, i + 1] for i in range(0, 20, 2)]


def test_spawn_context():
    loader = DataLoader(Squares(8), batch_size=4, num_workers=2,
                        multiprocessing_context="spawn")
    assert _values(loader) == _values(DataLoader(Squares(8), batch_size=4))


def test_option_errors():
    with pytest.raises(ValueError, match="should specify a valid start method"):
        DataLoader(Squares(), num_workers=1, multiprocessing_context="nope")
    with pytest.raises(ValueError, match="can only be used with multi-process loading"):
        DataLoader(Squares(), multiprocessing_context="fork")
    with pytest.raises(TypeError, match="should be a valid context object"):
        DataLoader(Squares(), num_workers=1, multiprocessing_context=3)
    with pytest.raises(ValueError, match="prefetch_factor option could only be specified"):
        DataLoader(Squares(), prefetch_factor=2)
    with pytest.raises(ValueError, match="persistent_workers option needs num_workers > 0"):
        DataLoader(Squares(), persistent_workers=True)
    loader = DataLoader(Squares())
    with pytest.raises(ValueError, match="batch_size attribute should not be set after"):
        loader.batch_size = 3


def test_more_workers_than_cpus_warns(monkeypatch):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0})
    with pytest.warns(UserWarning, match=r"create 2 worker processes in total\. Our suggested "
                                         r"max number of worker in current system is 1,"):
        assert len(list(DataLoader(Squares(4), num_workers=2))) == 4


def test_pin_memory_without_an_accelerator_warns_and_loads():
    with pytest.warns(UserWarning, match="no accelerator is found"):
        batches = _values(DataLoader(Squares(6), batch_size=3, num_workers=2,
                                     pin_memory=True))
    assert batches == _values(DataLoader(Squares(6), batch_size=3))


def test_large_batches_arrive_in_shared_memory():
    class Images(Dataset):
        def __len__(self):
            return 16

        def __getitem__(self, i):
            return ember.full((3, 32, 32), float(i)), np.full((64, 64), i, np.int64), i

    # 96 KiB and 256 KiB per batch: over the threshold; the labels (64 bytes) are pickled
    batches = list(DataLoader(Images(), batch_size=8, num_workers=2))
    for k, (images, grids, labels) in enumerate(batches):
        for batch in (images, grids):
            assert _shared_memory.in_shared_memory(batch.numpy())
        assert not _shared_memory.in_shared_memory(labels.numpy())
        assert images.shape == (8, 3, 32, 32) and grids.shape == (8, 64, 64)
        assert images[:, 0, 0, 0].tolist() == [8.0 * k + j for j in range(8)]
        assert grids.dtype == ember.int64 and grids[:, 5, 5].tolist() == \
            [8 * k + j for j in range(8)]
        images.add_(1)  # writable, and private to this process


def test_shared_memory_round_trip_keeps_layout_and_refuses_graph_tensors():
    context = multiprocessing.get_context("fork")
    _shared_memory.register_reductions()
    q = context.Queue()
    shared = _shared_memory.shared_empty((64, 256), np.float64)
    shared[...] = np.arange(64 * 256).reshape(64, 256)
    view = ember.from_numpy(shared)[::2, 3:200:3]  # a strided view of a shared block
    q.put(view)
    got = q.get(timeout=10)
    assert got.tolist() == view.tolist() and got.stride() == view.stride()
    assert _shared_memory.in_shared_memory(got.numpy())
    big = ember.arange(64 * 256, dtype=ember.float64).reshape(64, 256)[::2, 3:200:3]
    q.put(big)  # not in shared memory: copied into a block (compact), then shared
    assert q.get(timeout=10).tolist() == big.tolist()
    leaf = ember.ones(4, requires_grad=True)
    q.put(leaf)
    assert q.get(timeout=10).requires_grad
    with pytest.raises(RuntimeError, match="Cowardly refusing to serialize non-leaf tensor"):
        _shared_memory._reduce_tensor(leaf * 2)


@pytest.mark.filterwarnings("ignore:This DataLoader will create")
def test_same_batches_as_torch_with_workers():
    torch = pytest.importorskip("torch")
    from torch.utils.data import DataLoader as TorchLoader

    class TorchSharded(torch.utils.data.IterableDataset):
        def __iter__(self):
            info = torch.utils.data.get_worker_info()
            return iter(range(info.id, 11, info.num_workers))

    ours = [b.tolist() for b in DataLoader(Sharded(11), batch_size=3, num_workers=3)]
    theirs = [b.tolist() for b in TorchLoader(TorchSharded(), batch_size=3, num_workers=3)]
    assert ours == theirs
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ours = [b[1].tolist() for b in DataLoader(Squares(13), batch_size=4, num_workers=2)]
        theirs = [b[1].tolist() for b in TorchLoader(Squares(13), batch_size=4, num_workers=2)]
    assert ours == theirs


def test_more_workers_than_cpus_warns_when_made_and_when_iterated_as_torch(monkeypatch):
    """torch checks the worker count in the constructor and again for every iterator, each
    warning naming the line that checks (the loader's own)."""
    torch = pytest.importorskip("torch")
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0})

    def warned(lib):
        with warnings.catch_warnings(record=True) as record:
            warnings.simplefilter("always")
            loader = lib.utils.data.DataLoader(list(range(4)), num_workers=2)
            made = len(record)
            assert len(list(loader)) == 4
        return made, [(w.category.__name__, str(w.message)) for w in record]
    assert warned(ember) == warned(torch)
