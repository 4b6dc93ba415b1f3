"""Round 44 (h11): a Keras or Lightning user's built-in callbacks handed to the Trainer.

``Trainer(model, callbacks=[EarlyStopping(monitor="val_accuracy", patience=2, mode="max")])``
(Keras', Lightning's) was refused "a callback is a function cb(metrics) or an object with
on_step_end, on_validation_end, on_train_end; got EarlyStopping", naming nothing of what
does the same; Lightning's, which defines ``on_validation_end(trainer, pl_module)``, would
pass the check and be called with skiff's (trainer, metrics). Now one line names skiff's
setting, with the callback's own patience, monitor, mode, folder and top-k. The classes
here stand in for keras' and lightning's (neither is installed): same names, modules and
attributes as theirs; transformers' ``EarlyStoppingCallback`` is the real one.
"""

from __future__ import annotations

import numpy as np
import pytest

import skiff
from skiff import nn


def _like(module: str, name: str, hooks=(), **attrs):
    body = {h: (lambda self, *a: None) for h in hooks}
    cls = type(name, (), {"__module__": module, **body})
    cb = cls()
    for k, v in attrs.items():
        setattr(cb, k, v)
    return cb


def _refusal(cb) -> str:
    with pytest.raises(TypeError) as info:
        skiff.Trainer(nn.Linear(3, 1), callbacks=[cb])
    return str(info.value)


def test_keras_and_lightning_built_ins_name_skiffs_setting():
    keras_es = _like("keras.src.callbacks.early_stopping", "EarlyStopping",
                     ("on_epoch_end", "on_train_begin"), monitor="val_accuracy", patience=2,
                     mode="max")
    text = _refusal(keras_es)
    assert text.startswith("EarlyStopping is Keras' built-in callback"), text
    assert "Trainer(model, early_stopping=2, monitor='val_accuracy', mode='max')" in text
    # Lightning's defines on_validation_end(trainer, pl_module): not called with skiff's
    pl_es = _like("lightning.pytorch.callbacks.early_stopping", "EarlyStopping",
                  ("on_validation_end", "on_train_epoch_end"), monitor="val_loss",
                  patience=3, mode="min")
    assert "early_stopping=3, monitor='val_loss', mode='min'" in _refusal(pl_es)
    ckpt = _like("lightning.pytorch.callbacks.model_checkpoint", "ModelCheckpoint",
                 ("on_validation_end",), dirpath="ckpts", save_top_k=3, monitor="val_loss")
    assert "checkpoint_dir='ckpts', checkpoint_every='epoch', keep_best=3" in _refusal(ckpt)
    transformers = pytest.importorskip("transformers")
    hf = transformers.EarlyStoppingCallback(early_stopping_patience=4)  # the real one
    assert "transformers' built-in callback" in _refusal(hf) and "early_stopping=4" in \
        _refusal(hf)
    own = _like("lightning.pytorch.callbacks", "PrintLoss", ("on_validation_end",))
    assert "is a Lightning Callback, called as on_validation_end(trainer, pl_module)" in \
        _refusal(own)


def test_the_named_settings_run_and_a_users_own_class_of_that_name_is_called():
    x = np.random.default_rng(0).standard_normal((32, 3)).astype("f4")
    y = x @ np.ones((3, 1), "f4")
    seen = []

    class EarlyStopping:  # a user's own, with skiff's hook: called, not refused
        def on_validation_end(self, trainer, metrics):
            seen.append(metrics["val_loss"])

    trainer = skiff.Trainer(nn.Linear(3, 1), early_stopping=2, monitor="val_loss", mode="min",
                            batch_size=8, lr=0.05, callbacks=[EarlyStopping()])
    assert trainer.train((x, y), epochs=2, val_split=0.25).steps == 6  # the setting runs
    assert len(seen) == 2
