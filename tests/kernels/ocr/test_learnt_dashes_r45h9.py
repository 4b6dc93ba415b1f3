"""A fine-tuned recognizer whose labels wrote dashes reads its user's "-" (round 45, h9).

Handwritten sample tags (``№ 5P-449`` in the Breip hand) draw the hyphen as wide as an en
dash; the tuned model read "-" as labelled and the pipeline's ``en_dashes`` (a guess from
the ink's width, right for the shipped models on printed text) wrote "–": 76 of 100
held-out tags exact, 98 with the dashes kept. A fine-tune's export says ``skiff_dashes`` =
"1" where its labels wrote a dash (``ocr_train.finetune.export_marks``); the pipeline keeps
such a recognizer's dashes. The oracle: the same file without the mark gets the rewrite."""

from __future__ import annotations


def test_a_recognizer_that_learnt_its_dashes_keeps_them(tmp_path, fonts):
    import onnx
    from PIL import Image, ImageDraw

    import skiff
    from skiff.kernels.ocr.pipeline import DASHES_KEY
    from skiff.kernels.ocr.synth import _font
    from skiff.kernels.ocr_train.finetune import base_model_path

    font = _font(fonts["latin"], 32)
    left, right = "K5", "449"
    width = int(font.getlength(left) + font.getlength(right)) + 70
    im = Image.new("L", (width, 52), 255)
    d = ImageDraw.Draw(im)
    d.text((10, 6), left, font=font, fill=0)
    x = 10 + font.getlength(left) + 5
    d.rectangle([x, 24, x + 18, 26], fill=0)  # a hyphen drawn as wide as an en dash
    d.text((x + 23, 6), right, font=font, fill=0)
    im.save(tmp_path / "tag.png")
    model = onnx.load(str(base_model_path("ch-v4")), load_external_data=False)
    plain = tmp_path / "plain.onnx"
    onnx.save(model, str(plain))
    entry = model.metadata_props.add()
    entry.key, entry.value = DASHES_KEY, "1"
    onnx.save(model, str(tmp_path / "learnt.onnx"))
    read = {name: skiff.ocr([str(tmp_path / "tag.png")], use_det=False,
                            rec_model=str(tmp_path / f"{name}.onnx"))[0].text
            for name in ("plain", "learnt")}
    assert read["plain"].replace(" ", "") == "K5\u2013449", read  # the premise: rewritten
    assert read["learnt"].replace(" ", "") == "K5-449", read
