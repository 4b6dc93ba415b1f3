"""A user's own text file for the byte-level GPT (round 29): every file was read as UTF-8
with replacement, so Notepad's "Unicode" (UTF-16) became a run of NULs and replacement
characters, and a Windows-1252 'café' became 'caf\\ufffd', which the model then learnt. Now a
UTF-16 file (with or without its mark) and a non-UTF-8 one are decoded as what they are, said
in a note. Oracle: Python's codecs on the text the file was written from."""

from __future__ import annotations

import numpy as np
import pytest

from skiff.kernels.train.data import TextDataset

TEXT = "Le café est prêt, naïve Zoë. Straße, Ελληνικά, 日本語, 🙂.\n" * 20
LATIN = "Le café est prêt, naïve Zoë: 25 € à l'œil.\n" * 20


@pytest.mark.parametrize("codec, text, note", [
    ("utf-8", TEXT, None),
    ("utf-8-sig", TEXT, None),
    ("utf-16", TEXT, "UTF-16 (its mark)"),
    ("utf-16-le", TEXT, "UTF-16-LE"),
    ("utf-16-be", TEXT, "UTF-16-BE"),
    ("cp1252", LATIN, "not UTF-8"),
])
def test_a_text_file_is_decoded_as_what_it_is(tmp_path, codec, text, note):
    path = tmp_path / "notes.txt"
    path.write_bytes(text.encode(codec))
    ds = TextDataset(path, block_size=16)
    assert ds.text == text
    want = np.frombuffer(text.encode("utf-8"), np.uint8).astype(np.int64)
    np.testing.assert_array_equal(ds.data, want)  # the bytes the model learns: UTF-8's
    assert (ds.read_note is None) if note is None else (note in ds.read_note)
    assert TextDataset(str(path), block_size=16).text == text  # a path given as text too


@pytest.mark.parametrize("codec", ["cp1252", "utf-16", "utf-8-sig"])
def test_a_spreadsheets_table_in_its_own_encoding(tmp_path, codec):
    # Excel's CSV on Windows is Windows-1252 and its "Unicode text" UTF-16: both were a
    # bare UnicodeDecodeError; pandas reads them given the encoding
    import pandas as pd

    from skiff.kernels.train.tables import read_rows, read_table

    rng = np.random.default_rng(0)
    cities = rng.choice(["Zürich", "Málaga", "Köln", "Sevilla"], 40)
    temp = rng.normal(10, 5, 40).round(1)
    rows = ["city,temp,label"] + [f"{c},{t},{'warm' if t > 10 else 'cold'}"
                                  for c, t in zip(cities, temp)]
    path = tmp_path / "cities.csv"
    path.write_bytes(("\r\n".join(rows) + "\r\n").encode(codec))
    table = read_table(path)
    oracle = pd.get_dummies(pd.read_csv(path, encoding=codec)[["city", "temp"]],
                            prefix_sep="=").astype(float)
    x = table.x.astype(np.float64) * table.x_std + table.x_mean
    assert sorted(table.columns) == sorted(oracle.columns)
    for j, name in enumerate(table.columns):
        np.testing.assert_allclose(x[:, j], oracle[name].to_numpy(), atol=1e-4)
    assert (codec == "utf-8-sig") == (not any("read as" in n for n in table.notes))
    header, body = read_rows(path)  # predict reads it the same way
    assert header == ["city", "temp", "label"] and body[0][1][0] == cities[0]
