"""fp16-mixed GPT under tensor and pipeline parallel (2 ranks) against one device with the
same micro-batches, near the top of the loss scale, and train() called twice.

Each run trains 1 step, its scale is then set to 2^22 (where a long run's scaler, doubling
every 2000 good steps, gets to), and trains 8 more steps in a second train(): the steps
skipped for overflow, the losses and the final scale. Before round 27 a second train() under
tensor parallel split the split model again (IndexError), and the pipeline's last stage took
the cross-entropy of float16 logits, so it overflowed at scales one device takes (6 steps
skipped against 3).
"""

import json

import abort_on_error  # noqa: F401
import numpy as np
from mpi4py import MPI

import skiff
from skiff.kernels.backend.report import NullReporter
from skiff.kernels.train.models.gpt import GPT, GPTConfig
from skiff.kernels.train.parallel import Layout
from skiff.kernels.train.parallel.hybrid import TensorParallel
from skiff.kernels.train.parallel.pipeline import PipelineParallel

CFG = GPTConfig(block_size=8, vocab_size=32, n_layer=2, n_head=4, n_embd=16)


class Reporter(NullReporter):
    def __init__(self, ranks):
        self.world_size, self.skipped = ranks, []

    def log(self, message, *, level="info"):
        if " skipped: gradients overflowed" in message:
            self.skipped.append(int(message.split()[1]))


def main():
    rng = np.random.default_rng(1)
    x = rng.integers(0, 32, (32, 8))
    data = (x, np.roll(x, -1, axis=1))
    out = {"rank": MPI.COMM_WORLD.rank}
    for kind in ("single", "tp", "pp"):
        skiff.seed(0)
        strategy = {"single": lambda: "single", "tp": lambda: TensorParallel(Layout(tp=2)),
                    "pp": lambda: PipelineParallel(Layout(pp=2), micro_batches=2)}[kind]()
        # one device runs the pipeline's 2 micro-batches as accumulation (tp: the same step)
        kw = dict(batch_size=4, grad_accum=2) if kind == "single" else dict(batch_size=8)
        rep = Reporter(1 if kind == "single" else 2)
        trainer = skiff.Trainer(GPT(CFG), strategy=strategy, precision="fp16-mixed",
                                optimizer="sgd", lr=0.05, schedule="constant", shuffle=False,
                                reporter=rep, **kw)
        first = trainer.train(data, steps=1).history[0]["loss"]
        trainer.mixed.scaler.scale_value = 2.0 ** 22
        result = trainer.train(data, steps=8)
        out[kind] = {"skipped": rep.skipped, "scale": trainer.mixed.loss_scale,
                     "losses": [first] + [r["loss"] for r in result.history]}
    print("RESULT " + json.dumps(out), flush=True)


main()
