"""What an operator shows when it ends: one output property per key of its result.

Each operator declares the result keys it always returns, with their labels
and kinds (:data:`Output`); :func:`result_property` makes FiftyOne's output
form of those, then of every other key the actual result holds (a method's
further summary numbers, ...), so that nothing the operator returned is left
out of what the App shows.

What the App shows is summarised where a list or a table is too long to read
in a dialog (:func:`shown_result`: a crowd's 196 raters are their count and
the first few names); the operator's result itself, which Python callers
get, keeps every entry. A refusal (:data:`operators.errors.REFUSED`) is shown
as an error notice with its whole message (:func:`refusal_property`).
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import fiftyone.operators.types as types

from .errors import REFUSED

__all__ = ["LONG", "SHOWN", "Output", "add_output", "refusal_property", "result_property", "run_fields",
           "shown_result"]

Output = tuple[str, str, str]
"""``(result key, label, kind)``; kind: ``"str"``, ``"int"``, ``"float"``, ``"bool"``, ``"list"`` (of
strings, shown as chips), ``"lines"`` (of sentences, each shown whole), ``"json"`` (any JSON, shown as a tree),
``"md"`` (Markdown text), ``"raters"`` (rater names: chips, or for a crowd their count and the first few) or
``"per_rater"`` (a JSON table keyed by rater: a tree, or for a crowd its first few entries); see
:func:`shown_result`."""


def add_output(outputs: types.Object, name: str, label: str, kind: str) -> None:
    """One output property of kind ``kind`` (see :data:`Output`)."""
    if kind == "int":
        outputs.int(name, label=label)
    elif kind == "float":  # shown as text: three significant figures with trailing zeros (0.310)
        outputs.str(name, label=label)
    elif kind == "bool":
        outputs.bool(name, label=label)
    elif kind in ("list", "raters"):
        outputs.list(name, types.String(), label=label)
    elif kind == "lines":  # sentences to read whole (warnings): one Markdown line each, never cut to a chip
        outputs.list(name, types.String(), label=label, view=types.ListView(items=types.MarkdownView()))
    elif kind in ("json", "per_rater"):
        outputs.obj(name, label=label, view=types.JSONView())
    elif kind == "md":
        outputs.str(name, label=label, view=types.MarkdownView())
    else:
        outputs.str(name, label=label)


def _kind(value: Any) -> str:
    """The output kind that shows ``value``."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
        return "list"
    if isinstance(value, (dict, list, tuple)):
        return "json"
    return "str"


def _empty(value: Any) -> bool:
    """Whether ``value`` shows nothing: ``None``, empty text, an empty list or table (no warnings, ...)."""
    return value is None or (isinstance(value, (str, list, tuple, dict)) and not value)


def _shown_kind(kind: str, value: Any) -> str:
    """The kind that shows ``value`` of a key declared ``kind``: text where :func:`shown_result` summarised a
    list to a sentence."""
    return "str" if kind in ("list", "lines", "raters") and isinstance(value, str) else kind


def result_property(declared: Sequence[Output], results: Mapping[str, Any] | None = None,
                    label: str | None = None) -> types.Property:
    """The output form: the ``declared`` outputs (those the results hold, when results are given), then one
    for every other key of ``results``, labelled by its name; keys whose value is ``None``, empty text or an
    empty list or table are left out (a reason for an undefined value where the value is defined, no
    warnings, ...).

    Args:
        declared: the outputs the operator always returns, in the order to show them.
        results: the operator's result (FiftyOne's ``ctx.results`` when the App resolves the output; empty
            or ``None`` when it resolves the form without one).
        label: the output form's title.
    """
    outputs = types.Object()
    results = results if isinstance(results, Mapping) else {}
    if results.get(REFUSED):
        return refusal_property(str(results[REFUSED]))
    for name, text, kind in declared:
        if not results or not _empty(results.get(name)):  # an empty value is left out, not shown blank
            add_output(outputs, name, text, _shown_kind(kind, results.get(name)))
    known = {name for name, _, _ in declared}
    for name, value in results.items():
        if name not in known and not _empty(value):  # e.g. "global reason" where α is defined
            add_output(outputs, name, name.replace("_", " "), _kind(value))
    return types.Property(outputs, view=types.View(label=label) if label else None)


def run_fields(info: Mapping[str, Any]) -> list[str]:
    """The fields a run wrote, as ``info`` (:func:`agreement.fo.runs.store.get_agreement_run_info`) records them:
    its sample fields, its frame fields (``frames.<field>``, a run on video frames), then its label attributes
    as ``field.attribute``."""
    return (list(info.get("sample_fields") or []) + [f"frames.{f}" for f in info.get("frame_fields") or []]
            + [f"{lf}.{a}" for lf, a in info.get("label_attrs") or []])


#: A list of raters or a table per rater of more entries than this is summarised in what the App shows
#: (:func:`shown_result`) ...
LONG = 25
#: ... to this many of its first entries, and the count of the others.
SHOWN = 10


def _summarised(value: Any, kind: str) -> Any:
    """``value`` (of a key declared ``kind``) as the App shows it: rater names (``"raters"``), when more than
    :data:`LONG`, as one sentence (their count and the first :data:`SHOWN`); a table per rater
    (``"per_rater"``) as its first :data:`SHOWN` entries and one saying how many more; anything else as it
    is."""
    if kind == "raters" and isinstance(value, (list, tuple)) and len(value) > LONG:
        return f"{len(value):,} raters: {', '.join(map(str, value[:SHOWN]))}, … and {len(value) - SHOWN:,} more"
    if kind == "per_rater" and isinstance(value, Mapping) and len(value) > LONG:
        first = dict(list(value.items())[:SHOWN])
        return {**first, "…": f"and {len(value) - SHOWN:,} more raters (every one in the operator's Python "
                              "result)"}
    return value


def shown_result(declared: Sequence[Output], result: Mapping[str, Any]) -> dict:
    """What the App shows of ``result``: every key, the long lists of raters and tables per rater summarised
    (:func:`_summarised`, by the kind each key is declared). The result the operator returns to Python
    callers is not changed."""
    kinds = {name: kind for name, _, kind in declared}
    return {k: _summarised(v, kinds.get(k, "")) for k, v in result.items()}


def refusal_property(message: str) -> types.Property:
    """The output of a refused request: an error notice whose text is the refusal's whole message."""
    outputs = types.Object()
    outputs.view("refusal", types.Error(label="Not run: the operator refused these parameters",
                                        description=message))
    return types.Property(outputs, view=types.View(label="Not run"))
