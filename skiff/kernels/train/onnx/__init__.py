"""ONNX graphs as trainable skiff modules: :class:`OnnxModule` (import, run, train) and
:func:`export_onnx` (the trained weights written into a copy of the original graph);
:func:`export_table` / :func:`export_images` (round 48): a table ``mlp``'s or an image
``cnn``'s run folder as a graph on raw numbers / uint8 pixels.

``onnx`` (the protobuf reader) is imported only when a graph is loaded or written.
"""

from .export import export_onnx
from .graph import SUPPORTED_OPS, OnnxModule, UnsupportedOnnx
from .image_export import export_images
from .table_export import export_table

__all__ = ["OnnxModule", "export_onnx", "export_images", "export_table", "SUPPORTED_OPS",
           "UnsupportedOnnx"]
