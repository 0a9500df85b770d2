"""The operator of every declared method, made from its declaration (:mod:`agreement.fo.declaration`).

The form is the shared rater layout, the method's parameters (each with its
label, help, default and range or choices; shown when its ``show_if``
holds), the shared execution options of a streamed method, and the run key;
``execute`` runs :func:`agreement.fo.declaration.run_declared` with progress;
the output shows the declared headline numbers and the run's ``warnings``
(degenerate designs, undefined numbers, the method's own: a list of
sentences, :mod:`agreement.fo.run_warnings`), as the import operators show
theirs.
"""

from __future__ import annotations

import fiftyone.operators.types as types

from agreement.fo.declaration import MethodDeclaration, Param, run_declared
from agreement.fo.methods import declarations

from .common import (
    compute_config,
    execute_with_progress,
    execution_inputs,
    execution_kwargs,
    rater_layout_inputs,
    rater_layout_kwargs,
    require,
    run_inputs,
)
from .outputs import result_property, run_fields
from .python_call import AgreementOperator
from .target import target_input, target_record, target_view

__all__ = ["declared_operators", "operator_class"]


def _param_input(inputs: types.Object, p: Param, params: dict) -> None:
    """The form field of one parameter (nothing for a Python-only one, or one its ``show_if`` hides)."""
    if not p.form or (p.show_if is not None and not p.show_if(params)):
        return
    kw = dict(default=p.default if p.form_default is None else p.form_default, label=p.label, description=p.help,
              required=False)
    if p.choices:
        view = types.RadioGroup() if p.radio else types.DropdownView(multiple=p.kind is list)
        for c in p.choices:
            if p.radio:
                view.add_choice(c, label=p.choice_help.get(c) or c)
            else:
                view.add_choice(c, label=c, description=p.choice_help.get(c))
        if p.kind is list:
            inputs.list(p.name, types.String(), view=view, **kw)
        else:
            inputs.enum(p.name, list(p.choices), view=view, **kw)
    elif p.kind in (float, int):
        bounds = {k: v for k, v in (("min", p.low), ("max", p.high)) if v is not None}
        (inputs.float if p.kind is float else inputs.int)(p.name, **bounds, **kw)
    elif p.kind is bool:
        inputs.bool(p.name, **kw)
    elif p.kind is list:
        inputs.list(p.name, types.String() if p.item is str else types.Number(), **kw)
    else:
        inputs.str(p.name, **kw)


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
    from agreement.fo.declaration import run_target

    def compute(progress) -> dict:
        summary = run_declared(decl, samples, key, progress=progress, target=record, **kwargs)
        return {"key": key, **summary, "target": run_target(record)}

    return compute


def _with_fields(samples, result: dict) -> dict:
    """What the App shows of a run's result: the result, and the fields the run wrote (from its run info)."""
    from agreement.fo.runs import get_agreement_run_info

    return {**result, "fields_written": run_fields(get_agreement_run_info(samples, result["key"]))}


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
            rater_layout_inputs(inputs, ctx, decl.label_types or None)
            for p in decl.params:
                _param_input(inputs, p, ctx.params)
            if decl.streams:
                execution_inputs(inputs, ctx)
            run_inputs(inputs, ctx, default_prefix=decl.key_prefix)
            title = decl.label.split(": ", 1)[-1]
            return types.Property(inputs, view=types.View(label=title[:1].upper() + title[1:]))

        def execute(self, ctx):
            p = ctx.params
            key = require(p, "key", "a name for this run")
            kwargs = dict(**rater_layout_kwargs(p), **_given(decl, p), **execution_kwargs(p),
                          overwrite=bool(p.get("overwrite", False)))
            samples = target_view(ctx)
            return execute_with_progress(ctx, _compute(decl, samples, key, target_record(ctx, samples), kwargs),
                                         reload_dataset=True, outputs=lambda r: result_property(self.outputs, r),
                                         show=lambda r: _with_fields(samples, r))

        def resolve_delegation(self, ctx):
            return ctx.params.get("delegate", None)

    name = "".join(part.title() for part in decl.operator.split("_"))
    DeclaredOperator.__name__ = DeclaredOperator.__qualname__ = name
    return DeclaredOperator


def declared_operators() -> list[type[AgreementOperator]]:
    """One operator class per declared method (:func:`agreement.fo.methods.declarations`)."""
    return [operator_class(d) for d in declarations()]
