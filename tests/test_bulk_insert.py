"""The bulk insert of raw sample documents (agreement.fo.storage.bulk_insert) makes the dataset FiftyOne's own
add_samples makes: the judgement import through it against the same import through FiftyOne objects (the
way it was written before, kept here only as the reference), document by document and field by field, and
FiftyOne loads, filters, counts, clones and exports the result; bad documents are refused by name."""

from __future__ import annotations

import datetime
import warnings

import pytest
from bson import ObjectId

pytestmark = pytest.mark.fiftyone

# stamped or random per write: compared by type and range, not by value
VOLATILE = {"_id", "id", "created_at", "last_modified_at", "_dataset_id", "_rand"}


def strip_volatile(value):
    """A document without its volatile keys, recursively (also used by bench/import_bench.py)."""
    if isinstance(value, dict):
        return {k: strip_volatile(v) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list):
        return [strip_volatile(v) for v in value]
    return value


def _shape(value):
    """Keys in order and value types, recursively: what a stored document looks like, values aside."""
    if isinstance(value, dict):
        return [(k, _shape(v)) for k, v in value.items()]
    if isinstance(value, list):
        return [_shape(v) for v in value]
    return type(value).__name__


# ------------------------------------------------------------------ the reference: FiftyOne objects, one by one
def reference_samples(ratings, field, rater_attr, paths):
    """The import's samples as FiftyOne objects, as import_judgements built them before the bulk insert (also the
    baseline of bench/import_bench.py)."""
    import numpy as np

    import fiftyone as fo

    raters = np.asarray(ratings.raters, dtype=object)
    out = []
    for s, item in enumerate(ratings.sample_ids):
        row = ratings.codes[s]
        judged = np.flatnonzero(ratings.assigned[s])
        labels = [fo.Classification(label=str(ratings.classes[row[r]]), **{rater_attr: str(raters[r])})
                  for r in judged if row[r] >= 0]
        out.append((paths[s], {"item": str(item), field: fo.Classifications(classifications=labels),
                               "raters": [str(raters[r]) for r in judged]}))
    return out


def reference_insert(dataset, samples, *, media_type):
    from agreement.fo.importers.media_types import media_sample

    dataset.add_samples([media_sample(path, media_type, **kw) for path, kw in samples], progress=False)


def _import_both(tmp_path, monkeypatch, lines, **kwargs):
    """The same judgement file imported through the bulk insert and through FiftyOne objects."""
    import agreement.fo.importers.judgements as J

    path = tmp_path / "crowd.tsv"
    path.write_text("".join("\t".join(line) + "\n" for line in lines))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        bulk, bulk_record = J.import_judgements(str(path), "bulk", persistent=False, **kwargs)
        with monkeypatch.context() as m:
            m.setattr(J, "_sample_docs", reference_samples)
            m.setattr(J, "insert_sample_docs", reference_insert)
            m.setattr(J, "_declare_fields", lambda dataset, field, media_type: None)
            ref, ref_record = J.import_judgements(str(path), "ref", persistent=False, **kwargs)
    return bulk, bulk_record, ref, ref_record


LINES = [("w1", "a.jpg", "x"), ("w2", "a.jpg", "y"), ("w3", "a.jpg", "x"), ("w1", "http://site.com/b", "y"),
         ("w3", "http://site.com/b", "odd"), ("w2", "c.png", "x"), ("w2", "d", "y"), ("w1", "d", "y")]


@pytest.fixture
def both(fo, tmp_path, monkeypatch):
    made = _import_both(tmp_path, monkeypatch, LINES, categories=["x", "y"], unknown_labels="drop",
                        rater_attr="worker")
    yield made
    for name in ("bulk", "ref"):
        if fo.dataset_exists(name):
            fo.delete_dataset(name)


def test_documents_equal_those_add_samples_writes(both):
    bulk, bulk_record, ref, ref_record = both
    assert bulk_record == ref_record and bulk.info == ref.info and bulk.classes == ref.classes
    assert bulk.media_type == ref.media_type == "image"
    new = list(bulk._sample_collection.find())
    old = list(ref._sample_collection.find())
    assert [d["item"] for d in new] == [d["item"] for d in old] == ["a.jpg", "c.png", "d", "http://site.com/b"]
    assert [strip_volatile(d) for d in new] == [strip_volatile(d) for d in old]
    assert [_shape(d) for d in new] == [_shape(d) for d in old]  # same keys in the same order, same types
    for d in new:
        assert d["_dataset_id"] == bulk._doc.id and isinstance(d["_id"], ObjectId)
        assert 0.999 <= d["_rand"] < 1.0 and isinstance(d["created_at"], datetime.datetime)
        assert d["created_at"] == d["last_modified_at"]
        assert all(isinstance(c["_id"], ObjectId) for c in d["judgements"]["classifications"])
    label_ids = [c["_id"] for d in new for c in d["judgements"]["classifications"]]
    assert len(set(label_ids)) == len(label_ids) == 7  # the unknown 'odd' dropped, its worker still assigned
    assert [strip_volatile(s.to_dict()) for s in bulk] == [strip_volatile(s.to_dict()) for s in ref]


def test_schema_equals_the_inferred_one(fo, both):
    bulk, _, ref, _ = both
    for flat in (False, True):
        for private in (False, True):
            got = bulk.get_field_schema(flat=flat, include_private=private)
            want = ref.get_field_schema(flat=flat, include_private=private)
            assert list(got) == list(want)
            assert {k: str(v) for k, v in got.items()} == {k: str(v) for k, v in want.items()}
    schema = bulk.get_field_schema()
    assert schema["judgements"].document_type is fo.Classifications
    assert isinstance(schema["raters"], fo.ListField) and isinstance(schema["raters"].field, fo.StringField)
    flat = bulk.get_field_schema(flat=True)
    assert flat["judgements.classifications"].field.document_type is fo.Classification
    assert bulk.get_field_schema(embedded_doc_type=fo.Classifications).keys() == {"judgements"}
    assert bulk._doc.app_config.to_dict() == ref._doc.app_config.to_dict()


def test_fiftyone_loads_filters_counts_clones_and_exports_it(fo, both, tmp_path):
    from fiftyone import ViewField as F

    bulk, _, ref, _ = both
    first = bulk.first()
    assert isinstance(first.judgements, fo.Classifications)
    assert isinstance(first.judgements.classifications[0], fo.Classification)
    assert first.judgements.classifications[0].worker == "w1"
    for ds in (bulk, ref):  # the same answers from both
        assert ds.count_values("judgements.classifications.label") == {"x": 3, "y": 4}
        assert ds.count_values("judgements.classifications.worker") == {"w1": 3, "w2": 3, "w3": 1}
        assert len(ds.filter_labels("judgements", F("label") == "y")) == 3
        assert ds.match(F("raters").length() == 3).values("item") == ["a.jpg"]
    some = bulk.values("judgements.classifications.id", unwind=True)[:2]
    assert len(bulk.select_labels(ids=some)) == 1 and len(bulk.take(2, seed=1)) == 2
    first.judgements.classifications[0].label = "y"  # an edit through FiftyOne saves
    first.save()
    assert bulk.count_values("judgements.classifications.label") == {"x": 2, "y": 5}
    clone = bulk.clone()
    assert clone.values("item") == bulk.values("item")
    assert clone.count("judgements.classifications") == 7
    clone.delete()
    bulk.export(export_dir=str(tmp_path / "export"), dataset_type=fo.types.FiftyOneDataset,
               export_media=False)
    back = fo.Dataset.from_dir(str(tmp_path / "export"), dataset_type=fo.types.FiftyOneDataset)
    try:
        assert back.values("raters") == bulk.values("raters")
        assert back.count_values("judgements.classifications.worker") == {"w1": 3, "w2": 3, "w3": 1}
    finally:
        back.delete()
    bulk.add_samples([fo.Sample(filepath="/x/e.jpg", item="e")])  # FiftyOne's own adds still fit the schema
    assert bulk.values("item")[-1] == "e" and len(bulk) == 5


# ------------------------------------------------------------------------------------- the writer on its own
def test_label_docs_are_fresh_and_reusable_for_other_label_types(fo, make_dataset):
    from agreement.fo.storage.bulk_insert import insert_sample_docs, label_doc_builder

    make = label_doc_builder(fo.Detection)
    a, b = make(label="cat", bounding_box=[0.1, 0.1, 0.2, 0.2]), make(label="dog", bounding_box=[0, 0, 1, 1],
                                                                          confidence=None)
    assert a["_id"] != b["_id"] and a["tags"] is not b["tags"] and "confidence" not in b
    assert a["_cls"] == "Detection" and "_id" not in label_doc_builder(fo.Detections)()
    ds = make_dataset()
    ds.add_sample_field("gt", fo.EmbeddedDocumentField, embedded_doc_type=fo.Detections)
    ids = insert_sample_docs(ds, [{"filepath": "/x/../y/1.png", "gt": label_doc_builder(fo.Detections)(
        detections=[a, b])}])
    sample = ds[ids[0]]
    assert sample.filepath == "/y/1.png" and sample.media_type == "image" and sample.tags == []
    assert [d.label for d in sample.gt.detections] == ["cat", "dog"] and sample.gt.detections[0].id == str(a["_id"])
    assert ds.bounds("gt.detections.bounding_box") is not None


def test_bad_documents_are_refused_naming_sample_and_field(fo, make_dataset):
    from agreement.fo.storage.bulk_insert import insert_sample_docs, label_doc_builder

    ds = make_dataset()
    ds.add_sample_field("gt", fo.EmbeddedDocumentField, embedded_doc_type=fo.Classifications)
    good = {"filepath": "/a.jpg"}
    cases: list[tuple[dict, str]] = [
        ({"filepath": "/b.jpg", "other": 1}, r"sample 1 \('/b.jpg'\): field 'other' is not declared"),
        ({"filepath": "/b.jpg", "gt": label_doc_builder(fo.Classification)(label="x")},
         r"sample 1 .*field 'gt' holds Classifications documents, got 'Classification'"),
        ({"filepath": "/b.jpg", "_rand": 0.5}, r"sample 1 .*field '_rand' is written by the bulk insert"),
        ({"item": "no path"}, r"sample 1 \(None\): 'filepath' must be a non-empty string"),
        ({"filepath": "/v.mp4"}, r"sample 1 \('/v.mp4'\): media type 'video' cannot be bulk inserted"),
    ]
    for doc, message in cases:
        with pytest.raises(ValueError, match=message):
            insert_sample_docs(ds, [good, doc])
        assert len(ds) == 0  # checked before anything is written
    assert insert_sample_docs(ds, []) == []


def test_judgement_import_refuses_field_names_it_cannot_store(fo, tmp_path):
    from agreement.fo.importers.judgements import import_judgements

    path = tmp_path / "j.tsv"
    path.write_text("w1\ti\tx\nw2\ti\ty\n")
    with pytest.raises(ValueError, match=r"rater_attr='label': a Classification's own attributes"):
        import_judgements(str(path), "jn", persistent=False, rater_attr="label")
    with pytest.raises(ValueError, match=r"field='raters': the label field needs a name other than"):
        import_judgements(str(path), "jn", persistent=False, field="raters")
    assert not fo.dataset_exists("jn")
