"""A shipped corpus's name mistyped in ``TextDataset`` says so in one line (round 48 h10).

``TextDataset("classic", block_size=128)`` (for "classics", as notebook 02 reads it) took the
word as the text itself, 7 bytes, and refused with "text of 7 bytes is shorter than
block_size + 1 = 129", which names neither the typo nor the corpora; packed, it trained on
the word. The oracle: the names of the shipped corpora (``CORPORA``)."""

from __future__ import annotations

import pytest

from skiff.kernels.train.data import CORPORA, TextDataset


@pytest.mark.parametrize("typo,meant", [("classic", "classics"), ("sonnet", "sonnets")])
def test_a_mistyped_corpus_name_is_named(typo, meant):
    assert meant in CORPORA and typo not in CORPORA
    for packed in (False, True):
        with pytest.raises(ValueError, match=f"did you mean the corpus '{meant}'") as err:
            TextDataset(typo, block_size=16, packed=packed)
        assert "\n" not in str(err.value)


def test_a_text_is_still_a_text():
    # words with spaces, or one word far from every corpus name, are the text to train on
    text = "to be or not to be, that is the question"
    assert len(TextDataset(text, block_size=8)) == (len(text) - 1) // 8
    assert TextDataset("abcdefghijklmnopqrstuvwxyz", block_size=4).source == "<text>"
