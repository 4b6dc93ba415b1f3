"""Round 34 (h2): ``bench_ocr.py --stages`` counts the model CPU spent inside each of skiff's
second readings (turned readings, trims of unsure lines, denoised copies) in rows of their
own, with the lines each changed. Oracle: a stand-in reader whose readings, model calls and
changes are known by construction (the real pipeline's figures are in docs/ocr.md, "Round
34, speed")."""

import importlib.util
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[3]


def _bench():
    spec = importlib.util.spec_from_file_location("bench_ocr_r34h2",
                                                  ROOT / "benchmarks" / "bench_ocr.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _reader(bench):
    class Reader:
        """recognize: one reading, then one trim that upper-cases lines starting "x"."""

        def _recognize_once(self, crops, fallback):
            bench._count_stage("rec", np.zeros((len(crops), 3, 48, 100), np.float32), 0.5)
            return [(c, 0.9) for c in crops]

        def recognize(self, crops, owners, items, fallback=True):
            self._recognize_once(crops, fallback)
            again = self._recognize_once(crops, fallback)
            return [(t.upper() if t.startswith("x") else t, s) for t, s in again]

        def read_both_ways(self, crops, owners, items, flags, settled, texts):
            turned = self.recognize(crops[:2], owners, items, fallback=False)
            texts[0] = ("turned " + turned[0][0], 0.99)

        def read_points(self, crops, owners, items, texts):
            pass

        def _read_denoised(self, good, crops, owners, texts, flipped):
            return crops, owners, [texts[0], ("denoised", 1.0), *texts[2:]], flipped

    return Reader


def test_second_readings_have_rows_of_their_own():
    bench = _bench()
    reader_cls = _reader(bench)
    bench._count_second_readings(reader_cls)
    reader = reader_cls()
    crops = ["xa", "b", "c"]
    texts = reader.recognize(crops, None, None)
    assert [t for t, _ in texts] == ["XA", "b", "c"]
    reader.read_both_ways(crops, None, None, np.zeros(3, bool), None, texts)
    reader.read_points(crops, None, None, texts)
    _, _, texts, _ = reader._read_denoised(None, crops, None, texts, None)
    assert [t for t, _ in texts] == ["turned XA", "denoised", "c"]
    got = {k: (v["calls"], v["pixels"], v.get("changed"), v["cpu_s"])
           for k, v in bench._STAGES.items()}
    assert got == {
        "rec": (1, 3 * 48 * 100, None, 0.5),
        "rec (trims)": (1, 3 * 48 * 100, 1, 0.5),                   # "xa" -> "XA"
        "rec (read_both_ways)": (1, 2 * 48 * 100, 1, 0.5),           # line 0 turned
        "rec (read_both_ways, trims)": (1, 2 * 48 * 100, 1, 0.5),    # its trim: "xa" -> "XA"
        "rec (read_points)": (0, 0, 0, 0.0),
        "rec (_read_denoised)": (0, 0, 1, 0.0),                      # line 1
    }
    assert bench._WITHIN == [""]  # back to the first reading


def test_a_missing_second_reading_is_skipped():
    bench = _bench()

    class Bare:
        def recognize(self, crops, owners, items, fallback=True):
            return self._recognize_once(crops, fallback)

        def _recognize_once(self, crops, fallback):
            return [(c, 1.0) for c in crops]

    bench._count_second_readings(Bare)
    assert Bare().recognize(["a"], None, None) == [("a", 1.0)]
    assert not hasattr(Bare, "read_both_ways")


def test_stage_table_shows_changed_lines():
    bench = _bench()
    runs = {"stages-skiff": [{"seconds": 2.0, "stages": {
        "process": {"cpu_s": 3.0}, "rec": {"cpu_s": 1.0, "calls": 2, "pixels": 10},
        "rec (read_both_ways)": {"cpu_s": 0.5, "calls": 1, "pixels": 4, "changed": 0}}}],
        "stages-rapidocr": [{"seconds": 2.5, "stages": {
            "process": {"cpu_s": 4.0}, "rec": {"cpu_s": 2.0, "calls": 1, "pixels": 9}}}]}
    table = bench._stage_table(runs).splitlines()
    row = [r for r in table if r.startswith("| rec (read_both_ways) |")]
    assert row == ["| rec (read_both_ways) | 0.50 | 1 / 4; 0 lines changed |  |  |"]
    rest = [r for r in table if r.startswith("| rest of the process |")]
    assert rest == ["| rest of the process | 1.50 |  | 2.00 |  |"]
    # model rows first, second readings beside their model
    keys = [r.split(" | ")[0][2:] for r in table[2:]]
    assert keys.index("rec (read_both_ways)") == keys.index("rec") + 1
