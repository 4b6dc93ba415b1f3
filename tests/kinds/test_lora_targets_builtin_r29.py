"""Round 29, as a terminal user: ``python -m skiff train gpt-mini --lora-r 4`` (and mlp,
cnn, gpt-small, gpt-moe) passed every check and ``--dry-run``, started, and failed after
launch: "LoRA target_modules ['q_proj', 'v_proj'] name no linear layer of this model" (exit
1; the default targets are a checkpoint's names, in no built-in model), naming no layer to
give instead. It is now a usage error before anything starts that lists the model's
layers, and the line it suggests trains. The oracle: the model's own Linear modules (its
module tree) and the run folders on disk."""

from __future__ import annotations

import re

import pytest

from skiff.cli import main
from skiff.jobs.store import list_run_dirs
from skiff.kernels.train import models
from skiff.kernels.train.core import nn


def _linear_names(model_name: str) -> set[str]:
    built = models.get(model_name)
    return {full.rsplit(".", 1)[-1] if full.rsplit(".", 1)[-1].isidentifier() else full
            for full, m in built.named_modules() if isinstance(m, nn.Linear) and full}


@pytest.mark.parametrize("model", ["mlp", "cnn", "gpt-mini"])
def test_default_targets_on_a_builtin_are_refused_naming_its_layers(model, runs_dir, capsys):
    assert main(["train", model, "--lora-r", "2", "--steps", "2"]) == 2  # usage, not failed
    err = capsys.readouterr().err
    assert list_run_dirs(runs_dir) == []  # nothing started
    listed = re.search(r"its linear layers are ([^;]+);", err).group(1).split(", ")
    assert listed and set(listed) <= _linear_names(model)
    suggested = re.search(r"give --lora-targets (\S+)", err).group(1)
    assert suggested in _linear_names(model)


def test_the_suggested_targets_train(runs_dir, capsys):
    assert main(["train", "gpt-mini", "--lora-r", "2", "--steps", "2"]) == 2
    suggested = re.search(r"give --lora-targets (\S+)", capsys.readouterr().err).group(1)
    assert main(["train", "gpt-mini", "--lora-r", "2", "--lora-targets", suggested,
                 "--steps", "2", "--batch-size", "2", "--block-size", "16", "--json"]) == 0
    assert len(list_run_dirs(runs_dir)) == 1


def test_targets_a_builtin_has_still_pass(runs_dir, capsys):
    assert main(["train", "gpt-mini", "--lora-r", "2", "--lora-targets", "c_attn",
                 "--dry-run"]) == 0
    assert main(["train", "mlp", "--lora-r", "2", "--lora-targets", "all-linear",
                 "--dry-run"]) == 0
