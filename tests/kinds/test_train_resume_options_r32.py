"""Round 32: ``jobs resume`` of a train job keeps every option the job was started with.

The stored config names some options otherwise (``early_stopping`` for ``--early-stop``,
one ``lora`` entry for ``--lora-r/--lora-alpha/--lora-targets/...``), and the resume fed it
back through the options' reader, which looked for the options' names: a job started with
``--early-stop 100``, cancelled at step 150 of 400 and resumed with ``python -m skiff jobs
resume ID`` trained on without early stopping (the summary's "weights of step 75 kept"
gone, its final checkpoint 0.127 off the uninterrupted run's), and a LoRA fine-tune would
have lost its adapters. The oracle is the config the job stored: the resume's must equal it
but for ``resume`` and the checkpoint folder.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

from skiff.kinds.train import COMMAND as TRAIN
from skiff.kinds.train import KIND, to_config


def _resumed(config, tmp_path):
    job = SimpleNamespace(id="j", status="cancelled", result={"steps": 3, "stopped":
                                                                "cancelled"},
                          config=config, run_dir=Path(tmp_path))
    again = KIND.resume_config(job)
    assert again["resume"] is True
    return {k: v for k, v in again.items() if k not in ("resume", "checkpoint_dir")}


def _stored(config):
    return {k: v for k, v in config.items() if k not in ("resume", "checkpoint_dir")}


def test_early_stopping_and_class_weights_survive_a_resume(tmp_path):
    data = tmp_path / "churn.csv"
    rows = ["id,plan,monthly,churn"] + [f"C{i},{'ab'[i % 2]},{i * 1.5},{'yn'[i % 3 == 0]}"
                                        for i in range(40)]
    data.write_text("\n".join(rows) + "\n")
    config = to_config(vars(TRAIN.parse(
        f"mlp {data} --target churn --drop id --steps 400 --val-split 0.2 --early-stop 100 "
        "--class-weight balanced --grad-accum 2 --seed 2")))
    assert config["early_stopping"] == 100
    assert _resumed(config, tmp_path) == _stored(config)


def test_a_lora_fine_tune_keeps_its_adapters_on_resume(tmp_path):
    base = tmp_path / "base"
    base.mkdir()
    (base / "config.json").write_text(json.dumps({
        "architectures": ["Ernie4_5ForCausalLM"], "model_type": "ernie4_5",
        "hidden_size": 16, "intermediate_size": 32, "num_hidden_layers": 1,
        "num_attention_heads": 2, "num_key_value_heads": 1, "vocab_size": 64}))
    text = tmp_path / "t.txt"
    text.write_text("some text to train on. " * 40)
    config = to_config(vars(TRAIN.parse(
        f"ernie {text} --from {base} --lora-r 4 --lora-alpha 16 --lora-targets q_proj,o_proj "
        "--lora-dora --steps 6")))
    assert config["lora"]["r"] == 4 and config["lora"].get("dora")
    assert _resumed(config, tmp_path) == _stored(config)


def test_every_stored_option_of_a_table_job_round_trips(tmp_path):
    data = tmp_path / "churn.csv"
    rows = ["id,plan,monthly,churn"] + [f"C{i},{'ab'[i % 2]},{i * 1.5},{'yn'[i % 3 == 0]}"
                                        for i in range(40)]
    data.write_text("\n".join(rows) + "\n")
    config = to_config(vars(TRAIN.parse(
        f"mlp {data} --target churn --drop id --class-weight y=2,n=1 --val-split 0.2 "
        "--early-stop 3 --device-memory 2GB --steps 10 --precision bf16-mixed")))
    assert _resumed(config, tmp_path) == _stored(config)
