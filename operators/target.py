"""The samples an operator works on: FiftyOne's target selector, the whole dataset unless the user chooses.

The compute and export operators offer FiftyOne's own target choice (whole
dataset, current view with its sidebar filters, selected samples), with the
dataset as default and each choice's sample count in its description; a
request that names no target runs on the whole dataset, whatever view the App
has loaded. A Python call (``foo.get_operator(uri)(dataset_or_view)``) runs on
the collection it is given (:mod:`operators.python_call` names the target).
The run records which it was (:func:`target_record`), and
:func:`agreement.fo.runs.declaration.run_target` says it in a sentence.
"""

from __future__ import annotations

import inspect

import fiftyone.operators.types as types

from .errors import OperatorInputError

__all__ = ["TARGET_PARAM", "CALLER_KEY", "normalize_target", "target_input", "given_target", "chosen_target",
           "target_view",
           "form_target_view", "target_record"]

TARGET_PARAM = "view_target"
CALLER_KEY = "iaa_caller"  # request key set by a Python call (operators.python_call), "python"

DATASET, BASE_VIEW, CURRENT_VIEW, SELECTED = "DATASET", "BASE_VIEW", "CURRENT_VIEW", "SELECTED_SAMPLES"
#: the targets the operators take, with the name a run records
_NAMES = {DATASET: "dataset", BASE_VIEW: "base view", CURRENT_VIEW: "current view", SELECTED: "selected samples"}
_ALIASES = {"WHOLE_DATASET": DATASET, "ENTIRE_DATASET": DATASET, "ALL": DATASET, "VIEW": CURRENT_VIEW,
            "SELECTED": SELECTED, "SELECTION": SELECTED, "CURRENT_SELECTION": SELECTED}


def normalize_target(value) -> str | None:
    """FiftyOne's name of a target (``"DATASET"``, ``"CURRENT_VIEW"``, ``"SELECTED_SAMPLES"``, ``"BASE_VIEW"``)
    from it or a plain one (``"dataset"``, ``"current view"``, ``"view"``, ``"selected samples"``); ``None``
    for none given.

    Raises:
        OperatorInputError: a value that names no target (the message lists those there are).
    """
    if value in (None, ""):
        return None
    name = str(value).strip().upper().replace(" ", "_").replace("-", "_") if isinstance(value, str) else None
    name = _ALIASES.get(name, name) if name is not None else None
    if name not in _NAMES:
        raise OperatorInputError(
            f"unknown target {value!r}: choose 'dataset' (the whole dataset, the default), 'current view' or "
            f"'selected samples' (FiftyOne's {', '.join(_NAMES)})")
    return name


def _default(ctx) -> str:
    view = ctx.view
    return BASE_VIEW if view is not None and getattr(view, "_is_generated", False) else DATASET


def given_target(ctx):
    """The target the request names, as given: in the operator's parameters, or at the request level (where
    FiftyOne versions that treat the target as a system input move it)."""
    given = ctx.params.get(TARGET_PARAM)
    return given if given not in (None, "") else ctx.request_params.get(TARGET_PARAM)


def chosen_target(ctx) -> str:
    """The target the request names (normalized), else the whole dataset (its base view for a patches,
    frames or clips view)."""
    return normalize_target(given_target(ctx)) or _default(ctx)


def _count(samples) -> int:
    try:
        return samples.count()
    except Exception:  # noqa: BLE001 - a description only
        return 0


def _descriptions(ctx, action: str) -> dict:
    """The choices' descriptions: what each is, with its number of samples."""
    total = _count(ctx.dataset)
    out = {"dataset_description": f"{action} the whole dataset ({total:,} samples)"}
    view = ctx.view
    if view is not None:
        n = _count(view)
        out["current_view_description"] = (
            f"{action} the current view ({n:,} of {total:,} samples, with its sidebar filters)")
        if getattr(view, "_is_generated", False):
            out["base_view_description"] = f"{action} the base view ({_count(view._base_view):,} samples)"
    selected = list(getattr(ctx, "selected", None) or [])
    if selected:
        out["selected_samples_description"] = f"{action} the {len(selected):,} selected samples"
    return out


def _supported(kwargs: dict) -> dict:
    """``kwargs`` without the keywords this FiftyOne's ``Object.view_target`` does not name (FiftyOne 1.0
    has fewer; some versions pass unknown ones on)."""
    params = inspect.signature(types.Object.view_target).parameters
    return {k: v for k, v in kwargs.items() if k in params}


def target_input(inputs: types.Object, ctx, action: str = "Compute on") -> None:
    """Form fragment: FiftyOne's target choice, the whole dataset by default, each choice with its size.

    A target given that names no target, or the selected samples with none selected, marks the choice
    invalid with the reason (the App shows it; an SDK call is refused with it).
    """
    if ctx.dataset is None or not hasattr(types.Object, "view_target"):
        return  # a FiftyOne without the selector: the operator runs on the dataset (or the target given)
    default = _default(ctx)
    prop = inputs.view_target(ctx, **_supported(dict(
        default_target=default, action_description=action, allow_selected_samples=True,
        dataset_label="Whole dataset", current_view_label="Current view", selected_samples_label="Selected samples",
        **_descriptions(ctx, action))))
    prop.default = default  # FiftyOne < 1.x may prefer the most selective choice
    given = given_target(ctx)
    try:
        name = normalize_target(given)
    except OperatorInputError as e:
        prop.invalid, prop.error_message = True, str(e)
        return
    values = getattr(prop.type, "values", None)
    if name is not None and isinstance(values, list) and given not in values:
        values.append(given)  # a target this context does not list (e.g. 'dataset' from Python) resolves anyway
    if name == SELECTED and not getattr(ctx, "selected", None):
        prop.invalid, prop.error_message = True, "no samples are selected: select samples first, or choose another target"


def target_view(ctx):
    """The samples the operator works on: the chosen target (:func:`chosen_target`) through FiftyOne's
    ``ctx.target_view()``.

    Raises:
        OperatorInputError: an unknown target, or selected samples when none are selected.
    """
    target = chosen_target(ctx)
    if target == SELECTED and not getattr(ctx, "selected", None):
        raise OperatorInputError("target 'selected samples' but no samples are selected: select samples in the "
                                 "App, or choose the dataset or the current view")
    # FiftyOne resolves the normalized name, wherever its version reads it from
    ctx.request_params[TARGET_PARAM] = target
    params = ctx.params
    params[TARGET_PARAM] = target
    ctx.request_params.setdefault("params", params)
    if target == DATASET:  # also on a FiftyOne whose target_view() would take the current view
        return ctx.dataset
    if hasattr(ctx, "target_view"):
        return ctx.target_view()
    view = ctx.view  # a FiftyOne without target views
    if target == SELECTED:
        return view.select(ctx.selected)
    return view._base_view if target == BASE_VIEW else view


def form_target_view(ctx):
    """:func:`target_view` for a form's fragments (the raters found, ...): the dataset when the target given
    cannot be resolved (the form says why)."""
    try:
        return target_view(ctx)
    except OperatorInputError:
        return ctx.dataset


def target_record(ctx, samples) -> dict:
    """What a run records of its target: ``{"target", "n_samples", "dataset_samples", "via"}``.

    ``target`` is ``"dataset"``, ``"current view"``, ``"selected samples"`` or ``"base view"``; from a
    Python call on a view it is ``"view"``. ``via`` is ``"python"`` (a Python call), ``"app"`` (the App) or
    ``"sdk"`` (``execute_operator``).
    """
    target = chosen_target(ctx)
    request = ctx.request_params
    via = "python" if request.get(CALLER_KEY) == "python" else ("app" if request.get("operator_uri") else "sdk")
    name = _NAMES[target]
    if via == "python" and target == CURRENT_VIEW:
        name = "view"
    return {"target": name, "n_samples": _count(samples), "dataset_samples": _count(ctx.dataset), "via": via}
