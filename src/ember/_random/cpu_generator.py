"""The CPU generator: torch's ``CPUGeneratorImpl`` (an mt19937 engine plus the cached second
value of the last Box-Muller pair) and its state tensor's byte layout."""
from __future__ import annotations

import os

import numpy as np

from .mt19937 import MT19937, N

# torch's default seed for a new ``Generator()`` (the global one is seeded from the OS).
DEFAULT_SEED = 67280421310721

# The bytes of torch's state tensor: its legacy struct (the seed, the engine's bookkeeping and
# words as 64-bit integers, an old normal cache of which only ``normal_y`` is still used), then
# the float cache, padded to 8 bytes.
STATE_LAYOUT = np.dtype({
    "names": ["seed", "left", "seeded", "next", "state", "normal_x", "normal_y", "normal_rho",
              "normal_is_valid", "float_normal", "float_normal_is_valid"],
    "formats": ["<u8", "<i4", "<i4", "<u8", ("<u8", N), "<f8", "<f8", "<f8", "<i4", "<f4",
                "u1"],
    "offsets": [0, 8, 12, 16, 24, 24 + 8 * N, 32 + 8 * N, 40 + 8 * N, 48 + 8 * N, 52 + 8 * N,
                56 + 8 * N],
    "itemsize": 64 + 8 * N,
})
STATE_SIZE = STATE_LAYOUT.itemsize  # 5056


def nondeterministic_seed():
    """A fresh seed from the OS, 53 bits wide as torch's ``getNonDeterministicRandom``."""
    return int.from_bytes(os.urandom(8), "little") & ((1 << 53) - 1)


class CPUGeneratorImpl:
    """One CPU random stream: the engine and the two cached normal samples."""

    __slots__ = ("engine", "next_double_normal", "next_float_normal")

    def __init__(self, seed=DEFAULT_SEED):
        self.engine = MT19937(seed)
        self.next_double_normal = None
        self.next_float_normal = None

    def set_current_seed(self, seed):
        self.engine.reseed(seed)
        self.next_double_normal = self.next_float_normal = None

    def current_seed(self):
        return self.engine.seed

    def seed(self):
        s = nondeterministic_seed()
        self.set_current_seed(s)
        return s

    # raw draws, named as torch's generator names them
    def random(self, n):
        return self.engine.words(n)

    def random64(self, n):
        return self.engine.words64(n)

    def get_state(self):
        """torch's state tensor bytes (uint8, 5056 of them)."""
        key, left, nxt = self.engine.torch_fields()
        rec = np.zeros((), STATE_LAYOUT)
        rec["seed"], rec["left"], rec["seeded"], rec["next"] = self.engine.seed, left, 1, nxt
        rec["state"] = key
        if self.next_double_normal is not None:
            rec["normal_is_valid"], rec["normal_y"] = 1, self.next_double_normal
        if self.next_float_normal is not None:
            rec["float_normal_is_valid"], rec["float_normal"] = 1, self.next_float_normal
        return np.frombuffer(rec.tobytes(), np.uint8).copy()

    def set_state(self, data):
        """Load torch's state bytes (a uint8 array); torch's checks and messages."""
        if data.size != STATE_SIZE:
            raise RuntimeError(f"Expected a CPUGeneratorImplState of size {STATE_SIZE} but "
                               f"found the input RNG state size to be {data.size}")
        rec = np.frombuffer(np.ascontiguousarray(data).tobytes(), STATE_LAYOUT)[0]
        left, nxt = int(rec["left"]), int(rec["next"]) & 0xFFFFFFFF
        if rec["seeded"] == 0 or not 0 < left <= N or nxt > N:
            raise RuntimeError("Invalid mt19937 state")
        # torch keeps the words as uint32 and the seeded flag as a bool
        self.engine.load_torch_fields(int(rec["seed"]), rec["state"].astype(np.uint32), left,
                                      nxt)
        self.next_double_normal = float(rec["normal_y"]) if rec["normal_is_valid"] else None
        self.next_float_normal = (np.float32(rec["float_normal"])
                                  if rec["float_normal_is_valid"] else None)

    def clone_state_from(self, other):
        self.engine.copy_from(other.engine)
        self.next_double_normal = other.next_double_normal
        self.next_float_normal = other.next_float_normal
