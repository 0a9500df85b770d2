"""Keeping the user's sidebar filters through a reload of the App's dataset.

After a run writes new fields, the App must reload its dataset to show them, and the App drops its sidebar
filters when that reload completes, which is after the run's own execution has ended (a run on the current
view, 19 of 60 samples, came back as 60). A run therefore ends by triggering :class:`RestoreFilters`, an
unlisted operator whose execution is its own request: it waits past the reload and sets the filters the run
started from again, a few times over about ten seconds (later on a loaded machine).
"""

from __future__ import annotations

import time

import fiftyone.operators as foo

from agreement.fo.panel.app_state import restore_filters_trigger

__all__ = ["RESTORE_DELAYS", "RestoreFilters", "restore_filters_trigger"]

#: Seconds between the filter restores (after the run's reload).
RESTORE_DELAYS = (1.5, 3.0, 6.0)


class RestoreFilters(foo.Operator):
    """Sets the App's sidebar filters ``filters`` again after each of :data:`RESTORE_DELAYS` (streamed)."""

    @property
    def config(self):
        """The operator's name, label and description in the App."""
        return foo.OperatorConfig(name="restore_filters", label="Annotator Agreement: restore sidebar filters",
                                  unlisted=True, execute_as_generator=True)

    def execute(self, ctx):
        """Restores the filters the App had before the reload (a generator: it triggers them)."""
        filters = dict(ctx.params.get("filters") or {})
        if not filters:
            return
        for delay in RESTORE_DELAYS:
            time.sleep(delay)
            yield ctx.trigger("set_filters", params=filters)
