"""Round 35: ``ocr --det-params box_thresh=0.6,unclip_ratio=2.0`` (RapidOCR's detector
knobs, by its names too) reaches the job's pipeline: the kernel had ``DetParams`` and no
front could set it. Oracle: the boxes an ``OcrPipeline(params=DetParams(...))`` finds on the
same page, and the default's (the option must change them). Bad keys and values are refused
in one line before any job."""

from __future__ import annotations

import pytest

from skiff.jobs.launch import dry_run
from skiff.kernels.backend.report import NullReporter


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    from PIL import Image

    from skiff.kernels.ocr.synth import FontsMissing, render_sample

    try:
        sample = render_sample("clean", 1, seed=6)
    except FontsMissing as exc:
        pytest.skip(str(exc))
    path = tmp_path_factory.mktemp("det") / "page.png"
    Image.fromarray(sample.image).save(path)
    return path


def _boxes(config):
    from skiff.kernels.ocr.entry import run

    done = run(config, NullReporter())
    (result,) = list(done.results)
    return [line.box for line in result.lines]


def test_the_option_reaches_the_config_only_when_given(page):
    assert "det_params" not in dry_run("ocr", f"{page}")["config"]
    config = dry_run("ocr", f"{page} --det-params det_db_box_thresh=0.7,limit_side_len=1280,"
                            f"unclip_ratio=2")["config"]
    assert config["det_params"] == {"box_thresh": 0.7, "limit": 1280, "unclip_ratio": 2.0}


def test_the_job_reads_with_those_knobs(page):
    from skiff.kernels.ocr.det import DetParams
    from skiff.kernels.ocr.pipeline import OcrPipeline

    line = f"{page} --det-params box_thresh=0.995"
    strict = _boxes(dry_run("ocr", line)["config"])
    plain = _boxes(dry_run("ocr", f"{page}")["config"])
    (oracle,) = list(OcrPipeline("ch", params=DetParams(box_thresh=0.995)).run([str(page)]))
    assert len(strict) < len(plain)                      # the knob changes what is found
    assert strict == [ln.box for ln in oracle.lines]     # as the pipeline given it finds


@pytest.mark.parametrize("bad, said", [("box_thres=0.6", "box_thresh"),
                                       ("box_thresh=1.5", "in (0, 1]"),
                                       ("limit=big", "integer"),
                                       ("unclip_ratio", "KEY=VALUE")])
def test_bad_knobs_are_refused_in_one_line(page, bad, said):
    with pytest.raises((SystemExit, ValueError, Exception)) as info:
        dry_run("ocr", f"{page} --det-params {bad}")
    assert said in str(info.value) or said in str(getattr(info.value, "__context__", ""))
