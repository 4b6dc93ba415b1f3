"""Round 48 (h8): other tools' words for the jobs verbs and their options, as a user types
them. ``jobs remove ID`` was "invalid choice: 'remove' (did you mean 'resume'?)" (the verb
that starts the job again, for one that removes it), ``jobs kill ID`` / ``stop`` / ``delete``
/ ``status`` / ``restart`` "'kill' is no action ...; a job? jobs show kill", ``jobs logs ID
--lines 3`` and ``jobs ls --type train`` "unrecognized arguments" with no word of ``--tail``
or ``--kind``. Now each is refused on one line naming the verb or option meant, in both
fronts, and nothing is done (a ``kill`` cancels nothing unasked). The oracle: what each
tool's word does there (kubectl delete, docker rm/stop/ps, systemctl status/restart,
scancel, tail -n/--lines), and the verb or option named being one the grammar takes."""

from __future__ import annotations

import re

import pytest

from skiff.grammar.common import GrammarError
from skiff.grammar.jobs import JOB_ACTIONS, JOBS
from tests.helpers.cli import run_cli

# the word, what it does in the tool that taught it: the jobs verb that does that
MEANT = {"kill": "cancel", "stop": "cancel", "scancel": "cancel", "delete": "rm",
         "remove": "rm", "status": "show", "inspect": "show", "restart": "resume",
         "ps": "list"}


def test_another_tools_verb_names_the_verb_meant_and_does_nothing(capsys):
    from skiff.jobs import launch

    job = launch("demo", {"steps": 1, "sleep": 0.0}, name="r48words").wait(120)
    for word, meant in MEANT.items():
        out = run_cli(capsys, "jobs", word, "r48words")
        assert out.returncode == 2 and out.stdout == "", word
        (line,) = out.stderr.strip().splitlines()
        assert re.search(r"did you mean '(\w+)'\?", line).group(1) == meant, line
        assert meant in JOB_ACTIONS
    assert job.refresh().status == "done" and job.run_dir.is_dir()  # killed, removed: no


@pytest.mark.parametrize("words,meant", [("logs ID --lines 3", "--tail"),
                                         ("ls --type train", "--kind")])
def test_another_tools_option_names_the_option_meant(words, meant):
    with pytest.raises(GrammarError) as info:
        JOBS.parse(words)
    assert str(info.value).endswith(f"(did you mean {meant!r}?)")
    named = JOBS.parse(words.replace(words.split()[-2], meant))  # it takes what it names
    assert named.action in JOB_ACTIONS
