"""What the browser tests share: Chromium and Playwright, a free port, the App server, and page helpers
that read the grid's counts, the panel's charts and texts, and pick from its dropdowns as a user would."""

from __future__ import annotations

import atexit
import contextlib
import os
import re
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync",
]
#: The classes of the browser tests' class crowds and the flat colour of each one's images.
CLASS_COLOURS = {"bird": (70, 130, 180), "cat": (230, 160, 60), "dog": (90, 170, 90)}


def class_images(folder: Path, n: int) -> list[str]:
    """``n`` small PNGs, each a flat colour of its true class (cycling over :data:`CLASS_COLOURS`)."""
    from PIL import Image

    classes = list(CLASS_COLOURS)
    paths = []
    for i in range(n):
        path = folder / f"img{i:02d}.png"
        Image.new("RGB", (96, 72), CLASS_COLOURS[classes[i % len(classes)]]).save(path)
        paths.append(str(path))
    return paths


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
        sync_playwright = None  # type: ignore[assignment]
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


class ServerLog(type(Path())):  # type: ignore[misc]
    """The shared App server's log as one test module sees it: :meth:`read_text` returns only what the server
    wrote after the module asked for it (:func:`running_app`), so a module's log checks read its own requests."""

    offset = 0

    def read_text(self, encoding: str | None = None, errors: str | None = None) -> str:
        with open(self, "rb") as f:
            f.seek(self.offset)
            return f.read().decode(encoding or "utf-8", errors or "strict")


#: The App server of this test process: started by the first browser module that asks (:func:`running_app`),
#: shared by the next ones (each module opens its own datasets by name), stopped when the process exits.
_SERVER: dict = {}


def _stop_shared_app() -> None:
    proc = _SERVER.pop("proc", None)
    if proc is not None and proc.poll() is None:
        proc.terminate()
        proc.wait(timeout=30)


@contextlib.contextmanager
def running_app(tmp_path_factory, name: str):
    """The App's server for a test module: one per test process (:func:`start_app`; a start took ~15 s of each
    browser module), started by the first module that asks, its log in a temporary folder ``name``; yields
    ``(url, log)``, the log (:class:`ServerLog`) holding what the server wrote from now on."""
    proc = _SERVER.get("proc")
    if proc is None or proc.poll() is not None:
        log = tmp_path_factory.mktemp(name) / "server.log"
        proc, url = start_app(log)
        if not _SERVER:
            atexit.register(_stop_shared_app)
        _SERVER.update(proc=proc, url=url, log=log)
    log = ServerLog(_SERVER["log"])
    log.offset = _SERVER["log"].stat().st_size
    yield _SERVER["url"], log


def start_app(log: Path, env: dict[str, str] | None = None) -> tuple[subprocess.Popen, str]:
    """Starts ``python -m fiftyone.server.main`` on a free loopback port against this run's database (with
    ``env`` added to this process's environment); returns the process and the App's URL once it accepts
    connections (fails the test if the server exits)."""
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "fiftyone.server.main", "--port", str(port), "--address", "127.0.0.1"],
        stdout=open(log, "w"), stderr=subprocess.STDOUT, env={**os.environ, **(env or {})},
    )
    deadline = time.time() + 90
    while time.time() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                break
        if proc.poll() is not None:
            pytest.fail(f"App server exited: {log.read_text()[-2000:]}")
        time.sleep(0.3)
    return proc, f"http://127.0.0.1:{port}"


# ---------------------------------------------------------------------------- page helpers
def _count(page) -> int:
    text = page.locator('[data-cy="entry-counts"]').inner_text()
    match = re.search(r"([\d,]+)\s+samples?", text)
    assert match, text
    return int(match.group(1).replace(",", ""))


def _wait_count(page, expected: int, timeout: float = 30.0) -> int:
    deadline = time.time() + timeout
    n = _count(page)
    while time.time() < deadline and n != expected:
        page.wait_for_timeout(250)
        n = _count(page)
    return n


def _click_until_count(page, click, expected: int, tries: int = 3, timeout: float = 20.0) -> int:
    """Clicks (``click()``) until the grid shows ``expected`` samples, at most ``tries`` times: a click
    on a chart the panel is redrawing is lost, not wrong; returns the last count."""
    n = -1
    for _ in range(tries):
        click()
        n = _wait_count(page, expected, timeout=timeout)
        if n == expected:
            break
    return n


def _plots(page):
    """Every chart the panel draws: (title, x title, y title) as rendered by plotly in the DOM (read in one go:
    charts come and go while the panel re-renders)."""
    return [tuple(t) for t in page.evaluate("""() => Array.from(document.querySelectorAll('.js-plotly-plot')).map(
        p => ['.gtitle', '.xtitle', '.ytitle'].map(s => { const e = p.querySelector(s);
                                                          if (!e) return '';
            const lines = e.querySelectorAll('tspan.line');  // a wrapped title: one tspan per line
            return (lines.length ? Array.from(lines).map(t => t.textContent || '').join(' ')
                                 : (e.textContent || '')).trim(); }))""")]


def _wait_plots(page, titles: list[str], timeout: float = 30.0, n: int | None = None) -> list[tuple]:
    """Waits until a chart whose title starts with each of ``titles`` is drawn, every chart has a title
    and both axis titles (plotly draws them after the traces), and, with ``n``, there are ``n`` charts;
    returns the charts."""
    def ready(plots):
        return (all(any(p[0].startswith(t) for p in plots) for t in titles) and all(all(p) for p in plots)
                and (n is None or len(plots) == n))

    deadline = time.time() + timeout
    plots = _plots(page)
    while time.time() < deadline and not ready(plots):
        page.wait_for_timeout(300)
        plots = _plots(page)
    return plots


def _assert_titled(plots, titles: list[str]):
    assert plots
    for t in titles:
        assert any(p[0].startswith(t) for p in plots), (t, plots)
    for title, xtitle, ytitle in plots:
        assert title and xtitle and ytitle, (title, xtitle, ytitle)


def _pick(page, combobox: re.Pattern, option: re.Pattern, tries: int = 3, settle: float = 15.0) -> None:
    """Opens the dropdown whose shown value matches ``combobox`` and picks the entry matching ``option``,
    then waits up to ``settle`` seconds for the dropdown to show it; retried (at most ``tries`` picks)
    only when it does not: the panel re-renders while it loads (an entry can be detached mid-click), and a
    pick changes the panel's state, which the App applies by reloading the page, so a second pick sent
    before the first settled would race it."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    chosen = page.locator('div[role="combobox"]', has_text=option)
    for _ in range(tries):
        try:
            if not page.locator('li[role="option"]').count():
                page.locator('div[role="combobox"]', has_text=combobox).first.click(timeout=10_000)
            page.locator('li[role="option"]', has_text=option).first.click(timeout=10_000)
        except PlaywrightTimeout:
            page.keyboard.press("Escape")  # a menu left open over a redrawn panel
        if _eventually(lambda: chosen.count() > 0, timeout=settle):
            return
    raise AssertionError(f"the dropdown never showed an entry matching {option.pattern!r} after {tries} picks")


def _choose_run(page, current: str, new: str) -> None:
    """Picks run ``new`` in the panel's run dropdown (its entries read "key — method, time")."""
    _pick(page, re.compile(f"^{re.escape(current)} — "), re.compile(f"^{re.escape(new)} — "))


def _eventually(condition, timeout: float = 30.0) -> bool:
    """Polls ``condition`` until it holds or ``timeout`` seconds pass (the panel redraws its charts while it
    loads, so a chart read once may be one being replaced); returns whether it held."""
    deadline = time.time() + timeout
    while not condition():
        if time.time() > deadline:
            return False
        time.sleep(0.3)
    return True


def _wait_texts(page, texts: list[str], timeout: float = 30.0) -> list[str]:
    """Waits until each of ``texts`` is on the page (the panel draws its cards and tables a moment after
    its charts); returns those still missing."""
    deadline = time.time() + timeout
    missing = [t for t in texts if not page.get_by_text(t).count()]
    while missing and time.time() < deadline:
        page.wait_for_timeout(300)
        missing = [t for t in missing if not page.get_by_text(t).count()]
    return missing


#: Screenshots are taken (and the grid's images waited for) only when a folder is given for them: the docs'
#: images are made with ``IAA_SCREENSHOTS_DIR=docs/images``; the suite's checks do not need them.
SCREENSHOTS = bool(os.environ.get("IAA_SCREENSHOTS_DIR"))

VIEWPORT = {"width": 1600, "height": 2600}  # tall, so that the panel shows its charts without scrolling


def _shot(page, path: Path, top_text: str | None = None, panel_only: bool = False, height: int | None = None) -> None:
    """A screenshot down to the panel's last chart, optionally of the panel column only, scrolled so that
    the chart titled ``top_text`` is at the top (the window is never resized midway: FiftyOne's plot view
    then shrinks its plots)."""
    if top_text:
        page.locator(".js-plotly-plot").filter(has=page.locator(".gtitle", has_text=top_text)).first.evaluate(
            "e => e.scrollIntoView({block: 'start'})")
    if not SCREENSHOTS:
        return
    page.wait_for_timeout(2500)  # the grid's images
    bottom = page.evaluate("""() => Math.max(0, ...Array.from(document.querySelectorAll('.js-plotly-plot'))
                                       .map(p => p.getBoundingClientRect().bottom))""")
    height = height or (min(VIEWPORT["height"], int(bottom) + 24) if bottom > 400 else VIEWPORT["height"])
    left = 0
    if panel_only:  # crop to the panel: from its run selector (laid out late on a loaded machine)
        selector = page.locator('div[role="combobox"]', has_text=re.compile(r"^\S+ — ")).first  # "key — method"
        selector.wait_for(state="visible", timeout=20_000)
        box = selector.bounding_box()
        left = max(0, int(box["x"]) - 12) if box is not None else 0
    page.screenshot(path=str(path), clip={"x": left, "y": 0, "width": VIEWPORT["width"] - left, "height": height})


def _cell_center(page, plot_title: str, i: int, j: int, n: int):
    """Page coordinates of heatmap cell (row i from the top, column j) of an n x n heatmap."""
    plot = page.locator(".js-plotly-plot").filter(has=page.locator(".gtitle", has_text=plot_title)).first
    plot.scroll_into_view_if_needed()
    page.wait_for_timeout(300)
    box = plot.locator(".draglayer .nsewdrag").first.bounding_box()  # the plot area
    return box["x"] + (j + 0.5) * box["width"] / n, box["y"] + (i + 0.5) * box["height"] / n


def _entries(page) -> int:
    """The grid's entry count, of samples or (in a patches view) of patches."""
    text = page.locator('[data-cy="entry-counts"]').inner_text()
    match = re.search(r"([\d,]+)\s+(samples?|patch(es)?)", text)
    assert match, text
    return int(match.group(1).replace(",", ""))


def _wait_entries(page, expected: int, timeout: float = 30.0) -> int:
    deadline = time.time() + timeout
    n = _entries(page)
    while time.time() < deadline and n != expected:
        page.wait_for_timeout(250)
        n = _entries(page)
    return n


def _open_panel(page, url: str, dataset) -> None:
    """Opens the dataset with the panel on the whole dataset, compare mode off; the App server keeps the
    state an earlier test left (an open sample, the panel, a filter), so that state is undone first."""
    page.goto(f"{url}/datasets/{dataset.name}")
    page.locator('[data-cy="entry-counts"]').wait_for(timeout=60_000)
    page.wait_for_timeout(4000)  # an open sample comes back a moment after the grid
    for _ in range(10):
        if not page.locator("#modal.modalon").count():
            break
        page.locator('[data-cy="modal-looker-container"]').first.click(force=True)
        page.keyboard.press("Escape")
        page.wait_for_timeout(1000)
    dismiss = page.get_by_text("Dismiss")
    if dismiss.count():
        dismiss.first.click(timeout=5000)
    if not page.locator('[data-cy="panel-tab-annotator_agreement"]').count():
        page.locator('[data-cy="new-panel-btn"]').first.click()
        page.locator('[data-cy="new-panel-option-annotator_agreement"]').click()
    page.locator('div[role="combobox"]', has_text=re.compile(r"^\S+ — ")).first.wait_for(timeout=60_000)
    page.wait_for_timeout(2000)
    # a click on a panel still re-rendering is lost (seen on a loaded machine): a reset button still shown after
    # its click is clicked again, at most three times each
    for label in ("Show the whole dataset", "Stop comparing"):
        for _ in range(3):
            button = page.get_by_text(label, exact=True)
            if not button.count():
                break
            button.first.click()
            page.wait_for_timeout(2000)
            if _eventually(lambda: not page.get_by_text(label, exact=True).count(), timeout=10):  # noqa: B023 (called here)
                break
    assert _wait_count(page, len(dataset)) == len(dataset)


def _tag_first_patch(page, tag: str) -> None:
    """Selects the first patch of the grid and tags its label ``tag`` with the App's tagging menu."""
    looker = page.locator('[data-cy="fo-grid"] [data-cy="looker"]').first
    looker.hover()
    looker.locator('label[data-cy^="looker-checkbox"]').first.click()
    page.wait_for_timeout(500)
    page.locator('[data-cy="action-tag-sample-labels"]').first.click()
    page.locator('[data-cy="tagger-switch-label"]').click()  # tag the patch's label, not the patch
    page.locator('[data-cy="tagger-container"] input').fill(tag)
    page.get_by_text(re.compile(f'^Add "{tag}" tag to')).first.click()
    page.get_by_text("Apply", exact=True).last.click()


def open_dataset_page(page, url: str, name: str) -> None:
    """Opens dataset ``name`` in the App and dismisses the App's own promotion popover."""
    page.goto(f"{url}/datasets/{name}")
    page.locator('[data-cy="entry-counts"]').wait_for(timeout=60_000)
    page.wait_for_timeout(1500)
    dismiss = page.get_by_text("Dismiss")
    if dismiss.count():
        dismiss.first.click(timeout=5000)


@contextlib.contextmanager
def chromium_page(executable: str, failure: Path, log: Path | None = None, width: int = 1440, height: int = 900):
    """A Chromium page of ``width`` × ``height``; when the block raises: a screenshot ``failure`` (a .png), the
    App server's ``log`` tail and the page's console beside it, then the exception again."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": width, "height": height})
        console: list[str] = []
        page.on("console", lambda m: console.append(f"{m.type}: {m.text[:500]}"))
        try:
            yield page
        except Exception:
            page.screenshot(path=str(failure))
            if log is not None:
                failure.with_suffix(".server.log").write_text(log.read_text(errors="replace")[-20000:])
            failure.with_suffix(".console.log").write_text("\n".join(console[-300:]))
            raise
        finally:
            browser.close()


def assert_clean_server_log(log: Path) -> None:
    """The App server's log holds no panel error and no "has no field" (a view that lost the fields a panel or
    sidebar filter reads)."""
    text = log.read_text(errors="replace")
    assert "has no field" not in text and "agreement_panel" not in text, text[-3000:]
