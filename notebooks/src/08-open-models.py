"""Source of notebooks/08-open-models.ipynb (build with: python notebooks/build.py 08-open-models)."""

# %% [markdown]
# # Open models: ERNIE-4.5 in its own checkpoint format, fine-tuned and asked from a cell
#
# Baidu's ERNIE-4.5 family (dense 0.3B, mixture-of-experts 21B-A3B and 300B-A47B, and a
# "thinking" 21B-A3B) is published as Hugging Face checkpoint folders: `config.json`,
# safetensors weights, a SentencePiece `tokenizer.model` and a chat template. skiff reads and
# writes that layout itself, runs the model in its own autograd (equal to the transformers
# implementation, logit for logit), fine-tunes it with `%train` (LoRA or all weights) and
# answers prompts with `%chat`.
#
# So that it runs anywhere with no download (its tests run without a network), this notebook
# first **makes its own small checkpoint in the ERNIE layout**: it trains a SentencePiece
# tokenizer and a 2-layer ERNIE on a little text about capital cities, and saves both. Then it treats that folder exactly as it would
# treat `baidu/ERNIE-4.5-0.3B-PT`: load, ask, fine-tune on a small instruction set, compare
# before and after. The last section says how to point the same cells at the real
# checkpoints and what hardware each needs. `SKIFF_QUICK=1` (what the tests set) makes every
# step short.

# %%
import json
import os
import tempfile
from pathlib import Path

import numpy as np

import skiff
from skiff.models import ErnieConfig, ErnieForCausalLM, from_pretrained, save_pretrained

QUICK = os.environ.get("SKIFF_QUICK") == "1"
PRETRAIN_STEPS = 100 if QUICK else 1500
FINETUNE_STEPS = 60 if QUICK else 300
WORK = Path(tempfile.mkdtemp(prefix="skiff-open-models-"))
print("quick mode" if QUICK else "full mode", f"- working in {WORK}")

# %% [markdown]
# ## A little world to learn
#
# Forty countries and their capitals. The "pre-training" text states the facts in plain
# sentences; the instruction set asks about them as a chat. Thirty countries are for
# fine-tuning; the last ten are held out, to see whether what fine-tuning teaches (the
# question-and-answer form) carries over to questions it never saw.

# %%
CAPITALS = {
    "France": "Paris", "Spain": "Madrid", "Italy": "Rome", "Germany": "Berlin",
    "Portugal": "Lisbon", "Austria": "Vienna", "Poland": "Warsaw", "Greece": "Athens",
    "Ireland": "Dublin", "Norway": "Oslo", "Sweden": "Stockholm", "Finland": "Helsinki",
    "Denmark": "Copenhagen", "Egypt": "Cairo", "Kenya": "Nairobi", "Peru": "Lima",
    "Chile": "Santiago", "Japan": "Tokyo", "China": "Beijing", "India": "Delhi",
    "Canada": "Ottawa", "Mexico": "Mexico City", "Cuba": "Havana", "Iran": "Tehran",
    "Iraq": "Baghdad", "Russia": "Moscow", "Turkey": "Ankara", "Ghana": "Accra",
    "Nepal": "Kathmandu", "Vietnam": "Hanoi", "Belgium": "Brussels", "Hungary": "Budapest",
    "Romania": "Bucharest", "Serbia": "Belgrade", "Mali": "Bamako", "Chad": "Ndjamena",
    "Laos": "Vientiane", "Qatar": "Doha", "Oman": "Muscat", "Fiji": "Suva",
}
countries = list(CAPITALS)
train_countries, held_countries = countries[:30], countries[30:]

rng = np.random.default_rng(0)
forms = ["{c} is the capital of {k}.", "The capital of {k} is {c}.",
         "{k} has its capital in {c}.", "In {k}, the capital city is {c}."]
sentences = [forms[rng.integers(len(forms))].format(k=k, c=CAPITALS[k])
             for _ in range(20) for k in countries]
corpus = " ".join(sentences)


def conversation(country):
    return {"messages": [{"role": "user", "content": f"What is the capital of {country}?"},
                         {"role": "assistant",
                          "content": f"The capital of {country} is {CAPITALS[country]}."}]}


train_rows = [conversation(k) for k in train_countries]
held_rows = [conversation(k) for k in held_countries]
with open(WORK / "capitals.jsonl", "w") as fh:
    for row in train_rows:
        fh.write(json.dumps(row) + "\n")
with open(WORK / "heldout.jsonl", "w") as fh:  # scored during training (--eval)
    for row in held_rows:
        fh.write(json.dumps(row) + "\n")
print(len(sentences), "sentences;", sentences[:2])
print(len(train_rows), "instructions, e.g.", train_rows[0])

# %% [markdown]
# ## A checkpoint in the ERNIE layout, made here
#
# The tokenizer is SentencePiece, as in the published folders (`tokenizer.model`), with
# `tokenizer_config.json` naming the special tokens and holding the chat template. ERNIE's
# own template writes `User: ...` and `Assistant: ...` turns; ours is a shortened one.

# %%
import io

import sentencepiece as spm

CKPT = WORK / "tiny-ernie"
CKPT.mkdir()
buf = io.BytesIO()
spm.SentencePieceTrainer.train(
    sentence_iterator=iter(sentences + [r["messages"][0]["content"] for r in train_rows]),
    model_writer=buf, vocab_size=480, model_type="bpe", character_coverage=1.0,
    pad_id=0, unk_id=1, bos_id=-1, eos_id=2, pad_piece="<pad>", unk_piece="<unk>",
    eos_piece="</s>", user_defined_symbols=["<think>", "</think>"], byte_fallback=True,
    normalization_rule_name="identity", remove_extra_whitespaces=False, num_threads=1,
    minloglevel=2, hard_vocab_limit=False)
(CKPT / "tokenizer.model").write_bytes(buf.getvalue())
TEMPLATE = ("{%- for m in messages %}"
            "{%- if m['role'] == 'user' %}User: {{ m['content'] }}\n"
            "{%- elif m['role'] == 'assistant' %}Assistant: {{ m['content'] }}{{ eos_token }}\n"
            "{%- else %}{{ m['content'] }}\n{%- endif %}{%- endfor %}"
            "{%- if add_generation_prompt %}Assistant:{%- endif %}")
(CKPT / "tokenizer_config.json").write_text(json.dumps({
    "tokenizer_class": "LlamaTokenizer", "eos_token": "</s>", "pad_token": "<pad>",
    "unk_token": "<unk>", "add_bos_token": False, "add_eos_token": False, "legacy": True,
    "chat_template": TEMPLATE}))
sp = spm.SentencePieceProcessor(model_proto=buf.getvalue())
print("vocabulary:", sp.get_piece_size(), "pieces, e.g.", sp.encode("The capital of Peru", out_type=str))

# %% [markdown]
# The model: an ERNIE-4.5 of two layers (grouped-query attention, the interleaved rotary
# embedding, RMSNorm, SwiGLU, tied embeddings: the 0.3B's architecture, shrunk). skiff trains
# it on the sentences with its own `Trainer`, then `save_pretrained` writes the folder that
# transformers would load too.

# %%
skiff.seed(0)
config = ErnieConfig(vocab_size=sp.get_piece_size(), hidden_size=96, intermediate_size=256,
                     num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                     head_dim=24, max_position_embeddings=512, pad_token_id=0,
                     bos_token_id=None, eos_token_id=2)
base = ErnieForCausalLM(config)
tok = skiff.models.load_tokenizer(CKPT)
from skiff.kernels.train.models.hf_checkpoint import token_blocks  # noqa: E402

blocks = token_blocks(tok.encode(corpus), 48)
result = skiff.Trainer(base, lr=3e-3, batch_size=8 if QUICK else 16).train(
    blocks, steps=PRETRAIN_STEPS)
print(f"pre-trained {PRETRAIN_STEPS} steps: loss {result.history[0]['loss']:.2f} -> "
      f"{result.final_loss:.2f}")
save_pretrained(base, CKPT)
print(sorted(p.name for p in CKPT.iterdir()))

# %% [markdown]
# ## Load it as any ERNIE-4.5 checkpoint, and ask
#
# `from_pretrained` reads `config.json`, the safetensors weights (memory-mapped, tensor by
# tensor) and the tokenizer. `%chat DIR "prompt"` renders the prompt with the checkpoint's
# chat template and shows the answer while it is written; a thinking model's
# `<think>...</think>` part appears collapsed above the answer and comes back apart
# (`job.result["thinking"]`). The model has read the facts, but never a question: its answers
# do not have the form we want yet.

# %%
%load_ext skiff

model = from_pretrained(CKPT)
print(model)
before = {k: skiff.models.reply(model, f"What is the capital of {k}?", max_new_tokens=16).text
          for k in held_countries[:4]}
before

# %%
%chat $CKPT "What is the capital of Japan?" --max-new-tokens 16 --wait -o asked

# %% [markdown]
# ## Fine-tune on the instruction set: `%train ernie --from DIR --lora-r R`
#
# The data is a JSONL of conversations (`{"messages": [...]}`): each is rendered with the
# chat template and the loss counts the assistant's tokens only; conversations are packed
# into one variable-length batch (no padding). `--lora-r 8` trains low-rank adapters on the
# attention and MLP projections (the base weights stay frozen); the job writes the adapter in
# peft's layout (`hf-adapter`) and the merged model (`hf-model`) into its run folder.
# `--eval FILE --eval-every N` scores the held-out conversations while it trains: their loss
# and perplexity are metrics of the job (drawn beside the training loss in its widget), and
# the job's view ends with the table of them, a column per evaluation.

# %%
EVAL_EVERY = max(1, FINETUNE_STEPS // 4)
%train ernie --data $WORK/capitals.jsonl --from $CKPT --lora-r 8 --lora-targets q_proj,k_proj,v_proj,o_proj,gate_proj,up_proj,down_proj --steps $FINETUNE_STEPS --batch-size 8 --lr 5e-3 --eval $WORK/heldout.jsonl --eval-every $EVAL_EVERY --wait -o tuned
print("held-out loss during training:",
      [(row["step"], round(row["eval_loss"], 3)) for row in tuned.result["evaluation"]])
tuned  # the job's view: the two losses drawn, the table of the evaluations below them

# %% [markdown]
# ## Before and after
#
# The evaluation functions score the way the common harnesses do: the loss of the assistant's
# tokens on the ten held-out conversations (`chat_loss`), exact match of greedy answers, and
# multiple choice by the log-likelihood of each option (here the right capital against
# another held-out country's, in the same sentence; 0.5 is a coin's score).

# %%
from skiff.kernels.train.models.evaluate import (  # noqa: E402
    EvalTable,
    chat_loss,
    exact_match,
    multiple_choice,
)

finetuned = tuned.value.model
qa = [{"prompt": tok.apply_chat_template(r["messages"][:1], add_generation_prompt=True),
       "answer": " " + r["messages"][1]["content"]} for r in held_rows]
# multiple choice between the right capital and another held-out country's: a test of the
# fact, not of the answer's form (both options are whole sentences)
choices = [{"prompt": q["prompt"], "answer": 0,
            "choices": [f" The capital of {k} is {CAPITALS[k]}.",
                        f" The capital of {k} is {CAPITALS[held_countries[i - 1]]}."]}
           for i, (q, k) in enumerate(zip(qa, held_countries))]


def scores(m):
    held = chat_loss(m, held_rows)
    return {"held-out loss": held["loss"], "held-out perplexity": held["perplexity"],
            "exact match": exact_match(m, qa, max_new_tokens=16)["exact_match"],
            "multiple choice": multiple_choice(m, choices)["accuracy"]}


table = EvalTable({"before": scores(model), "after LoRA": scores(finetuned)})
print("held-out loss lowered:",
      table.value("after LoRA", "held-out loss") < table.value("before", "held-out loss"))
table

# %%
after = {k: skiff.models.reply(finetuned, f"What is the capital of {k}?", max_new_tokens=16).text
         for k in held_countries[:4]}
for k in after:
    print(f"{k:8s} before: {before[k]!r}\n{'':8s} after:  {after[k]!r}")

# %% [markdown]
# What fine-tuning taught is the form, not the facts. The answers now take the instruction
# set's shape, one sentence "The capital of X is Y." (quick mode: 4 of the 4
# above), and the held-out loss fell (full mode: 3.56 to 1.47, perplexity 35
# to 4.4, nearly all of it in the first quarter of the steps). But greedy answers to held-out
# questions name a country of the fine-tuning set (full mode: "The capital of Germany is
# Berlin." asked about Belgium, Hungary and Serbia), so exact match stays at or near 0 (0 in
# full mode; the quick run's table
# can show one lucky answer in ten). The pre-training left the facts in the model only
# weakly: between the right capital and a wrong one, scored by likelihood, it picks the right
# one 6 times in 10 before and 8 after (full mode; a coin scores 5). Fine-tuning on questions
# can only surface what the pre-trained weights hold, and this two-layer model, 96 wide,
# holds its forty facts loosely; a published checkpoint has read far more.

# %% [markdown]
# The fine-tuned model, merged, is a checkpoint folder again; `%chat` and transformers both
# read it (`transformers.AutoModelForCausalLM.from_pretrained(folder)` gives the same logits).

# %%
merged = tuned.run_dir / "hf-model"
print(sorted(p.name for p in merged.iterdir()))
%chat $merged "What is the capital of Belgium?" --max-new-tokens 16 --wait

# %% [markdown]
# ## The same cells on the real checkpoints
#
# Download a published folder (for example with `hf download baidu/ERNIE-4.5-0.3B-PT
# --local-dir ERNIE-4.5-0.3B-PT`, huggingface_hub's command; older versions called it
# `huggingface-cli download`; the `-PT` folders are the
# transformers layout, with `tokenizer.model`), then set `CKPT` to it and run the cells from
# "Load it" on:
#
# ```python
# CKPT = Path("ERNIE-4.5-0.3B-PT")            # or ERNIE-4.5-21B-A3B-PT, -Thinking, 300B-A47B-PT
# model = from_pretrained(CKPT)               # float32 on the CPU; dtype="bfloat16" halves it
# %chat $CKPT "What is the capital of France?"
# %train ernie --data my-chats.jsonl --from $CKPT --lora-r 8 --steps 200
# ```
#
# What each needs, from skiff's planner (`%plan NAME --devices N --device-memory SIZE`), for
# full training with AdamW in bf16 (weights, gradients, optimizer state and activations of
# 4096-token sequences). Inference needs far less: about 2 bytes per parameter in bf16, so the
# 0.3B answers on a laptop CPU, the 21B-A3B (43 GB) on one 80 GB or 141 GB GPU, the 300B-A47B
# (600 GB) on 8 such GPUs; LoRA needs the weights plus little more.

# %%
%plan ernie-4.5-0.3b --devices 1 --device-memory 24GB

# %%
%plan ernie-4.5-21b-a3b --devices 8 --device-memory 80GB

# %%
%plan ernie-4.5-300b-a47b --devices 128 --device-memory 80GB --nodes 16
