"""Ranks given different data sets (round 29). usage: same_data_r29_check.py [FOLDER]

Each case trains a 2-rank Trainer; the ranks' data differ as the case says. Prints
``RESULT {"rank", case: {"error": ...} or {"losses": [...]}}``. Errors are caught and the
next case runs: a refusal must come on every rank at once (no rank left waiting, no alarm).
"""

import json
import sys
import warnings

import numpy as np

import skiff
from skiff.kernels.train.parallel import world
from skiff.nn import Linear, ReLU, Sequential


def arrays(n, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, 3)).astype(np.float32)
    return x, (x @ np.array([1.0, -2.0, 0.5], np.float32))[:, None]


class Stream:
    """An IterableDataset (round 44 h11): 20 samples a pass, fresh noise each pass from its
    own generator; ``split``: rank r yields samples r, r + 2, ... (a stream that splits
    itself by rank, as torch users split one by the rank or the worker)."""

    def __init__(self, split=None):
        self.rng, self.split, self.passes = np.random.default_rng(5), split, 0

    def __iter__(self):
        self.passes += 1
        x, y = arrays(40)
        for i in range(40)[slice(self.split, None, 2) if self.split is not None else
                            slice(0, 20)]:
            yield x[i] + np.float32(0.3) * self.rng.standard_normal(3, np.float32), y[i]


class Varying(Stream):
    """Round 45 (h5): passes of 20, 13 and 27 samples (set_epoch'd), one epoch each."""

    def __init__(self):
        super().__init__()
        self.epoch = 0

    def set_epoch(self, epoch):
        self.epoch = epoch

    def __iter__(self):
        self.passes += 1
        x, y = arrays(40)
        for i in range([20, 13, 27][self.epoch % 3]):
            yield x[i], y[i]


def two_lrs(model):
    """Round 45 (h5): a user's AdamW of two groups, the head at a tenth of the body's lr
    and without weight decay (refused under ZeRO before); round 47 (h3): the head's betas
    its own (refused before)."""
    body = [p for n, p in model.named_parameters() if not n.startswith("2.")]
    head = [p for n, p in model.named_parameters() if n.startswith("2.")]
    return skiff.optim.AdamW([{"params": body, "lr": 0.02, "weight_decay": 0.3},
                              {"params": head, "lr": 0.002, "weight_decay": 0.0,
                               "betas": (0.8, 0.99)}])


def cosine(opt):
    """Round 47 (h3): the groups' lrs moved apart (each toward eta_min), as torch's; under
    ZeRO they followed the first group's ratio."""
    return skiff.optim.lr_scheduler.CosineAnnealingLR(opt, 8, eta_min=1e-3)


def weighted(n=64):
    """Round 45 (h5): skiff.utils.data's loader with a WeightedRandomSampler (the rows of
    y > 1 drawn 3 times as often), 50 rows an epoch without replacement: batches of 8 and a
    last of 2, one row a rank (weighed against the dataset's 64 rows before: as one of 8)."""
    from skiff.utils.data import DataLoader, TensorDataset, WeightedRandomSampler

    x, y = arrays(n)
    w = np.where(y[:, 0] > 1.0, 3.0, 1.0)
    return DataLoader(TensorDataset(skiff.tensor(x), skiff.tensor(y)), batch_size=8,
                      sampler=WeightedRandomSampler(w.tolist(), num_samples=n - 14,
                                                    replacement=False))


def run(data, val=None, epochs=1, shuffle=True, weights=False, optimizer=None, **kw):
    skiff.seed(0)
    model = Sequential(Linear(3, 16), ReLU(), Linear(16, 1))
    if optimizer is not None:
        kw["optimizer"] = optimizer(model)
    tr = skiff.Trainer(model, lr=0.01, batch_size=8, seed=0, shuffle=shuffle, **kw)
    try:
        with warnings.catch_warnings(record=True) as said:
            warnings.simplefilter("always")
            result = tr.train(data, epochs=epochs, val_dataset=val)
    except ValueError as exc:
        return {"error": str(exc)}
    out = {"losses": [h["loss"] for h in result.history], "passes": getattr(data, "passes", 0),
           "said": [str(w.message) for w in said if "streams" in str(w.message)],
           "norms": [h.get("grad_norm") for h in result.history],
           "strategy": tr.strategy.name}
    if weights:
        out["weights"] = {k: np.asarray(v, np.float64).ravel().tolist()
                          for k, v in tr.model.state_dict().items()}
    return out


def main():
    rank = world().rank
    same = arrays(64)
    folder = sys.argv[1] if len(sys.argv) > 1 else None
    saved = {} if folder is None else {"checkpoint_dir": f"{folder}/two", "checkpoint_every": 4}
    out = {"rank": rank,
           # one file per rank, of different lengths: hung after the shorter rank's epoch
           "lengths": run(arrays(64 if rank == 0 else 40, seed=rank)),
           # one file per rank of the same length: trained on half of each, silently
           "rows": run(arrays(64, seed=rank)),
           # the same training set, a validation set of each rank's own (allowed)
           "val": run(same, val=arrays(16 if rank == 0 else 12)),
           # the same data as a list of samples (no row hash: lengths only) and as arrays
           "samples": run([(a, b) for a, b in zip(*same)]),
           "clean": run(same),
           # round 44 h11: an IterableDataset on each rank, read again each epoch, and one
           # that splits itself by rank (trained on a quarter: said)
           "stream": run(Stream(), epochs=2, shuffle=False),
           "split": run(Stream(split=rank), epochs=1, shuffle=False),
           # ZeRO with biases left out of weight decay (refused before), gradients clipped
           # to a global norm the steps reach
           **{f"nodecay_{z}": run(same, weights=True, strategy=z, decay_bias_norm=False,
                                  weight_decay=0.5, clip=2.0)
              for z in ("zero1", "zero2")},
           # round 45 h5: a stream's passes of other lengths, one epoch each; ZeRO-2 with
           # a user's groups of other lrs; a WeightedRandomSampler's draw shared by the ranks
           "varying": run(Varying(), epochs=3, shuffle=False),
           # round 47 h3: its groups' betas differ and a cosine moves the lrs apart; a
           # checkpoint at step 4 resumed in one process (the test), and one written in one
           # process at step 4 resumed here
           "lrs_zero2": run(same, weights=True, strategy="zero2", optimizer=two_lrs,
                            clip=None, schedule=cosine, **saved),
           **({} if folder is None else {"resumed_zero2": run(
               same, weights=True, strategy="zero2", optimizer=two_lrs, clip=None,
               schedule=cosine, checkpoint_dir=f"{folder}/one", resume=True)}),
           "weighted": run(weighted(), epochs=2)}
    print("RESULT " + json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
