"""``--np 2`` over a folder with a PDF of several pages (round 30): rank 0 joined the ranks'
JSON lines a line from each in turn, so a document's pages (several lines from one input)
pushed the other rank's images among them and the file was not in the inputs' order. The
joined file is now put in the order of the inputs, a document's pages in page order."""

from __future__ import annotations

import json

from skiff.kernels.ocr.entry import _in_input_order, _join_ranks


def test_two_ranks_parts_come_back_in_input_order(tmp_path):
    items = ["a.png", "b.pdf", "c.png", "d.tiff", "e.png"]
    pages = {"b.pdf": 3, "d.tiff": 2}
    labels: list[str] = []
    for item in items:  # what a single process writes: the oracle
        labels += [f"{item}#page={k}" for k in range(1, pages[item] + 1)] if item in pages \
            else [item]
    out = tmp_path / "r.jsonl"
    for rank in (0, 1):  # rank r reads inputs r, r + 2, ...
        with open(f"{out}.part{rank}", "w", encoding="utf-8") as fh:
            for item in items[rank::2]:
                for label in [x for x in labels if x.split("#")[0] == item]:
                    fh.write(json.dumps({"image": label, "text": label.upper()}) + "\n")
    assert _join_ranks(str(out), 2, (1, 0)) == (1, 0)
    joined = [json.loads(line)["image"] for line in open(out, encoding="utf-8")]
    assert sorted(joined) == sorted(labels) and joined != labels  # what round 29 left
    _in_input_order(str(out), items)
    records = [json.loads(line) for line in open(out, encoding="utf-8")]
    assert [r["image"] for r in records] == labels
    assert all(r["text"] == r["image"].upper() for r in records)
    # --pages gives page labels as the inputs themselves
    _in_input_order(str(out), ["d.tiff#page=2", "a.png", "b.pdf#page=3", "b.pdf#page=1",
                               "b.pdf#page=2", "c.png", "e.png", "d.tiff#page=1"])
    assert [json.loads(line)["image"] for line in open(out, encoding="utf-8")] == \
        ["d.tiff#page=2", "a.png", "b.pdf#page=3", "b.pdf#page=1", "b.pdf#page=2", "c.png",
         "e.png", "d.tiff#page=1"]
