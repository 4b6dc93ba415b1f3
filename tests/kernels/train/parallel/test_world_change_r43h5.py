"""Round 43 (h5): resuming on another world size, one launch of 2 ranks
(``scripts/world_change_r43h5_check.py``).

* One process's checkpoint (``step-N.npz``) resumed under the dp x tp layout
  (``TensorParallel(Layout(dp=2, tp=1))``): its reader, now shared with dp's
  (``relayout.read_one_process``), had never run. Oracle: a torch loop (float64) of the same
  GPT from the same first weights, SGD with momentum.
* numpy's, Python's and torch's global generators (a dataset's augmentations) are kept per
  process (round 42 h13) and cannot be put back on another world size: 1 -> 2 and 2 -> 1
  went on from the script's seeds silently, the reshard line even saying "RNG restored".
  Now a line says it (transformers: "reproducibility is not guaranteed").
"""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

from .mpi_util import run_mpi

torch = pytest.importorskip("torch")


@pytest.fixture(scope="module")
def launched(tmp_path_factory):
    root = tmp_path_factory.mktemp("world_change")
    run_mpi(2, "world_change_r43h5_check.py", root, timeout=240)
    return root, [json.loads((root / f"rank{r}.json").read_text()) for r in (0, 1)]


def _torch_losses(init):
    from .test_optimizer_split_r41h9 import V, _tokens, _TorchGPT

    tm = _TorchGPT().double()
    tm.load_state_dict({k: torch.tensor(np.asarray(v, np.float64)) for k, v in init.items()})
    opt = torch.optim.SGD(tm.parameters(), lr=0.05, momentum=0.9)
    x, y = (torch.tensor(a) for a in _tokens())
    losses = []
    for _ in range(2):
        for i in range(0, len(x), 8):
            loss = torch.nn.functional.cross_entropy(tm(x[i:i + 8]).reshape(-1, V),
                                                     y[i:i + 8].reshape(-1))
            loss.backward()
            opt.step()
            opt.zero_grad()
            losses.append(loss.item())
    return np.array(losses)


@pytest.mark.mpi
def test_one_process_checkpoint_resumes_under_dp_x_tp(launched):
    root, ranks = launched
    want = _torch_losses(dict(np.load(root / "init.npz")))
    for res in ranks:
        assert res["from_step"] == 5
        got = np.array(res["losses"])
        assert got.shape == want.shape
        assert np.abs(got - want).max() < 2e-5, (got, want)  # steps 6-8 by dp x tp
        lines = "\n".join(res["lines"])
        assert "step-00000005.npz was written by one process: read on 2 ranks" in lines
        # 1 -> 2: the one process's global generators are not put back, and it is said
        assert "warning: the global random generators (numpy's, Python's, torch's) were " \
               "saved on one process, one per process, and are not put back on 2 ranks" \
               in lines, lines
    assert ranks[0]["losses"] == ranks[1]["losses"]


@pytest.mark.mpi
def test_two_ranks_generators_on_one_process_are_said(launched):
    """dp on 2 ranks, augmentations from the global generators, cut at step 3, resumed in
    one process (this one): the run goes on, and says its augmentations are drawn afresh."""
    import random

    import skiff

    from ..flips_data import Flips

    root, _ = launched
    np.random.seed(7)
    random.seed(7)
    skiff.seed(0)
    m = skiff.nn.Sequential(skiff.nn.Conv2d(1, 2, 3, padding=1), skiff.nn.ReLU(),
                            skiff.nn.Flatten(), skiff.nn.Linear(72, 2))
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        r = skiff.Trainer(m, strategy="single", lr=0.02, batch_size=8, seed=0,
                          checkpoint_dir=root / "two", resume=True).train(Flips(32, 0),
                                                                          epochs=2)
    assert r.resumed["from_step"] == 3 and r.steps == 8
    text = "\n".join(str(w.message) for w in said)
    assert "were saved on 2 ranks, one per process, and are not put back on one process" \
        in text, text


@pytest.mark.mpi
@pytest.mark.parametrize("name", ["arrays", "table", "sampled", "torch loader"])
def test_data_that_draws_nothing_resumes_silently_on_one_process(launched, name, tmp_path):
    """Round 43 (h10), h5's "left": dp on 2 ranks cut at step 2, resumed in one process on
    data that draws nothing from the global generators: skiff's arrays, a pandas table,
    a TensorDataset behind a WeightedRandomSampler (it was said there), and torch's loader
    of a TensorDataset shuffled from a generator (the table and torch's loader resume the
    arrays' checkpoint: the same rows)."""
    import shutil

    import skiff

    from ..flips_data import quiet_data

    root, _ = launched
    data = dict(quiet_data())
    folder = tmp_path / "ck"  # a copy: each case resumes the launch's step 2
    shutil.copytree(root / ("sampled" if name == "sampled" else "arrays"), folder)
    x, y = data["arrays"]
    if name == "table":  # the arrays' rows as a pandas table
        import pandas as pd

        frame = pd.DataFrame(x, columns=list("abcd")).assign(label=y)
        data[name] = (frame.drop(columns="label"), frame["label"])
    if name == "torch loader":
        data[name] = torch.utils.data.DataLoader(
            torch.utils.data.TensorDataset(torch.tensor(x), torch.tensor(y)), batch_size=8,
            shuffle=True, generator=torch.Generator().manual_seed(3))
    skiff.seed(0)
    net = skiff.nn.Sequential(skiff.nn.Linear(4, 8), skiff.nn.ReLU(), skiff.nn.Linear(8, 2))
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        r = skiff.Trainer(net, strategy="single", lr=0.02, batch_size=8, seed=0,
                          checkpoint_dir=folder, resume=True).train(data[name],
                                                                           epochs=1)
    assert r.resumed["from_step"] == 2 and r.steps == 4
    text = "\n".join(str(w.message) for w in said)
    assert "global random generators" not in text, text
