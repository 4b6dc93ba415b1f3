"""Round 35 (h5): ``Trainer(resume=PATH)`` as transformers' ``resume_from_checkpoint=PATH``
and Lightning's ``ckpt_path``: the checkpoint folder (or its newest ``step-N.npz``) goes on
from there; it said "resume=True needs checkpoint_dir". An older checkpoint than the
folder's newest, a checkpoint_dir elsewhere and a missing file are refused, naming why.
``checkpoint_every`` without a ``checkpoint_dir`` wrote nothing without a word: a warning.
The oracle: the same resume given as ``checkpoint_dir=..., resume=True``, and the
uninterrupted run."""

from __future__ import annotations

import shutil
import warnings

import numpy as np
import pytest

import skiff


def _data():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((50, 3)).astype(np.float32)
    return x, (x[:, 0] > 0).astype(np.int64)


def _model():
    skiff.seed(0)
    return skiff.nn.Sequential(skiff.nn.Linear(3, 4), skiff.nn.Tanh(), skiff.nn.Linear(4, 2))


def _trainer(**kw):  # a constant rate: a run of 10 steps goes on as the one of 16 would
    return skiff.Trainer(_model(), schedule="constant", warmup_steps=0, **kw)


def _losses(result):
    return [h["loss"] for h in result.history]


@pytest.fixture
def ck(tmp_path):
    _trainer(checkpoint_dir=tmp_path / "ck", checkpoint_every=5).train(
        _data(), steps=10)
    return tmp_path / "ck"


@pytest.mark.parametrize("how", ["folder", "newest file", "latest"])
def test_a_path_resumes_as_checkpoint_dir_does(ck, tmp_path, how):
    whole = _trainer().train(_data(), steps=16)
    other = tmp_path / "copy"
    shutil.copytree(ck, other)
    want = _trainer(checkpoint_dir=other, resume=True).train(_data(), steps=16)
    if how == "latest":
        (ck / "latest").write_text("step-00000010.npz\n")
    path = {"folder": ck, "newest file": ck / "step-00000010.npz",
            "latest": ck / "latest"}[how]
    got = _trainer(resume=str(path)).train(_data(), steps=16)
    assert got.resumed["from_step"] == 10 and got.checkpoint.endswith("step-00000016.npz")
    assert _losses(got) == _losses(want)
    np.testing.assert_allclose(_losses(got), _losses(whole), rtol=1e-6)


def test_what_a_path_cannot_mean_is_said(ck, tmp_path):
    with pytest.raises(ValueError, match="holds a newer checkpoint \\(step 10\\)"):
        skiff.Trainer(_model(), resume=ck / "step-00000005.npz")
    with pytest.raises(ValueError, match="give one of them"):
        skiff.Trainer(_model(), resume=ck, checkpoint_dir=tmp_path / "elsewhere")
    with pytest.raises(FileNotFoundError, match="no such checkpoint"):
        skiff.Trainer(_model(), resume=tmp_path / "step-00000003.npz")
    with pytest.raises(FileNotFoundError, match="no such checkpoint folder"):
        skiff.Trainer(_model(), resume=tmp_path / "typo")
    with pytest.raises(ValueError, match="needs checkpoint_dir"):
        skiff.Trainer(_model(), resume=True)


def test_checkpoint_every_without_a_folder_warns():
    with pytest.warns(UserWarning, match="no checkpoint is written"):
        skiff.Trainer(_model(), checkpoint_every=5)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        skiff.Trainer(_model(), checkpoint_every=5, checkpoint_dir="unused")
