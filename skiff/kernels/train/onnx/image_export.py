"""The built-in ``cnn`` trained on a folder of class folders, written as one ONNX graph on
the images' **raw pixels** (round 48).

``export_images(run_dir, "model.onnx")`` reads ``images.json`` (classes, image size,
channels, the training set's per-channel mean and deviation) and ``model.npz``, and writes
a graph whose input ``pixels`` is ``(images, channels, size, size)`` uint8, the images as
``predict`` reads them (a centred square resized to ``size``: that crop and resize stay
outside the graph, metadata ``skiff.size``); the graph standardises them ((x / 255 - mean)
/ std) and gives ``probabilities`` (images, classes; names in ``skiff.classes``), what
``python -m skiff predict RUN new/`` gives.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

__all__ = ["export_images"]


def export_images(run_dir, path, *, opset: int = 13) -> Path:
    """Write the image model of ``run_dir`` to ``path`` (see the module docstring)."""
    from onnx import TensorProto, checker, helper, numpy_helper, save

    from ..models import get as get_model

    run_dir = Path(run_dir)
    meta = json.loads((run_dir / "images.json").read_text())
    classes, size, channels = meta["classes"], int(meta["size"]), int(meta["channels"])
    model = get_model("cnn", in_channels=channels, num_classes=len(classes), image_size=size)
    model.load_state_dict(str(run_dir / "model.npz"))
    state = {k: np.asarray(v.numpy() if hasattr(v, "numpy") else v, np.float32)
             for k, v in model.state_dict().items()}
    f32 = np.float32
    inits = {"scale": np.asarray(255.0, f32),
             "mean": np.asarray(meta["mean"], f32).reshape(-1, 1, 1),
             "std": np.asarray(meta["std"], f32).reshape(-1, 1, 1)}
    node = helper.make_node
    nodes = [node("Cast", ["pixels"], ["x"], to=TensorProto.FLOAT, name="/pixels/Cast"),
             node("Div", ["x", "scale"], ["unit"], name="/pixels/Div"),
             node("Sub", ["unit", "mean"], ["centred"], name="/standardise/Sub"),
             node("Div", ["centred", "std"], ["h"], name="/standardise/Div")]
    h = "h"
    for conv in ("features.0", "features.3"):  # Conv(3, pad 1) - ReLU - MaxPool(2), twice
        w, b = f"{conv}.weight", f"{conv}.bias"
        inits[w], inits[b] = state[w], state[b]
        stem = "/" + conv.replace(".", "/")
        nodes += [node("Conv", [h, w, b], [f"{conv}.conv"], kernel_shape=[3, 3],
                       pads=[1, 1, 1, 1], name=f"{stem}/Conv"),
                  node("Relu", [f"{conv}.conv"], [f"{conv}.relu"], name=f"{stem}/Relu"),
                  node("MaxPool", [f"{conv}.relu"], [f"{conv}.pool"], kernel_shape=[2, 2],
                       strides=[2, 2], name=f"{stem}/MaxPool")]
        h = f"{conv}.pool"
    inits["head.weight"], inits["head.bias"] = state["head.weight"], state["head.bias"]
    nodes += [node("Flatten", [h], ["flat"], axis=1, name="/flatten/Flatten"),
              node("Gemm", ["flat", "head.weight", "head.bias"], ["logits"], transB=1,
                   name="/head/Gemm"),
              node("Softmax", ["logits"], ["probabilities"], axis=1, name="/Softmax")]
    graph = helper.make_graph(
        nodes, "skiff_image_cnn",
        [helper.make_tensor_value_info("pixels", TensorProto.UINT8,
                                       ["images", channels, size, size])],
        [helper.make_tensor_value_info("probabilities", TensorProto.FLOAT,
                                       ["images", len(classes)])],
        [numpy_helper.from_array(v, k) for k, v in inits.items()])
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                              producer_name="skiff")
    helper.set_model_props(proto, {
        "skiff.classes": json.dumps([str(c) for c in classes]), "skiff.size": str(size),
        "skiff.input": "uint8 pixels (N, C, size, size): a centred square resized to size"})
    checker.check_model(proto)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    save(proto, str(path))
    return path
