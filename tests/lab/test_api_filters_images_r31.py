"""The sidebar's round 31 requests on a real Jupyter server: the list filtered by kind and
status (with the kinds there are, for the filter's menu), a job's image as its bytes, and
the refusals (unknown status, an image not listed, no token)."""

from __future__ import annotations

import io
import urllib.error
import urllib.request

import numpy as np
import pytest
from PIL import Image

from skiff.jobs import launch

from .server import shared_api_server

pytestmark = pytest.mark.slow  # a Jupyter server starts (a few seconds)


@pytest.fixture(scope="module")
def api(request, tmp_path_factory):
    return shared_api_server(request, tmp_path_factory)


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


def _raw(api, path, token=True):
    req = urllib.request.Request(f"{api.url}/skiff/api/{path}")
    if token:
        req.add_header("Authorization", f"token {api.token}")
    try:
        with urllib.request.build_opener(_NoRedirect).open(req, timeout=30) as resp:
            return resp.status, dict(resp.headers), resp.read()
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), exc.read()


def _picture(config, reporter):
    img = np.zeros((8, 16, 3), np.uint8)
    img[:, 8:, 2] = 250
    Image.fromarray(img).save(reporter.run_dir / "pic one.png")
    reporter.artifact("pic one", reporter.run_dir / "pic one.png", kind="image")
    return {}


def test_filters_and_images(api, monkeypatch):
    monkeypatch.setenv("SKIFF_RUNS", str(api.runs))
    monkeypatch.setenv("SKIFF_SECRET_FILE", str(api.secret))
    demo = launch("demo", {"steps": 2, "sleep": 0.0}).wait(60)
    failed = launch("demo", {"steps": 3, "sleep": 0.0, "fail_at": 2}).wait(60)
    pic = launch("custom", fn=_picture).wait(60)
    assert (demo.status, failed.status, pic.status) == ("done", "failed", "done")

    every = api.get("jobs")
    assert every["kinds"] == ["custom", "demo"] and every["total"] == 3
    assert [j["id"] for j in api.get("jobs?kind=demo")["jobs"]] == [failed.id, demo.id]
    assert [j["id"] for j in api.get("jobs?kind=demo&status=failed")["jobs"]] == [failed.id]
    assert [j["id"] for j in api.get("jobs?status=done&limit=1")["jobs"]] == [pic.id]
    assert api.get("jobs?status=done&limit=1")["hidden"] == 1
    assert api.get("jobs?kind=ocr")["jobs"] == []
    assert api.get("jobs?kind=ocr")["kinds"] == ["custom", "demo"]  # the menu stays
    status, body = api.call("GET", "jobs?status=runing")
    assert status == 400 and "runing" in body["message"]
    status, body = api.call("GET", "jobs?kind=../x")
    assert status == 400

    detail = api.get(f"jobs/{pic.id}")
    assert detail["images"] == ["pic one"] and detail["ranks"] == []
    status, headers, data = _raw(api, f"jobs/{pic.id}/images/pic%20one")
    assert status == 200 and headers["Content-Type"] == "image/png"
    assert headers.get("X-Content-Type-Options") == "nosniff"
    got = np.asarray(Image.open(io.BytesIO(data)).convert("RGB"))
    assert np.array_equal(got, np.asarray(Image.open(pic.run_dir / "pic one.png")))
    assert _raw(api, f"jobs/{pic.id}/images/other")[0] == 404
    assert _raw(api, f"jobs/{demo.id}/images/pic%20one")[0] == 404
    # without the token: the server's login page (an <img> of a page gets no bytes)
    status, headers, data = _raw(api, f"jobs/{pic.id}/images/pic%20one", token=False)
    assert status in (302, 403) and not data.startswith(b"\x89PNG"), (status, headers)
    assert status == 403 or "login" in headers.get("Location", "")
