"""Round 42, as a user: a script that ended while the int8 recognizer was built (``precision
="hybrid"`` in a job's thread, not waited for) left its ``quantize_rec`` child running for
minutes, building a ``.tmp`` in the cache that no one renamed. Now the script's exit ends the
child and removes its partial file, and a build removes the partial files of processes that
are gone (one killed: no exit handler ran). The child here is a stand-in (``sys.executable``
named to a script that takes the build's arguments, writes part of its file and waits): the
oracle is the process table (its pid gone once the script has exited) and the cache
folder's files.

Needs the change requested in /work/round42/h8-requests.md (skiff/kernels/ocr/quantize.py)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from skiff.kernels.ocr import quantize

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="POSIX process table")

CHILD = '''
import os, sys, time
src, tmp = sys.argv[-2:]  # python -m skiff.kernels.ocr.quantize_rec SRC TMP
with open(tmp, "wb") as f:
    f.write(b"partial")  # part of the model: never renamed unless the build ends
if os.environ.get("FAKE_BUILD_WAIT") == "1":
    with open(os.environ["FAKE_BUILD_PID"], "w") as f:
        f.write(str(os.getpid()))
    for _ in range(1200):  # bounded: 120 s, then it ends by itself
        time.sleep(0.1)
'''

SCRIPT = '''
import os, sys, threading, time
from skiff.kernels.ocr import quantize
sys.executable = os.environ["FAKE_PYTHON"]  # what the build's child is run with
threading.Thread(target=quantize.int8_recognizer, args=(sys.argv[1],), daemon=True).start()
pid_file = os.environ["FAKE_BUILD_PID"]
for _ in range(600):  # the child has started and written part of its file: the script ends
    if os.path.exists(pid_file) and open(pid_file).read():
        break
    time.sleep(0.05)
else:
    sys.exit("the build child never started")
'''


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.fixture
def fake_build(tmp_path, monkeypatch):
    python = tmp_path / "fake-python"
    python.write_text(f"#!{sys.executable}\n" + textwrap.dedent(CHILD))
    python.chmod(0o755)
    src = tmp_path / "rec.onnx"
    src.write_bytes(b"a recognizer")
    env = {**os.environ, "SKIFF_CACHE": str(tmp_path / "cache"),
           "FAKE_PYTHON": str(python),
           "FAKE_BUILD_PID": str(tmp_path / "child.pid")}
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    return src, env


def test_the_scripts_exit_ends_the_build_and_its_partial_file(tmp_path, fake_build):
    src, env = fake_build
    script = tmp_path / "script.py"
    script.write_text(textwrap.dedent(SCRIPT))
    done = subprocess.run([sys.executable, str(script), str(src)], env={
        **env, "FAKE_BUILD_WAIT": "1"}, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    pid = int((tmp_path / "child.pid").read_text())
    alive = _alive(pid)
    if alive:  # left running (the bug): ended here, not left for minutes
        os.kill(pid, 9)
    assert not alive, "the build's child outlived the script"
    assert list((tmp_path / "cache" / "ocr").glob("*.tmp")) == []


def test_a_build_removes_partial_files_of_processes_gone(tmp_path, fake_build, monkeypatch):
    src, env = fake_build
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    monkeypatch.setattr(sys, "executable", env["FAKE_PYTHON"])
    target = quantize.int8_rec_path(src)
    target.parent.mkdir(parents=True)
    stale = target.with_name(f".{target.name}.{int(gone.stdout)}.tmp")
    stale.write_bytes(b"partial")  # left by a process killed while it built
    assert quantize.int8_recognizer(src) == target and target.read_bytes() == b"partial"
    assert not stale.exists()
