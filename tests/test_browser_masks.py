"""The App on semantic masks: a short browser journey through the panel on a mask agreement run.

On 16 small street images with three raters' ``Segmentation`` fields (classes from ``mask_targets``: background,
road, car, tree; a car on samples 8-15; rater ``r3`` only on samples 0-9), the run ``seg`` is computed in Python
before the App opens. Then, in headless Chromium at 1440 × 900, only through the UI:

1. the panel opens on ``seg``: the per-sample Dice histogram, the per-class bars of pixel α and Dice and the
   rater pair × class heatmap of mean Dice are drawn, each with a title and both axis titles, none cut by the
   panel's column; screenshots;
2. the car's Dice bar clicked: the grid shows the 8 samples where two raters met on car (the panel's note says
   lowest Dice first); screenshot of the grid with the masks;
3. the heatmap cell (r1 | r3, car) clicked: the grid shows the 2 samples where that pair met on car.

Screenshots go to ``$IAA_SCREENSHOTS_DIR`` or a temporary folder. Skipped when Chromium or Playwright is
missing (failed with ``IAA_REQUIRE_BROWSER=1``).
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import numpy as np
import pytest

from browser_support import (  # noqa: E402 - the shared helpers of the browser tests
    CHROMIUM_ARGS,
    _assert_titled,
    _click_until_count,
    _count,
    _open_panel,
    _wait_plots,
    _wait_texts,
    browser_tools,  # noqa: F401 - a fixture
    running_app,
)
from test_browser_classes import _overflowing, _panel_shot, _scroll_panel_to

pytestmark = [pytest.mark.fiftyone, pytest.mark.browser]

DATASET = "iaa-browser-masks"
RATERS = ["r1", "r2", "r3"]
TARGETS = {0: "background", 1: "road", 2: "car", 3: "tree"}
COLOURS = {0: (150, 180, 210), 1: (90, 90, 95), 2: (200, 40, 40)}
N, SHAPE = 16, (96, 128)
TITLES = ["Per-sample Dice", "Agreement per class", "Mean Dice per rater pair and class"]


def _truth(i: int) -> np.ndarray:
    """Sample ``i``'s scene: a road across the lower half, of varying width; a car on samples 8-15."""
    m = np.zeros(SHAPE, np.uint8)
    m[56:, : 60 + 8 * (i % 6)] = 1
    if i >= 8:
        m[30:54, 40 + 4 * (i % 5):84 + 4 * (i % 5)] = 2
    return m


def _masks(i: int) -> dict[str, np.ndarray | None]:
    """r1 the truth; r2 shifted right by ``6 * (i % 4)`` pixels; r3 with its car and road cut short at the
    right, on samples 0-9 only."""
    t = _truth(i)
    r3 = t.copy() if i < 10 else None
    if r3 is not None:
        r3[:, 84 - 10 * (i % 3):] = 0
    return {"r1": t, "r2": np.roll(t, 6 * (i % 4), axis=1), "r3": r3}


@pytest.fixture(scope="module")
def masks_app(fo, tmp_path_factory):
    from PIL import Image

    import fiftyone.operators as foo

    if fo.dataset_exists(DATASET):
        fo.delete_dataset(DATASET)
    folder = tmp_path_factory.mktemp("mask-images")
    samples = []
    for i in range(N):
        path = folder / f"street{i:02d}.png"
        t = _truth(i)
        rgb = np.zeros((*SHAPE, 3), np.uint8)
        for c, colour in COLOURS.items():
            rgb[t == c] = colour
        Image.fromarray(rgb).save(path)
        s = fo.Sample(filepath=str(path))
        for r, m in _masks(i).items():
            s[r] = fo.Segmentation(mask=m) if m is not None else None
        samples.append(s)
    dataset = fo.Dataset(DATASET, persistent=True)
    dataset.add_samples(samples, progress=False)
    dataset.default_mask_targets = TARGETS
    dataset.save()
    started = time.time()
    r = foo.execute_operator("@iaa/agreement/compute_mask_agreement",
                             ctx=dict(view=dataset.view(), params=dict(fields=RATERS, key="seg")))
    assert r.error is None, r.error
    print(f"mask run computed in {time.time() - started:.1f} s")  # a figure, not a test
    with running_app(tmp_path_factory, "masks-server") as (url, log):
        yield url, dataset, log
    fo.delete_dataset(DATASET)


def _plot(page, title: str):
    return page.locator(".js-plotly-plot").filter(has=page.locator(".gtitle", has_text=title)).first


def _heat_cell(page, title: str, i: int, j: int, rows: int, cols: int) -> tuple[float, float]:
    """Page coordinates of cell (row ``i`` from the top, column ``j``) of a ``rows`` × ``cols`` heatmap."""
    plot = _plot(page, title)
    plot.scroll_into_view_if_needed()
    page.wait_for_timeout(300)
    box = plot.locator(".draglayer .nsewdrag").first.bounding_box()  # the plot area
    return box["x"] + (j + 0.5) * box["width"] / cols, box["y"] + (i + 0.5) * box["height"] / rows


def _show_masks(page, field: str) -> None:
    """Ticks (or unticks) label field ``field`` in the sidebar, as a user does to see its masks on the grid."""
    row = page.locator(f'[data-cy="sidebar-field-container-{field}"]')
    row.scroll_into_view_if_needed()
    page.locator(f'[data-cy="checkbox-{field}"]').first.click()  # the "Show {field}" box beside its name
    page.wait_for_timeout(1000)


def test_mask_run_in_the_panel_and_its_drill_downs(fo, browser_tools, masks_app, tmp_path):
    from playwright.sync_api import sync_playwright

    from agreement.fo.runs import get_agreement_run_info, load_agreement_results
    from agreement.fo.views import mask_dice_scores
    from agreement.reporting.figures.masks import mask_class_bars, pair_class_heatmap

    url, dataset, log = masks_app
    shots = Path(os.environ.get("IAA_SCREENSHOTS_DIR") or tmp_path)
    shots.mkdir(parents=True, exist_ok=True)
    info, detail = get_agreement_run_info(dataset, "seg"), load_agreement_results(dataset, "seg")["detail"]
    classes = mask_class_bars(detail, info)["traces"][1]["x"]
    heat = pair_class_heatmap(detail, info)["traces"][0]
    n_car = len(mask_dice_scores(dataset, "seg", "car"))
    n_cell = len(mask_dice_scores(dataset, "seg", "car", "r1 | r3"))
    assert (n_car, n_cell) == (8, 2)
    timings = {}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=browser_tools, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1440, "height": 900})
        try:
            # 1. the run: histogram, per-class bars and the pair x class heatmap, titled, not cut
            started = time.time()
            _open_panel(page, url, dataset)
            plots = _wait_plots(page, TITLES, timeout=60)
            timings["mask run drawn"] = time.time() - started
            _assert_titled(plots, TITLES)
            _show_masks(page, "r2")  # one rater's masks on the grid's images
            assert not _wait_texts(page, ["pixel α (pooled)", "Dice (pooled)"])
            _panel_shot(page, shots / "mask-agreement-panel-1440-top.png")
            _scroll_panel_to(page, "Agreement per class")
            page.mouse.move(5, 5)  # no hover label over the charts
            _panel_shot(page, shots / "mask-agreement-panel-1440.png")
            assert not _overflowing(page)

            # 2. the car's Dice bar: the samples where two raters met on car, lowest Dice first
            started = time.time()
            bars = _plot(page, "Agreement per class").locator("g.trace.bars").nth(1).locator("g.point path")
            k = classes.index("car")
            assert _click_until_count(page, lambda: bars.nth(k).click(force=True), n_car) == n_car
            assert not _wait_texts(page, ["on car lowest, lowest first"])
            timings["class drill-down"] = time.time() - started
            page.locator('[data-cy="fo-grid"] [data-cy="looker"]').first.wait_for(timeout=30_000)
            _panel_shot(page, shots / "mask-class-drill-down-1440.png")

            # 3. a heatmap cell: where r1 and r3 met on car
            started = time.time()
            x, y = _heat_cell(page, "Mean Dice per rater pair and class", heat["y"].index("r1 | r3"),
                              heat["x"].index("car"), len(heat["y"]), len(heat["x"]))
            assert _click_until_count(page, lambda: page.mouse.click(x, y), n_cell) == n_cell
            assert not _wait_texts(page, ["r1 and r3's Dice on car"])
            timings["cell drill-down"] = time.time() - started
            assert _count(page) == n_cell
            _show_masks(page, "r2")  # r2 hidden, r3 shown: r3's masks are cut short at the right
            _show_masks(page, "r3")
            _panel_shot(page, shots / "mask-drill-down-1440.png")  # the docs' caption: the cell clicked
        except Exception:
            page.screenshot(path=str(shots / "failure_masks.png"))
            raise
        finally:
            browser.close()
    print({k: f"{v:.1f} s" for k, v in timings.items()})  # figures, not tests
    server_log = log.read_text(errors="replace")
    assert "agreement_panel" not in server_log, server_log[-3000:]
