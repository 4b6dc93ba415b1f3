"""The int8 recognizer's build (``python -m skiff.kernels.ocr.quantize_rec``, what
``precision="hybrid"`` runs once a machine) loads the recognizer before it renders its ~50
calibration pages: a file that is no model fails at once (round 39: it rendered them first,
~1.6 CPU s, and then failed). Oracle: the pages' renderer is never called for such a file,
and is called, once, after the recognizer loaded for a real one (stopped there)."""

import pytest

pytest.importorskip("onnxruntime")

from skiff.kernels.ocr import quantize_rec as qr  # noqa: E402


def test_a_file_that_is_no_model_fails_before_any_page_is_rendered(tmp_path, monkeypatch):
    rendered = []
    monkeypatch.setattr(qr, "calibration_pages", lambda *a, **k: rendered.append(a) or [])
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"not an onnx file")
    with pytest.raises(Exception, match="(?i)protobuf|load model"):
        qr.main([str(bad), str(tmp_path / "out.onnx")])
    assert rendered == []
    assert not (tmp_path / "out.onnx").exists()


def test_pages_are_rendered_after_the_recognizer_loads(tmp_path, monkeypatch):
    from skiff.kernels.ocr import engine

    order = []
    made = engine.OnnxEngine.__init__

    def init(self, path, *args, **kwargs):
        made(self, path, *args, **kwargs)
        order.append("engine")

    class Stop(Exception):
        pass

    def pages(*args, **kwargs):
        order.append("pages")
        raise Stop

    monkeypatch.setattr(engine.OnnxEngine, "__init__", init)
    monkeypatch.setattr(qr, "calibration_pages", pages)
    with pytest.raises(Stop):
        qr.pipeline_batches(lambda: qr.calibration_pages(6))
    assert order == ["engine", "pages"]
