"""Simulated raters on a FiftyOne dataset, from a reference label field.

The reference field is read, never modified; the simulated raters are written
to new fields owned by a run (method ``iaa.simulate_raters``), so deleting that
run removes exactly them:

* ``layout="fields"``: one ``Detections`` field per simulated rater,
  ``{key}_r1 ... {key}_rK``;
* ``layout="attribute"``: one field ``{key}_labels`` whose labels carry the
  rater (``r1 ... rK``) in ``rater_attr``, and ``{key}_raters`` listing the
  raters assigned to each sample.

A sample whose reference is ``None`` (not annotated) gets ``None`` for every
simulated rater; an empty reference stays explicit absence.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from agreement.core.validation import AnnotationError
from agreement.fo.importers.build import corpus_label_fields
from agreement.fo.methods.markers import SIMULATION_METHOD
from agreement.fo.runs.engine import MethodOutput, MethodSpec, run_method
from agreement.fo.runs.options import RaterLayout
from agreement.fo.storage.assignment import declare_raters_field
from agreement.simulate.noise.empirical import School, load_profile, simulate
from agreement.simulate.noise.perturbations import perturbation_series

__all__ = ["METHOD", "NOISE_MODELS", "SPEC", "simulate_raters"]

METHOD = SIMULATION_METHOD
NOISE_MODELS = ("empirical", "drop", "shift", "swap")


def simulate_raters(
    samples,
    field: str,
    key: str,
    *,
    num_raters: int = 3,
    magnitude: float = 1.0,
    profile: str = "lvis",
    noise: str = "empirical",
    seed: int = 0,
    layout: str = "fields",
    rater_attr: str = "annotator",
    school_size: int = 0,
    school_offset: tuple[float, float, float, float] = (0.05, 0.05, 0.0, 0.0),
    overwrite: bool = False,
    progress: Callable[[float, str], None] | None = None,
) -> dict:
    """Adds ``num_raters`` simulated raters derived from the reference ``field``.

    Args:
        samples: dataset or view; only its samples get simulated labels.
        field: the reference ``Detections`` field (read only).
        key: the run key owning the new fields.
        num_raters: K >= 1.
        magnitude: λ >= 0 for ``noise="empirical"`` (scales every rate and
            residual of the profile); γ for the perturbations (fraction
            dropped or swapped in [0, 1], centre shift relative to box size).
        profile: ``"lvis"`` (shipped, fitted on the shared LVIS pairs) or a
            JSON profile file (``python -m agreement.simulate.noise.fit``).
        noise: ``"empirical"`` (KαLOS generator) or the OT paper's ``"drop"``,
            ``"shift"``, ``"swap"``.
        seed: seed of every random draw.
        layout: ``"fields"`` or ``"attribute"``.
        rater_attr: the label attribute naming the rater (``layout="attribute"``).
        school_size: the first ``school_size`` raters form a "school" sharing
            a systematic box offset ``school_offset`` (empirical noise only).
        school_offset: the school's offset ``(dx, dy, dw, dh)`` added to every shifted box's residual (box
            sizes for ``dx, dy``, log scale for ``dw, dh``; :class:`~agreement.simulate.noise.empirical.School`).
        overwrite: replace an existing run ``key`` (and its fields).
        progress: called with ``(fraction done, message)`` as the run proceeds.

    Returns:
        ``{"key", "fields", "raters", "school", "labels", "cannibalised"}``.

    Raises:
        ValueError: an unknown noise model or layout, ``num_raters`` not an integer >= 1, or a negative or
            non-finite ``magnitude``.
    """
    if noise not in NOISE_MODELS:
        raise ValueError(f"noise must be one of {NOISE_MODELS}, got {noise!r}")
    if isinstance(num_raters, bool) or int(num_raters) != num_raters or num_raters < 1:
        raise ValueError(f"num_raters must be an integer >= 1, got {num_raters!r}")
    num_raters = int(num_raters)
    if not isinstance(magnitude, (int, float)) or not math.isfinite(magnitude) or magnitude < 0:
        raise ValueError(f"magnitude must be a finite number >= 0, got {magnitude!r}")
    if layout not in ("fields", "attribute"):
        raise ValueError(f"layout must be 'fields' or 'attribute', got {layout!r}")
    if not 0 <= int(school_size) <= num_raters:
        raise ValueError(f"school_size must be between 0 and num_raters ({num_raters}), got {school_size!r}")
    if school_size and noise != "empirical":
        raise ValueError("a school needs noise='empirical'")
    if noise != "empirical" and profile != "lvis":
        raise ValueError(f"a noise profile applies to noise='empirical' only; noise={noise!r} uses `magnitude` as γ")
    if noise == "empirical":
        load_profile(profile)  # validates the profile before anything is read or written
    names = [f"r{j + 1}" for j in range(num_raters)]
    params = {
        "field": field, "num_raters": num_raters, "magnitude": float(magnitude), "profile": str(profile),
        "noise": noise, "seed": int(seed), "layout": layout, "rater_attr": rater_attr,
        "school_size": int(school_size), "school_offset": list(school_offset), "key": key,
    }
    spec = replace(SPEC, sample_suffixes=tuple(names if layout == "fields" else ["labels", "raters"]))
    summary = run_method(samples, key, spec, RaterLayout(fields=[field]), params, overwrite=overwrite,
                         progress=progress)
    if layout == "attribute":
        declare_raters_field(samples._root_dataset, f"{key}_labels", f"{key}_raters", raters=names)
    return summary


def _check(read, params: dict) -> None:
    if read.layout.get("label_type") == "TemporalDetections":
        raise AnnotationError(f"simulate_raters perturbs image labels; reference field {params['field']!r} holds "
                              "temporal segments: simulate video raters with "
                              "agreement.fo.simulate.video.simulate_video_dataset (boxes on frames and segments)")
    if len(read.annotations) == 0:
        raise AnnotationError(f"reference field {params['field']!r} has no labels on any sample of this view")


def _simulated(reference, params: dict, names: list[str]):
    """The simulated raters' corpus and the empirical generator's cannibalisation report."""
    if params["noise"] != "empirical":
        return perturbation_series(reference, params["noise"], [params["magnitude"]], seed=params["seed"],
                                   rater=params["field"], num_raters=params["num_raters"], names=names), {}
    school = (School(name="school", size=params["school_size"], offset=tuple(params["school_offset"]))
              if params["school_size"] else None)
    sim = simulate(reference, profile=params["profile"], magnitude=params["magnitude"],
                   num_raters=params["num_raters"], seed=params["seed"], school=school, rater=params["field"],
                   names=names)
    return sim.annotations, dict(getattr(sim.report, "cannibalised", {}) or {})


def _compute(read, params: dict, report, extra: dict) -> MethodOutput:
    """Simulated raters from the reference (pure :mod:`agreement.simulate.noise`), as label fields."""
    key = params["key"]
    names = [f"r{j + 1}" for j in range(params["num_raters"])]
    report(0.0, "simulating")
    corpus, cannibalised = _simulated(read.annotations, params, names)
    sample_ids = list(corpus.sample_ids)
    objects: dict[str, Mapping[str, Any]] = {}
    if params["layout"] == "fields":
        per_sample = corpus_label_fields(corpus, layout="fields", field_names={r: f"{key}_{r}" for r in names})
        for r in names:
            objects[r] = {sid: v[f"{key}_{r}"] for sid, v in zip(sample_ids, per_sample, strict=False)}
        written = [f"{key}_{r}" for r in names]
    else:
        name = f"{key}_labels"
        per_sample = corpus_label_fields(corpus, layout="attribute", field=name, rater_attr=params["rater_attr"])
        objects["labels"] = {sid: v[name] for sid, v in zip(sample_ids, per_sample, strict=False)}
        objects["raters"] = {sid: [corpus.raters[r] for r in range(corpus.num_raters) if corpus.assigned[s, r]]
                             for s, sid in enumerate(sample_ids)}
        written = [name, f"{key}_raters"]
    summary = {
        "key": key,
        "fields": written,
        "raters": names,
        "school": names[: params["school_size"]],
        "labels": len(corpus),
        "cannibalised": {str(k): int(v) for k, v in cannibalised.items()},
    }
    return MethodOutput(summary, {}, sample_objects=objects)


SPEC = MethodSpec(method=METHOD, sample_suffixes=(), label_suffixes=(), compute=_compute, check=_check,
                  read_options=lambda params: {"min_raters": 1},  # the reference, read as one rater
                  rater_design=False)  # one reference field, read as one rater: no rater design to check
