"""Round 44 (h15): a form's magic line, pasted into a cell, gives the magic what the form ran.

IPython formats a line magic's line with the notebook's variables before the magic reads it
(``{x}`` becomes x's value, ``{len(s)}`` is evaluated). The Solve form with the name
``run {x}`` launched a job named ``run {x}`` but showed ``%solve poisson --name 'run {x}'``,
which, pasted with ``x = 7`` in the notebook, started a job named ``run 7``; a path with
braces and a chat prompt with braces likewise; a prompt "It costs $5, isn't it?" lost its
``$`` (IPython reads ``$name`` outside single quotes, and the value's own quote upset its
count). The magic line now doubles its braces and the ``$`` IPython would read.

Oracle: IPython's own expansion (``InteractiveShell.var_expand``, as ``run_line_magic``
applies it), then the kind's grammar reading the expanded words."""

from __future__ import annotations

from IPython.core.interactiveshell import InteractiveShell

from skiff.grammar.common import split_line
from skiff.kinds import KINDS
from skiff.widgets.form import CommandForm
from skiff.widgets.panels import solve_form


def _as_pasted(line: str, **user_ns) -> dict:
    """What the magic reads when ``line`` is run in a cell of a notebook with ``user_ns``."""
    ip = InteractiveShell.instance()
    ip.user_ns.update(user_ns)
    try:
        expanded = ip.var_expand(line, depth=0)
    finally:
        for name in user_ns:
            ip.user_ns.pop(name, None)
    name, _, rest = expanded.partition(" ")
    return vars(KINDS[name.lstrip("%")].command.parse(split_line(rest)))


def test_solve_form_name_with_braces_is_the_same_pasted():
    form = solve_form()
    form.set(problem="poisson", name="run {x} of {len(s)} {{a}}")
    assert form.values is not None, form.errors
    got = _as_pasted(form.magic, x=7, s="abc")
    assert got["name"] == "run {x} of {len(s)} {{a}}", form.magic
    assert form.values["name"] == got["name"]
    assert "{" in form.cli and "{{" not in form.cli.replace("{{a}}", "")  # a shell: as is


def test_ocr_form_path_with_braces_is_valid_and_the_same_pasted(tmp_path):
    scan = tmp_path / "scan {1}.png"
    scan.write_bytes(b"\x89PNG\r\n\x1a\n")
    kind = KINDS["ocr"]
    form = CommandForm(kind.command)
    form.set(inputs=str(scan))
    assert form.values is not None, form.errors  # the form's own check reads it whole
    got = _as_pasted(form.magic)
    assert [str(p) for p in got["inputs"]] == [str(scan)], form.magic


def test_chat_prompt_with_json_braces_rendered_for_a_cell():
    command = KINDS["chat"].command
    values = vars(command.parse(["ckpt", "placeholder"]))
    prompt_dest = next(a.dest for a in command.parser()._actions
                       if not a.option_strings and a.dest != values.get("model") and
                       values.get(a.dest) == "placeholder")
    for prompt in ('count to {n} in {lang}', 'answer as JSON {"n": {n}}',
                   # a quote in the value upset IPython's count of quotes: $n read as n
                   "$n isn't it", "it costs $5, isn't it?", "$$n and it's {{n}} $n.x",
                   "don't {n}'s $n' $'n $$$n"):
        line = command.render({**values, prompt_dest: prompt}, style="magic")
        assert _as_pasted(line, n=3, lang="French")[prompt_dest] == prompt, line
