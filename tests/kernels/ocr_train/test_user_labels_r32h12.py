"""A user's labels files in mixed encodings (round 32, h12): the oracle is the text the test
wrote, byte for byte in each encoding."""

from pathlib import Path

import pytest

from skiff.kernels.ocr_train.labels import Dictionary, read_labels

CHARS = "价格元签合计单收据号5Cü°Mler0123456789"


def _dict():
    return Dictionary(list(CHARS), space=True)


def _images(tmp_path, *names):
    (tmp_path / "imgs").mkdir()
    for n in names:
        (tmp_path / "imgs" / n).write_bytes(b"\x89PNG")


def test_utf8_and_gbk_files_joined_read_line_by_line(tmp_path):
    _images(tmp_path, "a.png", "价签 1.png", "b.png", "c.png")
    want = [("a.png", "价格12元"), ("价签 1.png", "合计"), ("b.png", "单价5元"),
            ("c.png", "收据号")]
    utf8 = "\ufeffimgs/a.png\t价格12元\r\nimgs/价签 1.png\t合计\r\n".encode()
    gbk = "imgs/b.png\t单价5元\nimgs/c.png\t收据号\n".encode("gbk")
    (tmp_path / "labels.txt").write_bytes(utf8 + gbk)
    got = read_labels(tmp_path / "labels.txt", _dict())
    assert [(Path(r.image).name, r.text) for r in got.rows] == want
    assert [r.line for r in got.rows] == [1, 2, 3, 4]
    assert got.errors == [] and got.encoding == "utf-8+gb18030"
    assert any("mixes UTF-8 and GBK" in w for w in got.warnings)
    # the whole file read as GBK (before) turns the UTF-8 lines into other characters
    assert (utf8 + gbk).decode("gb18030", "replace").splitlines()[0] != "imgs/a.png\t价格12元"


def test_gbk_file_alone_unchanged(tmp_path):
    _images(tmp_path, "b.png")
    (tmp_path / "labels.txt").write_bytes("imgs/b.png\t单价5元\r\n".encode("gbk"))
    got = read_labels(tmp_path / "labels.txt", _dict())
    assert [(r.text, r.line) for r in got.rows] == [("单价5元", 1)]
    assert got.encoding == "gb18030" and got.warnings == []


@pytest.mark.parametrize("text", ["25°C", "Müller"])
def test_windows_1252_line_is_refused_not_learnt_as_gbk(tmp_path, text):
    _images(tmp_path, "a.png")
    raw = f"imgs/a.png\t{text}\n".encode("cp1252")
    misread = raw.decode("gb18030").split("\t")[1].strip()
    assert misread != text and any("\u4e00" <= c <= "\u9fff" for c in misread)
    (tmp_path / "labels.txt").write_bytes(raw)
    d = _dict()
    d.add([c for c in misread if c not in CHARS])  # even a dictionary that has the misreading
    with pytest.raises(ValueError, match="line 1 .*Windows-1252") as e:
        read_labels(tmp_path / "labels.txt", d, add_chars=True)
    assert text in str(e.value)


def test_a_gbk_rare_character_beside_common_ones_still_reads(tmp_path):
    _images(tmp_path, "a.png")
    text = "收据号镕5"  # 镕 (e9 46) is in GBK, not GB2312: its second byte is ASCII
    assert "镕".encode("gbk")[1] < 0x80
    (tmp_path / "labels.txt").write_bytes(f"imgs/a.png\t{text}\n".encode("gbk"))
    d = _dict()
    d.add(["镕"])
    got = read_labels(tmp_path / "labels.txt", d)
    assert [r.text for r in got.rows] == [text] and got.errors == []


def test_a_name_of_rare_characters_alone_is_read_as_windows_1252(tmp_path):
    """The rule's known limit, pinned: a line whose only Chinese is GBK-extension characters
    whose second bytes are all ASCII (镕昇: e9 46 95 4e, 'éF•N' in Windows-1252) is refused as
    a Windows-1252 misreading; the message says to save UTF-8, which reads it. 喆 (86 b4) is
    GB2312-like in its second byte and reads."""
    _images(tmp_path, "a.png")
    (tmp_path / "labels.txt").write_bytes("imgs/a.png\t镕昇\n".encode("gbk"))
    with pytest.raises(ValueError, match="save the file as UTF-8"):
        read_labels(tmp_path / "labels.txt", _dict(), add_chars=True)
    (tmp_path / "labels.txt").write_bytes("imgs/a.png\t镕昇\n".encode())
    assert [r.text for r in read_labels(tmp_path / "labels.txt", _dict(), add_chars=True).rows] \
        == ["镕昇"]
    (tmp_path / "labels.txt").write_bytes("imgs/a.png\t喆\n".encode("gbk"))
    assert [r.text for r in read_labels(tmp_path / "labels.txt", _dict(), add_chars=True).rows] \
        == ["喆"]


def test_gbk_with_classic_mac_line_ends(tmp_path):
    _images(tmp_path, "b.png", "c.png")
    (tmp_path / "labels.txt").write_bytes("imgs/b.png\t单价5元\rimgs/c.png\t收据号\r".encode("gbk"))
    got = read_labels(tmp_path / "labels.txt", _dict())
    assert [(r.text, r.line) for r in got.rows] == [("单价5元", 1), ("收据号", 2)]
