"""precision="hybrid" with ``HYBRID_MARGIN`` (round 38): a row of an int8 recognizer batch
with a near tie is read again by the float32 recognizer. Oracles: the two likeliest classes
by a full ``np.sort`` of every timestep; the float32 recognizer's own output (onnxruntime)
for the rows read again; the float32 pipeline's texts."""

from importlib.resources import files

import numpy as np
import pytest

pytest.importorskip("onnxruntime")

from skiff.kernels.ocr import OcrPipeline, pipeline  # noqa: E402
from skiff.kernels.ocr.pipeline import VerifiedEngine, near_ties  # noqa: E402

FLOAT_FILE = files("rapidocr") / "models" / "PP-OCRv6_rec_small.onnx"


def _brute(probs, margin):
    top = np.sort(probs, -1)
    return np.flatnonzero((top[..., -1] - top[..., -2] < margin).any(-1))


def test_near_ties_are_the_rows_a_full_sort_finds():
    rng = np.random.default_rng(0)
    logits = rng.normal(0, 1, (12, 40, 300))
    best = rng.integers(0, 300, (12, 40))
    lead = np.where(np.arange(12)[:, None] % 2, rng.uniform(0, 8, (12, 40)),
                    rng.uniform(12, 20, (12, 40)))  # odd rows unsure, even rows sure
    np.put_along_axis(logits, best[..., None], lead[..., None] + 3, -1)
    logits[3, 7, :2] = 50.0  # an exact two-way tie at one timestep of row 3
    probs = np.exp(logits - logits.max(-1, keepdims=True))
    probs /= probs.sum(-1, keepdims=True)
    for margin in (0.01, 0.1, 0.3, 0.9):
        want = _brute(probs, margin)
        assert near_ties(probs.astype(np.float32), margin).tolist() == want.tolist()
    assert 3 in near_ties(probs, 0.01).tolist()
    assert 0 < len(_brute(probs, 0.3)) < len(probs)  # both kinds of row are in the batch


@pytest.fixture(scope="module")
def lines(fonts):
    from skiff.kernels.ocr.rec import rec_input
    from skiff.kernels.ocr.synth import render_sample

    page = render_sample("clean", 0, seed=3)
    crops = [page.image[:60, :400], page.image[60:120, :400], page.image[:60, 200:600]]
    return rec_input(crops, 48, np, bucket="step")


def test_verified_rows_are_float32s_the_others_the_fast_engines(lines):
    from skiff.kernels.ocr.engine import OnnxEngine

    exact = OnnxEngine(FLOAT_FILE, "cpu", threads=1)
    want = exact(lines)
    pushed = want.copy()  # the fast engine: float32's, row 1 pushed to a tie at one timestep
    t = int(pushed[1].max(-1).argmax())
    first, second = np.argsort(pushed[1, t])[-2:][::-1]
    pushed[1, t, first], pushed[1, t, second] = 0.5, 0.49
    seen = []

    class Fast:
        provider = exact.provider

        def __call__(self, x):
            return pushed.copy()

    def counted(x):
        seen.append(len(x))
        return exact(x)

    verified = VerifiedEngine(Fast(), counted, 0.05)
    assert verified.provider == "CPUExecutionProvider"
    got = verified(lines)
    ties = near_ties(pushed, 0.05)
    assert 1 in ties.tolist() and seen == [len(ties)]
    # the rows read again are float32's as it reads them in a batch of their own (beside
    # other rows its posteriors move by ~1e-7: onnxruntime's GEMM blocking)
    np.testing.assert_array_equal(got[ties], exact(lines[ties]))
    np.testing.assert_allclose(got[ties], want[ties], atol=1e-5)
    rest = [r for r in range(len(lines)) if r not in ties.tolist()]
    np.testing.assert_array_equal(got[rest], pushed[rest])


def test_hybrid_with_a_margin_reads_as_float32(fonts, pipe, monkeypatch):
    """The twin stood in by the float32 file: every text must be the float32 pipeline's,
    and the float32 recognizer is made beside it without a lock held twice."""
    from skiff.kernels.ocr.synth import render_sample

    image = render_sample("clean", 0, seed=3).image
    monkeypatch.setattr(pipeline, "int8_recognizer", lambda src, log=None: FLOAT_FILE)
    monkeypatch.setattr(pipeline, "HYBRID_MARGIN", 0.2)
    hybrid = OcrPipeline("ch", device="cpu", threads=2, precision="hybrid")
    assert [r.text for r in hybrid.run([image])] == [r.text for r in pipe.run([image])]
    assert isinstance(hybrid._engines["rec-int8"], VerifiedEngine)
    assert hybrid._engines["rec-int8"].exact is hybrid._engines["rec"]
