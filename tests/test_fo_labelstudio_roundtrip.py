"""The labelling round trip against a real Label Studio server (issue 52): suggest -> request_labels ->
simulated annotators (Label Studio's REST API) -> load_requested_labels -> the run equals a full recomputation;
the refusals (no run, an existing rater, a budget larger than the samples, a backend not configured or not
reachable, tasks mapped to other samples) write nothing, and a failed load leaves the run as it was.

The server is the session's (``labelstudio_server`` in conftest.py, :mod:`labelstudio_server`): skipped when
``.venv/labelstudio`` is absent, failed instead under ``make test`` (``IAA_REQUIRE_LABELSTUDIO=1``).
"""

from __future__ import annotations

import json
import os
from typing import Any

import numpy as np
import pytest

pytestmark = pytest.mark.fiftyone

RATERS = ["rater_1", "rater_2", "rater_3"]
CLASSES = ["bird", "cat", "dog"]
S = 12


@pytest.fixture(scope="module")
def sdk():
    """FiftyOne's Label Studio backend imports label_studio_sdk (requirements-test-nodeps.txt)."""
    if os.environ.get("IAA_REQUIRE_LABELSTUDIO") == "1":
        import label_studio_sdk  # noqa: F401 - fails loudly under make test

        return
    pytest.importorskip("label_studio_sdk")


@pytest.fixture(scope="module")
def crowd(fo, module_dataset, tmp_path_factory):
    """Twelve small images, three raters of three classes (a noisy crowd), a consensus run ``cons``."""
    import cv2

    import fiftyone.operators as foo

    folder = tmp_path_factory.mktemp("ls_images")
    rng = np.random.default_rng(5)
    truth = rng.integers(0, 3, S)
    samples = []
    for s in range(S):
        path = str(folder / f"img_{s:02d}.png")
        cv2.imwrite(path, np.full((8, 8, 3), 20 * s, np.uint8))
        sample = fo.Sample(filepath=path)
        for r in RATERS:
            c = truth[s] if rng.random() < 0.7 else rng.integers(0, 3)
            sample[r] = fo.Classification(label=CLASSES[c])
        samples.append(sample)
    ds = module_dataset(samples)
    foo.get_operator("@iaa/agreement/compute_consensus")(ds, key="cons", fields=RATERS)
    return ds, truth


@pytest.fixture
def ls(labelstudio_server, sdk, monkeypatch):
    """FiftyOne's annotation config pointed at the session's server (the only place the URL and key live)."""
    import fiftyone as fo

    conf = fo.annotation_config.backends["labelstudio"]
    monkeypatch.setitem(conf, "url", labelstudio_server.url)
    monkeypatch.setitem(conf, "api_key", labelstudio_server.token)
    return labelstudio_server


def _annotate(server, ds, anno_key: str, rater: str, label_of) -> int:
    """A simulated annotator: one Label Studio annotation per task of round ``anno_key`` (REST API), the class
    ``label_of(sample)``; returns the tasks annotated."""
    import requests

    results = ds.load_annotation_results(anno_key, cache=False)
    headers = {"Authorization": f"Token {server.token}"}
    for task_id, sample_id in results.uploaded_tasks.items():
        body: dict[str, Any] = {"result": [{"from_name": rater, "to_name": "image", "type": "choices",
                            "value": {"choices": [label_of(ds[sample_id])]}}]}
        r = requests.post(f"{server.url}/api/tasks/{task_id}/annotations/", headers=headers, json=body, timeout=30)
        assert r.status_code == 201, r.text
    return len(results.uploaded_tasks)


def _op(name: str):
    import fiftyone.operators as foo

    return foo.get_operator(f"@iaa/agreement/{name}")


def _suggest(ds, key: str, budget: int) -> list[str]:
    """suggest_relabel's ranked samples (its operator writes ``{key}_relabel_priority``)."""
    out = _op("suggest_relabel")(ds, key=key, budget=budget)
    return list(out["sample_ids"])


def _shows_every_key(name: str, result: dict) -> None:
    """The operator's output (as the App resolves it for this result) has a labelled property per key."""
    from types import SimpleNamespace

    shown = _op(name).resolve_output(SimpleNamespace(results=result)).type.properties
    valued = {k for k, v in result.items() if v not in (None, "", [], {})}
    assert valued <= set(shown), (name, sorted(valued - set(shown)))
    assert all(p.view is not None and p.view.label for p in shown.values()), name


def _state(ds, key: str) -> tuple:
    """What a failed round must leave as it was: the run's summary, fields and values, the dataset's fields."""
    from agreement.fo.runs.store import get_agreement_run_info, load_agreement_results

    info = get_agreement_run_info(ds, key)
    values = {f: [None if v is None else (v.label if hasattr(v, "label") else v) for v in ds.values(f)]
              for f in info["sample_fields"]}
    return (load_agreement_results(ds, key)["summary"], info["input"], info["sample_fields"], values,
            sorted(ds.get_field_schema()), ds.list_runs())


def test_round_trip_equals_a_full_recomputation(ls, crowd, clone_dataset):
    from agreement.fo.labelling.history import headline, run_rounds
    from agreement.fo.runs.store import get_agreement_run_info, load_agreement_results

    base, truth = crowd
    ds = clone_dataset(base)
    ranked = _suggest(ds, "cons", 5)
    sent = _op("request_labels")(ds, key="cons", budget=5)
    assert sent["rater"] == "rater_4" and sent["n_samples"] == 5 and sent["round"] == 1
    assert sent["anno_key"] == "cons_round_1" and sent["sample_ids"] == ranked
    assert "rater_4" not in ds.get_field_schema()  # written only by the load
    rounds = run_rounds(ds, "cons")
    assert [(r["rater"], r["status"], r["n_samples"]) for r in rounds] == [("rater_4", "sent", 5)]
    # the URL and key live in FiftyOne's annotation config only
    stored = json.dumps(ds.get_annotation_info("cons_round_1").config.serialize()) + json.dumps(rounds)
    assert ls.url not in stored and ls.token not in stored

    _shows_every_key("request_labels", sent)
    order = {sid: i for i, sid in enumerate(ds.values("id"))}
    assert _annotate(ls, ds, "cons_round_1", "rater_4", lambda smp: CLASSES[truth[order[smp.id]]]) == 5
    got = _op("load_requested_labels")(ds, key="cons")
    assert got["rater"] == "rater_4" and got["n_loaded"] == 5 and got["round"] == 1
    assert got["before"]["n_raters"] == 3 and got["after"]["n_raters"] == 4
    assert sorted(ds.exists("rater_4").values("id")) == sorted(ranked)
    _shows_every_key("load_requested_labels", got)

    _op("compute_consensus")(ds, key="fresh", fields=RATERS + ["rater_4"])
    ours, fresh = load_agreement_results(ds, "cons"), load_agreement_results(ds, "fresh")
    assert ours["summary"] == fresh["summary"]
    assert get_agreement_run_info(ds, "cons")["input"]["fields"] == RATERS + ["rater_4"]
    assert [c.label for c in ds.values("cons_consensus")] == [c.label for c in ds.values("fresh_consensus")]
    assert ds.values("cons_min_confidence") == ds.values("fresh_min_confidence")
    assert "cons_relabel_priority" not in ds.get_field_schema()  # stale priorities left with the old run
    assert not [k for k in ds.list_runs() if k.startswith("cons_before_round")]

    rounds = run_rounds(ds, "cons")  # the history survives the recomputation, follows a rename, goes with the run
    assert rounds[0]["status"] == "loaded" and rounds[0]["after"] == got["after"]
    assert got["after"] == headline(ds, "cons")  # the computed summary's headline is the stored one's
    ds.rename_run("cons", "renamed")
    assert run_rounds(ds, "renamed") == rounds
    ds.delete_run("renamed")
    with pytest.raises(ValueError, match="no agreement run"):
        run_rounds(ds, "renamed")


def test_refusals_write_nothing(ls, crowd, clone_dataset, monkeypatch):
    import fiftyone as fo

    from agreement.fo.labelling.backend import LabellingBackendError
    from agreement.fo.labelling.request import request_labels
    from agreement.fo.runs.errors import RunError

    ds = clone_dataset(crowd[0])
    before = _state(ds, "cons")
    request = _op("request_labels")
    with pytest.raises(RunError, match="no agreement run 'nope'"):
        request_labels(ds, "nope", source="view")
    with pytest.raises(ValueError, match="'nope' is not a valid value of parameter 'key'"):
        request(ds, key="nope", source="view")
    with pytest.raises(RunError, match="'rater_2' is already a rater of run 'cons'"):
        request(ds, key="cons", source="view", rater="rater_2")
    with pytest.raises(RunError, match="field 'filepath' already exists"):
        request(ds, key="cons", source="view", rater="filepath")
    with pytest.raises(RunError, match=f"budget 100 is larger than the {S} samples"):
        request(ds, key="cons", source="view", budget=100)
    with pytest.raises(RunError, match="no relabel priorities"):
        request(ds, key="cons", budget=3)
    conf = fo.annotation_config.backends["labelstudio"]
    monkeypatch.setitem(conf, "api_key", None)
    with pytest.raises(LabellingBackendError, match="FIFTYONE_LABELSTUDIO_API_KEY"):
        request(ds, key="cons", source="view", budget=2)
    monkeypatch.setitem(conf, "api_key", ls.token)
    monkeypatch.setitem(conf, "url", "http://127.0.0.1:9")  # nothing listens there
    with pytest.raises(LabellingBackendError, match="cannot be reached.*FIFTYONE_LABELSTUDIO_URL"):
        request(ds, key="cons", source="view", budget=2)
    assert _state(ds, "cons") == before and not ds.list_annotation_runs()


def test_labels_for_other_samples_are_refused(ls, crowd, clone_dataset):
    import fiftyone.core.annotation as foan

    from agreement.fo.labelling.backend import TaskMismatchError
    from agreement.fo.labelling.history import run_rounds

    ds = clone_dataset(crowd[0])
    before = _state(ds, "cons")
    sent = _op("request_labels")(ds, key="cons", source="view", budget=3, rater="extra")
    _annotate(ls, ds, sent["anno_key"], "extra", lambda smp: "cat")
    results = ds.load_annotation_results(sent["anno_key"], cache=False)
    tasks = dict(results.uploaded_tasks)
    first, second = sorted(tasks)[:2]
    tasks[first], tasks[second] = tasks[second], tasks[first]  # what a shifted upload order gives
    results.uploaded_tasks = tasks
    foan.AnnotationMethod.save_run_results(ds, sent["anno_key"], results, cache=False)
    with pytest.raises(TaskMismatchError, match=f"task {first} holds 'img_"):
        _op("load_requested_labels")(ds, key="cons")
    other = next(i for i in ds.values("id") if i not in sent["sample_ids"])
    results.uploaded_tasks = {**tasks, first: other}
    foan.AnnotationMethod.save_run_results(ds, sent["anno_key"], results, cache=False)
    with pytest.raises(TaskMismatchError, match="map to other samples than it sent"):
        _op("load_requested_labels")(ds, key="cons")
    assert _state(ds, "cons") == before
    assert run_rounds(ds, "cons")[0]["status"] == "sent"


def test_a_failed_load_leaves_the_run_as_it_was(ls, crowd, clone_dataset, monkeypatch):
    from agreement.fo.labelling.history import run_rounds
    from agreement.fo.runs import engine

    ds = clone_dataset(crowd[0])
    before = _state(ds, "cons")
    sent = _op("request_labels")(ds, key="cons", source="view", budget=4)
    _annotate(ls, ds, sent["anno_key"], sent["rater"], lambda smp: "dog")

    def broken(*args, **kwargs):
        raise RuntimeError("disk full while completing the run")

    monkeypatch.setattr(engine, "complete_run", broken)  # fails after the new run has written its fields
    with pytest.raises(RuntimeError, match="disk full"):
        _op("load_requested_labels")(ds, key="cons")
    assert _state(ds, "cons") == before  # the old run, its values, no rater field, no backup run
    assert run_rounds(ds, "cons")[0]["status"] == "sent"
    monkeypatch.undo()
    monkeypatch.setitem(__import__("fiftyone").annotation_config.backends["labelstudio"], "url", ls.url)
    monkeypatch.setitem(__import__("fiftyone").annotation_config.backends["labelstudio"], "api_key", ls.token)
    assert _op("load_requested_labels")(ds, key="cons")["n_loaded"] == 4  # the round can be loaded again


def _attribute_crowd(fo, make_dataset, tmp_path, n: int = 6):
    """``n`` images whose field ``crowd`` holds three raters' classes (``annotator``), assigned in ``assigned``."""
    import cv2

    samples = []
    for s in range(n):
        path = str(tmp_path / f"attr_{s}.png")
        cv2.imwrite(path, np.full((6, 6, 3), 30 * s, np.uint8))
        labels = [fo.Classification(label=CLASSES[(s + r) % 2], annotator=f"r{r}") for r in range(3)]
        samples.append(fo.Sample(filepath=path, crowd=fo.Classifications(classifications=labels),
                                 assigned=["r0", "r1", "r2"]))
    return make_dataset(samples)


def test_attribute_layout_round_trip_equals_a_full_recomputation(ls, fo, make_dataset, tmp_path):
    """One field whose labels name their rater: the new rater's labels join the field (``annotator``), the rater
    joins ``assigned`` on the samples it labelled, the round's own field is gone, the run equals a fresh one."""
    from agreement.fo.methods.class_agreement import compute_class_agreement
    from agreement.fo.runs.store import load_agreement_results

    ds = _attribute_crowd(fo, make_dataset, tmp_path)
    compute_class_agreement(ds, "attr", field="crowd", raters_field="assigned", bootstrap=0)
    sent = _op("request_labels")(ds, key="attr", source="view", budget=3)
    assert sent["rater"] == "r3" and sent["label_field"] == "attr_round_1_labels"
    assert sent["label_type"] == "classification"
    _annotate(ls, ds, sent["anno_key"], sent["label_field"], lambda smp: "bird")
    got = _op("load_requested_labels")(ds, key="attr")
    assert got["n_loaded"] == 3 and got["after"]["n_raters"] == 4
    assert "attr_round_1_labels" not in ds.get_field_schema()
    by_id = dict(zip(ds.values("id"), ds.values("crowd.classifications")))
    for sid in sent["sample_ids"]:
        assert [(c.annotator, c.label) for c in by_id[sid]][-1] == ("r3", "bird")
        assert ds[sid]["assigned"] == ["r0", "r1", "r2", "r3"]
    compute_class_agreement(ds, "fresh", field="crowd", raters_field="assigned", bootstrap=0)
    assert load_agreement_results(ds, "attr")["summary"] == load_agreement_results(ds, "fresh")["summary"]
    assert ds.values("attr_agreement") == ds.values("fresh_agreement")


def test_a_failed_attribute_load_puts_the_field_back(ls, fo, make_dataset, tmp_path, monkeypatch):
    from agreement.fo.methods.class_agreement import compute_class_agreement
    from agreement.fo.runs import engine

    ds = _attribute_crowd(fo, make_dataset, tmp_path)
    compute_class_agreement(ds, "attr", field="crowd", raters_field="assigned", bootstrap=0)
    sent = _op("request_labels")(ds, key="attr", source="view", budget=2)
    _annotate(ls, ds, sent["anno_key"], sent["label_field"], lambda smp: "dog")
    before = (_state(ds, "attr"), [[(c.annotator, c.label) for c in cs] for cs in ds.values("crowd.classifications")],
              ds.values("assigned"))

    def broken(*args, **kwargs):
        raise RuntimeError("disk full while completing the run")

    monkeypatch.setattr(engine, "complete_run", broken)
    with pytest.raises(RuntimeError, match="disk full"):
        _op("load_requested_labels")(ds, key="attr")
    after = (_state(ds, "attr"), [[(c.annotator, c.label) for c in cs] for cs in ds.values("crowd.classifications")],
             ds.values("assigned"))
    assert after == before


def test_an_attribute_run_without_raters_field_is_refused(fo, make_dataset, tmp_path):
    """Without a raters_field the new rater's assignment could not be recorded: refused, naming it."""
    from agreement.fo.labelling.request import request_labels
    from agreement.fo.methods.class_agreement import compute_class_agreement
    from agreement.fo.runs.errors import RunError

    ds = _attribute_crowd(fo, make_dataset, tmp_path)
    compute_class_agreement(ds, "crossed", field="crowd", assume_crossed=True, bootstrap=0)
    with pytest.raises(RunError, match="needs the run's raters_field"):
        request_labels(ds, "crossed", source="view")
    assert not ds.list_annotation_runs()


def test_make_test_builds_the_server_and_requires_it():
    """``make test`` depends on the Label Studio environment (and its template) and sets
    ``IAA_REQUIRE_LABELSTUDIO=1``, so that CI fails rather than skips the round trip."""
    import re

    from conftest import REPO

    text = (REPO / "Makefile").read_text()
    found = re.search(r"^test:([^\n]*)\n((?:\t[^\n]*\n)*)", text, flags=re.M)
    assert found is not None, "the Makefile has no test rule"
    deps, recipe = found.groups()
    assert "$(VENV)/.labelstudio" in deps.split()
    assert "IAA_REQUIRE_LABELSTUDIO=1" in recipe
    rule = re.search(r"^\$\(VENV\)/\.labelstudio:([^\n]*)\n((?:\t[^\n]*\n)*)", text, flags=re.M)
    assert rule and "requirements-labelstudio.txt" in rule.group(1) and "--make-template" in rule.group(2)


def test_boxes_round_trip_equals_a_full_recomputation(ls, fo, make_dataset, tmp_path):
    """Detections: a KαLOS run gets a fourth rater's boxes (Label Studio rectangles) and equals a fresh run."""
    import cv2

    from agreement.fo.importers.build import samples_from_corpus
    from agreement.fo.runs.store import load_agreement_results
    from agreement.simulate.synthetic.crowd import crowd_corpus

    corpus, _ = crowd_corpus(6, 3, raters_per_sample=3, max_objects=3, seed=2)
    paths = [str(tmp_path / f"box_{i}.png") for i in range(corpus.num_samples)]
    for path, (w, h) in zip(paths, corpus.image_sizes, strict=True):
        cv2.imwrite(path, np.zeros((int(h), int(w), 3), np.uint8))
    ds = make_dataset(samples_from_corpus(corpus, paths, raters_field=None))
    raters = list(corpus.raters)
    _op("compute_kalos")(ds, key="kal", fields=raters)
    sent = _op("request_labels")(ds, key="kal", source="view", budget=3)
    assert sent["rater"] == "w003" and sent["label_type"] == "detections" and sent["classes"]
    cls = sent["classes"][0]

    import requests

    results = ds.load_annotation_results(sent["anno_key"], cache=False)
    for task_id in results.uploaded_tasks:
        box = {"x": 10.0, "y": 20.0, "width": 30.0, "height": 25.0, "rotation": 0, "rectanglelabels": [cls]}
        body: dict[str, Any] = {"result": [{"from_name": "w003", "to_name": "image", "type": "rectanglelabels",
                                            "value": box}]}
        r = requests.post(f"{ls.url}/api/tasks/{task_id}/annotations/", json=body, timeout=30,
                          headers={"Authorization": f"Token {ls.token}"})
        assert r.status_code == 201, r.text
    got = _op("load_requested_labels")(ds, key="kal")
    assert got["n_loaded"] == 3
    boxes = [d.bounding_box for d in ds.select(sent["sample_ids"][:1]).first()["w003"].detections]
    assert np.allclose(boxes, [[0.1, 0.2, 0.3, 0.25]])
    _op("compute_kalos")(ds, key="fresh", fields=raters + ["w003"])
    assert load_agreement_results(ds, "kal")["summary"] == load_agreement_results(ds, "fresh")["summary"]
    assert ds.values("kal_alpha") == ds.values("fresh_alpha")


def test_the_next_rater_name_follows_the_run_s_names():
    from agreement.fo.labelling.schema import next_rater_name

    assert next_rater_name(["rater_1", "rater_2", "rater_3"], set()) == "rater_4"
    assert next_rater_name(["rater_1", "rater_2", "rater_3"], {"rater_4"}) == "rater_5"  # a field or open round
    assert next_rater_name(["w000", "w001", "w002"], set()) == "w003"
    assert next_rater_name(["r1", "r2", "r10"], set()) == "r11"
    assert next_rater_name(["alice", "bob"], set()) == "rater_3"
