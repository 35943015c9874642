"""``ember.random``: seeding, the default generator's state and ``fork_rng``."""
from __future__ import annotations

import contextlib
import warnings

from ._random.generator import default_generator  # noqa: F401 - torch.random's too
from ._random.generator import get_rng_state, initial_seed, set_rng_state
from ._random.generator import manual_seed as _manual_seed_cpu
from ._random.generator import seed as _seed_cpu

__all__ = [
    "fork_rng",
    "get_rng_state",
    "initial_seed",
    "manual_seed",
    "seed",
    "set_rng_state",
    "thread_safe_generator",
]


def _device_module(device_type):
    import importlib
    try:
        return importlib.import_module(f"ember.{device_type}")
    except ImportError:
        return None


def _seed_devices(seed):
    """Seeds the generators of other devices, where a device module offers it."""
    cuda = _device_module("cuda")
    seed_all = getattr(cuda, "manual_seed_all", None)
    if seed_all is not None:
        seed_all(seed)


def manual_seed(seed):
    """Sets the seed for generating random numbers on all devices. Returns the default
    ``ember.Generator``.

    ``seed`` must lie in [-0x8000_0000_0000_0000, 0xffff_ffff_ffff_ffff]; negative seeds are
    taken modulo 2**64.
    """
    seed = int(seed)
    _seed_devices(seed)
    return _manual_seed_cpu(seed)


def seed():
    """Seeds the generators with a non-deterministic random number; returns it."""
    s = _seed_cpu()
    _seed_devices(s)
    return s


def _snapshot(gpus=()):
    """The CPU generator's state and those of the default generators of the GPUs numbered
    ``gpus``: what ``_restore`` puts back (checkpointing's recomputation, vmap's chunks)."""
    cuda = _device_module("cuda") if gpus else None
    return get_rng_state(), [(i, cuda.get_rng_state(i)) for i in gpus]


def _snapshot_for(args):
    """``_snapshot`` of the CPU and of the GPUs the tensors among ``args`` are on (what torch's
    checkpoint keeps)."""
    from ._tensor import Tensor
    return _snapshot(sorted({a.device.index for a in args
                             if isinstance(a, Tensor) and a.is_cuda}))


def _restore(snapshot):
    cpu_state, gpu_states = snapshot
    set_rng_state(cpu_state)
    if gpu_states:
        cuda = _device_module("cuda")
        for i, state in gpu_states:
            cuda.set_rng_state(state, i)


_fork_rng_warned_already = False


@contextlib.contextmanager
def fork_rng(devices=None, enabled=True, _caller="fork_rng", _devices_kw="devices",
             device_type=None):
    """Forks the RNG: on exit the generators are back in the state they had on entry.

    The CPU generator is always forked; ``devices`` names the accelerator devices to fork too
    (all of them by default).
    """
    if device_type == "meta":
        yield
        return
    device_type = device_type or "cuda"
    device_mod = _device_module(device_type)
    if device_mod is None:
        raise RuntimeError(f"ember has no module of `{device_type}`, you should register a "
                           "module by `ember._register_device_module`.")
    global _fork_rng_warned_already
    if not enabled:
        yield
        return
    if devices is None:
        num_devices = device_mod.device_count()
        if num_devices > 1 and not _fork_rng_warned_already:
            warnings.warn(
                f"{device_type.upper()} reports that you have {num_devices} available devices, "
                f"and you have used {_caller} without explicitly specifying which devices are "
                f"being used. For safety, we initialize *every* {device_type.upper()} device "
                "by default, which can be quite slow if you have a lot of "
                f"{device_type.upper()}s. If you know that you are only making use of a few "
                f"{device_type.upper()} devices, set the environment variable "
                f"{device_type.upper()}_VISIBLE_DEVICES or the '{_devices_kw}' keyword "
                f"argument of {_caller} with the set of devices you are actually using.",
                stacklevel=3)
            _fork_rng_warned_already = True
        devices = list(range(num_devices))
    else:
        devices = list(devices)
    cpu_state = get_rng_state()
    device_states = [device_mod.get_rng_state(d) for d in devices]
    try:
        yield
    finally:
        set_rng_state(cpu_state)
        for d, state in zip(devices, device_states):
            device_mod.set_rng_state(state, d)


def thread_safe_generator():
    """The worker's own generator inside a DataLoader thread worker; None elsewhere (the
    default generator is then used)."""
    from .utils import data
    get_info = getattr(data, "get_worker_info", None)
    info = get_info() if get_info is not None else None
    if info is not None and getattr(info, "worker_method", None) == "thread":
        rng = getattr(info, "rng", None)
        if rng is not None:
            return rng.torch_generator
    return None

