"""``ember.cpu``: torch.cpu's device-agnostic names for the CPU, so that code written against
``torch.get_device_module(device)`` runs the same on the CPU as on an accelerator. The CPU
has one device and one in-order stream (the calling thread): synchronizing returns at once.
"""
from __future__ import annotations

from contextlib import AbstractContextManager

from . import amp

__all__ = ["is_available", "is_initialized", "synchronize", "current_device", "current_stream",
           "stream", "set_device", "device_count", "Stream", "StreamContext", "Event"]


def is_available() -> bool:
    return True


def is_initialized() -> bool:
    return True


def synchronize(device=None) -> None:
    """Wait for the CPU's work: every op has finished when it returns, so nothing to do."""


class Stream:
    """The CPU stream (the one in-order queue of the calling thread)."""

    def __init__(self, priority: int = -1) -> None:
        self.priority = priority

    def wait_stream(self, stream) -> None:
        pass

    def record_event(self) -> None:
        pass

    def wait_event(self, event) -> None:
        pass


class Event:
    """A CPU event: complete as soon as it exists."""

    def query(self) -> bool:
        return True

    def record(self, stream=None) -> None:
        pass

    def synchronize(self) -> None:
        pass

    def wait(self, stream=None) -> None:
        pass


_default_cpu_stream = Stream()
_current_stream = _default_cpu_stream


def current_stream(device=None) -> Stream:
    return _current_stream


class StreamContext(AbstractContextManager):
    """Makes ``stream`` the current CPU stream inside a ``with`` block."""

    def __init__(self, stream):
        self.stream = stream
        self.prev_stream = _default_cpu_stream

    def __enter__(self):
        global _current_stream
        if self.stream is None:
            return
        self.prev_stream = _current_stream
        _current_stream = self.stream

    def __exit__(self, *exc) -> None:
        global _current_stream
        if self.stream is None:
            return
        _current_stream = self.prev_stream


def stream(stream: Stream) -> AbstractContextManager:
    return StreamContext(stream)


def device_count() -> int:
    return 1


def set_device(device) -> None:
    """The CPU has one device: nothing to select."""


def current_device() -> str:
    return "cpu"
