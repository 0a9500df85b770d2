"""The operator of every declared method, made from its declaration (:mod:`agreement.fo.runs.declaration`).

The form is the shared rater layout (:func:`rater_layout_inputs`: the box
policy only for label types with geometry), the method's parameters (each
with its label, help, default and range or choices; shown when its
``show_if`` holds and it applies to the rater fields' label type, a list of
values found in the data offered in order:
:attr:`agreement.fo.runs.declaration.Param.form_values`), the
shared execution options of a streamed method, and the run key;
``execute`` runs :func:`agreement.fo.runs.declaration.run_declared` with progress;
the output shows the declared headline numbers and the run's ``warnings``
(degenerate designs, undefined numbers, the method's own: a list of
sentences, :mod:`agreement.core.design_warnings`), as the import operators show
theirs, without counts of repaired boxes for fields that have none.
"""

from __future__ import annotations

from typing import NamedTuple

import fiftyone.operators.types as types

from agreement.fo.methods import declarations
from agreement.fo.runs.declaration import MethodDeclaration, Param, run_declared

from .common import (
    compute_config,
    execute_with_progress,
    long_run_execution_options,
    long_run_notice,
    require,
    run_inputs,
)
from .errors import OperatorInputError
from .outputs import result_property, run_fields, shown_result
from .python_call import AgreementOperator
from .target import target_input, target_record, target_view

__all__ = ["ChosenRaters", "declared_operators", "execution_inputs", "execution_kwargs", "fields_label_type",
           "has_geometry", "operator_class", "rater_layout_inputs", "rater_layout_kwargs"]


# ------------------------------------------------------------------ the shared rater layout and execution options


def rater_layout_kwargs(params: dict) -> dict:
    """How the raters' labels are read, from the shared parameter names.

    ``fields`` (one label field per rater) or ``field`` + ``rater_attr`` +
    ``raters_field`` (default: the assignment recorded on the dataset) +
    ``assume_crossed``; and ``box_policy`` (``"clip"``, ``"drop"``, ``"error"``).
    """
    from agreement.core.validation import BOX_POLICIES

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


class ChosenRaters(NamedTuple):
    """The rater fields a form has chosen (or preselected): their ``layout`` (``{"fields": [...]}`` or
    ``{"field": ..., "rater_attr": ...}``; empty before a choice) and their label type ``kind`` (``None``:
    not known yet)."""

    kind: type | None
    layout: dict


def rater_layout_inputs(inputs: types.Object, ctx, label_types: tuple | None = None) -> ChosenRaters:
    """Form fragment: the rater layout and its fields (only of ``label_types``), the raters found, the
    assignment (preselected from the dataset) and, where boxes are read, the box policy.

    Returns:
        The rater fields chosen (or preselected) and their label type. The box policy is offered only for a
        type with geometry (:func:`has_geometry`), or, before a choice, when the operator reads such a type.
    """
    from agreement.fo.storage.projection import LABEL_TYPES

    layout = _rater_layout_inputs(inputs, ctx, label_types)
    kind = fields_label_type(ctx.dataset, layout.get("fields") or ([layout["field"]] if layout else []))
    if ctx.dataset is not None and has_geometry((kind,) if kind is not None else label_types or tuple(LABEL_TYPES)):
        box_policy_input(inputs)
    return ChosenRaters(kind, layout)


def has_geometry(kinds) -> bool:
    """Whether any of the label types ``kinds`` is an instance type, with boxes (or polygons, keypoints,
    segments) that can lie past the image border: :data:`agreement.fo.storage.projection.LABEL_TYPES`; image-level
    classes, tags and masks have none."""
    from agreement.fo.storage.projection import LABEL_TYPES

    return any(k in LABEL_TYPES for k in kinds)


def fields_label_type(samples, names) -> type | None:
    """The label type of the rater fields ``names`` (of the first; ``None`` without one, or when it is not a
    label field: the run says why)."""
    from agreement.fo.storage.label_schema import field_label_type

    if samples is None or not names:
        return None
    try:
        return field_label_type(samples, names[0])
    except Exception:  # noqa: BLE001 - a form fragment: execution names the problem
        return None


def _rater_layout_inputs(inputs: types.Object, ctx, label_types: tuple | None = None) -> dict:
    """The layout's fields (see :func:`rater_layout_inputs`); returns the layout chosen or preselected
    (:attr:`ChosenRaters.layout`)."""
    from agreement.fo.storage.assignment import recorded_layout
    from agreement.fo.storage.label_schema import detect_raters, frame_label_fields, label_fields
    from agreement.fo.storage.projection import LABEL_TYPES

    dataset = ctx.dataset
    kinds = label_types or tuple(LABEL_TYPES)  # a video's frame fields too (frames.<field>: computed per frame)
    choices = label_fields(dataset, kinds) + frame_label_fields(dataset, kinds) if dataset is not None else []
    if not choices:
        names = ", ".join(t.__name__ for t in (label_types or tuple(LABEL_TYPES)))
        inputs.view("no_fields", types.Warning(
            label=f"No label fields of a fitting type ({names})",
            description=f"This dataset has no {names} fields to compare: import or add annotations first.",
        ))
        return {}
    layout = types.RadioGroup()
    layout.add_choice("fields", label="One label field per rater")
    layout.add_choice("attribute", label="One label field, rater in a label attribute")
    # SDK users may give `field` without `layout`: infer it; else the layout the dataset records
    recorded = recorded_layout(dataset)
    chosen = ctx.params.get("layout") or (
        "attribute" if ctx.params.get("field") and not ctx.params.get("fields") else
        recorded.get("layout") or "fields"
    )
    inputs.enum("layout", ["fields", "attribute"], default=chosen, label="Rater layout", view=layout)
    if chosen == "fields":
        dropdown = types.DropdownView(multiple=True)
        for name in choices:
            dropdown.add_choice(name, label=name)
        recorded_fields = [f for f in recorded.get("fields") or [] if f in choices]
        inputs.list("fields", types.String(), required=True, label="Rater fields",
                    description="One label field per rater (two or more)"
                    + ("; preselected: the rater fields this dataset records" if len(recorded_fields) > 1 else ""),
                    view=dropdown, default=recorded_fields if len(recorded_fields) > 1 else None)
        given = ctx.params.get("fields")
        given = [f.strip() for f in given.split(",")] if isinstance(given, str) else list(given or [])
        given = given or (recorded_fields if len(recorded_fields) > 1 else [])
        return {"fields": given} if given else {}
    dropdown = types.DropdownView()
    for name in choices:
        dropdown.add_choice(name, label=name)
    recorded_field = recorded.get("field") if recorded.get("field") in choices else None
    inputs.enum("field", choices, required=True, label="Label field", view=dropdown, default=recorded_field)
    inputs.str("rater_attr", default=recorded.get("rater_attr") or "annotator", label="Rater attribute",
               description="The label attribute that names the rater")
    field = ctx.params.get("field") or recorded_field
    if field:
        from .target import form_target_view

        samples = form_target_view(ctx)
        try:
            found = detect_raters(samples, field, ctx.params.get("rater_attr") or "annotator")
        except Exception:  # a bad field choice is reported on execution
            found = []
        where = "" if samples is dataset else f" in the chosen target ({samples.count():,} samples)"
        inputs.view("raters_found", types.Notice(
            label=f"Raters found{where}: {', '.join(found)}" if found else f"No labels carry this attribute{where}"
        ))
    _assignment_inputs(inputs, ctx, field)
    if not field:
        return {}
    return {"field": field, "rater_attr": ctx.params.get("rater_attr") or recorded.get("rater_attr") or "annotator"}


def _assignment_inputs(inputs: types.Object, ctx, field: str | None) -> None:
    """Form fragment: the assigned-raters field, preselected from what the dataset records."""
    from agreement.fo.storage.assignment import assignment_candidates, recorded_assignment

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


def execution_inputs(inputs: types.Object, ctx) -> None:
    """Form fragment of a streamed method: samples per shard, and the Dask backend when it is installed."""
    from agreement.fo.runs.distributed import dask_available
    from agreement.fo.runs.engine import DEFAULT_SHARD_SIZE

    inputs.int("shard_size", required=False, min=1, label="Samples per shard",
               description=f"Samples read, computed and written at a time (empty: chosen for the view, at most "
                           f"{DEFAULT_SHARD_SIZE:,}); memory "
                           "follows the shard size, the results are the same for any shard size")
    if not dask_available():
        return
    choice = types.RadioGroup()
    choice.add_choice("serial", label="here, shard after shard")
    choice.add_choice("dask", label="on a Dask cluster (the workers read and write the shards)")
    inputs.enum("backend", ["serial", "dask"], default="serial", label="Where to compute", view=choice)
    if ctx.params.get("backend") == "dask":
        inputs.str("dask_address", required=False, label="Scheduler address",
                   description="e.g. tcp://scheduler:8786 (its workers must reach this FiftyOne database); "
                               "empty: a local cluster started for the run")
        if not ctx.params.get("dask_address"):
            inputs.int("workers", default=2, min=1, label="Local worker processes")


def execution_kwargs(params: dict) -> dict:
    """``shard_size``, ``backend``, ``dask_address`` and ``workers`` from the form or the SDK (absent or empty:
    the defaults); the bridge validates them and names any problem."""
    out = {}
    size = params.get("shard_size")
    if size not in (None, ""):
        try:
            out["shard_size"] = int(size) if float(size) == int(size) else size
        except (TypeError, ValueError):
            out["shard_size"] = size
    out["backend"] = params.get("backend") or "serial"
    if params.get("dask_address"):
        out["dask_address"] = params["dask_address"]  # a scheduler given: the form's local worker count is moot
    elif params.get("workers") not in (None, ""):
        out["workers"] = params["workers"]  # without backend="dask" the bridge says that it needs it
    return out


def box_policy_input(inputs: types.Object) -> None:
    """Form fragment: what to do with boxes past the image border."""
    choice = types.RadioGroup()
    choice.add_choice("clip", label="clip to the image (a box entirely outside becomes a zero-area box on the border)")
    choice.add_choice("drop", label="drop them")
    choice.add_choice("error", label="refuse the run")
    inputs.enum("box_policy", ["clip", "drop", "error"], default="clip", label="Boxes past the image border",
                view=choice, description="Every repair is counted per rater in the run results")



# ------------------------------------------------------------------ the method's own parameters


def _param_input(inputs: types.Object, p: Param, ctx, chosen: ChosenRaters) -> None:
    """The form field of one parameter: nothing for a Python-only one, one its ``show_if`` hides, or one that
    does not apply to the label type of the rater fields chosen; only the choices that apply to it."""
    params = ctx.params
    if not p.form or (p.show_if is not None and not p.show_if(params)) or not p.applies_to(chosen.kind):
        return
    kw = dict(default=p.default if p.form_default is None else p.form_default, label=p.label, description=p.help,
              required=False)
    if p.form_values is not None:
        _values_input(inputs, p, ctx, chosen, kw)
        return
    choices = p.choices_for(chosen.kind)
    if choices:
        view = types.RadioGroup() if p.radio else types.DropdownView(multiple=p.kind is list)
        for c in choices:
            if p.radio:
                view.add_choice(c, label=p.choice_help.get(c) or c)
            else:
                view.add_choice(c, label=c, description=p.choice_help.get(c))
        if p.kind is list:
            inputs.list(p.name, types.String(), view=view, **kw)
        else:
            inputs.enum(p.name, list(choices), view=view, **kw)
    elif p.kind in (float, int):
        bounds = {k: v for k, v in (("min", p.low), ("max", p.high)) if v is not None}
        (inputs.float if p.kind is float else inputs.int)(p.name, **bounds, **kw)
    elif p.kind is bool:
        inputs.bool(p.name, **kw)
    elif p.kind is list:
        inputs.list(p.name, types.String() if p.item is str else types.Number(float=True), **kw)
    else:
        inputs.str(p.name, **kw)


def _values_input(inputs: types.Object, p: Param, ctx, chosen: ChosenRaters, kw: dict) -> None:
    """A list parameter whose values come from the data (:attr:`Param.form_values`, e.g. the classes in their
    order): a multiple choice of the values found, in the order picked, filled in when the data tells the
    order; marked invalid, with the reason the run would give, while the value is missing or wrong."""
    from .target import form_target_view

    if not chosen.layout or p.form_values is None:
        return  # no rater field chosen yet (or no values to read): nothing to read the values from
    try:
        found = p.form_values(form_target_view(ctx), chosen.layout, ctx.params)
    except Exception:  # noqa: BLE001 - a form fragment: execution names the problem with the fields
        return
    view = types.DropdownView(multiple=True)
    for c in found.choices:
        view.add_choice(c, label=c)
    listed = ", ".join(map(str, found.choices))
    prop = inputs.list(p.name, types.String(), view=view, **{
        **kw, "default": found.default,
        "description": f"{p.help}. Found: {listed}" + ("" if found.default is not None else
                                                       " (pick each, lowest first)")})
    if found.problem:
        prop.invalid, prop.error_message = True, found.problem


def _given(decl: MethodDeclaration, params: dict) -> dict:
    """The method's keyword arguments from what the form or the caller gave (empty values: the default)."""
    given = {p.name: params[p.name] for p in decl.params if params.get(p.name) not in (None, "", [])}
    return decl.from_form(given)


def _outputs(decl: MethodDeclaration) -> tuple:
    """The result keys every run of the method returns (the key, the declared headline numbers, the run's
    ``warnings``, the target), and the fields written, which the App shows beside them."""
    kinds = {"int": "int", "str": "str"}
    return (("key", "Run", "str"), *((n, label, kinds.get(k, "float")) for n, label, k in decl.outputs),
            ("warnings", "Warnings", "lines"), ("target", "Computed on", "str"),
            ("fields_written", "Fields written", "list"))


def _compute(decl: MethodDeclaration, samples, key: str, record: dict, kwargs: dict):
    """The operator's work: the run on ``samples`` (its target recorded), then its result: the key, the
    headline numbers and what it was computed on."""
    from agreement.fo.runs.declaration import run_target

    def compute(progress) -> dict:
        summary = run_declared(decl, samples, key, progress=progress, target=record, **kwargs)
        return {"key": key, **summary, "target": run_target(record)}

    return compute


def _shown(samples, result: dict, declared: tuple, kind: type | None) -> dict:
    """What the App shows of a run's result: the result, and the fields the run wrote (from its run info);
    long lists summarised (:func:`operators.outputs.shown_result`); for rater fields without geometry
    (classes, tags, masks: :func:`operators.common.has_geometry`), no zero count of repaired boxes."""
    from agreement.core.validation import RepairReport
    from agreement.fo.runs.store import get_agreement_run_info

    repairs = () if kind is None or has_geometry((kind,)) else tuple(RepairReport().counts())
    result = {k: v for k, v in result.items() if not (k in repairs and not v)}
    return shown_result(declared, {**result, "fields_written": run_fields(get_agreement_run_info(samples,
                                                                                                  result["key"]))})


def operator_class(decl: MethodDeclaration) -> type[AgreementOperator]:
    """The operator class of a declared method."""

    class DeclaredOperator(AgreementOperator):
        computes_run = True
        shared_params = True
        takes_target = True
        declaration = decl
        outputs = _outputs(decl)

        @property
        def config(self):
            return compute_config(decl.operator, decl.label, decl.description)

        def resolve_input(self, ctx):
            inputs = types.Object()
            target_input(inputs, ctx, "Compute on")
            chosen = rater_layout_inputs(inputs, ctx, decl.label_types or None)
            for p in decl.params:
                _param_input(inputs, p, ctx, chosen)
            if decl.streams:
                execution_inputs(inputs, ctx)
            long_run_notice(inputs, ctx, decl.operator)
            run_inputs(inputs, ctx, default_prefix=decl.key_prefix)
            title = decl.label.split(": ", 1)[-1]
            return types.Property(inputs, view=types.View(label=title[:1].upper() + title[1:]))

        def execute(self, ctx):
            p = ctx.params
            key = require(p, "key", "a name for this run")
            kwargs = dict(**rater_layout_kwargs(p), **_given(decl, p), **execution_kwargs(p),
                          overwrite=bool(p.get("overwrite", False)))
            samples = target_view(ctx)
            kind = fields_label_type(samples, kwargs.get("fields") or [kwargs.get("field")])
            return execute_with_progress(ctx, _compute(decl, samples, key, target_record(ctx, samples), kwargs),
                                         reload_dataset=True, outputs=lambda r: result_property(self.outputs, r),
                                         show=lambda r: _shown(samples, r, self.outputs, kind))

        def resolve_delegation(self, ctx):
            return ctx.params.get("delegate", None)

        def resolve_execution_options(self, ctx):
            return long_run_execution_options(ctx, decl.operator)

    name = "".join(part.title() for part in decl.operator.split("_"))
    DeclaredOperator.__name__ = DeclaredOperator.__qualname__ = name
    return DeclaredOperator


def declared_operators() -> list[type[AgreementOperator]]:
    """One operator class per declared method (:func:`agreement.fo.methods.declarations`)."""
    return [operator_class(d) for d in declarations()]
