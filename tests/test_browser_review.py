"""The review loop in the App's sample view, clicked through in Chromium (issue 48), with the SDK checking
what each click did.

On a generated crowd (200 raters, images named without an extension, boxes) and on a class dataset:

1. the panel's **Review queue** loads the flagged consensus labels (patches; classes: samples), and
   **Review in the sample view** opens the first undecided item;
2. the panel's tab in the sample view shows the item's consensus label and the raters' labels behind it; the
   sample view stays open (it closed within seconds when a panel event failed on the queue's view);
3. Accept (opens the next item), Next, Reject (opens the next), Previous (back to the rejected item), Undo,
   Next: the SDK then finds exactly the first item accepted and nothing else tagged, no rater label
   touched;
4. back in the grid, **Show the whole dataset** gives the whole dataset and a working panel;
5. the App server's log holds no "has no field" error and no panel error.

Screenshots (``$IAA_SCREENSHOTS_DIR``, e.g. ``docs/images``, or a temporary folder): ``review-*.png``.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import numpy as np
import pytest

from browser_support import (  # noqa: E402 - the shared helpers of the browser tests
    _eventually,
    _open_panel,
    _wait_entries,
    assert_clean_server_log,
    browser_tools,  # noqa: F401 - a fixture
    chromium_page,
    running_app,
)

pytestmark = [pytest.mark.fiftyone, pytest.mark.browser]

BOXES, CLASSES = "iaa-review-boxes", "iaa-review-classes"
RATERS = ["r1", "r2", "r3", "r4"]
NAMES = ["bird", "cat", "dog"]


def _class_dataset(fo, folder: Path):
    from PIL import Image

    rng = np.random.default_rng(7)
    samples = []
    for i in range(24):
        path = folder / f"c{i:02d}.png"  # made here, not imported: FiftyOne tells the media type by extension
        Image.new("RGB", (96, 72), (40 * (i % 3) + 60, 120, 90)).save(path)
        truth = NAMES[i % 3]
        samples.append(fo.Sample(filepath=str(path), **{
            r: fo.Classification(label=NAMES[(i + 1) % 3] if rng.random() < err else truth)
            for r, err in zip(RATERS, (0.0, 0.15, 0.3, 0.55))}))
    dataset = fo.Dataset(CLASSES, persistent=True)
    dataset.add_samples(samples, progress=False)
    return dataset


@pytest.fixture(scope="module")
def review_app(fo, tmp_path_factory):
    import fiftyone.operators as foo

    from agreement.fo.importers.coco import import_multi_rater_coco
    from agreement.simulate.synthetic.crowd_export import write_crowd_export

    for name in (BOXES, CLASSES):
        if fo.dataset_exists(name):
            fo.delete_dataset(name)
    export = write_crowd_export(tmp_path_factory.mktemp("review-crowd"), num_samples=80, num_raters=200,
                                raters_per_sample=9)
    boxes = import_multi_rater_coco(export, dataset_name=BOXES, layout="attribute", persistent=True)
    classes = _class_dataset(fo, tmp_path_factory.mktemp("review-classes"))
    for dataset, params in ((boxes, dict(field="ground_truth", rater_attr="annotator")),
                            (classes, dict(fields=RATERS, method="majority", review_band=[0.2, 0.9]))):
        r = foo.execute_operator("@iaa/agreement/compute_consensus",
                                 ctx=dict(view=dataset.view(), params=dict(key="cons", **params)))
        assert r.error is None, r.error
    with running_app(tmp_path_factory, "review-server") as (url, log):
        yield url, boxes, classes, log
    for name in (BOXES, CLASSES):
        if fo.dataset_exists(name):
            fo.delete_dataset(name)


def _shots(tmp_path) -> Path:
    folder = Path(os.environ.get("IAA_SCREENSHOTS_DIR") or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _modal_open(page) -> bool:
    return bool(page.locator("#modal.modalon").count() or page.locator('[data-cy="modal"]').count())


def _modal_text(page, text: str, timeout: float = 30.0) -> None:
    """Waits until the sample view's panel shows ``text``."""
    page.locator("#modal").get_by_text(text).first.wait_for(timeout=timeout * 1000)


def _click(page, label: str) -> None:
    page.locator("#modal").get_by_role("button", name=label, exact=True).first.click(timeout=20_000)


def _tags(dataset) -> dict:
    """The tags of every consensus label, by id (a class consensus: one label per sample)."""
    dataset.reload()
    out = {}
    for value in dataset.values("cons_consensus"):
        for lab in (value.detections if hasattr(value, "detections") else [value] if value else []):
            out[lab.id] = sorted(lab.tags or [])
    return out


def _close(page) -> None:
    """Closes the sample view as a user does: Escape with the item (not the panel) focused."""
    for _ in range(6):
        if not page.locator("#modal.modalon").count():
            return
        looker = page.locator('#modal [data-cy="modal-looker-container"]:visible')
        if looker.count():  # hovered, not clicked: a click selects the item (then Escape only unselects it)
            looker.first.hover()
        page.keyboard.press("Escape")
        page.wait_for_timeout(2000)


def _review_in_the_modal(page, url: str, dataset, unit: str, shots: Path, prefix: str) -> None:
    """Steps 1-4 on one dataset (``unit``: what the grid counts in the queue)."""
    from agreement.fo.methods.consensus import review_view

    queue = review_view(dataset, "cons")
    items, label_ids = queue.values("id"), queue.values("cons_consensus.id")
    assert len(items) >= 4, len(items)
    rater_fields = RATERS if dataset.name == CLASSES else ["ground_truth"]
    before = {f: dataset.count_label_tags(f) for f in rater_fields}
    _open_panel(page, url, dataset)
    page.get_by_text("Review queue: the").first.click()
    assert _wait_entries(page, len(items), timeout=60) == len(items)
    page.wait_for_timeout(1500)
    page.screenshot(path=str(shots / f"{prefix}-queue.png"))
    # 1. the first undecided item in the sample view, the panel's tab there
    page.get_by_role("button", name=re.compile("Review in the sample view")).first.click(timeout=30_000)
    tab = page.locator('#modal [data-cy="panel-tab-annotator_agreement"]')
    tab.wait_for(timeout=30_000)
    tab.click()
    _modal_text(page, f"Item 1 of {len(items)}", timeout=60)
    split = page.locator("#modal [title='Split horizontally']")
    if split.count() and not page.locator('#modal [data-cy="modal-looker-container"]').count():
        split.first.click()  # the item beside the panel (the App remembers the split for the next items)
        page.locator('#modal [data-cy="panel-tab-fo-sample-modal-plugin"]').first.click()
    page.locator('#modal [data-cy="modal-looker-container"]').first.wait_for(timeout=30_000)
    page.wait_for_timeout(10_000)  # 2. it stays open (a failed panel event closed it within 2-7 s)
    assert _modal_open(page), "the sample view closed by itself"
    _modal_text(page, f"Item 1 of {len(items)}", timeout=5)
    page.screenshot(path=str(shots / f"{prefix}-item.png"))
    # 3. Accept, Next, Reject, ← back, Undo, Next
    _click(page, "Accept")
    _modal_text(page, f"Item 2 of {len(items)}")
    assert _eventually(lambda: _tags(dataset).get(label_ids[0]) == ["accepted"], timeout=30)
    _modal_text(page, f"1 of {len(items)} flagged labels decided")
    _click(page, "Next undecided")
    _modal_text(page, f"Item 3 of {len(items)}")
    _click(page, "Reject")
    _modal_text(page, f"Item 4 of {len(items)}")
    assert _eventually(lambda: _tags(dataset).get(label_ids[2]) == ["rejected"], timeout=30)
    page.screenshot(path=str(shots / f"{prefix}-decided.png"))
    _click(page, "Previous")
    _modal_text(page, f"Item 3 of {len(items)}")
    _click(page, "Undo")
    assert _eventually(lambda: _tags(dataset).get(label_ids[2]) == [], timeout=30)
    _modal_text(page, f"1 of {len(items)} flagged labels decided")
    _click(page, "Next undecided")
    _modal_text(page, f"Item 4 of {len(items)}")
    page.wait_for_timeout(3000)
    assert _modal_open(page)
    tags = _tags(dataset)
    assert {i: t for i, t in tags.items() if t} == {label_ids[0]: ["accepted"]}, tags
    assert {f: dataset.count_label_tags(f) for f in rater_fields} == before  # no rater label touched
    assert dataset.count_sample_tags() == {}
    # 4. back to the grid: the whole dataset, and the panel still works
    _close(page)
    assert not page.locator("#modal.modalon").count()
    page.wait_for_timeout(2000)  # the panel redraws its dashboard when the sample view closes
    page.evaluate("console.log('---- whole dataset')")
    whole = page.locator("button:visible", has_text=re.compile("^Show the whole dataset$"))  # not the closed modal's
    whole.first.click(timeout=30_000)
    assert _wait_entries(page, len(dataset), timeout=60) == len(dataset)  # "8 patches", then "80 samples"
    page.locator("button:visible", has_text="Review queue: the").first.wait_for(timeout=60_000)
    # the panel follows: the whole dataset described, the review's text gone with the queue
    page.get_by_text(f"{len(dataset)} samples in view: the whole dataset").first.wait_for(timeout=60_000)
    assert _eventually(lambda: not page.locator("text=Review in the sample view:visible").count(), timeout=30)
    assert not page.get_by_text("could not update").count()
    page.screenshot(path=str(shots / f"{prefix}-whole.png"))


def test_review_in_the_sample_view_boxes_and_classes(fo, browser_tools, review_app, tmp_path):
    url, boxes, classes, log = review_app
    shots = _shots(tmp_path)
    with chromium_page(browser_tools, shots / "failure-review.png", log) as page:
        _review_in_the_modal(page, url, boxes, "patches", shots, "review-boxes")
        _review_in_the_modal(page, url, classes, "samples", shots, "review-classes")
    assert_clean_server_log(log)
