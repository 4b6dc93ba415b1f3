"""Round 28: a LoRA fine-tune's checkpoints hold what trains, not the frozen base.

Before, every checkpoint of a LoRA run held the whole frozen base (a tiny ERNIE: 21 frozen
arrays, the tied table twice; 118,912 bytes per checkpoint, now 24,596). The oracles: peft's
count of trainable parameters for the same adapters (what a checkpoint's weights must add up
to), and the uninterrupted run, whose losses and weights a stopped-and-resumed run must
reproduce bitwise. Resuming on another base is a clear error; a checkpoint that holds the
whole model (written before) still resumes exactly.
"""

from __future__ import annotations

import numpy as np
import pytest

from skiff.kernels.train.checkpoint import list_checkpoints, load_checkpoint
from skiff.kernels.train.core import random as train_random
from skiff.kernels.train.data import ArrayDataset
from skiff.kernels.train.models import from_pretrained
from skiff.kernels.train.models.lora import apply_lora
from skiff.kernels.train.strategy import SingleDevice
from skiff.kernels.train.trainer import Trainer

from ..models.ernie_reference import make_checkpoint

peft = pytest.importorskip("peft")

STEPS, STOP = 4, 2


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    folder = tmp_path_factory.mktemp("ernie")
    _, ref = make_checkpoint(folder, "dense-gqa-tied")
    return folder, ref


def _data():
    ids = np.random.default_rng(6).integers(3, 96, (8, 9))
    return ArrayDataset(ids[:, :-1], ids[:, 1:])


def _run(folder, ckpt, *, stop=None, resume=False):
    train_random.seed(5)  # the adapters' A is drawn: the same start in every run
    model = apply_lora(from_pretrained(folder), r=4, alpha=8)
    result = Trainer(model, lr=5e-3, batch_size=2, checkpoint_dir=ckpt, checkpoint_every=1,
                     resume=resume, seed=1,
                     callbacks=[lambda m: m["step"] == stop]).train(_data(), steps=STEPS)
    return model, result


def _weights(model):
    return {n: p.numpy().copy() for n, p in model.named_parameters()}


def test_checkpoint_holds_only_the_adapters_as_peft_counts(base, tmp_path):
    folder, ref = base
    model, _ = _run(folder, tmp_path / "ck")
    pm = peft.get_peft_model(ref, peft.LoraConfig(r=4, lora_alpha=8,
                                                  target_modules=["q_proj", "v_proj"]))
    trainable, _total = pm.get_nb_trainable_parameters()
    state = load_checkpoint(list_checkpoints(tmp_path / "ck")[-1])
    stored = sum(int(np.asarray(v).size) for v in state["model"].values())
    assert stored == trainable  # peft's count: no frozen array stored
    assert all(".lora_" in k for k in state["model"])
    assert state["frozen"]["source"] == str(folder)
    assert "model.embed_tokens.weight" in state["frozen"]["fingerprints"]


def test_resume_equals_the_uninterrupted_run(base, tmp_path):
    folder, _ = base
    whole, full = _run(folder, tmp_path / "a")
    _, first = _run(folder, tmp_path / "b", stop=STOP)
    assert first.steps == STOP
    again, second = _run(folder, tmp_path / "b", resume=True)
    assert second.resumed["from_step"] == STOP
    assert [h["loss"] for h in second.history] == [h["loss"] for h in full.history]
    want, got = _weights(whole), _weights(again)
    assert want.keys() == got.keys()
    for name in want:
        assert np.array_equal(want[name], got[name]), name


def test_resume_on_another_base_is_an_error(base, tmp_path):
    folder, _ = base
    _run(folder, tmp_path / "ck", stop=STOP)
    other, _ = make_checkpoint(tmp_path / "other", "dense-gqa-tied", seed=1)
    with pytest.raises(ValueError, match="another base.*from_pretrained"):
        _run(other, tmp_path / "ck", resume=True)


def test_whole_model_checkpoint_still_resumes(base, tmp_path, monkeypatch):
    folder, _ = base
    whole, full = _run(folder, tmp_path / "a")
    monkeypatch.setattr(SingleDevice, "frozen_base_checkpoints", False)  # as before
    _run(folder, tmp_path / "b", stop=STOP)
    old = load_checkpoint(list_checkpoints(tmp_path / "b")[-1])
    assert "frozen" not in old and "model.embed_tokens.weight" in old["model"]
    monkeypatch.undo()
    again, second = _run(folder, tmp_path / "b", resume=True)
    assert [h["loss"] for h in second.history] == [h["loss"] for h in full.history]
    for name, arr in _weights(whole).items():
        assert np.array_equal(arr, _weights(again)[name]), name


def test_load_state_dict_of_a_frozen_base_checkpoint(base, tmp_path):
    """``model.load_state_dict("step-N.npz")`` (a Trainer checkpoint, as its docstring
    promises) on a frozen-base checkpoint: the adapters load, the base is checked, not
    missing; on another base it is the resume's clear error."""
    folder, _ = base
    trained, _ = _run(folder, tmp_path / "ck")
    path = list_checkpoints(tmp_path / "ck")[-1]
    train_random.seed(99)  # other adapters until they are loaded
    fresh = apply_lora(from_pretrained(folder), r=4, alpha=8)
    report = fresh.load_state_dict(path)
    assert report["missing"] == [] and report["unexpected"] == []
    for name, arr in _weights(trained).items():
        assert np.array_equal(arr, _weights(fresh)[name]), name
    other, _ = make_checkpoint(tmp_path / "other", "dense-gqa-tied", seed=1)
    with pytest.raises(ValueError, match="another base"):
        apply_lora(from_pretrained(other), r=4, alpha=8).load_state_dict(path)
