"""``model(inputs_embeds=...)`` and ``generate(inputs_embeds=...)`` (round 29c; both were
"unexpected keyword"): logits and loss of
embeddings against transformers' forward with the same ``inputs_embeds``, and the gradient
a soft prompt (prompt tuning) gets, against torch autograd through transformers; greedy
and sampled tokens generated from embeddings against transformers' ``generate``; dense and
MoE."""

from __future__ import annotations

import numpy as np
import pytest

from skiff.kernels.train.core.tensor import Tensor
from skiff.kernels.train.models import from_pretrained

from .ernie_reference import make_checkpoint, random_ids, torch


@pytest.fixture(scope="module", params=["dense-gqa-tied", "moe-shared"])
def pair(request, tmp_path_factory):
    folder, ref = make_checkpoint(tmp_path_factory.mktemp("emb-" + request.param),
                                  request.param)
    return ref, from_pretrained(folder)


def close(got, want, tol=1e-5):
    want = want.detach().numpy()
    np.testing.assert_allclose(np.asarray(got), want, atol=tol * max(1, np.abs(want).max()))


def _embeds(ref, shape, seed):
    ids = torch.tensor(random_ids(ref.config.vocab_size, shape, seed=seed))
    with torch.no_grad():
        e = ref.get_input_embeddings()(ids)
    # edited embeddings (not any token's): a soft prompt in front
    return ids, e + 0.05 * torch.randn(e.shape, generator=torch.Generator().manual_seed(seed))


@pytest.mark.parametrize("kind", ["torch", "numpy"])
def test_logits_equal_transformers(pair, kind):
    ref, model = pair
    _, e = _embeds(ref, (2, 7), 3)
    with torch.no_grad():
        want = ref(inputs_embeds=e).logits
    got = model(inputs_embeds=e if kind == "torch" else e.numpy())
    close(got.logits.numpy(), want)


def test_loss_and_soft_prompt_gradient_equal_transformers(pair):
    ref, model = pair
    ids, e = _embeds(ref, (2, 6), 5)
    labels = ids.clone()
    labels[:, :2] = -100  # the prompt's positions are not scored
    te = e.clone().requires_grad_(True)
    r = ref(inputs_embeds=te, labels=labels)
    r.loss.backward()
    se = Tensor(e.numpy(), requires_grad=True)
    out = model(inputs_embeds=se, labels=labels.numpy())
    close(out.logits.numpy(), r.logits)
    np.testing.assert_allclose(float(out.loss.numpy()), float(r.loss.detach()), rtol=1e-5)
    out.loss.backward()
    close(se.grad.numpy(), te.grad, tol=1e-4)


def test_refused_with_ids_or_padding(pair):
    ref, model = pair
    ids, e = _embeds(ref, (2, 4), 1)
    with pytest.raises(ValueError, match="not both"):
        model(ids.numpy(), inputs_embeds=e)
    with pytest.raises(ValueError, match="padded attention_mask"):
        model(inputs_embeds=e, attention_mask=np.array([[0, 1, 1, 1], [1, 1, 1, 1]]))


@pytest.mark.parametrize("kw", [dict(do_sample=False),
                                dict(do_sample=False, repetition_penalty=1.5,
                                     return_dict_in_generate=True, output_scores=True),
                                dict(do_sample=True, top_k=8, temperature=0.8),
                                dict(do_sample=False, max_length=12)])
def test_generate_from_embeds_equals_transformers(pair, kw):
    """transformers returns only the new tokens; max_length counts the embeddings."""
    ref, model = pair
    _, e = _embeds(ref, (2, 5), 9)
    kw = dict(kw, eos_token_id=None)
    if "max_length" not in kw:
        kw["max_new_tokens"] = 8
    torch.manual_seed(4)
    with torch.no_grad():
        want = ref.generate(inputs_embeds=e, **kw)
    got = model.generate(inputs_embeds=e, generator=torch.Generator().manual_seed(4), **kw)
    if kw.get("return_dict_in_generate"):
        assert torch.equal(got.sequences, want.sequences)
        for mine, theirs in zip(got.scores, want.scores, strict=True):
            close(mine.numpy(), theirs, tol=1e-4)
    else:
        assert isinstance(got, torch.Tensor) and torch.equal(got, want)
