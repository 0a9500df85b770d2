"""A real-browser test: the App from the fiftyone package, headless Chromium, the panel.

Starts ``python -m fiftyone.server.main`` on a free loopback port against this
test run's database, opens a small demo dataset in Debian's Chromium driven by
Playwright, opens the Annotator Agreement panel, clicks the tallest histogram
bar and checks that the sample grid then shows exactly that bar's samples.
Screenshots go to ``$IAA_SCREENSHOTS_DIR`` (the README's come from here) or a
temporary folder.

Skipped when Chromium or Playwright is missing, unless ``IAA_REQUIRE_BROWSER=1``
(set by ``.ci/run``, which installs both), in which case it fails.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = [pytest.mark.fiftyone, pytest.mark.browser]

CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync",
]


def _chromium() -> str | None:
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name)
        if path:
            return path
    return None


@pytest.fixture(scope="module")
def browser_tools():
    required = os.environ.get("IAA_REQUIRE_BROWSER") == "1"
    chromium = _chromium()
    try:
        from playwright.sync_api import sync_playwright  # noqa: F401
    except ImportError:
        sync_playwright = None
    missing = [n for n, ok in (("chromium", chromium), ("playwright", sync_playwright)) if not ok]
    if missing:
        msg = f"browser test needs {' and '.join(missing)} (apt-get install chromium; pip install playwright)"
        if required:
            pytest.fail(msg)
        pytest.skip(msg)
    return chromium


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def app_server(fo, tmp_path_factory):
    from agreement.fo.demo import run_demo

    fo.config.default_dataset_dir = str(tmp_path_factory.mktemp("browser-datasets"))
    run_demo(name="iaa-browser", num_images=40, seed=1)
    from agreement.fo.runs import delete_agreement_run, list_agreement_runs

    dataset = fo.load_dataset("iaa-browser")
    for key in list_agreement_runs(dataset):
        if key != "ot":  # the panel opens on the newest run: keep the one this test checks
            delete_agreement_run(dataset, key)
    port = _free_port()
    log = tmp_path_factory.mktemp("server") / "server.log"
    env = dict(os.environ)
    proc = subprocess.Popen(
        [sys.executable, "-m", "fiftyone.server.main", "--port", str(port), "--address", "127.0.0.1"],
        stdout=open(log, "w"), stderr=subprocess.STDOUT, env=env,
    )
    deadline = time.time() + 90
    while time.time() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                break
        if proc.poll() is not None:
            pytest.fail(f"App server exited: {log.read_text()[-2000:]}")
        time.sleep(0.3)
    yield f"http://127.0.0.1:{port}", fo.load_dataset("iaa-browser")
    proc.terminate()
    proc.wait(timeout=30)
    fo.delete_dataset("iaa-browser")
    if fo.dataset_exists("iaa-browser-coco"):
        fo.delete_dataset("iaa-browser-coco")


def _count(page) -> int:
    text = page.locator('[data-cy="entry-counts"]').inner_text()
    match = re.search(r"([\d,]+)\s+samples?", text)
    assert match, text
    return int(match.group(1).replace(",", ""))


def test_panel_histogram_click_filters_the_grid(browser_tools, app_server, tmp_path):
    from playwright.sync_api import sync_playwright

    from agreement.fo.panel_data import score_histogram

    url, dataset = app_server
    shots = Path(os.environ.get("IAA_SCREENSHOTS_DIR") or tmp_path)
    shots.mkdir(parents=True, exist_ok=True)
    hist = score_histogram(dataset, "ot_ot", 0.5, 1.0)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=browser_tools, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1600, "height": 1000})
            page.goto(f"{url}/datasets/{dataset.name}")
            page.locator('[data-cy="entry-counts"]').wait_for(timeout=60_000)
            page.wait_for_timeout(1500)
            dismiss = page.get_by_text("Dismiss")
            if dismiss.count():
                dismiss.first.click()
            assert _count(page) == len(dataset)
            page.locator('[data-cy="new-panel-btn"]').first.click()
            page.locator('[data-cy="new-panel-option-annotator_agreement"]').click()
            bars = page.locator("g.trace.bars g.point path")
            bars.first.wait_for(state="attached", timeout=60_000)
            page.wait_for_timeout(1500)
            assert page.get_by_text("αOT").count() >= 1
            page.screenshot(path=str(shots / "panel.png"))
            assert bars.count() == len(hist["counts"])
            tallest = max(range(len(hist["counts"])), key=lambda i: hist["counts"][i])
            bars.nth(tallest).click(force=True)
            expected = hist["counts"][tallest]
            deadline = time.time() + 30
            while time.time() < deadline and _count(page) != expected:
                page.wait_for_timeout(300)
            page.wait_for_timeout(1000)
            page.screenshot(path=str(shots / "histogram_click.png"))
            assert _count(page) == expected
        finally:
            browser.close()
