"""The registry of job kinds: one decision of where a job runs, --device resolved once, and a
new kind reaching the magics, the CLI and the forms without touching them."""

from __future__ import annotations

import json

import numpy as np
import pytest
import scipy.sparse as sp

from skiff.grammar.common import command, device_option, launch_options, positive_int
from skiff.jobs import choose_runner, launch
from skiff.kernels.backend import devices
from skiff.kinds import KINDS, JobRequest, Kind
from skiff.kinds.ocr import is_image
from skiff.kinds.solve import is_system
from skiff.kinds.train import is_dataset, is_model


@pytest.mark.parametrize("np_,runner,launcher,want", [
    (1, "auto", "local", "thread"), (2, "auto", "local", "process"),
    (1, "process", "local", "process"), (1, "thread", "local", "thread"),
    (4, "auto", "slurm", "slurm"), (1, "thread", "slurm", "slurm")])
def test_choose_runner(np_, runner, launcher, want):
    assert choose_runner(np_, runner, launcher) == want


@pytest.mark.parametrize("np_,runner,launcher,msg", [
    (2, "thread", "local", "one rank"), (0, "auto", "local", "positive integer"),
    (1, "gpu", "local", "unknown runner"), (1, "auto", "k8s", "unknown launcher")])
def test_choose_runner_refuses(np_, runner, launcher, msg):
    with pytest.raises(ValueError, match=msg):
        choose_runner(np_, runner, launcher)


def test_device_is_resolved_once_at_launch_and_carried(tmp_path, monkeypatch):
    monkeypatch.setattr(devices, "gpu_available", lambda: False)
    job = launch("demo", {"steps": 1, "sleep": 0.0, "device": "auto"}, root=tmp_path).wait(10)
    assert job.config["device"] == "cpu" and job.meta["device"] == "cpu"
    assert "device cpu (auto: resolved at launch)" in (job.run_dir / "events.jsonl").read_text()
    # a job that names no device gets none
    assert launch("demo", {"steps": 1, "sleep": 0.0}, root=tmp_path).wait(10).meta["device"] \
        is None


def test_auto_device_for_ranks_is_each_ranks_own_gpu(monkeypatch):
    def gpu(i):
        return devices.Device(f"cuda:{i}", "gpu", "NVIDIA", "H100", i, 1, 1, 1)

    cpu = devices.Device("cpu", "cpu", "x", "x", 0, 1, 1, 1)
    monkeypatch.setattr(devices, "list_devices", lambda: [cpu, gpu(0), gpu(1)])
    monkeypatch.setattr(devices, "gpu_available", lambda: True)
    assert devices.launch_device("auto", ranks=1) == "cuda:0"
    assert devices.launch_device("auto", ranks=4) == "cuda:local"
    assert devices.launch_device("auto", gpus=0) == "cpu"       # a CPU-only cluster launch
    assert devices.launch_device("cuda:1", ranks=1) == "cuda:1"  # an explicit choice is kept
    monkeypatch.setenv("MPI_LOCALRANKID", "3")
    assert devices.resolve_device("cuda:local").name == "cuda:1"
    monkeypatch.setattr(devices, "list_devices", lambda: [cpu])
    with pytest.raises(devices.DeviceError, match="no GPU"):
        devices.resolve_device("cuda:local")


def test_the_recognisers():
    assert is_model(type("Net", (), {"parameters": lambda self: []})())
    assert not is_model(type("Net", (), {"parameters": lambda self: []}))  # a class
    assert is_dataset(np.zeros((4, 2))) and is_dataset([(1, 2)])
    assert not any(is_dataset(x) for x in ("text", {"a": 1}, 3, list))
    assert is_system(sp.eye(4, format="csr")) and is_system(np.eye(3))
    assert not is_system(np.ones((3, 2))) and not is_system(np.eye(1)) and not is_system([1])
    assert is_image(np.zeros((8, 8, 3), np.uint8)) and is_image("page.png")
    assert not is_image(np.zeros(8))


# a kind that nobody's front knows ----------------------------------------------------------
@command("echo", help="Repeat a word (a kind added in a test).")
@launch_options
@device_option
def ECHO(p):
    p.add_argument("word")
    p.add_argument("--times", type=positive_int, default=2)


def run_echo(config, reporter):
    reporter.progress(1, 1)
    return {"said": " ".join([config["word"]] * config["times"]), "device": config["device"]}


class EchoKind(Kind):
    name = "echo"
    command = ECHO
    entry = f"{__name__}:run_echo"

    def to_config(self, values):
        if values["word"] == "bad":
            raise ValueError("echo: 'bad' is not a word to repeat")
        return {"word": values["word"], "times": values["times"], "device": values["device"]}

    def prepare(self, values, *, cell=None, user_ns=None, where="thread"):
        word = (user_ns or {}).get(values["word"], values["word"])
        return JobRequest("echo", self.to_config({**values, "word": str(word)}))


@pytest.fixture
def echo_kind(monkeypatch, tmp_path):
    monkeypatch.setitem(KINDS, "echo", EchoKind())
    monkeypatch.setenv("SKIFF_RUNS", str(tmp_path))
    yield


def test_a_new_kind_gets_a_magic(echo_kind, monkeypatch):
    from IPython.core.error import UsageError
    from IPython.core.interactiveshell import InteractiveShell

    from skiff.magics import register_kind_magics

    shell = InteractiveShell.instance()
    # the shell is shared by the tests of this process: the %echo magic (its kind is gone with
    # the test) and the job in j go when it ends, and a name another test left would be read
    # in place of the word
    for where in ("line", "cell"):
        magics = shell.magics_manager.magics[where]
        monkeypatch.setitem(magics, "echo", magics.get("echo"))
    assert "echo" in register_kind_magics(shell)
    for name in ("bad", "x"):
        monkeypatch.delitem(shell.user_ns, name, raising=False)
    monkeypatch.setitem(shell.user_ns, "w", "hello")
    monkeypatch.setitem(shell.user_ns, "j", None)
    job = shell.run_line_magic("echo", "w --times 3 --wait -o j")
    assert shell.user_ns["j"] is job and job.result["said"] == "hello hello hello"
    with pytest.raises(UsageError, match="not a word"):
        shell.run_line_magic("echo", "bad")
    with pytest.raises(UsageError, match="--times"):
        shell.run_line_magic("echo", "x --times 0")


def test_a_new_kind_is_a_cli_command(echo_kind, capsys):
    from skiff.cli import main

    assert main(["echo", "hi", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["result"]["said"] == "hi hi" and doc["job"]["kind"] == "echo"
    assert main(["echo", "bad"]) == 2
    assert "not a word" in capsys.readouterr().err


def test_a_new_kind_gets_a_form(echo_kind):
    from skiff.widgets.form import CommandForm

    kind = KINDS["echo"]
    form = CommandForm(kind.command, kind.to_config)
    form.set(word="ahoy", times=2)
    job = form.launch()
    assert job is not None and job.wait(10).result["said"] == "ahoy ahoy"


def test_ocr_lang_takes_a_language_the_ch_set_reads():
    """A PaddleOCR user's ``lang="en"`` (or japan, fr): the shipped 'ch' set reads those, so it
    is the set picked, from the grammar and from the pipeline alike; a script no set reads is
    refused naming it and the way to add a recognizer."""
    import pytest

    from skiff.kernels.ocr.models import MODEL_SETS, get_model_set
    from skiff.kinds.ocr import to_config

    for lang in ("en", "EN", "japan", "fr", "chinese_cht"):
        assert to_config({"lang": lang, "inputs": ["x.png"]}, check_inputs=False)["model"] == "ch"
        assert get_model_set(lang) is MODEL_SETS["ch"]
    with pytest.raises(ValueError, match=r"--lang ru: no model set of skiff reads Cyrillic.*"
                                         r"%train ocr-rec"):
        to_config({"lang": "ru", "inputs": ["x.png"]}, check_inputs=False)
    with pytest.raises(ValueError, match=r"unknown model set 'ch5' \(did you mean"):
        to_config({"lang": "ch5", "inputs": ["x.png"]}, check_inputs=False)


def test_ocr_out_and_model_files_are_checked_before_any_image_is_read(tmp_path):
    """``--out x.docx`` wrote JSON lines into a .docx, ``--out`` under a folder that cannot be
    written failed after every image was read, and an image given as ``--rec-model`` started
    a job that ended in onnxruntime's protobuf error (round 24, a user's probe)."""
    import os

    import pytest

    from skiff.kinds.ocr import to_config

    def config(**values):
        return to_config({"inputs": ["x.png"], **values}, check_inputs=False)

    with pytest.raises(ValueError, match=r"--out 'x.docx': skiff writes FILE.txt .*not .docx"):
        config(out="x.docx")
    for fine in ("x.txt", "rows.CSV", "r.jsonl", "-", str(tmp_path / "new" / "deeper" / "r.txt")):
        config(out=fine)
    assert not (tmp_path / "new").exists()  # checked, not made, before the job
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    if not os.access(locked, os.W_OK):  # root writes anywhere: nothing to refuse then
        with pytest.raises(ValueError, match="cannot write there"):
            config(out=str(locked / "x.txt"))
    image = tmp_path / "tiny.png"
    image.write_bytes(b"\x89PNG")
    with pytest.raises(ValueError, match=r"--rec-model: an ONNX model file \(.onnx\)"):
        config(rec_model=str(image))
    with pytest.raises(ValueError, match="--det-model: no such file"):
        config(det_model=str(tmp_path / "none.onnx"))
