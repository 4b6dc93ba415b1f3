"""The panel's Chat tab: ask a checkpoint, watch the answer arrive, the thinking collapsed.

The tab holds a model field (a checkpoint folder, or a notebook variable holding a loaded
model), a prompt box, the sampling options of ``%chat`` (temperature, top-k, top-p, max
tokens) and Send. Send submits a ``chat`` job exactly as ``%chat`` does
(:func:`skiff.jobs.submit` with the kind's grammar and the notebook's variables), so the job
is in ``%jobs``, the monitor and the Jobs sidebar like any other. Each exchange is a
:class:`ChatTurn` under the form: the prompt, the thinking in an ``Accordion`` that stays
collapsed unless opened, and the answer with a cursor while it is written.

The tab watches the job, it never owns it: one daemon thread per exchange reads the job's
events (the ``info`` fields ``thinking`` and ``text`` that the chat kernel writes as it
generates) at most ``1 / poll`` times a second and copies what changed into the widgets under
``hold_sync``; at the end it shows the result (tokens, tokens/s, why it stopped) or the error.
"""

from __future__ import annotations

import contextlib
import html
import threading

import ipywidgets as W

from skiff.kernels.train.models.chat_reply import reply_html

from .form import SKIPPED, Field, FieldLooks, _copyable, _warning

__all__ = ["ChatTab", "ChatTurn"]

_WIDE = {"description_width": "9em"}
# the grammar's options the tab's own widgets hold; every other one of %chat is a field
# under "more options" (round 44: --seed, --stop, --num-beams, --repetition-penalty,
# --history, --device, --name ... could not be given from the tab)
_OWN = ("model", "prompt", "prompt_opt", "system", "temperature", "top_k", "top_p",
        "max_new_tokens", "no_thinking", "output")


class ChatTurn(W.VBox):
    """One exchange: the prompt, the thinking (collapsed), the answer as it is written."""

    def __init__(self, prompt: str):
        self.prompt = W.HTML(f"<div style='color:#555;white-space:pre-wrap'><b>you</b> "
                             f"{html.escape(prompt)}</div>")
        self.thinking = W.HTML("")
        self.thinking.add_class("skiff-chat-thinking")
        self.fold = W.Accordion([self.thinking], titles=("thinking",), selected_index=None,
                                layout=W.Layout(display="none"))
        self.fold.add_class("skiff-chat-fold")
        self.answer = W.HTML(reply_html("", "", writing=True))
        self.answer.add_class("skiff-chat-answer")
        self.thinking_text, self.text = "", ""
        self.job = None
        super().__init__([self.prompt, self.fold, self.answer])
        self.add_class("skiff-chat-turn")

    def show(self, thinking: str, text: str, *, writing: bool, footer: str = "") -> None:
        """The text so far; the thinking goes into the collapsed section (opened only by the
        user: its state is left as it is)."""
        self.thinking_text, self.text = thinking, text
        with self.fold.hold_sync(), self.thinking.hold_sync(), self.answer.hold_sync():
            if thinking:
                value = (f"<div style='color:#666;white-space:pre-wrap'>"
                         f"{html.escape(thinking)}</div>")
                if self.thinking.value != value:
                    self.thinking.value = value
                title = "thinking …" if writing and not text else "thinking"
                if tuple(self.fold.titles) != (title,):
                    self.fold.titles = (title,)
                self.fold.layout.display = None
            value = reply_html("", text, writing=writing, footer=footer)
            if self.answer.value != value:
                self.answer.value = value


class ChatTab(W.VBox):
    """Model, prompt, sampling options and Send; the exchanges below, newest last.

    Parameters
    ----------
    poll : float
        Seconds between reads of a running job's events (at most 10 a second).
    user_ns : dict, optional
        The notebook's variables (a model held in one can answer); default: IPython's.
    """

    def __init__(self, *, poll: float = 0.1, user_ns: dict | None = None):
        from skiff.kinds import KINDS

        self.kind = KINDS["chat"]
        self.poll = max(float(poll), 0.1)
        self._user_ns = user_ns
        self.model = W.Combobox(options=self._held_models(), value="", ensure_option=False,
                                description="model",
                                placeholder="checkpoint folder, or a variable holding a model",
                                style=_WIDE, layout=W.Layout(width="36em"))
        self.prompt = W.Textarea(description="prompt", placeholder="Ask something",
                                 rows=3, style=_WIDE, layout=W.Layout(width="36em"))
        self.system = W.Text(description="system", placeholder="(none)", style=_WIDE,
                             layout=W.Layout(width="36em"))
        self.temperature = W.BoundedFloatText(value=0.0, min=0.0, max=10.0, step=0.1,
                                              description="temperature", style=_WIDE,
                                              tooltip="0: greedy; > 0: sample")
        self.top_k = W.BoundedIntText(value=0, min=0, max=1_000_000, description="top k",
                                      style=_WIDE, tooltip="0: off")
        self.top_p = W.BoundedFloatText(value=1.0, min=0.01, max=1.0, step=0.05,
                                        description="top p", style=_WIDE, tooltip="1: off")
        self.max_new_tokens = W.BoundedIntText(value=256, min=1, max=1_000_000,
                                               description="max tokens", style=_WIDE)
        self.thinking_off = W.Checkbox(value=False, description="no thinking", indent=False,
                                       tooltip="ask the template to skip the thinking part")
        for w, name in ((self.model, "model"), (self.prompt, "prompt"),
                        (self.temperature, "temperature"), (self.top_k, "top_k"),
                        (self.top_p, "top_p"), (self.max_new_tokens, "max_new_tokens")):
            w.add_class(f"skiff-chat-{name}")
        self.send_button = W.Button(description="Send", icon="paper-plane",
                                    button_style="primary")
        self.send_button.add_class("skiff-chat-send")
        self.send_button.on_click(lambda _b: self.send())
        self.stop_button = W.Button(description="Stop", icon="stop", disabled=True)
        self.stop_button.add_class("skiff-chat-stop")
        self.stop_button.on_click(lambda _b: self.stop())
        self.status = W.HTML("")
        self.status.add_class("skiff-chat-status")
        self.magic_line = W.HTML("")
        self.turns = W.VBox([])
        self.turns.add_class("skiff-chat-turns")
        self.jobs: list = []
        self.done = threading.Event()  # set when the last exchange has ended
        self.done.set()
        self._watcher: threading.Thread | None = None
        self._closed = threading.Event()
        sampling = W.HBox([W.VBox([self.temperature, self.top_k]),
                           W.VBox([self.top_p, self.max_new_tokens])])
        looks = FieldLooks()
        actions = {a.dest: a for a in self.kind.command.parser()._actions
                   if a.dest not in SKIPPED and a.dest not in _OWN}
        self.fields: dict[str, Field] = {}
        unset = self.kind.command.defaults()
        for dest, action in actions.items():
            self.fields[dest] = field = Field(action, looks=looks, lazy=True)
            field.unset = unset.get(dest, action.default)
            field.on_build = self._build_more
        self.more = W.Accordion([W.VBox([])], titles=("more options",), selected_index=None)
        self.more.add_class("skiff-more-options")
        self.more.observe(lambda change: change["new"] is not None and self._build_more(),
                          names="selected_index")
        self._more_built = False
        super().__init__([self.model, self.prompt, sampling, self.more,
                          W.HBox([self.send_button, self.stop_button, self.thinking_off]),
                          self.status, self.magic_line, self.turns])
        self.add_class("skiff-chat")

    def _build_more(self) -> None:
        """Build the fields under "more options" (once): each checks its text as typed."""
        if self._more_built:
            return
        self._more_built = True
        for field in self.fields.values():
            field.widget.observe(lambda _c, f=field: self._check(f), names="value")
        self.more.children[0].children = [f.box for f in self.fields.values()]

    def _check(self, field: Field) -> bool:
        try:
            field.parse()
        except ValueError as exc:
            field.show(str(exc))
            return False
        field.show(None)
        return True

    @property
    def errors(self) -> dict[str, str]:
        """dest -> message of every "more options" field whose text is bad."""
        return {d: f.error for d, f in self.fields.items()
                if not self._check(f) and f.error}

    # what Send submits ----------------------------------------------------------------------
    def values(self) -> dict:
        """The ``chat`` grammar's values for the fields (defaults for the rest); a field of
        "more options" whose text is bad is left at its default (:attr:`errors` says why)."""
        values = dict(self.kind.command.defaults())
        for dest, field in self.fields.items():
            try:
                values[dest] = field.parse()
            except ValueError:
                pass
        values.update(model=self.model.value.strip(), prompt=self.prompt.value,
                      max_new_tokens=int(self.max_new_tokens.value),
                      temperature=float(self.temperature.value),
                      top_k=int(self.top_k.value) or None,
                      top_p=float(self.top_p.value) if self.top_p.value < 1.0 else None,
                      system=self.system.value.strip() or None,
                      no_thinking=bool(self.thinking_off.value))
        return values

    @property
    def magic(self) -> str:
        """The ``%chat`` line equivalent to the fields."""
        return self.kind.command.render({k: v for k, v in self.values().items()
                                         if k not in ("wait", "output")}, style="magic")

    def _held_models(self) -> list[str]:
        """Notebook variables holding a loaded language model (offered by the model field)."""
        from skiff.kinds.chat import is_language_model

        out = []
        for name, value in self._namespace().items():
            try:
                if not name.startswith("_") and is_language_model(value):
                    out.append(name)
            except Exception:  # noqa: BLE001 - a strange object is simply not offered
                continue
        return sorted(out)

    def _namespace(self) -> dict:
        if self._user_ns is not None:
            return self._user_ns
        from .form import _shell

        shell = _shell()
        return shell.user_ns if shell is not None else {}

    def send(self):
        """Submit the prompt as ``%chat`` would; the answer streams into a new turn.
        Returns the job (None after a mistake, shown in the status line)."""
        from skiff.grammar.common import user_message
        from skiff.jobs import submit

        if not self.done.is_set():
            self.status.value = _warning("an answer is still being written: Stop it first")
            return None
        if not self.model.value.strip():
            self.status.value = _warning("give a model: a checkpoint folder (config.json) or "
                                         "a notebook variable holding a loaded model")
            return None
        errors = self.errors
        if errors:  # said by the field, before anything is submitted
            self.more.selected_index = 0
            dest, message = next(iter(errors.items()))
            self.status.value = _warning(f"{self.fields[dest].widget.description}: {message}")
            return None
        values = self.values()
        try:
            job, _opts = submit("chat", values=values, user_ns=self._namespace())
        except Exception as exc:  # a mistake is one line here, as in a form
            msg = user_message(exc) or (str(exc).splitlines() or [type(exc).__name__])[0]
            self.status.value = _warning(msg)
            return None
        self.status.value = ""
        self.magic_line.value = _copyable("magic", self.magic)
        turn = ChatTurn(values["prompt"])
        turn.job = job
        self.turns.children = [*self.turns.children, turn]
        self.jobs.append(job)
        self.done.clear()
        self.send_button.disabled, self.stop_button.disabled = True, False
        self._watcher = threading.Thread(target=self._watch, args=(job, turn), daemon=True,
                                         name=f"skiff-chat-{job.id}")
        self._watcher.start()
        return job

    def stop(self) -> None:
        """Cancel the answer being written (it keeps what it wrote so far)."""
        if self.jobs and not self.done.is_set():
            self.jobs[-1].cancel()

    @property
    def turn(self) -> ChatTurn | None:
        """The newest exchange."""
        return self.turns.children[-1] if self.turns.children else None

    # watching -------------------------------------------------------------------------------
    def _watch(self, job, turn: ChatTurn) -> None:
        try:
            seen = -1
            while not self._closed.is_set():
                state = job.refresh()
                final = state.final
                if final:
                    break
                if state.n_events != seen:
                    seen = state.n_events
                    info = state.info
                    if isinstance(info.get("text"), str):
                        turn.show(str(info.get("thinking") or ""), info["text"], writing=True)
                self._closed.wait(self.poll)
            self._finish(job, turn)
        except Exception as exc:  # a view must never take the kernel down
            self.status.value = _warning(f"chat view failed: {exc!r}")
        finally:
            with contextlib.suppress(Exception):
                self.send_button.disabled, self.stop_button.disabled = False, True
            self.done.set()

    def _finish(self, job, turn: ChatTurn) -> None:
        state = job.refresh()
        result = job.result or {}
        if isinstance(result.get("text"), str):
            turn.show(str(result.get("thinking") or ""), result["text"], writing=False,
                      footer=f"{result.get('tokens', 0)} tokens · "
                             f"{float(result.get('tokens_per_s') or 0):.1f} tokens/s · "
                             f"{result.get('stop', '')}")
            return
        info = state.info
        text = info.get("text") if isinstance(info.get("text"), str) else turn.text
        turn.show(str(info.get("thinking") or turn.thinking_text), text or "", writing=False,
                  footer=job.status)
        if job.status == "failed":
            self.status.value = _warning((job.error or "failed").strip().splitlines()[-1])

    def close(self) -> None:
        closed = getattr(self, "_closed", None)  # close() also runs from __del__
        if closed is not None:
            closed.set()
        super().close()
