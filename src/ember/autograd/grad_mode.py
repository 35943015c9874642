"""Grad modes: ``no_grad``, ``enable_grad``, ``set_grad_enabled``, ``inference_mode``.

Each is a context manager and a decorator; the mode is thread-local (see ``ember._state``).
"""
from __future__ import annotations

import functools
import inspect
import threading

from .._state import state

_object_new = object.__new__

__all__ = ["no_grad", "enable_grad", "set_grad_enabled", "inference_mode", "is_grad_enabled",
           "is_inference_mode_enabled"]


def is_grad_enabled() -> bool:
    """True when gradient mode is enabled in this thread."""
    return state.grad_enabled or state.inference_grad


def is_inference_mode_enabled() -> bool:
    return state.inference


class _DecoratorContextManager:
    """Lets a context manager decorate functions and generators (a fresh one per call)."""

    def __call__(self, func):
        if inspect.isclass(func):
            raise RuntimeError("ember grad modes cannot decorate classes")
        if inspect.isgeneratorfunction(func):
            @functools.wraps(func)
            def gen_wrapper(*args, **kwargs):
                gen = func(*args, **kwargs)
                # NOTE: the generator's StopIteration must end this generator with its value,
                # not escape it (Python would turn it into "generator raised StopIteration").
                try:
                    with self.clone():
                        response = gen.send(None)
                    while True:
                        try:
                            request = yield response
                        except GeneratorExit:
                            with self.clone():
                                gen.close()
                            raise
                        except BaseException as exc:
                            with self.clone():
                                response = gen.throw(exc)
                        else:
                            with self.clone():
                                response = gen.send(request)
                except StopIteration as e:
                    return e.value
            return gen_wrapper

        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            with self.clone():
                return func(*args, **kwargs)
        return wrapper

    def clone(self):
        return self.__class__()


def _grad_mode():
    """The grad mode as a value to restore later (see ``_set_grad_mode``)."""
    return state.grad_enabled, state.inference_grad


def _restore_grad_mode(prev):
    state.grad_enabled, state.inference_grad = prev


def _set_grad_mode(mode):
    # NOTE: inside inference mode nothing records, whatever the grad mode says (torch's
    # inference mode wins over enable_grad): the mode is only what is_grad_enabled() reports.
    if state.inference:
        state.inference_grad = mode
    else:
        state.grad_enabled = mode


class no_grad(_DecoratorContextManager):
    """Context manager and decorator that disables gradient recording."""

    # NOTE: a training step enters no_grad for its update: what _grad_mode, _set_grad_mode
    # and _restore_grad_mode do is written out here, and there is no __init__ (prev is
    # always set by __enter__ before __exit__ reads it).
    prev = None

    def __new__(cls, orig_func=None):
        if orig_func is None or cls is not no_grad:
            return _object_new(cls)
        return cls()(orig_func)  # bare @no_grad

    def __enter__(self):
        s = state
        self.prev = (s.grad_enabled, s.inference_grad)
        if s.inference:
            s.inference_grad = False
        else:
            s.grad_enabled = False

    def __exit__(self, exc_type, exc, tb):
        state.grad_enabled, state.inference_grad = self.prev


class enable_grad(_DecoratorContextManager):
    """Context manager and decorator that enables gradient recording (inside no_grad too)."""

    def __new__(cls, orig_func=None):
        if orig_func is None:
            return super().__new__(cls)
        return cls()(orig_func)

    def __init__(self, orig_func=None):
        self.prev = None

    def __enter__(self):
        self.prev = _grad_mode()
        _set_grad_mode(True)

    def __exit__(self, *exc):
        _restore_grad_mode(self.prev)


class set_grad_enabled(_DecoratorContextManager):
    """Set grad mode on or off: takes effect at once, and as a context manager restores it."""

    def __init__(self, mode: bool):
        if type(mode) is not bool:
            raise TypeError("set_grad_enabled(): argument 'enabled' (position 1) must be bool, "
                            f"not {type(mode).__name__}")
        self.prev = _grad_mode()
        self.mode = mode
        _set_grad_mode(mode)

    def __call__(self, func):
        _restore_grad_mode(self.prev)
        return super().__call__(func)

    def __enter__(self):
        _set_grad_mode(self.mode)

    def __exit__(self, *exc):
        _restore_grad_mode(self.prev)

    def __repr__(self):
        return f"{type(self).__module__}.{type(self).__qualname__}(mode={self.mode})"

    def clone(self):
        return self.__class__(self.mode)


class inference_mode(_DecoratorContextManager):
    """Like no_grad, and tensors made inside are inference tensors.

    ``inference_mode(False)`` turns inference mode off and grad mode on, as torch's does.
    """

    def __new__(cls, mode=True):
        if isinstance(mode, bool):
            return super().__new__(cls)
        return cls()(mode)

    def __init__(self, mode=True):
        self.mode = mode
        self.prev = None

    def __enter__(self):
        self.prev = (state.grad_enabled, state.inference, state.inference_grad)
        if self.mode:
            state.grad_enabled, state.inference, state.inference_grad = False, True, False
        else:
            state.grad_enabled, state.inference, state.inference_grad = True, False, False

    def __exit__(self, *exc):
        state.grad_enabled, state.inference, state.inference_grad = self.prev

    def clone(self):
        return self.__class__(self.mode)


# -- backward threading ------------------------------------------------------------------------
class _Threading(threading.local):
    enabled = True


_threading = _Threading()


def is_multithreading_enabled() -> bool:
    """Whether backward may run on device worker threads (this thread's setting). ember's
    backward always runs on the calling thread, so the setting is only recorded."""
    return _threading.enabled


class set_multithreading_enabled(_DecoratorContextManager):
    """Enable or disable multithreaded backward in this thread: takes effect at once, and as a
    context manager restores the previous setting."""

    def __init__(self, mode: bool) -> None:
        self.prev = _threading.enabled
        _threading.enabled = mode
        self.mode = mode

    def __enter__(self) -> None:
        pass

    def __exit__(self, *exc) -> None:
        _threading.enabled = self.prev

    def clone(self):
        return self.__class__(self.mode)


def is_view_replay_enabled() -> bool:
    """Whether a view changed in place is regenerated by replaying its view ops. ember, like
    torch by default, regenerates it as an ``as_strided`` view (AsStridedBackward0)."""
    return False


class enforce_grad_layout_policy(_DecoratorContextManager):
    """Whether a parameter's first gradient is made to follow torch's gradient layout contract
    (a dense parameter's ``.grad`` has its strides, any other's is contiguous), in this thread:
    with ``False`` a gradient the engine may keep is kept in the layout it arrives in, copies
    still follow the contract. Takes effect at once; as a context manager it restores the
    previous setting."""

    def __init__(self, enable: bool = True) -> None:
        from .engine import _layout_policy
        self.prev = _layout_policy.enforce
        _layout_policy.enforce = enable
        self.mode = enable

    def __call__(self, orig_func):
        from .engine import _layout_policy
        _layout_policy.enforce = self.prev
        return super().__call__(orig_func)

    def __enter__(self) -> None:
        pass

    def __exit__(self, *exc) -> None:
        from .engine import _layout_policy
        _layout_policy.enforce = self.prev

    def clone(self):
        return self.__class__(self.mode)
