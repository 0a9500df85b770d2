"""A real-browser test: the App from the fiftyone package, headless Chromium, the panel.

Starts ``python -m fiftyone.server.main`` on a free loopback port against this
test run's database, opens a small demo dataset (three runs: OT ``ot``, OT
``ot_b3`` with β = 0.3, KαLOS ``kalos``) in Debian's Chromium driven by
Playwright, and, as a user would, only through the UI:

1. sets a range filter on ``ot_ot`` in the sidebar, opens the Annotator
   Agreement panel, waits five seconds and checks that the grid still shows the
   filtered samples (the panel follows the view, it does not undo it);
2. checks that every chart the panel draws has a title and both axis titles
   in the DOM, for an OT run, a KαLOS run and compare mode;
3. clicks a heatmap cell and checks that the grid shows exactly the samples
   where that rater pair agrees least *within the filtered view*, then clicks
   a histogram bar and checks that it replaces the drill-down (same filter);
4. turns compare mode on and checks its side-by-side histograms and the
   per-sample scatter (one point per sample scored by both runs);
5. (a second test) picks the consensus run ``cons`` (majority vote): its cards,
   the rater report and a rater's confusion heatmap are drawn with titles and
   axis titles; the **Review queue** button shows the flagged consensus labels
   as patches, least confident first; a patch tagged ``accepted`` with the
   App's own tagging menu is seen tagged by the SDK.

Screenshots go to ``$IAA_SCREENSHOTS_DIR`` (the README's come from here) or a
temporary folder.

Skipped when Chromium or Playwright is missing, unless ``IAA_REQUIRE_BROWSER=1``
(set by ``.ci/run``, which installs both), in which case it fails.
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

import pytest

from browser_support import (  # noqa: E402 - the shared helpers of the browser tests
    CHROMIUM_ARGS,
    VIEWPORT,
    _assert_titled,
    _cell_center,
    _choose_run,
    _click_until_count,
    _count,
    _eventually,
    _open_panel,
    _pick,
    _shot,
    _tag_first_patch,
    _wait_count,
    _wait_entries,
    _wait_plots,
    _wait_texts,
    browser_tools,  # noqa: F401 - a fixture
    open_dataset_page,
    running_app,
)

pytestmark = [pytest.mark.fiftyone, pytest.mark.browser]

DATASET = "iaa-browser"
NUM_IMAGES = 80
FILTER_MAX = 0.8  # the sidebar filter: ot_ot <= 0.8


@pytest.fixture(scope="module")
def app_server(fo, tmp_path_factory):
    import fiftyone.operators as foo

    from agreement.fo.demo import build_demo_dataset

    fo.config.default_dataset_dir = str(tmp_path_factory.mktemp("browser-datasets"))
    dataset = build_demo_dataset(DATASET, num_images=NUM_IMAGES, seed=1)
    fields = dataset.info["iaa_demo"]["rater_fields"]
    for op, params in (("compute_consensus", dict(key="cons", method="majority")),
                       ("compute_kalos", dict(key="kalos", similarity="iou", tau=0.5)),
                       ("compute_ot_agreement", dict(key="ot_b3", beta=0.3)),
                       ("compute_ot_agreement", dict(key="ot"))):  # the newest: the panel opens on it
        r = foo.execute_operator(f"@iaa/agreement/{op}", ctx=dict(view=dataset.view(), params=dict(fields=fields,
                                                                                               **params)))
        assert r.error is None, r.error
    with running_app(tmp_path_factory, "server") as (url, log):
        yield url, fo.load_dataset(DATASET), log
    fo.delete_dataset(DATASET)


def test_panel_follows_the_view_drills_down_and_compares(browser_tools, app_server, tmp_path):
    from playwright.sync_api import sync_playwright

    from fiftyone import ViewField as F

    from agreement.fo.panel.data import score_histogram
    from agreement.fo.runs import load_agreement_results
    from agreement.fo.views import DRILL_LIMIT, rater_pair_scores

    url, dataset, log = app_server
    shots = Path(os.environ.get("IAA_SCREENSHOTS_DIR") or tmp_path)
    shots.mkdir(parents=True, exist_ok=True)
    filtered = dataset.match(F("ot_ot") <= FILTER_MAX)
    n_filtered = len(filtered)
    assert 0 < n_filtered < len(dataset)
    raters = load_agreement_results(dataset, "ot")["detail"]["raters"]

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=browser_tools, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport=VIEWPORT)
            open_dataset_page(page, url, dataset.name)
            assert _count(page) == len(dataset)

            # 1. a sidebar filter, then the panel: the filter survives opening it and five seconds
            page.locator('[data-cy="sidebar-field-container-ot_ot"]').scroll_into_view_if_needed()
            page.locator('[data-cy="sidebar-field-arrow-enabled-ot_ot"]').click()
            box = page.locator('input[placeholder="max"]').first
            box.fill(str(FILTER_MAX))
            box.press("Enter")
            assert _wait_count(page, n_filtered) == n_filtered
            page.locator('[data-cy="new-panel-btn"]').first.click()
            page.locator('[data-cy="new-panel-option-annotator_agreement"]').click()
            _wait_plots(page, ["Per-sample OT score", "αOT per rater pair"], timeout=60)
            page.wait_for_timeout(5000)  # the App drops sidebar filters when a panel opens; the panel restores them
            assert _wait_count(page, n_filtered) == n_filtered, "opening the panel undid the filter"
            assert not _wait_texts(page, [f"{n_filtered} samples in view"])

            # 2. every chart of an OT run has a title and axis titles
            titles = ["Per-sample OT score", "αOT per rater pair"]
            _assert_titled(_wait_plots(page, titles, n=2), titles)
            _shot(page, shots / "panel.png")

            # 3. a heatmap cell: the pair's least-agreeing samples within the filtered view
            # (a pair that shares only some of the filtered samples, so that the count tells them apart)
            pairs = [(len(rater_pair_scores(filtered, "ot", ra, rb)[:DRILL_LIMIT]), i, j)
                     for i, ra in enumerate(raters) for j, rb in enumerate(raters) if i < j]
            size, i, j = min((t for t in pairs if 0 < t[0] < n_filtered), default=max(pairs))
            a, b = sorted([raters[i], raters[j]])
            expected = rater_pair_scores(filtered, "ot", a, b)[:DRILL_LIMIT]
            x, y = _cell_center(page, "αOT per rater pair", i, j, len(raters))  # row i (from the top), column j
            assert _click_until_count(page, lambda: page.mouse.click(x, y), len(expected)) == len(expected)
            page.locator(f"text=where {a} and {b} agree least >> visible=true").first.wait_for(timeout=60_000)
            page.wait_for_timeout(4000)  # the filter is still there after the App's view change
            assert _count(page) == len(expected)
            _shot(page, shots / "heatmap_click.png")

            # a histogram bar replaces that drill-down (the charts describe the filtered view)
            hist = score_histogram(filtered, "ot_ot", 0.5, 1.0)
            tallest = max(range(len(hist["counts"])), key=lambda i: hist["counts"][i])
            bars = page.locator(".js-plotly-plot").filter(
                has=page.locator(".gtitle", has_text="Per-sample OT score")).first.locator("g.trace.bars g.point path")
            assert _eventually(lambda: bars.count() == len(hist["counts"])), (bars.count(), hist["counts"])
            n_bar = hist["counts"][tallest]
            assert _click_until_count(page, lambda: bars.nth(tallest).click(force=True), n_bar) == n_bar
            # the panel has taken the drill-down in before the run changes (its note names what it loaded)
            page.locator(f"text=— {n_bar:,} sample >> visible=true").first.wait_for(timeout=60_000)
            page.wait_for_timeout(2000)

            # 4. a KaLOS run: vitality, class difficulty, alpha versus tau, all titled
            _choose_run(page, "ot", "kalos")
            titles = ["Per-sample α", "α per rater pair", "Rater vitality", "Class difficulty", "α versus τ"]
            _assert_titled(_wait_plots(page, titles, n=5), titles)
            _shot(page, shots / "kalos.png", top_text="α per rater pair", panel_only=True)

            # 5. compare mode: two OT runs side by side, and the per-sample scatter
            _choose_run(page, "kalos", "ot")
            _wait_plots(page, ["Per-sample OT score"])
            page.get_by_text("Compare with another run of this method").click()
            titles = ["Per-sample OT score: run 'ot' beside run 'ot_b3'",
                      "Per-sample OT score: run 'ot' against run 'ot_b3'", "Per-sample OT score", "αOT per rater pair"]
            _assert_titled(_wait_plots(page, titles, n=4), titles)
            scatter = page.locator(".js-plotly-plot").filter(has=page.locator(".gtitle", has_text="against run"))
            points = scatter.first.locator(".scatterlayer .trace").first.locator("path.point")
            n_both = len(filtered.exists("ot_ot").exists("ot_b3_ot"))
            assert _eventually(lambda: points.count() == n_both), (points.count(), n_both)
            _shot(page, shots / "compare.png", top_text="run 'ot' beside run", panel_only=True)

            # 6. undoing the drill-down leaves exactly the user's filter, kept through every action above
            page.get_by_text("Undo the panel's drill-down").click()
            assert _wait_count(page, n_filtered) == n_filtered
            page.wait_for_timeout(3000)  # the App may reload the page once more (dropping the filter a moment):
            assert _wait_count(page, n_filtered, timeout=15) == n_filtered  # the filter must come back

            # 7. the sample view: the panel explains each label of the open sample
            page.locator('[data-cy="fo-grid"] [data-cy="looker"]').first.click()
            tab = page.locator('#modal [data-cy="panel-tab-annotator_agreement"]')
            tab.wait_for(timeout=30_000)
            tab.click()
            page.get_by_text("Labels of the open sample").first.wait_for(timeout=30_000)
            assert not _wait_texts(page, ["counterpart (rater: label)"])
            _shot(page, shots / "modal.png", height=760)
        except Exception:
            page.screenshot(path=str(shots / "failure.png"))
            raise
        finally:
            browser.close()
    server_log = log.read_text(errors="replace")
    assert "agreement_panel" not in server_log, server_log[-3000:]  # no error from the panel


def test_consensus_cards_report_and_review_queue(browser_tools, app_server, tmp_path):
    from playwright.sync_api import sync_playwright

    from agreement.fo.methods.consensus import review_view
    from agreement.fo.panel.consensus import consensus_counts
    from agreement.fo.runs import load_agreement_results

    url, dataset, log = app_server
    shots = Path(os.environ.get("IAA_SCREENSHOTS_DIR") or tmp_path)
    shots.mkdir(parents=True, exist_ok=True)
    counts = consensus_counts(dataset, "cons")
    raters = list(load_agreement_results(dataset, "cons")["detail"]["rater_report"])
    queue = review_view(dataset, "cons")
    assert counts["n_flagged"] == len(queue) > 1

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=browser_tools, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport=VIEWPORT)
            _open_panel(page, url, dataset)
            current = page.locator('div[role="combobox"]', has_text=re.compile(r"^\S+ — ")).first.inner_text()
            _choose_run(page, current.split(" — ")[0], "cons")
            titles = ["Per-sample lowest confidence", f"Class confusion of rater {raters[0]}"]
            plots = _wait_plots(page, titles, n=2)
            _assert_titled(plots, titles)
            confusion = next(p for p in plots if p[0].startswith("Class confusion"))
            assert confusion[1] == "rater's class" and confusion[2] == "consensus class", confusion
            # the cards and the rater report
            assert not _wait_texts(page, ["consensus labels", "flagged for review",
                                          "mean confidence of the consensus labels", "Rater report",
                                          "FP / sample", "loc. error", "false positives per assigned sample"])
            assert not _wait_texts(page, [f"{counts['n_flagged']} of {counts['n_labels']} labels"])
            # another rater in the selector
            _pick(page, re.compile(f"^{re.escape(raters[0])}$"), re.compile(f"^{re.escape(raters[1])}$"))
            _wait_plots(page, [f"Class confusion of rater {raters[1]}"])
            _shot(page, shots / "consensus.png", panel_only=True)

            # the review queue: the flagged consensus labels as patches, least confident first
            page.get_by_text("Review queue: the").first.click()
            assert _wait_entries(page, len(queue)) == len(queue)
            # visible: the sample view's panel (closed, still in the page) may hold the same text
            page.locator("text=flagged labels. >> visible=true").first.wait_for(timeout=30_000)
            page.locator('[data-cy="fo-grid"] [data-cy="looker"]').first.wait_for(timeout=30_000)
            page.wait_for_timeout(3000)
            _shot(page, shots / "review_queue.png", height=900)

            # a tag set in the App is visible to the SDK
            _tag_first_patch(page, "accepted")
            deadline = time.time() + 30
            tagged = []
            while time.time() < deadline and not tagged:
                page.wait_for_timeout(500)
                ids, tags = dataset.values(["cons_consensus.detections.id", "cons_consensus.detections.tags"])
                tagged = [(lid, t) for li, ti in zip(ids, tags) for lid, t in zip(li or [], ti or []) if t]
            assert len(tagged) == 1 and tagged[0][1] == ["accepted"], tagged
            # the label of a first patch of the queue: one of the least confident (ties have no set order)
            confidence = dict(zip(queue.values("id"), queue.values("cons_consensus.confidence")))
            assert confidence[tagged[0][0]] == min(confidence.values())
            assert dataset.count_label_tags() == {"accepted": 1}
        except Exception:
            page.screenshot(path=str(shots / "failure_consensus.png"))
            raise
        finally:
            browser.close()
    server_log = log.read_text(errors="replace")
    assert "agreement_panel" not in server_log, server_log[-3000:]
