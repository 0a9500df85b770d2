"""The operator of every declared method, made from its declaration (:mod:`agreement.fo.declaration`).

The form is the shared rater layout, the method's parameters (each with its
label, help, default and range or choices; shown when its ``show_if``
holds), the shared execution options of a streamed method, and the run key;
``execute`` runs :func:`agreement.fo.declaration.run_declared` with progress;
the output shows the declared headline numbers.
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
from .python_call import AgreementOperator

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


def operator_class(decl: MethodDeclaration) -> type[AgreementOperator]:
    """The operator class of a declared method."""

    class DeclaredOperator(AgreementOperator):
        computes_run = True
        shared_params = True
        declaration = decl

        @property
        def config(self):
            return compute_config(decl.operator, decl.label, decl.description)

        def resolve_input(self, ctx):
            inputs = types.Object()
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
            return execute_with_progress(
                ctx, lambda progress: {"key": key, **run_declared(decl, ctx.view, key, progress=progress, **kwargs)},
                reload_dataset=True)

        def resolve_delegation(self, ctx):
            return ctx.params.get("delegate", None)

        def resolve_output(self, ctx):
            outputs = types.Object()
            for name, label, kind in decl.outputs:
                {"int": outputs.int, "str": outputs.str}.get(kind, outputs.float)(name, label=label)
            return types.Property(outputs)

    name = "".join(part.title() for part in decl.operator.split("_"))
    DeclaredOperator.__name__ = DeclaredOperator.__qualname__ = name
    return DeclaredOperator


def declared_operators() -> list[type[AgreementOperator]]:
    """One operator class per declared method (:func:`agreement.fo.methods.declarations`)."""
    return [operator_class(d) for d in declarations()]
