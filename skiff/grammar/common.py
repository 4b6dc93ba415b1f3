"""One argument grammar per job kind, shared by magics, panels and the CLI.

A command is declared once, as a function that adds its own arguments, stacked under option
group decorators that the kinds share::

    @command("solve", help="Solve a PDE or a linear system.")
    @launch_options        # --np, --wait, -o NAME, --runner
    @device_option         # --device auto|cpu|cuda:N
    def SOLVE(p):
        p.add_argument("problem")
        p.add_argument("--rtol", type=positive_float, default=1e-8)

``SOLVE.parse("poisson --rtol 1e-6")`` gives an ``argparse.Namespace``; bad input raises
:class:`GrammarError` with one line that names the option and the valid choices.
``SOLVE.render(values)`` writes the equivalent magic line or CLI command (for panels).
"""

from __future__ import annotations

import argparse
import difflib
import math
import os
import re
import shlex
from collections.abc import Callable

from skiff.kernels.backend.devices import DEFAULT_DEVICE
from skiff.kernels.backend.units import byte_size as _byte_size

__all__ = [
    "GrammarError", "USER_ERRORS", "user_message", "Command", "command", "device_option",
    "launch_options", "json_option", "cluster_options", "nonneg_int", "did_you_mean",
    "unknown_name", "notebook_only", "positive_int", "positive_float", "nonneg_float", "fraction",
    "relative_tolerance", "bounded_int", "grid_shape", "byte_size", "split_line", "without_comment",
    "GIVEN",
    "was_given", "dry_run_option", "missing_file", "MissingFile", "output_folder",
]


class GrammarError(ValueError):
    """Bad words on a magic line or command line; the message is one line for the user."""


# the user's mistakes: every front shows these as one line (UsageError, exit status 2)
USER_ERRORS = (ValueError, KeyError, FileNotFoundError, TypeError)


def user_message(exc: BaseException) -> str | None:
    """The one-line message of a user's mistake, or None for anything else (a bug)."""
    if not isinstance(exc, USER_ERRORS):
        return None
    return str(exc.args[0] if isinstance(exc, KeyError) and exc.args else exc)


def did_you_mean(word, choices) -> str:
    """``" (did you mean 'poisson'?)"`` for the valid name closest to ``word``, or ``""``.

    The one name that starts with ``word`` (``bicg`` -> ``bicgstab``), else the closest
    spelling (difflib), else the same letters in another order (``gc`` -> ``cg``), else the
    one name of the same length one character away (``7x`` -> ``7b``), else the one longest
    name inside the word (``llama-7b`` -> ``7b``); case is ignored."""
    names = [str(c) for c in choices]
    lower = {n.lower(): n for n in names}
    text = str(word).lower()
    close = [n for n in lower if n.startswith(text)] if len(text.lstrip("-")) >= 2 else []
    if len(close) != 1:
        # options are compared without their dashes: the shared '--' made '--bogus' as close
        # to '--post' as the cutoff, and a suggestion that helps nobody
        dashed = text.startswith("-")
        bare = {(n.lstrip("-") if dashed else n): n for n in lower}
        typed = text.lstrip("-") if dashed else text
        found = difflib.get_close_matches(typed, list(bare), n=1, cutoff=0.6)
        close = [bare[m] for m in found]
        # a word that starts with a valid name (`--lrate` -> `--lr`) beats difflib's weak
        # pick (`--strategy`, ratio 0.62); a near spelling (`--restrat`, 0.88) keeps its own
        head = [n for b, n in bare.items() if len(b) >= 2 and typed.startswith(b)]
        if head and (not found or difflib.SequenceMatcher(None, typed, found[0]).ratio()
                     < 0.75):
            longest = max(len(n) for n in head)
            head = [n for n in head if len(n) == longest]
            close = head if len(head) == 1 else close
    if not close:
        close = [n for n in lower if sorted(n) == sorted(text)][:1]
    if not close and len(text.lstrip("-")) >= 2:
        # one character typed wrong in a short name (`plan 7x`, `13m`): difflib's ratio for
        # two characters of which one differs is 0.5, under its cutoff (round 41)
        near = [n for n in lower if len(n) == len(text)
                and sum(a != b for a, b in zip(n, text)) == 1]
        close = near if len(near) == 1 else []
    if not close:
        # a valid name inside the word, the longest if one is longest: a model as its
        # family calls it (`plan llama-7b`, `train nanogpt-mini`) named none before
        inside = [n for n in lower if len(n.lstrip("-")) >= 2 and n.lstrip("-") in text]
        longest = max((len(n) for n in inside), default=0)
        inside = [n for n in inside if len(n) == longest]
        close = inside if len(inside) == 1 else []
    return f" (did you mean {lower[close[0]]!r}?)" if close else ""


MAX_LISTED = 5000  # a folder's names compared with a missing file's (a huge folder: the first)


class MissingFile(FileNotFoundError, ValueError):
    """A file named on a line that is not there: a FileNotFoundError, and a ValueError as
    every other mistake in a value (the kinds' ``to_config`` raise those)."""


def missing_file(name: str, what: str, sep: str = " ") -> MissingFile:
    """The one-line error for a file that is not there: where a relative name was looked
    for (a notebook's folder is not always the one its user thinks), and the closest name
    in that folder (``claims.cvs`` -> ``claims.csv``) or the missing folder on its way."""
    path = os.path.expanduser(str(name))
    folder = os.path.dirname(path.rstrip(os.sep)) or "."
    head = f"no such {what}{sep}{str(name)!r}"
    if not os.path.isdir(folder):
        return MissingFile(f"{head}: there is no folder {os.path.abspath(folder)}")
    try:
        with os.scandir(folder) as entries:
            names = [e.name for _, e in zip(range(MAX_LISTED), entries)]
    except OSError:
        names = []
    where = "" if os.path.isabs(path) else f" in {os.path.abspath(folder)}"
    return MissingFile(f"{head}{where}"
                       f"{did_you_mean(os.path.basename(path.rstrip(os.sep)), names)}")


def unknown_name(what: str, value, choices, more: str = "") -> ValueError:
    """The one-line error for a name that is not one of ``choices``: the closest valid name,
    then all of them (``more`` adds what else is accepted)."""
    names = ", ".join(map(str, choices))
    return ValueError(f"unknown {what} {value!r}{did_you_mean(value, choices)}: choose from "
                      f"{names}{more}")


def notebook_only(action: argparse.Action) -> argparse.Action:
    """Mark an option as meaningful in a notebook only (``-o NAME``): the terminal's parser
    and its help leave it out (:meth:`Command.parser` with ``cli=True``)."""
    action.notebook_only = True
    return action


# option names other tools taught (mpirun's -np, PETSc's -ksp_type, PyTorch scripts'
# --learning-rate), each with the options it may mean here, the first a parser has named in
# "unrecognized arguments" (round 47: `%solve poisson --solver cg` was "did you mean
# '--overlap'?", `--pc ilu` "did you mean '--bc'?", `%train mlp -np 2` and `--learning-rate`
# had no word); difflib's pick comes after them
OTHER_TOOLS_FLAGS = {
    "-n": ("--np",), "-np": ("--np",), "--nprocs": ("--np",), "--num-procs": ("--np",),
    "--processes": ("--np",), "--world-size": ("--np",),
    "--gpu": ("--device",), "--gpus": ("--device",), "--cuda": ("--device",),
    "--learning-rate": ("--lr",), "--learning_rate": ("--lr",), "--bs": ("--batch-size",),
    "--solver": ("--method",), "--ksp": ("--method",), "--ksp-type": ("--method",),
    "--ksp_type": ("--method",), "--krylov": ("--method",),
    "--pc": ("--precond",), "--pc-type": ("--precond",), "--pc_type": ("--precond",),
    "--preconditioner": ("--precond",),
    "--iters": ("--steps", "--maxiter"), "--iterations": ("--steps", "--maxiter"),
    "--max-iterations": ("--maxiter", "--steps"), "--tol": ("--rtol",),
    "--tolerance": ("--rtol",),
    # jobs: tail's and journalctl's --lines, a listing's --type (round 48: no suggestion)
    "--lines": ("--tail",), "--type": ("--kind",),
}


class _Parser(argparse.ArgumentParser):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.notebook_flags: dict[str, str] = {}  # notebook-only options left out here
        # a kind's word on a flag it does not have (its bare name, dashes as underscores), or
        # None: `solve train-nose --speed 80` says why the model takes no speed (round 36)
        self.flag_hint: Callable[[str], str | None] | None = None

    def error(self, message):  # never sys.exit from a notebook
        raise GrammarError(f"{self.prog}: {message}{self._suggest_option(message)}")

    def parse_known_args(self, args=None, namespace=None):
        if args is not None:   # --grid -4x4: the value reaches its type (see below)
            args = _glue_dashed_values(self, list(args))
        return super().parse_known_args(args, namespace)

    def parse_args(self, args=None, namespace=None):
        """As argparse, and where it leaves words unrecognized only because an option came
        between two positionals (``jobs logs -f ID``, ``jobs show --json ID``, ``train mlp
        --steps 5 blobs``: argparse matches the optional positionals, empty, with the first
        one), parsed again with the options and positionals intermixed."""
        try:
            return super().parse_args(args, namespace)
        except GrammarError as exc:
            if args is None or "unrecognized arguments" not in str(exc):
                raise
            try:
                ns, extras = self.parse_known_intermixed_args(list(args), namespace)
            except (GrammarError, TypeError):  # TypeError: a parser intermixing cannot read
                raise exc from None
            if extras:  # the words left over either way: those, not the positionals before
                split = split_path(list(args))
                if split:  # `train mlp {f}`, f = 'my data.csv': "unrecognized: data.csv"
                    raise GrammarError(f"{self.prog}: unrecognized arguments: "
                                       f"{' '.join(extras)}; {split}") from None
                self.error(f"unrecognized arguments: {' '.join(extras)}")
            return ns

    def exit(self, status=0, message=None):
        if message:
            raise GrammarError(message.strip())
        raise GrammarError(f"{self.prog}: exited")

    def _suggest_option(self, message: str) -> str:
        """For ``unrecognized arguments: --step 3``: the closest option there is; for
        ``argument --grid: expected one argument`` (a value left out): what the value is,
        the option's metavar and its help's first words (round 30)."""
        m = re.match(r"argument ([-\w/]+): expected (?:one|at least one) argument", message)
        if m:
            flags = set(m.group(1).split("/"))  # -o/--output: argparse joins the spellings
            action = next((a for a in self._actions if flags & set(a.option_strings or [])),
                          None)
            if action is None or not action.option_strings:
                return ""
            what = action.metavar if isinstance(action.metavar, str) else \
                action.dest.upper()
            helped = (action.help or "").split(";")[0].split(" (")[0].strip()
            helped = helped.replace("%%", "%") if len(helped) <= 70 else ""
            flag = action.option_strings[-1]
            return f" (give {flag} {what}{': ' + helped if helped else ''})"
        if not message.startswith("unrecognized arguments:"):
            return ""
        flags = [f for f in self._option_string_actions if f.startswith("--")]
        for word in message.split(":", 1)[1].split():
            if word.split("=", 1)[0] in self.notebook_flags:
                return (f" ({self.notebook_flags[word.split('=', 1)[0]]} is for notebooks "
                        "only)")
            if word.startswith("--") and self.flag_hint is not None:
                why = self.flag_hint(word.split("=", 1)[0][2:].replace("-", "_"))
                if why:
                    return f" ({why})"
            flag = word.split("=", 1)[0]
            if not flag.startswith("-") or len(flag) < 2 or flag[1:2].isdigit():
                continue  # a value (or a negative number), not an option
            meant = [f for f in OTHER_TOOLS_FLAGS.get(flag.lower(), ())
                     if f in self._option_string_actions]
            if not meant and not flag.startswith("--") and "-" + flag in flags:
                meant = ["-" + flag]  # a long option with one dash (-np, -steps)
            if meant:
                return f" (did you mean {meant[0]!r}?)"
            if word.startswith("--"):
                hint = did_you_mean(word.split("=", 1)[0], flags)
                if hint:
                    return hint
        return ""

    def _check_value(self, action, value):
        # argparse's own check, with the closest valid choice named
        if action.choices is not None and value not in action.choices:
            names = ", ".join(map(repr, action.choices))
            raise argparse.ArgumentError(
                action, f"invalid choice: {value!r}{did_you_mean(value, action.choices)} "
                        f"(choose from {names})")


def split_path(words: list[str], *, most: int = 8) -> str:
    """Where ``words`` hold one path split at its spaces (a terminal's unquoted ``my
    data.csv``; a notebook's ``%ocr {f}``, IPython putting ``f``'s text in bare): what to
    say of it, else ``""``. The first word is no file, and it and up to ``most - 1`` words
    after it, joined with spaces, are."""
    for i, word in enumerate(words):
        if word.startswith("-") or os.path.exists(os.path.expanduser(word)):
            continue
        for j in range(min(len(words), i + most), i + 1, -1):
            whole = " ".join(words[i:j])
            if os.path.exists(os.path.expanduser(whole)):
                return (f"{whole!r} is there: a path with spaces is one word quoted "
                        f"(\"{whole}\"; in a notebook \"{{name}}\" for a variable holding it)")
    return ""


def without_comment(line: str) -> str:
    """``line`` without its comment: a ``#`` that starts a word outside quotes starts one,
    as in a shell (IPython hands a line magic its comment: the README's ``%jobs  # every
    job, newest first`` was "invalid choice: '#'")."""
    quote, escaped, at_word_start = None, False, True
    for i, ch in enumerate(line):
        if escaped:
            escaped, at_word_start = False, False
        elif quote:
            escaped = ch == "\\" and quote == '"'
            quote = None if ch == quote else quote
        elif ch == "\\":
            escaped, at_word_start = True, False
        elif ch in "'\"":
            quote, at_word_start = ch, False
        elif ch == "#" and at_word_start:
            return line[:i].rstrip()
        else:
            at_word_start = ch.isspace()
    return line


def split_line(line: str | list[str]) -> list[str]:
    """A magic line's words, as a shell splits them (a comment left out)."""
    if isinstance(line, (list, tuple)):
        return list(line)
    try:
        return shlex.split(without_comment(line or ""))
    except ValueError as exc:
        raise GrammarError(f"cannot split the line: {exc}") from None


class Command:
    """A parser for one job kind plus the groups it shares with the others."""

    def __init__(self, name: str, help: str, build: Callable, groups: list[Callable]):
        self.name = name
        self.help = help
        self._build = build
        self._groups = groups

    def parser(self, prog: str | None = None, *, cli: bool = False) -> argparse.ArgumentParser:
        """The argparse parser; ``cli=True`` leaves out the notebook-only options."""
        p = _Parser(prog=prog or self.name, description=self.help, add_help=False,
                    formatter_class=argparse.RawDescriptionHelpFormatter, allow_abbrev=False)
        self.add_to(p)
        if cli:
            for action in [a for a in p._actions if getattr(a, "notebook_only", False)]:
                for flag in action.option_strings:
                    p._option_string_actions.pop(flag, None)
                    p.notebook_flags[flag] = "/".join(action.option_strings)
                action.container._remove_action(action)
        return p

    def add_to(self, p: argparse.ArgumentParser) -> None:
        self._build(p)
        for group in self._groups:
            group(p)

    def parse(self, line: str | list[str], prog: str | None = None, *,
              cli: bool = False) -> argparse.Namespace:
        return self.parser(prog, cli=cli).parse_args(split_line(line))

    def usage(self, prog: str | None = None, *, cli: bool = False) -> str:
        return self.parser(prog, cli=cli).format_help()

    @property
    def summary(self) -> str:
        """The first sentence of the help: one line for a list of commands."""
        text, depth = self.help.replace("%%", "%"), 0
        for i, ch in enumerate(text):  # the first . : ; followed by a space, outside brackets
            depth += (ch in "([") - (ch in ")]")
            if ch in ".:;" and depth == 0 and text[i + 1:i + 2].isspace():
                return text[:i]
        return text.rstrip(".:;")

    def defaults(self) -> dict:
        """The values of a line that gives no option, as the parser makes them: where two
        options share a value (chat's ``--chat`` and ``--raw``) the first one's default, as
        argparse takes it (the last one's made the Chat tab's line say ``--chat`` each time,
        round 44)."""
        p = self.parser()
        out: dict = {}
        for a in p._actions:
            if a.dest != "help":
                out.setdefault(a.dest, a.default)
        return out

    def given(self, line: str | list[str], *, cli: bool = False) -> set[str]:
        """The options the words name themselves (their ``dest``), told apart from those left
        at their default: ``--nodes 1`` typed is given even though 1 is the default. The
        words are parsed as :meth:`parse` does (its errors too); words of a front's own
        (``--json``) are let through."""
        p = self.parser(cli=cli)
        options = [a for a in p._actions if a.option_strings and a.dest != "help"]
        for action in options:  # absent from the namespace unless named on the line
            action.default = argparse.SUPPRESS
        seen = vars(p.parse_known_args(split_line(line))[0])
        return {a.dest for a in options if a.dest in seen}

    def render(self, values: dict, *, style: str = "magic") -> str:
        """The magic line (``style="magic"``) or CLI command (``"cli"``) for ``values``
        (``"words"``: the magic line as the magic reads it, before IPython's formatting).

        Only values that differ from the defaults are written; the CLI command leaves out
        the notebook-only options.
        """
        p = self.parser()
        words: list[str] = []
        options: list[str] = []
        for action in p._actions:
            if action.dest in ("help",) or action.dest not in values:
                continue
            if style == "cli" and getattr(action, "notebook_only", False):
                continue  # -o NAME means nothing in a terminal
            value = values[action.dest]
            many = action.nargs not in (None, "?")
            if not action.option_strings:
                if value is None:
                    continue
                items = value if many and isinstance(value, (list, tuple)) else [value]
                words.extend(shlex.quote(_fmt(v)) for v in items)
                continue
            if value == action.default or value is None:
                continue
            # the first long spelling (--np, not its alias --ranks; --output, not -o)
            flag = next((f for f in action.option_strings if f.startswith("--")),
                        action.option_strings[0])
            if isinstance(action, argparse._StoreConstAction):  # a flag: --wait, --raw
                if value == action.const:  # --chat and --raw share use_template: the one set
                    options.append(flag)
            elif isinstance(action, argparse._AppendAction) and isinstance(value, list):
                for item in value:  # --stop A --stop B
                    options.extend([flag, shlex.quote(_fmt(item))])
            elif many and isinstance(value, (list, tuple)):
                options.extend([flag, *(shlex.quote(str(v)) for v in value)])
            else:
                options.extend([flag, shlex.quote(_fmt(value))])
        body = " ".join(words + options)
        if style == "cli":
            return f"python -m skiff {self.name} {body}".rstrip()
        if style == "words":  # the words the magic reads (IPython's formatting done)
            return f"%{self.name} {body}".rstrip()
        # IPython expands {expr} and $name in a magic's line before the magic reads it (a
        # form's --name 'run {x}' became 'run 7' when its line was pasted; round 44)
        return f"%{self.name} {magic_braces(body)}".rstrip()


# IPython's DollarFormatter: ``$name`` is a variable where the rest of the text has an even
# number of single quotes (outside a quoted word, as it counts); ``$$name`` is ``$name``
_DOLLAR = re.compile(r"(.*?)\$(\$?[\w\.]+)(?=([^']*'[^']*')*[^']*$)")


def magic_braces(text: str) -> str:
    """``text`` as a magic's line must say it for IPython to give the magic ``text``
    (IPython formats a line magic's line with the user's variables: ``{x}`` and ``$x`` are
    x's value). Its ``{`` and ``}`` doubled (``{{`` is a brace); a ``$`` that IPython would
    read as a variable doubled: ``shlex.quote`` puts every ``$`` in single quotes, which
    IPython leaves, but a value with a quote (``"$5, isn't it"``, quoted
    ``'$5, isn'"'"'t it'``) upset its count of them, and the magic got "5, isn't it"."""
    import string

    out = []
    # IPython looks for $name in each text between two braces, the doubled ones undone
    for literal, _field, _spec, _conv in string.Formatter().parse(
            text.replace("{", "{{").replace("}", "}}")):
        end, chunk = 0, []
        for m in _DOLLAR.finditer(literal):
            chunk.append(f"{m.group(1)}$${m.group(2)}")
            end = m.end()
        chunk.append(literal[end:])
        out.append("".join(chunk).replace("{", "{{").replace("}", "}}"))
    return "".join(out)


def _glue_dashed_values(p: argparse.ArgumentParser, words: list[str]) -> list[str]:
    """``--grid -4x4`` as ``--grid=-4x4``: argparse takes a value that starts with a dash
    (and is not a plain negative number) for an option and says "expected one argument";
    glued, the value reaches the option's type, whose message names it."""
    takes_value = {flag for a in p._actions if a.nargs is None and a.option_strings
                   for flag in a.option_strings}
    known = set(p._option_string_actions)
    out: list[str] = []
    i = 0
    while i < len(words):
        word = words[i]
        nxt = words[i + 1] if i + 1 < len(words) else None
        if (word in takes_value and nxt is not None and nxt.startswith("-") and nxt != "-"
                and nxt.split("=", 1)[0] not in known):
            out.append(f"{word}={nxt}")
            i += 2
            continue
        out.append(word)
        i += 1
    return out


def _fmt(value) -> str:
    if isinstance(value, float):  # short, and read back as the same number (1.23456789e-09)
        short = f"{value:g}"
        return short if float(short) == value else repr(value)
    if isinstance(value, (tuple, list)) and value and all(
            isinstance(v, int) and not isinstance(v, bool) for v in value):  # a grid (JSON)
        return "x".join(map(str, value))
    return str(value)


def command(name: str, *, help: str = "") -> Callable[[Callable], Command]:
    """Decorator that turns an argument builder (and its group decorators) into a Command."""

    def wrap(build):
        groups = list(reversed(getattr(build, "__skiff_groups__", [])))
        return Command(name, help, build, groups)

    return wrap


def _group(adder: Callable) -> Callable:
    def decorate(build):
        build.__skiff_groups__ = [*getattr(build, "__skiff_groups__", []), adder]
        return build

    decorate.add = adder
    return decorate


# value types: each raises ArgumentTypeError with the value in the message ---------------------
def _number(convert, ok, expected: str):
    """A converter from text: ``convert`` it, then require ``ok(value)``."""

    def parse(text: str):
        try:
            value = convert(text)
        except ValueError:
            value = None
        if isinstance(value, float) and not math.isfinite(value):
            raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r} (not finite)")
        if value is None or not ok(value):
            raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}"
                                             f"{_too_large(convert, text, value)}")
        return value

    parse.__name__ = expected.replace(" ", "_")
    return parse


# integers stay within int64 (numpy, JSON readers and MPI all hold them); floats are finite:
# inf and nan are never a sensible step count, tolerance or learning rate
INT_MAX = 2 ** 63 - 1


def _whole(text: str) -> int:
    """An integer as people type them: ``300``, ``10_000``, and a whole number in scientific
    notation (``1e3``: --steps 1e3 was "expected a positive integer"); ``2.5`` is none."""
    try:
        return int(text)
    except ValueError:
        value = float(text)  # ValueError for words
        if not math.isfinite(value) or not value.is_integer() or abs(value) > 2 ** 53:
            raise ValueError(text) from None  # 2.5, or past what a float holds exactly
        return int(value)


def _too_large(convert, text: str, value) -> str:
    """`` (too large: ...)`` where a whole number was refused for its size alone (``--steps
    99999999999999999999`` said "expected a positive integer", which it is), else ''."""
    if convert is not _whole:
        return ""
    if value is None:
        try:
            value = float(text)
        except ValueError:
            return ""
        if not math.isfinite(value) or not value.is_integer() or value <= 2 ** 53:
            return ""
        return " (too large: at most 2**53 written with an exponent, 2**63 - 1 in digits)"
    return " (too large: at most 2**63 - 1)" if value > INT_MAX else ""


positive_int = _number(_whole, lambda v: 1 <= v <= INT_MAX, "a positive integer")
nonneg_int = _number(_whole, lambda v: 0 <= v <= INT_MAX, "an integer >= 0")
positive_float = _number(float, lambda v: v > 0, "a positive number")
nonneg_float = _number(float, lambda v: v >= 0, "a number >= 0")
fraction = _number(float, lambda v: 0 < v < 1, "a fraction between 0 and 1 (like 0.1)")
relative_tolerance = _number(float, lambda v: 0 <= v < 1,
                             "a relative tolerance between 0 and 1 (like 1e-8; 0 with an "
                             "--atol above 0)")


def bounded_int(low: int, high: int, what: str = "an integer"):
    """An argparse type for integers in ``[low, high]`` (``--steps``: at most 10**9)."""
    return _number(int, lambda v: low <= v <= high, f"{what} from {low} to {high:,}")


def grid_shape(text: str) -> tuple[int, ...]:
    """``256``, ``256x256`` or ``64x64x64``."""
    parts = re.split(r"[x×,]", str(text).lower())
    try:
        shape = tuple(int(p) for p in parts)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected a grid like 256x256 or 64x64x64, got {text!r}") from None
    if not 1 <= len(shape) <= 3:
        raise argparse.ArgumentTypeError(
            f"expected 1 to 3 sizes, like 256x256 or 64x64x64, got {len(shape)} in {text!r}")
    if min(shape) < 2:
        raise argparse.ArgumentTypeError(
            f"each size of a grid is at least 2, got {min(shape)} in {text!r}")
    if max(shape) > INT_MAX:
        raise argparse.ArgumentTypeError(f"a grid size of {max(shape)} is too large ({text!r})")
    return shape


def byte_size(text: str) -> int:
    """``80GB``, ``16GiB``, ``512MB`` or a plain number of bytes (an argparse type); a
    plain number under a MiB is refused (``--device-memory 80`` meant 80GB, not 80 bytes)."""
    try:
        size = _byte_size(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    if isinstance(text, str) and text.strip().replace(".", "", 1).isdigit() and size < 2**20:
        raise argparse.ArgumentTypeError(
            f"{text.strip()!r} would be {size} bytes: give the unit, like {text.strip()}GB "
            f"or {text.strip()}GiB")
    return size


def _device_type(text: str) -> str:
    from skiff.kernels.backend.devices import DeviceError, resolve_device

    try:
        return resolve_device(text).name if text != DEFAULT_DEVICE else DEFAULT_DEVICE
    except DeviceError as exc:
        hint = did_you_mean(text.split(":")[0], (DEFAULT_DEVICE, "cpu", "cuda")) \
            if str(exc).startswith("unknown device") else ""
        raise argparse.ArgumentTypeError(f"{exc}{hint}") from None


# shared option groups ------------------------------------------------------------------------
@_group
def device_option(p):
    p.add_argument("--device", default=DEFAULT_DEVICE, type=_device_type, metavar="DEV",
                   help="auto (first GPU, else CPU), cpu, cuda or cuda:N")


def variable_name(text: str) -> str:
    """``-o NAME``: a Python name the notebook can use afterwards (``-o 1bad`` stored the job
    where no cell could reach it)."""
    import keyword

    name = str(text).strip()
    if not name.isidentifier() or keyword.iskeyword(name):
        raise argparse.ArgumentTypeError(f"expected a Python variable name, got {text!r}")
    return name


def asks_for_help(line: str | list[str]) -> bool:
    """``-h`` or ``--help`` is one of the line's words (anywhere: ``%train mlp --help``)."""
    try:
        words = split_line(line)
    except GrammarError:
        return False
    return any(w in ("-h", "--help") for w in words)


def job_name(text: str) -> str:
    """A job's name: printable, one line, at most 64 characters."""
    name = str(text).strip()
    if not name or len(name) > 64 or not name.isprintable():
        raise argparse.ArgumentTypeError(
            f"expected a name of 1 to 64 printable characters, got {text!r}")
    return name


@_group
def launch_options(p):
    p.add_argument("--np", "--ranks", dest="np", type=positive_int, default=1, metavar="N",
                   help="number of MPI ranks (N > 1 runs the job as processes)")
    p.add_argument("--runner", choices=("auto", "thread", "process"), default="auto",
                   help="where the job runs: a thread of this kernel, or MPI processes")
    p.add_argument("--oversubscribe", action="store_true",
                   help="start more ranks than this machine has cores (refused without it)")
    p.add_argument("--wait", action="store_true", help="block until the job ends")
    p.add_argument("--name", default=None, metavar="TEXT", type=job_name,
                   help="a name for the job, shown in every listing (%%jobs show NAME finds it)")
    notebook_only(p.add_argument("-o", "--output", metavar="NAME", default=None,
                                 type=variable_name,
                                 help="store the job in the notebook variable NAME"))


@_group
def cluster_options(p):
    p.add_argument("--launcher", choices=("local", "slurm"), default="local",
                   help="local: this machine (thread or mpiexec); slurm: write an sbatch script "
                        "that runs the same worker under srun, and submit it")
    p.add_argument("--nodes", type=positive_int, default=1, metavar="K",
                   help="slurm: number of nodes")
    p.add_argument("--gpus-per-node", type=nonneg_int, default=0, metavar="G",
                   help="slurm: GPUs per node (one rank per GPU); 0: one rank per node")
    dry_run_option.add(p)


@_group
def dry_run_option(p):
    # the Slurm half only where the command has --launcher (ocr, chat and generate have none:
    # their help told of a --launcher slurm they refuse)
    slurm = any("--launcher" in a.option_strings for a in getattr(p, "_actions", ()))
    p.add_argument("--dry-run", action="store_true",
                   help="check the job and print what it would run, starting nothing (in a "
                        + ("terminal; with --launcher slurm: write the script, checked by "
                           "sbatch --test-only where it exists, without queueing it)"
                           if slurm else "terminal)"))


@_group
def json_option(p):
    p.add_argument("--json", action="store_true", help="print one JSON document to stdout")


# the key under which a front hands a kind the options the user named (a sorted list of
# dests), where it knows them: ``--nodes 1`` typed is told apart from ``--nodes`` left out
GIVEN = "_given"


def was_given(values: dict, name: str, default=None) -> bool:
    """Whether the user named option ``name`` (its dest): from ``values[GIVEN]`` where the
    front knows it, else (a panel's values) whether it is set and off ``default``."""
    given = values.get(GIVEN)
    if given is not None:
        return name in given
    value = values.get(name)
    return value is not None and value is not False and value != default


LAUNCH_KEYS = ("np", "runner", "wait", "name", "output", "json", "launcher", "nodes",
               "gpus_per_node", "dry_run", "oversubscribe")


def split_launch(ns: argparse.Namespace) -> tuple[dict, dict]:
    """(kernel config, launch options) from a parsed namespace."""
    values = vars(ns).copy()
    launch = {k: values.pop(k) for k in LAUNCH_KEYS if k in values}
    np_ = launch.get("np")
    if launch.get("runner") == "thread" and isinstance(np_, int) and np_ > 1:
        raise GrammarError(f"--runner thread runs one rank, got --np {np_}: use --runner "
                           f"process (or leave --runner out)")
    return values, launch


def output_folder(path, flag: str) -> None:
    """``--checkpoint-dir DIR`` (a folder a job writes into) checked before the job: its
    missing folders are made when the job writes (the rule for every output path), so
    what is refused is a file where the folder or one above it must be, or a folder not
    writable by you (the job failed on FileExistsError / NotADirectoryError after reading
    its data)."""
    if not path:
        return
    full = os.path.abspath(os.path.expanduser(str(path)))
    there = full
    while not os.path.exists(there) and os.path.dirname(there) != there:
        there = os.path.dirname(there)
    if not os.path.isdir(there):
        what = "is a file" if there == full else f"goes through the file {there}"
        raise ValueError(f"{flag} {path} {what}: name a folder (it is made when missing)")
    if not os.access(there, os.W_OK | os.X_OK):
        raise ValueError(f"{flag} {path}: cannot write in {there} (not writable by you)")
