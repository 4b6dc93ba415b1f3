"""Round 29: ranks given different data sets are refused on every rank before the first step.

Found as a user: a torch habit is one file per rank (``data_rank{r}.npz``) without a sampler.
Passed to ``Trainer.train`` under ``mpiexec -n 2``, files of 64 and 40 rows hung after rank
1's 5 steps (rank 0 waited in the all-reduce of step 6 until the kill); files of the same
length trained without a word on the even rows of rank 0's file and the odd rows of rank
1's. The Trainer shards every batch of the dataset it is given (as DistributedSampler
does), so every rank must pass the whole, same data; ``parallel/same_data.py`` checks the
lengths and, for arrays, a hash of 16 rows, and fails on every rank at once, naming each
rank's size and what to do. The oracle for the runs that must still train (the same data as
arrays and as a list of samples; validation sets of each rank's own, which round 28 allows)
is one process.
"""

from __future__ import annotations

import sys

import numpy as np
import pytest

from .mpi_util import HERE, run_mpi

sys.path.insert(0, str(HERE / "scripts"))
from same_data_r29_check import Stream, Varying, arrays, cosine, two_lrs, weighted  # noqa: E402


def _one_process(data=None, epochs=1, shuffle=True, trained=False, optimizer=None, **kw):
    import skiff
    from skiff.nn import Linear, ReLU, Sequential

    skiff.seed(0)
    model = Sequential(Linear(3, 16), ReLU(), Linear(16, 1))
    if optimizer is not None:
        kw["optimizer"] = optimizer(model)
    tr = skiff.Trainer(model, lr=0.01, batch_size=8, seed=0, shuffle=shuffle, **kw)
    history = tr.train(arrays(64) if data is None else data, epochs=epochs).history
    if trained:
        return history, {k: np.asarray(v, np.float64).ravel()
                         for k, v in tr.model.state_dict().items()}
    return [h["loss"] for h in history]


@pytest.mark.mpi
def test_ranks_with_different_data_are_refused_on_every_rank(tmp_path):
    # round 47 h3: a ZeRO checkpoint written in one process at step 4, resumed on 2 ranks
    from skiff.kernels.train.parallel import SelfComm
    from skiff.kernels.train.parallel.data_parallel import ZeRO

    _one_process(strategy=ZeRO(2, SelfComm()), optimizer=two_lrs, clip=None, schedule=cosine,
                 checkpoint_dir=tmp_path / "one", checkpoint_every=4,
                 callbacks=[lambda m: m["step"] >= 4])
    results = run_mpi(2, "same_data_r29_check.py", str(tmp_path), timeout=90)
    for case in ("lengths", "rows"):
        errors = [r[case].get("error") for r in results]
        assert errors[0] is not None and errors[0] == errors[1], (case, results)
    lengths = results[0]["lengths"]["error"]
    assert "training sets of different sizes (rank 0: 64, rank 1: 40 items)" in lengths
    assert "whole data set" in lengths
    assert "different training sets of the same size (64 items each" in \
        results[0]["rows"]["error"]
    assert all("losses" in r["val"] for r in results), results  # each rank's own val set
    want = _one_process()
    for r in results:
        for case in ("samples", "clean"):
            np.testing.assert_allclose(r[case]["losses"], want, rtol=1e-5, err_msg=case)
    # round 44 h11: an IterableDataset under dp, each rank reading every pass (2 epochs, a
    # pass each, fresh noise each) and taking its share: one process's losses
    ds = Stream()
    want = _one_process(ds, epochs=2, shuffle=False)
    assert ds.passes == 2 and [r["stream"]["passes"] for r in results] == [2, 2], results
    for r in results:
        np.testing.assert_allclose(r["stream"]["losses"], want, rtol=1e-5)
        assert r["stream"]["said"] == [], r
    # a stream that splits itself by rank: said on rank 0 (it trains on a quarter)
    split = results[0]["split"]["said"]
    assert len(split) == 1 and "streams yielded different samples (20 each; rank 0 | " \
        "rank 1)" in split[0] and "1/2 of each rank's part" in split[0], results
    assert results[1]["split"]["said"] == []
    # ZeRO-1/2 with decay_bias_norm=False (refused before: one flat group): the weights
    # of one process's two AdamW groups (h5: equal torch's to 1e-12); the clip's
    # global norms (the ranks' shares summed) are one process's and the clip acts (> 2)
    history, weights = _one_process(trained=True, decay_bias_norm=False, weight_decay=0.5,
                                    clip=2.0)
    norms = [h["grad_norm"] for h in history]
    assert max(norms) > 2.0
    for r in results:
        for z in ("zero1", "zero2"):
            got = r[f"nodecay_{z}"]
            assert got.get("strategy") == z, (z, got)
            np.testing.assert_allclose(got["norms"], norms, rtol=1e-5, err_msg=z)
            np.testing.assert_allclose(got["losses"], [h["loss"] for h in history],
                                       rtol=1e-5, err_msg=z)
            for k, w in weights.items():
                np.testing.assert_allclose(got["weights"][k], w, rtol=0, atol=2e-6,
                                           err_msg=f"{z} {k}")
    # round 45 h5: a stream whose passes differ in length (20, 13, 27 samples: 3, 2 and 4
    # steps), one epoch each on every rank; ZeRO-2 with a user's AdamW groups of other lrs
    # (refused before) and a WeightedRandomSampler's draw: one process's. Round 47 h3: the
    # groups' betas differ and a cosine to eta_min moves their lrs apart (one process's two
    # groups equal torch's: parallel/test_zero_groups_r47h3.py); the 2 ranks' checkpoint
    # of step 4 resumed in one process (ZeRO on 1 rank), and one process's on 2 ranks, end
    # on the same weights
    want = _one_process(Varying(), epochs=3, shuffle=False)
    assert len(want) == 9
    history, weights = _one_process(trained=True, optimizer=two_lrs, clip=None,
                                    schedule=cosine)
    drawn = _one_process(weighted(), epochs=2)
    import shutil

    shutil.rmtree(tmp_path / "two" / "step-00000008")  # resume from step 4
    back, resumed = _one_process(trained=True, strategy=ZeRO(2, SelfComm()), optimizer=two_lrs,
                                 clip=None, schedule=cosine, checkpoint_dir=tmp_path / "two",
                                 resume=True)
    # steps 1-4 read back from the 2 ranks' checkpoint as they logged them
    assert [h["loss"] for h in back[:4]] == results[0]["lrs_zero2"]["losses"][:4]
    for k, w in weights.items():
        np.testing.assert_allclose(resumed[k], w, rtol=0, atol=2e-6, err_msg=f"2 -> 1 {k}")
    for r in results:
        np.testing.assert_allclose(r["varying"]["losses"], want, rtol=1e-5)
        got = r["lrs_zero2"]
        assert got.get("strategy") == "zero2", got
        np.testing.assert_allclose(got["losses"], [h["loss"] for h in history], rtol=1e-5)
        for k, w in weights.items():
            np.testing.assert_allclose(got["weights"][k], w, rtol=0, atol=2e-6, err_msg=k)
            np.testing.assert_allclose(r["resumed_zero2"]["weights"][k], w, rtol=0, atol=2e-6,
                                       err_msg=f"1 -> 2 {k}")
        # steps 1-4 read back from one process's checkpoint, 5-8 stepped on 2 ranks
        assert r["resumed_zero2"]["losses"][:4] == [h["loss"] for h in history[:4]]
        np.testing.assert_allclose(r["resumed_zero2"]["losses"], [h["loss"] for h in history],
                                   rtol=1e-5)
        np.testing.assert_allclose(r["weighted"]["losses"], drawn, rtol=1e-5)
