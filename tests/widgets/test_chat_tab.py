"""The panel's Chat tab without a browser: fill its fields and press Send as a user would;
the job it submits is a ``chat`` job like ``%chat``'s (same config, the magic line recorded),
the answer appears in the tab while it is written, and ends as what the library's ``reply``
gives on the same prompt, the thinking apart in a collapsed Accordion. Tiny checkpoints:
one with random weights, one taught to think before it answers."""

from __future__ import annotations

import pytest

from skiff.kernels.train.models import from_pretrained, save_pretrained
from skiff.kernels.train.models.chat_reply import reply

from ..kernels.train.models.ernie_reference import make_sentencepiece_checkpoint

QUESTION = "What is two plus two?"
ANSWER = "<think>\ntwo and two make four</think>\nFour."


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    """A random checkpoint, and a copy fine-tuned to answer QUESTION with a thinking part
    (the template opens the thinking: the assistant's text goes on from '<think>\\n')."""
    from skiff.kernels.train.models.chat import ChatDataset
    from skiff.kernels.train.trainer import Trainer

    root = tmp_path_factory.mktemp("chat-tab")
    make_sentencepiece_checkpoint(root / "base", seed=6)
    model = from_pretrained(root / "base")
    row = {"messages": [{"role": "user", "content": QUESTION},
                        {"role": "assistant", "content": ANSWER}]}
    data = ChatDataset([row], model.tokenizer, 64)
    Trainer(model, lr=2e-2, batch_size=1, schedule="constant", shuffle=False).train(
        data, steps=60)
    save_pretrained(model, root / "tuned")
    return root / "base", root / "tuned"


def _wait(tab, seconds=120):
    assert tab.done.wait(seconds), "the answer did not end"


def test_send_submits_a_chat_job_and_shows_thinking_collapsed(folders):
    from skiff.widgets.chat_tab import ChatTab

    _, tuned = folders
    want = reply(from_pretrained(tuned), QUESTION, max_new_tokens=24)
    assert want.thinking == "two and two make four" and want.text.startswith("Four.")
    tab = ChatTab(user_ns={})
    try:
        tab.model.value, tab.prompt.value, tab.max_new_tokens.value = str(tuned), QUESTION, 24
        assert tab.magic.startswith(f"%chat {tuned}") and "--max-new-tokens 24" in tab.magic
        tab.send_button.click()
        job = tab.jobs[-1]
        _wait(tab)
        assert job.status == "done", job.error
        # submitted as %chat submits: the chat kind, its config, the magic line
        assert job.kind == "chat" and job.meta["command"].startswith(f"%chat {tuned}")
        assert job.config["prompt"] == QUESTION and job.config["max_new_tokens"] == 24
        assert job.config["temperature"] == 0.0 and job.config["chat"] is True
        turn = tab.turn
        assert (turn.thinking_text, turn.text) == (want.thinking, want.text)
        # the thinking in its own section, collapsed; the answer below, finished
        assert turn.fold.layout.display is None and turn.fold.selected_index is None
        assert "two and two make four" in turn.thinking.value
        assert "two and two" not in turn.answer.value and "Four." in turn.answer.value
        assert "▌" not in turn.answer.value and "tokens/s" in turn.answer.value
        assert not tab.send_button.disabled and tab.stop_button.disabled
    finally:
        tab.close()


@pytest.fixture()
def in_step(monkeypatch):
    """Each token's text written as the job's ``info`` (the kernel writes it at most every
    0.1 s of its clock: its clock here moves 1 s a call), and the generation waits (at most
    30 s) until the tab's watcher has shown it: every partial state is seen, however fast
    or loaded the machine (round 43: it was 1000 tokens, long enough to be seen, ~20 s)."""
    import threading
    import time

    import skiff.kernels.train.models.chat_reply as chat_reply
    from skiff.jobs.reporter import RunReporter
    from skiff.widgets.chat_tab import ChatTurn

    class Clock:
        t = 0.0

        def __getattr__(self, name):
            return getattr(time, name)

        def monotonic(self):
            Clock.t += 1.0
            return Clock.t

    shown, generating = threading.Event(), threading.Event()
    info, show, reply_ = RunReporter.info, ChatTurn.show, chat_reply.reply

    def info_seen(self, **fields):
        shown.clear()
        info(self, **fields)
        if generating.is_set() and not shown.wait(30):  # not the final one (after reply)
            generating.clear()  # never shown: waited once, the test says what it saw

    def show_said(self, thinking, text, *, writing, footer=""):
        show(self, thinking, text, writing=writing, footer=footer)
        if writing:
            shown.set()

    def reply_flagged(*args, **kwargs):
        generating.set()
        try:
            return reply_(*args, **kwargs)
        finally:
            generating.clear()

    monkeypatch.setattr(chat_reply, "time", Clock())
    monkeypatch.setattr(chat_reply, "reply", reply_flagged)
    monkeypatch.setattr(RunReporter, "info", info_seen)
    monkeypatch.setattr(ChatTurn, "show", show_said)


TOKENS = 24


def test_answer_streams_into_the_tab(folders, in_step):
    """A reply from the random checkpoint: the tab shows several partial states, with the
    cursor, before the final one. Its template opens the thinking, so a random model's
    whole reply may stream into the thinking section (titled "thinking …" while written)
    rather than the answer: either one is followed."""
    from skiff.widgets.chat_tab import ChatTab

    base, _ = folders
    tab = ChatTab(user_ns={})
    seen: list[str] = []
    thought: list[tuple[str, tuple]] = []
    try:
        tab.model.value, tab.prompt.value = str(base), "Hello world"
        tab.max_new_tokens.value = TOKENS
        job = tab.send()
        assert job is not None and tab.send_button.disabled
        turn = tab.turn
        turn.answer.observe(lambda c: seen.append(c["new"]), names="value")
        turn.thinking.observe(lambda c: thought.append((c["new"], tuple(turn.fold.titles))),
                              names="value")
        assert tab.send() is None and "still being written" in tab.status.value
        _wait(tab)
        assert job.status == "done", job.error
        assert job.result["tokens"] == TOKENS  # no eos on the way
        live = [v for v in seen if "▌" in v]
        if job.result["text"]:  # the answer streamed, with its cursor
            assert len(set(live)) >= 2, f"{len(seen)} updates, {len(live)} while writing"
            lengths = [len(v) for v in live]
        else:  # all of it was thinking: that section grew while written
            live = [v for v, titles in thought if titles == ("thinking …",)]
            assert len(set(live)) >= 2, f"{len(thought)} updates, {len(live)} while writing"
            lengths = [len(v) for v in live]
            assert turn.thinking_text == job.result["thinking"]
            assert tuple(turn.fold.titles) == ("thinking",)  # no longer "…"
        assert lengths[-1] > lengths[0]
        assert not seen or "▌" not in seen[-1]
        assert turn.text == job.result["text"]
    finally:
        tab.close()


def test_a_model_held_in_a_notebook_variable_answers(folders):
    from skiff.widgets.chat_tab import ChatTab

    _, tuned = folders
    held = from_pretrained(tuned)
    tab = ChatTab(user_ns={"held": held, "other": 3})
    try:
        assert list(tab.model.options) == ["held"]
        tab.model.value, tab.prompt.value, tab.max_new_tokens.value = "held", QUESTION, 24
        job = tab.send()
        _wait(tab)
        assert job.status == "done", job.error
        assert job.config["model"] == "<notebook held>"
        assert tab.turn.thinking_text == "two and two make four"
    finally:
        tab.close()


def test_sampling_options_reach_the_config(folders):
    from skiff.kinds import KINDS
    from skiff.widgets.chat_tab import ChatTab

    base, _ = folders
    tab = ChatTab(user_ns={})
    try:
        tab.model.value, tab.prompt.value = str(base), "Hello"
        tab.temperature.value, tab.top_k.value, tab.top_p.value = 0.8, 50, 0.9
        tab.max_new_tokens.value, tab.thinking_off.value = 7, True
        assert "--temperature 0.8 --top-k 50 --top-p 0.9" in tab.magic
        values = {k: v for k, v in tab.values().items() if k not in ("wait", "output", "np",
                                                                    "runner", "name")}
        cfg = KINDS["chat"].to_config(values)
        assert (cfg["temperature"], cfg["top_k"], cfg["top_p"], cfg["max_new_tokens"],
                cfg["thinking"]) == (0.8, 50, 0.9, 7, False)
    finally:
        tab.close()


def test_mistakes_are_one_line_in_the_tab(folders, tmp_path):
    from skiff.widgets.chat_tab import ChatTab

    base, _ = folders
    tab = ChatTab(user_ns={})
    try:
        assert tab.send() is None and "give a model" in tab.status.value
        tab.model.value = str(tmp_path / "nope")
        tab.prompt.value = "hi"
        assert tab.send() is None and "no such folder" in tab.status.value
        tab.model.value, tab.top_k.value = str(base), 5
        assert tab.send() is None and "--temperature" in tab.status.value
        assert not tab.jobs and not tab.turns.children
    finally:
        tab.close()


def test_panel_has_a_chat_tab():
    from skiff.widgets.chat_tab import ChatTab
    from skiff.widgets.panels import panel

    p = panel("chat")
    try:
        assert list(p.titles) == ["Train", "Solve", "OCR", "Chat", "Jobs"]
        assert isinstance(p.chat, ChatTab) and p.children[p.selected_index] is p.chat
        assert "chat" not in p.forms
    finally:
        p.close()
