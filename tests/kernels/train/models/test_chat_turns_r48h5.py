"""Open models as a user, round 48 (h5): a multi-turn chat fine-tune with a Qwen3-style
thinking template (an assistant turn's thinking shown only after the last user message).

Such a template renders an earlier turn without its thinking once the conversation goes on,
so the conversation is not a prefix of its continuation: skiff refused the row ("does not
render a conversation as a prefix of its continuation"). Now each assistant turn is one
training sequence, the conversation through it as the model reads it when writing that turn
(its thinking shown), the loss on that turn alone: TRL's conversational prompt/completion
of ``{"prompt": messages[:i], "completion": [messages[i]]}``. Oracle: transformers'
``apply_chat_template`` of the prompt (``add_generation_prompt=True``) and of the prompt +
completion, the tokens after the prompt learned, and transformers' mean cross-entropy over
them."""

from __future__ import annotations

import pytest

from .ernie_reference import make_sentencepiece_checkpoint, torch

QWEN3_LIKE = (
    "{%- set ns = namespace(found=false, last=messages|length - 1) -%}"
    "{%- for m in messages[::-1] -%}{%- if m.role == 'user' and not ns.found -%}"
    "{%- set ns.found = true -%}{%- set ns.last = (messages|length - 1) - loop.index0 -%}"
    "{%- endif -%}{%- endfor -%}"
    "{%- for m in messages -%}"
    "{%- if m.role == 'assistant' and loop.index0 > ns.last -%}"
    "{{ '<|im_start|>assistant\n<think>\n' + (m.reasoning_content or '') + '\n</think>\n\n'"
    " + m.content + '<|end_of_sentence|>\n' }}"
    "{%- else -%}{{ '<|im_start|>' + m.role + '\n' + m.content + '<|end_of_sentence|>\n' }}"
    "{%- endif -%}{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{ '<|im_start|>assistant\n' }}{%- endif -%}")

ASK = [{"role": "user", "content": "What is two plus two?"},
       {"role": "assistant", "content": "Four.", "reasoning_content": "two and two"},
       {"role": "user", "content": "Hello world"},
       {"role": "assistant", "content": "Hello skiff!", "reasoning_content": "a greeting"}]
ROWS = [{"messages": ASK},  # two turns: two sequences
        {"messages": ASK[2:]},  # one turn: renders whole, as before
        {"prompt": ASK[:3], "completion": ASK[3:]}]  # TRL's: the prompt's turn not learned


def _theirs(tok, messages, i):
    """transformers' sequence of assistant turn ``i`` and its labels (-100 on the prompt)."""
    prompt = tok.apply_chat_template(messages[:i], add_generation_prompt=True, tokenize=True,
                                     return_dict=False)
    ids = tok.apply_chat_template(messages[:i + 1], tokenize=True, return_dict=False)
    assert ids[:len(prompt)] == prompt  # premise: the turn follows its prompt's tokens
    return ids, [-100] * len(prompt) + ids[len(prompt):]


def test_each_turn_after_its_history_as_transformers_renders_it(tmp_path):
    from skiff.kernels.train.models import from_pretrained
    from skiff.kernels.train.models.chat import ChatDataset
    from skiff.kernels.train.models.hf_checkpoint import load_tokenizer

    folder = tmp_path / "ckpt"
    ref, tok = make_sentencepiece_checkpoint(folder, seed=6, chat_template=QWEN3_LIKE)
    full = tok.apply_chat_template(ASK, tokenize=False)
    assert "two and two" not in full and "a greeting" in full  # premise: thinking dropped
    data = ChatDataset(ROWS, load_tokenizer(folder), block_size=256)
    want = [_theirs(tok, ASK, 1), _theirs(tok, ASK, 3), _theirs(tok, ASK[2:], 1),
            _theirs(tok, ASK, 3)]
    got = [(list(map(int, x)), list(map(int, y))) for x, y in data.items]
    assert got == [(ids[:-1], labels[1:]) for ids, labels in want]
    assert "2 conversations trained one assistant turn at a time (rows 1, 3)" in data.read_note

    # the loss a step trains on: transformers' mean cross-entropy over the learned tokens
    nll = count = 0
    with torch.no_grad():
        for ids, labels in want:
            out = ref(torch.tensor([ids]), labels=torch.tensor([labels]))
            n = sum(v != -100 for v in labels[1:])
            nll, count = nll + out.loss.item() * n, count + n
    mine = from_pretrained(folder).loss(data.collate(data.items)).item()
    # float32 logits and sums over 89 tokens of loss ~7: 1.2e-8 relative seen here
    assert mine == pytest.approx(nll / count, rel=1e-5)


PAIRS = [("What is two plus two?\n", "Four."), ("Q: hello\nA:", " Hello world"),
         ("The quick brown", " fox jumps")]


def test_a_prompt_completion_pair_is_encoded_as_one_text(tmp_path):
    """``{"prompt", "completion"}`` rows of a checkpoint without a chat template: the ids of
    ``prompt + completion`` then the eos, as transformers' tokenizer encodes the text (TRL's
    prompt/completion rows; what ``generate`` continues the prompt's ids with), the tokens
    after the prompt's learned. Encoded apart, SentencePiece's dummy prefix put a ``▁``
    before each completion (``'?\\n', '▁', 'Four'`` where the text reads ``'?\\n', 'Four'``)."""
    from skiff.kernels.train.models.chat import ChatDataset
    from skiff.kernels.train.models.hf_checkpoint import load_tokenizer

    from .ernie_reference import transformers, write_sentencepiece

    write_sentencepiece(tmp_path, chat_template=None)
    tok = transformers.AutoTokenizer.from_pretrained(tmp_path)
    want = []
    for prompt, completion in PAIRS:
        ids = tok(prompt + completion + tok.eos_token, add_special_tokens=False).input_ids
        head = tok(prompt, add_special_tokens=False).input_ids
        assert ids[:len(head)] == head  # premise: the completion follows the prompt's tokens
        want.append((ids[:-1], ([-100] * len(head) + ids[len(head):])[1:]))
    data = ChatDataset([{"prompt": p, "completion": c} for p, c in PAIRS],
                       load_tokenizer(tmp_path), block_size=64)
    assert [(list(map(int, x)), list(map(int, y))) for x, y in data.items] == want
