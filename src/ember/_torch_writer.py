"""ember.save's writer: torch.save's zip format, so that torch.load (and ember.load) reads it.

The archive holds one pickle, ``<name>/data.pkl``, and each storage's bytes as an entry of its
own, ``<name>/data/<key>``, 64-byte aligned, with torch's ``byteorder``, ``version`` and
``.data/serialization_id`` records. The pickle names torch's globals
(``torch._utils._rebuild_tensor_v2``, ``torch.FloatStorage``, ``torch.float16``, ...) by module
and name without importing torch: a pickler that writes those GLOBAL opcodes itself. Each
storage is written once, however many tensors view it, and the tensors refer to it by
persistent id with their offset and strides, as torch writes them.
"""
from __future__ import annotations

import collections
import io
import os
import pickle
import secrets
import struct
import types
import zipfile

import numpy as np

from ._torch_file import _STORAGE_DTYPES, _dtype_name

_TORCH_PROTOCOL = 2  # torch.serialization.DEFAULT_PROTOCOL
_ALIGNMENT = 64      # torch aligns each storage's bytes for memory mapping
_LEGACY_STORAGE = {dtype: name for name, dtype in _STORAGE_DTYPES.items()}
_MIXED_TYPES = ("Cannot save multiple tensors or storages that view the same data as "
                "different types")


class _Global:
    """A global (``torch.FloatStorage``) the pickle names; one object per name, so the
    pickle's memo refers back to it as torch's does."""
    _made: dict = {}

    def __new__(cls, module, name):
        made = cls._made.get((module, name))
        if made is None:
            made = cls._made[(module, name)] = super().__new__(cls)
            made.module, made.name = module, name
        return made

    def __call__(self, *args):  # (pickle's reduce wants a callable; torch.load calls it)
        raise TypeError(f"{self.module}.{self.name} is torch's, named in a pickle only")


class _Storage:
    """One storage written to the archive: its key, location, element dtype and bytes."""

    def __init__(self, key, location, dtype, data):
        self.key, self.location, self.dtype, self.data = key, location, dtype, data

    def persistent_id(self):
        legacy = _LEGACY_STORAGE.get(self.dtype)
        if legacy is None:  # (dtypes without a typed storage class: bytes, as torch)
            return ("storage", _Global("torch.storage", "UntypedStorage"), self.key,
                    self.location, self.data.nbytes)
        itemsize = _numpy_dtype(self.dtype).itemsize
        return ("storage", _Global("torch", legacy), self.key, self.location,
                self.data.nbytes // itemsize)


def _numpy_dtype(name):
    from . import _dtype as D
    return np.dtype(getattr(D, name).np)


class _TorchPickler(pickle._Pickler):
    """Python's pickler (its ``save`` can be extended, the C one's cannot), writing ember's
    tensors, dtypes, devices and sizes as torch's."""

    def __init__(self, file, protocol):
        super().__init__(file, protocol)
        self.storages = {}   # id(owning array) -> (array, _Storage): each storage once

    def save(self, obj, save_persistent_id=True):
        import ember
        if isinstance(obj, ember.dtype):
            obj = _Global("torch", _dtype_name(obj))
        if type(obj) is _Global:
            self._save_global(obj)
            return
        super().save(obj, save_persistent_id)

    def save_global(self, obj, name=None):
        try:
            super().save_global(obj, name)
        except pickle.PicklingError:
            # the error of the C pickler torch.save uses (its words, at times AttributeError)
            pickle.dumps(obj, self.proto)
            raise

    dispatch = {**pickle._Pickler.dispatch, types.FunctionType: save_global, type: save_global}

    def _save_global(self, obj):
        memo = self.memo.get(id(obj))
        if memo is not None:
            self.write(self.get(memo[0]))
            return
        self.write(pickle.GLOBAL + f"{obj.module}\n{obj.name}\n".encode("utf-8"))
        self.memoize(obj)

    def persistent_id(self, obj):
        return obj.persistent_id() if type(obj) is _Storage else None

    def reducer_override(self, obj):
        import ember
        if isinstance(obj, ember.Tensor):
            return self._reduce_tensor(obj)
        if type(obj) is ember.device:
            kind = "".join(obj.type)  # (a string of its own, not memoized as its location
            args = (kind,) if obj.index is None else (kind, obj.index)  # is: torch's bytes)
            return _Global("torch", "device"), args
        if type(obj) is ember.Size:
            return _Global("torch", "Size"), (tuple(obj),)
        return NotImplemented

    def _reduce_tensor(self, tensor):
        import ember
        from .nn.parameter import Parameter
        # the program's own attributes (ember's own start with an underscore), kept as torch
        # keeps a tensor's __dict__
        state = {k: v for k, v in vars(tensor).items() if not k.startswith("_")}
        if isinstance(tensor, Parameter):
            args = (tensor.detach(), tensor.requires_grad, collections.OrderedDict())
            if state:
                return _Global("torch._utils", "_rebuild_parameter_with_state"), args + (state,)
            return _Global("torch._utils", "_rebuild_parameter"), args
        rebuild, args = self._reduce_plain_tensor(tensor)
        if not state:
            return rebuild, args
        kind = _Global("torch", "Tensor") if type(tensor) is ember.Tensor else type(tensor)
        return _Global("torch._tensor", "_rebuild_from_type_v2"), (rebuild, kind, args, state)

    def _reduce_plain_tensor(self, tensor):
        from ._tensor import bit_metadata, physical
        data, dtype = physical(tensor), _dtype_name(tensor.dtype)
        if tensor.is_meta:  # (no storage: its dtype, size and strides, as torch)
            return (_Global("torch._utils", "_rebuild_meta_tensor_no_storage"),
                    (tensor.dtype, tuple(data.shape), tuple(tensor.stride()),
                     tensor.requires_grad))
        storage, offset, strides = self._storage(data, dtype, str(tensor.device))
        args = (storage, offset, tuple(data.shape), strides, tensor.requires_grad,
                collections.OrderedDict())
        bits = bit_metadata(tensor)  # (a conjugate view: its memory, and the bit beside it)
        if dtype in _LEGACY_STORAGE:
            return _Global("torch._utils", "_rebuild_tensor_v2"), args + ((bits,) if bits else ())
        return (_Global("torch._utils", "_rebuild_tensor_v3"),
                args + (tensor.dtype,) + ((bits,) if bits else ()))

    def _storage(self, array, dtype, location):
        """(the storage of ``array``, its element offset into it, its element strides)."""
        from ._backend import data_address, empty_strides, storage_of, to_numpy
        owner, start, _ = storage_of(array)
        if not (owner.flags.c_contiguous or owner.flags.f_contiguous):
            # memory no array owns (an ndarray made on a foreign buffer): this tensor alone
            owner = array = to_numpy(array).copy()
            start = data_address(array)
        known = self.storages.get(id(owner))
        if known is None:
            # (C or F contiguous: its bytes are one reshape and view away)
            data = to_numpy(owner.reshape(-1, order="A").view(np.uint8))
            known = self.storages[id(owner)] = (
                owner, _Storage(str(len(self.storages)), location, dtype, data))
        storage = known[1]
        if storage.dtype != dtype:
            raise RuntimeError(_MIXED_TYPES)
        itemsize = array.itemsize
        offset = (data_address(array) - start) // itemsize
        if array.size == 0:  # (NumPy's strides of an empty array are not torch's)
            return storage, offset, tuple(empty_strides(array))
        return storage, offset, tuple(s // itemsize for s in array.strides)


def _archive_name(f) -> str:
    """The folder torch names the records after: the file's name without its extension, or
    ``archive`` for a file object."""
    if isinstance(f, (str, os.PathLike)):
        return os.path.splitext(os.path.basename(os.fspath(f)))[0]
    return "archive"


def _aligned_info(archive, name):
    """A stored (uncompressed) record whose bytes start on a 64-byte boundary: its header's
    extra field pads it, as torch's writer does."""
    info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
    info.compress_type = zipfile.ZIP_STORED
    header_end = archive.fp.tell() + zipfile.sizeFileHeader + len(name.encode("utf-8"))
    pad = -(header_end + 4) % _ALIGNMENT
    info.extra = b"FB" + struct.pack("<H", pad) + b"Z" * pad
    return info


def write(obj, f, protocol=None):
    """Write ``obj`` to ``f`` (a path or a binary file object) in torch.save's zip format."""
    pickled = io.BytesIO()
    pickler = _TorchPickler(pickled, protocol or _TORCH_PROTOCOL)
    pickler.dump(obj)
    name = _archive_name(f)
    records = [("data.pkl", pickled.getvalue()), (".format_version", b"1"),
               (".storage_alignment", str(_ALIGNMENT).encode()), ("byteorder", b"little")]
    records += [(f"data/{s.key}", s.data) for _, s in pickler.storages.values()]
    records += [("version", b"3\n"),
                (".data/serialization_id", str(secrets.randbelow(10 ** 40)).zfill(40).encode())]
    if isinstance(f, (str, os.PathLike)):
        with open(f, "wb") as handle:
            _write_records(handle, name, records)
    else:
        _write_records(f, name, records)


def _write_records(handle, name, records):
    with zipfile.ZipFile(handle, "w", zipfile.ZIP_STORED) as archive:
        for record, data in records:
            info = _aligned_info(archive, f"{name}/{record}")
            with archive.open(info, "w", force_zip64=len(data) >= 2 ** 31) as out:
                out.write(memoryview(data).cast("B") if isinstance(data, np.ndarray) else data)
