"""What the panel's event mixins ask of the panel class they are mixed into.

The mixins (:class:`.panel_drills.DrillEvents`, :class:`.panel_raters.RaterEvents`,
:class:`.panel_masks.MaskEvents`, :class:`.panel_video.VideoEvents`) call helpers that
:class:`.agreement_panel.AgreementPanel` defines. :class:`PanelHost` declares them for the
type checker only: at run time it is an empty class, so it changes no behaviour.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .panel_memory import PanelMemory

__all__ = ["PanelHost"]


class PanelHost:
    """Base of the panel's event mixins: the panel class's helpers they call, declared for the type checker."""

    if TYPE_CHECKING:  # defined by AgreementPanel (agreement_panel.py)

        def _context(self, ctx: Any) -> tuple[str, dict, Any, list | None]: ...

        def _drill(self, ctx: Any, base: Any, base_stages: list | None, view: Any, what: str,
                   bin_: int | None = None, **extra: Any) -> None: ...

        def _option_changed(self, ctx: Any, mem: PanelMemory) -> None: ...
