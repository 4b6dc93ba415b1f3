"""The int8 twin of the detector: built, cached by digest, reading as the float32 one does."""

from __future__ import annotations

import numpy as np
import pytest

from skiff.kernels.ocr import OcrPipeline
from skiff.kernels.ocr.item import Item
from skiff.kernels.ocr.models import get_model_set
from skiff.kernels.ocr.quantize import QuantizeError, int8_detector, int8_path, reduced_range


@pytest.fixture(scope="module")
def fp32_pipe():
    return OcrPipeline("ch", device="cpu", threads=2, precision="fp32")


@pytest.fixture(scope="module")
def twin():
    return int8_detector(get_model_set("ch").path("det"))


def test_twin_is_an_int8_graph(twin):
    import onnx

    model = onnx.load(str(twin))
    ops = {n.op_type for n in model.graph.node}
    assert {"QuantizeLinear", "DequantizeLinear", "Conv"} <= ops
    int8 = [t for t in model.graph.initializer if t.data_type == onnx.TensorProto.INT8]
    # every convolution's weights are stored as int8 (per output channel)
    convs = [n for n in model.graph.node if n.op_type == "Conv"]
    assert len(int8) >= len(convs) > 50
    assert twin.stat().st_size < get_model_set("ch").path("det").stat().st_size / 2


def test_cache_name_follows_the_source_bytes(tmp_path, monkeypatch):
    monkeypatch.setenv("SKIFF_CACHE", str(tmp_path / "cache"))
    a, b = tmp_path / "det.onnx", tmp_path / "det2.onnx"
    a.write_bytes(b"one model")
    b.write_bytes(b"one model.")
    assert int8_path(a).parent == tmp_path / "cache" / "ocr"
    assert int8_path(a) != int8_path(b)
    b.write_bytes(b"one model")
    assert int8_path(a).name.replace("det-", "") == int8_path(b).name.replace("det2-", "")


def test_weights_keep_to_seven_bits_on_x86(tmp_path, monkeypatch):
    """x86 without VNNI adds int8 products in int16, and with VNNI a full-range twin read
    otherwise than float32: the twin keeps 7-bit weights on every x86 CPU (one build, the
    same texts on either), full range on ARM, and the two builds are named apart (a cache
    shared by two machines)."""
    assert reduced_range("x86_64") and reduced_range("AMD64")
    assert not reduced_range("aarch64") and not reduced_range("arm64")
    monkeypatch.setenv("SKIFF_CACHE", str(tmp_path / "cache"))
    src = tmp_path / "det.onnx"
    src.write_bytes(b"one model")
    from skiff.kernels.ocr import quantize

    monkeypatch.setattr(quantize, "reduced_range", lambda: True)
    seven = int8_path(src)
    monkeypatch.setattr(quantize, "reduced_range", lambda: False)
    assert int8_path(src) != seven


def test_boxes_and_texts_match_float32(pipe, fp32_pipe, fonts, monkeypatch):
    """On clean, small, rotated and noisy pages the int8 detector finds the same lines
    (each float32 box has an int8 box over it, IoU >= 0.8) and the same text is read (as
    the recognizer gives it: words on, a noisy page's unsure line, wrong both ways, can be
    mended differently from crops a pixel apart)."""
    import cv2

    monkeypatch.setattr(pipe, "words", False)
    monkeypatch.setattr(fp32_pipe, "words", False)

    from skiff.kernels.ocr.synth import make_test_set

    assert pipe.engine("det").path != fp32_pipe.engine("det").path  # auto runs the twin
    samples = make_test_set(2, seed=5)
    for k, sample in enumerate(samples):
        bgr = np.ascontiguousarray(sample.image[..., ::-1])
        one, two = Item(k, "a", bgr), Item(k, "b", bgr)
        pipe.detect([one])
        fp32_pipe.detect([two])
        assert len(one.boxes) == len(two.boxes), sample.name
        for box, _ in two.boxes:
            best = 0.0
            for other, _ in one.boxes:
                inter = cv2.intersectConvexConvex(box.astype(np.float32),
                                                  other.astype(np.float32))[0]
                union = cv2.contourArea(box) + cv2.contourArea(other) - inter
                best = max(best, inter / union)
            assert best >= 0.8, (sample.name, best)
        assert pipe(sample.image).text == fp32_pipe(sample.image).text


def test_unsure_images_get_the_float32_detector(fonts):
    """A blank image's first int8 pass finds nothing: the float32 detector is asked too."""
    p = OcrPipeline("ch", device="cpu", threads=1)
    p.detect([Item(0, "blank", np.full((120, 300, 3), 255, np.uint8))])
    assert "det-fp32" in p._engines
    assert p._engines["det-fp32"].path == get_model_set("ch").path("det")


def test_small_noisy_images_skip_the_twin(fonts):
    """A small image with pixel noise (where int8's error and the noise add up, on the
    degraded tier) is detected by the float32 file alone: the twin never sees it. A clean
    small image is detected by the twin."""
    from skiff.kernels.ocr.denoise import NOISY, noise_sigma
    from skiff.kernels.ocr.synth import render_page

    clean = np.ascontiguousarray(render_page(["Coffee 3.50"], size=16, seed=1)[..., ::-1])
    rng = np.random.default_rng(0)
    noisy = np.clip(clean + rng.normal(0, 25, clean.shape), 0, 255).astype(np.uint8)
    assert max(noisy.shape[:2]) <= 480 and noise_sigma(noisy) >= NOISY > noise_sigma(clean)
    p = OcrPipeline("ch", device="cpu", threads=1)
    twin = p.engine("det")
    seen = []
    run = twin.session.run
    twin.session.run = lambda *a, **k: seen.append(1) or run(*a, **k)
    p.detect([Item(0, "noisy", noisy)])
    assert seen == [] and "det-fp32" in p._engines
    p.detect([Item(1, "clean", clean)])
    assert seen, "the clean small image was not read by the int8 twin"


def test_precision_is_checked():
    with pytest.raises(ValueError, match="precision must be one of auto, int8, fp32"):
        OcrPipeline("ch", device="cpu", precision="int4")


def test_a_failed_build_says_so(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("SKIFF_CACHE", str(tmp_path / "cache"))
    bad = tmp_path / "not-a-model.onnx"
    bad.write_bytes(b"not an onnx graph")
    # asked for: the error names the file
    strict = OcrPipeline("ch", device="cpu", det_model=str(bad), precision="int8")
    with pytest.raises(QuantizeError, match="could not quantize not-a-model.onnx"):
        strict.engine("det")
    assert not list((tmp_path / "cache" / "ocr").glob("*.onnx"))  # nothing half-written

    # auto: one line, then the float32 file
    def fail(path, log=None, retry=True):
        assert retry is False  # auto does not spend a failed build's time again
        raise QuantizeError("could not quantize x.onnx: boom")

    monkeypatch.setattr("skiff.kernels.ocr.pipeline.int8_detector", fail)
    auto = OcrPipeline("ch", device="cpu")
    assert auto.engine("det").path == get_model_set("ch").path("det")
    assert auto.precision == "fp32"
    assert "could not quantize x.onnx: boom; detection runs in float32" in \
        capsys.readouterr().err


def test_a_failure_is_remembered_for_auto(tmp_path, monkeypatch):
    """A failed build leaves its reason beside the file: retry=False (auto) raises it at once
    without building; retry=True (int8 asked for) builds again."""
    monkeypatch.setenv("SKIFF_CACHE", str(tmp_path / "cache"))
    bad = tmp_path / "broken_det.onnx"
    bad.write_bytes(b"not an onnx graph")
    started = []
    with pytest.raises(QuantizeError, match="could not quantize broken_det.onnx"):
        int8_detector(bad, log=started.append)
    assert len(started) == 1
    failed = list((tmp_path / "cache" / "ocr").glob(".*.failed"))
    assert len(failed) == 1 and "delete" in failed[0].read_text()
    with pytest.raises(QuantizeError, match="could not quantize broken_det.onnx.*delete"):
        int8_detector(bad, log=started.append, retry=False)
    assert len(started) == 1  # no second build
    with pytest.raises(QuantizeError):
        int8_detector(bad, log=started.append, retry=True)
    assert len(started) == 2


def test_custom_detectors_stay_float32_unless_asked(tmp_path):
    """auto quantizes only a shipped detector whose twin was measured (the ``ch`` set's); a
    user's own file and the lite set's detector run as given."""
    import shutil

    own = tmp_path / "own_det.onnx"
    shutil.copy(get_model_set("ch").path("det"), own)
    p = OcrPipeline("ch", device="cpu", det_model=str(own))
    assert p.engine("det").path == own
    lite = OcrPipeline("ch-v4", device="cpu")
    assert not lite.models.det_int8
    assert lite.engine("det").path == get_model_set("ch-v4").path("det")


def test_grammar_carries_precision():
    from skiff.grammar.common import GrammarError
    from skiff.kinds.ocr import COMMAND, to_config

    values = vars(COMMAND.parse("page.png --precision fp32"))
    assert to_config(values, check_inputs=False)["precision"] == "fp32"
    assert COMMAND.render(values) == "%ocr page.png --precision fp32"
    assert to_config({"inputs": ["page.png"]}, check_inputs=False)["precision"] == "auto"
    with pytest.raises(GrammarError, match="did you mean 'int8'"):
        COMMAND.parse("page.png --precision int4")


def test_a_build_out_of_time_leaves_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("SKIFF_CACHE", str(tmp_path / "cache"))
    with pytest.raises(QuantizeError, match=r"no result in 0\.5 s"):
        int8_detector(get_model_set("ch").path("det"), timeout=0.5)
    left = [p.name for p in (tmp_path / "cache" / "ocr").iterdir()]
    assert not [n for n in left if n.endswith((".onnx", ".tmp"))], left


def _tiny_detector(path):
    """A one-convolution stand-in for a DB detector (ink -> high probability): what the lock
    test builds, in ~5 CPU s instead of the shipped detector's ~20."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    w = numpy_helper.from_array(np.full((1, 3, 3, 3), -0.1, np.float32), "w")
    b = numpy_helper.from_array(np.array([-2.0], np.float32), "b")
    graph = helper.make_graph(
        [helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
         helper.make_node("Sigmoid", ["c"], ["y"])], "tiny_det",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 3, "h", "w"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 1, "h", "w"])], [w, b])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(path))
    return path


def _waiters(lock_path, pids) -> set[int]:
    """The ``pids`` blocked on ``lock_path``'s flock (``/proc/locks``' ``->`` lines)."""
    import os

    inode = f":{os.stat(lock_path).st_ino} "
    found = set()
    with open("/proc/locks") as f:
        for line in f:
            parts = line.split()
            if "->" in parts and inode in line and "FLOCK" in parts:
                pid = int(parts[parts.index("->") + 4])
                found |= {pid} & set(pids)
    return found


@pytest.mark.slow
def test_two_processes_build_once(tmp_path, monkeypatch):
    """Two processes asking at once (the ranks of one job): one builds, the other waits for
    its file; both get the same file. The test holds the build's lock until both processes
    are blocked on it (seen in ``/proc/locks``), so the two really contend; the detector is
    a one-convolution stand-in (the lock is checked, not the shipped detector's build)."""
    import fcntl
    import os
    import subprocess
    import sys
    import time

    if not os.path.exists("/proc/locks"):
        pytest.skip("no /proc/locks to see the waiters")
    src = _tiny_detector(tmp_path / "tiny_det.onnx")
    monkeypatch.setenv("SKIFF_CACHE", str(tmp_path / "cache"))
    target = int8_path(src)
    target.parent.mkdir(parents=True)
    lock_path = target.with_name(f".{target.name}.lock")
    code = ("import sys; from skiff.kernels.ocr.quantize import int8_detector; "
            "p = int8_detector(sys.argv[1], log=lambda s: print('BUILT')); print(p)")
    with open(lock_path, "a") as lock:
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
        procs = [subprocess.Popen([sys.executable, "-c", code, str(src)], env=dict(os.environ),
                                  stdout=subprocess.PIPE, text=True) for _ in range(2)]
        pids = [p.pid for p in procs]
        deadline = time.monotonic() + 120
        while len(_waiters(lock_path, pids)) < 2 and time.monotonic() < deadline:
            if any(p.poll() is not None for p in procs):
                break  # one ended without waiting: no lock taken
            time.sleep(0.05)
        waiting = _waiters(lock_path, pids)
    if len(waiting) < 2:
        for p in procs:
            p.kill()
            p.communicate()
        pytest.fail(f"not both processes waited on the build's lock: {sorted(waiting)}")
    outs = [p.communicate(timeout=300)[0].split() for p in procs]
    assert all(p.returncode == 0 for p in procs)
    assert sum(o.count("BUILT") for o in outs) == 1, outs
    assert outs[0][-1] == outs[1][-1] == str(target)
    built = [p for p in (tmp_path / "cache" / "ocr").glob("*.onnx") if "-ortopt-" not in p.name]
    assert len(built) == 1, built  # (onnxruntime's optimized graphs are cached beside it)
