"""The rest of transformers 5's ``apply_chat_template`` (round 28), for skiff's tokenizers.

* ``tokenize`` left out: transformers 5 tokenizes (a ``BatchEncoding``); skiff's callers
  read the text. The result is a :class:`ChatText`: the text (a ``str``), which also reads
  as that ``BatchEncoding`` (``out["input_ids"]``, ``out.input_ids``, ``out.keys()``,
  ``model.generate(**out)``), so code written for either runs.
* ``continue_final_message=True``: the conversation ends inside its last message (what the
  template writes after the message's content is cut), for the model to continue it, as
  transformers finds it (a marker after the content, then cut there).
* ``return_assistant_tokens_mask=True`` (with ``tokenize=True``, ``return_dict=True``):
  ``assistant_masks``, 1 on every token that overlaps a ``{% generation %}`` span of the
  template, as transformers marks them (a template without the tag: all 0, as transformers,
  with a warning).
"""

from __future__ import annotations

import warnings

import numpy as np

__all__ = ["ChatText", "continue_final", "assistant_masks", "CONTINUE_TAG"]

CONTINUE_TAG = "CONTINUE_FINAL_MESSAGE_TAG "


class ChatText(str):
    """A rendered chat: the text, which also reads as transformers 5's default result of
    ``apply_chat_template`` (the ``BatchEncoding`` of the text, no special tokens added)."""

    def __new__(cls, text: str, tokenizer):
        obj = super().__new__(cls, text)
        obj._tokenizer = tokenizer
        obj._encoded = None
        return obj

    def _encoding(self):
        if self._encoded is None:
            self._encoded = self._tokenizer(str(self), add_special_tokens=False)
        return self._encoded

    def __getitem__(self, key):
        if isinstance(key, str):  # a BatchEncoding's key
            return self._encoding()[key]
        return str.__getitem__(self, key)

    def keys(self):
        return self._encoding().keys()

    def __getattr__(self, name):
        if name in ("input_ids", "attention_mask"):
            return self._encoding()[name]
        raise AttributeError(name)

    def __reduce__(self):  # pickled (a job's result): the text
        return (str, (str(self),))


def continue_final(template, messages, field, add_generation_prompt, kwargs) -> str:
    """The conversation rendered to end inside its last message's ``field`` (transformers'
    ``continue_final_message``)."""
    if add_generation_prompt:
        raise ValueError("continue_final_message and add_generation_prompt are not "
                         "compatible: continue_final_message continues the last message, "
                         "add_generation_prompt opens a new assistant message")
    if not messages:
        raise ValueError("continue_final_message is set but the conversation is empty")
    field = field if isinstance(field, str) else "content"
    final = messages[-1].get(field)
    if not isinstance(final, str):
        raise ValueError(f'continue_final_message: the final message has no text "{field}" '
                         "to continue")
    if field not in template.source:
        raise ValueError(f'continue_final_message is set to "{field}" but the chat template '
                         "does not read that field")
    tagged = [*messages[:-1], {**messages[-1], field: final + CONTINUE_TAG}]
    text = template.render(tagged, False, **kwargs)
    if final.strip() not in text or CONTINUE_TAG.strip() not in text:
        raise ValueError("continue_final_message is set but the final message does not appear "
                         "in the rendered chat (the template changes it)")
    at = text.rindex(CONTINUE_TAG.strip())
    return text[:at] if text[at:at + len(CONTINUE_TAG)] == CONTINUE_TAG else text[:at].rstrip()


def generation_spans(template, messages, add_generation_prompt, kwargs) -> list[tuple]:
    """The character spans of the template's ``{% generation %}`` blocks (none without the
    tag, with transformers' warning)."""
    from .chat import _GENERATION_TAG

    if not _GENERATION_TAG.search(template.source):
        warnings.warn("return_assistant_tokens_mask=True but the chat template has no "
                      "{% generation %} block: the mask is all 0 (as transformers)",
                      stacklevel=3)
        return []
    _, spans = template.assistant_spans(messages, add_generation_prompt=add_generation_prompt,
                                        **kwargs)
    return spans


def assistant_masks(offsets, spans) -> list[int]:
    """1 for each token whose (start, end) overlaps a span, as transformers marks them."""
    mask = [0] * len(offsets)
    k = 0
    for i, (start, end) in enumerate(offsets):
        while k < len(spans) and start >= spans[k][1]:
            k += 1
        if k == len(spans):
            break
        if end > spans[k][0]:
            mask[i] = 1
    return mask


def with_assistant_masks(enc, spans_per_row, batch: bool, return_tensors):
    """``enc`` (the call's encoding with ``offset_mapping``) with ``assistant_masks`` added
    and the offsets taken out again."""
    offsets = enc.pop("offset_mapping")
    rows = offsets if batch else [offsets]
    masks = [assistant_masks([tuple(int(v) for v in o) for o in np.asarray(r).reshape(-1, 2)],
                             spans) for r, spans in zip(rows, spans_per_row)]
    if return_tensors is None:
        enc["assistant_masks"] = masks if batch else masks[0]
        return enc
    arr = np.array(masks, dtype=np.int64)
    if return_tensors == "pt":
        import torch

        arr = torch.tensor(arr)
    enc["assistant_masks"] = arr
    return enc
