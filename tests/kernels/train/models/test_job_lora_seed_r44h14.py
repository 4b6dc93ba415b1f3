"""A job's LoRA adapters start from the job's own generator (round 44, h14).

``apply_job_lora`` (the CLI's, ``%train``'s and the Train form's ``--lora-r``) drew the
adapters' random ``lora_A`` from the process-wide generator: a notebook's second identical
``%train ernie --from DIR --lora-r 2`` job trained from another start than the first (step
1's gradient norm 4.50 against 4.12 on a tiny MoE, the validation loss 9.39 against 9.30),
neither equal to the command line's run, and each job took the session's draws. Oracle: the
same adapters drawn under a fresh ``default_rng(seed)``, whatever was drawn before."""

from __future__ import annotations

import numpy as np

from skiff.kernels.train.core import random as train_random
from skiff.kernels.train.models.lora import apply_job_lora

from .ernie_reference import make_checkpoint


def _lora_a(model) -> dict:
    return {k: np.array(v) for k, v in model.state_dict().items() if "lora_A" in k}


def test_job_adapters_come_from_the_jobs_seed(tmp_path):
    from skiff.kernels.train.models import from_pretrained

    folder, _ = make_checkpoint(tmp_path / "ckpt", "dense-gqa-tied")
    lora = {"r": 2, "alpha": 4.0, "targets": ["q_proj", "v_proj"]}
    session = train_random.get_generator()
    before = session.bit_generator.state
    try:
        first = _lora_a(apply_job_lora(from_pretrained(folder), lora))
        assert session.bit_generator.state == before  # nothing taken from the session's
        session.uniform(size=7)  # a notebook's own draws in between
        again = _lora_a(apply_job_lora(from_pretrained(folder), lora))
    finally:
        session.bit_generator.state = before
    other = _lora_a(apply_job_lora(from_pretrained(folder), lora, seed=3))
    with train_random.using(train_random.new_generator(3)):  # the draws a seed-3 job makes
        from skiff.kernels.train.models.lora import apply_lora

        want = _lora_a(apply_lora(from_pretrained(folder), r=2, alpha=4.0,
                                  target_modules=["q_proj", "v_proj"]))
    assert first.keys() == again.keys() == other.keys() and len(first) == 4
    for k in first:
        np.testing.assert_array_equal(first[k], again[k])
        np.testing.assert_array_equal(other[k], want[k])
        assert not np.array_equal(first[k], other[k])


def test_the_jobs_seed_picks_the_adapters_start():
    """``--seed N`` reaches the adapters: the job's build passes its seed to
    ``apply_job_lora`` (before, every LoRA job started from seed 0's draws)."""
    from skiff.kernels.train.entry import build_from_config

    lora = {"r": 2, "alpha": 4.0, "targets": ["c_attn"]}
    built = {s: _lora_a(build_from_config({"model": "gpt-mini", "lora": lora, "seed": s})["model"])
             for s in (0, 3)}
    with train_random.using(train_random.new_generator(3)):
        from skiff.kernels.train import models

        base = models.get("gpt-mini")
    want = _lora_a(apply_job_lora(base, lora, seed=3))
    assert built[3].keys() == want.keys() and built[3]
    for k in want:
        np.testing.assert_array_equal(built[3][k], want[k])
        assert not np.array_equal(built[0][k], built[3][k])
