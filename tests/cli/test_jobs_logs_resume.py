"""``python -m skiff jobs logs|resume|wait``: a job's log, relaunching a train job from its
checkpoint, and Ctrl-C on a wait (it stops the waiting, never the job)."""

import json
import os
import signal
import subprocess
import sys
import time

from skiff.cli import main
from skiff.jobs import launch


def _talkative(config, reporter):
    reporter.log("loading the data")
    reporter.log("the loss is high", level="warning")
    reporter.metric("loss", 2.0, step=1)
    return {"ok": True}


def _log_events(job):
    return [e for e in job.events() if e["type"] in ("log", "error")]


def test_jobs_logs_prints_every_log_line_and_json_has_the_events(capsys):
    job = launch("custom", fn=_talkative).wait(10)
    assert main(["jobs", "logs", job.id]) == 0
    lines = capsys.readouterr().out.splitlines()
    events = _log_events(job)
    assert len(lines) == len(events)
    for line, event in zip(lines, events):
        assert line.endswith(event["message"])
        assert ("warning: " in line) == (event.get("level") == "warning")
    assert main(["jobs", "logs", job.id[-4:], "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["id"] == job.id and doc["outputs"] == {}
    assert [(d["level"], d["message"], d["t"]) for d in doc["lines"]] == \
        [(e.get("level", "error"), e["message"], e["t"]) for e in events]


def test_jobs_logs_of_no_job_is_a_usage_error(capsys):
    assert main(["jobs", "logs", "nosuchjob"]) == 2
    assert "no job 'nosuchjob'" in capsys.readouterr().err
    assert main(["jobs", "logz"]) == 2
    assert "did you mean 'logs'" in capsys.readouterr().err


def test_jobs_resume_refuses_a_kind_that_cannot_resume(capsys):
    job = launch("custom", fn=_talkative).wait(10)
    assert main(["jobs", "resume", job.id]) == 2
    err = capsys.readouterr().err
    assert "only train, solve and ocr jobs can be resumed" in err
    assert len(err.strip().splitlines()) == 1


def test_jobs_resume_goes_on_from_the_train_jobs_checkpoint(capsys):
    assert main(["train", "mlp", "--steps", "2", "--json"]) == 0
    first = json.loads(capsys.readouterr().out)
    assert first["job"]["status"] == "done", first
    assert main(["jobs", "resume", first["job"]["id"], "--json"]) == 0
    again = json.loads(capsys.readouterr().out)
    assert again["job"]["id"] != first["job"]["id"] and again["job"]["status"] == "done"
    from skiff.jobs import Job

    resumed = Job.load(again["job"]["id"])
    assert resumed.config["resume"] is True
    assert resumed.config["checkpoint_dir"] == os.path.join(first["job"]["run_dir"],
                                                            "checkpoints")
    # the same fields as the notebook's job.result and job.summary()
    assert again["result"] == resumed.result
    assert set(again["job"]) == set(resumed.summary())


def test_ctrl_c_on_jobs_wait_stops_the_waiting_not_the_job(runs_dir):
    def forever(config, reporter):
        while not reporter.should_stop():
            time.sleep(0.05)

    job = launch("custom", fn=forever)
    try:
        # started as a shell's background job is (SIGINT ignored, so Python installs no
        # KeyboardInterrupt): CI runs so, and the wait went on past the Ctrl-C
        proc = subprocess.Popen([sys.executable, "-m", "skiff", "jobs", "wait", job.id],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
        first = proc.stderr.readline()  # said before it blocks
        assert f"waiting for job {job.id}" in first and "the job goes on" in first
        assert f"jobs attach {job.id} shows it live" in first
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
        assert proc.returncode == 130, err
        assert "stopped waiting" in err and "Traceback" not in err, err
        assert job.status == "running"
        assert not (job.run_dir / "cancel").exists()
    finally:
        job.cancel()
        job.wait(10)


def test_ids_an_action_does_not_take_are_refused_not_dropped(capsys):
    a = launch("custom", fn=_talkative).wait(10)
    b = launch("custom", fn=_talkative).wait(10)
    assert main(["jobs", "show", a.id, b.id]) == 2
    err = capsys.readouterr().err
    assert "jobs show takes one job ID, got 2" in err and b.id in err
    assert main(["jobs", "list", "extra"]) == 2
    assert "jobs list takes no job ID, got 'extra'" in capsys.readouterr().err
    assert main(["jobs", "rm", a.id, b.id]) == 0  # rm takes several
    assert not a.run_dir.exists() and not b.run_dir.exists()


def test_jobs_show_gives_the_kinds_key_figures_not_raw_fields(capsys):
    """It printed every field of result.json cut at 200 characters (a training's history
    and plan as half JSON); the key figures are what the terminal prints after a run."""
    from skiff.jobs import submit
    from skiff.kinds import KINDS

    job, _ = submit("solve", "poisson --grid 16x16")
    job.wait(30)
    assert main(["jobs", "show", job.id]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == repr(job)
    # then the command as typed and every option it ran with (round 26)
    assert lines[1] == "  command: %solve poisson --grid 16x16"
    assert lines[2].startswith("  options: problem=poisson grid=16x16 ")
    assert lines[3:-1] == [f"  {line}" for line in KINDS["solve"].summary(job.result)]
    assert lines[-1].startswith(f"  run folder: {job.run_dir}")
    # a kind without figures of its own keeps the fields
    demo = launch("demo", {"steps": 1, "sleep": 0}).wait(10)
    assert main(["jobs", "show", demo.id]) == 0
    assert "  allreduce: 1.0" in capsys.readouterr().out


def test_jobs_wait_exit_status_is_the_jobs_and_a_timeout_is_one_line(capsys):
    """It was 0 for a failed job (``jobs wait ID && next`` went on), and --timeout ended in
    a TimeoutError traceback, in the magic too."""
    from IPython.core.interactiveshell import InteractiveShell

    def boom(config, reporter):
        raise RuntimeError("no")

    def forever(config, reporter):
        while not reporter.should_stop():
            time.sleep(0.02)

    done = launch("custom", fn=_talkative).wait(10)
    failed = launch("custom", fn=boom).wait(10)
    assert main(["jobs", "wait", done.id]) == 0
    assert main(["jobs", "wait", failed.id]) == 1
    running = launch("custom", fn=forever)
    try:
        capsys.readouterr()
        assert main(["jobs", "wait", running.id, "--timeout", "0.3"]) == 124
        err = capsys.readouterr().err
        assert f"job {running.id} still running after 0.3 s" in err and "Traceback" not in err
        ip = InteractiveShell.instance()
        ip.run_line_magic("load_ext", "skiff")
        shown = ip.run_line_magic("jobs", f"wait {running.id} --timeout 0.3")
        assert shown is running
        assert f"job {running.id} still running after 0.3 s" in capsys.readouterr().out
        assert running.status == "running"
    finally:
        running.cancel()
        running.wait(10)


def test_jobs_show_of_a_running_job_says_where_it_is(capsys):
    """It printed the repr alone: no rate, no ETA, nothing the job said."""
    started = __import__("threading").Event()

    def steps(config, reporter):
        reporter.progress(7, 50, unit="step")
        reporter.log("working on part seven")
        started.set()
        while not reporter.should_stop():
            time.sleep(0.02)

    job = launch("custom", fn=steps)
    try:
        assert started.wait(10)
        assert main(["jobs", "show", job.id]) == 0
        lines = capsys.readouterr().out.splitlines()
        assert lines[0] == repr(job)
        assert "running 14% 7/50 steps" in lines[1]
        assert lines[2].endswith(" working on part seven")
        assert f"jobs attach {job.id} follows it live" in lines[-1]
    finally:
        job.cancel()
        job.wait(10)
