"""Round 48 (h3): a text column's word pairs and TF-IDF (``read_table(text=, ngrams=,
tfidf=)``; the command line's ``--ngrams N`` / ``--tfidf`` once the front passes them).

Round 47's ``--text`` gave plain word counts: a review's "not good" was "not" and "good".
``ngrams=2`` adds each run of two words as a feature; ``tfidf=True`` weighs each count by the
word's inverse document frequency over the training rows and scales each row of the column
to length 1 (scikit-learn's ``TfidfVectorizer(ngram_range=(1, 2))`` defaults). scikit-learn
is not in the environment: the oracle is a numpy reference written here from those
definitions (idf = ln((1 + n) / (1 + df)) + 1, df over the n training rows; l2 rows)."""

from __future__ import annotations

import csv
import math

import numpy as np
import pytest

from skiff.kernels.train.tables import TableError, apply_encoding, read_table

WORDS = ["not", "good", "bad", "plot", "very", "movie", "cast", "fun"]


def _write(path, n=14):
    rng = np.random.default_rng(483)
    rows = [" ".join(rng.choice(WORDS, int(rng.integers(2, 6)))) for _ in range(n)]
    rows[3] = ""  # an empty review: no words, a row of zeros
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["review", "stars", "label"])
        for i, r in enumerate(rows):
            w.writerow([r, i % 5, "pos" if "good" in r.split() else "neg"])
    return path, rows


def _reference(rows, fit, ngrams, tfidf):
    """Each row's terms (words, then runs of 2..ngrams words), the vocabulary of the training
    rows, counts, and TF-IDF by the definition."""
    def terms(s):
        w = s.split()
        return [" ".join(w[i:i + n]) for n in range(1, ngrams + 1)
                for i in range(len(w) - n + 1)]
    train = [terms(rows[k]) for k in fit]
    vocab = sorted({t for r in train for t in r})
    counts = np.array([[terms(r).count(v) for v in vocab] for r in rows], np.float64)
    if not tfidf:
        return vocab, counts
    df = [sum(v in r for r in train) for v in vocab]
    idf = np.array([math.log((1 + len(train)) / (1 + d)) + 1 for d in df])
    x = counts * idf
    norm = np.linalg.norm(x, axis=1, keepdims=True)
    return vocab, np.divide(x, norm, out=np.zeros_like(x), where=norm > 0)


@pytest.mark.parametrize("ngrams,tfidf", [(2, False), (2, True), (1, True)])
def test_word_pairs_and_tfidf_as_their_definitions(tmp_path, ngrams, tfidf):
    path, rows = _write(tmp_path / "reviews.csv")
    fit = [k for k in range(len(rows)) if k % 4 != 1]  # a held-out quarter: not in the idf
    table = read_table(path, target="label", fit_rows=fit, text="review", ngrams=ngrams,
                       tfidf=tfidf)
    vocab, want = _reference(rows, fit, ngrams, tfidf)
    assert table.columns[:len(vocab)] == [f"review:{v}" for v in vocab]
    x = table.x.astype(np.float64) * table.x_std + table.x_mean  # the features as read
    # float32 features of values <= 5: rounding 5 * 6e-8 = 3e-7; 1e-5 is 30x over it
    np.testing.assert_allclose(x[:, :len(vocab)], want, rtol=0, atol=1e-5)
    # predict's new rows (a word pair training never saw, an unseen word) read the same way
    new = ["very good plot", "not fun at all"]
    spec = [e for e in table.encoding if e["name"] == "review"]
    got, _ = apply_encoding("new.csv", spec, lambda name: new, [2, 3])
    want_new = _reference(rows + new, fit, ngrams, tfidf)[1][len(rows):]
    np.testing.assert_allclose(got, want_new, rtol=0, atol=1e-12)


def test_options_said_in_one_line(tmp_path):
    path, _ = _write(tmp_path / "reviews.csv")
    with pytest.raises(TableError, match="name them"):
        read_table(path, target="label", ngrams=2)  # no text column to shape
    with pytest.raises(TableError, match="1 to 5"):
        read_table(path, target="label", text="review", ngrams=0)


def test_the_command_line_passes_ngrams_and_tfidf(tmp_path, runs_dir):
    """Needs request 1 of /work/round48/h3-requests.md (``--ngrams``/``--tfidf`` in
    skiff/kinds/train.py); entry.py passes the config's to the reader."""
    import json

    from skiff.cli import main

    path, _ = _write(tmp_path / "reviews.csv")
    assert main(["train", "mlp", str(path), "--target", "label", "--text", "review",
                 "--ngrams", "2", "--tfidf", "--steps", "1", "--runner", "thread"]) == 0
    run = next(p for p in runs_dir.iterdir() if "train" in p.name)
    spec = next(e for e in json.loads((run / "table.json").read_text())["encoding"]
                if e["name"] == "review")
    assert spec["ngrams"] == 2 and len(spec["idf"]) == len(spec["values"])
    assert any(" " in v for v in spec["values"])  # word pairs among the features
    assert main(["train", "mlp", str(path), "--target", "label", "--tfidf"]) == 2
