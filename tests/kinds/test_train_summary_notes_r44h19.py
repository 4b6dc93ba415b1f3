"""Round 44 (h19): a table with six columns to say something about (an identifier left out,
an empty trailing column, the target, words, gaps, dates, a yes/no column) filled the
summary's six note lines, so the class imbalance and the class weights a ``--class-weight
balanced`` run used were never shown (they were in result.json only). The notes are
read_table's own on such a file. Needs the change in /work/round44/h19-requests.md to
skiff/kinds/train.py (h18's)."""

from skiff.kernels.train.tables import read_table
from skiff.kinds.train import TrainKind


def test_imbalance_and_weights_show_past_six_column_notes(tmp_path):
    path = tmp_path / "export.csv"
    rows = ["id;a;colour;gap;when;flag;outcome;"]
    for i in range(40):
        rows.append(f"ID{i};{i % 7},5;{'red' if i % 3 else 'blue'};{'' if i % 4 else '1,5'};"
                    f"0{1 + i % 9}.03.2024;{'yes' if i % 2 else 'no'};"
                    f"{'rare' if i == 5 else ('big' if i % 2 else 'small')};")
    path.write_text("\n".join(rows) + "\n", encoding="utf-8-sig")
    notes = read_table(path, drop="id").notes
    assert len(notes) > 6 and notes[-1].startswith("classes imbalanced"), notes
    notes.append("classes weighed in the loss (--class-weight): big 0.672, rare 13.3, "
                 "small 0.702")
    lines = TrainKind().summary({"steps": 3, "final_loss": 0.5, "notes": notes})
    said = "\n".join(lines)
    assert "data: classes imbalanced: 'rare' has 1 of 40 rows" in said, said
    assert "data: classes weighed in the loss (--class-weight): big" in said, said
    hidden = len(notes) - sum(line.startswith("data: ") and line[6:] in notes for line in lines)
    assert f"data: {hidden} more note" in said, said
