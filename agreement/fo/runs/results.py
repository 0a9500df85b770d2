"""Typed results of agreement runs, as ``dataset.load_run_results(key)`` returns them.

Every run saves an :class:`AgreementResults` of its method's class
(:func:`results_class`): ``summary`` holds the headline numbers (NaN stored
as ``None``, with a ``*_reason`` key saying why), ``detail`` everything else
(per-rater and per-pair tables, curves, undefined samples and their
reasons). As FiftyOne's evaluation results do, they print a report and draw
the figures the App panel draws::

    results = dataset.load_run_results("kalos")
    results.print_report()
    results.global_alpha                 # a headline number
    results.warnings                     # degenerate design, undefined numbers: what to do
    for fig in results.figures():        # plotly figures as dicts
        ...
    results.plot("vitality").show()      # one of them as a plotly Figure

Large tables of ``detail`` (``COMPACT_DETAIL``) are stored as one packed
string each (:func:`agreement.fo.storage.compact.pack`: FiftyOne's serialisation
walks every element in Python; one string is one element) and decoded on
load; rater-pair tables are given back as one record per pair.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar, Mapping

import numpy as np

import fiftyone.core.runs as fors

from agreement.core.rater_pairs import columns_to_records, records_to_columns
from agreement.fo.storage.compact import columns_to_nested, is_nested_columns, nested_to_columns, pack, unpack
from agreement.reporting.figures.method_figures import METHOD_VIEWS, pair_matrix, pair_matrix_figure, sig3

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


class AgreementResults(fors.RunResults):
    """The results of an agreement run.

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
        return type(self).view or (METHOD_VIEWS.get(self.method) if self.method is not None else None) or {}

    def report(self) -> str:
        """The headline numbers as text: one line each, an interval or standard error where the run has one,
        ``undefined`` with the reason where a number is NaN; then the run's warnings, one line each."""
        view = self._view()
        lines = [f"{view.get('title', self.method)} run {self.key!r}"]
        cards = view.get("cards") or [{"key": k, "label": k} for k, v in self.summary.items()
                                      if isinstance(v, (int, float)) and not k.endswith("_reason")]
        width = max([len(c["label"]) for c in cards] or [0])
        for card in cards:
            if card["key"] not in self.summary:
                continue
            lines.append(f"  {card['label']:<{width}}  {self._card_text(card)}")
        if self.warnings:
            lines.append("Warnings:")
            lines.extend(f"  - {w}" for w in self.warnings)
        return "\n".join(lines)

    def _card_text(self, card: dict) -> str:
        value = self.summary.get(card["key"])
        if isinstance(value, str):
            return value
        if value is None or (isinstance(value, float) and not math.isfinite(value)):
            reason = self.summary.get(card.get("reason") or "")
            return "undefined" + (f" ({reason})" if reason else "")
        text = str(int(value)) if card.get("integer") else sig3(value)
        if card.get("se") and self.summary.get(card["se"]) is not None:
            text += f" ± {sig3(self.summary[card['se']])} (s.e.)"
        lo, hi = self.summary.get(card.get("lo") or ""), self.summary.get(card.get("hi") or "")
        if lo is not None and hi is not None:
            text += f" [{sig3(lo)}, {sig3(hi)}]"
        return text

    def print_report(self) -> None:
        """Prints :meth:`report`."""
        print(self.report())

    def figures(self) -> list[dict]:
        """The whole-run figures the App panel draws for this run (plotly figures as dicts: ``name``,
        ``title``, ``traces``, ``layout``): the rater-pair matrix, per-rater bars and curves the method has."""
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

    def plot(self, name: str | None = None):
        """One of :meth:`figures` (by its ``name``; the first when omitted) as a ``plotly.graph_objects.Figure``.

        Raises:
            ValueError: when the run has no figure of that name (the message lists those it has).
        """
        import plotly.graph_objects as go

        figs = self.figures()
        chosen = [f for f in figs if name is None or f["name"] == name]
        if not chosen:
            raise ValueError(f"run {self.key!r} has no figure {name!r}; its figures are {[f['name'] for f in figs]}")
        return go.Figure(chosen[0]["traces"], chosen[0]["layout"])


class SimulationResults(AgreementResults):
    """Simulated raters: what was simulated from which reference field (``summary``/``detail``)."""


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
