"""Round 40: ``%jobs show ID -f`` (and ``%jobs attach ID``) in IPython without a widget front
end (a terminal's ``ipython``) showed the job once, still running, and returned at once;
the text it showed even said "-f follows it live". It follows the job now as ``jobs attach
ID`` does in a terminal: its progress line until it ends, then the job as it ended; Ctrl-C
stops the following, not the job. The oracle: the job's own final status, reached only when
the test lets it go on after the magic has started."""

from __future__ import annotations

import threading
import time

import pytest
from IPython.core.interactiveshell import InteractiveShell

from skiff.jobs import launch


@pytest.fixture(scope="module")
def shell():
    ip = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "skiff")
    return ip


@pytest.mark.parametrize("line", ["show {id} -f", "attach {id}"])
def test_follow_waits_for_the_end_without_widgets(shell, runs_dir, tmp_path, line):
    release = tmp_path / "release"
    job = launch("demo", {"steps": 3, "sleep": 0.0, "hold_at": 2,
                          "hold_until": str(release)})
    deadline = time.time() + 60
    while job.refresh().done < 1 and time.time() < deadline:
        time.sleep(0.05)
    assert job.status == "running"
    let_go = threading.Timer(1.0, release.touch)
    let_go.start()
    try:
        shown = shell.run_line_magic("jobs", line.format(id=job.id))
    finally:
        let_go.cancel()
        release.touch()
    assert shown is not None and shown.id == job.id
    assert shown.status == "done", shown.status  # followed to its end, not a snapshot
