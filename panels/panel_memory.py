"""What each "Annotator Agreement" panel remembers between events, on the server.

Never in the App's panel state: every state write makes the App update its
workspace, which drops the sidebar filters (see :mod:`.agreement_panel`).
One :class:`PanelMemory` per panel id, the least recently used forgotten past
``_MAX_PANELS``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field


@dataclass
class PanelMemory:
    """What a panel instance remembers between events, on the server (never in App state, see above)."""

    filters: dict = field(default_factory=dict)
    reset_until: float = 0.0
    reset_pending: bool = False  # an event expects the App to drop the filters: the window restarts at its end
    drill: dict | None = None  # {"stages": [...], "what": str, "bin": int | None}
    sig: str | None = None
    figures: dict = field(default_factory=dict)  # name -> {"layout", "config", "click"}
    undefined: list = field(default_factory=list)
    compare: dict | None = None
    modal: dict | None = None
    whole: bool = True
    # the source of truth for rendering: the App may send events with an older copy of the panel state
    run_key: str | None = None
    runs: list | None = None
    compare_on: bool | None = None
    compare_key: str | None = None
    shown: dict = field(default_factory=dict)  # error, has_cards, score_field, n_bars, n_curves
    dataset: str | None = None
    run_labels: dict = field(default_factory=dict)  # key -> "key — method, time" for the run dropdown
    touched: float = 0.0
    consensus_rater: str | None = None  # the rater whose confusion matrix a consensus run shows
    review: dict | None = None  # the review queue is the view: {"key", "progress", "label"} (.panel_review)
    consensus: dict | None = None  # a consensus run: {"raters", "rater", "n_flagged"}
    options: dict = field(default_factory=dict)  # the rater table's and heatmap's controls (.panel_raters)
    raters: dict | None = None  # the rater table: {"columns", "sort", "worst_first", "consensus"}
    pairs: dict | None = None  # the heatmap's choices: {"raters", "has_observed"}
    remembered: str | None = None  # the run last recorded as open (agreement.fo.panel.app_state)
    video: dict | None = None  # a run on videos: the timeline's video and choices (.panel_video)
    video_choice: str | None = None  # the video the user chose for the timeline
    relabel: dict | None = None  # the "Another opinion" section: target, budget, last steps (.panel_relabel)


PANEL_MEMORY: dict[str, PanelMemory] = {}
_MAX_PANELS = 64


def panel_memory_of(ctx) -> PanelMemory:
    """The memory of the panel of event ``ctx`` (by its panel id), made for a panel not seen yet.

    Args:
        ctx: the panel event's context.

    Returns:
        Its :class:`PanelMemory`, marked as used now.
    """
    pid = str(ctx.params.get("panel_id") or "default")
    mem = PANEL_MEMORY.get(pid)
    if mem is None:
        if len(PANEL_MEMORY) >= _MAX_PANELS:  # forget the least recently used panel
            del PANEL_MEMORY[min(PANEL_MEMORY, key=lambda k: PANEL_MEMORY[k].touched)]
        mem = PANEL_MEMORY[pid] = PanelMemory()
    mem.touched = time.time()
    return mem
