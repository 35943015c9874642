"""``ember.Generator``, the default generator and the global seeding functions.

A ``Generator`` is a device-neutral handle around a device generator: ``CPUGeneratorImpl`` for
the CPU (torch's mt19937 stream). Another device registers its own generator class with
``register_device_generator`` and the handle works the same.
"""
from __future__ import annotations

import numpy as np

from .._compile.hooks import random_draw, replayed
from .._state import vmap_hook
from .cpu_generator import DEFAULT_SEED, CPUGeneratorImpl, nondeterministic_seed

_DEVICE_GENERATORS = {"cpu": CPUGeneratorImpl}
_SEED_RANGE = (-(1 << 63), (1 << 64) - 1)


def register_device_generator(device_type, factory):
    """Let ``Generator(device)`` build ``factory(seed)`` for ``device_type``."""
    _DEVICE_GENERATORS[device_type] = factory


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
        factory = _DEVICE_GENERATORS.get(self.device.type)
        if factory is None:
            raise RuntimeError(f"Cannot get {self.device.type.upper()} generator: ember has no "
                               f"{self.device.type} backend here")
        self._impl = factory(DEFAULT_SEED)

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
        if data.dtype != np.uint8:
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
        raise NotImplementedError("graphsafe_get_state is not supported in this Generator")

    def graphsafe_set_state(self, state):
        raise NotImplementedError("graphsafe_set_state is not supported in this Generator")

    def get_offset(self):
        raise RuntimeError(f"{self.device.type.upper()} Generator does not use offset")

    def set_offset(self, offset):
        raise RuntimeError(f"{self.device.type.upper()} Generator does not use offset")

    def __reduce__(self):
        return (Generator, (self.device,), (self.initial_seed(), None, self.get_state()))

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


def cpu_generator(generator):
    """The ``CPUGeneratorImpl`` that a ``generator=`` argument (or None) names."""
    random_draw("a random generator")  # (every sampler draws through here)
    vm = vmap_hook[0]
    if vm is not None:  # under vmap: randomness='error' refuses the draw
        vm.random_draw()
    if generator is None:
        return default_generator._impl
    if not isinstance(generator, Generator):
        raise TypeError(f"generator must be a ember.Generator, not {type(generator).__name__}")
    if generator.device.type != "cpu":
        raise RuntimeError("Expected a 'cpu' device type for generator but found "
                           f"'{generator.device.type}'")
    return generator._impl


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
