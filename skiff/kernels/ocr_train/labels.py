"""Labelled crops for fine-tuning a recognizer, and the character dictionary they need.

Three layouts are read:

* a PaddleOCR recognition label file, one ``path<TAB>text`` a line; blank lines and lines
  starting with ``#`` are skipped;
* a PaddleOCR detection label file (what PPOCRLabel writes to ``Label.txt``), one
  ``path<TAB>[{"transcription": ..., "points": [[x, y], ...]}, ...]`` a line: each box is a
  row of its own, cut from the page as the OCR pipeline cuts a detected line
  (:func:`skiff.kernels.ocr.rec.crop_box`); boxes marked ``###`` (PaddleOCR's "do not
  care") are left out;
* a folder of images with such a file inside it (``labels.txt``, ``label.txt``,
  ``Label.txt``, ``rec_gt.txt``, ``gt.txt`` or ``rec_gt_train.txt``, the first that exists).

A relative image path is looked up from the labels file's folder, then from the two
folders above it (PPOCRLabel writes ``folder/image.jpg`` into ``folder/Label.txt``; PaddleOCR's
``data_dir`` is often the parent), then from the working folder; an absolute one as it is.
A path written on Windows (backslashes) is looked up with slashes too, and in another
case (``IMG_1.JPG`` for ``img_1.jpg``) when exactly one file matches. The file is UTF-8,
GBK / GB18030 as a Chinese Windows saves it, or UTF-16 with its byte-order mark (Notepad's
"Unicode"); ``LabelSet.encoding`` says which. A file of UTF-8 and GBK lines joined is read
line by line (a warning); a Windows-1252 line that GBK would misread ('25°C' as '25癈') is
refused naming it. A byte-order mark at the start of any line (files
joined with ``cat``), quotes around a path, and empty columns after the text are ignored.

A bad row is one clear line naming the file and the line number (a missing image, an empty
text, no tab, a character the dictionary lacks when adding is off); the good rows are kept.

>>> chars = Dictionary(["0", "1"], space=True)
>>> chars.encode("10 1")
[2, 1, 3, 2]
"""

from __future__ import annotations

import itertools
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["LabelRow", "LabelSet", "Dictionary", "read_labels", "read_label_files",
           "label_files", "find_labels_file", "LABEL_FILE_NAMES"]

LABEL_FILE_NAMES = ("labels.txt", "label.txt", "Label.txt", "rec_gt.txt", "gt.txt",
                    "rec_gt_train.txt")
IGNORED = "###"  # PaddleOCR's transcription for a box to leave out


@dataclass(frozen=True)
class LabelRow:
    image: str  # absolute path
    text: str
    line: int  # 1-based line in the labels file
    box: tuple | None = None  # four (x, y) corners on the page, or None: the whole image
    file: str = ""  # the labels file's name, as its messages say it (several files: which)


@dataclass
class LabelSet:
    """The good rows of a labels file and one message per bad row."""

    source: str
    rows: list[LabelRow] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)  # rows kept, but worth a look
    added: list[str] = field(default_factory=list)  # characters added to the dictionary
    lacking: dict = field(default_factory=dict)  # a character the dictionary lacks (no
    # add_chars) -> the rows left out for it
    lacking_rows: int = 0  # the rows (boxes) left out for such characters
    encoding: str = "utf-8"  # "gb18030" (GBK, a Chinese Windows), "utf-16" (Notepad), or
    # "utf-8+gb18030": files of both joined, each line read in its own

    def __len__(self) -> int:
        return len(self.rows)


class Dictionary:
    """A CTC recognizer's classes in PaddleOCR's layout: blank first, the characters, then
    the space class when the model has one. New characters go before the space class, so
    every existing class keeps its index."""

    def __init__(self, chars: list[str], *, space: bool):
        self.chars = list(chars)
        self.space = bool(space)
        self._index = {c: i + 1 for i, c in enumerate(self.chars)}
        if self.space:
            self._index.setdefault(" ", len(self.chars) + 1)
        self.base_size = self.num_classes

    @classmethod
    def from_model(cls, proto, classes: int | None = None) -> Dictionary:
        """From a recognizer's ``character`` metadata (one character a line)."""
        meta = {p.key: p.value for p in proto.metadata_props}
        if "character" not in meta:
            raise ValueError("the rec model carries no 'character' metadata: give a "
                             "dictionary file (one character a line)")
        return cls.from_text(meta["character"], classes)

    @classmethod
    def from_text(cls, text: str, classes: int | None = None) -> Dictionary:
        chars = text.split("\n")
        while chars and chars[-1] == "":
            chars.pop()
        space = classes is None or classes == len(chars) + 2
        if classes is not None and classes not in (len(chars) + 1, len(chars) + 2):
            raise ValueError(f"rec model has {classes} classes but the dictionary gives "
                             f"{len(chars)} characters (+ blank + space)")
        return cls(chars, space=space)

    @property
    def num_classes(self) -> int:
        return len(self.chars) + 1 + int(self.space)

    @property
    def alphabet(self) -> list[str]:
        """Class index -> text, as the OCR pipeline's decoder reads it."""
        return ["", *self.chars] + ([" "] if self.space else [])

    def missing(self, text: str) -> list[str]:
        return sorted({c for c in text if c not in self._index})

    def add(self, new: list[str]) -> None:
        """Append characters (before the space class)."""
        for c in new:
            if c not in self._index:
                self.chars.append(c)
                self._index[c] = len(self.chars)
        if self.space:
            self._index[" "] = len(self.chars) + 1

    def encode(self, text: str) -> list[int]:
        return [self._index[c] for c in text]

    def decode(self, ids) -> str:
        alpha = self.alphabet
        return "".join(alpha[i] for i in ids if 0 < i < len(alpha))

    def text(self) -> str:
        """The ``character`` metadata for an exported model."""
        return "\n".join(self.chars)


def find_labels_file(data: str | Path) -> Path:
    """``data`` itself when it is a file; inside a folder, the first of
    :data:`LABEL_FILE_NAMES`, else its one ``.txt`` file whose first line is
    ``image<TAB>text`` (a dataset's own name: ``train_list.txt``); a missing path, or a
    folder without one (or with several such files: they are named) is one clear error."""
    path = Path(data).expanduser()
    if path.is_file():
        return path
    if path.is_dir():
        for name in LABEL_FILE_NAMES:
            if (path / name).is_file():
                return path / name
        tabbed = [p for p in sorted(path.glob("*.txt")) if _first_line_tabbed(p)]
        if len(tabbed) == 1:
            return tabbed[0]
        if tabbed:
            raise ValueError(f"folder {str(path)!r} has several labels files ("
                             f"{', '.join(p.name for p in tabbed)}): give one with --data")
        raise ValueError(f"folder {str(path)!r} has no labels file (one of "
                         f"{', '.join(LABEL_FILE_NAMES)}, or a .txt file of "
                         "'image<TAB>text' lines)")
    raise ValueError(f"labels {str(path)!r}: no such file or folder")


# the held-out files PaddleOCR's layouts put beside the training one: its docs'
# train_data/rec/rec_gt_test.txt, PPOCRLabel's gen_ocr_train_val_test.py val.txt / test.txt
HELD_OUT_NAMES = ("rec_gt_test.txt", "rec_gt_val.txt", "val.txt", "test.txt",
                  "val_list.txt", "test_list.txt", "rec_gt_eval.txt", "eval.txt")


def held_out_beside(source: str | Path) -> Path | None:
    """A held-out labels file in the folder of the training labels file ``source`` (one of
    :data:`HELD_OUT_NAMES` whose first line is ``image<TAB>text``), else None: a run without
    ``--val`` holds out a share of ``--data`` and never reads it, which a PaddleOCR user
    whose config names it as the eval set would not guess (round 42)."""
    path = Path(source)
    for name in HELD_OUT_NAMES:
        other = path.parent / name
        if other.is_file() and other.name != path.name and _first_line_tabbed(other):
            return other
    return None


def lacking_note(sets: list[LabelSet]) -> str | None:
    """One line for the rows of ``sets`` left out because the dictionary lacks a character
    (without ``add_chars``): each such row was its own error among the others, and a run
    whose labels wrote ``№`` in half their rows trained on the other half, 196 errors alike
    in its log (round 45). None when no row was left out so."""
    lacking: dict[str, int] = {}
    for one in sets:
        for c, n in one.lacking.items():
            lacking[c] = lacking.get(c, 0) + n
    if not lacking:
        return None
    left = sum(one.lacking_rows for one in sets)
    total = sum(len(one.rows) + len(one.errors) for one in sets)
    chars = sorted(lacking.items(), key=lambda kv: -kv[1])
    return (f"{left} of {total} rows ({left / max(total, 1):.0%}) are left out for "
            "characters the model's dictionary lacks: "
            + ", ".join(f"{c!r} (U+{ord(c):04X}) in {n}" for c, n in chars[:8])
            + (f" and {len(chars) - 8} more" if len(chars) > 8 else "")
            + "; --add-chars (add_chars=True) adds them and trains those rows")


def held_out_in(data):
    """The labels file ``--val`` means: where it names a folder holding a held-out file
    (:data:`HELD_OUT_NAMES`: PaddleOCR's ``train_data/rec`` with ``rec_gt_train.txt`` and
    ``rec_gt_test.txt``), that file; else ``data`` as given. ``--val train_data/rec`` found
    the folder's training file first (``rec_gt_train.txt`` is a labels file name) and
    measured the model on the crops it trained on (round 45)."""
    if isinstance(data, (list, tuple)) or not Path(str(data)).expanduser().is_dir():
        return data
    folder = Path(str(data)).expanduser()
    for name in HELD_OUT_NAMES:
        if (folder / name).is_file() and _first_line_tabbed(folder / name):
            return str(folder / name)
    return data


def _first_line_tabbed(path: Path) -> bool:
    """Whether the first non-empty line of ``path`` reads ``something<TAB>something``."""
    try:  # the tab is all that is looked for: a GBK file (see _label_lines) counts too
        with open(path, encoding="utf-8-sig", errors="replace") as fh:
            for line in itertools.islice(fh, 20):
                if line.strip():
                    left, tab, right = line.rstrip("\n").partition("\t")
                    return bool(tab and left.strip() and right.strip())
    except (OSError, UnicodeDecodeError):
        return False
    return False


def read_labels(data: str | Path, dictionary: Dictionary, *, add_chars: bool = False,
                check_images: bool = True) -> LabelSet:
    """Read a labels file (or a folder with one); see the module docstring.

    With ``add_chars`` a character the dictionary lacks is added to it (``LabelSet.added``);
    without, that row is an error naming the characters.
    """
    path = find_labels_file(data)
    root = path.parent
    out = LabelSet(str(path))
    lines, out.encoding = _label_lines(path)
    where = path.name
    if "+" in out.encoding:
        out.warnings.append(f"{where} mixes UTF-8 and GBK lines (files joined?): each line "
                            "was read in its own encoding; save it as UTF-8")
    seen: dict[tuple, tuple[int, str]] = {}  # (image, box) -> (line, text) of its first row
    padded: list[int] = []  # lines whose text had spaces at its ends
    spaced: list[int] = []  # lines of ICDAR's 'image, "text"'
    listings: dict = {}  # folders listed to find a name written in another case
    moved: list[int] = []  # lines whose absolute path (another machine's) was found here
    read_as: dict[tuple[str, str], list[int]] = {}  # (typed, read) -> lines: _read_as
    scored: list[int] = []  # lines with a reading's score after the text (_score)
    difficult: list[tuple[int, int]] = []  # (line, boxes) marked difficult: left out
    for k, raw in enumerate(lines, 1):
        raw = raw.lstrip(_BOM)  # files joined with `cat` keep each one's byte-order mark
        if not raw.strip() or raw.lstrip().startswith("#"):
            continue
        name, tab, text = raw.partition("\t")
        if not tab:
            split = _icdar(raw.strip("\r\n"), root, listings)
            if split is None:
                out.errors.append(f"{where} line {k}: no tab between image and text: "
                                  f"{raw[:60]!r}"
                                  + _space_hint(raw.strip("\r\n"), root, listings))
                continue
            name, text = split
            spaced.append(k)
        text, extra = _columns(text.strip("\r\n"))
        if extra and _score(extra):  # PaddleOCR's infer_rec.py: 'path<TAB>text<TAB>score'
            scored.append(k)
            extra = ""
        if extra:
            out.errors.append(f"{where} line {k}: a third column after a second tab "
                              f"({extra[:40]!r}): a row is 'image<TAB>text'; a tab inside "
                              "the text cannot be learnt")
            continue
        name = _unquote(name.strip())
        if not name:
            out.errors.append(f"{where} line {k}: no image path before the tab")
            continue
        if not out.rows and not out.errors and _header(name, text, root, listings):
            out.warnings.append(f"{where} line {k}: column names ({name!r}, {text.strip()!r}), "
                                "not a row: skipped (PaddleOCR's files have no header)")
            continue
        text = _clean_text(text, dictionary, read_as, k)
        if not text.strip():
            out.errors.append(f"{where} line {k}: empty text for image {name!r}")
            continue
        if text != text.strip():  # typed or exported with spaces at the ends ("AB-12 ")
            padded.append(k)
            text = text.strip()
        image = _locate(name, root, listings)
        if image is None:
            image = _moved(name, root)
            if image is not None:
                moved.append(k)
        if check_images and image is None:
            out.errors.append(f"{where} line {k}: {_not_found(name, root)}")
            continue
        image = image or root / name
        hard: list[str] = []
        boxes = _boxes(text, hard)
        if hard:
            difficult.append((k, len(hard)))
        if isinstance(boxes, str):
            out.errors.append(f"{where} line {k}: {boxes}")
            continue
        for words, box in boxes or [(text, None)]:
            missing = dictionary.missing(words)
            if missing:
                if not add_chars:
                    out.lacking_rows += 1
                    for c in missing:
                        out.lacking[c] = out.lacking.get(c, 0) + 1
                    out.errors.append(
                        f"{where} line {k}: {''.join(missing)!r} not in the model's "
                        f"dictionary (text {words!r}); use --add-chars to add new characters")
                    continue
                dictionary.add(missing)
                out.added.extend(c for c in missing if c not in out.added)
            key = (os.path.realpath(image), box)  # a crop file's rows (boxes cut their page)
            if box is None and key in seen and seen[key][1] != words:
                out.warnings.append(
                    f"{where} line {k}: image {name!r} is labelled {seen[key][1]!r} on line "
                    f"{seen[key][0]} and {words!r} here: one crop, two texts (both train, "
                    "as PaddleOCR trains them; correct the wrong one)")
            seen.setdefault(key, (k, words))
            out.rows.append(LabelRow(str(image), words, k, box, where))
    if spaced:
        out.warnings.append(
            f"{where}: {len(spaced)} row(s) in ICDAR's form 'image, \"text\"', not "
            "PaddleOCR's 'image<TAB>text' (line "
            + ", ".join(map(str, spaced[:5])) + (", ..." if len(spaced) > 5 else "")
            + "): read as image and text")
    if moved:
        out.warnings.append(
            f"{where}: {len(moved)} row(s) name an absolute path that is not on this machine "
            "(line " + ", ".join(map(str, moved[:5])) + (", ..." if len(moved) > 5 else "")
            + f"): read as the file of the same last folders under {str(root)!r}")
    if scored:
        out.warnings.append(
            f"{where}: {len(scored)} row(s) have a score after the text (line "
            + ", ".join(map(str, scored[:5])) + (", ..." if len(scored) > 5 else "")
            + "), as PaddleOCR's infer_rec.py and PPOCRLabel's auto-recognition write a "
            "model's readings: the text trains, the score is left out (as PaddleOCR reads "
            "them); a reading not checked by hand teaches the model its own mistakes")
    if difficult:
        lines_ = [k for k, _ in difficult]
        out.warnings.append(
            f"{where}: {sum(n for _, n in difficult)} box(es) marked difficult in PPOCRLabel "
            "(line " + ", ".join(map(str, lines_[:5])) + (", ..." if len(lines_) > 5 else "")
            + ") left out, as PPOCRLabel's Export Recognition Result leaves them out (the "
            "text of an unclear line is a guess); untick 'difficult' to train a box")
    mixed = _width_mix(out.rows)
    if mixed:
        out.warnings.append(f"{where}: {mixed}")
    for (typed, got), lines_ in read_as.items():
        out.warnings.append(
            f"{where}: {typed!r} (U+{ord(typed):04X}) is not in the model's dictionary: "
            f"read as {got!r} (U+{ord(got):04X}), the character it reads that glyph as, in "
            f"{len(lines_)} row(s) (line " + ", ".join(map(str, lines_[:5]))
            + (", ..." if len(lines_) > 5 else "") + ")")
    if padded:
        # the pipeline reads a line without them (ctc_decode strips its ends): learnt, they
        # taught a space no reading keeps, and a held-out row with them never read as right
        out.warnings.append(
            f"{where}: {len(padded)} row(s) had spaces at the ends of their text (line "
            + ", ".join(map(str, padded[:5])) + (", ..." if len(padded) > 5 else "")
            + "): read without them, as the recognizer reads a line")
    return out


_BOM = "\ufeff"
# spaces a spreadsheet or a word processor writes for ' ' (no-break, narrow no-break,
# figure space), and invisible characters pasted with the text (zero-width space, a
# byte-order mark): read as a space and as nothing when the dictionary lacks them
_SPACES = {"\u00a0": " ", "\u202f": " ", "\u2007": " "}
_INVISIBLE = {"\u200b": "", _BOM: ""}
# one glyph, two code points: the micro sign a keyboard types (AltGr+m, Option+m) and the
# Greek mu; PP-OCRv4's dictionary has only mu, so '12.5µA' was an error (or, with
# --add-chars, a new class for a glyph the model already reads). NFC leaves them apart.
_TWINS = {"\u00b5": "\u03bc", "\u03bc": "\u00b5"}
_HEADER_WORD = re.compile(r"[A-Za-z][A-Za-z_ ]{0,30}")


def _width_mix(rows: list[LabelRow]) -> str:
    """A warning where some rows write letters or digits full-width (``Ｃ７``, a Chinese or
    Japanese IME left in full-width mode) and others write the same ones half-width: the
    model learns them as other characters and reads a held-out line either way. Measured on
    licence plates (round 44), a third of 400 rows typed full-width: the tuned model read 47
    of 100 held-out plates with full-width characters, 48 exact (99 with one width)."""
    full: dict[str, list[int]] = {}
    half: dict[str, int] = {}
    for r in rows:
        for c in set(r.text):
            if c.isalnum() and "\uff10" <= c <= "\uff5a":
                full.setdefault(chr(ord(c) - 0xFEE0), []).append(r.line)
            elif c.isascii() and c.isalnum():
                half[c] = half.get(c, 0) + 1
    both = sorted(c for c in full if c in half)
    if not both:
        return ""
    lines = sorted({k for c in both for k in full[c]})
    wide = "".join(chr(ord(c) + 0xFEE0) for c in both[:8])
    return (f"{len(lines)} row(s) write {wide!r} full-width (line "
            + ", ".join(map(str, lines[:5])) + (", ..." if len(lines) > 5 else "")
            + f") where other rows write {''.join(both[:8])!r} half-width: an input method in "
            "full-width mode? The model learns them as other characters and reads a line "
            "either way; write them one way")


def _header(name: str, text: str, root: Path, listings: dict) -> bool:
    """Whether the first row is a table's column names (``image_path<TAB>label``, as
    pandas' ``to_csv(sep='\t')`` or a spreadsheet writes them): two plain words, the first
    without an image's suffix and naming no file. It was one "image 'image_path' not found"
    error, as if a crop were missing (round 42)."""
    text = text.strip()
    return (bool(_HEADER_WORD.fullmatch(name)) and bool(_HEADER_WORD.fullmatch(text))
            and not Path(name).suffix and _locate(name, root, listings) is None)


def label_files(data) -> list[str]:
    """The labels files ``data`` names: one path, a list of them (PaddleOCR's
    ``label_file_list``), or paths joined by commas (``--data a.txt,b.txt``) where the whole
    string names no file and each part names one; else ``[data]`` (its error is read_labels')."""
    if isinstance(data, (list, tuple)):
        return [str(d) for d in data]
    data = str(data)
    parts = [p.strip() for p in data.split(",")]
    if len(parts) > 1 and not os.path.exists(os.path.expanduser(data)) \
            and all(p and os.path.exists(os.path.expanduser(p)) for p in parts):
        return parts
    return [data]


def read_label_files(data, dictionary: Dictionary, *, add_chars: bool = False,
                     check_images: bool = True) -> LabelSet:
    """:func:`read_labels` of each file :func:`label_files` finds in ``data``, their rows,
    messages and added characters joined (each message names its file, each row keeps it):
    PaddleOCR's ``label_file_list`` for one run, where skiff read a single file (round 39)."""
    files = label_files(data)
    if len(files) == 1:
        return read_labels(files[0], dictionary, add_chars=add_chars,
                           check_images=check_images)
    sets = [read_labels(f, dictionary, add_chars=add_chars, check_images=check_images)
            for f in files]
    out = LabelSet(" + ".join(s.source for s in sets))
    for one in sets:
        out.rows += one.rows
        out.errors += one.errors
        out.warnings += one.warnings
        out.added += [c for c in one.added if c not in out.added]
        out.lacking_rows += one.lacking_rows
        for c, n in one.lacking.items():
            out.lacking[c] = out.lacking.get(c, 0) + n
    out.encoding = next((s.encoding for s in sets if s.encoding != "utf-8"), "utf-8")
    return out


def _columns(text: str) -> tuple[str, str]:
    """The text of a row and what follows a second tab (empty columns, as a spreadsheet
    leaves them, are nothing)."""
    text, tab, extra = text.partition("\t")
    return text, extra.strip() if tab else ""


def _score(column: str) -> bool:
    """Whether a third column is a reading's confidence (``0.99873``, as PaddleOCR's
    ``tools/infer_rec.py`` writes ``file<TAB>text<TAB>score``): a decimal number from 0 to 1.
    Such a file (pre-labelled crops) was one "third column" error a row, where PaddleOCR's
    SimpleDataSet trains the second column (round 44)."""
    if "." not in column or not re.fullmatch(r"[0-9.eE+-]+", column):
        return False
    try:
        return 0.0 <= float(column) <= 1.0
    except ValueError:
        return False


def _icdar(line: str, root: Path, listings: dict) -> tuple[str, str] | None:
    """(image, text) of an ICDAR word-recognition row, ``word_1.png, "Tiredness"`` (the
    quotes dropped, an escaped ``\\"`` inside read as ``"``), when its image exists; else
    None (the row is an error)."""
    name, sep, text = line.partition(", ")
    text = text.strip(" ")
    if not sep or len(text) < 2 or not text[0] == text[-1] == '"':
        return None
    name = _unquote(name.strip())
    if not name or _locate(name, root, listings) is None:
        return None
    return name, text[1:-1].replace('\\"', '"')


def _space_hint(line: str, root: Path, listings: dict) -> str:
    """A hint for a row without a tab whose words up to a space name an existing image:
    the first word, or more where the path has spaces in it (``imgs/plate 0002.png SN
    XY12``: only the first word was tried, so such a row had no hint; round 39)."""
    at = line.find(" ")
    for _ in range(MAX_PATH_SPACES + 1):
        if at < 0:
            break
        name = _unquote(line[:at].strip())
        if name and line[at:].strip() and _locate(name, root, listings) is not None:
            return (" (a space separates the image from the text: a row is "
                    "'image<TAB>text', as PaddleOCR reads it)")
        at = line.find(" ", at + 1)
    return ""


MAX_PATH_SPACES = 8  # spaces tried inside an image's path before the text's first


def _unquote(name: str) -> str:
    """A path as a spreadsheet's export quotes it (``"img 1.png"``), without the quotes."""
    if len(name) >= 2 and name[0] == name[-1] and name[0] in "\"'":
        return name[1:-1].strip()
    return name


def _clean_text(text: str, dictionary: Dictionary, read_as: dict | None = None,
                line: int = 0) -> str:
    """``text`` with the look-alikes a dictionary lacks made what it has: a no-break space
    a space, a zero-width space or stray byte-order mark nothing, a decomposed accent
    (``e`` + U+0301, as macOS writes it) composed (NFC) when that spells it with fewer
    missing characters, a glyph's other code point (:func:`_read_as`) for one it lacks (each
    such ``(typed, read)`` pair's lines into ``read_as``). Characters the dictionary has
    are never changed."""
    if not dictionary.missing(text):
        return text
    out = "".join(_SPACES.get(c, _INVISIBLE.get(c, c)) if c not in dictionary._index else c
                  for c in text)
    out = "".join(_TWINS[c] if c in _TWINS and c not in dictionary._index
                  and _TWINS[c] in dictionary._index else c for c in out)
    import unicodedata

    nfc = unicodedata.normalize("NFC", out)
    if nfc != out and len(dictionary.missing(nfc)) < len(dictionary.missing(out)):
        out = nfc
    read = "".join(_read_as(c, dictionary) or c for c in out)
    if read != out and read_as is not None:
        for c, r in zip(out, read):
            if c != r:
                read_as.setdefault((c, r), []).append(line)
    return read


# the same glyph under other code points, the first the dictionary has is read for one it
# lacks: the middle dot of a Chinese plate or name typed with a Japanese IME (U+30FB, or its
# half-width U+FF65) or a maths operator, and the wave dash (a Mac's U+301C, Windows' U+FF5E)
_LOOKALIKES = ("·・･‧∙⋅", "～〜~")


def _read_as(c: str, dictionary: Dictionary) -> str | None:
    """The character the dictionary has for the glyph ``c`` it lacks, else None: one of its
    look-alikes (:data:`_LOOKALIKES`), or its compatibility form when that is one character
    (a full-width ``Ｊ`` typed with a Chinese IME in full-width mode is ``J``, ``Ⅰ`` is
    ``I``, ``＄`` is ``$``). PP-OCRv4's dictionary has ``Ａ`` but not ``Ｊ Ｑ Ｘ``, nor ``・``:
    such a row was an error asking for ``--add-chars``, which then trained a new class from
    a few crops for a glyph the model already reads as ``J`` or ``·`` (round 44)."""
    if c in dictionary._index:
        return None
    for group in _LOOKALIKES:
        if c in group:
            return next((o for o in group if o in dictionary._index), None)
    import unicodedata

    k = unicodedata.normalize("NFKC", c)
    return k if len(k) == 1 and k != c and k in dictionary._index else None


def _label_lines(path: Path) -> tuple[list[str], str]:
    """The lines of a labels file and the encoding they were read in: UTF-8 (a byte-order
    mark allowed), else GB18030 (GBK's superset: label files written on a Chinese Windows),
    else a clear error. Text in another single-byte code page rarely decodes as GB18030
    (a byte above 127 must pair with the next), so it is refused, not misread."""
    data = path.read_bytes()
    if data[:2] in (b"\xff\xfe", b"\xfe\xff"):  # Notepad's "Unicode" (UTF-16 with its mark)
        try:
            return data.decode("utf-16").splitlines(), "utf-16"
        except UnicodeDecodeError as e:
            raise ValueError(f"labels {str(path)!r} starts as UTF-16 but does not decode: "
                             f"{e}; save it as UTF-8") from None
    try:
        return data.decode("utf-8-sig").splitlines(), "utf-8"
    except UnicodeDecodeError as e:
        first = e
    # line by line: files joined with `cat` (a UTF-8 export and a GBK one) mix the two, and
    # a whole-file GBK read turns the UTF-8 lines into other Chinese characters (mojibake
    # that would be learnt) or refuses the file. GBK never uses '\n' or '\r' inside a
    # character (bytes.splitlines: '\n', '\r\n' and a classic Mac's '\r').
    lines, kinds = [], set()
    for k, raw in enumerate(data.splitlines(), 1):
        try:
            line = raw.decode("utf-8-sig")
            if any(b > 127 for b in raw.removeprefix(b"\xef\xbb\xbf")):
                kinds.add("utf-8")
        except UnicodeDecodeError:
            try:
                line = raw.decode("gb18030")
            except UnicodeDecodeError:
                raise ValueError(f"labels {str(path)!r} line {k} is neither UTF-8 nor "
                                 f"GBK/GB18030 text ({raw[:60]!r}): {first}; save it as "
                                 "UTF-8") from None
            if _latin_read_as_gbk(line):
                raise ValueError(
                    f"labels {str(path)!r} line {k} is not UTF-8 and reads as GBK "
                    f"{line.strip()[:60]!r}, which looks like Windows-1252/Latin-1 text "
                    f"({raw.decode('cp1252', 'replace').strip()[:60]!r}) read wrong: save "
                    "the file as UTF-8") from None
            kinds.add("gb18030")
        lines.append(line)
    if "gb18030" in kinds and not any("\u4e00" <= c <= "\u9fff" for c in "".join(lines)):
        raise ValueError(f"labels {str(path)!r} is not UTF-8 text: {first}; save it as UTF-8")
    return lines, "+".join(sorted(kinds, reverse=True))


def _latin_read_as_gbk(line: str) -> bool:
    """Whether a line decoded as GBK is a Windows-1252/Latin-1 line misread: every
    two-byte character it has ends in an ASCII byte (GBK's rare-character extension, where
    an accented letter followed by a letter or digit lands: ``25\xb0C`` is '25癈', ``M\xfcller``
    'M黮ler'), and none is of GB2312, the characters Chinese text is written in."""
    pairs = [c.encode("gb18030") for c in line if ord(c) > 127]
    return bool(pairs) and all(len(p) == 2 and p[1] < 0x80 for p in pairs)


def _locate(name: str, root: Path, listings: dict | None = None) -> Path | None:
    """The image a labels row names: absolute, or relative to the labels file's folder,
    one of the two folders above it, or the working folder (the first that exists). A
    path written on Windows (``imgs\\a.png``) is also looked up with ``/``."""
    names = [name] + ([name.replace("\\", "/")] if "\\" in name and os.sep == "/" else [])
    for each in names:
        image = Path(each).expanduser()
        if image.is_absolute():
            if image.is_file():
                return image
            continue
        for base in (root, *list(root.parents)[:2], Path.cwd()):
            if (base / image).is_file():
                return base / image
    for each in names:  # written on Windows, where IMG_1.JPG names img_1.jpg: one match
        image = Path(each).expanduser()
        for base in [Path("/")] if image.is_absolute() else \
                (root, *list(root.parents)[:2], Path.cwd()):
            found = _case_blind(base, image.parts[1:] if image.is_absolute() else image.parts,
                                {} if listings is None else listings)
            if found is not None:
                return found
    return None


_DRIVE = re.compile(r"^(?:[A-Za-z]:[\\/]|\\\\|//)")


def _moved(name: str, root: Path) -> Path | None:
    """The image an absolute path of another machine names (``D:\\meters\\crops\\a.png``,
    ``/home/bob/meters/crops/a.png``: labels written where the crops were made), found by its
    last folders under the labels file's folder or the two above it, the longest tail that
    names a file; None for a relative path. Such a row was "not found" though its file was
    beside the labels (PaddleOCR joins data_dir to an absolute path and misses it too)."""
    if not (name.startswith("/") or _DRIVE.match(name)):
        return None
    parts = [p for p in re.split(r"[\\/]+", name) if p and not p.endswith(":")]
    for keep in range(len(parts) - 1, 0, -1):
        tail = Path(*parts[-keep:])
        for base in (root, *list(root.parents)[:2]):
            if (base / tail).is_file():
                return base / tail
    return None


def _case_blind(base: Path, parts: tuple, listings: dict) -> Path | None:
    """``base / parts`` matching each part without regard to case, when exactly one file
    does (a folder's listing is read once)."""
    here = base
    for part in parts:
        if part in (".", ""):
            continue
        if part == "..":
            here = here.parent
            continue
        names = _listing(here, listings)
        hits = names.get(part.casefold(), []) if names else []
        if len(hits) != 1:
            return None
        here = here / hits[0]
    return here if here.is_file() else None


def _listing(folder: Path, listings: dict) -> dict[str, list[str]]:
    """A folder's names by their case-folded form (kept in ``listings``, one reading of
    a labels file's)."""
    key = str(folder)
    if key not in listings:
        try:
            names: dict[str, list[str]] = {}
            for n in os.listdir(folder):
                names.setdefault(n.casefold(), []).append(n)
        except OSError:
            names = {}
        listings[key] = names
    return listings[key]


def _not_found(name: str, root: Path) -> str:
    """Why the image a row names was not found: a folder where an image should be, or
    where it was looked for (each folder once)."""
    image = Path(name).expanduser()
    bases = [image] if image.is_absolute() else [b / image for b in
                                                 (root, *list(root.parents)[:2], Path.cwd())]
    if any(b.is_dir() for b in bases):
        return f"{name!r} is a folder, not an image (a row names one image file)"
    if image.is_absolute():
        return f"image {name!r} not found"
    places = [str(root)] + (["the two folders above it"] if root.parents else [])
    cwd = Path.cwd()
    if cwd != root and cwd not in list(root.parents)[:2]:
        places.append(repr(str(cwd)))
    return (f"image {name!r} not found (looked in {str(root)!r}"
            + "".join(f", {p}" if i < len(places) - 2 else f" and {p}"
                      for i, p in enumerate(places[1:], 1)) + ")")


def _difficult(entry: dict) -> bool:
    """Whether PPOCRLabel's box is marked difficult (its "difficult" check box): ``true``
    as it writes it, or ``1``/``"true"`` from a converter."""
    flag = entry.get("difficult")
    return flag is True or flag == 1 or str(flag).strip().lower() in ("true", "1")


def _boxes(text: str, difficult: list | None = None):
    """A detection label's boxes as ``[(text, corners)]``; None when ``text`` is a plain
    transcription; a message when it is a detection label that cannot be read.

    A box marked difficult is left out and its text appended to ``difficult``, as
    PPOCRLabel's own export of recognition crops ("Export Recognition Result",
    ``saveRecResult``: ``if label['difficult']: continue``) leaves it out: its text is the
    labeller's guess at an unclear line. Until round 48 it was cut and learnt.

    A detection label is a JSON list of objects, as PPOCRLabel writes it, or with spaces
    (``[ {"transcription": ...} ]``, from other tools); a list of objects without the
    ``transcription`` and ``points`` keys (``[{"text": ..., "bbox": ...}]``) is refused,
    naming the keys it has, instead of being learnt as the text of the crop."""
    body = text.strip()
    if not (body.startswith("[") and body.endswith("]") and "{" in body):
        return None
    try:
        entries = json.loads(body)
    except ValueError as err:
        if '"transcription"' not in body:
            return None  # a transcription that happens to start like JSON is text
        return f"a detection label ('[{{\"transcription\": ..., \"points\": ...}}]') " \
               f"that cannot be read: {err}"
    if not (isinstance(entries, list) and entries
            and all(isinstance(e, dict) for e in entries)):
        return None
    keys = sorted({k for e in entries for k in e})
    if "transcription" not in keys or "points" not in keys:
        return (f"a JSON list of boxes with keys {keys}: a detection label needs "
                "'transcription' and 'points' for each box (PPOCRLabel's Label.txt); a "
                "recognition label is the plain text of the crop")
    try:
        out = []
        for e in entries:
            words = str(e["transcription"]).strip()
            pts = [(float(x), float(y)) for x, y in e["points"]]
            if len(pts) < 4:
                raise ValueError(f"a box needs 4 points, got {len(pts)}")
            if words and words != IGNORED and _difficult(e):
                if difficult is not None:
                    difficult.append(words)
            elif words and words != IGNORED:
                out.append((words, _quad(pts)))
    except (ValueError, KeyError, TypeError) as err:
        return f"a detection label ('[{{\"transcription\": ..., \"points\": ...}}]') " \
               f"that cannot be read: {err}"
    if not out:
        return ("a detection label with no box to learn from (every one empty, '###' or "
                "marked difficult)")
    return out


def _quad(pts: list[tuple[float, float]]) -> tuple:
    """Four corners for a box: four points clockwise as given (PaddleOCR's order starts at
    the text's own top-left, so a line printed upside down is cut the right way up), four
    counter-clockwise from the same first point, a polygon or four crossed corners as the
    smallest enclosing rectangle in image order (tl, tr, br, bl)."""
    if len(pts) == 4:
        turns = [_cross(pts[i - 1], pts[i], pts[(i + 1) % 4]) for i in range(4)]
        if all(t > 0 for t in turns):  # clockwise on the image (y down): PaddleOCR's order
            return tuple(pts)
        if all(t < 0 for t in turns):
            # counter-clockwise (tl, bl, br, tr: a LabelMe polygon drawn the other way, a
            # converter's order): cut as given it was the line's mirror image, learnt as its
            # text. PPOCRLabel's get_rotate_crop_image swaps the 2nd and 4th points so too,
            # which keeps the first as the text's top-left (round 44)
            return (pts[0], pts[3], pts[2], pts[1])
        # crossed (tl, tr, bl, br: corners listed row by row) or a degenerate box: by its
        # corners' places on the image, as a polygon is
    import cv2
    import numpy as np

    from skiff.kernels.ocr.det import order_points

    a = cv2.boxPoints(cv2.minAreaRect(np.asarray(pts, np.float32)))
    return tuple(tuple(float(v) for v in p) for p in order_points(a))


def _cross(a, b, c) -> float:
    """The turn at ``b`` from ``a`` to ``c``: positive where it is clockwise on an image
    (its y axis down)."""
    return (b[0] - a[0]) * (c[1] - b[1]) - (b[1] - a[1]) * (c[0] - b[0])
