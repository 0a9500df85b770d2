"""The relabel loop in the App (issue 52, item 4), clicked through in Chromium against a real Label Studio server,
with the SDK checking what each click did.

On 30 small images with three raters' ``Classification`` fields (``r1`` mostly right, ``r3`` often wrong) and a
class consensus run ``cons`` (majority vote; its method offers both hooks, ``planning`` and ``relabel``), only through the
panel's **Another opinion** section:

1. a target typed and **Plan raters**: the curve with its target line is drawn and the panel says
   "k raters reach … ≥ T with 90 % confidence, N labels"; the SDK finds that plan stored with the run;
2. a number typed and **Suggest N samples for another rater**: the grid shows exactly the N samples
   ``suggest_relabel`` ranks first, and the run owns ``cons_relabel_priority``;
3. **Send to Label Studio**: a Label Studio project with those N tasks exists (the App's server knows the
   Label Studio server only through FiftyOne's annotation config: ``FIFTYONE_LABELSTUDIO_URL`` and
   ``FIFTYONE_LABELSTUDIO_API_KEY`` in its environment); the panel says the round waits for its labels;
4. the annotators, simulated through Label Studio's REST API (``POST /api/tasks/{id}/annotations/``), label
   each task with the sample's true class;
5. **Load labels**: the new rater's field holds the N labels, and the panel shows the run's headline numbers
   before and after the round.

The App server of this module is its own (started with the annotation config in its environment, stopped by
its process id). Screenshots (``$IAA_SCREENSHOTS_DIR``, e.g. ``docs/images``, or a temporary folder):
``relabel-*.png``.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
import urllib.request
from pathlib import Path

import numpy as np
import pytest

from browser_support import (  # noqa: E402 - the shared helpers of the browser tests
    CLASS_COLOURS,
    _open_panel,
    _wait_count,
    _wait_texts,
    assert_clean_server_log,
    browser_tools,  # noqa: F401 - a fixture
    chromium_page,
    class_images,
    start_app,
)

pytestmark = [pytest.mark.fiftyone, pytest.mark.browser]

DATASET = "iaa-browser-relabel"
RATERS = ["r1", "r2", "r3"]
CLASSES = list(CLASS_COLOURS)  # bird, cat, dog
TARGET, BUDGET = 0.7, 6


@pytest.fixture(scope="module")
def relabel_app(fo, labelstudio_server, tmp_path_factory):
    import fiftyone.operators as foo

    if fo.dataset_exists(DATASET):
        fo.delete_dataset(DATASET)
    rng = np.random.default_rng(11)
    samples = []
    for i, path in enumerate(class_images(tmp_path_factory.mktemp("relabel-images"), 30)):
        truth = CLASSES[i % 3]
        kw = {r: fo.Classification(label=CLASSES[(i + 1 + int(rng.integers(2))) % 3] if rng.random() < err else truth)
              for r, err in zip(RATERS, (0.1, 0.3, 0.5))}
        samples.append(fo.Sample(filepath=path, truth_class=truth, **kw))
    dataset = fo.Dataset(DATASET, persistent=True)
    dataset.add_samples(samples, progress=False)
    r = foo.execute_operator("@iaa/agreement/compute_consensus",
                             ctx=dict(view=dataset.view(), params=dict(key="cons", fields=RATERS, method="majority")))
    assert r.error is None, r.error
    log = tmp_path_factory.mktemp("relabel-server") / "server.log"
    env = {"FIFTYONE_LABELSTUDIO_URL": labelstudio_server.url, "FIFTYONE_LABELSTUDIO_API_KEY": labelstudio_server.token}
    proc, url = start_app(log, env=env)
    try:
        yield url, dataset, log, labelstudio_server
    finally:
        proc.terminate()  # the App server this module started, by its process
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=30)
        if fo.dataset_exists(DATASET):
            fo.delete_dataset(DATASET)


def _shots(tmp_path) -> Path:
    folder = Path(os.environ.get("IAA_SCREENSHOTS_DIR") or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _shot(page, path: Path, top_text: str, block: str = "start") -> None:
    """A screenshot of the window, the panel scrolled to the text ``top_text`` (at its ``block``)."""
    page.get_by_text(top_text).first.evaluate(f"e => e.scrollIntoView({{block: '{block}'}})")
    page.wait_for_timeout(1500)  # the grid's images
    page.screenshot(path=str(path))


def _field(page, label: str):
    """The panel's input labelled ``label``."""
    return page.get_by_text(label, exact=True).first.locator("xpath=following::input[1]")


def _type(page, label: str, value) -> None:
    box = _field(page, label)
    box.fill(str(value))
    box.press("Tab")  # the App sends the input's change event
    page.wait_for_timeout(1500)


def _button(page, label):
    return page.locator("button:visible", has_text=label).first


def _ls(server, method: str, path: str, body: dict | None = None):
    """A request to the Label Studio server's REST API with its API token; the decoded JSON answer."""
    req = urllib.request.Request(f"{server.url}{path}", method=method,
                                 data=None if body is None else json.dumps(body).encode(),
                                 headers={"Authorization": f"Token {server.token}", "Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as resp:
        return json.loads(resp.read() or b"null")


def _annotate(dataset, anno_key: str, server) -> int:
    """Every task of round ``anno_key`` labelled by a simulated annotator (the sample's true class) through Label
    Studio's REST API; returns the number of annotations posted."""
    results = dataset.load_annotation_results(anno_key)
    project = _ls(server, "GET", f"/api/projects/{results.project_id}/")
    control = next(iter(project["parsed_label_config"].items()))  # the one control FiftyOne made: Choices
    from_name, to_name = control[0], control[1]["to_name"][0]
    truth = dict(zip(*dataset.values(["id", "truth_class"]), strict=True))
    for task_id, sample_id in results.uploaded_tasks.items():
        _ls(server, "POST", f"/api/tasks/{task_id}/annotations/", {"result": [
            {"from_name": from_name, "to_name": to_name, "type": "choices", "value": {"choices": [truth[sample_id]]}}]})
    return len(results.uploaded_tasks)


def test_relabel_loop_in_the_app(fo, browser_tools, relabel_app, tmp_path):
    from agreement.fo.labelling.history import run_rounds
    from agreement.fo.planning.raters import stored_plan
    from agreement.fo.planning.relabel import suggested_view

    url, dataset, log, server = relabel_app
    shots = _shots(tmp_path)
    started = time.time()
    with chromium_page(browser_tools, shots / "failure-relabel.png", log, width=1600, height=1100) as page:
        _open_panel(page, url, dataset)
        page.get_by_text("Another opinion.").first.wait_for(timeout=60_000)
        # 1. plan raters with a target
        _type(page, "Target of the statistic", TARGET)
        _button(page, "Plan raters").click()
        page.get_by_text(re.compile(r"raters? reach .* ≥ 0\.7|No number of raters reaches")).first.wait_for(
            timeout=60_000)
        dataset.reload()  # the App's server stored the plan
        plan = stored_plan(dataset, "cons")
        assert plan is not None and abs(plan["target"] - TARGET) < 1e-9, plan
        page.locator(".js-plotly-plot").first.wait_for(timeout=30_000)
        _shot(page, shots / "relabel-plan.png", "Another opinion.")
        # 2. suggest N samples: the ranked view
        _type(page, "Samples to suggest", BUDGET)
        _button(page, f"Suggest {BUDGET} samples for another rater").click()
        assert _wait_count(page, BUDGET, timeout=60) == BUDGET
        page.get_by_text(f"{BUDGET} samples suggested for another rater").first.wait_for(timeout=30_000)
        dataset.reload()
        assert dataset.has_sample_field("cons_relabel_priority")
        ranked = suggested_view(dataset, "cons", BUDGET).values("id")
        _shot(page, shots / "relabel-suggest.png", "Samples to suggest", "center")
        # 3. send to Label Studio
        _button(page, "Send to Label Studio").click()
        page.get_by_text("sent, waiting for labels").first.wait_for(timeout=90_000)
        dataset.reload()  # the App's server recorded the round with the run
        rounds = run_rounds(dataset, "cons")
        assert len(rounds) == 1, rounds
        anno_key = rounds[0]["anno_key"]
        assert sorted(dataset.load_annotation_results(anno_key).uploaded_tasks.values()) == sorted(ranked)
        _shot(page, shots / "relabel-sent.png", "Labelling rounds", "center")
        # 4. the annotators, through Label Studio's REST API
        assert _annotate(dataset, anno_key, server) == BUDGET
        # 5. load labels: the run before and after
        _button(page, "Load labels").click()
        page.get_by_text(re.compile("The run before and after round")).first.wait_for(timeout=90_000)
        assert _wait_count(page, BUDGET, timeout=60) == BUDGET  # the round's samples, with the new labels
        dataset.reload()
        done = run_rounds(dataset, "cons")[-1]
        assert done["status"] == "loaded" and done["n_loaded"] == BUDGET, done
        rater = done["rater"]
        truth = dict(zip(*dataset.values(["id", "truth_class"]), strict=True))
        assert dict(zip(*dataset.select(ranked).values(["id", f"{rater}.label"]), strict=True)) == {
            i: truth[i] for i in ranked}  # what the simulated annotators answered
        after = f"{done['after']['mean_confidence']:#.3g}"  # the run recomputed with the new rater
        assert not _wait_texts(page, ["before", "after", after], timeout=10)
        assert not page.locator("button:visible", has_text="Load labels").count()
        assert not page.get_by_text("failed:").count()
        _shot(page, shots / "relabel-loaded.png", "Samples to suggest")
    print(f"relabel loop clicked through in {time.time() - started:.1f} s")  # a figure, not a test
    assert_clean_server_log(log)


PANEL = "@iaa/agreement/annotator_agreement"


def _event(dataset, method: str, **params) -> tuple[dict, list]:
    """One panel event as the App sends it (no browser); returns the panel data it wrote and its requests."""
    import fiftyone.operators as foo

    r = foo.execute_operator(PANEL, ctx=dict(view=dataset.view(), params={
        "__method__": method, "panel_id": "relabel-config", "panel_state": {}, **params}))
    assert r.error is None, r.error
    data, requests = {}, []
    for q in r.executor.to_json()["requests"]:
        if q["operator_uri"] == "patch_panel_data":
            data.update(q["params"]["data"])
        requests.append((q["operator_uri"], q["params"]))
    return data, requests


def test_send_without_annotation_config_says_so_and_sends_nothing(fo, make_dataset, tmp_path, monkeypatch):
    """**Send to Label Studio** with no Label Studio URL or API key in FiftyOne's annotation config: the panel
    shows the error naming that config and notifies it; no round is recorded, no annotation run made (an event
    without the browser: the App's server reads its annotation config once, at its start)."""
    import fiftyone.operators as foo

    from agreement.fo.labelling.history import run_rounds

    rng = np.random.default_rng(3)
    dataset = make_dataset([fo.Sample(filepath=p, **{r: fo.Classification(label=CLASSES[int(rng.integers(3))])
                                                     for r in RATERS}) for p in class_images(tmp_path, 9)])
    r = foo.execute_operator("@iaa/agreement/compute_consensus", ctx=dict(view=dataset.view(), params=dict(
        key="cons", fields=RATERS, method="majority")))
    assert r.error is None, r.error
    conf = fo.annotation_config.backends.setdefault("labelstudio", {})
    monkeypatch.setitem(conf, "url", None)
    monkeypatch.setitem(conf, "api_key", None)
    _event(dataset, "on_load")
    _event(dataset, "on_change_relabel_budget", value=3)
    _, requests = _event(dataset, "on_suggest_relabel")
    assert any(uri == "set_view" for uri, _ in requests), requests  # the suggestion is loaded
    data, requests = _event(dataset, "on_send_labels")
    assert data["relabel_error_md"].startswith("**Send to Label Studio failed:**"), data
    assert "annotation config" in data["relabel_error_md"] and "FIFTYONE_LABELSTUDIO_URL" in data["relabel_error_md"]
    notes = [p for uri, p in requests if uri == "notify"]
    assert notes and notes[-1]["variant"] == "error", notes
    assert run_rounds(dataset, "cons") == [] and dataset.list_annotation_runs() == []
