"""Round 39 (h5): a stateful callback (``state_dict``/``load_state_dict``) resumed at another
place in ``callbacks=[...]`` keeps its state, and one that cannot is said in a script.

A user's script ran ``callbacks=[print_progress, ema]`` and, resumed, ``callbacks=[ema]``
(the printer dropped): the state was kept under "1:EMA" and looked for under "0:EMA", so the
EMA started again from the resumed weights, silently (the "start afresh" line went to the
script's NullReporter, nowhere). Now the one callback of a class takes the one state kept for
that class (Lightning's ``state_key`` is the class's name), and a state that is still not
found is a ``UserWarning`` in a script. Oracle: a counter of optimizer steps, which a whole
run of N steps ends at N."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import skiff
from skiff import nn

rng = np.random.default_rng(0)
X = rng.normal(size=(32, 5)).astype("f4")
Y = (X[:, 0] > 0).astype("i8")


class Steps:
    """Counts the optimizer steps it saw; kept across a resume."""

    def __init__(self):
        self.n = 0

    def on_step_end(self, trainer, metrics):
        self.n += 1

    def state_dict(self):
        return {"n": self.n}

    def load_state_dict(self, state):
        self.n = int(np.asarray(state["n"]))


def _run(folder, steps, callbacks, resume=False):
    skiff.seed(0)
    model = nn.Sequential(nn.Linear(5, 4), nn.ReLU(), nn.Linear(4, 2))
    skiff.Trainer(model, batch_size=8, callbacks=callbacks, checkpoint_dir=folder,
                  resume=resume).train((X, Y), steps=steps)


def test_a_stateful_callback_moved_in_the_list_keeps_its_state(tmp_path):
    _run(tmp_path, 3, [lambda m: None, Steps()])
    moved = Steps()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing started afresh: nothing to warn
        _run(tmp_path, 7, [moved], resume=True)
    assert moved.n == 7  # 3 before the cut, 4 after (4 before: the count restarted)
    back = Steps()
    _run(tmp_path, 9, [lambda m: None, lambda m: None, back], resume=True)
    assert back.n == 9


def test_a_state_not_found_is_said_in_a_script(tmp_path):
    _run(tmp_path, 3, [])
    with pytest.warns(UserWarning, match=r"the checkpoint holds no state of callback\(s\) "
                                         r"0:Steps: they start afresh"):
        _run(tmp_path, 5, [Steps()], resume=True)


def test_two_of_one_class_are_told_apart_by_place_only(tmp_path):
    """Several callbacks of one class: a state goes by place (as before), never by class
    (the one left over is not handed to the other: which was which is not known)."""
    a, b = Steps(), Steps()
    _run(tmp_path, 3, [a, b])
    c, d = Steps(), Steps()
    with pytest.warns(UserWarning, match="start afresh"):
        _run(tmp_path, 5, [lambda m: None, c, d], resume=True)
    assert (c.n, d.n) == (3 + 2, 2)  # c at b's place "1:Steps"; d afresh, not given a's
