"""The built-in ``mlp`` trained on a table file, written as one ONNX graph that takes the
file's **raw** numbers (round 48).

``export_table(run_dir, "model.onnx")`` reads the run folder as ``predict`` does
(``table.json``: the feature columns, their means and deviations, the classes or the
target's mean and deviation; ``model.npz``: the weights) and writes a graph whose input
``features`` is ``(rows, columns)`` float32 in the order of the ``skiff.columns``
metadata (the training file's column names), unscaled: the graph fills a missing value
(NaN) as predict does (the training mean), scales, runs the ``mlp`` and gives
``probabilities`` (rows, classes; their names in ``skiff.classes``) or, for a regression,
``prediction`` in the target's units. So onnxruntime on a file's numbers gives what
``python -m skiff predict RUN file.csv`` gives.

Tables whose columns were encoded (words one-hot, free text) are refused: the graph would
need the words, and takes numbers only.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

__all__ = ["export_table"]


def export_table(run_dir, path, *, opset: int = 13) -> Path:
    """Write the table model of ``run_dir`` to ``path`` (see the module docstring)."""
    from onnx import TensorProto, checker, helper, numpy_helper, save

    from ..models import get as get_model
    from ..table_predict import _load

    run_dir = Path(run_dir)
    scaling, weights = _load(run_dir)
    encoding = scaling.get("encoding") or []
    words = [e["name"] for e in encoding if e.get("kind") != "number"]
    if words:
        raise ValueError(f"{run_dir}: the table has encoded columns ({', '.join(words[:5])}"
                         f"{' ...' if len(words) > 5 else ''}): an ONNX export takes numeric "
                         "columns only; predict with python -m skiff predict")
    columns, classes = list(scaling["columns"]), scaling.get("classes")
    model = get_model("mlp", in_features=len(columns),
                      out_features=len(classes) if classes else 1)
    model.load_state_dict(str(weights))
    state = {k: np.asarray(v.numpy() if hasattr(v, "numpy") else v, np.float32)
             for k, v in model.state_dict().items()}
    layers = sorted({k.rsplit(".", 1)[0] for k in state if k.endswith(".weight")},
                    key=lambda k: int(k.rsplit(".", 1)[-1]))
    f32 = np.float32
    # a missing number takes what predict gives it: the encoding's fill, else the mean
    fill = [e["fill"] for e in encoding] if encoding else scaling["x_mean"]
    inits = {"fill": np.asarray(fill, f32), "x_mean": np.asarray(scaling["x_mean"], f32),
             "x_std": np.asarray(scaling["x_std"], f32)}
    nodes = [helper.make_node("IsNaN", ["features"], ["missing"], name="/fill/IsNaN"),
             helper.make_node("Where", ["missing", "fill", "features"], ["filled"],
                              name="/fill/Where"),
             helper.make_node("Sub", ["filled", "x_mean"], ["centred"], name="/scale/Sub"),
             helper.make_node("Div", ["centred", "x_std"], ["h0"], name="/scale/Div")]
    h = "h0"
    for j, layer in enumerate(layers):
        w, b = f"{layer}.weight", f"{layer}.bias"
        inits[w], inits[b] = state[w], state[b]
        nodes.append(helper.make_node("Gemm", [h, w, b], [f"{layer}.out"], transB=1,
                                      name=f"/{layer.replace('.', '/')}/Gemm"))
        h = f"{layer}.out"
        if j < len(layers) - 1:
            nodes.append(helper.make_node("Relu", [h], [f"{layer}.act"],
                                          name=f"/{layer.replace('.', '/')}/Relu"))
            h = f"{layer}.act"
    if classes:
        out, width = "probabilities", len(classes)
        nodes.append(helper.make_node("Softmax", [h], [out], axis=1, name="/Softmax"))
    else:
        out, width = "prediction", 1
        inits["y_std"] = np.asarray([scaling["y_std"]], f32)
        inits["y_mean"] = np.asarray([scaling["y_mean"]], f32)
        nodes += [helper.make_node("Mul", [h, "y_std"], ["unscaled"], name="/target/Mul"),
                  helper.make_node("Add", ["unscaled", "y_mean"], [out], name="/target/Add")]
    graph = helper.make_graph(
        nodes, "skiff_table_mlp",
        [helper.make_tensor_value_info("features", TensorProto.FLOAT, ["rows", len(columns)])],
        [helper.make_tensor_value_info(out, TensorProto.FLOAT, ["rows", width])],
        [numpy_helper.from_array(v, k) for k, v in inits.items()])
    model_proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                                    producer_name="skiff")
    meta = {"skiff.columns": json.dumps(columns), "skiff.target": str(scaling["target"]),
            "skiff.input": "raw numbers, training column order; NaN = missing"}
    if classes:
        meta["skiff.classes"] = json.dumps([str(c) for c in classes])
    helper.set_model_props(model_proto, meta)
    checker.check_model(model_proto)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    save(model_proto, str(path))
    return path
