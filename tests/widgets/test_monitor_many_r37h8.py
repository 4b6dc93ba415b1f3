"""Round 37: the Jobs tab shows the newest ``limit`` jobs; with more in the runs folder its
heading said "20 jobs (0 running)", as if there were no others, and a running job older than
the 20 newest was nowhere. It now says how many there are and how to list them; the oracle
is the number of run folders."""

from __future__ import annotations

import pytest

from skiff.jobs import launch
from skiff.widgets.monitor import JobMonitor


def test_the_heading_says_how_many_are_not_shown(runs_dir):
    for _ in range(5):
        launch("demo", {"steps": 1, "sleep": 0.0}, runner="thread").wait(60)
    folders = len(list(runs_dir.iterdir()))
    mon = JobMonitor(limit=3, start=False)
    try:
        mon.refresh()
        assert len(mon.rows) == 3
        assert f"the <b>3</b> newest of {folders} jobs (0 of them running)" in \
            mon.heading.value
        assert "%jobs --all" in mon.heading.value
        whole = JobMonitor(limit=folders, start=False)
        whole.refresh()
        assert f"<b>{folders}</b> jobs (0 running)" in whole.heading.value
        whole.close()
    finally:
        mon.close()


@pytest.mark.parametrize("newer", [4, 53], ids=["in-the-window", "older-than-it"])
def test_an_older_running_job_stays_a_row(runs_dir, tmp_path, newer):
    """The monitor reads the newest limit + 50 folders; one older than those is found by
    its missing folded.json (53 newer jobs: 2 rows + the 50 read beyond them + 1)."""
    hold = tmp_path / "go"
    old = launch("demo", {"steps": 3, "sleep": 0.0, "hold_at": 2, "hold_until": str(hold)},
                 runner="thread")
    for _ in range(newer):
        launch("demo", {"steps": 1, "sleep": 0.0}, runner="thread").wait(60)
    mon = JobMonitor(limit=2, start=False)
    try:
        mon.refresh()
        assert old.status == "running"          # the oracle: the job itself
        assert old.id in mon.rows and len(mon.rows) == 3
        assert f"the <b>2</b> newest of {newer + 1} jobs and 1 older still running (1 of " \
               f"them running)" in mon.heading.value
        hold.write_text("")
        old.wait(60)
        mon.refresh()
        assert old.id not in mon.rows and len(mon.rows) == 2
        assert f"the <b>2</b> newest of {newer + 1} jobs (0 of them running)" in \
            mon.heading.value
    finally:
        hold.write_text("")
        mon.close()
