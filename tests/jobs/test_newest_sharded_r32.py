"""A resumed ``--np 2`` job whose checkpoints are sharded ``step-N/`` folders (zero, tp, pp,
ep) outside its run folder goes on from its newest folder, as the trainer does (round 32: only
``step-N.npz`` files were seen, and ``jobs resume`` said the checkpoints were gone)."""

from skiff.jobs import _newest_checkpoint
from skiff.kernels.backend.report import Reporter


def _step(folder, n, manifest=True):
    d = folder / f"step-{n:08d}"
    d.mkdir()
    if manifest:
        (d / "manifest.json").write_text("{}")
    return d


def test_sharded_folder_is_the_newest(tmp_path):
    _step(tmp_path, 120)
    newest = _step(tmp_path, 167)
    got = _newest_checkpoint({"resume": True, "checkpoint_dir": str(tmp_path)})
    assert got == str(newest)


def test_npz_and_folders_by_step_and_unfinished_folder_skipped(tmp_path):
    (tmp_path / "step-00000200.npz").write_bytes(b"x")
    _step(tmp_path, 150)
    _step(tmp_path, 300, manifest=False)  # a rank killed mid-write: no manifest yet
    (tmp_path / "step-x.npz").write_bytes(b"x")
    got = _newest_checkpoint({"resume": True, "checkpoint_dir": str(tmp_path)})
    assert got == str(tmp_path / "step-00000200.npz")


def test_not_a_resume_or_no_folder(tmp_path):
    _step(tmp_path, 5)
    assert _newest_checkpoint({"resume": False, "checkpoint_dir": str(tmp_path)}) is None
    assert _newest_checkpoint({"resume": True, "checkpoint_dir": str(tmp_path / "no")}) is None


def test_base_reporter_takes_work_keywords():
    # a kernel passing work= to the base reporter (no run folder) must not raise
    assert Reporter().progress(3, 10, unit="image", work=3e6, work_total=1e7) is None
