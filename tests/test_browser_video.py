"""The App on videos: a short browser journey through the panel on a KαLOS run computed per frame.

Five simulated videos of 30 frames (three raters whose tracks drift, switch and miss stretches), with the
media ``simulate_video_dataset`` renders (small MP4 videos, VP9, of the reference's boxes); the run ``k`` on
``frames.r1`` .. ``frames.r3`` is computed in Python before the App opens. Then, in headless Chromium at
1440 × 900, only through the UI:

1. the panel opens on ``k``: every video tile shows its frames (every ``/media`` request of the page answers
   2xx, one at least per video, and no tile shows the App's error icon), and the per-video histogram of the
   mean α over frames, the rater-pair heatmap and the timeline of the worst video (tracks per rater, α per
   frame) are drawn, each with a title and both axis titles, none cut by the panel's column; a screenshot
   (``video-panel.png``);
2. a point of the timeline's α strip is clicked: the grid shows that video's clips where the raters disagree
   (α below 0), exactly as many as the stretches of such frames the run wrote, their tiles without error icon;
3. *Undo the panel's drill-down*: the grid shows the five videos again.

Screenshots only with ``$IAA_SCREENSHOTS_DIR``. Skipped when Chromium or Playwright is missing (failed with
``IAA_REQUIRE_BROWSER=1``).
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

import pytest

from browser_support import (
    CHROMIUM_ARGS,
    SCREENSHOTS,
    _assert_titled,
    _open_panel,
    _wait_plots,
    _wait_texts,
    browser_tools,  # noqa: F401 - a fixture
    running_app,
)
from test_browser_classes import _overflowing

pytestmark = [pytest.mark.fiftyone, pytest.mark.browser]

DATASET = "iaa-browser-video"
RATERS = ["r1", "r2", "r3"]
N_VIDEOS, N_FRAMES, SIZE = 5, 30, (320, 240)
TITLES = ["Per-video mean α", "α per rater pair", "Timeline of"]


@pytest.fixture(scope="module")
def video_app(fo, tmp_path_factory):
    import fiftyone.operators as foo

    from agreement.fo.simulate.video import simulate_video_dataset

    if fo.dataset_exists(DATASET):
        fo.delete_dataset(DATASET)
    started = time.time()
    dataset, _ = simulate_video_dataset(DATASET, num_videos=N_VIDEOS, num_frames=N_FRAMES, num_objects=3,
                                        num_raters=3, magnitude=3.0, seed=0, frame_size=SIZE, persistent=True)
    print(f"videos simulated and rendered in {time.time() - started:.1f} s")  # a figure, not a test
    started = time.time()
    foo.get_operator("@iaa/agreement/compute_kalos")(dataset, key="k", fields=[f"frames.{r}" for r in RATERS])
    print(f"frame run computed in {time.time() - started:.1f} s")  # a figure, not a test
    with running_app(tmp_path_factory, "video-server") as (url, log):
        yield url, dataset, log
    fo.delete_dataset(DATASET)


def _media_requests(page) -> list[tuple[int, str]]:
    """Records ``(status, filepath)`` of every response to the App's ``/media`` endpoint of ``page``."""
    from urllib.parse import parse_qs, urlparse

    seen: list[tuple[int, str]] = []

    def record(response) -> None:
        url = urlparse(response.url)
        if url.path.endswith("/media"):
            seen.append((response.status, parse_qs(url.query).get("filepath", [""])[0]))

    page.on("response", record)
    return seen


def _wait_media_loaded(page, seen: list[tuple[int, str]], paths: list[str], timeout: float = 30.0) -> list[str]:
    """Waits until every one of ``paths`` was served (2xx) and no grid tile shows the App's error icon; returns
    what is still wrong (failed requests, videos never served, error tiles)."""
    deadline = time.time() + timeout
    while True:
        failed = [f"{status} {path}" for status, path in seen if status >= 400]
        served = {path for status, path in seen if 200 <= status < 300}
        errors = page.locator('[data-cy="fo-grid"] [data-cy="looker-error-info"]').count()
        wrong = failed + [f"never served: {p}" for p in paths if p not in served]
        wrong += [f"{errors} tile(s) with the error icon"] if errors else []
        if not wrong or time.time() > deadline:
            return wrong
        page.wait_for_timeout(300)


def _entries(page) -> tuple[int, str]:
    """The grid's entry count and what it counts (samples, clips)."""
    text = page.locator('[data-cy="entry-counts"]').inner_text()
    match = re.search(r"([\d,]+)\s+(\w+)", text)
    assert match, text
    return int(match.group(1).replace(",", "")), match.group(2)


def _wait_entries(page, n: int, timeout: float = 30.0) -> tuple[int, str]:
    deadline = time.time() + timeout
    got = _entries(page)
    while time.time() < deadline and got[0] != n:
        page.wait_for_timeout(250)
        got = _entries(page)
    return got


def _scroll_to_text(page, text: str) -> None:
    """Scrolls the panel so that ``text`` is near the top of the window."""
    page.get_by_text(text).first.evaluate("e => e.scrollIntoView({block: 'start'})")
    box = page.get_by_text(text).first.bounding_box()
    if box is not None:  # back a little with the wheel: the text sits under the tab bar
        page.mouse.move(box["x"] + 20, box["y"] + 40)
        page.mouse.wheel(0, -50)
    page.wait_for_timeout(800)


def _expected_clips(dataset, video_id: str) -> list[list[int]]:
    """The stretches of consecutive frames of the video with α below 0, from what the run wrote."""
    numbers, alpha = dataset.select(video_id).values(["frames.frame_number", "frames.k_alpha"])
    bad = [n for n, a in zip(numbers[0], alpha[0]) if a is not None and a < 0]
    out: list[list[int]] = []
    for n in bad:
        if out and n == out[-1][1] + 1:
            out[-1][1] = n
        else:
            out.append([n, n])
    return out


def test_video_run_in_the_panel_timeline_and_its_clips(fo, browser_tools, video_app, tmp_path):  # noqa: F811
    from playwright.sync_api import sync_playwright

    url, dataset, log = video_app
    shots = Path(os.environ.get("IAA_SCREENSHOTS_DIR") or tmp_path)
    shots.mkdir(parents=True, exist_ok=True)
    worst = dataset.sort_by("k_frames_mean").first()
    clips = _expected_clips(dataset, worst.id)
    assert len(clips) >= 1  # the worst video has stretches where the raters disagree
    timings = {}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=browser_tools, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1440, "height": 900})
        media = _media_requests(page)
        try:
            # 1. the run: the per-video histogram, the heatmap and the worst video's timeline, titled, not cut;
            # the tiles show their videos' frames
            started = time.time()
            _open_panel(page, url, dataset)
            assert not _wait_media_loaded(page, media, dataset.values("filepath"))
            plots = _wait_plots(page, TITLES, timeout=60)
            timings["video run drawn"] = time.time() - started
            _assert_titled(plots, TITLES)
            name = os.path.basename(worst.filepath)
            assert any(t.startswith(f"Timeline of {name}") for t, _, _ in plots), plots
            assert not _wait_texts(page, ["Timeline of video (worst first)", "Load its clips where they disagree"])
            assert not _overflowing(page)
            if SCREENSHOTS:
                for field in [f"{r}_segments" for r in RATERS] + ["reference_segments"]:  # the frames' boxes only
                    page.locator(f'[data-cy="checkbox-{field}"]').first.click()
                _scroll_to_text(page, "Load the clips where the raters disagree")
                page.mouse.move(5, 5)  # no hover label over the charts
                page.wait_for_timeout(2500)  # the grid's thumbnails
                page.screenshot(path=str(shots / "video-panel.png"))

            # 2. a point of the α strip: that video's clips where the raters disagree
            started = time.time()
            timeline = page.locator(".js-plotly-plot").filter(has=page.locator(".gtitle", has_text="Timeline of"))
            point = timeline.first.locator(".scatterlayer .trace").nth(len(RATERS)).locator("path.point").nth(2)
            for _ in range(3):  # a click on a chart the panel is redrawing is lost, not wrong
                point.scroll_into_view_if_needed()
                box = point.bounding_box()
                page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
                if _wait_entries(page, len(clips), timeout=20)[0] == len(clips):
                    break
            count, unit = _entries(page)
            assert (count, unit.rstrip("s")) == (len(clips), "clip"), (count, unit)
            assert not _wait_texts(page, [f"the clips of video {name} where the raters disagree"])
            assert not _wait_media_loaded(page, media, [worst.filepath])
            timings["clips drill-down"] = time.time() - started
            if SCREENSHOTS:
                _scroll_to_text(page, "The grid shows the")
                page.mouse.move(5, 5)
                page.wait_for_timeout(2500)
                page.screenshot(path=str(shots / "video-clips.png"))

            # 3. undo: the five videos again
            page.get_by_text("Undo the panel's drill-down", exact=True).first.click()
            assert _wait_entries(page, N_VIDEOS) == (N_VIDEOS, "samples")
        except Exception:
            page.screenshot(path=str(shots / "failure_video.png"))
            raise
        finally:
            browser.close()
    print("timings:", {k: f"{v:.1f} s" for k, v in timings.items()})  # figures, not tests
    server_log = log.read_text(errors="replace")
    assert "agreement_panel" not in server_log, server_log[-3000:]
