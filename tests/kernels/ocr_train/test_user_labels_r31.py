"""Label files as users' tools write them (round 31): Notepad's UTF-16, files joined with
``cat`` (a byte-order mark inside), spreadsheet exports (quoted paths, empty trailing
columns, no-break spaces), macOS's decomposed accents, repeated rows; and the held-out
split that keeps a repeated crop on one side. The oracle for each file is the same rows
written plainly as UTF-8."""

from __future__ import annotations

import random
import unicodedata

import numpy as np
import pytest

from skiff.kernels.ocr_train.finetune import split_rows
from skiff.kernels.ocr_train.labels import Dictionary, LabelRow, read_labels

PLAIN = "imgs/a.png\tAB 12\nimgs/b 1.png\tBA21\n"


def _png(path):
    from PIL import Image

    Image.fromarray(np.full((32, 120), 255, np.uint8)).save(path)


@pytest.fixture
def folder(tmp_path):
    (tmp_path / "imgs").mkdir()
    for name in ("a.png", "b 1.png", "c.png"):
        _png(tmp_path / "imgs" / name)
    return tmp_path


def _chars():
    return Dictionary(list("AB12é"), space=True)


def _read(path, **kw):
    labels = read_labels(path, _chars(), **kw)
    return [(r.image, r.text, r.line) for r in labels.rows], labels


def test_utf16_and_joined_files_read_as_their_utf8_twin(folder):
    (folder / "plain.txt").write_text(PLAIN, encoding="utf-8")
    want, _ = _read(folder / "plain.txt")
    assert len(want) == 2
    for enc in ("utf-16", "utf-16-le", "utf-16-be"):  # Notepad's "Unicode" has the mark
        data = PLAIN.replace("\n", "\r\n").encode(enc)
        if enc != "utf-16":
            data = "\ufeff".encode(enc) + data
        (folder / "u16.txt").write_bytes(data)
        got, labels = _read(folder / "u16.txt")
        assert got == want and labels.encoding == "utf-16", (enc, labels.errors)
    # two files each with a byte-order mark, joined with `cat`: the mark is inside line 3
    (folder / "joined.txt").write_bytes(("\ufeff" + PLAIN).encode() +
                                        ("\ufeff" + "imgs/c.png\tAB\n").encode())
    got, labels = _read(folder / "joined.txt")
    assert got[:2] == want and [t for _, t, _ in got[2:]] == ["AB"], labels.errors


def test_spreadsheet_exports_and_look_alike_spaces(folder):
    (folder / "sheet.txt").write_text(
        '"imgs/b 1.png"\tBA21\t\t\n'       # quoted path, empty columns after the text
        "imgs/a.png\tAB\u00a012\n"         # a no-break space for the space
        "imgs/c.png\tA\u200bB\n"           # a zero-width space pasted in
        "imgs/c.png\tAB\tnote\n",          # line 4: a third column: one clear error
        encoding="utf-8")
    got, labels = _read(folder / "sheet.txt")
    assert [(t, k) for _, t, k in got] == [("BA21", 1), ("AB 12", 2), ("AB", 3)], labels.errors
    assert len(labels.errors) == 1 and "line 4" in labels.errors[0] \
        and "third column" in labels.errors[0], labels.errors
    # a character the dictionary has is never changed: a no-break space stays one when it is
    # a class of its own, and with --add-chars a real new character is still added
    chars = Dictionary(list("AB12\u00a0"), space=True)
    assert read_labels(folder / "sheet.txt", chars).rows[1].text == "AB\u00a012"


def test_decomposed_accents_are_composed_only_when_that_spells_them(folder):
    decomposed = unicodedata.normalize("NFD", "Aé")
    assert decomposed != "Aé"
    (folder / "mac.txt").write_text(f"imgs/a.png\t{decomposed}\n", encoding="utf-8")
    got, labels = _read(folder / "mac.txt")
    assert [t for _, t, _ in got] == ["Aé"], labels.errors
    # a dictionary without the composed letter: the row is one error, as before
    labels = read_labels(folder / "mac.txt", Dictionary(list("AB"), space=True))
    assert not labels.rows and "--add-chars" in labels.errors[0]


def test_one_crop_with_two_texts_is_one_warning_and_repeats_are_kept(folder):
    (folder / "dup.txt").write_text(PLAIN + PLAIN + "./imgs/a.png\tAB 21\n", encoding="utf-8")
    got, labels = _read(folder / "dup.txt")
    assert [k for _, _, k in got] == [1, 2, 3, 4, 5] and not labels.errors, labels.errors
    assert len(labels.warnings) == 1 and "line 5" in labels.warnings[0] \
        and "line 1" in labels.warnings[0] and "'AB 21'" in labels.warnings[0], labels.warnings


def _rows(n_images, repeats, seed=0):
    rng = random.Random(seed)
    rows = [LabelRow(f"/data/img{i}.png", "AB", 0) for i in range(n_images)
            for _ in range(rng.choice(repeats))]
    rng.shuffle(rows)
    return [LabelRow(r.image, r.text, k) for k, r in enumerate(rows, 1)]


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_the_held_out_split_keeps_a_repeated_crop_on_one_side(seed):
    rows = _rows(60, (1, 2, 3), seed)
    held, train = split_rows(rows, 0.1, seed)
    assert sorted(r.line for r in held + train) == list(range(1, len(rows) + 1))
    assert not {r.image for r in held} & {r.image for r in train}
    assert 0.1 * len(rows) <= len(held) <= 0.1 * len(rows) + 2
    # the oracle of what went wrong: a row-by-row draw of the same size shares images
    shuffled = list(rows)
    random.Random(seed).shuffle(shuffled)
    k = len(held)
    assert {r.image for r in shuffled[:k]} & {r.image for r in shuffled[k:]}


def test_the_split_of_distinct_rows_is_a_tenth_and_repeats_by_seed():
    rows = _rows(50, (1,))
    held, train = split_rows(rows, 0.1, 7)
    assert len(held) == 5 and len(train) == 45
    assert split_rows(rows, 0.1, 7) == (held, train)
    # every row the same image: nothing can be held out without also training on it
    same = [LabelRow("/data/one.png", "AB", k) for k in range(1, 21)]
    held, train = split_rows(same, 0.1, 0)
    assert held == [] and len(train) == 20


def test_a_line_longer_than_the_widest_batch_is_one_clear_error(tmp_path):
    """A 260-character line (a crop wide enough for it) cannot be aligned once a batch is
    squeezed to its widest, 1,600 px (200 frames): CTC's loss of it was zero, and the row
    was kept without a word. Oracle: torch's CTC loss on 200 frames of that target is
    infinite (no alignment)."""
    import torch
    from PIL import Image

    from skiff.kernels.ocr_train.finetune import FRAME_COLUMNS, MAX_TRAIN_WIDTH, _load

    frames = MAX_TRAIN_WIDTH // FRAME_COLUMNS
    target = torch.arange(1, 11).repeat(26)[None]  # 260 classes, no two equal neighbours
    loss = torch.nn.functional.ctc_loss(torch.zeros(frames, 1, 12).log_softmax(-1), target,
                                        [frames], [260], reduction="sum")
    assert torch.isinf(loss)
    Image.fromarray(np.full((48, 260 * 12), 255, np.uint8)).save(tmp_path / "long.png")
    _png(tmp_path / "ok.png")
    (tmp_path / "labels.txt").write_text("long.png\t" + "AB12" * 65 + "\nok.png\tAB\n",
                                         encoding="utf-8")
    labels = read_labels(tmp_path, _chars())
    crops, texts, errors = _load(labels.rows)
    assert texts == ["AB"] and len(errors) == 1, errors
    assert errors[0].startswith("line 1: 260 characters in one line") and "200 frames" \
        in errors[0] and "shorter crops" in errors[0], errors


@pytest.mark.parametrize("cut", ["half", "empty", "other"])
def test_a_checkpoint_cut_short_is_one_clear_error(tmp_path, cut):
    """A ``rec.ckpt`` cut short (a full disk, a copy stopped) or some other file: one line
    naming it and the fix, not pickle's own error."""
    import pickle

    from skiff.kernels.ocr_train.finetune import RecTrainer

    whole = pickle.dumps({"version": 1, "weights": {"w": np.zeros(1000, np.float32)}})
    ckpt = tmp_path / "rec.ckpt"
    ckpt.write_bytes({"half": whole[: len(whole) // 2], "empty": b"",
                      "other": pickle.dumps([1, 2])}[cut])
    with pytest.raises(ValueError, match=r"cannot resume from .*rec\.ckpt.*cannot be read"
                                         r".*drop --resume") as err:
        RecTrainer._restore(None, ckpt, None, None, 10, 10)
    assert "\n" not in str(err.value)


def test_a_windows_written_name_in_another_case_finds_its_one_file(folder):
    """A labels file written on Windows names ``IMGS\\A.PNG`` for ``imgs/a.png``: found
    when exactly one file matches; two files differing only in case stay an error."""
    _png(folder / "imgs" / "Twin.png")
    _png(folder / "imgs" / "twin.png")
    (folder / "win.txt").write_text("IMGS\\A.PNG\tAB\n"
                                    f"{str(folder / 'IMGS' / 'B 1.PNG')}\tBA\n"
                                    "imgs/TWIN.png\tAB\n", encoding="utf-8")
    got, labels = _read(folder / "win.txt")
    assert [(i, t) for i, t, _ in got] == [(str(folder / "imgs" / "a.png"), "AB"),
                                           (str(folder / "imgs" / "b 1.png"), "BA")]
    assert len(labels.errors) == 1 and "line 3" in labels.errors[0] \
        and "not found" in labels.errors[0], labels.errors
