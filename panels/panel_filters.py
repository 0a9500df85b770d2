"""What the "Annotator Agreement" panel needs to keep the user's sidebar filters (see :mod:`.agreement_panel`):
whether the App can set them, and whether two lists of view stages are the same."""

from __future__ import annotations

import json

__all__ = ["_app_can_set_filters", "_same"]

_SET_FILTERS: bool | None = None


def _app_can_set_filters() -> bool:
    """Whether this FiftyOne App has the ``set_filters`` operator (newer Apps; not 1.0)."""
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


def _strip(stage: dict) -> dict:
    """A serialised view stage without its ``_uuid`` (which differs between two copies of a stage)."""
    return {k: v for k, v in stage.items() if k != "_uuid"}


def _same(a: list, b: list) -> bool:
    """Whether two lists of serialised view stages are the same stages."""
    return json.dumps([_strip(s) for s in a], sort_keys=True, default=str) == \
        json.dumps([_strip(s) for s in b], sort_keys=True, default=str)
