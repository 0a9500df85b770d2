"""What an operator shows when it ends: one output property per key of its result.

Each operator declares the result keys it always returns, with their labels
and kinds (:data:`Output`); :func:`result_property` makes FiftyOne's output
form of those, then of every other key the actual result holds (a method's
further summary numbers, ...), so that nothing the operator returned is left
out of what the App shows.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import fiftyone.operators.types as types

__all__ = ["Output", "result_property", "add_output", "run_fields"]

Output = tuple[str, str, str]
"""``(result key, label, kind)``; kind: ``"str"``, ``"int"``, ``"float"``, ``"bool"``, ``"list"`` (of
strings, shown as chips), ``"lines"`` (of sentences, each shown whole), ``"json"`` (any JSON, shown as a tree) or ``"md"`` (Markdown text)."""


def add_output(outputs: types.Object, name: str, label: str, kind: str) -> None:
    """One output property of kind ``kind`` (see :data:`Output`)."""
    if kind == "int":
        outputs.int(name, label=label)
    elif kind == "float":
        outputs.float(name, label=label)
    elif kind == "bool":
        outputs.bool(name, label=label)
    elif kind == "list":
        outputs.list(name, types.String(), label=label)
    elif kind == "lines":  # sentences to read whole (warnings): one Markdown line each, never cut to a chip
        outputs.list(name, types.String(), label=label, view=types.ListView(items=types.MarkdownView()))
    elif kind == "json":
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


def result_property(declared: Sequence[Output], results: Mapping[str, Any] | None = None,
                    label: str | None = None) -> types.Property:
    """The output form: the ``declared`` outputs (those the results hold, when results are given), then one
    for every other key of ``results``, labelled by its name; keys whose value is ``None`` or empty text are
    left out (a reason for an undefined value where the value is defined, ...).

    Args:
        declared: the outputs the operator always returns, in the order to show them.
        results: the operator's result (FiftyOne's ``ctx.results`` when the App resolves the output; empty
            or ``None`` when it resolves the form without one).
        label: the output form's title.
    """
    outputs = types.Object()
    results = results if isinstance(results, Mapping) else {}
    for name, text, kind in declared:
        if not results or results.get(name) not in (None, ""):  # an empty value is left out, not shown blank
            add_output(outputs, name, text, kind)
    known = {name for name, _, _ in declared}
    for name, value in results.items():
        if name not in known and value not in (None, ""):  # e.g. "global reason" where α is defined
            add_output(outputs, name, name.replace("_", " "), _kind(value))
    return types.Property(outputs, view=types.View(label=label) if label else None)


def run_fields(info: Mapping[str, Any]) -> list[str]:
    """The fields a run wrote, as ``info`` (:func:`agreement.fo.runs.get_agreement_run_info`) records them:
    its sample fields, its frame fields (``frames.<field>``, a run on video frames), then its label attributes
    as ``field.attribute``."""
    return (list(info.get("sample_fields") or []) + [f"frames.{f}" for f in info.get("frame_fields") or []]
            + [f"{lf}.{a}" for lf, a in info.get("label_attrs") or []])
