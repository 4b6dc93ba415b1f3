"""Round 26: ``python -m skiff KIND ... --launcher slurm --dry-run`` goes the magic's way
(:mod:`skiff.jobs.dryrun_document`): no run folder at all, the plan on stdout, one formatter
for both fronts; ``skiff.launch(..., dry_run=True)`` never makes a folder in the runs root."""

import os

import pytest

from skiff.cli import main
from skiff.jobs import list_jobs


@pytest.fixture
def no_sbatch(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin") + os.pathsep + "/usr/bin:/bin")
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))  # a dry run's script goes there


def _folders(path) -> list:
    return sorted(p.name for p in path.iterdir()) if path.exists() else []


def test_cli_slurm_dry_run_prints_the_plan_and_makes_no_run_folder(no_sbatch, runs_dir,
                                                                    capsys, monkeypatch):
    """It made a run folder, moved it away and said 'job ID' on stderr: an id no listing
    has; stdout stayed empty."""
    import skiff.jobs.job as job_module

    made = []
    real = job_module.new_run_dir
    monkeypatch.setattr(job_module, "new_run_dir",
                        lambda *a, **k: made.append(a) or real(*a, **k))
    argv = ["train", "mlp", "--steps", "3", "--launcher", "slurm", "--nodes", "2",
            "--gpus-per-node", "2", "--dry-run"]
    assert main(argv) == 0
    out = capsys.readouterr()
    assert made == [] and list_jobs() == [] and _folders(runs_dir) == []
    assert " job 20" not in out.err  # no job id of a job that does not exist
    lines = out.out.splitlines()
    assert lines[0] == "dry run: nothing started, no run folder made"
    assert lines[1].startswith("train job on Slurm, 4 ranks")
    [script] = [ln.split(": ", 1)[1].split(" (not queued")[0] for ln in lines
                if ln.startswith("sbatch script: ")]
    text = open(script).read()  # the script sbatch would get: its own oracle, the file
    assert "#SBATCH --nodes=2" in text and "#SBATCH --gpus-per-node=2" in text
    assert str(runs_dir) in text and str(runs_dir) not in script
    assert "  steps: 3" in lines


def test_cli_and_magic_show_one_text(no_sbatch, runs_dir, capsys):
    """The magic and the terminal each formatted the document (the terminal had no sbatch
    line); both show dry_run_lines now, the magic saying 'this kernel'."""
    from IPython.core.interactiveshell import InteractiveShell

    ip = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "skiff")
    line = "mlp --steps 4 --launcher slurm --nodes 3"
    doc = ip.run_line_magic("train", line + " --dry-run")
    capsys.readouterr()  # "already loaded" when another test loaded it
    assert main(["train", *line.split(), "--dry-run"]) == 0
    cli = capsys.readouterr().out.splitlines()
    magic = repr(doc).splitlines()
    differ = [(a, b) for a, b in zip(cli, magic) if a != b]
    # the command (as each front types it) and the script's temporary path differ, no more
    assert len(cli) == len(magic) and [a.split(":")[0] for a, _ in differ] == [
        "command", "sbatch script"]
    assert magic[2] == f"command: %train {line}"
    assert list_jobs() == []


def test_python_launch_dry_run_never_makes_a_folder_in_the_runs_root(no_sbatch, runs_dir,
                                                                     monkeypatch):
    """launch() made the job in the runs root, then moved it out: for that moment (or for
    good, if killed then) `jobs` listed it."""
    import skiff.jobs.job as job_module
    from skiff.jobs import launch

    roots = []
    real = job_module.new_run_dir
    monkeypatch.setattr(job_module, "new_run_dir",
                        lambda kind, root=None: roots.append(root) or real(kind, root))
    job = launch("train", {"model": "mlp", "steps": 2}, launcher="slurm", nodes=2,
                 dry_run=True)
    assert len(roots) == 1 and roots[0] is not None
    assert runs_dir not in [*map(type(runs_dir), roots), *type(runs_dir)(roots[0]).parents]
    assert job.status == "cancelled" and list_jobs() == [] and _folders(runs_dir) == []
    assert job.submission["run_dir"] == str(runs_dir / job.id)
    assert job.config["steps"] == 2 and (job.run_dir / "config.json").is_file()
