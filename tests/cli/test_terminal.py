"""``python -m skiff`` as a person sees it: a live line on a terminal (a pseudo-terminal
here), a short summary, ``--json`` alone on stdout, help, "did you mean", and mistakes caught
before a run folder exists."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import select
import struct
import subprocess
import sys
import termios
import time

import pytest

from skiff.jobs import list_run_dirs

from .in_process import run_main


def run(*args, timeout=240):
    return subprocess.run([sys.executable, "-m", "skiff", *args], capture_output=True,
                          text=True, timeout=timeout, env=os.environ.copy())


def run_on_a_terminal(*args, timeout=240) -> tuple[str, str, int]:
    """Run with stderr on a pseudo-terminal; returns (what the terminal got, stdout, rc)."""
    master, slave = pty.openpty()
    # a terminal 120 columns wide, whatever the test runner's own COLUMNS says
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    proc = subprocess.Popen([sys.executable, "-m", "skiff", *args], stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=slave, env=os.environ.copy())
    os.close(slave)
    screen = b""
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.2)
            if ready:
                try:
                    chunk = os.read(master, 65536)
                except OSError:  # the child closed its end
                    break
                if not chunk:
                    break
                screen += chunk
            elif proc.poll() is not None:
                break
        out = proc.stdout.read().decode()
        rc = proc.wait(timeout=max(1.0, deadline - time.monotonic()))
    finally:
        if proc.poll() is None:
            proc.kill()
        os.close(master)
    return screen.decode(errors="replace"), out, rc


def test_a_live_line_updated_in_place_on_a_terminal():
    screen, out, rc = run_on_a_terminal("solve", "poisson", "--grid", "64x64")
    assert rc == 0, screen
    draws = [d for d in screen.split("\r") if "decades" in d]
    assert draws, screen
    for draw in draws:  # one line each time: redrawn in place, erased to its end
        assert "\n" not in draw.rstrip("\r\n") and draw.rstrip("\r\n").endswith("\x1b[K")
        assert draw.startswith("solve ") and "%|" in draw and "residual" in draw
    assert "100%|" in draws[-1] and "8/8 decades" in draws[-1]
    assert screen.endswith("\n")
    # the summary goes to stdout, short and human
    assert "done in" in out and "converged in 5 iterations" in out
    assert "run folder: " in out and "residuals" not in out


def test_summary_and_plain_lines_when_not_a_terminal():
    start = time.monotonic()
    out = run("solve", "poisson", "--grid", "64x64", "--rtol", "1e-6")
    wall = time.monotonic() - start
    assert out.returncode == 0, out.stderr
    assert "\r" not in out.stderr and "\x1b" not in out.stderr
    # the job line, a plain line at most every 10 s, then the line it ended on, once
    # (round 41: that one was there or not as the job's end raced the first look)
    assert 2 <= out.stderr.count("\n") <= 3 + wall / 10, out.stderr
    last = out.stderr.splitlines()[-1].split()
    assert last[0] == "solve" and last[2] == "done" and out.stderr.count(" done ") == 1, \
        out.stderr
    lines = out.stdout.strip().splitlines()
    assert lines[0].startswith("solve ") and " done in " in lines[0]
    assert "poisson 64x64: cg + mg on cpu" in out.stdout
    assert "|r|/|b| = " in out.stdout and len(lines) <= 8
    # short lines (the run folder's path is as long as the test's temporary folder)
    assert all(len(line) < 120 for line in lines if "run folder: " not in line)
    run_dir = lines[-1].split("run folder: ")[1]
    assert os.path.isdir(run_dir)


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    from PIL import Image

    from skiff.kernels.ocr.synth import FontsMissing, render_page

    folder = tmp_path_factory.mktemp("pages")
    try:
        Image.fromarray(render_page(["今天天气很好", "skiff reads text"], seed=1)).save(
            folder / "good.png")
    except FontsMissing as exc:
        pytest.skip(str(exc))
    (folder / "broken.png").write_bytes(b"not an image at all")
    return folder


def test_ocr_json_alone_unescaped_and_exit_1_naming_the_input_that_failed(pages, tmp_path):
    out_file = tmp_path / "text.jsonl"
    out = run("ocr", str(pages / "good.png"), str(pages / "broken.png"), "--out",
              str(out_file), "--json")
    assert out.returncode == 1, out.stderr
    doc = json.loads(out.stdout)  # stdout is the JSON document and nothing else
    assert "今天天气很好" in out.stdout and "\\u4eca" not in out.stdout
    assert doc["job"]["status"] == "done" and doc["result"]["errors"] == 1
    assert len(doc["failed"]) == 1 and doc["failed"][0].startswith(str(pages / "broken.png"))
    assert "1 input failed" in out.stderr and str(pages / "broken.png") in out.stderr
    records = [json.loads(line) for line in out_file.read_text().splitlines()]
    good = [r for r in records if not r["error"]]   # the good one was written
    assert len(good) == 1 and "今天天气很好" in good[0]["text"]


def test_ocr_text_on_stdout_alone_with_out_dash_and_after_the_summary_for_one_image(
        pages, tmp_path, monkeypatch, capsys):
    """``--out -`` puts the text on stdout and nothing else (the summary on stderr), and
    writes no file named "-"; one image read with no --out prints its text after the
    summary; a folder of several with no --out prints no text. In this process (round 41:
    four processes loaded the models four times; the --json test above keeps a real one)."""
    monkeypatch.chdir(tmp_path)

    def ocr(*args):
        return run_main("ocr", *args, capsys=capsys)

    alone = ocr(str(pages / "good.png"), "--out", "-")
    assert alone.returncode == 0, alone.stderr
    assert alone.stdout.splitlines() == ["今天天气很好", "skiff reads text"], alone.stdout
    assert "done in" in alone.stderr and "run folder: " in alone.stderr
    assert not (tmp_path / "-").exists()
    after = ocr(str(pages / "good.png"))
    assert after.returncode == 0, after.stderr
    summary, _, text = after.stdout.partition("\n\n")
    assert "done in" in summary and "run folder: " in summary
    assert text.splitlines() == ["今天天气很好", "skiff reads text"], after.stdout
    (tmp_path / "two").mkdir()
    for name in ("a.png", "b.png"):
        (tmp_path / "two" / name).write_bytes((pages / "good.png").read_bytes())
    several = ocr(str(tmp_path / "two"))
    assert several.returncode == 0 and "今天" not in several.stdout, several.stdout
    both = ocr(str(tmp_path / "two"), "--out", "-")
    assert both.stdout.count("=== ") == 2 and both.stdout.count("今天天气很好") == 2


def test_help_lists_each_command_with_a_line():
    out = run("--help")
    assert out.returncode == 0
    for name in ("train", "solve", "ocr", "devices", "jobs", "plan"):
        line = next(li for li in out.stdout.splitlines() if li.strip().startswith(name + " "))
        assert len(line.split()) > 3, line   # a description follows the name


@pytest.mark.parametrize("command", ["solve", "train", "ocr", "jobs", "plan"])
def test_help_leaves_out_notebook_only_options(command, capsys):
    out = run_main(command, "--help", capsys=capsys)
    assert out.returncode == 0, out.stderr
    assert "--output" not in out.stdout and "notebook variable NAME" not in out.stdout


@pytest.mark.parametrize(
    "args, needle",
    [(("trian",), "unknown command 'trian' (did you mean 'train'?)"),
     (("solve", "poison"), "unknown problem 'poison' (did you mean 'poisson'?)"),
     (("train", "mlp", "--step", "3"), "unrecognized arguments: --step 3 (did you mean "
                                       "'--steps'?)"),
     (("solve", "poisson", "--method", "gc"), "invalid choice: 'gc' (did you mean 'cg'?)"),
     (("train", "gpt-mimi"), "unknown model 'gpt-mimi' (did you mean 'gpt-mini'?)"),
     (("train", "mlp", "blbos"), "unknown data 'blbos' (did you mean 'blobs'?)"),
     (("ocr", "x.png", "--lang", "ch4"), "unknown model set 'ch4' (did you mean"),
     (("ocr", "x.png", "--lang", "korean"), "no model set of skiff reads Korean (Hangul)"),
     (("solve", "poisson", "-o", "sol"), "-o/--output is for notebooks only"),
     (("solve", "poisson", "--grid", "512"), "expected a grid of 2 or 3 sizes"),
     (("solve", "poisson", "--grid", "32x"), "expected a grid like 256x256")],
)
def test_mistakes_are_one_line_before_any_run_folder(args, needle, runs_dir, capsys):
    out = run_main(*args, capsys=capsys)
    assert out.returncode == 2, out.stderr
    assert needle in out.stderr and "Traceback" not in out.stderr
    assert len(out.stderr.strip().splitlines()) <= 3
    assert list_run_dirs(runs_dir) == []


def test_a_job_cannot_steer_the_terminal_through_jobs_show():
    from skiff.jobs import launch

    def boom(config, reporter):
        reporter.log("\x1b]0;title\x07 log")
        raise ValueError("\x1b[2J\x1b[31mscreen wiped\x1b[0m")

    job = launch("demo", {}, fn=boom).wait(30)
    assert job.status == "failed"
    out = run("jobs", "show", job.id)
    assert out.returncode == 0, out.stderr
    assert "\x1b" not in out.stdout and "\\x1b[2J" in out.stdout
