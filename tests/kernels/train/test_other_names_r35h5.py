"""Round 35 (h5): the names other libraries give the Trainer's settings say skiff's.

``Trainer(model, accumulate_grad_batches=2)`` (Lightning), ``learning_rate=`` and
``gradient_accumulation_steps=`` (transformers), ``train(data, max_epochs=3)`` were
Python's bare "unexpected keyword argument"; ``precision="16-mixed"`` (Lightning's name of
fp16 mixed precision) was "unknown precision". Each now names skiff's setting and where it
goes (the Trainer or ``train``). The oracle for the aliases: the run with skiff's own name,
loss for loss."""

from __future__ import annotations

import numpy as np
import pytest

import skiff


def _model():
    skiff.seed(0)
    return skiff.nn.Sequential(skiff.nn.Linear(4, 2))


def _data():
    x = np.random.default_rng(0).standard_normal((40, 4)).astype(np.float32)
    return x, (x[:, 0] > 0).astype(np.int64)


@pytest.mark.parametrize("name, ours", [
    ("accumulate_grad_batches", "Trainer(model, grad_accum=...)"),
    ("gradient_accumulation_steps", "Trainer(model, grad_accum=...)"),
    ("learning_rate", "Trainer(model, lr=...)"),
    ("gradient_clip_val", "Trainer(model, clip=...)"),
    ("resume_from_checkpoint", "Trainer(model, resume=...)"),
    ("fp16", "Trainer(model, precision='fp16-mixed')"),
])
def test_a_settings_other_name(name, ours):
    with pytest.raises(TypeError, match=f"'{name}' \\(did you mean .*another library's "
                                        f"name: {ours.replace('(', '.').replace(')', '.')}"):
        skiff.Trainer(_model(), **{name: 1})


@pytest.mark.parametrize("name, ours", [("max_epochs", "epochs"), ("max_steps", "steps"),
                                        ("num_train_epochs", "epochs"),
                                        ("eval_dataset", "val_dataset")])
def test_a_train_arguments_other_name(name, ours):
    with pytest.raises(TypeError, match=f"did you mean '{ours}'\\? another library's name: "
                                        f"trainer.train.data, {ours}="):
        skiff.Trainer(_model()).train(_data(), **{name: 2})


def test_given_to_the_wrong_call():
    with pytest.raises(TypeError, match="'max_epochs' \\(did you mean 'epochs'\\? another "
                                        "library's name: it is given to train\\(\\)"):
        skiff.Trainer(_model(), max_epochs=3)
    with pytest.raises(TypeError, match="'epochs' \\(it is given to train\\(\\)"):
        skiff.Trainer(_model(), epochs=3)
    with pytest.raises(TypeError, match="'learning_rate'.*it is a setting of the Trainer"):
        skiff.Trainer(_model()).train(_data(), learning_rate=0.1)
    with pytest.raises(TypeError, match="'batchsize' \\(did you mean 'batch_size'\\?\\)"):
        skiff.Trainer(_model(), batchsize=8)


@pytest.mark.parametrize("lightning, ours", [("16-mixed", "fp16-mixed"), ("16", "fp16-mixed"),
                                             ("32-true", "32")])
def test_lightnings_precision_names(lightning, ours):
    def losses(p):
        r = skiff.Trainer(_model(), precision=p, batch_size=8).train(_data(), steps=3)
        return [h["loss"] for h in r.history]

    assert losses(lightning) == losses(ours)
    assert skiff.Trainer(_model(), precision=lightning).precision == ours
