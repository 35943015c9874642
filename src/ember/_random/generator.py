"""``ember.Generator``, the default generator and the global seeding functions.

A ``Generator`` is a device-neutral handle around a device generator: ``CPUGeneratorImpl`` for
the CPU (torch's mt19937 stream). Another device registers its own generator class with
``register_device_generator`` (its module does so when imported), and the handle works the
same. A tensor on such a device draws through ``DeviceDraw``: the ``generator=`` argument
bound to the tensor's device, whose registered samplers draw there from that device's
generator, never from the CPU's.
"""
from __future__ import annotations

import numpy as np

from .._backend.device import as_device, default_device, resolve
from .._compile.hooks import random_draw, replayed
from .._state import vmap_hook
from .cpu_generator import DEFAULT_SEED, CPUGeneratorImpl, nondeterministic_seed

_DEVICE_GENERATORS = {"cpu": lambda device: CPUGeneratorImpl(DEFAULT_SEED)}
_DEVICE_SAMPLING = {}  # device type -> (its default generator of a device, its samplers)
_SEED_RANGE = (-(1 << 63), (1 << 64) - 1)


def register_device_generator(device_type, factory, default=None, samplers=None):
    """Let ``Generator(device)`` build its engine as ``factory(device)`` for ``device_type``.

    ``samplers`` (a namespace of functions named as the CPU kernels, taking the engine's
    ``draws(device)`` first) draw for that device's tensors, from the ``generator=`` argument
    or from ``default(device)``, the device's default ``Generator``.
    """
    _DEVICE_GENERATORS[device_type] = factory
    if samplers is not None:
        _DEVICE_SAMPLING[device_type] = (default, samplers)


def _registered(table, device_type):
    """``table``'s entry for ``device_type``, importing ``ember.<device_type>`` (which
    registers that device's generator) the first time it is asked for."""
    entry = table.get(device_type)
    if entry is None and device_type != "cpu":
        import importlib
        try:
            importlib.import_module(f"ember.{device_type}")
        except ImportError:
            return None
        entry = table.get(device_type)
    return entry


def _check_seed(seed):
    """torch's seed rules: a Python int within [-2**63, 2**64); negatives wrap to uint64."""
    if isinstance(seed, np.integer):
        raise TypeError("an integer is required")
    if not isinstance(seed, int) or isinstance(seed, bool):
        name = "Tensor" if type(seed).__name__ == "Tensor" else type(seed).__name__
        raise RuntimeError(f"manual_seed expected a long, but got {name}")  # noqa: TRY004
    if not _SEED_RANGE[0] <= seed <= _SEED_RANGE[1]:
        raise ValueError("Overflow when unpacking long long")
    return seed & 0xFFFFFFFFFFFFFFFF


class Generator:
    """Creates and returns a generator object that manages the state of the algorithm which
    produces pseudo random numbers (torch's mt19937 stream on the CPU)."""

    def __init__(self, device="cpu"):
        from .._tensor import device as _device
        self.device = _device(device)
        factory = _registered(_DEVICE_GENERATORS, self.device.type)
        if factory is None:
            raise RuntimeError(f"Cannot get {self.device.type.upper()} generator: ember has no "
                               f"{self.device.type} backend here")
        self._impl = factory(self.device)

    @replayed
    def manual_seed(self, seed):
        """Sets the seed for generating random numbers. Returns the generator."""
        self._impl.set_current_seed(_check_seed(seed))
        return self

    def seed(self):
        """Seeds the generator from the operating system's entropy; returns that seed."""
        return self._impl.seed()

    def initial_seed(self):
        """The seed the generator was last seeded with."""
        return self._impl.current_seed()

    def get_state(self):
        """The generator's state as a uint8 tensor (torch's byte layout)."""
        from .._tensor import _wrap
        return _wrap(self._impl.get_state())

    def set_state(self, new_state):
        """Loads a state from ``get_state`` (of ember or of torch). Returns the generator."""
        from .._tensor import Tensor
        if not isinstance(new_state, Tensor):
            raise TypeError(f"expected a ember.ByteTensor, but got {type(new_state).__name__}")
        data = new_state._data
        if data.dtype != np.uint8 or new_state.device.type != "cpu":  # (a CPU byte tensor)
            raise TypeError("RNG state must be a ember.ByteTensor")
        if not new_state.is_contiguous():
            raise RuntimeError("RNG state must be contiguous")
        self._impl.set_state(np.asarray(data))
        return self

    def clone_state(self):
        """A new generator in this one's state."""
        other = Generator(self.device)
        other._impl.clone_state_from(self._impl)
        return other

    def graphsafe_get_state(self):
        """A generator sharing this one's state (devices whose generators offset a stream)."""
        if not hasattr(self._impl, "get_offset"):
            raise NotImplementedError("graphsafe_get_state is not supported in this Generator")
        shared = Generator.__new__(Generator)
        shared.device, shared._impl = self.device, self._impl
        return shared

    def graphsafe_set_state(self, state):
        """Share ``state``'s state (a generator from ``graphsafe_get_state``)."""
        if not hasattr(self._impl, "get_offset"):
            raise NotImplementedError("graphsafe_set_state is not supported in this Generator")
        self._impl = state._impl
        return self

    def get_offset(self):
        """The offset into the generator's stream (devices whose generators use one)."""
        if not hasattr(self._impl, "get_offset"):
            raise RuntimeError(f"{self.device.type.upper()} Generator does not use offset")
        return self._impl.get_offset()

    def set_offset(self, offset):
        if not hasattr(self._impl, "set_offset"):
            raise RuntimeError(f"{self.device.type.upper()} Generator does not use offset")
        self._impl.set_offset(int(offset))
        return self

    def __reduce__(self):
        offset = self.get_offset() if hasattr(self._impl, "get_offset") else None
        return (Generator, (self.device,), (self.initial_seed(), offset, self.get_state()))

    def __setstate__(self, state):
        seed, offset, rng_state = state
        self.manual_seed(seed)
        if offset is not None:
            self.set_offset(offset)
        self.set_state(rng_state)


def _default():
    g = Generator()
    # torch seeds its global generator from the OS at start-up
    g._impl.set_current_seed(nondeterministic_seed())
    return g


default_generator = _default()


def _drawing():
    """Every draw, on any device, announces itself here first."""
    random_draw("a random generator")
    vm = vmap_hook[0]
    if vm is not None:  # under vmap: randomness='error' refuses the draw
        vm.random_draw()


def _checked(generator, device_type):
    """A ``generator=`` argument (not None) checked for the device type drawn on."""
    if not isinstance(generator, Generator):
        raise TypeError(f"generator must be a ember.Generator, not {type(generator).__name__}")
    if generator.device.type != device_type:
        raise RuntimeError(f"Expected a '{device_type}' device type for generator but found "
                           f"'{generator.device.type}'")
    return generator


def cpu_generator(generator):
    """The ``CPUGeneratorImpl`` that a ``generator=`` argument (or None) names."""
    _drawing()  # (every sampler draws through here or through DeviceDraw.sample)
    if generator is None:
        return default_generator._impl
    return _checked(generator, "cpu")._impl


class DeviceDraw:
    """A ``generator=`` argument (a ``Generator`` or None) bound to the non-CPU device that a
    tensor is drawn on. The samplers take it where they take a generator; it is checked (with
    torch's errors) only when the draw is made, after the sampler's own argument checks."""

    __slots__ = ("device", "generator")

    def __init__(self, generator, device):
        self.generator, self.device = generator, device

    def sample(self, kernel, *args):
        """The registered device sampler named ``kernel`` (as the CPU kernel it stands for),
        drawing from the generator on the device: ``kernel(engine.draws(device), *args)``."""
        if self.device.type == "meta":  # (torch draws nothing for a meta tensor)
            from .._backend.meta import sample
            return sample(kernel, *args)
        default, samplers = _registered(_DEVICE_SAMPLING, self.device.type)
        _drawing()
        gen = default(self.device) if self.generator is None else _checked(
            self.generator, self.device.type)
        return getattr(samplers, kernel)(gen._impl.draws(self.device), *args)

    def kernel_name(self, cpu_name):
        """torch's name of the device kernel a "not implemented" error names."""
        return cpu_name.replace("_cpu", "_" + self.device.type)


def draw_for(generator, device):
    """What the samplers draw from for a tensor on ``device`` (None: the default device): the
    ``generator=`` argument itself on the CPU, else a ``DeviceDraw``."""
    if device is None:
        device = default_device()
        if device is None:
            return generator
    device = as_device(device)
    if device.type == "cpu":
        return generator
    return DeviceDraw(generator, resolve(device))


def kernel_name(cpu_name, generator):
    """torch's kernel name in a "not implemented" error, for the device drawn on."""
    return generator.kernel_name(cpu_name) if isinstance(generator, DeviceDraw) else cpu_name


# -- the global functions (ember.manual_seed, ember.random.*) --------------------------------------
def manual_seed(seed):
    """Sets the seed for generating random numbers on all devices. Returns the default
    generator."""
    return default_generator.manual_seed(int(seed))


def seed():
    """Seeds the default generator from the operating system's entropy; returns that seed."""
    return default_generator.seed()


def initial_seed():
    """The initial seed of the default generator."""
    return default_generator.initial_seed()


def get_rng_state():
    """The default generator's state as a uint8 tensor."""
    return default_generator.get_state()


def set_rng_state(new_state):
    """Sets the default generator's state."""
    default_generator.set_state(new_state)
