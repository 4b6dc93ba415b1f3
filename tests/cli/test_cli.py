"""``python -m skiff`` in a real subprocess where the process is what is tested (the top-level
help, ``devices --json``, a closed pipe, an image piped on stdin); the rest through
``skiff.cli.main`` in this process (round 41: ~1 CPU s of imports each)."""

import json
import os
import subprocess
import sys

import pytest

from .in_process import run_main


def run(*args, env=None, timeout=120):
    return subprocess.run([sys.executable, "-m", "skiff", *args], capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, **(env or {})})


def test_devices_json_lists_the_cpu(capsys):
    out = run_main("devices", "--json", capsys=capsys)  # in-process (round 42: ~1 CPU s)
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc[0]["name"] == "cpu" and doc[0]["cores"] >= 1


def test_jobs_json_after_a_job(runs_dir, capsys):
    from skiff.jobs import launch

    job = launch("demo", {"steps": 1, "sleep": 0}).wait(10)
    out = run_main("jobs", "--json", capsys=capsys)
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert [d["id"] for d in doc] == [job.id] and doc[0]["status"] == "done"
    out = run_main("jobs", "show", job.id[-4:], "--json", capsys=capsys)
    assert json.loads(out.stdout)["id"] == job.id


@pytest.mark.parametrize(
    "args, needle",
    [(("frobnicate",), "unknown command 'frobnicate'"),
     (("jobs", "--bogus"), "unrecognized arguments: --bogus"),
     (("jobs", "show", "nosuch"), "no job 'nosuch'")],
)
def test_bad_usage_exits_2_with_one_line(args, needle, capsys):
    out = run_main(*args, capsys=capsys)
    assert out.returncode == 2
    assert needle in out.stderr
    assert "Traceback" not in out.stderr


def test_help_lists_commands(capsys):
    out = run_main("--help", capsys=capsys)
    assert out.returncode == 0 and "devices" in out.stdout and "jobs" in out.stdout


def test_no_command_lists_the_commands_help_and_version(capsys):
    """As git does: no command prints the commands (stderr, status 2); `help CMD` is
    `CMD --help`; `--version` prints the version (round 22: it was an unknown command)."""
    from skiff import __version__

    def run(*args):
        return run_main(*args, capsys=capsys)

    bare = run()
    assert bare.returncode == 2 and "predict" in bare.stderr and "solve" in bare.stderr
    assert run("help").stdout == run("--help").stdout
    assert run("help", "ocr").stdout == run("ocr", "--help").stdout != ""
    version = run("--version")
    assert version.returncode == 0 and version.stdout.strip() == f"skiff {__version__}"


def test_a_command_summary_is_not_cut_inside_brackets(capsys):
    from skiff.kinds.chat import GENERATE

    assert GENERATE.summary.startswith("Continue a text with a checkpoint (or --chat: answer it)")
    assert run_main("--help", capsys=capsys).stdout.count("(or --chat: answer it)") == 1


def test_ocr_reads_an_image_piped_on_standard_input(tmp_path, runs_dir, capsys, monkeypatch):
    """`curl ... | python -m skiff ocr -` (round 22: "no such file, folder or pattern: '-'");
    the temporary file it is written to is gone when the job ends."""
    import glob
    import io
    import tempfile

    from PIL import Image

    from skiff.kernels.ocr.synth import FontsMissing, render_sample

    try:
        sample = render_sample("clean", 0, seed=3)
    except FontsMissing as exc:
        pytest.skip(str(exc))
    buf = io.BytesIO()
    Image.fromarray(sample.image).save(buf, "PNG")
    path = tmp_path / "page.png"
    path.write_bytes(buf.getvalue())
    want = run_main("ocr", str(path), "--out", "-", capsys=capsys)  # the file, read here
    assert want.returncode == 0 and want.stdout.strip(), want.stderr
    before = set(glob.glob(os.path.join(tempfile.gettempdir(), "skiff-stdin-*")))
    got = subprocess.run([sys.executable, "-m", "skiff", "ocr", "-", "--out", "-"],
                         input=buf.getvalue(), capture_output=True, timeout=300)
    assert got.returncode == 0, got.stderr
    assert got.stdout.decode() == want.stdout
    assert set(glob.glob(os.path.join(tempfile.gettempdir(), "skiff-stdin-*"))) == before
    # an empty pipe, in-process (a new interpreter cost ~1 CPU s: round 42)
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"")))
    empty = run_main("ocr", "-", capsys=capsys)
    assert empty.returncode == 2 and "nothing came on standard input" in empty.stderr


def test_ocr_dash_from_a_terminal_says_to_pipe(monkeypatch):
    from skiff.cli import _stdin_image
    from skiff.grammar import GrammarError

    class Tty:
        def isatty(self):
            return True

    monkeypatch.setattr(sys, "stdin", Tty())
    with pytest.raises(GrammarError, match="pipe one in"):
        _stdin_image({"inputs": ["-"]})
    assert _stdin_image({"inputs": ["a.png"]}) is None


def test_jobs_cancel_of_a_running_job_says_the_cancel_was_asked(runs_dir, capsys):
    """It printed only '<Job ... running 21%>', which reads as if nothing happened."""
    from skiff.jobs import launch

    job = launch("demo", {"steps": 400, "sleep": 0.05})
    try:
        out = run_main("jobs", "cancel", job.id, capsys=capsys)
        assert out.returncode == 0, out.stderr
        # asked; the job may stop before the command prints (a demo step is 0.05 s)
        assert ("cancel asked: it stops at its next step" in out.stdout
                or "cancel asked: it stopped (cancelled)" in out.stdout), out.stdout
        assert job.wait(30).status == "cancelled"
        # a finished job: how it ended, nothing asked
        again = run_main("jobs", "cancel", job.id, capsys=capsys)
        assert "cancelled" in again.stdout and "cancel asked" not in again.stdout
    finally:
        job.cancel()


@pytest.mark.parametrize("args", [("--help",), ("solve", "--help"), ("jobs",),
                                  ("jobs", "--json"), ("devices",)])
def test_a_closed_pipe_ends_quietly(args, runs_dir):
    """`python -m skiff --help | head -1` printed a BrokenPipeError traceback (the top-level
    help was outside the handler): a reader that left is no error to show."""
    read, write = os.pipe()
    os.close(read)  # the reader is gone before anything is written: EPIPE on the first write
    try:
        out = subprocess.run([sys.executable, "-m", "skiff", *args], stdout=write,
                             stderr=subprocess.PIPE, text=True, timeout=120)
    finally:
        os.close(write)
    assert "Traceback" not in out.stderr and "Exception ignored" not in out.stderr, out.stderr
    assert out.returncode in (0, 1)


def test_help_documents_the_exit_codes(capsys):
    out = run_main("--help", capsys=capsys)
    table = out.stdout.split("exit status:", 1)[1]
    codes = [int(line.split()[0]) for line in table.strip().splitlines()]
    assert codes == [0, 1, 2, 3, 124, 130]


def test_a_dumb_terminal_gets_plain_lines_not_redraws(monkeypatch):
    import io

    from skiff.jobs.terminal import LiveDisplay

    class Tty(io.StringIO):
        def isatty(self):
            return True

    monkeypatch.setenv("TERM", "xterm")
    assert LiveDisplay(Tty()).tty
    monkeypatch.setenv("TERM", "dumb")
    display = LiveDisplay(Tty())
    display.write("step 1")
    assert not display.tty and display.stream.getvalue() == "step 1\n"
