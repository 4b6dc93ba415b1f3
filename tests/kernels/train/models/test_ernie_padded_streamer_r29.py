"""``generate(**left_padded_batch, streamer=...)`` (round 29; was "streamer with a padded
attention_mask is not supported"): the streamer sees what transformers' sees, the padded
prompt, then each step's tokens with the pad id for rows that have finished, then
``end()``; greedy and sampling, rows stopping at different steps."""

from __future__ import annotations

import numpy as np
import pytest

from skiff.kernels.train.models import from_pretrained

from .ernie_reference import make_checkpoint, random_ids, torch


class Log:
    """A transformers ``BaseStreamer``: records every put and the end."""

    def __init__(self):
        self.calls = []

    def put(self, value):
        self.calls.append(np.asarray(value).tolist())

    def end(self):
        self.calls.append("end")


@pytest.fixture(scope="module", params=["dense-gqa-tied", "moe-shared"])
def pair(request, tmp_path_factory):
    folder, ref = make_checkpoint(tmp_path_factory.mktemp(request.param), request.param)
    return ref, from_pretrained(folder)


@pytest.mark.parametrize("sample", [False, True])
def test_streamer_on_a_padded_batch_as_transformers(pair, sample):
    ref, model = pair
    ids = torch.tensor(random_ids(model.config.vocab_size, (3, 7), seed=6))
    mask = torch.ones_like(ids)
    mask[1, :3] = 0
    mask[2, :1] = 0
    kw = dict(attention_mask=mask, max_new_tokens=8, pad_token_id=0)
    kw.update(dict(do_sample=True, top_k=6) if sample else dict(do_sample=False))
    torch.manual_seed(0)
    free = ref.generate(ids, eos_token_id=None, **kw)[:, 7:]
    eos = int(free[0, 2])  # row 0 stops at its third new token, others when they meet it
    logs = []
    for run in ("transformers", "skiff"):
        log = Log()
        if run == "transformers":
            torch.manual_seed(0)
            out = ref.generate(ids, eos_token_id=eos, streamer=log, **kw).numpy()
        else:
            out = model.generate(ids, eos_token_id=eos, streamer=log,
                                 generator=torch.Generator().manual_seed(0), **kw)
        logs.append((np.asarray(out).tolist(), log.calls))
    assert logs[1] == logs[0]
    calls = logs[0][1]
    assert calls[-1] == "end" and np.asarray(calls[0]).shape == (3, 7)
    steps = np.array(calls[1:-1])  # (steps, 3): row 0 padded after its (first) eos
    first = list(steps[:, 0]).index(eos)
    assert first <= 2 and len(steps) > first + 1 and (steps[first + 1:, 0] == 0).all()
