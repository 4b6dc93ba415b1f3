"""%train and %%train through a real IPython shell, and python -m skiff train."""

from __future__ import annotations

import json

import numpy as np
import pytest
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell

from skiff.jobs import Job


@pytest.fixture(scope="module")
def shell():
    ip = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "skiff")
    return ip


def test_builtin_model_on_its_own_data(shell):
    job = shell.run_line_magic("train", "mlp --steps 4 --lr 0.01 --wait -o tj")
    assert isinstance(job, Job) and shell.user_ns["tj"] is job
    assert job.status == "done", job.error
    result = job.value
    assert result.steps == 4 and type(result.model).__name__ == "MLP"
    assert job.result["steps"] == 4 and len(job.result["history"]) == 4
    metrics = job.state.metrics
    assert "loss" in metrics
    assert (job.run_dir / "model.npz").is_file()
    assert job.artifact_path("loss curve") is not None
    assert job.config["model"] == "mlp" and job.config["data"] == "blobs"


def test_notebook_objects_are_trained_in_place(shell):
    from skiff.kernels.train.core import random as train_random
    from skiff.kernels.train.data import make_blobs
    from skiff.kernels.train.models import MLP

    train_random.seed(0)
    shell.user_ns["net"] = MLP(2, 4, (8,))
    shell.user_ns["points"] = make_blobs(64)
    before = shell.user_ns["net"].state_dict()
    job = shell.run_line_magic("train", "net points --steps 3 --batch-size 16 --wait")
    assert job.status == "done", job.error
    assert job.value.model is shell.user_ns["net"]
    after = shell.user_ns["net"].state_dict()
    assert any(not np.array_equal(before[k], after[k]) for k in before)


def test_a_notebook_model_trains_on_the_rows_of_a_table_file(shell, tmp_path):
    """``%train net data.csv``: the table's rows (features standardised, the target column
    by name), not its bytes as text (it failed with "input of shape (16, 128)")."""
    from skiff.kernels.train.core import random as train_random
    from skiff.kernels.train.models import MLP

    rng = np.random.default_rng(0)
    x = rng.normal(size=(400, 3)) * [1.0, 50.0, 0.01]
    label = (x[:, 0] + x[:, 1] / 50.0 > 0).astype(int)
    path = tmp_path / "rows.csv"
    path.write_text("a,b,c,label\n" + "".join(f"{r[0]:.5f},{r[1]:.5f},{r[2]:.7f},{c}\n"
                                               for r, c in zip(x, label, strict=True)))
    train_random.seed(0)
    shell.user_ns["tabnet"] = MLP(3, 2, (16,))
    job = shell.run_line_magic("train", f"tabnet {path} --epochs 30 --lr 0.01 --wait")
    assert job.status == "done", job.error
    scaling = json.loads((job.run_dir / "table.json").read_text())
    assert scaling["target"] == "label"
    z = (x - np.array(scaling["x_mean"])) / np.array(scaling["x_std"])
    net = shell.user_ns["tabnet"]
    predicted = net(z.astype("f4")).numpy().argmax(1)
    assert (predicted == label).mean() > 0.9


def test_cell_defines_model_and_dataset(shell):
    shell.user_ns.pop("model", None)
    cell = (
        "from skiff.kernels.train.models import MLP\n"
        "from skiff.kernels.train.data import make_blobs\n"
        "model = MLP(2, 4, (8,))\n"
        "dataset = make_blobs(64)\n"
        "val_dataset = make_blobs(32, seed=1)\n"
    )
    job = shell.run_cell_magic("train", "--epochs 2 --batch-size 16 --wait", cell)
    assert job.status == "done", job.error
    assert type(shell.user_ns["model"]).__name__ == "MLP"
    assert shell.user_ns["model"] is job.value.model
    assert len(job.value.val_history) == 2


def test_resume_continues_from_the_checkpoint_dir(shell, tmp_path):
    ck = tmp_path / "ck"
    first = shell.run_line_magic("train", f"mlp --steps 3 --checkpoint-dir {ck} --wait")
    assert first.status == "done", first.error
    again = shell.run_line_magic("train", f"mlp --steps 6 --checkpoint-dir {ck} --resume --wait")
    assert again.status == "done", again.error
    hist = again.value.history
    assert [r["step"] for r in hist] == [1, 2, 3, 4, 5, 6]
    assert [r["loss"] for r in hist[:3]] == [r["loss"] for r in first.value.history]
    assert (ck / "step-00000006.npz").is_file()


@pytest.mark.parametrize("line, cell, words", [
    ("gpt-huge", None, ["gpt-huge", "gpt-mini"]),
    ("mlp --steps 0", None, ["--steps", "0"]),
    ("net points --np 2", None, ["cannot travel", "%%train --np N"]),
    ("net", None, ["DATA is needed"]),
    ("nett points", None, ["unknown model 'nett' (did you mean 'net'?)"]),
    ("--steps 2", "x = 1\n", ["must define model and dataset; missing: model, dataset"]),
    ("mlp", "model = 1\n", ["from the cell"]),
])
def test_misuse_is_a_one_line_usage_error(shell, line, cell, words):
    from skiff.kernels.train.models import MLP

    shell.user_ns["net"] = MLP(2, 4, (8,))
    shell.user_ns["points"] = np.zeros((4, 2))
    with pytest.raises(UsageError) as info:
        if cell is None:
            shell.run_line_magic("train", line)
        else:
            shell.run_cell_magic("train", line, cell)
    for w in words:
        assert w in str(info.value)


@pytest.mark.slow
def test_cli_train_json(tmp_path, capsys):
    # in this process (round 42: a new interpreter's imports were most of its CPU time);
    # tests/cli checks a document alone on a real process's stdout
    from tests.cli.in_process import run_main

    out = run_main("train", "mlp", "--steps", "3", "--json", capsys=capsys)
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["job"]["status"] == "done" and doc["result"]["steps"] == 3


CELL_NP = (
    "from skiff.kernels.train.models import MLP\n"
    "from skiff.kernels.train.data import make_blobs\n"
    "model = MLP(2, 4, (8,))\n"
    "dataset = make_blobs(64)\n"
)


@pytest.mark.mpi
@pytest.mark.slow
def test_cell_on_two_ranks_comes_back_as_the_trained_model(shell):
    shell.user_ns.pop("model", None)
    job = shell.run_cell_magic("train", "--np 2 --steps 3 --batch-size 16 --wait", CELL_NP)
    assert job.status == "done", job.error
    assert job.meta["runner"] == "process" and job.meta["np"] == 2
    model = shell.user_ns["model"]
    assert job.value.model is model and job.result["steps"] == 3
    # the same cell on one rank, same global batch: the same weights (fp32 all-reduce)
    one = shell.run_cell_magic("train", "--steps 3 --batch-size 16 --wait", CELL_NP)
    assert one.status == "done", one.error
    ref = one.value.model.state_dict()
    got = model.state_dict()
    for k in ref:
        np.testing.assert_allclose(got[k], ref[k], rtol=0, atol=1e-5)


@pytest.mark.mpi
@pytest.mark.slow
def test_builtin_model_on_two_ranks_loads_back_from_its_weights(shell):
    job = shell.run_line_magic("train", "mlp --np 2 --steps 2 --batch-size 16 --wait")
    assert job.status == "done", job.error
    model = job.value.model
    with np.load(job.run_dir / "model.npz") as z:
        for k, v in model.state_dict().items():
            assert np.array_equal(z[k], v), k
    assert job.result["steps"] == 2 and job.result["strategy"]["strategy"] != "single"

