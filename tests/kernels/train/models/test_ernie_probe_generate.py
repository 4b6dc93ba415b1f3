"""What a transformers user types, against transformers (round 25 probe): a tokenizer's
padded batch (``model(**enc)``, ``model.generate(**enc)``, left and right padding) gives
transformers' logits and greedy tokens, laid out as transformers lays them out; a thinking
template's answer cut at ``max_new_tokens`` is thinking, not answer, and ERNIE's
``<response>`` wrapper is taken off; ``dtype="auto"`` / ``torch.bfloat16`` as transformers
reads them; bad dtypes and folders one line each."""

from __future__ import annotations

import numpy as np
import pytest

from skiff.kernels.train.models import from_pretrained
from skiff.kernels.train.models.chat import opens_thinking, split_thinking

from .ernie_reference import LINES, add_tokenizer, make_checkpoint, torch, transformers

PROMPTS = ["Hello world", "The quick brown fox jumps over", "ERNIE", "What is two plus two?"]


@pytest.fixture(scope="module", params=["dense-gqa-tied", "moe-shared"])
def padded(request, tmp_path_factory):
    folder = tmp_path_factory.mktemp(request.param)
    _, ref = make_checkpoint(folder, request.param)
    add_tokenizer(folder, "\n".join(LINES), ref.config.vocab_size)
    from tokenizers import Tokenizer

    tok = transformers.PreTrainedTokenizerFast(
        tokenizer_object=Tokenizer.from_file(str(folder / "tokenizer.json")),
        bos_token="<s>", eos_token="</s>", unk_token="<unk>", pad_token="<pad>")
    return ref, tok, from_pretrained(folder)


@pytest.mark.parametrize("side", ["left", "right"])
def test_padded_forward_equals_transformers(padded, side):
    ref, tok, model = padded
    tok.padding_side = side
    enc = tok(PROMPTS, return_tensors="np", padding=True)
    assert (enc["attention_mask"] == 0).any()
    got = np.asarray(model(**enc).data)
    with torch.no_grad():
        want = ref(**tok(PROMPTS, return_tensors="pt", padding=True)).logits.numpy()
    real = enc["attention_mask"].astype(bool)
    scale = np.abs(want[real]).max()
    assert np.abs(got[real] - want[real]).max() < 1e-4 * scale
    assert not got[~real].any()  # padded positions: 0


def test_padded_generate_equals_transformers_greedy(padded):
    ref, tok, model = padded
    tok.padding_side = "left"
    enc = tok(PROMPTS, return_tensors="np", padding=True)
    for kw in ({}, {"eos_token_id": [int(t) for t in np.unique(
            model.generate(**enc, max_new_tokens=3)[:, -3:])[:2]]}):
        got = model.generate(**enc, max_new_tokens=10, **kw)
        want = ref.generate(**tok(PROMPTS, return_tensors="pt", padding=True),
                            max_new_tokens=10, do_sample=False, **kw).numpy()
        assert got.shape == want.shape and np.array_equal(got, want), kw


def test_padded_batch_mistakes(padded):
    _, _, model = padded
    ids = np.array([[5, 6, 7], [8, 9, 10]])
    with pytest.raises(ValueError, match="row 1 has no token"):
        model(ids, attention_mask=np.array([[1, 1, 1], [0, 0, 0]]))
    with pytest.raises(ValueError, match="attention_mask has shape"):
        model(ids, attention_mask=np.ones((2, 2)))
    full = model.generate(ids, max_new_tokens=3, attention_mask=np.ones_like(ids))
    assert np.array_equal(full, model.generate(ids, max_new_tokens=3))


def test_thinking_left_open_by_the_prompt():
    """vLLM's ERNIE-4.5 reasoning parser's cases (``abc\\n</think>\\n\\n<response>\\ndef\\n
    </response>\\n`` and ``abc\\n</think>\\ndef``), and a generation cut inside thinking."""
    assert split_thinking("abc\n</think>\n\n<response>\ndef\n</response>\n") == ("abc", "def")
    assert split_thinking("abc\n</think>\ndef") == ("abc", "def")
    assert split_thinking("still thinking", inside=True) == ("still thinking", "")
    assert split_thinking("an answer") == ("", "an answer")
    assert opens_thinking("User: hi\nAssistant: <think>\n")
    assert not opens_thinking("Assistant: <think>\n\n</think>\n\n")


def test_reply_cut_inside_thinking_is_thinking(tmp_path):
    """A thinking template's generation prompt opens ``<think>``: an answer cut by
    max_new_tokens before ``</think>`` is thinking (it was returned as the answer); with
    ``thinking=False`` the same words are the answer. The tokens are transformers'."""
    import json

    from skiff.kernels.train.models.chat_reply import reply

    from .test_ernie_probe_data import OPEN_THINKING

    _, ref = make_checkpoint(tmp_path, "dense-gqa-tied")
    add_tokenizer(tmp_path, "\n".join(LINES), ref.config.vocab_size)
    (tmp_path / "tokenizer_config.json").write_text(json.dumps({
        "bos_token": "<s>", "eos_token": "</s>", "pad_token": "<pad>", "unk_token": "<unk>",
        "chat_template": OPEN_THINKING}))
    model = from_pretrained(tmp_path)
    tok = transformers.AutoTokenizer.from_pretrained(tmp_path)
    msgs = [{"role": "user", "content": "What is two plus two?"}]
    for thinking in (True, False):
        enc = tok.apply_chat_template(msgs, add_generation_prompt=True, return_tensors="pt",
                                      return_dict=True, enable_thinking=thinking)
        out = ref.generate(**enc, max_new_tokens=6, do_sample=False)[0]
        text = tok.decode(out[enc["input_ids"].shape[1]:])  # as the chat pipeline: unstripped
        r = reply(model, msgs[0]["content"], max_new_tokens=6, thinking=thinking)
        assert r.stop == "length" and r.tokens == 6
        assert (r.thinking, r.text) == ((text.strip(), "") if thinking else ("", text))


def test_dtype_auto_and_torch_dtypes(tmp_path):
    _, ref = make_checkpoint(tmp_path / "f32", "dense-gqa-tied")
    ref.to(torch.bfloat16).save_pretrained(tmp_path / "bf16")
    want = ref.model.embed_tokens.weight.detach().float().numpy()
    for dtype in ("auto", torch.bfloat16, "bfloat16"):
        m = from_pretrained(tmp_path / "bf16", dtype=dtype)
        w = m.model.embed_tokens.weight
        assert w.dtype.name == "bfloat16", dtype
        assert np.array_equal(np.asarray(w.data).astype(np.float32), want)
    assert from_pretrained(tmp_path / "bf16").model.embed_tokens.weight.dtype == np.float32
    assert from_pretrained(tmp_path / "f32", dtype="auto").model.embed_tokens.weight.dtype \
        == np.float32
    with pytest.raises(ValueError, match="dtype must be float32, float64, float16, bfloat16 or "
                                         "'auto'.*'int8'"):
        from_pretrained(tmp_path / "f32", dtype="int8")
    with pytest.raises(FileNotFoundError, match="no checkpoint folder at"):
        from_pretrained(tmp_path / "nowhere")
    (tmp_path / "file").write_text("x")
    with pytest.raises(FileNotFoundError, match="is a file; give the checkpoint's folder"):
        from_pretrained(tmp_path / "file")
