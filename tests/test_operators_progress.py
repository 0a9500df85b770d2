"""Progress reporting of the long operators (``operators.common.execute_with_progress``).

Three ways to run an operator, each checked on a small real dataset:

* the SDK, ``execute_operator``: the result is the bridge's summary, as before, and the stages
  go to ``ctx.set_progress`` in the bridge's order;
* the App's immediate run: FiftyOne's own server endpoint (``/operators/execute/generator``,
  which the App calls for ``execute_as_generator`` operators) streams one ``set_progress``
  trigger per stage while the bridge works, then ``reload_dataset`` and the summary as the
  stream's ``ExecutionResult`` message;
* delegated: ``execute_operator(..., request_delegation=True)`` queues the run and FiftyOne's
  ``DelegatedOperationService`` completes it, recording every stage on the operation.

An exception of the bridge reaches the caller with its message in each: raised to the SDK, failing the
delegated operation; in the App, a refusal (a bad parameter, ...) is shown in full in the progress box
with a notification, and a fault of the code ends the stream with its error line. A stage that lasts is
reported again every second with the time spent, so the App never shows a stalled "Executing...".
"""

from __future__ import annotations

import json
import re
import threading
import time
from typing import Any, Callable

import numpy as np
import pytest

from run_values import plain, same, written

pytestmark = pytest.mark.fiftyone

URI = "@iaa/agreement/"
FIELDS = ["a", "b", "c"]


@pytest.fixture
def ds(three_rater_samples, make_dataset):
    """4 samples, raters a/b/c with shifted copies of the same boxes; s2: a found nothing; s3: c not assigned."""
    return make_dataset(three_rater_samples)


def _ot(samples, key: str, progress=None) -> dict:
    from agreement.fo.methods.ot_agreement import compute_ot_agreement

    return compute_ot_agreement(samples, key, fields=FIELDS, lam=0.5, beta=0.5, normalization="paper",
                                max_pairs=100_000, seed=0, iou_threshold=0.5, progress=progress)


def _kalos(samples, key: str, progress=None) -> dict:
    from agreement.fo.methods.kalos import compute_kalos

    return compute_kalos(samples, key, fields=FIELDS, similarity="iou", tau=0.5, solver="greedy", cost="soft",
                         progress=progress)


# operator name, the bridge called as the operator calls it, stages that must appear in this order
METHODS = {
    "compute_ot_agreement": (_ot, ["planning", "reading annotations", "computing", "writing results",
                                   "merging shards"]),
    "compute_kalos": (_kalos, ["reading annotations", "computing", "writing results", "merging shards"]),
}


def _bridge_run(ds, name: str, key: str) -> tuple[dict, list[str]]:
    """The bridge's own summary and stage labels for this dataset (the reference for every way of running)."""
    bridge, known = METHODS[name]
    labels: list[str] = []
    summary = bridge(ds, key, progress=lambda fraction, label: labels.append(label))
    it = iter(labels)
    assert all(stage in it for stage in known), f"stages {known} not in order in {labels}"
    return summary, labels


HEARTBEAT = re.compile(r" · \d+ s$")


def _stages(labels: list[str]) -> list[str]:
    """``labels`` without consecutive repeats (the App's stream may thin reports within a stage) and without
    the stream's heartbeats (a stage repeated with the time spent; "starting" before the first stage)."""
    labels = [HEARTBEAT.sub("", label) for label in labels]
    labels = [label for i, label in enumerate(labels) if not (label == "starting" and i + 1 < len(labels))]
    return [label for i, label in enumerate(labels) if i == 0 or labels[i - 1] != label]


def _same_summary(result: dict, key: str, summary: dict) -> None:
    """The operator's result: the run key, the bridge's summary, then what it was computed on."""
    assert result == {"key": key, **summary, "target": "whole dataset (4 samples)"}


def _three_figures(summary: dict) -> dict:
    """What the App shows of a summary: floats as three significant figures, trailing zeros kept (issue 48)."""
    from agreement.reporting.figures.base import sig3

    return {k: sig3(v) if isinstance(v, float) else v for k, v in summary.items()}


@pytest.fixture
def progress_spy(monkeypatch) -> list[tuple[float, str]]:
    """Records every ``ctx.set_progress`` call (FiftyOne's own method still runs)."""
    from fiftyone.operators.executor import ExecutionContext

    calls: list[tuple[float, str]] = []
    original = ExecutionContext.set_progress

    def spy(self, progress=None, label=None):
        calls.append((progress, label))
        return original(self, progress=progress, label=label)

    monkeypatch.setattr(ExecutionContext, "set_progress", spy)
    return calls


@pytest.mark.parametrize("name", list(METHODS))
def test_sdk_result_unchanged_and_stages_in_order(ds, name, progress_spy):
    import fiftyone.operators as foo

    summary, labels = _bridge_run(ds, name, "direct")
    run = foo.execute_operator(URI + name, ctx=dict(view=ds.view(), params=dict(fields=FIELDS, key="sdk")))
    _same_summary(run.result, "sdk", summary)
    assert [label for _, label in progress_spy] == labels
    fractions = [f for f, _ in progress_spy]
    assert fractions == sorted(fractions) and 0.0 <= fractions[0] and fractions[-1] <= 1.0
    # as before: the App is asked to reload the dataset after the run
    assert "reload_dataset" in [r["operator_uri"] for r in run.executor.to_json()["requests"]]


def _app_stream(ds, name: str, params: dict) -> list[dict]:
    """What the App receives when it runs the operator now: the lines of FiftyOne's streaming endpoint.

    Through the App server's ``/operators/execute/generator`` when its app imports here, else
    (an environment whose App server cannot start) the two calls that endpoint makes.
    """
    body = {"operator_uri": URI + name, "dataset_name": ds.name, "view": [], "params": params}
    try:
        from starlette.testclient import TestClient  # needs httpx

        from fiftyone.server.app import app
    except ImportError:
        return _endpoint_lines(body)
    with TestClient(app) as client:
        response = client.post("/operators/execute/generator", json=body)
    assert response.status_code == 200, response.text
    return [json.loads(line) for line in response.text.splitlines() if line.strip()]


def _endpoint_lines(body: dict) -> list[dict]:
    """``ExecuteOperatorAsGenerator.post`` of ``fiftyone.operators.server``, without the HTTP layer."""
    import asyncio

    from fiftyone.operators.executor import execute_or_delegate_operator
    from fiftyone.operators.message import GeneratedMessage

    result = asyncio.run(execute_or_delegate_operator(body["operator_uri"], body))
    assert result.is_generator, result.to_json()
    return [json.loads(m.to_json_line()) for m in result.result if isinstance(m, GeneratedMessage)]


@pytest.mark.parametrize("name", list(METHODS))
def test_app_immediate_run_streams_stages_then_the_result(ds, name):
    summary, labels = _bridge_run(ds, name, "direct")
    lines = _app_stream(ds, name, dict(fields=FIELDS, key="app"))
    triggers = [line["body"] for line in lines[:-1]]
    assert all(line["cls"] == "InvocationRequest" for line in lines[:-1])
    streamed = [t["params"]["label"] for t in triggers if t["operator_uri"] == "set_progress"]
    assert _stages(streamed) == _stages(labels)
    assert [t["operator_uri"] for t in triggers[-2:]] == ["reload_dataset", "show_output"]
    # the result replaces the progress bar in the App's progress box (show_output), laid out by the
    # operator's output form, one property per key; the prompt gets an empty result and closes by itself
    shown = triggers[-1]["params"]
    valued = {k for k, v in shown["results"].items() if v not in (None, "", [], {})}  # an empty value: no line
    assert valued <= set(shown["outputs"]["type"]["properties"]) <= set(shown["results"])
    fields = shown["results"].pop("fields_written")  # shown beside the result: the fields the run wrote
    assert fields and all(f.startswith("app_") or ".app_" in f for f in fields)
    _same_summary(shown["results"], "app", _three_figures(summary))  # the App shows 3 significant figures
    assert lines[-1]["cls"] == "ExecutionResult" and not lines[-1]["body"]
    assert "app" in ds.list_runs()


def test_operators_built_as_compute_operators_run_as_generators():
    """The App calls an operator's streaming endpoint only if its config says so."""
    import fiftyone.operators as foo

    for name in ("compute_ot_agreement", "compute_kalos", "compute_geometry_agreement", "calibrate_agreement",
                 "compute_mask_consensus", "compute_consensus", "compute_class_agreement", "simulate_raters",
                 "import_multi_rater_coco", "import_multi_rater", "import_label_studio", "import_judgements",
                 "finalize_consensus", "export_multi_rater_coco"):
        operator = foo.get_operator(URI + name)
        assert operator.config.execute_as_generator, name
        assert operator.config.allow_immediate_execution and operator.config.allow_delegated_execution, name


def test_finalize_and_the_coco_export_report_their_stage(ds, progress_spy, tmp_path):
    """The operators that rewrite a label field or write a file for every sample (minutes on a large dataset)
    stream too: the App shows their stage at once and their result in the progress box; the SDK gets the
    result as before."""
    import fiftyone.operators as foo

    foo.execute_operator(URI + "compute_consensus", ctx=dict(view=ds.view(), params=dict(fields=FIELDS, key="cons")))
    progress_spy.clear()
    done = foo.execute_operator(URI + "finalize_consensus", ctx=dict(view=ds.view(), params=dict(key="cons"))).result
    assert done["field"] == "cons_final" and done["kept"] >= 1
    assert [label for _, label in progress_spy] == ["writing cons_final from the reviewers' decisions"]
    lines = _app_stream(ds, "finalize_consensus", dict(key="cons"))
    triggers = [line["body"] for line in lines[:-1]]
    assert triggers[0]["params"]["label"] == "writing cons_final from the reviewers' decisions"
    assert [t["operator_uri"] for t in triggers[-2:]] == ["reload_dataset", "show_output"]
    assert triggers[-1]["params"]["results"]["kept"] == done["kept"]

    path = tmp_path / "raters.json"
    lines = _app_stream(ds, "export_multi_rater_coco", dict(coco_path=str(path), fields=FIELDS))
    assert lines[0]["body"]["params"]["label"] == f"writing 4 samples to {path}"
    assert lines[-2]["body"]["params"]["results"]["images"] == 4 and path.exists()


@pytest.mark.parametrize("name", list(METHODS))
def test_queued_delegated_run_completes_through_the_service_and_reports_progress(ds, name, delegated_progress):
    import fiftyone.operators as foo
    from fiftyone.operators.delegated import DelegatedOperationService
    from fiftyone.operators.executor import ExecutionRunState

    summary, labels = _bridge_run(ds, name, "direct")
    queued = foo.execute_operator(URI + name, ctx=dict(view=ds.view(), params=dict(fields=FIELDS, key="later"),
                                                       request_delegation=True))
    assert queued.delegated
    assert "later" not in ds.list_runs()  # queued, not run
    service = DelegatedOperationService()
    service.execute_queued_operations(operator=URI + name, dataset_name=ds.name)  # returns None on FiftyOne 1.0
    assert [label for _, label in delegated_progress] == labels
    doc = service.get(queued.result["id"])
    assert doc.run_state == ExecutionRunState.COMPLETED, doc.result.error if doc.result else None
    assert doc.status.label == labels[-1]
    _same_summary(doc.result.result, "later", summary)
    ds.reload()
    assert "later" in ds.list_runs()
    # the values written are the bridge's own (the same per-sample fields and per-label attributes)
    direct, later = written(ds, "direct"), written(ds, "later")
    assert direct and direct.keys() == later.keys()
    for k in direct:
        assert same(plain(later[k], "later"), plain(direct[k], "direct")), k
    service.delete_operation(doc.id)


BAD = dict(fields=["a", "nope"], key="bad")
BAD_MESSAGE = "field 'nope' does not exist"


def test_bridge_error_reaches_the_sdk_caller(ds):
    import fiftyone.operators as foo

    with pytest.raises(Exception, match=BAD_MESSAGE):
        foo.execute_operator(URI + "compute_ot_agreement", ctx=dict(view=ds.view(), params=BAD))
    assert "bad" not in ds.list_runs()


def test_bridge_refusal_reaches_the_app_in_full_in_the_progress_box(ds):
    """A refusal (the bridge's ``ValueError`` for a field that does not exist) is no stream error, which the App
    would show collapsed under the result's blank lines: its whole message replaces the progress bar
    (``show_output`` of an error notice), a notification says it, and the prompt closes (an empty result)."""
    lines = _app_stream(ds, "compute_kalos", BAD)
    assert not any(line.get("error") for line in lines)
    triggers = {line["body"]["operator_uri"]: line["body"]["params"] for line in lines[:-1]}
    assert BAD_MESSAGE in triggers["notify"]["message"] and triggers["notify"]["variant"] == "error"
    shown = triggers["show_output"]
    assert BAD_MESSAGE in shown["results"]["refused"]
    notice = shown["outputs"]["type"]["properties"]["refusal"]["view"]
    assert notice["name"] == "Error" and BAD_MESSAGE in notice["description"]
    assert [line["body"]["operator_uri"] for line in lines[-3:-1]] == ["notify", "show_output"]  # the last word
    assert lines[-1]["cls"] == "ExecutionResult" and not lines[-1]["body"]
    assert "bad" not in ds.list_runs()


def test_a_refusal_before_the_run_is_shown_the_same_way(ds):
    """A parameter refused by the operator itself, before any stage (two rater layouts at once), reaches the
    App the same way."""
    lines = _app_stream(ds, "compute_kalos", dict(fields=FIELDS, field="a", key="both"))
    uris = [line["body"]["operator_uri"] for line in lines[:-1]]
    assert uris == ["notify", "show_output"], uris
    assert "give either `fields`" in lines[1]["body"]["params"]["results"]["refused"]
    assert lines[-1]["cls"] == "ExecutionResult" and not any(line.get("error") for line in lines)


def test_bridge_error_fails_the_delegated_operation(ds):
    import fiftyone.operators as foo
    from fiftyone.operators.delegated import DelegatedOperationService
    from fiftyone.operators.executor import ExecutionRunState

    queued = foo.execute_operator(URI + "compute_ot_agreement", ctx=dict(view=ds.view(), params=BAD,
                                                                           request_delegation=True))
    service = DelegatedOperationService()
    service.execute_queued_operations(operator=URI + "compute_ot_agreement", dataset_name=ds.name)
    doc = service.get(queued.result["id"])
    assert doc.run_state == ExecutionRunState.FAILED
    assert BAD_MESSAGE in doc.result.error
    service.delete_operation(doc.id)


# the helper on its own, with a stand-in context


class FakeCtx:
    """The parts of an ExecutionContext the helper uses."""

    def __init__(self, delegated: bool = False, app: bool = False):
        self.delegated = delegated
        self.request_params: dict[str, Any] = {"operator_uri": URI + "fake"} if app else {}
        self.operator_uri = URI + "fake"
        self.progress: list[tuple[float, str]] = []
        self.triggered: list[tuple[str, dict | None]] = []

    def set_progress(self, progress=None, label=None) -> None:
        self.progress.append((progress, label))

    def trigger(self, operator_name: str, params: dict | None = None):
        from fiftyone.operators.executor import Executor

        self.triggered.append((operator_name, params))
        return Executor().trigger(operator_name, params)


def _work(fail: type[BaseException] | None = None) -> Callable:
    def compute(progress) -> dict:
        progress(0.0, "first")
        progress(0.5, "second")
        progress(0.75, "second")
        if fail is not None:
            raise fail("the bridge says no")
        return {"value": np.float64(0.25), "long": 0.7073750991276765, "nested": {"x": [1 / 3]},
                "undefined": float("nan"), "thread": threading.current_thread().name}

    return compute


@pytest.mark.parametrize("delegated", [True, False])
def test_helper_reports_to_set_progress_and_returns_the_result_in_place(delegated):
    from operators.common import execute_with_progress

    ctx = FakeCtx(delegated=delegated)
    result = execute_with_progress(ctx, _work(), reload_dataset=True)
    assert result["thread"] == threading.current_thread().name and result["value"] == 0.25
    assert ctx.progress == [(0.0, "first"), (0.5, "second"), (0.75, "second")]
    # delegated runs never ask an App to reload
    assert ctx.triggered == ([] if delegated else [("reload_dataset", None)])
    for error in (ValueError, RuntimeError):  # a refusal and a fault alike
        with pytest.raises(error, match="the bridge says no"):
            execute_with_progress(FakeCtx(delegated=delegated), _work(fail=error))


def test_helper_streams_to_the_app_from_a_worker_thread():
    from operators.common import execute_with_progress

    ctx = FakeCtx(app=True)
    stream = execute_with_progress(ctx, _work(), reload_dataset=True)
    lines = [message.to_json() for message in stream]
    updates = [line["body"]["params"] for line in lines[:-2]]
    # every stage, in order; a fraction of a stage may be skipped when a later one of it is waiting
    assert [u["label"] for u in updates] in (["first", "second", "second"], ["first", "second"])
    assert updates[-1] == {"progress": 0.75, "label": "second"}
    assert lines[-2]["body"]["operator_uri"] == "reload_dataset"
    result = lines[-1]["body"]
    assert lines[-1]["cls"] == "ExecutionResult"
    assert result["value"] == "0.250" and result["undefined"] is None  # strict JSON
    assert result["long"] == "0.707" and result["nested"] == {"x": ["0.333"]}  # shown to 3 significant figures
    assert result["thread"] != threading.current_thread().name
    assert ctx.progress == []
    json.dumps(lines, allow_nan=False)

    # a fault of the code: the progress box says the run failed, and the stream ends with its error line
    failed = [m.to_json() for m in execute_with_progress(FakeCtx(app=True), _work(fail=RuntimeError))]
    assert failed[0]["body"]["params"]["label"] == "first"
    assert failed[-2]["body"]["params"] == {"progress": 0.75, "label": "failed during 'second': the bridge says no"}
    assert failed[-1]["error"] == "the bridge says no"
    assert not any(line["cls"] == "ExecutionResult" for line in failed)
    # a refusal: its message in the progress box, in place of the bar, and a notification; no error line
    refused = [m.to_json() for m in execute_with_progress(FakeCtx(app=True), _work(fail=ValueError))]
    uris = [line["body"]["operator_uri"] for line in refused[:-1]]
    assert uris[-2:] == ["notify", "show_output"] and set(uris[:-2]) == {"set_progress"}
    assert refused[-2]["body"]["params"]["results"] == {"refused": "the bridge says no"}
    assert refused[-1]["cls"] == "ExecutionResult" and refused[-1]["body"] == {}
    assert not any(line.get("error") for line in refused)


def test_helper_repeats_a_long_stage_with_the_time_spent(monkeypatch):
    """A stage that lasts (a consensus's EM, ...) is reported again every HEARTBEAT seconds with the time spent,
    and so is the start before the first stage: the App's progress box appears at once and never stalls."""
    from operators import common

    monkeypatch.setattr(common, "HEARTBEAT", 0.2)

    def compute(progress) -> dict:
        time.sleep(0.5)
        progress(0.1, "slow stage")
        time.sleep(1.3)
        progress(0.9, "last")
        return {}

    lines = [m.to_json() for m in common.execute_with_progress(FakeCtx(app=True), compute)]
    labels = [line["body"]["params"]["label"] for line in lines[:-1]]
    assert labels[0].startswith("starting · ")  # at once, before the bridge's first report
    slow = [label for label in labels if label.startswith("slow stage")]
    assert slow[0] == "slow stage" and len(slow) >= 4 and all(HEARTBEAT.search(s) for s in slow[1:])
    seconds = [int(s.split(" · ")[1][:-2]) for s in slow[1:]]
    assert seconds == sorted(seconds) and seconds[-1] >= 1  # the time since the start, growing
    assert labels[-1] == "last" and _stages(labels) == ["slow stage", "last"]


def test_helper_thins_a_flood_of_reports_to_the_latest_of_each_stage():
    from operators.common import execute_with_progress

    def compute(progress) -> dict:
        for stage in ("one", "two"):
            for i in range(2000):
                progress(i / 2000, stage)
        return {}

    lines = [m.to_json() for m in execute_with_progress(FakeCtx(app=True), compute)]
    labels = [line["body"]["params"]["label"] for line in lines[:-1]]
    assert labels == sorted(labels) and set(labels) == {"one", "two"}  # both, in order
    assert lines[-2]["body"]["params"] == {"progress": 1999 / 2000, "label": "two"}


def test_helper_puts_the_result_in_the_progress_box_and_triggers_after_the_run():
    """Given the operator's outputs, the App's stream ends with the result in the progress box
    (``show_output``, which replaces the progress bar: FiftyOne's App closes that box only by its button)
    and an empty ``ExecutionResult`` (the prompt closes instead of showing the result a second time
    underneath); the triggers (e.g. open the imported dataset) come after the run, never for a delegated one."""
    import fiftyone.operators.types as types

    from operators.common import execute_with_progress

    def outputs(result: dict):
        obj = types.Object()
        for name in result:
            obj.str(name, label=name)
        return types.Property(obj)

    def then(result: dict) -> list:
        return [("open_dataset", {"dataset": "made"})]

    lines = [m.to_json() for m in execute_with_progress(FakeCtx(app=True), _work(), reload_dataset=True,
                                                        outputs=outputs, triggers=then)]
    uris = [line["body"]["operator_uri"] for line in lines[:-1]]
    assert uris[-3:] == ["reload_dataset", "open_dataset", "show_output"]
    assert set(uris[:-3]) == {"set_progress"}
    shown = lines[-2]["body"]["params"]
    assert shown["results"]["long"] == "0.707" and shown["results"]["undefined"] is None
    assert set(shown["outputs"]["type"]["properties"]) == set(shown["results"])  # what outputs() declared
    assert lines[-1]["cls"] == "ExecutionResult" and lines[-1]["body"] == {}
    json.dumps(lines, allow_nan=False)

    sdk = FakeCtx()
    assert execute_with_progress(sdk, _work(), outputs=outputs, triggers=then)["value"] == 0.25
    assert sdk.triggered == [("open_dataset", {"dataset": "made"})]
    delegated = FakeCtx(delegated=True)
    execute_with_progress(delegated, _work(), outputs=outputs, triggers=then)
    assert delegated.triggered == []


def test_a_run_from_the_app_puts_the_users_sidebar_filters_back_after_the_reload(monkeypatch):
    """Issue 48 item 6: the App drops its sidebar filters when the reload after a run on the current view
    completes; the run (streamed or not) ends by triggering restore_filters with the request's filters, which
    sets them again after its delays. Without filters nothing is added."""
    import operators.app_filters as app_filters
    from operators.common import execute_with_progress, reload_triggers

    filters = {"kalos_alpha": {"range": [0.0, 0.3], "isMatching": True, "exclude": False}}
    ctx = FakeCtx(app=True)
    ctx.request_params["filters"] = filters
    restore = reload_triggers(ctx)[1:]
    assert restore in ([], [("@iaa/agreement/restore_filters", {"filters": filters})])  # [] on Apps without it
    lines = [m.to_json() for m in execute_with_progress(ctx, _work(), reload_dataset=True)]
    uris = [(line["body"].get("operator_uri"), line["body"].get("params")) for line in lines[:-1]]
    reload_at = [u for u, _ in uris].index("reload_dataset")
    assert [(u, p) for u, p in uris[reload_at + 1:] if u != "set_progress"] == restore
    sync = FakeCtx()
    sync.request_params["filters"] = filters
    execute_with_progress(sync, _work(), reload_dataset=True)
    assert sync.triggered == [("reload_dataset", None)] + restore
    plain = FakeCtx(app=True)
    assert "restore_filters" not in str([m.to_json() for m in execute_with_progress(plain, _work(),
                                                                                   reload_dataset=True)])
    # the operator itself: set_filters after each delay
    monkeypatch.setattr(app_filters, "RESTORE_DELAYS", (0.0, 0.0))
    op = FakeCtx(app=True)
    op.params = {"filters": filters}
    sent = list(app_filters.RestoreFilters().execute(op))
    assert len(sent) == 2 and op.triggered == [("set_filters", filters)] * 2
