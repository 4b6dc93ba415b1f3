"""ONNX graphs as trainable skiff modules: :class:`OnnxModule` (import, run, train) and
:func:`export_onnx` (the trained weights written into a copy of the original graph).

``onnx`` (the protobuf reader) is imported only when a graph is loaded or written.
"""

from .export import export_onnx
from .graph import SUPPORTED_OPS, OnnxModule, UnsupportedOnnx

__all__ = ["OnnxModule", "export_onnx", "SUPPORTED_OPS", "UnsupportedOnnx"]
