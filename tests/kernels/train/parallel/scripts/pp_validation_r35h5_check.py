"""gpt-mini under pp on 2 ranks, 3 one-step epochs with a validation set validated after each
epoch, and in one process an evaluator (at the start and the end; round 35): each rank prints
its validation losses. (No ``eval_every``: since round 40 it sets when validation runs too, the
N-th steps of the run and the last, as transformers' eval_steps.)

usage: pp_validation_r35h5_check.py STRATEGY[,STRATEGY] DIR (single: rank 0 alone;
each rank's results in DIR/rank<r>.json)"""

import sys

import abort_on_error  # noqa: F401
import numpy as np
from one_launch import run_cases  # noqa: E402

from skiff.kernels.train import models
from skiff.kernels.train.core import random as train_random
from skiff.kernels.train.data import ArrayDataset
from skiff.kernels.train.trainer import Trainer


def run(strategy):
    train_random.seed(5)
    model = models.get("gpt-mini")
    rng = np.random.default_rng(6)
    ids, held = rng.integers(3, 60, (8, 17)), rng.integers(3, 60, (5, 17))

    def evaluator(m):  # a user's held-out metric: the whole model's loss on the held rows
        from skiff.kernels.train.core.tensor import Tensor, no_grad

        with no_grad():
            logits = np.asarray(m(Tensor(held[:, :-1])).numpy(), dtype=np.float64)
        z = logits - logits.max(-1, keepdims=True)
        logp = z - np.log(np.exp(z).sum(-1, keepdims=True))
        picked = np.take_along_axis(logp, held[:, 1:, None], -1)
        return {"held": float(-picked.mean())}

    seen = []

    class Mine:  # a user's callback that evaluates and predicts during the run
        def on_validation_end(self, trainer, metrics):
            for call in (lambda: trainer.evaluate(ArrayDataset(held[:, :-1], held[:, 1:])),
                         lambda: trainer.predict(held[:, :-1])):
                try:
                    out = call()
                    seen.append(float(out["val_loss"]) if isinstance(out, dict) else
                                float(np.asarray(out, np.float64).sum()))
                except ValueError as exc:
                    seen.append(str(exc))

    # the evaluator only in one process: pp refuses it (test_ernie_eval.py), see the test
    extra = {"evaluator": evaluator} if strategy == "single" else {}
    trainer = Trainer(model, strategy=strategy, lr=3e-3, batch_size=8, seed=1,
                      callbacks=[Mine()], **extra)
    result = trainer.train(ArrayDataset(ids[:, :-1], ids[:, 1:]), epochs=3,
                           val_dataset=ArrayDataset(held[:, :-1], held[:, 1:]))
    return {"loss": [h["loss"] for h in result.history],
            "val_loss": [v["val_loss"] for v in result.val_history],
            "evaluation": result.evaluation, "callback": seen}


if __name__ == "__main__":  # CASE[,CASE]: one launch (round 43 h5)
    run_cases(run, sys.argv[1].split(","), sys.argv[2])
