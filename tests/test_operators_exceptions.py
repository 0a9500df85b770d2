"""The Python call raises the operator's own exception, catchable by type (issue 50, build 2 and 5).

``foo.get_operator(uri)(dataset, ...)`` raises what the operator raised (the
plugin's ``RunError``, ``AnnotationError``, ``OperatorInputError``,
``LockTimeout``; ``ValueError``, ``TypeError``, ``OSError``, ``KeyError``)
with its own message, never FiftyOne's ``ExecutionError`` whose text is a
traceback; a value a choice of the form does not offer is a ``ValueError``
that lists the valid values (and, on a video dataset, says to prefix
``frames.``). ``execute_operator`` and the App keep their behaviour.
"""

from __future__ import annotations

import collections
import traceback

import pytest

from label_kinds import kind_dataset

pytestmark = pytest.mark.fiftyone

URI = "@iaa/agreement/{}"


def _op(name: str):
    import fiftyone.operators as foo

    return foo.get_operator(URI.format(name))


def _kept(op) -> dict:
    """The exceptions kept for Python calls, in the copy of ``operators.python_call`` FiftyOne loaded."""
    return type(op).__call__.__globals__["_RAISED"]


def _plain(error: BaseException) -> None:
    """``error`` is the operator's own: no ``ExecutionError``, no traceback as its text, nothing chained."""
    from fiftyone.operators.executor import ExecutionError

    assert not isinstance(error, ExecutionError)
    assert "Traceback" not in str(error) and len(str(error)) < 1500, str(error)
    assert error.__cause__ is None and error.__suppress_context__ or error.__context__ is None


@pytest.fixture
def boxes(fo, make_dataset):
    ds, params, _, _ = kind_dataset(fo, make_dataset, "boxes", "fields")
    return ds, params


def test_run_error_of_an_existing_key_is_caught_by_type(boxes):
    from agreement.fo.runs.errors import RunError

    ds, params = boxes
    op = _op("compute_kalos")
    op(ds, key="ka", **params)
    with pytest.raises(RunError, match=r"already has an agreement run 'ka'; pass overwrite=True") as err:
        op(ds, key="ka", **params)
    _plain(err.value)
    assert str(err.value).startswith("dataset ")  # the plugin's message, whole
    assert _kept(op) == {}  # nothing left behind


def test_annotation_error_and_operator_input_error_are_caught_by_type(boxes):
    from agreement.core.validation import AnnotationError
    from agreement.fo.runs.errors import OperatorInputError

    ds, params = boxes
    op = _op("compute_kalos")
    with pytest.raises(AnnotationError, match=r"field 'zz' does not exist .*label fields are: a, b, c, d") as err:
        op(ds, key="k1", fields=["a", "zz"])
    _plain(err.value)
    with pytest.raises(OperatorInputError, match="give either `fields`.* or `field` with `rater_attr`, not both") as e2:
        op(ds, key="k2", field="a", **params)
    _plain(e2.value)
    with pytest.raises(ValueError, match=r"tau must be in \(0.0, 1.0\], got 0.0"):  # a declared range
        op(ds, key="k3", tau=0.0, **params)
    assert ds.list_runs() == [] and _kept(op) == {}


def test_a_value_no_choice_offers_is_a_value_error_listing_the_choices(fo, boxes, make_dataset):
    from agreement.fo.runs.errors import OperatorInputError

    ds, params = boxes
    with pytest.raises(ValueError, match=r"compute_kalos: 'nope' is not a valid value of parameter 'solver'.*"
                                         r"the valid values are 'greedy', 'hungarian'") as err:
        _op("compute_kalos")(ds, key="k", solver="nope", **params)
    assert isinstance(err.value, OperatorInputError) and "Invalid enum value" not in str(err.value)
    _plain(err.value)
    with pytest.raises(ValueError, match=r"simulate_raters: 'zz' is not a valid value of parameter 'field'"
                                         r".*'a', 'b', 'c', 'd'"):
        _op("simulate_raters")(ds, field="zz", key="s")
    _op("compute_kalos")(ds, key="ka", **params)
    with pytest.raises(ValueError, match=r"delete_agreement_run: 'geo' is not a valid value of parameter 'key'"
                                         r".*the valid values are 'ka'$"):  # the dataset's agreement runs
        _op("delete_agreement_run")(ds, key="geo")
    assert ds.list_runs() == ["ka"]

    many = make_dataset([fo.Sample(filepath="/m/0.jpg", **{f"f{i:02d}": fo.Detections() for i in range(25)})])
    with pytest.raises(ValueError, match=r"'f00', 'f01', .*'f19', \.\.\. \(5 more\)$"):
        _op("simulate_raters")(many, field="zz", key="s")


def test_a_frame_field_without_its_prefix_is_told_to_prefix_it(fo, make_dataset):
    ds = make_dataset([fo.Sample(filepath=f"/v/{i}.mp4") for i in range(2)])
    for sample in ds:
        sample.frames[1]["detections"] = fo.Detections(detections=[
            fo.Detection(label="x", bounding_box=[0.1, 0.1, 0.2, 0.2], annotator=r) for r in "ab"])
        sample["segments"] = fo.TemporalDetections(detections=[
            fo.TemporalDetection(label="x", support=[1, 2], annotator="a")])
        sample.save()
    with pytest.raises(ValueError, match=r"'detections' is a frame-level field of this video dataset: prefix it, "
                                         r"'frames.detections'"):
        _op("compute_kalos")(ds, key="vk", field="detections", rater_attr="annotator")
    with pytest.raises(ValueError, match=r"'detections' is a frame-level field of this video dataset, and 'field' "
                                         r"takes no frame-level field"):
        _op("simulate_raters")(ds, field="detections", key="s")


def test_unknown_parameter_is_a_type_error_with_what_the_form_says(boxes):
    ds, params = boxes
    with pytest.raises(TypeError, match=r"does not take: \['taux'\]; it takes: \[.*'tau'"):
        _op("compute_kalos")(ds, key="k", taux=0.4, **params)
    with pytest.raises(TypeError, match=r"does not take: \['key'\].*No agreement runs"):  # no run to delete
        _op("delete_agreement_run")(ds, key="geo")


def test_a_missing_file_is_an_os_error_of_a_streamed_import(fo, tmp_path):
    op = _op("import_multi_rater_coco")
    assert op.config.execute_as_generator  # the App streams it; a Python call runs it at once
    with pytest.raises(FileNotFoundError) as err:
        op(coco_path=str(tmp_path / "missing.json"), dataset_name="never")
    assert isinstance(err.value, OSError) and err.value.filename == str(tmp_path / "missing.json")
    _plain(err.value)
    assert not fo.dataset_exists("never") and _kept(op) == {}


def test_faults_and_lock_timeouts_keep_their_type(boxes, monkeypatch):
    from agreement.fo.runs.locking import LockTimeout

    ds, params = boxes
    _op("compute_kalos")(ds, key="ka", **params)

    def busy(*args, **kwargs):
        raise LockTimeout("could not take the schema lock of the dataset: another run holds it")

    monkeypatch.setattr("agreement.fo.runs.store.rename_agreement_run", busy)
    with pytest.raises(LockTimeout, match="another run holds it") as err:
        _op("rename_agreement_run")(ds, key="ka", new_key="kb")
    _plain(err.value)

    def fault(*args, **kwargs):
        raise KeyError("a bug")

    monkeypatch.setattr("agreement.fo.runs.store.rename_agreement_run", fault)
    with pytest.raises(KeyError, match="a bug") as bug:
        _op("rename_agreement_run")(ds, key="ka", new_key="kb")
    assert "fault" in [frame.name for frame in traceback.extract_tb(bug.value.__traceback__)]  # its own traceback


def test_execute_operator_and_the_app_keep_their_behaviour(boxes):
    import asyncio

    import fiftyone.operators as foo
    from fiftyone.operators.executor import ExecutionError, execute_or_delegate_operator

    ds, params = boxes
    op = _op("compute_kalos")
    op(ds, key="ka", **params)
    with pytest.raises(ExecutionError, match="already has an agreement run 'ka'"):
        foo.execute_operator(op.uri, ctx=dict(view=ds.view(), params=dict(key="ka", **params)))
    with pytest.raises(ExecutionError, match="Invalid enum value"):  # FiftyOne's own validation, as ever
        foo.execute_operator(op.uri, ctx=dict(view=ds.view(), params=dict(key="kx", solver="nope", **params)))
    rename = URI.format("rename_agreement_run")
    op(ds, key="kb", **params)
    body = {"operator_uri": rename, "dataset_name": ds.name, "view": [], "params": dict(key="ka", new_key="kb")}
    app = asyncio.run(execute_or_delegate_operator(rename, body))
    assert app.error is None and app.result == {"refused": f"dataset {ds.name!r} already has a run 'kb'"}
    assert _kept(op) == {}


def test_a_generator_execute_keeps_the_error_raised_while_it_is_iterated(monkeypatch):
    """A streamed ``execute`` fails while FiftyOne iterates it: the wrapped generator keeps the error for the
    call, which raises it in place of the ``ExecutionError`` (FiftyOne's executor simulated here)."""
    import fiftyone.operators as foo
    from fiftyone.operators.executor import ExecutionError

    from agreement.core.validation import AnnotationError
    from operators import python_call

    class Streamed(python_call.AgreementOperator):
        @property
        def config(self):
            return foo.OperatorConfig(name="streamed", execute_as_generator=True, unlisted=True)

        def execute(self, ctx):
            yield "started"
            raise AnnotationError("sample 's1', field 'a': a box with a NaN coordinate")

    class Ctx:
        delegated = False

        def __init__(self, request):
            self.request_params = request

    operator = Streamed()

    def execute_operator(uri, ctx=None):  # what FiftyOne does: exhaust the generator, then raise its text
        try:
            collections.deque(operator.execute(Ctx(ctx)), maxlen=0)
        except Exception as e:
            raise ExecutionError(f"Traceback (most recent call last):\n ...\n{e}") from None

    monkeypatch.setattr(python_call.foo, "execute_operator", execute_operator)
    token = "t1"
    with pytest.raises(AnnotationError, match="sample 's1', field 'a'") as err:
        python_call._execute("@iaa/agreement/streamed", {python_call.ERROR_TOKEN_KEY: token}, token)
    _plain(err.value)
    assert python_call._RAISED == {}
    with pytest.raises(ExecutionError):  # no token (execute_operator's request): FiftyOne's error
        execute_operator("@iaa/agreement/streamed", {})
    assert python_call._RAISED == {}


def test_judgement_import_refusal_names_the_file(fo, tmp_path):
    """An import operator's refusal from Python is its own ``ValueError`` (not a traceback)."""
    path = tmp_path / "j.tsv"
    path.write_text("w1\titem1\tcat\nw2\titem1\tdog\n")
    with pytest.raises(ValueError, match="not among the categories") as err:
        _op("import_judgements")(path=str(path), dataset_name="jj", categories="cat, bird")
    _plain(err.value)
    assert not fo.dataset_exists("jj")


def test_a_required_parameter_not_given_is_named_with_what_it_takes(fo, make_dataset):
    from agreement.fo.runs.errors import OperatorInputError

    ds = make_dataset([fo.Sample(filepath=f"/r/{i}.jpg", a=fo.Detections(), b=fo.Detections()) for i in range(2)])
    with pytest.raises(OperatorInputError, match=r"compute_kalos: parameter 'fields' \(Rater fields — One label "
                                                 r"field per rater.*\) is required") as err:
        _op("compute_kalos")(ds, key="k")
    _plain(err.value)
    with pytest.raises(OperatorInputError, match=r"simulate_raters: parameter 'field' .* is required: give one of "
                                                 r"'a', 'b'"):
        _op("simulate_raters")(ds, key="s")
