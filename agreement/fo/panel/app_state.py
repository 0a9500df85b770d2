"""What the App's user is doing, shared between the panel and the operators' forms.

The panel remembers the run it shows (:func:`remember_open_run`); an
operator's form preselects it (:func:`open_run`). The choice is kept in the
dataset's FiftyOne execution store (``iaa_agreement``), so that it is seen by
every process of the App server and survives a page reload; on a FiftyOne
without execution stores it is kept in this process, which is where the App
resolves operator forms and panel events.
"""

from __future__ import annotations

import logging
from typing import Any

logger = logging.getLogger(__name__)

__all__ = ["STORE_NAME", "app_can_set_filters", "open_panels", "open_run", "remember_open_run", "remember_panel",
           "restore_filters_trigger"]

STORE_NAME = "iaa_agreement"
_OPEN_RUN = "open_run"
_LOCAL: dict[str, Any] = {}  # dataset id -> run key, where there is no execution store
_PANELS: dict[str, dict[str, str | None]] = {}  # dataset id -> {panel id: the queue item it shows, or None}
_MAX_PANELS = 64


def _store(dataset):
    """The dataset's execution store of this plugin, or None (FiftyOne without stores, no database)."""
    try:
        from fiftyone.operators.store import ExecutionStore
    except ImportError:
        return None
    try:
        return ExecutionStore.create(STORE_NAME, dataset._doc.id)
    except Exception:  # noqa: BLE001 - a missing store only loses the preselection
        logger.debug("no execution store for %s", getattr(dataset, "name", dataset), exc_info=True)
        return None


def remember_open_run(dataset, key: str | None) -> None:
    """Records that run ``key`` is the one open in the panel on ``dataset`` (``None``: no run open)."""
    if dataset is None:
        return
    dataset = getattr(dataset, "_root_dataset", dataset)
    _LOCAL[str(dataset._doc.id)] = key
    store = _store(dataset)
    if store is None:
        return
    try:
        if store.get(_OPEN_RUN) != key:
            store.set(_OPEN_RUN, key)
    except Exception:  # noqa: BLE001 - best effort: the in-process value still holds
        logger.debug("could not record the open run", exc_info=True)


def open_run(dataset) -> str | None:
    """The run last open in the panel on ``dataset`` if it still exists, else None."""
    if dataset is None:
        return None
    dataset = getattr(dataset, "_root_dataset", dataset)
    key = _LOCAL.get(str(dataset._doc.id))
    if key is None:
        store = _store(dataset)
        if store is not None:
            try:
                key = store.get(_OPEN_RUN)
            except Exception:  # noqa: BLE001
                key = None
    return key if key is not None and key in dataset.list_runs() else None


def remember_panel(dataset, panel_id: str, item: str | None = None) -> None:
    """Records that panel ``panel_id`` shows ``dataset`` (with queue item ``item`` open, or none), so that an
    operator that changes what the panel shows (a review decision) can update it at once (:func:`open_panels`).
    Kept in this process: the App server's, where panel events and operators run."""
    if dataset is None or not panel_id:
        return
    dataset = getattr(dataset, "_root_dataset", dataset)
    for panels in _PANELS.values():
        panels.pop(panel_id, None)
    panels = _PANELS.setdefault(str(dataset._doc.id), {})
    panels[panel_id] = item
    while len(panels) > _MAX_PANELS:
        panels.pop(next(iter(panels)))


def open_panels(dataset) -> dict[str, str | None]:
    """``{panel id: open queue item or None}`` of the agreement panels last seen on ``dataset``."""
    if dataset is None:
        return {}
    dataset = getattr(dataset, "_root_dataset", dataset)
    return dict(_PANELS.get(str(dataset._doc.id), {}))


_SET_FILTERS: bool | None = None


def app_can_set_filters() -> bool:
    """Whether this FiftyOne App has the ``set_filters`` operator (newer Apps; not 1.0): read once from the App's
    bundled code."""
    global _SET_FILTERS
    if _SET_FILTERS is None:
        import glob
        import os

        import fiftyone

        found = False
        static = os.path.join(os.path.dirname(fiftyone.__file__), "server", "static", "assets")
        for path in glob.glob(os.path.join(static, "*.js")):
            try:
                with open(path, encoding="utf-8", errors="ignore") as f:
                    if "set_filters`" in f.read():
                        found = True
                        break
            except OSError:
                continue
        _SET_FILTERS = found
    return _SET_FILTERS


RESTORE_FILTERS_URI = "@iaa/agreement/restore_filters"


def restore_filters_trigger(filters: dict) -> tuple[str, dict]:
    """The trigger of the plugin's ``restore_filters`` operator (``operators/app_filters.py``), which sets the
    App's sidebar filters ``filters`` again a few seconds later: after a reload of the dataset or a workspace
    update the App drops them without telling the plugin."""
    return RESTORE_FILTERS_URI, {"filters": dict(filters)}
