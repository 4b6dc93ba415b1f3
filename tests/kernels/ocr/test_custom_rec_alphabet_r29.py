"""A user's recognizer put on a set with a dictionary file reads its own characters.

``ch-tiny`` names a dictionary file; a recognizer fine-tuned on it with added characters
(``%train ocr-rec --add-chars``) carries its grown alphabet in its ONNX metadata. Given as
``custom(rec=...)`` without ``dict``, the set used to keep tiny's file: the class count then
disagreed, or (same count) the new characters read as others."""

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from skiff.kernels.ocr.models import ModelSet, carries_alphabet, read_alphabet  # noqa: E402


def _rec_file(path, chars, with_meta=True):
    """An ONNX graph of the recognizer's shape: (1, T, classes) probabilities in, out."""
    from onnx import TensorProto, helper

    classes = len(chars) + 2
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, classes])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, classes])
    graph = helper.make_graph([helper.make_node("Identity", ["x"], ["y"])], "rec", [x], [y])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    if with_meta:
        p = model.metadata_props.add()
        p.key, p.value = "character", "\n".join(chars)
    onnx.save(model, str(path))
    return path


def _read(ms):
    sess = ort.InferenceSession(str(ms.rec), providers=["CPUExecutionProvider"])
    alphabet = read_alphabet(sess, ms.dict_path())
    probs = np.zeros((1, 4, len(alphabet)), np.float32)
    return alphabet, sess.run(None, {"x": probs})[0].shape[-1]


def test_own_alphabet_wins_over_the_base_sets_file(tmp_path):
    base_chars = list("abc")
    grown = [*base_chars, "№", "€"]
    (tmp_path / "base_dict.txt").write_text("\n".join(base_chars) + "\n", encoding="utf-8")
    base = ModelSet("tinyish", det="d.onnx", cls="c.onnx",
                    rec=str(_rec_file(tmp_path / "base.onnx", base_chars, with_meta=False)),
                    dict=str(tmp_path / "base_dict.txt"))
    tuned = base.custom(rec=str(_rec_file(tmp_path / "tuned.onnx", grown)))
    alphabet, classes = _read(tuned)
    assert alphabet[1:-1] == grown and classes == len(alphabet)
    # the base set itself still reads its file
    assert _read(base)[0][1:-1] == base_chars


def test_file_without_metadata_keeps_the_base_dictionary_and_explicit_dict_wins(tmp_path):
    chars = list("xyz")
    (tmp_path / "d.txt").write_text("\n".join(chars), encoding="utf-8")
    base = ModelSet("b", det="d.onnx", cls="c.onnx", rec="r.onnx", dict=str(tmp_path / "d.txt"))
    bare = base.custom(rec=str(_rec_file(tmp_path / "bare.onnx", chars, with_meta=False)))
    assert _read(bare)[0][1:-1] == chars
    other = list("pqr")
    (tmp_path / "o.txt").write_text("\n".join(other), encoding="utf-8")
    given = base.custom(rec=str(_rec_file(tmp_path / "m.onnx", list("klm"))),
                        dict=str(tmp_path / "o.txt"))
    assert _read(given)[0][1:-1] == other


def test_carries_alphabet_reads_metadata_only(tmp_path):
    assert carries_alphabet(_rec_file(tmp_path / "a.onnx", list("ab")))
    assert not carries_alphabet(_rec_file(tmp_path / "b.onnx", list("ab"), with_meta=False))
    assert not carries_alphabet(tmp_path / "missing.onnx")
