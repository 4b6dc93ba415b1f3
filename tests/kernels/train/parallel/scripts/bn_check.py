"""A CNN with BatchNorm trained with ``strategy="auto"`` on 2 ranks against torch run as
``DistributedDataParallel`` runs it (each rank normalises its own rows, gradients averaged),
with the ranks' running statistics averaged after each step. The convolution has no bias:
before BatchNorm its gradient is zero in exact arithmetic, and Adam turns the rounding noise
into full steps that move the running mean (4e-3 apart between float32 and float64).

Prints the first weights, the step losses, the running mean and variance and the
predictions of the trained model (which must be the same on both ranks); the test runs the
torch emulation in its own process (round 39: torch imported in each rank cost ~1.8 CPU s).
"""

import json

import numpy as np

import skiff
from skiff.nn import BatchNorm2d, Conv2d, Flatten, Linear, MaxPool2d, ReLU, Sequential


def data():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((32, 1, 8, 8)).astype(np.float32)
    return x, (x.sum(axis=(1, 2, 3)) > 0).astype(np.int64)


def main():
    import abort_on_error  # noqa: F401
    from mpi4py import MPI

    x, y = data()
    skiff.seed(0)
    model = Sequential(Conv2d(1, 4, 3, bias=False), BatchNorm2d(4), ReLU(), MaxPool2d(2),
                       Flatten(), Linear(36, 2))
    init = {k: np.asarray(v, np.float64).tolist() for k, v in model.state_dict().items()}
    trainer = skiff.Trainer(model, strategy="auto", batch_size=16, shuffle=False,
                            schedule="constant", clip=None, lr=1e-2)
    result = trainer.train((x, y), epochs=2)
    state = trainer.model.state_dict()
    print("RESULT " + json.dumps({
        "rank": MPI.COMM_WORLD.rank, "world": trainer.strategy.world_size, "init": init,
        "losses": [r["loss"] for r in result.history],
        "running_mean": np.asarray(state["1.running_mean"], np.float64).tolist(),
        "running_var": np.asarray(state["1.running_var"], np.float64).tolist(),
        "predict": np.asarray(trainer.predict(x[:4])).ravel().tolist()}), flush=True)


if __name__ == "__main__":
    main()
