"""Round 35 (h5): the weights of a tp, pp or ep LoRA fine-tune's checkpoint, in one process.

Those checkpoints leave the frozen base out (only the adapters' pieces), so
``model.load_state_dict(model_weights("ck/step-N"))`` said the base's keys were missing,
and nothing said how to load them. ``model_weights(path, model)`` now takes the model
(the base loaded, the same adapters applied), checks its base against the checkpoint's
record and fills the frozen arrays (and the base's buffers a split checkpoint leaves out)
from it. The oracle: the whole weights each 2-rank run gathered itself
(``strategy.full_state_dict``), equal to the last bit."""

from __future__ import annotations

import numpy as np
import pytest

from skiff.kernels.train.models import from_pretrained
from skiff.kernels.train.models.lora import apply_lora
from skiff.kernels.train.parallel.model_weights import model_weights

from ..models.ernie_reference import make_checkpoint
from .mpi_util import run_mpi


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("lora_weights")
    make_checkpoint(root / "dense", "dense-gqa-tied")
    make_checkpoint(root / "moe", "moe-shared")
    run_mpi(2, "lora_weights_r35h5_check.py", str(root / "dense"), str(root / "moe"),
            str(root), timeout=300)
    return root


def _lora(base):
    return apply_lora(from_pretrained(base), r=4, alpha=8)


@pytest.mark.mpi
@pytest.mark.slow
@pytest.mark.parametrize("strategy, base", [("tp", "dense"), ("pp", "dense"), ("ep", "moe")])
def test_a_split_fine_tunes_checkpoint_loads_whole(runs, strategy, base):
    folder = runs / strategy / "ck"
    step = sorted(folder.glob("step-*"))[-1]
    model = _lora(runs / base)
    trained = model_weights(step)
    assert len(trained) < len(model.state_dict())  # the base is not in it
    with pytest.raises(ValueError, match="missing keys"):  # what it said alone
        _lora(runs / base).load_state_dict(dict(trained))
    if strategy != "ep":   # (ep leaves the router's bias buffer out too: model_weights(., model))
        # the trained weights alone load into a model with the same base and adapters (the
        # frozen names are the base it leaves out; round 35: it said they were missing)
        alone = _lora(runs / base)
        alone.load_state_dict(trained)  # strict
        for k, v in trained.items():
            np.testing.assert_array_equal(np.asarray(alone.state_dict()[k]), np.asarray(v))
    model.load_state_dict(model_weights(step, model))  # strict
    with np.load(runs / strategy / "whole.npz") as want:
        got = model.state_dict()
        assert set(want.files) == set(got)
        for k in want.files:
            np.testing.assert_array_equal(np.asarray(got[k]), want[k], err_msg=k)
    # the folder and its "latest" pointer name the same checkpoint
    again = model_weights(folder / "latest", _lora(runs / base))
    assert all(np.array_equal(again[k], np.asarray(got[k])) for k in got)


@pytest.mark.mpi
@pytest.mark.slow
def test_another_base_or_no_adapters_is_said(runs):
    step = sorted((runs / "tp" / "ck").glob("step-*"))[-1]
    with pytest.raises(ValueError, match="trained on another base"):
        model_weights(step, _lora(runs / "moe"))
    with pytest.raises(ValueError, match="freezes nothing: load that base and apply the "
                                         "same adapters"):
        model_weights(step, from_pretrained(runs / "dense"))
