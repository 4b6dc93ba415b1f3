"""The sizes of an ERNIE-4.5 model (:class:`ErnieConfig`, the field names of its
``config.json``) and those of the published checkpoints (``PUBLISHED``): read by the model
(:mod:`.ernie`), its layers (:mod:`.ernie_layers`), the checkpoint loader and the planner."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from ..checks import positive_int

__all__ = ["ARCHITECTURES", "ErnieConfig", "PUBLISHED"]

ARCHITECTURES = {"Ernie4_5ForCausalLM": "ernie4_5", "Ernie4_5_MoeForCausalLM": "ernie4_5_moe"}

# the sizes of the published checkpoints' config.json files (ErnieConfig(**PUBLISHED[name]));
# the planner's presets of the same names are costed from these
_SHARED = dict(vocab_size=103424, head_dim=128, max_position_embeddings=131072,
               rope_theta=500000.0)
PUBLISHED = {
    "ernie-4.5-0.3b": dict(_SHARED, hidden_size=1024, intermediate_size=3072,
                           num_hidden_layers=18, num_attention_heads=16, num_key_value_heads=2,
                           tie_word_embeddings=True),
    "ernie-4.5-21b-a3b": dict(_SHARED, hidden_size=2560, intermediate_size=12288,
                              num_hidden_layers=28, num_attention_heads=20,
                              num_key_value_heads=4, tie_word_embeddings=True,
                              moe_num_experts=64, moe_k=6, moe_intermediate_size=1536,
                              moe_num_shared_experts=2, moe_layer_start_index=1,
                              moe_layer_end_index=27, moe_layer_interval=1),
    "ernie-4.5-300b-a47b": dict(_SHARED, hidden_size=8192, intermediate_size=28672,
                                num_hidden_layers=54, num_attention_heads=64,
                                num_key_value_heads=8, tie_word_embeddings=False,
                                moe_num_experts=64, moe_k=8, moe_intermediate_size=3584,
                                moe_num_shared_experts=0, moe_layer_start_index=3,
                                moe_layer_end_index=53, moe_layer_interval=1),
}


# transformers' config defaults a script may read that skiff's fields do not hold
_HF_DEFAULTS = {"use_cache": True}


@dataclass
class ErnieConfig:
    """The sizes of an ERNIE-4.5 model; the field names are those of its ``config.json``.

    ``moe_num_experts = 0`` is the dense model. ``lr`` and ``block_size`` are skiff's own
    (the Trainer's default learning rate and context length for text data)."""

    vocab_size: int = 103424
    hidden_size: int = 1024
    intermediate_size: int = 3072
    num_hidden_layers: int = 18
    num_attention_heads: int = 16
    num_key_value_heads: int = 2
    head_dim: int = 128
    max_position_embeddings: int = 131072
    rms_norm_eps: float = 1e-5
    rope_theta: float = 500000.0
    tie_word_embeddings: bool = True
    use_bias: bool = False
    pad_token_id: int | None = 0
    bos_token_id: int | None = 1
    eos_token_id: int | list | None = 2
    # mixture of experts (0 experts: dense)
    moe_num_experts: int = 0
    moe_k: int = 6
    moe_intermediate_size: int = 1536
    moe_num_shared_experts: int = 0
    moe_layer_start_index: int = 1
    moe_layer_end_index: int = -1  # -1: the last layer
    moe_layer_interval: int = 1
    moe_norm_min: float = 1e-12
    router_aux_loss_coef: float = 0.001
    output_router_logits: bool = False  # the reference adds the balancing loss only then
    # skiff's own
    lr: float = 1e-4
    block_size: int = 256
    extra: dict = field(default_factory=dict, repr=False)  # other config.json keys, kept

    def __post_init__(self):
        for name in ("vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers",
                     "num_attention_heads", "num_key_value_heads", "head_dim"):
            positive_int(f"ErnieConfig.{name}", getattr(self, name))
        if self.num_attention_heads % self.num_key_value_heads:
            raise ValueError(f"num_attention_heads ({self.num_attention_heads}) must be a "
                             f"multiple of num_key_value_heads ({self.num_key_value_heads})")
        if self.head_dim % 2:
            raise ValueError(f"head_dim must be even for the rotary embedding, got "
                             f"{self.head_dim}")
        if self.moe_num_experts and not 1 <= self.moe_k <= self.moe_num_experts:
            raise ValueError(f"moe_k must be in [1, moe_num_experts={self.moe_num_experts}], "
                             f"got {self.moe_k}")

    def __getattr__(self, name):
        """Other ``config.json`` keys read as attributes, as transformers' config reads them
        (``config.use_cache``: the file's value, else transformers' default True)."""
        extra = self.__dict__.get("extra")
        if extra is not None and name in extra:
            return extra[name]
        if name in _HF_DEFAULTS:
            return _HF_DEFAULTS[name]
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    @property
    def is_moe(self) -> bool:
        return self.moe_num_experts > 0

    @property
    def architecture(self) -> str:
        return "Ernie4_5_MoeForCausalLM" if self.is_moe else "Ernie4_5ForCausalLM"

    def is_moe_layer(self, layer: int) -> bool:
        """Whether layer ``layer`` has experts (the reference's rule)."""
        end = self.num_hidden_layers - 1 if self.moe_layer_end_index == -1 \
            else self.moe_layer_end_index
        return (self.is_moe and (layer + 1) % self.moe_layer_interval == 0
                and self.moe_layer_start_index <= layer <= end)

    def to_dict(self) -> dict:
        d = asdict(self)
        d.pop("extra")
        return d
