"""A stop string that begins in the prompt and ends in the answer (round 32).

transformers' ``stop_strings`` look at the whole sequence, prompt included: a stop string
whose end lies in the newest token stops generation even when it began in the prompt
(``StopStringCriteria`` matches from the last token backwards). ``generate`` already
stopped there; ``chat_reply.reply`` (``%chat``, ``python -m skiff chat|generate DIR``) then
said ``stop: "length"`` and kept the text of the stopping token, and a ``train gpt-*``
job's ``--stop`` did not see such a match at all. Oracle: transformers' ``generate(
stop_strings=..., tokenizer=...)`` for the checkpoint path, :meth:`GPT.generate` and the
byte text for the job.
"""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
from skiff.kernels.backend.report import Reporter  # noqa: E402
from skiff.kernels.train.models import from_pretrained  # noqa: E402
from skiff.kernels.train.models.chat_reply import reply, stop_cut  # noqa: E402
from skiff.kernels.train.models.gpt import GPT, GPTConfig  # noqa: E402
from skiff.kinds import chat  # noqa: E402

from .ernie_reference import make_sentencepiece_checkpoint  # noqa: E402


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    folder = tmp_path_factory.mktemp("stop")
    ref, tok = make_sentencepiece_checkpoint(folder)
    return ref, from_pretrained(folder), tok


def _transformers_new(ref, tok, prompt, n, stop):
    ids = tok(prompt, add_special_tokens=False, return_tensors="pt")["input_ids"]
    with torch.no_grad():
        out = ref.generate(ids, max_new_tokens=n, do_sample=False, pad_token_id=0,
                           eos_token_id=None, stop_strings=[stop] if stop else None,
                           tokenizer=tok)
    return out.shape[1] - ids.shape[1]


@pytest.mark.parametrize("prompt", ["The quick brown", "What is two plus two?"])
def test_a_stop_string_begun_in_the_prompt_ends_the_reply_as_transformers(pair, prompt):
    ref, model, tok = pair
    model.generation_config.eos_token_id = None  # as the oracle: no eos on a random model
    free = reply(model, prompt, chat=False, max_new_tokens=12)
    assert free.tokens == 12 == _transformers_new(ref, tok, prompt, 12, None)
    assert free.raw[:1].strip() and free.raw[:1] != "\ufffd"  # a plain first character
    stop = prompt[-2:] + free.raw[:1]
    seen = []
    r = reply(model, prompt, chat=False, max_new_tokens=12, stop_strings=[stop],
              on_text=lambda think, answer, n: seen.append(answer))
    assert r.tokens == _transformers_new(ref, tok, prompt, 12, stop) == 1
    assert r.stop == "stop string" and r.text == "" and seen == [""]
    assert r.raw == free.raw[:len(r.raw)]
    # wholly in the prompt: no stop (transformers: the match must end in a new token)
    inside = prompt[:4]
    r = reply(model, prompt, chat=False, max_new_tokens=12, stop_strings=[inside])
    assert r.tokens == _transformers_new(ref, tok, prompt, 12, inside) == 12
    assert r.stop == "length" and r.text == free.text
    # a stop later in the answer is cut as before
    later = free.raw[3:5]
    r = reply(model, prompt, chat=False, max_new_tokens=12, stop_strings=[later])
    assert r.tokens == _transformers_new(ref, tok, prompt, 12, later) < 12
    assert r.stop == "stop string" and r.text == free.raw[:free.raw.find(later)]


def test_stop_cut_takes_the_first_match_ending_past_the_prompt():
    assert stop_cut("bc and more", ["ab"], before="xa") == ""
    assert stop_cut("bc and more", ["and"], before="xa") == "bc "
    assert stop_cut("bc and more", ["xa"], before="xa") == "bc and more"  # wholly before
    assert stop_cut("bc and more", ["more", "abc"], before="a") == ""
    assert stop_cut("bc and more", ["more", " a"]) == "bc"


class _Recorder(Reporter):
    def __init__(self):
        self.texts = []

    def progress(self, done, total=None, *, unit="step", message=None):
        pass

    def info(self, **fields):
        if "text" in fields:
            self.texts.append(fields["text"])

    def should_stop(self):
        return False


def test_a_train_jobs_stop_begun_in_the_prompt_ends_it(monkeypatch, tmp_path):
    import skiff.kernels.train.entry as entry

    net = GPT(GPTConfig(block_size=32, n_layer=1, n_head=2, n_embd=16))
    w = net.lm_head.weight._data  # only lower-case letters: a plain text to stop in
    w[:97] = 0.0
    w[123:] = 0.0
    monkeypatch.setattr(chat, "trained_job", lambda folder: {"model": "gpt-mini"})
    monkeypatch.setattr(entry, "load_trained_model", lambda folder, job: net)
    prompt = "the model"
    ids = np.frombuffer(prompt.encode(), dtype=np.uint8).astype(np.int64)[None]
    new = net.generate(ids, 20, temperature=0)[0, ids.shape[1]:]
    text = new.astype(np.uint8).tobytes().decode("utf-8", errors="replace")
    first = text[0]
    k = 1
    stop = "el" + first  # begins in the prompt's "model"
    config = {"model": str(tmp_path), "prompt": prompt, "max_new_tokens": 20,
              "stop": [stop]}  # what to_config makes of a run folder's job
    r = chat.run(config, _Recorder())
    assert r.stop == "stop string" and r.text == "" and r.tokens == k
    assert r.raw == first
    # a stop wholly in the prompt does not end it
    config["stop"] = ["mod"]
    r = chat.run(config, _Recorder())
    assert r.stop == "length" and r.tokens == 20 and r.text == text
