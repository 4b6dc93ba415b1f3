"""The user's whole flow on a tiny ERNIE (round 27), each step against transformers / peft:
add a special token to the tokenizer, grow the model, LoRA fine-tune (with the new token's
row trained, peft's ``trainable_token_indices``) on one's own chat data rendered with the
chat template (loss on the assistant's tokens only), save merged, and reload the folder in
transformers: the same tokenizer ids, the data's labels equal to transformers'
``return_assistant_tokens_mask``, three AdamW steps equal to peft's model trained by torch,
the merged folder's logits and greedy answers equal to skiff's, the adapter equal in peft."""

from __future__ import annotations

import numpy as np
import pytest

from skiff.kernels.train.core.optim import AdamW
from skiff.kernels.train.models import from_pretrained, load_tokenizer
from skiff.kernels.train.models.chat import ChatDataset
from skiff.kernels.train.models.hf_checkpoint import save_pretrained
from skiff.kernels.train.models.lora import apply_lora, save_adapter

from .ernie_reference import make_sentencepiece_checkpoint, torch, transformers

peft = pytest.importorskip("peft")

# the assistant's turn marked for transformers' return_assistant_tokens_mask
TEMPLATE = ("{%- for m in messages %}{{ '<|im_start|>' + m['role'] + '\n' }}"
            "{%- if m['role'] == 'assistant' %}{% generation %}"
            "{{ m['content'] + '<|end_of_sentence|>' }}{% endgeneration %}"
            "{%- else %}{{ m['content'] + '<|end_of_sentence|>' }}{%- endif %}{{ '\n' }}"
            "{%- endfor %}{%- if add_generation_prompt %}<|im_start|>assistant\n{%- endif %}")
ROWS = [{"messages": [{"role": "user", "content": q},
                      {"role": "assistant", "content": a}]}
        for q, a in [("What is two plus two?", "<|tool|>calc 2+2 Four."),
                     ("Hello world", "Hello<|tool|> skiff!"),
                     ("你好", "你好，世界。")]]


@pytest.mark.parametrize("template", [TEMPLATE, TEMPLATE.replace("{{ '\\n' }}", "")])
def test_chat_labels_are_transformers_assistant_mask(tmp_path, template):
    """A template with {% generation %}: the trained tokens are those transformers'
    return_assistant_tokens_mask marks (before: also the newline the template writes after
    the turn, and the one before it that the generation prompt strips)."""
    folder = tmp_path / "base"
    make_sentencepiece_checkpoint(folder, chat_template=template)
    htok = transformers.AutoTokenizer.from_pretrained(folder)
    ds = ChatDataset(ROWS, load_tokenizer(folder), 64)
    assert len(ds) == len(ROWS)
    for (x, y), row in zip(ds.items, ROWS):
        enc = htok.apply_chat_template(row["messages"], tokenize=True, return_dict=True,
                                       return_assistant_tokens_mask=True)
        ids = np.array(enc["input_ids"])
        labels = np.where(np.array(enc["assistant_masks"]) == 1, ids, -100)
        np.testing.assert_array_equal(x, ids[:-1])
        np.testing.assert_array_equal(y, labels[1:])


@pytest.mark.slow
def test_add_token_lora_chat_merge_reload(tmp_path):
    folder = tmp_path / "base"
    make_sentencepiece_checkpoint(folder, chat_template=TEMPLATE)
    htok = transformers.AutoTokenizer.from_pretrained(folder)
    ref = transformers.AutoModelForCausalLM.from_pretrained(folder)
    model = from_pretrained(folder)
    tok = model.tokenizer
    new = {"additional_special_tokens": ["<|tool|>"]}
    assert tok.add_special_tokens(new) == htok.add_special_tokens(new) == 1
    tool = tok.convert_tokens_to_ids("<|tool|>")
    assert tool == htok.convert_tokens_to_ids("<|tool|>") == len(tok) - 1
    model.resize_token_embeddings(len(tok), seed=0)
    ref.resize_token_embeddings(len(htok))
    with torch.no_grad():  # the same new row in both (each draws its own)
        ref.get_input_embeddings().weight.copy_(torch.tensor(
            np.asarray(model.model.embed_tokens.weight._data)))

    # the data: skiff's (tokens, targets) are transformers' ids and assistant-mask labels
    ds = ChatDataset(ROWS, tok, 64)
    batches = []
    for (x, y), row in zip(ds.items, ROWS):
        enc = htok.apply_chat_template(row["messages"], tokenize=True, return_dict=True,
                                       return_assistant_tokens_mask=True)
        ids = np.array(enc["input_ids"])
        labels = np.where(np.array(enc["assistant_masks"]) == 1, ids, -100)
        np.testing.assert_array_equal(x, ids[:-1])
        np.testing.assert_array_equal(y, labels[1:])
        batches.append((ids, labels))
    assert sum((y == tool).any() for _, y in ds.items) == 2  # the new token is learned

    kw = dict(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"],
              trainable_token_indices=[tool])
    pm = peft.get_peft_model(ref, peft.LoraConfig(**kw))
    apply_lora(model, r=4, alpha=8, target_modules=kw["target_modules"],
               trainable_token_indices=[tool])
    mine = dict(model.named_parameters())
    with torch.no_grad():  # peft's random lora_A in skiff too (lora_B and rows start equal)
        for name, p in pm.named_parameters():
            if p.requires_grad:
                short = name.removeprefix("base_model.model.").replace(".default", "")
                mine[short].data[...] = p.detach().numpy()
    # eps 1e-4 in both: lora_A's gradient is 0 at step 1 (lora_B starts at 0) and near eps
    # in places after, where eps 1e-8 makes AdamW's step ~lr * sign(g) and float32 rounding
    # flips it (a fresh-clone CI here: logits 1.9x past 1e-4 of their scale)
    opt = AdamW([p for p in model.parameters() if p.requires_grad], lr=2e-2, eps=1e-4)
    topt = torch.optim.AdamW([p for p in pm.parameters() if p.requires_grad], lr=2e-2,
                             eps=1e-4)
    model.train()
    pm.train()
    batch = ds.collate(ds.items)
    for step in range(3):
        loss = model.loss(batch)
        logits = [pm(torch.tensor(ids[None, :-1])).logits[0] for ids, _ in batches]
        tloss = torch.nn.functional.cross_entropy(
            torch.cat(logits), torch.tensor(np.concatenate([lab[1:] for _, lab in batches])),
            ignore_index=-100)
        assert abs(loss.item() - tloss.item()) <= 1e-4 * tloss.item(), step
        loss.backward()
        opt.step()
        opt.zero_grad()
        tloss.backward()
        topt.step()
        topt.zero_grad()
    model.eval()
    pm.eval()
    row = np.asarray(model.model.embed_tokens.token_adapter.trainable_tokens_delta._data)
    start = np.asarray(model.model.embed_tokens.weight._data[tool])
    assert np.abs(row - start).max() > 1e-3  # the new token's row has moved

    # merged and saved; transformers reads the folder (tokenizer with the new token)
    save_pretrained(model, tmp_path / "merged")
    htok2 = transformers.AutoTokenizer.from_pretrained(tmp_path / "merged")
    merged = transformers.AutoModelForCausalLM.from_pretrained(tmp_path / "merged").eval()
    prompt = tok.apply_chat_template([ROWS[0]["messages"][0]], add_generation_prompt=True)
    assert prompt == htok2.apply_chat_template([ROWS[0]["messages"][0]],
                                               add_generation_prompt=True, tokenize=False)
    ids = tok(prompt + "<|tool|>calc", return_tensors="np")["input_ids"]
    assert ids.tolist() == [htok2(prompt + "<|tool|>calc")["input_ids"]]
    with torch.no_grad():
        want = pm(torch.tensor(ids)).logits.numpy()
        again = merged(torch.tensor(ids)).logits.numpy()
    got = np.asarray(model(ids).numpy())
    scale = np.abs(want).max()
    np.testing.assert_allclose(got, want, atol=1e-4 * scale)
    np.testing.assert_allclose(again, want, atol=1e-4 * scale)
    enc = tok([prompt, ROWS[1]["messages"][0]["content"]], padding=True, padding_side="left",
              return_tensors="np")
    henc = htok2([prompt, ROWS[1]["messages"][0]["content"]], padding=True,
                 padding_side="left", return_tensors="pt")
    with torch.no_grad():
        theirs = merged.generate(**henc, max_new_tokens=8, do_sample=False).numpy()
    np.testing.assert_array_equal(model.generate(**enc, max_new_tokens=8), theirs)
    # the adapter, in peft on a base grown by transformers
    save_adapter(model, tmp_path / "adapter")
    base = transformers.AutoModelForCausalLM.from_pretrained(folder)
    base.resize_token_embeddings(len(htok))
    loaded = peft.PeftModel.from_pretrained(base, tmp_path / "adapter").eval()
    with torch.no_grad():
        np.testing.assert_allclose(loaded(torch.tensor(ids)).logits.numpy(), want,
                                   atol=1e-4 * scale)
