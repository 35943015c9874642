"""``ember.save`` / ``ember.load``: tensors and nested containers in a NumPy ``.npz`` archive.

The archive holds one ``.npy`` entry per distinct array and a JSON manifest describing the
object around them. Tensors are stored as torch stores them: each distinct memory block
(storage) once, as bytes, and each tensor as its dtype, offset, shape and strides into one, so
tensors that shared memory when saved (a view and its base) share it again when loaded. Other
objects (a whole module, the program's own classes) are pickled as torch pickles them, their
tensors kept as archive entries (see ember/_pickled.py). The archive itself is read with
``np.load(allow_pickle=False)``; a pickled entry is unpickled only as torch.load does it: with
``weights_only=False``, or when every class it names is allowed (``add_safe_globals``).

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

import numpy as np

from ._pickled import UnpicklingFailed
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

_MANIFEST = "__ember_manifest__"
_FORMAT = "ember.save/2"
_READABLE = ("ember.save/1", _FORMAT)  # /1 stored each tensor's values as an array


class _Writer:
    """Turns an object into a JSON-able description, collecting arrays on the way."""

    def __init__(self, protocol=None):
        self.protocol = protocol
        self.arrays = {}
        self._seen = {}   # id(tensor or array) -> key, so shared tensors are stored once

    def _store(self, obj, array):
        key = self._seen.get(id(obj))
        if key is None:
            key = self._seen[id(obj)] = f"a{len(self.arrays)}"
            self.arrays[key] = np.asarray(array, order="C")
        return key

    def _storage(self, array):
        """(key of the bytes of ``array``'s storage, ``array``'s byte offset into them, its
        byte strides)."""
        from ._backend import data_address, empty_strides, storage_of, to_numpy
        owner, start, _ = storage_of(array)
        if not (owner.flags.c_contiguous or owner.flags.f_contiguous):
            # memory no array owns (an ndarray made on a foreign buffer): this tensor alone
            owner = start = None
            array = to_numpy(array).copy()
        key = self._seen.get(id(owner if owner is not None else array))
        if key is None:
            key = f"a{len(self.arrays)}"
            self._seen[id(owner if owner is not None else array)] = key
            whole = owner if owner is not None else array
            # (C or F contiguous: its bytes are one reshape and view away)
            self.arrays[key] = to_numpy(whole.reshape(-1, order="A").view(np.uint8))
        offset = 0 if start is None else data_address(array) - start
        if array.size == 0:  # (NumPy's strides of an empty array are not torch's)
            return key, offset, tuple(s * array.itemsize for s in empty_strides(array))
        return key, offset, array.strides

    def describe(self, obj):
        from ._tensor import Tensor
        if isinstance(obj, Tensor):
            from .nn.parameter import Parameter
            data = obj._data
            if obj.is_meta:  # (no storage: torch saves a meta tensor's shape and dtype)
                return {"t": "tensor", "meta": True, "shape": list(data.shape),
                        "dtype": str(obj.dtype).split(".")[-1],
                        "requires_grad": obj.requires_grad,
                        "parameter": isinstance(obj, Parameter)}
            key, offset, strides = self._storage(data)
            return {"t": "tensor", "storage": key, "offset": offset,
                    "shape": list(data.shape), "strides": list(strides),
                    "dtype": str(obj.dtype).split(".")[-1], "device": str(obj.device),
                    "requires_grad": obj.requires_grad,
                    "parameter": isinstance(obj, Parameter)}
        if isinstance(obj, np.ndarray):
            if obj.dtype.kind in "OV":
                raise TypeError(f"ember.save cannot store NumPy arrays of dtype {obj.dtype}")
            return {"t": "ndarray", "key": self._store(obj, obj)}
        if isinstance(obj, np.generic):  # (before float: np.float64 is one, but loads back
            return {"t": "npscalar", "key": self._store(obj, np.asarray(obj))}  # as NumPy's)
        if obj is None or isinstance(obj, (bool, int, float, str)):
            return {"t": "py", "v": obj}
        if isinstance(obj, complex):
            return {"t": "complex", "v": [obj.real, obj.imag]}
        if isinstance(obj, dict):
            kind = "odict" if isinstance(obj, collections.OrderedDict) else "dict"
            return {"t": kind, "items": [[self.describe(k), self.describe(v)]
                                         for k, v in obj.items()]}
        if isinstance(obj, (list, tuple)):
            kind = "list" if isinstance(obj, list) else "tuple"
            return {"t": kind, "items": [self.describe(v) for v in obj]}
        return self._pickled(obj)

    def _pickled(self, obj):
        """Any other object (a whole module, an object of the program's classes) as torch
        stores it: a pickle of its structure, its tensors kept out of the pickle as archive
        entries it refers to (torch's persistent ids), so they load as tensors do."""
        from ._pickled import dumps
        data = dumps(obj, self.describe, self.protocol)
        key = f"a{len(self.arrays)}"
        self.arrays[key] = np.frombuffer(data, dtype=np.uint8)
        return {"t": "pickle", "key": key}


def save(obj, f, pickle_module=None, pickle_protocol=None, _use_new_zipfile_serialization=True):
    """Save ``obj`` (tensors, state dicts, optimizer state, nested containers) to ``f``, a path
    or a binary file object. Bit-exact: arrays are stored as they are."""
    if pickle_module is not None:
        raise ValueError("ember.save writes NumPy archives with Python's pickle: pickle_module "
                         "is not supported")
    writer = _Writer(pickle_protocol)
    manifest = {"format": _FORMAT, "object": writer.describe(obj)}
    entries = dict(writer.arrays)
    entries[_MANIFEST] = np.frombuffer(json.dumps(manifest).encode(), dtype=np.uint8)
    if isinstance(f, (str, os.PathLike)):
        with open(f, "wb") as handle:  # np.savez would append ".npz" to a bare path
            np.savez(handle, **entries)
    else:
        np.savez(f, **entries)


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
        """A tensor viewing its storage's bytes (shared with the other tensors saved from the
        same memory); the same saved tensor twice is one tensor."""
        key = (d["storage"], d["offset"], tuple(d["shape"]), tuple(d["strides"]), d["dtype"])
        tensor = self._built.get(key)
        if tensor is None:
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
            tensor = self._built[key] = self._finish(array, d)
        return tensor

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
