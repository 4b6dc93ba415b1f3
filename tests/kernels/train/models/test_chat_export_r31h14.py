"""Round 31 (h14): ``ChatDataset`` is public as ``skiff.models.ChatDataset`` (docs/
open-models.md imported it from ``skiff.kernels.train.models.chat`` "not in skiff.models
(yet)"). The oracle is the kernel's own class: the public name is the same object."""

from __future__ import annotations

import re
from pathlib import Path


def test_chat_dataset_is_public():
    import skiff.models
    from skiff.kernels.train.models.chat import ChatDataset

    assert skiff.models.ChatDataset is ChatDataset
    assert "ChatDataset" in skiff.models.__all__
    space = {}
    exec("from skiff.models import *", space)
    assert space["ChatDataset"] is ChatDataset


def test_the_docs_import_it_from_the_public_name():
    doc = (Path(__file__).parents[4] / "docs" / "open-models.md").read_text(encoding="utf-8")
    assert "not in skiff.models (yet)" not in doc
    for line in re.findall(r"^from (\S+) import ChatDataset", doc, re.M):
        assert line == "skiff.models"
