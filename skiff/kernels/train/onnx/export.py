"""Write an :class:`~.graph.OnnxModule`'s weights back into a copy of its ONNX graph.

Every parameter replaces the tensor it came from (an initializer, or a ``Constant`` node's
value), in the original dtype and shape; nothing else in the graph changes, so the file runs
wherever the original ran (onnxruntime, ``%ocr --rec-model``). Extra ``metadata`` (for a
recognizer: its ``character`` list, grown when characters were added) is written too.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from skiff.kernels.backend import to_numpy

__all__ = ["export_onnx", "replace_output_classes"]


def export_onnx(module, path: str | Path, *, metadata: dict | None = None) -> Path:
    """Save ``module`` (an ``OnnxModule``) to ``path`` with its current weights."""
    import copy

    from onnx import numpy_helper, save

    model = copy.deepcopy(module.proto)
    values = {}
    for key, name in module.onnx_names.items():
        t = getattr(module, key)
        values[name] = to_numpy(t._data)
    done = set()
    for init in model.graph.initializer:
        if init.name in values:
            _write(init, values[init.name], numpy_helper)
            done.add(init.name)
    for node in model.graph.node:
        if node.op_type == "Constant" and node.output[0] in values:
            _write(node.attribute[0].t, values[node.output[0]], numpy_helper)
            done.add(node.output[0])
    missing = set(values) - done
    assert not missing, f"weights without a tensor in the graph: {sorted(missing)[:5]}"
    _fix_output_shape(model, module)
    if metadata:
        props = {p.key: p for p in model.metadata_props}
        for k, v in metadata.items():
            if k in props:
                props[k].value = v
            else:
                p = model.metadata_props.add()
                p.key, p.value = k, v
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    save(model, str(path))
    return path


def _write(tensor_proto, array, numpy_helper):
    old = numpy_helper.to_array(tensor_proto)
    array = np.asarray(array).astype(old.dtype)
    if array.size == old.size:
        array = array.reshape(old.shape)
    elif array.ndim != old.ndim:  # a grown classifier keeps its rank
        raise ValueError(f"{tensor_proto.name}: shape {array.shape} does not fit {old.shape}")
    new = numpy_helper.from_array(array, tensor_proto.name)
    tensor_proto.CopyFrom(new)


def _fix_output_shape(model, module):
    """When the class count grew (new characters), the declared output shape follows."""
    classes = getattr(module, "num_classes", None)
    if classes is None:
        return
    out = model.graph.output[0].type.tensor_type.shape
    if len(out.dim) and out.dim[-1].HasField("dim_value"):
        out.dim[-1].dim_value = int(classes)


def replace_output_classes(module, weight_key: str, bias_key: str, new_weight, new_bias):
    """Give the last linear layer new (grown) weights: the file's tensors follow on export."""
    from ..core.nn.module import Parameter

    setattr(module, weight_key, Parameter(np.asarray(new_weight, np.float32)))
    setattr(module, bias_key, Parameter(np.asarray(new_bias, np.float32)))
    module.num_classes = int(np.asarray(new_bias).shape[-1])
