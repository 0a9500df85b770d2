"""Long runs delegated (issue 51, item 4): the form says when a run would outlast an immediate run, offers
delegation (by default then), and a queued run completes through FiftyOne's delegated-operation service.

A run is queued with ``execute_operator(uri, ctx, request_delegation=True)`` and the queue is run in this
process by ``DelegatedOperationService.execute_queued_operations`` (what ``fiftyone delegated launch`` does,
one pass): the run must be registered, its values written (the same as an immediate run's) and its
progress recorded on the operation. FiftyOne's bound on an immediate run (``fo.config.operator_timeout``,
600 s by default) is lowered in the form tests so that a 4-sample view is "long".
"""

from __future__ import annotations

import pytest

from run_values import plain, same, shape, written

pytestmark = pytest.mark.fiftyone

URI = "@iaa/agreement/"
FIELDS = ["a", "b", "c"]
COMPUTE = ["compute_ot_agreement", "compute_kalos", "compute_geometry_agreement", "compute_consensus"]


@pytest.fixture
def ds(three_rater_samples, make_dataset):
    """4 samples, raters a/b/c with shifted copies of the same boxes; s2: a found nothing; s3: c not assigned."""
    return make_dataset(three_rater_samples)


# OT and KaLOS: tests/test_operators_progress.py's delegated test (which also checks every stage's label)
@pytest.mark.parametrize("name", ["compute_geometry_agreement", "compute_consensus"])
def test_a_queued_run_completes_through_the_service_with_its_values_and_progress(ds, name, delegated_progress):
    import fiftyone.operators as foo
    from fiftyone.operators.delegated import DelegatedOperationService
    from fiftyone.operators.executor import ExecutionRunState

    now = foo.execute_operator(URI + name, ctx=dict(view=ds.view(), params=dict(fields=FIELDS, key="now")))
    queued = foo.execute_operator(URI + name, ctx=dict(view=ds.view(), params=dict(fields=FIELDS, key="later"),
                                                       request_delegation=True))
    assert queued.delegated
    ds.reload()
    assert "later" not in ds.list_runs()  # queued, not run
    service = DelegatedOperationService()
    service.execute_queued_operations(operator=URI + name, dataset_name=ds.name)
    doc = service.get(queued.result["id"])
    try:
        assert doc.run_state == ExecutionRunState.COMPLETED, doc.result.error if doc.result else None
        ds.reload()
        assert "later" in ds.list_runs()  # registered
        # the same headline numbers and the same values written as the immediate run's
        later = doc.result.result
        assert later["key"] == "later"
        assert {k: v for k, v in later.items() if k != "key"}.keys() == \
            {k: v for k, v in now.result.items() if k != "key"}.keys()
        for k, v in now.result.items():
            if k != "key":
                assert same(later[k], v), (k, later[k], v)
        written_now, written_later = written(ds, "now"), written(ds, "later")
        assert written_now and written_now.keys() == written_later.keys()
        for k in written_now:
            a, b = plain(written_later[k], "later"), plain(written_now[k], "now")
            if k.endswith("_id"):  # ids of the labels each run made (a consensus): present on the same labels
                a, b = shape(a), shape(b)
            assert same(a, b), k
        # its progress: every stage recorded on the operation, the last one kept on it
        assert len(delegated_progress) >= 3 and delegated_progress[-1][1]
        assert all(0 <= p <= 1 for p, _ in delegated_progress)
        assert doc.status is not None and doc.status.label == delegated_progress[-1][1]
    finally:
        service.delete_operation(doc.id)


def _ctx(ds, name: str):
    from fiftyone.operators.executor import ExecutionContext

    return ExecutionContext(request_params={"dataset_name": ds.name, "view": ds.view()._serialize(),
                                            "operator_uri": URI + name, "params": dict(fields=FIELDS)})


@pytest.mark.parametrize("name", COMPUTE)
def test_the_form_says_a_long_run_is_over_the_limit_and_defaults_to_delegation(ds, name, monkeypatch, fo):
    import fiftyone.operators as foo

    op = foo.get_operator(URI + name)
    # a short run: no notice, immediate by default, delegation offered
    assert "long_run" not in op.resolve_input(_ctx(ds, name)).type.properties
    options = op.resolve_execution_options(_ctx(ds, name))
    assert options.allow_immediate_execution and options.allow_delegated_execution
    assert not options.default_choice_to_delegated
    # the same view against a bound it would exceed
    monkeypatch.setattr(fo.config, "operator_timeout", 1e-6)
    warning = op.resolve_input(_ctx(ds, name)).type.properties["long_run"].view
    assert warning.__class__.__name__ == "Warning"
    assert "over FiftyOne's" in warning.label and "delegate it" in warning.label
    assert "fiftyone delegated launch" in warning.description and "4 samples" in warning.description
    # how to schedule it from this App: FiftyOne's setting named when the App cannot (its default)
    assert "FIFTYONE_ALLOW_LEGACY_ORCHESTRATORS=true" in warning.description
    monkeypatch.setattr(fo.config, "allow_legacy_orchestrators", True)
    warning = op.resolve_input(_ctx(ds, name)).type.properties["long_run"].view
    assert "choose Schedule in the menu beside Execute" in warning.description
    assert "FIFTYONE_ALLOW_LEGACY_ORCHESTRATORS" not in warning.description
    options = op.resolve_execution_options(_ctx(ds, name))
    assert options.allow_immediate_execution and options.allow_delegated_execution
    assert options.default_choice_to_delegated


def test_the_estimate_counts_the_views_samples_and_labels(ds):
    from operators.common import SECONDS_PER_LABEL, SECONDS_PER_SAMPLE, duration_text, estimate_run

    assert [duration_text(s) for s in (0.2, 1, 40, 89, 90, 600, 1000)] == \
        ["1 second", "1 second", "40 seconds", "89 seconds", "2 minutes", "10 minutes", "17 minutes"]

    labels = sum(ds.count(f"{f}.detections") for f in FIELDS)
    est = estimate_run(ds, "compute_consensus", FIELDS)
    assert (est.n_samples, est.n_labels) == (4, labels)
    assert est.seconds == pytest.approx(4 * SECONDS_PER_SAMPLE + labels * SECONDS_PER_LABEL["compute_consensus"])
    # a million samples of 3 raters x 7 boxes, as the issue measured, is over the default 10 minutes
    scaled = 1_000_000 * SECONDS_PER_SAMPLE + 21_000_000 * SECONDS_PER_LABEL["compute_consensus"]
    assert scaled > 600
    assert estimate_run(ds, "compute_kalos", ["nope"]) is None  # not a label field: the run says why
    assert estimate_run(None, "compute_kalos", FIELDS) is None
