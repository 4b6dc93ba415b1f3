"""Round 33 (h8): ``ocr --help`` said ``--rec-model`` takes "the folder `train ocr-rec -o
DIR` wrote", but ``-o`` names a notebook variable (a terminal refuses it): the folder is
``--out DIR``. The oracle: the terminal's train parser, which takes the flag the help
names and refuses ``-o``."""

from __future__ import annotations

import re

from skiff.kinds import KINDS


def test_rec_model_help_names_the_flag_that_writes_the_folder():
    text = re.sub(r"\s+", " ", KINDS["ocr"].command.usage())
    said = text[text.rindex("--rec-model"):][:200]
    flag = re.search(r"`train ocr-rec (-\S+) DIR`", said).group(1)
    assert flag == "--out"
    terminal = KINDS["train"].command.parser("python -m skiff train", cli=True)
    assert flag in terminal._option_string_actions
    assert "-o" not in terminal._option_string_actions  # notebook-only there
