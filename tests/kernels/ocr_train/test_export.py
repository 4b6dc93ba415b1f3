"""Export round trip: trained weights written into a copy of the base graph; onnxruntime on
the file equals skiff's module on the same input; a grown dictionary travels in the file and
the OCR pipeline reads with it (``--rec-model PATH``)."""

from __future__ import annotations

import numpy as np
import pytest

from skiff.kernels.train.core.tensor import no_grad
from skiff.kernels.train.onnx import OnnxModule, export_onnx

ort = pytest.importorskip("onnxruntime")


@pytest.fixture(scope="module")
def v4():
    from skiff.kernels.ocr.models import MODEL_SETS

    return MODEL_SETS["ch-v4"].path("rec")


def _run(path, x):
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return sess.run(None, {sess.get_inputs()[0].name: x})[0]


def test_changed_weights_round_trip(v4, tmp_path):
    m = OnnxModule.load(v4)
    rng = np.random.default_rng(0)
    for p in m.parameters():  # as a training step would: every weight moves a little
        p.data += rng.normal(0, 0.02, p.shape).astype(p.dtype) * (np.abs(p.data).mean() + 1e-3)
    path = export_onnx(m, tmp_path / "rec.onnx")
    x = rng.uniform(-1, 1, (2, 3, 48, 120)).astype(np.float32)
    with no_grad():
        mine = m(x).numpy()
    theirs = _run(path, x)
    base = _run(v4, x)
    assert np.abs(mine - theirs).max() < 1e-4
    assert np.abs(base - theirs).max() > 1e-3  # the file holds the new weights, not the old
    again = OnnxModule.load(path)
    for k in m.onnx_names:
        assert np.array_equal(getattr(again, k).numpy(), getattr(m, k).numpy())


def test_grown_classes_and_dictionary_reach_the_pipeline(v4, tmp_path, fonts):
    import onnx

    from skiff.kernels.ocr import ocr
    from skiff.kernels.ocr.synth import render_page
    from skiff.kernels.ocr_train.finetune import _final_linear, grow_classes
    from skiff.kernels.ocr_train.labels import Dictionary

    m = OnnxModule.load(v4)
    wkey, bkey = _final_linear(m)[:2]
    d = Dictionary.from_model(m.proto, 6625)
    old = Dictionary.from_model(m.proto, 6625)
    d.add(["\ue000", "\ue001"])  # private-use: surely not in the dictionary
    grow_classes(m, wkey, bkey, old, d.num_classes)
    path = export_onnx(m, tmp_path / "rec.onnx", metadata={"character": d.text()})
    x = np.random.default_rng(1).uniform(-1, 1, (1, 3, 48, 80)).astype(np.float32)
    with no_grad():
        mine = m(x).numpy()
    theirs = _run(path, x)
    assert theirs.shape[-1] == 6627 and np.abs(mine - theirs).max() < 1e-4
    # the old classes keep their columns: probabilities over them only rescale
    base = _run(v4, x)
    keep = np.r_[0:6624, 6626]
    ratio = theirs[..., keep] / base
    assert np.allclose(ratio, ratio[..., :1], rtol=1e-3)
    meta = {p.key: p.value for p in onnx.load(str(path)).metadata_props}
    assert meta["character"].split("\n")[-2:] == ["\ue000", "\ue001"]
    page = render_page(["Total 128.50"], size=32)
    got = ocr(page, model="ch-v4", device="cpu", rec_model=str(path))
    assert "128.50" in got.text
