"""``skiff.panel()`` / ``%skiff``: tabs Train, Solve, OCR, Chat and Jobs, for those who prefer
forms.

Each job tab is a :class:`~skiff.widgets.form.CommandForm` generated from the kind's grammar
(``skiff.kinds.<kind>.COMMAND`` and ``to_config``), so a tab offers whatever options the
grammar defines, checks them as the user types, and shows the equivalent magic line and CLI
command. Some fields get nicer pickers: Train picks models and data sets among the notebook's
variables and the built-ins and can show the planner's table; OCR takes uploaded files. When
a job ends, the Solve tab shows the field and the convergence plot and the OCR tab the lines
it read. The Chat tab (:class:`~skiff.widgets.chat_tab.ChatTab`) asks a checkpoint and shows
the answer as it is written, the thinking collapsed. The Jobs tab is the
:class:`~skiff.widgets.monitor.JobMonitor`.
"""

from __future__ import annotations

import html
import importlib
import os
import re
import shlex
import time
from collections.abc import Mapping
from pathlib import Path

import ipywidgets as W

from skiff.kinds import KINDS
from skiff.kinds.ocr import lines_table_html  # noqa: F401  (the OCR tab's table)
from skiff.kinds.solve import is_system
from skiff.kinds.train import is_dataset, is_model

from .chart import log_axis
from .form import CommandForm, _warning
from .monitor import JobMonitor

__all__ = ["panel", "Panel", "train_form", "solve_form", "ocr_form", "chat_form", "chat_tab"]

TABS = ("train", "solve", "ocr", "chat")
_TITLES = {"train": "Train", "solve": "Solve", "ocr": "OCR", "chat": "Chat", "jobs": "Jobs"}


def _grammar(kind: str):
    """The module of a kind (its COMMAND, to_config and helpers)."""
    return importlib.import_module(f"skiff.kinds.{kind}")


def _user_ns() -> dict:
    try:
        from IPython import get_ipython
    except ImportError:
        return {}
    ip = get_ipython()
    return ip.user_ns if ip is not None else {}


def _hidden() -> set:
    """The names IPython put in the notebook itself (``In``, ``Out``, ``exit``, ...): the
    Train form's data picker offered ``In``, the cells' history, as a data set."""
    try:
        from IPython import get_ipython
    except ImportError:
        return set()
    ip = get_ipython()
    return set(getattr(ip, "user_ns_hidden", None) or ()) if ip is not None else set()


def _notebook_vars(test) -> list[str]:
    hidden = _hidden()
    return sorted(k for k, v in _user_ns().items()
                  if not k.startswith("_") and k not in hidden and not isinstance(v, type)
                  and _safe(test, v))


def _held(*dests: str):
    """``held(values)`` of a form: the notebook variables its ``dests`` name."""
    def held(values: dict) -> list[str]:
        ns, hidden, out = _user_ns(), _hidden(), []
        for dest in dests:
            value = values.get(dest)
            for item in value if isinstance(value, (list, tuple)) else [value]:
                if isinstance(item, str) and item in ns and item not in hidden \
                        and not item.startswith("_") and item not in out:
                    out.append(item)
        return out
    return held


def _safe(test, value) -> bool:
    try:
        return bool(test(value))
    except Exception:
        return False


def _data_refusal(model: str, name: str, ns: dict) -> str | None:
    """What ``%train MODEL NAME`` says of the notebook value ``ns[name]`` before any job
    (None: it takes it): the kind's own check (``prepare``), so that the Train form offers
    and takes what the magic takes. A data frame for the mlp is read as a table file
    (written to the runs folder at launch): taken, not written here."""
    from skiff.kernels.train.models.registry import BUILTIN_MODELS
    from skiff.kernels.train.table_frame import is_frame
    from skiff.kinds.train import OCR_REC

    value = ns.get(name)
    if not _safe(is_dataset, value):
        return f"DATA {name!r} is a {type(value).__name__}, not a data set"
    in_ns = model in ns and _safe(is_model, ns[model])
    if not in_ns and model not in (*BUILTIN_MODELS, OCR_REC):
        return None  # a model the form refuses anyway: the data is not what is wrong
    if not in_ns and model == "mlp" and _safe(is_frame, value):
        return None
    g = _grammar("train")
    try:
        KINDS["train"].prepare({**g.COMMAND.defaults(), "model": model, "data": name},
                               user_ns={k: ns[k] for k in (model, name) if k in ns})
    except Exception as exc:  # noqa: BLE001  (whatever the magic would refuse it with)
        return str(exc) or type(exc).__name__
    return None


def _trainable_vars(model: str) -> list[str]:
    """The notebook's values ``%train MODEL`` takes as DATA (the Train form's picker offered
    any value with ``len()`` and items: a bare array for the mlp, a sparse matrix, a list of
    words, each refused at Launch)."""
    ns = _user_ns()
    return [k for k in _notebook_vars(is_dataset) if _data_refusal(model, k, ns) is None]


# Train ---------------------------------------------------------------------------------------
def train_form() -> CommandForm:
    """The Train form: model and data pickers (notebook variables and built-ins), a Plan
    button when the planner is there."""
    g = _grammar("train")
    from skiff.kernels.train.models.registry import BUILTIN_DATA, BUILTIN_MODELS

    models, datasets = list(BUILTIN_MODELS), list(BUILTIN_DATA)

    def model_picker(action):
        names = [*_notebook_vars(is_model), *models]
        return W.Combobox(options=names, value=models[0], ensure_option=False,
                          placeholder="built-in name or notebook variable")

    def data_picker(action):
        names = [*_trainable_vars(models[0]), *datasets]
        return W.Combobox(options=names, value="", ensure_option=False,
                          placeholder="default: the model's own data")

    def strategy_picker(action):
        return W.Combobox(options=list(g.STRATEGIES), value=action.default,
                          ensure_option=False)

    stand_in = {"model": False}  # set by check() on each validate, read by to_config()

    def check(values: dict) -> dict:
        ns = _user_ns()
        model, data = values.get("model"), values.get("data")
        stand_in["model"] = False
        if model in ns and _safe(is_model, ns[model]):
            values["model"] = models[0]  # a stand-in: to_config checks the rest
            stand_in["model"] = True
            if data is None:
                raise ValueError(f"DATA is needed to train the notebook model {model!r}")
        if data in ns and _safe(is_dataset, ns[data]):
            why = _data_refusal(model, data, ns)
            if why is not None:  # what %train says of it (round 45: a bare array, a sparse
                raise ValueError(why)  # matrix looked fine here, refused at Launch)
            values["data"] = None
        return values

    def to_config(values: dict) -> dict:
        config = g.to_config(values)
        if not stand_in["model"]:
            # what the launch checks beyond to_config, on the built model (LoRA targets a
            # built-in model lacks): shown next to the field as the user types; it was
            # refused only after Launch, under the form (round 29)
            KINDS["train"].prepare(dict(values), user_ns={})
        return config

    form = CommandForm(g.COMMAND, to_config, check=check, held=_held("model", "data"),
                       pickers={"model": model_picker, "data": data_picker,
                                "strategy": strategy_picker},
                       order=("model", "data", "epochs", "steps", "lr", "batch_size",
                              "strategy", "np", "device", "checkpoint_dir"))
    from skiff.grammar import plan
    plan_out = W.HTML("")
    plan_out.add_class("skiff-plan")
    button = W.Button(description="Plan", icon="table",
                      tooltip="how the planner would lay this model out on the ranks")
    button.add_class("skiff-plan-button")

    def on_plan(_b=None):
        model = form.fields["model"].raw()
        np_ = form.values.get("np", 1) if form.values else 1
        try:
            values = {**plan.COMMAND.defaults(), "model": model, "devices": np_}
            result = plan.run(values)
        except Exception as exc:
            plan_out.value = _warning(str(exc))
            return
        text = result._repr_html_() if hasattr(result, "_repr_html_") else \
            f"<pre>{html.escape(repr(result))}</pre>"
        plan_out.value = text

    button.on_click(on_plan)
    form.plan = on_plan

    def plan_stale(_change=None):
        # a plan is of the model and ranks it was asked for: changing either clears it
        # (round 44: a form holding mlp on 1 rank showed gpt-mini's plan on 2)
        plan_out.value = ""

    for name in ("model", "np"):
        if name in form.fields:
            form.fields[name].widget.observe(plan_stale, names="value")

    def data_choices(_change=None):
        # the data a model takes depends on it (a bare token array: gpt-mini, not the mlp)
        form.fields["data"].widget.options = [
            *_trainable_vars(form.fields["model"].raw() or models[0]), *datasets]

    if "data" in form.fields and "model" in form.fields:
        form.fields["model"].widget.observe(data_choices, names="value")
    form.extra_buttons.children = [button]
    form.children = [*form.children[:-1], plan_out, form.children[-1]]
    return form


# Solve ---------------------------------------------------------------------------------------
def solve_form() -> CommandForm:
    """The Solve form; when the job is done, the field and the convergence plot."""
    g = _grammar("solve")
    result = W.VBox([])
    result.add_class("skiff-solve-result")

    def on_launch(job):
        result.children = []
        # the latest job's solution only: an earlier job ending later drew its summary
        # under the latest job's view
        job.add_done_callback(lambda j: form.jobs and form.jobs[-1] is j
                              and _show_solution(j, result))

    problems = [p for p in getattr(g, "PROBLEMS", ()) if p != "custom"]

    def problem_picker(action):
        names = [*_notebook_vars(is_system), *problems]
        return W.Combobox(options=names, value=problems[0] if problems else "",
                          ensure_option=False, placeholder="built-in problem or variable")

    def check(values: dict) -> dict:
        ns = _user_ns()
        name = values.get("problem")
        variable = name in ns and _safe(is_system, ns[name])
        if variable or name in problems:
            # what %solve checks before any job, in its words (round 47): of a notebook
            # system, B missing or no variable, a notebook preconditioner (--precond M:
            # "unknown precond 'M'" here while the magic took it), --np 2; of a built-in
            # problem, a B given with it (the form ran without it), --precond ilu on a
            # grid, --overlap on one rank (the form took them and Launch failed under it)
            _prepare_solve(values, ns)
        if name is not None and (variable or name in problems):
            # --amg where AMG is not the preconditioner: said as the field changes, not at
            # Launch (the kind's prepare refuses it; to_config alone does not see it)
            g.check_amg_kind(name, values, g._system_of(name, ns) if variable else None)
            # --restart with a method that is not GMRES (the one the job would use)
            if variable or name in g._FLOW:
                g.check_restart(values, values.get("method"))
                if variable and g._system_of(name, ns) == "grid":
                    g.check_mg_options(values, values.get("method"),
                                       values.get("precond") or "auto")
            else:   # the method and preconditioner the job would use
                config = g.to_config(dict(values), memory=False)
                g.check_restart(values, config["method"])
                g.check_mg_options(values, config["method"], config["precond"])
        if variable:
            values["problem"] = problems[0]  # a stand-in: the magic solves the variable
            values["b"] = None  # (checked above, as the magic checks them)
            if values.get("precond") not in g._k().PRECONDS:
                values["precond"] = "auto"
            if values.get("near_nullspace") in ns:
                values["near_nullspace"] = None
        return values

    def to_config(values: dict) -> dict:
        """The kind's config; a matrix file (``A.mtx``, as the magic and the terminal take it)
        checked as they check it before reading it: the form refused every matrix file
        ("'A.mtx' is not a matrix file skiff reads (Matrix Market .mtx, ...)", round 44)."""
        name = values.get("problem")
        if not isinstance(name, str) or name in problems or name in _user_ns():
            return g.to_config(values)  # (checked by check(), as the magic checks it)
        if g._missing_matrix_file(name):
            raise g.missing_file(name, "matrix file", ": ")
        if not g._matrix_file(name):
            # a name that is no problem, variable or matrix file: the magic's words ("no
            # notebook variable, matrix file or built-in problem named 'Aa' (did you mean
            # 'A'?)" with a B), not the form's own
            KINDS["solve"].prepare(dict(values), user_ns=_user_ns())
            return g.to_config(values)
        bname = values.get("b")
        if bname is not None and not os.path.isfile(os.path.expanduser(bname)):
            raise g.missing_file(bname, "B file", ": ")
        # the checks the kind makes before it reads the matrix (the rest, which need its
        # entries, are made at Launch: the form does not read a large file at each key)
        g.check_options_apply(name, values, system="matrix")
        g.check_amg_kind(name, values, "matrix")
        g.check_restart(values, values.get("method"))
        config = g.to_config({**values, "problem": "poisson", "b": None,
                              **g._matrix_smoother(values)})
        return {**config, "problem": os.path.abspath(os.path.expanduser(name)),
                "b": None if bname is None else os.path.abspath(os.path.expanduser(bname)),
                "method": values.get("method") or "auto"}

    form = CommandForm(g.COMMAND, to_config, on_launch=on_launch, check=check,
                       held=_held("problem", "b", "precond", "near_nullspace"),
                       pickers={"problem": problem_picker} if problems else {},
                       order=("problem", "grid", "contrast", "coefficient", "method",
                              "precond", "preconditioner", "rtol", "tol", "atol", "maxiter",
                              "device"))
    form.result = result
    form.children = [*form.children, result]
    return form


def _prepare_solve(values: dict, ns: dict) -> None:
    """``%solve``'s own checks of the form's values (the kind's ``prepare``, on the runner
    its launch options choose); raises what the magic would say."""
    import argparse

    from skiff.grammar.common import split_launch
    from skiff.jobs.launch import choose_runner, launch_options

    kernel, opts = split_launch(argparse.Namespace(**values))
    where = launch_options(opts)
    runner = choose_runner(where["np"], where["runner"], where["launcher"])
    KINDS["solve"].prepare(kernel, user_ns=ns, where=runner)


def _image(png: bytes, cls: str) -> W.Image:
    img = W.Image(value=png, format="png", layout=W.Layout(max_width="520px"))
    img.add_class(cls)
    return img


def _show_solution(job, box: W.VBox) -> None:
    """The field and the convergence plot: the job's own image artifacts, else drawn here
    from the solution object (``field`` and residual history)."""
    state = job.refresh()
    if job.status != "done":
        return
    summary = W.HTML(solution_summary_html(job.result))
    summary.add_class("skiff-solve-summary")
    if any(a.get("kind") == "image" for a in state.artifacts):
        box.children = [summary]  # the job's widget shows its field and convergence images
        return
    png = solution_png(job.value, state.metrics)
    box.children = [summary] + ([] if png is None else [_image(png, "skiff-solve-plot")])


def solution_summary_html(result: dict | None) -> str:
    """One line about a finished solve from its ``result.json``."""
    if not result:
        return ""
    keys = ("converged", "iterations", "residual", "relative_residual", "time_s", "time",
            "method", "precond", "backend", "device")
    bits = [f"{k}: <b>{html.escape(_short(result[k]))}</b>" for k in keys if k in result]
    return "<div>" + " · ".join(bits) + "</div>"


def _short(value) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)[:40]


def solution_png(solution, metrics: dict | None = None) -> bytes | None:
    """Field (2-D image or 1-D line) beside the residual history, as one PNG."""
    import numpy as np
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    field = getattr(solution, "field", None)
    if field is None:
        field = getattr(solution, "x", None)
    history = None
    for name in ("residuals", "residual_history", "history"):
        history = getattr(solution, name, None)
        if history is not None:
            break
    if history is None and metrics:
        for name, series in metrics.items():
            if "resid" in name.lower():
                history = [v for _s, v, _t in series]
                break
    panels = (field is not None) + (history is not None and len(history) > 0)
    if not panels:
        return None
    fig = Figure(figsize=(4.2 * panels, 3.2), dpi=80)
    FigureCanvasAgg(fig)
    i = 1
    if field is not None:
        arr = np.asarray(field.get() if hasattr(field, "get") else field, dtype=float)
        ax = fig.add_subplot(1, panels, i)
        i += 1
        if arr.ndim >= 2:
            im = ax.imshow(arr if arr.ndim == 2 else arr[..., arr.shape[-1] // 2],
                           origin="lower", cmap="viridis")
            fig.colorbar(im, ax=ax, shrink=0.8)
        else:
            ax.plot(arr)
        ax.set_title("field", fontsize=9)
    if history is not None and len(history) > 0:
        ax = fig.add_subplot(1, panels, i)
        hist = np.asarray(history, dtype=float)
        ax.plot(np.arange(len(hist)), np.maximum(hist, 1e-300))
        log_axis(ax)
        ax.set_title("convergence", fontsize=9)
        ax.set_xlabel("iteration", fontsize=8)
        ax.set_ylabel("residual", fontsize=8)
        ax.grid(True, alpha=0.3)
    from skiff.kernels.backend.figures import render_png

    return render_png(fig)


# OCR -----------------------------------------------------------------------------------------


def _read_by(lang: str) -> str:
    """A language's label in the OCR form's --lang list: the set that reads it."""
    from skiff.kernels.ocr.models import get_model_set

    try:
        return f"{lang} (read by {get_model_set(lang).name})"
    except (ValueError, AttributeError):
        return lang


def ocr_form() -> CommandForm:
    """The OCR form: a path or glob, or uploaded files; when done, the job's view shows the
    overlays and the table of the lines it read (the kind's result view)."""
    g = _grammar("ocr")

    def lang_picker(action):
        """The model sets, then languages the 'ch' set reads (``--lang en`` picks it, as
        ``%ocr`` does); any other name ``%ocr --lang`` takes is taken when set or pasted
        (``EN``, ``english``, a set registered later), and one it refuses gets its words by
        the field ("--lang ko: no model set of skiff reads Korean (Hangul) ..."). The list
        held the sets alone: ``lang="en"`` was "got 'en': choose from ch, ...", round 47."""
        names = list(g.model_set_names())
        options = [(n, n) for n in names]
        options += [(_read_by(lang), lang) for lang in g.LANGS_LISTED if lang not in names]
        picker = W.Dropdown(options=options, value=action.default if action.default in names
                            else names[0])

        def takes(text: str) -> str:
            try:  # the kind's own check of --lang (the inputs are not looked at)
                g.to_config({"lang": text, "inputs": ["-"]}, check_inputs=False)
            except ValueError as exc:
                if str(exc).startswith("--lang"):
                    raise
            return text if text in g.model_set_names() else _read_by(text)

        picker.skiff_takes = takes  # read by Field._in_list (skiff/widgets/form.py)
        return picker

    def to_config(values: dict) -> dict:
        """The kind's config, the inputs read as ``%ocr`` reads them: a notebook variable
        holding an image (an array, a PIL image, a list of them) is taken, and a name that
        is neither a file nor a variable gets the magic's words ("..., nor a notebook
        variable (did you mean 'img'?)"). The form refused every variable: "no such file,
        folder or pattern: 'img'", while ``%ocr img`` read it (round 47)."""
        ns = _user_ns()
        inputs = [str(v) for v in values.get("inputs") or []]
        if g._variable_images(inputs, ns) is None:
            try:
                return g.to_config(values)
            except FileNotFoundError as exc:
                raise FileNotFoundError(f"{exc}{g._variable_hint(inputs, ns)}") from None
        return g.to_config(values, check_inputs=False)

    form = CommandForm(g.COMMAND, to_config, held=_held("inputs"),
                       pickers={"lang": lang_picker},
                       order=("inputs", "lang", "device", "min_score", "batch_size"))
    upload = W.FileUpload(accept="image/*", multiple=True, description="Upload")
    upload.add_class("skiff-ocr-upload")

    def on_upload(change):
        paths = save_uploads(change["new"])
        if paths:
            form.set(inputs=shlex.join(paths))  # a runs root with spaces: one path each

    upload.observe(on_upload, names="value")
    form.upload = upload
    form.extra_buttons.children = [upload]
    return form


# Chat ----------------------------------------------------------------------------------------
def chat_form() -> CommandForm:
    """The chat form: a checkpoint folder and a prompt; the job's view shows the answer while
    it is written, the thinking collapsed (the kind's live and result views)."""
    from skiff.kinds import KINDS

    kind = KINDS["chat"]
    return CommandForm(kind.command, kind.to_config,
                       order=("model", "prompt", "system", "max_new_tokens", "temperature"))


def chat_tab():
    """The Chat tab: model, prompt, sampling options, Send; the answer streamed below."""
    from .chat_tab import ChatTab

    return ChatTab()


def save_uploads(files, folder: str | os.PathLike | None = None) -> list[str]:
    """Write uploaded files (FileUpload values) to ``<runs root>/uploads/<time>/``."""
    from skiff.jobs.store import runs_root

    if not files:
        return []
    dest = Path(folder) if folder else runs_root() / "uploads" / time.strftime("%Y%m%d-%H%M%S")
    dest.mkdir(parents=True, exist_ok=True)
    paths = []
    for f in files:
        name = re.sub(r"[^\w.\-]+", "_", Path(str(f["name"])).name) or "upload"
        path = dest / name
        path.write_bytes(bytes(f["content"]))
        paths.append(str(path))
    return paths


# the panel -----------------------------------------------------------------------------------
_FORMS = {"train": train_form, "solve": solve_form, "ocr": ocr_form, "chat": chat_tab}


class _Forms(Mapping):
    """``panel.forms``: each job kind's form, built (and put in its tab) when first asked
    for, as when its tab is first shown."""

    def __init__(self, panel: Panel):
        self._panel = panel

    def __getitem__(self, kind: str) -> CommandForm:
        if kind not in TABS or kind == "chat":
            raise KeyError(kind)
        form = self._panel._tab(TABS.index(kind))
        if not isinstance(form, CommandForm):  # its import failed: the tab says why
            raise KeyError(kind)
        return form

    def __iter__(self):
        return (kind for kind in TABS if kind != "chat" and kind in self)

    def __len__(self) -> int:
        return sum(1 for _kind in self)


class Panel(W.Tab):
    """Tabs Train, Solve, OCR, Chat and Jobs. ``panel.forms[kind]`` is each job kind's form,
    ``panel.chat`` the Chat tab, ``panel.monitor`` the job monitor.

    A tab's contents are built when it is first shown (or asked for): every form at once was
    1,357 widget models, all saved with the notebook (round 37)."""

    def __init__(self, *, tab: str = "train", monitor_poll: float = 1.0):
        self.forms = _Forms(self)
        self._built: dict[int, W.Widget] = {}
        index = _tab_index(tab)  # an unknown name is refused before anything is built
        self.monitor = JobMonitor(poll=monitor_poll)
        children = [*(_placeholder(kind) for kind in TABS), self.monitor]
        super().__init__(children=children, titles=[_TITLES[k] for k in (*TABS, "jobs")],
                         selected_index=index)
        self.add_class("skiff-panel")
        self.observe(self._on_select, names="selected_index")
        self._on_select()

    def _on_select(self, _change=None) -> None:
        index = self.selected_index
        if index is not None and index < len(TABS):
            self._tab(index)

    def _tab(self, index: int) -> W.Widget:
        """The contents of job tab ``index``, built and put in the tab the first time."""
        if index not in self._built:
            kind = TABS[index]
            try:
                widget = _FORMS[kind]()
            except ImportError as exc:
                widget = W.HTML(f"<i>{_TITLES[kind]} is not available here: "
                                f"{html.escape(str(exc))}</i>")
            self._built[index] = widget
            children = list(self.children)
            children[index] = widget
            self.children = children
        return self._built[index]

    @property
    def chat(self):
        """The Chat tab (:class:`~skiff.widgets.chat_tab.ChatTab`), None where it cannot be
        built here."""
        tab = self._tab(TABS.index("chat"))
        return None if isinstance(tab, W.HTML) else tab

    def close(self) -> None:
        monitor = getattr(self, "monitor", None)  # close() also runs from __del__
        if monitor is not None:
            monitor.close()  # stops its thread
        chat = getattr(self, "_built", {}).get(TABS.index("chat"))
        if chat is not None:
            chat.close()  # stops its watchers
        super().close()

    def select(self, name: str) -> None:
        """Show the tab ``name`` (train, solve, ocr, chat or jobs)."""
        self.selected_index = _tab_index(name)


def _tab_index(name: str) -> int:
    names = [*TABS, "jobs"]
    if name not in names:
        raise ValueError(f"unknown tab {name!r}: choose from {', '.join(names)}")
    return names.index(name)


def _placeholder(kind: str) -> W.HTML:
    """A tab not shown yet: its form is built when the tab is first selected."""
    box = W.HTML(f"<i>{_TITLES[kind]}: filled in when this tab is shown with the "
                 "notebook's kernel running</i>")
    box.add_class("skiff-tab-pending")
    return box


def panel(tab: str | None = None) -> Panel:
    """The skiff panel: forms that launch train, solve and OCR jobs, a chat with a
    checkpoint, and the job monitor.

    Parameters
    ----------
    tab : str, optional
        The tab to show first: ``train``, ``solve``, ``ocr``, ``chat`` or ``jobs``.
    """
    return Panel(tab=tab or "train")
