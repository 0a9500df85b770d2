"""Shared pieces of the operators: parameter names, form fragments, error reporting.

Operators are thin: they read ``ctx.params``, call the bridge, and return a
flat dict. Parameter names are shared across operators (see the README).
"""

from __future__ import annotations

import logging
import queue
import threading
from typing import Any, Callable, Iterator

import fiftyone.operators.types as types
from fiftyone.operators.executor import ExecutionResult
from fiftyone.operators.message import GeneratedMessage, MessageType

from agreement.fo.runs import list_agreement_runs

from .errors import OperatorInputError  # noqa: F401 - the operators' modules import it from here

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
    cases; in the App's stream they end the stream with an error line (the
    App reads ``error`` from any line of an operator's stream) and are logged.

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


def _stream(ctx, compute: Callable[[Progress], dict], reload_dataset: bool,
            outputs: Callable[[dict], types.Property] | None = None, triggers: Triggers | None = None,
            show: Callable[[dict], dict] | None = None) -> Iterator[Any]:
    """The App's generator: ``compute`` in a worker thread, its stages yielded from a queue as triggers.

    Reports that pile up while the App reads are thinned to the latest of each stage, so a bridge
    may report as often as it likes; every stage still reaches the App, in order.
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
    worker.start()
    done = False
    while not done:
        pending = [events.get()]  # waits for the next report
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
            yield ctx.trigger("set_progress", {"progress": float(fraction), "label": str(label)})
    worker.join()
    if "error" in outcome:
        error = outcome["error"]
        logger.error("%s failed", uri, exc_info=error)
        yield _StreamError(error)
        return
    yield from _stream_end(ctx, outcome["result"], reload_dataset, outputs, triggers, show)


def _stream_end(ctx, result: dict, reload_dataset: bool, outputs: Callable[[dict], types.Property] | None,
                triggers: Triggers | None, show: Callable[[dict], dict] | None) -> Iterator[Any]:
    """The stream's last lines: reload, the triggers, the result in the progress box (``show_output``) and
    an empty ``ExecutionResult``; without ``outputs``, the result as the ``ExecutionResult``."""
    if reload_dataset:
        yield ctx.trigger("reload_dataset")
    for name, params in triggers(result) if triggers is not None else ():
        yield ctx.trigger(name, params)
    if outputs is None:
        yield GeneratedMessage(MessageType.SUCCESS, cls=ExecutionResult, body=_StreamResult(result))
        return
    shown = _StreamResult(show(result) if show is not None else result).to_json()
    yield ctx.trigger("show_output", {"outputs": outputs(shown).to_json(), "results": shown})
    yield GeneratedMessage(MessageType.SUCCESS, cls=ExecutionResult, body=_StreamResult({}))


class _StreamResult:
    """The body of the stream's last message: the App takes it as the operator's result and shows it,
    so floats are rounded to three significant figures there (the SDK's result keeps full precision)."""

    def __init__(self, result: Any):
        self.result = result

    def to_json(self) -> Any:
        from agreement.fo.runs import to_json

        return _rounded(to_json(self.result))


def _rounded(value: Any) -> Any:
    """Every float of ``value`` (nested dicts and lists) to three significant figures, for display."""
    if isinstance(value, dict):
        return {k: _rounded(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_rounded(v) for v in value]
    if isinstance(value, float):
        return float(f"{value:.3g}")
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


def refresh_app(ctx) -> None:
    """Reloads the App's dataset after new fields were written (not for delegated runs)."""
    if not ctx.delegated:
        ctx.trigger("reload_dataset")


def require(params: dict, name: str, what: str) -> Any:
    """``params[name]``; raises :class:`OperatorInputError` saying ``what`` it is when it is missing or empty."""
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
    from agreement.fo.runs import RunError, validate_key

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
    from agreement.fo.app_state import open_run

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


def rater_layout_inputs(inputs: types.Object, ctx, label_types: tuple | None = None) -> None:
    """Form fragment: the rater layout and its fields (only of ``label_types``), the raters found, the
    assignment (preselected from the dataset) and the box policy."""
    _rater_layout_inputs(inputs, ctx, label_types)
    if ctx.dataset is not None:
        box_policy_input(inputs)


def _rater_layout_inputs(inputs: types.Object, ctx, label_types: tuple | None = None) -> None:
    from agreement.fo.assignment import recorded_layout
    from agreement.fo.label_schema import detect_raters, frame_label_fields, label_fields
    from agreement.fo.projection import LABEL_TYPES

    dataset = ctx.dataset
    kinds = label_types or tuple(LABEL_TYPES)  # a video's frame fields too (frames.<field>: computed per frame)
    choices = label_fields(dataset, kinds) + frame_label_fields(dataset, kinds) if dataset is not None else []
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
        return
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


def _assignment_inputs(inputs: types.Object, ctx, field: str | None) -> None:
    """Form fragment: the assigned-raters field, preselected from what the dataset records."""
    from agreement.fo.assignment import assignment_candidates, recorded_assignment

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
    from agreement.fo.distributed import dask_available
    from agreement.fo.engine import DEFAULT_SHARD_SIZE

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


def run_inputs(inputs: types.Object, ctx, default_prefix: str | None = None) -> None:
    """Form fragment: key (offering the first unused ``default_prefix`` key), overwrite."""
    from agreement.fo.runs import list_agreement_runs

    run_key_input(inputs, ctx, default_prefix=default_prefix)
    key = ctx.params.get("key")
    if key and ctx.dataset is not None and key in list_agreement_runs(ctx.dataset):
        inputs.bool("overwrite", default=False, label=f"Replace the existing run {key!r}")
