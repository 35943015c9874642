"""CUDA random number generators: one per GPU, beside (never instead of) the CPU generator.

Every random draw for a GPU tensor comes from a CUDA generator (the ``generator=`` argument,
or the default generator of the tensor's GPU) and is made on that GPU; the CPU generator is
never touched. A CUDA generator's state is torch's: a seed and an offset (a multiple of 4), 16
bytes. Each draw re-seeds cuRAND's Philox generator from the pair and advances the offset by 4
(see ``ember._backend.random``), so ``get_rng_state`` / ``set_rng_state`` repeat draws
exactly. The values differ from the CPU generator's, as torch's CUDA values differ from its CPU
values, and from torch's CUDA values.
"""
from __future__ import annotations

import numpy as np

from .._backend import device_sampling
from .._backend.device import as_device, backend_for, cuda_backend, require_cuda, resolve
from .._backend.device import device as Device
from .._backend.random import DeviceRandom, draw_seed
from .._random.cpu_generator import DEFAULT_SEED, nondeterministic_seed
from .._random.generator import Generator, register_device_generator

__all__ = ["get_rng_state", "get_rng_state_all", "initial_seed", "manual_seed",
           "manual_seed_all", "seed", "seed_all", "set_rng_state", "set_rng_state_all"]

_MASK = (1 << 64) - 1
_STEP = 4  # a draw's offset increment (torch keeps the offset a multiple of 4)
_NO_CUDA = ("Cannot get CUDA generator without ATen_cuda library. PyTorch splits its backend "
            "into two shared libraries: a CPU library and a CUDA library; this error has "
            "occurred because you are trying to use some CUDA functionality, but the CUDA "
            "library has not been loaded by the dynamic linker for some reason.  The CUDA "
            "library MUST be loaded, EVEN IF you don't directly use any symbols from the CUDA "
            "library! One common culprit is a lack of -Wl,--no-as-needed in your link "
            "arguments; many dynamic linkers will delete dynamic library dependencies if you "
            "don't depend on any of their symbols.  You can check if this has occurred by "
            "using ldd on your binary to see if there is a dependency on *_cuda.so library.")


class CUDAGeneratorImpl:
    """The engine of a CUDA ``Generator``: torch's seed and Philox offset."""

    __slots__ = ("_draws", "_offset", "_seed")

    def __init__(self, device):
        if cuda_backend() is None:
            raise RuntimeError(_NO_CUDA)
        backend_for(device)  # (torch's error for a GPU that is not there)
        self._seed, self._offset = DEFAULT_SEED, 0
        self._draws = {}  # GPU index -> its DeviceRandom

    def set_current_seed(self, seed):
        self._seed, self._offset = seed & _MASK, 0

    def current_seed(self):
        return self._seed

    def seed(self):
        s = nondeterministic_seed()
        self.set_current_seed(s)
        return s

    def get_offset(self):
        return self._offset

    def set_offset(self, offset):
        if offset % 4:
            raise RuntimeError("offset must be a multiple of 4")
        self._offset = offset & _MASK

    def get_state(self):
        """torch's CUDA state bytes: the seed, then the offset, 8 little-endian bytes each."""
        raw = self._seed.to_bytes(8, "little") + self._offset.to_bytes(8, "little")
        return np.frombuffer(raw, np.uint8).copy()

    def set_state(self, data):
        """Load torch's state bytes (16, or 8: a seed alone); torch's checks and messages."""
        if data.size not in (8, 16):
            raise RuntimeError("RNG state is wrong size")
        raw = np.ascontiguousarray(data).tobytes()
        offset = int.from_bytes(raw[8:], "little") if data.size == 16 else 0
        self.set_current_seed(int.from_bytes(raw[:8], "little"))
        self.set_offset(offset)

    def clone_state_from(self, other):
        self._seed, self._offset = other._seed, other._offset

    def draws(self, device):
        """The draws of one sampler call on GPU ``device`` (resolved): cuRAND re-seeded from
        the current seed and offset; the offset then moves on."""
        rs = self._draws.get(device.index)
        if rs is None:
            rs = self._draws[device.index] = DeviceRandom(backend_for(device), device.index)
        rs.reseed(draw_seed(self._seed, self._offset))
        self._offset = (self._offset + _STEP) & _MASK
        return rs


# -- the default generators, one per GPU, made when CUDA is first used ----------------------------
_pending = []  # seeding calls made before CUDA was initialised (torch's _lazy_call)


def default_generators():
    """The default CUDA generators (one ``Generator`` per GPU), ``()`` without a GPU."""
    backend = cuda_backend()
    if backend is None:
        return ()
    gens = backend.generators
    if not gens:
        for i in range(backend.device_count()):
            gen = gens[i] = Generator(Device("cuda", i))
            gen.seed()  # (torch seeds its default CUDA generators from the OS)
        while _pending:
            _pending.pop(0)()
    return tuple(gens[i] for i in sorted(gens))


def default_generator(dev):
    """The default generator of CUDA device ``dev``."""
    return default_generators()[resolve(dev).index]


def _index(device):
    if isinstance(device, int):
        return device
    return resolve(as_device(device)).index


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


register_device_generator("cuda", CUDAGeneratorImpl, default=default_generator,
                          samplers=device_sampling)
