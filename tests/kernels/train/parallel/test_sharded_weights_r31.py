"""Round 31: the weights of a sharded checkpoint (a run on several ranks) read in one process,
to predict with: ``parallel.model_weights.model_weights(path)`` takes a ``step-N/``
folder, the ``latest`` file or the checkpoint directory (its newest), whatever the strategy
(ZeRO keeps the model whole in rank 0's part, tp and pp in pieces joined here). Before, a user
had no way but ``model.load_state_dict(folder)``: "no weights file at 'ck/step-00000060'", and
on ``latest`` numpy's "contains pickled (object) data". The oracle is the same run in one
process (SGD; 2 ranks equal it to 1e-5, round 30's tests) at the step the folder holds."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from skiff.kernels.train.models.gpt import GPT, GPTConfig
from skiff.kernels.train.parallel.model_weights import model_weights

from .mpi_util import HERE, run_mpi


def _one_process(steps):
    sys.path.insert(0, str(HERE / "scripts"))
    try:
        from sharded_weights_r31_check import run
    finally:
        sys.path.pop(0)
    return run("single", ranks=1, steps=steps)


@pytest.mark.mpi
def test_sharded_checkpoints_read_in_one_process(tmp_path):
    kinds = ("zero2", "tp", "pp")
    run_mpi(2, "sharded_weights_r31_check.py", tmp_path, *kinds, timeout=240)
    at3, at2 = _one_process(3), _one_process(2)
    want3, want2 = at3.state_dict(), at2.state_dict()
    x = np.random.default_rng(1).integers(0, 16, (4, 8))
    for kind in kinds:
        folder = tmp_path / kind
        for path, want in ((folder, want3), (folder / "latest", want3),
                           (folder / "step-00000002", want2)):
            got = model_weights(path)
            assert set(got) == set(want), (kind, path, set(got) ^ set(want))
            for k, v in got.items():
                np.testing.assert_allclose(v, want[k], rtol=1e-4, atol=1e-5,
                                           err_msg=f"{kind} {path.name} {k}")
        fresh = GPT(GPTConfig(block_size=8, vocab_size=16, n_layer=2, n_head=2, n_embd=16))
        fresh.load_state_dict({**fresh.state_dict(), **model_weights(folder)})
        fresh.eval()
        at3.eval()
        np.testing.assert_allclose(fresh(x).numpy(), at3(x).numpy(), rtol=1e-4, atol=1e-5)


def test_a_missing_checkpoint_is_named(tmp_path):
    with pytest.raises(FileNotFoundError, match="no checkpoint in"):
        model_weights(tmp_path)
    with pytest.raises(FileNotFoundError, match="no checkpoint at"):
        model_weights(tmp_path / "nowhere")
