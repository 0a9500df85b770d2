"""What a method declares to the run lifecycle of :mod:`agreement.fo.runs.engine`, and what it returns.

:class:`MethodSpec` (the fields and label attributes a method owns, how its
input is read, its whole-corpus ``compute`` or its streamed ``kernel`` and
``finish``), :class:`MethodOutput` (what a method computed),
:class:`StreamContext` (what a streamed ``finish`` gets besides its
statistics) and :func:`clean_summary`. Importable from :mod:`agreement.fo.runs.engine`
too.

What a method shows, declared with the method: the typed hooks of :class:`MethodHooks`.

Every method-specific part of what the plugin shows (the panel's extra
cards, sections and figures, the rater table, the rater-pair heatmap's note,
the explanation of one sample's labels, the drill-downs of
``load_agreement_view`` and of the panel, the conflicts table of reports, the
review queue) is a hook on the method's
:class:`agreement.fo.runs.declaration.MethodDeclaration` (``hooks``). The shared
modules look the hooks up from a run's method marker
(:func:`agreement.fo.methods.hooks_of`) and call them; they never test a
method's name. A hook left at its default means "not offered": the shared
code shows nothing for it (no rater table, no drill-down mode, no conflicts).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from agreement.fo.storage.reading import ReadResult

__all__ = ["MethodSpec", "MethodOutput", "StreamContext", "FitWindow", "clean_summary", "Progress", "DRILL_MODES", "MethodHooks", "RaterTable"]

Progress = Callable[[float, str], None]


@dataclass
class MethodOutput:
    """What a method computed on a corpus.

    Attributes:
        summary: the headline numbers (flat; NaN where undefined).
        detail: everything else for the run results (JSON-serialisable after
            :func:`agreement.fo.runs.store.to_json`).
        sample_values: suffix → one value per corpus sample (corpus order).
        label_values: suffix → one value per corpus annotation row.
        sample_objects: suffix → ``{sample_id: value}`` for values given per
            sample id, samples not listed untouched.
        label_fields: suffix → ``(container, docs, {attr: example values})``: a whole label
            field the run owns (e.g. a consensus), written in bulk from
            :func:`agreement.fo.storage.writing.label_document` documents; ``docs`` is
            ``{sample_id: [label documents]}``, or a function of a ``slice`` of
            corpus samples returning that map for them (documents made part by
            part while earlier parts are written).
        stats: a streamed method's mergeable corpus statistics of the shard
            (handed to the method's ``finish`` with those of every other shard).
    """

    summary: dict
    detail: dict
    sample_values: Mapping[str, Sequence[Any] | np.ndarray] = field(default_factory=dict)
    label_values: Mapping[str, Sequence[Any] | np.ndarray] = field(default_factory=dict)
    sample_objects: dict[str, Mapping[str, Any]] = field(default_factory=dict)
    label_fields: dict[str, tuple] = field(default_factory=dict)
    stats: Any = None


@dataclass(frozen=True)
class MethodSpec:
    """A method, declared once.

    Attributes:
        method: the run's method marker, e.g. ``iaa.<name>`` (:data:`agreement.fo.methods.kalos.METHOD`).
        sample_suffixes: the per-sample fields it owns, ``{key}_<suffix>``.
        label_suffixes: the per-label attributes it owns on every rater label field.
        compute: ``(read, params, progress, extra) -> MethodOutput`` (pure agreement code inside) on
            the whole corpus at once; ``None`` for a method that always streams.
        read_options: extra :func:`agreement.fo.storage.reading.read_annotations` options from the parameters
            (``image_sizes``, ``masks``, ...).
        check: validates the corpus before anything is written (raises with a message).
        extra: ``(samples, read, params) -> dict`` of further inputs read from the dataset
            (e.g. a session attribute), passed to ``compute`` as ``extra``.
        kernel: a method that streams: ``(read, params, extra) -> MethodOutput`` on one shard
            (per-sample and per-label values of the shard, its mergeable ``stats``;
            no summary). Pure :mod:`agreement` code inside.
        finish: ``(stats of every shard in corpus order, params, StreamContext) -> (summary, detail)``.
        prepare: ``(samples, plan, sample_ids, layout, params) -> state`` (``layout``: the run's
            :class:`agreement.fo.runs.options.RaterLayout`), run once before the
            first shard (e.g. a chance sample drawn from the assignment, whose sets the shards
            then collect as they pass); the kernel finds it in ``extra["state"]``, with the
            shard's first corpus position in ``extra["sample_offset"]``.
        shard_cap: at most this many samples per shard when no shard size is given (a method whose samples
            are large, e.g. full-image masks: 200 samples of three 512 x 512 masks are about 160 MB); ``None``:
            :func:`agreement.fo.runs.engine.default_shard_size`.
        warnings: ``(summary, detail, params) -> [sentences]``: the method's own warnings of a finished run
            (e.g. consensus labels drawn by a single rater), recorded with the run's design warnings
            (:mod:`agreement.core.design_warnings`) and returned under the operator's ``warnings`` key.
        rater_design: the run compares raters, so its design is checked (fewer than two raters, raters
            who never meet, ...); ``False`` for a run that reads one field as one rater (a simulation).
        finish_rereads: its ``finish`` reads samples again (:attr:`StreamContext.read_samples`);
            a view of one shard serves them from memory, so such a method streams a view of at
            most :data:`agreement.fo.runs.engine.DEFAULT_SHARD_SIZE` samples in one shard by default (not
            :func:`agreement.fo.runs.engine.default_shard_size`).
        whole_corpus: ``params -> reason or None``: why these parameters need the whole
            corpus at once (``compute`` then runs, and a shard size smaller than the
            view or the Dask backend is refused with this reason); ``None``: it streams.
        fit_window: ``params -> W or None``: a method with a global model (a consensus's EM) fitted by
            ``compute`` on the first ``W`` samples of the canonical corpus order; a larger view streams
            the rest in shards with that fit fixed (:func:`agreement.fo.runs.engine.run_method`):
            ``compute`` gets ``extra["window"]`` (:class:`FitWindow`) and returns the window's values and,
            as ``stats``, what ``kernel`` gets as ``extra["state"]`` and ``finish`` first. A view of at
            most ``W`` samples is computed whole, as without it. ``None``: no window.
        window_refusal: ``(read of the window, params) -> reason or None``: why this corpus cannot be
            fitted on a window (e.g. one STAPLE over every mask): the rest is then read too and
            ``compute`` runs on the whole view.
    """

    method: str
    sample_suffixes: tuple[str, ...]
    label_suffixes: tuple[str, ...]
    compute: Callable[[ReadResult, dict, Progress, dict], MethodOutput] | None
    read_options: Callable[[dict], dict] = lambda params: {}
    check: Callable[[ReadResult, dict], None] = lambda read, params: None
    extra: Callable[[Any, ReadResult, dict], dict] = lambda samples, read, params: {}
    kernel: Callable[[ReadResult, dict, dict], MethodOutput] | None = None
    finish: Callable[[list, dict, "StreamContext"], tuple[dict, dict]] | None = None
    whole_corpus: Callable[[dict], str | None] = lambda params: None
    fit_window: Callable[[dict], int | None] | None = None
    window_refusal: Callable[[ReadResult, dict], str | None] = lambda read, params: None
    prepare: Callable[[Any, Any, list, Any, dict], Any] | None = None
    finish_rereads: bool = False
    shard_cap: int | None = None
    warnings: Callable[[dict, dict, dict], list] = lambda summary, detail, params: []
    rater_design: bool = True


@dataclass
class StreamContext:
    """What a streamed method's ``finish`` (and, through ``extra``, its ``kernel``) gets besides its statistics.

    Attributes:
        sample_ids: every sample id of the view, in the canonical corpus order (sorted as strings).
        state: what the method's ``prepare`` returned (``None`` without one).
        read_samples: ``(sample_ids) -> MultiRaterAnnotations``: those samples read again, as the
            shards were read (for corpus statistics that need a few samples together).
        groups: the group of each sample (integers, ``sample_ids`` order) when samples are not independent
            items (frames: their video, :func:`agreement.fo.frames.units.chance_groups`); ``None``: each sample
            is its own group. Chance baselines pair samples of different groups; bootstraps resample groups.
    """

    sample_ids: list
    state: Any = None
    read_samples: Callable[[Sequence[str]], Any] | None = None
    groups: Any = None


@dataclass
class FitWindow:
    """What ``compute`` gets as ``extra["window"]`` when it fits on the window of a larger view
    (:attr:`MethodSpec.fit_window`).

    Attributes:
        samples: the view of the run.
        sample_ids: every sample id of the view, in the canonical corpus order; the window is the first
            ``size``.
        size: the samples of the window.
        plan: the view's :class:`agreement.fo.storage.assignment.CorpusPlan` (the window is read with it:
            the view's raters and class vocabulary).
    """

    samples: Any
    sample_ids: list
    size: int
    plan: Any


def clean_summary(summary: Mapping[str, Any]) -> dict:
    """NaN and infinite floats as ``None``, numpy scalars as Python scalars (the operators' return value)."""
    out = {}
    for k, v in summary.items():
        if isinstance(v, (float, np.floating)):
            v = float(v) if np.isfinite(v) else None
        elif isinstance(v, np.integer):
            v = int(v)
        elif isinstance(v, np.bool_):
            v = bool(v)
        out[k] = v
    return out

#: The drill-downs of ``load_agreement_view`` a method may offer beside those by its per-sample score.
DRILL_MODES = ("unmatched", "class", "review")


@dataclass(frozen=True)
class RaterTable:
    """One rater table a method offers (:func:`agreement.fo.panel.raters.rater_table`).

    Attributes:
        name: the table's name (the method marker, or the marker and a variant, e.g. ``"<marker>/classes"``);
            :data:`agreement.fo.panel.rater_tables.RATER_COLUMNS` lists the columns by this name.
        columns: the table's :class:`agreement.fo.panel.rater_tables.Column` s, the default sort column first.
        title: the markdown title above the table (e.g. ``"**Raters** (whole run)"``).
        rows: ``(samples, info, detail) -> rows`` (one dict per rater: ``"rater"``, a value per column key and
            ``"text"``, see :func:`agreement.fo.panel.rater_tables.row_texts`); ``None`` or ``[]``: no table for this run.
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
            :func:`agreement.fo.panel.data.run_panel_data` (``data["consensus"]``): its ``"cards"`` come first,
            its ``"view_cards"`` replace the view's, its ``"figure"`` is drawn as ``"confusion"``.
        panel_figures: ``(detail, info, *, ids=None, scope="whole run", selected_class=None, selected_cell=None)
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
            :func:`agreement.reporting.pair_statistics.contrast_note`).
        explain_labels: ``(sample, info, labels) -> rows``: one row per ``(rater, label)`` of the sample (keys
            ``id``, ``rater``, ``label``, ``status``, ``counterpart``, ``value``, ``disagrees``), sorted
            disagreeing first by :func:`agreement.fo.panel.label_explanations.label_explanations`.
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
            :func:`agreement.reporting.tables.class_rows`) and the ``pair_class_dice`` table of reports.
        planning: ``(samples, info, options) -> agreement.fo.planning.PlanningInput``: its run replayed with
            fewer raters per item for ``plan_raters`` (the reliability data and the statistics it offers);
            ``None``: ``plan_raters`` refuses its runs, saying so.
        relabel: ``(samples, info, options) -> (sample ids, agreement.methods.planning.priority.RelabelPriority)``:
            the expected value of one more label per sample for ``suggest_relabel``; ``None``: refused.
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
    planning: Callable[[Any, dict, dict], Any] | None = None
    relabel: Callable[[Any, dict, dict], Any] | None = None

    def __post_init__(self) -> None:
        unknown = [m for m in self.drill_modes if m not in DRILL_MODES]
        if unknown:
            raise ValueError(f"unknown drill-down modes {unknown}; a method offers some of {list(DRILL_MODES)}")

    def rater_table_of(self, detail: Mapping) -> RaterTable | None:
        """The first of :attr:`rater_tables` that applies to a run with results ``detail`` (``None``: none)."""
        return next((t for t in self.rater_tables if t.applies(dict(detail))), None)
