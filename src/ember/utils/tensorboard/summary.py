"""The ``Summary`` protocol buffers ``SummaryWriter`` writes, built as torch builds them."""
import numpy as np
from tensorboard.compat.proto.summary_pb2 import HistogramProto, Summary, SummaryMetadata
from tensorboard.compat.proto.tensor_pb2 import TensorProto
from tensorboard.compat.proto.tensor_shape_pb2 import TensorShapeProto
from tensorboard.plugins.text.plugin_data_pb2 import TextPluginData

import ember


def make_np(x):
    """``x`` (an array, a Python or NumPy scalar, a tensor) as a NumPy array."""
    if isinstance(x, np.ndarray):
        return x
    if np.isscalar(x):
        return np.array([x])
    if isinstance(x, ember.Tensor):
        if x.device.type == "meta":
            # A meta tensor has no values; torch logs a random stand-in the same way.
            return np.random.randn(1)
        if x.dtype == ember.bfloat16:
            x = x.to(ember.float16)
        return x.detach().cpu().numpy()
    raise NotImplementedError(f"Got {type(x)}, but numpy array or torch tensor are expected.")


def scalar(name, value, new_style=False, double_precision=False):
    """One scalar: a ``simple_value``, or with ``new_style`` a one-element tensor."""
    array = make_np(value).squeeze()
    if array.ndim != 0:
        raise AssertionError(
            f"Tensor should contain one element (0 dimensions).             "
            f"Was given size: {array.size} and {array.ndim} dimensions.")
    number = float(array)
    if not new_style:
        return Summary(value=[Summary.Value(tag=name, simple_value=number)])
    if double_precision:
        proto = TensorProto(double_val=[number], dtype="DT_DOUBLE")
    else:
        proto = TensorProto(float_val=[number], dtype="DT_FLOAT")
    metadata = SummaryMetadata(plugin_data=SummaryMetadata.PluginData(plugin_name="scalars"))
    return Summary(value=[Summary.Value(tag=name, tensor=proto, metadata=metadata)])


def tensorflow_bins():
    """TensorBoard's default histogram edges: +-1e-12 growing by 10% up to 1e20, and 0."""
    edges = []
    edge = 1e-12
    while edge < 1e20:
        edges.append(edge)
        edge *= 1.1
    return [-e for e in reversed(edges)] + [0] + edges


def _merge_bins(counts, limits, max_bins):
    """At most ``max_bins`` bins: neighbours summed in groups, the last group padded."""
    group = len(counts) // max_bins
    short = len(counts) % group
    if short:
        counts = np.pad(counts, [[0, group - short]], mode="constant", constant_values=0)
    counts = counts.reshape(-1, group).sum(axis=-1)
    merged = np.empty((counts.size + 1,), limits.dtype)
    merged[:-1] = limits[:-1:group]
    merged[-1] = limits[-1]
    return counts, merged


def make_histogram(values, bins, max_bins=None):
    """A ``HistogramProto`` of ``values`` over the bins between the first and last filled one.

    TensorBoard reads only each bucket's right edge, so one empty bucket is kept on the left
    to carry the leftmost edge.
    """
    if values.size == 0:
        raise ValueError("The input has no element.")
    values = values.reshape(-1)
    counts, limits = np.histogram(values, bins=bins)
    if max_bins is not None and len(counts) > max_bins:
        counts, limits = _merge_bins(counts, limits, max_bins)
    filled = np.cumsum(np.greater(counts, 0))
    start, end = np.searchsorted(filled, [0, filled[-1] - 1], side="right")
    start, end = int(start), int(end) + 1
    counts = counts[start - 1:end] if start > 0 else np.concatenate([[0], counts[:end]])
    limits = limits[start:end + 1]
    if counts.size == 0 or limits.size == 0:
        raise ValueError("The histogram is empty, please file a bug report.")
    return HistogramProto(
        min=values.min(), max=values.max(), num=len(values), sum=values.sum(),
        sum_squares=values.dot(values), bucket_limit=limits.tolist(),
        bucket=counts.tolist())


def histogram(name, values, bins, max_bins=None):
    """A histogram of ``values`` (counted in float64) under ``name``."""
    hist = make_histogram(make_np(values).astype(float), bins, max_bins)
    return Summary(value=[Summary.Value(tag=name, histo=hist)])


def text(tag, string):
    """A text entry, for TensorBoard's text plugin, under ``tag/text_summary``."""
    content = TextPluginData(version=0).SerializeToString()
    metadata = SummaryMetadata(
        plugin_data=SummaryMetadata.PluginData(plugin_name="text", content=content))
    proto = TensorProto(
        dtype="DT_STRING", string_val=[string.encode(encoding="utf_8")],
        tensor_shape=TensorShapeProto(dim=[TensorShapeProto.Dim(size=1)]))
    return Summary(value=[Summary.Value(tag=tag + "/text_summary", metadata=metadata,
                                        tensor=proto)])
