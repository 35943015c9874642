"""MPICH's algorithm for ember's small all-reduces.

Every all-reduce of ember's starts MPI's nonblocking ``MPI_Iallreduce``, the blocking ones
included (MPI does not match a blocking collective with a nonblocking one that another process
may make: see ``MpiBackend._run``). For messages of a few KiB, the algorithm MPICH picks for
``MPI_Iallreduce`` by default is slower than the one its blocking ``MPI_Allreduce`` runs (4 KiB
in 2 processes: about 4.0 us against 3.3 us), while recursive doubling is as fast (3.0 us).
MPICH reads the algorithm, at each call, from a control variable of the process,
``MPIR_CVAR_IALLREDUCE_INTRA_ALGORITHM``, which MPI's tool interface (MPI_T) can set while the
program runs. So before each all-reduce ember sets it from the message's size: recursive
doubling up to ``SMALL_BYTES``, MPICH's own choice (``auto``) above. The processes of a
collective all pass the same number of bytes, so they all choose the same algorithm.

The variable is written only when the choice changes (small all-reduces in a row cost one
comparison each) and is put back to ``auto`` when the process groups are destroyed. It is left
alone where the user chose an algorithm (MPICH's environment variable is set, or the variable
is not ``auto`` when ember first looks) and where the MPI library is not MPICH or lacks it.
"""
from __future__ import annotations

import ctypes
import os

from . import _mpi

# Recursive doubling measured faster than MPICH's choice up to 16 KiB (2 processes: 1, 4 and
# 16 KiB) and slower from 64 KiB (1 MiB: 203 us against 162 us), where it moves every byte
# at each step.
SMALL_BYTES = 16 * 1024

CVAR = "MPIR_CVAR_IALLREDUCE_INTRA_ALGORITHM"
SMALL_ALGORITHM = "sched_recursive_doubling"
DEFAULT_ALGORITHM = "auto"
_LIBMPI_NAMES = ("libmpi.so.12", "libmpi_abi.so.1", "libmpi.so")  # MPICH's, Linux


def algorithm_choice_of(write, small, default):
    """``choice(nbytes)``, to call before each ``MPI_Iallreduce`` of ``nbytes`` bytes: sets
    MPICH's algorithm variable (through ``write``) to ``small`` or ``default`` when that
    differs from the last choice made; ``choice.reset()`` puts ``default`` back.

    A closure, not a class: this runs in every small all-reduce, whose time is mostly its
    Python path's.
    """
    held = [None]  # what the variable holds: True (small's value), False (default's), None

    def choice(nbytes):
        is_small = nbytes <= SMALL_BYTES
        if is_small is not held[0]:
            write(small if is_small else default)
            held[0] = is_small

    def reset():
        if held[0] is not None:
            write(default)
            held[0] = None

    choice.reset = reset
    return choice


def _no_choice(nbytes):
    return None


_no_choice.reset = lambda: None

_CHOICE = []


def algorithm_choice():
    """The process's ``algorithm_choice_of`` function, or one that does nothing where MPICH's
    variable cannot or must not be set. MPI must be initialised."""
    if not _CHOICE:
        _CHOICE.append(_make_choice() or _no_choice)
    return _CHOICE[0]


def reset():
    if _CHOICE:
        _CHOICE[0].reset()


def _make_choice():
    if CVAR in os.environ or not _mpi.mpi().Get_library_version().startswith("MPICH"):
        return None
    lib = _loaded_libmpi()
    if lib is None:
        return None
    cvar = ControlVariable.find(lib, CVAR)
    if cvar is None:
        return None
    values = cvar.choices()
    if (SMALL_ALGORITHM not in values or DEFAULT_ALGORITHM not in values
            or cvar.read() != values[DEFAULT_ALGORITHM]
            or cvar.write(values[DEFAULT_ALGORITHM]) != 0):  # e.g. a read-only variable
        return None
    return algorithm_choice_of(cvar.write, values[SMALL_ALGORITHM], values[DEFAULT_ALGORITHM])


def _loaded_libmpi():
    """The MPI library mpi4py loaded (never another one: RTLD_NOLOAD finds loaded ones
    only)."""
    mode = getattr(os, "RTLD_NOLOAD", None)
    if mode is None:
        return None
    for name in _LIBMPI_NAMES:
        try:
            return ctypes.CDLL(name, mode=mode | os.RTLD_LAZY)
        except OSError:
            continue
    return None


class ControlVariable:
    """One integer control variable of MPI's tool interface (MPI_T), by name."""

    def __init__(self, lib, index):
        self._lib = lib
        self.index = index
        self._handle = ctypes.c_void_p()
        count = ctypes.c_int()
        self._ok = lib.MPI_T_cvar_handle_alloc(index, None, ctypes.byref(self._handle),
                                               ctypes.byref(count)) == 0 and count.value == 1
        self._value = ctypes.c_int()
        self._value_ref = ctypes.byref(self._value)
        self._write_fn = lib.MPI_T_cvar_write

    @classmethod
    def find(cls, lib, name):
        provided = ctypes.c_int()
        index = ctypes.c_int()
        try:
            if lib.MPI_T_init_thread(0, ctypes.byref(provided)) != 0:
                return None
            if lib.MPI_T_cvar_get_index(name.encode(), ctypes.byref(index)) != 0:
                return None
        except AttributeError:  # an MPI without MPI_T (3.1's) functions
            return None
        cvar = cls(lib, index.value)
        return cvar if cvar._ok else None

    def description(self) -> str:
        name, desc = ctypes.create_string_buffer(256), ctypes.create_string_buffer(8192)
        name_len, desc_len = ctypes.c_int(256), ctypes.c_int(8192)
        ints = [ctypes.c_int() for _ in range(3)]  # verbosity, binding, scope
        handles = [ctypes.c_void_p() for _ in range(2)]  # datatype, enum type (any ABI)
        rc = self._lib.MPI_T_cvar_get_info(
            self.index, name, ctypes.byref(name_len), ctypes.byref(ints[0]),
            ctypes.byref(handles[0]), ctypes.byref(handles[1]), desc, ctypes.byref(desc_len),
            ctypes.byref(ints[1]), ctypes.byref(ints[2]))
        return desc.value.decode(errors="replace") if rc == 0 else ""

    def choices(self) -> dict:
        """``{name: value}`` of an MPICH algorithm variable: MPICH numbers the choices in the
        order its description lists them, one ``name - what it does`` line each (it gives
        these variables no MPI_T enumeration)."""
        names = [line.split(" - ", 1)[0].strip() for line in self.description().splitlines()[1:]
                 if " - " in line]
        return {name: value for value, name in enumerate(names)}

    def read(self) -> int:
        self._lib.MPI_T_cvar_read(self._handle, self._value_ref)
        return self._value.value

    def write(self, value: int) -> int:
        """Set the variable; MPI's return code (0: done)."""
        self._value.value = value
        return self._write_fn(self._handle, self._value_ref)
