"""A %train cell run again while its job still trains the same notebook model (round 45, h10).

A newcomer re-running notebook 02's `%train model train_data ...` cell started a second
thread job on the same object: both trained it at once and one failed with
"AttributeError: 'NoneType' object has no attribute 'dtype'" (the other had cleared its
gradients). The second launch is refused at once and says which job holds the model; once
that job has ended the same line trains again."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from IPython.core.error import UsageError


@pytest.fixture
def shell(runs_dir):
    from IPython.core.interactiveshell import InteractiveShell

    ip = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "skiff")
    yield ip
    InteractiveShell.clear_instance()


def test_second_train_of_a_training_model_is_refused(shell):
    from skiff import nn

    rng = np.random.default_rng(0)
    X = rng.standard_normal((64, 4)).astype(np.float32)
    entered, gate = threading.Event(), threading.Event()

    class Held(nn.Module):  # its first forward waits until the test has tried again
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(4, 2)

        def forward(self, x):
            entered.set()
            gate.wait(30)
            return self.lin(x)

    shell.user_ns.update(net=Held(), X=X, y=(X[:, 0] > 0).astype(np.int64))
    first = shell.run_line_magic("train", "net (X, y) --steps 2 --batch-size 32")
    assert entered.wait(30)  # the first job is training (not racing its thread's start)
    try:
        with pytest.raises(UsageError, match=rf"MODEL 'net' is being trained by job "
                                             rf"{first.id}, still running"):
            shell.run_line_magic("train", "net (X, y) --steps 2 --batch-size 32")
    finally:
        gate.set()
    first.wait(60)
    assert first.status == "done", first.error
    again = shell.run_line_magic("train", "net (X, y) --steps 2 --batch-size 32")
    again.wait(60)
    assert again.status == "done", again.error
