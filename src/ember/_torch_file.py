"""Files written by torch.save (its zip format), read by ember.load: pretrained weights that
programs download are such files.

The archive holds one pickle (``<name>/data.pkl``) that refers to each storage by a persistent
id, and each storage's bytes as an entry of its own (``<name>/data/<key>``). Tensors are rebuilt
as views of their storage's bytes, so tensors saved from the same memory share it again, and
are placed as ``map_location`` says, as ember's own archives are. As torch.load, a weights-only
load (the default) builds tensors, containers, dtypes, devices and sizes, and any other global
only when ``add_safe_globals`` / ``safe_globals`` allow it (under its ``ember.`` name for
torch's own classes); ``weights_only=False`` imports what the pickle names.
"""
from __future__ import annotations

import pickle
import zipfile

import numpy as np

from ._pickled import _DEFAULT_ALLOWED, _allowed_by_name, _python3_name
from ._safe_globals import unsupported_global

# torch's storage classes, as its pickles name them, and the dtype of their elements
_STORAGE_DTYPES = {
    "FloatStorage": "float32", "DoubleStorage": "float64", "HalfStorage": "float16",
    "BFloat16Storage": "bfloat16", "LongStorage": "int64", "IntStorage": "int32",
    "ShortStorage": "int16", "CharStorage": "int8", "ByteStorage": "uint8",
    "BoolStorage": "bool", "ComplexFloatStorage": "complex64",
    "ComplexDoubleStorage": "complex128",
}


def pickle_entry(handle):
    """The name of the pickle of torch's zip archive ``handle``, or None when it is not one
    (the handle is left where it was)."""
    start = handle.tell()
    try:
        with zipfile.ZipFile(handle) as archive:
            names = [n for n in archive.namelist() if n.endswith("/data.pkl") and n.count("/") == 1]
    except (zipfile.BadZipFile, OSError, ValueError):
        names = []
    finally:
        handle.seek(start)
    return names[0] if names else None


def load(handle, entry, map_location, weights_only):
    """The object torch.save wrote in the zip archive ``handle`` (its pickle named ``entry``)."""
    from .serialization import _Reader

    class StorageReader(_Reader):
        def _array(self, key):  # a storage's bytes, writable, as torch's loaded storages are
            return np.frombuffer(bytearray(archive.read(f"{prefix}/data/{key}")), np.uint8)

    prefix = entry.rsplit("/", 1)[0]
    with zipfile.ZipFile(handle) as archive:
        reader = StorageReader(archive, map_location, weights_only)
        with archive.open(entry) as data:
            return _Unpickler(data, reader, weights_only).load()


def _dtype_name(dtype) -> str:
    return str(dtype).split(".")[-1]


class _StorageType:
    def __init__(self, dtype):
        self.dtype = dtype


class _SavedStorage:
    def __init__(self, key, location, dtype):
        self.key, self.location, self.dtype = key, location, dtype


class _Unpickler(pickle.Unpickler):
    def __init__(self, file, reader, weights_only):
        super().__init__(file)
        self.reader, self.weights_only = reader, weights_only

    def persistent_load(self, pid):
        _, storage_type, key, location, _ = pid  # ('storage', type, key, location, numel)
        return _SavedStorage(key, location, storage_type.dtype)

    def find_class(self, module, name):
        module, name = _python3_name(module, name)
        if module == "torch" and name in _STORAGE_DTYPES:
            return _StorageType(_STORAGE_DTYPES[name])
        if (module, name) == ("torch.storage", "UntypedStorage"):  # (its tensor names the dtype)
            return _StorageType(None)
        if module == "torch._utils" and name in ("_rebuild_tensor_v2", "_rebuild_tensor_v3",
                                                 "_rebuild_meta_tensor_no_storage",
                                                 "_rebuild_parameter",
                                                 "_rebuild_parameter_with_state"):
            return getattr(self, name)
        if (module, name) == ("torch._tensor", "_rebuild_from_type_v2"):
            return self._rebuild_from_type_v2
        if (module, name) == ("torch", "Tensor"):  # (allowed by torch's weights-only load)
            from ._tensor import Tensor
            return Tensor
        if module == "torch" or module.startswith("torch."):
            return self._ember_global("ember" + module[len("torch"):], name)
        if not self.weights_only or (module, name) in _DEFAULT_ALLOWED:
            return super().find_class(module, name)
        found = _allowed_by_name(f"{module}.{name}")
        if found is None:
            raise unsupported_global(f"{module}.{name}")
        return found

    def _ember_global(self, module, name):
        """ember's counterpart of one of torch's globals; sizes, devices and dtypes are
        always allowed, as torch's weights-only unpickler allows them (the others are named
        as ember's, the name to allow)."""
        import ember
        if module == "ember" and (name in ("Size", "device")
                                  or isinstance(getattr(ember, name, None), ember.dtype)):
            return getattr(ember, name)
        if not self.weights_only:
            return super().find_class(module, name)
        found = _allowed_by_name(f"{module}.{name}")
        if found is None:
            raise unsupported_global(f"{module}.{name}")
        return found

    def _rebuild_tensor_v2(self, storage, offset, size, stride, requires_grad,
                           backward_hooks=None, metadata=None, dtype=None):
        from . import _dtype as D
        dtype = storage.dtype if dtype is None else _dtype_name(dtype)
        from ._tensor import set_bit_metadata
        item = np.dtype(getattr(D, dtype).np).itemsize
        return set_bit_metadata(self.reader._view({
            "storage": storage.key, "device": storage.location, "dtype": dtype,
            "offset": offset * item, "shape": list(size), "strides": [s * item for s in stride],
            "parameter": False, "requires_grad": requires_grad}), metadata)

    def _rebuild_tensor_v3(self, storage, offset, size, stride, requires_grad, backward_hooks,
                           dtype, metadata=None):
        """A tensor of a dtype without a typed storage class (uint16, float8_*): its storage
        is untyped bytes, its dtype an argument of its own."""
        return self._rebuild_tensor_v2(storage, offset, size, stride, requires_grad,
                                       backward_hooks, metadata, dtype)

    def _rebuild_meta_tensor_no_storage(self, dtype, size, stride, requires_grad):
        return self.reader.build({"t": "tensor", "meta": True, "shape": list(size),
                                  "dtype": _dtype_name(dtype), "requires_grad": requires_grad,
                                  "parameter": False})

    @staticmethod
    def _rebuild_parameter(data, requires_grad, backward_hooks=None):
        from .nn.parameter import Parameter
        return Parameter(data, requires_grad)

    @staticmethod
    def _rebuild_parameter_with_state(data, requires_grad, backward_hooks, state):
        parameter = _Unpickler._rebuild_parameter(data, requires_grad)
        _set_state(parameter, state)
        return parameter

    @staticmethod
    def _rebuild_from_type_v2(func, new_type, args, state):
        """A tensor with attributes of the program's own (``t.note = ...``), or of a subclass:
        torch pickles its rebuild, its type and its ``__dict__``."""
        tensor = func(*args)
        if type(tensor) is not new_type:
            tensor.__class__ = new_type
        _set_state(tensor, state)
        return tensor


def _set_state(tensor, state):
    """Set the attributes ``state`` (``__dict__``, or torch's ``(__dict__, slots)``) holds."""
    for attributes in state if isinstance(state, tuple) else (state,):
        for key, value in (attributes or {}).items():
            setattr(tensor, key, value)
