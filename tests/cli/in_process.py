"""``python -m skiff ARGS`` run through :func:`skiff.cli.main` in the test's process: the
command's exit status, stdout and stderr as ``subprocess.run`` gives them, without the ~1 CPU
s of a new interpreter's imports each (round 41: the help and mistake tests ran ~30 of them;
each file keeps a real process where the process itself is what is tested)."""

from __future__ import annotations

import subprocess


def run_main(*args, capsys) -> subprocess.CompletedProcess:
    from skiff.cli import main

    capsys.readouterr()
    rc = main(list(args))
    said = capsys.readouterr()
    return subprocess.CompletedProcess(["python", "-m", "skiff", *args], rc, said.out,
                                       said.err)
