"""How torch prints a sparse COO tensor: its indices and values as tensors, then its size,
nnz, dtype and layout."""
from __future__ import annotations

from .. import _dtype as D
from .._backend import to_numpy
from .._printing import _add_suffixes, _data_str


def _part(prefix, array, dtype_name, indent):
    text = prefix + _data_str(array, dtype_name, indent + len(prefix))
    if array.size == 0:
        text += ", size=" + str(tuple(array.shape))
    return text + ")"


def sparse_repr(t) -> str:
    coo = t._data
    indent = len("tensor(")
    dtype = t.dtype
    default = D.get_default_dtype()
    implicit = (default.name, "complex128" if default.name == "float64" else "complex64",
                "int64", "bool")
    values = to_numpy(coo.values)
    if dtype.name in ("float16", "bfloat16"):
        values = values.astype("float32")
    body = (_part("indices=tensor(", to_numpy(coo.indices), "int64", indent) + ",\n"
            + " " * indent + _part("values=tensor(", values, dtype.name, indent))
    suffixes = ["size=" + str(tuple(coo.shape)), "nnz=" + str(coo.nnz)]
    if dtype.name not in implicit:
        suffixes.append("dtype=ember." + dtype.name)
    suffixes.append("layout=ember.sparse_coo")
    suffixes += t._repr_suffixes()
    return _add_suffixes("tensor(" + body, suffixes, indent, force_newline=True)
