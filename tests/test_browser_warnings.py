"""A run's warnings as an App user meets them (issue 47): two raters who never share a sample, OT and consensus
run from the App's operator browser with the form's defaults, and the result box says that nothing could be
compared and why, instead of a perfect score.

The dataset: 10 images, one label field per rater (``alice`` labels samples 0-4, ``bob`` samples 5-9, ``None``
elsewhere: not assigned), the rater fields recorded as the demo records them so that the form preselects them.
Screenshots of both result boxes go to ``IAA_SCREENSHOTS_DIR`` (or the test's temporary folder).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from browser_support import (  # noqa: E402 - the shared helpers of the browser tests
    CHROMIUM_ARGS,
    _eventually,
    _wait_texts,
    browser_tools,  # noqa: F401 - a fixture
    open_dataset_page,
    running_app,
)
from test_browser_crowd import _close_dialogs, _execute, _run_operator

pytestmark = [pytest.mark.fiftyone, pytest.mark.browser]

NAME = "iaa-never-meet"


@pytest.fixture(scope="module")
def never_meet_app(fo, tmp_path_factory):
    if fo.dataset_exists(NAME):
        fo.delete_dataset(NAME)
    dataset = fo.Dataset(NAME, persistent=True)
    samples = []
    for s in range(10):
        box = fo.Detection(label="car", bounding_box=[0.1 + 0.05 * s, 0.2, 0.3, 0.3])
        sample = fo.Sample(filepath=f"/never-meet/{s}.jpg")
        sample["alice" if s < 5 else "bob"] = fo.Detections(detections=[box])
        samples.append(sample)
    dataset.add_samples(samples)
    dataset.info["iaa_demo"] = {"rater_fields": ["alice", "bob"]}
    dataset.save()
    with running_app(tmp_path_factory, "never-meet-server") as (url, log):
        yield url, log
    if fo.dataset_exists(NAME):
        fo.delete_dataset(NAME)


def _registered(fo, key: str) -> bool:
    from agreement.fo.runs import get_agreement_run_info

    dataset = fo.load_dataset(NAME)
    dataset.reload()
    try:
        return bool(get_agreement_run_info(dataset, key))
    except Exception:  # noqa: BLE001 - not there yet
        return False


@pytest.mark.parametrize("search, operator, key", [
    ("OT agreement", "Annotator Agreement: OT agreement", "ot"),
    ("consensus labels", "Annotator Agreement: consensus labels", "merged"),
])
def test_the_result_box_says_the_raters_never_meet(fo, browser_tools, never_meet_app, tmp_path, search, operator,
                                                   key):
    from playwright.sync_api import sync_playwright

    url, log = never_meet_app
    shots = Path(os.environ.get("IAA_SCREENSHOTS_DIR") or tmp_path)
    shots.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=browser_tools, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1440, "height": 900})
        try:
            open_dataset_page(page, url, NAME)
            _run_operator(page, search, operator)
            page.wait_for_timeout(1500)
            _execute(page)
            assert _eventually(lambda: _registered(fo, key), timeout=120), f"the {key} run was not registered"
            missing = _wait_texts(page, ["Warnings", "never share a sample"], timeout=60)
            page.screenshot(path=str(shots / f"warnings-{key}.png"))
            assert not missing, f"the result box does not show {missing}"
            # shown whole, as a sentence to read: no element holding it is cut off (a chip ends in "…")
            cut = page.get_by_text("never share a sample").first.evaluate(
                """e => { for (let x = e; x && x !== document.body; x = x.parentElement) {
                              if (x.scrollWidth > x.clientWidth + 1 && getComputedStyle(x).overflow === 'hidden')
                                  return true; }
                          return false; }""")
            assert not cut, "the warning is cut off in the result box"
            _close_dialogs(page)
        finally:
            browser.close()
    # the run itself records the same warning
    dataset = fo.load_dataset(NAME)
    dataset.reload()
    results = dataset.load_run_results(key)
    assert any("never share a sample" in w for w in results.warnings), results.warnings
