"""GPT: a decoder-only transformer on bytes, trained on padded or packed batches.

The layout follows GPT-2 (nanoGPT's naming, so weights map 1:1 to a PyTorch reference):
token and position embeddings, ``n_layer`` pre-norm blocks of causal self-attention and a
GELU MLP, a final LayerNorm and an untied ``lm_head``.

Training takes either ``(x, y)`` blocks of shape (B, T) or a
:class:`~skiff.kernels.train.data.PackedBatch` (sequences of different lengths in one token
stream; attention never crosses a sequence boundary, and no compute is spent on padding).
:meth:`GPT.generate` samples with a key/value cache: each new token costs one token's worth
of compute per layer instead of re-running the whole context.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace

import numpy as np

from ..checks import positive_int
from ..core import nn
from ..core.nn import functional as F
from ..core.recompute import checkpoint
from ..core.tensor import Tensor, is_grad_enabled, no_grad
from ..data import PackedBatch

__all__ = ["GPTConfig", "GPT", "PRESETS", "gpt_mini", "gpt_small"]


@dataclass
class GPTConfig:
    """Sizes of a GPT."""

    block_size: int = 128  # longest context (positions)
    vocab_size: int = 256  # byte-level tokens
    n_layer: int = 4  # transformer blocks
    n_head: int = 4  # attention heads per block
    n_embd: int = 128  # model width C
    dropout: float = 0.0  # on attention output and MLP output (training only)
    bias: bool = True  # biases in Linear and LayerNorm layers
    lr: float = 1e-3  # a learning rate that works for this size (the Trainer's default)

    def __post_init__(self):
        for name in ("block_size", "vocab_size", "n_layer", "n_head", "n_embd"):
            positive_int(f"GPTConfig.{name}", getattr(self, name))
        if self.n_embd % self.n_head:
            raise ValueError(f"n_embd ({self.n_embd}) must be a multiple of n_head "
                             f"({self.n_head})")

    def num_parameters(self) -> int:
        """Parameter count of a GPT with this config (computed, no model built)."""
        C, V, L, T = self.n_embd, self.vocab_size, self.n_layer, self.block_size
        b = 1 if self.bias else 0
        block = (2 * (C + b * C)  # two LayerNorms
                 + 3 * C * C + b * 3 * C + C * C + b * C  # attention
                 + 4 * C * C + b * 4 * C + 4 * C * C + b * C)  # MLP
        return V * C + T * C + L * block + (C + b * C) + C * V


PRESETS: dict[str, GPTConfig] = {
    # ~0.8 M parameters: trains on the shipped corpus on a laptop CPU in minutes
    "gpt-mini": GPTConfig(block_size=128, n_layer=4, n_head=4, n_embd=128, lr=1e-3),
    # ~10.8 M parameters: the GPU-sized example
    "gpt-small": GPTConfig(block_size=256, n_layer=6, n_head=6, n_embd=384, lr=6e-4),
}


class MLPBlock(nn.Module):
    """Position-wise feed-forward: Linear(C, 4C) -> GELU(tanh) -> Linear(4C, C)."""

    def __init__(self, cfg: GPTConfig):
        super().__init__()
        self.c_fc = nn.Linear(cfg.n_embd, 4 * cfg.n_embd, bias=cfg.bias)
        self.gelu = nn.GELU(approximate="tanh")
        self.c_proj = nn.Linear(4 * cfg.n_embd, cfg.n_embd, bias=cfg.bias)
        self.dropout = nn.Dropout(cfg.dropout)

    def forward(self, x):
        return self.dropout(self.c_proj(self.gelu(self.c_fc(x))))


class Block(nn.Module):
    """Pre-norm transformer block: x + attn(ln_1(x)), then x + mlp(ln_2(x))."""

    def __init__(self, cfg: GPTConfig):
        super().__init__()
        self.ln_1 = nn.LayerNorm(cfg.n_embd, bias=cfg.bias)
        self.attn = nn.CausalSelfAttention(cfg.n_embd, cfg.n_head, bias=cfg.bias,
                                           dropout=cfg.dropout)
        self.ln_2 = nn.LayerNorm(cfg.n_embd, bias=cfg.bias)
        self.mlp = MLPBlock(cfg)

    def forward(self, x):  # (B, T, C)
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))

    def forward_packed(self, x, cu_seqlens):  # (N, C)
        x = x + self.attn.forward_packed(self.ln_1(x), cu_seqlens)
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    """A GPT language model over bytes.

    Parameters
    ----------
    config : GPTConfig or str
        The sizes, or a preset name (``"gpt-mini"``, ``"gpt-small"``).

    Examples
    --------
    >>> from skiff.kernels.train.models import GPT, GPTConfig
    >>> m = GPT(GPTConfig(block_size=16, n_layer=1, n_head=2, n_embd=8))
    >>> m.generate([[104, 105]], max_new_tokens=3, temperature=0).shape
    (1, 5)
    """

    recompute = False  # activation checkpointing of the blocks (Trainer(recompute=...))

    def __init__(self, config: GPTConfig | str = "gpt-mini", **overrides):
        super().__init__()
        if isinstance(config, str):
            if config not in PRESETS:
                raise ValueError(f"unknown GPT preset {config!r}: choose from "
                                 f"{', '.join(PRESETS)}")
            config = PRESETS[config]
        self.config = replace(config, **overrides) if overrides else config
        cfg = self.config
        self.wte = nn.Embedding(cfg.vocab_size, cfg.n_embd)
        self.wpe = nn.Embedding(cfg.block_size, cfg.n_embd)
        self.drop = nn.Dropout(cfg.dropout)
        self.h = nn.ModuleList([Block(cfg) for _ in range(cfg.n_layer)])
        self.ln_f = nn.LayerNorm(cfg.n_embd, bias=cfg.bias)
        self.lm_head = nn.Linear(cfg.n_embd, cfg.vocab_size, bias=False)

    # training ------------------------------------------------------------------------------
    def forward(self, idx):
        """Logits (B, T, V) of token ids ``idx`` (B, T)."""
        idx = _as_index(idx, self)
        B, T = idx.shape
        if T > self.config.block_size:
            raise ValueError(f"sequence length {T} exceeds block_size "
                             f"{self.config.block_size}")
        pos = Tensor(idx.xp.arange(T, dtype=np.int64))  # made on the device: no host copy
        x = self.drop(self.wte(idx) + self.wpe(pos))  # (B, T, C)
        for block in self.h:
            x = self._block(block, block.forward, x)
        return self.lm_head(self.ln_f(x))  # (B, T, V)

    def forward_packed(self, tokens, cu_seqlens, positions):
        """Logits (N, V) of a packed token stream ``tokens`` (N,)."""
        tokens = _as_index(tokens, self)
        positions = np.asarray(_host(positions), dtype=np.int64)
        if positions.size and positions.max() >= self.config.block_size:
            raise ValueError(f"a packed sequence is longer than block_size "
                             f"{self.config.block_size}")
        cu = np.asarray(_host(cu_seqlens), dtype=np.int64)
        x = self.drop(self.wte(tokens) + self.wpe(_as_index(positions, self)))  # (N, C)
        for block in self.h:
            x = self._block(block, block.forward_packed, x, cu)
        return self.lm_head(self.ln_f(x))  # (N, V)

    def _block(self, block, forward, x, *rest):
        """One block; with ``self.recompute`` (activation checkpointing: the planner's
        ``recompute``, ``Trainer(recompute=True)``) only its input is kept and it is
        recomputed in backward."""
        if self.recompute and is_grad_enabled():
            return checkpoint(forward, x, *rest, params=list(block.parameters()))
        return forward(x, *rest)

    def loss(self, batch):
        """Mean next-token cross-entropy of ``(x, y)`` blocks or a :class:`PackedBatch`."""
        if isinstance(batch, PackedBatch):
            logits = self.forward_packed(batch.tokens, batch.cu_seqlens, batch.positions)
            return F.cross_entropy(logits, _as_index(batch.targets, self))
        x, y = (batch["x"], batch["y"]) if isinstance(batch, dict) else batch  # dict items
        logits = self.forward(x)
        B, T, V = logits.shape
        return F.cross_entropy(logits.reshape(B * T, V), _as_index(y, self).reshape(B * T))

    # sampling ------------------------------------------------------------------------------
    def generate(self, idx, max_new_tokens: int, *, temperature: float = 1.0,
                 top_k: int | None = None, seed: int | None = None,
                 use_cache: bool = True, _each=None) -> np.ndarray:
        """Continue each row of ``idx`` (B, T0) by ``max_new_tokens`` tokens.

        ``temperature=0`` is greedy; otherwise logits are divided by ``temperature`` and,
        with ``top_k``, all but the ``k`` largest are dropped before sampling. With
        ``use_cache`` keys and values of past tokens are kept per layer while the ids fit
        in ``block_size``; past it each new token sees the last ``block_size`` tokens (as
        nanoGPT's sampler crops), which are run whole every step (the learned absolute
        positions shift under every kept token, so nothing cached stays valid): a token
        then costs a forward over ``block_size`` tokens. Returns host int64 ids
        (B, T0 + max_new_tokens). A ``str`` prompt is encoded as bytes and the text comes
        back (as :meth:`generate_text`).
        """
        if isinstance(idx, str):  # a text prompt: byte-level ids in, text out
            return self.generate_text(idx, max_new_tokens, temperature=temperature,
                                      top_k=top_k, seed=seed, use_cache=use_cache)
        if not isinstance(max_new_tokens, (int, np.integer)) or max_new_tokens < 0:
            raise ValueError(f"max_new_tokens must be an integer >= 0, got {max_new_tokens!r}")
        if temperature < 0:
            raise ValueError(f"temperature must be >= 0, got {temperature!r}")
        if top_k is not None and not 1 <= top_k <= self.config.vocab_size:
            raise ValueError(f"top_k must be in [1, {self.config.vocab_size}], got {top_k!r}")
        out = np.array(_host(idx), dtype=np.int64, ndmin=2)
        if out.shape[1] == 0:
            raise ValueError("generate needs at least one prompt token per row")
        rng = np.random.default_rng(seed)
        was_training = self.training
        self.eval()
        try:
            with no_grad():
                runner = _KVRunner(self) if use_cache else None
                logits = None
                for n in range(1, int(max_new_tokens) + 1):
                    # past block_size the window slides: the learned absolute positions
                    # move under every kept token, so no cached key or value stays valid
                    # and each token runs the last block_size tokens whole (as nanoGPT's
                    # sampler), on the raw arrays, the last layer for the last position
                    # only (its keys and values for all)
                    if runner is None:
                        ctx = out[:, -self.config.block_size:]
                        logits = _host(self.forward(ctx)._data)[:, -1, :]
                    elif out.shape[1] > self.config.block_size:
                        logits = runner.window_logits(out[:, -self.config.block_size:])
                    else:
                        logits = runner.next_logits(out)
                    nxt = _sample(logits.astype(np.float64), temperature, top_k, rng)
                    out = np.concatenate([out, nxt[:, None]], axis=1)
                    if _each is not None and _each(nxt, n):  # generate_text's stream
                        break
        finally:
            self.train(was_training)
        return out

    def generate_text(self, prompt: str, max_new_tokens: int = 200, *, on_token=None,
                      **kw) -> str:
        """Byte-level text continuation of ``prompt`` (see :meth:`generate`).

        ``on_token(text, n)`` is called after each new token with the new text so far (an
        unfinished UTF-8 character held back until its last byte) and the count; a true
        return ends generation there, and what it raises (a job's cancel) propagates. The
        tokens are the ones :meth:`generate` gives for the same arguments and seed.
        """
        ids = np.frombuffer(prompt.encode("utf-8"), dtype=np.uint8).astype(np.int64)
        if on_token is None:
            out = self.generate(ids[None, :], max_new_tokens, **kw)[0]
            return out.astype(np.uint8).tobytes().decode("utf-8", errors="replace")
        import codecs

        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        text = ""

        def each(nxt, n):
            nonlocal text
            text += decoder.decode(bytes([int(nxt[0]) & 0xFF]))
            return on_token(text, n)

        out = self.generate(ids[None, :], max_new_tokens, _each=each, **kw)
        return out[0].astype(np.uint8).tobytes().decode("utf-8", errors="replace")

    def extra_repr(self) -> str:
        return ", ".join(f"{k}={v}" for k, v in asdict(self.config).items())

    def estimate_flops_per_token(self) -> float:
        """Training FLOPs per token (6N + attention), for throughput figures."""
        cfg = self.config
        n = cfg.num_parameters() - cfg.block_size * cfg.n_embd
        return 6.0 * n + 12.0 * cfg.n_layer * cfg.n_embd * cfg.block_size


# ------------------------------------------------------------------------------------------
class _KVRunner:
    """Incremental decoding on raw arrays with a per-layer key/value cache (no autograd).

    Reads the GPT's parameters in place; the math mirrors the modules' forward: LayerNorm,
    fused qkv projection, causal softmax attention over cached keys, output projection, MLP.
    """

    def __init__(self, model: GPT):
        self.m = model
        self.cfg = model.config
        self.k: list = []
        self.v: list = []
        self.start = 0  # absolute index of the first token in the cache
        self.length = 0  # tokens in the cache

    def next_logits(self, out: np.ndarray) -> np.ndarray:
        T = out.shape[1]
        bs = self.cfg.block_size
        if self.length == 0 or T - self.start > bs:
            # (re)fill from the last block_size tokens
            self.start = max(0, T - bs)
            self.k, self.v = [], []
            self.length = 0
            return self._run(out[:, self.start:], 0)
        return self._run(out[:, self.start + self.length:], self.length)

    def window_logits(self, ids: np.ndarray) -> np.ndarray:
        """The last position's logits of ``ids`` (B, <= block_size) at positions 0..,
        nothing cached (a slid window)."""
        self.k, self.v, self.start, self.length = [], [], 0, 0  # the cache is stale
        return self._run(ids, 0, store=False)

    def _run(self, ids: np.ndarray, pos0: int, store: bool = True) -> np.ndarray:
        """The last position's logits of ``ids`` (B, n) at positions ``pos0..``; their keys
        and values appended to the cache (``store=False``: a one-off window, its last layer
        run for the last position only)."""
        m, cfg = self.m, self.cfg
        xp = m.wte.weight.xp
        ids_d = xp.asarray(ids)
        n_new = ids.shape[1]
        pos = xp.arange(pos0, pos0 + n_new)
        x = m.wte.weight._data[ids_d] + m.wpe.weight._data[pos][None]  # (B, n, C)
        H, C = cfg.n_head, cfg.n_embd
        D = C // H
        B = x.shape[0]
        fill = len(self.k) == 0
        for li, block in enumerate(m.h):
            h = _ln(xp, x, block.ln_1)
            qkv = _lin(h, block.attn.c_attn)  # (B, n, 3C)
            q, k, v = qkv[..., :C], qkv[..., C:2 * C], qkv[..., 2 * C:]
            k = k.reshape(B, n_new, H, D).transpose(0, 2, 1, 3)
            v = v.reshape(B, n_new, H, D).transpose(0, 2, 1, 3)
            if not store and li == len(m.h) - 1 and n_new > 1:
                # the last layer: only the last position's output is read
                q, x, n_new = q[:, -1:], x[:, -1:], 1
            q = q.reshape(B, n_new, H, D).transpose(0, 2, 1, 3)  # (B, H, n, D)
            if not store:
                K, V = k, v
            else:
                if fill:
                    self.k.append(k)
                    self.v.append(v)
                else:
                    self.k[li] = xp.concatenate([self.k[li], k], axis=2)
                    self.v[li] = xp.concatenate([self.v[li], v], axis=2)
                K, V = self.k[li], self.v[li]  # (B, H, S, D)
            S = K.shape[2]
            att = (q @ K.transpose(0, 1, 3, 2)) / math.sqrt(D)  # (B, H, n, S)
            qpos = xp.arange(S - n_new, S)[:, None]
            kpos = xp.arange(S)[None, :]
            att = xp.where(kpos <= qpos, att, -xp.inf)
            att = att - att.max(axis=-1, keepdims=True)
            att = xp.exp(att)
            att = att / att.sum(axis=-1, keepdims=True)
            y = (att @ V).transpose(0, 2, 1, 3).reshape(B, n_new, C)
            x = x + _lin(y, block.attn.c_proj)
            h = _ln(xp, x, block.ln_2)
            if hasattr(block.mlp, "c_fc"):
                x = x + _lin(_gelu_tanh(xp, _lin(h, block.mlp.c_fc)), block.mlp.c_proj)
            else:  # another feed-forward (gpt-moe's experts): the module's own forward
                x = x + block.mlp(Tensor(h))._data
        if store:
            self.length += n_new
        x = _ln(xp, x[:, -1, :], m.ln_f)
        return _host(_lin(x, m.lm_head))


def _lin(x, layer):
    y = x @ layer.weight._data.T
    bias = getattr(layer, "bias", None)
    return y if bias is None else y + bias._data


def _ln(xp, x, layer):
    mu = x.mean(axis=-1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
    y = (x - mu) / xp.sqrt(var + getattr(layer, "eps", 1e-5))
    y = y * layer.weight._data
    bias = getattr(layer, "bias", None)
    return y if bias is None else y + bias._data


def _gelu_tanh(xp, x):
    # x * x * x, not x ** 3: numpy's float32 power is ~250x slower (4 ms for 128 x 512)
    return 0.5 * x * (1.0 + xp.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * (x * x * x))))


def _sample(logits: np.ndarray, temperature: float, top_k, rng) -> np.ndarray:
    if temperature == 0:
        return logits.argmax(axis=-1).astype(np.int64)
    z = logits / temperature
    if top_k is not None:
        kth = np.sort(z, axis=-1)[:, -top_k][:, None]
        z = np.where(z < kth, -np.inf, z)
    z = z - z.max(axis=-1, keepdims=True)
    p = np.exp(z)
    p /= p.sum(axis=-1, keepdims=True)
    return np.array([rng.choice(p.shape[1], p=row) for row in p], dtype=np.int64)


def _host(a):
    if isinstance(a, Tensor):
        return a.numpy()
    if hasattr(a, "get") and not isinstance(a, np.ndarray):
        return a.get()
    return np.asarray(a)


def _as_index(a, model) -> Tensor:
    """Integer ids as a Tensor on the model's device."""
    if isinstance(a, Tensor):
        return a
    device = next(iter(model.parameters())).device
    return Tensor(np.asarray(_host(a), dtype=np.int64), device=device)


def gpt_mini(**overrides) -> GPT:
    """The ``gpt-mini`` preset (see :data:`PRESETS`)."""
    return GPT(PRESETS["gpt-mini"], **overrides)


def gpt_small(**overrides) -> GPT:
    """The ``gpt-small`` preset (see :data:`PRESETS`)."""
    return GPT(PRESETS["gpt-small"], **overrides)
