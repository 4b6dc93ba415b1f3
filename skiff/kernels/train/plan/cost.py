"""The planner's explicit cost model: memory per device and time per step.

Every figure is a closed formula of a :class:`ModelSpec` (what is trained), a
:class:`ClusterSpec` (on what) and a :class:`Choice` (how: dp x tp x pp x ep, ZeRO stage,
micro-batch, recomputation), so a test can check it against a hand computation.

Memory per device (bytes)
    params      ``P_dev * w``            with ``P_dev = dense/(tp*pp) + experts/(tp*pp*ep)``
    grads       ``P_dev * g``            divided by dp under ZeRO-2
    optimizer   ``P_dev * o``            divided by dp under ZeRO-1 and ZeRO-2
    master_shard ``P_dev * 4 / dp``      fp32 under ZeRO: the flat slice of the weights it steps
                (AdamW: two fp32 moments, ``o = 8``; with 16-bit weights a fp32 master copy
                too, ``o = 12``)
    activations per layer and micro-batch of ``b`` sequences of ``s`` tokens, width ``h``,
                ``a`` heads, tensor-parallel ``t`` (Korthikanti et al. 2022, in 16-bit units,
                scaled by ``e/2`` for ``e``-byte activations)::

                    s b h (10 + 24/t + 5 a s / (h t)) * e/2

                with full recomputation only each layer's input is kept, ``s b h e``, plus one
                layer's full activations while it is recomputed. A pipeline stage holds
                ``L/pp`` layers for ``min(pp, m)`` micro-batches in flight (1F1B), plus the
                fp32 logits ``s b V/t * 4`` on the last stage.

Time per step (seconds)
    compute     ``6 N_active T + 12 L h s T`` flops for ``T`` tokens (x 4/3 with
                recomputation), spread over the world at the device's throughput, stretched by
                the pipeline bubble ``1 + (pp-1)/m``
    dp          gradient all-reduce ``2 (dp-1)/dp * grad bytes`` over the dp group's bandwidth;
                overlapped with backward (2/3 of compute) except the last bucket
    tp          4 all-reduces of ``b s h e`` per layer per micro-batch (not overlapped)
    pp          activations and their gradients sent between stages per micro-batch
    ep          4 all-to-alls of the routed tokens per MoE layer
    latency     each message also costs ``ClusterSpec.latency`` (alpha): ``2 (n-1)`` per
                all-reduce bucket (dp) or per tp all-reduce, ``2 (m + pp - 1)`` pipeline
                sends, ``ep - 1`` per all-to-all; what keeps a small model data-parallel
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, replace

__all__ = ["ModelSpec", "ClusterSpec", "Choice", "Estimate", "estimate", "PRESETS",
           "model_spec", "GB"]

GB = 10**9


@dataclass(frozen=True)
class ModelSpec:
    """The shape of a decoder-only transformer, enough to cost it.

    ``n_experts > 0`` makes every layer's feed-forward a mixture of experts with ``top_k``
    active experts of width ``expert_hidden`` (SwiGLU, three matrices).
    """

    name: str
    n_layers: int
    d_model: int
    n_heads: int
    vocab: int
    seq_len: int = 2048
    ffn_hidden: int | None = None          # dense MLP width (default 4 d)
    ffn_matrices: int = 2                  # 2: GELU MLP, 3: SwiGLU
    n_experts: int = 0
    top_k: int = 0
    expert_hidden: int = 0
    tied_embeddings: bool = False
    n_kv_heads: int | None = None          # grouped-query attention (default: n_heads)
    n_params_override: int | None = None   # a measured count (a real model) wins
    moe_layers: int | None = None          # layers with experts (default: every layer)

    @property
    def hidden(self) -> int:
        return self.ffn_hidden or 4 * self.d_model

    @property
    def attention_params(self) -> int:
        d = self.d_model
        kv = d * (self.n_kv_heads or self.n_heads) // self.n_heads
        return 2 * d * d + 2 * d * kv + 2 * d + 2 * kv

    @property
    def expert_params(self) -> int:
        """Parameters of all experts of all layers (0 for a dense model)."""
        if not self.n_experts:
            return 0
        return self.n_moe_layers * self.n_experts * 3 * self.d_model * self.expert_hidden

    @property
    def n_moe_layers(self) -> int:
        return self.n_layers if self.moe_layers is None else self.moe_layers

    @property
    def dense_params(self) -> int:
        """Everything that is not an expert: embeddings, attention, norms, dense MLPs, router."""
        if self.n_params_override is not None:
            return self.n_params_override - self.expert_params
        d = self.d_model
        emb = self.vocab * d * (1 if self.tied_embeddings else 2) + self.seq_len * d
        per_layer = self.attention_params + 4 * d
        if self.n_experts:
            per_layer += d * self.n_experts
        else:
            per_layer += self.ffn_matrices * d * self.hidden + self.hidden + d
        return emb + self.n_layers * per_layer + 2 * d

    @property
    def n_params(self) -> int:
        return self.dense_params + self.expert_params

    @property
    def active_params(self) -> int:
        """Parameters one token passes through (the ``A`` of ``21B-A3B``)."""
        if not self.n_experts:
            return self.n_params
        per_expert = 3 * self.d_model * self.expert_hidden
        return self.dense_params + self.n_moe_layers * self.top_k * per_expert

    def to_json(self) -> dict:
        out = asdict(self)
        out.update(n_params=self.n_params, active_params=self.active_params)
        return out


# hypothetical and real shapes the planner knows by name
PRESETS: dict[str, ModelSpec] = {
    "gpt-mini": ModelSpec("gpt-mini", n_layers=4, d_model=128, n_heads=4, vocab=256,
                          seq_len=128),
    "gpt-small": ModelSpec("gpt-small", n_layers=6, d_model=384, n_heads=6, vocab=256,
                           seq_len=256),
    "gpt2-124m": ModelSpec("gpt2-124m", n_layers=12, d_model=768, n_heads=12, vocab=50257,
                           seq_len=1024, tied_embeddings=True),
    "7b": ModelSpec("7b", n_layers=32, d_model=4096, n_heads=32, vocab=32000, seq_len=4096,
                    ffn_hidden=11008, ffn_matrices=3),
    "13b": ModelSpec("13b", n_layers=40, d_model=5120, n_heads=40, vocab=32000, seq_len=4096,
                     ffn_hidden=13824, ffn_matrices=3),
    "70b": ModelSpec("70b", n_layers=80, d_model=8192, n_heads=64, vocab=32000, seq_len=4096,
                     ffn_hidden=28672, ffn_matrices=3, n_kv_heads=8),
    # "21B-A3B"-shaped mixture of experts: 64 experts, 6 active, ~22 B total, ~3 B active
    "gpt-moe": ModelSpec("gpt-moe", n_layers=28, d_model=2560, n_heads=20, vocab=103424,
                         seq_len=4096, n_experts=64, top_k=6, expert_hidden=1536,
                         tied_embeddings=True),
    # ERNIE-4.5 from its published config.json files (skiff.models.from_pretrained loads
    # them); counts from models.ernie.num_parameters: the 21B-A3B has a dense first layer and
    # 2 shared experts, the 300B-A47B 3 dense layers; both 64 experts
    "ernie-4.5-0.3b": ModelSpec("ernie-4.5-0.3b", n_layers=18, d_model=1024, n_heads=16,
                                vocab=103424, seq_len=4096, ffn_hidden=3072, ffn_matrices=3,
                                tied_embeddings=True, n_kv_heads=2,
                                n_params_override=360_748_032),
    "ernie-4.5-21b-a3b": ModelSpec("ernie-4.5-21b-a3b", n_layers=28, d_model=2560, n_heads=20,
                                   vocab=103424, seq_len=4096, ffn_hidden=12288,
                                   ffn_matrices=3, n_experts=64, top_k=6, expert_hidden=1536,
                                   tied_embeddings=True, n_kv_heads=4, moe_layers=27,
                                   n_params_override=21_825_436_160),
    "ernie-4.5-300b-a47b": ModelSpec("ernie-4.5-300b-a47b", n_layers=54, d_model=8192,
                                     n_heads=64, vocab=103424, seq_len=4096, ffn_hidden=28672,
                                     ffn_matrices=3, n_experts=64, top_k=8,
                                     expert_hidden=3584, n_kv_heads=8, moe_layers=51,
                                     n_params_override=299_484_160_000),
    # the runnable tiny variant (tests and the CPU examples)
    "gpt-moe-tiny": ModelSpec("gpt-moe-tiny", n_layers=2, d_model=32, n_heads=4, vocab=64,
                              seq_len=16, n_experts=4, top_k=2, expert_hidden=32),
}


# built-in models of %train that are not presets (``plan mlp`` was "unknown model 'mlp'"):
# built (a few thousand parameters) and costed as live models
LIVE_BUILTINS = ("mlp", "cnn")


def model_spec(model, *, seq_len: int | None = None) -> ModelSpec:
    """A :class:`ModelSpec` for a preset name, a ModelSpec, or a live model.

    A live model is costed from its config (``model.config`` with ``n_layer``/``n_embd``/
    ``n_head``/``vocab_size``/``block_size``, nanoGPT names, when present) and its measured
    parameter count; anything else counts as one layer as wide as its parameters suggest.
    """
    if isinstance(model, ModelSpec):
        spec = model
    elif isinstance(model, str):
        key = model.lower()
        if key in LIVE_BUILTINS:  # %train's own small models: costed as built
            from skiff.kernels.train.models import get

            return model_spec(get(key), seq_len=seq_len)
        if key not in PRESETS:
            raise ValueError(f"unknown model {model!r}: choose from "
                             f"{', '.join([*PRESETS, *LIVE_BUILTINS])}")
        spec = PRESETS[key]
    elif hasattr(getattr(model, "config", None), "num_attention_heads"):
        spec = _hf_spec(model)
    else:
        n = _count_params(model)
        cfg = getattr(model, "config", None)

        def pick(*names, default=None):
            for nm in names:
                v = getattr(cfg, nm, None) if cfg is not None else None
                if v:
                    return int(v)
            return default

        d = pick("n_embd", "d_model", default=max(1, int(math.sqrt(max(n, 1) / 12))))
        spec = ModelSpec(
            name=type(model).__name__, n_layers=pick("n_layer", "n_layers", default=1),
            d_model=d, n_heads=pick("n_head", "n_heads", default=1),
            vocab=pick("vocab_size", "vocab", default=1),
            seq_len=pick("block_size", "seq_len", default=1),
            n_experts=pick("n_experts", default=0), top_k=pick("top_k", default=0),
            expert_hidden=pick("expert_hidden", default=0), n_params_override=n)
    if seq_len is not None:
        spec = replace(spec, seq_len=int(seq_len))
    return spec


def _hf_spec(model) -> ModelSpec:
    """The spec of a live model with a Hugging Face style config (ERNIE-4.5: hidden_size,
    num_hidden_layers, num_attention_heads, num_key_value_heads, the moe_* sizes)."""
    cfg = model.config
    moe = int(getattr(cfg, "moe_num_experts", 0) or 0)
    is_moe = getattr(cfg, "is_moe_layer", None)
    return ModelSpec(
        name=type(model).__name__, n_layers=int(cfg.num_hidden_layers),
        d_model=int(cfg.hidden_size), n_heads=int(cfg.num_attention_heads),
        vocab=int(cfg.vocab_size), seq_len=int(getattr(cfg, "block_size", 0) or 2048),
        ffn_hidden=int(cfg.intermediate_size), ffn_matrices=3, n_experts=moe,
        top_k=int(cfg.moe_k) if moe else 0,
        expert_hidden=int(cfg.moe_intermediate_size) if moe else 0,
        tied_embeddings=bool(getattr(cfg, "tie_word_embeddings", False)),
        n_kv_heads=int(getattr(cfg, "num_key_value_heads", 0) or cfg.num_attention_heads),
        moe_layers=(sum(bool(is_moe(i)) for i in range(int(cfg.num_hidden_layers)))
                    if moe and is_moe else None),
        n_params_override=_count_params(model))


def _count_params(model) -> int:
    if hasattr(model, "num_parameters"):
        return int(model.num_parameters())
    return int(sum(int(p.size) for p in model.parameters()))


@dataclass(frozen=True)
class ClusterSpec:
    """The devices: count, memory each, throughput, and link bandwidths (bytes/s).

    ``flops`` is the sustained throughput one device reaches on training matmuls (measured,
    or a stated peak times an efficiency); ``intra_bw`` links devices within a node,
    ``inter_bw`` nodes with each other (per device).
    """

    devices: int
    memory: int                      # bytes per device
    flops: float = 150e12            # sustained flop/s per device
    intra_bw: float = 150e9          # bytes/s between devices of one node
    inter_bw: float = 25e9           # bytes/s per device between nodes
    mem_bw: float = 2e12             # bytes/s of device memory (the optimizer step is bound by it)
    nodes: int = 1
    usable: float = 0.9              # fraction of memory the model may fill (the rest: runtime)
    kind: str = "gpu"
    act_scale: float = 1.0           # measured activations / the formula (an implementation's
    #                                  own overhead: 1 for fused GPU kernels, more for numpy)
    step_overhead: float = 0.0       # seconds a step costs regardless of size (measured)
    mem_overhead: int = 0            # bytes a step holds regardless of size (measured)
    latency: float = 0.0             # seconds each message of a collective costs whatever its
    #                                  size (the alpha of alpha-beta; 0: bandwidth only)

    def __post_init__(self):
        if self.devices < 1 or self.nodes < 1 or self.devices % self.nodes:
            raise ValueError(f"devices ({self.devices}) must be a positive multiple of nodes "
                             f"({self.nodes})")
        if self.memory <= 0:
            raise ValueError(f"device memory must be positive, got {self.memory!r}")

    @property
    def per_node(self) -> int:
        return self.devices // self.nodes

    def bandwidth(self, span: int) -> float:
        """Bandwidth of a group whose members lie ``span`` consecutive ranks apart in all."""
        return self.intra_bw if span <= self.per_node else self.inter_bw

    def to_json(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class Choice:
    """One way to run: the layout, ZeRO stage, micro-batch and recomputation."""

    dp: int = 1
    tp: int = 1
    pp: int = 1
    ep: int = 1
    zero: int = 0
    micro_batch: int = 1
    recompute: bool = False

    @property
    def world(self) -> int:
        return self.dp * self.tp * self.pp

    def label(self) -> str:
        s = f"dp={self.dp},tp={self.tp},pp={self.pp}"
        if self.ep > 1:
            s += f",ep={self.ep}"
        if self.zero:
            s += f",zero={self.zero}"
        s += f",micro={self.micro_batch}"
        if self.recompute:
            s += ",recompute"
        return s


@dataclass
class Estimate:
    """Memory (bytes per device) and time (seconds per step) of one :class:`Choice`."""

    choice: Choice
    memory: dict = field(default_factory=dict)
    time: dict = field(default_factory=dict)
    n_micro: int = 1

    @property
    def peak_memory(self) -> int:
        return int(sum(self.memory.values()))

    @property
    def step_time(self) -> float:
        return float(self.time["step"])

    def to_json(self) -> dict:
        return {"choice": asdict(self.choice), "label": self.choice.label(),
                "memory": {k: int(v) for k, v in self.memory.items()},
                "peak_memory": self.peak_memory, "time": dict(self.time),
                "step_time": self.step_time, "n_micro": self.n_micro}


def activation_bytes_per_layer(spec: ModelSpec, b: int, t: int, elem: int,
                               recompute: bool) -> float:
    """Activations one layer keeps for backward for ``b`` sequences (see module doc)."""
    s, h, a = spec.seq_len, spec.d_model, spec.n_heads
    if recompute:
        return s * b * h * elem
    full = s * b * h * (10 + 24 / t + 5 * a * s / (h * t)) * elem / 2
    if spec.n_experts and spec.top_k:
        # the dense MLP's ~19 of 34 units are for one copy of width 4h; the experts keep
        # top_k routed copies of width expert_hidden, and each copy's input, gate weight and
        # combined output (~5 units; numpy's arrays in skiff's MoE: 1.0-1.3x this, where the
        # former 19 (top_k - 1) was 1.4-1.7x for narrow experts)
        f = spec.expert_hidden or spec.hidden
        full += s * b * h * (19 * (spec.top_k * f / (4 * h) - 1) + 5 * spec.top_k) / t \
            * elem / 2
    return full


def estimate(spec: ModelSpec, cluster: ClusterSpec, choice: Choice, *,
             global_batch: int, weight_bytes: int = 2, grad_bytes: int | None = None,
             optimizer: str = "adamw", overlap: bool = True, bucket_bytes: int = 25 * 2**20
             ) -> Estimate:
    """Memory and time of ``choice`` for ``global_batch`` sequences per step.

    ``weight_bytes`` 4 trains in fp32 (no master copy), 8 in float64 (the moments and ZeRO's
    flat copy in float64 too), 2 in 16-bit with a fp32 master copy in the optimizer state.
    ``optimizer`` ``adamw`` (two moments) or ``sgd`` (one, momentum).
    """
    c = choice
    w = weight_bytes
    g = grad_bytes if grad_bytes is not None else w
    state = max(4, w)  # the optimizer's moments: fp32, or the float64 model's dtype
    moments = {"adamw": 2, "adam": 2, "sgd": 1}[optimizer] * state
    o = moments + (4 if w < 4 else 0)
    per_dp = -(-global_batch // c.dp)  # the fullest rank of an uneven split
    n_micro = max(1, per_dp // c.micro_batch)

    dense_dev = spec.dense_params / (c.tp * c.pp)
    expert_dev = spec.expert_params / (c.tp * c.pp * c.ep)
    p_dev = dense_dev + expert_dev
    edp = c.dp // c.ep  # ranks holding the same experts: ZeRO shards experts over these
    shard_g = (c.dp, edp) if c.zero >= 2 else (1, 1)
    shard_o = (c.dp, edp) if c.zero >= 1 else (1, 1)
    mem = {
        "params": p_dev * w,
        "grads": (dense_dev / shard_g[0] + expert_dev / shard_g[1]) * g,
        "optimizer": (dense_dev / shard_o[0] + expert_dev / shard_o[1]) * o,
    }
    if c.zero >= 1 and w >= 4:
        # fp32 ZeRO steps a flat copy of this rank's slice of the weights (in 16-bit training
        # that copy is the fp32 master, already in ``o``)
        mem["master_shard"] = (dense_dev / shard_o[0] + expert_dev / shard_o[1]) * state
    layers = spec.n_layers / c.pp
    in_flight = min(c.pp, n_micro) if c.pp > 1 else 1
    per_layer = activation_bytes_per_layer(spec, c.micro_batch, c.tp, w, c.recompute)
    act = layers * per_layer * in_flight
    if c.recompute:  # one layer recomputed at a time holds its full activations
        act += activation_bytes_per_layer(spec, c.micro_batch, c.tp, w, False)
    act += spec.seq_len * c.micro_batch * spec.vocab / c.tp * 4  # fp32 logits, last stage
    mem["activations"] = act * cluster.act_scale
    if cluster.mem_overhead:
        mem["runtime"] = cluster.mem_overhead

    # --- time ---------------------------------------------------------------------------
    tokens = per_dp * c.dp * spec.seq_len  # every rank waits for the fullest one
    flops = (6 * spec.active_params + 12 * spec.n_layers * spec.d_model * spec.seq_len) * tokens
    if c.recompute:
        flops *= 4 / 3
    bubble = 1 + (c.pp - 1) / n_micro
    t_compute = flops / (c.world * cluster.flops) * bubble
    tp_bw = cluster.bandwidth(c.tp)
    dp_bw = cluster.bandwidth(c.tp * c.dp)
    pp_bw = cluster.bandwidth(c.world)
    grad_total = (dense_dev + expert_dev) * g
    t_dp = 2 * (c.dp - 1) / c.dp * dense_dev * g / dp_bw if c.dp > 1 else 0.0
    if spec.n_experts and edp > 1:
        t_dp += 2 * (edp - 1) / edp * expert_dev * g / dp_bw
    # per-message latency: what makes a small model's splits cost more than they save (a
    # ring all-reduce or reduce-scatter + all-gather is 2 (n-1) messages per bucket)
    alpha = cluster.latency
    if alpha and c.dp > 1:
        t_dp += max(1, math.ceil(grad_total / bucket_bytes)) * 2 * (c.dp - 1) * alpha
    t_backward = t_compute * 2 / 3
    if overlap and t_dp > 0 and c.zero < 2:  # skiff's ZeRO-2 reduce-scatters after backward
        buckets = max(1.0, grad_total / bucket_bytes)
        exposed_dp = max(t_dp - t_backward, t_dp / buckets)
    else:
        exposed_dp = t_dp
    act_msg = c.micro_batch * spec.seq_len * spec.d_model * w
    t_tp = (4 * 2 * (c.tp - 1) / c.tp * act_msg * layers * n_micro / tp_bw) if c.tp > 1 else 0.0
    t_pp = (2 * n_micro * act_msg / pp_bw) if c.pp > 1 else 0.0
    if alpha and c.tp > 1:  # 4 all-reduces per layer and micro-batch (2 forward, 2 backward)
        t_tp += 4 * layers * n_micro * 2 * (c.tp - 1) * alpha
    if alpha and c.pp > 1:  # one send forward and one back per micro-batch, plus the fill
        t_pp += 2 * (n_micro + c.pp - 1) * alpha
    t_ep = 0.0
    if spec.n_experts and c.ep > 1:
        routed = act_msg * spec.top_k
        t_ep = 4 * (c.ep - 1) / c.ep * routed * layers * n_micro / cluster.bandwidth(
            c.tp * c.dp)
        t_ep += 4 * (c.ep - 1) * layers * n_micro * alpha
    t_opt = p_dev * (w + g + 2 * o) / (c.dp if c.zero >= 1 else 1) / cluster.mem_bw
    step = t_compute + exposed_dp + t_tp + t_pp + t_ep + t_opt + cluster.step_overhead
    time = {"compute": t_compute, "dp_comm": t_dp, "dp_exposed": exposed_dp, "tp_comm": t_tp,
            "pp_comm": t_pp, "ep_comm": t_ep, "optimizer": t_opt, "bubble": bubble,
            "step": step}
    return Estimate(c, mem, time, n_micro)
