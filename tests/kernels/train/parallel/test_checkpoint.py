"""Sharded checkpoints: commit marker, keep-k, resharding 4 -> 2 and 2 -> 4, corrupt and
partial checkpoints falling back to the previous one, a rank killed during the write."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from skiff.kernels.train.parallel import SelfComm
from skiff.kernels.train.parallel.checkpoint import (
    FlatShard,
    flat_range,
    list_sharded,
    load_sharded,
    save_sharded,
)

from .mpi_util import ROOT, run_mpi


def test_flat_range_covers_every_element_once():
    for size, parts in [(37, 4), (8, 2), (3, 4), (0, 2)]:
        ranges = [flat_range(size, parts, i) for i in range(parts)]
        got = np.concatenate([np.arange(size)[a:b] for a, b in ranges])
        assert got.tolist() == list(range(size))


def test_one_rank_save_load_keep_and_fallback(tmp_path):
    comm = SelfComm()
    for step in (1, 2, 3):
        save_sharded(tmp_path, comm, replicated={"x": np.full(3, step)},
                     sharded={"m": FlatShard(np.arange(5.0) * step, 5)}, step=step, keep=2)
    assert [p.name for p in list_sharded(tmp_path)] == ["step-00000002", "step-00000003"]
    assert (tmp_path / "latest").read_text() == "step-00000003"
    res = load_sharded(tmp_path, comm)
    assert res["step"] == 3 and res["sharded"]["m"].tolist() == [0, 3, 6, 9, 12]
    # a flipped byte in the newest shard: reported, and the previous one is used
    shard = tmp_path / "step-00000003" / "shard-00000.npz"
    data = bytearray(shard.read_bytes())
    data[len(data) // 2] ^= 0xFF
    shard.write_bytes(bytes(data))
    seen = []
    res = load_sharded(tmp_path, comm, on_corrupt=lambda f, e: seen.append(str(e)))
    assert res["step"] == 2 and "fails its checksum" in seen[0]
    assert res["replicated"]["x"].tolist() == [2, 2, 2]
    # a folder without a manifest (a partial write) is never loaded
    (tmp_path / "step-00000009").mkdir()
    assert load_sharded(tmp_path, comm)["step"] == 2
    assert load_sharded(tmp_path / "none", comm) is None


def test_pieces_read_only_the_positions_asked_for(tmp_path):
    """A piece of a split axis (any order of runs), a whole matrix read by columns, bfloat16
    and a scalar: whole loads give the arrays back; a selection reads only its bytes."""
    from skiff.kernels.train.core.tensor import _as_dtype
    from skiff.kernels.train.parallel.checkpoint import READ_STATS, Piece

    w = np.random.default_rng(0).standard_normal((6, 5)).astype(np.float32)
    bf = w.astype(_as_dtype("bfloat16"))
    rows, cols = np.array([2, 3, 4, 5, 0, 1]), np.array([3, 4, 0, 1, 2])
    pieces = {"w": Piece(w[rows], w.shape, 0, rows), "c": Piece(w[:, cols], w.shape, 1, cols),
              "whole": Piece(w, w.shape), "bf": Piece(bf, bf.shape),
              "s": Piece(np.asarray(7), ())}
    save_sharded(tmp_path, SelfComm(), replicated={}, pieces=pieces, step=1)
    got = load_sharded(tmp_path, SelfComm())["pieces"]
    for key in ("w", "c", "whole"):
        assert np.array_equal(got[key], w), key
    assert got["bf"].dtype == bf.dtype and np.array_equal(got["bf"], bf)
    assert got["s"] == 7
    want = {"w": (0, [4, 1]), "c": (1, [3]), "whole": (1, [0, 1, 4]), "bf": (0, [2])}
    READ_STATS["bytes"] = 0
    got = load_sharded(tmp_path, SelfComm(), select=lambda k, shape: want.get(k, False))
    assert set(got["pieces"]) == set(want)
    for key, (axis, index) in want.items():
        ref = bf if key == "bf" else w
        assert np.array_equal(got["pieces"][key], np.take(ref, index, axis=axis)), key
    assert READ_STATS["bytes"] == 4 * (2 * 5 + 6 + 3 * 6) + 2 * 5  # nothing more


@pytest.mark.mpi
@pytest.mark.slow
def test_reshard_4_to_2_and_2_to_4(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    run_mpi(4, "ckpt_check.py", "save", a, 3)
    for res in run_mpi(2, "ckpt_check.py", "load", a):
        assert res["step"] == 3 and res["old_world"] == 4
        assert res["w"] and res["m"] and res["v"]
        assert res["residual"] is None  # per-rank state does not survive a new world size
    run_mpi(2, "ckpt_check.py", "save", b, 2)
    for res in run_mpi(4, "ckpt_check.py", "load", b):
        assert res["step"] == 2 and res["old_world"] == 2 and res["m"] and res["v"]
    for res in run_mpi(2, "ckpt_check.py", "load", b):  # same world: per-rank state returns
        assert res["residual"] == [float(res["rank"])] * 2


@pytest.mark.mpi
def test_each_rank_reads_only_what_it_needs(tmp_path):
    """Loading reads the replicated state, this rank's own shard, and, on a new world size,
    only the old pieces that overlap its new slices: never every rank's optimizer state."""
    w_bytes, n = 3 * 4 * 4, 37  # the replicated 3x4 float32 weights; two flat float64 arrays
    run_mpi(4, "ckpt_check.py", "save", tmp_path / "a", 1)
    for res in run_mpi(4, "ckpt_check.py", "load", tmp_path / "a"):  # same world: own shard
        own = 2 * 8 * (len(range(*flat_range(n, 4, res["rank"]))))
        assert res["m"] and res["v"] and res["read"]["bytes"] == w_bytes + own + 16, res
    for res in run_mpi(2, "ckpt_check.py", "load", tmp_path / "a"):  # 4 -> 2: two old pieces
        mine = flat_range(n, 2, res["rank"])
        overlap = [r for r in range(4) if max(mine[0], flat_range(n, 4, r)[0])
                   < min(mine[1], flat_range(n, 4, r)[1])]
        whole = sum(2 * 8 * len(range(*flat_range(n, 4, r))) for r in overlap)
        assert res["m"] and res["v"] and res["read"]["bytes"] == w_bytes + whole, res
        assert whole < 2 * 8 * n  # not every shard


@pytest.mark.mpi
def test_rank_killed_during_write_leaves_previous_checkpoint(tmp_path):
    from .mpi_util import mpiexec

    # rank 1 dies by SIGKILL after writing its shard of step 3 and before the commit
    cmd = ["timeout", "-s", "KILL", "60", mpiexec(), "-n", "2", sys.executable,
           str(ROOT / "tests/kernels/train/parallel/scripts/ckpt_check.py"), "save",
           str(tmp_path), "3", "1"]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin",
                               "OPENBLAS_NUM_THREADS": "1"})
    assert proc.returncode != 0
    assert (tmp_path / "step-00000003").exists()
    assert not (tmp_path / "step-00000003" / "manifest.json").exists()
    assert (tmp_path / "latest").read_text() == "step-00000002"
    for res in run_mpi(2, "ckpt_check.py", "load", tmp_path):
        assert res["step"] == 2 and res["w"] and res["m"]
    json.dumps(res)


@pytest.fixture(scope="module")
def split_saves(tmp_path_factory):
    """tp and pp in one launch (round 43 h5: a launch each before, 2 interpreters' imports
    and a GPT's first steps paid twice)."""
    return run_mpi(2, "split_ckpt_check.py", "tp,pp", tmp_path_factory.mktemp("split"),
                   timeout=180)


@pytest.mark.mpi
@pytest.mark.parametrize("mode", ["tp", "pp"])
def test_split_model_saves_its_own_pieces_and_reads_only_them(mode, split_saves):
    """tp=2 / pp=2 on 2 ranks: a save sends nothing between ranks (no gather), each rank
    writes about half of weights + AdamW moments and reads back only its own part; the run
    resumes bit-exactly on the same layout, and one process (tp=1) loads the pieces equal to
    the gathered weights and trains on like the split run (also as ZeRO, whose one flat
    slice takes the AdamW moments of every piece); on the other layout (tp=2 <->
    pp=2) each rank reads only what it holds there and trains on alike too."""
    results = [r[mode] for r in split_saves]
    state = 3 * results[0]["model_bytes"]  # weights, exp_avg, exp_avg_sq (float32)
    assert state - 1 <= sum(r["wrote"] for r in results) <= state + 1024  # each piece once
    for res in results:
        assert res["sent"] < 1024, res  # a gather of the model would send > state / 6
        assert 0.35 * state < res["wrote"] < 0.6 * state, res  # nobody writes the whole
        assert 0.35 * state < res["read"] < 0.6 * state, res  # nor reads it
        if mode == "pp":  # a stage holds its own arrays only: it reads what it wrote
            assert res["read"] == res["wrote"], res
        assert res["resumed"] == res["ref"] and res["exact"], res
        # loaded on the other layout, a rank reads only the rows it holds there
        assert 0.35 * state < res["cross_read"] < 0.65 * state, res
        assert res["cross_equal"], res
        np.testing.assert_allclose(res["cross_losses"], res["ref"], rtol=0, atol=1e-5)
    first = results[0]
    assert first["pieces_equal_gathered"] and first["tp1_equal_gathered"]
    np.testing.assert_allclose(first["tp1_losses"], first["ref"], rtol=0, atol=1e-5)
    np.testing.assert_allclose(first["zero_losses"], first["ref"], rtol=0, atol=1e-5)
