"""Round 35 (h5): a resume that trains nothing says so where the user looks. A script's
``Trainer(..., resume=True).train(data, steps=N)`` from a checkpoint at step N (or past
it) trained nothing and said nothing (its result looked like a finished run); a job said
it only in the CLI's summary, not in its log (which the job view and ``jobs logs`` show).
Now the "resumed from step ..." line says "nothing to train" and why, a warning in a job's
log, a ``UserWarning`` in a script (printed with ``verbose=True``). The oracle: the model
holds exactly the checkpoint's weights, and a resume with steps left still says nothing."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import skiff
from skiff.kernels.backend.report import NullReporter
from skiff.kernels.train.checkpoint import load_checkpoint


class _Log(NullReporter):
    def __init__(self):
        self.lines = []

    def log(self, message, *, level="info"):
        self.lines.append((level, message))


def _data():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((96, 4)).astype(np.float32)
    return x, (x[:, 0] + x[:, 1] > 0).astype(np.int64)


def _model():
    skiff.seed(1)
    return skiff.nn.Sequential(skiff.nn.Linear(4, 8), skiff.nn.ReLU(), skiff.nn.Linear(8, 2))


@pytest.fixture
def ck(tmp_path):
    skiff.Trainer(_model(), checkpoint_dir=tmp_path, checkpoint_every=4).train(_data(),
                                                                                steps=8)
    return tmp_path


def _same_as_checkpoint(model, path):
    saved = load_checkpoint(path)["model"]
    got = model.state_dict()
    assert set(saved) == set(got)
    for k in saved:
        np.testing.assert_array_equal(np.asarray(got[k]), saved[k])


@pytest.mark.parametrize("steps, why", [(8, "already reaches the 8 steps asked"),
                                        (5, "is past the 5 steps asked: the model holds "
                                            "step 8's weights")])
def test_a_script_is_warned(ck, steps, why):
    model = _model()
    with pytest.warns(UserWarning, match="nothing to train") as said:
        result = skiff.Trainer(model, checkpoint_dir=ck, resume=True).train(_data(),
                                                                           steps=steps)
    text = str(said[0].message)
    assert text.startswith("resumed from step 8") and why in text and "more than 8" in text
    assert said[0].filename == __file__  # it points at the user's train() call
    assert result.steps == 8 and result.resumed["from_step"] == 8
    _same_as_checkpoint(model, ck / "step-00000008.npz")


def test_a_jobs_log_says_it_once_as_a_warning(ck):
    rep = _Log()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a job's reporter has the log: no Python warning
        skiff.Trainer(_model(), checkpoint_dir=ck, resume=True, reporter=rep).train(_data(),
                                                                                    steps=8)
    resumed = [(lv, m) for lv, m in rep.lines if m.startswith("resum")]
    assert len(resumed) == 1 and resumed[0][0] == "warning"
    assert "nothing to train" in resumed[0][1]


def test_verbose_prints_it(ck, capsys):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        skiff.Trainer(_model(), checkpoint_dir=ck, resume=True, verbose=True).train(_data(),
                                                                                    steps=8)
    assert "nothing to train" in capsys.readouterr().out


def test_steps_left_say_nothing_more(ck):
    rep = _Log()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = skiff.Trainer(_model(), checkpoint_dir=ck, resume=True,
                               reporter=rep).train(_data(), steps=12)
    assert result.steps == 12
    assert [m for _, m in rep.lines if m.startswith("resum")] == [
        "resumed from step 8 (epoch 2, batch 2)"]


def test_an_early_stopped_run_says_why(tmp_path):
    x, y = _data()
    x[:, :] = np.random.default_rng(3).standard_normal(x.shape)  # noise: it stops early
    skiff.Trainer(_model(), checkpoint_dir=tmp_path, early_stopping=1, lr=0.05,
                  batch_size=8).train((x, y), epochs=40, val_split=0.25)
    rep = _Log()
    result = skiff.Trainer(_model(), checkpoint_dir=tmp_path, early_stopping=1, lr=0.05,
                           batch_size=8, resume=True, reporter=rep).train(
        (x, y), epochs=40, val_split=0.25)
    assert result.stopped.startswith("early stopping") and result.steps < 360
    line = next(m for _, m in rep.lines if m.startswith("resum"))
    assert "nothing to train, the run had stopped here (early stopping" in line
