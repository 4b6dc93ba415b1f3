"""A classifier's held-out scores by class as a user reads them after a job (round 30): the
terminal summary's recall line, the job view's classification_report table, and
``job.value.class_metrics`` whichever runner trained (a process job's value had no such
attribute). Every figure is recomputed here from the job's confusion matrix (precision =
diagonal / column sum, recall = diagonal / row sum, as scikit-learn defines them)."""

from __future__ import annotations

import re

import numpy as np
import pytest

from skiff.jobs import submit
from skiff.kinds import KINDS


def _table(path, n=300, seed=2):
    rng = np.random.default_rng(seed)
    y = rng.choice(3, size=n, p=[0.7, 0.2, 0.1])
    a, b = rng.normal(size=n) + y, rng.normal(size=n) - 0.7 * y
    names = ["low", "mid", "high"]
    with open(path, "w") as fh:
        fh.write("a,b,label\n")
        for u, v, t in zip(a, b, y):
            fh.write(f"{u:.4f},{v:.4f},{names[t]}\n")
    return path


def _scores(confusion):
    c = np.asarray(confusion, float)
    diag = np.diag(c)
    with np.errstate(invalid="ignore", divide="ignore"):
        precision = np.nan_to_num(diag / c.sum(axis=0))
        recall = np.nan_to_num(diag / c.sum(axis=1))
    return precision, recall, c.sum(axis=1).astype(int)


@pytest.fixture(scope="module")
def jobs(tmp_path_factory):
    root = tmp_path_factory.mktemp("cr")
    # SKIFF_RUNS set back as it was when the module ends (it stayed set to this module's
    # folder where it had not been set before)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SKIFF_RUNS", str(root / "runs"))
        path = _table(root / "t.csv")
        line = f"mlp {path} --steps 30 --val-split 0.3"
        thread, _ = submit("train", line + " --runner thread")
        process, _ = submit("train", line + " --runner process")
        for job in (thread, process):
            job.wait(180)
            assert job.status == "done", job.error
        yield thread, process


def test_summary_line_and_view_table(jobs):
    job = jobs[0]
    report = job.result["class_metrics"]
    precision, recall, support = _scores(report["confusion"])
    names = report["per_class"]["class"]
    line = next(x for x in KINDS["train"].summary(job.result) if x.startswith("held-out by"))
    for name, r, s in zip(names, recall, support):
        assert re.search(rf"\b{name}: {r:.3f} of {s}\b", line), (line, name, r, s)
    html = KINDS["train"].result_html(job)
    for name, p, r in zip(names, precision, recall):
        row = re.search(rf"<th[^>]*>{name}</th><td>([\d.]+)</td><td>([\d.]+)</td>", html)
        assert row and float(row[1]) == pytest.approx(p, abs=1e-3) and \
            float(row[2]) == pytest.approx(r, abs=1e-3), (html, name)
    macro = re.search(r"macro avg</th><td>[\d.]+</td><td>([\d.]+)</td>", html)
    assert float(macro[1]) == pytest.approx(recall.mean(), abs=1e-3)


def test_value_class_metrics_whichever_runner(jobs):
    thread, process = jobs
    assert sorted(thread.value.class_metrics["per_class"]["class"]) == ["high", "low", "mid"]
    for job in (thread, process):
        assert job.value is not None, job.runner
        cm = job.value.class_metrics
        precision, recall, support = _scores(cm["confusion"])
        assert np.allclose(cm["per_class"]["recall"], recall, atol=1e-5)
        assert cm["per_class"]["support"] == support.tolist()
        assert job.value.best_step is None  # a field the job did not write reads None
    with pytest.raises(AttributeError, match="class_metrics"):
        getattr(process.value, "class_metrix")  # noqa: B009  (a typo names what there is)


def test_a_reloaded_jobs_view_shows_the_table(jobs):
    """After a restart (the job loaded from its run folder) the job view shows the same
    table once the job is done."""
    from skiff.jobs import Job
    from skiff.widgets.job_view import JobView

    again = Job.load(jobs[1].run_dir)
    view = JobView(again, start=False)
    view.update(force=True)
    assert view.result_view.value == KINDS["train"].result_html(jobs[1])
    assert "held-out scores by class" in view.result_view.value
