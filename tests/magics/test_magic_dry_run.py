"""``%train / %solve / %ocr / %chat ... --dry-run`` in a notebook: every check, then the plan
and config in the cell; no run folder, no job. The oracle is the job a real launch of the
same line records (its config), and the runs root, which must stay empty."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell

from skiff.jobs import Job, list_jobs


@pytest.fixture(scope="module")
def shell():
    ip = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "skiff")
    return ip


def _no_run_folder(runs_dir):
    return not runs_dir.exists() or not any(runs_dir.iterdir())


def test_train_dry_run_shows_the_config_a_real_launch_records(shell, runs_dir):
    line = "mlp --steps 3 --lr 0.02 --device cpu"
    doc = shell.run_line_magic("train", line + " --dry-run")
    assert not isinstance(doc, Job) and _no_run_folder(runs_dir) and list_jobs() == []
    assert doc["dry_run"] is True and doc["runner"] == "thread" and doc["np"] == 1
    assert doc["command"] == f"%train {line}"  # the line that starts it
    text = repr(doc)
    assert "nothing started, no run folder made" in text and "steps: 3" in text
    job = shell.run_line_magic("train", line + " --wait")  # the oracle: what it runs
    assert job.status == "done", job.error
    assert doc["config"] == job.config


def test_solve_dry_run_of_a_notebook_matrix(shell, runs_dir):
    import scipy.sparse as sp

    A = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(50, 50)).tocsr()
    shell.user_ns.update(A=A, b=np.ones(50))
    doc = shell.run_line_magic("solve", "A b --method cg --rtol 1e-9 --dry-run -o plan")
    assert shell.user_ns["plan"] is doc and _no_run_folder(runs_dir)
    assert doc["kind"] == "solve" and doc["config"]["method"] == "cg"
    job = shell.run_line_magic("solve", "A b --method cg --rtol 1e-9 --wait")
    assert job.status == "done", job.error
    assert doc["config"].keys() == job.config.keys()


def test_dry_run_checks_as_a_launch_does(shell, runs_dir):
    # a mistake is the same one-line usage error, still with no run folder
    with pytest.raises(UsageError, match="--nodes 2 is for a cluster"):
        shell.run_line_magic("train", "mlp --nodes 2 --dry-run")
    with pytest.raises(UsageError):
        shell.run_line_magic("solve", "poisson --grid big --dry-run")
    assert _no_run_folder(runs_dir)


def test_cell_dry_run_runs_no_cell_code(shell, runs_dir, tmp_path):
    marker = tmp_path / "ran"
    cell = f"open({str(marker)!r}, 'w').close()\nfrom skiff.models import MLP\n" \
        "model = MLP(2, 1)\ndataset = None\n"
    doc = shell.run_cell_magic("train", "--steps 2 --dry-run", cell)
    assert doc["command"].startswith("%%train") and _no_run_folder(runs_dir)
    assert not marker.exists()  # the cell is the job's code: a dry run does not run it


def test_ocr_and_chat_dry_runs_make_no_folder(shell, runs_dir, tmp_path):
    from PIL import Image

    scan = tmp_path / "scan.png"
    Image.new("RGB", (40, 20), "white").save(scan)
    shell.user_ns["scan"] = str(scan)
    doc = shell.run_line_magic("ocr", "scan --dry-run --device cpu")
    assert doc["kind"] == "ocr" and "scan" in json.dumps(doc["config"]["inputs"])
    assert doc["command"] == "%ocr scan --device cpu" and _no_run_folder(runs_dir)
    # a --dry-run inside a prompt is text; the one outside asks for the dry run
    from safetensors.numpy import save_file

    # a checkpoint folder as the dry run reads it (its config.json, its weights file there):
    # not one made with transformers, ~3 CPU s of imports for a run that loads no weight
    ckpt = tmp_path / "ckpt"
    ckpt.mkdir()
    (ckpt / "config.json").write_text(json.dumps({
        "model_type": "ernie4_5", "architectures": ["Ernie4_5ForCausalLM"], "hidden_size": 16,
        "num_hidden_layers": 1, "num_attention_heads": 2, "num_key_value_heads": 1,
        "intermediate_size": 32, "vocab_size": 100, "tie_word_embeddings": True}))
    save_file({"model.embed_tokens.weight": np.zeros((100, 16), np.float32)},
              str(ckpt / "model.safetensors"))
    from tokenizers import Tokenizer, models  # the tokenizer the prompt's length is read
    # with at submit (round 45 h16: a checkpoint without one is refused before the job)
    Tokenizer(models.WordLevel({"[UNK]": 0}, unk_token="[UNK]")).save(
        str(ckpt / "tokenizer.json"))
    (ckpt / "tokenizer_config.json").write_text(json.dumps(
        {"chat_template": "{% for m in messages %}{{ m['content'] }}{% endfor %}"}))
    doc = shell.run_line_magic("chat", f"{ckpt} 'what does --dry-run do' --dry-run")
    assert doc["kind"] in ("chat", "generate") and _no_run_folder(runs_dir)
    assert "what does --dry-run do" in json.dumps(doc["config"])


def test_slurm_dry_run_writes_the_script_but_no_run_folder(shell, runs_dir, monkeypatch,
                                                           tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin") + os.pathsep + "/usr/bin:/bin")
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))  # the script goes there
    doc = shell.run_line_magic(
        "train", "mlp --steps 5 --launcher slurm --nodes 2 --gpus-per-node 4 --dry-run")
    assert _no_run_folder(runs_dir) and list_jobs() == []
    assert doc["runner"] == "slurm" and doc["np"] == 8 and doc["config"]["steps"] == 5
    sub = doc["submission"]
    text = open(sub["script"]).read()
    assert "#SBATCH --nodes=2" in text and "#SBATCH --ntasks-per-node=4" in text
    assert sub["submitted"] is False and not os.path.exists(sub["run_dir"])
    assert f"-m skiff.jobs.worker {sub['run_dir']}" in text
    assert os.path.dirname(os.path.dirname(sub["script"])) == str(tmp_path)
