"""Secret options (round 46 h11): ``ocr --password PW`` stays off disk and off the screen.

The run folder's files (every byte of every file, the worker's logs included) hold no
password, the dry run and ``jobs show`` show ``***``, and the job still opens the
password-protected PDF on a thread and as an MPI process (its worker gets the password in
its environment); ``jobs resume`` asks for it again. The oracle is the PDF's own lock: the
pages open with the password only (tests/kernels/ocr/test_pdf_password_r46h5.py checks that
pdfium refuses them without it), so a job that read both pages without an error had it."""

from __future__ import annotations

import json

import pytest

from skiff.jobs.secret import MASK, mask_command, secret_options
from tests.kernels.ocr.test_pdf_password_r46h5 import LOCKED, OTHER, encrypted_pdf

PW = "s3cret"


def _disk(run_dir) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(run_dir.rglob("*")) if p.is_file())


@pytest.fixture(scope="module")
def pdfs(tmp_path_factory):
    root = tmp_path_factory.mktemp("locked")
    (root / "a locked.pdf").write_bytes(encrypted_pdf(LOCKED[1:], PW))  # one page: cheap
    (root / "b other.pdf").write_bytes(encrypted_pdf(OTHER, "another"))
    return root


def test_the_command_line_is_masked_as_typed():
    secrets = secret_options("ocr")
    assert secrets == {"password": (["--password"], "SKIFF_PDF_PASSWORD")}
    for line, want in (
            ("python -m skiff ocr a.pdf --password s3cret --np 2",
             "python -m skiff ocr a.pdf --password *** --np 2"),
            ("%ocr a.pdf --password='my pass' --lang ch", "%ocr a.pdf --password=*** --lang ch"),
            ('%ocr a.pdf --password  "x y"z', "%ocr a.pdf --password  ***"),
            ("%ocr my--password.pdf", "%ocr my--password.pdf")):
        assert mask_command(line, secrets) == want


def test_resume_takes_the_password_from_the_environment(monkeypatch):
    from skiff.jobs.secret import check_runner, fill_secrets

    with pytest.raises(ValueError, match="not sent to a Slurm job.*SKIFF_PDF_PASSWORD"):
        check_runner({"password": PW}, "slurm", secret_options("ocr"))

    monkeypatch.setenv("SKIFF_PDF_PASSWORD", PW)
    assert fill_secrets("ocr", {"password": MASK, "pages": None}, "j", ask=pytest.fail) == \
        {"password": PW, "pages": None}


def _run(pdfs, runner, monkeypatch, capsys):
    from skiff.cli import main
    from skiff.jobs import Job

    monkeypatch.delenv("SKIFF_PDF_PASSWORD", raising=False)
    monkeypatch.chdir(pdfs)
    argv = ["ocr", str(pdfs), "--password", PW, "--runner", runner, "--no-cls", "--json"]
    code = main(argv)
    out = capsys.readouterr()
    doc = json.loads(out.out)
    assert code != 0 and PW not in out.out + out.err  # the other PDF failed: exit 1
    job = Job.load(doc["job"]["id"])
    results = [json.loads(line) for line in (job.run_dir / "results.jsonl").read_text()
               .splitlines()]
    opened = [r for r in results if r["image"].endswith("a locked.pdf#page=1")]
    assert len(opened) == 1 and not opened[0]["error"], results
    assert opened[0]["text"].split() == LOCKED[1][0].split()  # the text drawn
    assert PW.encode() not in _disk(job.run_dir)  # the run folder: no password anywhere
    meta = json.loads((job.run_dir / "config.json").read_text())
    assert meta["config"]["password"] == MASK and meta["options"]["password"] == MASK
    assert "--password ***" in meta["command"]
    assert main(["jobs", "show", job.id]) in (0, 1)
    shown = capsys.readouterr().out
    assert MASK in shown and PW not in shown
    return job


def test_a_thread_job_opens_the_pdf_and_keeps_no_password(pdfs, monkeypatch, capsys):
    from skiff.cli import main
    from skiff.jobs import resume

    job = _run(pdfs, "thread", monkeypatch, capsys)
    assert main(["ocr", str(pdfs), "--password", PW, "--dry-run"]) == 0
    dry = capsys.readouterr().out
    assert "--password ***" in dry and PW not in dry
    # resume: asked again in one line (or SKIFF_PDF_PASSWORD); refused where it cannot ask
    with pytest.raises(ValueError, match="started with --password, which is not kept"):
        resume(job, ask=lambda prompt: "")
    asked = []
    again = resume(job, ask=lambda prompt: asked.append(prompt) or PW)
    again.wait(120)
    assert len(asked) == 1 and "\n" not in asked[0] and "SKIFF_PDF_PASSWORD" in asked[0]
    assert again.config["password"] == MASK and PW.encode() not in _disk(again.run_dir)
    assert again.result["kept"] == 1  # the locked page kept, the other PDF read again


def test_a_process_job_gets_the_password_in_its_environment(pdfs, monkeypatch, capsys):
    _run(pdfs, "process", monkeypatch, capsys)


def test_the_ocr_form_hides_the_password(pdfs):
    """The OCR panel: a password box (dots, not text) and the magic and terminal lines it
    shows with ***; the job it starts still gets the password (the form's values)."""
    import ipywidgets as W

    from skiff.widgets.panels import ocr_form

    form = ocr_form()
    form.set(inputs=str(pdfs / "a locked.pdf"), password=PW)
    assert isinstance(form.fields["password"].widget, W.Password)
    assert form.validate()
    shown = form.magic_line.value + form.cli_line.value
    assert "--password ***" in shown and PW not in shown
    assert form.values["password"] == PW
