"""Round 42, as a user: a script that runs ``python -m skiff ... --json`` and parses stdout
met an empty string on every refusal (no such job, a typo, a bad option: one line on stderr,
exit 2), so ``json.loads`` raised and the script could not tell a refusal from a crash.
With ``--json`` a refusal now prints one document on stdout too: ``{"error": LINE,
"command": NAME, "exit": CODE}``, the line being stderr's, CODE the exit status. Without
``--json`` stdout stays empty. The oracle: the process's own exit status and stderr."""

from __future__ import annotations

import json

import pytest

from .in_process import run_main

REFUSED = [
    ("jobs", "show", "nope", "--json"),
    ("jobs", "rm", "nope", "--json"),
    ("jobs", "list", "--bogus", "--json"),
    ("jobs", "prune", "--older-than", "1x", "--json"),
    ("plan", "7x", "--json"),
    ("predict", "nope", "x.csv", "--json"),
    ("trian", "--json"),
]


@pytest.mark.parametrize("args", REFUSED, ids=lambda a: " ".join(a[:2]))
def test_a_refusal_with_json_is_a_document_too(args, runs_dir, capsys):
    said = run_main(*args, capsys=capsys)
    assert said.returncode == 2
    doc = json.loads(said.stdout)
    assert set(doc) == {"error", "command", "exit"}
    assert doc["exit"] == said.returncode and doc["command"] == args[0]
    assert doc["error"] and doc["error"] in said.stderr  # stderr's line, as it was
    plain = run_main(*[a for a in args if a != "--json"], capsys=capsys)
    assert plain.returncode == 2 and plain.stdout == "" and doc["error"] in plain.stderr


def test_a_wait_that_times_out_with_json_is_a_document(runs_dir, tmp_path, capsys):
    from skiff.jobs import launch

    gate = tmp_path / "gate"
    job = launch("demo", {"steps": 3, "sleep": 0.0, "hold_at": 2, "hold_until": str(gate)})
    try:
        said = run_main("jobs", "wait", job.id, "--timeout", "0.05", "--json", capsys=capsys)
        assert not job.done  # still held: the wait ran out, the job did not end
    finally:
        gate.touch()
    doc = json.loads(said.stdout)
    assert doc["exit"] == said.returncode == 124 and job.id in doc["error"], said
    assert job.wait(30).status == "done"


def test_rm_and_prune_documents_have_the_same_keys_with_dry_run_or_not(runs_dir, capsys):
    from skiff.jobs import launch

    jobs = [launch("demo", {"steps": 1, "sleep": 0.0}).wait(30) for _ in range(2)]
    docs = {}
    for args in (("rm", jobs[0].id, "--dry-run"), ("rm", jobs[0].id),
                 ("prune", "--keep", "0", "--dry-run"), ("prune", "--keep", "0")):
        said = run_main("jobs", *args, "--json", capsys=capsys)
        assert said.returncode == 0, said.stderr
        docs[args] = json.loads(said.stdout)
    assert len({tuple(sorted(d)) for d in docs.values()}) == 1, docs  # one set of keys
    assert docs["rm", jobs[0].id, "--dry-run"]["would_remove"] == [jobs[0].id]
    assert docs["rm", jobs[0].id]["removed"] == [jobs[0].id] and not jobs[0].run_dir.exists()
    assert docs["prune", "--keep", "0", "--dry-run"]["would_remove"] == [jobs[1].id]
    assert docs["prune", "--keep", "0"]["removed"] == [jobs[1].id]
    assert not jobs[1].run_dir.exists()
