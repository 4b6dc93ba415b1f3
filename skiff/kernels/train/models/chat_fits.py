"""Whether a chat / generate request fits the model's context, checked before a job runs.

``python -m skiff chat DIR "long prompt"`` (and ``%chat``, ``--prompts FILE``) measured the
prompt only inside the job, after its run folder was made ("the prompt is 70 tokens; with 4
new tokens it exceeds the model's context of 32 positions" in a failed job). Here the
checkpoint's ``config.json`` (``max_position_embeddings``) and its tokenizer are read (no
weights), each prompt rendered as the job renders it (:func:`.chat_reply.prompt_text`: the
chat template with the system message and history, or the plain text) and counted, and one
line names the prompt over the context with both lengths (round 45 h16).
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["check_folder_fits", "check_fits"]


def check_folder_fits(folder, prompts, *, max_new_tokens: int, given: bool = True,
                      **render) -> None:
    """:func:`check_fits` for a checkpoint folder (a peft adapter folder: its base's
    context, the adapter's tokenizer when it saved one, else the base's)."""
    from .hf_checkpoint import adapter_base, read_config
    from .tokenizer import load_tokenizer

    folder = Path(folder).expanduser()
    where = folder
    if not (folder / "config.json").is_file() and (folder / "adapter_config.json").is_file():
        where = adapter_base(folder)
    limit = read_config(where).max_position_embeddings
    tok = load_tokenizer(folder) or (load_tokenizer(where) if where != folder else None)
    if tok is None:  # before: the job failed after loading the weights
        raise ValueError(f"the checkpoint {os.fspath(folder)!r} has no tokenizer "
                         "(tokenizer.json or tokenizer.model): chat and generate read text")
    check_fits(tok, limit, prompts, max_new_tokens=max_new_tokens, given=given, **render)


def check_fits(tok, limit: int, prompts, *, max_new_tokens: int, given: bool = True,
               chat: bool = True, system=None, thinking=None, history=None) -> None:
    """One clear error when a prompt's tokens (as the job renders and encodes it) and the
    ``max_new_tokens`` pass the context ``limit``, naming each prompt over it (a batch:
    its number in the batch too) and both lengths. ``given``: the count was asked for
    (else it is the default, said so)."""
    from .chat_reply import prompt_text

    class _Named:  # prompt_text names the folder only when the tokenizer is missing
        source_folder = ""

    over = []
    for n, prompt in enumerate(prompts, 1):
        text = prompt_text(_Named, prompt, chat=chat, system=system, thinking=thinking,
                           tokenizer=tok, history=history)
        size = len(tok.encode(text))
        if size + int(max_new_tokens) > int(limit):
            over.append((n, prompt, size))
    if not over:
        return
    asked = f"{max_new_tokens} new tokens" + ("" if given else " (the default)")
    how = " as the chat template renders it" if chat else ""

    def named(prompt):
        short = " ".join(str(prompt).split())
        return repr(short if len(short) <= 40 else short[:37] + "...")

    if len(prompts) == 1:
        n, prompt, size = over[0]
        fix = (f"shorten it or ask at most {int(limit) - size} new tokens" if size < int(limit)
               else "shorten it: alone it fills the context")
        raise ValueError(f"the prompt {named(prompt)} is {size} tokens{how}; with {asked} "
                         f"it passes the model's context of {limit} positions ({fix})")
    said = ", ".join(f"{n} {named(p)} ({size} tokens)" for n, p, size in over[:3]) + (
        f" and {len(over) - 3} more" if len(over) > 3 else "")
    raise ValueError(f"prompt{'s' if len(over) > 1 else ''} {said} of {len(prompts)}{how}: "
                     f"with {asked}, over the model's context of {limit} positions "
                     "(shorten them or ask fewer new tokens)")
