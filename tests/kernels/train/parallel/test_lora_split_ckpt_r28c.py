"""Round 28: a LoRA fine-tune under tp, pp and ep on 2 ranks checks its base on resume.

Their checkpoints held only the adapters' pieces, but no record of the base: resuming on
another base went on silently, the adapters applied to weights they were not trained on.
Now each rank writes the prints of its slices of the frozen base (with the layout they
fit): the same layout compares them, another layout compares the base's folder. The oracle
is the same 2-rank run that never stopped: equal losses and adapters after the resume.
"""

from __future__ import annotations

import pytest

from ..models.ernie_reference import make_checkpoint
from .mpi_util import run_mpi


def _check(results, strategies):
    for res in results:
        for strategy in strategies:
            got = res[strategy]
            assert got["resumed"] == 2, (strategy, got)
            assert got["got"] == got["want"], (strategy, got)
            assert got["weights"] == 0.0, (strategy, got)
            assert got["bytes"] < got["base_bytes"], (strategy, got)
            assert "another base" in got["other"].get("error", ""), (strategy, got)


@pytest.fixture(scope="module")
def launched(tmp_path_factory):
    """tp and pp on the dense bases, ep on the MoE ones: one launch (round 43 h10: two)."""
    root = tmp_path_factory.mktemp("lora_split")
    for name, kind in (("base", "dense-gqa-tied"), ("moe", "moe-shared")):
        make_checkpoint(root / name, kind)
        make_checkpoint(root / f"{name}-other", kind, seed=1)
    return run_mpi(2, "lora_split_ckpt_r28c_check.py", root / "base", root / "base-other",
                   root / "runs", "tp,pp", "cross", "ep", root / "moe", root / "moe-other",
                   timeout=360)


@pytest.mark.mpi
@pytest.mark.slow
def test_lora_tp_pp_checkpoints_check_their_base(launched):
    results = launched
    _check(results, ("tp", "pp"))
    for res in results:
        assert "another base" in res["cross_other"].get("error", ""), res["cross_other"]
        assert "from_pretrained" in res["cross_other"]["error"]
        assert res["cross_same"] == {"resumed": 2}, res["cross_same"]


@pytest.mark.mpi
@pytest.mark.slow
def test_lora_ep_checkpoints_check_their_base(launched):
    _check(launched, ("ep",))
