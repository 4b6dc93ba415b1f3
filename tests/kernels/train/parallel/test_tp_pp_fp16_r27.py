"""fp16-mixed GPT under tensor and pipeline parallel on 2 ranks skips the steps one device
skips near the top of the loss scale, and a second train() runs (see the script).

Found by a user: a second ``train()`` under tensor parallel failed with an IndexError (the
split model was split again), and the pipeline skipped steps 1-6 where one device skipped
1-3 (its last stage took the cross-entropy of float16 logits). The reference is one device
with the same micro-batches, whose fp16 steps are checked against torch's GradScaler in
tests/kernels/train/trainer/test_fp16_loss_scale_r27.py.
"""

from __future__ import annotations

import pytest

from .mpi_util import run_mpi


@pytest.mark.mpi
def test_tp_and_pp_skip_as_one_device_and_train_twice():
    for res in run_mpi(2, "tp_pp_fp16_r27_check.py", timeout=240):
        ref = res["single"]
        assert ref["skipped"] and ref["scale"] < 2.0 ** 22  # the scale overflowed
        for kind in ("tp", "pp"):
            got = res[kind]
            assert got["skipped"] == ref["skipped"], (kind, got["skipped"], ref["skipped"])
            assert got["scale"] == ref["scale"], kind
            assert len(got["losses"]) == len(ref["losses"]) == 9
            assert max(abs(a - b) for a, b in zip(got["losses"], ref["losses"])) < 2e-3, kind
