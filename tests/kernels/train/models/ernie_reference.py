"""Tiny random ERNIE-4.5 checkpoints written by transformers itself (the oracle).

``make_checkpoint(tmp_path, shape)`` builds the reference model of one of the ``SHAPES``,
fills its weights with values large enough that routing and greedy choices are not near
ties, and saves it with ``save_pretrained`` (safetensors). Returns ``(folder, torch_model)``.
"""

from __future__ import annotations

import io
import json

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

_DENSE = dict(vocab_size=96, hidden_size=32, intermediate_size=48, num_hidden_layers=2,
              num_attention_heads=4, num_key_value_heads=2, head_dim=8)
_MOE = dict(vocab_size=80, hidden_size=32, intermediate_size=48, num_hidden_layers=3,
            num_attention_heads=4, num_key_value_heads=2, head_dim=8,
            moe_intermediate_size=16, moe_k=2, moe_num_experts=4)

# name -> (architecture, config keyword arguments)
SHAPES = {
    # grouped-query attention (2 query heads per k/v head), tied embeddings
    "dense-gqa-tied": ("dense", dict(_DENSE, tie_word_embeddings=True)),
    # plain multi-head attention, untied head, biases everywhere, a wider head_dim
    "dense-mha-untied-bias": ("dense", dict(_DENSE, num_key_value_heads=4, head_dim=16,
                                            tie_word_embeddings=False, use_bias=True)),
    # a dense first layer, then MoE layers with one shared expert
    "moe-shared": ("moe", dict(_MOE, moe_num_shared_experts=1, moe_layer_start_index=1)),
    # MoE every second layer, no shared expert, top-3 of 6, untied
    "moe-interval": ("moe", dict(_MOE, num_hidden_layers=4, moe_num_experts=6, moe_k=3,
                                 moe_num_shared_experts=0, moe_layer_start_index=0,
                                 moe_layer_interval=2, tie_word_embeddings=False)),
}


def build_reference(shape: str, seed: int = 0):
    """The transformers model of ``shape`` with seeded weights (float32, eval mode)."""
    kind, kw = SHAPES[shape]
    if kind == "dense":
        cfg = transformers.Ernie4_5Config(**kw)
        model = transformers.Ernie4_5ForCausalLM(cfg)
    else:
        cfg = transformers.Ernie4_5_MoeConfig(**kw)
        model = transformers.Ernie4_5_MoeForCausalLM(cfg)
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "e_score_correction_bias" in name:
                p.copy_(torch.rand(p.shape, generator=gen) * 0.2 - 0.1)
            elif p.ndim == 1:  # norm scales (and biases)
                p.copy_(torch.rand(p.shape, generator=gen) + 0.5)
            else:
                p.copy_(torch.randn(p.shape, generator=gen) * 0.3)
    return model.eval()


def make_checkpoint(folder, shape: str, seed: int = 0):
    model = build_reference(shape, seed)
    model.save_pretrained(folder)
    return folder, model


def add_tokenizer(folder, text: str, vocab_size: int) -> None:
    """A small BPE ``tokenizer.json`` trained on ``text`` (at most ``vocab_size`` ids)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Metaspace()
    tok.decoder = decoders.Metaspace()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=["<pad>", "<s>", "</s>",
                                                                        "<unk>"])
    tok.train_from_iterator([text], trainer)
    assert tok.get_vocab_size() <= vocab_size
    tok.save(str(folder / "tokenizer.json"))


LINES = ["The quick brown fox jumps over the lazy dog.", "Hello world, hello skiff!",
         "ERNIE models answer questions.", "What is two plus two?\nFour.",
         "你好，世界。模型回答问题。", "A small corpus with several lines of text."] * 4
TEMPLATE = ("{%- for m in messages %}{{ '<|im_start|>' + m['role'] + '\n' + m['content'] }}"
            "<|end_of_sentence|>{{ '\n' }}{%- endfor %}"
            "{%- if add_generation_prompt %}<|im_start|>assistant\n<think>\n{%- endif %}")


def write_sentencepiece(folder, *, model_type="bpe", legacy=True, vocab_size=400,
                        chat_template=TEMPLATE) -> None:
    """A tiny SentencePiece ``tokenizer.model`` trained here, with thinking tags as
    user-defined pieces and ERNIE-like control tokens, and its ``tokenizer_config.json``."""
    spm = pytest.importorskip("sentencepiece")
    buf = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(LINES), model_writer=buf, vocab_size=vocab_size,
        model_type=model_type, character_coverage=1.0, pad_id=0, unk_id=1, bos_id=2, eos_id=3,
        user_defined_symbols=["<think>", "</think>"],
        control_symbols=["<|end_of_sentence|>", "<|im_start|>"], byte_fallback=True,
        normalization_rule_name="identity", remove_extra_whitespaces=False, num_threads=1,
        minloglevel=2, hard_vocab_limit=False)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "tokenizer.model").write_bytes(buf.getvalue())
    sp = spm.SentencePieceProcessor(model_proto=buf.getvalue())
    added = {str(sp.piece_to_id(t)): {"content": t, "special": True, "normalized": False,
                                      "lstrip": False, "rstrip": False, "single_word": False}
             for t in ("<pad>", "<unk>", "<s>", "</s>", "<|end_of_sentence|>", "<|im_start|>")}
    (folder / "tokenizer_config.json").write_text(json.dumps({
        "tokenizer_class": "LlamaTokenizer", "bos_token": "<s>", "eos_token": "</s>",
        "unk_token": "<unk>", "pad_token": "<pad>", "sep_token": "<|end_of_sentence|>",
        "add_bos_token": False, "add_eos_token": False, "legacy": legacy,
        "added_tokens_decoder": added, "chat_template": chat_template}))
    (folder / "config.json").write_text(json.dumps({"model_type": "ernie4_5",
                                                    "architectures": ["Ernie4_5ForCausalLM"]}))


def make_sentencepiece_checkpoint(folder, seed: int = 4, chat_template=TEMPLATE):
    """A dense checkpoint (the ``dense-gqa-tied`` shape) whose vocabulary is a SentencePiece
    ``tokenizer.model`` trained here; returns ``(transformers model, its tokenizer)``."""
    write_sentencepiece(folder, chat_template=chat_template)
    tok = transformers.AutoTokenizer.from_pretrained(folder)
    cfg = transformers.Ernie4_5Config(**dict(SHAPES["dense-gqa-tied"][1], vocab_size=len(tok)))
    ref = transformers.Ernie4_5ForCausalLM(cfg)
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in ref.parameters():
            p.copy_(torch.rand(p.shape, generator=gen) + 0.5 if p.ndim == 1
                    else torch.randn(p.shape, generator=gen) * 0.3)
    ref.eval().save_pretrained(folder)
    return ref, tok


@pytest.fixture(scope="module", params=list(SHAPES))
def shape_pair(request, tmp_path_factory):
    """``(shape name, transformers model, skiff model)`` for each of the ``SHAPES``."""
    from skiff.kernels.train.models import from_pretrained

    folder = tmp_path_factory.mktemp(request.param)
    _, ref = make_checkpoint(folder, request.param)
    return request.param, ref, from_pretrained(folder)


def random_ids(vocab, shape, seed=1):
    import numpy as np

    return np.random.default_rng(seed).integers(3, vocab, shape)


def saved_adapter(folder, out, targets, r, seed, moved=("lora_B",), **kw):
    """A LoRA adapter on the checkpoint in ``folder`` (rank ``r``, alpha 2r, on
    ``targets``) with its B matrices (the parameters named with any of ``moved``: a DoRA
    adapter's ``lora_magnitude_vector`` too) moved off their init by a seeded draw, saved in
    peft's layout to ``out`` (returned): adapters whose outputs differ, for peft to load
    beside skiff."""
    import numpy as np

    import skiff
    from skiff.kernels.train.models import from_pretrained

    m = from_pretrained(folder)
    skiff.models.apply_lora(m, r=r, alpha=2 * r, target_modules=targets, **kw)
    rng = np.random.default_rng(seed)
    for n, p in m.named_parameters():
        if any(k in n for k in moved):
            p._data = p._data + rng.normal(0, 0.3, p.shape).astype(np.float32)
    skiff.models.save_adapter(m, out)
    return out


def peft_pair(folder, paths):
    """peft's model and skiff's of the checkpoint in ``folder``, each with the adapters of
    ``paths`` (``{"default": dir, name: dir, ...}``) loaded under their names; ``default``
    active in both."""
    import peft

    from skiff.kernels.train.models import from_pretrained

    base = transformers.AutoModelForCausalLM.from_pretrained(folder).eval()
    pm = peft.PeftModel.from_pretrained(base, paths["default"]).eval()
    model = from_pretrained(folder)
    model.load_adapter(paths["default"])
    for name, path in paths.items():
        if name != "default":
            pm.load_adapter(path, adapter_name=name)
            model.load_adapter(path, adapter_name=name)
    return pm, model
