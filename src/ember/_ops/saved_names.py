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

import math

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
    "TriangularSolveBackward0": ("solution", "cloned_coefficient"),
    "AminmaxBackward0": ("min", "max"),
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
    "ScaledDotProductFlashAttentionForCpuBackward0": ("output", "logsumexp"),
}


# What torch's node shows of an input's shape where that is not ``<input>_sym_sizes``: pieces
# of it (``self_sym_numel``, ``weight_sym_argsize_0``, ``self_sym_argsize_minus_1``), or
# nothing (an empty tuple) where torch's formula reads other values than ember's.
_MEAN = ("self_sym_sizes", "self_sym_numel")
SHAPE_SHOWN = {
    "MeanBackward0": _MEAN, "MeanBackward1": _MEAN,
    "AddbmmBackward0": ("batch1_sym_argsize_0", "batch1_sym_argsize_1"),
    "EmbeddingBackward0": ("weight_sym_argsize_0",),
    "EmbeddingBagBackward0": ("weight_sym_argsize_0",),
    "Im2ColBackward0": ("self_sym_argsize_minus_2", "self_sym_argsize_minus_1"),
    **dict.fromkeys((
        "ChannelShuffleBackward0", "ConvTbcBackward0", "CumsumBackward0", "FftR2CBackward0",
        "IndexAddBackward0", "IndexCopyBackward0", "LinalgSolveExBackward0",
        "LuUnpackBackward0", "MaxUnpool2DBackward0", "MaxUnpool3DBackward0",
        "NextafterBackward0", "PutBackward0", "ReflectionPad1DBackward0",
        "ReflectionPad2DBackward0", "ReflectionPad3DBackward0", "ReplicationPad1DBackward0",
        "ReplicationPad2DBackward0", "ReplicationPad3DBackward0", "UnsqueezeBackward0",
        "UnsqueezeBackward1", "SliceScatterBackward0", "SelectScatterBackward0",
        "DiagonalScatterBackward0"), ()),
}

# Arguments torch's schema names otherwise than ember's Python signature (which is torch's
# Python one: ``linalg.matrix_exp(A)`` binds ``self`` in torch's schema, ``at::norm``'s
# order is ``p``).
RENAMED = {"LinalgMatrixExpBackward0": {"A": "self"}, "NormBackward1": {"ord": "p"},
           "IndexPutBackward0": {"key": "indices"}, "IndexPutImplBackward0": {"key": "indices"}}

# Values ember's formulas read that torch's node does not keep (torch's formula reads other
# values, or none): no attribute, as torch's node has none. The formulas still read them.
NOT_SHOWN = {
    "ToCopyBackward0": {"source"},  # (the device a moved gradient goes back to)
    "AdaptiveAvgPool2DBackward0": {"params"}, "AdaptiveAvgPool3DBackward0": {"params"},
    "AsStridedBackward0": {"self_geometry"}, "AsStridedBackward1": {"self_geometry"},
    "AsStridedScatterBackward0": {"src_sym_sizes"},  # (torch keeps src's geometry unshown)
    "AffineGridGeneratorBackward0": {"theta"},
    "LinalgLstsqBackward0": {"residuals"},
    # (grouped-query attention: torch's CPU flash kernel reads it from the shapes)
    "ScaledDotProductFlashAttentionForCpuBackward0": {"enable_gqa"},
}

# Tensor arguments that are a ``Scalar`` in torch's overload for the node (pow(2, x)): its
# node shows the number itself and no ``_raw_saved_`` (elsewhere a number given for a tensor
# argument shows as torch's wrapped number, a 0-dim tensor).
SCALAR_INPUTS = {"PowBackward2": ("self",)}

# Nodes whose ``dim`` is an ``int[]`` in torch's schema: one dim given as an int shows as a
# 1-tuple there.
DIM_LISTS = frozenset({
    "AmaxBackward0", "AminBackward0", "LinalgVectorNormBackward0", "LogsumexpBackward0",
    "MeanBackward1", "NansumBackward0", "StdBackward0", "StdMeanBackward0", "SumBackward1",
    "VarBackward0", "VarMeanBackward0"})

# Arguments that are ``int`` / ``int[]`` / ``SymInt`` in torch's schemas (not ``Scalar``):
# torch's nodes show those through an unsigned 64-bit conversion, a -1 as 2**64 - 1.
INT_ARGS = frozenset({
    "dim", "dims", "dim0", "dim1", "dim2", "diagonal", "offset", "index", "start", "end",
    "step", "padding_idx", "ignore_index", "pad", "shifts", "split_size", "split_sizes",
    "chunks", "blank", "source_dim"})
_UNSIGNED = 1 << 64

# What torch's SliceBackward0 shows for a bound left out of a Python slice: its indexing passes
# start 0, end INT64_MAX and step 1 (``x[::2]``); ember's node keeps the slice's None.
_SLICE_DEFAULTS = {"start": 0, "end": (1 << 63) - 1, "step": 1}

# What torch's loss nodes show for a saved ``reduction``: its at::Reduction enum.
_REDUCTION_ENUM = {"none": 0, "mean": 1, "sum": 2}


def _same(value):
    return value


def _first(pair):
    return pair[0]


def _second(pair):
    return pair[1]


def _size_piece(suffix):
    """How ``<input>_sym_<suffix>`` is read from the input's saved shape."""
    if suffix == "sizes":
        return _same
    if suffix == "numel":
        return math.prod
    k = int(suffix.rsplit("_", 1)[1])
    return (lambda shape: shape[-k]) if "minus" in suffix else (lambda shape: shape[k])


def _unsigned(value):
    """An int argument as torch's node shows it (see INT_ARGS)."""
    if type(value) is int and value < 0:
        return value + _UNSIGNED
    if type(value) in (tuple, list):
        return tuple(_unsigned(v) for v in value)
    return value


def _symmetric_padding(value, node):
    """ember's convolution pads each side on its own ((before, after) per dimension); torch's
    ConvolutionBackward0 shows one padding per dimension (the same on both sides)."""
    if type(value) in (tuple, list) and all(type(p) in (tuple, list) and len(p) == 2
                                            and p[0] == p[1] for p in value):
        return tuple(p[0] for p in value)
    return value


def _output_padding(value, node):
    """A convolution's output padding: ember's None (not transposed) is torch's zeros."""
    return tuple(0 for _ in node._saved_stride) if value is None else value


def _noise_tensor(value, node):
    """rrelu's noise, kept as the kernel drew it (an array), as torch's node shows it: a
    Tensor (in evaluation there is none)."""
    from .._tensor import _wrap
    return None if value is None else _wrap(value)


def _index_tensors(value, node):
    """An advanced index key as torch's index nodes show it: its index arrays as Tensors, a
    full slice as None, an ellipsis as a None per dimension it spans, no trailing None
    (torch applies any other slice, or an int, as a view first: those stay as ember's single
    node keeps them)."""
    from .._tensor import _wrap
    if not isinstance(value, tuple):
        return value
    shown = []
    for k in value:
        if k is Ellipsis:
            shown += [None] * _ellipsis_dims(value, node)
        elif type(k) is slice and k == slice(None):
            shown.append(None)
        else:
            shown.append(_wrap(k) if hasattr(k, "dtype") and hasattr(k, "shape") else k)
    while shown and shown[-1] is None:
        shown.pop()
    return tuple(shown)


def _ellipsis_dims(key, node):
    """How many of the indexed tensor's dimensions the ellipsis in ``key`` spans."""
    meta = node._meta[0] if node._meta else None
    if meta is None:
        return 0
    used = sum(getattr(k, "ndim", 1) if getattr(k, "dtype", None) == bool else 1
               for k in key if k is not None and k is not Ellipsis)
    return max(len(meta[0]) - used, 0)


# Arguments whose value torch's node shows in another form than ember's formulas read.
_PARAM_SHOWN = {
    ("IndexBackward0", "indices"): _index_tensors,
    ("IndexPutBackward0", "key"): _index_tensors,
    ("IndexPutImplBackward0", "key"): _index_tensors,
    ("RreluWithNoiseBackward0", "noise"): _noise_tensor,
    ("RreluWithNoiseBackward1", "noise"): _noise_tensor,
    ("ConvolutionBackward0", "padding"): _symmetric_padding,
    ("ConvolutionBackward0", "output_padding"): _output_padding,
}


def _bias_sizes(node):
    """torch's ``bias_sym_sizes_opt``: the bias's recorded shape, (0,) without one."""
    meta = node._meta[2]
    return (0,) if meta is None else tuple(meta[0])


def _sizes_of(i, k=None):
    """How input ``i``'s recorded shape reads (size ``k`` of it, if given)."""
    def read(node):
        shape = tuple(node._meta[i][0])
        return shape if k is None else shape[k]
    return read


def _singular_values(node):
    """The length of linalg_svd's S: the smaller of its input's last two sizes."""
    return min(node._meta[0][0][-2:])


def _flash_logsumexp(node):
    """The flash attention kernel's logsumexp, computed when read (see attention.py)."""
    from .attention import flash_logsumexp
    return flash_logsumexp(node)


def _pivoting(node):
    """linalg.lu / lu_factor(_ex) refuse ``pivot=False`` (not implemented on the CPU, as
    torch's): every recorded node pivoted."""
    return True


# Values torch's node shows that ember reads from the node's recorded input metadata (its
# inputs' shapes), not from a saved slot, or computes when read from what the node saved (the
# flash attention kernel's logsumexp): ``[(attribute, read(node))]`` by node name.
FROM_METADATA = {
    "ConvolutionBackward0": [("bias_sym_sizes_opt", _bias_sizes)],
    "AddbmmBackward0": [("batch2_sym_argsize_2", _sizes_of(2, 2))],
    "LinalgSvdBackward0": [("S_sym_argsize_minus_1", _singular_values)],
    "LuUnpackBackward0": [("LU_data_sym_argsize_minus_1", _sizes_of(0, -1)),
                          ("LU_data_sym_argsize_minus_2", _sizes_of(0, -2))],
    "NormalBackward1": [("mean_sym_sizes", _sizes_of(0))],
    "SqueezeBackward4": [("self_sym_sizes", _sizes_of(0))],
    "SplitBackward0": [("self_sym_sizes", _sizes_of(0))],
    "SplitWithSizesBackward0": [("self_sym_sizes", _sizes_of(0))],
    "ScaledDotProductFlashAttentionForCpuBackward0": [("logsumexp", _flash_logsumexp)],
    "LinalgLuBackward0": [("pivot", _pivoting)],
    "LinalgLuFactorExBackward0": [("pivot", _pivoting)],
}


def view_node(node_name):
    """The node name a ``*_copy`` op's node (``ViewBackward0_copy``) shows its saved values as:
    its view op's (torch generates both from one derivatives.yaml entry)."""
    return node_name.removesuffix("_copy")


def metadata_names(node_name):
    """FROM_METADATA's ``[(attribute, read(node))]`` for a node of that name."""
    return FROM_METADATA.get(view_node(node_name), ())


def _param(node_name, name):
    """How a saved argument reads as torch's node returns it (its lists are tuples), given
    the value and the node."""
    special = _PARAM_SHOWN.get((node_name, name))
    if special is not None:
        return special

    def shown(value, node):
        if type(value) is list:
            value = tuple(value)
        if name == "reduction" and type(value) is str:
            return _REDUCTION_ENUM.get(value, value)
        if value is None and node_name == "SliceBackward0":
            value = _SLICE_DEFAULTS.get(name)
        if name == "dim" and type(value) is int and node_name in DIM_LISTS:
            value = (value,)
        return _unsigned(value) if name in INT_ARGS else value
    return shown


def shown_names(node_name, name, kind, index):
    """``[(attribute, read)]``: the ``grad_fn._saved_<attribute>`` names torch's node shows
    the formulas' saved value ``name`` under (``kind``: "input", "result", "shape",
    "strides", "shapes" or "param"; ``index``: its input or output position), each with how
    the stored value reads there (an argument's read takes the node too; strides read from
    the pair the registry makes of the input's recorded shape and its strides in elements:
    those need the dtype). Empty where torch's node keeps the value without showing it (cat's
    shapes), or does not keep it (NOT_SHOWN)."""
    node_name = view_node(node_name)
    hidden = NOT_SHOWN.get(node_name, ())
    return [(attr, read) for attr, read in _shown_names(node_name, name, kind, index)
            if attr not in hidden]


def _shown_names(node_name, name, kind, index):
    if kind == "shape":
        base = name[:-len("_shape")]
        shown = SHAPE_SHOWN.get(node_name, (f"{base}_sym_sizes",))
        return [(attr, _size_piece(attr[len(base) + len("_sym_"):]))
                for attr in shown if attr.startswith(f"{base}_sym_")]
    if kind == "strides":  # (read from (the input's shape, its strides in elements))
        base = name[:-len("_strides")]
        return [(f"{base}_sym_sizes", _first), (f"{base}_sym_strides", _second)]
    if kind == "shapes":
        return []
    if kind == "result":
        names = RETURN_NAMES.get(node_name)
        return [(name if names is None else names[index], _same)]
    if kind == "param":
        return [(RENAMED.get(node_name, {}).get(name, name), _param(node_name, name))]
    return [(RENAMED.get(node_name, {}).get(name, name), _same)]
