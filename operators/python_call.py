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

A call raises what the operator raised, of its own type, with its own
message and traceback: the plugin's errors (``RunError``, ``AnnotationError``,
``ReviewError``, ``OperatorInputError``: all ``ValueError``; ``LockTimeout``)
and ``ValueError``, ``TypeError``, ``OSError``, ``KeyError`` ... as raised,
never FiftyOne's ``ExecutionError`` with a traceback as its text. FiftyOne
catches the exception inside its executor, so the call puts a token into
the request (:data:`ERROR_TOKEN_KEY`); the ``execute`` wrapper keeps the
exception under it (:func:`_keep`, also for a streamed operator's generator)
and the call raises it ``from None``. Before FiftyOne sees the request, the
call checks each value given for a choice of the form (an enum, a list of
them, a closed autocomplete) and refuses one that is not offered with a
``ValueError`` (:class:`OperatorInputError`) listing the choices
(:func:`check_choices`), where FiftyOne would say "Invalid enum value".

Every operator's ``execute`` is wrapped (:func:`_shows_refusals`): a refusal
(:mod:`operators.errors`: a bad parameter, a missing file, ...) raised for
the App becomes a readable result, its whole message in the dialog and a
notification (:func:`refusal_response`), and what the App shows of a result
is summarised where long (:func:`operators.outputs.shown_result`). A Python
call, ``execute_operator`` and a delegated run get the exception and the
whole result (``execute_operator`` and a delegated run FiftyOne's
``ExecutionError``, as ever).
"""

from __future__ import annotations

import functools
import inspect
import logging
import uuid
from collections.abc import Callable, Collection, Mapping
from typing import Any

import fiftyone.operators as foo
import fiftyone.operators.types as types

from .errors import REFUSALS, REFUSED, OperatorInputError, refusal_text

__all__ = ["AgreementOperator", "ERROR_TOKEN_KEY", "check_choices", "form_parameters", "refusal_response"]

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

#: Request key of a Python call's token: the ``execute`` wrapper keeps the exception it sees under that token
#: in :data:`_RAISED`, for the call to raise (FiftyOne runs a sync ``execute`` in a worker thread and turns
#: the exception into an ``ExecutionError`` with its traceback as text).
ERROR_TOKEN_KEY = "iaa_call_token"
_RAISED: dict[str, BaseException] = {}

#: At most this many valid values are listed in the message that refuses a value of a choice.
LISTED_CHOICES = 20

TARGET_HELP = ("the samples to work on: 'dataset', 'current view' or 'selected samples' (default: the dataset "
               "or view the operator is called with)")


def _described(prop) -> tuple[Any, str]:
    view = getattr(prop, "view", None)
    label = getattr(view, "label", None) or ""
    description = getattr(view, "description", None) or ""
    text = " — ".join(t for t in (label, description) if t)
    return prop.default, text


def _resolved_form(operator: foo.Operator, samples=None, params: dict | None = None):
    """The operator's input form (a ``types.Property`` of an ``Object``, or ``None``) resolved for
    ``samples`` and ``params``, as FiftyOne resolves it for the request."""
    from fiftyone.operators.executor import ExecutionContext

    request = {"params": dict(params or {})}
    if samples is not None:
        request.update(dataset_name=samples._root_dataset.name, view=samples.view()._serialize())
    return operator.resolve_input(ExecutionContext(request_params=request))


def form_parameters(operator: foo.Operator, samples=None, params: dict | None = None) -> dict[str, tuple]:
    """The parameters the operator's form declares: ``{name: (default, help text, required)}``.

    Args:
        operator: the operator.
        samples: a dataset or view the form is resolved for (``None``: without a dataset).
        params: the parameters given so far (forms show some parameters only for some choices).
    """
    prop = _resolved_form(operator, samples, params)
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


def _offered(view) -> list | None:
    """The values a closed autocomplete (``allow_user_input=False``) offers; ``None`` for any other view or
    one that offers nothing. (A dropdown of a string or a list of strings is closed in the App only: FiftyOne
    takes any value from the SDK and the operator checks it with its own message, e.g. the class order)."""
    if not isinstance(view, types.AutocompleteView) or view.to_json().get("allow_user_input", True):
        return None
    return view.values() or None


def _choices(prop) -> list | None:
    """The values a form property takes, for it or for each item of its list (an enum, a list of enums, a
    closed autocomplete); ``None`` when it is no closed choice."""
    kind = prop.type
    if isinstance(kind, types.List):
        kind = kind.element_type
    if isinstance(kind, types.Enum):
        return list(kind.values)
    return _offered(getattr(prop, "view", None))


def _listed(values: list) -> str:
    """The first :data:`LISTED_CHOICES` of ``values``, and how many more there are."""
    shown = ", ".join(repr(v) for v in values[:LISTED_CHOICES])
    return shown + (f", ... ({len(values) - LISTED_CHOICES} more)" if len(values) > LISTED_CHOICES else "")


def not_offered(uri: str, name: str, value: Any, values: list, label: str | None = None,
                frame_fields: Collection[str] = ()) -> OperatorInputError:
    """The error for ``value`` given for the choice ``name`` of operator ``uri`` that does not offer it: the
    valid values (the first :data:`LISTED_CHOICES`), and for a frame-level field of a video dataset (one of
    ``frame_fields``) named without its prefix, the name to give (``frames.<field>``) or that the parameter
    takes no frame-level field."""
    what = f" ({label})" if label else ""
    valid = f"the valid values are {_listed(values)}" if values else "it has no valid value on this dataset"
    hint = ""
    if isinstance(value, str) and f"frames.{value}" in values:
        hint = f"; {value!r} is a frame-level field of this video dataset: prefix it, 'frames.{value}'"
    elif isinstance(value, str) and value in frame_fields:
        hint = f"; {value!r} is a frame-level field of this video dataset, and {name!r} takes no frame-level field"
    return OperatorInputError(f"{uri}: {value!r} is not a valid value of parameter {name!r}{what}: {valid}{hint}")


def _check_value(uri: str, name: str, prop, value: Any, frame_fields: Collection[str] = ()) -> None:
    """Refuses ``value`` of form property ``prop`` (or a nested one) when its choice does not offer it
    (:func:`not_offered`)."""
    if value is None:
        return
    label = getattr(getattr(prop, "view", None), "label", None)
    kind = prop.type
    element = kind.element_type if isinstance(kind, types.List) else None
    if isinstance(element, types.Object) and isinstance(value, list):  # a list of entries: each entry's choices
        for i, item in enumerate(value):
            _check_value(uri, f"{name}[{i}]", types.Property(element), item, frame_fields)
        return
    if isinstance(kind, types.Object) and isinstance(value, Mapping):
        for key, sub in kind.properties.items():
            _check_value(uri, f"{name}.{key}", sub, value.get(key), frame_fields)
        return
    values = _choices(prop)
    if values is None:
        return
    items = value if isinstance(kind, types.List) and isinstance(value, (list, tuple)) else [value]
    for item in items:
        try:
            offered = item in values
        except TypeError:  # an unhashable or incomparable value: not one of them
            offered = False
        if not offered:
            raise not_offered(uri, name, item, values, label, frame_fields)


def _frame_fields(samples) -> frozenset[str]:
    """The frame-level fields of a video collection (without their ``frames.`` prefix); none otherwise."""
    if samples is None or getattr(samples, "media_type", None) != "video":
        return frozenset()
    try:
        return frozenset(samples.get_frame_field_schema() or {})
    except Exception:  # noqa: BLE001 - a hint in a message only
        return frozenset()


def form_notes(operator: foo.Operator, samples, params: Mapping[str, Any]) -> str:
    """What the form resolved for ``samples`` says in its warnings (e.g. "No agreement runs: this needs an
    agreement run and this dataset has none ..."), joined; ``""`` when it says nothing."""
    prop = _resolved_form(operator, samples, dict(params))
    notes = []
    for sub in (prop.type.properties.values() if prop is not None else ()):
        view = getattr(sub, "view", None)
        if isinstance(sub.type, types.Void) and isinstance(view, (types.Warning, types.Error)):
            text = ": ".join(t for t in (getattr(view, "label", None), getattr(view, "description", None)) if t)
            if text:
                notes.append(text)
    return "; ".join(notes)


def check_choices(operator: foo.Operator, samples, params: Mapping[str, Any]) -> None:
    """Checks the parameters of a Python call against its form before FiftyOne sees them.

    A value given for a choice (an enum, a list of enums, a closed autocomplete; in nested entries too) that the
    form resolved for ``samples`` and ``params`` does not offer, a parameter the form marks invalid (with its
    reason) and a required one not given are refused with the operator, the parameter, the value and what it
    takes (where FiftyOne would say "Invalid enum value" or "Required property").

    Raises:
        OperatorInputError: (a ``ValueError``) the first value refused.
    """
    prop = _resolved_form(operator, samples, dict(params))
    if prop is None:
        return
    frame_fields = _frame_fields(samples)
    for name, sub in prop.type.properties.items():
        if isinstance(sub.type, types.Void):
            continue
        if name in params:
            _check_value(operator.uri, name, sub, params[name], frame_fields)
        if getattr(sub, "invalid", False):
            reason = getattr(sub, "error_message", None) or "invalid"
            raise OperatorInputError(f"{operator.uri}: parameter {name!r}: {reason}")
        given = params.get(name)
        empty = isinstance(sub.type, types.String) and not getattr(sub.type, "allow_empty", False) and given == ""
        if sub.required and (given is None or empty):  # as FiftyOne's validation counts it missing
            raise _missing(operator.uri, name, sub)


def _missing(uri: str, name: str, prop) -> OperatorInputError:
    """The error for the required parameter ``name`` not given (with the values it takes, for a choice)."""
    _, text = _described(prop)
    values = _choices(prop)
    takes = f": give one of {_listed(values)}" if values else ""
    return OperatorInputError(f"{uri}: parameter {name!r}" + (f" ({text})" if text else "") + f" is required{takes}")


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
            ValueError: a value the form's choice does not offer (:class:`OperatorInputError`, listing the
                valid values), or any of the operator's refusals (``RunError``, ``AnnotationError``,
                ``ReviewError``, ``OperatorInputError`` ..., each of its own type).
            Exception: whatever else the operator raised (``OSError`` for a file that cannot be read,
                ``LockTimeout`` for a dataset another run holds ...), of its own type, raised ``from None``.
            fiftyone.operators.executor.ExecutionError: only for what FiftyOne itself refuses before the
                operator runs and the call does not check first (e.g. a number given as a string).
        """
        from .target import CALLER_KEY, TARGET_PARAM, normalize_target

        accepted = self._accepted(sample_collection, params)
        unknown = sorted(set(params) - set(accepted))
        if unknown:
            notes = form_notes(self, sample_collection, params)
            raise TypeError(f"{self.uri}() got parameters it does not take: {unknown}; "
                            f"it takes: {sorted(accepted)}" + (f" (on this data its form says: {notes})" if notes else ""))
        params = _with_required_defaults(self, sample_collection, dict(params), accepted)
        if TARGET_PARAM in accepted and sample_collection is not None:
            given = normalize_target(params.get(TARGET_PARAM))  # refuses an unknown target, naming the choices
            whole = not sample_collection.view()._serialize()
            params[TARGET_PARAM] = given or ("DATASET" if whole else "CURRENT_VIEW")
        check_choices(self, sample_collection, params)
        ctx = dict(view=sample_collection.view()) if sample_collection is not None else {}
        token = uuid.uuid4().hex
        request = dict(ctx, params=params, **{CALLER_KEY: "python", ERROR_TOKEN_KEY: token})
        result = _execute(self.uri, request, token)
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


def _execute(uri: str, request: dict, token: str):
    """``execute_operator(uri, ctx=request)``, raising the operator's own exception (kept under ``token`` by
    the ``execute`` wrapper) in place of FiftyOne's ``ExecutionError``; the kept exception is always
    dropped."""
    from fiftyone.operators.executor import ExecutionError

    try:
        return foo.execute_operator(uri, ctx=request)
    except ExecutionError:
        raised = _RAISED.pop(token, None)
        if raised is None:  # FiftyOne's own refusal (before the operator ran): its error
            raise
        raise raised from None
    finally:
        _RAISED.pop(token, None)


def _call_token(ctx) -> str | None:
    """The token of the Python call that runs ``ctx`` now (never for a delegated run, which the call only
    queued)."""
    if getattr(ctx, "delegated", False):
        return None
    request = getattr(ctx, "request_params", None) or {}
    token = request.get(ERROR_TOKEN_KEY)
    return token if isinstance(token, str) else None


def _keep(token: str | None, error: BaseException) -> None:
    """Keeps ``error`` for the Python call of ``token`` (:func:`_execute` pops it)."""
    if token is not None:
        _RAISED[token] = error


def _kept_stream(stream, token: str):
    """``stream`` (a streamed operator's generator), keeping the exception it raises for the Python call."""
    try:
        return (yield from stream)
    except Exception as error:
        _keep(token, error)
        raise


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
    summarises a long result (:func:`operators.outputs.shown_result`); for every other caller, ``execute``,
    and for a Python call it keeps the exception raised (also by a returned generator) for the call to raise
    (:func:`_keep`)."""
    if getattr(execute, "shows_refusals", False):
        return execute

    @functools.wraps(execute)
    def run(self, ctx):
        from .common import app_call
        from .outputs import shown_result

        token = _call_token(ctx)
        try:
            result = execute(self, ctx)
        except REFUSALS as error:
            if not app_call(ctx):
                _keep(token, error)
                raise
            return refusal_response(self, ctx, error)
        except Exception as error:
            _keep(token, error)
            raise
        if token is not None and inspect.isgenerator(result):
            return _kept_stream(result, token)
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
