"""Part 'images' of the validation matrix: the instance label types on images (boxes, polygons, instance
masks, keypoints) and in 3D scenes (cuboids, polylines, points) × every compute method that accepts them
(OT, KαLOS, geometry agreement, consensus, calibration) × the properties of :data:`PROPERTIES`.

Everything runs through the pure library (no FiftyOne), on simulated raters
(:mod:`validation_matrix.images_corpora`, :mod:`validation_matrix.images_designs`), with the statistics of
:mod:`validation_matrix.images_stats` and the criteria of :mod:`validation_matrix.images_judge`:

* identical: the reference rater against an exact copy of itself;
* chance: independent random raters, 3 seeds on the homogeneous design, 2 on the heterogeneous one;
* monotone: the reference against its copy under each of the simulator's stages (shift, drop, swap) at
  γ ∈ {0, 0.2, 0.5}, coupled draws;
* invariant: a 3-rater corpus against itself with samples reordered, labels shuffled and classes renamed;
  with raters renamed (reversed sort order); and (2D) at twice the image resolution with the same relative
  geometry;
* the degenerate designs of :func:`validation_matrix.images_designs.degenerate`.
"""

from __future__ import annotations

import dataclasses

from validation_matrix import Cell
from validation_matrix.images_corpora import (
    HETEROGENEOUS,
    HOMOGENEOUS,
    KINDS,
    KINDS_3D,
    random_raters,
    realise,
    reference,
)
from validation_matrix.images_designs import crowd, degenerate, pair, renamed_raters, reordered
from validation_matrix.images_judge import chance, degenerate as judge_degenerate, identical, invariant, monotone
from validation_matrix.images_stats import NOISE, STATS, evaluate

LEVELS = (0.0, 0.2, 0.5)
#: The statistics with a chance value (the others' chance cells are n/a: not computed).
CHANCE = tuple(k for k, st in STATS.items() if st.chance in ("zero", "sigma", "ks", "not_above"))
DEGENERATE = ("one_rater", "never_meet", "empty_rater", "all_empty", "single_class")
HOMOGENEOUS_SEEDS = (0, 1, 2)
HETEROGENEOUS_SEEDS = (0, 1)
#: Samples per corpus (small: the part must compute in about 90 s on one core); costly kinds get fewer.
SAMPLES = {"boxes": 60, "polygons": 30, "instance masks": 30, "keypoints": 40, "3D cuboids": 24,
           "3D polylines": 24, "3D points": 40}
#: Items of the chance corpora. A chance-corrected statistic of independent raters scatters around its
#: chance value by sampling alone, and the cells judge the mean of 2 or 3 seeds, so a corpus must be large
#: enough for that scatter to stay inside the tolerance. Measured outside the suite (20–200 seeds):
#: detection α at threshold 0 on the homogeneous design (2 raters, 2–6 objects each) has a seed-to-seed
#: s.d. of 0.13 on 30 items, 0.07 on 100, 0.04 on 300, and no bias (mean 0.002 ± 0.010 over 200 seeds of
#: 30 items): 30 items gave −0.185 on seeds 0–2 by chance alone. On the heterogeneous design a crowd of 200
#: raters with 2–5 per item and ~19 image-size strata leaves few chance set pairs (30–175 on 40–80 items,
#: none on 16): boxes, keypoints and masks converge to chance on 400, 400–1,000 and 100 items.
HOMOGENEOUS_ITEMS = dict(SAMPLES, polygons=300, **{"instance masks": 300})
#: The heterogeneous design per kind: the crowd and the object counts stay, the number of items shrinks
#: where pairwise geometry is costly (3D scenes have no image strata, so their chance sample is the whole
#: budget: 24 items cost about as much as 100 stratified ones).
HETEROGENEOUS_ITEMS = {"boxes": 300, "polygons": 150, "instance masks": 150, "keypoints": 300, "3D cuboids": 24,
                       "3D polylines": 24, "3D points": 100}
#: 3D scenes carry no image size: the heterogeneous 3D design keeps the crowd, the 1–50 objects and the rare
#: classes, with scenes of one extent, as one sensor's scans are. Scenes of mixed extents (rooms and streets
#: in one corpus) bias the chance baseline (cuboids: σ 0.112, KS 0.161 against a null of 0.044), which has no
#: scene scale to pair them by: docs/method-3d.md says to compute such corpora per scene type.


def _design_text(d) -> str:
    return (f"{d.samples} items, {d.crowd} raters ({d.per_item[0]}–{d.per_item[1]} per item), "
            f"{d.objects[0]}–{d.objects[1]} labels per rater and item, "
            + (f"images {d.image_px[0]}–{d.image_px[1]} px" if d.image_px[0] != d.image_px[1] else "one scale"))


def _measure_kind(kind: str) -> dict:
    """Every measurement of one label type: ``{"identical": {stat: Measure}, "hom": [...], ...}``."""
    n = SAMPLES[kind]
    ref = reference(n, seed=0)
    at = {}
    for stage in NOISE:
        for g in LEVELS:
            key = (stage, g) if g else ("shift", 0.0)
            if key not in at:
                at[key] = evaluate(kind, realise(pair(ref, [(stage, g)]), kind))
            at[(stage, g)] = at[key]
    hom_d = dataclasses.replace(HOMOGENEOUS, samples=HOMOGENEOUS_ITEMS[kind])
    het_d = dataclasses.replace(HETEROGENEOUS, samples=HETEROGENEOUS_ITEMS[kind])
    if kind in KINDS_3D:  # scenes of one extent (one sensor): the mixed-extent case is a documented limit
        het_d = dataclasses.replace(het_d, image_px=(640, 640))
    base = crowd(ref)
    variants = {"samples reordered, labels shuffled, classes renamed": realise(reordered(base), kind),
                "raters renamed (order reversed)": realise(renamed_raters(base), kind)}
    if kind not in KINDS_3D:
        variants["image resolution ×2"] = realise(base, kind, upscale=2)
    return {
        "curves": at,
        "hom": [evaluate(kind, realise(random_raters(hom_d, s), kind), CHANCE) for s in HOMOGENEOUS_SEEDS],
        "het": [evaluate(kind, realise(random_raters(het_d, s), kind), CHANCE) for s in HETEROGENEOUS_SEEDS],
        "hom_design": _design_text(hom_d), "het_design": _design_text(het_d),
        "base": evaluate(kind, realise(base, kind)),
        "variants": {name: evaluate(kind, d) for name, d in variants.items()},
        "degenerate": {d: evaluate(kind, realise(degenerate(ref, d), kind)) for d in DEGENERATE},
        "careful": evaluate(kind, realise(pair(ref, [("shift", 0.1), ("drop", 0.2)]), kind)),
    }


def kind_cells(kind: str) -> list[Cell]:
    """The cells of one label type (in :data:`STATS` order); :func:`cells` is :func:`order` of every kind's."""
    got = _measure_kind(kind)
    out: list[Cell] = []
    for key, st in STATS.items():
        if kind not in st.kinds:
            continue

        def cell(prop: str, res: tuple) -> None:
            out.append(Cell(st.method, kind, prop, res[0], res[1], res[2]))  # noqa: B023 (called in this iteration)

        cell("identical", identical(st, got["curves"][("shift", 0.0)][key]))
        for prop, runs, text in (("chance_homogeneous", got["hom"], got["hom_design"]),
                                 ("chance_heterogeneous", got["het"], got["het_design"])):
            cell(prop, chance(st, [m[key] for m in runs] if key in CHANCE else [], text))
        curves = {stage: [got["curves"][(stage, g)][key] for g in LEVELS] for stage in NOISE}
        cell("monotone", monotone(st, curves, LEVELS))
        cell("invariant", invariant(got["base"][key], {n: v[key] for n, v in got["variants"].items()}))
        for d in DEGENERATE:
            cell(d, judge_degenerate(st, d, got["degenerate"][d][key], got["careful"][key]))
    return out


def order(by_kind: dict[str, list[Cell]]) -> list[Cell]:
    """The part's cells from :func:`kind_cells` of every kind (computed anywhere, e.g. on several pytest-xdist
    workers): statistics in :data:`STATS` order, label types in :data:`KINDS` order within each."""
    out = [c for kind in KINDS for c in by_kind[kind]]
    rank = {st.method: i for i, st in enumerate(STATS.values())}
    return sorted(out, key=lambda c: rank[c.method])  # stable: label types keep their order


def cells() -> list[Cell]:
    """Every cell of the part (label types in :data:`KINDS` order, statistics in :data:`STATS` order)."""
    return order({kind: kind_cells(kind) for kind in KINDS})


__all__ = ["cells", "kind_cells", "order"]
