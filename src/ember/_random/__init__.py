"""Random numbers as torch's CPU generator makes them, bit for bit.

``generator`` holds ``ember.Generator`` and the global seeding functions; ``mt19937`` the
engine; ``cpu_generator`` the CPU generator and its state bytes; ``sampling`` and ``discrete``
torch's per-distribution kernels; ``cephes`` and ``exact_math`` the floating-point details those
kernels depend on; ``order`` the memory order in which a tensor receives its values.
"""
from .generator import (
                        Generator,
                        cpu_generator,
                        default_generator,
                        get_rng_state,
                        initial_seed,
                        manual_seed,
                        register_device_generator,
                        seed,
                        set_rng_state,
)

__all__ = ["Generator", "cpu_generator", "default_generator", "get_rng_state", "initial_seed",
           "manual_seed", "register_device_generator", "seed", "set_rng_state"]
