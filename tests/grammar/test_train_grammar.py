"""The train grammar: parse, validate, render."""

from __future__ import annotations

import pytest

from skiff.grammar import GrammarError
from skiff.grammar.common import split_launch
from skiff.kinds.train import COMMAND, to_config


def _config(line):
    values, launch = split_launch(COMMAND.parse(line))
    return to_config(values), launch


def test_builtin_model_gets_its_default_data():
    cfg, launch = _config("gpt-mini --steps 5 --lr 1e-3 --np 2 --wait")
    assert cfg["model"] == "gpt-mini" and cfg["data"] == "classics"
    assert cfg["steps"] == 5 and cfg["lr"] == 1e-3 and cfg["strategy"] == "auto"
    assert launch["np"] == 2 and launch["wait"] is True


def test_text_file_as_data(tmp_path):
    path = tmp_path / "a.txt"
    path.write_text("hello " * 40)  # longer than one sequence of 129 bytes
    cfg, _ = _config(f"gpt-mini {path} --batch-size 4")
    assert cfg["data"] == str(path) and cfg["batch_size"] == 4


@pytest.mark.parametrize("line, words", [
    ("gpt-huge", ["gpt-huge", "gpt-mini", "mlp"]),
    ("gpt-mini nodata", ["nodata", "classics"]),
    ("mlp --strategy warp", ["warp", "zero2"]),
    ("mlp --resume", ["--checkpoint-dir"]),
])
def test_bad_values_name_the_value_and_the_choices(line, words):
    with pytest.raises(ValueError) as info:
        _config(line)
    for w in words:
        assert w in str(info.value)


def test_bad_option_types():
    with pytest.raises(GrammarError, match="-3"):
        COMMAND.parse("mlp --steps -3")


def test_render_round_trips():
    ns = COMMAND.parse("gpt-mini sonnets --steps 20 --lr 0.001 --resume --checkpoint-dir ck")
    line = COMMAND.render(vars(ns))
    assert COMMAND.parse(line.removeprefix("%train ")) == ns
