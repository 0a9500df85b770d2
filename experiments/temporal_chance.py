"""Temporal segments in relative time: is chance at 0, does agreement fall with boundary noise, and does the
frame rate not matter?

Simulated raters on clips of 60–600 frames (different lengths in every corpus). A
segment ``[first, last]`` of a clip of ``N`` frames is the box ``[(first - 1) / N, 0,
(last - first + 1) / N, 1]`` (:mod:`agreement.geometry.temporal`), so the chance
baselines of αOT and of geometry agreement (a rater's set on one clip against
another rater's set on another clip) compare segments by relative time. Three checks,
each over several seeds (mean ± standard deviation):

(a) **Chance.** Every rater places 1–3 segments (length 5–30 % of the clip, class
    ``run`` or ``jump``) uniformly at random in each clip, independently of the
    others. Chance-corrected scores should be about 0 (σ about its ``p = 0.05``).
(b) **Boundary noise.** Each clip holds 2–4 true segments; each rater copies them
    with every boundary moved by ``round(m · L · z)`` frames (``L`` the segment's
    length, ``z`` standard normal, the same ``z`` at every ``m``: coupled draws), for
    ``m`` from 0 to 1.6. Every score should fall at every step.
(c) **Frame rate.** Every clip of (a) and (b) resampled to twice and half its frame
    rate (``N' = round(f N)``, supports mapped by relative time and rounded to the new
    frames: :func:`agreement.geometry.temporal.boxes_to_supports`). The scores should
    not change beyond the rounding of the boundaries.
(d) **Clips of very different lengths** (issue 47): 400 clips, 2 raters, each placing
    1–3 segments of 30 frames uniformly at random; clip lengths either 60 or 6,000
    frames (half each, at random) or log-uniform from 60 to 6,000 frames. A 30-frame
    segment is half of a short clip and 0.5 % of a long one. Every chance-corrected
    score should be about 0 (σ about 0.05), with the chance pairs drawn within length
    strata (:func:`agreement.geometry.temporal.length_strata`) and, for comparison,
    without them (relative time across every pair of clips, the design before).

Scores (pure library): αOT (β = 0.5; exact chance baseline up to 100,000 cross pairs,
else a Monte-Carlo estimate with its standard error), KαLOS global α (IoU, τ = 0.5),
σ, distance α, KS, detection α and classification α of geometry agreement (GIoU
distance, threshold 0.5, exact chance baseline). The chance baselines pair clips of
the same length stratum (:func:`agreement.geometry.temporal.length_strata` of the clips'
frame counts, the plugin's default).

Writes ``experiments/results/temporal_chance.md``. Run from the repository root:
``.venv/bin/python experiments/temporal_chance.py`` (``--quick``: one seed, fewer
levels). No FiftyOne; under a minute on 2 cores.
"""

from __future__ import annotations

import argparse
import time

import common as C
import numpy as np

from agreement.core.data import MultiRaterAnnotations
from agreement.geometry.temporal import STRATUM_FACTOR, boxes_to_supports, length_strata, supports_to_boxes
from agreement.methods.geometry_agreement import geometry_agreement
from agreement.methods.ot.alpha_ot import alpha_ot

S, RATERS, CLASSES = 80, ("r1", "r2", "r3"), ("jump", "run")
FRAMES = (60, 600)
#: Clips ten times longer, for (c): the same segments in relative time, rounded to finer frames.
LONG_FRAMES = (600, 6000)
SEEDS = (0, 1, 2)
LEVELS = (0.0, 0.05, 0.1, 0.2, 0.4, 0.8, 1.6)
RATES = {"original": 1.0, "×2 frame rate": 2.0, "×0.5 frame rate": 0.5}
SCORES = {"alpha_ot": "αOT", "kalos": "KαLOS α", "sigma": "σ", "distance_alpha": "distance α", "ks": "KS",
          "detection_alpha": "detection α", "classification_alpha": "classification α"}
#: (d): clips, raters and the segment length (frames) of the heterogeneous corpora; their two length designs.
MIX_S, MIX_RATERS, MIX_SEGMENT = 400, ("r1", "r2"), 30
MIXES = {"60 or 6,000 frames": "two", "60–6,000 frames (log-uniform)": "continuous"}
#: A score "falls" at a step unless it rises by more than this.
TOL = 1e-9

Clips = list  # per clip: (N, {rater: (supports (k, 2) int, labels (k,))})


def random_clips(seed: int, frames: tuple = FRAMES) -> Clips:
    """(a): every rater's segments drawn uniformly at random in every clip, independently."""
    rng = np.random.default_rng(seed)
    clips = []
    for n in rng.integers(frames[0], frames[1] + 1, S):
        raters = {}
        for r in RATERS:
            k = int(rng.integers(1, 4))
            length = np.maximum(1, np.round(rng.uniform(0.05, 0.3, k) * n)).astype(int)
            first = np.floor(rng.random(k) * (n - length + 1)).astype(int) + 1
            raters[r] = (np.stack([first, first + length - 1], 1), rng.choice(CLASSES, k))
        clips.append((int(n), raters))
    return clips


def true_segments(seed: int, frames: tuple = FRAMES) -> list:
    """(b): per clip its frames, 2–4 true segments (one per equal slot, 40–90 % of it) and their classes, and
    the standard normal boundary draws of every rater."""
    rng = np.random.default_rng(1000 + seed)
    out = []
    for n in rng.integers(frames[0], frames[1] + 1, S):
        k = int(rng.integers(2, 5))
        slot = n / k
        length = rng.uniform(0.4, 0.9, k) * slot
        start = np.arange(k) * slot + rng.random(k) * (slot - length)
        truth = np.stack([np.floor(start) + 1, np.floor(start + length)], 1)
        out.append((int(n), truth, rng.choice(CLASSES, k), rng.standard_normal((len(RATERS), k, 2))))
    return out


def jittered(truth: list, m: float) -> Clips:
    """(b): each rater's copy of the true segments, every boundary moved by ``round(m L z)`` frames, clipped to
    the clip; a segment whose ends cross becomes the one frame at their mean."""
    clips = []
    for n, seg, labels, z in truth:
        length = seg[:, 1] - seg[:, 0] + 1
        raters = {}
        for j, r in enumerate(RATERS):
            s = np.clip(seg + np.round(m * length[:, None] * z[j]), 1, n)
            crossed = s[:, 0] > s[:, 1]
            s[crossed] = np.floor(s[crossed].mean(axis=1, keepdims=True))
            raters[r] = (s.astype(int), labels)
        clips.append((n, raters))
    return clips


def resampled(clips: Clips, factor: float) -> Clips:
    """Every clip at ``factor`` times its frame rate: ``N' = round(factor N)`` frames, each segment mapped by
    relative time and rounded to the new frames."""
    out = []
    for n, raters in clips:
        m = max(1, int(round(factor * n)))
        out.append((m, {r: (boxes_to_supports(supports_to_boxes(s, n), m), lab) for r, (s, lab) in raters.items()}))
    return out


def mixed_clips(seed: int, design: str) -> Clips:
    """(d): :data:`MIX_S` clips of 60 or 6,000 frames (``"two"``) or log-uniform lengths from 60 to 6,000
    (``"continuous"``); every rater places 1–3 segments of :data:`MIX_SEGMENT` frames at random."""
    rng = np.random.default_rng(2000 + seed)
    if design == "two":
        lengths = rng.choice([60, 6000], MIX_S)
    else:
        lengths = np.round(np.exp(rng.uniform(np.log(60), np.log(6000), MIX_S))).astype(int)
    clips = []
    for n in lengths:
        raters = {}
        for r in MIX_RATERS:
            k = int(rng.integers(1, 4))
            first = rng.integers(1, n - MIX_SEGMENT + 2, k)
            raters[r] = (np.stack([first, first + MIX_SEGMENT - 1], 1), rng.choice(CLASSES, k))
        clips.append((int(n), raters))
    return clips


def corpus(clips: Clips) -> MultiRaterAnnotations:
    """The clips as a corpus of boxes in relative time (every rater assigned to every clip)."""
    boxes, labels, s_idx, r_idx = [], [], [], []
    names = tuple(clips[0][1])
    for s, (n, raters) in enumerate(clips):
        for r, name in enumerate(names):
            sup, lab = raters[name]
            boxes.append(supports_to_boxes(sup, n))
            labels += list(lab)
            s_idx += [s] * len(sup)
            r_idx += [r] * len(sup)
    N = len(labels)
    return MultiRaterAnnotations(
        sample_ids=np.array([f"clip{s:03d}" for s in range(len(clips))], dtype=object), raters=names,
        assigned=np.ones((len(clips), len(names)), bool), boxes=np.concatenate(boxes),
        labels=np.array(labels, dtype=object), label_ids=np.full(N, None, dtype=object),
        sample_index=np.array(s_idx, dtype=np.intp), rater_index=np.array(r_idx, dtype=np.intp))


def scores(clips: Clips, strata: bool = True, bootstrap: int | None = None) -> list[float]:
    """The scores of :data:`SCORES` on the clips, in that order, and αOT's standard error; chance pairs within
    the clips' length strata (``strata=False``: across every pair of clips, relative time only); with
    ``bootstrap`` resamples, classification α's bootstrap standard error (interval width / 3.92) too."""
    data = corpus(clips)
    st = length_strata([n for n, _ in clips]) if strata else None
    a = alpha_ot(data, lam=C.LAM, beta=0.5, max_pairs=C.ALPHA_OT_MAX_PAIRS, seed=0, strata=st)
    g = geometry_agreement(data, distance="giou", threshold=0.5, bootstrap=bootstrap,
                           max_pairs=C.GEOMETRY_MAX_PAIRS, seed=0, strata=st)
    got = {"alpha_ot": a.alpha, "kalos": C.evaluate(data, metrics=["kalos"]).corpus["kalos"],
           **{k: getattr(g, k).value for k in SCORES if k not in ("alpha_ot", "kalos")}}
    cls = g.classification_alpha
    ks95 = 1.358 * np.sqrt(1.0 / max(g.n_within, 1) + 1.0 / max(g.n_between, 1))  # KS's 95 % point at chance
    dist = g.distance_alpha
    return [float(got[k]) for k in SCORES] + [float((dist.ci_high - dist.ci_low) / 3.92), ks95, float(a.alpha_se),
                                              float((cls.ci_high - cls.ci_low) / 3.92)]


def run(seeds, levels) -> dict:
    """Every score for (a) and (b) at every level, per frame rate and seed: ``{(part, rate): (levels, seeds,
    scores)}``; and the same at the original and half the frame rate on clips ten times longer (first seed),
    under ``(part, "long " + rate)``."""
    out = {}
    long_rates = {f"long {r}": f for r, f in RATES.items() if f in (1.0, 0.5)}
    for rate, f in {**RATES, **long_rates}.items():
        frames, used = (LONG_FRAMES, seeds[:1]) if rate.startswith("long") else (FRAMES, seeds)
        out[("chance", rate)] = np.array([[scores(resampled(random_clips(sd, frames), f)) for sd in used]])
        truth = [true_segments(sd, frames) for sd in used]
        out[("noise", rate)] = np.array([[scores(resampled(jittered(t, m), f)) for t in truth] for m in levels])
    for mix, design in MIXES.items():
        for strata in (True, False):
            out[("mix", mix, strata)] = np.array([[scores(mixed_clips(sd, design), strata, 200) for sd in seeds]])
    return out


def _cell(values: np.ndarray) -> str:
    values = values[np.isfinite(values)]
    if not values.size:
        return "—"
    return f"{values.mean():.3f} ± {values.std():.3f}" if values.size > 1 else f"{values[0]:.3f}"


def report(res: dict, seeds, levels, seconds: float, cpu: float) -> str:
    """The results as Markdown (``experiments/results/temporal_chance.md``)."""
    names = list(SCORES.values())
    L = ["# Temporal segments: chance, boundary noise, frame rate\n",
         f"`experiments/temporal_chance.py`: {S} clips of {FRAMES[0]}–{FRAMES[1]} frames, {len(RATERS)} raters, "
         f"{len(seeds)} seed(s) (cells: mean ± standard deviation over seeds); {seconds:.0f} s ({cpu:.0f} s of "
         "CPU: the machine was shared). A segment "
         "`[first, last]` of a clip of `N` frames is the box `[(first − 1)/N, 0, (last − first + 1)/N, 1]` "
         "(relative time, `agreement.geometry.temporal`); the scores are the pure library's (αOT β = 0.5, KαLOS "
         "IoU τ = 0.5, geometry agreement GIoU threshold 0.5), their chance baselines drawn within the clips' "
         f"length strata (`length_strata`: the longest clip of a stratum at most {STRATUM_FACTOR:g} times the "
         "shortest).\n"]
    L.append("## (a) Segments placed at random: chance level\n")
    L.append("Each rater places 1–3 segments (5–30 % of the clip, a random class) uniformly at random in each clip. "
             "Chance-corrected scores should be about 0; σ (the share of within-clip distances below the 5th "
             "percentile of the chance distances) about 0.05.\n")
    rows = [[rate] + [_cell(res[("chance", rate)][0][:, i]) for i in range(len(names))] for rate in RATES]
    rows.append([f"original, clips of {LONG_FRAMES[0]}–{LONG_FRAMES[1]} frames (first seed)"]
                + [_cell(res[("chance", "long original")][0][:, i]) for i in range(len(names))])
    L.append(C.markdown_table(["frame rate"] + names, rows))
    L.append("\nαOT, distance α, detection α, classification α and KS are at chance level and σ at about its `p`: "
             "the segments' lengths are proportional to the clips' here, so relative time is comparable across "
             "clips, and the length strata change nothing but the sampling noise. "
             "KαLOS α is below 0, as it is for boxes placed at random in images (the same draw with boxes gives "
             "about −0.3): its expected disagreement is not a cross-sample baseline but the pooled values (classes "
             "and `no_object`) of the units, and random placement makes most units one rater's segment against the "
             "others' `no_object`, which disagrees more than those pooled values predict. KαLOS compares segments "
             "within a clip only, so relative time does not enter it.\n")
    L.append("## (b) Boundary noise: every score falls\n")
    L.append("Each clip has 2–4 true segments; each rater moves every boundary by `round(m · L · z)` frames "
             "(`L` the segment's length, `z` standard normal, the same draws at every `m`). Original frame rate.\n")
    noise = res[("noise", "original")]
    rows = [[f"{m:g}"] + [_cell(noise[j, :, i]) for i in range(len(names))] for j, m in enumerate(levels)]
    L.append(C.markdown_table(["m"] + names, rows))
    L.append("\n" + _steps(noise, levels, names) + "\n")
    L.append(_mix_section(res, seeds))
    L.append("## (c) Another frame rate: the same numbers up to rounding\n")
    L.append("Every clip of (a) and (b) resampled (`N' = round(f N)` frames, supports mapped by relative time and "
             "rounded to whole frames). Largest absolute difference from the original frame rate, over seeds and "
             "noise levels:\n")
    rows = []
    for rate, base, label in [(r, "original", r) for r in list(RATES)[1:]] + [
            ("long ×0.5 frame rate", "long original", f"×0.5, clips of {LONG_FRAMES[0]}–{LONG_FRAMES[1]} frames")]:
        for part, what in (("chance", "(a) chance"), ("noise", "(b) noise")):
            diff = np.abs(res[(part, rate)] - res[(part, base)])
            rows.append([label, what] + [f"{np.nanmax(diff[..., i]):.4f}" for i in range(len(names))])
    L.append(C.markdown_table(["frame rate", "part"] + names, rows))
    short = max(np.nanmax(np.abs(res[(p, "×0.5 frame rate")] - res[(p, "original")])) for p in ("chance", "noise"))
    long_ = max(np.nanmax(np.abs(res[(p, "long ×0.5 frame rate")] - res[(p, "long original")]))
                for p in ("chance", "noise"))
    double = max(np.nanmax(np.abs(res[(p, "×2 frame rate")] - res[(p, "original")])) for p in ("chance", "noise"))
    L.append("\nDoubling the frame rate maps every boundary exactly (frame `k` becomes frames `2k − 1` and `2k`): "
             + ("the numbers are identical. " if double == 0 else f"the numbers differ by at most {double:.2g}. ")
             + "Halving it rounds each boundary to the nearest new frame (at most half a "
             "new frame, `1/(2N')` in relative time), which moves a few matches across the thresholds (IoU τ, "
             f"GIoU ≥ 0): differences of at most {short:.3f}. On clips ten times longer the same relative segments "
             f"are rounded ten times more finely and the largest difference falls to {long_:.3f}: the differences "
             "come from rounding boundaries to whole frames, not from the frame rate.\n")
    return "\n".join(L) + "\n"


def _mix_section(res: dict, seeds) -> str:
    """(d): the heterogeneous corpora, chance pairs within length strata and across every pair of clips."""
    names = list(SCORES.values())
    L = ["## (b′) Clips of very different lengths: chance level\n",
         f"{MIX_S} clips, {len(MIX_RATERS)} raters, each placing 1–3 segments of {MIX_SEGMENT} frames uniformly at "
         f"random in every clip (a random class); {len(seeds)} seed(s), mean ± standard deviation, and the largest "
         "|value| over seeds (σ: the largest |σ − 0.05|). A 30-frame segment is half of a 60-frame clip and 0.5 % "
         "of a 6,000-frame clip: in relative time the chance pairs between such clips nest a tiny segment in a "
         "large one (GIoU ≥ 0: matched at threshold 0.5), a pair that never occurs within a clip.\n"]
    rows = []
    for mix in MIXES:
        for strata, how in ((True, "length strata"), (False, "relative time only (before)")):
            v = res[("mix", mix, strata)][0]
            far = [np.nanmax(np.abs(v[:, i] - (0.05 if k == "sigma" else 0.0))) for i, k in enumerate(SCORES)]
            rows.append([mix, how] + [f"{_cell(v[:, i])} ({far[i]:.3f})" for i in range(len(names))]
                        + [f"{np.nanmax(v[:, -2]):.3f}", f"{np.nanmax(v[:, -4]):.3f}", f"{np.nanmax(v[:, -1]):.3f}"])
    L.append(C.markdown_table(["clip lengths", "chance pairs"] + names + [
        "SE(αOT), largest", "SE(distance α), largest", "SE(classification α), largest"], rows))
    worst = max(np.nanmax(np.abs(res[("mix", m, True)][0][:, i] - (0.05 if k == "sigma" else 0.0)))
                for m in MIXES for i, k in enumerate(SCORES)
                if k not in ("kalos", "classification_alpha", "ks", "distance_alpha"))
    ks_i = [i for i, k in enumerate(SCORES) if k == "ks"][0]
    ks_ratio = max(np.nanmax(res[("mix", m, True)][0][:, ks_i] / res[("mix", m, True)][0][:, -3]) for m in MIXES)
    cls = [i for i, k in enumerate(SCORES) if k == "classification_alpha"][0]
    z = max(np.nanmax(np.abs(res[("mix", m, True)][0][:, cls]) / res[("mix", m, True)][0][:, -1]) for m in MIXES)
    di = [i for i, k in enumerate(SCORES) if k == "distance_alpha"][0]
    zd = max(np.nanmax(np.abs(res[("mix", m, True)][0][:, di]) / res[("mix", m, True)][0][:, -4]) for m in MIXES)
    L.append(f"\nWithin length strata αOT, σ and detection α are within {worst:.3f} of their "
             f"chance level (0; σ: 0.05) on both mixes, at every seed; distance α within {zd:.1f} of its bootstrap "
             "standard errors of 0 (a few hundred matched pairs); KS (never 0 on finite samples) is at most "
             f"{ks_ratio:.2f} of its 95 % point at chance (1.358 √(1/n_W + 1/n_B), n_W ≈ 150–300 matched "
             f"within-clip pairs); classification α within {z:.1f} of its "
             "bootstrap standard errors of 0 (it has no cross-clip baseline: its few hundred matched pairs make "
             "it noisy, and it is the same with or without strata). Across every pair of clips (relative time only), distance α "
             "and KS are far above chance on these corpora and detection α below it; αOT stays near 0 (an "
             "unmatched segment costs β wherever it falls). KαLOS α has no cross-clip baseline (below 0 at "
             "random placement, as in (a)); classification α compares the labels of matched pairs within clips "
             "only.\n")
    return "\n".join(L) + "\n"


def _steps(noise: np.ndarray, levels, names) -> str:
    """How often each score rose from one noise level to the next (per seed), and by how much at most."""
    steps = np.diff(noise, axis=0)  # (levels - 1, seeds, scores)
    parts = []
    for i, n in enumerate(names):
        up = steps[:, :, i] > TOL
        flat = np.abs(steps[:, :, i]) <= TOL
        text = f"{n}: fell at {int((~up & ~flat).sum())}, tied at {int(flat.sum())}, rose at {int(up.sum())}"
        if up.any():
            j = np.flatnonzero(up.any(axis=1))
            text += (f" (by at most {steps[:, :, i][up].max():.3f}, between m = {levels[j[0]]:g} and "
                     f"m = {levels[j[-1] + 1]:g}, where it is at chance level)")
        parts.append(text)
    return (f"Steps from one level to the next, per seed ({steps.shape[0] * steps.shape[1]}): "
            + "; ".join(parts) + ".")


def readme_section(out: dict) -> str:
    """The section of ``experiments/README.md`` (written by ``run_all.py``) from :func:`main`'s return value."""
    res, levels = out["results"], out["levels"]
    names = list(SCORES.values())
    chance = res[("chance", "original")][0]
    noise = res[("noise", "original")]
    rows = [["(a) random placement (chance)"] + [_cell(chance[:, i]) for i in range(len(names))]]
    rows += [[f"(b) boundary noise m = {levels[j]:g}"] + [_cell(noise[j, :, i]) for i in range(len(names))]
             for j in (1, len(levels) // 2, len(levels) - 1)]
    diff = [max(np.nanmax(np.abs(res[(p, r)][..., i] - res[(p, "original")][..., i]))
                for p in ("chance", "noise") for r in list(RATES)[1:]) for i in range(len(names))]
    rows.append(["(c) largest change at ×2 / ×0.5 frame rate"] + [f"{d:.3f}" for d in diff])
    steps = np.diff(noise, axis=0)
    rises, most = int((steps > TOL).sum()), float(np.nanmax(steps, initial=0.0))
    corrected = [i for i, k in enumerate(SCORES) if k in ("alpha_ot", "distance_alpha", "detection_alpha", "ks")]
    far = float(np.nanmax(np.abs(chance[:, corrected].mean(axis=0))))
    double = max(np.nanmax(np.abs(res[(p, "×2 frame rate")] - res[(p, "original")])) for p in ("chance", "noise"))
    return ("## Temporal segments: chance in relative time\n\n"
            f"`temporal_chance.py`: {S} clips of {FRAMES[0]}–{FRAMES[1]} frames, {len(RATERS)} simulated raters, "
            f"{len(out['seeds'])} seeds; segments as boxes in relative time (docs/temporal-agreement.md). "
            f"[temporal_chance.md](results/temporal_chance.md)\n\n"
            + C.markdown_table(["corpus"] + names, rows)
            + "\n\nAt random placement the cross-clip chance baselines put αOT, distance α, detection α and KS "
            f"within {far:.3f} of 0 (σ {chance[:, 2].mean():.3f}, against its p = 0.05), whatever the clips' "
            f"lengths; KαLOS α is {chance[:, 1].mean():.3f}"
            + (", below 0 as for boxes " if chance[:, 1].mean() < 0 else ", compare it with boxes ")
            + "placed at random in images (its chance is the pooled values of the units, not a cross-sample "
            f"baseline). Every score falls with boundary noise ({rises} rises of a score from one level to the "
            f"next in all, the largest {most:.3f}: see the results for where). "
            + ("Doubling the frame rate changes nothing; " if double == 0 else
               f"Doubling the frame rate changes the numbers by at most {double:.2g}; ")
            + "halving it moves them by the rounding of boundaries to whole frames.\n")


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="one seed, fewer levels (smoke run)")
    args = ap.parse_args(argv)
    seeds, levels = (SEEDS[:1], (0.0, 0.2, 0.8)) if args.quick else (SEEDS, LEVELS)
    t, cpu = time.perf_counter(), time.process_time()
    res = run(seeds, levels)
    seconds, cpu = time.perf_counter() - t, time.process_time() - cpu
    path = C.write_text(C.RESULTS / "temporal_chance.md", report(res, seeds, levels, seconds, cpu))
    print(f"wrote {C.rel(path)} ({seconds:.1f} s)")
    return {"results": res, "seeds": seeds, "levels": levels, "seconds": seconds}


if __name__ == "__main__":
    main()
