"""Round 42, as a user: ``python -m skiff jobs trust ID`` on a job whose code was already
signed with this user's key printed the job's ``show`` and said nothing of trust (was it
signed? did it need to be?). It now says in one line that the job needed no trust (and
writes nothing); a job whose code was unsigned or altered is said "trusted", and the JSON
document names what its trust was before (``trust_before``). A folder copied from another
machine (signed with that machine's key) is refused with words that say it may be that.
The oracle: the folder's own signature verdict (``skiff.jobs.trust.verdict``) and its
config.json's bytes."""

from __future__ import annotations

import json

from skiff.jobs import Job, launch
from skiff.jobs.trust import verdict

from .in_process import run_main


def test_trust_says_whether_it_was_needed(runs_dir, capsys):
    job = launch("demo", {"steps": 2, "sleep": 0.0}).wait(30)
    assert verdict(Job(job.run_dir).meta) == "trusted"
    before = (job.run_dir / "config.json").read_bytes()
    said = run_main("jobs", "trust", job.id, capsys=capsys)
    assert said.returncode == 0
    lines = [line for line in said.stderr.splitlines() if "trust" in line]
    assert len(lines) == 1 and "needed no trust" in lines[0] and job.id in lines[0], said.stderr
    assert (job.run_dir / "config.json").read_bytes() == before  # nothing written

    meta = json.loads(before)
    meta["config"]["steps"] = 3  # edited by hand: its signature no longer matches
    (job.run_dir / "config.json").write_text(json.dumps(meta))
    assert verdict(Job(job.run_dir).meta) == "altered"
    refused = run_main("jobs", "show", job.id, capsys=capsys)  # as on a machine it was copied to
    assert refused.returncode == 2 and "another machine" in refused.stderr, refused.stderr
    said = run_main("jobs", "trust", job.id, "--json", capsys=capsys)
    assert said.returncode == 0
    doc = json.loads(said.stdout)
    assert doc["id"] == job.id and doc["trust"] == "trusted" and doc["trust_before"] == "altered"
    assert "needed no trust" not in said.stderr and f"job {job.id} trusted" in said.stderr
    assert verdict(Job(job.run_dir).meta) == "trusted"


def test_the_magic_says_it_too(runs_dir, capsys):
    from IPython.core.interactiveshell import InteractiveShell

    ip = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "skiff")
    job = launch("demo", {"steps": 2, "sleep": 0.0}).wait(30)
    capsys.readouterr()
    ip.run_line_magic("jobs", f"trust {job.id}")
    out = capsys.readouterr().out
    assert f"job {job.id} needed no trust" in out, out
