"""Round 41, as a user: two views of the same job (the cell's and one from ``%jobs show``,
or two notebooks), the job cancelled from one of them. Both end as the job ended, with no
Cancel button left; and a view's amount reads as the terminal's line and the Jobs sidebar's
do: "97/200 steps" (it said "97/200 step"). The oracle: the job's own final state, and the
terminal's line of the same state (``plain_line``)."""

from __future__ import annotations

import re

from skiff.jobs import launch
from skiff.jobs.terminal import plain_line
from skiff.widgets.job_view import JobView
from tests.jobs.waiting import wait_for


def test_two_views_of_a_job_cancelled_from_one(runs_dir):
    job = launch("demo", {"steps": 400, "sleep": 0.02})
    first, second = JobView(job, poll=3600), JobView(job, poll=3600)  # updated when asked
    try:
        wait_for(lambda: job.refresh().done >= 3, 30, "a few steps")
        first._on_cancel()
        assert job.wait(30).status == "cancelled"
        for view in (first, second):
            view.update(force=True)
            assert view.status == "cancelled" and "cancelled" in view.badge.value
            assert view.cancel_button.layout.display == "none"
            amount = re.search(r"\d[\d,]*/[\d,]+ \w+", plain_line(job)).group(0)
            assert amount.endswith(" steps") and amount in view.progress_text.value, (
                amount, view.progress_text.value)
    finally:
        first.close()
        second.close()
