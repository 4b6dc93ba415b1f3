"""A form generated from a job kind's grammar :class:`~skiff.grammar.common.Command`.

Every option the Command defines becomes a field: a dropdown for options with choices (and
for ``--device``), a checkbox for flags, a text box for everything else. A field checks its
own text with the option's argparse ``type`` as the user types, and shows why a value is bad
next to it; then the whole form is checked by the Command's parser and the kind's
``to_config``. While anything is wrong the Launch button is disabled. The equivalent magic
line and CLI command (``Command.render``) are shown under the form, ready to copy.

A panel can replace a field's widget with a nicer picker (``pickers={dest: factory}``) and
add its own check (``check=fn(values)``), launch (``launcher``) and result view.
"""

from __future__ import annotations

import argparse
import html
import re
import shlex
from collections.abc import Callable

import ipywidgets as W
from ipywidgets.widgets.widget_string import HTMLStyle

from skiff.grammar.common import Command, GrammarError, _fmt, did_you_mean, split_launch
from skiff.kernels.backend.devices import DEFAULT_DEVICE

__all__ = ["CommandForm", "Field", "SKIPPED"]

# options a form does not show: the panel waits and displays by itself
SKIPPED = ("help", "wait", "json")
_USER_ERRORS = (ValueError, TypeError, KeyError, FileNotFoundError, GrammarError)


def _label(action: argparse.Action) -> str:
    if action.option_strings:
        return max(action.option_strings, key=len).lstrip("-").replace("-", " ")
    return (action.metavar if isinstance(action.metavar, str) else action.dest).lower()


def _default_text(action: argparse.Action) -> str:
    if action.default is None or action.default is argparse.SUPPRESS:
        return ""
    if isinstance(action.default, (list, tuple)) and action.nargs in ("+", "*"):
        return " ".join(map(str, action.default))
    return _fmt(action.default)


class FieldLooks:
    """The layouts and the message style that the fields of a form share: one widget model
    each, not one per field (a Train form was 597 models, round 37)."""

    def __init__(self):
        self.message = W.Layout(margin="0 0 0 8px")
        self.message_style = HTMLStyle()
        self.row = W.Layout(align_items="center")


class Field:
    """One option of a Command as a widget, its check, and the message shown next to it.

    ``lazy``: the widget, its message and row are built when first asked for (a field under
    "more options" waits until the section is opened, round 38); until then the field reads
    as the widget would, its default. ``on_build()`` runs once, after the build."""

    def __init__(self, action: argparse.Action, widget: W.ValueWidget | None = None, *,
                 looks: FieldLooks | None = None, lazy: bool = False):
        self.action = action
        self.dest = action.dest
        self.error: str | None = None
        self.on_build: Callable | None = None
        self._looks = looks or FieldLooks()
        self._widget = widget
        self._box = None
        if widget is not None or not lazy:
            self._build()

    def _build(self) -> None:
        action, looks = self.action, self._looks
        widget = self._widget or self._make_widget()
        if not getattr(widget, "description", None):
            widget.description = _label(action)
        # the widget's own style model, changed: a new one left the first in the notebook
        widget.style.description_width = "9em"
        if action.help and action.help is not argparse.SUPPRESS:
            widget.tooltip = action.help.replace("%%", "%")
        widget.add_class(f"skiff-field-{self.dest}")
        message = W.HTML("" if self.error is None else _warning(self.error),
                         layout=looks.message, style=looks.message_style)
        message.add_class("skiff-field-message")
        message.add_class(f"skiff-message-{self.dest}")
        self._widget, self._message = widget, message
        if isinstance(widget, W.Dropdown):  # a value picked: a refused one set is gone
            widget.observe(self._picked, names="value")
        self._box = W.HBox([widget, message], layout=looks.row)
        if self.on_build is not None:
            on_build, self.on_build = self.on_build, None
            on_build()

    def _picked(self, _change=None) -> None:
        self._outside = None

    @property
    def built(self) -> bool:
        """Whether the widgets exist (a lazy field's are made when first asked for)."""
        return self._box is not None

    @property
    def widget(self) -> W.ValueWidget:
        if self._box is None:
            self._build()
        return self._widget

    @property
    def message(self) -> W.HTML:
        if self._box is None:
            self._build()
        return self._message

    @property
    def box(self) -> W.HBox:
        if self._box is None:
            self._build()
        return self._box

    def _initial(self):
        """The value the widget starts with: a checkbox's default, a dropdown's default ("":
        not set), a text box's default as text."""
        a = self.action
        if isinstance(a, (argparse._StoreTrueAction, argparse._StoreFalseAction)):
            # checked: the flag given (chat's "raw" box was checked while the template was
            # used: a store_false's default is True; round 44)
            return a.default == a.const
        if a.dest == "device":
            return DEFAULT_DEVICE
        if a.choices:
            return "" if a.default is None else a.default
        return _default_text(a)

    def _make_widget(self) -> W.ValueWidget:
        a = self.action
        if isinstance(a, (argparse._StoreTrueAction, argparse._StoreFalseAction)):
            return W.Checkbox(value=self._initial(), indent=False)
        if a.dest == "device":
            from skiff.kernels.backend import list_devices

            names = [DEFAULT_DEVICE, *(d.name for d in list_devices())]
            return W.Dropdown(options=names, value=self._initial())
        if a.choices:
            options = [(str(c), c) for c in a.choices]
            if a.default is None:
                options.insert(0, ("(not set)", ""))  # parse() turns "" into the default
            elif a.default not in a.choices:
                options.insert(0, (str(a.default), a.default))
            return W.Dropdown(options=options, value=self._initial())
        placeholder = a.metavar if isinstance(a.metavar, str) else ""
        if getattr(a, "secret", None):  # ocr --password (skiff/jobs/secret.py): dots shown
            return W.Password(value=self._initial(), placeholder=placeholder,
                              continuous_update=True)
        return W.Text(value=self._initial(), placeholder=placeholder, continuous_update=True)

    # values -------------------------------------------------------------------------------
    def raw(self):
        return self._widget.value if self._box is not None else self._initial()

    # the value of a flag's field left unchecked: its default, or (set by the form) the
    # parser's for a value two flags share (chat's --chat: None, not --raw's True)
    unset = argparse.SUPPRESS

    def set(self, value) -> None:
        if isinstance(self.action, (argparse._StoreTrueAction, argparse._StoreFalseAction)):
            self.widget.value = value == self.action.const  # the value, as the flag gives it
            return
        if isinstance(self.widget, W.Text) and not isinstance(value, str):
            join = shlex.join if isinstance(self.action, argparse._AppendAction) else " ".join
            value = join(map(str, value)) if isinstance(value, (list, tuple)) else _fmt(value)
        self._outside = None
        if isinstance(self.widget, W.Dropdown):
            value = self._in_list(value)
            if self._outside is not None:  # kept as it was; parse() says why, by the field
                return
        self.widget.value = value

    # a value given to a dropdown that lists no such value (``form.set(lang="enn")``): the
    # message parse() raises until a value is picked or set (it was traitlets' "Invalid
    # selection: value not found" out of form.set, and no message by the field; round 47)
    _outside: str | None = None

    def _in_list(self, value):
        """``value`` as the dropdown lists it (``"2"`` for an option 2, a choice's text),
        or a value its picker's ``skiff_takes(text) -> label`` takes (added to the list:
        the OCR form's ``lang="en"``), else the value unchanged with ``_outside`` the
        field's message for it, in the magic's words (round 47: the option's type's or
        argparse's choice words, or ``skiff_takes``'s ValueError)."""
        values = list(getattr(self.widget, "_options_values", ()))
        labels = [str(x) for x in getattr(self.widget, "_options_labels", ())]
        if value in values:
            return value
        text = str(value).strip()
        for v in values:  # typed as text: the option whose value reads so
            if v != "" and str(v) == text:
                return v
        v = text
        try:
            if self.action.type is not None and isinstance(value, str):
                v = self.action.type(text)
                if v in values:
                    return v
        except argparse.ArgumentTypeError as exc:  # the magic's words (--device gpu: "no
            self._outside = str(exc)  # device 'gpu' on this machine (devices here: cpu)")
            return value
        except (ValueError, TypeError):
            pass
        takes = getattr(self.widget, "skiff_takes", None)
        if takes is not None:  # a value the kind takes beyond its list (ocr --lang en)
            try:
                label = takes(text)
            except ValueError as exc:
                self._outside = str(exc)  # the kind's words, as the magic says them
                return value
            self.widget.options = [*zip(labels, values), (label, text)]
            return text
        if self.action.choices is not None:
            # the words of the magic's parser: "invalid choice: 'AUTO' (did you mean
            # 'auto'?) (choose from 'auto', 'rcm', 'none')"
            from skiff.grammar.common import _Parser

            try:
                _Parser._check_value(None, self.action, v)
            except argparse.ArgumentError as exc:
                self._outside = exc.message
                return value
        names = [str(v) for v in values if v != ""] or labels
        self._outside = (f"got {text!r}{did_you_mean(text, names)}: choose from "
                         f"{', '.join(names)}")
        return value

    def parse(self):
        """The option's value from the widget; raises ValueError with a message for the user."""
        a = self.action
        if self._outside is not None:
            raise ValueError(self._outside)
        value = self.raw()
        if isinstance(a, (argparse._StoreTrueAction, argparse._StoreFalseAction)):
            return a.const if value else a.default if self.unset is argparse.SUPPRESS \
                else self.unset
        if not isinstance(value, str):
            return value
        text = value.strip()
        # --stop A --stop B (an option given again): its words, a list as the parser makes
        # it (the text was one string, which the chat kind read as a list of characters:
        # the form's --stop END stopped at any E, N or D; round 44)
        append = isinstance(a, argparse._AppendAction)
        many = a.nargs in ("+", "*") or append
        if not text:
            if a.required or a.nargs == "+":  # "required" alone did not say what to give
                what = a.help.replace("%%", "%") if isinstance(a.help, str) else ""
                raise ValueError(f"required: {what}" if what else "required")
            return [] if a.nargs == "*" else a.default
        try:
            words = shlex.split(text) if many else [text]
        except ValueError as exc:
            raise ValueError(f"cannot split {text!r}: {exc}") from None
        if many and not append and len(words) > 1 and _one_path(text, words):
            words = [text]  # a path with spaces pasted as it is: 'scan 1.png' was 'scan', '1.png'
        out = []
        for word in words:
            # the words of the magic's parser (argparse's ``_get_value`` and the grammar's
            # ``_check_value``): a type's ValueError was Python's own ("could not convert
            # string to float: 'x'" where %solve --re x says "invalid float value: 'x'"),
            # a choice typed in a text box "got 'x': choose from a, b" (round 48)
            try:
                v = a.type(word) if a.type is not None else word
            except argparse.ArgumentTypeError as exc:
                raise ValueError(str(exc) or f"invalid value {word!r}") from None
            except (ValueError, TypeError):
                name = getattr(a.type, "__name__", repr(a.type))
                raise ValueError(f"invalid {name} value: {word!r}") from None
            if a.choices and v not in a.choices:
                from skiff.grammar.common import _Parser

                try:
                    _Parser._check_value(None, a, v)
                except argparse.ArgumentError as exc:
                    raise ValueError(exc.message) from None
            out.append(v)
        return out if many else out[0]

    def show(self, error: str | None) -> None:
        self.error = error
        if self._box is None and error is None:
            return   # nothing to show: a lazy field stays unbuilt
        text = "" if error is None else _warning(error)
        if self.message.value != text:
            self.message.value = text


class CommandForm(W.VBox):
    """Fields for every option of ``command``, live checks, the equivalent lines, Launch.

    Parameters
    ----------
    command : Command
        The kind's grammar.
    to_config : callable, optional
        ``to_config(values) -> config`` of the kind; it raises ValueError for bad values.
    pickers : dict, optional
        ``dest -> factory(action) -> widget`` replacing the default widget of a field.
    check : callable, optional
        ``check(values) -> values`` run before ``to_config``, e.g. to stand in for notebook
        objects that ``to_config`` cannot know; raise ValueError for bad values.
    launcher : callable, optional
        ``launcher(form, values) -> Job``; the default runs the magic line in the notebook's
        shell when the magic is registered, else launches through ``to_config``.
    on_launch : callable, optional
        ``on_launch(job)`` after a launch (e.g. to show results once the job ends).
    skip : tuple of str
        More options not to show.
    held : callable, optional
        ``held(values) -> [names]``: the notebook variables the values name (a model, a data
        set, a matrix held in the notebook). A terminal cannot read them: the form's
        terminal line says so instead of a ``python -m skiff`` command that would read
        the name as a file or a built-in (:attr:`cli` is None then).
    """

    def __init__(self, command: Command, to_config: Callable | None = None, *,
                 pickers: dict | None = None, check: Callable | None = None,
                 launcher: Callable | None = None, on_launch: Callable | None = None,
                 skip: tuple[str, ...] = (), order: tuple[str, ...] = (),
                 held: Callable | None = None):
        self.command = command
        self.held = held
        self.to_config = to_config
        self.check = check
        self.launcher = launcher or launch_with_magic
        self.on_launch = on_launch
        self.fields: dict[str, Field] = {}
        pickers = pickers or {}
        actions = [a for a in command.parser()._actions
                   if a.dest not in SKIPPED and a.dest not in skip]
        rank = {name: i for i, name in enumerate(order)}
        actions.sort(key=lambda a: rank.get(a.dest, len(rank)))
        looks = FieldLooks()
        unset = command.defaults()
        # the options named in ``order`` come first; the others wait under "more options",
        # built when the section is opened or a field of it is asked for (round 38: a Train
        # form's 53 fields under it were ~5 widget models each, saved with the notebook)
        self._rest = [a.dest for a in actions if rank and a.dest not in rank]
        for a in actions:
            widget = pickers[a.dest](a) if a.dest in pickers else None
            self.fields[a.dest] = field = Field(a, widget, looks=looks,
                                                lazy=a.dest in self._rest)
            field.unset = unset.get(a.dest, a.default)
            if not field.built:
                field.on_build = self._build_more
        main = [f.box for d, f in self.fields.items() if d not in self._rest]
        self.more = W.Accordion([W.VBox([])], titles=("more options",), selected_index=None)
        self.more.add_class("skiff-more-options")
        self.more.observe(lambda change: change["new"] is not None and self._build_more(),
                          names="selected_index")
        self.status = W.HTML("")
        self.status.add_class("skiff-form-status")
        self.magic_line = W.HTML("")
        self.magic_line.add_class("skiff-magic-line")
        self.cli_line = W.HTML("")
        self.cli_line.add_class("skiff-cli-line")
        self.launch_button = W.Button(description="Launch", icon="play", button_style="primary")
        self.launch_button.add_class("skiff-launch")
        self.launch_button.on_click(lambda _b: self.launch())
        self.extra_buttons = W.HBox([])
        self.output = W.VBox([])
        self.output.add_class("skiff-form-output")
        self.jobs: list = []
        self._lines = ("", "")
        self.values: dict | None = None
        self.config: dict | None = None
        self._more_built = not self._rest
        self._holding = False  # set() fills several fields, then checks once
        for d, f in self.fields.items():
            if d not in self._rest:
                f.widget.observe(self._changed, names="value")
        super().__init__([*main, *([self.more] if self._rest else []), self.status,
                          W.HBox([self.launch_button, self.extra_buttons]),
                          self.magic_line, self.cli_line, self.output])
        self.add_class(f"skiff-form-{command.name}")
        self.validate()

    def _build_more(self) -> None:
        """Build the fields under "more options" and put them in the section (once)."""
        if self._more_built:
            return
        self._more_built = True
        for d in self._rest:
            self.fields[d].widget.observe(self._changed, names="value")
        self.more.children[0].children = [self.fields[d].box for d in self._rest]

    def _changed(self, _change=None) -> None:
        if not self._holding:
            self.validate()

    # checking -----------------------------------------------------------------------------
    def field_for(self, message: str) -> Field | None:
        """The field an error message is about (it names ``--option`` or the value)."""
        # the option named first: "--overlap shapes ... (--np 2 --precond ilu ...)" is
        # about --overlap (it was shown by the precond field, the form's first; round 47)
        # Of those, the first one the user set: "--monitor and --mode say what --early-stop
        # watches" is about --mode when --monitor is left as it was (round 47 h25)
        first = first_set = None
        for f in self.fields.values():
            for flag in f.action.option_strings:
                m = re.search(rf"(^|[\s'\"(]){re.escape(flag)}($|[\s:='\")])", message)
                if m is not None and (first is None or m.start() < first[0]):
                    first = (m.start(), f)
                if m is not None and f.raw() != f._initial() and (
                        first_set is None or m.start() < first_set[0]):
                    first_set = (m.start(), f)
        if first_set is not None or first is not None:
            return (first_set or first)[1]
        for f in self.fields.values():
            name = f.action.metavar if isinstance(f.action.metavar, str) else f.dest
            if not f.action.option_strings and re.search(rf"\b{re.escape(name)}\b", message):
                return f
        for f in self.fields.values():  # the message quotes what the user typed in a field
            raw = f.raw()
            if isinstance(raw, str) and raw.strip():
                words = shlex.split(raw) if "'" not in raw and '"' not in raw else [raw]
                words = [*words, raw.strip()]  # a value with spaces, quoted whole
                if any(f"'{w}'" in message or f'"{w}"' in message for w in words):
                    return f
        return None

    def validate(self) -> bool:
        """Check every field and the whole form; show messages; enable Launch if all is well."""
        values, ok = {}, True
        for f in self.fields.values():
            try:
                values[f.dest] = f.parse()
                f.show(None)
            except ValueError as exc:
                f.show(str(exc))
                ok = False
        general = None
        config = None
        if ok:
            try:
                checked = self.check(dict(values)) if self.check else dict(values)
                kernel_values, _launch = split_launch(argparse.Namespace(**checked))
                # the Command's own parser has the last word on the line it renders
                line = self.command.render(values, style="words")  # as the magic reads it
                self.command.parse(line.split(" ", 1)[1] if " " in line else "")
                if self.to_config is not None:
                    config = self.to_config(kernel_values)
                _check_ranks(_launch)
                self._check_local(values, _launch)
            except _USER_ERRORS as exc:
                msg = exc.args[0] if isinstance(exc, KeyError) and exc.args else str(exc)
                msg = str(msg).removeprefix(f"{self.command.name}: ")
                field = self.fields.get(getattr(exc, "dest", None)) or self.field_for(msg)
                if field is not None:
                    field.show(msg)
                else:
                    general = msg
                ok = False
        self.status.value = "" if general is None else (
            _warning(general))
        self.launch_button.disabled = not ok
        if any(self.fields[d].error for d in self._rest):
            self.more.selected_index = 0  # a message the user must see: open the section
        self.values = values if ok else None
        self.config = config if ok else None
        if all(f.error is None for f in self.fields.values()):
            from skiff.jobs.secret import mask_command, secret_options

            secrets = secret_options(self.command)  # shown with *** (copied as shown)
            self._lines = (mask_command(self.command.render(values, style="magic"), secrets),
                           mask_command(self._cli_line(values), secrets))
        # while a value is bad the last good lines stay, greyed out
        self.magic_line.value = _copyable("magic", self._lines[0], stale=not ok)
        self.cli_line.value = _copyable("terminal", self._lines[1], stale=not ok)
        return ok

    def _check_local(self, values: dict, launch: dict) -> None:
        """A notebook variable on more ranks than this kernel's thread, refused in the
        launch's words: the OCR form's ``img --np 2`` and the Train form's ``mlp data
        --runner process`` were taken, and ``%ocr img --np 2`` refuses them (round 47)."""
        if not self._held(values):
            return
        from skiff.jobs.launch import choose_runner, launch_options
        from skiff.kinds import KINDS

        where = launch_options(launch)
        runner = choose_runner(where["np"], where["runner"], where["launcher"])
        kind = KINDS.get(self.command.name)
        if runner == "thread" or kind is None or kind.command is not self.command:
            return
        shell = _shell()
        kernel_values, _ = split_launch(argparse.Namespace(**values))  # the variables named
        user_ns = shell.user_ns if shell else {}
        got = (f" (got np={where['np']}, runner={where['runner']!r}, launcher="
               f"{where['launcher']!r})")
        asked = "np" if where["np"] != 1 else "runner" if where["runner"] != "auto" \
            else "launcher"  # the field that asked for other ranks
        try:
            request = kind.prepare(dict(kernel_values), user_ns=user_ns, where=runner)
        except ValueError as exc:
            # a kind that refuses them itself (train: "notebook objects (m, data) cannot
            # travel to other processes: ... (--np 1, no --runner process) ..."): by the
            # field that asked, where this kernel's thread takes them (it was shown by
            # --np, the option its words name first, of a --runner process the user set;
            # round 47 h17)
            if getattr(exc, "dest", None) is not None:
                raise
            try:
                kind.prepare(dict(kernel_values), user_ns=user_ns, where="thread")
            except Exception:  # noqa: BLE001 - refused on the thread too: not the ranks'
                raise exc from None
            error = ValueError(str(exc))  # the magic's words, as %train says them
            error.dest = asked
            raise error from None
        if request.fn is not None and request.local_only:
            error = ValueError(f"{request.local_only}{got}")
            error.dest = asked
            raise error

    @property
    def magic(self) -> str | None:
        """The magic line equivalent to the form (None while a value is bad)."""
        return None if self.values is None else self.command.render(self.values, style="magic")

    @property
    def cli(self) -> str | None:
        """The ``python -m skiff`` command equivalent to the form (None while a value is bad,
        or while a value names a notebook variable, which no terminal can read)."""
        if self.values is None or self._held(self.values):
            return None
        return self._cli_line(self.values)

    def _held(self, values: dict) -> list[str]:
        if self.held is None:
            return []
        try:
            return list(self.held(values))
        except Exception:  # noqa: BLE001 - a strange variable: the line as it was
            return []

    def _cli_line(self, values: dict) -> str:
        """The terminal's command; for values naming notebook variables, why there is none
        (round 44: the Train form with the notebook's ``data`` showed ``python -m skiff
        train mlp data``, which a terminal reads as a file named data)."""
        held = self._held(values)
        if held:
            what = "is a notebook variable" if len(held) == 1 else "are notebook variables"
            return f"(none: {', '.join(held)} {what}; a terminal takes files and built-in names)"
        return self.command.render({k: v for k, v in values.items() if k != "output"},
                                   style="cli")

    @property
    def errors(self) -> dict[str, str]:
        """dest -> message of every field that shows one."""
        return {d: f.error for d, f in self.fields.items() if f.error}

    def set(self, **values) -> None:
        """Fill fields by option name (``form.set(grid="64x64", rtol=1e-6)``)."""
        unknown = set(values) - set(self.fields)
        if unknown:
            raise KeyError(f"unknown field(s) {sorted(unknown)}: the form has "
                           f"{', '.join(self.fields)}")
        # checked once, when all are in: each field checked the whole form as it was set
        # (form.set(problem=..., b=..., precond=...) was four checks, the first three of a
        # form half filled in; round 47)
        self._holding = True
        try:
            for dest, value in values.items():
                self.fields[dest].set(value)
        finally:
            self._holding = False
        self.validate()

    # launching ----------------------------------------------------------------------------
    def launch(self):
        """Start the job the form describes; show its live widget under the form."""
        if not self.validate():
            return None
        try:
            job = self.launcher(self, dict(self.values))
        except Exception as exc:  # show the user's mistake; keep the panel alive
            msg = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            self.status.value = _warning(msg)
            return None
        if job is None:
            return None
        self.jobs.append(job)
        from .job_view import view_for

        # the new job's view on top; an earlier job of this form still running keeps its
        # view under it (a second Launch, or a double click, hid the first job, running)
        running = [v for v in self.output.children
                   if getattr(v, "job", None) is not None and not v.job.done]
        self.output.children = [view_for(job), *running]
        if self.on_launch is not None:
            self.on_launch(job)
        return job


def _check_ranks(launch: dict) -> None:
    """The ranks against this machine's cores, as a launch checks them: ``--np 3`` on two
    cores showed no message and left Launch enabled (the refusal came after the click);
    ``--nodes 2`` or ``--gpus-per-node 1`` without ``--launcher slurm`` too (round 48: the
    magic and the terminal refuse them, "--nodes 2 is for a cluster: ...")."""
    from skiff.jobs.launch import _check_cluster_options, launch_options

    _check_cluster_options(launch_options(launch), None)
    np_ = launch.get("np")
    if not isinstance(np_, int) or np_ <= 1 and launch.get("runner") != "process":
        return
    from skiff.jobs.launch import check_ranks, choose_runner

    where = choose_runner(np_, launch.get("runner") or "auto", launch.get("launcher") or "local")
    check_ranks(np_, where, bool(launch.get("oversubscribe")))


def _one_path(text: str, words: list[str]) -> bool:
    """Whether ``text`` as typed (unquoted, with spaces) names an existing file or folder
    while its words do not all name one: a path pasted into a field of several values."""
    import os

    def exists(path: str) -> bool:
        try:
            return os.path.exists(os.path.expanduser(path))
        except (OSError, ValueError):
            return False

    if all(exists(w) for w in words):
        return False
    if exists(text):
        return True
    # a missing file in a folder with spaces ('my scans/p1.png'): one path, so that the
    # message names it whole, not "no such file 'my'"
    parent = os.path.dirname(os.path.expanduser(text))
    return " " in parent and exists(parent) and not exists(words[0])


def _warning(text: str) -> str:
    return f"<span style='color:#d62728'>⚠ {html.escape(str(text), quote=False)}</span>"


def _copyable(label: str, text: str, stale: bool = False) -> str:
    look = "color:#aaa" if stale else "user-select:all"
    return (f"<div style='font-size:90%'><span style='color:#666;display:inline-block;"
            f"width:5.5em'>{label}</span><code style='{look};white-space:pre'>"
            f"{html.escape(text)}</code></div>")


def launch_with_magic(form: CommandForm, values: dict):
    """Launch what the form says, as its magic line would.

    A registered job kind's form goes through :func:`skiff.jobs.submit` with the notebook's
    variables (exactly what its magic does); another form runs its magic line in the
    notebook's shell when that magic exists, else launches through the form's
    ``to_config``."""
    from skiff.jobs import launch, submit
    from skiff.jobs.launch import launch_options
    from skiff.kinds import KINDS

    name = form.command.name
    shell = _shell()
    user_ns = shell.user_ns if shell is not None else {}
    kind = KINDS.get(name)
    if kind is not None and kind.command is form.command:
        job, opts = submit(name, values=dict(values), user_ns=user_ns)
    elif shell is not None and shell.find_line_magic(name) is not None:
        from IPython.core.error import UsageError

        line = form.command.render(values, style="magic")
        try:
            return shell.run_line_magic(name, line.split(" ", 1)[1] if " " in line else "")
        except UsageError as exc:
            raise ValueError(str(exc)) from None
    elif form.to_config is None:
        raise ValueError(f"no %{name} magic and no to_config to launch with")
    else:
        kernel_values, opts = split_launch(argparse.Namespace(**values))
        job = launch(name, form.to_config(kernel_values), **launch_options(opts))
    if opts.get("output"):
        user_ns[opts["output"]] = job
    return job


def _shell():
    try:
        from IPython import get_ipython
    except ImportError:
        return None
    return get_ipython()

