"""A run too long for an immediate execution, from the App (issue 51, item 4): the form says so and the run is
delegated, then completes through FiftyOne's delegated-operation service with its progress recorded.

An App server of its own, started with ``FIFTYONE_OPERATOR_TIMEOUT=1`` (FiftyOne's bound on an immediate run,
600 s by default, read by the server when it starts) and ``FIFTYONE_ALLOW_LEGACY_ORCHESTRATORS=true`` (without
it, FiftyOne's App shows "Schedule" as not available), so that 3,000 samples × 3 raters × 5 boxes (about 2.3 s
by the form's estimate) are "long". In headless Chromium, only through the UI: the consensus form, the three
rater fields picked; the form warns that the run is over FiftyOne's limit and says how to schedule it; the
menu beside Execute lists "Schedule" first (the App keeps Execute on the button until the user picks another
choice); picking it and clicking the button queues the run without running it. The queue is then run as
``fiftyone delegated launch`` runs it (one pass of ``DelegatedOperationService``): the run is registered,
complete, and its stages were recorded on the operation.

Screenshots go to ``$IAA_SCREENSHOTS_DIR`` or a temporary folder. Skipped when Chromium or Playwright is
missing (failed with ``IAA_REQUIRE_BROWSER=1``).
"""

from __future__ import annotations

import numpy as np
import pytest

from browser_support import (  # noqa: E402 - the shared helpers of the browser tests
    _eventually,
    browser_tools,  # noqa: F401 - a fixture
    chromium_page,
    open_dataset_page,
    start_app,
)

pytestmark = [pytest.mark.fiftyone, pytest.mark.browser]

DATASET = "iaa-browser-delegation"
RATERS = ["a", "b", "c"]
URI = "@iaa/agreement/compute_consensus"


@pytest.fixture(scope="module")
def long_run_app(fo, tmp_path_factory):
    """3,000 samples, raters a/b/c with jittered copies of 5 boxes each (about 2.3 s by the consensus form's
    estimate, over 1 s with any two of the raters), and an App server whose bound on an immediate run is 1 s;
    yields ``(url, dataset, log)``."""
    if fo.dataset_exists(DATASET):
        fo.delete_dataset(DATASET)
    dataset = _boxes(fo, DATASET, 3000)
    log = tmp_path_factory.mktemp("delegation-server") / "server.log"
    proc, url = start_app(log, env={"FIFTYONE_OPERATOR_TIMEOUT": "1", "FIFTYONE_ALLOW_LEGACY_ORCHESTRATORS": "true"})
    try:
        yield url, dataset, log
    finally:
        proc.kill()  # its own server, no state to keep: no graceful shutdown (10 s of a loaded run)
        proc.wait(timeout=30)
        if fo.dataset_exists(DATASET):
            fo.delete_dataset(DATASET)


def _boxes(fo, name: str, n: int):
    """``n`` samples with jittered copies of 5 boxes per rater, inserted as raw documents in FiftyOne's layout
    (the fields declared first; building ``fo.Sample`` objects took 20 s of a loaded test run)."""
    from datetime import datetime, timezone

    from bson import ObjectId

    dataset = fo.Dataset(name, persistent=True)
    for r in RATERS:
        dataset.add_sample_field(r, fo.EmbeddedDocumentField, embedded_doc_type=fo.Detections)
    rng = np.random.default_rng(5)
    now = datetime.now(timezone.utc).replace(tzinfo=None)
    docs = []
    for i in range(n):
        xy = rng.uniform(0.05, 0.6, size=(5, 2))
        doc = {"_id": ObjectId(), "filepath": f"/nonexistent/delegation/{i:05d}.jpg", "tags": [], "metadata": None,
               "created_at": now, "last_modified_at": now, "_media_type": "image", "_rand": float(rng.random()),
               "_dataset_id": dataset._doc.id}
        for r in RATERS:
            jitter = xy + rng.normal(0, 0.01, size=xy.shape)
            doc[r] = {"_cls": "Detections", "detections": [
                {"_id": ObjectId(), "_cls": "Detection", "attributes": {}, "tags": [], "label": "car",
                 "bounding_box": [float(x), float(y), 0.2, 0.2]} for x, y in jitter]}
        docs.append(doc)
    dataset._sample_collection.insert_many(docs, ordered=False)
    dataset.reload()
    return dataset


def test_a_long_run_is_delegated_from_the_form_and_completes_through_the_queue(fo, browser_tools, long_run_app,
                                                                                tmp_path):
    from fiftyone.operators.delegated import DelegatedOperationService
    from fiftyone.operators.executor import ExecutionRunState

    from agreement.fo.runs import get_agreement_run_info
    from test_browser_crowd import _run_operator
    from test_browser_forms import _pick_values, _prompt, _shots

    url, dataset, log = long_run_app
    shots = _shots(tmp_path)
    service = DelegatedOperationService()
    before = {op.id for op in service.list_operations(dataset_name=DATASET)}
    with chromium_page(browser_tools, shots / "failure_delegation.png", log) as page:
        open_dataset_page(page, url, DATASET)
        _run_operator(page, "consensus labels", "Annotator Agreement: consensus labels")
        prompt = _prompt(page)
        prompt.get_by_text("Rater fields", exact=True).wait_for(timeout=30_000)
        _pick_values(page, "Rater fields", RATERS)
        warning = prompt.get_by_text("over FiftyOne's limit of 1 second for immediate runs; delegate it", exact=False)
        every_rater = prompt.get_by_text("3,000 samples, about 45,000 labels", exact=False)  # the form re-resolved
        assert _eventually(lambda: warning.count() > 0 and every_rater.count() > 0, timeout=90), \
            "the form does not warn of a long run on the three raters: " + prompt.inner_text()[-800:]
        shown = prompt.inner_text()
        assert "fiftyone delegated launch" in shown, shown
        assert "choose Schedule in the menu beside Execute" in shown, shown  # this App can schedule
        warning.first.scroll_into_view_if_needed()
        page.screenshot(path=str(shots / "delegation_form_warns.png"))
        # the execution choice, as the form says: the menu beside Execute, "Schedule" (listed first past the bound)
        execute = page.get_by_role("button", name="Execute", exact=True).first
        execute.locator("xpath=following-sibling::button[1]").click(timeout=15_000)
        page.wait_for_timeout(800)
        page.screenshot(path=str(shots / "delegation_menu.png"))
        items = page.get_by_role("menuitem").all_inner_texts()
        assert items and items[0].startswith("Schedule"), items
        page.get_by_role("menuitem").filter(has_text="Schedule").first.click(timeout=15_000)
        schedule = page.get_by_role("button", name="Schedule", exact=True)
        assert _eventually(lambda: schedule.count() > 0, timeout=15), "the button does not say Schedule"
        schedule.first.click(timeout=15_000)
        queued = lambda: [op for op in service.list_operations(dataset_name=DATASET) if op.id not in before]  # noqa: E731
        assert _eventually(lambda: len(queued()) == 1, timeout=30), "the run was not queued"
        page.wait_for_timeout(1500)
        page.screenshot(path=str(shots / "delegation_scheduled.png"))

    op = queued()[0]
    key = op.context.request_params["params"]["key"]
    assert op.run_state == ExecutionRunState.QUEUED
    dataset.reload()
    assert key not in dataset.list_runs()  # queued, not run
    service.execute_queued_operations(operator=URI, dataset_name=DATASET)  # what `fiftyone delegated launch` does
    done = service.get(op.id)
    try:
        assert done.run_state == ExecutionRunState.COMPLETED, done.result.error if done.result else None
        assert done.status is not None and done.status.label  # its progress, recorded on the operation
        dataset.reload()
        info = get_agreement_run_info(dataset, key)
        assert info["status"] == "complete" and dataset.count(f"{key}_consensus.detections") > 0
    finally:
        service.delete_operation(op.id)
