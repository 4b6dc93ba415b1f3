"""Round 48 (h8): ``--json`` of every jobs verb, as a script reads it: one JSON document on
stdout for each (ls, show, logs, wait, attach, trust, cancel, rm/prune --dry-run, a refusal),
a job's own fields the same in each (the oracle: ``job.summary()``, what a notebook's
``job`` gives), nothing else on stdout. A guard: nothing was found broken this round."""

from __future__ import annotations

import json

from skiff.jobs import launch
from tests.helpers.cli import run_cli


def test_every_jobs_verb_prints_one_json_document(capsys):
    job = launch("demo", {"steps": 1, "sleep": 0.0}, name="r48json").wait(120)
    fields = job.summary()
    one = {"show", "cancel", "wait", "attach", "trust"}
    for verb in ("ls", "show", "logs", "wait", "attach", "trust", "cancel", "rm", "prune"):
        words = {"ls": [], "prune": ["--keep", "0", "--dry-run"],
                 "rm": ["r48json", "--dry-run"]}.get(verb, ["r48json"])
        out = run_cli(capsys, "jobs", verb, *words, "--json")
        assert out.returncode == 0, (verb, out.stderr)
        doc = json.loads(out.stdout)  # one document: json.loads refuses anything after it
        if verb in one or verb == "ls":
            got = doc[0] if verb == "ls" else doc
            assert {k: got[k] for k in fields} == json.loads(json.dumps(fields)), verb
        elif verb == "logs":
            assert doc["id"] == job.id and isinstance(doc["lines"], list)
        else:
            assert doc["would_remove"] == [job.id] and doc["removed"] == [], verb
    out = run_cli(capsys, "jobs", "show", "r48nojob", "--json")
    assert out.returncode == 2
    assert json.loads(out.stdout) == {"error": out.stderr.strip(), "command": "jobs", "exit": 2}
