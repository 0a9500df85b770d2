"""The user's sidebar filter survives what the plugin does (issue 48): running an operator on the current view
with no panel open (the App dropped the filter when the run reloaded the dataset), then opening and closing the
panel. Clicked in Chromium; the SDK checks the run covered exactly the filtered samples."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from browser_support import (  # noqa: E402 - the shared helpers of the browser tests
    _count,
    _eventually,
    _wait_count,
    assert_clean_server_log,
    browser_tools,  # noqa: F401 - a fixture
    chromium_page,
    open_dataset_page,
    running_app,
)

pytestmark = [pytest.mark.fiftyone, pytest.mark.browser]

DATASET = "iaa-browser-filters"


@pytest.fixture(scope="module")
def filters_app(fo, tmp_path_factory):
    import fiftyone.operators as foo

    from agreement.fo.importers.coco import import_multi_rater_coco
    from agreement.simulate.synthetic.crowd_export import write_crowd_export

    if fo.dataset_exists(DATASET):
        fo.delete_dataset(DATASET)
    export = write_crowd_export(tmp_path_factory.mktemp("filters-crowd"), num_samples=60, num_raters=12,
                                raters_per_sample=4)
    dataset = import_multi_rater_coco(export, dataset_name=DATASET, layout="attribute", persistent=True)
    r = foo.execute_operator("@iaa/agreement/compute_kalos", ctx=dict(view=dataset.view(), params=dict(
        key="kalos", field="ground_truth", rater_attr="annotator")))
    assert r.error is None, r.error
    with running_app(tmp_path_factory, "filters-server") as (url, log):
        yield url, dataset, log
    if fo.dataset_exists(DATASET):
        fo.delete_dataset(DATASET)


def _threshold(values) -> float:
    """A bound halfway between two scores that keeps about the lowest third."""
    scores = sorted(v for v in values if v is not None)
    k = len(scores) // 3
    while scores[k + 1] - scores[k] < 1e-3:
        k += 1
    return round((scores[k] + scores[k + 1]) / 2, 4)


def _stays(page, n: int, seconds: float = 4.0) -> bool:
    """Whether the grid, once the App's reload and the filter's restores are over (12 s: the App drops the
    filters when its reload completes, and the plugin sets them again within about 10 s), shows ``n`` samples
    for ``seconds`` on end."""
    page.wait_for_timeout(12_000)
    deadline = page.evaluate("Date.now()") + seconds * 1000
    while page.evaluate("Date.now()") < deadline:
        if _count(page) != n:
            return False
        page.wait_for_timeout(500)
    return True


def test_a_sidebar_filter_survives_an_operator_on_the_current_view_and_the_panel(fo, browser_tools, filters_app,
                                                                                 tmp_path):
    from agreement.fo.runs import get_agreement_run_info
    from test_browser_crowd import _close_dialogs

    url, dataset, log = filters_app
    bound = _threshold(dataset.values("kalos_alpha"))
    with chromium_page(browser_tools, Path(tmp_path) / "failure-filters.png", log) as page:
        open_dataset_page(page, url, DATASET)
        page.locator('[data-cy="sidebar-field-container-kalos_alpha"]').scroll_into_view_if_needed()
        page.locator('[data-cy="sidebar-field-arrow-enabled-kalos_alpha"]').click()
        box = page.locator('input[placeholder="max"]').first
        box.fill(str(bound))
        box.press("Enter")
        assert _eventually(lambda: _count(page) < len(dataset), timeout=30)
        page.wait_for_timeout(2000)
        n = _count(page)  # what the App shows (its slider may round the lower bound)
        assert 0 < n < len(dataset)
        # OT on the current view, no panel open
        page.keyboard.press("`")
        search = page.locator('[data-cy="operators-browser-search"] input, input[placeholder*="Search"]').first
        search.wait_for(timeout=15_000)
        search.fill("OT agreement")
        page.get_by_text("Annotator Agreement: OT agreement", exact=True).first.click(timeout=15_000)
        page.get_by_role("radio", name=re.compile("Current view")).first.check(timeout=30_000)
        page.wait_for_timeout(1000)
        page.get_by_role("button", name="Execute").first.click(timeout=15_000)

        def done() -> bool:
            dataset.reload()
            return "ot" in dataset.list_runs() and get_agreement_run_info(dataset, "ot")["status"] == "complete"

        assert _eventually(done, timeout=180)
        page.get_by_text(re.compile(r"^alpha-OT \(1 perfect")).first.wait_for(timeout=60_000)  # the result
        _close_dialogs(page)  # closed as a user does
        assert _stays(page, n), f"the filter was dropped after the run: {_count(page)} samples, not {n}"
        assert get_agreement_run_info(dataset, "ot")["params"]["target"]["n_samples"] == n
        assert len(dataset.exists("ot_ot")) <= n
        # the panel opened, then closed: the filter stays
        page.locator('[data-cy="new-panel-btn"]').first.click()
        page.locator('[data-cy="new-panel-option-annotator_agreement"]').click()
        page.locator('div[role="combobox"]', has_text=re.compile(r"^\S+ — ")).first.wait_for(timeout=60_000)
        assert _stays(page, n), f"the filter was dropped when the panel opened: {_count(page)} samples"
        page.screenshot(path=str(Path(tmp_path) / "filter-panel.png"))
        tab = page.locator('[data-cy="panel-tab-annotator_agreement"]')
        tab.locator("xpath=..").locator('[data-testid="CloseIcon"], svg').last.click()
        page.wait_for_timeout(1500)
        assert _stays(page, n), f"the filter was dropped when the panel closed: {_count(page)} samples"
        assert _wait_count(page, n) == n
    assert_clean_server_log(log)
