"""The pipeline's tensors and graph outputs against independent references.

The oracle for the graphs is onnxruntime itself, in a fresh session with default options,
fed a tensor this file builds its own way (plain numpy, float64); skiff's engine must give
the same outputs. Decoding and box extraction are checked against plain re-implementations
(itertools.groupby CTC, scipy.ndimage connected components).
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from skiff.kernels.ocr.det import db_boxes, det_input
from skiff.kernels.ocr.rec import crop_box, ctc_decode, rec_input


def _fresh_session(path):
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 2
    return ort.InferenceSession(str(path), sess_options=opts,
                                providers=["CPUExecutionProvider"])


def _bgr(sample):
    return np.ascontiguousarray(sample.image[..., ::-1])


def test_det_input_matches_plain_numpy(sample):
    import cv2

    bgr = _bgr(sample)
    x, sizes = det_input([bgr], [0.75])
    h, w = sizes[0]
    resized = cv2.resize(bgr, (w, h), interpolation=cv2.INTER_AREA).astype(np.float64)
    ref = (resized / 255.0 - 0.5) / 0.5  # mean 0.5, std 0.5 on BGR, as PaddleOCR trains
    np.testing.assert_allclose(x[0, :, :h, :w], ref.transpose(2, 0, 1), atol=1e-6)
    assert x.shape[2] % 32 == 0 and x.shape[3] % 32 == 0
    # padding repeats the last row/column (no black frame for the detector to find)
    np.testing.assert_allclose(x[0, :, h:, :w], np.broadcast_to(x[0, :, h - 1:h, :w],
                                                                x[0, :, h:, :w].shape))


def test_det_graph_and_boxes_match_oracle(pipe, sample):
    from scipy import ndimage

    bgr = _bgr(sample)
    x, sizes = det_input([bgr], [1.0])
    ours = pipe.engine("det")(x)
    # the file the engine runs (on the CPU the int8 twin: test_quantize compares it with the
    # float32 one), through a plain session
    ref = _fresh_session(pipe.engine("det").path).run(None, {"x": x})[0]
    np.testing.assert_allclose(ours, ref, atol=1e-4)
    prob = ours[0, 0]
    boxes = db_boxes(prob, sizes[0], bgr.shape[:2], pipe.params)
    # reference: connected regions of the thresholded map, big and confident enough
    h, w = sizes[0]
    labels, n = ndimage.label(prob[:h, :w] > pipe.params.thresh)
    regions = [s for k, s in enumerate(ndimage.find_objects(labels), 1)
               if (s[0].stop - s[0].start) >= 4 and prob[:h, :w][labels == k].mean() > 0.5]
    assert len(boxes) == len(regions) == len(sample.lines)
    for sl in regions:  # every region lies inside one of our (grown) boxes
        cy, cx = (sl[0].start + sl[0].stop) / 2, (sl[1].start + sl[1].stop) / 2
        inside = [b for b, _ in boxes if b[:, 0].min() <= cx <= b[:, 0].max()
                  and b[:, 1].min() <= cy <= b[:, 1].max()]
        assert len(inside) == 1


def _groupby_ctc(probs, alphabet):
    out = []
    for row in probs:
        ids = row.argmax(1)
        chars, scores = [], []
        for k, grp in itertools.groupby(range(len(ids)), key=lambda t: ids[t]):
            grp = list(grp)
            if k != 0:
                chars.append(alphabet[k])
                scores.append(row[grp[0], k])
        out.append(("".join(chars).strip(), float(np.mean(scores)) if scores else 0.0))
    return out


def test_rec_input_graph_and_decode_match_oracle(pipe, sample):
    import cv2

    bgr = _bgr(sample)
    x, sizes = det_input([bgr], [1.0])
    prob = pipe.engine("det")(x)[0, 0]
    boxes = db_boxes(prob, sizes[0], bgr.shape[:2], pipe.params)
    crops = [crop_box(bgr, b) for b, _ in boxes]
    x = rec_input(crops, 48, bucket=False)
    # reference tensor: each crop resized to height 48, normalized, grey (0) to the right
    ref = np.zeros(x.shape, np.float64)
    for k, c in enumerate(crops):
        w = int(np.ceil(48 * c.shape[1] / c.shape[0]))
        r = cv2.resize(c, (w, 48), interpolation=cv2.INTER_LINEAR).astype(np.float64)
        ref[k, :, :, :w] = ((r / 255.0 - 0.5) / 0.5).transpose(2, 0, 1)
    np.testing.assert_allclose(x, ref, atol=1e-6)
    ours = pipe.engine("rec")(x)
    oracle = _fresh_session(pipe.models.path("rec")).run(None, {"x": x})[0]
    np.testing.assert_allclose(ours, oracle, atol=1e-4)
    decoded = ctc_decode(ours, pipe.alphabet)
    expected = _groupby_ctc(oracle, pipe.alphabet)
    assert [t for t, _ in decoded] == [t for t, _ in expected]
    np.testing.assert_allclose([s for _, s in decoded], [s for _, s in expected], atol=1e-4)
    assert sorted(t for t, _ in decoded) == sorted(sample.lines)


def test_ctc_decode_rules(xp):
    alphabet = ["", "a", "b", " "]
    probs = np.full((2, 7, 4), 0.01, np.float32)
    # a a _ a b b _  -> "aab";  all blanks -> ""
    for t, k in enumerate([1, 1, 0, 1, 2, 2, 0]):
        probs[0, t, k] = 0.9 - 0.1 * (t == 3)
    probs[1, :, 0] = 0.97
    out = ctc_decode(xp.asarray(probs), alphabet, xp)
    assert out[0][0] == "aab" and out[1] == ("", 0.0)
    assert out[0][1] == pytest.approx(np.mean([0.9, 0.8, 0.9]), abs=1e-6)


def test_cls_matches_oracle_and_sees_upside_down(pipe, sample):
    from skiff.kernels.ocr.rec import cls_input, is_flipped

    bgr = _bgr(sample)
    x, sizes = det_input([bgr], [1.0])
    prob = pipe.engine("det")(x)[0, 0]
    crops = [crop_box(bgr, b) for b, _ in db_boxes(prob, sizes[0], bgr.shape[:2])]
    flipped = [np.ascontiguousarray(c[::-1, ::-1]) for c in crops]
    x = cls_input(crops + flipped)
    ours = pipe.engine("cls")(x)
    oracle = _fresh_session(pipe.models.path("cls")).run(None, {"x": x})[0]
    np.testing.assert_allclose(ours, oracle, atol=1e-5)
    flags = is_flipped(ours)
    assert not flags[: len(crops)].any() and flags[len(crops):].all()


def test_pre_and_post_processing_on_xp(xp, sample):
    """det_input, rec_input and the DB threshold give the same on every array module."""
    from skiff.kernels.backend import to_numpy

    bgr = _bgr(sample)
    ref, sizes = det_input([bgr], [0.5])
    got, sizes2 = det_input([bgr], [0.5], xp)
    assert sizes == sizes2
    np.testing.assert_allclose(to_numpy(got), ref, atol=1e-6)
    crops = [bgr[10:60, 20:300], bgr[100:140, 50:200]]
    np.testing.assert_allclose(to_numpy(rec_input(crops, 48, xp)), rec_input(crops, 48),
                               atol=1e-6)
    prob = np.random.default_rng(0).random((64, 96)).astype(np.float32)
    prob[10:20, 10:80] = 0.95
    a = db_boxes(prob, (64, 96), (128, 192))
    b = db_boxes(xp.asarray(prob), (64, 96), (128, 192), xp=xp)
    assert len(a) == len(b) and all(np.allclose(x[0], y[0]) for x, y in zip(a, b))
