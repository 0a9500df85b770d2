"""What a method shows, declared with the method: the typed hooks of :class:`MethodHooks`.

Every method-specific part of what the plugin shows (the panel's extra
cards, sections and figures, the rater table, the rater-pair heatmap's note,
the explanation of one sample's labels, the drill-downs of
``load_agreement_view`` and of the panel, the conflicts table of reports, the
review queue) is a hook on the method's
:class:`agreement.fo.declaration.MethodDeclaration` (``hooks``). The shared
modules look the hooks up from a run's method marker
(:func:`agreement.fo.methods.hooks_of`) and call them; they never test a
method's name. A hook left at its default means "not offered": the shared
code shows nothing for it (no rater table, no drill-down mode, no conflicts).

This module imports nothing of the plugin, so that the declaration and every
shared module can import it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

__all__ = ["DRILL_MODES", "MethodHooks", "RaterTable"]

#: The drill-downs of ``load_agreement_view`` a method may offer beside those by its per-sample score.
DRILL_MODES = ("unmatched", "class", "review")


@dataclass(frozen=True)
class RaterTable:
    """One rater table a method offers (:func:`agreement.fo.rater_panel_data.rater_table`).

    Attributes:
        name: the table's name (the method marker, or the marker and a variant, e.g. ``"<marker>/classes"``);
            :data:`agreement.fo.rater_tables.RATER_COLUMNS` lists the columns by this name.
        columns: the table's :class:`agreement.fo.rater_tables.Column` s, the default sort column first.
        title: the markdown title above the table (e.g. ``"**Raters** (whole run)"``).
        rows: ``(samples, info, detail) -> rows`` (one dict per rater: ``"rater"``, a value per column key and
            ``"text"``, see :func:`agreement.fo.rater_tables.row_texts`); ``None`` or ``[]``: no table for this run.
        applies: ``detail -> bool``: whether this table is the one of a run with these results (the first
            table of the method that applies is shown; default: always).
    """

    name: str
    columns: tuple
    title: str
    rows: Callable[[Any, dict, dict], list[dict] | None]
    applies: Callable[[dict], bool] = lambda detail: True


@dataclass(frozen=True)
class MethodHooks:
    """Everything method-specific that the panel, the operators and the reports show, as typed hooks.

    Every hook is optional: the default (``None``, ``()``, ``False``) is "the method does not offer it".

    Attributes:
        view_cards: ``(samples, info, detail, ids) -> cards``: cards recomputed on the samples of the current
            view (ids: their sample or frame ids), shown before the mean score (OT: αOT of the view).
        panel_section: ``(samples, info, results, whole, rater) -> dict | None``: a method's own section of
            :func:`agreement.fo.panel_data.run_panel_data` (``data["consensus"]``): its ``"cards"`` come first,
            its ``"view_cards"`` replace the view's, its ``"figure"`` is drawn as ``"confusion"``.
        panel_figures: ``(detail, info, ids=None, scope="whole run", selected_class=None, selected_cell=None)
            -> figures``: figures the panel draws below its dashboard and reports draw with the classes (semantic
            masks: Dice per class, pair × class heatmap).
        rater_tables: the rater tables it offers (:class:`RaterTable`), the first that applies shown.
        pooled_key: the summary key of the pooled value the rater-pair values are read against.
        pair_counts: ``(samples, info) -> {"a|b": {"n_shared", "n_units", "n_agree"}} | None``: the observed
            agreement of each rater pair (the heatmap can colour its cells by it).
        view_pair_values: ``(detail, records, ids) -> {"a|b": {"<value>", "n_samples"}}``: the rater-pair
            values recomputed on the samples ``ids`` of the view (for a run whose results hold
            ``pair_sample_scores``).
        pair_note: ``(records, name, value_name, contrast, observed_median, observed_pooled) -> markdown``: the
            note under the rater-pair heatmap (default:
            :func:`agreement.fo.pair_statistics.contrast_note`).
        explain_labels: ``(sample, info, labels) -> rows``: one row per ``(rater, label)`` of the sample (keys
            ``id``, ``rater``, ``label``, ``status``, ``counterpart``, ``value``, ``disagrees``), sorted
            disagreeing first by :func:`agreement.fo.label_explanations.label_explanations`.
        explain_sample: ``(sample, info) -> rows``: the sample's explanation as the method orders it (in place
            of ``explain_labels``: e.g. one row per rater's mask).
        drill_modes: the drill-downs of ``load_agreement_view`` it offers beside ``"lowest"`` and ``"pair"``:
            ``"unmatched"`` (one rater's labels that match nobody), ``"class"`` (one class's disagreements),
            ``"review"`` (its review queue).
        unmatched_view: ``(samples, info, rater) -> view``: rater ``rater``'s labels (or samples) that match
            nobody.
        class_view: ``(samples, info, label_class) -> view``: the labels (or samples) of one class the raters
            disagree on.
        disagreeing_view: ``(samples, info, raters) -> view``: the labels that disagree (of ``raters`` only,
            unless ``None``).
        class_scores: ``(samples, key, label_class, pair) -> [(sample id, score)]``: per sample, the raters'
            lowest agreement on one class (semantic masks: Dice), lowest first.
        drills_samples: its drill-downs by rater or class load samples, not labels (one class per sample).
        pair_sample_scores: its results hold a score per (sample, rater pair), which the panel writes into
            ``{key}_pair_score`` for a rater pair's drill-down.
        review_view: ``(samples, key) -> view``: its review queue, least confident first.
        conflicts: ``(samples, info, raters) -> (ids, paths, conflicts) | None``: its per-label conflicts
            (:mod:`agreement.reporting.conflicts` types) for reports; ``None`` returned: none for this run.
        conflicts_how: how the conflicts were found, one clause for the report ("from ...").
        conflicts_none: why a run for which ``conflicts`` returns ``None`` has none, one sentence.
        report_classes: ``(detail, info) -> (class rows, pair × class rows)``: its own per-class table (given to
            :func:`agreement.fo.report.tables.class_rows`) and the ``pair_class_dice`` table of reports.
    """

    view_cards: Callable[[Any, dict, dict, set | None], list[dict]] | None = None
    panel_section: Callable[[Any, dict, dict, bool, str | None], dict | None] | None = None
    panel_figures: Callable[..., list[dict]] | None = None
    rater_tables: tuple[RaterTable, ...] = ()
    pooled_key: str | None = None
    pair_counts: Callable[[Any, dict], dict | None] | None = None
    view_pair_values: Callable[[dict, list, set | None], dict] | None = None
    pair_note: Callable[[list, str, str, Any, float | None, float | None], str] | None = None
    explain_labels: Callable[[Any, dict, list], list[dict]] | None = None
    explain_sample: Callable[[Any, dict], list[dict]] | None = None
    drill_modes: tuple[str, ...] = ()
    unmatched_view: Callable[[Any, dict, str], Any] | None = None
    class_view: Callable[[Any, dict, str], Any] | None = None
    disagreeing_view: Callable[[Any, dict, Sequence[str] | None], Any] | None = None
    class_scores: Callable[[Any, str, Any, Any], list[tuple[str, float]]] | None = None
    drills_samples: bool = False
    pair_sample_scores: bool = False
    review_view: Callable[[Any, str], Any] | None = None
    conflicts: Callable[[Any, dict, list[str]], tuple | None] | None = None
    conflicts_how: str = ""
    conflicts_none: str = ""
    report_classes: Callable[[dict, dict], tuple[list[dict] | None, list[dict]]] | None = None

    def __post_init__(self) -> None:
        unknown = [m for m in self.drill_modes if m not in DRILL_MODES]
        if unknown:
            raise ValueError(f"unknown drill-down modes {unknown}; a method offers some of {list(DRILL_MODES)}")

    def rater_table_of(self, detail: Mapping) -> RaterTable | None:
        """The first of :attr:`rater_tables` that applies to a run with results ``detail`` (``None``: none)."""
        return next((t for t in self.rater_tables if t.applies(dict(detail))), None)
