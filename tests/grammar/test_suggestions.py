"""One validation for every front: the closest valid name is suggested, notebook-only options
stay out of the terminal, and a solve's grid is checked before anything runs."""

import pytest

from skiff.grammar import GrammarError
from skiff.grammar.common import did_you_mean, unknown_name
from skiff.kinds import get
from skiff.kinds.solve import COMMAND as SOLVE
from skiff.kinds.solve import to_config as solve_config
from skiff.kinds.train import COMMAND as TRAIN


@pytest.mark.parametrize("word, choices, best", [
    ("poison", ["poisson", "diffusion", "jump"], "poisson"),
    ("trian", ["train", "solve", "ocr"], "train"),
    ("--step", ["--steps", "--seed", "--save"], "--steps"),
    ("gc", ["cg", "gmres", "bicgstab"], "cg"),            # the same letters, swapped
    ("Poisson", ["poisson", "jump"], "poisson"),          # case
    ("bicg", ["cg", "bicgstab", "gmres"], "bicgstab"),    # the one that starts so
])
def test_the_closest_name_is_suggested(word, choices, best):
    assert did_you_mean(word, choices) == f" (did you mean {best!r}?)"


def test_nothing_close_suggests_nothing():
    assert did_you_mean("xylophone", ["cg", "gmres"]) == ""
    msg = str(unknown_name("problem", "xylophone", ["poisson", "jump"]))
    assert msg == "unknown problem 'xylophone': choose from poisson, jump"


@pytest.mark.parametrize("line, needle", [
    ("mlp --step 3", "unrecognized arguments: --step 3 (did you mean '--steps'?)"),
    ("mlp --step=3", "(did you mean '--steps'?)"),
    ("mlp --launcher slrum", "invalid choice: 'slrum' (did you mean 'slurm'?)"),
    ("gpt-mimi", "unknown model 'gpt-mimi' (did you mean 'gpt-mini'?)"),
    ("mlp blbos", "unknown data 'blbos' (did you mean 'blobs'?)"),
    ("mlp --strategy sngle", "unknown strategy 'sngle' (did you mean 'single'?)"),
])
def test_train_mistakes_name_the_closest(line, needle):
    with pytest.raises((GrammarError, ValueError)) as err:
        get("train").to_config(vars(TRAIN.parse(line)))
    assert needle in str(err.value)


def test_unknown_kind_suggests():
    with pytest.raises(ValueError, match=r"unknown job kind 'slove' \(did you mean 'solve'\?\)"):
        get("slove")


def test_notebook_only_options_are_left_out_of_the_terminal():
    assert vars(TRAIN.parse("mlp -o run"))["output"] == "run"       # a magic keeps -o
    assert "--output" in TRAIN.usage()
    assert "--output" not in TRAIN.usage(cli=True)
    with pytest.raises(GrammarError, match="-o/--output is for notebooks only"):
        TRAIN.parse("mlp -o run", cli=True)
    assert "output" not in vars(TRAIN.parse("mlp", cli=True))


@pytest.mark.parametrize("grid", ["512", "1x64", "64x64x64x64"])
def test_a_solve_grid_is_2d_or_3d_at_parse_time(grid):
    with pytest.raises(GrammarError, match="expected a grid of 2 or 3 sizes"):
        SOLVE.parse(f"poisson --grid {grid}")


def test_to_config_checks_a_grid_given_as_values_too():
    assert solve_config({"problem": "poisson", "grid": (32, 16)})["grid"] == [32, 16]
    with pytest.raises(ValueError, match="--grid: expected a grid of 2 or 3 sizes"):
        solve_config({"problem": "poisson", "grid": (512,)})
    with pytest.raises(ValueError, match="%%solve domain: expected a grid of 2 or 3"):
        from skiff.kinds.solve import parse_spec

        parse_spec("domain: 512")


def test_solve_choices_and_problems_suggest():
    with pytest.raises(GrammarError, match=r"invalid choice: 'gc' \(did you mean 'cg'\?\)"):
        SOLVE.parse("poisson --method gc")
    with pytest.raises(ValueError, match=r"unknown problem 'poison' \(did you mean"):
        solve_config(vars(SOLVE.parse("poison")))


@pytest.mark.parametrize("line, needle", [
    ("cnn blobs", "model 'cnn' trains on 'shapes'"),
    ("mlp classics", "model 'mlp' trains on 'blobs'"),
    ("gpt-mini shapes", "model 'gpt-mini' trains on text"),
    ("mlp --strategy dp=2,tp=1,pp=1", "needs dp x tp x pp = 2 ranks and the job has 1"),
    ("mlp --strategy single --np 2", "strategy 'single' runs on one rank"),
])
def test_train_mistakes_the_kernel_would_meet_are_caught_before_a_run_folder(line, needle,
                                                                             runs_dir):
    from skiff.jobs import list_run_dirs, submit

    with pytest.raises(ValueError, match=needle.replace("(", r"\(")):
        submit("train", f"{line} --steps 1")
    assert list_run_dirs(runs_dir) == []


def test_a_notebook_model_may_train_on_builtin_text():
    from skiff.kinds.train import _fits, check_pair

    check_pair("gpt-small", "sonnets")
    assert _fits("gpt-mini", "prose") and not _fits("mlp", "prose")


def test_the_cli_command_a_form_shows_has_no_notebook_only_option():
    values = vars(TRAIN.parse("mlp --steps 3 -o run"))
    assert TRAIN.render(values) == "%train mlp --steps 3 --output run"
    assert TRAIN.render(values, style="cli") == "python -m skiff train mlp --steps 3"


def test_a_misspelt_device_suggests():
    with pytest.raises(GrammarError, match=r"unknown device 'cdua'.*\(did you mean 'cuda'\?\)"):
        SOLVE.parse("poisson --device cdua")


def test_a_checkpoint_of_another_architecture_is_refused_before_a_run_folder(tmp_path):
    """`chat DIR` and `train ernie --from DIR` read config.json at launch: a llama folder
    made a run folder and failed inside the job."""
    import json

    from skiff.kinds.chat import to_config as chat_config

    (tmp_path / "config.json").write_text(json.dumps({"model_type": "llama"}))
    with pytest.raises(ValueError, match="architecture 'llama' is not supported"):
        chat_config({"model": str(tmp_path), "prompt": "hi"})
    with pytest.raises((GrammarError, ValueError), match="architecture 'llama' is not"):
        get("train").to_config(vars(TRAIN.parse(f"ernie sonnets --from {tmp_path}")))


def test_a_text_file_too_short_or_missing_is_said_at_launch(tmp_path):
    """A text shorter than one sequence failed inside the job; a missing path was called an
    unknown built-in data set."""
    short = tmp_path / "tiny.txt"
    short.write_text("hi there")
    train = get("train")
    with pytest.raises(ValueError, match=r"tiny.txt holds 8 bytes; .* takes 129 .*"
                                         r"--block-size 7 at most"):
        train.to_config(vars(TRAIN.parse(f"gpt-mini {short}")))
    cfg = train.to_config(vars(TRAIN.parse(f"gpt-mini {short} --block-size 4")))
    assert cfg["data"] == str(short)
    with pytest.raises(ValueError, match="no such data file"):
        train.to_config(vars(TRAIN.parse(f"gpt-mini {tmp_path / 'missing.txt'}")))
    with pytest.raises(ValueError, match="is a folder"):
        train.to_config(vars(TRAIN.parse(f"gpt-mini {tmp_path}")))


def test_a_short_text_trains_without_a_validation_split(tmp_path):
    from skiff.kernels.train.entry import build_from_config

    text = tmp_path / "short.txt"
    text.write_text("abcdefghij" * 30)   # 300 bytes: a tenth is shorter than 129
    parts = build_from_config({"model": "gpt-mini", "data": str(text)})
    assert parts["val_dataset"] is None and len(parts["dataset"]) > 0
    assert "too short to hold out a tenth" in parts["notes"][0]
    text.write_text("abcdefghij" * 300)  # 3,000 bytes: a tenth holds whole sequences
    parts = build_from_config({"model": "gpt-mini", "data": str(text)})
    assert parts["val_dataset"] is not None and not parts["notes"]


def test_options_are_matched_on_their_names_not_their_dashes():
    """``--bogus`` got "did you mean '--post'?" from the two dashes they share."""
    from skiff.grammar.common import did_you_mean

    assert did_you_mean("--bogus", ["--post", "--pre", "--rtol"]) == ""
    assert did_you_mean("--stepz", ["--steps", "--seed"]) == " (did you mean '--steps'?)"
    assert did_you_mean("--langg", ["--lang", "--out"]) == " (did you mean '--lang'?)"
