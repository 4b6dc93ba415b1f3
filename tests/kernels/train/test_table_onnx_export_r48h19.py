"""(round 48, h19) ``export_table``: a table ``mlp``'s run folder as one ONNX graph on the
file's raw numbers (missing cells filled and scaling inside the graph). Oracles:
onnxruntime runs the file; it must give what ``predict`` gives on the same rows (classes:
every class's probability; regression: the value in the target's units), and the class
probabilities equal a float64 torch forward of the run's weights on the scaled rows; the
files read back as skiff ``OnnxModule``s run as onnxruntime runs them."""

from __future__ import annotations

import json

import numpy as np
import pytest

from skiff.kernels.train.models.mlp import mlp
from skiff.kernels.train.onnx import OnnxModule
from skiff.kernels.train.onnx.table_export import export_table
from skiff.kernels.train.table_predict import predict_table
from skiff.kernels.train.tables import read_table

ort = pytest.importorskip("onnxruntime")
torch = pytest.importorskip("torch")


def _csv(path, header, rows):
    path.write_text("\n".join([",".join(header)] + [",".join(r) for r in rows]) + "\n")
    return path


def _cells(x):
    rows = [[f"{v:.6g}" for v in r] for r in x]
    rows[1][1] = ""  # a missing number: predict fills it with the training mean
    return rows


def _run(tmp_path, y_cells, extra=None):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(len(y_cells), 3)) * [1.0, 5.0, 0.1] + [0.0, 2.0, -1.0]
    header = ["a", "b", "c", "label"] + ([extra[0]] if extra else [])
    rows = [[*r, t] + ([extra[1][k]] if extra else []) for k, (r, t) in
            enumerate(zip(_cells(x), y_cells))]
    table = read_table(_csv(tmp_path / "train.csv", header, rows), target="label")
    run = tmp_path / "run"
    run.mkdir()
    (run / "config.json").write_text(json.dumps({"config": {"model": "mlp"}}))
    (run / "table.json").write_text(json.dumps(table.to_json()))
    torch_free = mlp(in_features=len(table.columns), out_features=table.outputs)
    np.savez(run / "model.npz",
             **{k: np.asarray(v) for k, v in torch_free.state_dict().items()})
    return run, table


def _new(tmp_path, n=7):
    x = np.random.default_rng(5).normal(size=(n, 3)) * [1.0, 5.0, 0.1] + [0.0, 2.0, -1.0]
    path = _csv(tmp_path / "new.csv", ["c", "a", "b"],  # any column order, as predict reads
                [[r[2], r[0], r[1]] for r in _cells(x)])
    raw = np.array([[float(v) if v else np.nan for v in r] for r in _cells(x)], np.float32)
    return path, raw


def test_classes_equal_predict_and_torch(tmp_path):
    y = np.random.default_rng(1).choice(["cat", "dog", "owl"], 40)
    run, table = _run(tmp_path, list(y))
    out = export_table(run, tmp_path / "table.onnx")
    sess = ort.InferenceSession(str(out), providers=["CPUExecutionProvider"])
    meta = sess.get_modelmeta().custom_metadata_map
    assert json.loads(meta["skiff.columns"]) == ["a", "b", "c"]
    path, raw = _new(tmp_path)
    (got,) = sess.run(None, {"features": raw})
    want = predict_table(run, path)
    assert json.loads(meta["skiff.classes"]) == want.classes
    # float32 graph against predict's float64 softmax of float32 logits: ~1e-7 seen
    np.testing.assert_allclose(got, np.asarray(want.class_probabilities), atol=1e-5)
    # read back as a skiff module (IsNaN and Where were refused): onnxruntime's numbers
    np.testing.assert_allclose(OnnxModule.load(out)(raw).numpy(), got, atol=1e-6)
    w = np.load(run / "model.npz")
    filled = np.where(np.isnan(raw), np.asarray(table.x_mean, np.float32), raw)
    h = torch.tensor((filled - table.x_mean) / table.x_std, dtype=torch.float64)
    names = sorted(k for k in w.files if k.endswith(".weight"))
    for j, name in enumerate(names):
        h = h @ torch.tensor(w[name], dtype=torch.float64).T + torch.tensor(
            w[name[:-len("weight")] + "bias"], dtype=torch.float64)
        h = torch.relu(h) if j < len(names) - 1 else torch.softmax(h, 1)
    np.testing.assert_allclose(got, h.numpy(), atol=1e-5)


def test_regression_equals_predict_and_words_are_refused(tmp_path):
    y = np.random.default_rng(2).normal(size=40) * 30 + 100
    run, _ = _run(tmp_path, [f"{v:.6g}" for v in y])
    out = export_table(run, tmp_path / "reg.onnx")
    path, raw = _new(tmp_path)
    (got,) = ort.InferenceSession(str(out), providers=["CPUExecutionProvider"]).run(
        None, {"features": raw})
    want = np.asarray(predict_table(run, path).predictions)
    # values ~100 in float32 (eps 1.2e-7 relative): 1e-4 relative leaves ~100x
    np.testing.assert_allclose(got[:, 0], want, rtol=1e-4)
    words = tmp_path / "words"
    words.mkdir()
    run2, _ = _run(words, [f"{v:.6g}" for v in y],
                   extra=("town", ["north", "south"] * 20))
    with pytest.raises(ValueError, match="encoded columns \\(town"):
        export_table(run2, words / "w.onnx")


def test_image_cnn_on_raw_pixels_equals_predict_and_torch(tmp_path):
    """``export_images``: the ``cnn`` of an image run as ONNX on uint8 pixels (the crop and
    resize predict does stay outside); onnxruntime gives predict's probabilities, and a
    float64 torch replica of the layers gives them too."""
    from PIL import Image

    from skiff.kernels.train import models
    from skiff.kernels.train.image_folder import load_image
    from skiff.kernels.train.image_predict import predict_images
    from skiff.kernels.train.onnx.image_export import export_images

    run = tmp_path / "run"
    run.mkdir()
    models.get("cnn", in_channels=3, num_classes=3, image_size=8).save(str(run / "model.npz"))
    mean, std = [0.4, 0.5, 0.6], [0.2, 0.25, 0.3]
    (run / "images.json").write_text(json.dumps(
        {"classes": ["a", "b", "c"], "size": 8, "channels": 3, "mean": mean, "std": std}))
    new = tmp_path / "new"
    new.mkdir()
    rng = np.random.default_rng(6)
    for k in range(5):  # not square, not 8x8: predict crops and resizes
        Image.fromarray(rng.integers(0, 256, (10 + k, 12, 3), dtype=np.uint8)).save(
            new / f"{k}.png")
    want = predict_images(run, new)
    pixels = np.stack([load_image(new / f, 8, 3) for f in want.files])
    out = export_images(run, tmp_path / "cnn.onnx")
    (got,) = ort.InferenceSession(str(out), providers=["CPUExecutionProvider"]).run(
        None, {"pixels": pixels})
    np.testing.assert_allclose(got, np.asarray(want.class_probabilities), atol=1e-5)
    # read back as a skiff module (its Cast of uint8 pixels kept them integers): the same
    np.testing.assert_allclose(OnnxModule.load(out)(pixels).numpy(), got, atol=1e-6)
    w = {k: torch.tensor(v, dtype=torch.float64) for k, v in np.load(run / "model.npz").items()}
    F = torch.nn.functional
    h = (torch.tensor(pixels, dtype=torch.float64) / 255 - torch.tensor(mean).view(3, 1, 1)) \
        / torch.tensor(std).view(3, 1, 1)
    for conv in ("features.0", "features.3"):
        h = F.max_pool2d(F.relu(F.conv2d(h, w[f"{conv}.weight"], w[f"{conv}.bias"],
                                         padding=1)), 2)
    h = torch.softmax(h.flatten(1) @ w["head.weight"].T + w["head.bias"], 1)
    np.testing.assert_allclose(got, h.numpy(), atol=1e-5)
