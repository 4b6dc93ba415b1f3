"""Round 47 (h9): a text classifier on a JSON-lines file of sentences.

``python -m skiff train mlp reviews.jsonl`` was refused (mlp read no .jsonl), and its
sentences column, as a CSV's, was "free text or an identifier ... leave it out: --drop text",
which left no feature. ``--text COLUMNS`` (``read_table(..., text=...)``) reads such a column
as a bag of words: one feature per word of the training rows, its count in the row
(scikit-learn's ``CountVectorizer``), kept in ``table.json`` so predict counts new rows' words
the same way. Oracles: pandas' own word counts of the column (``str.split`` + ``crosstab``),
and torch 2.13's loop on the same features (same init, same order, float64) to 1e-12."""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest

pd = pytest.importorskip("pandas")
torch = pytest.importorskip("torch")

import skiff  # noqa: E402
from skiff import nn  # noqa: E402
from skiff.kernels.train.tables import read_table  # noqa: E402

GOOD, BAD, OTHER = ["good", "great", "fine"], ["bad", "awful", "dull"], ["movie", "plot", "cast"]


def _write(path, n=24):
    rng = np.random.default_rng(479)
    with open(path, "w") as f:
        for i in range(n):
            pos = i % 3 != 0  # two positives a negative: imbalanced
            words = [rng.choice(GOOD if pos else BAD) if k % 2 else rng.choice(OTHER)
                     for k in range(int(rng.integers(3, 7)))]
            f.write(json.dumps({"id": i, "review": " ".join(words).capitalize(),
                                "label": "pos" if pos else "neg"}) + "\n")
    return path


def test_a_sentences_column_is_counted_as_pandas_counts_it(tmp_path):
    path = _write(tmp_path / "reviews.jsonl")
    with pytest.raises(ValueError, match="free text or an identifier"):
        read_table(path, drop="id")  # as before without text=
    table = read_table(path, drop="id", text="review")
    df = pd.read_json(path, lines=True)
    words = df["review"].str.lower().str.split().explode()
    want = pd.crosstab(words.index, words).reindex(range(len(df)), fill_value=0)
    assert table.target == "label" and table.classes == ["neg", "pos"]
    assert table.columns == [f"review:{w}" for w in want.columns]
    x = table.x.astype(np.float64) * table.x_std + table.x_mean
    np.testing.assert_allclose(x, want.to_numpy(float), rtol=0, atol=1e-5)


def test_three_lines_on_the_words_as_torch(tmp_path):
    table = read_table(_write(tmp_path / "reviews.jsonl"), drop="id", text="review")
    x, y = table.x.astype(np.float64), np.asarray(table.y, np.int64)
    with skiff.random.fork_rng():
        skiff.manual_seed(3)
        m = nn.Sequential(nn.Linear(x.shape[1], 8), nn.ReLU(), nn.Linear(8, 2)).double()
    tm = torch.nn.Sequential(torch.nn.Linear(x.shape[1], 8), torch.nn.ReLU(),
                             torch.nn.Linear(8, 2)).double()
    tm.load_state_dict({k: torch.tensor(np.array(v)) for k, v in m.state_dict().items()})
    skiff.Trainer(m, strategy="auto", optimizer=skiff.optim.Adam(m.parameters(), lr=0.01),
                  batch_size=8, shuffle=False, clip=None, schedule="constant",
                  class_weight="balanced").train((x, y), epochs=2)
    count = np.bincount(y)
    lf = torch.nn.CrossEntropyLoss(weight=torch.tensor(len(y) / (2 * count)))
    opt = torch.optim.Adam(tm.parameters(), lr=0.01)
    for _ in range(2):
        for i in range(0, len(y), 8):
            loss = lf(tm(torch.tensor(x[i:i + 8])), torch.tensor(y[i:i + 8]))
            opt.zero_grad()
            loss.backward()
            opt.step()
    for k, v in tm.state_dict().items():
        np.testing.assert_allclose(np.asarray(m.state_dict()[k]), v.numpy(), rtol=0,
                                   atol=1e-12, err_msg=k)


def test_the_command_line_trains_on_the_words_and_predicts_them(tmp_path, capsys, runs_dir):
    """Needs h9's request 4 (entry.py passes the config's text to the table reader)."""
    from skiff.cli import main

    path = _write(tmp_path / "reviews.jsonl")
    assert main(["train", "mlp", str(path), "--drop", "id", "--text", "review", "--steps",
                 "2", "--runner", "thread"]) == 0
    run = next(p for p in runs_dir.iterdir() if "train" in p.name)
    saved = json.loads((run / "table.json").read_text())
    assert any(e["kind"] == "words" and e["name"] == "review" for e in saved["encoding"])
    new = tmp_path / "new.jsonl"
    new.write_text(json.dumps({"id": 99, "review": "Great cast, great plot"}) + "\n")
    capsys.readouterr()
    assert main(["predict", str(run), str(new)]) == 0
    rows = [r for r in capsys.readouterr().out.splitlines() if r and not r.startswith("#")]
    head, row = next(csv.reader(rows[:1])), next(csv.reader(rows[1:]))
    assert len(rows) == 2 and row[head.index("label predicted")] in ("neg", "pos"), rows
    assert main(["train", "mlp", str(path), "--target", "label", "--text", "label"]) == 2
