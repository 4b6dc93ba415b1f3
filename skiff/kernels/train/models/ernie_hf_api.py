"""The small model methods transformers and peft scripts call on the model they train, for
ERNIE-4.5 (round 28; each was an AttributeError or a TypeError):

* ``num_parameters(only_trainable=False, exclude_embeddings=False)``: transformers' count
  (a tied table once; ``exclude_embeddings`` leaves the embedding table out; the MoE
  router's ``e_score_correction_bias``, a buffer here and a frozen Parameter there, counted);
* ``get_nb_trainable_parameters()`` -> ``(trainable, all)`` and
  ``print_trainable_parameters()`` (peft's line: ``trainable params: 896 || all params:
  19,488 || trainable%: 4.5977``), counting the adapters as peft counts them;
* ``merge_and_unload()``: peft's name for :func:`~.lora.merge_lora` (the adapters folded
  into the weights, plain layers back; returns the model);
* (round 29) ``model.model(ids, attention_mask=...)`` (the decoder, as ``get_decoder()``)
  returns ``last_hidden_state`` (the final norm's output, what the head reads; padded
  positions 0), as transformers' base model, for embeddings and pooling;
  ``can_generate()``, ``tie_weights()`` (the head is the embedding table again when the
  config ties them), ``name_or_path`` (the folder it was loaded from);
* (round 30) ``load_adapter(folder)`` (transformers' peft integration), ``with
  model.disable_adapter():`` (peft: the base model's outputs, e.g. DPO's reference
  logits), ``disable_adapters()`` / ``enable_adapters()``;
* (round 37) several named adapters as peft's ``PeftModel`` (:mod:`.lora_named`):
  ``load_adapter(DIR, adapter_name=)``, ``add_adapter(LoraConfig)``, ``set_adapter``,
  ``delete_adapter``, ``add_weighted_adapter``, ``active_adapter``, ``peft_config``;
  ``compute_transition_scores`` (transformers' per-token scores of a generate output);
* (round 40) ``merge_adapter(adapter_names=None, safe_merge=False)`` /
  ``unmerge_adapter()``: peft's in-place merge, the adapters kept (:mod:`.lora_merge`);
  ``set_adapter`` / ``disable_adapter`` on a merged model unmerge first, as peft;
* ``enable_input_require_grads()`` / ``disable_input_require_grads()``: what peft's
  ``prepare_model_for_kbit_training`` and gradient checkpointing ask of a torch model (an
  input that requires grad so that a recomputed block's frozen weights still pass
  gradients to the adapters); skiff's recomputation passes them without it, so these
  change nothing.
"""

from __future__ import annotations

import numpy as np

__all__ = ["TransformersModelApi", "BaseModelOutput", "decoder_forward"]


class BaseModelOutput:
    """transformers' ``BaseModelOutputWithPast`` as the decoder returns it: by attribute,
    by key, or ``out[0]`` (``last_hidden_state``)."""

    def __init__(self, last_hidden_state, hidden_states=None):
        self.last_hidden_state, self.hidden_states = last_hidden_state, hidden_states

    def __getitem__(self, key):
        if isinstance(key, str):
            return getattr(self, key)
        return tuple(v for v in (self.last_hidden_state, self.hidden_states)
                     if v is not None)[key]


def decoder_forward(decoder, input_ids=None, attention_mask=None, output_hidden_states=False,
                    **kwargs):
    """``model.model(ids)``: run by the language model that holds the decoder (the rotary
    angles and the paths live there)."""
    owner = decoder.__dict__.get("_owner")
    if owner is None:
        raise TypeError("this ErnieModel is not inside an ErnieForCausalLM: call the language "
                        "model (model(ids, output_hidden_states=True).hidden_states[-1])")
    if input_ids is None:
        raise TypeError("model.model needs input_ids (inputs_embeds are not supported)")
    kwargs.pop("use_cache", None)
    kwargs.pop("return_dict", None)
    out = owner(input_ids, attention_mask=attention_mask, output_hidden_states=True, **kwargs)
    return BaseModelOutput(out.hidden_states[-1],
                           out.hidden_states if output_hidden_states else None)


class TransformersModelApi:
    """Mixed into :class:`~.ernie.ErnieForCausalLM`."""

    def num_parameters(self, only_trainable: bool = False,
                       exclude_embeddings: bool = False) -> int:
        skip = set()
        if exclude_embeddings:
            from ..core import nn

            skip = {id(m.weight) for m in self.modules() if isinstance(m, nn.Embedding)}
        seen, total = set(), 0
        for p in self.parameters():
            if id(p) in seen or id(p) in skip or (only_trainable and not p.requires_grad):
                continue
            seen.add(id(p))
            total += int(p.size)
        if not only_trainable:  # transformers holds the router's bias as a frozen Parameter
            from .lora_named import parked_size

            total += sum(int(b.size) for n, b in self.named_buffers()
                         if n.endswith("e_score_correction_bias"))
            total += parked_size(self)  # the other named adapters, as peft counts them
        return total

    def get_nb_trainable_parameters(self) -> tuple[int, int]:
        return self.num_parameters(only_trainable=True), self.num_parameters()

    def print_trainable_parameters(self) -> None:
        trainable, total = self.get_nb_trainable_parameters()
        print(f"trainable params: {trainable:,d} || all params: {total:,d} || "
              f"trainable%: {100 * trainable / total:.4f}")

    def merge_and_unload(self, progressbar: bool = False, safe_merge: bool = False,
                         adapter_names=None):
        """peft's ``merge_and_unload()``: the active adapter folded in, the others dropped
        (a plain model, as peft leaves it). ``adapter_names``: those folded in instead
        (round 40: any loaded ones, active or not, each added as peft's merge adds them)."""
        from .lora import has_lora, merge_lora
        from .lora_merge import is_merged, merged_names, unmerge_in_place

        if not has_lora(self):
            raise ValueError("the model has no LoRA adapters to merge")
        if is_merged(self):  # merge_adapter() ran: those stay in, the others added (peft)
            asked = self.active_adapters() if adapter_names is None \
                else self._adapter_names(adapter_names)
            adapter_names = merged_names(self) + [n for n in asked
                                                  if n not in merged_names(self)]
            unmerge_in_place(self)
        if adapter_names is not None:
            names = self._adapter_names(adapter_names)
            if not names:  # peft folds none in: the base model
                return self.unload()
            if names != self.active_adapters():
                self.set_adapter(names if len(names) > 1 else names[0])
        return merge_lora(self)

    def unload(self):
        """peft's ``unload()``: the base model back, every adapter dropped unmerged."""
        from .lora_merge import forget_merged
        from .lora_named import unload_all

        self._adapter_names([])
        forget_merged(self)  # peft's unload leaves merged weights as they are
        return unload_all(self)

    def merge_adapter(self, adapter_names=None, safe_merge: bool = False) -> None:
        """peft's ``merge_adapter()`` (round 40, h14; :mod:`~.lora_merge`): the active
        adapters (or ``adapter_names``) folded into the base weights in place, the adapters
        kept; ``unmerge_adapter()`` takes them out again. ``safe_merge``: the merged
        weights checked for NaN / inf first (peft's error, nothing merged)."""
        from .lora_merge import merge_in_place

        names = self.active_adapters() if adapter_names is None \
            else self._adapter_names(adapter_names)
        merge_in_place(self, names, safe_merge=safe_merge)

    def unmerge_adapter(self) -> None:
        """peft's ``unmerge_adapter()``: every merged adapter taken out of the weights."""
        from .lora_merge import unmerge_in_place

        unmerge_in_place(self)

    def _unmerge_first(self) -> None:
        """peft's ``set_adapter`` on a merged model: unmerged first, with its warning."""
        import warnings

        from .lora_merge import is_merged, unmerge_in_place

        if is_merged(self):
            warnings.warn("Adapter cannot be set when the model is merged. Unmerging the "
                          "model first.", stacklevel=3)
            unmerge_in_place(self, warn=False)

    def load_adapter(self, peft_model_id, adapter_name=None, is_trainable: bool = False,
                     **kwargs):
        """transformers' ``model.load_adapter(folder)`` (its peft integration): the peft
        adapter folder put on this model (:func:`~.lora.load_adapter`); ``is_trainable``
        leaves it in training mode, as ``PeftModel.from_pretrained(..., is_trainable=True)``.
        On a model that has an adapter, ``adapter_name`` names the new one, loaded beside
        it and not active (peft's ``PeftModel.load_adapter``; :mod:`~.lora_named`):
        ``set_adapter(name)`` switches to it."""
        from .lora import has_lora, load_adapter
        from .lora_named import load_named, name_first

        if has_lora(self) and adapter_name is not None:
            load_named(self, peft_model_id, str(adapter_name))
        else:
            load_adapter(self, peft_model_id)
            name_first(self, str(adapter_name or "default"))
        if is_trainable:
            self.train()
        return self

    def add_adapter(self, adapter_config, adapter_name=None, low_cpu_mem_usage=False) -> None:
        """A fresh LoRA adapter from a peft ``LoraConfig`` (:func:`~.lora_named.add_fresh`):
        transformers' ``add_adapter(config, adapter_name=None)`` makes it active (its code
        calls ``set_adapter``); peft's ``PeftModel.add_adapter(name, config)`` (the name
        first) leaves the active one."""
        from .lora_named import add_fresh

        if isinstance(adapter_config, str):  # peft's order
            add_fresh(self, adapter_name, adapter_config, activate=False)
        else:
            self._unmerge_first()  # the new one is made active
            add_fresh(self, adapter_config, str(adapter_name or "default"), activate=True)

    def set_adapter(self, adapter_name, inference_mode: bool = False) -> None:
        """transformers' / peft's ``set_adapter(name)``: that adapter active (trainable, as
        peft's ``set_adapter``; ``inference_mode=True``: frozen), the others parked
        (:mod:`~.lora_named`); a name not loaded is transformers' error, naming them. A list
        (``set_adapter(["a", "b"])``, peft's LoraModel and transformers): every layer adds
        each of them, all trained (:func:`~.lora_named.set_many`)."""
        from .lora_named import set_many, set_trainable

        names = self._adapter_names(adapter_name)
        self._unmerge_first()
        set_many(self, names)
        set_trainable(self, not inference_mode)

    def active_adapters(self) -> list:
        """transformers' ``active_adapters()``: the active adapters' names."""
        from .lora_named import active_name, also_active

        self._adapter_names([])
        return [active_name(self), *also_active(self)]

    @property
    def active_adapter(self) -> str:
        """peft's ``PeftModel.active_adapter``: the active adapter's name (the first of a
        list; ``active_adapters()`` names them all, as peft's LoraModel)."""
        return self.active_adapters()[0]

    @property
    def peft_config(self) -> dict:
        """peft's ``peft_config``: each adapter's name with its LoRA settings (the keys of
        its ``adapter_config.json``), in the order they came."""
        from .lora_named import adapter_configs

        self._adapter_names([])
        return adapter_configs(self)

    def delete_adapter(self, adapter_name) -> None:
        """peft's / transformers' ``delete_adapter(name)`` (names): dropped; when the active
        one goes, the first left becomes active (none left: the base model)."""
        from .lora_named import delete_named, set_many

        names = self._adapter_names(adapter_name)
        self._unmerge_first()  # the merged updates read the adapters' own A and B
        for name in names:
            active = self.active_adapters()
            if len(active) > 1 and name in active:  # the others stay active, as peft's
                set_many(self, [n for n in active if n != name])
            delete_named(self, name)

    def add_weighted_adapter(self, adapters, weights, adapter_name, combination_type="svd",
                             svd_rank=None, svd_clamp=None, svd_full_matrices=True,
                             svd_driver=None, density=None, majority_sign_method="total"):
        """peft's ``add_weighted_adapter`` (``cat``, ``linear``, ``svd``, ``ties``,
        ``dare_ties``, ``dare_linear``, ``magnitude_prune`` and their ``*_svd`` forms;
        :func:`~.lora_named.add_weighted`): a new adapter mixing loaded ones, not active."""
        from .lora_named import add_weighted

        self._adapter_names([])
        self._unmerge_first()  # the mix switches adapters to read them
        if svd_clamp is not None:
            raise ValueError("svd_clamp is not supported here (its quantile depends on the "
                             "signs torch's SVD picks): leave it out")
        add_weighted(self, list(adapters), list(weights), str(adapter_name), combination_type,
                     svd_rank, density, majority_sign_method)

    def _adapter_names(self, adapter_name) -> list:
        from .lora_named import adapter_names

        loaded = adapter_names(self)
        if not loaded:
            raise ValueError("No adapter loaded. Please load an adapter first.")
        names = list(adapter_name) if isinstance(adapter_name, (list, tuple)) \
            else [adapter_name]
        missing = [n for n in names if n not in loaded]
        if missing:
            raise ValueError(f"Adapter with name {', '.join(map(str, missing))} not found. "
                             f"Please pass the correct adapter name among {loaded}")
        return names

    def disable_adapter(self):
        """peft's ``with model.disable_adapter():`` the base model's outputs (every LoRA
        layer its frozen layer alone; a reference model for DPO/KL terms, or a before/after
        comparison), the adapters back on leaving the block."""
        import contextlib

        @contextlib.contextmanager
        def block():
            self.disable_adapters()
            try:
                yield self
            finally:
                self.enable_adapters()

        return block()

    def disable_adapters(self) -> None:
        """transformers' name: the LoRA layers compute the base layer alone until
        :meth:`enable_adapters`."""
        self._set_adapters(True)

    def enable_adapters(self) -> None:
        self._set_adapters(False)

    def _set_adapters(self, off: bool) -> None:
        from .lora import GateUpLoRA, LoRALinear, has_lora
        from .lora_merge import reflag_merged, unmerge_in_place
        from .lora_modules_to_save import use_base_modules
        from .lora_tokens import TrainableTokensEmbedding, TrainableTokensHead

        if not has_lora(self):
            raise ValueError("the model has no LoRA adapters (apply_lora or load_adapter "
                             "first)")
        if off:  # peft's merged layer unmerges when its adapters are disabled
            unmerge_in_place(self, warn=False)
        for m in self.modules():
            if isinstance(m, (LoRALinear, GateUpLoRA, TrainableTokensEmbedding,
                              TrainableTokensHead)):
                m.disabled = off
        use_base_modules(self, off)  # modules_to_save: their values before training
        reflag_merged(self)  # a merged layer computes its (merged) base layer alone

    def compute_transition_scores(self, sequences, scores, beam_indices=None,
                                  normalize_logits: bool = False):
        """transformers' ``compute_transition_scores``: each generated token's score (batch,
        new) from ``generate(..., return_dict_in_generate=True, output_scores=True)``'s
        ``sequences`` and ``scores`` (``beam_indices`` for beams: the scores of the beam each
        token came from; 0 after a beam ended); ``normalize_logits``: log-softmax first.
        Torch tensors in, a torch tensor out; else a numpy array."""
        from .ernie_generate import _host

        torch_in = hasattr(sequences, "detach")
        seqs = np.asarray(_host(sequences.detach().cpu() if torch_in else sequences))
        steps = [np.asarray(_host(x.detach().cpu() if hasattr(x, "detach") else x),
                            dtype=np.float32) for x in scores]
        V = self.config.vocab_size
        if beam_indices is None:
            beams = np.broadcast_to(np.arange(steps[0].shape[0])[:, None],
                                    (steps[0].shape[0], len(steps)))
        else:
            beams = np.asarray(_host(beam_indices.detach().cpu()
                                     if hasattr(beam_indices, "detach") else beam_indices))
        stacked = np.stack(steps).reshape(len(steps), -1).T  # (rows * V, steps)
        if normalize_logits:
            z = stacked.reshape(-1, V, stacked.shape[-1]).astype(np.float64)
            top = z.max(axis=1, keepdims=True)
            top = np.where(np.isfinite(top), top, 0.0)
            z = z - top - np.log(np.exp(z - top).sum(axis=1, keepdims=True))
            stacked = z.astype(np.float32).reshape(-1, stacked.shape[-1])
        ended = beams < 0
        longest = int((~ended).sum(-1).max())
        beams, ended = np.array(beams[:, :longest]), ended[:, :longest]
        beams[ended] = 0
        at = seqs[:, seqs.shape[-1] - longest:] + beams * V
        out = np.take_along_axis(stacked, at, axis=0)
        out[ended] = 0
        if torch_in:
            import torch

            return torch.from_numpy(out)
        return out

    def enable_input_require_grads(self) -> None:
        return None

    def disable_input_require_grads(self) -> None:
        return None

    def get_decoder(self):
        return self.model

    def can_generate(self) -> bool:
        return True

    def tie_weights(self, *args, **kwargs) -> None:
        if self.config.tie_word_embeddings:
            self.lm_head.weight = self.model.embed_tokens.weight

    @property
    def name_or_path(self) -> str | None:
        return getattr(self, "source_folder", None)
