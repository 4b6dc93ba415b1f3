"""Round 29, as a panel user: the Train tab with ``--lora-r 4`` on a built-in model kept
Launch enabled although the default ``--lora-targets q_proj,v_proj`` names no layer of it;
the refusal came only after the click, under the form, far from the field. The form now
runs the launch's check as the user types and shows it next to ``--lora-targets``. The
oracle: the terminal's ``--dry-run`` verdict for the same line, and the model's own layers."""

from __future__ import annotations

import pytest

from skiff.cli import main
from skiff.widgets.panels import train_form


def test_lora_targets_are_refused_next_to_the_field(runs_dir, capsys):
    form = train_form()
    form.set(model="gpt-mini", lora_r="4")
    assert main(["train", "gpt-mini", "--lora-r", "4", "--dry-run"]) == 2
    cli_error = capsys.readouterr().err
    assert "--lora-targets q_proj,v_proj names no linear layer" in cli_error
    assert form.errors.keys() == {"lora_targets"}
    assert form.errors["lora_targets"] in cli_error  # the same words as the terminal
    assert form.launch_button.disabled
    assert form.more.selected_index == 0  # the field is under "more options": opened
    assert form.status.value == ""  # not under the form
    # the names it offers are the model's own linear layers, and one of them is accepted
    from skiff.kernels.train import models
    from skiff.kernels.train.models.lora import apply_job_lora, lora_modules

    offered = form.errors["lora_targets"].split("give --lora-targets ")[1].split(" ")[0]
    built = models.get("gpt-mini")
    apply_job_lora(built, {"r": 4, "alpha": 8, "targets": [offered]})
    assert any(name.rsplit(".", 1)[-1] == offered for name, _ in lora_modules(built))
    form.set(lora_targets=offered)
    assert form.errors == {} and not form.launch_button.disabled
    assert main(["train", "gpt-mini", "--lora-r", "4", "--lora-targets", offered,
                 "--dry-run"]) == 0


def test_a_notebook_model_is_not_checked_against_the_stand_in(runs_dir, monkeypatch):
    """A notebook model's layers are not the built-in stand-in's: its targets are left to
    the launch (a model with q_proj must not be refused for the stand-in's names)."""
    torch = pytest.importorskip("torch")

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.q_proj = torch.nn.Linear(4, 4)
            self.v_proj = torch.nn.Linear(4, 2)

        def forward(self, x):
            return self.v_proj(self.q_proj(x))

    ns = {"net": Net()}
    monkeypatch.setattr("skiff.widgets.panels._user_ns", lambda: ns)
    form = train_form()
    form.set(model="net", data="blobs", lora_r="4")
    assert "lora_targets" not in form.errors
    assert form.errors == {} and not form.launch_button.disabled
