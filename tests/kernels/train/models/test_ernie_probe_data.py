"""Training files a transformers/TRL user brings, read as they mean them (round 25 probe):
``{"messages"}``, ``{"text"}`` and ``{"prompt", "completion"}`` JSONL rows, a .json list, a
CSV/TSV with prompt/response columns; a thinking template whose generation prompt opens
``<think>`` (ERNIE-4.5's and Qwen3's thinking models) learns the tokens transformers'
assistant mask marks; anything else is one error naming what the file has (before, a CSV or
an Alpaca .json was trained on as raw text, a missing file as the text of its name, a
.parquet as its bytes, and a thinking template could not train at all)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from skiff.kernels.train.models.chat import ChatDataset
from skiff.kernels.train.models.hf_checkpoint import read_training_rows, text_dataset

from .ernie_reference import make_checkpoint, transformers
from .test_chat import CHATS, GENERATION, THINKING, _tokenizer_pair

_OFF = ("{%- if enable_thinking is defined and not enable_thinking -%}"
        "{{- '<think>\\n\\n</think>\\n\\n' -}}{%- endif -%}")
_OPEN = ("{%- if enable_thinking is defined and not enable_thinking -%}"
         "{{- '<think>\\n\\n</think>\\n\\n' -}}{%- else -%}{{- '<think>\\n' -}}{%- endif -%}")
OPEN_THINKING = THINKING.replace(_OFF, _OPEN)      # the generation prompt opens <think>
OPEN_GENERATION = GENERATION.replace(_OFF, _OPEN)  # the same, assistant text tagged
assert OPEN_THINKING != THINKING and OPEN_GENERATION != GENERATION
ANSWERED = [CHATS[2], CHATS[0] + [{"role": "assistant", "content": "A skiff is a small boat."}]]


def _masks(ref, messages):
    out = ref.apply_chat_template(messages, tokenize=True, return_dict=True,
                                  return_assistant_tokens_mask=True)
    return np.array(out["input_ids"]), np.array(out["assistant_masks"], bool)


def test_thinking_generation_prompt_learns_what_transformers_marks(tmp_path):
    """The generation prompt ends ``Assistant: <think>\\n`` while the history shows
    ``Assistant: answer</s>``: the targets are the tokens transformers marks on the same
    template with generation tags (was: 'does not render a conversation as a prefix')."""
    (tmp_path / "tagged").mkdir()
    (tmp_path / "plain").mkdir()
    ref, _ = _tokenizer_pair(tmp_path / "tagged", OPEN_GENERATION)
    _, tok = _tokenizer_pair(tmp_path / "plain", OPEN_THINKING)
    assert tok.apply_chat_template(CHATS[0], add_generation_prompt=True).endswith("<think>\n")
    ds = ChatDataset([{"messages": c} for c in ANSWERED], tok, block_size=512)
    for i, messages in enumerate(ANSWERED):
        ids, mask = _masks(ref, messages)
        tokens, targets = ds[i]
        assert np.array_equal(tokens, ids[:-1])
        assert np.array_equal(targets, np.where(mask[1:], ids[1:], -100)), i
        assert (targets != -100).sum() > 0


def _write(path, rows):
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return str(path)


def test_prompt_completion_rows_and_csv_are_conversations(tmp_path):
    """``{"prompt", "completion"}`` JSONL rows, a .json list of them and a CSV with prompt and
    response columns give the targets transformers marks on the user/assistant conversation
    (a CSV was trained on as raw text, header and commas included)."""
    ref, tok = _tokenizer_pair(tmp_path, GENERATION)
    pairs = [("What is a skiff?", "A skiff is a small boat."), ("What is 2 + 2?", "Four.")]
    folder = tmp_path / "ck"
    make_checkpoint(folder, "dense-gqa-tied")
    ref.save_pretrained(folder)  # the tokenizer files and the template beside the weights
    from skiff.kernels.train.models import from_pretrained

    model = from_pretrained(folder)
    jsonl = _write(tmp_path / "pc.jsonl", [{"prompt": p, "completion": c} for p, c in pairs])
    (tmp_path / "pc.json").write_text(json.dumps([{"prompt": p, "response": c}
                                                  for p, c in pairs]))
    (tmp_path / "pr.csv").write_text("prompt,response\n" + "".join(
        f'"{p}","{c}"\n' for p, c in pairs))
    (tmp_path / "pr.tsv").write_text("Prompt\tCompletion\n" + "".join(
        f"{p}\t{c}\n" for p, c in pairs))
    for data in (jsonl, tmp_path / "pc.json", tmp_path / "pr.csv", tmp_path / "pr.tsv"):
        ds = text_dataset(model, str(data), block_size=512)
        assert isinstance(ds, ChatDataset) and len(ds) == len(pairs), data
        for i, (p, c) in enumerate(pairs):
            ids, mask = _masks(ref, [{"role": "user", "content": p},
                                     {"role": "assistant", "content": c}])
            tokens, targets = ds[i]
            assert np.array_equal(tokens, ids[:-1]), data
            assert np.array_equal(targets, np.where(mask[1:], ids[1:], -100)), data


def test_pairs_without_a_template_and_text_rows(tmp_path):
    """Without a chat template a prompt/completion pair is the text ``prompt +
    completion`` encoded whole and eos, the loss on the tokens after the prompt's (TRL's
    prompt-completion rule; round 48 h5: the two were encoded apart);
    ``{"text"}`` rows are documents each followed by eos, cut in blocks."""
    from tokenizers import Tokenizer

    from skiff.kernels.train.models.hf_checkpoint import load_tokenizer

    from .ernie_reference import add_tokenizer

    add_tokenizer(tmp_path, "a skiff is a small boat. what is it? " * 20, vocab_size=60)
    ref = transformers.PreTrainedTokenizerFast(
        tokenizer_object=Tokenizer.from_file(str(tmp_path / "tokenizer.json")),
        bos_token="<s>", eos_token="</s>", unk_token="<unk>", pad_token="<pad>")
    ref.save_pretrained(tmp_path)
    tok = load_tokenizer(tmp_path)
    assert tok.chat_template is None
    eos = ref.eos_token_id
    ds = ChatDataset([{"prompt": "what is it?", "completion": "a small boat."}], tok, 64)
    p = ref.encode("what is it?", add_special_tokens=False)
    whole = ref.encode("what is it?" + "a small boat.", add_special_tokens=False)
    assert whole[:len(p)] == p  # premise: the completion follows the prompt's tokens
    ids = np.array(whole + [eos])
    tokens, targets = ds[0]
    assert np.array_equal(tokens, ids[:-1])
    want = np.where(np.arange(1, len(ids)) >= len(p), ids[1:], -100)
    assert np.array_equal(targets, want)

    class Model:  # what text_dataset reads of a model
        tokenizer = tok
        config = type("C", (), {"vocab_size": 60})()

    texts = ["a skiff is a small boat.", "what is it? a boat."] * 3
    path = _write(tmp_path / "text.jsonl", [{"text": t} for t in texts])
    blocks = text_dataset(Model(), path, block_size=8)
    stream = np.concatenate([ref.encode(t, add_special_tokens=False) + [eos] for t in texts])
    n = (len(stream) - 1) // 8
    assert len(blocks) == n
    x, y = blocks[0]
    assert np.array_equal(np.asarray(x), stream[:8]) and np.array_equal(np.asarray(y),
                                                                          stream[1:9])


@pytest.mark.parametrize("name,content,match", [
    # Alpaca rows are read since round 34 (h6); one without its "output" is not
    ("alpaca.json", json.dumps([{"instruction": "add", "input": "2+2", "answer": "4"}]),
     "row 1 has keys instruction, input, answer; skiff trains on"),
    ("qa.jsonl", '{"q": "x", "a": "y"}\n', "line 1 has keys q, a"),
    ("mixed.jsonl", '{"text": "x"}\n{"prompt": "p", "completion": "c"}\n',
     "line 1 is text but line 2 is a conversation"),
    ("list.jsonl", '["a", "b"]\n', "line 1 has a list"),
    ("cols.csv", "question_id,label\n1,2\n", "columns question_id, label; a table to "
     "fine-tune on has prompt and response"),
    ("data.parquet", "PAR1", "does not read .parquet files"),
    ("bytes.txt", b"\x00\x01\xff\xfe", "is not UTF-8 text"),
    ("empty.txt", "  \n", "is empty"),
    ("none.json", "[]", "has no rows"),
    ("obj.json", '{"a": 1}', "a .json training file is a list of rows"),
])
def test_unknown_formats_are_one_clear_error(tmp_path, name, content, match):
    path = tmp_path / name
    (path.write_bytes if isinstance(content, bytes) else path.write_text)(content)
    with pytest.raises(ValueError, match=match) as err:
        read_training_rows(str(path))
    assert "\n" not in str(err.value)


def test_missing_paths_and_folders(tmp_path):
    with pytest.raises(FileNotFoundError, match="no data file at"):
        read_training_rows(str(tmp_path / "typo.csv"))
    with pytest.raises(FileNotFoundError, match="no data file at"):
        read_training_rows("typo.jsonl")  # was: trained on the text 'typo.jsonl'
    with pytest.raises(ValueError, match="is a folder"):
        read_training_rows(str(tmp_path))
    assert read_training_rows("sonnets")[0] == "plain"  # a shipped corpus still reads


def test_cut_and_dropped_conversations_are_counted(tmp_path):
    _, tok = _tokenizer_pair(tmp_path, THINKING)
    long = [{"role": "user", "content": "What is 2 + 2? " * 30},
            {"role": "assistant", "content": "Four."}]
    short = [{"role": "user", "content": "What is 2 + 2?"},
             {"role": "assistant", "content": "Four. " * 20}]
    ds = ChatDataset([{"messages": long}, {"messages": short}], tok, block_size=32)
    assert (ds.cut, ds.dropped, len(ds)) == (2, 1, 1)
    assert "2 cut to block_size 32, 1 left out" in repr(ds)
