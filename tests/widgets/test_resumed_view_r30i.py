"""Round 30, as a user: the notebook view of a ``%jobs resume ID`` run said "resume ID" and
its progress, and not where it went on from (the kernel said it in one log line among the
plan's). It now says under the title which job it goes on from and from where. The oracle:
the checkpoint file the resumed run loaded (its result's ``resumed.path``) and the step in
that file's name."""

from __future__ import annotations

import os
import re

import pytest

from skiff.jobs import jobs_action, submit
from skiff.widgets.job_view import JobView
from tests.jobs.waiting import wait_for


def test_the_view_of_a_resumed_training_says_from_which_job_and_step(runs_dir):
    first, _ = submit("train", "mlp --steps 600 --checkpoint-every 20", front="magic")
    wait_for(lambda: first.refresh().done >= 30, 120, "a checkpoint")
    first.cancel()
    if first.wait(60).status == "done":  # it ended before it saw the cancel (loaded CI at
        pytest.skip("the training ended before the cancel")   # ede34c72, 120 steps): done
    assert first.status == "cancelled"
    again = jobs_action("resume", first.id, front="magic")
    # round 42: the resumed run is cancelled once its kernel has said where it went on from
    # (it trained the 570 steps left: 5.7 CPU s for this file, 2.1 now); done or cancelled,
    # its result names the checkpoint it loaded
    wait_for(lambda: any(str(m).lower().startswith("resum")
                         for _t, _l, m in again.refresh().logs), 120, "the resume's line")
    again.cancel()
    assert again.wait(120).status in ("cancelled", "done"), again.error
    loaded = again.result["resumed"]["path"]  # pruned since (only the newest are kept)
    step = int(re.search(r"(\d+)", os.path.basename(loaded)).group(1))
    view = JobView(again)  # a view reloaded after the run: from the run folder
    view.update(force=True)
    said = view.resumed_view.value
    assert f"goes on from job {first.id}" in said and f"step {step}" in said
    fresh = JobView(first)
    fresh.update(force=True)
    assert fresh.resumed_view.value == ""  # a job that resumed nothing says nothing of it
