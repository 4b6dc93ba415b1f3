"""Round 38: ``skiff.plan("mlp")`` costs %train's built-in models (h11), but ``python -m skiff
plan mlp --np 2`` (and ``%plan``, one grammar) said "unknown model 'mlp'". The oracle: the
API's own plan of the same model (same choice, same parameter count)."""

from __future__ import annotations

import inspect
import json

import pytest

import skiff
from skiff.cli import main


@pytest.mark.parametrize("name", ["mlp", "cnn"])
def test_plan_of_a_builtin_model_from_the_terminal_equals_the_api(capsys, name):
    assert main(["plan", name, "--np", "2", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    api = skiff.plan(name, devices=2, device_memory=80e9)
    assert doc["choice"]["dp"] * doc["choice"]["tp"] * doc["choice"]["pp"] == 2
    assert doc["choice"]["dp"] == api.choice.dp and doc["choice"]["zero"] == api.choice.zero
    assert doc["global_batch"] == api.global_batch


def test_a_model_of_single_samples_is_planned_at_the_trainers_batch_not_a_million():
    """The default global batch was about a million tokens for every model: an MLP (one token
    a sample) got "Trainer(batch_size=64, grad_accum=16384)". The oracle: the Trainer's own
    default batch_size; a sequence model keeps the million tokens."""
    mlp = skiff.plan("mlp", devices=2, device_memory=80e9)
    default = inspect.signature(skiff.Trainer.__init__).parameters["batch_size"].default
    assert mlp.global_batch == default and "grad_accum" not in mlp.summary
    gpt = skiff.plan("gpt-mini", devices=2, device_memory=80e9)
    assert gpt.global_batch * gpt.model.seq_len >= 2**19


def test_an_unknown_model_still_names_the_builtins(capsys):
    assert main(["plan", "mlpp", "--np", "2"]) == 2
    err = capsys.readouterr().err
    assert "unknown model 'mlpp'" in err and "mlp" in err.split("choose from")[-1]
