"""Round 47 (h17): four small things the fronts said wrong.

1. An OCR job done with images it could not read: ``jobs resume ID`` takes it (its pages
   read kept, the others read again), but ``jobs show --json`` had no ``resume`` key and
   no front said how (the hint looked at cancelled and failed jobs only). Oracle: the
   ``jobs resume ID --dry-run`` verb itself, which takes it.
2. ``form.set(lang="enn")`` on a dropdown raised traitlets' "Invalid selection"; now the
   field says it, as ``%ocr ... --lang enn`` refuses it (oracle: the magic's refusal).
3. A failed job's view kept "Runs in this kernel: if it restarts ..." in its widgets'
   state (hidden by its layout only): it is for running jobs only.
4. The Train form showed ``%train mlp data --runner process``'s refusal by ``--np`` (the
   kind's words name ``--np 1`` first): by the field the user set (oracle: the magic's
   words, and the field that ``%train mlp data --np 2`` is refused by)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from IPython.core.interactiveshell import InteractiveShell

pytest.importorskip("ipywidgets")

from tests.helpers.cli import run_cli  # noqa: E402
from tests.helpers.magics import dry_run_refusal


@pytest.fixture
def shell(runs_dir):
    ip = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "skiff")
    return ip


def test_an_ocr_job_done_with_unread_images_says_how_to_read_them_again(
        tmp_path, capsys, shell):
    page = tmp_path / "a.png"
    page.write_text("not an image")
    ran = run_cli(capsys, "ocr", str(page))
    job_id = ran.stderr.split("skiff: ocr job ", 1)[1].split()[0]
    from skiff.jobs import Job, resume_command

    job = Job.load(job_id)
    assert job.status == "done" and job.result["errors"] == 1, (job.status, job.result)
    # the oracle: the resume verb takes it
    plan = run_cli(capsys, "jobs", "resume", job_id, "--dry-run", "--json")
    assert plan.returncode == 0, plan.stderr
    assert json.loads(plan.stdout)["resumes"] == job_id
    shown = run_cli(capsys, "jobs", "show", job_id, "--json")
    assert json.loads(shown.stdout)["resume"] == resume_command(job_id)
    text = run_cli(capsys, "jobs", "show", job_id).stdout
    assert f"python -m skiff jobs resume {job_id}" in text, text
    capsys.readouterr()
    shell.run_line_magic("jobs", f"show {job_id} --json")
    assert json.loads(capsys.readouterr().out)["resume"] == resume_command(job_id)
    from skiff.widgets.job_view import JobView

    view = JobView(job, start=False)  # its view: the line that reads them again
    assert f"%jobs resume {job_id}" in view.error_view.value, view.error_view.value


def test_a_dropdown_set_to_a_value_it_lacks_says_so_by_the_field(shell, capsys):
    from skiff.widgets.panels import ocr_form

    said = dry_run_refusal(shell, "ocr", "a.png --lang enn")
    assert said is not None and "'enn'" in said  # the magic refuses it
    form = ocr_form()
    form.set(inputs="a.png", lang="enn")  # raised traitlets' "Invalid selection"
    assert form.values is None and form.launch_button.disabled
    message = form.errors.get("lang") or ""
    assert "'enn'" in message and "ch-v4" in message, form.errors
    assert form.fields["lang"].raw() == "ch"  # the list shows what it can
    form.set(lang="ch-v4")  # a value it lists: taken, the message gone
    assert "lang" not in form.errors and form.fields["lang"].raw() == "ch-v4"
    form.set(lang="enn")
    form.fields["lang"].widget.value = "ch"  # picked by hand: the message gone too
    assert "lang" not in form.errors, form.errors
    capsys.readouterr()


def test_a_failed_jobs_view_says_nothing_of_a_restart(runs_dir):
    from skiff.jobs import launch
    from skiff.widgets.job_view import JobView

    job = launch("demo", {"steps": 3, "sleep": 0.0, "fail_at": 1})
    job.wait(30)
    assert job.status == "failed" and job.meta.get("runner") == "thread"
    seen, todo = [], [JobView(job, start=False)]
    while todo:  # every widget's state, as a front end that ignores layouts shows it
        w = todo.pop()
        todo.extend(getattr(w, "children", ()))
        seen.append(str(getattr(w, "value", "")))
    assert not any("Runs in this kernel" in v or "restarts" in v for v in seen), seen


def test_the_train_forms_refusal_is_by_the_field_the_user_set(shell, monkeypatch, capsys):
    from skiff.widgets.panels import train_form

    X = np.random.default_rng(0).standard_normal((16, 3)).astype("float32")
    monkeypatch.setitem(shell.user_ns, "data", (X, (X[:, 0] > 0).astype("int64")))
    form = train_form()
    for typed, field in ((dict(runner="process"), "runner"), (dict(np="2"), "np")):
        line = " ".join(f"--{k} {v}" for k, v in typed.items())
        said = dry_run_refusal(shell, "train", f"mlp data {line}")
        assert said is not None
        form.set(model="mlp", data="data", runner="auto", np="1")
        assert form.values is not None, form.errors
        form.set(**typed)
        assert form.values is None and form.errors == {field: said}, form.errors
    capsys.readouterr()
