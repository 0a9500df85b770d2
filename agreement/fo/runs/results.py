"""Typed results of agreement runs, as ``dataset.load_run_results(key)`` returns them.

Every run saves an :class:`AgreementResults` of its method's class
(:func:`results_class`): ``summary`` holds the headline numbers (NaN stored
as ``None``, with a ``*_reason`` key saying why), ``detail`` everything else
(per-rater and per-pair tables, curves, undefined samples and their
reasons). As FiftyOne's evaluation results do, they print a report and draw
the figures the App panel draws::

    results = dataset.load_run_results("kalos")
    results.print_report()
    results.global_alpha                 # a headline number (tab completion lists them: headline_names())
    results.warnings                     # degenerate design, undefined numbers: what to do
    results.figures()                    # the names of its figures: ['pair_matrix', 'vitality', ...]
    results.plot("vitality").show()      # one of them as a plotly Figure
    results.figure("vitality")           # the same as a plain dict (traces, layout)
    results.to_pandas("raters")          # a table as a pandas DataFrame: "raters", "pairs" or "samples"

Large tables of ``detail`` (``COMPACT_DETAIL``) are stored as one packed
string each (:func:`agreement.fo.storage.compact.pack`: FiftyOne's serialisation
walks every element in Python; one string is one element) and decoded on
load; rater-pair tables are given back as one record per pair.
"""

from __future__ import annotations

import math
import sys
from typing import Any, ClassVar, Mapping

import numpy as np

import fiftyone.core.runs as fors

from agreement.core.rater_pairs import columns_to_records, records_to_columns
from agreement.fo.runs.results_tables import TABLES, table_rows
from agreement.fo.storage.compact import columns_to_nested, is_nested_columns, nested_to_columns, pack, unpack
from agreement.reporting.figures.method_figures import METHOD_VIEWS, pair_matrix, pair_matrix_figure
from agreement.reporting.run_text import report_text

__all__ = [
    "AgreementResults",
    "SimulationResults",
    "results_class",
    "register_results_class",
    "retype_results",
    "encode_detail",
    "decode_detail",
    "to_json",
    "COMPACT_DETAIL",
    "NESTED_DETAIL",
]

#: Large tables of ``detail`` stored as one packed string each.
COMPACT_DETAIL = ("rater_pairs", "pair_sample_scores", "pair_class_dice")
#: Those of them that are ``{outer: {inner: value}}`` maps, stored as columns.
NESTED_DETAIL = ("pair_sample_scores",)

_PLAIN = (str, int, bool, type(None))


def to_json(obj: Any) -> Any:
    """Converts numpy scalars/arrays and NaN/inf to JSON-safe values (NaN -> None).

    Lists and dicts of plain scalars (the columns of large tables) take a fast path.
    """
    if isinstance(obj, dict):
        if all(type(v) in _PLAIN or (type(v) is float and math.isfinite(v)) for v in obj.values()):
            return {str(k): v for k, v in obj.items()}
        return {str(k): to_json(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        if all(type(v) in _PLAIN or (type(v) is float and math.isfinite(v)) for v in obj):
            return list(obj)
        return [to_json(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return to_json(obj.tolist())
    if isinstance(obj, (np.floating, float)):
        f = float(obj)
        return f if math.isfinite(f) else None
    if isinstance(obj, (np.integer,)):
        return int(obj)
    if isinstance(obj, np.bool_):
        return bool(obj)
    return obj


def encode_detail(detail: Mapping[str, Any]) -> dict:
    """``detail`` as stored: each table of ``COMPACT_DETAIL`` packed into one string (records as columns,
    nested maps as columns), the rest JSON-safe."""
    out = dict(detail)
    for name in COMPACT_DETAIL:
        value = out.get(name)
        if value is None or isinstance(value, str):
            continue
        if isinstance(value, list):  # one record per pair, as decoded
            value = records_to_columns(value)
        if name in NESTED_DETAIL and isinstance(value, dict) and not is_nested_columns(value):
            value = nested_to_columns(value)
        out[name] = pack(value)
    return to_json(out)


def decode_detail(detail: Mapping[str, Any] | None) -> dict:
    """``detail`` as stored back to tables: packed strings unpacked, rater pairs as one record per pair."""
    out = dict(detail or {})
    for name in COMPACT_DETAIL:
        if isinstance(out.get(name), str):
            out[name] = unpack(out[name])
            if name in NESTED_DETAIL and is_nested_columns(out[name]):
                out[name] = columns_to_nested(out[name])
    if isinstance(out.get("rater_pairs"), dict):
        out["rater_pairs"] = columns_to_records(out["rater_pairs"])
    return out


def _declaration(method: str | None) -> Any:
    """The declaration of method marker ``method`` (``None``: no declared method has it), looked up in the
    registry package, not imported (the registry imports this module; loading a marker loads the package)."""
    import agreement.fo.methods.markers  # noqa: F401 - loads the registry package

    registry = sys.modules.get("agreement.fo.methods")
    return registry.declaration_of(method) if registry is not None and method else None


class AgreementResults(fors.RunResults):
    """The results of an agreement run.

    Its headline numbers are attributes, read-only, listed by ``dir()`` (so tab completion offers them):
    ``results.alpha_ot`` is ``results.summary["alpha_ot"]``. Which they are is the method's: the numbers its
    operator returns and its panel shows (:meth:`headline_names`: e.g. ``alpha_ot``, ``mean_ot``, ``f1``,
    ``threshold_alpha``, ``n_scored``, ``n_undefined`` of an OT run; ``global_alpha``, ``mean_alpha``,
    ``n_undefined``, ``tau`` of a KαLOS run; ``alpha``, ``alpha_low``, ``alpha_high``, ``mean_agreement`` of a
    class run; ``sigma``, ``distance_alpha``, ``ks``, ``detection_alpha``, ``classification_alpha`` of a
    geometry run). Any other key of ``summary`` reads the same way; a name that is already an attribute
    (``method``, ``params``, ``key``, ...) stays the attribute (read the number from ``summary``).

    Args:
        samples: the collection the run was computed on.
        config: the run's :class:`agreement.fo.runs.classes.AgreementRunConfig`.
        key: the run key.
        backend: the run (FiftyOne builds it from ``config`` when omitted).
        summary: the headline numbers.
        detail: everything else, decoded (:func:`decode_detail`).
        warnings: the run's warnings, sentences saying what is degenerate or undefined and what to do
            (:mod:`agreement.core.design_warnings`; empty for a run of an earlier release).
        **kwargs: further stored attributes (kept as they are).
    """

    #: the panel's view of the method's runs (cards, figures); a declared method's results class sets it
    view: ClassVar[dict | None] = None
    #: the title of its report when the method has no view
    title: ClassVar[str | None] = None

    def __init__(self, samples, config, key, backend=None, summary: dict | None = None,
                 detail: dict | None = None, warnings: list | None = None, **kwargs):
        super().__init__(samples, config, key, backend=backend, **kwargs)
        self.summary = dict(summary or {})
        self.detail = dict(detail or {})
        self.warnings = [str(w) for w in (warnings or [])]

    def __getattr__(self, name: str) -> Any:
        """A headline number of ``summary`` by its name (``results.alpha_ot``)."""
        summary = self.__dict__.get("summary") or {}
        if name in summary:
            return summary[name]
        raise AttributeError(f"{type(self).__name__!s} has no attribute or summary number {name!r}")

    def __setattr__(self, name: str, value: Any) -> None:
        """Sets an attribute; a headline number is read-only (it would be stored beside ``summary``)."""
        summary = self.__dict__.get("summary") or {}
        if name in summary and name not in self.__dict__ and not hasattr(type(self), name):
            raise AttributeError(f"{name!r} is a headline number of run {self.key!r}, read-only: "
                                 f"results.summary[{name!r}] holds it")
        super().__setattr__(name, value)

    def __dir__(self) -> list[str]:
        """The attributes, with the headline numbers (:meth:`headline_names`)."""
        return sorted(set(super().__dir__()) | set(self.headline_names()))

    def headline_names(self) -> list[str]:
        """The run's headline numbers readable as attributes: the numbers the method's operator returns and its
        panel cards show (:attr:`view`), those the summary has, but none that is already an attribute.

        Returns:
            The names, in the method's order.
        """
        decl = _declaration(self.method)
        view = self._view()
        names = [k for k, _, _ in getattr(decl, "outputs", ())]
        names += [c["key"] for part in ("cards", "report_cards") for c in view.get(part) or []]
        taken = set(dir(type(self))) | set(self.__dict__)
        return [n for n in dict.fromkeys(names) if n in self.summary and n.isidentifier() and n not in taken]

    @classmethod
    def _from_dict(cls, d: dict, samples, config, key):
        d = dict(d)
        d["detail"] = decode_detail(d.get("detail"))
        return cls(samples, config, key, **d)

    def serialize(self, reflective: bool = False) -> dict:
        """The stored form: the class name, the summary, the encoded detail (:func:`encode_detail`)."""
        out = {k: to_json(v) for k, v in vars(self).items() if not k.startswith("_")}
        out["detail"] = encode_detail(self.detail)
        return {"cls": self.cls, **out}

    @property
    def method(self) -> str | None:
        """The run's method marker (``iaa.<name>``)."""
        return getattr(self.config, "method", None)

    @property
    def params(self) -> dict:
        """The method parameters the run used."""
        return dict(getattr(self.config, "params", None) or {})

    def as_dict(self) -> dict:
        """``{"summary", "detail", ...}`` as plain dicts (what :func:`agreement.fo.runs.store.load_agreement_results`
        returns)."""
        return {k: v for k, v in vars(self).items() if not k.startswith("_")}

    def _view(self) -> dict:
        if type(self).view is None and self.method is not None and self.method not in METHOD_VIEWS:
            _declaration(self.method)  # registers the declared methods' views
        return type(self).view or (METHOD_VIEWS.get(self.method) if self.method is not None else None) or {}

    def report(self) -> str:
        """The headline numbers as text (:func:`agreement.reporting.run_text.report_text`): one line each, counts
        as integers (``1,234``), flags as ``yes``/``no``, an interval or standard error where the run has one,
        ``(exact chance baseline)`` where the baseline is exact, ``undefined`` with the reason where a number is
        NaN, each count of undefined samples with its reasons; the samples and raters; then the run's warnings,
        one line each."""
        view = self._view()
        return report_text(title=str(view.get("title") or type(self).title or self.method), key=self.key,
                           view=view, summary=self.summary, detail=self.detail, warnings=self.warnings)

    def print_report(self) -> None:
        """Prints :meth:`report`."""
        print(self.report())

    def figure_dicts(self) -> list[dict]:
        """The whole-run figures the App panel draws for this run, as plain dicts (``name``, ``title``,
        ``traces``, ``layout``): the rater-pair matrix, per-rater bars and curves the method has."""
        view = self._view()
        info = {"params": self.params, "method": self.method}
        out = []
        if view.get("pair_matrix") and self.detail.get("rater_pairs") and self.detail.get("raters"):
            value, title = view["pair_matrix"]
            pm = pair_matrix(self.detail, value, title)
            if pm is not None:
                out.append(pair_matrix_figure(pm, view.get("pair_value", value), "whole run", clickable=False))
        for part in ("bars", "curves"):
            if view.get(part):
                out.extend(view[part](self.detail, info))
        return out

    def figures(self) -> list[str]:
        """The names of the run's figures (:meth:`figure_dicts`), each one :meth:`plot` and :meth:`figure`
        accept."""
        return [f["name"] for f in self.figure_dicts()]

    def figure(self, name: str | None = None) -> dict:
        """One of the run's figures as a plain dict (``name``, ``title``, ``traces``, ``layout``).

        Args:
            name: one of :meth:`figures` (the first when omitted).

        Returns:
            The figure.

        Raises:
            ValueError: when the run has no figure of that name (the message lists those it has).
        """
        figs = self.figure_dicts()
        chosen = [f for f in figs if name is None or f["name"] == name]
        if not chosen:
            have = ", ".join(f["name"] for f in figs) or "none"
            raise ValueError(f"run {self.key!r} has no figure {name!r}; its figures: {have}")
        return chosen[0]

    def plot(self, name: str | dict | None = None):
        """One of the run's figures as a ``plotly.graph_objects.Figure``.

        Args:
            name: one of :meth:`figures` (the first when omitted), or a figure of :meth:`figure_dicts`.

        Returns:
            The figure (``.show()`` draws it).

        Raises:
            ValueError: when the run has no figure of that name (the message lists those it has).
        """
        import plotly.graph_objects as go

        fig = self.figure(name.get("name") if isinstance(name, dict) else name)
        return go.Figure(fig["traces"], fig["layout"])

    def to_pandas(self, table: str = "raters"):
        """One of the run's tables as a ``pandas.DataFrame`` (the report's CSV files, with the same columns).

        Args:
            table: ``"raters"`` (the panel's rater table, then every other per-rater number), ``"pairs"`` (one row
                per rater pair: ``rater_a``, ``rater_b`` and every value the run stores per pair) or ``"samples"``
                (``sample_id``, ``filepath``, each per-sample field the run wrote, by its field name, and
                ``reason`` where the run lists why a sample has no value); see
                :mod:`agreement.fo.runs.results_tables`.

        Returns:
            The table (no row when the run has none of that kind, e.g. pairs of a calibration run).

        Raises:
            ValueError: ``table`` is none of the three.
        """
        import pandas as pd

        if table not in TABLES:
            raise ValueError(f"run {self.key!r}: no table {table!r}; to_pandas() gives "
                             f"{', '.join(map(repr, TABLES))}")
        decl = _declaration(self.method)
        return pd.DataFrame(table_rows(self, table, hooks=getattr(decl, "hooks", None)))


class SimulationResults(AgreementResults):
    """Simulated raters: what was simulated from which reference field (``summary``/``detail``)."""

    title = "Simulated raters"


#: method marker -> results class: the declared methods' own (registered by :func:`agreement.fo.methods.declarations`)
_BY_METHOD: dict[str, type[AgreementResults]] = {}


def register_results_class(method: str, cls: type[AgreementResults]) -> None:
    """Makes ``cls`` the results class of method marker ``method`` (a declared method's own class)."""
    if not (isinstance(cls, type) and issubclass(cls, AgreementResults)):
        raise TypeError(f"the results class of {method!r} must subclass AgreementResults, got {cls!r}")
    _BY_METHOD.setdefault(method, cls)


def results_class(method: str | None) -> type[AgreementResults]:
    """The results class of a method marker (:class:`AgreementResults` for one without its own; a simulation
    run's is :class:`SimulationResults`)."""
    from agreement.fo.methods.markers import SIMULATION_METHOD

    _BY_METHOD.setdefault(SIMULATION_METHOD, SimulationResults)
    return _BY_METHOD.get(method or "", AgreementResults)


def retype_results(dataset, key: str) -> bool:
    """Re-saves the results of run ``key`` as its method's results class, if they were saved untyped (a run of
    an earlier release); returns whether it did."""
    raw = dataset.load_run_results(key, cache=False)
    if raw is None or isinstance(raw, AgreementResults):
        return False
    config = dataset.get_run_info(key).config
    attrs = {k: v for k, v in vars(raw).items() if not k.startswith("_")}
    typed = results_class(config.method)._from_dict(attrs, dataset, config, key)
    dataset.save_run_results(key, typed, overwrite=True, cache=False)
    return True
