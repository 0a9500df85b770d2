"""Runs the tutorial (``docs/tutorial.md``) on the real crowd and takes its screenshots.

1. the Python steps of :mod:`steps` up to the consensus with the wider review band (import, class agreement,
   the drifting workers, Dawid–Skene and MACE), checking every number the tutorial quotes;
2. the App (``python -m fiftyone.server.main``) and headless Chromium at 1440 × 900: the import form, the
   panel on the class agreement run (α, then the raters), on the consensus run, its review queue, a sample of
   the queue with the panel's Accept button (clicked: the first decision is made in the App);
3. the other decisions from Python (:func:`steps.review_decisions`), then ``finalize_consensus`` from the
   App's operator browser, its result checked against the tutorial.

Writes ``docs/images/tutorial-*.png``. Run it in a private database, from the repository::

    PYTHONPATH=. scripts/with-temp-fiftyone.sh .venv/bin/python docs/tutorial/make_tutorial.py [folder]

``folder`` (default: ``iaa-tutorial`` in the temporary folder) receives the placeholder images. Needs
Chromium (Debian's ``chromium``) and Playwright, as the browser tests do.
"""

from __future__ import annotations

import os
import re
import sys
import tempfile
import time
from pathlib import Path

sys.dont_write_bytecode = True  # no __pycache__ inside docs/ (the site would publish it)
HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path[:0] = [str(HERE), str(REPO / "tests")]
os.environ["FIFTYONE_PLUGINS_DIR"] = str(REPO)
os.environ.setdefault("FIFTYONE_DO_NOT_TRACK", "true")

import steps  # noqa: E402

from browser_support import CHROMIUM_ARGS, _choose_run, _chromium, _open_panel, _wait_count, _wait_texts, start_app  # noqa: E402
from test_browser_crowd import _close_dialogs, _execute, _field, _run_operator  # noqa: E402

IMAGES = REPO / "docs" / "images"


def shot(page, name: str) -> None:
    """Saves the window as ``docs/images/tutorial-<name>.png`` once the grid's images have loaded."""
    page.wait_for_timeout(2500)
    page.screenshot(path=str(IMAGES / f"tutorial-{name}.png"))
    print(f"wrote docs/images/tutorial-{name}.png")


def run_operator(page, search: str, name: str, tries: int = 3) -> None:
    """Opens operator ``name`` from the operator browser (searching ``search``), again after a timeout (on a
    loaded machine the browser's list can take longer than the wait to show)."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    for attempt in range(tries):
        try:
            return _run_operator(page, search, name)
        except PlaywrightTimeout:
            if attempt == tries - 1:
                raise
            page.keyboard.press("Escape")
            page.wait_for_timeout(2000)


def scroll_to_chart(page, title: str) -> None:
    """Scrolls the panel so that the chart titled ``title`` is near the top of the window, its title whole."""
    plot = page.locator(".js-plotly-plot").filter(has=page.locator(".gtitle", has_text=title)).first
    plot.wait_for(timeout=60_000)
    plot.evaluate("e => e.scrollIntoView({block: 'start'})")
    box = plot.bounding_box()
    if box is not None:  # back a little with the wheel: the title sits under the tab bar
        page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
        page.mouse.wheel(0, -60)
    page.wait_for_timeout(800)


def import_form(page, folder: Path) -> None:
    """The import form filled in as the tutorial says (not executed: the dataset exists)."""
    run_operator(page, "import crowd judgements", "Annotator Agreement: import crowd judgements")
    _field(page, "Judgement file (TSV or CSV)").fill(str(folder / "judgements.tsv"))
    _field(page, "Dataset name").fill(steps.DATASET)
    _field(page, "Categories").fill(steps.CLASSES)
    choice = page.get_by_text("Labels not in the categories", exact=True).first
    choice.locator("xpath=following::div[@role='combobox'][1]").click()
    page.locator('li[role="option"]', has_text=re.compile("^drop$")).first.click()
    page.wait_for_timeout(1000)
    shot(page, "import")
    _close_dialogs(page, settle=0.5)


def agreement_panel(page, url: str, dataset) -> None:
    """The panel on the class agreement run: the α card, then the raters."""
    _open_panel(page, url, dataset)
    if not page.locator('div[role="combobox"]', has_text=re.compile(r"^classes — ")).count():
        current = page.locator('div[role="combobox"]', has_text=re.compile(r"^\S+ — ")).first.inner_text()
        _choose_run(page, current.split(" — ")[0], "classes")
    assert not _wait_texts(page, ["Krippendorff's α"], timeout=60)
    shot(page, "agreement")
    scroll_to_chart(page, "Rater vitality")
    shot(page, "raters")


def consensus_panel(page, dataset, n_queue: int, decision: str) -> None:
    """The panel on the consensus run ``review``, its review queue, and the first sample of the queue
    selected and decided (``decision``: "accept" or "reject") with the operator ``review_consensus_labels``."""
    page.evaluate("() => window.scrollTo(0, 0)")
    _choose_run(page, "classes", "review")
    button = f"Review queue: the {n_queue} flagged sample"
    assert not _wait_texts(page, [button], timeout=60)
    shot(page, "consensus")
    page.get_by_text(button).first.click()
    assert _wait_count(page, n_queue) == n_queue
    assert not _wait_texts(page, [f"0 of {n_queue} flagged labels decided"])
    page.locator('[data-cy="fo-grid"] [data-cy="looker"]').first.wait_for(timeout=30_000)
    shot(page, "queue")
    first = page.locator('[data-cy="fo-grid"] [data-cy="looker"]').first
    first.hover()
    first.locator('label[data-cy^="looker-checkbox"]').first.click()
    page.wait_for_timeout(700)
    run_operator(page, "accept or reject", "Annotator Agreement: accept or reject consensus labels")
    assert not _wait_texts(page, ["1 flagged consensus label(s) of run 'review' selected"])
    if decision == "reject":
        page.get_by_text(re.compile(r"^reject \(tag")).first.click()
        page.wait_for_timeout(1000)
    shot(page, "review")
    _execute(page)
    page.wait_for_timeout(3000)
    _close_dialogs(page)


def finalize_in_app(page, dataset) -> None:
    """Runs ``finalize_consensus`` from the operator browser; its result box is the last screenshot."""
    run_operator(page, "finalize", "Annotator Agreement: finalize reviewed consensus")
    page.wait_for_timeout(1500)
    _execute(page)
    deadline = time.time() + 120
    while "review_final" not in dataset.get_field_schema() and time.time() < deadline:
        time.sleep(1)
        dataset.reload()
    assert not _wait_texts(page, ["Labels kept"], timeout=60)
    # the panel behind the result box, refreshed by finalize, counts the decisions (the tutorial quotes it)
    e = steps.EXPECTED
    decided = f"{e['queue']} of {e['queue']} flagged labels decided ({e['final_accepted']} accepted, " \
              f"{e['final_rejected']} rejected)"
    assert not _wait_texts(page, [decided], timeout=60)
    shot(page, "finalize")


def app_steps(folder: Path, dataset, n_queue: int) -> None:
    """Step 2 of the module docstring, then the decisions and the finalize step."""
    from playwright.sync_api import sync_playwright

    from agreement.fo.views.review import review_progress

    proc, url = start_app(Path(tempfile.mkdtemp(prefix="iaa-tutorial-app-")) / "server.log")
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=_chromium(), args=CHROMIUM_ARGS)
            page = browser.new_page(viewport={"width": 1440, "height": 900})
            try:
                _open_panel(page, url, dataset)
                import_form(page, folder)
                agreement_panel(page, url, dataset)
                decision = steps.decision_of_first(dataset)
                consensus_panel(page, dataset, n_queue, decision)
                done = review_progress(dataset, "review")
                assert done[f"{decision}ed"] == 1 and done["pending"] == n_queue - 1, done
                decisions = steps.review_decisions(dataset)
                assert {k: steps._quoted(v) for k, v in decisions.items()} == {
                    k: steps.EXPECTED[k] for k in decisions}, decisions
                finalize_in_app(page, dataset)
            except Exception:
                page.screenshot(path=str(Path(tempfile.gettempdir()) / "tutorial-failure.png"))
                raise
            finally:
                browser.close()
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def main() -> None:
    """Builds the tutorial's dataset, runs its steps and writes its pages."""
    import fiftyone as fo

    folder = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.gettempdir()) / "iaa-tutorial"
    if fo.dataset_exists(steps.DATASET):
        fo.delete_dataset(steps.DATASET)
    dataset, numbers = steps.analyse(folder)
    print(numbers.pop("_messages"))
    print(numbers)
    app_steps(folder, dataset, int(steps.EXPECTED["queue"]))
    dataset.reload()
    tags = dataset.count_label_tags("review_consensus")
    final = [v for v in dataset.values("review_final") if v is not None]
    numbers.update(steps.final_counts({"kept": len(final), "rejected": tags.get("rejected", 0),
                                       "accepted": tags.get("accepted", 0)}))
    numbers.update({"queue": steps.EXPECTED["queue"], "queue_disputed": str(tags.get("rejected", 0))})
    print(numbers)
    problems = steps.check_numbers(numbers, HERE.parent / "tutorial.md")
    assert not problems, "\n".join(problems)
    print("every number the tutorial quotes matches this run")


if __name__ == "__main__":
    main()
