"""The App on a real crowd, as a new user meets it: a browser journey on 200 raters and file names without
extensions, only through the UI, with the SDK checking what each step did.

On a generated crowd export (:func:`agreement.simulate.synthetic.crowd_export.write_crowd_export`: 200
images named ``img0000``... without an extension, 200 workers ``w0``...``w199``, 9 per image):

1. imports it from the App (operator ``import_multi_rater_coco``, attribute layout): the App opens the new
   dataset, whose media type is ``image``;
2. computes KαLOS with the form's defaults, then puts a sidebar filter on its per-sample α (the lowest third);
3. opens the consensus form with that filter on: the form shows the target choice with the whole dataset
   chosen and the current view's size beside it; computed with the defaults, the run covers all 200
   samples and records it;
4. opens the panel on the consensus run, loads the review queue (exactly the flagged consensus labels, as
   patches), selects a patch and accepts it, then another and rejects it, with the operator
   ``review_consensus_labels`` (which tags only the run's flagged consensus labels among the selection);
   the panel counts the decisions;
5. finalizes from the App (the form preselects the run open in the panel and lists only consensus runs);
6. checks through the SDK that the two decisions are on consensus labels of the queue and that no rater
   label and no label of another run was tagged.

Screenshots (``$IAA_SCREENSHOTS_DIR`` or a temporary folder): the consensus form with its target choice,
the review queue, the review operator's form, at 1440 × 900.

With ``$IAA_SCREENSHOTS_DIR`` set (``docs/images``), a second test takes the panel's column on the crowd that
docs/pairwise-agreement.md measures (its snippet: 200 images, 196 workers, 9 per image, seed 38) at
1280 × 720 and 1440 × 900: the consensus run's rater report, the KαLOS raters and vitality chart, the pair
heatmap by α and by observed agreement, the note above it and a cell's hover (the docs' images
``rater-table-*``, ``kalos-raters-*``, ``vitality-*``, ``pair-heatmap*``; the README's hero image).
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

import pytest

from browser_support import (  # noqa: E402 - the shared helpers of the browser tests
    CHROMIUM_ARGS,
    SCREENSHOTS,
    _cell_center,
    _choose_run,
    _count,
    _eventually,
    _open_panel,
    _pick,
    _wait_count,
    _wait_entries,
    _wait_plots,
    _wait_texts,
    browser_tools,  # noqa: F401 - a fixture
    chromium_page,
    open_dataset_page,
    running_app,
)

pytestmark = [pytest.mark.fiftyone, pytest.mark.browser]

START, CROWD = "iaa-crowd-start", "iaa-crowd"


@pytest.fixture(scope="module")
def crowd_app(fo, tmp_path_factory):
    from agreement.simulate.synthetic.crowd_export import write_crowd_export

    export = write_crowd_export(tmp_path_factory.mktemp("crowd-export"))
    for name in (START, CROWD):
        if fo.dataset_exists(name):
            fo.delete_dataset(name)
    start = fo.Dataset(START, persistent=True)  # the App needs a dataset to start on; the import opens the new one
    start.add_sample(fo.Sample(filepath=os.path.join(os.path.dirname(export), "img0000")))
    with running_app(tmp_path_factory, "crowd-server") as (url, log):
        yield url, export, log
    for name in (START, CROWD):
        if fo.dataset_exists(name):
            fo.delete_dataset(name)


def _run_operator(page, search: str, name: str) -> None:
    """Opens the App's operator browser (the backtick key), searches ``search`` and opens operator ``name``."""
    _close_dialogs(page, settle=0.5)
    page.keyboard.press("`")
    box = page.locator('[data-cy="operators-browser-search"] input, input[placeholder*="Search"]').first
    box.wait_for(timeout=15_000)
    box.fill(search)
    page.get_by_text(name, exact=True).first.click(timeout=15_000)


def _field(page, label: str):
    """The text input of the form field labelled ``label``."""
    return page.get_by_text(label, exact=True).first.locator("xpath=following::input[1]")


def _toggle_selection(page, looker) -> None:
    """Selects (or unselects) a sample or patch of the grid with its checkbox, as a user does."""
    looker.hover()
    looker.locator('label[data-cy^="looker-checkbox"]').first.click()
    page.wait_for_timeout(700)


def _close_dialogs(page, settle: float = 1.5) -> None:
    """Closes the operator's result box(es) as a user does ("Done", "Close"), until none is left open."""
    for _ in range(8):
        page.wait_for_timeout(int(settle * 1000))
        dialogs = page.locator('div[role="dialog"]:visible, .MuiDialog-root:visible')
        if not dialogs.count():
            return
        for name in ("Done", "Close"):
            button = page.get_by_role("button", name=name, exact=True)
            if button.count():
                button.first.click(force=True)
                break
        else:
            page.keyboard.press("Escape")


def _execute(page) -> None:
    page.get_by_role("button", name="Execute").first.click(timeout=15_000)


def _threshold(values) -> float:
    """A sidebar filter's upper bound that keeps the lowest third of the scores, halfway between two of them
    (so that the App's rounding of the bound cannot move a sample across it)."""
    scores = sorted(v for v in values if v is not None)
    k = len(scores) // 3
    while scores[k + 1] - scores[k] < 1e-3:
        k += 1
    return round((scores[k] + scores[k + 1]) / 2, 4)


def _fresh(fo, name: str):
    """The dataset as the database has it now (``load_dataset`` hands back this process's cached object)."""
    dataset = fo.load_dataset(name)
    dataset.reload()
    return dataset


def _complete(fo, name: str, key: str) -> bool:
    from agreement.fo.runs import get_agreement_run_info

    dataset = _fresh(fo, name)
    return key in dataset.list_runs() and get_agreement_run_info(dataset, key)["status"] == "complete"


def _wait_for(condition, what: str, timeout: float = 180.0) -> None:
    assert _eventually(condition, timeout=timeout), f"timed out waiting for {what}"


def test_crowd_journey_review_touches_only_the_flagged_consensus_labels(fo, browser_tools, crowd_app, tmp_path):
    from playwright.sync_api import sync_playwright

    from fiftyone import ViewField as F

    from agreement.fo.methods.consensus import review_view
    from agreement.fo.runs import get_agreement_run_info
    from agreement.fo.runs.declaration import run_target
    from agreement.fo.views.review import review_progress

    url, export, log = crowd_app
    shots = Path(os.environ.get("IAA_SCREENSHOTS_DIR") or tmp_path)
    shots.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=browser_tools, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1440, "height": 900})
        try:
            open_dataset_page(page, url, START)

            # 1. import from the App: the new dataset opens, and it is an image dataset
            _run_operator(page, "import multi-rater COCO", "Annotator Agreement: import multi-rater COCO")
            _field(page, "COCO JSON file").fill(export)
            _field(page, "Dataset name").fill(CROWD)
            page.get_by_text("One field, rater in a label attribute", exact=True).click()
            page.wait_for_timeout(1000)
            _execute(page)
            _wait_for(lambda: fo.dataset_exists(CROWD), "the import")
            _wait_for(lambda: f"/datasets/{CROWD}" in page.url, "the App to open the imported dataset", 60)
            dataset = fo.load_dataset(CROWD)
            assert dataset.media_type == "image" and len(dataset) == 200
            assert dataset.info["iaa_coco"]["media"]["by_content"] == 200  # told from the files' bytes
            page.locator('[data-cy="entry-counts"]').wait_for(timeout=60_000)
            assert _wait_count(page, 200) == 200

            # 2. KαLOS with the form's defaults, then a sidebar filter on its per-sample α
            _run_operator(page, "KaLOS", "Annotator Agreement: KaLOS")
            page.wait_for_timeout(1500)
            _execute(page)
            _wait_for(lambda: _complete(fo, CROWD, "kalos"), "the KαLOS run")
            _close_dialogs(page)  # the result shown; closed as a user does
            dataset = _fresh(fo, CROWD)
            alpha_max = _threshold(dataset.values("kalos_alpha"))
            n_low = len(dataset.match(F("kalos_alpha") <= alpha_max))
            assert 0 < n_low < 200
            field = page.locator('[data-cy="sidebar-field-container-kalos_alpha"]')
            _wait_for(lambda: field.count() > 0, "the new field in the sidebar", 60)
            field.scroll_into_view_if_needed()
            page.locator('[data-cy="sidebar-field-arrow-enabled-kalos_alpha"]').click()
            box = page.locator('input[placeholder="max"]').first
            box.fill(str(alpha_max))
            box.press("Enter")
            # the App's range filter starts at its slider's rounded minimum, which can leave out the lowest
            # sample: the view is what the App shows, one sample either way
            _wait_for(lambda: _count(page) < 200, "the sidebar filter", 30)
            page.wait_for_timeout(2000)
            shown = _count(page)
            assert n_low - 1 <= shown <= n_low, (shown, n_low)
            n_low = shown

            # 3. consensus with the defaults on the filtered view: the form says what it will run on
            _run_operator(page, "consensus labels", "Annotator Agreement: consensus labels")
            assert not _wait_texts(page, ["Whole dataset", "Current view",
                                          f"the current view ({n_low:,} of 200 samples, with its sidebar filters)"])
            whole = page.get_by_role("radio", name=re.compile("Whole dataset"))
            assert whole.count() == 0 or whole.first.is_checked()  # the dataset is the default
            page.screenshot(path=str(shots / "crowd_consensus_form.png"))
            _execute(page)
            _wait_for(lambda: _complete(fo, CROWD, "merged"), "the consensus run")
            dataset = _fresh(fo, CROWD)
            info = get_agreement_run_info(dataset, "merged")
            assert run_target(info) == "whole dataset (200 samples)", info["params"].get("target")
            queue = review_view(dataset, "merged")
            n_flagged = len(queue)
            assert n_flagged == sum(dataset.values("merged_n_review")) > 2

            # 4. the panel, the review queue, and decisions from the panel
            _close_dialogs(page)
            _open_panel(page, url, dataset)  # opens it on the whole dataset (the filter cleared)
            assert not _wait_texts(page, ["Review queue: the"], timeout=60)
            started = time.time()
            page.get_by_text("Review queue: the").first.click()
            assert _wait_entries(page, n_flagged) == n_flagged
            queue_seconds = time.time() - started
            page.locator('[data-cy="fo-grid"] [data-cy="looker"]').first.wait_for(timeout=30_000)
            page.wait_for_timeout(2000)
            page.screenshot(path=str(shots / "crowd_review_queue.png"))
            # accept the first patch and reject the second: select it, then the operator that tags only the
            # run's flagged consensus labels among the selection
            lookers = page.locator('[data-cy="fo-grid"] [data-cy="looker"]')
            for i, (decision, tag) in enumerate((("accept", "accepted"), ("reject", "rejected"))):
                _toggle_selection(page, lookers.nth(i))
                if i:
                    _toggle_selection(page, lookers.nth(i - 1))  # only this one selected
                _run_operator(page, "accept or reject", "Annotator Agreement: accept or reject consensus labels")
                assert not _wait_texts(page, ["1 flagged consensus label(s) of run 'merged' selected"])
                if decision == "reject":
                    page.get_by_text(re.compile(r"^reject \(tag")).first.click()
                    page.wait_for_timeout(1000)
                if i == 0:
                    page.screenshot(path=str(shots / "crowd_review_decision.png"))
                _execute(page)
                _wait_for(lambda: review_progress(dataset, "merged")[tag] == 1,  # noqa: B023 (called here)
                          f"the {decision} decision", 60)
                _close_dialogs(page)
            _toggle_selection(page, lookers.nth(1))

            # 5. finalize from the App: the run open in the panel is preselected, only consensus runs offered
            _run_operator(page, "finalize", "Annotator Agreement: finalize reviewed consensus")
            page.locator('div[role="combobox"]', has_text=re.compile(r"^merged$")).first.wait_for(timeout=15_000)
            _execute(page)
            _wait_for(lambda: "merged_final" in _fresh(fo, CROWD).get_field_schema(), "finalize")
        except Exception:
            page.screenshot(path=str(shots / "failure_crowd.png"))
            raise
        finally:
            browser.close()

    # 6. the SDK: two decisions, on queue labels; no rater label, no other run's label tagged
    dataset = _fresh(fo, CROWD)
    tagged = {lid: t for ids, tags in zip(*dataset.values(["merged_consensus.detections.id",
                                                           "merged_consensus.detections.tags"]))
              for lid, t in zip(ids or [], tags or []) if t}
    assert sorted(map(tuple, tagged.values())) == [("accepted",), ("rejected",)], tagged
    assert set(tagged) <= set(queue.values("merged_consensus.id"))
    assert dataset.count_label_tags("ground_truth") == {}
    assert dataset.count_sample_tags() == {}
    final = [d for v in dataset.values("merged_final") for d in (v.detections if v else [])]
    assert len(final) == sum(len(v.detections) for v in dataset.values("merged_consensus") if v) - 1
    print(f"the review queue opened in {queue_seconds:.1f} s for {n_flagged} flagged labels")  # a figure, not a test
    server_log = log.read_text(errors="replace")
    assert "agreement_panel" not in server_log, server_log[-3000:]


# ---------------------------------------------------------------------------- the docs' crowd screenshots
DOCS_CROWD = "iaa-crowd-docs"
PAIR_STATS = re.compile(r"^(the run's pairwise value|observed agreement)$")


def _docs_crowd(fo):
    """The crowd docs/pairwise-agreement.md measures, built as its snippet builds it (200 images, 196 workers
    ``w0`` … ``w195``, 9 per image, one class, seed 38; attribute layout with the assignment recorded), with a
    consensus run ``consensus`` and a KαLOS run ``kalos`` (the defaults; the panel opens on the latest)."""
    import dataclasses

    from agreement.fo.importers.build import samples_from_corpus
    from agreement.fo.methods.consensus import compute_consensus
    from agreement.fo.methods.kalos import compute_kalos
    from agreement.fo.storage.assignment import declare_raters_field
    from agreement.simulate.synthetic.crowd import crowd_corpus

    corpus, _ = crowd_corpus(200, 196, raters_per_sample=9, min_objects=0, max_objects=8, num_classes=1, seed=38)
    corpus = dataclasses.replace(corpus, raters=tuple(f"w{i}" for i in range(196)))
    if fo.dataset_exists(DOCS_CROWD):
        fo.delete_dataset(DOCS_CROWD)
    dataset = fo.Dataset(DOCS_CROWD, persistent=True)
    dataset.add_samples(samples_from_corpus(corpus, [f"/images/img{s:03d}.jpg" for s in range(200)],
                                            layout="attribute", field="ground_truth", raters_field="raters"))
    declare_raters_field(dataset, "ground_truth", "raters")
    compute_consensus(dataset, "consensus", field="ground_truth", rater_attr="annotator")
    compute_kalos(dataset, "kalos", field="ground_truth", rater_attr="annotator")
    return dataset


def _select_run(page, key: str) -> None:
    """Opens run ``key`` in the panel unless it is open already."""
    current = page.locator('div[role="combobox"]', has_text=re.compile(r"^\S+ — ")).first.inner_text()
    current_key = current.split(" — ")[0].strip()
    if current_key != key:
        _choose_run(page, current_key, key)


def _colour_cells_by(page, stat: str) -> None:
    """Colours the pair heatmap by ``stat`` (the *Colour cells by* dropdown's entry) and waits for it."""
    title = {"observed agreement": "Observed agreement per rater pair",
             "the run's pairwise value": "α per rater pair"}[stat]
    if not page.locator('div[role="combobox"]', has_text=re.compile(f"^{re.escape(stat)}$")).count():
        _pick(page, PAIR_STATS, re.compile(f"^{re.escape(stat)}$"))
    _assert_drawn(page, [title])


def _assert_drawn(page, titles: list[str]) -> None:
    plots = _wait_plots(page, titles, timeout=60)
    assert all(any(p[0].startswith(t) for p in plots) for t in titles), (titles, plots)


def _panel_shot(page, path: Path, top, offset: int = 8, hover=None) -> None:
    """A screenshot of the panel's column (as wide as the App lays it out at this window size), scrolled so
    that ``top`` (a locator) is ``offset`` pixels below the column's top, down to the window's bottom; with
    ``hover`` (called after the scroll), what it hovers."""
    # the panel's own scroller only (scrollIntoView would also shift the App's unscrollable frames)
    top.first.evaluate("(e, offset) => { let s = e.parentElement; "
                       "while (s && !(s.scrollHeight > s.clientHeight && getComputedStyle(s).overflowY === 'auto')) "
                       "s = s.parentElement; "
                       "s.scrollTop += e.getBoundingClientRect().top - s.getBoundingClientRect().top - offset; }",
                       offset)
    page.wait_for_timeout(1500)
    if hover is not None:
        hover()
        page.wait_for_timeout(500)
    box = page.locator('[data-cy="panel-content-annotator_agreement"]').bounding_box()
    assert box is not None
    viewport = page.viewport_size
    assert viewport is not None
    page.screenshot(path=str(path), clip={"x": box["x"], "y": box["y"], "width": box["width"],
                                          "height": min(box["height"], viewport["height"] - box["y"])})
    page.mouse.move(1, 1)


def _hover_cell(page, title: str, row: str, column: str) -> str:
    """Hovers the pair heatmap's cell of raters ``row`` × ``column``; returns the hover's text."""
    plot = page.locator(".js-plotly-plot").filter(has=page.locator(".gtitle", has_text=title)).first
    rows, columns = plot.evaluate("p => [p.data[0].y, p.data[0].x]")
    assert row in rows and column in columns, (row, column, rows)
    x, y = _cell_center(page, title, rows.index(row), columns.index(column), len(rows))
    page.mouse.move(x, y)
    hover = page.locator(".hoverlayer .hovertext")
    assert _eventually(lambda: hover.count() > 0, timeout=10), "no hover on the cell"
    return hover.first.text_content() or ""


def _rater_table(page, path: Path, heading: str) -> None:
    assert not _wait_texts(page, [heading, "Sort raters by"], timeout=60)
    _panel_shot(page, path, page.get_by_text("Sort raters by", exact=True))


@pytest.mark.skipif(not SCREENSHOTS, reason="the docs' crowd screenshots are taken only with IAA_SCREENSHOTS_DIR")
def test_crowd_panel_screenshots_of_the_docs(fo, browser_tools, crowd_app, tmp_path):
    url, _, log = crowd_app
    shots = Path(os.environ["IAA_SCREENSHOTS_DIR"])
    shots.mkdir(parents=True, exist_ok=True)
    dataset = _docs_crowd(fo)
    heatmap = "Heatmap shows"
    try:
        with chromium_page(browser_tools, tmp_path / "failure_crowd_docs_1440.png", log, 1440, 900) as page:
            _open_panel(page, url, dataset)
            _select_run(page, "kalos")
            _rater_table(page, shots / "kalos-raters-1440x900.png", "by vitality, worst first")
            _colour_cells_by(page, "the run's pairwise value")
            # the numbers docs/pairwise-agreement.md quotes beside these screenshots
            assert not _wait_texts(page, ["Why the cells look worse than the headline:",
                                          "53% of the 4,277 defined pairwise α are"])
            _panel_shot(page, shots / "pair-heatmap-note-1440x900.png",
                        page.get_by_text("Why the cells look worse than the headline:"))
            _colour_cells_by(page, "observed agreement")
            hover: list[str] = []
            _panel_shot(page, shots / "pair-heatmap-1440x900.png", page.get_by_text(heatmap, exact=True),
                        hover=lambda: hover.append(_hover_cell(page, "Observed agreement per rater pair",
                                                               "w181", "w98")))
            assert "w181 × w98" in hover[0] and "observed agreement 0.714, 95% [0.500, 0.862]" in hover[0], hover
            _select_run(page, "consensus")
            _rater_table(page, shots / "rater-table-1440x900.png", "against the consensus")
        with chromium_page(browser_tools, tmp_path / "failure_crowd_docs_1280.png", log, 1280, 720) as page:
            _open_panel(page, url, dataset)
            _select_run(page, "consensus")
            _rater_table(page, shots / "rater-table-1280x720.png", "against the consensus")
            _select_run(page, "kalos")
            _colour_cells_by(page, "observed agreement")
            _panel_shot(page, shots / "pair-heatmap-observed-1280x720.png", page.get_by_text(heatmap, exact=True))
            _colour_cells_by(page, "the run's pairwise value")
            _panel_shot(page, shots / "pair-heatmap-1280x720.png", page.get_by_text(heatmap, exact=True))
            _assert_drawn(page, ["Rater vitality"])
            _panel_shot(page, shots / "vitality-1280x720.png", page.locator(".js-plotly-plot").filter(
                has=page.locator(".gtitle", has_text="Rater vitality")), offset=14)
    finally:
        fo.delete_dataset(DOCS_CROWD)
