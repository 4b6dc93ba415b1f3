"""Round 29, as a panel user: the Solve tab with ``--np 3`` on a two-core machine showed no
message and kept Launch enabled; the refusal came only after the click, under the form.
The form now checks the ranks as a launch does and shows the message next to ``--np``. The
oracle: this machine's cores (``os.sched_getaffinity``) and the terminal's ``--dry-run``
verdict for the same line."""

from __future__ import annotations

import os

from skiff.cli import main
from skiff.widgets.panels import solve_form


def test_too_many_ranks_are_refused_next_to_np(runs_dir, capsys, monkeypatch):
    monkeypatch.delenv("SLURM_NTASKS", raising=False)
    monkeypatch.delenv("SLURM_JOB_ID", raising=False)
    cores = len(os.sched_getaffinity(0))
    form = solve_form()
    form.set(problem="poisson", grid="32x32", np=str(cores + 1))
    assert main(["solve", "poisson", "--grid", "32x32", "--np", str(cores + 1),
                 "--dry-run"]) == 2  # the terminal refuses the same line
    assert f"--np {cores + 1} is more ranks" in capsys.readouterr().err
    assert form.errors.keys() == {"np"} and f"--np {cores}" in form.errors["np"]
    assert form.launch_button.disabled
    form.set(oversubscribe=True)  # as the message says
    assert form.errors == {} and not form.launch_button.disabled
    form.set(oversubscribe=False, np=str(cores))
    assert form.errors == {} and not form.launch_button.disabled
