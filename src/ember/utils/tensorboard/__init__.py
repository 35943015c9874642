"""``ember.utils.tensorboard``: TensorBoard event files, as ``torch.utils.tensorboard`` writes them.

Like torch's, this module is a thin layer over the ``tensorboard`` package (an optional
dependency): importing it without that package raises the same ``ModuleNotFoundError``, and
an older package torch's ``ImportError``. ``SummaryWriter`` writes scalars (``add_scalar``,
``add_scalars``), histograms (``add_histogram``) and text (``add_text``) as the same protocol
buffers torch writes, through tensorboard's own ``EventFileWriter``.
"""
import tensorboard


def _version_tuple(version):
    """``"2.18.0"`` -> ``(2, 18)``: the release's first two numbers, enough for the check."""
    numbers = []
    for part in version.split(".")[:2]:
        digits = "".join(ch for ch in part if ch.isdigit())
        numbers.append(int(digits or 0))
    return tuple(numbers)


if not hasattr(tensorboard, "__version__") or _version_tuple(tensorboard.__version__) < (1, 15):
    raise ImportError("TensorBoard logging requires TensorBoard version 1.15 or above")

del tensorboard

from tensorboard.summary.writer.record_writer import RecordWriter  # noqa: E402

from .writer import FileWriter, SummaryWriter  # noqa: E402

__all__ = ["FileWriter", "RecordWriter", "SummaryWriter"]
