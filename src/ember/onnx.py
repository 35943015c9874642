"""``ember.onnx``: what programs that import torch.onnx call while they train.

ember has no ONNX exporter (torch's traces a model with its own compiler stack into ONNX
graphs), so ``export`` refuses with torch's exporter error class. The module is here because
training programs import it at the top (pytorch/examples' word_language_model does, to export
only when asked) and models ask ``is_in_onnx_export()`` in their forward.
"""
from __future__ import annotations

__all__ = ["OnnxExporterError", "export", "is_in_onnx_export"]


class OnnxExporterError(RuntimeError):
    """Errors raised by the ONNX exporter (ember's is every export)."""


def is_in_onnx_export() -> bool:
    """Whether an ONNX export is tracing the running code: never in ember."""
    return False


def export(model, args=(), f=None, **kwargs):
    """Refused: ember cannot write ONNX models."""
    raise OnnxExporterError("ember has no ONNX exporter: export the model with torch "
                            "(torch.onnx.export)")
