"""The samples behind any view, as a view that has a run's fields.

The App hands the panel whatever the user is looking at: a review queue (a
patches or clips view that keeps only the consensus field), the patches,
clips or frames of any field, or a view whose ``select_fields`` /
``exclude_fields`` dropped the run's fields. A run's numbers are per sample
and live in fields of the dataset, so every panel computation reads them
through :func:`run_samples`: the same samples, as a view of the dataset
itself, with every field. A run's per-sample numbers are never counted per
patch, clip or frame.
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["missing_fields", "run_field_names", "run_samples", "scalar_fields"]

_FIELD_STAGES = ("SelectFields", "ExcludeFields")


def missing_fields(samples, fields: Iterable[str]) -> list[str]:
    """Those of ``fields`` (top-level names, or ``frames.<name>``) that the schema of ``samples`` lacks."""
    schema = samples.get_field_schema()
    frame_schema = samples.get_frame_field_schema() if samples._has_frame_fields() else {}
    out = []
    for f in fields:
        if f.startswith("frames."):
            if f[len("frames."):].split(".")[0] not in (frame_schema or {}):
                out.append(f)
        elif f.split(".")[0] not in schema:
            out.append(f)
    return out


def run_field_names(info: dict) -> list[str]:
    """The fields run ``info`` (:func:`agreement.fo.runs.store.get_agreement_run_info`) wrote on samples and on
    frames (``frames.<field>``): what its numbers are read from."""
    return list(info.get("sample_fields") or []) + [f"frames.{f}" for f in info.get("frame_fields") or []]


def _without_field_stages(samples):
    """``samples`` rebuilt on its dataset without its ``select_fields`` and ``exclude_fields`` stages (the
    other stages, filters included, kept in order)."""
    view = samples._root_dataset.view()
    for stage in samples._stages:
        if type(stage).__name__ not in _FIELD_STAGES:
            view = view.add_stage(stage)
    return view


def run_samples(samples, fields: Iterable[str] = ()):
    """The samples of ``samples`` as a sample-level view of the dataset that has ``fields``.

    A patches, clips or frames view (a review queue among them) gives the dataset's samples it was made
    from (``sample_id``); a view whose field stages dropped some of ``fields`` gives the same view without
    those stages; any other collection is returned as it is.

    Args:
        samples: a FiftyOne dataset or view, as the App hands it over.
        fields: the fields the caller reads (a run's ``sample_fields``, ``frames.<field>``).

    Returns:
        A dataset or view whose samples are those of ``samples`` (for a generated view: the samples its
        patches, clips or frames come from) and whose schema has every field of ``fields`` the dataset has.
    """
    root = samples._root_dataset
    if samples is root:
        return samples
    if samples._is_generated:  # patches, clips, frames: one row per label, clip or frame, not per sample
        return root.select(samples.distinct("sample_id"))
    fields = list(fields)
    if not fields or not missing_fields(samples, fields):
        return samples
    view = _without_field_stages(samples)
    return view if not missing_fields(view, fields) else root.select(samples.values("id"))


def scalar_fields(samples) -> list[str]:
    """The sample fields of ``samples`` that hold no label (numbers, strings, booleans, lists of them),
    except the default ones: what a queue can carry along without a tag on "all labels" reaching them."""
    import fiftyone.core.fields as fof

    defaults = set(samples._get_default_sample_fields())
    out = []
    for name, field in samples.get_field_schema().items():
        if name in defaults or name.startswith("_"):
            continue
        inner = field.field if isinstance(field, fof.ListField) else field
        if isinstance(field, (fof.EmbeddedDocumentField, fof.DictField)) or isinstance(
                inner, (fof.EmbeddedDocumentField, fof.DictField)):
            continue
        out.append(name)
    return out
