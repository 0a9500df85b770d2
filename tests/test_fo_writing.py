"""Bulk write-back (agreement.fo.storage.writing.write_columns) on a real embedded-MongoDB dataset."""

import math

import pytest

pytestmark = pytest.mark.fiftyone


@pytest.fixture
def two_field_ds(fo, make_dataset):
    D = fo.Detections

    def det(label, **kw):
        return fo.Detection(label=label, bounding_box=[0.1, 0.1, 0.2, 0.2], **kw)

    return make_dataset([
        fo.Sample(filepath="/data/w0.jpg", a=D(detections=[det("cat", note="keep"), det("dog")]),
                  b=D(detections=[det("cat")])),
        fo.Sample(filepath="/data/w1.jpg", a=D(detections=[det("cow")]), b=D(detections=[det("cow"), det("x")])),
        fo.Sample(filepath="/data/w2.jpg", a=D(), b=None),
    ])


def _columns(ds, field):
    from agreement.fo.storage.writing import LabelColumns

    sids, lids = [], []
    for sid, ids in zip(ds.values("id"), ds.values(f"{field}.detections.id")):
        for lid in ids or []:
            sids.append(sid)
            lids.append(lid)
    return sids, lids, LabelColumns


def test_sample_fields_and_label_attrs_of_several_fields_go_out_in_one_update_per_sample(two_field_ds, monkeypatch):
    import agreement.fo.storage.writing as w

    ds = two_field_ds
    sa, la, LabelColumns = _columns(ds, "a")
    sb, lb, _ = _columns(ds, "b")
    sent = []
    real = w._bulk
    monkeypatch.setattr(w, "_bulk", lambda dataset, ops, *a: real(dataset, (batch := list(ops), sent.extend(batch))[0], *a))
    w.declare_sample_fields(ds, {"r_score": [0.5], "r_name": ["x"]})
    w.declare_label_attrs(ds, {"a.detections": {"r_cost": [0.1], "r_why": ["m"]}, "b.detections": {"r_cost": [0.1]}})
    sids = ds.values("id")
    before = ds.values("last_modified_at") if "last_modified_at" in ds.get_field_schema() else None
    written = w.write_columns(
        ds,
        {"r_score": {sids[0]: 0.25, sids[1]: float("nan")}, "r_name": {sids[0]: "first"}},
        [LabelColumns("a.detections", sa, la, {"r_cost": [0.5, None, 1.5], "r_why": ["m", "n", None]}),
         LabelColumns("b.detections", sb, lb, {"r_cost": [2.0, 3.0, float("nan")]})],
    )
    assert written == 3 + 2  # a: three labels with a value; b: the NaN label is not written
    assert len(sent) == 2  # w0 and w1; w2 has nothing to write
    assert ds.values("r_score") == [0.25, None, None] and ds.values("r_name") == ["first", None, None]
    assert ds.values("a.detections.r_cost") == [[0.5, None], [1.5], []]
    assert ds.values("a.detections.r_why") == [["m", "n"], [None], []]
    assert ds.values("b.detections.r_cost") == [[2.0], [3.0, None], None]
    # nothing else changed; FiftyOne sees the writes as modifications
    assert ds.values("a.detections.note") == [["keep", None], [None], []]
    assert ds.values("a.detections.label") == [["cat", "dog"], ["cow"], []]
    if "last_modified_at" in ds.get_field_schema():  # FiftyOne >= 1.0
        after = ds.values("last_modified_at")
        assert after[0] > before[0] and after[1] > before[1] and after[2] == before[2]


def test_a_label_deleted_since_the_read_is_skipped_not_an_error(fo, two_field_ds):
    import agreement.fo.storage.writing as w

    ds = two_field_ds
    sa, la, LabelColumns = _columns(ds, "a")
    sample = ds.first()
    sample["a"].detections = sample["a"].detections[1:]  # the user deletes the first label meanwhile
    sample.save()
    w.declare_label_attrs(ds, {"a.detections": {"r_cost": [0.1]}})
    w.write_columns(ds, label_columns=[LabelColumns("a.detections", sa, la, {"r_cost": [0.5, 0.75, 1.5]})])
    assert ds.values("a.detections.r_cost") == [[0.75], [1.5], []]


def test_write_run_columns_refuses_what_the_run_did_not_plan(two_field_ds):
    from agreement.fo import runs

    ds = two_field_ds
    sa, la, _ = _columns(ds, "a")
    plan = runs.prepare_run(ds, "wr", "iaa.test", ["score"], ["a"], ["cost"])
    with pytest.raises(runs.RunError, match="'wr_other' was not planned"):
        runs.write_run_columns(ds, plan, {"other": {sa[0]: 1.0}})
    with pytest.raises(runs.RunError, match="'wr_why' on 'a' was not planned"):
        runs.write_run_columns(ds, plan, label_values={"a": (sa, la, {"why": ["x"] * len(la)})})
    n = runs.write_run_columns(ds, plan, {"score": {sa[0]: 1.0}}, {"a": (sa, la, {"cost": [0.1, 0.2, 0.3]})})
    assert n == 3 and ds.values("wr_score")[0] == 1.0
    assert ds.get_field("a.detections.wr_cost") is not None and ds.get_field("wr_score") is not None
    assert all(not (isinstance(v, float) and math.isnan(v)) for v in ds.values("wr_score"))


def _stored(ds, field):
    return {sid: ids for sid, ids in zip(ds.values("id"), ds.values(f"{field}.detections.id"))}


def test_labels_are_addressed_by_position_under_a_guard_when_the_list_as_read_is_given(two_field_ds, monkeypatch):
    import agreement.fo.storage.writing as w

    ds = two_field_ds
    sa, la, LabelColumns = _columns(ds, "a")
    sent = []
    real = w._bulk
    monkeypatch.setattr(w, "_bulk", lambda dataset, ops, *a: real(dataset, (batch := list(ops), sent.extend(batch))[0], *a))
    w.declare_label_attrs(ds, {"a.detections": {"p_cost": [0.1]}})
    w.write_columns(ds, label_columns=[LabelColumns("a.detections", sa, la, {"p_cost": [0.5, 1.0, 1.5]},
                                                    _stored(ds, "a"))])
    assert ds.values("a.detections.p_cost") == [[0.5, 1.0], [1.5], []]
    docs = [op._doc for op in sent]
    assert all("$[" not in path for d in docs for path in d["$set"]) and all(op._array_filters is None for op in sent)
    assert all("$expr" in op._filter for op in sent)


def test_a_label_appended_since_the_read_fails_the_guard_too(fo, two_field_ds, monkeypatch):
    """The guard checks the whole list as read: a label added after the last one read (the positions
    written are still right) fails it as well, and the sample is written again by id."""
    import agreement.fo.storage.writing as w

    ds = two_field_ds
    sa, la, LabelColumns = _columns(ds, "a")
    stored = _stored(ds, "a")
    sample = ds.first()
    sample["a"].detections = sample["a"].detections + [fo.Detection(label="late", bounding_box=[0, 0, 0.1, 0.1])]
    sample.save()
    w.declare_label_attrs(ds, {"a.detections": {"h_cost": [0.1]}})
    retried = []
    real = w._retry_by_id

    def retry(dataset, sample_columns, label_columns, sids, *args, **kwargs):
        retried.append(set(sids))
        return real(dataset, sample_columns, label_columns, sids, *args, **kwargs)

    monkeypatch.setattr(w, "_retry_by_id", retry)
    w.write_columns(ds, label_columns=[LabelColumns("a.detections", sa, la, {"h_cost": [0.5, 1.0, 1.5]}, stored)])
    assert len(retried) == 1 and sample.id in retried[0]  # a batch reports a count: its samples are retried
    assert ds.values("a.detections.h_cost") == [[0.5, 1.0, None], [1.5], []]


def test_a_list_changed_since_the_read_fails_its_guard_and_is_written_by_id(fo, two_field_ds):
    import agreement.fo.storage.writing as w

    ds = two_field_ds
    sa, la, LabelColumns = _columns(ds, "a")
    stored = _stored(ds, "a")
    sample = ds.first()  # the user inserts a label in front of the others after the read
    sample["a"].detections = [fo.Detection(label="new", bounding_box=[0, 0, 0.1, 0.1])] + sample["a"].detections
    sample.save()
    w.declare_label_attrs(ds, {"a.detections": {"g_cost": [0.1]}})
    n = w.write_columns(ds, label_columns=[LabelColumns("a.detections", sa, la, {"g_cost": [0.5, 1.0, 1.5]}, stored)])
    assert n == 3
    assert ds.values("a.detections.label")[0] == ["new", "cat", "dog"]
    assert ds.values("a.detections.g_cost") == [[None, 0.5, 1.0], [1.5], []]


def test_a_run_on_a_view_that_filters_labels_writes_only_the_labels_in_the_view(fo, two_field_ds):
    """The view hides the first label of a list: positions as read differ from the stored ones, the guard
    fails and the run's values still land on the right labels."""
    from fiftyone import ViewField as F

    from agreement.fo.methods.kalos import compute_kalos

    ds = two_field_ds
    view = ds.filter_labels("a", F("label") != "cat", only_matches=False)
    compute_kalos(view, "fv", fields=["a", "b"])
    labels, units = ds.values("a.detections.label"), ds.values("a.detections.fv_unit")
    assert labels[0] == ["cat", "dog"]
    assert units[0][0] is None and units[0][1] is not None  # cat is outside the view: untouched
    assert units[1][0] is not None


def test_new_object_ids_are_distinct_valid_and_stamped_now():
    import time

    from bson import ObjectId

    import agreement.fo.storage.writing as w

    ids = w.new_object_ids(5000)
    assert len(set(ids)) == 5000 and all(isinstance(i, ObjectId) for i in ids)
    assert all(abs(i.generation_time.timestamp() - time.time()) < 120 for i in ids[:: 997])
    assert len(set(ids) | set(w.new_object_ids(5000))) == 10_000  # two calls in the same second do not collide
    assert w.new_object_ids(0) == []


def test_object_id_bytes_and_strings_agree_with_bson():
    from bson import ObjectId

    import agreement.fo.storage.writing as w

    raw = w.new_object_id_bytes(1000)
    strings = w.object_id_strings(raw)
    assert len(raw) == 12000 and len(set(strings.tolist())) == 1000
    assert all(str(ObjectId(raw[12 * i: 12 * i + 12])) == strings[i] for i in range(0, 1000, 37))
    assert w.new_object_id_bytes(0) == b"" and len(w.object_id_strings(b"")) == 0


def _read_stamps(ds):
    """Sample id -> last_modified_at as stored (what the reader takes with the labels)."""
    from agreement.fo.storage.projection import read_values

    ids, stamps = read_values(ds, ["id", "last_modified_at"])
    return dict(zip(ids, stamps))


def test_positions_are_guarded_by_the_modification_stamp_read_with_them(two_field_ds, monkeypatch):
    """With the stamps read with the lists, a write by position is guarded by last_modified_at (a
    plain equality) instead of comparing every list in an $expr; the values land by position."""
    import agreement.fo.storage.writing as w

    ds = two_field_ds
    sa, la, LabelColumns = _columns(ds, "a")
    sent = []
    real = w._bulk
    monkeypatch.setattr(w, "_bulk", lambda dataset, ops, *a: real(dataset, (batch := list(ops), sent.extend(batch))[0], *a))
    stamps = _read_stamps(ds)
    assert all(v is not None for v in stamps.values())
    w.declare_label_attrs(ds, {"a.detections": {"s_cost": [0.1]}})
    w.write_columns(ds, label_columns=[LabelColumns("a.detections", sa, la, {"s_cost": [0.5, 1.0, 1.5]},
                                                    _stored(ds, "a"))], read_stamps=stamps)
    assert ds.values("a.detections.s_cost") == [[0.5, 1.0], [1.5], []]
    assert [sorted(op._filter) for op in sent] == [["_id", "last_modified_at"]] * 2
    assert all(op._array_filters is None for op in sent)


def test_a_sample_changed_since_its_stamp_was_read_is_written_by_id(fo, two_field_ds):
    """The user inserts a label in front after the read: the sample's stamp moved, its guard fails, and
    its values are written by id onto the right labels."""
    import time

    import agreement.fo.storage.writing as w

    ds = two_field_ds
    sa, la, LabelColumns = _columns(ds, "a")
    stored, stamps = _stored(ds, "a"), _read_stamps(ds)
    time.sleep(0.01)  # the stamp has millisecond resolution
    sample = ds.first()
    sample["a"].detections = [fo.Detection(label="new", bounding_box=[0, 0, 0.1, 0.1])] + sample["a"].detections
    sample.save()
    w.declare_label_attrs(ds, {"a.detections": {"t_cost": [0.1]}})
    w.write_columns(ds, label_columns=[LabelColumns("a.detections", sa, la, {"t_cost": [0.5, 1.0, 1.5]}, stored)],
                    read_stamps=stamps)
    assert ds.values("a.detections.label")[0] == ["new", "cat", "dog"]
    assert ds.values("a.detections.t_cost") == [[None, 0.5, 1.0], [1.5], []]


def test_stamps_are_read_only_where_the_lists_read_are_the_stored_lists(fo, two_field_ds):
    """A dataset, or a view that selects and sorts samples, reads the stamps with the labels; a view that
    filters labels does not (its positions are not the stored ones), and its writes keep the $expr guard."""
    from fiftyone import ViewField as F

    from agreement.fo.storage.reading import positions_as_stored, read_annotations

    ds = two_field_ds
    assert positions_as_stored(ds) and positions_as_stored(ds.select(ds.values("id")[:2]).sort_by("filepath"))
    assert not positions_as_stored(ds.filter_labels("a", F("label") != "cat"))
    assert not positions_as_stored(ds.to_patches("a"))
    read = read_annotations(ds, fields=["a", "b"])
    assert read.stamps_of() == {sid: t for sid, t in _read_stamps(ds).items()}
    assert read_annotations(ds.filter_labels("a", F("label") != "cat", only_matches=False),
                            fields=["a", "b"]).stamps_of() is None


def _count_retries(monkeypatch):
    """The sample ids each call of the by-id write (a failed positional guard) was given."""
    import agreement.fo.storage.writing as w

    retried, real = [], w._retry_by_id

    def retry(dataset, sample_columns, label_columns, sids, *args, **kwargs):
        retried.append(set(sids))
        return real(dataset, sample_columns, label_columns, sids, *args, **kwargs)

    monkeypatch.setattr(w, "_retry_by_id", retry)
    return retried


@pytest.mark.parametrize("how", ["streamed", "whole corpus"])
def test_an_overwrite_writes_by_position_without_a_second_pass(fo, two_field_ds, monkeypatch, how):
    """Freeing the overwritten run deletes its fields, which FiftyOne does by restamping every sample:
    the stamps read before the free are refreshed, so no guard fails and nothing is written twice."""
    from agreement.fo.methods.consensus import compute_consensus
    from agreement.fo.methods.kalos import compute_kalos

    ds = two_field_ds
    run = (lambda **kw: compute_kalos(ds, "ow", fields=["a", "b"], **kw)) if how == "streamed" else \
        (lambda **kw: compute_consensus(ds, "ow", fields=["a", "b"], **kw))
    run()
    first = {p: ds.values(p) for p in ("a.detections.ow_unit", "a.detections.ow_agrees") if ds.get_field(p)}
    retried = _count_retries(monkeypatch)
    run(overwrite=True)
    assert retried == [] and first
    for path, values in first.items():
        assert ds.values(path) == values  # the same input: the same values, on the same labels


def test_an_edit_before_the_overwrite_frees_the_old_run_is_still_caught(fo, two_field_ds, monkeypatch):
    """A label inserted after the read, before the free, keeps its stale stamp: its sample's guard
    fails and its values go onto the right labels by id, the other samples' are written by position."""
    import time

    import agreement.fo.runs.engine as engine
    from agreement.fo.methods.kalos import compute_kalos

    ds = two_field_ds
    compute_kalos(ds, "oe", fields=["a", "b"])
    real_stamps, edited = engine.current_stamps, []

    def edit_then_read_stamps(samples, ids):  # first called after the read, just before the free
        if not edited:
            time.sleep(0.01)  # the stamp has millisecond resolution
            sample = ds.first()
            sample["a"].detections = [fo.Detection(label="new", bounding_box=[0, 0, 0.1, 0.1])] + \
                sample["a"].detections
            sample.save()
            edited.append(sample.id)
        return real_stamps(samples, ids)

    monkeypatch.setattr(engine, "current_stamps", edit_then_read_stamps)
    retried = _count_retries(monkeypatch)
    compute_kalos(ds, "oe", fields=["a", "b"], overwrite=True)
    assert len(retried) == 1 and edited[0] in retried[0] and len(retried[0]) <= 2  # a batch's samples
    labels, units = ds.values("a.detections.label")[0], ds.values("a.detections.oe_unit")[0]
    assert labels == ["new", "cat", "dog"] and units[0] is None and None not in units[1:]
