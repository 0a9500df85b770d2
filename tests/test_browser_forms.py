"""The operators' forms in the App (issue 48): every parameter of the Python call offered, refusals shown in full.

On 24 small images rated by four raters on an ordinal scale (``low`` < ``mid`` < ``high``, class names that
are no numbers to sort by), in headless Chromium, only through the UI:

1. the class agreement form: choosing level "ordinal" brings the class order control, which says what is
   missing until every class is picked; the classes picked lowest first, Execute; through the SDK, the run's
   α equals the Python call ``foo.get_operator(...)(dataset, level="ordinal", classes=[...])`` to 1e-9, and
   the App's result shows no box-border counts (classes have no boxes);
2. a refusal shown in full: the crowd judgements import of a file with labels outside the categories given,
   unknown labels left at "error": the refusal's whole message is visible in the dialog without a click, the
   progress bar is gone (no "importing 0%" left), and no "No value provided" or "undefined" is shown; a
   refusal of an operator that does not stream (renaming a run to a key in use) is shown the same way.

Screenshots go to ``$IAA_SCREENSHOTS_DIR`` or a temporary folder. Skipped when Chromium or Playwright is
missing (failed with ``IAA_REQUIRE_BROWSER=1``).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import numpy as np
import pytest

from browser_support import (  # noqa: E402 - the shared helpers of the browser tests
    CHROMIUM_ARGS,
    _eventually,
    _pick,
    browser_tools,  # noqa: F401 - a fixture
    open_dataset_page,
    running_app,
)

pytestmark = [pytest.mark.fiftyone, pytest.mark.browser]

DATASET = "iaa-browser-forms"
RATERS = ["r1", "r2", "r3", "r4"]
ORDER = ["low", "mid", "high"]  # alphabetically: high, low, mid
URI = "@iaa/agreement/{}"


def _images(folder: Path, n: int) -> list[str]:
    """``n`` small grey PNGs, lighter for a higher true class."""
    from PIL import Image

    paths = []
    for i in range(n):
        path = folder / f"img{i:02d}.png"
        Image.new("RGB", (96, 72), (60 + 80 * (i % 3),) * 3).save(path)
        paths.append(str(path))
    return paths


@pytest.fixture(scope="module")
def forms_app(fo, tmp_path_factory):
    """The class dataset (raters off by one step now and then, ``r4`` more often), a judgements file with a
    label outside its categories, and the App's server."""
    if fo.dataset_exists(DATASET):
        fo.delete_dataset(DATASET)
    rng = np.random.default_rng(11)
    folder = tmp_path_factory.mktemp("form-images")
    samples = []
    for i, path in enumerate(_images(folder, 24)):
        truth = i % 3
        ratings = {r: ORDER[int(np.clip(truth + (rng.choice([-1, 1]) if rng.random() < err else 0), 0, 2))]
                   for r, err in zip(RATERS, (0.05, 0.15, 0.25, 0.5))}
        samples.append(fo.Sample(filepath=path, **{r: fo.Classification(label=c) for r, c in ratings.items()}))
    dataset = fo.Dataset(DATASET, persistent=True)
    dataset.add_samples(samples, progress=False)
    judgements = folder / "judgements.tsv"
    judgements.write_text("".join(f"w{w}\timg{i:02d}.png\t{ORDER[(i + w) % 3]}\n" for i in range(6) for w in range(3)))
    with running_app(tmp_path_factory, "forms-server") as (url, log):
        yield url, dataset, str(judgements), log
    for name in (DATASET, "iaa-forms-judgements"):
        if fo.dataset_exists(name):
            fo.delete_dataset(name)


def _shots(tmp_path) -> Path:
    shots = Path(os.environ.get("IAA_SCREENSHOTS_DIR") or tmp_path)
    shots.mkdir(parents=True, exist_ok=True)
    return shots


def _prompt(page):
    """The operator's prompt (its form, then its result)."""
    return page.locator('[data-cy="operators-prompt-modal"]')


def _pick_values(page, label: str, values: list[str]) -> None:
    """Adds ``values`` one after the other to the multiple choice labelled ``label``, as a user does: types
    each, then Enter (the App re-resolves the form in between)."""
    box = page.get_by_text(label, exact=True).first.locator("xpath=following::input[1]")
    for value in values:
        box.click()
        box.fill(value)
        page.wait_for_timeout(300)
        page.keyboard.press("Enter")
        page.wait_for_timeout(900)


def _dialog_texts(page) -> str:
    """Every text shown in the App's dialogs (the operator's prompt and its progress box)."""
    return "\n".join(page.locator('div[role="dialog"]:visible, .MuiDialog-root:visible').all_inner_texts())


def test_ordinal_class_agreement_from_the_form_equals_the_python_call(fo, browser_tools, forms_app, tmp_path):
    from playwright.sync_api import sync_playwright

    import fiftyone.operators as foo

    from test_browser_crowd import _close_dialogs, _complete, _execute, _field, _run_operator

    url, dataset, _, log = forms_app
    shots = _shots(tmp_path)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=browser_tools, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1440, "height": 900})
        try:
            open_dataset_page(page, url, DATASET)
            _run_operator(page, "classes and tags", "Annotator Agreement: classes and tags")
            prompt = _prompt(page)
            prompt.get_by_text("Rater fields", exact=True).wait_for(timeout=30_000)
            _pick_values(page, "Rater fields", RATERS)
            assert not prompt.get_by_text("Boxes past the image border").count()  # classes have no boxes
            assert not prompt.get_by_text("Class order (lowest first)").count()  # nominal: no order
            prompt.get_by_role("radio", name="ordinal", exact=True).click()
            missing = "level 'ordinal' needs the order of the classes: pick all 3 (high, low, mid) lowest first"
            assert _eventually(lambda: prompt.get_by_text(missing).count() > 0, timeout=30)  # the form says it
            prompt.get_by_text("Class order (lowest first)", exact=True).scroll_into_view_if_needed()
            page.screenshot(path=str(shots / "forms_ordinal_order_missing.png"))
            _pick_values(page, "Class order (lowest first)", ORDER)
            assert _eventually(lambda: not prompt.get_by_text(missing).count(), timeout=30)
            _field(page, "Run key").fill("ord_app")
            page.wait_for_timeout(1500)
            prompt.get_by_text("Class order (lowest first)", exact=True).scroll_into_view_if_needed()
            page.screenshot(path=str(shots / "forms_ordinal_order_given.png"))
            _execute(page)
            assert _eventually(lambda: _complete(fo, DATASET, "ord_app"), timeout=120)
            assert _eventually(lambda: page.get_by_text("Krippendorff's alpha").count() > 0, timeout=60)
            page.wait_for_timeout(1000)
            page.screenshot(path=str(shots / "forms_ordinal_result.png"))
            shown = _dialog_texts(page)
            assert "ordinal" in shown and "clipped" not in shown and "boxes" not in shown, shown
            _close_dialogs(page)
        except Exception:
            page.screenshot(path=str(shots / "failure_forms_ordinal.png"))
            raise
        finally:
            browser.close()

    dataset = fo.load_dataset(DATASET)
    dataset.reload()
    app = dataset.load_run_results("ord_app", cache=False)
    python = foo.get_operator(URI.format("compute_class_agreement"))(
        dataset, key="ord_py", fields=RATERS, level="ordinal", classes=ORDER)
    assert app.params["level"] == "ordinal" and app.params["classes"] == ORDER
    assert app.summary["alpha"] == pytest.approx(python.summary["alpha"], abs=1e-9)
    nominal = foo.get_operator(URI.format("compute_class_agreement"))(dataset, key="nom_py", fields=RATERS)
    assert abs(nominal.summary["alpha"] - app.summary["alpha"]) > 1e-3  # the order mattered
    assert "has no field" not in log.read_text(errors="replace")


def test_a_refusal_is_shown_in_full_in_the_dialog(fo, browser_tools, forms_app, tmp_path):
    from playwright.sync_api import sync_playwright

    import fiftyone.operators as foo

    from test_browser_crowd import _close_dialogs, _execute, _field, _run_operator

    url, dataset, judgements, log = forms_app
    shots = _shots(tmp_path)
    compute = foo.get_operator(URI.format("compute_class_agreement"))
    for key in ("ref_a", "ref_b"):  # the newest, ref_b, is the rename form's choice; ref_a is a key in use
        compute(dataset, key=key, fields=RATERS, bootstrap=0, overwrite=True)
    refusal = re.compile(r"judgements carry labels that are not among the categories \['low', 'mid'\]")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=browser_tools, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1440, "height": 900})
        try:
            open_dataset_page(page, url, DATASET)

            # a streamed operator: the judgements import, unknown labels left at "error"
            _run_operator(page, "crowd judgements", "Annotator Agreement: import crowd judgements")
            _field(page, "Judgement file (TSV or CSV)").fill(judgements)
            _field(page, "Dataset name").fill("iaa-forms-judgements")
            _field(page, "Categories").fill("low,mid")
            page.wait_for_timeout(1500)
            _execute(page)
            message = page.get_by_text(refusal)
            assert _eventually(lambda: message.count() > 0 and message.first.is_visible(), timeout=60)
            page.wait_for_timeout(1500)
            page.screenshot(path=str(shots / "forms_refusal_import.png"))
            shown = _dialog_texts(page)
            assert "unknown_labels='drop'" in shown and "or list them in the categories." in shown, shown  # whole
            for blank in ("No value provided", "undefined", "importing", "Error occurred during operator execution"):
                assert blank not in shown, (blank, shown)
            assert not fo.dataset_exists("iaa-forms-judgements")
            _close_dialogs(page)

            # the same judgements as a CSV file that starts with a header line: Separator "comma" picked in the
            # form, the header recognised and skipped (never a worker "worker" or a class "label")
            csv_path = Path(judgements).with_suffix(".csv")
            csv_path.write_text("worker,item,label\n" + Path(judgements).read_text().replace("\t", ","))
            _run_operator(page, "crowd judgements", "Annotator Agreement: import crowd judgements")
            _field(page, "Judgement file (TSV or CSV)").fill(str(csv_path))
            _field(page, "Dataset name").fill("iaa-forms-judgements")
            _pick(page, re.compile(r"^tab$"), re.compile(r"^comma$"))
            page.wait_for_timeout(1500)
            _execute(page)
            assert _eventually(lambda: fo.dataset_exists("iaa-forms-judgements"), timeout=60)
            imported = fo.load_dataset("iaa-forms-judgements")
            assert _eventually(lambda: len(imported.reload() or imported) == 6, timeout=60)
            assert sorted(imported.distinct("raters")) == ["w0", "w1", "w2"]
            assert imported.info["iaa_import"]["header_lines"], imported.info["iaa_import"]
            _close_dialogs(page)
            open_dataset_page(page, url, DATASET)  # the import opened the new dataset: back to the runs' one

            # an operator that does not stream: renaming a run to a key in use
            _run_operator(page, "rename", "Annotator Agreement: rename run")
            prompt = _prompt(page)
            prompt.get_by_text("New key", exact=False).first.wait_for(timeout=30_000)
            _field(page, "New key").fill("ref_a")
            page.wait_for_timeout(1500)
            _execute(page)
            notice = page.get_by_text("Not run: the operator refused these parameters")
            assert _eventually(lambda: notice.count() > 0, timeout=60)
            taken = page.get_by_text(re.compile(r"ref_a"))
            assert _eventually(lambda: taken.count() > 0 and taken.first.is_visible(), timeout=10)
            page.wait_for_timeout(1000)
            page.screenshot(path=str(shots / "forms_refusal_rename.png"))
            shown = _dialog_texts(page)
            for blank in ("No value provided", "undefined", "Error occurred during operator execution"):
                assert blank not in shown, (blank, shown)
            _close_dialogs(page)

            # the report export with its "self-contained" box ticked: plotly.js inlined in each page, no shared file
            out = tmp_path / "reports"
            _run_operator(page, "export report", "Annotator Agreement: export report files")
            _field(page, "Output folder").fill(str(out))
            page.get_by_text("One self-contained file per report", exact=True).first.click()
            page.wait_for_timeout(1000)
            _execute(page)
            pages = lambda: sorted(out.glob("*/report.html"))  # noqa: E731
            # one page per run of the dataset (the module's other tests add runs to it), ~5 MB each
            from agreement.fo.runs import list_agreement_runs

            n_runs = len(list_agreement_runs(dataset))
            assert n_runs >= 2
            assert _eventually(lambda: len(pages()) == n_runs, timeout=240), sorted(out.rglob("*"))
            assert _eventually(lambda: all(p.stat().st_size > 1_000_000 for p in pages()), timeout=60), \
                [p.stat().st_size for p in pages()]  # each page holds plotly.js (about 5 MB)
            _close_dialogs(page)
            assert not list(out.rglob("*.js")), "a self-contained export writes no shared plotly.min.js"
        except Exception:
            page.screenshot(path=str(shots / "failure_forms_refusal.png"))
            raise
        finally:
            browser.close()
    assert "has no field" not in log.read_text(errors="replace")
