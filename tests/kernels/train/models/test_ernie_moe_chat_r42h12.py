"""A user's chat fine-tune of ERNIE-4.5 MoE (round 42, h12): a tiny MoE checkpoint in the
published layout (transformers' ``save_pretrained``: per-expert weights, the router's
``moe_statics``) with a SentencePiece vocabulary and a thinking-aware template, multi-turn
conversations with ``reasoning_content``, ``output_router_logits`` on in its config.

* The job's loss on a batch of conversations equals transformers' (labels on the assistant
  tokens as ``return_assistant_tokens_mask`` marks them, the router's balancing loss over the
  padded batch's real tokens): skiff fed each conversation without its last token, so the
  balancing loss left those tokens' routes out (1.6e-4 of the aux loss here).
* A model whose chat template has rendered a conversation could not be deep-copied (the
  planner's micro-run of every chat fine-tune on 2 ranks failed: "Template.__new__() missing
  1 required positional argument: 'source'") nor pickled; transformers' can."""

from __future__ import annotations

import copy
import json
import pickle

import numpy as np
import pytest

from skiff.kernels.train.core.autograd import no_grad
from skiff.kernels.train.models import from_pretrained
from skiff.kernels.train.models.hf_checkpoint import text_dataset

from .ernie_reference import SHAPES, torch, transformers, write_sentencepiece

THINKING = (
    "{%- for m in messages %}{{ '<|im_start|>' + m['role'] + '\n' }}"
    "{%- if m['role'] == 'assistant' %}{% generation %}"
    "{%- if m.get('reasoning_content') %}{{ '<think>\n' + m['reasoning_content'] + "
    "'\n</think>\n\n' }}{%- endif %}"
    "{{ m['content'] + '<|end_of_sentence|>' }}{% endgeneration %}"
    "{%- else %}{{ m['content'] + '<|end_of_sentence|>' }}{%- endif %}{{ '\n' }}"
    "{%- endfor %}{%- if add_generation_prompt %}<|im_start|>assistant\n{%- endif %}")


@pytest.fixture(scope="module")
def moe_chat(tmp_path_factory):
    """``(folder, chat.jsonl, transformers model, tokenizer)``."""
    folder = tmp_path_factory.mktemp("r42h12") / "base"
    write_sentencepiece(folder, chat_template=THINKING)
    tok = transformers.AutoTokenizer.from_pretrained(folder)
    cfg = transformers.Ernie4_5_MoeConfig(**dict(
        SHAPES["moe-shared"][1], vocab_size=len(tok), output_router_logits=True,
        router_aux_loss_coef=1.0))
    ref = transformers.Ernie4_5_MoeForCausalLM(cfg)
    gen = torch.Generator().manual_seed(5)
    with torch.no_grad():
        for name, p in ref.named_parameters():
            if "e_score_correction_bias" in name:
                p.copy_(torch.rand(p.shape, generator=gen) * 0.2 - 0.1)
            else:
                p.copy_(torch.rand(p.shape, generator=gen) + 0.5 if p.ndim == 1
                        else torch.randn(p.shape, generator=gen) * 0.3)
    ref.eval().save_pretrained(folder)
    rows = [{"messages": [
        {"role": "system", "content": "Answer briefly."},
        {"role": "user", "content": f"What is {i} plus {i}?"},
        {"role": "assistant", "content": f"{2 * i}.", "reasoning_content": f"{i} and {i}"},
        {"role": "user", "content": "And twice that?"},
        {"role": "assistant", "content": f"{4 * i}.", "reasoning_content": f"double {2 * i}"},
    ][:3 + 2 * (i % 2)]} for i in range(6)]
    data = folder.parent / "chat.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return folder, data, rows, ref, tok


def test_the_jobs_loss_with_the_balancing_loss_equals_transformers(moe_chat):
    folder, data, rows, ref, tok = moe_chat
    model = from_pretrained(folder)
    assert model.config.output_router_logits and model.config.is_moe
    chat = text_dataset(model, str(data), 512)  # what the train job reads
    with no_grad():
        got = float(np.asarray(model.loss(chat.collate(chat.items)).numpy()))
    enc = [tok.apply_chat_template(r["messages"], return_assistant_tokens_mask=True,
                                   return_dict=True) for r in rows]
    T = max(len(e["input_ids"]) for e in enc)
    ids = torch.zeros(len(enc), T, dtype=torch.long)
    mask, labels = torch.zeros_like(ids), torch.full_like(ids, -100)
    for i, e in enumerate(enc):
        n = len(e["input_ids"])
        ids[i, :n], mask[i, :n] = torch.tensor(e["input_ids"]), 1
        labels[i, :n] = torch.where(torch.tensor(e["assistant_masks"]).bool(), ids[i, :n], -100)
    with torch.no_grad():
        want = ref(ids, attention_mask=mask, labels=labels)
        plain = ref(ids, attention_mask=mask, labels=labels, output_router_logits=False)
    assert want.loss.item() - plain.loss.item() > 1.0  # the balancing term is in it
    assert abs(got - want.loss.item()) <= 2e-6 * want.loss.item(), (got, want.loss.item())


def test_a_model_whose_template_rendered_copies_and_pickles(moe_chat):
    folder, _, rows, ref, _ = moe_chat
    model = from_pretrained(folder)
    text = model.tokenizer.apply_chat_template(rows[1]["messages"], tokenize=False)
    ids = np.asarray([model.tokenizer.encode(text)])
    with no_grad():
        want = np.asarray(model(ids).numpy())
    for twin in (copy.deepcopy(model), pickle.loads(pickle.dumps(model))):
        assert twin.tokenizer.apply_chat_template(rows[1]["messages"], tokenize=False) == text
        with no_grad():
            np.testing.assert_array_equal(np.asarray(twin(ids).numpy()), want)
    with torch.no_grad():  # (and the checkpoint is transformers')
        np.testing.assert_allclose(want, ref(torch.tensor(ids)).logits.numpy(),
                                   atol=5e-5 * np.abs(want).max())


def test_an_adapter_peft_reads_otherwise_says_so(moe_chat, tmp_path):
    """LoRA on the shared experts' / dense MLP's projections of an MoE model: peft reads
    those names as the routed experts' fused weights and drops the tensors (logits: the
    base's); the saved adapter warns and names the way out. Attention only: no warning,
    peft's logits are skiff's."""
    import warnings

    import skiff

    peft = pytest.importorskip("peft")
    folder, _, _, ref, _ = moe_chat
    ids = np.random.default_rng(2).integers(3, ref.config.vocab_size, (1, 12))
    for targets, misread in ((["up_proj", "gate_proj", "down_proj"], True), (["q_proj"], False)):
        model = from_pretrained(folder)
        skiff.models.apply_lora(model, r=2, alpha=4, target_modules=targets)
        rng = np.random.default_rng(0)
        for n, p in model.named_parameters():
            if "lora_B" in n:
                p._data = p._data + rng.normal(0, 0.3, p.shape).astype(np.float32)
        out = tmp_path / targets[0]
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            skiff.models.save_adapter(model, out)
        said = [str(w.message) for w in seen if "routed experts' fused" in str(w.message)]
        assert bool(said) == misread, said
        if misread:
            assert "shared experts" in said[0] and "experts.gate_up_proj" in said[0], said
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            pm = peft.PeftModel.from_pretrained(
                transformers.AutoModelForCausalLM.from_pretrained(folder), out).eval()
        with no_grad():
            mine = np.asarray(model(ids).numpy())
        with torch.no_grad():
            theirs = pm(torch.tensor(ids)).logits.numpy()
        gap = np.abs(mine - theirs).max() / np.abs(mine).max()
        assert (gap > 1e-2) == misread, gap  # the warning's premise, checked on peft
