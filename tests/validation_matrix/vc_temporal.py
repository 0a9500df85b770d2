"""OT (αOT), KαLOS (α) and geometry agreement (σ, distance α, KS, detection α, classification α) on
temporal segments and on frame labels, through the pure library (the scores of
``experiments/temporal_chance.py``: αOT λ = β = 0.5 with an exact chance baseline, KαLOS IoU τ = 0.5 greedy
soft, geometry GIoU threshold 0.5, exact chance, no bootstrap). Frame labels: every frame a sample, chance
pairs between frames of different videos (``groups``, as the bridge's ``chance_groups``).
"""

from __future__ import annotations

import math

import numpy as np

from agreement.core.strata import scale_strata
from agreement.methods.geometry_agreement import geometry_shard, merge_geometry_shards
from agreement.methods.kalos import kalos_alpha

# the observed costs, as alpha_ot
from agreement.methods.ot import PairCosts, SetPairs, assigned_pair_cells, solve_set_pairs
from agreement.methods.ot.alpha_ot import CellSets, finish_alpha_ot, plan_chance
from validation_matrix.vc_common import ks_null
from validation_matrix.vc_temporal_data import corpus

LAM, BETA = 0.5, 0.5
MAX_PAIRS = 400_000
#: The page's method names, one per statistic (shared with the images part).
METHODS = {"alpha_ot": "OT: αOT", "kalos": "KαLOS: α (global)", "sigma": "Geometry: σ",
           "distance_alpha": "Geometry: distance α", "ks": "Geometry: KS",
           "detection_alpha": "Geometry: detection α", "classification_alpha": "Geometry: classification α"}
GEOMETRY = ("sigma", "distance_alpha", "ks", "detection_alpha", "classification_alpha")
#: Chance level of each statistic (σ: its percentile p = 0.05).
CHANCE_CENTRE = {"sigma": 0.05}


def _length_strata(frame_counts: np.ndarray) -> np.ndarray | None:
    """The bridge's chance strata of clips (:func:`agreement.core.strata.scale_strata` of the frame counts,
    as ``agreement.fo.runs.chance_strata`` computes them)."""
    return scale_strata(np.asarray(frame_counts, dtype=np.float64))


def grouped_alpha_ot(data, groups: np.ndarray | None, strata: np.ndarray | None = None):
    """αOT with the chance pairs drawn between samples of different ``groups`` (None: different samples),
    composed as the bridge does (:func:`plan_chance`, then :func:`finish_alpha_ot`)."""
    R = data.num_raters
    cs, cr = np.nonzero(data.assigned)
    plan = plan_chance(data.sample_ids, cs, cr, data.raters, max_pairs=MAX_PAIRS, seed=0, groups=groups,
                       strata=strata)
    s, a, b, pid, a0, na, b0, nb = assigned_pair_cells(data)
    c_obs = solve_set_pairs(PairCosts(data.boxes, data.labels, LAM), SetPairs(a0, na, b0, nb), beta=BETA,
                             normalization="paper", max_block=1 << 17).cost
    return finish_alpha_ot(plan, CellSets.of(data, plan.cell_key), c_obs, a.astype(np.int64) * R + b, lam=LAM,
                           beta=BETA)


def _guard(fn) -> tuple[float, str]:
    try:
        return fn()
    except Exception as e:  # noqa: BLE001 - a raising method is a failing cell, with the error as its value
        return math.nan, f"error: {type(e).__name__}: {e}"


def scores(items, groups_by_video: bool, ids: list[str] | None = None,
           strata: np.ndarray | None = None) -> dict[str, tuple[float, str]]:
    """Every statistic of :data:`METHODS` on the items (``vc_temporal_data.corpus``): ``{key: (value,
    reason)}``. ``groups_by_video``: chance pairs between different videos (frame labels)."""
    data, groups = corpus(items, ids)
    g = groups if groups_by_video else None
    if not groups_by_video and strata is None:  # segments: the group slot is the clip's frame count
        strata = _length_strata(groups)
    out: dict[str, tuple[float, str]] = {}

    def ot() -> tuple[float, str]:
        r = grouped_alpha_ot(data, g, strata)
        return float(r.alpha), r.reason
    out["alpha_ot"] = _guard(ot)

    def kalos() -> tuple[float, str]:
        r = kalos_alpha(data, similarity="iou", tau=0.5, solver="greedy", cost="soft")
        return float(r.global_alpha), r.global_reason
    out["kalos"] = _guard(kalos)
    try:
        shard = geometry_shard(data, distance="giou", threshold=0.5, max_pairs=MAX_PAIRS)
        res = merge_geometry_shards([shard], lambda idx: (data, idx), distance="giou", threshold=0.5,
                                    bootstrap=None, max_pairs=MAX_PAIRS, seed=0, groups=g,
                                    strata=strata)
        for k in GEOMETRY:
            e = getattr(res, k)
            out[k] = (float(e.value), e.reason)
        # frames of one video are one draw of its objects, not independent samples: the null counts videos
        # (the design effect of whole clusters: n / frames per video)
        per = len(data.sample_ids) / max(len(np.unique(groups)), 1) if groups_by_video else 1.0
        out["ks_null"] = (ks_null(max(1, round(res.n_within / per)), max(1, round(res.n_between / per))), "")
    except Exception as e:  # noqa: BLE001
        out.update({k: (math.nan, f"error: {type(e).__name__}: {e}") for k in GEOMETRY})
    return out


# ----------------------------------------------------------------------------- cells

from validation_matrix import (
    UNITS_CHANCE_NOTE,  # noqa: E402
    Cell,  # noqa: E402
    vc_temporal_data as D,  # noqa: E402
)
from validation_matrix.vc_common import (  # noqa: E402
    chance_cell,
    degenerate_cell,
    identical_cell,
    invariant_cell,
    ks_chance_cell,
    monotone_cell,
)

SEEDS = (0, 1, 2)
LEVELS = (0.0, 0.05, 0.1, 0.2, 0.4, 0.8)
#: Careful raters (degenerate designs) must score at least this on the chance-corrected statistics.
CAREFUL_FLOOR = 0.5


def _rename(items, raters: dict | None = None, classes: dict | None = None, reverse: bool = False):
    """The items with raters / classes renamed and every rater's labels in reverse order."""
    out = []
    for g, d in items:
        nd = {}
        for r, (b, lab) in d.items():
            lab = np.asarray([classes.get(x, x) for x in lab] if classes else lab, dtype=object)
            nd[raters.get(r, r) if raters else r] = (b[::-1], lab[::-1]) if reverse else (b, lab)
        out.append((g, nd))
    return out


def _degenerate(careful, single) -> dict:
    """The degenerate designs from careful raters' items (and their one-class version)."""
    S = len(careful)
    first = sorted(careful[0][1])[0]
    one = [(g, {first: d[first]}) for g, d in careful]
    a, b = sorted(careful[0][1])[:2]
    never = [(g, {a: d[a]} if s < S // 2 else {b: d[b]}) for s, (g, d) in enumerate(careful)]
    last = sorted(careful[0][1])[-1]
    empty = [(g, {**d, last: (np.zeros((0, 4)), np.zeros(0, dtype=object))}) for g, d in careful]
    nothing = [(g, {r: (np.zeros((0, 4)), np.zeros(0, dtype=object)) for r in d}) for g, d in careful]
    without = [(g, {r: x for r, x in d.items() if r != last}) for g, d in careful]
    return {"one_rater": one, "never_meet": never, "empty_rater": empty, "all_empty": nothing,
            "single_class": single, "_without_empty": without}


def property_cells(kind: str, by_video: bool, identical, chance: dict, noisy: list, invariance: tuple,
                   degenerate: dict, chance_extra: str = "") -> list[Cell]:
    """Every cell of :data:`METHODS` for one label type, from its designs: ``chance[prop]`` lists of items
    per seed; ``noisy`` items per noise level; ``invariance = (items, {variant: (items, ids, tol)})``."""
    sc = lambda items, ids=None: scores(items, by_video, ids)  # noqa: E731
    ident = sc(identical)
    ch = {p: [sc(it) for it in runs] for p, runs in chance.items()}
    mono = [sc(it) for it in noisy]
    base_items, variants = invariance
    base = sc(base_items)
    var = {name: (sc(it, ids), tol) for name, (it, ids, tol) in variants.items()}
    without = sc(degenerate.pop("_without_empty"))
    deg = {p: sc(it) for p, it in degenerate.items()}
    out: list[Cell] = []
    for key, method in METHODS.items():
        out.append(identical_cell(method, kind, ident[key]))
        for prop, runs in ch.items():
            if key == "ks":
                out.append(ks_chance_cell(method, kind, prop, [r[key][0] for r in runs],
                                          [r["ks_null"][0] for r in runs], extra=chance_extra))
                continue
            out.append(chance_cell(method, kind, prop, [r[key][0] for r in runs], CHANCE_CENTRE.get(key, 0.0),
                                   extra=chance_extra, one_sided=UNITS_CHANCE_NOTE if key == "kalos" else ""))
        out.append(monotone_cell(method, kind, LEVELS, [m[key][0] for m in mono], "boundary/box noise"))
        out.append(invariant_cell(method, kind, base[key][0], {n: v[key][0] for n, (v, _) in var.items()},
                                  {n: t for n, (_, t) in var.items()},
                                  "boundaries rounded to whole frames (docs/temporal-agreement.md, (c))"))
        for prop, got in deg.items():
            floor = CAREFUL_FLOOR if prop == "single_class" else None
            ceiling = without[key][0] if prop == "empty_rater" else None
            out.append(degenerate_cell(method, kind, prop, got[key], need_none=prop in ("one_rater", "never_meet"),
                                       floor=floor, ceiling=ceiling))
    return out


def _items(clips):
    return D.clips_to_items(clips)[0]


def segment_invariance(truth: list) -> tuple[list, dict]:
    """The invariance corpus of segments (boundary noise m = 0.2) and its variants ``{name: (items, ids,
    tolerance)}``."""
    clips = D.jittered(truth, 0.2)
    base = _items(clips)
    ids = [f"item{s:05d}" for s in range(len(base))]
    perm = np.random.default_rng(4).permutation(len(base))
    return base, {
        "clips permuted": ([base[i] for i in perm], [ids[i] for i in perm], 1e-9),
        "raters renamed": (_rename(base, raters={"r0": "zoe", "r1": "al", "r2": "mo"}), None, 1e-9),
        "classes renamed, labels reversed": (_rename(base, classes={"jump": "b", "run": "a"}, reverse=True),
                                             None, 1e-9),
        "×2 frame rate": (_items(D.resampled(clips, 2.0)), None, 1e-9),
        "×0.5 frame rate": (_items(D.resampled(clips, 0.5)), None, 0.05),
    }


def segment_cells() -> list[Cell]:
    """Temporal segments (module docstring)."""
    truth = D.true_clips(0)
    items = _items
    noisy = [items(D.jittered(truth, m)) for m in LEVELS]
    base, variants = segment_invariance(truth)
    careful = items(D.jittered(truth, 0.05))
    single = items(D.jittered(D.true_clips(0, classes=("jump",)), 0.05))
    chance = {"chance_homogeneous": [items(D.random_clips(s, False)) for s in SEEDS],
              "chance_heterogeneous": [items(D.random_clips(s, True)) for s in SEEDS]}
    return property_cells("temporal segments", False, noisy[0], chance, noisy, (base, variants),
                          _degenerate(careful, single))


def _videos(seed: int, n: int, frames: int, objects: int) -> list:
    from agreement.simulate.video import generate_videos
    return generate_videos(num_videos=n, num_frames=frames, num_objects=objects, seed=seed)


def frame_cells() -> list[Cell]:
    """Frame labels (boxes on video frames; every frame a sample, chance pairs between videos). Random
    raters: each rater draws its own synthetic videos (another seed); homogeneous: 80 videos of 10 frames, 4
    objects (a KS statistic needs many independent videos: frames of one video are one draw of its objects).
    Heterogeneous: 6 videos of 60–600
    frames (log-uniform), 1–20 objects per rater and video, a crowd of 20 raters of whom 2–5 rate each video."""
    from agreement.simulate.video import VideoNoise, simulate_video_raters
    raters = ("r0", "r1", "r2")
    ref = _videos(0, 4, 30, 3)
    ident = D.frame_items({r: ref for r in raters})
    homog = [D.frame_items({r: _videos(100 * s + i + 7, 80, 10, 4) for i, r in enumerate(raters)}) for s in SEEDS]
    het = []
    for s in SEEDS:
        rng = np.random.default_rng(50 + s)
        lengths = np.round(60 * 10 ** rng.random(6)).astype(int)
        crowd = [f"w{i:02d}" for i in range(20)]
        objects = rng.integers(1, 21, (20, 6))  # each rater its own count: raters independent
        vids = {w: [_videos(1000 * s + 37 * i + v, 1, int(lengths[v]), int(objects[i, v]))[0] for v in range(6)]
                for i, w in enumerate(crowd)}
        m = rng.integers(2, 6, 6)
        who = np.argsort(rng.random((6, 20)), axis=1).argsort(axis=1) < m[:, None]
        het.append(D.frame_items(vids, {w: set(np.flatnonzero(who[:, i]).tolist()) for i, w in enumerate(crowd)}))
    sim = lambda lam: simulate_video_raters(ref, VideoNoise(drift=0.6 * lam, scale_drift=0.4 * lam),  # noqa: E731
                                            num_raters=3, seed=3).videos
    noisy = [D.frame_items(sim(m)) for m in LEVELS]
    base = noisy[3]
    ids = [f"item{s:05d}" for s in range(len(base))]
    perm = np.random.default_rng(4).permutation(len(base))
    first = sorted(base[0][1])
    variants = {
        "frames permuted": ([base[i] for i in perm], [ids[i] for i in perm], 1e-9),
        "raters renamed": (_rename(base, raters=dict(zip(first, ("zoe", "al", "mo")))), None, 1e-9),
        "classes renamed, labels reversed": (_rename(base, classes={c: c[::-1] + "_" for c in
                                                                    ("person", "car", "dog", "bicycle", "cat")},
                                                     reverse=True), None, 1e-9),
    }
    careful = D.frame_items(sim(0.1))
    single = _rename(careful, classes={c: "object" for c in ("person", "car", "dog", "bicycle", "cat", "bird")})
    single = [(g, {r: (b, np.full(len(lab), "object", dtype=object)) for r, (b, lab) in d.items()})
              for g, d in careful]
    chance = {"chance_homogeneous": homog, "chance_heterogeneous": het}
    return property_cells("frame labels (boxes)", True, ident, chance, noisy, (base, variants),
                          _degenerate(careful, single))
