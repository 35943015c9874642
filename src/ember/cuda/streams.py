"""CUDA streams and events on CuPy's. ember's GPU kernels run on CuPy's current stream, so
``with ember.cuda.stream(s):`` puts them on ``s``."""
from __future__ import annotations

from .._backend.device import cuda_backend, require_cuda

__all__ = ["Event", "Stream", "StreamContext", "current_stream", "default_stream", "stream"]


class Stream:
    """A CUDA stream (``torch.cuda.Stream``) on a device (the current one by default)."""

    def __init__(self, device=None, priority=0, **kwargs):
        backend = cuda_backend()
        if backend is None:
            raise RuntimeError("ember.cuda.Stream requires CUDA support")
        from . import _index
        self.device_index = _index(device)
        self.priority = priority
        self._stream = kwargs.get("_wrapped") or backend.stream(self.device_index, priority)

    @property
    def device(self):
        from .._backend.device import device
        return device("cuda", self.device_index)

    @property
    def cuda_stream(self) -> int:
        return int(self._stream.ptr)

    def wait_event(self, event):
        event.wait(self)

    def wait_stream(self, stream):
        self.wait_event(stream.record_event())

    def record_event(self, event=None):
        event = Event() if event is None else event
        event.record(self)
        return event

    def query(self) -> bool:
        return bool(self._stream.done)

    def synchronize(self):
        self._stream.synchronize()

    def __enter__(self):
        self._ctx = StreamContext(self)
        return self._ctx.__enter__()

    def __exit__(self, *exc):
        return self._ctx.__exit__(*exc)

    def __eq__(self, other):
        return isinstance(other, Stream) and self._stream == other._stream

    def __hash__(self):
        return hash((self.cuda_stream, self.device_index))

    def __repr__(self):
        return (f"<ember.cuda.Stream device=cuda:{self.device_index} "
                f"cuda_stream={hex(self.cuda_stream)}>")


def _wrap(cupy_stream, index):
    return Stream(index, _wrapped=cupy_stream)


def current_stream(device=None) -> Stream:
    """The stream ember's kernels run on now."""
    backend = require_cuda()
    from . import _index
    index = _index(device)
    return _wrap(backend.current_stream(index), index)


def default_stream(device=None) -> Stream:
    """The device's default (null) stream."""
    backend = require_cuda()
    from . import _index
    return _wrap(backend.null_stream(), _index(device))


class StreamContext:
    """Runs the code inside on ``stream`` (``None``: a no-op, as in torch)."""

    def __init__(self, stream):
        self.stream = stream

    def __enter__(self):
        if self.stream is None:
            return None
        self.stream._stream.__enter__()
        return self.stream

    def __exit__(self, *exc):
        if self.stream is not None:
            self.stream._stream.__exit__(*exc)
        return False


def stream(stream) -> StreamContext:
    """``with ember.cuda.stream(s):`` runs ember's kernels on ``s`` inside."""
    return StreamContext(stream)


class Event:
    """A CUDA event: record it on a stream, wait for it, time between two of them."""

    def __init__(self, enable_timing=False, blocking=False, interprocess=False):
        backend = cuda_backend()
        if backend is None:
            raise RuntimeError("Tried to instantiate dummy base class Event")
        self._backend = backend
        self.enable_timing = enable_timing
        self._event = backend.event(enable_timing, blocking, interprocess)
        self._recorded = False

    def record(self, stream=None):
        s = current_stream() if stream is None else stream
        self._event.record(s._stream)
        self._recorded = True

    def wait(self, stream=None):
        s = current_stream() if stream is None else stream
        s._stream.wait_event(self._event)

    def query(self) -> bool:
        return bool(self._event.done)

    def synchronize(self):
        self._event.synchronize()

    def elapsed_time(self, end_event) -> float:
        """Milliseconds between this event's record and ``end_event``'s."""
        if not (self.enable_timing and end_event.enable_timing):
            raise RuntimeError("Both events must be created with argument 'enable_timing=True'.")
        if not (self._recorded and end_event._recorded):
            raise RuntimeError("Both events must be recorded before calculating elapsed time.")
        return self._backend.elapsed_ms(self._event, end_event._event)

    def __repr__(self):
        return "<ember.cuda.Event uninitialized>" if not self._recorded else (
            f"<ember.cuda.Event {hex(id(self._event))}>")
