"""What user probes met on the train and solve kinds (follow-up round): each mistake is one
line before any run folder (exit 2 in the terminal, a UsageError in a notebook), and what
used to fail inside a job, or to say the wrong thing, no longer does."""

from __future__ import annotations

import json

import numpy as np
import pytest
import scipy.sparse as sp
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell

from skiff.kinds.solve import KIND as SOLVE
from skiff.kinds.train import COMMAND as TRAIN
from skiff.kinds.train import KIND as TRAIN_KIND
from skiff.kinds.train import to_config as train_config
from tests.helpers.cli import run_cli as cli  # ``python -m skiff ARGS`` here


@pytest.fixture(scope="module")
def shell():
    ip = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "skiff")
    return ip


def no_run_folder(runs_dir) -> bool:
    return not runs_dir.exists() or not any(runs_dir.iterdir())


def one_line_refusal(out, *needles):
    assert out.returncode == 2, (out.returncode, out.stdout, out.stderr)
    assert "Traceback" not in out.stderr
    for needle in needles:
        assert needle in out.stderr, out.stderr


# 1. a %%train cell that is not Python --------------------------------------------------------
def test_a_cell_with_a_syntax_error_is_refused_naming_its_line(shell, runs_dir):
    with pytest.raises(UsageError) as err:
        shell.run_cell_magic("train", "--steps 3", "import numpy\nx = (\n")
    message = str(err.value)
    assert "%%train cell, line 2" in message and "x = (" in message
    assert "\n" not in message
    assert no_run_folder(runs_dir)
    # a cell that compiles still makes its job (the check refuses only what cannot run)
    config = train_config({**TRAIN.defaults(), "model": None,
                           "source": "x = (1,\n 2)\nmodel, dataset = x\n"})
    assert config["source"].startswith("x = (1")


# 2. --seed --------------------------------------------------------------------------------------
def test_a_negative_seed_is_refused_by_the_grammar(runs_dir, capsys):
    from skiff.grammar.common import GrammarError

    with pytest.raises(GrammarError, match="--seed: expected an integer >= 0, got '-1'"):
        TRAIN.parse("mlp --seed -1")
    assert TRAIN.parse("mlp --seed 0").seed == 0
    with pytest.raises(ValueError, match="--seed must be an integer >= 0"):  # a form's values
        train_config({**TRAIN.defaults(), "model": "mlp", "seed": -3})
    one_line_refusal(cli(capsys, "train", "mlp", "--seed", "-1"), "--seed", "'-1'")
    assert no_run_folder(runs_dir)
    # generate/chat's sampling seed too (it failed in the job: "expected non-negative integer")
    from skiff.kinds import KINDS

    for kind in ("generate", "chat"):
        with pytest.raises(GrammarError, match="--seed: expected an integer >= 0, got '-1'"):
            KINDS[kind].command.parse("ckpt hi --seed -1")
        assert KINDS[kind].command.parse("ckpt hi --seed 7").seed == 7


# 3. --early-stop without a validation set -------------------------------------------------------
@pytest.mark.parametrize("line", ["mlp --early-stop 3", "cnn --early-stop 2",
                                  "mlp blobs --early-stop 3 --steps 4"])
def test_early_stop_on_the_built_in_arrays_needs_a_split(line, runs_dir):
    with pytest.raises(ValueError, match="--early-stop watches a validation loss, and the "
                                         "built-in data '(blobs|shapes)' holds none out: "
                                         "add --val-split"):
        train_config(vars(TRAIN.parse(line)))
    # with --val-split the Trainer holds those rows out
    assert train_config(vars(TRAIN.parse(line + " --val-split 0.2")))["val_split"] == 0.2
    # text holds a tenth out by default: accepted
    assert train_config(vars(TRAIN.parse("gpt-mini --early-stop 3")))["early_stopping"] == 3


def test_val_split_on_the_built_in_arrays_holds_rows_out(runs_dir, capsys):
    """It was dropped without a word (an empty val_history): the entry called every built-in
    data set split already. (--batch-size 256: 2 epochs in 6 steps, not 48; the split does
    not depend on the batch.)"""
    out = cli(capsys, "train", "mlp", "--val-split", "0.25", "--epochs", "2",
              "--batch-size", "256", "--json")
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)["result"]
    assert result["val_history"] and result["val_history"][-1]["val_loss"] > 0, result
    assert [h["epoch"] for h in result["val_history"]] == [1.0, 2.0], result["val_history"]
    out = cli(capsys, "train", "mlp", "--epochs", "2", "--batch-size", "256", "--json")
    assert out.returncode == 0, out.stderr
    assert not json.loads(out.stdout)["result"]["val_history"]


def test_early_stop_without_a_validation_set_exits_2_before_a_run_folder(runs_dir, capsys):
    one_line_refusal(cli(capsys, "train", "mlp", "--early-stop", "3"), "--early-stop",
                     "--val-split")
    assert no_run_folder(runs_dir)


def test_early_stop_on_notebook_arrays_needs_a_split_and_trains_with_one(shell, runs_dir):
    from skiff.kernels.train.data import make_blobs

    shell.user_ns["pts"] = make_blobs(64)
    shell.user_ns["X"], shell.user_ns["y"] = make_blobs(64).arrays
    with pytest.raises(UsageError, match="DATA 'pts' holds none out: add --val-split 0.1"):
        shell.run_line_magic("train", "mlp pts --early-stop 2")
    assert no_run_folder(runs_dir)
    job = shell.run_line_magic("train", "mlp (X, y) --early-stop 1 --val-split 0.25 "
                                        "--epochs 3 --wait")
    assert job.status == "done", job.error
    assert job.result["val_history"], job.result


# 4. MODEL / DATA variables that hold text --------------------------------------------------------
def test_a_variable_holding_text_is_named_with_what_it_holds(shell, runs_dir):
    shell.user_ns["s"] = "text"
    with pytest.raises(UsageError) as err:
        shell.run_line_magic("train", "s")
    message = str(err.value)
    assert message.startswith("MODEL 's' is a notebook variable holding the text 'text'")
    assert "mlp" in message  # what it could have held
    shell.user_ns["d"] = "no such corpus"
    with pytest.raises(UsageError, match="DATA 'd' is a notebook variable holding the text "
                                         "'no such corpus': unknown data"):
        shell.run_line_magic("train", "mlp d")
    assert no_run_folder(runs_dir)
    # a variable holding a built-in name still stands for it
    shell.user_ns["which"] = "mlp"
    request = TRAIN_KIND.prepare(vars(TRAIN.parse("which --steps 1")),
                                 user_ns=shell.user_ns)
    assert request.config["model"] == "mlp"
    # and one holding a folder of class folders of images stands for it (cnn trains on it)
    from PIL import Image

    for label in ("a", "b"):
        (runs_dir.parent / "imgs" / label).mkdir(parents=True)
        Image.new("L", (8, 8), 255 if label == "a" else 0).save(
            runs_dir.parent / "imgs" / label / "1.png")
    shell.user_ns["folder"] = str(runs_dir.parent / "imgs")
    request = TRAIN_KIND.prepare(vars(TRAIN.parse("cnn folder --steps 1")),
                                 user_ns=shell.user_ns)
    assert request.config["data"] == str(runs_dir.parent / "imgs")


# 5. jobs resume of a finished training -----------------------------------------------------------
def test_resume_of_a_finished_training_trains_as_many_steps_again(runs_dir, capsys):
    done = cli(capsys, "train", "mlp", "--steps", "5", "--json")
    assert done.returncode == 0, done.stderr
    first = json.loads(done.stdout)
    out = cli(capsys, "jobs", "resume", first["job"]["id"], "--json")
    assert out.returncode == 0, out.stderr
    again = json.loads(out.stdout)
    result = again["result"]
    # it goes on from the checkpoint at step 5 (before: "nothing trained", exit 0)
    assert result["resumed"]["from_step"] == 5 and result["steps"] == 10
    assert [h["step"] for h in result["history"]][-6:] == [5, 6, 7, 8, 9, 10]  # trained
    assert again["job"]["id"] != first["job"]["id"]
    # its summary says where it went on from, and no "nothing trained"
    from skiff.kinds.train import KIND

    lines = KIND.summary(result)
    assert "resumed from step 5" in lines and not any("nothing" in x for x in lines)


def test_resume_of_a_training_of_epochs_trains_one_more_epoch_each(runs_dir, capsys):
    done = cli(capsys, "train", "mlp", "--epochs", "1", "--batch-size", "256", "--json")
    assert done.returncode == 0, done.stderr
    first = json.loads(done.stdout)
    per_epoch = first["result"]["steps"]
    out = cli(capsys, "jobs", "resume", first["job"]["id"], "--json")
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)["result"]
    assert result["resumed"]["from_step"] == per_epoch and result["steps"] == 2 * per_epoch


def test_resume_of_a_cancelled_or_failed_training_goes_to_its_own_end():
    from types import SimpleNamespace

    from skiff.kinds.train import KIND

    config = train_config({**TRAIN.defaults(), "model": "mlp", "steps": 7})
    for status, result in (("cancelled", {"steps": 3, "stopped": "cancelled"}),
                           ("failed", None), ("done", {"steps": 4, "stopped": "diverged"})):
        job = SimpleNamespace(id="j", status=status, result=result, config=config,
                              run_dir=__import__("pathlib").Path("/nowhere"))
        again = KIND.resume_config(job)
        assert again["steps"] == 7 and again["resume"] is True


# 6. and 7. ernie: the data file's format and an adapter folder as --from ---------------
def _base(folder):
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({
        "architectures": ["Ernie4_5ForCausalLM"], "model_type": "ernie4_5",
        "hidden_size": 16, "intermediate_size": 32, "num_hidden_layers": 1,
        "num_attention_heads": 2, "num_key_value_heads": 1, "vocab_size": 64}))
    return folder


def test_an_ernie_data_file_of_another_format_exits_2_before_a_run_folder(tmp_path, runs_dir,
                                                                          capsys):
    base = _base(tmp_path / "base")
    data = tmp_path / "alpaca.json"
    # (Alpaca rows with their output are read since round 34; one without it is not)
    data.write_text(json.dumps([{"instruction": "add", "input": "1 2"}]))
    out = cli(capsys, "train", "ernie", str(data), "--from", str(base))
    one_line_refusal(out, "alpaca.json: row 1 has keys instruction, input")
    assert no_run_folder(runs_dir)
    rows = tmp_path / "rows.jsonl"
    rows.write_text(json.dumps({"prompt": "1 + 2", "completion": "3"}) + "\n")
    config = train_config(vars(TRAIN.parse(f"ernie {rows} --from {base}")))
    assert config["data"] == str(rows) and config["from"] == str(base)


def test_an_adapter_folder_is_accepted_as_from(tmp_path, runs_dir):
    base = _base(tmp_path / "base")
    adapter = tmp_path / "adapter"
    adapter.mkdir()
    (adapter / "adapter_config.json").write_text(json.dumps(
        {"base_model_name_or_path": str(base), "peft_type": "LORA", "r": 2}))
    text = tmp_path / "t.txt"
    text.write_text("some text to train on. " * 40)
    config = train_config(vars(TRAIN.parse(f"ernie {text} --from {adapter}")))
    assert config["from"] == str(adapter)
    # its adapters are trained on: new ones on top would fail in the job ("has LoRA adapters
    # already"), so --lora-r is refused here
    with pytest.raises(ValueError, match="is a LoRA adapter: training goes on with its own"):
        train_config(vars(TRAIN.parse(f"ernie {text} --from {adapter} --lora-r 4")))
    assert train_config(vars(TRAIN.parse(f"ernie {text} --from {base} --lora-r 4")))["lora"]
    # an adapter of a base that is not here is refused, naming the base
    (adapter / "adapter_config.json").write_text(json.dumps(
        {"base_model_name_or_path": "baidu/ERNIE-4.5-0.3B-PT"}))
    with pytest.raises(FileNotFoundError, match="LoRA adapter .*'baidu/ERNIE-4.5-0.3B-PT'"):
        train_config(vars(TRAIN.parse(f"ernie {text} --from {adapter}")))
    # a folder that is neither is still refused
    (adapter / "adapter_config.json").unlink()
    with pytest.raises(ValueError, match="no config.json there, nor the adapter_config.json"):
        train_config(vars(TRAIN.parse(f"ernie {text} --from {adapter}")))


# 8. and 9. solve: a right-hand side that is text; iteration(s) -------------------------
def _matrix(n=20):
    return sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(n, n)).tocsr()


@pytest.mark.parametrize("b, needle", [
    ("text", "B 's' is a notebook variable holding the text 'text'"),
    (["1", "2"], "B 's' is a list of <U1, not numbers"),
    (np.array([object(), 1.0]), "B 's' is a ndarray of object, not numbers"),
    (np.ones(7), "B 's' has 7 entries (shape (7,)) but the system has 20 unknowns"),
    # an (n, k) B is k right-hand sides since round 48 (h6: test_solve_magic_r48h6 solves it)
    (np.ones((20, 2, 1)), "B 's' has 40 entries (shape (20, 2, 1))"),
])
def test_a_right_hand_side_that_is_not_numbers_is_refused(shell, runs_dir, b, needle):
    shell.user_ns.update(A=_matrix(), s=b)
    with pytest.raises(UsageError) as err:
        shell.run_line_magic("solve", "A s")
    assert needle in str(err.value)
    assert no_run_folder(runs_dir)


def test_a_numeric_right_hand_side_still_solves(shell, runs_dir):
    shell.user_ns.update(A=_matrix(), s=list(range(20)))
    job = shell.run_line_magic("solve", "A s --wait")
    assert job.status == "done", job.error
    x = np.asarray(job.value.x)
    assert np.abs(_matrix() @ x - np.arange(20)).max() < 1e-6 * 20 * 20


@pytest.mark.parametrize("its, word", [(1, "converged in 1 iteration,"),
                                       (2, "converged in 2 iterations,"),
                                       (0, "converged in 0 iterations,")])
def test_the_solve_summary_says_iteration_in_the_singular_for_one(its, word):
    lines = SOLVE.summary({"problem": "poisson", "shape": [8, 8], "method": "cg",
                           "precond": "none", "device": "cpu", "converged": True,
                           "iterations": its, "relative_residual": 1e-9, "time_s": 0.1})
    assert any(line.startswith(word) for line in lines), lines


def test_a_solve_that_converges_in_one_iteration_says_so(shell, runs_dir):
    shell.user_ns.update(D=sp.identity(6, format="csr") * 2.0, e=np.ones(6))
    job = shell.run_line_magic("solve", "D e --method cg --wait")
    assert job.status == "done", job.error
    assert job.result["iterations"] == 1
    assert "converged in 1 iteration," in "\n".join(SOLVE.summary(job.result))
