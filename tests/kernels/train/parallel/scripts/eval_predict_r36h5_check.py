"""gpt-mini on 1 or 2 ranks (round 36): 3 steps with an evaluator every 2 steps (not under
tp: a GPT split by tp gives no whole copy), then ``trainer.evaluate`` and
``trainer.predict`` on every rank after ``train()``; each rank prints what it got.

usage: eval_predict_r36h5_check.py STRATEGY[,STRATEGY] DIR (single: rank 0 alone;
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

    def evaluator(m):  # a user's held-out metric: the whole model's logits on the held rows
        from skiff.kernels.train.core.tensor import Tensor, no_grad

        with no_grad():
            logits = np.asarray(m(Tensor(held[:, :-1])).numpy(), dtype=np.float64)
        return {"logits_sum": float(logits.sum()), "logits_sq": float((logits ** 2).sum())}

    extra = {} if strategy == "tp" else {"evaluator": evaluator, "eval_every": 2}
    trainer = Trainer(model, strategy=strategy, lr=3e-3, batch_size=8, seed=1, **extra)
    result = trainer.train(ArrayDataset(ids[:, :-1], ids[:, 1:]), epochs=3)
    out = np.asarray(trainer.predict(held[:, :-1]), np.float64)
    z = out - out.max(-1, keepdims=True)  # numpy's cross-entropy of the predicted logits
    logp = z - np.log(np.exp(z).sum(-1, keepdims=True))
    # a digest, not the 20,480 logits: the ranks' long lines interleave on mpiexec's pipe
    return {"loss": [h["loss"] for h in result.history], "evaluation": result.evaluation,
            "evaluate": trainer.evaluate(ArrayDataset(held[:, :-1], held[:, 1:]))["val_loss"],
            "shape": list(out.shape), "sum": float(out.sum()),
            "sq": float((out ** 2).sum()), "row": out[2, 5, ::8].tolist(),
            "ce_of_predict": float(-np.take_along_axis(logp, held[:, 1:, None], -1).mean())}


if __name__ == "__main__":  # CASE[,CASE]: one launch (round 43 h5)
    run_cases(run, sys.argv[1].split(","), sys.argv[2])
