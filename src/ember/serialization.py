"""``ember.save`` / ``ember.load``: tensors, nested containers and whole modules in torch.save's
zip format (see ember/_torch_writer.py), so torch.load reads what ember.save writes and
ember.load reads what torch.save writes (see ember/_torch_file.py).

Tensors are stored as torch stores them: each distinct memory block (storage) once, as bytes,
and each tensor as its dtype, offset, shape and strides into one, so tensors that shared memory
when saved (a view and its base) share it again when loaded. As torch.load, ``load``'s default
(``weights_only=True``) builds tensors, containers, dtypes, devices and sizes, and other classes
only when ``add_safe_globals`` / ``safe_globals`` allow them.

Files of earlier ember versions, a NumPy ``.npz`` archive holding one ``.npy`` entry per storage
and a JSON manifest of the object around them (other objects pickled in an entry of their own,
see ember/_pickled.py), are still read: with ``np.load(allow_pickle=False)``, a pickled entry
unpickled only as torch.load would.

Tensors remember the device they were saved from and come back there, unless ``load``'s
``map_location`` (torch's forms: a device or string, a dict from saved to wanted locations,
or a function of ``(storage, location)``, given each storage as a CPU uint8 tensor) sends
them elsewhere. A storage is moved once, so views stay views on the device too.
"""
from __future__ import annotations

import collections
import io
import json
import os
import zipfile
from collections.abc import Callable

import numpy as np

from ._pickled import UnpicklingFailed
from ._tensor import device
from .types import Storage
from ._safe_globals import (
    add_safe_globals,
    check_numpy,
    clear_safe_globals,
    get_safe_globals,
    safe_globals,
)

__all__ = [
    "add_safe_globals",
    "clear_safe_globals",
    "get_safe_globals",
    "load",
    "safe_globals",
    "save",
]

# the type of load's map_location, as annotations name it (pyro's ParamStore.load)
MAP_LOCATION = Callable[[Storage, str], Storage] | device | str | dict[str, str] | None

_MANIFEST = "__ember_manifest__"
_FORMAT = "ember.save/2"
_READABLE = ("ember.save/1", _FORMAT)  # /1 stored each tensor's values as an array


def save(obj, f, pickle_module=None, pickle_protocol=None, _use_new_zipfile_serialization=True):
    """Save ``obj`` (tensors, state dicts, optimizer state, nested containers, whole modules)
    to ``f``, a path or a binary file object, in torch.save's zip format: torch.load reads it.
    Bit-exact: storages are stored as they are."""
    if pickle_module is not None:
        raise ValueError("ember.save pickles with Python's pickle: pickle_module is not "
                         "supported")
    if not _use_new_zipfile_serialization:
        raise ValueError("ember.save writes torch's zip format only: torch's legacy format "
                         "(_use_new_zipfile_serialization=False) is not supported")
    from ._torch_writer import write
    write(obj, f, pickle_protocol)


_NO_CUDA = ("Attempting to deserialize object on a CUDA device but ember.cuda.is_available() "
            "is False. If you are running on a CPU-only machine, please use ember.load with "
            "map_location=ember.device('cpu') to map your storages to the CPU.")


def _placed(tensor, location, map_location):
    """``tensor`` (read to the CPU) where ``map_location`` sends what was saved on
    ``location``, as torch.load places storages."""
    from ._backend.device import as_device, cuda_backend
    if callable(map_location):
        placed = map_location(tensor, location)
        if placed is not None:
            return placed
        target = location
    elif isinstance(map_location, dict):
        target = map_location.get(location, location)
    else:
        target = location if map_location is None else map_location
    dev = as_device(target)
    if dev.type == "cuda" and cuda_backend() is None:
        raise RuntimeError(_NO_CUDA)
    return tensor if dev.type == "cpu" else tensor.to(dev)


class _Reader:
    def __init__(self, archive, map_location=None, weights_only=True):
        self.archive = archive
        self.map_location = map_location
        self.weights_only = weights_only
        self._built = {}

    def _array(self, key):
        return self.archive[key]

    def build(self, d):
        kind = d["t"]
        if kind == "py":
            return d["v"]
        if kind == "complex":
            return complex(*d["v"])
        if kind == "npscalar":
            value = self._array(d["key"])
            if self.weights_only:
                check_numpy(kind, value.dtype)
            return value[()]
        if kind == "tensor" and "storage" in d:
            return self._tensor(d)
        if kind == "tensor" and d.get("meta"):
            from . import _dtype as D
            from ._backend.device import device, empty_on
            array = empty_on(device("meta"), tuple(d["shape"]), getattr(D, d["dtype"]).np)
            return self._finish(array, d)
        if kind in ("tensor", "ndarray"):
            if d["key"] not in self._built:
                self._built[d["key"]] = self._make(d)
            return self._built[d["key"]]
        if kind in ("dict", "odict"):
            items = [(self._key(k), self.build(v)) for k, v in d["items"]]
            return collections.OrderedDict(items) if kind == "odict" else dict(items)
        if kind in ("list", "tuple"):
            items = [self.build(v) for v in d["items"]]
            return items if kind == "list" else tuple(items)
        if kind == "pickle":
            from ._pickled import loads
            return loads(self._array(d["key"]).tobytes(), self.build, self.weights_only)
        raise RuntimeError(f"ember.load: unknown entry kind {kind!r} in the manifest")

    def _key(self, d):
        key = self.build(d)
        return tuple(key) if isinstance(key, list) else key

    def _tensor(self, d):
        """A tensor viewing its storage's bytes; the same saved tensor twice is one tensor
        (ember's earlier archives describe it twice)."""
        key = (d["storage"], d["offset"], tuple(d["shape"]), tuple(d["strides"]), d["dtype"])
        tensor = self._built.get(key)
        if tensor is None:
            tensor = self._built[key] = self._view(d)
        return tensor

    def _view(self, d):
        """A new tensor viewing its storage's bytes, shared with the other tensors saved from
        the same memory (torch's files: the pickle itself says which tensors are one)."""
        storage = self._storage(d["storage"], d.get("device", "cpu"))
        from . import _dtype as D
        dtype = getattr(D, d["dtype"]).np
        if 0 in d["shape"]:  # (placed as saved: NumPy would lose its strides)
            from ._backend import place_empty
            item = np.dtype(dtype).itemsize
            array = place_empty(storage, d["shape"], [s // item for s in d["strides"]],
                                d["offset"] // item, dtype)
        elif type(storage) is np.ndarray:
            array = np.ndarray(d["shape"], dtype, buffer=storage, offset=d["offset"],
                               strides=d["strides"])
        else:  # a storage moved to a GPU: the tensor views it there
            from ._backend import data_address, strided_view
            array = strided_view(storage, d["shape"], d["strides"],
                                 data_address(storage) + d["offset"], dtype)
        return self._finish(array, d)

    def _storage(self, key, location):
        """The bytes of storage ``key`` where map_location sends them (moved once)."""
        storage = self._built.get((key, location))
        if storage is None:
            from ._tensor import _wrap
            placed = _placed(_wrap(self._array(key)), location, self.map_location)
            storage = self._built[(key, location)] = placed._data
        return storage

    def _finish(self, array, d):
        from ._tensor import _wrap
        tensor = _wrap(array)
        tensor._vc = [1]  # torch's loader sets the storage in place: version 1
        if d["parameter"]:
            from .nn.parameter import Parameter
            return Parameter(tensor, requires_grad=d["requires_grad"])
        return tensor.requires_grad_() if d["requires_grad"] else tensor

    def _make(self, d):
        array = self._array(d["key"])
        if d["t"] == "ndarray":
            if self.weights_only:
                check_numpy("ndarray", array.dtype)
            return array
        from . import _dtype as D
        from ._tensor import _wrap
        dtype = getattr(D, d["dtype"])
        tensor = _placed(_wrap(array.astype(dtype.np, copy=False)), d.get("device", "cpu"),
                         self.map_location)
        return self._finish(tensor._data, d)


_DAMAGED_ARCHIVE = (
    "PytorchStreamReader failed reading zip archive: failed finding central directory. This is "
    "an internal miniz error. If you are seeing this error, there is a high likelihood that your "
    "checkpoint file is corrupted. This can happen if the checkpoint was not saved properly, was "
    "transferred incorrectly, or the file was modified after saving.")


def _not_ember(f, why):
    name = f if isinstance(f, (str, os.PathLike)) else "the file"
    return RuntimeError(f"ember.load: {name} is not an archive written by ember.save ({why}). "
                        "ember.load reads NumPy .npz archives with ember's manifest and the zip "
                        "files of torch.save; other files (pickles, torch's legacy format) "
                        "are refused.")


def load(f, map_location=None, pickle_module=None, *, weights_only=True, mmap=None,
         **pickle_load_args):
    """Load an object saved with ``ember.save`` (or with ``torch.save``) from a path or a binary
    file object."""
    if pickle_module is not None:
        raise ValueError("ember.load reads NumPy archives: pickle_module is not supported")
    for k in pickle_load_args:  # (the unpickler's keywords: nothing here is unpickled)
        if k not in ("encoding", "errors", "fix_imports", "buffers"):
            raise TypeError(f"Unpickler.__init__() got an unexpected keyword argument '{k}'")
    if isinstance(f, (bytes, bytearray)):
        f = io.BytesIO(f)
    if isinstance(f, (str, os.PathLike)):
        with open(f, "rb") as handle:  # a missing path: FileNotFoundError, as torch's
            return _load(handle, f, map_location, weights_only is not False)
    return _load(f, f, map_location, weights_only is not False)


def _load(handle, f, map_location, weights_only):
    from . import _torch_file
    entry = _torch_file.pickle_entry(handle)
    if entry is not None:  # written by torch.save
        return _torch_file.load(handle, entry, map_location, weights_only)
    try:
        archive = np.load(handle, allow_pickle=False)
    except EOFError:  # an empty file: torch's EOFError says nothing more
        raise EOFError() from None
    except zipfile.BadZipFile:  # a zip archive cut short or damaged: torch's words
        raise RuntimeError(_DAMAGED_ARCHIVE) from None
    except (ValueError, OSError) as error:
        raise _not_ember(f, f"NumPy could not read it as an archive: {error}") from None
    if not isinstance(archive, np.lib.npyio.NpzFile):
        raise _not_ember(f, "it holds a single array, not an archive")
    with archive:
        if _MANIFEST not in archive.files:
            raise _not_ember(f, "it has no ember manifest")
        try:
            manifest = json.loads(archive[_MANIFEST].tobytes().decode())
        except ValueError as error:
            raise _not_ember(f, f"its manifest is unreadable: {error}") from None
        if not isinstance(manifest, dict) or manifest.get("format") not in _READABLE:
            found = manifest.get("format") if isinstance(manifest, dict) else manifest
            raise _not_ember(f, f"unknown format {found!r}")
        try:
            return _Reader(archive, map_location, weights_only).build(manifest["object"])
        except UnpicklingFailed as failed:
            raise failed.error from None
        except (KeyError, TypeError, IndexError, AttributeError, ValueError,
                zipfile.BadZipFile) as error:
            raise _not_ember(f, f"its manifest does not match its arrays: "
                                f"{type(error).__name__}: {error}") from None
