"""Each job and each Trainer owns its random generator (issue 15.12): two thread jobs with
the same seed, run at once in one process, end as either alone; the generator's state is in
the checkpoints."""

import threading

import numpy as np

from skiff.jobs import submit
from skiff.kernels.train.core import random as train_random
from skiff.kernels.train.core.nn import Dropout, Linear, ReLU, Sequential
from skiff.kernels.train.trainer import Trainer

# random init and dropout: both draw from the generator on every step
CELL = """
rng = np.random.default_rng(5)
X = rng.standard_normal((256, 8)).astype("f4")
y = (X[:, 0] + X[:, 1] > 0).astype("i8")
model = skiff.nn.Sequential(skiff.nn.Linear(8, 64), skiff.nn.ReLU(), skiff.nn.Dropout(0.5),
                            skiff.nn.Linear(64, 64), skiff.nn.ReLU(), skiff.nn.Dropout(0.5),
                            skiff.nn.Linear(64, 2))
dataset = (X, y)
"""


def _job():
    job, _ = submit("train", "--steps 60 --batch-size 16 --seed 11 --device cpu --runner thread",
                    cell=CELL, user_ns={})
    return job


def _final(job):
    job.wait(120, raise_on_error=True)
    return [row["loss"] for row in job.value.history]


def test_two_thread_jobs_with_one_seed_match_either_alone():
    alone = _final(_job())
    a, b = _job(), _job()           # at once, on two threads of this process
    # meanwhile this thread draws from the process-wide generator too
    for _ in range(200):
        train_random.get_generator().random(64)
    assert _final(a) == alone
    assert _final(b) == alone


def test_a_trainer_owns_its_generator_and_checkpoints_it(tmp_path):
    X = np.random.default_rng(0).standard_normal((64, 4)).astype("f4")
    y = (X[:, 0] > 0).astype("i8")

    def trainer(**kw):
        with train_random.using(train_random.new_generator(1)):
            model = Sequential(Linear(4, 16), ReLU(), Dropout(0.5), Linear(16, 2))
        return Trainer(model, lr=1e-2, batch_size=16, seed=4, device="cpu", **kw)

    ref = trainer().train((X, y), steps=6)
    stop = threading.Event()

    def noise():                    # another thread drawing from the process-wide generator
        while not stop.is_set():
            train_random.get_generator().random(8)

    t = threading.Thread(target=noise)
    t.start()
    try:
        t1 = trainer(checkpoint_dir=tmp_path, checkpoint_every=3)
        again = t1.train((X, y), steps=6)
    finally:
        stop.set()
        t.join()
    assert [r["loss"] for r in again.history] == [r["loss"] for r in ref.history]
    # the checkpoint holds the trainer's own generator state, not the process-wide one
    from skiff.kernels.train.checkpoint import load_latest

    _, state = load_latest(tmp_path)
    assert state["rng"]["train"] == t1.rng.bit_generator.state
    assert state["rng"]["train"] != train_random.get_state()
