"""ember.utils.tensorboard against torch.utils.tensorboard: the event files both write.

The writer needs the optional ``tensorboard`` package; without it both libraries refuse the
import with the same error.
"""
import importlib
import sys

import numpy as np
import pytest

import ember
from oracle import same


def _tensorboard_module(lib):
    return importlib.import_module(lib.__name__ + ".utils.tensorboard")


def test_import_without_tensorboard_fails_as_torchs(monkeypatch):
    def body(lib):
        monkeypatch.setitem(sys.modules, "tensorboard", None)
        monkeypatch.delitem(sys.modules, lib.__name__ + ".utils.tensorboard", raising=False)
        return _tensorboard_module(lib)
    same(body)


def _events(log_dir):
    """Every event in the event files under ``log_dir`` (by run folder), the wall times and
    the file header left out: what differs between two runs of one program."""
    from tensorboard.backend.event_processing.event_file_loader import EventFileLoader
    from tensorboard.backend.event_processing.io_wrapper import GetLogdirSubdirectories
    from tensorboard.backend.event_processing.io_wrapper import IsSummaryEventsFile
    import os
    runs = {}
    for folder in sorted(GetLogdirSubdirectories(str(log_dir))):
        files = sorted(f for f in os.listdir(folder) if IsSummaryEventsFile(f))
        events = []
        for name in files:
            for event in EventFileLoader(os.path.join(folder, name)).Load():
                if event.HasField("file_version"):
                    continue
                event.ClearField("wall_time")
                events.append(str(event))
        runs[os.path.relpath(folder, log_dir)] = events
    return runs


@pytest.fixture
def tensorboard_dir(tmp_path):
    pytest.importorskip("tensorboard")
    return tmp_path


def _log_all_kinds(lib, log_dir):
    tb = _tensorboard_module(lib)
    gen = lib.Generator().manual_seed(0)
    weights = lib.randn(1000, generator=gen)
    with tb.SummaryWriter(log_dir=str(log_dir), purge_step=3) as writer:
        writer.add_scalar("loss", lib.tensor(2.5), 3)
        writer.add_scalar("loss", 1.25, np.int64(4))
        writer.add_scalar("acc", np.float32(0.75), 4, new_style=True)
        writer.add_scalar("acc", lib.tensor([[0.5]], dtype=lib.float64), 5, new_style=True,
                          double_precision=True)
        writer.add_scalar("bf16", lib.tensor(1.0078125, dtype=lib.bfloat16), 5)
        writer.add_scalars("run/loss", {"train": 1.0, "test": lib.tensor(2.0)}, 6)
        writer.add_histogram("w", weights, 7)
        writer.add_histogram("w_fd", weights.double(), 7, bins="fd", max_bins=8)
        writer.add_histogram("ints", np.array([1, 1, 2, 7]), 8, bins=4)
        writer.add_text("note", "step 9 \u00e9", 9)
        writer.flush()
        log = writer.get_logdir()
    writer.add_scalar("after_close", 0.5, 10)  # a closed writer opens a new file
    writer.close()
    return log == str(log_dir)


def test_events_are_torchs(tensorboard_dir):
    def body(lib):
        log_dir = tensorboard_dir / lib.__name__
        same_dir = _log_all_kinds(lib, log_dir)
        return same_dir, _events(log_dir)
    runs = same(body).value[1]
    assert sorted(runs) == [".", "run_loss_test", "run_loss_train"]
    assert len(runs["."]) == 11  # the purge marker, 5 scalars, 3 histograms, text, 1 more


def test_refusals_are_torchs(tensorboard_dir):
    def body(lib):
        tb = _tensorboard_module(lib)
        writer = tb.SummaryWriter(log_dir=str(tensorboard_dir / lib.__name__))
        errors = []
        for call in (lambda: writer.add_scalar("x", lib.ones(2)),
                     lambda: writer.add_scalar("x", "text"),
                     lambda: writer.add_histogram("h", lib.ones(0)),
                     lambda: writer.add_histogram("h", [1.0, 2.0])):
            try:
                call()
                errors.append(None)
            except Exception as e:  # noqa: BLE001 - the type and text are compared
                errors.append((type(e).__name__, str(e).replace("torch", "ember")))
        writer.close()
        return errors
    errors = same(body).value
    assert all(errors)


def test_default_log_dir_names_the_run(tensorboard_dir, monkeypatch):
    monkeypatch.chdir(tensorboard_dir)
    writer = _tensorboard_module(ember).SummaryWriter(comment="_lr0.1")
    writer.close()
    parts = writer.get_logdir().split("/")
    assert parts[0] == "runs" and parts[1].endswith("_lr0.1")
    assert (tensorboard_dir / writer.get_logdir()).is_dir()
