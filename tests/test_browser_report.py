"""A real-browser test of the HTML report: each run's ``report.html`` opened from a ``file://`` URL in headless
Chromium (Debian's, driven by Playwright, as the App's browser tests do), offline.

For an OT, a KαLOS and a consensus run of a small crowd, and a semantic mask run: plotly.js loaded from the export's
one ``plotly.min.js`` beside the run folders (a ``file://`` request, ``window.Plotly`` defined), every plotly figure
of the page rendered (its ``div`` holds an SVG with one drawn group per trace), nothing was written to the console as
an error, no script failed and no request left the file (every request that is not ``file://`` is recorded and
aborted). A page moved away from its ``plotly.min.js`` says so on the page.
The KαLOS page is saved as ``report.png`` (1440 px wide, the whole page) into ``$IAA_SCREENSHOTS_DIR`` (the docs'
``docs/images/report.png`` comes from here) or a temporary folder.

Skipped when Chromium or Playwright is missing, unless ``IAA_REQUIRE_BROWSER=1`` (then it fails).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from browser_support import CHROMIUM_ARGS, browser_tools  # noqa: F401 - the shared fixture and launch flags
from test_panel_masks import mask_ds  # noqa: F401 - fixture

pytestmark = [pytest.mark.fiftyone, pytest.mark.browser]

WIDTH = 1440

_RENDERED = """() => Array.from(document.querySelectorAll('.plotly-graph-div')).map(gd => ({
    id: gd.id,
    title: (gd.querySelector('.gtitle') || {}).textContent || '',
    svg: gd.querySelectorAll('svg.main-svg').length,
    traces: (gd.data || []).length,
    drawn: gd.querySelectorAll('g.trace, g.hm').length,
    height: gd.getBoundingClientRect().height,
}))"""


@pytest.fixture
def reports(fo, make_dataset, mask_ds, tmp_path):  # noqa: F811
    import fiftyone.operators as foo

    from agreement.fo.importers.build import samples_from_corpus
    from agreement.simulate.synthetic.crowd import crowd_corpus

    corpus, _ = crowd_corpus(40, 5, raters_per_sample=3, seed=4)
    ds = make_dataset(name="crowd-boxes")
    ds.add_samples(samples_from_corpus(corpus, [f"/crowd/img_{i:03d}.jpg" for i in range(40)]), progress=False)
    fields = list(corpus.raters)
    for op, key, extra in (("compute_ot_agreement", "ot", {}), ("compute_kalos", "kalos", {}),
                           ("compute_consensus", "cons", {"method": "majority"})):
        r = foo.execute_operator(f"@iaa/agreement/{op}",
                                 ctx=dict(view=ds.view(), params=dict(fields=fields, key=key, **extra)))
        assert r.error is None, r.error
    pages = {}
    for dataset, keys in ((ds, ["ot", "kalos", "cons"]), (mask_ds[0], ["seg"])):
        r = foo.execute_operator("@iaa/agreement/export_agreement_report",
                                 ctx=dict(view=dataset.view(), params=dict(output_dir=str(tmp_path / "out"), keys=keys)))
        assert r.error is None, r.error
        pages.update({Path(p).parent.name: Path(p) for p in r.result["reports"]})
    return pages


def _open(page, path: Path, loaded: list | None = None) -> tuple[list[str], list[str]]:
    """Opens ``path``; returns the console and page errors, and the requests that left the file (aborted);
    the ``file://`` requests go to ``loaded``."""
    errors, outside = [], []
    loaded = [] if loaded is None else loaded
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))

    def route(r):
        if r.request.url.startswith("file://"):
            loaded.append(r.request.url)
            r.continue_()
        else:
            outside.append(r.request.url)
            r.abort()

    page.route("**/*", route)
    page.goto(path.as_uri())
    page.wait_for_function("() => window.Plotly !== undefined && Array.from(document.querySelectorAll("
                           "'.plotly-graph-div')).every(d => d.querySelector('.main-svg'))", timeout=30_000)
    page.wait_for_timeout(1000)  # the last layout pass
    return errors, outside


def test_every_plot_of_every_report_renders_offline(browser_tools, reports, tmp_path):  # noqa: F811
    from playwright.sync_api import sync_playwright

    expected = {"ot": 2, "kalos": 5, "cons": 4, "seg": 3}  # at least: histogram, matrix, bars, curves, confusions
    shots = Path(os.environ.get("IAA_SCREENSHOTS_DIR") or tmp_path)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=browser_tools, args=CHROMIUM_ARGS)
        try:
            for key, path in reports.items():
                page = browser.new_page(viewport={"width": WIDTH, "height": 900})
                loaded: list[str] = []
                errors, outside = _open(page, path, loaded)
                # plotly loaded, from the export's one shared file (not inlined, not from a CDN)
                assert page.evaluate("() => typeof window.Plotly === 'object' && !!window.Plotly.version"), key
                assert [u for u in loaded if u.endswith(".js")] == [(path.parent.parent / "plotly.min.js").as_uri()]
                plots = page.evaluate(_RENDERED)
                assert len(plots) >= expected[key], (key, plots)
                for plot in plots:
                    assert plot["svg"] >= 1 and plot["height"] > 100, (key, plot)
                    assert plot["traces"] >= 1 and plot["drawn"] >= plot["traces"], (key, plot)
                    assert plot["title"], (key, plot)
                assert errors == [], (key, errors)
                assert outside == [], (key, outside)
                if key == "kalos":
                    page.screenshot(path=str(shots / "report.png"), full_page=True)
                page.close()
        finally:
            browser.close()
    assert (shots / "report.png").stat().st_size > 10_000


def test_a_report_moved_away_from_its_plotly_js_says_what_is_missing(browser_tools, reports, tmp_path):  # noqa: F811
    import shutil

    from playwright.sync_api import sync_playwright

    alone = tmp_path / "moved" / "ot"
    shutil.copytree(reports["ot"].parent, alone)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=browser_tools, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": WIDTH, "height": 900})
            page.route("**/*", lambda r: r.continue_() if r.request.url.startswith("file://") else r.abort())
            page.goto((alone / "report.html").as_uri())
            note = page.locator(".missing-plotly")
            note.wait_for(timeout=10_000)
            assert "plotly.min.js" in note.inner_text() and "self_contained=True" in note.inner_text()
            assert page.evaluate("() => window.Plotly === undefined")
            page.close()
        finally:
            browser.close()
