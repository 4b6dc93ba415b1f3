"""``past_key_values`` (round 29; ``model(ids, use_cache=True).past_key_values`` was an
AttributeError, ``model(ids, past_key_values=...)`` and ``generate(..., past_key_values=...)``
"unexpected keyword"): a forward continuing cached positions, a chat continued turn by turn
and the prefix-caching recipe, against transformers' logits (1e-5), cached keys/values and
tokens; transformers' own ``DynamicCache`` passed to skiff and continued by transformers
afterwards."""

from __future__ import annotations

import copy

import numpy as np
import pytest

from skiff.kernels.train.models import from_pretrained

from .ernie_reference import make_checkpoint, random_ids, torch, transformers

SHAPES = ["dense-gqa-tied", "moe-shared"]


@pytest.fixture(scope="module", params=SHAPES)
def pair(request, tmp_path_factory):
    folder, ref = make_checkpoint(tmp_path_factory.mktemp(request.param), request.param)
    return ref, from_pretrained(folder)


def close(got, want):
    want = want.detach().numpy() if hasattr(want, "detach") else want
    np.testing.assert_allclose(np.asarray(got), want, atol=1e-5 * max(1, np.abs(want).max()))


def test_forward_continues_the_cache(pair):
    ref, model = pair
    ids = torch.tensor(random_ids(model.config.vocab_size, (2, 9)))
    with torch.no_grad():
        r = ref(ids[:, :4], use_cache=True)
        r2 = ref(ids[:, 4:7], past_key_values=r.past_key_values)
        r3 = ref(ids[:, 7:], past_key_values=r.past_key_values)
    out = model(ids[:, :4], use_cache=True)
    close(out.numpy(), r.logits)
    cache = out.past_key_values
    assert cache.get_seq_length() == 4 and len(cache) == len(ref.model.layers)
    out2 = model(ids[:, 4:7], past_key_values=cache)   # several new positions (graph path)
    out3 = model(ids[:, 7:], past_key_values=out2.past_key_values)  # one (decode step)
    close(out2.numpy(), r2.logits)
    close(out3.numpy(), r3.logits)
    assert out3.past_key_values is cache and cache.get_seq_length() == 9
    for (k, v), layer in zip(cache, r.past_key_values.layers):  # stored as transformers does
        close(k, layer.keys)
        close(v, layer.values)


def test_plain_forward_has_a_cache_and_use_cache_false_none(pair):
    ref, model = pair
    ids = torch.tensor(random_ids(model.config.vocab_size, (1, 6), seed=2))
    with torch.no_grad():
        want = ref(ids).past_key_values
        assert ref(ids, use_cache=False).past_key_values is None
    cache = model(ids).past_key_values  # transformers' default use_cache=True
    assert cache.get_seq_length() == 6
    for (k, _), layer in zip(cache, want.layers):
        close(k, layer.keys)
    assert model(ids, use_cache=False).past_key_values is None


def test_transformers_cache_in_and_out(pair):
    """A DynamicCache filled by transformers continues in skiff, gets skiff's positions
    appended in place, and transformers continues it again."""
    ref, model = pair
    ids = torch.tensor(random_ids(model.config.vocab_size, (2, 8), seed=5))
    with torch.no_grad():
        full = ref(ids).logits
        hf = transformers.DynamicCache(config=ref.config)
        ref(ids[:, :3], past_key_values=hf)
    out = model(ids[:, 3:6], past_key_values=hf)
    assert out.past_key_values is hf and hf.get_seq_length() == 6
    close(out.numpy(), full[:, 3:6])
    with torch.no_grad():
        last = ref(ids[:, 6:], past_key_values=hf).logits
    close(last, full[:, 6:])


@pytest.mark.parametrize("sample", [False, True])
def test_chat_turn_by_turn(pair, sample):
    """generate(whole conversation, past_key_values=the last turn's cache): only the new
    part runs, the tokens are transformers' (greedy, and sampling with its draws)."""
    ref, model = pair
    V = model.config.vocab_size
    kw = dict(do_sample=True, top_k=8, temperature=0.9) if sample else dict(do_sample=False)
    prompt = torch.tensor(random_ids(V, (1, 5), seed=7))
    torch.manual_seed(0)
    want = ref.generate(prompt, max_new_tokens=6, return_dict_in_generate=True, **kw)
    got = model.generate(prompt, max_new_tokens=6, return_dict_in_generate=True,
                         generator=torch.Generator().manual_seed(0), **kw)
    np.testing.assert_array_equal(np.asarray(got.sequences), want.sequences.numpy())
    assert got.past_key_values.get_seq_length() == want.past_key_values.get_seq_length()
    turn = torch.cat([want.sequences, torch.tensor(random_ids(V, (1, 3), seed=8))], 1)
    torch.manual_seed(1)
    want2 = ref.generate(turn, past_key_values=want.past_key_values, max_new_tokens=6,
                         return_dict_in_generate=True, **kw)
    got2 = model.generate(turn, past_key_values=got.past_key_values, max_new_tokens=6,
                          return_dict_in_generate=True,
                          generator=torch.Generator().manual_seed(1), **kw)
    np.testing.assert_array_equal(np.asarray(got2.sequences), want2.sequences.numpy())
    assert got2.past_key_values.get_seq_length() == want2.past_key_values.get_seq_length()


def test_prefix_cache_reused_by_deepcopy(pair):
    """transformers' prefix-caching recipe: one cached system prompt, copied per question;
    skiff's cache and transformers' DynamicCache both work in skiff's generate."""
    ref, model = pair
    V = model.config.vocab_size
    prefix = torch.tensor(random_ids(V, (1, 6), seed=3))
    hf = transformers.DynamicCache(config=ref.config)
    with torch.no_grad():
        ref(prefix, past_key_values=hf)
    mine = model(prefix, use_cache=True).past_key_values
    for seed in (4, 5):
        ids = torch.cat([prefix, torch.tensor(random_ids(V, (1, 4), seed=seed))], 1)
        want = ref.generate(ids, past_key_values=copy.deepcopy(hf), max_new_tokens=5,
                            do_sample=False).numpy()
        np.testing.assert_array_equal(
            model.generate(ids, past_key_values=copy.deepcopy(mine), max_new_tokens=5), want)
        np.testing.assert_array_equal(
            model.generate(ids, past_key_values=copy.deepcopy(hf), max_new_tokens=5), want)
    assert mine.get_seq_length() == hf.get_seq_length() == 6  # the copies grew, not these


def test_clear_errors(pair):
    _, model = pair
    ids = random_ids(model.config.vocab_size, (2, 6), seed=9)
    cache = model(ids[:, :4], use_cache=True).past_key_values
    mask = np.ones((2, 6), dtype=np.int64)
    mask[1, :2] = 0
    with pytest.raises(ValueError, match="the cached and the new positions"):  # round 30
        model(ids[:, 4:], past_key_values=copy.deepcopy(cache), attention_mask=mask[:, 4:])
    with pytest.raises(ValueError, match="longer than the cache"):
        model.generate(ids[:, :4], past_key_values=copy.deepcopy(cache), max_new_tokens=2)
    with pytest.raises(ValueError, match="labels"):
        model(ids[:, 4:], past_key_values=copy.deepcopy(cache), labels=ids[:, 4:])
    with pytest.raises(ValueError, match="rows"):
        model(ids[:1, 4:], past_key_values=copy.deepcopy(cache))


def test_transformers_5_cache_keyword(pair):
    """transformers 5 names it ``cache`` (``past_key_values`` deprecated): the call keyword,
    the output attribute and the generate output's key, as transformers has them."""
    ref, model = pair
    ids = torch.tensor(random_ids(model.config.vocab_size, (1, 7), seed=11))
    with torch.no_grad():
        r = ref(ids[:, :5])
        r2 = ref(ids[:, 5:], cache=r.cache)
    out = model(ids[:, :5])
    close(model(ids[:, 5:], cache=out.cache).numpy(), r2.logits)
    assert out.cache is out.past_key_values and out.cache.get_seq_length() == 7
    want = ref.generate(ids, max_new_tokens=3, do_sample=False, return_dict_in_generate=True)
    got = model.generate(ids, max_new_tokens=3, return_dict_in_generate=True)
    assert [k for k, v in got.items() if v is not None] == list(want.keys())
    turn = torch.cat([want.sequences, ids[:, :2]], 1)
    np.testing.assert_array_equal(
        model.generate(turn, cache=got.cache, max_new_tokens=3),
        ref.generate(turn, cache=want.cache, max_new_tokens=3, do_sample=False).numpy())
