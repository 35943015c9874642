"""torch's device-generic runtime names as a CPU-only build has them: ``ember.Stream`` and
``ember.Event`` (the CPU stream is the one in-order queue every op already runs on, and the CPU
backend records no events), ``get_device_module`` and the runtime error classes.
"""
from __future__ import annotations

__all__ = ["AcceleratorError", "Event", "FatalError", "OutOfMemoryError", "Stream",
           "get_device_module"]

import functools
import importlib


class AcceleratorError(RuntimeError):
    """An error reported by an accelerator's runtime."""


class OutOfMemoryError(RuntimeError):
    """A device ran out of memory."""


class FatalError(Exception):
    """An unrecoverable runtime failure."""


AcceleratorError.__module__ = OutOfMemoryError.__module__ = FatalError.__module__ = "ember"

_NO_EVENTS = "cpu backend doesn't support events."


def _cpu_device(device):
    """The CPU device ``device`` names; any other device cannot be reached by this build."""
    from ._tensor import device as Device
    if device is None or isinstance(device, int):
        # no accelerator: torch has none to default to, and an index names an accelerator
        if device is None:
            return Device("cpu")
        raise RuntimeError("Cannot access accelerator device when none is available.")
    dev = Device(device)
    if dev.type != "cpu":
        raise RuntimeError(f"PyTorch is not linked with support for {dev.type} devices")
    return dev


class Stream:
    """An in-order queue of work on a device. On the CPU there is one such queue, the calling
    thread, so waiting on it returns at once and it is always idle (``query()`` is True)."""

    def __init__(self, device=None, *, priority=0, stream_id=None, device_index=None,
                 device_type=None):
        from ._tensor import device as Device
        if stream_id is not None or device_type is not None:  # torch's (id, index, type) form
            self.stream_id = 0 if stream_id is None else int(stream_id)
            self.device_index = -1 if device_index is None else int(device_index)
        else:
            dev = _cpu_device(device)
            self.stream_id = 0
            self.device_index = -1 if dev.index is None else dev.index
        self.device_type = 0  # torch's DeviceType number of the CPU
        self.device = Device("cpu")
        self._priority = priority

    def query(self):
        return True

    def synchronize(self):
        return None

    def wait_event(self, event):
        if not isinstance(event, Event):
            raise TypeError(f"wait_event(): argument 'event' must be Event, not "
                            f"{type(event).__name__}")
        return None

    def wait_stream(self, stream):
        raise RuntimeError(_NO_EVENTS)

    def record_event(self, event=None):
        raise RuntimeError(_NO_EVENTS)

    def is_capturing(self):
        return False

    @property
    def native_handle(self):
        raise RuntimeError("Backend doesn't support getting stream native handle.")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return None

    def _key(self):
        return (self.stream_id, self.device_index, self.device_type)

    def __eq__(self, other):
        return isinstance(other, Stream) and self._key() == other._key()

    def __hash__(self):
        return hash(self._key())

    def __repr__(self):
        return (f"ember.Stream device_type=cpu, device_index="
                f"{self.device_index}, stream_id={self.stream_id}")


class Event:
    """A marker in a stream's queue. The CPU backend cannot record one (torch's error); an
    unrecorded event is complete, and waiting on it returns at once."""

    def __init__(self, device=None, *, enable_timing=False, blocking=False, interprocess=False):
        from ._tensor import device as Device
        dev = _cpu_device(device)
        self.device = Device(dev.type)
        self.event_id = 0
        self._device_index = -1 if dev.index is None else dev.index
        self._enable_timing = bool(enable_timing)
        self._flag = 1 if enable_timing else 0

    def record(self, stream=None):
        raise RuntimeError(_NO_EVENTS)

    def query(self):
        return True

    def synchronize(self):
        return None

    def wait(self, stream=None):
        return None

    def elapsed_time(self, end_event):
        if not (self._enable_timing and end_event._enable_timing):
            raise ValueError("Both events must be created with argument 'enable_timing=True'.")
        raise ValueError("Both events must be recorded before calculating elapsed time.")

    def ipc_handle(self):
        raise NotImplementedError("ember.Event ipc is not supported yet, please open an issue "
                                  "if you need this!")

    @classmethod
    def from_ipc_handle(cls, device, ipc_handle):
        raise NotImplementedError("ember.Event ipc is not supported yet, please open an issue "
                                  "if you need this!")

    def __repr__(self):
        return (f"ember.Event device_type={self.device.type}, device_index="
                f"{self._device_index}, event_flag={self._flag}, event_id={self.event_id}")


@functools.lru_cache(None)
def _module_of(device_type):
    try:
        return importlib.import_module(f"ember.{device_type}")
    except ModuleNotFoundError:
        raise RuntimeError(f"Device '{device_type}' does not have a corresponding module "
                           f"registered as 'ember.{device_type}'.") from None


def get_device_module(device=None):
    """The module of a device type (``ember.cpu``, ``ember.cuda``); with no argument, the
    current accelerator's module, or ``ember.cpu`` when there is none."""
    from ._tensor import device as Device
    if device is None:
        from . import cuda
        return _module_of("cuda" if cuda.is_available() else "cpu")
    if isinstance(device, Device):
        return _module_of(device.type)
    if isinstance(device, str):
        return _module_of(Device(device).type)
    raise RuntimeError(f"Invalid value of device '{device}', expect ember.device, str, or None")
