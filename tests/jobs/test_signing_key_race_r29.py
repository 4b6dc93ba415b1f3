"""Two terminal jobs started together each made the signing key: one created the file empty
(O_EXCL) and the other read it before it was written ("the skiff signing key ... is too
short", CI, round 29). The key is now written whole and linked into place. Oracle: every
process of a simultaneous start gets the same 64-byte key, the one left on disk."""

from __future__ import annotations

import os
import subprocess
import sys

from skiff.jobs import trust


def test_processes_starting_together_share_one_whole_key(tmp_path):
    env = {**os.environ, "SKIFF_RUNS": str(tmp_path / "runs")}
    # the module alone, loaded from its file (stdlib imports only): not the skiff package's
    # ~1 CPU s of imports in each of the 18 processes (round 42: 19 s of this folder's tests)
    code = ("import sys, importlib.util as u; "
            f"s = u.spec_from_file_location('trust', {trust.__file__!r}); "
            "t = u.module_from_spec(s); s.loader.exec_module(t); "
            "sys.stdout.write(t._key().decode() + ' ' + str(t.secret_file()))")
    for round_ in range(3):  # several fresh starts: the race is a matter of timing
        os.makedirs(tmp_path / f"data{round_}")
        env["SKIFF_SECRET_FILE"] = str(tmp_path / f"data{round_}" / "secret")
        procs = [subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True, env=env)
                 for _ in range(6)]
        outs = []
        for proc in procs:
            out, err = proc.communicate(timeout=120)
            assert proc.returncode == 0, err
            outs.append(out.split())
        keys = {k for k, _ in outs}
        path = outs[0][1]
        assert len(keys) == 1 and len(next(iter(keys))) == 64
        with open(path, encoding="ascii") as fh:
            assert fh.read() == next(iter(keys))
        leftovers = [n for n in os.listdir(os.path.dirname(path)) if n.startswith(".")]
        assert leftovers == []


def test_a_key_being_written_in_place_is_waited_for(tmp_path, monkeypatch):
    """A process of an older skiff (or a file system without links) creates the file empty
    and writes it a moment later: the reader waits for the whole key, it is not refused."""
    import threading

    path = tmp_path / "secret"
    monkeypatch.setenv("SKIFF_SECRET_FILE", str(path))
    path.touch(mode=0o600)
    whole = b"ab" * 32
    writer = threading.Timer(0.3, path.write_bytes, args=(whole,))
    writer.start()
    try:
        assert trust._key() == whole
    finally:
        writer.join()
