"""Generation for ERNIE-4.5: prompts of different lengths decoded together, no padding waste.

``generate_packed(model, prompts, max_new_tokens)`` runs every prompt through one *packed*
prefill (the prompts concatenated into one token stream; attention never crosses a prompt
boundary; work is sum(L_i^2), not B * max(L)^2), storing each prompt's keys and values in its
row of a :class:`PackedKVCache`. Each decode step then runs one position per row: the new
token of row ``b`` sits at position ``lengths[b]`` and attends to that row's own cached
positions only (a length mask), so rows of any length advance together in one batched step.

:func:`pick_next` chooses the next token as transformers does: argmax unless sampling; when
sampling, temperature, then top-k, then top-p (nucleus), seeded.
"""

from __future__ import annotations

import numpy as np

__all__ = ["PackedKVCache", "generate_packed", "packed_attention_gqa", "pick_next",
           "repetition_penalty_", "StopStrings", "sampling_rng", "sampling_probs"]


class PackedKVCache:
    """Keys and values per layer in rows of (B, K, capacity, D); row ``b`` holds
    ``lengths[b]`` positions. Filled by a packed prefill, grown one position per row by each
    decode step; attention of a step reads each row up to its own length."""

    def __init__(self, num_layers: int, lengths, capacity: int):
        self.lengths = np.asarray(lengths, dtype=np.int64)
        self.capacity = int(capacity)
        self.k: list = [None] * num_layers
        self.v: list = [None] * num_layers

    def _alloc(self, layer, xp, K, D, dtype):
        if self.k[layer] is None:
            B = len(self.lengths)
            self.k[layer] = xp.zeros((B, K, self.capacity, D), dtype=dtype)
            self.v[layer] = xp.zeros((B, K, self.capacity, D), dtype=dtype)

    def store_packed(self, layer: int, k, v, cu_seqlens) -> None:
        """Keys/values (N, K, D) of a packed prefill into each row's first positions."""
        xp = _xp(k)
        N, K, D = k.shape
        self._alloc(layer, xp, K, D, k.dtype)
        for b in range(len(cu_seqlens) - 1):
            s, e = int(cu_seqlens[b]), int(cu_seqlens[b + 1])
            self.k[layer][b, :, :e - s] = k[s:e].transpose(1, 0, 2)
            self.v[layer][b, :, :e - s] = v[s:e].transpose(1, 0, 2)

    def attend(self, layer: int, q, k, v, scale: float, rows=None):
        """One decode position per row (``rows``: the cache rows still generating, default
        all): store k, v (B, K, D) at each row's length, then q (B, H, D) attends to that
        row's positions 0..length; returns (B, H * D)."""
        xp = _xp(q)
        B, H, D = q.shape
        K = k.shape[1]
        R = H // K
        lengths = self.lengths if rows is None else self.lengths[rows]
        pos = xp.asarray(lengths)
        if int(lengths.max()) >= self.capacity:
            raise ValueError(f"KV cache full: a row reached capacity {self.capacity}")
        idx = xp.arange(B) if rows is None else xp.asarray(rows)
        self.k[layer][idx, :, pos] = k
        self.v[layer][idx, :, pos] = v
        S = int(lengths.max()) + 1
        if rows is None:
            keys = self.k[layer][:, :, :S]  # (B, K, S, D)
            vals = self.v[layer][:, :, :S]
        else:  # only the rows still generating (a gather of their cached positions)
            keys = self.k[layer][idx, :, :S]
            vals = self.v[layer][idx, :, :S]
        att = (q.reshape(B, K, R, D) * q.dtype.type(scale)) @ xp.swapaxes(keys, -1, -2)
        beyond = xp.arange(S)[None, :] > pos[:, None]  # (B, S): other rows' positions
        att = xp.where(beyond[:, None, None, :], -np.inf, att)  # (B, K, R, S)
        att -= att.max(axis=-1, keepdims=True)
        xp.exp(att, out=att)
        att /= att.sum(axis=-1, keepdims=True)
        return (att @ vals).reshape(B, H * D)  # (B, K, R, D) -> (B, H * D)


def packed_attention_gqa(q, k, v, cu_seqlens, scale: float, chunk: int = 128,
                         bf16: bool = False):
    """Causal attention of a packed prefill without a graph, for grouped-query heads: q
    (N, K*R, D), k and v (N, K, D) (query head ``h`` reads k/v head ``h // R``); returns
    (N, K*R, D). Each sequence's R query heads of a k/v head are stacked into one (R*L, D)
    matrix against its (L, D) keys, so the keys are never copied R times; rows are taken in
    chunks of ``chunk`` positions that see only the keys up to their last position, which
    skips about half of the masked work of long prompts. ``bf16``: as torch's CPU attention
    of bfloat16 tensors, the unnormalised probabilities rounded to bf16 before they meet
    the values, the float32 sum dividing after (host arrays)."""
    xp = _xp(q)
    N, H, D = q.shape
    K = k.shape[1]
    R = H // K
    out = xp.empty_like(q)
    sc = q.dtype.type(scale)
    above = xp.triu(xp.ones((chunk, chunk), dtype=bool), k=1)  # key after query
    for b in range(len(cu_seqlens) - 1):
        s, e = int(cu_seqlens[b]), int(cu_seqlens[b + 1])
        L = e - s
        if L == 0:
            continue
        qs = (q[s:e].reshape(L, K, R, D) * sc).transpose(1, 2, 0, 3)  # (K, R, L, D)
        ks = k[s:e].transpose(1, 2, 0)  # (K, D, L)
        vs = v[s:e].transpose(1, 0, 2)  # (K, L, D)
        for i0 in range(0, L, chunk):
            i1 = min(L, i0 + chunk)
            c = i1 - i0
            # the R query heads' rows of this chunk stacked: one GEMM per k/v head
            qc = xp.ascontiguousarray(qs[:, :, i0:i1]).reshape(K, R * c, D)
            att = xp.matmul(qc, ks[:, :, :i1])  # (K, R*c, i1)
            # only the chunk's own block [i0, i1) of columns holds masked positions
            block = att.reshape(K, R, c, i1)[..., i0:i1]
            block[..., above[:c, :c]] = -np.inf
            att -= att.max(axis=-1, keepdims=True)
            xp.exp(att, out=att)
            if bf16:
                from .ernie_kernels import round_bf16_

                total = att.sum(axis=-1, keepdims=True)
                y = xp.matmul(round_bf16_(att), vs[:, :i1])
                y /= total
                y = y.reshape(K, R, c, D)
            else:
                att /= att.sum(axis=-1, keepdims=True)
                y = xp.matmul(att, vs[:, :i1]).reshape(K, R, c, D)
            out[s + i0:s + i1] = y.transpose(2, 0, 1, 3).reshape(c, H, D)
    return out


def generate_packed(model, prompts, max_new_tokens: int, *, pick, eos: set,
                    max_positions: int, stop=None, on_token=None,
                    stop_all=None, stop_rows=None) -> list[np.ndarray]:
    """Greedy or sampled continuation of each prompt (a list of 1-D id arrays of any
    lengths). ``pick(logits (n, V), histories, rows) -> ids (n,)`` chooses the tokens of
    the ``rows`` still generating (``histories``: their ids so far). A row stops after it
    emits a token of ``eos``, or when ``stop(ids)`` (its prompt and tokens so far) says so;
    the loop ends when every row has stopped or after ``max_new_tokens``, or when
    ``stop_all(every, rows)`` (every row's ids, the rows going on) says the whole batch is
    done; ``stop_rows(every, rows) -> (n,) bool`` marks rows done (once a step, every row's
    ids given: a user's stopping criteria see the whole batch).
    ``on_token(rows, ids)`` sees each step's new tokens and the rows they belong to.
    Returns each prompt followed by its new tokens (eos included)."""
    seqs = [np.asarray(p, dtype=np.int64).reshape(-1) for p in prompts]
    if not seqs or any(len(s) == 0 for s in seqs):
        raise ValueError("generate needs at least one prompt token per row")
    lengths = np.array([len(s) for s in seqs], dtype=np.int64)
    if int(lengths.max()) + max_new_tokens > max_positions:
        raise ValueError(f"prompt of {int(lengths.max())} tokens + {max_new_tokens} new "
                         f"tokens exceeds the context ({max_positions} positions)")
    out = [list(s) for s in seqs]
    if max_new_tokens == 0:
        return [np.asarray(o, dtype=np.int64) for o in out]
    cu = np.concatenate([[0], np.cumsum(lengths)])
    positions = np.concatenate([np.arange(n) for n in lengths])
    cache = PackedKVCache(len(model.model.layers), lengths, int(lengths.max()) + max_new_tokens)
    logits = model.forward_packed(np.concatenate(seqs), cu, positions, cache=cache,
                                  last_only=True)  # (B, V): the last position of each prompt
    active = np.arange(len(seqs))  # rows still generating: finished rows cost nothing more
    for step in range(int(max_new_tokens)):
        nxt = pick(_host(logits._data).astype(np.float64), [out[b] for b in active], active)
        for b, t in zip(active, nxt):
            out[b].append(int(t))
        if on_token is not None:
            on_token(active.copy(), nxt)
        going = ~np.isin(nxt, list(eos)) if eos else np.ones(len(active), dtype=bool)
        if stop is not None:
            going &= np.array([not stop(out[b]) for b in active], dtype=bool)
        if stop_rows is not None:
            going &= ~np.asarray(stop_rows(out, active), dtype=bool)
        if not going.any() or step == max_new_tokens - 1:
            break
        if stop_all is not None and stop_all(out, active[going]):
            break
        rows = None if going.all() and len(active) == len(seqs) else active[going]
        logits = model.forward_step(nxt[going], cache, rows)  # writes at the rows' lengths
        active = active[going]
    return [np.asarray(o, dtype=np.int64) for o in out]


class StopStrings:
    """Stop a row once its text reaches one of ``strings``, as transformers'
    ``stop_strings`` do: a match that ends within the row's last token (so a stop string
    split across tokens is found, and one that lay wholly in earlier text is not found
    again). Only the last tokens are decoded (enough for the longest string)."""

    def __init__(self, tokenizer, strings):
        if isinstance(strings, str):
            strings = [strings]
        strings = [s for s in (strings or [])]
        if any(not isinstance(s, str) or not s for s in strings):
            raise ValueError(f"stop strings must be non-empty strings, got {strings!r}")
        if strings and tokenizer is None:
            raise ValueError("stop strings need a tokenizer (the checkpoint has none: pass "
                             "tokenizer=)")
        self.tokenizer, self.strings = tokenizer, strings
        self.window = max((len(s) for s in strings), default=0) + 8

    def __bool__(self) -> bool:
        return bool(self.strings)

    def __call__(self, ids) -> bool:
        ids = list(ids)[-self.window:]
        text = self.tokenizer.decode(ids)
        before = len(self.tokenizer.decode(ids[:-1])) if len(ids) > 1 else 0
        return any(text.find(s, max(0, before - len(s) + 1)) >= 0 for s in self.strings)


def is_torch_generator(generator) -> bool:
    return type(generator).__name__ == "Generator" and \
        type(generator).__module__.startswith("torch")


def sampling_rng(seed=None, generator=None) -> np.random.Generator:
    """The random generator sampling draws from: ``generator`` (a numpy Generator, advanced
    by each call) or a new one seeded by ``seed`` (None: fresh entropy)."""
    if generator is not None:
        if is_torch_generator(generator):  # transformers' own draws (torch.multinomial)
            return generator
        if not isinstance(generator, np.random.Generator):
            raise TypeError(f"generator must be a numpy.random.Generator, got "
                            f"{type(generator).__name__}")
        return generator
    return np.random.default_rng(seed)


def repetition_penalty_(logits: np.ndarray, history, penalty: float) -> np.ndarray:
    """transformers' repetition penalty, in place: the logit of every token already in row
    ``b``'s history (prompt and generated) is divided by ``penalty`` when positive, multiplied
    when negative."""
    for b, seen in enumerate(history):
        ids = np.unique(np.asarray(seen, dtype=np.int64))
        z = logits[b, ids]
        logits[b, ids] = np.where(z < 0, z * penalty, z / penalty)
    return logits


def pick_next(logits: np.ndarray, do_sample, temperature, top_k, top_p, rng) -> np.ndarray:
    """The next token per row: argmax, or a draw from :func:`sampling_probs`."""
    if not do_sample:
        return logits.argmax(axis=-1).astype(np.int64)
    p = sampling_probs(logits, temperature, top_k, top_p)
    return np.array([rng.choice(p.shape[1], p=row) for row in p], dtype=np.int64)


def sampling_probs(logits: np.ndarray, temperature: float = 1.0, top_k: int | None = None,
                   top_p: float | None = None) -> np.ndarray:
    """The distribution (B, V) a sampled token is drawn from, as transformers' warpers make
    it, in their order: logits / temperature; top-k keeps the tokens scoring at least the
    k-th best (ties included); top-p (nucleus) drops the least likely tokens whose summed
    probability stays <= 1 - top_p, always keeping the most likely one."""
    z = np.asarray(logits, dtype=np.float64) / temperature
    if top_k is not None:
        kth = np.sort(z, axis=-1)[:, -min(int(top_k), z.shape[1])][:, None]
        z = np.where(z < kth, -np.inf, z)
    p = np.exp(z - z.max(axis=-1, keepdims=True))
    p /= p.sum(axis=-1, keepdims=True)
    if top_p is not None and top_p < 1:
        order = np.argsort(p, axis=-1, kind="stable")  # ascending: the low tail first
        tail = np.cumsum(np.take_along_axis(p, order, -1), axis=-1) <= 1 - top_p
        tail[:, -1] = False  # always keep the most likely token
        drop = np.zeros_like(tail)
        np.put_along_axis(drop, order, tail, -1)
        p = np.where(drop, 0.0, p)
        p /= p.sum(axis=-1, keepdims=True)
    return p


def _xp(a):
    if isinstance(a, np.ndarray):
        return np
    from skiff.kernels.backend import get_array_module

    return get_array_module(a)


def _host(a):
    if hasattr(a, "get") and not isinstance(a, np.ndarray):
        return a.get()
    return np.asarray(a)


def _kept(attention_mask, input_ids):
    """The mask's real positions as a 2-D boolean array (one row for 1-D ids), or None when
    it pads nothing; a mask of another shape than the ids is one error."""
    mask = np.asarray(_host(attention_mask))
    ids = np.asarray(_host(input_ids))
    if ids.ndim == 1:
        ids, mask = ids[None], mask.reshape(1, -1)
    if mask.shape != ids.shape:
        raise ValueError(f"attention_mask has shape {mask.shape}, input_ids {ids.shape}")
    keep = mask != 0
    return None if keep.all() else keep


def has_hole(attention_mask, input_ids) -> bool:
    """Whether a row of the mask has padding between its tokens (not left or right
    padding alone)."""
    keep = _kept(attention_mask, input_ids)
    return keep is not None and any(len(at) and at[-1] - at[0] + 1 != len(at)
                                    for at in map(np.flatnonzero, keep))


def _mask_rows(attention_mask, input_ids):
    """``[(start, end)]`` of each row's real tokens under a padding mask (left or right
    padding), or None when the mask pads nothing; a mask of another shape, with holes, or
    a row without a token is one error."""
    keep = _kept(attention_mask, input_ids)
    if keep is None:
        return None
    rows = []
    for b, row in enumerate(keep):
        at = np.flatnonzero(row)
        if len(at) == 0:
            raise ValueError(f"attention_mask row {b} has no token (all padding)")
        a, e = int(at[0]), int(at[-1]) + 1
        if e - a != len(at):
            raise ValueError(f"attention_mask row {b} has padding between tokens: only left "
                             "or right padding is read")
        rows.append((a, e))
    return rows


def mask_columns(attention_mask, input_ids):
    """Each row's real columns (an int array) under a 2-D ``attention_mask`` of any
    layout (left or right padding, or holes: a pad id inside a row), or None when it pads
    nothing; a row without a token is one error. Computing on the real columns only, at
    positions ``0..n-1``, is what transformers' ``generate`` computes under such a mask
    (``cumsum(mask) - 1`` positions, the masked keys never seen)."""
    keep = _kept(attention_mask, input_ids)
    if keep is None:
        return None
    cols = [np.flatnonzero(row) for row in keep]
    for b, c in enumerate(cols):
        if not len(c):
            raise ValueError(f"attention_mask row {b} has no token (all padding)")
    return cols


def inferred_mask(model, input_ids, attention_mask, pad_token_id, eos_token_id, options):
    """transformers' ``_prepare_attention_mask_for_generation``: without an
    ``attention_mask``, a (B, T) prompt holding the pad id (``pad_token_id``, else a
    ``generation_config`` passed in ``options``, else the checkpoint's) is masked where it
    holds it, unless the pad id is an eos id. Returns the mask to use (None: none).
    A pad id inside a row (not at its left or right end; an unknown token where pad is
    unk) is masked out too, as transformers masks it: the row's tokens after it sit one
    position earlier and never see it (``generate`` runs such a mask on a padded cache,
    beams on the real columns)."""
    if attention_mask is not None or isinstance(input_ids, (list, tuple)) and input_ids \
            and not all(np.ndim(_host(r)) == 1 and len(_host(r)) == len(_host(input_ids[0]))
                        for r in input_ids):
        return attention_mask
    gc = options.get("generation_config")

    def value(name, given):
        if given not in ("config", None):
            return given
        from_gc = gc.get(name) if isinstance(gc, dict) else getattr(gc, name, None)
        if from_gc is not None:
            return from_gc
        return model._generation_value(name, "config") if given == "config" else None

    pad = value("pad_token_id", pad_token_id)
    if pad is None:
        return None
    ids = np.asarray(_host(input_ids) if not isinstance(input_ids, (list, tuple))
                     else [_host(r) for r in input_ids])
    if ids.ndim != 2 or not np.isin(ids, [int(pad)]).any():
        return None
    eos = value("eos_token_id", eos_token_id)
    if eos is not None and int(pad) in np.atleast_1d(eos).tolist():
        return None  # transformers: cannot be inferred (and warns)
    mask = (ids != int(pad)).astype(np.int64)
    for b, row in enumerate(mask):
        if not row.any():
            raise ValueError(f"input_ids row {b} is all pad ids ({int(pad)}): without an "
                             "attention_mask they are masked out (as transformers); pass "
                             "attention_mask, or a prompt")
    return mask


def _check_sampling(max_new_tokens, do_sample, temperature, top_k, top_p, penalty) -> None:
    if not isinstance(max_new_tokens, (int, np.integer)) or max_new_tokens < 0:
        raise ValueError(f"max_new_tokens must be an integer >= 0, got {max_new_tokens!r}")
    if do_sample and not temperature > 0:
        raise ValueError(f"temperature must be > 0 when sampling, got {temperature!r}")
    if top_k is not None and (not isinstance(top_k, (int, np.integer)) or top_k < 0):
        raise ValueError(f"top_k must be an integer >= 0 (0: no top-k), got {top_k!r}")
    if top_p is not None and not 0 < top_p <= 1:
        raise ValueError(f"top_p must be in (0, 1], got {top_p!r}")
    if not penalty > 0:
        raise ValueError(f"repetition_penalty must be > 0, got {penalty!r}")
