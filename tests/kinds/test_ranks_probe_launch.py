"""What a strategy cannot do to a built-in model is said in one line before any rank starts.

Found by a user forcing a strategy on 2 ranks: ``train mlp --np 2 --strategy tp`` started
both ranks, which then failed with "tp=2 does not divide the 1 attention heads (use ... or
pp)" (an MLP has no heads, and pp could not split it either); ``--strategy zero1`` on one
rank failed inside the job ("zero=1 shards over data-parallel ranks, but dp=1").
"""

from __future__ import annotations

import pytest

from skiff.jobs import submit
from skiff.kinds import get


@pytest.mark.parametrize("line, says", [
    ("mlp --np 2 --strategy tp", "tensor parallel (tp) does not apply to mlp"),
    ("cnn --np 2 --strategy pp", "pipeline parallel (pp) does not apply to cnn"),
    ("mlp --np 2 --strategy ep", "expert parallel (ep) does not apply to mlp"),
    ("gpt-mini --np 2 --strategy ep", "expert parallel (ep) does not apply to gpt-mini"),
    ("gpt-moe --np 2 --strategy dp=1,tp=2", "tensor parallel (tp) does not apply to gpt-moe"),
    ("mlp --strategy zero2", "shards the optimizer over data-parallel ranks"),
])
def test_refused_before_a_run_folder(tmp_path, monkeypatch, line, says):
    monkeypatch.setenv("SKIFF_RUNS", str(tmp_path))
    with pytest.raises(ValueError, match=r"^--strategy .*" + says.replace("(", r"\(")
                       .replace(")", r"\)")) as err:
        submit("train", line + " --steps 1 --oversubscribe")
    assert "\n" not in str(err.value)
    assert not any(tmp_path.iterdir())  # no job, no run folder


@pytest.mark.parametrize("model, strategy", [
    ("mlp", "dp"), ("mlp", "zero1"), ("cnn", "zero2"), ("gpt-mini", "tp"),
    ("gpt-mini", "pp"), ("gpt-moe", "ep"), ("gpt-moe", "auto")])
def test_what_applies_is_let_through(model, strategy):
    kind = get("train")
    config = kind.to_config({"model": model, "strategy": strategy, "steps": 1})
    note = kind.check_launch(config, ranks=2)
    # let through: nothing to say, except auto's plan line (round 30: the dry run shows it)
    assert (note is None) == (strategy != "auto"), note


def test_summary_says_the_ranks_and_the_strategy():
    summary = get("train").summary
    plan = {"strategy": "zero2", "explicit": False, "label": "dp=2,tp=1,pp=1,micro=1",
            "choice": {"dp": 2, "tp": 1, "pp": 1, "ep": 1, "zero": 2}}
    lines = summary({"steps": 3, "final_loss": 1.0, "strategy": plan})
    assert "on 2 ranks: zero2 (dp=2,tp=1,pp=1,micro=1), chosen by the planner" in lines
    one = {**plan, "choice": {"dp": 1, "tp": 1, "pp": 1}}
    assert not any("rank" in line for line in summary({"steps": 3, "strategy": one}))
