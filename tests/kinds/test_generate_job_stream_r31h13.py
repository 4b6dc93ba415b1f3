"""``python -m skiff generate JOB "text"`` (a train gpt-* job's model) streams, cancels and
says its context up front, as the checkpoint path (``chat_reply.reply``) does.

Before: ``generate_text`` ran with no per-token callback: no progress until the end, no
streamed text, a cancel seen only after the last token (``--max-new-tokens 99999999`` ran
until killed), nothing refused past the model's fixed ``block_size``, and ``--stop``,
``--top-p``, ``--repetition-penalty`` were taken and used nowhere. The oracle for every
token is the non-streamed :meth:`GPT.generate` with the same arguments and seed.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
from types import SimpleNamespace

import numpy as np
import pytest

from skiff.kernels.backend.report import JobCancelled, Reporter
from skiff.kernels.train.models.gpt import GPT, GPTConfig
from skiff.kinds import chat


def _skiff(*args, env):
    """``python -m skiff ARGS`` in this process with ``env`` (``skiff.__main__`` is
    ``sys.exit(main())``): its exit status and what it printed. A subprocess paid the
    interpreter's and torch's imports again (round 46)."""
    from skiff.cli import main

    out, err = io.StringIO(), io.StringIO()
    with pytest.MonkeyPatch.context() as mp, contextlib.redirect_stdout(out), \
            contextlib.redirect_stderr(err):
        for key, value in env.items():
            if os.environ.get(key) != value:
                mp.setenv(key, value)
        status = main(list(args))
    return SimpleNamespace(returncode=status, stdout=out.getvalue(), stderr=err.getvalue())


class _Recorder(Reporter):
    """Keeps what a job reports; asks to stop once ``stop_after`` tokens are reported."""

    def __init__(self, stop_after=None):
        self.stop_after, self.done, self.texts = stop_after, [], []

    def progress(self, done, total=None, *, unit="step", message=None):
        self.done.append((done, total, unit))

    def info(self, **fields):
        if "text" in fields:
            self.texts.append(fields["text"])

    def should_stop(self):
        return self.stop_after is not None and len(self.done) >= self.stop_after


@pytest.fixture(scope="module")
def job(tmp_path_factory):
    """A gpt-mini train job of a few steps, by the terminal (its run folder, its env)."""
    tmp = tmp_path_factory.mktemp("gen")
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", SKIFF_RUNS=str(tmp / "runs"))
    (tmp / "notes.txt").write_text("the model learns from notes. " * 200)
    proc = _skiff("train", "gpt-mini", str(tmp / "notes.txt"), "--steps", "3", "--name",
                  "notes", "--device", "cpu", "--json", env=env)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)["job"]["run_dir"], env


def _oracle(run_dir, prompt, n, **kw) -> np.ndarray:
    """The new byte ids the non-streamed generate gives."""
    from skiff.kernels.train.entry import load_trained_model

    net = load_trained_model(run_dir, chat.trained_job(run_dir))
    ids = np.frombuffer(prompt.encode(), dtype=np.uint8).astype(np.int64)[None]
    return net.generate(ids, n, **kw)[0, ids.shape[1]:]


def _config(run_dir, prompt, **values):
    return chat.to_config({"model": run_dir, "prompt": prompt, **values}, chat_default=False)


@pytest.mark.parametrize("use_cache", [True, False])
@pytest.mark.parametrize("kw", [{"temperature": 0}, {"temperature": 0.9, "seed": 7},
                                {"temperature": 1.3, "top_k": 3, "seed": 11}])
def test_streamed_tokens_are_generates_tokens(kw, use_cache):
    net = GPT(GPTConfig(block_size=24, n_layer=2, n_head=2, n_embd=16))
    prompt = "héllo"  # a two-byte character in the prompt; new bytes may be anything
    ids = np.frombuffer(prompt.encode(), dtype=np.uint8).astype(np.int64)[None]
    want = net.generate(ids, 30, use_cache=use_cache, **kw)[0]  # slides past 24 too
    seen = []
    got = net.generate_text(prompt, 30, use_cache=use_cache,
                            on_token=lambda text, n: seen.append((text, n)), **kw)
    assert got == want.astype(np.uint8).tobytes().decode("utf-8", errors="replace")
    assert [n for _, n in seen] == list(range(1, 31))
    for text, n in seen:  # each streamed text: the first n new bytes, an unfinished
        head = want[ids.shape[1]:ids.shape[1] + n].astype(np.uint8).tobytes()  # char held
        assert head.decode("utf-8", errors="replace").startswith(text)
        # what is held back is an unfinished character: at most its 3 leading bytes
        assert any(head[:len(head) - k].decode("utf-8", errors="replace") == text
                   for k in range(4)), (head, text)


def test_on_token_ends_generation_and_its_exception_propagates():
    net = GPT(GPTConfig(block_size=16, n_layer=1, n_head=2, n_embd=8))
    out = net.generate_text("ab", 10, temperature=0, on_token=lambda text, n: n == 4)
    want = net.generate([[97, 98]], 4, temperature=0)[0]
    assert out == want.astype(np.uint8).tobytes().decode("utf-8", errors="replace")

    def cancel(text, n):
        if n == 3:
            raise JobCancelled("cancelled by request")

    with pytest.raises(JobCancelled):
        net.generate_text("ab", 10, temperature=0, on_token=cancel)
    assert net.training  # left as it was


def test_a_job_streams_its_tokens_with_progress(job):
    run_dir, _ = job
    rep = _Recorder()
    r = chat.run(_config(run_dir, "the model", max_new_tokens=40), rep)
    want = _oracle(run_dir, "the model", 40, temperature=0)
    assert r.text == want.astype(np.uint8).tobytes().decode("utf-8", errors="replace")
    assert r.tokens == 40 and r.stop == "length" and r.prompt_tokens == 9
    assert [d for d, total, unit in rep.done[:40]] == list(range(1, 41))
    assert {(t, u) for _, t, u in rep.done[:40]} == {(40, "token")}
    assert rep.texts and all(r.text.startswith(t) for t in rep.texts)

    sampled = chat.run(_config(run_dir, "the model", max_new_tokens=25, temperature=0.8,
                               top_k=5, seed=3), _Recorder())
    want = _oracle(run_dir, "the model", 25, temperature=0.8, top_k=5, seed=3)
    assert sampled.text == want.astype(np.uint8).tobytes().decode("utf-8", errors="replace")


def test_a_job_is_cancelled_at_the_next_token(job):
    run_dir, _ = job
    rep = _Recorder(stop_after=5)
    with pytest.raises(JobCancelled):
        chat.run(_config(run_dir, "the model", max_new_tokens=100), rep)
    assert len(rep.done) == 5  # asked after the 5th token, refused the 6th


def test_stop_strings_end_a_job_and_are_left_out(job):
    run_dir, _ = job
    new = _oracle(run_dir, "the model", 60, temperature=0)
    text = new.astype(np.uint8).tobytes().decode("utf-8", errors="replace")
    stop = text[20:22]
    at = text.find(stop)
    r = chat.run(_config(run_dir, "the model", max_new_tokens=60, stop=[stop]), _Recorder())
    assert r.text == text[:at] and r.stop == "stop string"
    # it stopped at the token that completed the stop string: the shortest such prefix
    n = next(k for k in range(1, 61) if stop in new[:k].astype(np.uint8).tobytes().decode(
        "utf-8", errors="replace"))
    assert r.tokens == n and r.raw.startswith(r.text + stop)


def test_past_the_context_the_window_slides(job):
    """A gpt-* model's fixed context (128 bytes for gpt-mini) does not bound a generation:
    past it each token sees the last 128, as GPT.generate (the oracle) and nanoGPT's sampler
    do; a prompt longer than the context is read from its end (coordinator, round 31: the
    first version of this round refused both, which worked before)."""
    run_dir, env = job
    for flag, key in (("--top-p", "top_p"), ("--repetition-penalty", "repetition_penalty")):
        with pytest.raises(ValueError, match=f"{flag} is not taken by a gpt-mini job"):
            _config(run_dir, "the model", temperature=1.0, **{key: 0.5})
    from skiff.kernels.train.core import random as train_random

    before = train_random.get_state()
    config = _config(run_dir, "the model")
    after = train_random.get_state()  # the model built to read its context drew nothing
    assert json.dumps(before, default=str) == json.dumps(after, default=str)  # of the user's
    assert config["max_new_tokens"] == chat.DEFAULT_NEW_TOKENS == 256  # as before round 31
    config = _config(run_dir, "x" * 130, max_new_tokens=140)
    assert config["max_new_tokens"] == 140
    r = chat.run(config, _Recorder())
    assert r.tokens == 140


@pytest.fixture(scope="module")
def ernie(tmp_path_factory):
    # the package's module: a folder put on sys.path here stayed there for every later file
    from tests.kernels.train.models.ernie_reference import make_sentencepiece_checkpoint

    folder = tmp_path_factory.mktemp("ernie") / "ckpt"
    make_sentencepiece_checkpoint(folder, seed=6)
    return str(folder)


def test_a_checkpoints_refusals_come_before_a_job(ernie):
    """Before: an empty --stop and a --max-new-tokens past the context began a job that
    failed; generate's missing prompt was told as ``chat DIR "text"``."""
    with pytest.raises(ValueError, match="--stop takes a non-empty text"):
        chat.to_config({"model": ernie, "prompt": "Hello", "stop": [""]})
    limit = json.load(open(os.path.join(ernie, "config.json")))["max_position_embeddings"]
    with pytest.raises(ValueError, match=f"passes the model's context of {limit} positions"):
        chat.to_config({"model": ernie, "prompt": "Hello", "max_new_tokens": limit})
    assert chat.to_config({"model": ernie, "prompt": "Hello", "max_new_tokens": limit - 64})[
        "max_new_tokens"] == limit - 64
    with pytest.raises(ValueError, match="the prompt 'Hello' is .* tokens as the chat "
                                         "template renders it"):  # the prompt's tokens
        chat.to_config({"model": ernie, "prompt": "Hello", "max_new_tokens": limit - 1})
    with pytest.raises(ValueError, match="give a prompt: generate DIR .*%generate DIR"):
        chat.to_config({"model": ernie, "prompt": None}, chat_default=False)
    # as the job would have said it: the same limit (the oracle: the model's own check)
    from skiff.kernels.train.models import from_pretrained
    from skiff.kernels.train.models.chat_reply import reply

    with pytest.raises(ValueError, match=f"context of {limit} positions"):
        reply(from_pretrained(ernie), "Hello", max_new_tokens=limit, chat=False)


def test_a_jobs_top_k_past_the_vocabulary_is_all_of_it(job):
    """As transformers' TopKLogitsWarper (min(top_k, vocab)) and the checkpoint path; the job
    failed with "top_k must be in [1, 256]" before."""
    run_dir, _ = job
    r = chat.run(_config(run_dir, "the model", max_new_tokens=15, temperature=0.9, top_k=300,
                         seed=5), _Recorder())
    want = _oracle(run_dir, "the model", 15, temperature=0.9, top_k=256, seed=5)
    assert r.text == want.astype(np.uint8).tobytes().decode("utf-8", errors="replace")


@pytest.mark.parametrize("flag,values", [("--system", {"system": "be brief"}),
                                         ("--no-thinking", {"no_thinking": True})])
def test_chat_template_options_on_a_job_say_drop_them(job, flag, values):
    run_dir, _ = job  # before: "add --chat, or drop ...", and --chat is refused for a job
    with pytest.raises(ValueError, match=f"{flag} goes into a chat template, which gpt-mini "
                                         f"has not: drop {flag}$"):
        _config(run_dir, "the model", **values)


def test_a_temperature_too_small_to_divide_by_is_refused_and_1e30_is_greedy(job, ernie):
    """Before: ``--temperature 1e-320`` began a job that failed "Probabilities contain NaN"
    (transformers fails so too). The oracle for 1e-30: the greedy answer."""
    run_dir, _ = job
    for model in (run_dir, ernie):
        with pytest.raises(ValueError, match="too small to sample with"):
            _config(model, "the model", temperature=1e-320)
    greedy = chat.run(_config(run_dir, "the model", max_new_tokens=20), _Recorder())
    tiny = chat.run(_config(run_dir, "the model", max_new_tokens=20, temperature=1e-30,
                            seed=0), _Recorder())
    assert tiny.text == greedy.text
