"""Round 27, as a user: ``jobs cancel lnog1`` (the job is named long1) said only "no job
'lnog1'"; now it names the job it is closest to, as a mistyped option or problem does. The
oracle: the names the run folders hold."""

from skiff.cli import USAGE, main
from skiff.jobs import launch


def test_a_mistyped_job_name_is_told_the_closest_one(capsys):
    launch("demo", {"steps": 1, "sleep": 0}, name="long1").wait(30)
    launch("demo", {"steps": 1, "sleep": 0}, name="other").wait(30)
    assert main(["jobs", "cancel", "lnog1"]) == USAGE
    assert "no job 'lnog1' (did you mean 'long1'?)" in capsys.readouterr().err
    assert main(["jobs", "show", "zzzzzz"]) == USAGE
    err = capsys.readouterr().err
    assert "no job 'zzzzzz' under" in err and "did you mean" not in err
