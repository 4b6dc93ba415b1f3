"""Round 37: ``jobs prune --status failed`` (remove my failed jobs) said only "prune needs
--older-than AGE (like 7d) or --keep N (or both)"; that ``--keep 0`` is the way to remove
every such job was nowhere. The error now names it with the user's own filters; the oracle
is what that command then removes: the failed jobs, and no other."""

from __future__ import annotations

import re
import shlex

from skiff.cli import main
from skiff.jobs import launch


def test_prune_with_a_filter_only_names_keep_0(runs_dir, capsys):
    jobs = [launch("demo", {"steps": 2, "sleep": 0.0, **({"fail_at": 2} if i % 2 else {})},
                   runner="thread") for i in range(4)]
    for job in jobs:
        job.wait(60)
    failed = {j.id for j in jobs if j.status == "failed"}
    assert len(failed) == 2
    capsys.readouterr()
    assert main(["jobs", "prune", "--status", "failed"]) == 2
    said = capsys.readouterr().err
    hint = re.search(r"\((--status failed --keep 0) removes every such finished job\)", said)
    assert hint, said
    assert main(["jobs", "prune", *shlex.split(hint.group(1))]) == 0
    left = {p.name for p in runs_dir.iterdir()}
    assert left == {j.id for j in jobs} - failed
