"""Round 37 (h5): callbacks written for another library.

A Lightning callback's ``on_train_epoch_end(trainer, pl_module)`` was silently never called
(its ``on_train_end`` was, with the result as ``pl_module``); a transformers
``TrainerCallback`` failed at the first step, "on_step_end() missing 1 required positional
argument: 'control'"; a Keras ``on_epoch_end(epoch, logs)`` object was "a callback is a
function ... got K", with no word of which hook skiff calls instead. The oracle: the hook
names and call signatures those libraries publish (transformers' own ``TrainerCallback``
class here; Lightning and Keras are not installed, so plain classes with their hooks)."""

from __future__ import annotations

import re

import numpy as np
import pytest
from transformers import TrainerCallback

import skiff
from skiff import nn


def _data():
    x = np.random.default_rng(0).normal(size=(16, 3)).astype("f4")
    return x, x[:, :1] * 2


class KerasStyle:
    def on_epoch_end(self, epoch, logs=None):
        pass


class LightningStyle:
    def __init__(self):
        self.ends = []

    def on_train_epoch_end(self, trainer, pl_module):
        pass

    def on_train_end(self, trainer, pl_module):  # skiff's name too: called with the result
        self.ends.append(pl_module)


class HFStyle(TrainerCallback):
    def on_step_end(self, args, state, control, **kwargs):
        pass


def test_a_keras_callback_is_told_skiffs_hook():
    with pytest.raises(TypeError, match=r"got KerasStyle \(on_epoch_end is Keras' and "
                                        r"transformers' hook, skiff's is on_validation_end"):
        skiff.Trainer(nn.Linear(3, 1), callbacks=[KerasStyle()])
    with pytest.raises(TypeError, match="on_epoch_end is Keras'"):  # one object, no list
        skiff.Trainer(nn.Linear(3, 1), callbacks=KerasStyle())


def test_a_lightning_hook_never_called_is_said():
    cb = LightningStyle()
    with pytest.warns(UserWarning, match=r"LightningStyle's other hooks are never called: "
                                         r"on_train_epoch_end is Lightning's hook"):
        trainer = skiff.Trainer(nn.Linear(3, 1), batch_size=8, callbacks=[cb])
    result = trainer.train(_data(), epochs=1)
    assert cb.ends == [result]


def test_a_transformers_callback_is_refused_before_the_run():
    with pytest.raises(TypeError, match=r"HFStyle is a transformers TrainerCallback, called "
                                        r"as on_step_end\(args, state, control\)"):
        skiff.Trainer(nn.Linear(3, 1), callbacks=[HFStyle()])


def test_skiffs_own_hooks_and_functions_still_pass_quietly(recwarn):
    seen = []

    class Own:
        def on_validation_end(self, trainer, metrics):
            seen.append(metrics["step"])

    x, y = _data()
    skiff.Trainer(nn.Linear(3, 1), batch_size=8, callbacks=[Own(), lambda m: None]).train(
        (x, y), epochs=2, val_dataset=(x, y))
    assert seen == [2, 4]
    assert not [w for w in recwarn if "never called" in str(w.message)]


@pytest.mark.parametrize("name, ours", [("fit", "trainer.train(data, epochs=..., "),
                                        ("validate", "trainer.evaluate(data)"),
                                        ("tune", "trainer.lr_find(data)")])
def test_other_libraries_methods_name_skiffs(name, ours):
    """``trainer.fit(...)`` (Lightning's, Keras') was a bare AttributeError."""
    trainer = skiff.Trainer(nn.Linear(3, 1))
    with pytest.raises(AttributeError, match=rf"has no attribute '{name}' \(.* {name}; "
                                             rf"skiff's: {re.escape(ours)}"):
        getattr(trainer, name)
    with pytest.raises(AttributeError, match=r"no attribute 'fitt'$"):
        trainer.fitt  # noqa: B018 - any other name: the plain error
    assert not hasattr(trainer, name) and hasattr(trainer, "train")
