"""Round 45 (h11): ``python -m skiff train mlp data.jsonl`` (or .parquet, .xlsx) was "model
'mlp' trains on 'blobs' or a table file (.csv, .tsv, .npz) ..., got data 'data.jsonl'", with
no way on said; pandas reads such a table and ``%train mlp df`` trains on the DataFrame. The
refusal now says so (needs h11's request 2 to ``skiff/kinds/train.py``'s ``check_pair``)."""

import pytest

from skiff.kinds.train import check_pair


@pytest.mark.parametrize("name, reader", [("data.json", "read_json("),
                                          ("data.parquet", "read_parquet("),
                                          ("data.xlsx", "read_excel(")])
def test_another_table_format_is_told_how(name, reader):
    with pytest.raises(ValueError) as err:
        check_pair("mlp", name)
    assert "table file (.csv, .tsv, .jsonl, .npz)" in str(err.value)
    assert reader in str(err.value) and "%train mlp df" in str(err.value)


def test_other_models_are_refused_as_before():
    with pytest.raises(ValueError) as err:
        check_pair("cnn", "data.jsonl")
    assert "read_json" not in str(err.value)
