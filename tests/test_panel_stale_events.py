"""The panel's drill-down against the App's late view events (``panels.agreement_panel._stale_event``).

On a loaded machine the App may report a view it showed before a drill-down after the panel has loaded the
drill-down: the view the drill-down started from, or the earlier drill-down it replaces (a histogram bar clicked
after a heatmap cell). Within ``STALE_EVENT_SECONDS`` such an event keeps the drill-down; any other view, or the
same one later, ends it.
"""

from __future__ import annotations

import time

import pytest

pytestmark = pytest.mark.fiftyone

BASE = [{"_cls": "fiftyone.core.stages.Exists", "kwargs": [["field", "a"], ["bool", True]]}]
HEATMAP = BASE + [{"_cls": "fiftyone.core.stages.Match", "kwargs": [["filter", {"x": 1}]]}]
BAR = BASE + [{"_cls": "fiftyone.core.stages.Match", "kwargs": [["filter", {"y": 2}]]}]


def _drill(at: float, **more) -> dict:
    return {"stages": BAR[len(BASE):], "base": BASE, "at": at, **more}


def test_a_late_event_of_the_view_before_keeps_the_drill_down_for_a_while():
    from panels.agreement_panel import STALE_EVENT_SECONDS, _stale_event

    now = time.time()
    assert _stale_event(_drill(now), BASE)  # the view it started from
    assert _stale_event(_drill(now, **{"from": HEATMAP}), HEATMAP)  # the drill-down it replaced
    assert not _stale_event(_drill(now), HEATMAP)  # not known as a view shown before
    assert not _stale_event(_drill(now, **{"from": HEATMAP}), [])  # another view: the user moved on
    late = now - STALE_EVENT_SECONDS - 1
    assert not _stale_event(_drill(late, **{"from": HEATMAP}), HEATMAP)  # too late to be the App's lag
    assert not _stale_event(_drill(late), BASE)
    assert not _stale_event({"stages": [], "base": None, "at": now, "from": None}, BASE)
