"""The names a backward node shows its saved values under: ``grad_fn._saved_<name>``.

An op's formulas name what they read after the op's parameters (``self``, ``dim``), its
results (``result``, ``result0``, ...), an input's shape or strides (``self_shape``,
``mat2_strides``). torch's generated nodes name the same values after its derivatives.yaml:
shapes are ``<input>_sym_sizes``, strides ``<input>_sym_strides``, and a result is named as
the op's schema names that return (``indices`` of max(dim), ``L`` of linalg_cholesky_ex).
The names are fixed when a formula is declared; values are converted when read
(registry._saved_property), never while a node is recorded.
"""
from __future__ import annotations

# torch's names of the returns of ops with named returns, by node name; ember's results are
# ``result`` (one output) or ``result0``, ``result1``, ... (several) in the formulas.
_VALUES_INDICES = ("values", "indices")
RETURN_NAMES = {
    "CummaxBackward0": _VALUES_INDICES, "CumminBackward0": _VALUES_INDICES,
    "KthvalueBackward0": _VALUES_INDICES, "MaxBackward0": _VALUES_INDICES,
    "MinBackward0": _VALUES_INDICES, "MedianBackward1": _VALUES_INDICES,
    "NanmedianBackward1": _VALUES_INDICES, "ModeBackward0": _VALUES_INDICES,
    "SortBackward0": _VALUES_INDICES, "SortBackward1": _VALUES_INDICES,
    "TopkBackward0": _VALUES_INDICES,
    "FrexpBackward0": ("mantissa", "exponent"),
    "LinalgCholeskyExBackward0": ("L", "info"),
    "LinalgInvExBackward0": ("inverse", "info"),
    "LinalgEigBackward0": ("eigenvalues", "eigenvectors"),
    "LinalgEighBackward0": ("eigenvalues", "eigenvectors"),
    "LinalgLstsqBackward0": ("solution", "residuals", "rank", "singular_values"),
    "LinalgLuBackward0": ("P", "L", "U"),
    "LinalgLuFactorExBackward0": ("LU", "pivots", "info"),
    "LinalgQrBackward0": ("Q", "R"),
    "LinalgSolveExBackward0": ("result", "LU", "pivots", "info"),
    "LinalgSvdBackward0": ("U", "S", "Vh"),
}


def shown_name(node_name, name, kind, index):
    """``grad_fn._saved_<this>`` for the formulas' ``name`` (saved as ``kind``: "input",
    "result", "shape", "strides", "shapes" or "param", ``index`` its input or output
    position), or None where torch's node keeps the value without showing it (cat's shapes).
    """
    if kind == "shape":
        return name[:-len("_shape")] + "_sym_sizes"
    if kind == "strides":
        return name[:-len("_strides")] + "_sym_strides"
    if kind == "shapes":
        return None
    if kind == "result":
        names = RETURN_NAMES.get(node_name)
        return name if names is None else names[index]
    return name
