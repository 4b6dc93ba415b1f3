"""The ``ocr`` job: inputs expanded, one JSON line per image in the issue's schema, progress
reported; the grammar's checks; the CLI; model sets, a user's own models, devices."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from skiff.jobs.reporter import Reporter
from skiff.kernels.ocr.entry import _pipeline, expand_inputs, run
from skiff.kernels.ocr.synth import render_sample


class ListReporter(Reporter):
    def __init__(self, run_dir=None):
        self.run_dir = run_dir
        self.events = []

    def progress(self, done, total=None, *, unit="step", message=None):
        self.events.append(("progress", done, total, unit))

    def metric(self, name, value, *, step=None):
        self.events.append(("metric", name, value))

    def artifact(self, name, path, *, kind="file"):
        self.events.append(("artifact", name, kind))
        return Path(path)

    def log(self, message, *, level="info"):
        self.events.append(("log", level, message))


@pytest.fixture(scope="module")
def folder(tmp_path_factory, fonts):
    from PIL import Image

    d = tmp_path_factory.mktemp("scans")
    truth = {}
    for k, cat in enumerate(("clean", "noisy")):
        s = render_sample(cat, k, seed=4)
        name = f"{k}-{cat}.png"
        Image.fromarray(s.image).save(d / name)
        truth[name] = s.text
    (d / "b-broken.png").write_bytes(b"\x89PNG\r\n\x1a\n garbage")
    (d / "readme.txt").write_text("skipped: not an image extension")
    return d, truth


def _check_line(doc):
    assert set(doc) == {"image", "file", "page", "size", "dpi", "text", "lines", "error",
                        "unread", "elapsed_s"}
    assert isinstance(doc["image"], str) and isinstance(doc["elapsed_s"], float)
    assert isinstance(doc["unread"], int) and doc["unread"] >= 0
    assert doc["error"] is None or isinstance(doc["error"], str)
    for line in doc["lines"]:
        assert set(line) == {"box", "text", "score", "row"}
        assert len(line["box"]) == 4 and all(len(p) == 2 for p in line["box"])
        assert all(isinstance(v, float) for p in line["box"] for v in p)
        assert isinstance(line["text"], str) and 0.0 <= line["score"] <= 1.0
    # the text is written a row a line, the row's boxes joined by a space
    rows: dict[int, list[str]] = {}
    for line in doc["lines"]:
        rows.setdefault(line["row"], []).append(line["text"])
    assert sorted(rows) == list(range(len(rows)))
    assert doc["text"] == "\n".join(" ".join(rows[k]) for k in range(len(rows)))


def test_expand_inputs(folder, tmp_path):
    d, _ = folder
    names = [Path(p).name for p in expand_inputs([str(d)])]
    assert names == ["0-clean.png", "1-noisy.png", "b-broken.png"]
    assert [Path(p).name for p in expand_inputs([str(d / "*-*.png")])] == names
    with pytest.raises(FileNotFoundError, match="nothing.png"):
        expand_inputs([str(tmp_path / "nothing.png")])
    with pytest.raises(FileNotFoundError, match="no files match"):
        expand_inputs([str(tmp_path / "*.jpg")])


def test_run_writes_jsonl_in_schema(folder, tmp_path):
    d, truth = folder
    out = tmp_path / "out" / "results.jsonl"
    rep = ListReporter(run_dir=tmp_path)
    result = run({"inputs": [str(d)], "device": "cpu", "out": str(out), "threads": 2,
                  "batch_size": 2}, rep)
    docs = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert len(docs) == 3 and result.images == 3 and result.errors == 1
    for doc in docs:
        _check_line(doc)
    by_name = {Path(doc["image"]).name: doc for doc in docs}
    assert by_name["b-broken.png"]["error"] and by_name["b-broken.png"]["lines"] == []
    for name, text in truth.items():
        assert by_name[name]["text"] == text
    progress = [e for e in rep.events if e[0] == "progress"]
    assert progress[-1][1:] == (3, 3, "image")
    assert ("artifact", "results.jsonl", "jsonl") in rep.events
    assert any(e[0] == "artifact" and e[2] == "image" for e in rep.events)  # overlays
    assert json.loads(json.dumps(result.to_json()))["images"] == 3
    # the folder's readme.txt was not read, and the job says so (log and summary)
    assert [Path(p).name for p in result.skipped] == ["readme.txt"]
    assert any(e[:2] == ("log", "warning") and "skipped 1 file" in e[2] and "readme.txt" in e[2]
               for e in rep.events)
    from skiff import kinds

    said = kinds.get("ocr").summary(json.loads(json.dumps(result.to_json())))
    assert any("skipped 1 file that is not an image or PDF: readme.txt" in line
               for line in said), said


def test_run_in_memory_images(sample):
    result = run({"images": [sample.image, sample.image[:, :, 0]], "device": "cpu",
                  "threads": 2, "overlays": 0}, ListReporter())
    assert [r.text for r in result.results] == [sample.text, sample.text]
    assert "<img" in result._repr_html_()


def test_grammar_checks_and_config(folder):
    from skiff.grammar import GrammarError
    from skiff.kinds.ocr import COMMAND, to_config

    d, _ = folder
    ns = COMMAND.parse(f"{d} --lang ch-v4 --batch-size 4 --out r.jsonl --no-cls")
    config = to_config({k: v for k, v in vars(ns).items()
                        if k not in ("np", "runner", "wait", "output")})
    assert config["model"] == "ch-v4" and config["batch_size"] == 4
    assert config["use_cls"] is False and config["out"].endswith("r.jsonl")
    with pytest.raises(ValueError, match=r"'xx'.*ch, ch-v4"):
        to_config({"inputs": [str(d)], "lang": "xx"})
    with pytest.raises(ValueError, match="no such file"):
        to_config({"inputs": [str(d)], "rec_model": "/nope/rec.onnx"})
    with pytest.raises(FileNotFoundError, match="missing-folder"):
        to_config({"inputs": ["missing-folder"]})
    with pytest.raises(GrammarError, match="batch-size"):
        COMMAND.parse(f"{d} --batch-size 0")


def test_cli_json_and_jsonl(folder, tmp_path, runs_dir, capsys, monkeypatch):
    # ``python -m skiff ocr`` through skiff.cli.main in this process (round 43: a new
    # interpreter and its model loads cost ~1-2 CPU s; tests/cli/test_cli.py and the magics'
    # tests keep a real ``python -m skiff ocr`` process)
    from tests.cli.in_process import run_main

    d, truth = folder
    out = tmp_path / "x.jsonl"
    monkeypatch.setenv("SKIFF_OCR_THREADS", "2")
    proc = run_main("ocr", str(d / "0-clean.png"), "--out", str(out), "--json", "--device",
                    "cpu", capsys=capsys)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["job"]["status"] == "done" and doc["result"]["images"] == 1
    lines = out.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 1
    _check_line(json.loads(lines[0]))
    assert json.loads(lines[0])["text"] == truth["0-clean.png"]
    bad = run_main("ocr", "nowhere/*.png", capsys=capsys)
    assert bad.returncode == 2 and "nowhere" in bad.stderr


def test_model_registry_and_alphabets():
    import onnxruntime as ort

    from skiff.kernels.ocr.models import MODEL_SETS, get_model_set, read_alphabet

    assert set(MODEL_SETS) >= {"ch", "ch-v4"}
    for name, ms in MODEL_SETS.items():
        assert "Apache-2.0" in ms.license and ms.notes
        sess = ort.InferenceSession(str(ms.path("rec")), providers=["CPUExecutionProvider"])
        alphabet = read_alphabet(sess, ms.dict_path())
        assert alphabet[0] == "" and alphabet[-1] == " "
        assert len(alphabet) == sess.get_outputs()[0].shape[-1], name
    with pytest.raises(ValueError, match="ch-v4"):
        get_model_set("klingon")


def test_own_rec_model_and_dict(sample, tmp_path):
    """--rec-model/--dict: another recognizer (here the v4 one, with its alphabet written
    out as a dictionary file) behind the default detector."""
    import onnxruntime as ort

    from skiff.kernels.ocr import OcrPipeline
    from skiff.kernels.ocr.models import MODEL_SETS

    rec = MODEL_SETS["ch-v4"].path("rec")
    chars = ort.InferenceSession(str(rec), providers=["CPUExecutionProvider"]) \
        .get_modelmeta().custom_metadata_map["character"]
    (tmp_path / "keys.txt").write_text(chars, encoding="utf-8")
    pipe = OcrPipeline(device="cpu", threads=2, rec_model=str(rec),
                       dict=str(tmp_path / "keys.txt"))
    assert pipe.models.rec == str(rec)
    assert pipe(sample.image).text == sample.text
    # a dictionary that does not fit the model is refused with both counts
    (tmp_path / "short.txt").write_text("a\nb\n", encoding="utf-8")
    bad = OcrPipeline(device="cpu", rec_model=str(rec), dict=str(tmp_path / "short.txt"))
    with pytest.raises(ValueError, match="classes"):
        bad(sample.image)


def test_device_is_explicit_and_never_silently_cpu(monkeypatch):
    import onnxruntime as ort

    from skiff.kernels.ocr import resolve_ocr_device
    from skiff.kernels.ocr.engine import EngineError, OnnxEngine
    from skiff.kernels.ocr.models import MODEL_SETS

    device, why = resolve_ocr_device("auto")
    assert why.startswith("auto")
    assert resolve_ocr_device("cpu") == ("cpu", "as asked")
    assert resolve_ocr_device("cuda") == ("cuda:0", "as asked")
    path = MODEL_SETS["ch"].path("cls")
    if "CUDAExecutionProvider" not in ort.get_available_providers():
        with pytest.raises(EngineError, match="CUDA"):
            OnnxEngine(path, "cuda:0")
    eng = OnnxEngine(path, "cpu", threads=1)
    assert eng.provider == "CPUExecutionProvider" and "cpu" in repr(eng)
    out = eng(np.zeros((1, 3, 48, 192), np.float32))
    assert out.shape == (1, 2)


@pytest.mark.gpu
def test_cuda_engine_runs_on_the_gpu(sample):
    import onnxruntime as ort

    from skiff.kernels.ocr import OcrPipeline

    if "CUDAExecutionProvider" not in ort.get_available_providers():
        pytest.skip("this onnxruntime has no CUDA provider (install onnxruntime-gpu)")
    pipe = OcrPipeline(device="cuda:0", threads=2)
    r = pipe(sample.image)
    assert r.device == "cuda:0" and r.text == sample.text
    assert set(pipe.describe()["providers"].values()) == {"CUDAExecutionProvider"}


@pytest.mark.mpi
@pytest.mark.slow
def test_two_ranks_share_a_folder(folder, tmp_path):
    from skiff.jobs import launch

    d, truth = folder
    out = tmp_path / "ranks.jsonl"
    job = launch("ocr", {"inputs": [str(d)], "device": "cpu", "out": str(out), "threads": 1},
                 np=2).wait(180)
    assert job.status == "done", job.error
    docs = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert [Path(d_["image"]).name for d_ in docs] == ["0-clean.png", "1-noisy.png",
                                                     "b-broken.png"]
    assert [d_["text"] for d_ in docs[:2]] == [truth["0-clean.png"], truth["1-noisy.png"]]
    assert job.result["images"] == 3 and job.result["errors"] == 1
    assert not list(tmp_path.glob("ranks.jsonl.part*"))


def test_out_txt_writes_the_text(folder, tmp_path, sample):
    """``--out FILE.txt``: the text itself, a header line per image when there are several
    (an unreadable one says why); the JSON lines stay in the run folder."""
    d, truth = folder
    out = tmp_path / "pages.txt"
    rep = ListReporter(run_dir=tmp_path / "run")
    (tmp_path / "run").mkdir()
    result = run({"inputs": [str(d)], "device": "cpu", "out": str(out), "threads": 2,
                  "overlays": 0}, rep)
    text = out.read_text(encoding="utf-8")
    for name, want in truth.items():
        assert f"=== {d / name} ===\n{want}\n\n" in text
    assert f"=== {d / 'b-broken.png'} ===\n(not read: " in text
    assert result.text_out == str(out) and result.out == str(tmp_path / "run" / "results.jsonl")
    assert len(Path(result.out).read_text(encoding="utf-8").splitlines()) == 3
    assert ("artifact", "results.txt", "text") in rep.events

    one = tmp_path / "one" / "page.txt"  # one image, no run folder: just its text
    from PIL import Image

    Image.fromarray(sample.image).save(tmp_path / "one.png")
    result = run({"inputs": [str(tmp_path / "one.png")], "device": "cpu", "out": str(one),
                  "threads": 2, "overlays": 0}, ListReporter())
    assert one.read_text(encoding="utf-8") == result.results[0].text + "\n"
    assert result.out is None and sorted(p.name for p in one.parent.iterdir()) == ["page.txt"]


def test_folder_entries_not_read_are_named(tmp_path):
    from PIL import Image

    from skiff.kernels.ocr.entry import skipped_line

    Image.new("RGB", (40, 20), "white").save(tmp_path / "a.png")
    (tmp_path / "notes.txt").write_text("x")
    (tmp_path / "2024").mkdir()
    (tmp_path / ".ipynb_checkpoints").mkdir()  # hidden: not worth a word
    (tmp_path / ".DS_Store").write_text("x")
    skipped: list[str] = []
    assert [Path(p).name for p in expand_inputs([str(tmp_path)], skipped)] == ["a.png"]
    assert sorted(Path(p).name for p in skipped) == ["2024", "notes.txt"]
    assert skipped_line(skipped) == ("skipped 1 file that is not an image or PDF: notes.txt; "
                                     "1 subfolder not read: 2024/ (DIR/**/* reads subfolders)")


def test_crops_read_without_the_detector(tmp_path, fonts):
    """``--no-det``: each image is one line already cut out. A tight crop of one glyph or a
    short word, which the detector often does not box at all, reads whole; a crop taller
    than wide reads as it stands when that is surer than turned (one tall glyph), and the
    detector is never loaded."""
    from PIL import Image, ImageDraw, ImageFont

    from skiff.kinds.ocr import COMMAND, to_config

    face = ImageFont.truetype(fonts["latin"], 20)
    truths = ["7", "A", "TOTAL 42.80"]
    for k, t in enumerate(truths):
        x0, y0, x1, y1 = face.getbbox(t)
        im = Image.new("L", (x1 - x0, y1 - y0), 255)  # cut tight to the print
        ImageDraw.Draw(im).text((-x0, -y0), t, font=face, fill=0)
        im.save(tmp_path / f"crop{k}.png")
    ns = COMMAND.parse(f"{tmp_path} --no-det --device cpu --threads 2")
    config = to_config({k: v for k, v in vars(ns).items()
                        if k not in ("np", "runner", "wait", "output")})
    assert config["use_det"] is False
    result = run({**config, "overlays": 0}, ListReporter())
    assert [r.text for r in result.results] == truths
    pipe = _pipeline(config)
    assert "det" not in pipe._engines
    box = result.results[0].lines[0].box  # the whole crop
    assert box[2] == [float(s) for s in Image.open(tmp_path / "crop0.png").size]
    (tmp_path / "doc.pdf").write_bytes(b"%PDF-1.4\n")  # pages are no crops: one clear error
    with pytest.raises(ValueError, match="doc.pdf.*drop --no-det"):
        to_config({"inputs": [str(tmp_path)], "no_det": True})
    (tmp_path / "doc.pdf").unlink()
    with_det = run({**config, "use_det": True, "overlays": 0}, ListReporter())
    assert [r.text for r in with_det.results][:2] == ["", ""]  # measured: not boxed


def test_no_words_reaches_the_pipeline(tmp_path):
    """``--no-words`` keeps unsure lines as the recognizer read them: the option reaches
    the config and the pipeline, and the two settings are two pipelines; a user's own
    recognizer is not mended by default."""
    from skiff.kinds.ocr import COMMAND, to_config

    (tmp_path / "a.png").write_bytes(b"")

    def config(line):
        ns = COMMAND.parse(line)
        return to_config({k: v for k, v in vars(ns).items()
                          if k not in ("np", "runner", "wait", "output")})

    on, off = config(f"{tmp_path} --device cpu"), config(f"{tmp_path} --device cpu --no-words")
    assert on["words"] is None and off["words"] is False
    assert _pipeline(on).words is True and _pipeline(off).words is False
    assert _pipeline(on) is not _pipeline(off)
    # a user's own recognizer reads its own domain or language: no mending unless asked
    rec = str(_pipeline(on).models.path("rec"))
    assert _pipeline({**on, "rec_model": rec}).words is False
    assert _pipeline({**on, "rec_model": rec, "words": True}).words is True


def test_out_csv_writes_a_tables_rows_and_cells(tmp_path, fonts):
    """``--out FILE.csv``: a page's rows as CSV rows, its cells as columns (UTF-8 with a
    byte-order mark, for spreadsheets); with several images each row is led by the image's
    name, and an unreadable one is a row saying why."""
    import csv

    from PIL import Image

    from .scenarios.helpers import table_page

    img, truth = table_page()
    Image.fromarray(img).save(tmp_path / "table.png")
    out = tmp_path / "table.csv"
    run({"inputs": [str(tmp_path / "table.png")], "device": "cpu", "out": str(out),
         "threads": 2, "overlays": 0}, ListReporter())
    assert out.read_bytes().startswith(b"\xef\xbb\xbf")
    rows = list(csv.reader(out.open(encoding="utf-8-sig", newline="")))
    assert rows == [line.split(" ") for line in truth.splitlines()]

    (tmp_path / "broken.png").write_bytes(b"not a png")
    both = tmp_path / "both.csv"
    run({"inputs": [str(tmp_path / "broken.png"), str(tmp_path / "table.png")],
         "device": "cpu", "out": str(both), "threads": 2, "overlays": 0}, ListReporter())
    rows = list(csv.reader(both.open(encoding="utf-8-sig", newline="")))
    assert rows[0][0].endswith("broken.png") and rows[0][1].startswith("(not read: ")
    assert [r[1:] for r in rows[1:]] == [line.split(" ") for line in truth.splitlines()]
    assert all(r[0].endswith("table.png") for r in rows[1:])


def test_a_page_of_a_script_the_model_lacks_is_said_not_silent(tmp_path, fonts):
    """Hangul (not in ``ch``'s dictionary) is boxed by the detector and read as nothing: the
    page gives no text, and the result, the job's counts and its summary say that regions
    were found and not read, rather than an empty page; a page of print read whole has none
    unread."""
    from PIL import Image, ImageDraw

    from skiff import kinds
    from skiff.kernels.ocr.synth import _font

    img = Image.new("RGB", (400, 136), "white")
    draw = ImageDraw.Draw(img)
    for k, line in enumerate(("안녕하세요 반갑습니다", "서울특별시 강남구")):
        draw.text((20, 22 + 35 * k), line, font=_font(fonts["cjk"], 22), fill="black")
    img.save(tmp_path / "hangul.png")
    Image.fromarray(render_sample("clean", 0, seed=3).image).save(tmp_path / "print.png")
    result = run({"inputs": [str(tmp_path / "hangul.png"), str(tmp_path / "print.png")],
                  "device": "cpu", "threads": 2}, ListReporter())
    hangul, page = result.results
    assert hangul.lines == [] and hangul.unread >= 1 and hangul.to_json()["unread"] >= 1
    assert page.lines and page.unread == 0
    assert (result.silent, result.unread) == (1, hangul.unread)
    said = kinds.get("ocr").summary(json.loads(json.dumps(result.to_json())))
    assert any(line.startswith("1 image gave no text, though the detector found")
               and "'ch'" in line for line in said), said
    assert "gave no text" in result._repr_html_()
