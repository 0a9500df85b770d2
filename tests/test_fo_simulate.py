"""simulate_raters through execute_operator: new fields only, both layouts, deletable."""

import pytest

pytestmark = pytest.mark.fiftyone

OP = "@iaa/agreement/simulate_raters"


@pytest.fixture
def ref_ds(fo, make_dataset):
    import numpy as np

    rng = np.random.default_rng(0)
    D = fo.Detections
    samples = []
    for i in range(25):
        boxes = [[float(x), float(y), 0.15, 0.15] for x, y in rng.uniform(0, 0.8, (int(rng.integers(1, 6)), 2))]
        samples.append(fo.Sample(filepath=f"/d/{i}.jpg", truth=D(detections=[
            fo.Detection(label=str(rng.choice(["a", "b"])), bounding_box=b) for b in boxes])))
    samples.append(fo.Sample(filepath="/d/none.jpg", truth=None))
    samples.append(fo.Sample(filepath="/d/empty.jpg", truth=D()))
    return make_dataset(samples)


def _run(ds, **params):
    import fiftyone.operators as foo

    return foo.execute_operator(OP, ctx=dict(view=ds.view(), params=params)).result


def test_fields_layout_adds_raters_and_leaves_the_reference(fo, ref_ds):
    from agreement.fo.reading import read_annotations
    from agreement.fo.runs import delete_agreement_run

    before_schema = set(ref_ds.get_field_schema(flat=True))
    before = ref_ds.values("truth.detections.bounding_box")
    out = _run(ref_ds, field="truth", key="sim", num_raters=3, magnitude=1.0, seed=4)
    assert out["fields"] == ["sim_r1", "sim_r2", "sim_r3"]
    assert ref_ds.values("truth.detections.bounding_box") == before
    read = read_annotations(ref_ds, fields=out["fields"])
    a = read.annotations
    assert not a.assigned[25].any()  # reference None: nobody assigned
    assert a.assigned[26].all() and a.counts()[26].sum() == 0  # empty reference: explicit absence
    again = _run(ref_ds, field="truth", key="sim2", num_raters=3, magnitude=1.0, seed=4)
    assert [ref_ds.values(f"sim2_r{i}.detections.bounding_box") for i in (1, 2, 3)] == \
        [ref_ds.values(f"sim_r{i}.detections.bounding_box") for i in (1, 2, 3)]  # deterministic
    delete_agreement_run(ref_ds, "sim")
    delete_agreement_run(ref_ds, "sim2")
    assert set(ref_ds.get_field_schema(flat=True)) == before_schema


def test_attribute_layout_and_perturbations(fo, ref_ds):
    from agreement.fo.reading import read_annotations

    out = _run(ref_ds, field="truth", key="drop", noise="drop", magnitude=0.5, num_raters=2, layout="attribute")
    a = read_annotations(ref_ds, field="drop_labels", raters_field="drop_raters").annotations
    assert a.raters == ("r1", "r2")
    n_ref = ref_ds.count("truth.detections")
    assert a.counts().sum() == pytest.approx(n_ref, rel=0.25)  # half of each of 2 raters' boxes
    assert out["labels"] == a.counts().sum()


@pytest.mark.parametrize(
    "params, message",
    [
        ({"magnitude": -1.0}, "magnitude"),
        ({"num_raters": 0}, "num_raters"),
        ({"noise": "nope"}, "noise"),
        ({"profile": "/no/such/profile.json"}, "profile"),
        ({"noise": "drop", "magnitude": 0.2, "profile": "mine.json"}, "profile"),  # never silently ignored
    ],
)
def test_bad_input_writes_nothing(fo, ref_ds, params, message):
    from fiftyone.operators.executor import ExecutionError

    before = set(ref_ds.get_field_schema(flat=True))
    with pytest.raises(ExecutionError, match=message):
        _run(ref_ds, **{"field": "truth", "key": "bad", **params})
    assert set(ref_ds.get_field_schema(flat=True)) == before and ref_ds.list_runs() == []


def test_empty_reference_is_refused(fo, make_dataset):
    from fiftyone.operators.executor import ExecutionError

    ds = make_dataset([fo.Sample(filepath="/d/e.jpg", truth=fo.Detections())])
    with pytest.raises(ExecutionError, match="has no labels"):
        _run(ds, field="truth", key="sim")
