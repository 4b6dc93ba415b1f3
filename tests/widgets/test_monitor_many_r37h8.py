"""Round 37: the Jobs tab shows the newest ``limit`` jobs; with more in the runs folder its
heading said "20 jobs (0 running)", as if there were no others, and a running job older than
the 20 newest was nowhere. It now says how many there are and how to list them; the oracle
is the number of run folders."""

from __future__ import annotations

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
