"""Shared pieces of the operators: the long operators' config and progress (:func:`execute_with_progress`,
with a refusal shown in full in the App: :func:`refusal_stream`), parameter names, form fragments (run keys
and run pickers).

Operators are thin: they read ``ctx.params``, call the bridge, and return a
flat dict. Parameter names are shared across operators (see the README). The
rater layout and execution options of the compute operators are in
:mod:`operators.declared`.
"""

from __future__ import annotations

import logging
import math
import queue
import threading
import time
from typing import Any, Callable, Iterator, NamedTuple

import fiftyone.operators.types as types
from fiftyone.operators.executor import ExecutionResult
from fiftyone.operators.message import GeneratedMessage, MessageType

from agreement.fo.runs.store import list_agreement_runs

from .errors import (
    REFUSED,
    OperatorInputError,  # noqa: F401 - the operators' modules import it from here
    is_refusal,
    refusal_text,
)

logger = logging.getLogger(__name__)


def compute_config(name: str, label: str, description: str):
    """The config of a long (compute or import) operator: dynamic form, immediate or delegated execution.

    ``execute_as_generator=True`` makes the App call the operator through its
    streaming endpoint, so that :func:`execute_with_progress` can show the
    stages of an immediate run while it works. Every operator built with this
    config must return :func:`execute_with_progress` from ``execute``.
    """
    import fiftyone.operators as foo

    return foo.OperatorConfig(
        name=name,
        label=label,
        description=description,
        dynamic=True,
        execute_as_generator=True,
        allow_immediate_execution=True,
        allow_delegated_execution=True,
    )


Progress = Callable[[float, str], None]
"""A ``callback(fraction, label)``: ``fraction`` in [0, 1] of the whole run, ``label`` names the stage."""


Triggers = Callable[[dict], list]
"""``result -> [(operator name, params), ...]``: App operators to trigger once the run is done (e.g. open the
dataset an import made)."""


def execute_with_progress(
    ctx,
    compute: Callable[[Progress], dict],
    reload_dataset: bool = False,
    outputs: Callable[[dict], types.Property] | None = None,
    triggers: Triggers | None = None,
    show: Callable[[dict], dict] | None = None,
) -> dict | Iterator[Any]:
    """Runs ``compute(progress)`` (a call of the bridge) and reports its stages to whoever runs the operator.

    FiftyOne shows progress in three different ways, depending on who executes
    the operator, and returns a generator operator's result only to the App:

    * delegated run (``ctx.delegated``, e.g. by ``fiftyone delegated launch``
      or ``DelegatedOperationService``): ``compute`` runs here and each stage
      goes to ``ctx.set_progress``, which records it on the delegated
      operation; the summary dict is returned (the service stores it).
    * SDK, ``fiftyone.operators.execute_operator(...)``: FiftyOne exhausts a
      generator and drops its result, so ``compute`` runs here, the stages go
      to ``ctx.set_progress`` (FiftyOne logs them on the executor), and the
      summary dict is returned as ``ExecutionResult.result``, as ever.
    * the App, immediately (its request names ``operator_uri``, which
      ``execute_operator`` does not put in the request): a generator is
      returned. ``compute`` runs in a worker thread; the generator yields a
      ``set_progress`` trigger for each stage as it happens, then
      ``reload_dataset`` (if asked), the ``triggers`` and finally the result.
      If the client goes away, the worker still finishes its run.

    The App shows ``set_progress`` in a box of its own (FiftyOne's operator
    IO modal, with a "Done" button) that nothing but that button closes, and
    the operator's output in its prompt, underneath: the result would stay
    hidden under a finished progress bar. So, given ``outputs``, the stream
    ends with a ``show_output`` trigger that puts the result (as
    ``outputs(result)`` lays it out) into that same box, in place of the
    progress bar, and an empty ``ExecutionResult`` (the prompt then closes by
    itself: nothing is shown twice). Without ``outputs``, the result is the
    ``ExecutionResult``, which the prompt shows.

    Exceptions of ``compute`` reach the caller unchanged in the first two
    cases. In the App's stream, a refusal (:mod:`operators.errors`: a bad
    parameter, a missing file, ...) ends the stream with its whole message in
    the progress box and a notification (:func:`refusal_stream`); any other
    error is logged with its traceback and ends the stream with an error line
    (the App reads ``error`` from any line of an operator's stream), the
    progress box saying the run failed. A stage that lasts is reported again
    every :data:`HEARTBEAT` seconds with the time spent, and so is the start
    before the first stage.

    Args:
        ctx: the :class:`fiftyone.operators.ExecutionContext`.
        compute: runs the work; called once with a :data:`Progress` callback
            and returns the operator's result (a JSON-able dict).
        reload_dataset: ask the App to reload its dataset afterwards (the run
            wrote new fields); never for delegated runs.
        outputs: ``result -> output property`` (the operator's
            ``resolve_output`` for that result): how the App shows the result.
        triggers: App operators to trigger after the run (never for
            delegated runs).
        show: ``result -> what the App shows`` (default: the result), e.g.
            the result with the fields the run wrote beside it.

    Returns:
        The result of ``compute``, or (the App's immediate run) a generator of
        :class:`fiftyone.operators.message.GeneratedMessage`.
    """
    if _streams_to_app(ctx):
        return _stream(ctx, compute, reload_dataset, outputs, triggers, show)

    def progress(fraction: float, label: str) -> None:
        ctx.set_progress(progress=fraction, label=label)

    result = compute(progress)
    if reload_dataset:
        refresh_app(ctx)
    if triggers is not None and not ctx.delegated:
        for name, params in triggers(result):
            ctx.trigger(name, params)
    return result


def app_call(ctx) -> bool:
    """Whether the App runs the operator now and reads what it returns (not delegated, not the SDK or a
    Python call, no pipeline): then a refusal is shown, not raised (:mod:`operators.errors`)."""
    return _streams_to_app(ctx)


def _streams_to_app(ctx) -> bool:
    """Whether the App runs the operator now and reads its generator (not delegated, not the SDK, no pipeline).

    The App's requests carry ``operator_uri`` (FiftyOne's server requires it,
    1.0 to 1.22); ``execute_operator`` builds its request without it; the
    delegated service and pipelines exhaust generators, dropping results.
    """
    if ctx.delegated:
        return False
    pipeline = getattr(ctx, "pipeline", None)  # FiftyOne >= 1.5
    if pipeline is not None and getattr(pipeline, "active", False):
        return False
    return bool(ctx.request_params.get("operator_uri"))


_DONE = object()

#: Seconds without a report after which the App's stream says again which stage is running, with the time
#: spent so far (a long stage, e.g. a consensus's EM, then never looks stalled).
HEARTBEAT = 1.0


def _stream(ctx, compute: Callable[[Progress], dict], reload_dataset: bool,
            outputs: Callable[[dict], types.Property] | None = None, triggers: Triggers | None = None,
            show: Callable[[dict], dict] | None = None) -> Iterator[Any]:
    """The App's generator: ``compute`` in a worker thread, its stages yielded from a queue as triggers.

    Reports that pile up while the App reads are thinned to the latest of each stage, so a bridge
    may report as often as it likes; every stage still reaches the App, in order. A stage (or the start)
    that lasts longer than :data:`HEARTBEAT` is reported again each :data:`HEARTBEAT` seconds with the
    time spent (:func:`heartbeat_label`). A refusal (:func:`operators.errors.is_refusal`) ends the stream
    with its message in the progress box (:func:`refusal_stream`); any other error with the stream's error
    line, the progress box saying that the run failed.
    """
    events: queue.Queue = queue.Queue()
    outcome: dict[str, Any] = {}

    def work() -> None:
        try:
            outcome["result"] = compute(lambda fraction, label: events.put((fraction, label)))
        except BaseException as e:  # handed to the generator, which reports it
            outcome["error"] = e
        finally:
            events.put(_DONE)

    uri = getattr(ctx, "operator_uri", None) or "operator"  # not on FiftyOne 1.0's context
    worker = threading.Thread(target=work, name=f"iaa-{uri}", daemon=False)
    started = time.monotonic()
    worker.start()
    last = (0.0, "starting")
    done = False
    while not done:
        try:
            pending = [events.get(timeout=HEARTBEAT)]  # waits for the next report
        except queue.Empty:  # none for a while: the stage again, with the time spent
            yield _progress(ctx, last[0], heartbeat_label(last[1], time.monotonic() - started))
            continue
        while True:  # and takes whatever else came meanwhile
            try:
                pending.append(events.get_nowait())
            except queue.Empty:
                break
        done = pending[-1] is _DONE  # the worker's last put
        updates = [event for event in pending if event is not _DONE]
        for i, (fraction, label) in enumerate(updates):
            if i + 1 < len(updates) and updates[i + 1][1] == label:
                continue  # a later fraction of the same stage is already here: the App needs only that one
            last = (float(fraction), str(label))
            yield _progress(ctx, *last)
    worker.join()
    if "error" in outcome:
        yield from _failed(ctx, uri, outcome["error"], last)
        return
    yield from _stream_end(ctx, outcome["result"], reload_dataset, outputs, triggers, show)


def heartbeat_label(label: str, seconds: float) -> str:
    """The label of a repeated report: the stage and the time spent since the run started."""
    return f"{label} · {seconds:.0f} s"


def _progress(ctx, fraction: float, label: str):
    """The App's ``set_progress`` trigger."""
    return ctx.trigger("set_progress", {"progress": float(fraction), "label": str(label)})


def _failed(ctx, uri: str, error: BaseException, last: tuple[float, str]) -> Iterator[Any]:
    """The end of a stream whose run raised: a refusal's message in the progress box; any other error logged
    with its traceback, the progress box told the run failed, and the stream's error line."""
    if is_refusal(error):
        logger.info("%s refused: %s", uri, refusal_text(error))
        yield from refusal_stream(ctx, error)
        return
    logger.error("%s failed", uri, exc_info=error)
    yield _progress(ctx, last[0], f"failed during '{last[1]}': {refusal_text(error)}")
    yield _StreamError(error)


def refusal_stream(ctx, error: BaseException) -> Iterator[Any]:
    """What the App gets for a refused request of a streamed operator: a notification with the message, the
    message in full in the progress box (``show_output``, which replaces a progress bar: nothing is left
    stuck at its last stage) and an empty ``ExecutionResult`` (the prompt closes; the box stays until its
    "Done")."""
    from .outputs import refusal_property

    message = refusal_text(error)
    yield ctx.trigger("notify", {"message": message, "variant": "error"})
    yield ctx.trigger("show_output", {"outputs": refusal_property(message).to_json(), "results": {REFUSED: message}})
    yield GeneratedMessage(MessageType.SUCCESS, cls=ExecutionResult, body=_StreamResult({}))


def _stream_end(ctx, result: dict, reload_dataset: bool, outputs: Callable[[dict], types.Property] | None,
                triggers: Triggers | None, show: Callable[[dict], dict] | None) -> Iterator[Any]:
    """The stream's last lines: reload, the triggers, the result in the progress box (``show_output``) and
    an empty ``ExecutionResult``; without ``outputs``, the result as the ``ExecutionResult``."""
    restore: list = []
    if reload_dataset:
        reload, *restore = reload_triggers(ctx)
        yield ctx.trigger(*reload)
    for name, params in triggers(result) if triggers is not None else ():
        yield ctx.trigger(name, params)
    if outputs is not None:
        shown = _StreamResult(show(result) if show is not None else result).to_json()
        yield ctx.trigger("show_output", {"outputs": outputs(shown).to_json(), "results": shown})
    for name, params in restore:  # its own execution: it waits past the reload (operators/app_filters.py)
        yield ctx.trigger(name, params)
    body = _StreamResult(result) if outputs is None else _StreamResult({})
    yield GeneratedMessage(MessageType.SUCCESS, cls=ExecutionResult, body=body)


class _StreamResult:
    """The body of the stream's last message: the App takes it as the operator's result and shows it,
    so floats are rounded to three significant figures there (the SDK's result keeps full precision)."""

    def __init__(self, result: Any):
        self.result = result

    def to_json(self) -> Any:
        from agreement.fo.runs.store import to_json

        return _rounded(to_json(self.result))


def _rounded(value: Any) -> Any:
    """Every float of ``value`` (nested dicts and lists) as text of three significant figures, trailing zeros
    kept (``0.310``, not the ``0.31`` a rounded float shows), for display."""
    from agreement.reporting.figures.base import sig3

    if isinstance(value, dict):
        return {k: _rounded(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_rounded(v) for v in value]
    if isinstance(value, float):
        return sig3(value) if math.isfinite(value) else value
    return value


class _StreamError(GeneratedMessage):
    """A stream line with top-level ``error`` and ``error_message``, as FiftyOne's App reads them (1.0 to 1.22)."""

    def __init__(self, error: BaseException):
        super().__init__(MessageType.ERROR)
        self.error = error

    def to_json(self) -> dict:
        message = str(self.error) or type(self.error).__name__
        return {"type": str(self.type), "cls": "ExecutionError", "body": None,
                "error": message, "error_message": message}


def reload_triggers(ctx) -> list[tuple[str, dict]]:
    """What reloads the App's dataset after new fields were written, keeping the user's sidebar filters: the
    App drops them when the ``reload_dataset`` completes (a filter on the current view, 73 of 200 samples, came
    back as 200), so the run ends by triggering :class:`operators.app_filters.RestoreFilters` with them."""
    out: list = [("reload_dataset", None)]
    filters = dict(getattr(ctx, "request_params", {}).get("filters") or {})
    if filters:
        from agreement.fo.panel.app_state import app_can_set_filters

        from .app_filters import restore_filters_trigger

        if app_can_set_filters():  # the App drops them when the reload completes, after this run ended
            out.append(restore_filters_trigger(filters))
    return out


def refresh_app(ctx) -> None:
    """Reloads the App's dataset after new fields were written, its filters kept (not for delegated runs)."""
    if not ctx.delegated:
        for name, params in reload_triggers(ctx):
            ctx.trigger(name, params)


def require(params: dict, name: str, what: str) -> Any:
    """``params[name]``; raises :class:`OperatorInputError` saying ``what`` it is when it is missing or empty."""
    value = params.get(name)
    if value in (None, "", []):
        raise OperatorInputError(f"parameter {name!r} is required: {what}")
    return value


def unused_key(dataset, prefix: str) -> str:
    """``prefix``, else ``prefix_2``, ``prefix_3``, ...: the first that names no run and no field prefix."""
    runs = set(dataset.list_runs()) if dataset is not None else set()
    names = list(dataset.get_field_schema()) if dataset is not None else []
    n = 1
    while True:
        key = prefix if n == 1 else f"{prefix}_{n}"
        if key not in runs and not any(f.startswith(f"{key}_") for f in names):
            return key
        n += 1


def run_key_input(inputs: types.Object, ctx, label: str = "Run key", default_prefix: str | None = None) -> None:
    """A run key field that shows the existing runs in its description; with ``default_prefix`` it offers
    the first unused key of that prefix (:func:`unused_key`)."""
    from agreement.fo.runs.store import RunError, validate_key

    existing = list_agreement_runs(ctx.dataset) if ctx.dataset is not None else []
    prop = inputs.str(
        "key",
        required=True,
        default=unused_key(ctx.dataset, default_prefix) if default_prefix and ctx.dataset is not None else None,
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


def preferred_run(dataset, keys: list[str]) -> str | None:
    """The run a form preselects among ``keys``: the one open in the panel, else the newest."""
    from agreement.fo.panel.app_state import open_run

    if not keys:
        return None
    opened = open_run(dataset) if dataset is not None else None
    if opened in keys:
        return opened

    def stamp(key: str) -> str:
        try:
            return str(dataset.get_run_info(key).timestamp)
        except Exception:  # noqa: BLE001 - a run without info sorts first
            return ""

    return max(keys, key=lambda k: (stamp(k), k))


def existing_run_choice(inputs: types.Object, ctx, name: str = "key", label: str = "Run",
                        method: str | None = None, kind: str = "agreement run",
                        needs: str = "run one of the compute operators first") -> list[str]:
    """A dropdown of this plugin's runs on the current dataset (only of ``method`` when given), the run open
    in the panel preselected, else the newest (:func:`preferred_run`); without any, a warning that this
    operator needs a ``kind`` and how to get one (``needs``)."""
    keys = list_agreement_runs(ctx.dataset, method=method) if ctx.dataset is not None else []
    if not keys:
        inputs.view(
            "no_runs",
            types.Warning(label=f"No {kind}s", description=f"This needs a {kind} and this dataset has none: {needs}."),
        )
        return keys
    choices = types.DropdownView()
    for k in keys:
        choices.add_choice(k, label=k)
    inputs.enum(name, keys, required=True, label=label, view=choices, default=preferred_run(ctx.dataset, keys))
    return keys


def run_inputs(inputs: types.Object, ctx, default_prefix: str | None = None) -> None:
    """Form fragment: key (offering the first unused ``default_prefix`` key), overwrite."""
    from agreement.fo.runs.store import list_agreement_runs

    run_key_input(inputs, ctx, default_prefix=default_prefix)
    key = ctx.params.get("key")
    if key and ctx.dataset is not None and key in list_agreement_runs(ctx.dataset):
        inputs.bool("overwrite", default=False, label=f"Replace the existing run {key!r}")


# ------------------------------------------------------------------ long runs: the estimate, the notice, delegation

#: Seconds per rater label of each compute operator end to end, measured by ``bench/scale_bench.py`` on a
#: shared 2-core machine (100,000 samples × 3 raters × ~7 boxes: OT 39 s, KαLOS 43 s, geometry 58 s,
#: consensus 73 s for 2.1 M labels; 1,000,000 samples: consensus about 760 s), rounded up: the estimate
#: errs long. Operators not listed use :data:`DEFAULT_SECONDS_PER_LABEL`.
SECONDS_PER_LABEL = {
    "compute_ot_agreement": 25e-6,
    "compute_kalos": 25e-6,
    "compute_geometry_agreement": 35e-6,
    "compute_consensus": 45e-6,
    # a semantic mask is one label per rater and sample, decoded from its file: not measured by the scale
    # benchmark; a few milliseconds per 512 x 512 PNG, rounded up
    "compute_mask_agreement": 5e-3,
    "compute_mask_consensus": 5e-3,
}
DEFAULT_SECONDS_PER_LABEL = 45e-6
#: Seconds per sample on top of its labels (reading the document, writing its fields).
SECONDS_PER_SAMPLE = 1e-4
#: Samples whose labels are counted to estimate the labels per sample of the view.
LABELS_PROBE = 500


def immediate_limit() -> float:
    """FiftyOne's bound on an immediately executed operator, in seconds (``fo.config.operator_timeout``,
    600 by default, ``FIFTYONE_OPERATOR_TIMEOUT``)."""
    import fiftyone as fo

    return float(getattr(fo.config, "operator_timeout", 600) or 600)


class RunEstimate(NamedTuple):
    """How long a compute operator's run on a view should take (see :func:`estimate_run`)."""

    seconds: float
    n_samples: int
    n_labels: int

    @property
    def over_limit(self) -> bool:
        """Whether it exceeds FiftyOne's bound on an immediate run (:func:`immediate_limit`)."""
        return self.seconds > immediate_limit()

    @property
    def text(self) -> str:
        """The estimate as a reader says it: ``"17 minutes"``, ``"40 seconds"`` (:func:`duration_text`)."""
        return duration_text(self.seconds)


def duration_text(seconds: float) -> str:
    """``seconds`` in whole minutes from 90 s on (``"10-minute"`` style is left to the caller), else in whole
    seconds: ``duration_text(600) == "10 minutes"``, ``duration_text(1) == "1 second"``."""
    if seconds >= 90:
        return f"{round(seconds / 60)} minutes"
    n = max(1, round(seconds))
    return f"{n} second" if n == 1 else f"{n} seconds"


def estimate_run(samples, operator: str, fields: list[str]) -> RunEstimate | None:
    """The estimated time of ``operator`` on ``samples`` reading the label ``fields`` (``frames.<name>`` too).

    ``seconds = n_samples · SECONDS_PER_SAMPLE + n_labels · SECONDS_PER_LABEL[operator]``; the labels
    per sample are counted on the first :data:`LABELS_PROBE` samples (one aggregation, whatever the
    view's size). ``None`` when it cannot be told (no view, no fields, a field that is not a label list).
    """
    if samples is None or not fields:
        return None
    try:
        n = samples.count()
        if not n:
            return RunEstimate(0.0, 0, 0)
        probe = samples.limit(LABELS_PROBE)
        probed = min(n, LABELS_PROBE)
        per_sample = 0.0
        for field in fields:
            per_sample += _labels_in(probe, field) / probed
    except Exception:  # noqa: BLE001 - a form fragment: the run names any problem with the fields
        return None
    labels = int(round(per_sample * n))
    rate = SECONDS_PER_LABEL.get(operator, DEFAULT_SECONDS_PER_LABEL)
    return RunEstimate(n * SECONDS_PER_SAMPLE + labels * rate, n, labels)


def _labels_in(samples, field: str) -> int:
    """The labels of ``field`` in ``samples``: the items of its list (Detections, ...) or one per label."""
    from agreement.fo.storage.label_schema import field_label_type

    kind = field_label_type(samples, field)
    list_name = getattr(kind, "_LABEL_LIST_FIELD", None)
    return int(samples.count(f"{field}.{list_name}" if list_name else field))


def form_estimate(ctx, operator: str) -> RunEstimate | None:
    """:func:`estimate_run` for the run a form describes: its target and its rater fields (``fields``, or
    ``field``) from ``ctx.params``."""
    from .target import form_target_view

    params = ctx.params
    fields = params.get("fields") or ([params["field"]] if params.get("field") else [])
    if isinstance(fields, str):
        fields = [f.strip() for f in fields.split(",") if f.strip()]
    try:
        samples = form_target_view(ctx)
    except Exception:  # noqa: BLE001 - a form fragment
        return None
    return estimate_run(samples, operator, list(fields))


def long_run_notice(inputs: types.Object, ctx, operator: str) -> RunEstimate | None:
    """Form fragment: when the run should take longer than FiftyOne allows an immediate run, a warning that
    says so (its estimate, the limit) and to delegate it; half of it or more, a notice of the estimate."""
    estimate = form_estimate(ctx, operator)
    if estimate is None or estimate.seconds < immediate_limit() / 2:
        return estimate
    limit = immediate_limit()
    size = f"{estimate.n_samples:,} samples, about {estimate.n_labels:,} labels"
    how = f"{schedule_how()}; or run it from Python (see the Scale page, \"Runs longer than ten minutes\")"
    if estimate.over_limit:
        inputs.view("long_run", types.Warning(
            label=f"About {estimate.text}: over FiftyOne's limit of {duration_text(limit)} for immediate runs; "
                  f"delegate it",
            description=f"{size}. {how}."))
    else:
        inputs.view("long_run", types.Notice(
            label=f"About {estimate.text} ({size}): close to FiftyOne's limit of {duration_text(limit)} for "
                  f"immediate runs",
            description=f"On a busy machine it may take longer. {how}."))
    return estimate


def schedule_how() -> str:
    """How to schedule a run from the App, as this App server allows it: FiftyOne (open source) offers "Schedule"
    in the menu beside Execute only when ``fo.config.allow_legacy_orchestrators`` is set (otherwise it is shown
    "not available"), and the App keeps Execute as the button's choice until the user picks another."""
    import fiftyone as fo

    run = "`fiftyone delegated launch` runs the queue and `fiftyone delegated list` shows its progress"
    if getattr(fo.config, "allow_legacy_orchestrators", False):
        return f"Schedule it: choose Schedule in the menu beside Execute (listed first); {run}"
    return ("To schedule it, start the App with `FIFTYONE_ALLOW_LEGACY_ORCHESTRATORS=true` (FiftyOne's setting for "
            f"delegated operations without an orchestrator) and choose Schedule in the menu beside Execute; {run}")


def long_run_execution_options(ctx, operator: str):
    """The execution options of a compute operator: immediate or delegated, delegation listed first when the
    run should take longer than FiftyOne allows an immediate run (:func:`form_estimate`; FiftyOne 1.22's App
    lists the default choice first in the menu beside Execute but keeps the button on Execute)."""
    from fiftyone.operators.executor import ExecutionOptions

    estimate = form_estimate(ctx, operator)
    return ExecutionOptions(allow_immediate_execution=True, allow_delegated_execution=True,
                            default_choice_to_delegated=bool(estimate is not None and estimate.over_limit))
