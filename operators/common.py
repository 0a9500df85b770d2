"""Shared pieces of the operators: parameter names, form fragments, error reporting.

Operators are thin: they read ``ctx.params``, call the bridge, and return a
flat dict. Parameter names are shared across operators (see the README).
"""

from __future__ import annotations

import fiftyone.operators.types as types

from agreement.fo.runs import list_agreement_runs


def compute_config(name: str, label: str, description: str):
    """The config of a compute operator: dynamic form, immediate or delegated execution."""
    import fiftyone.operators as foo

    return foo.OperatorConfig(
        name=name,
        label=label,
        description=description,
        dynamic=True,
        allow_immediate_execution=True,
        allow_delegated_execution=True,
    )


def progress_reporter(ctx):
    """A ``callback(fraction, label)`` that reports progress to the App (or the delegated run)."""
    return lambda fraction, label: ctx.set_progress(progress=fraction, label=label)


def refresh_app(ctx) -> None:
    """Reloads the App's dataset after new fields were written (not for delegated runs)."""
    if not ctx.delegated:
        ctx.trigger("reload_dataset")


class OperatorInputError(ValueError):
    """A parameter is missing or invalid; the message says which and why."""


def require(params: dict, name: str, what: str):
    value = params.get(name)
    if value in (None, "", []):
        raise OperatorInputError(f"parameter {name!r} is required: {what}")
    return value


def rater_layout_kwargs(params: dict) -> dict:
    """How the raters' labels are read, from the shared parameter names.

    ``fields`` (one label field per rater) or ``field`` + ``rater_attr`` +
    ``raters_field`` (default: the assignment recorded on the dataset) +
    ``assume_crossed``; and ``box_policy`` (``"clip"``, ``"drop"``, ``"error"``).
    """
    from agreement.validation import BOX_POLICIES

    fields = params.get("fields")
    field = params.get("field")
    box_policy = params.get("box_policy") or "clip"
    if box_policy not in BOX_POLICIES:
        raise OperatorInputError(f"box_policy must be one of {', '.join(BOX_POLICIES)}, got {box_policy!r}")
    if fields and field:
        raise OperatorInputError("give either `fields` (one label field per rater) or `field` with `rater_attr`, not both")
    if fields:
        if isinstance(fields, str):
            fields = [f.strip() for f in fields.split(",") if f.strip()]
        return {"fields": list(fields), "box_policy": box_policy}
    if field:
        return {
            "field": field,
            "rater_attr": params.get("rater_attr") or "annotator",
            "raters_field": params.get("raters_field") or None,
            "assume_crossed": bool(params.get("assume_crossed", False)),
            "box_policy": box_policy,
        }
    raise OperatorInputError("give `fields` (one label field per rater) or `field` with `rater_attr`")


def run_key_input(inputs: types.Object, ctx, label: str = "Run key") -> None:
    """A run key field that shows the existing runs in its description."""
    from agreement.fo.runs import RunError, validate_key

    existing = list_agreement_runs(ctx.dataset) if ctx.dataset is not None else []
    prop = inputs.str(
        "key",
        required=True,
        label=label,
        description=(
            "Name of the run; results are written to fields named <key>_...; "
            + (f"existing runs: {', '.join(existing)}" if existing else "this dataset has no agreement runs yet")
        ),
    )
    key = ctx.params.get("key")
    if key:
        try:
            validate_key(key)
        except RunError as e:
            prop.invalid = True
            prop.error_message = str(e)


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


def rater_layout_inputs(inputs: types.Object, ctx, label_types: tuple | None = None) -> None:
    """Form fragment: the rater layout and its fields (only of ``label_types``), the raters found, the
    assignment (preselected from the dataset) and the box policy."""
    _rater_layout_inputs(inputs, ctx, label_types)
    if ctx.dataset is not None:
        box_policy_input(inputs)


def _rater_layout_inputs(inputs: types.Object, ctx, label_types: tuple | None = None) -> None:
    from agreement.fo.reading import LABEL_TYPES, detect_raters, label_fields

    dataset = ctx.dataset
    choices = label_fields(dataset, label_types or tuple(LABEL_TYPES)) if dataset is not None else []
    if not choices:
        kinds = ", ".join(t.__name__ for t in (label_types or tuple(LABEL_TYPES)))
        inputs.view("no_fields", types.Warning(
            label=f"No label fields of a fitting type ({kinds})",
            description="This dataset has no Detections or Polylines fields to compare: import or add annotations first.",
        ))
        return
    layout = types.RadioGroup()
    layout.add_choice("fields", label="One label field per rater")
    layout.add_choice("attribute", label="One label field, rater in a label attribute")
    # SDK users may give `field` without `layout`: infer it; else the layout recorded at import
    imported = (dataset.info or {}).get("iaa_coco") or {}
    chosen = ctx.params.get("layout") or (
        "attribute" if ctx.params.get("field") and not ctx.params.get("fields") else
        imported.get("layout") if imported.get("layout") in ("fields", "attribute") else "fields"
    )
    inputs.enum("layout", ["fields", "attribute"], default=chosen, label="Rater layout", view=layout)
    if chosen == "fields":
        dropdown = types.DropdownView(multiple=True)
        for name in choices:
            dropdown.add_choice(name, label=name)
        inputs.list("fields", types.String(), required=True, label="Rater fields",
                    description="One label field per rater (two or more)", view=dropdown)
        return
    dropdown = types.DropdownView()
    for name in choices:
        dropdown.add_choice(name, label=name)
    recorded_field = imported.get("field") if imported.get("field") in choices else None
    inputs.enum("field", choices, required=True, label="Label field", view=dropdown, default=recorded_field)
    inputs.str("rater_attr", default="annotator", label="Rater attribute",
               description="The label attribute that names the rater")
    field = ctx.params.get("field") or recorded_field
    if field:
        try:
            found = detect_raters(ctx.view, field, ctx.params.get("rater_attr") or "annotator")
        except Exception:  # a bad field choice is reported on execution
            found = []
        inputs.view("raters_found", types.Notice(
            label=f"Raters found: {', '.join(found)}" if found else "No labels carry this attribute"
        ))
    _assignment_inputs(inputs, ctx, field)


def _assignment_inputs(inputs: types.Object, ctx, field: str | None) -> None:
    """Form fragment: the assigned-raters field, preselected from what the dataset records."""
    from agreement.fo.reading import assignment_candidates, recorded_assignment

    dataset = ctx.dataset
    list_fields = assignment_candidates(dataset)
    recorded = recorded_assignment(dataset, field).raters_field if field else None
    if list_fields:
        inputs.enum(
            "raters_field", list_fields, required=False, default=recorded, label="Assigned-raters field",
            description=(f"Recorded on this dataset: {recorded!r} (used unless you choose another)" if recorded else
                         "Sample-level list of the raters assigned to each sample; without it every rater is "
                         "assumed to have looked at every sample"),
        )
    if not recorded and not ctx.params.get("raters_field"):
        inputs.bool(
            "assume_crossed", default=False, label="Every rater looked at every sample (fully crossed)",
            description="Without an assigned-raters field, runs on sparse data (each sample labelled by a few of "
                        "many raters) are refused; tick this only if every rater really saw every sample",
        )


def box_policy_input(inputs: types.Object) -> None:
    """Form fragment: what to do with boxes past the image border."""
    choice = types.RadioGroup()
    choice.add_choice("clip", label="clip to the image (a box entirely outside becomes a zero-area box on the border)")
    choice.add_choice("drop", label="drop them")
    choice.add_choice("error", label="refuse the run")
    inputs.enum("box_policy", ["clip", "drop", "error"], default="clip", label="Boxes past the image border",
                view=choice, description="Every repair is counted per rater in the run results")


def run_inputs(inputs: types.Object, ctx) -> None:
    """Form fragment: key, overwrite."""
    from agreement.fo.runs import list_agreement_runs

    run_key_input(inputs, ctx)
    key = ctx.params.get("key")
    if key and ctx.dataset is not None and key in list_agreement_runs(ctx.dataset):
        inputs.bool("overwrite", default=False, label=f"Replace the existing run {key!r}")


def similarity_3d_inputs(inputs: types.Object, ctx, param: str) -> None:
    """Form fragment: the scene-unit parameter of the chosen 3D similarity (``ctx.params[param]``)."""
    if ctx.params.get(param) == "point3d":
        inputs.float("point3d_scale", default=2.0, min=0.0, label="3D point falloff scale (scene units)",
                     description="Similarity exp(−d²/(2·scale²)): at d = scale it is 0.61")
    if ctx.params.get(param) == "polyline3d_f1":
        inputs.float("polyline3d_tolerance", default=0.5, min=0.0, label="3D polyline tolerance (scene units)",
                     description="A point of one line counts as matched within this distance of the other")


def similarity_3d_kwargs(params: dict) -> dict:
    """``point3d_scale`` and ``polyline3d_tolerance`` from the operator parameters."""
    return {
        "point3d_scale": float(params.get("point3d_scale", 2.0)),
        "polyline3d_tolerance": float(params.get("polyline3d_tolerance", 0.5)),
    }
