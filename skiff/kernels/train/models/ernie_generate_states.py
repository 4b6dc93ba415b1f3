"""``generate(..., return_dict_in_generate=True, output_hidden_states=True,
output_attentions=True)``: transformers' per-step hidden states and attention weights.

transformers returns, per generation step, what that step's forward computed: step 0 the
prompt's positions, step ``i`` the one position of the ``i``-th new token fed back (the
last new token is never fed). The model is causal, so each of these equals the same
positions of one forward over the final sequences, with transformers' attention mask of
generation (the prompt's mask, then 1 for every new position, a finished row's padding
included). skiff generates as usual, then runs that forward once
(:func:`~.ernie_hidden.forward_hidden`, :func:`~.ernie_attentions.forward_attentions`) and
cuts it by step: ``hidden_states[i]`` a tuple of ``num_hidden_layers + 1`` arrays (B, T_i, C)
(the embeddings, each layer, the last after the final norm), ``attentions[i]`` one (B, H,
T_i, S_i) array a layer. Padded prompt positions are 0 here (transformers computes values
no real token reads).
"""

from __future__ import annotations

import numpy as np

__all__ = ["generate_with_states", "beam_states", "STATE_OPTIONS"]

STATE_OPTIONS = ("output_hidden_states", "output_attentions")


def generate_with_states(model, want: dict, run, input_ids, attention_mask):
    """``run()`` (generate without the state options, returning a GenerateOutput) with
    ``hidden_states`` / ``attentions`` added as ``want`` asks."""
    from ..core.autograd import no_grad
    from .ernie_attentions import forward_attentions
    from .ernie_hidden import forward_hidden
    from .gpt import _host

    out = run()
    seq = np.asarray(out["sequences"])
    T0 = np.array(_host(input_ids), ndmin=2).shape[1]
    B, n = seq.shape[0], seq.shape[1] - T0
    mask = None
    if attention_mask is not None:
        mask = np.concatenate([np.array(_host(attention_mask), ndmin=2),
                               np.ones((B, n), dtype=np.int64)], axis=1)
    spans = [(0, T0)] + [(T0 + i - 1, T0 + i) for i in range(1, n)]
    with no_grad():
        if want.get("output_attentions"):
            _, states, atts = forward_attentions(model, seq, mask, holes=True)
            atts = [np.asarray(a.numpy()) for a in atts]
            out["attentions"] = tuple(tuple(a[:, :, s:e, :e] for a in atts) for s, e in spans)
        elif want.get("output_hidden_states"):
            _, states = forward_hidden(model, seq, mask, holes=True)
        if want.get("output_hidden_states"):
            states = [np.asarray(h.numpy()) for h in states]
            out["hidden_states"] = tuple(tuple(h[:, s:e] for h in states) for s, e in spans)
    return out


def beam_states(model, want: dict, run, input_ids, attention_mask, num_beams: int):
    """The same for beam search: ``run(fed)`` (``generate_beams`` with ``fed``, a list it
    fills with the rows each forward read) returns its GenerateOutput. transformers returns
    what each forward of its beam loop computed for the B * num_beams rows it ran: step 0
    the expanded prompts (B * num_beams, T, C), step ``i`` the newest position of each
    running beam (dead ones included, in its order), not reordered afterwards. Each step's
    rows run once more through one forward (causal: their last position is what the cached
    step computed), the prompt's mask repeated per beam, then 1s."""
    from ..core.autograd import no_grad
    from .ernie_attentions import forward_attentions
    from .ernie_hidden import forward_hidden
    from .gpt import _host

    fed: list = []
    out = run(fed)
    T0 = np.array(_host(input_ids), ndmin=2).shape[1]
    prompt_mask = None if attention_mask is None else \
        np.repeat(np.array(_host(attention_mask), ndmin=2), num_beams, axis=0)
    hidden, attentions = [], []
    with no_grad():
        for rows in fed:
            n, length = rows.shape
            mask = None if prompt_mask is None else np.concatenate(
                [prompt_mask, np.ones((n, length - T0), dtype=prompt_mask.dtype)], axis=1)
            s = 0 if length == T0 else length - 1
            if want.get("output_attentions"):
                _, states, atts = forward_attentions(model, rows, mask, holes=True)
                attentions.append(tuple(np.asarray(a.numpy())[:, :, s:] for a in atts))
            else:
                _, states = forward_hidden(model, rows, mask, holes=True)
            hidden.append(tuple(np.asarray(h.numpy())[:, s:] for h in states))
    if want.get("output_hidden_states"):
        out["hidden_states"] = tuple(hidden)
    if want.get("output_attentions"):
        out["attentions"] = tuple(attentions)
    return out
