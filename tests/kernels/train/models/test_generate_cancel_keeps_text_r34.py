"""Round 34: a generation cancelled mid-way kept only its last ``info`` event's text; the
job's result now holds the text so far (``JobCancelled.partial``, written by the worker's
``keep_partial``). Oracle: the same model's uncancelled generation, greedy (its first tokens
are the cancelled run's text), for a trained gpt job's path and a checkpoint's."""

from __future__ import annotations

import numpy as np
import pytest

from skiff.kernels.backend.report import JobCancelled, Reporter
from skiff.kernels.train.models.gpt import GPT, GPTConfig
from skiff.kinds import chat


class _StopAfter(Reporter):
    def __init__(self, k):
        self.k, self.asked = k, 0

    def progress(self, done, total=None, *, unit="step", message=None):
        pass

    def info(self, **fields):
        pass

    def log(self, *a, **k):
        pass

    def metric(self, *a, **k):
        pass

    def should_stop(self):
        self.asked += 1
        return self.asked > self.k


def test_a_trained_jobs_cancelled_generation_keeps_its_text(monkeypatch, tmp_path):
    import skiff.kernels.train.entry as entry

    net = GPT(GPTConfig(block_size=32, n_layer=1, n_head=2, n_embd=16))
    w = net.lm_head.weight._data  # lower-case letters only: one byte per character
    w[:97] = 0.0
    w[123:] = 0.0
    monkeypatch.setattr(chat, "trained_job", lambda folder: {"model": "gpt-mini"})
    monkeypatch.setattr(entry, "load_trained_model", lambda folder, job: net)
    prompt = "the model"
    ids = np.frombuffer(prompt.encode(), dtype=np.uint8).astype(np.int64)[None]
    whole = net.generate(ids, 20, temperature=0)[0, ids.shape[1]:]
    text = whole.astype(np.uint8).tobytes().decode()
    config = {"model": str(tmp_path), "prompt": prompt, "max_new_tokens": 20}
    with pytest.raises(JobCancelled) as got:
        chat.run(config, _StopAfter(7))
    part = got.value.partial
    assert part["stop"] == "cancelled" and 1 <= part["tokens"] < 20
    assert part["text"] == text[:part["tokens"]]


def test_a_checkpoints_cancelled_generation_keeps_its_text(tmp_path):
    pytest.importorskip("transformers")
    from skiff.kernels.train.models import chat_reply, from_pretrained

    from .ernie_reference import make_sentencepiece_checkpoint

    make_sentencepiece_checkpoint(tmp_path)
    model = from_pretrained(tmp_path)
    model.generation_config.eos_token_id = None
    free = chat_reply.reply(model, "The quick brown", chat=False, max_new_tokens=10)
    config = {"model": str(tmp_path), "prompt": "The quick brown", "chat": False,
              "max_new_tokens": 10}
    with pytest.raises(JobCancelled) as got:
        chat_reply.run(config, _StopAfter(6), model=model)
    part = got.value.partial
    assert part["stop"] == "cancelled" and 1 <= part["tokens"] < 10
    assert part["text"] and free.text.startswith(part["text"])
