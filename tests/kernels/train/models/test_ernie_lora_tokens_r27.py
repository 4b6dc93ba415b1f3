"""LoRA with new tokens, as a peft user fine-tunes after ``tok.add_special_tokens``:
``apply_lora(..., trainable_token_indices=ids)`` (peft's ``LoraConfig(trainable_token_indices
=...)``: those embedding rows train, tied head included) and the adapter of a grown
vocabulary (peft saves the embedding and head then). Before, LoRA could not train a new
token's row (frozen at the resize's mean) and the adapter lost the grown rows: peft's model
on a freshly resized base differed (0.0054 in the logits of the round-27 probe).

Oracles: peft's model with the same adapter values (logits; the loss's gradient on the
token rows and LoRA matrices through torch autograd), ``PeftModel.from_pretrained`` of the
saved adapter on a base resized by transformers, and transformers on the merged folder."""

from __future__ import annotations

import numpy as np
import pytest

from skiff.kernels.train.models import from_pretrained
from skiff.kernels.train.models.hf_checkpoint import save_pretrained
from skiff.kernels.train.models.lora import apply_lora, load_adapter, save_adapter

from .ernie_reference import make_checkpoint, torch, transformers

peft = pytest.importorskip("peft")


def _biased_moe(folder):
    """A tied MoE checkpoint whose head has a bias (use_bias), weights seeded."""
    from .ernie_reference import _MOE

    ref = transformers.Ernie4_5_MoeForCausalLM(transformers.Ernie4_5_MoeConfig(
        **dict(_MOE, use_bias=True, tie_word_embeddings=True)))
    gen = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for p in ref.parameters():
            p.copy_(torch.rand(p.shape, generator=gen) * 0.2 - 0.1 if p.ndim == 1
                    else torch.randn(p.shape, generator=gen) * 0.3)
    ref.save_pretrained(folder)


def _setup(tmp_path, shape):
    """skiff and peft models, both resized by 2 tokens (the same new rows) and adapted with
    the same random LoRA matrices and token rows."""
    folder = tmp_path / "base"
    make_checkpoint(folder, shape)
    ref = transformers.AutoModelForCausalLM.from_pretrained(folder)
    V = ref.config.vocab_size
    torch.manual_seed(0)
    ref.resize_token_embeddings(V + 2)
    model = from_pretrained(folder)
    model.resize_token_embeddings(V + 2)
    model.model.embed_tokens.weight.data[...] = ref.get_input_embeddings().weight.detach().numpy()
    if not model.config.tie_word_embeddings:
        model.lm_head.weight.data[...] = ref.get_output_embeddings().weight.detach().numpy()
    tokens = [V, V + 1, 5]
    pm = peft.get_peft_model(ref, peft.LoraConfig(r=2, lora_alpha=4, target_modules=[
        "q_proj", "v_proj"], trainable_token_indices=tokens))
    apply_lora(model, r=2, alpha=4, target_modules=["q_proj", "v_proj"],
               trainable_token_indices=tokens)
    gen = torch.Generator().manual_seed(5)
    mine = dict(model.named_parameters())
    with torch.no_grad():
        for name, p in pm.named_parameters():
            if not p.requires_grad:
                continue
            p.copy_(torch.randn(p.shape, generator=gen) * 0.3)
            short = name.removeprefix("base_model.model.").replace(".default", "")
            mine[short].data[...] = p.detach().numpy()
    return folder, ref, pm.eval(), model, tokens


def _ids(n, tokens):
    ids = np.random.default_rng(2).integers(3, n, (2, 9))
    ids[0, 2], ids[1, 4], ids[1, 6] = tokens[0], tokens[1], tokens[2]
    return ids


@pytest.mark.parametrize("shape", ["dense-gqa-tied", "dense-mha-untied-bias", "moe-shared"])
def test_trainable_tokens_as_peft(tmp_path, shape):
    folder, _, pm, model, tokens = _setup(tmp_path, shape)
    n = model.config.vocab_size
    ids = _ids(n, tokens)
    tt = torch.tensor(ids)
    out = pm(tt, labels=tt)
    want = out.logits.detach().numpy()
    got = np.asarray(model(ids).numpy())
    np.testing.assert_allclose(got, want, atol=1e-4 * np.abs(want).max())
    # the gradient of the loss on the token rows and LoRA matrices, as torch autograd's
    out.loss.backward()
    res = model(ids, labels=ids)
    res.loss.backward()
    assert abs(float(res.loss.numpy()) - float(out.loss)) < 1e-5
    mine = dict(model.named_parameters())
    trained = [(n_, p) for n_, p in pm.named_parameters() if p.requires_grad]
    assert any("trainable_tokens_delta" in n_ for n_, _ in trained)
    for name, p in trained:
        short = name.removeprefix("base_model.model.").replace(".default", "")
        g = np.asarray(mine[short].grad.numpy())
        np.testing.assert_allclose(g, p.grad.numpy(), atol=1e-5 + 1e-4 * np.abs(
            p.grad.numpy()).max())
    # frozen: the rest of the table
    assert not model.model.embed_tokens.weight.requires_grad

    # saved: peft loads it on a base resized by transformers (the grown rows come with it)
    save_adapter(model, tmp_path / "adapter")
    base = transformers.AutoModelForCausalLM.from_pretrained(folder)
    base.resize_token_embeddings(n, mean_resizing=False)  # other new rows: the adapter's win
    loaded = peft.PeftModel.from_pretrained(base, tmp_path / "adapter").eval()
    with torch.no_grad():
        again = loaded(tt).logits.numpy()
    np.testing.assert_allclose(again, want, atol=1e-4 * np.abs(want).max())
    # skiff's load_adapter on the plain base: resized to the adapter's vocabulary
    fresh = load_adapter(from_pretrained(folder), tmp_path / "adapter")
    assert fresh.config.vocab_size == n
    np.testing.assert_allclose(np.asarray(fresh(ids).numpy()), want,
                               atol=1e-4 * np.abs(want).max())
    # merged: transformers reads the folder with the trained rows in the table
    save_pretrained(model, tmp_path / "merged")
    merged = transformers.AutoModelForCausalLM.from_pretrained(tmp_path / "merged").eval()
    with torch.no_grad():
        m = merged(tt).logits.numpy()
    np.testing.assert_allclose(m, want, atol=1e-4 * np.abs(want).max())


def test_trainable_tokens_tied_head_with_bias(tmp_path):
    """A tied MoE head with a bias (use_bias): the token rows replace the table's rows in
    the head too and the bias stays (transformers with those rows written into its table is
    the oracle; peft 0.21's tied head adapter drops the head's bias, so it is not one
    here). Loading such a checkpoint failed before (skiff gave the routed experts biases;
    transformers' fused experts have none)."""
    folder = tmp_path / "base"
    _biased_moe(folder)
    ref = transformers.AutoModelForCausalLM.from_pretrained(folder).eval()
    model = from_pretrained(folder)
    V = model.config.vocab_size
    torch.manual_seed(0)
    ref.resize_token_embeddings(V + 2)
    model.resize_token_embeddings(V + 2)
    np.testing.assert_array_equal(model.lm_head.bias.numpy(), ref.lm_head.bias.detach().numpy())
    model.model.embed_tokens.weight.data[...] = ref.get_input_embeddings().weight.detach().numpy()
    tokens = [V, V + 1, 5]
    apply_lora(model, r=2, target_modules=["q_proj"], trainable_token_indices=tokens)
    rows = np.random.default_rng(4).normal(size=(3, model.config.hidden_size)) * 0.3
    model.model.embed_tokens.token_adapter.trainable_tokens_delta.data[...] = rows
    with torch.no_grad():
        ref.get_input_embeddings().weight[tokens] = torch.tensor(rows, dtype=torch.float32)
    ids = _ids(V + 2, tokens)
    with torch.no_grad():
        want = ref(torch.tensor(ids)).logits.numpy()
    np.testing.assert_allclose(np.asarray(model(ids).numpy()), want,
                               atol=1e-5 * np.abs(want).max())


def test_grown_vocabulary_adapter_without_token_rows(tmp_path):
    """LoRA alone after a resize: the adapter carries the grown embedding and head as
    peft's save_embedding_layers="auto" does, so peft gets skiff's logits."""
    folder = tmp_path / "base"
    make_checkpoint(folder, "dense-mha-untied-bias")
    model = from_pretrained(folder)
    V = model.config.vocab_size
    model.resize_token_embeddings(V + 3, seed=1)
    apply_lora(model, r=2, target_modules=["q_proj"])
    for name, p in model.named_parameters():
        if "lora_B" in name:
            p.data[...] = np.random.default_rng(0).normal(size=p.shape) * 0.3
    ids = _ids(V + 3, [V, V + 2, 4])
    want = np.asarray(model(ids).numpy())
    save_adapter(model, tmp_path / "adapter")
    base = transformers.AutoModelForCausalLM.from_pretrained(folder)
    base.resize_token_embeddings(V + 3)
    loaded = peft.PeftModel.from_pretrained(base, tmp_path / "adapter").eval()
    with torch.no_grad():
        got = loaded(torch.tensor(ids)).logits.numpy()
    np.testing.assert_allclose(got, want, atol=1e-4 * np.abs(want).max())


def test_trainable_tokens_mistakes(tmp_path):
    make_checkpoint(tmp_path, "dense-gqa-tied")
    model = from_pretrained(tmp_path)
    with pytest.raises(ValueError, match="resize_token_embeddings"):
        apply_lora(from_pretrained(tmp_path), r=2, target_modules=["q_proj"],
                   trainable_token_indices=[model.config.vocab_size])
    with pytest.raises(ValueError, match="embed_tokens only"):
        apply_lora(model, r=2, target_modules=["q_proj"],
                   trainable_token_indices={"lm_head": [3]})


def test_adapter_carries_the_grown_tokenizer(tmp_path):
    """Tokens added: save_adapter writes the tokenizer beside the adapter (as a peft
    user saves it) and load_adapter takes it, so the loaded model encodes the new token as
    transformers' tokenizer with the same tokens added does."""
    from .ernie_reference import make_sentencepiece_checkpoint

    _, htok = make_sentencepiece_checkpoint(tmp_path / "base")
    model = from_pretrained(tmp_path / "base")
    new = {"additional_special_tokens": ["<|tool|>"]}
    model.tokenizer.add_special_tokens(new)
    htok.add_special_tokens(new)
    model.resize_token_embeddings(len(model.tokenizer))
    apply_lora(model, r=2, target_modules=["q_proj"],
               trainable_token_indices=[len(model.tokenizer) - 1])
    files = save_adapter(model, tmp_path / "adapter")
    assert "tokenizer_config.json" in files
    loaded = load_adapter(from_pretrained(tmp_path / "base"), tmp_path / "adapter")
    assert len(loaded.tokenizer) == loaded.config.vocab_size == len(htok)
    text = "Hello<|tool|> world"
    assert loaded.tokenizer(text)["input_ids"] == htok(text)["input_ids"]
