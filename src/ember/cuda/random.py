"""CUDA random number generators: one per GPU, beside (never instead of) the CPU generator.

A CUDA generator's state is torch's: a seed and an offset (16 bytes). Each draw is made by
cuRAND (through CuPy) seeded from (seed, offset), and the offset then advances, so
``get_rng_state`` / ``set_rng_state`` repeat draws exactly. The values differ from the CPU
generator's, as torch's CUDA values differ from its CPU values.
"""
from __future__ import annotations

import os

import numpy as np

from .._backend.device import as_device, backend_for, cuda_backend, require_cuda, resolve
from .._backend.device import device as Device
from .._backend.random import DeviceRandom, draw_seed
from .._random.cpu_generator import DEFAULT_SEED as _DEFAULT_SEED

__all__ = ["get_rng_state", "get_rng_state_all", "initial_seed", "manual_seed",
           "manual_seed_all", "seed", "seed_all", "set_rng_state", "set_rng_state_all"]

_MASK = (1 << 64) - 1


class CudaGenerator:
    """A CUDA generator: a seeded cuRAND stream on one GPU (torch's state layout)."""

    def __init__(self, device="cuda"):
        self.device = resolve(as_device(device))
        backend_for(self.device)  # torch's error without a GPU
        self._seed = _DEFAULT_SEED
        self._offset = 0
        self._draws = None

    @property
    def _rng(self):
        draws = self._draws
        if draws is None:
            draws = self._draws = DeviceRandom(backend_for(self.device), self.device.index)
        draws.reseed(draw_seed(self._seed, self._offset))
        self._offset += 1
        return draws

    def manual_seed(self, seed):
        self._seed = int(seed) & _MASK
        self._offset = 0
        return self

    def seed(self):
        self.manual_seed(int.from_bytes(os.urandom(8), "little") >> 1)
        return self._seed

    def initial_seed(self):
        return self._seed

    def get_state(self):
        """torch's CUDA generator state: seed and offset, 8 little-endian bytes each."""
        from .._tensor import _wrap
        raw = self._seed.to_bytes(8, "little") + self._offset.to_bytes(8, "little")
        return _wrap(np.frombuffer(raw, np.uint8).copy())

    def set_state(self, new_state):
        data = new_state.numpy() if hasattr(new_state, "numpy") else np.asarray(new_state)
        if data.dtype != np.uint8:
            raise TypeError(f"expected a ember.ByteTensor, but got {new_state.type()}")
        if data.size != 16:
            raise RuntimeError(f"RNG state is wrong size. Expected 16 bytes, got {data.size}")
        raw = data.tobytes()
        self._seed = int.from_bytes(raw[:8], "little")
        self._offset = int.from_bytes(raw[8:], "little")
        return self


# -- the default generators, one per GPU, made when CUDA is first used ----------------------------
_pending = []  # seeding calls made before CUDA was initialised (torch's _lazy_call)


def default_generators():
    """The default CUDA generators (one per GPU), ``()`` without a GPU."""
    backend = cuda_backend()
    if backend is None:
        return ()
    gens = backend.generators
    if not gens:
        for i in range(backend.device_count()):
            gens[i] = CudaGenerator(Device("cuda", i))
        while _pending:
            _pending.pop(0)()
    return tuple(gens[i] for i in sorted(gens))


def default_generator(dev):
    """The default generator of CUDA device ``dev``."""
    gens = default_generators()
    index = resolve(dev).index
    return gens[index]


def _index(device):
    if isinstance(device, int):
        return device
    dev = as_device(device)
    return resolve(dev).index


def _lazy(fn):
    """Run ``fn`` now if CUDA is initialised, else when it is (silently never without one)."""
    backend = cuda_backend()
    if backend is not None and backend.generators:
        fn()
    else:
        _pending.append(fn)
        del _pending[:-16]  # (without a GPU they never run: keep the latest few)


def manual_seed(seed) -> None:
    """Set the seed for generating random numbers on the current GPU."""
    seed = int(seed)
    _lazy(lambda: default_generator(Device("cuda")).manual_seed(seed))


def manual_seed_all(seed) -> None:
    """Set the seed for generating random numbers on all GPUs."""
    seed = int(seed)
    _lazy(lambda: [g.manual_seed(seed) for g in default_generators()])


def seed() -> None:
    """Seed the current GPU's generator with a random number."""
    _lazy(lambda: default_generator(Device("cuda")).seed())


def seed_all() -> None:
    """Seed every GPU's generator with one random number."""
    def run():
        gens = default_generators()
        if gens:
            s = gens[0].seed()
            for g in gens[1:]:
                g.manual_seed(s)
    _lazy(run)


def initial_seed() -> int:
    """The current GPU's generator's seed."""
    require_cuda()
    return default_generator(Device("cuda")).initial_seed()


def get_rng_state(device="cuda"):
    """The current (or ``device``'s) GPU generator state as a ByteTensor."""
    require_cuda()
    return default_generators()[_index(device)].get_state()


def set_rng_state(new_state, device="cuda") -> None:
    """Set the current (or ``device``'s) GPU generator state."""
    state = new_state.clone() if hasattr(new_state, "clone") else new_state
    _lazy(lambda: default_generators()[_index(device)].set_state(state))


def get_rng_state_all():
    """The state of every GPU's generator."""
    return [g.get_state() for g in default_generators()]


def set_rng_state_all(new_states) -> None:
    """Set the state of every GPU's generator."""
    for i, state in enumerate(new_states):
        set_rng_state(state, i)
