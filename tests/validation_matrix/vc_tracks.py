"""Tracks: track agreement (α of presence, class and localisation; HOTA, DetA, AssA, LocA, IDF1 per rater pair)
and track consensus, through the pure library as ``compute_track_agreement`` composes it
(:func:`agreement.methods.tracks.track_agreement` per video at its defaults ``tau = iou_threshold = 0.5``,
:func:`pool_track_agreement`, then the mean over rater pairs of the finite pair values, as the bridge's
``_mean``). A pairwise statistic with no rater pair at all (``pairs = ()``) is undefined with the reason "no
rater pair shares a video", the bridge's design warning (``agreement/core/design_warnings.py``); otherwise its
reasons are the pairs' ``hota_reason``. Track consensus: the mean ``confidence`` of the consensus boxes
(``consensus=True``, quorum 0.5).

Designs (:func:`agreement.simulate.video.generate_videos`, :func:`simulate_video_raters`):

* homogeneous chance: 8 videos x 40 frames, 3 raters each drawing their own videos of 4 objects (another
  seed: independent), 5 seeds. Class α's chance is measured where it is defined: the raters share the true
  tracks and draw each track's class independently (uniform over 5 classes);
* heterogeneous chance: 6 clips of 60–6,000 frames (log-uniform; about 40 annotated frames each, spaced
  evenly: sparse), 1–50 objects per rater and clip, rare classes (prior 12:5:2:1), a crowd of 200 raters of
  whom 2–5 track each clip; class α as above with the rare prior; 3 seeds;
* monotone: 8 videos x 40 frames x 4 objects, 3 raters, each noise stage alone at λ = 0, 0.5, 1, 2, 4 (one
  seed: the simulator's streams are coupled): drift (``drift = 0.15 λ``, ``scale_drift = 0.1 λ``) and identity
  switches (``switch_rate = 0.01 λ``);
* invariant: the preset ``VideoNoise.scaled(1)``; videos permuted; raters renamed (their order reversed);
  track ids renumbered and every rater's boxes shuffled; classes renamed; ×2 frame rate (every annotated frame
  duplicated: frame f becomes frames 2f and 2f + 1 with the same boxes; every count doubles, so every
  statistic is expected exactly unchanged).
"""

from __future__ import annotations

import math

import numpy as np

from agreement.methods.tracks import Tracks, mean_confidence, pool_track_agreement, track_agreement
from agreement.methods.tracks.alpha import track_alpha
from agreement.simulate.video import VIDEO_CLASSES, VideoNoise, generate_videos, simulate_video_raters
from validation_matrix import Cell
from validation_matrix.vc_common import (
    chance_cell,
    degenerate_cell,
    empty_rater_ceiling,
    identical_cell,
    invariant_cell,
    monotone_cell,
    na_cell,
)

KIND = "tracks"
METHODS = {"presence": "Tracks: presence α", "classes": "Tracks: class α", "localisation": "Tracks: localisation α",
           "hota": "Tracks: HOTA", "det_a": "Tracks: DetA", "ass_a": "Tracks: AssA", "loc_a": "Tracks: LocA",
           "idf1": "Tracks: IDF1", "confidence": "Track consensus: mean confidence"}
ALPHAS = ("presence", "classes", "localisation")
PAIRWISE = ("hota", "det_a", "ass_a", "loc_a", "idf1")
LEVELS = (0.0, 0.5, 1.0, 2.0, 4.0)
STAGES = {"drift": lambda lam: VideoNoise(drift=0.15 * lam, scale_drift=0.1 * lam),
          "identity switches": lambda lam: VideoNoise(switch_rate=min(1.0, 0.01 * lam))}
RARE = ("person",) * 12 + ("car",) * 5 + ("dog",) * 2 + ("cat",)
CAREFUL_FLOOR = 0.5
NOT_CORRECTED = ("not chance-corrected: HOTA, DetA, AssA, LocA and IDF1 score the matched share of two raters' "
                 "boxes, which unrelated tracks keep above 0 by accidental overlaps")
Corpus = list[dict]  # per video, {rater: Tracks} of the raters assigned to it


def _tracks(v, rater: str, name: str, frames: np.ndarray | None = None, labels=None) -> Tracks:
    return Tracks(v.frames if frames is None else frames, v.boxes, v.tracks, v.labels if labels is None else labels,
                  rater=rater, video=name)


def simulated(noise: VideoNoise, videos: int = 8, frames: int = 40, objects: int = 4, seed: int = 0,
              classes=VIDEO_CLASSES) -> Corpus:
    """Three simulated raters ``r0 r1 r2`` of ``videos`` reference videos."""
    ref = generate_videos(num_videos=videos, num_frames=frames, num_objects=objects, seed=seed, classes=classes)
    sim = simulate_video_raters(ref, noise, num_raters=3, seed=seed, names=("r0", "r1", "r2"))
    return [{r: _tracks(sim.videos[r][v], r, f"v{v}") for r in sim.raters} for v in range(videos)]


def random_corpus(seed: int, heterogeneous: bool, classes_only: bool = False) -> Corpus:
    """Independent random raters (module docstring); ``classes_only``: the true tracks, random classes."""
    rng = np.random.default_rng(300 + seed)
    if not heterogeneous:
        V, R = 8, ("r0", "r1", "r2")
        lengths, who, n_obj = np.full(V, 40), np.ones((V, 3), bool), np.full((V, 3), 4)
        prior = VIDEO_CLASSES
    else:
        V, R = 6, tuple(f"w{i:03d}" for i in range(200))
        lengths = np.round(60 * 100 ** rng.random(V)).astype(int)
        who = np.argsort(rng.random((V, len(R))), axis=1).argsort(axis=1) < rng.integers(2, 6, V)[:, None]
        n_obj, prior = rng.integers(1, 51, (V, len(R))), RARE
    out = []
    for v in range(V):
        step = -(-int(lengths[v]) // 40)
        n = -(-int(lengths[v]) // step)  # annotated frames 1, 1 + step, ... <= length
        d = {}
        truth = generate_videos(num_videos=1, num_frames=n, num_objects=int(n_obj[v].max()), seed=10_000 * seed + v,
                                classes=prior)[0]
        for k in np.flatnonzero(who[v]):
            if classes_only:
                t = truth
                per_track = rng.choice(np.asarray(prior, dtype=object), size=int(t.tracks.max()) + 1)
                labels = per_track[t.tracks]
            else:
                t = generate_videos(num_videos=1, num_frames=n, num_objects=int(n_obj[v, k]), classes=prior,
                                    seed=10_000 * seed + 100 * v + int(k) + 1)[0]
                labels = None
            d[R[k]] = _tracks(t, R[k], f"v{v}", 1 + (t.frames - 1) * step, labels)
        out.append(d)
    return out


# ----------------------------------------------------------------------------- statistics


def scores(corpus: Corpus) -> dict[str, tuple[float, str]]:
    """Every statistic of :data:`METHODS`: ``{key: (value, reason)}`` (module docstring)."""
    try:
        results = [track_agreement(d, video=next(iter(d.values())).video if d else None, consensus=True)
                   for d in corpus if d]
        pooled = pool_track_agreement(results)
    except Exception as e:  # noqa: BLE001 - a raising method is a failing cell, with the error as its value
        return {k: (math.nan, f"error: {type(e).__name__}: {e}") for k in METHODS}
    a = pooled.alpha
    out = {k: (float(getattr(a, k).alpha), getattr(a, k).reason) for k in ALPHAS}
    rec = pooled.pair_records()
    why = "; ".join(dict.fromkeys(r["hota_reason"] for r in rec if r["hota_reason"])) if rec else \
        "no rater pair shares a video"
    for k in PAIRWISE:
        vals = [r[k] for r in rec if r[k] is not None and np.isfinite(r[k])]
        out[k] = (float(np.mean(vals)), "") if vals else (math.nan, why)
    conf, why_conf = mean_confidence([r.consensus for r in results])
    out["confidence"] = (math.nan, why_conf) if conf is None else (conf, "")
    return out


def class_alpha(corpus: Corpus) -> float:
    """The class α of :func:`scores` alone (the chance cells of class α). The nominal α of the tracks' classes
    reads no chance set pair, so :func:`track_alpha` samples one per stratum here: the same class α, bit for
    bit, without the chance sums of presence and localisation (half of this part's time)."""
    try:
        results = [track_agreement(d, video=next(iter(d.values())).video if d else None, consensus=True)
                   for d in corpus if d]
        return float(track_alpha([r.reliability for r in results], max_chance_pairs=1).classes.alpha)
    except Exception:  # noqa: BLE001 - as scores(): a raising method is a NaN, failing cell
        return math.nan


# ----------------------------------------------------------------------------- designs of the cells


def _map(corpus: Corpus, fn) -> Corpus:
    return [{r: fn(r, t) for r, t in d.items()} for d in corpus]


def invariance_variants(base: Corpus) -> dict[str, Corpus]:
    """The variants of the invariance corpus (module docstring)."""
    rng = np.random.default_rng(9)
    names = dict(zip(("r0", "r1", "r2"), ("zoe", "mo", "al")))
    rename = {c: c[::-1] + "_x" for c in VIDEO_CLASSES}

    def shuffled(r: str, t: Tracks) -> Tracks:
        p = rng.permutation(len(t.frames))
        ids = rng.permutation(int(t.track_ids.max()) + 1000)[: int(t.track_ids.max()) + 1] if len(t.frames) else np.zeros(0, int)
        return Tracks(t.frames[p], t.boxes[p], ids[t.track_ids][p], None if t.labels is None else t.labels[p],
                      rater=r, video=t.video)

    def doubled(r: str, t: Tracks) -> Tracks:
        two = lambda x: np.concatenate([x, x])  # noqa: E731
        return Tracks(np.concatenate([2 * t.frames, 2 * t.frames + 1]), two(t.boxes), two(t.track_ids),
                      None if t.labels is None else two(t.labels), rater=r, video=t.video)

    return {
        "videos permuted": [base[i] for i in rng.permutation(len(base))],
        "raters renamed": [{names[r]: Tracks(t.frames, t.boxes, t.track_ids, t.labels, rater=names[r], video=t.video)
                            for r, t in d.items()} for d in base],
        "track ids renumbered, boxes shuffled": _map(base, shuffled),
        "classes renamed": _map(base, lambda r, t: Tracks(t.frames, t.boxes, t.track_ids,
                                                          np.array([rename[x] for x in t.labels], dtype=object),
                                                          rater=r, video=t.video)),
        "×2 frame rate": _map(base, doubled),
    }


def degenerate_designs(careful: Corpus, single: Corpus) -> dict[str, Corpus]:
    """One design per degenerate property, from careful raters (``VideoNoise.scaled(0.3)``)."""
    V = len(careful)
    empty = lambda r, t: Tracks.empty(rater=r, video=t.video)  # noqa: E731
    return {
        "one_rater": [{"r0": d["r0"]} for d in careful],
        "never_meet": [{"r0": d["r0"]} if v < V // 2 else {"r1": d["r1"]} for v, d in enumerate(careful)],
        "empty_rater": [{**d, "r2": empty("r2", d["r2"])} for d in careful],
        "all_empty": _map(careful, empty),
        "single_class": single,
        "_without_empty": [{r: t for r, t in d.items() if r != "r2"} for d in careful],
    }


def _monotone(method: str, key: str, stages: dict[str, list[dict]]) -> Cell:
    """Non-increasing under each noise stage separately (both must hold)."""
    parts = {name: monotone_cell(method, KIND, LEVELS, [m[key][0] for m in runs], name)
             for name, runs in stages.items()}
    ok = all(c.ok for c in parts.values())
    text = "; ".join(f"{name}: {c.value}" for name, c in parts.items())
    note = "; ".join(f"{name}: {c.note}" for name, c in parts.items() if not c.ok)
    return Cell(method, KIND, "monotone", text, ok, note)


def cells() -> list[Cell]:
    """Every cell of tracks (module docstring)."""
    memo: dict[VideoNoise, dict[str, tuple[float, str]]] = {}  # λ = 0 is one corpus (no noise) for every stage

    def at(noise: VideoNoise) -> dict[str, tuple[float, str]]:
        if noise not in memo:
            memo[noise] = scores(simulated(noise))
        return memo[noise]

    stages = {name: [at(noise(lam)) for lam in LEVELS] for name, noise in STAGES.items()}
    ident = stages["drift"][0]
    chance = {"chance_homogeneous": (5, False), "chance_heterogeneous": (3, True)}
    runs = {p: [scores(random_corpus(s, het)) for s in range(n)] for p, (n, het) in chance.items()}
    class_runs = {p: [class_alpha(random_corpus(s, het, classes_only=True)) for s in range(n)]
                  for p, (n, het) in chance.items()}
    base_corpus = simulated(VideoNoise.scaled(1.0))
    base = scores(base_corpus)
    variants = {n: scores(c) for n, c in invariance_variants(base_corpus).items()}
    careful = simulated(VideoNoise.scaled(0.3))
    single = simulated(VideoNoise.scaled(0.3), classes=("object",))
    deg = {p: scores(c) for p, c in degenerate_designs(careful, single).items()}
    without = deg.pop("_without_empty")
    out: list[Cell] = []
    for key, method in METHODS.items():
        out.append(identical_cell(method, KIND, ident[key]))
        for prop in chance:
            if key == "classes":
                out.append(chance_cell(method, KIND, prop, class_runs[prop], extra="true tracks, random classes"))
            elif key in ALPHAS:
                out.append(chance_cell(method, KIND, prop, [r[key][0] for r in runs[prop]],
                                       extra="crowd of 200, 2–5 per clip" if prop == "chance_heterogeneous" else ""))
            else:
                why = NOT_CORRECTED if key in PAIRWISE else ("not chance-corrected: the consensus confidence is "
                                                             "the share of assigned raters agreeing with a box")
                out.append(na_cell(method, KIND, prop, why, f"{np.nanmean([r[key][0] for r in runs[prop]]):.3f} "
                                                           "(measured)"))
        out.append(_monotone(method, key, stages))
        out.append(invariant_cell(method, KIND, base[key][0], {n: v[key][0] for n, v in variants.items()}))
        for prop, got in deg.items():
            out.append(degenerate_cell(method, KIND, prop, got[key], need_none=prop in ("one_rater", "never_meet"),
                                       floor=CAREFUL_FLOOR if prop == "single_class" else None,
                                       ceiling=empty_rater_ceiling(without[key][0], prop)))
    return out
