"""Every operator callable from Python the FiftyOne way: ``foo.get_operator(uri)(dataset_or_view, **params)``.

The keyword arguments are the App form's parameters, with the form's
defaults and help texts: the form (``resolve_input``) is their one
declaration. A call resolves the form for the collection and the parameters
given (so that parameters shown only for some choices are known), refuses a
name the operator does not take (instead of ignoring it), and runs the
operator through :func:`fiftyone.operators.execute_operator`, exactly as
``execute_operator`` or the App would. Operators that compute a run return
its typed results (``dataset.load_run_results(key)``); the others return
their result dict.

``inspect.signature(op)`` and ``op.__doc__`` (what ``help`` and IPython's
``op?`` show) list the parameters the form declares without a dataset,
with the shared rater layout and execution parameters of the compute
operators.

Every operator's ``execute`` is wrapped (:func:`_shows_refusals`): a refusal
(:mod:`operators.errors`: a bad parameter, a missing file, ...) raised for
the App becomes a readable result, its whole message in the dialog and a
notification (:func:`refusal_response`), and what the App shows of a result
is summarised where long (:func:`operators.outputs.shown_result`). A Python
call, ``execute_operator`` and a delegated run get the exception and the
whole result, as ever.
"""

from __future__ import annotations

import functools
import inspect
import logging
from collections.abc import Callable, Mapping
from typing import Any

import fiftyone.operators as foo
import fiftyone.operators.types as types

from .errors import REFUSALS, REFUSED, refusal_text

__all__ = ["AgreementOperator", "form_parameters", "refusal_response"]

logger = logging.getLogger(__name__)

# Parameters of the compute operators whose form fields depend on the dataset (its label fields, the
# recorded assignment, the chosen backend): always accepted, documented here once.
RATER_LAYOUT = {
    "fields": (None, "list of label fields, one per rater"),
    "field": (None, "one label field whose labels carry the rater in an attribute"),
    "rater_attr": ("annotator", "the label attribute naming the rater (with field)"),
    "raters_field": (None, "optional sample-level list field naming the raters assigned to each sample"),
    "assume_crossed": (False, "accept that every rater saw every sample when no assignment is recorded"),
    "box_policy": ("clip", "boxes past the image border: 'clip', 'drop' or 'error'"),
    "layout": (None, "'fields' or 'attribute' (inferred from fields / field when omitted)"),
}
EXECUTION = {
    "shard_size": (None, "samples per shard (default: chosen from the view's size)"),
    "backend": ("serial", "'serial' or 'dask'"),
    "dask_address": (None, "address of an existing Dask scheduler (backend='dask')"),
    "workers": (None, "processes of a local Dask cluster (backend='dask')"),
    "overwrite": (False, "replace an existing agreement run with this key"),
    "delegate": (None, "queue the run for FiftyOne's delegated-operation service"),
}

TARGET_HELP = ("the samples to work on: 'dataset', 'current view' or 'selected samples' (default: the dataset "
               "or view the operator is called with)")


def _described(prop) -> tuple[Any, str]:
    view = getattr(prop, "view", None)
    label = getattr(view, "label", None) or ""
    description = getattr(view, "description", None) or ""
    text = " — ".join(t for t in (label, description) if t)
    return prop.default, text


def form_parameters(operator: foo.Operator, samples=None, params: dict | None = None) -> dict[str, tuple]:
    """The parameters the operator's form declares: ``{name: (default, help text, required)}``.

    Args:
        operator: the operator.
        samples: a dataset or view the form is resolved for (``None``: without a dataset).
        params: the parameters given so far (forms show some parameters only for some choices).
    """
    from fiftyone.operators.executor import ExecutionContext

    request = {"params": dict(params or {})}
    if samples is not None:
        request.update(dataset_name=samples._root_dataset.name, view=samples.view()._serialize())
    prop = operator.resolve_input(ExecutionContext(request_params=request))
    out: dict[str, tuple] = {}
    if prop is None:
        return out
    for name, p in prop.type.properties.items():
        if isinstance(p.type, types.Void):
            continue
        default, text = _described(p)
        out[name] = (default, text, bool(p.required))
    return out


def _with_required_defaults(operator: "AgreementOperator", samples, params: dict, accepted: dict) -> dict:
    """``params`` with the default the form shows for every required parameter not given (the App fills
    them in; FiftyOne's SDK would refuse the call): e.g. the label field the dataset records. The form is
    resolved again after each filling, since a choice can bring further fields (at most three rounds)."""
    for _ in range(3):
        missing = {name: default for name, (default, _, required) in accepted.items()
                   if required and name not in params and default not in (None, "", [])}
        if not missing:
            break
        params.update(missing)
        accepted = operator._accepted(samples, params)
    return params


class AgreementOperator(foo.Operator):
    """A plugin operator that is also a Python function of a dataset or view (see the module docstring).

    Class attributes:
        computes_run: the operator computes a run named by ``key``: a call returns its typed results.
        shared_params: it takes the shared rater layout and execution parameters.
    """

    computes_run = False
    shared_params = False
    #: the operator offers the target choice (:mod:`operators.target`): it takes ``view_target``
    takes_target = False
    #: the result keys the operator always returns, as ``(key, label, kind)`` (:data:`operators.outputs.Output`)
    outputs: tuple = ()

    def resolve_output(self, ctx):
        """The result as the App shows it: :attr:`outputs`, then every other key of the result."""
        from .outputs import result_property

        return result_property(self.outputs, getattr(ctx, "results", None))

    def _accepted(self, samples=None, params: dict | None = None) -> dict[str, tuple]:
        accepted = form_parameters(self, samples, params)
        for p in getattr(getattr(self, "declaration", None), "params", ()):  # a declared method: all of them
            accepted.setdefault(p.name, (p.default, f"{p.label} — {p.help}", False))
        if self.shared_params:
            for name, (default, text) in {**RATER_LAYOUT, **EXECUTION}.items():
                accepted.setdefault(name, (default, text, False))
        if self.takes_target:
            accepted.setdefault("view_target", (None, TARGET_HELP, False))
        return accepted

    def __call__(self, sample_collection=None, **params):
        """Runs the operator on ``sample_collection`` with the form's parameters as keyword arguments.

        ``sample_collection`` is the dataset or view (``None`` for the import operators, which make one); an
        operator that offers a target works on it (a view: on exactly its samples) unless ``view_target``
        names another (``"dataset"``, ``"current view"``, ``"selected samples"``).

        Returns:
            the run's typed results (operators that compute a run), else the operator's result dict.

        Raises:
            TypeError: a parameter the operator does not take (the message lists those it takes).
            fiftyone.operators.executor.ExecutionError: the operator failed (its message says why).
        """
        from .target import CALLER_KEY, TARGET_PARAM, normalize_target

        accepted = self._accepted(sample_collection, params)
        unknown = sorted(set(params) - set(accepted))
        if unknown:
            raise TypeError(f"{self.uri}() got parameters it does not take: {unknown}; "
                            f"it takes: {sorted(accepted)}")
        params = _with_required_defaults(self, sample_collection, dict(params), accepted)
        if TARGET_PARAM in accepted and sample_collection is not None:
            given = normalize_target(params.get(TARGET_PARAM))  # refuses an unknown target, naming the choices
            whole = not sample_collection.view()._serialize()
            params[TARGET_PARAM] = given or ("DATASET" if whole else "CURRENT_VIEW")
        ctx = dict(view=sample_collection.view()) if sample_collection is not None else {}
        result = foo.execute_operator(self.uri, ctx=dict(ctx, params=params, **{CALLER_KEY: "python"}))
        out = result.result
        if self.computes_run and isinstance(out, dict) and out.get("key"):
            return sample_collection._root_dataset.load_run_results(out["key"], cache=False)
        return out

    @property
    def __signature__(self) -> inspect.Signature:
        parameters = [inspect.Parameter("sample_collection", inspect.Parameter.POSITIONAL_OR_KEYWORD, default=None)]
        for name, (default, _, required) in self._accepted().items():
            parameters.append(inspect.Parameter(
                name, inspect.Parameter.KEYWORD_ONLY,
                default=inspect.Parameter.empty if required else default))
        return inspect.Signature(parameters)

    def describe(self) -> str:
        """The operator's Python help: what it does, how to call it, each parameter with its default."""
        config = self.config
        lines = [f"{config.label}: {config.description}", "",
                 f"Python: foo.get_operator({self.uri!r})(dataset_or_view, **params)", "", "Parameters:"]
        for name, (default, text, required) in self._accepted().items():
            flag = "required" if required else f"default {default!r}"
            lines.append(f"    {name} ({flag}): {text}")
        if self.computes_run:
            lines += ["", "Returns the run's typed results (dataset.load_run_results(key))."]
        return "\n".join(lines)

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        # a descriptor, not a str: an instance's __doc__ is its describe() (typeshed types __doc__ as str | None)
        cls.__doc__ = _OperatorDoc(cls.__doc__)  # type: ignore[assignment]
        if "execute" in cls.__dict__:
            cls.execute = _shows_refusals(cls.__dict__["execute"])


def refusal_response(operator: foo.Operator, ctx, error: BaseException) -> Any:
    """What the App gets for a refused request: a notification with the message and the message in full in
    the dialog; a streamed operator gets the stream that shows it in its progress box
    (:func:`operators.common.refusal_stream`), any other the result ``{"refused": message}``, which its
    output (:func:`operators.outputs.result_property`) shows as an error notice."""
    from .common import refusal_stream

    logger.info("%s refused: %s", operator.uri, refusal_text(error))
    if operator.config.execute_as_generator:
        return refusal_stream(ctx, error)
    ctx.trigger("notify", {"message": refusal_text(error), "variant": "error"})
    return {REFUSED: refusal_text(error)}


def _shows_refusals(execute: Callable) -> Callable:
    """``execute`` that, run by the App, shows a refusal instead of raising it (:func:`refusal_response`) and
    summarises a long result (:func:`operators.outputs.shown_result`); for every other caller, ``execute``."""
    if getattr(execute, "shows_refusals", False):
        return execute

    @functools.wraps(execute)
    def run(self, ctx):
        from .common import app_call
        from .outputs import shown_result

        try:
            result = execute(self, ctx)
        except REFUSALS as error:
            if not app_call(ctx):
                raise
            return refusal_response(self, ctx, error)
        if app_call(ctx) and isinstance(result, Mapping):
            return shown_result(self.outputs, result)
        return result

    run.__dict__["shows_refusals"] = True  # a function attribute (read by getattr above)
    return run


class _OperatorDoc:
    """``__doc__`` of an operator instance: its :meth:`AgreementOperator.describe` (the class keeps its own)."""

    def __init__(self, class_doc: str | None):
        self.class_doc = class_doc

    def __get__(self, obj, objtype=None):
        if obj is None:
            return self.class_doc
        try:
            return obj.describe()
        except Exception:  # noqa: BLE001 - help must never fail; the class doc is the fallback
            return self.class_doc
