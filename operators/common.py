"""Shared pieces of the operators: parameter names, form fragments, error reporting.

Operators are thin: they read ``ctx.params``, call the bridge, and return a
flat dict. Parameter names are shared across operators (see the README).
"""

from __future__ import annotations

import fiftyone.operators.types as types

from agreement.fo.runs import list_agreement_runs


class OperatorInputError(ValueError):
    """A parameter is missing or invalid; the message says which and why."""


def require(params: dict, name: str, what: str):
    value = params.get(name)
    if value in (None, "", []):
        raise OperatorInputError(f"parameter {name!r} is required: {what}")
    return value


def rater_layout_kwargs(params: dict) -> dict:
    """``fields`` (one label field per rater) or ``field`` + ``rater_attr`` + ``raters_field``."""
    fields = params.get("fields")
    field = params.get("field")
    if fields and field:
        raise OperatorInputError("give either `fields` (one label field per rater) or `field` with `rater_attr`, not both")
    if fields:
        if isinstance(fields, str):
            fields = [f.strip() for f in fields.split(",") if f.strip()]
        return {"fields": list(fields)}
    if field:
        return {
            "field": field,
            "rater_attr": params.get("rater_attr") or "annotator",
            "raters_field": params.get("raters_field") or None,
        }
    raise OperatorInputError("give `fields` (one label field per rater) or `field` with `rater_attr`")


def run_key_input(inputs: types.Object, ctx, label: str = "Run key") -> None:
    """A run key field that shows the existing runs in its description."""
    existing = list_agreement_runs(ctx.dataset) if ctx.dataset is not None else []
    inputs.str(
        "key",
        required=True,
        label=label,
        description=(
            "Name of the run; results are written to fields named <key>_...; "
            + (f"existing runs: {', '.join(existing)}" if existing else "this dataset has no agreement runs yet")
        ),
    )


def existing_run_choice(inputs: types.Object, ctx, name: str = "key", label: str = "Run") -> list[str]:
    """A dropdown of this plugin's runs on the current dataset."""
    keys = list_agreement_runs(ctx.dataset) if ctx.dataset is not None else []
    if not keys:
        inputs.view(
            "no_runs",
            types.Warning(
                label="No agreement runs",
                description="This dataset has no agreement runs yet: run one of the compute operators first.",
            ),
        )
        return keys
    choices = types.DropdownView()
    for k in keys:
        choices.add_choice(k, label=k)
    inputs.enum(name, keys, required=True, label=label, view=choices, default=keys[0])
    return keys
