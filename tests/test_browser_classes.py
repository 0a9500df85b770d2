"""The App on image-level classes: a browser journey through the panel on a class agreement run and a class
consensus run, with the SDK checking what the review did.

On 30 small images with four raters' ``Classification`` fields (``r1`` always right, ``r4`` often wrong),
the class agreement run ``cls`` and the class consensus run ``vote`` are computed in Python before the App
opens (running operators from the App's forms is covered by ``test_browser_crowd.py``). Then, in headless
Chromium, only through the UI:

1. the panel opens on ``cls``: the α card with its bootstrap interval, the per-sample agreement histogram,
   the κ heatmap, rater vitality, class difficulty and the confusion between raters are drawn, each with a
   title and both axis titles; screenshots at 1440 × 900 and 1280 × 720;
2. the run ``vote`` picked in the panel: the confusion heatmap of the least competent rater and the
   **Review queue** button; clicking it shows exactly the flagged samples in the grid (samples, not patches);
3. the first sample of the queue selected and accepted with the operator ``review_consensus_labels``;
   the SDK sees the tag on that sample's consensus label and on no other label.

Screenshots go to ``$IAA_SCREENSHOTS_DIR`` or a temporary folder. Skipped when Chromium or Playwright is
missing (failed with ``IAA_REQUIRE_BROWSER=1``), and when the class consensus kernel is absent.
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

import numpy as np
import pytest

from browser_support import (  # noqa: E402 - the shared helpers of the browser tests
    CHROMIUM_ARGS,
    CLASS_COLOURS,
    SCREENSHOTS,
    _assert_titled,
    _choose_run,
    _count,
    _eventually,
    _open_panel,
    _wait_count,
    _wait_plots,
    _wait_texts,
    browser_tools,  # noqa: F401 - a fixture
    class_images,
    running_app,
)

pytestmark = [pytest.mark.fiftyone, pytest.mark.browser]

DATASET = "iaa-browser-classes"
RATERS = ["r1", "r2", "r3", "r4"]
CLASSES = list(CLASS_COLOURS)  # bird, cat, dog
CLASS_TITLES = ["Per-sample agreement", "Cohen's κ per rater pair", "Rater vitality", "Class difficulty",
                "Confusion between raters"]


@pytest.fixture(scope="module")
def classes_app(fo, tmp_path_factory):
    pytest.importorskip("agreement.methods.consensus.class_labels",
                        reason="the class consensus kernel (agreement/methods/consensus/class_labels.py) is absent")
    import fiftyone.operators as foo

    if fo.dataset_exists(DATASET):
        fo.delete_dataset(DATASET)
    rng = np.random.default_rng(5)
    samples = []
    for i, path in enumerate(class_images(tmp_path_factory.mktemp("class-images"), 30)):
        truth = CLASSES[i % 3]
        kw = {r: fo.Classification(label=CLASSES[(i + 1) % 3] if rng.random() < err else truth)
              for r, err in zip(RATERS, (0.0, 0.1, 0.25, 0.55))}
        samples.append(fo.Sample(filepath=path, **kw))
    dataset = fo.Dataset(DATASET, persistent=True)
    dataset.add_samples(samples, progress=False)
    started = time.time()
    for op, params in (("compute_consensus", dict(key="vote", method="majority", review_band=[0.2, 0.9])),
                       ("compute_class_agreement", dict(key="cls"))):  # the newest: the panel opens on it
        r = foo.execute_operator(f"@iaa/agreement/{op}", ctx=dict(view=dataset.view(),
                                                                  params=dict(fields=RATERS, **params)))
        assert r.error is None, r.error
    print(f"both runs computed in {time.time() - started:.1f} s")  # a figure, not a test
    with running_app(tmp_path_factory, "classes-server") as (url, log):
        yield url, dataset, log
    fo.delete_dataset(DATASET)


def _panel_shot(page, path: Path) -> None:
    """A screenshot of the window as the user sees it (the panel beside the grid), after the images load (only
    when ``IAA_SCREENSHOTS_DIR`` is set)."""
    if not SCREENSHOTS:
        return
    page.wait_for_timeout(2500)
    page.screenshot(path=str(path))


def _scroll_panel_to(page, title: str) -> None:
    """Scrolls the panel so that the chart titled ``title`` is near the top of the window, its title whole."""
    plot = page.locator(".js-plotly-plot").filter(has=page.locator(".gtitle", has_text=title)).first
    plot.evaluate("e => e.scrollIntoView({block: 'start'})")
    box = plot.bounding_box()
    if box is not None:  # back a little with the wheel, as a user would: the title sits under the tab bar
        page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
        page.mouse.wheel(0, -60)
    page.wait_for_timeout(800)


def _overflowing(page) -> list[str]:
    """Texts of the panel's charts and markdown wider than their box (cut by the panel's column)."""
    return page.evaluate("""() => {
        const out = [];
        for (const p of document.querySelectorAll('.js-plotly-plot')) {
            const box = p.getBoundingClientRect();
            for (const t of p.querySelectorAll('.gtitle, .xtitle, .ytitle')) {
                const r = t.getBoundingClientRect();
                if (r.width && (r.left < box.left - 2 || r.right > box.right + 2)) out.push(t.textContent);
            }
        }
        return out; }""")


def test_class_runs_in_the_panel_and_review_from_the_app(fo, browser_tools, classes_app, tmp_path):
    from playwright.sync_api import sync_playwright

    from agreement.fo.methods.consensus import review_view
    from agreement.fo.runs import load_agreement_results
    from agreement.fo.views.review import review_progress
    from test_browser_crowd import _close_dialogs, _execute, _run_operator, _toggle_selection

    url, dataset, log = classes_app
    shots = Path(os.environ.get("IAA_SCREENSHOTS_DIR") or tmp_path)
    shots.mkdir(parents=True, exist_ok=True)
    summary = load_agreement_results(dataset, "cls")["summary"]
    report = load_agreement_results(dataset, "vote")["detail"]["rater_report"]
    least = min(report, key=lambda r: (report[r]["competence"], r))
    queue = review_view(dataset, "vote")
    n_flagged = len(queue)
    assert 0 < n_flagged < len(dataset)
    alpha_text = f"{summary['alpha']:#.3g}".rstrip(".") + " (95% bootstrap interval ["
    timings = {}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=browser_tools, args=CHROMIUM_ARGS)
        try:
            # 1. the class agreement run, at 1440 x 900 and 1280 x 720
            for width, height in ((1440, 900), (1280, 720)):
                page = browser.new_page(viewport={"width": width, "height": height})
                started = time.time()
                _open_panel(page, url, dataset)
                if not page.locator('div[role="combobox"]', has_text=re.compile(r"^cls — ")).count():
                    _choose_run(page, "vote", "cls")
                plots = _wait_plots(page, CLASS_TITLES, timeout=60)
                timings[f"class run drawn at {width}x{height}"] = time.time() - started
                _assert_titled(plots, CLASS_TITLES)
                assert not _wait_texts(page, ["Krippendorff's α", alpha_text, "Lowest pair"])
                assert _count(page) == len(dataset)
                # each part of the panel in turn; the docs show the top at 1280 and the κ heatmap at 1440
                # (class-agreement-panel-<width>.png), the other shots keep their part's name
                for part, title in (("top", None), ("raters", "Rater vitality"), ("kappa", "Cohen's κ per rater pair"),
                                    ("classes", "Class difficulty")):
                    if title is not None:
                        _scroll_panel_to(page, title)
                    shown = {1280: "top", 1440: "kappa"}.get(width) == part
                    _panel_shot(page, shots / f"class-agreement-panel-{width}{'' if shown else '-' + part}.png")
                assert not _overflowing(page)
                if width == 1280:
                    page.close()

            # 2. the consensus run: the least competent rater's confusion, then the review queue
            page = browser.contexts[0].pages[0]
            page.evaluate("() => window.scrollTo(0, 0)")
            _choose_run(page, "cls", "vote")
            confusion = f"Class confusion of rater {least}"
            plots = _wait_plots(page, [confusion], timeout=60)
            _assert_titled(plots, [confusion])
            button = f"Review queue: the {n_flagged} flagged sample"
            assert not _wait_texts(page, [button], timeout=60)
            _scroll_panel_to(page, confusion)
            _panel_shot(page, shots / "class-consensus-panel-1440.png")
            started = time.time()
            page.get_by_text(button).first.click()
            assert _wait_count(page, n_flagged) == n_flagged  # samples, not patches
            timings["review queue loaded"] = time.time() - started
            assert not page.get_by_text(re.compile(r"\d+ patch")).count()
            assert not _wait_texts(page, ["Review of run", f"0 of {n_flagged} flagged labels decided"])
            page.locator('[data-cy="fo-grid"] [data-cy="looker"]').first.wait_for(timeout=30_000)
            _panel_shot(page, shots / "class-review-queue-1440.png")

            # 3. accept the first sample of the queue with the operator
            _toggle_selection(page, page.locator('[data-cy="fo-grid"] [data-cy="looker"]').first)
            _run_operator(page, "accept or reject", "Annotator Agreement: accept or reject consensus labels")
            assert not _wait_texts(page, ["1 flagged consensus label(s) of run 'vote' selected"])
            _execute(page)
            assert _eventually(lambda: review_progress(dataset, "vote")["accepted"] == 1, timeout=60)
            _close_dialogs(page)
        except Exception:
            for i, pg in enumerate(browser.contexts[0].pages if browser.contexts else []):
                pg.screenshot(path=str(shots / f"failure_classes_{i}.png"))
            raise
        finally:
            browser.close()

    # the SDK: that sample's consensus label tagged, no other consensus label, no rater label
    dataset.reload()
    tagged = {sid: lab.tags for sid, lab in zip(*dataset.values(["id", "vote_consensus"])) if lab and lab.tags}
    assert tagged == {queue.first().id: ["accepted"]}, tagged
    assert all(not lab.tags for r in RATERS for lab in dataset.values(r) if lab)
    assert dataset.count_sample_tags() == {}
    print({k: f"{v:.1f} s" for k, v in timings.items()})  # figures, not tests
    server_log = log.read_text(errors="replace")
    assert "agreement_panel" not in server_log, server_log[-3000:]
