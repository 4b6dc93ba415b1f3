"""A fp16-mixed run on 2 ranks (dp or ZeRO-2) resumed in float32 (dp, ZeRO-2) or bf16-mixed
takes the stopped run's float32 masters (not their float16 rounding).

Prints per case whether the resumed weights (float32) or masters (bf16) equal the stopped
run's gathered masters exactly, and whether those differ from their float16 rounding.
"""

import json
import shutil
import tempfile

import abort_on_error  # noqa: F401
import numpy as np

import skiff
from skiff.kernels.backend.report import NullReporter
from skiff.kernels.train.parallel import world
from skiff.kernels.train.parallel.data_parallel import ZeRO
from skiff.nn import Linear, ReLU, Sequential


class Ranks(NullReporter):
    world_size = 2


def gathered(trainer, masters):
    """Full float32 arrays by name: the masters (mixed) or the weights (float32)."""
    st = trainer.strategy
    if isinstance(st, ZeRO):
        if masters:
            for q in st.params:
                q._data = q._data.astype(np.float32)
            st.gather_params()
        return {n: np.asarray(q._data, np.float32).copy() for n, q in zip(st.names, st.params)}
    if masters:
        return {n: m.numpy().copy() for n, m in zip(st.names, trainer.mixed.master)}
    return {n: p.numpy().copy() for n, p in trainer.model.named_parameters()}


def main():
    comm = world()
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 8)).astype(np.float32)
    y = (x.sum(1) > 0).astype(np.int64)
    out = {"rank": comm.rank}
    for writer, reader, precision in (("dp", "dp", "32"), ("zero2", "zero2", "32"),
                                      ("zero2", "dp", "32"), ("dp", "zero2", "bf16-mixed")):
        folder = comm.bcast_object(tempfile.mkdtemp() if comm.rank == 0 else None)
        runs = []
        for seed, kind, prec in ((0, writer, "fp16-mixed"), (1, reader, precision)):
            skiff.seed(seed)
            trainer = skiff.Trainer(Sequential(Linear(8, 32), ReLU(), Linear(32, 2)),
                                    strategy=kind, precision=prec, batch_size=16, lr=1e-2,
                                    reporter=Ranks(), checkpoint_dir=folder,
                                    resume=seed == 1)
            trainer.train((x, y), steps=3)
            runs.append(gathered(trainer, prec != "32"))
        want, got = runs
        comm.barrier()
        if comm.rank == 0:
            shutil.rmtree(folder, ignore_errors=True)
        out[f"{writer}>{reader}:{precision}"] = {
            "exact": sorted(got) == sorted(want) and all(np.array_equal(got[k], want[k])
                                                         for k in want),
            "rounding_differs": any(not np.array_equal(
                w.astype(np.float16).astype(np.float32), w) for w in want.values())}
    print("RESULT " + json.dumps(out), flush=True)


main()
