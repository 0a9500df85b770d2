"""What the "Annotator Agreement" panel needs to keep the user's sidebar filters (see :mod:`.agreement_panel`):
whether the App can set them, and whether two lists of view stages are the same."""

from __future__ import annotations

import json

__all__ = ["panel_can_set_filters", "same_stages"]

def panel_can_set_filters() -> bool:
    """Whether this FiftyOne App has the ``set_filters`` operator (:func:`agreement.fo.panel.app_state.app_can_set_filters`)."""
    from agreement.fo.panel.app_state import app_can_set_filters

    return app_can_set_filters()


def _strip(stage: dict) -> dict:
    """A serialised view stage without its ``_uuid`` (which differs between two copies of a stage)."""
    return {k: v for k, v in stage.items() if k != "_uuid"}


def _numbers(x):
    """``x`` with every number as a float: the App sends back ``0.0`` as ``0`` (JavaScript has one number
    type), so a histogram bar's stage ``ot >= 0.0`` came back as ``ot >= 0`` and was not recognised as the
    panel's drill-down (the next bar then narrowed it instead of replacing it)."""
    if isinstance(x, bool) or x is None or isinstance(x, str):
        return x
    if isinstance(x, (int, float)):
        return float(x)
    if isinstance(x, dict):
        return {k: _numbers(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_numbers(v) for v in x]
    return x


def same_stages(a: list, b: list) -> bool:
    """Whether two lists of serialised view stages are the same stages (numbers compared as numbers)."""
    return json.dumps(_numbers([_strip(s) for s in a]), sort_keys=True, default=str) == \
        json.dumps(_numbers([_strip(s) for s in b]), sort_keys=True, default=str)


def load_derived_view(ctx, mem, base, base_stages, view, drill: dict) -> None:
    """Loads ``view``, derived from the panel's ``base`` view (a patches or clips view, whose own stages omit
    those before it: the view is serialised whole), as the panel's drill-down ``drill`` (what, count, unit,
    run). The sidebar filters went into the view as stages; undoing the drill-down puts them back."""
    from .panel_markdown import drill_md

    prefix = base._serialize()
    added = view._serialize()[len(prefix):]
    mem.drill = {"stages": added, "bin": None, **drill,
                 "restore": {"stages": base_stages, "filters": dict(mem.filters)}}
    mem.sig = None
    mem.filters, mem.reset_until, mem.reset_pending = {}, 0.0, False  # nothing to put back (filters are stages)
    if base_stages is None:  # a saved view
        ctx.ops.set_view(view=view)
    else:
        ctx.trigger("set_view", params={"view": prefix + added})
        if mem.drill["restore"]["filters"] and panel_can_set_filters():
            ctx.trigger("set_filters", params={})
    ctx.panel.data.drill_md = drill_md(mem)


#: The earlier name, which the tests import.
_same = same_stages
